"""The tree-reduction split of a fusion (emitters/tree_reduction.py): which
reductions it splits, into what, and that each part is race-free."""

import pytest

from xla_gpu.emitters import analyze_fusion
from xla_gpu.emitters.fusion_analysis import (EmitterKind, reduction_dimensions,
                                              reduction_is_race_free)
from xla_gpu.emitters.tree_reduction import split_reduction
from xla_gpu.hlo import parse_hlo


def _fusion(param: str, out: str, dims: str, reducer: str = "add", init: str = "0",
            prologue: str = "exponential"):
    text = f"""HloModule m

r {{
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT c = f32[] {reducer}(a, b)
}}

fused {{
  p = {param} parameter(0)
  z = f32[] constant({init})
  e = {param} {prologue}(p)
  ROOT s = {out} reduce(e, z), dimensions={{{dims}}}, to_apply=r
}}

ENTRY main {{
  p0 = {param} parameter(0)
  ROOT f = {out} fusion(p0), kind=kInput, calls=fused
}}
"""
    return parse_hlo(text).fusions()[0]


def _reduces(parts):
    return [p.fused_computation.root for p in parts]


def test_a_million_element_sum_is_rows_of_a_thousand_then_one_row():
    parts = split_reduction(_fusion("f32[1024,1024]", "f32[]", "0,1"))
    inner, outer = _reduces(parts)
    assert [o.shape.dims for o in inner.operands] == [(1024, 1024), ()]
    assert inner.shape.dims == (1024,) and inner.dimensions == [1]
    assert outer.operands[0].shape.dims == (1024,) and outer.shape.dims == ()
    assert outer.dimensions == [0]
    # The prologue stays with the first part; the second reads the first.
    assert "exponential" in {i.opcode for i in parts[0].fused_computation.instructions}
    assert parts[1].operands == [parts[0].operands[0], parts[0]]
    assert parts[1].name == "f" and parts[1].shape.dims == ()
    assert all(analyze_fusion(p).kind == EmitterKind.REDUCTION for p in parts)


def test_a_prime_length_is_padded_with_the_init_value():
    parts = split_reduction(_fusion("f32[1000003]", "f32[]", "0", "maximum", "-inf"))
    comp = parts[0].fused_computation
    (pad,) = [i for i in comp.instructions if i.opcode == "pad"]
    assert pad.operands[1].opcode == "constant" and pad.operands[1].literal.text == "-inf"
    rows, row = _reduces(parts)[0].operands[0].shape.dims
    # XLA's choice: about sqrt(n) a row, the least padding.
    assert 500 < row <= 1000 and rows * row == pad.shape.dims[-1]
    assert 0 < rows * row - 1000003 < row


def test_a_long_column_is_split_along_its_rows():
    parts = split_reduction(_fusion("f32[3,10007,5]", "f32[3,5]", "1"))
    inner, outer = _reduces(parts)
    k = inner.shape.dims[1]
    assert inner.shape.dims == (3, k, 5) and inner.dimensions == [2]
    assert outer.dimensions == [1] and outer.shape.dims == (3, 5)


def test_a_batched_row_reduction_reduces_its_rows_last():
    parts = split_reduction(_fusion("f32[100,7,20000]", "f32[7]", "0,2"))
    assert len(parts) == 3
    assert [p.shape.dims[:2] for p in parts[:2]] == [(100, 7), (100, 7)]
    last = _reduces(parts)[-1]
    assert last.operands[0].shape.dims == (100, 7) and last.dimensions == [0]
    # Each part reads the one before it, last (and the fusion's operands).
    assert [p.operands[-1] for p in parts[1:]] == parts[:2]


@pytest.mark.parametrize("param, out, dims", [
    ("f32[1024,1024]", "f32[]", "0,1"), ("f32[1000003]", "f32[]", "0"),
    ("f32[3,10007,5]", "f32[3,5]", "1"), ("f32[100,7,20000]", "f32[7]", "0,2"),
    ("f32[70000,300000]", "f32[300000]", "0"),
])
def test_every_part_is_race_free(param, out, dims):
    parts = split_reduction(_fusion(param, out, dims))
    assert parts and parts[-1].shape.dims == parts[-1].fused_computation.root.shape.dims
    for root in _reduces(parts):
        assert reduction_is_race_free(reduction_dimensions(root)), root.parent.to_text()


@pytest.mark.parametrize("param, out, dims, prologue", [
    ("f32[64,16384]", "f32[64]", "1", "exponential"),     # race-free already
    ("f32[4096,1024]", "f32[1024]", "0", "exponential"),
    ("f32[1048576]", "f32[1048576]", "", "exponential"),  # nothing reduced
])
def test_reductions_a_block_can_do_are_left_alone(param, out, dims, prologue):
    assert split_reduction(_fusion(param, out, dims, prologue=prologue)) is None


def test_a_fusion_whose_root_is_not_a_reduce_is_left_alone():
    text = """HloModule m

fused {
  p = f32[2000000] parameter(0)
  ROOT e = f32[2000000] exponential(p)
}

ENTRY main {
  p0 = f32[2000000] parameter(0)
  ROOT f = f32[2000000] fusion(p0), kind=kLoop, calls=fused
}
"""
    assert split_reduction(parse_hlo(text).fusions()[0]) is None


def test_an_epilogue_goes_with_the_last_part_and_the_prologue_with_the_first():
    text = """HloModule m

r {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT c = f32[] add(a, b)
}

fused {
  p = bf16[2048,2048] parameter(0)
  q = f32[] parameter(1)
  c = f32[2048,2048] convert(p)
  z = f32[] constant(0)
  s = f32[] reduce(c, z), dimensions={0,1}, to_apply=r
  n = f32[] constant(2.38e-07)
  m = f32[] multiply(s, n)
  t = f32[] add(m, q)
  ROOT o = bf16[] convert(t)
}

ENTRY main {
  p0 = bf16[2048,2048] parameter(0)
  p1 = f32[] parameter(1)
  ROOT f = bf16[] fusion(p0, p1), kind=kLoop, calls=fused
}
"""
    fusion = parse_hlo(text).fusions()[0]
    first, last = split_reduction(fusion)
    ops = lambda part: sorted(i.opcode for i in part.fused_computation.instructions)  # noqa: E731
    assert ops(first) == ["constant", "convert", "parameter", "parameter", "reduce", "reshape"]
    assert ops(last) == ["add", "constant", "constant", "convert", "multiply", "parameter",
                         "parameter", "parameter", "reduce"]
    assert last.fused_computation.root.opcode == "convert" and last.shape.dims == ()
    assert last.operands == [*fusion.operands, first]
    partial = last.fused_computation.parameters[-1]
    assert partial.shape.dims == first.shape.dims == (2048,)


def test_two_reduces_of_one_result_are_left_alone():
    text = """HloModule m

r {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT c = f32[] add(a, b)
}

fused {
  p = f32[1048576] parameter(0)
  z = f32[] constant(0)
  s = f32[] reduce(p, z), dimensions={0}, to_apply=r
  t = f32[] reduce(p, z), dimensions={0}, to_apply=r
  ROOT o = f32[] add(s, t)
}

ENTRY main {
  p0 = f32[1048576] parameter(0)
  ROOT f = f32[] fusion(p0), kind=kLoop, calls=fused
}
"""
    assert split_reduction(parse_hlo(text).fusions()[0]) is None


def _softmax(rows: int, cols: int):
    text = f"""HloModule m

mx {{
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT c = f32[] maximum(a, b)
}}

add {{
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT c = f32[] add(a, b)
}}

fused {{
  x = f32[{rows},{cols}] parameter(0)
  ninf = f32[] constant(-inf)
  m = f32[{rows}] reduce(x, ninf), dimensions={{1}}, to_apply=mx
  mb = f32[{rows},{cols}] broadcast(m), dimensions={{0}}
  d = f32[{rows},{cols}] subtract(x, mb)
  e = f32[{rows},{cols}] exponential(d)
  z = f32[] constant(0)
  s = f32[{rows}] reduce(e, z), dimensions={{1}}, to_apply=add
  sb = f32[{rows},{cols}] broadcast(s), dimensions={{0}}
  ROOT o = f32[{rows},{cols}] divide(e, sb)
}}

ENTRY main {{
  p0 = f32[{rows},{cols}] parameter(0)
  ROOT f = f32[{rows},{cols}] fusion(p0), kind=kLoop, calls=fused
}}
"""
    return parse_hlo(text).fusions()[0]


def test_a_softmax_as_one_loop_fusion_is_its_reductions_then_the_rest():
    # Each of the 512 x 1024 elements would recompute its row's max and sum.
    fusion = _softmax(512, 1024)
    mx, total, rest = split_reduction(fusion)
    assert [analyze_fusion(p).kind for p in (mx, total, rest)] == \
        [EmitterKind.REDUCTION, EmitterKind.REDUCTION, EmitterKind.LOOP]
    assert mx.fused_computation.root.opcode == "reduce" and mx.shape.dims == (512,)
    # The sum reads the max (its last operand); the rest reads both.
    assert total.operands == [fusion.operands[0], mx]
    assert rest.operands == [fusion.operands[0], mx, total]
    assert "reduce" not in {i.opcode for i in rest.fused_computation.instructions}
    assert rest.name == "f" and rest.shape == fusion.shape
    assert len({p.name for p in (mx, total, rest)}) == 3


def test_a_softmax_over_short_rows_stays_one_fusion():
    # Rows of 32: 32 times the input read, as XLA:CPU fuses it itself.
    assert split_reduction(_softmax(256, 32)) is None


@pytest.mark.parametrize("sm", [80, 90])
@pytest.mark.parametrize("param, out, dims, reducer, init", [
    ("f32[1024,1024]", "f32[]", "0,1", "add", "0"),
    ("f32[1000003]", "f32[]", "0", "maximum", "-inf"),
    ("f32[3,10007,5]", "f32[3,5]", "1", "add", "0"),
])
def test_every_part_assembles(param, out, dims, reducer, init, sm):
    """Each part's kernel (the reduction emitter's shuffles and shared
    tiles, or the loop emitter's) compiles to PTX that ptxas accepts."""
    from mlir import ir
    from xla_gpu import pipelines, ptx
    from xla_gpu.emitters import emit_fusion
    if ptx.find_ptxas() is None or pipelines.find_libdevice() is None:
        pytest.skip("ptxas/libdevice (CUDA) is not installed on this machine")
    opts = pipelines.PipelineOptions(compute_capability=(sm // 10, sm % 10))
    for part in split_reduction(_fusion(param, out, dims, reducer, init)):
        with ir.Context():
            module = str(emit_fusion(part))
        with pipelines.compile_context():
            code = pipelines.compile_to_ptx(pipelines.parse_module(module), opts)
        result = ptx.ptxas_check(code, opts.chip)
        assert result.ok, result.log
