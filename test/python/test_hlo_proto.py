"""The values of an HLO module's constants read from XLA's serialized
module (hlo/proto.py) against the same constants printed whole and parsed."""

import ml_dtypes
import numpy as np
import pytest
from jax._src.lib import xla_client as xc

from xla_gpu.hlo import parse_hlo
from xla_gpu.hlo.proto import _varints, constant_values

# Element types, each with values that exercise its encoding (negative
# varints, NaN, -0, the extremes).
_VALUES = {
    "pred": np.array([True, False] * 8),
    "s8": np.array([-128, 127, 0, -1] * 4, np.int8),
    "s16": np.array([-32768, 32767, 0, -1] * 4, np.int16),
    "s32": np.array([-(1 << 31), (1 << 31) - 1, 0, -1] * 4, np.int32),
    "s64": np.array([-(1 << 63), (1 << 63) - 1, 0, -1] * 4, np.int64),
    "u8": np.array([255, 0, 1, 128] * 4, np.uint8),
    "u16": np.array([65535, 0, 1, 300] * 4, np.uint16),
    "u32": np.array([(1 << 32) - 1, 0, 1, 1 << 31] * 4, np.uint32),
    "u64": np.array([(1 << 64) - 1, 0, 1, 1 << 63] * 4, np.uint64),
    "f16": np.array([65504, -0.0, np.inf, 1e-7] * 4, np.float16),
    "bf16": np.array([3.0e38, -0.0, -np.inf, 0.1] * 4, ml_dtypes.bfloat16),
    "f32": np.array([1.5, -0.0, np.nan, 1e-45] * 4, np.float32),
    "f64": np.array([1e300, -0.0, np.inf, 5e-324] * 4, np.float64),
}


def _literal_text(values: np.ndarray) -> str:
    if values.dtype == np.bool_:
        items = ["true" if v else "false" for v in values.tolist()]
    else:
        items = [repr(float(v)) if values.dtype.kind == "f" or values.dtype == ml_dtypes.bfloat16
                 else str(v) for v in values.tolist()]
    rows = [items[i:i + 4] for i in range(0, len(items), 4)]
    return "{" + ", ".join("{" + ", ".join(r) + "}" for r in rows) + "}"


def _xla_module(element: str, values: np.ndarray):
    text = (f"HloModule m\n\nENTRY e {{\n  c = {element}[4,4] constant({_literal_text(values)})\n"
            f"  p = {element}[4,4] parameter(0)\n  ROOT t = ({element}[4,4], {element}[4,4]) "
            "tuple(c, p)\n}\n")
    return xc.hlo.hlo_module_from_text(text)


@pytest.mark.parametrize("element", sorted(_VALUES))
def test_constant_values_match_the_printed_literal(element):
    module = _xla_module(element, _VALUES[element])
    options = xc.hlo.HloPrintOptions()
    options.print_large_constants = True
    parsed = parse_hlo(module.to_string(options))
    constant = next(i for i in parsed.entry.instructions if i.opcode == "constant")
    want = constant.literal.value
    got = constant_values(module.as_serialized_hlo_module_proto(),
                          {(parsed.entry.name, constant.name):
                           (constant.shape.element_type, (4, 4))})
    value = got[(parsed.entry.name, constant.name)]
    assert value.dtype == want.dtype and value.shape == (4, 4)
    assert value.tobytes() == want.tobytes()


def test_a_constant_of_other_dimensions_or_type_is_not_read():
    module = _xla_module("f32", _VALUES["f32"])
    proto = module.as_serialized_hlo_module_proto()
    parsed = parse_hlo(module.to_string())
    constant = next(i for i in parsed.entry.instructions if i.opcode == "constant")
    key = (parsed.entry.name, constant.name)
    f32, s32 = (constant.shape.element_type, parse_hlo(
        "HloModule m\nENTRY e {\n  ROOT c = s32[] constant(0)\n}\n").entry.root.shape.element_type)
    assert key in constant_values(proto, {key: (f32, (4, 4))})
    assert constant_values(proto, {key: (f32, (2, 8))}) == {}
    assert constant_values(proto, {key: (s32, (4, 4))}) == {}


def test_varints():
    assert _varints(bytes([0x96, 0x01, 0x00, 0x7F])).tolist() == [150, 0, 127]
    minus_one = bytes([0xFF] * 9 + [0x01])
    assert _varints(minus_one).view(np.int64).tolist() == [-1]
    with pytest.raises(ValueError):
        _varints(bytes([0x96]))
