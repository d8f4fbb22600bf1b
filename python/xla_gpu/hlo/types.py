"""HLO element types (XLA's PrimitiveType) with their MLIR and numpy
counterparts: the one type table the parser, the emitters and the runtimes
read."""

from __future__ import annotations

from dataclasses import dataclass

import ml_dtypes
import numpy as np

__all__ = ["BY_MLIR", "ElementType", "ELEMENT_TYPES", "element_type"]


@dataclass(frozen=True)
class ElementType:
    """One HLO element type: `f32`, `bf16`, `s4`, `pred`, `c64`, `token`..."""

    name: str
    bits: int
    kind: str  # "pred", "signed", "unsigned", "float", "complex", "token"
    dtype: np.dtype | None  # None for token
    # The MLIR element type the emitters use (integers are signless); None
    # where the emitters have none yet.
    mlir: str | None = None
    # A complex type's parts (c64: f32).
    part: str | None = None

    @property
    def is_float(self) -> bool:
        return self.kind == "float"

    @property
    def is_integer(self) -> bool:
        return self.kind in ("signed", "unsigned")

    @property
    def is_signed(self) -> bool:
        return self.kind == "signed"

    @property
    def is_complex(self) -> bool:
        return self.kind == "complex"

    @property
    def is_pred(self) -> bool:
        return self.kind == "pred"

    def __str__(self) -> str:
        return self.name


def _t(name, bits, kind, dtype, mlir=None, part=None):
    return ElementType(name, bits, kind, None if dtype is None else np.dtype(dtype), mlir, part)


ELEMENT_TYPES: dict[str, ElementType] = {t.name: t for t in [
    _t("pred", 8, "pred", np.bool_, "i1"),
    _t("s2", 2, "signed", ml_dtypes.int2, "i2"),
    _t("s4", 4, "signed", ml_dtypes.int4, "i4"),
    _t("s8", 8, "signed", np.int8, "i8"),
    _t("s16", 16, "signed", np.int16, "i16"),
    _t("s32", 32, "signed", np.int32, "i32"),
    _t("s64", 64, "signed", np.int64, "i64"),
    _t("u2", 2, "unsigned", ml_dtypes.uint2, "i2"),
    _t("u4", 4, "unsigned", ml_dtypes.uint4, "i4"),
    _t("u8", 8, "unsigned", np.uint8, "i8"),
    _t("u16", 16, "unsigned", np.uint16, "i16"),
    _t("u32", 32, "unsigned", np.uint32, "i32"),
    _t("u64", 64, "unsigned", np.uint64, "i64"),
    _t("f4e2m1fn", 4, "float", ml_dtypes.float4_e2m1fn),
    _t("f8e3m4", 8, "float", ml_dtypes.float8_e3m4, "f8E3M4"),
    _t("f8e4m3", 8, "float", ml_dtypes.float8_e4m3, "f8E4M3"),
    _t("f8e4m3fn", 8, "float", ml_dtypes.float8_e4m3fn, "f8E4M3FN"),
    _t("f8e4m3b11fnuz", 8, "float", ml_dtypes.float8_e4m3b11fnuz,
       "f8E4M3B11FNUZ"),
    _t("f8e4m3fnuz", 8, "float", ml_dtypes.float8_e4m3fnuz, "f8E4M3FNUZ"),
    _t("f8e5m2", 8, "float", ml_dtypes.float8_e5m2, "f8E5M2"),
    _t("f8e5m2fnuz", 8, "float", ml_dtypes.float8_e5m2fnuz, "f8E5M2FNUZ"),
    _t("f8e8m0fnu", 8, "float", ml_dtypes.float8_e8m0fnu),
    _t("bf16", 16, "float", ml_dtypes.bfloat16, "bf16"),
    _t("f16", 16, "float", np.float16, "f16"),
    _t("f32", 32, "float", np.float32, "f32"),
    _t("f64", 64, "float", np.float64, "f64"),
    _t("c64", 64, "complex", np.complex64, "complex<f32>", "f32"),
    _t("c128", 128, "complex", np.complex128, "complex<f64>", "f64"),
    _t("token", 0, "token", None),
]}


# The element type an MLIR type text stands for (integers are signless: the
# signed type; sub-byte and 8-bit floats as ml_dtypes holds them).
BY_MLIR: dict[str, ElementType] = {}
for _type in ELEMENT_TYPES.values():
    if _type.mlir is not None:
        BY_MLIR.setdefault(_type.mlir, _type)


def element_type(name: str) -> ElementType:
    """The element type called `name`; KeyError if there is none."""
    return ELEMENT_TYPES[name]
