"""The HLO front end: parse, print, round-trip; checked against XLA's own
parser (through jaxlib) and against a corpus of malformed files."""

import math
import random
import re
import warnings
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest
from jax._src.lib import xla_client

from xla_gpu.hlo import HloParseError, element_type, parse_hlo, parse_shape
from xla_gpu.hlo import parser as parser_module

HLO_DIR = Path(__file__).resolve().parents[1] / "hlo"
VALID = sorted(HLO_DIR.glob("*.hlo"))
INVALID = sorted((HLO_DIR / "invalid").glob("*.hlo"))


def test_corpus_is_there():
    assert len(VALID) >= 3
    assert len(INVALID) >= 20


@pytest.mark.parametrize("path", VALID, ids=lambda p: p.name)
def test_print_parse_print_is_identical(path):
    module = parse_hlo(path.read_text(), str(path))
    text = module.to_text()
    assert parse_hlo(text).to_text() == text


def _xla_text(text):
    return xla_client.hlo.hlo_module_from_text(text).to_string()


@pytest.mark.parametrize("path", VALID, ids=lambda p: p.name)
def test_xla_reads_our_text_as_the_same_module(path):
    """XLA's parser, given what we print, builds the module it builds from
    the original text."""
    original = path.read_text().replace("HloModule m:", "HloModule m")
    ours = parse_hlo(path.read_text()).to_text()
    assert _xla_text(ours) == _xla_text(original)


def test_gelu_structure():
    module = parse_hlo((HLO_DIR / "gelu.hlo").read_text())
    fusion = module.entry.root
    assert module.entry.name == "main" and module.entry.is_entry
    assert fusion.opcode == "fusion" and fusion.fusion_kind == "kLoop"
    gelu = fusion.fused_computation
    assert gelu.name == "gelu"
    assert [p.name for p in gelu.parameters] == ["param"]
    param = gelu.instruction("param")
    assert param.shape.element_type.name == "bf16" and param.shape.dims == (6, 512, 4096)
    # The operand/user graph.
    assert {u.name for u in param.users} == {"square", "cube", "add_1", "multiply_0"}
    assert gelu.root.name == "multiply_0"
    order = [i.name for i in gelu.topological_order()]
    for inst in gelu.instructions:
        for op in inst.operands:
            assert order.index(op.name) < order.index(inst.name)
    # Constants are rounded to their element type, as XLA does.
    c = gelu.instruction("constant_3").literal.value
    assert c.dtype == ml_dtypes.bfloat16
    assert float(c) == float(ml_dtypes.bfloat16(0.044708))
    assert "0.04468" in _xla_text(module.to_text())


def test_jax_optimized_module():
    module = parse_hlo((HLO_DIR / "jax_optimized.hlo").read_text())
    assert [a.name for a in module.attributes][:2] == ["is_scheduled", "entry_computation_layout"]
    assert module.tables.startswith("FileNames")
    assert "StackFrames" in module.tables
    fusions = module.fusions()
    assert fusions and all(f.fused_computation is not None for f in fusions)
    kinds = {f.fusion_kind for f in fusions}
    assert "kLoop" in kinds
    insts = {i.name: i for i in module.instructions()}
    gather = next(i for i in insts.values() if i.opcode == "gather")
    assert gather.attr("offset_dims") == [1, 2]
    assert gather.attr("start_index_map") == [0]
    assert gather.attr("index_vector_dim") == 1
    assert gather.attr("slice_sizes") == [1, 8]
    md = gather.attr("metadata")
    assert md["op_name"].endswith("gather") and md["stack_frame_id"].isdigit()
    # backend_config is unknown to the parser: kept verbatim.
    custom = next(i for i in insts.values() if "backend_config" in i.attributes)
    assert custom.attributes["backend_config"].text.startswith('{"fusion_config"')
    assert custom.attributes["backend_config"].value is None


def test_jax_preopt_module():
    module = parse_hlo((HLO_DIR / "jax_preopt.hlo").read_text())
    assert module.entry.name.startswith("main")
    insts = {i.opcode: i for i in module.instructions()}
    assert insts["slice"].attr("slice") == [(1, 5, 2), (0, 8, 1)]
    assert insts["pad"].attr("padding") == [(1, 2, 0), (0, 1, 0)]
    window = insts["reduce-window"].attr("window")
    assert window == {"size": [2, 2]}  # XLA omits unit strides
    assert insts["reduce"].attr("to_apply") == insts["reduce"].called_computations[0].name
    assert insts["compare"].attr("direction") in ("GT", "LT", "GE", "LE", "EQ", "NE")
    assert insts["dynamic-slice"].attr("dynamic_slice_sizes") == [2, 3]
    assert insts["iota"].attr("iota_dimension") == 0
    # A non-default layout is kept: {0,1} on a transpose.
    transpose = insts["transpose"]
    assert transpose.shape.layout is not None
    assert transpose.attr("dimensions") == [1, 0]


@pytest.mark.parametrize("text, dtype, expected", [
    ("f32[3] constant({1, -inf, nan})", np.float32, [1.0, -math.inf, math.nan]),
    ("f32[] constant(inf)", np.float32, [math.inf]),
    ("bf16[2] constant({0.1, 3.14159})", ml_dtypes.bfloat16,
     [float(ml_dtypes.bfloat16(0.1)), float(ml_dtypes.bfloat16(3.14159))]),
    ("f16[] constant(65504)", np.float16, [65504.0]),
    ("s4[3] constant({-8, 7, 0})", ml_dtypes.int4, [-8, 7, 0]),
    ("u8[2,2] constant({{0, 255}, {1, 2}})", np.uint8, [0, 255, 1, 2]),
    ("pred[2] constant({true, false})", np.bool_, [True, False]),
    ("c64[] constant((1, -2.5))", np.complex64, [complex(1, -2.5)]),
    ("f8e4m3fn[] constant(0.3)", ml_dtypes.float8_e4m3fn,
     [float(ml_dtypes.float8_e4m3fn(0.3))]),
    ("s64[] constant(-9223372036854775808)", np.int64, [-(1 << 63)]),
])
def test_constants(text, dtype, expected):
    module = parse_hlo(f"HloModule m\nENTRY e {{\n  ROOT c = {text}\n}}\n")
    value = module.entry.root.literal.value
    assert value.dtype == np.dtype(dtype)
    flat = [complex(v) if np.iscomplexobj(value) else float(v) if value.dtype.kind == "f"
            or value.dtype == ml_dtypes.bfloat16 else v for v in value.reshape(-1).tolist()]
    for got, want in zip(flat, expected):
        if isinstance(want, float) and math.isnan(want):
            assert math.isnan(float(got))
        else:
            assert got == want


# Literals the bulk reader (numpy's) takes and ones it leaves to the
# value-at-a-time reader: both must read the same values, or give the same
# error at the same place.
_LITERALS = [
    ("f32", "2,3", "{ { 1, -2.5, inf }, { -inf, nan, -nan } }"),
    ("bf16", "4", "{1e-5, -0, 3.25e+2, +7}"),
    ("f64", "3", "{1.5, .5, 5.}"),
    ("f32", "2", "{nan(0x7fffff), 1}"),
    ("f32", "0", "{}"),
    ("f32", "", "3.5"),
    ("f32", "2,2", "{1, 2, 3, 4}"),
    ("s8", "3", "{-128, 127, 0}"),
    ("s4", "3", "{-8, 7, 0}"),
    ("u8", "2", "{255, 0}"),
    ("u64", "2", "{18446744073709551615, 0}"),
    ("s64", "2", "{-9223372036854775808, 9223372036854775807}"),
    ("pred", "4", "{true, false, 1, 0}"),
    ("c64", "1", "{(1, 2)}"),
    # Errors.
    ("s8", "3", "{-129, 127, 0}"),
    ("s64", "1", "{99999999999999999999}"),
    ("u64", "1", "{-1}"),
    ("pred", "2", "{2, 0}"),
    ("f32", "3", "{1 2, 3}"),
    ("f32", "3", "{1,, 2}"),
    ("f32", "3", "{1, 2}"),
    ("f32", "2", "{1, fan}"),
]


def _constant_or_error(element, dims, literal):
    try:
        module = parse_hlo(f"HloModule m\nENTRY e {{\n  ROOT c = {element}[{dims}] "
                           f"constant({literal})\n}}\n")
    except HloParseError as e:
        return str(e)
    return module.entry.root.literal.value


@pytest.mark.parametrize("element, dims, literal", _LITERALS)
def test_literals_read_in_bulk_as_one_at_a_time(element, dims, literal, monkeypatch):
    bulk = _constant_or_error(element, dims, literal)
    monkeypatch.setattr(parser_module, "_bulk_values", lambda *args: None)
    one_at_a_time = _constant_or_error(element, dims, literal)
    if isinstance(one_at_a_time, str):
        assert bulk == one_at_a_time
        return
    assert isinstance(bulk, np.ndarray)
    assert (bulk.dtype, bulk.shape) == (one_at_a_time.dtype, one_at_a_time.shape)
    assert bulk.tobytes() == one_at_a_time.tobytes()  # NaN signs included


# Fragments of literals, well formed and not, for the randomized check.
_LITERAL_PIECES = ["1", "0", "-1", "2.5", "-0", "1e3", "1e", "e5", ".", "5.", ".5", "-", "+",
                   "+7", "inf", "-inf", "nan", "-nan", "na", "fin", ",", ",", ", ", " ", " ",
                   "{", "}", "{", "}", "127", "-128", "255", "256", "1-2", "--1",
                   "9223372036854775807", "true", "false", "\n"]


def test_random_literals_read_in_bulk_as_one_at_a_time(monkeypatch):
    """Random literals, well formed and with a piece put in or cut out:
    numpy's reader makes values up for some (an empty item, a lone `-`),
    which the bulk reader must leave to the one-at-a-time reader (240k
    random ones agreed before this test)."""
    rng = random.Random(72)
    values = {"f32": ["1", "-2.5", "1e3", "inf", "-inf", "nan", ".5", "7."], "bf16": ["0.1", "-0"],
              "s8": ["-128", "127", "0"], "s32": ["-5", "70000"], "s64": ["-1", "12"],
              "u8": ["255", "0"], "u64": ["18446744073709551615", "3"],
              "pred": ["true", "false", "1", "0"]}
    cases = []
    for _ in range(3000):
        element = rng.choice(list(values))
        rows, cols = rng.randint(1, 3), rng.randint(1, 3)
        literal = "{" + ", ".join("{" + ",  ".join(rng.choice(values[element]) for _ in range(cols))
                                  + "}" for _ in range(rows)) + "}"
        for _ in range(rng.choice([0, 0, 1, 2])):  # a piece inserted, or one cut out
            at = rng.randint(0, len(literal))
            if rng.random() < 0.6:
                literal = literal[:at] + rng.choice(_LITERAL_PIECES) + literal[at:]
            else:
                literal = literal[:at] + literal[at + rng.randint(1, 3):]
        cases.append((element, f"{rows},{cols}", literal))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # f32 overflow, both ways
        bulk = [_constant_or_error(*case) for case in cases]
        monkeypatch.setattr(parser_module, "_bulk_values", lambda *args: None)
        one_at_a_time = [_constant_or_error(*case) for case in cases]
    for case, a, b in zip(cases, bulk, one_at_a_time):
        if isinstance(a, str) or isinstance(b, str):
            assert a == b, case
        else:
            assert (a.dtype, a.tobytes()) == (b.dtype, b.tobytes()), case
    assert sum(isinstance(a, np.ndarray) for a in bulk) > 1000  # not all errors


def test_a_large_literal_is_read_in_bulk(monkeypatch):
    """XLA prints a program's closed-over arrays whole: 8M values took ~20 s
    one at a time. Here the one-at-a-time reader refuses to run."""
    def refuse(*args):
        raise AssertionError("read one value at a time")
    monkeypatch.setattr(parser_module._Parser, "literal_values", refuse)
    values = np.random.default_rng(0).standard_normal((500, 64)).astype(np.float32)
    rows = ", ".join("{" + ", ".join(repr(float(v)) for v in row) + "}" for row in values)
    module = parse_hlo(f"HloModule m\nENTRY e {{\n  ROOT c = f32[500,64] constant({{{rows}}})\n}}\n")
    np.testing.assert_array_equal(module.entry.root.literal.value, values)


def test_elided_constant_has_no_value():
    module = parse_hlo("HloModule m\nENTRY e {\n  ROOT c = f32[1000] constant({...})\n}\n")
    assert module.entry.root.literal.value is None
    assert "constant({...})" in module.to_text()


@pytest.mark.parametrize("name", ["pred", "s2", "s4", "s8", "s16", "s32", "s64", "u2", "u4",
                                  "u8", "u16", "u32", "u64", "f8e5m2", "f8e4m3fn", "bf16",
                                  "f16", "f32", "f64", "c64", "c128", "token"])
def test_element_types(name):
    shape = parse_shape(f"{name}[]" if name == "token" else f"{name}[2,3]{{0,1}}")
    assert shape.element_type is element_type(name)
    if name != "token":
        assert shape.dims == (2, 3) and shape.minor_to_major == (0, 1)
        assert str(shape) == f"{name}[2,3]{{0,1}}"


def test_tuple_and_dynamic_shapes():
    s = parse_shape("(f32[2]{0}, (s32[], pred[<=4]))")
    assert s.is_tuple and len(s.leaves()) == 3
    assert s.leaves()[2].dynamic == (True,)
    assert str(s) == "(f32[2]{0}, (s32[], pred[<=4]))"


def test_unknown_attributes_are_kept_verbatim():
    text = ("HloModule m, some_flag={a=1 b=\"x,y\"}\n"
            "ENTRY e {\n"
            "  p = f32[2] parameter(0), sharding={devices=[2]0,1}\n"
            "  ROOT n = f32[2] negate(p), frontend_attributes={_xla=\"1\"}, "
            "weird_thing=[1:2]{x}, control-predecessors={p}\n"
            "}\n")
    module = parse_hlo(text)
    out = module.to_text()
    assert "some_flag={a=1 b=\"x,y\"}" in out
    assert "sharding={devices=[2]0,1}" in out
    assert "weird_thing=[1:2]{x}" in out
    root = module.entry.root
    assert root.attr("frontend_attributes") == {"_xla": "1"}
    assert root.control_predecessors == [module.entry.instruction("p")]


def test_no_entry_means_the_last_computation():
    module = parse_hlo("HloModule m\nc1 {\n  ROOT p = f32[] parameter(0)\n}\n"
                       "c2 {\n  ROOT q = f32[] parameter(0)\n}\n")
    assert module.entry.name == "c2"


def _expected_error(path):
    m = re.match(r"// ERROR: (\d+):(\d+): (.*)", path.read_text())
    return int(m.group(1)), int(m.group(2)), m.group(3)


@pytest.mark.parametrize("path", INVALID, ids=lambda p: p.name)
def test_malformed_hlo(path):
    line, column, message = _expected_error(path)
    with pytest.raises(HloParseError) as info:
        parse_hlo(path.read_text(), path.name)
    e = info.value
    assert (e.line, e.column, e.message) == (line, column, message)
    assert str(e) == f"{path.name}:{line}:{column}: error: {message}"


def test_outputs_and_callees():
    """One walk over called computations (nested ones too, each once,
    callees first) serves the emitters, the verifier and the XLA reference."""
    module = parse_hlo("""HloModule m
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
sum_map {
  x = f32[2,4] parameter(0)
  z = f32[] constant(0)
  ROOT r = f32[] reduce(x, z), dimensions={0,1}, to_apply=add
}
ENTRY e {
  p = f32[2,4] parameter(0)
  z = f32[] constant(0)
  r1 = f32[2] reduce(p, z), dimensions={1}, to_apply=add
  m = f32[2] map(r1, r1), dimensions={0}, to_apply=add
  c = f32[] call(p), to_apply=sum_map
  ROOT t = (f32[2], f32[2]) tuple(r1, m)
}
""")
    assert [c.name for c in module.entry.callees()] == ["add", "sum_map"]
    assert [c.name for c in module.computation("sum_map").callees()] == ["add"]
    assert [o.name for o in module.entry.outputs] == ["r1", "m"]
    assert [o.name for o in module.computation("add").outputs] == ["s"]


def test_a_call_with_the_wrong_operand_count_is_an_error_at_the_call():
    """Found by the fuzzer (an IndexError in the inliner before): a call
    passing fewer operands than its callee has parameters."""
    from xla_gpu.hlo.inline import inline_calls
    text = ("HloModule m\nf {\n  a = f32[4] parameter(0)\n  b = f32[4] parameter(1)\n"
            "  ROOT s = f32[4] add(a, b)\n}\nENTRY e {\n  p = f32[4] parameter(0)\n"
            "  ROOT c = f32[4] call(p), to_apply=f\n}\n")
    module = parse_hlo(text, "call.hlo")
    with pytest.raises(HloParseError) as info:
        inline_calls(module.entry)
    assert str(info.value) == ("call.hlo:9:3: error: call c passes 1 operands to f, which "
                               "takes 2")


def test_a_module_on_one_line_is_the_module_on_many():
    """XLA's parser takes instructions (and computations) on one line: an
    attribute's value ends where the next instruction starts -- `ROOT`,
    or a name, `=` and a shape -- not at the end of the line."""
    lines = """HloModule m
add {
  x = f32[] parameter(0)
  y = f32[] parameter(1)
  ROOT s = f32[] add(x, y)
}
f {
  p = f32[8] parameter(0)
  c = f32[] constant(1)
  b = f32[8] broadcast(c), dimensions={}
  ROOT a = f32[8] add(p, b)
}
ENTRY e {
  p = f32[8] parameter(0)
  r = f32[8] fusion(p), kind=kLoop, calls=f
  t = (f32[8], f32[8]) tuple(r, r), metadata={op_name="a b=c"}
  z = f32[] constant(0)
  q = f32[] reduce(r, z), dimensions={0}, to_apply=add
  ROOT o = (f32[8], f32[]) tuple(r, q)
}
"""
    one_line = re.sub(r"\n(?!add|f |ENTRY)", " ", lines.split("\n", 1)[1])
    assert one_line.count("\n") == 2
    text = "HloModule m\n" + one_line
    assert parse_hlo(text).to_text() == parse_hlo(lines).to_text()
    assert _xla_text(text) == _xla_text(lines)


def _fused(body: str, result: str):
    module = parse_hlo(f"""HloModule m
fused {{
  p = f32[8] parameter(0)
{body}
}}
ENTRY e {{
  a = f32[8] parameter(0)
  ROOT f = {result} fusion(a), kind=kLoop, calls=fused
}}""")
    return module.computation("fused")


def _ops(comp) -> list[str]:
    return [f"{i.name}={i.shape.element_type}:{i.opcode}({','.join(o.name for o in i.operands)})"
            for i in comp.topological_order()]


def test_simplify_fp_conversions_drops_round_trips_and_joins_chains():
    from xla_gpu.hlo.simplify_fp_conversions import simplify_fp_conversions

    # f32 -> bf16 -> f32: the exp reads p unrounded; -> bf16 -> f16: one
    # convert from f32; the root's chain ends in the root's own type.
    comp = _fused("""  b = bf16[8] convert(p)
  c = f32[8] convert(b)
  e = f32[8] exponential(c)
  h = bf16[8] convert(e)
  g = f16[8] convert(h)
  d = f32[8] convert(g)
  ROOT r = f32[8] add(d, e)""", "f32[8]")
    assert simplify_fp_conversions(comp)
    assert _ops(comp) == ["p=f32:parameter()", "e=f32:exponential(p)", "r=f32:add(e,e)"]
    assert [u.name for u in comp.instruction("e").users] == ["r"]
    comp = _fused("""  b = bf16[8] convert(p)
  ROOT g = f16[8] convert(b)""", "f16[8]")
    assert simplify_fp_conversions(comp)
    assert _ops(comp) == ["p=f32:parameter()", "g=f16:convert(p)"]
    assert comp.root is comp.instruction("g")


def test_simplify_fp_conversions_keeps_single_and_integer_converts():
    from xla_gpu.hlo.simplify_fp_conversions import simplify_fp_conversions

    # A convert alone, and a round trip through s32 (not a floating-point
    # type), stay: the latter truncates.
    comp = _fused("""  s = s32[8] convert(p)
  c = f32[8] convert(s)
  b = bf16[8] convert(p)
  e = f32[8] exponential(c)
  ROOT t = (f32[8], bf16[8]) tuple(e, b)""", "(f32[8], bf16[8])")
    before = _ops(comp)
    assert not simplify_fp_conversions(comp)
    assert _ops(comp) == before


@pytest.mark.parametrize("name, values", [
    ("f32", np.array([[1.5, -0.0, np.inf], [-np.inf, np.nan, -np.nan]], np.float32)),
    ("bf16", np.array([0.1, -3e38, 1e-40], ml_dtypes.bfloat16)),
    ("s32", np.array([[-(1 << 31), 7], [0, (1 << 31) - 1]], np.int32)),
    ("pred", np.array([True, False, True])),
    ("f64", np.array(2.5e-300)),
])
def test_a_literal_made_from_values_reads_back_the_same(name, values):
    # Literal.of: the text of a constant read from XLA's serialized module,
    # made when something prints it (xla_gpu.jax.jit's modules).
    from xla_gpu.hlo import Literal
    etype = element_type(name)
    text = Literal.of(values, etype).text
    dims = ",".join(map(str, values.shape))
    back = parse_hlo(f"HloModule m\nENTRY e {{\n  ROOT c = {name}[{dims}] constant({text})\n}}\n")
    value = back.entry.root.literal.value
    assert value.shape == values.shape and value.tobytes() == values.astype(etype.dtype).tobytes()
