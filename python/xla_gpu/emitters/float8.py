"""8-bit floats: conversions to and from f32 in integer arithmetic.

LLVM has no 8-bit float types (MLIR lowers them to i8), so a value of an
f8 type is only moved (loaded, stored, selected) as is; converting it is
done here on its bits, as XLA's expand-float-ops does. Rounding is to
nearest even; out of range values become infinity where the format has one
and NaN where it has not (XLA's convert does not saturate).

The formats, as ml_dtypes and XLA define them:

    name            exponent mantissa bias  infinity  NaN              -0
    f8e3m4          3        4        3     yes       exp all ones     yes
    f8e4m3          4        3        7     yes       exp all ones     yes
    f8e4m3fn        4        3        7     no        S.1111.111       yes
    f8e4m3fnuz      4        3        8     no        0x80             no
    f8e4m3b11fnuz   4        3        11    no        0x80             no
    f8e5m2          5        2        15    yes       exp all ones     yes
    f8e5m2fnuz      5        2        16    no        0x80             no
"""

from __future__ import annotations

from dataclasses import dataclass

from mlir import ir
from mlir.dialects import arith, math

from ..hlo.types import ELEMENT_TYPES

__all__ = ["FLOAT8", "Float8Format", "f8_to_f32", "f32_to_f8"]


@dataclass(frozen=True)
class Float8Format:
    exponent: int
    mantissa: int
    bias: int
    # "ieee": infinities, NaN = exponent all ones; "fn": no infinities, NaN
    # = all ones; "fnuz": no infinities, no -0, NaN = 0x80.
    kind: str
    # Its HLO element type's name (the type table gives the MLIR type).
    name: str

    @property
    def min_normal_exponent(self) -> int:
        return 1 - self.bias

    @property
    def max_code(self) -> int:
        """The largest finite magnitude's 7-bit code."""
        if self.kind == "ieee":
            return ((1 << self.exponent) - 1 << self.mantissa) - 1
        if self.kind == "fn":
            return 0x7E
        return 0x7F


FLOAT8 = {
    "f8e3m4": Float8Format(3, 4, 3, "ieee", "f8e3m4"),
    "f8e4m3": Float8Format(4, 3, 7, "ieee", "f8e4m3"),
    "f8e4m3fn": Float8Format(4, 3, 7, "fn", "f8e4m3fn"),
    "f8e4m3fnuz": Float8Format(4, 3, 8, "fnuz", "f8e4m3fnuz"),
    "f8e4m3b11fnuz": Float8Format(4, 3, 11, "fnuz", "f8e4m3b11fnuz"),
    "f8e5m2": Float8Format(5, 2, 15, "ieee", "f8e5m2"),
    "f8e5m2fnuz": Float8Format(5, 2, 16, "fnuz", "f8e5m2fnuz"),
}


def _i(width: int, value: int) -> ir.Value:
    t = ir.IntegerType.get_signless(width)
    if value >= 1 << (width - 1):
        value -= 1 << width
    return arith.constant(t, value)


def _f32(value: float) -> ir.Value:
    return arith.constant(ir.F32Type.get(), value)


def _cmp(pred: str, a: ir.Value, b: ir.Value) -> ir.Value:
    return arith.cmpi(getattr(arith.CmpIPredicate, pred), a, b)


def f8_to_f32(fmt: Float8Format, value: ir.Value) -> ir.Value:
    """The f32 of an f8 value (exact)."""
    i8, i32, f32 = (ir.IntegerType.get_signless(8), ir.IntegerType.get_signless(32),
                    ir.F32Type.get())
    byte = arith.extui(i32, arith.bitcast(i8, value))
    code = arith.andi(byte, _i(32, 0x7F))
    exponent = arith.shrui(code, _i(32, fmt.mantissa))
    mantissa = arith.andi(code, _i(32, (1 << fmt.mantissa) - 1))
    # Normal: rebias the exponent, widen the mantissa.
    normal_bits = arith.ori(
        arith.shli(arith.addi(exponent, _i(32, 127 - fmt.bias)), _i(32, 23)),
        arith.shli(mantissa, _i(32, 23 - fmt.mantissa)))
    normal = arith.bitcast(f32, normal_bits)
    # Subnormal: mantissa * 2^(min exponent - mantissa bits).
    subnormal = arith.mulf(arith.uitofp(f32, mantissa),
                           _f32(2.0 ** (fmt.min_normal_exponent - fmt.mantissa)))
    magnitude = arith.select(_cmp("eq", exponent, _i(32, 0)), subnormal, normal)
    negative = _cmp("ne", arith.andi(byte, _i(32, 0x80)), _i(32, 0))
    result = arith.select(negative, arith.negf(magnitude), magnitude)
    nan = _f32(float("nan"))
    if fmt.kind == "ieee":
        special = _cmp("eq", exponent, _i(32, (1 << fmt.exponent) - 1))
        inf = arith.select(negative, _f32(float("-inf")), _f32(float("inf")))
        value = arith.select(_cmp("eq", mantissa, _i(32, 0)), inf, nan)
        return arith.select(special, value, result)
    if fmt.kind == "fn":
        return arith.select(_cmp("eq", code, _i(32, 0x7F)), nan, result)
    return arith.select(_cmp("eq", byte, _i(32, 0x80)), nan, result)


def f32_to_f8(fmt: Float8Format, x: ir.Value) -> ir.Value:
    """`x` rounded to nearest even in the f8 format."""
    i8, i32 = ir.IntegerType.get_signless(8), ir.IntegerType.get_signless(32)
    bits = arith.bitcast(i32, x)
    abs_bits = arith.andi(bits, _i(32, 0x7FFFFFFF))
    shift = 23 - fmt.mantissa
    # Normal range: round the f32 mantissa to the format's (a carry moves
    # into the exponent), then rebias.
    odd = arith.andi(arith.shrui(abs_bits, _i(32, shift)), _i(32, 1))
    rounded = arith.addi(abs_bits, arith.addi(_i(32, (1 << (shift - 1)) - 1), odd))
    normal = arith.subi(arith.shrui(rounded, _i(32, shift)),
                        _i(32, (127 - fmt.bias) << fmt.mantissa))
    # Subnormal range: the multiple of the smallest subnormal; 2^mantissa
    # of them is the smallest normal, whose code it also is.
    magnitude = math.absf(x)
    steps = math.roundeven(arith.mulf(
        magnitude, _f32(2.0 ** (fmt.mantissa - fmt.min_normal_exponent))))
    subnormal = arith.fptoui(i32, arith.minimumf(steps, _f32(float(1 << fmt.mantissa))))
    is_normal = arith.cmpf(arith.CmpFPredicate.OGE, magnitude,
                           _f32(2.0 ** fmt.min_normal_exponent))
    code = arith.select(is_normal, normal, subnormal)
    overflow_code = (((1 << fmt.exponent) - 1) << fmt.mantissa if fmt.kind == "ieee"
                     else 0x7F if fmt.kind == "fn" else 0x80)
    overflows = arith.cmpf(arith.CmpFPredicate.OGT, magnitude, _f32(0.0))
    overflows = arith.andi(overflows, _cmp("sgt", code, _i(32, fmt.max_code)))
    # An overflowing magnitude includes f32's infinity (its code is large).
    code = arith.select(overflows, _i(32, overflow_code), code)
    negative = _cmp("slt", bits, _i(32, 0))
    if fmt.kind == "fnuz":
        # No -0: a negative value that rounds to zero is +0; 0x80 is NaN.
        negative = arith.andi(negative, _cmp("ne", code, _i(32, 0)))
        negative = arith.andi(negative, _cmp("ne", code, _i(32, 0x80)))
    signed = arith.ori(code, arith.select(negative, _i(32, 0x80), _i(32, 0)))
    nan_code = {"ieee": ((1 << fmt.exponent) - 1 << fmt.mantissa) | (1 << (fmt.mantissa - 1)),
                "fn": 0x7F, "fnuz": 0x80}[fmt.kind]
    is_nan = arith.cmpf(arith.CmpFPredicate.UNO, x, x)
    result = arith.select(is_nan, _i(32, nan_code), signed)
    return arith.bitcast(ir.Type.parse(ELEMENT_TYPES[fmt.name].mlir), arith.trunci(i8, result))
