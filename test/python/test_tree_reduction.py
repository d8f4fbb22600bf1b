"""The tree-reduction split of a fusion (emitters/tree_reduction.py): which
reductions it splits, into what, and that each part is race-free."""

import math

import numpy as np
import pytest

from xla_gpu.emitters import analyze_fusion
from xla_gpu.emitters.fusion_analysis import (EmitterKind, reduction_dimensions,
                                              reduction_is_race_free)
from xla_gpu.emitters.tree_reduction import recomputed_reduce, split_reduction
from xla_gpu.hlo import parse_hlo

from conftest import row_exp_sum, top_probability_fusion


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


def _row_read_sum(cols: int, read_by_row: bool):
    """The sum of x - m over f32[65536,cols], m a row's value (broadcast
    along the rows) or a parameter of x's shape."""
    m = "f32[65536]" if read_by_row else f"f32[65536,{cols}]"
    mb = (f"  mb = f32[65536,{cols}] broadcast(m), dimensions={{0}}\n" if read_by_row
          else "  mb = f32[65536,{cols}] copy(m)\n".replace("{cols}", str(cols)))
    text = f"""HloModule m
r {{
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT c = f32[] add(a, b)
}}
fused {{
  p = f32[65536,{cols}] parameter(0)
  m = {m} parameter(1)
{mb}  d = f32[65536,{cols}] subtract(p, mb)
  z = f32[] constant(0)
  ROOT s = f32[] reduce(d, z), dimensions={{0,1}}, to_apply=r
}}
ENTRY main {{
  p0 = f32[65536,{cols}] parameter(0)
  p1 = {m} parameter(1)
  ROOT f = f32[] fusion(p0, p1), kind=kInput, calls=fused
}}
"""
    return parse_hlo(text).fusions()[0]


@pytest.mark.parametrize("cols, read_by_row, whole_rows", [
    (24, True, True),    # a cross-entropy's x - max - log(sum) over rows of 24
    (8, True, True),     # MIN_WHOLE_ROW_READ_BY_ROW
    (24, False, False),  # nothing read a row at: XLA's parts of about sqrt(n)
    (4, True, False),    # shorter than MIN_WHOLE_ROW_READ_BY_ROW
])
def test_the_host_sums_short_rows_it_reads_a_value_of_in_whole_rows(cols, read_by_row,
                                                                    whole_rows):
    """For the CPU target, a full sum of rows of 8 to 31 elements that reads
    a value of each row is split into the rows' sums first: parts
    of about sqrt(n) elements cut rows, and each lane gathered its row's
    value. Without host=True, or without such a value, XLA's split."""
    fusion = _row_read_sum(cols, read_by_row)
    inner = _reduces(split_reduction(fusion, host=True))[0]
    xla_inner = _reduces(split_reduction(fusion))[0]
    assert (inner.shape.dims == (65536,)) == whole_rows
    assert xla_inner.shape.dims != (65536,)


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


@pytest.mark.parametrize("param, out, dims, k, rows, loop", [
    # Columns a vector of lanes wide: at most 512 rows a part, a loop kernel.
    ("f32[8192,512]", "f32[512]", "0", 16, 512, True),
    ("f32[8192,128]", "f32[128]", "0", 16, 512, True),
    # At least 137 (70000 / 512); 140 pads none.
    ("f32[70000,300000]", "f32[300000]", "0", 140, 500, True),
    # Narrower: 3 tiles of the reduction emitter, at least 16 blocks (k >=
    # 6, at most 4096 rows: k >= 3); 6 x 1668 pads 1.
    ("f32[3,10007,5]", "f32[3,5]", "1", 6, 1668, False),
])
def test_the_host_splits_a_column_where_its_threads_sum_the_most_rows(param, out, dims, k, rows,
                                                                      loop):
    """For the CPU target (host=True) a column reduction's first part keeps
    as few rows of partial sums (k) as leave it a loop kernel (the columns
    a vector of lanes wide: at most 512 rows), else HOST_SPLIT_BLOCKS
    blocks of the reduction emitter, each thread summing thousands of
    rows, where XLA's k (about sqrt(n)) leaves it two; each part race-free
    still. Rows are split as XLA does."""
    from mlir import ir
    from xla_gpu.emitters import LoopEmitter, emit_kernel, make_emitter
    from xla_gpu.emitters.tree_reduction import HOST_SPLIT_BLOCKS
    fusion = _fusion(param, out, dims)
    xla_inner = _reduces(split_reduction(fusion))[0]
    parts = split_reduction(fusion, host=True)
    inner, outer = _reduces(parts)
    assert reduction_dimensions(outer).dimensions[1] == k
    assert reduction_dimensions(inner).dimensions[1] == rows
    assert reduction_dimensions(xla_inner).dimensions[1] != rows
    for root in (inner, outer):
        assert reduction_is_race_free(reduction_dimensions(root)), root.parent.to_text()
    with ir.Context():
        assert isinstance(make_emitter(parts[0], host=True), LoopEmitter) == loop
        blocks = math.prod(emit_kernel(parts[0], host=True).launch.block_counts)
    if not loop:
        assert blocks >= HOST_SPLIT_BLOCKS
    rows_split = _fusion("f32[1024,1024]", "f32[]", "0,1")
    assert [r.shape.dims for r in _reduces(split_reduction(rows_split, host=True))] == \
        [r.shape.dims for r in _reduces(split_reduction(rows_split))]


@pytest.mark.parametrize("param, out, dims, k, rows", [
    ("f32[3000,700]", "f32[700]", "0", 6, 500),
    ("f32[2000,1500]", "f32[1500]", "0", 4, 500),
    ("f32[4096,1024]", "f32[1024]", "0", 8, 512),
    ("f32[8,1025,64]", "f32[8,64]", "1", 5, 205),      # 5 x 205 pads none
    ("f32[1024,1024]", "f32[1024]", "0", None, None),   # the loop kernel's rows already
    ("f32[3000,8]", "f32[8]", "0", None, None),         # narrower than 16 columns
])
def test_the_host_splits_race_free_columns_longer_than_its_loop_kernels(param, out, dims, k,
                                                                        rows):
    """A race-free column reduction (XLA:GPU leaves it whole) of more rows
    than the CPU target's loop kernel sums (HOST_LOOP_COLUMN_ROWS), at
    least HOST_LOOP_COLUMN_LANES columns wide, is split for the CPU target
    alone (needs_tree_split(host=True), _host_splits_columns): its first
    part such a loop kernel of at most 512 rows a part. Its sums on the
    CPU target are XLA:CPU's within f32's rounding."""
    from mlir import ir
    from xla_gpu.emitters import LoopEmitter, emit_kernel, make_emitter
    from xla_gpu.emitters.tree_reduction import needs_tree_split
    from xla_gpu.reference import run_with_xla
    from xla_gpu.runtime import CpuKernel
    from xla_gpu.tools.test_correctness import reference_text
    fusion = _fusion(param, out, dims)
    assert not needs_tree_split(fusion) and split_reduction(fusion) is None
    assert needs_tree_split(fusion, host=True) == (k is not None)
    if k is None:
        return
    parts = split_reduction(fusion, host=True)
    inner, outer = _reduces(parts)
    assert reduction_dimensions(outer).dimensions[1] == k
    assert reduction_dimensions(inner).dimensions[1] == rows
    x = np.random.default_rng(3).standard_normal(fusion.operands[0].shape.dims).astype(np.float32)
    with ir.Context():
        assert isinstance(make_emitter(parts[0], host=True), LoopEmitter)
        first = np.zeros(parts[0].shape.dims, np.float32)
        CpuKernel(emit_kernel(parts[0], host=True))(x, first)
        got = np.zeros(parts[1].shape.dims, np.float32)
        CpuKernel(emit_kernel(parts[1], host=True))(x, first, got)
    (want,) = run_with_xla(reference_text(fusion.fused_computation), [x])
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-4)


@pytest.mark.parametrize("param, out, dims, prologue", [
    ("f32[64,16384]", "f32[64]", "1", "exponential"),     # race-free already
    ("f32[4096,1024]", "f32[1024]", "0", "exponential"),
    ("f32[1048576]", "f32[1048576]", "", "exponential"),  # nothing reduced
])
def test_reductions_a_block_can_do_are_left_alone(param, out, dims, prologue):
    assert split_reduction(_fusion(param, out, dims, prologue=prologue)) is None


def test_a_reduction_over_dimensions_apart_reduces_their_largest_run_first():
    # A group norm's statistics, [N, H, W, G, C/G] -> [N, G]: neither the
    # reduced nor the kept dimensions are contiguous (the loop emitter's, a
    # thread an output). As XLA:GPU's reduction-splitter: H and W (1024
    # elements) first, a column reduction to [N, G, C/G]; then C/G, rows.
    parts = split_reduction(_fusion("f32[8,32,32,8,16]", "f32[8,8]", "1,2,4"))
    inner, outer = _reduces(parts)
    assert inner.dimensions == [1, 2] and inner.shape.dims == (8, 8, 16)
    assert outer.operands[0].shape.dims == (8, 8, 16) and outer.dimensions == [2]
    assert outer.shape.dims == (8, 8)
    assert "exponential" in {i.opcode for i in parts[0].fused_computation.instructions}
    assert analyze_fusion(parts[0]).kind == EmitterKind.REDUCTION
    # Runs all shorter than 128 (XLA's threshold) stay one reduce.
    assert split_reduction(_fusion("f32[8,100,8,16]", "f32[8,8]", "1,3")) is None


def test_the_host_splits_shorter_runs_where_the_minor_dimension_is_reduced():
    # For the CPU target a run of 16 elements or more is split off where
    # the minor dimension is reduced (whole, each lane walks its own row in
    # order, scalar code for a float sum): the largest run first.
    parts = split_reduction(_fusion("f32[16,64,32,64]", "f32[16,32]", "1,3"), host=True)
    inner, outer = _reduces(parts)
    assert inner.dimensions == [1] and inner.shape.dims == (16, 32, 64)
    assert outer.dimensions == [2] and outer.shape.dims == (16, 32)
    assert all(analyze_fusion(p).kind == EmitterKind.REDUCTION for p in parts)
    # XLA:GPU's split (no `host`) leaves it whole, and so does the host
    # where the minor dimension is kept (its lanes read adjacent elements)
    # or the runs are shorter than 16.
    assert split_reduction(_fusion("f32[16,64,32,64]", "f32[16,32]", "1,3")) is None
    assert split_reduction(_fusion("f32[16,256,64,64]", "f32[256,64]", "0,2"), host=True) is None
    assert split_reduction(_fusion("f32[256,8,512,8]", "f32[256,512]", "1,3"), host=True) is None


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
    # The rows reduced as they are: no reshape of the convert's [2048,2048].
    assert ops(first) == ["constant", "convert", "parameter", "parameter", "reduce"]
    assert ops(last) == ["add", "constant", "constant", "convert", "multiply", "parameter",
                         "parameter", "parameter", "reduce"]
    assert last.fused_computation.root.opcode == "convert" and last.shape.dims == ()
    assert last.operands == [*fusion.operands, first]
    partial = last.fused_computation.parameters[-1]
    assert partial.shape.dims == first.shape.dims == (2048,)


def test_a_reduce_that_an_epilogue_of_two_inputs_follows_is_taken_out():
    # s + t: the loop emitter's fusion, each reduce on one thread. s is
    # taken out (then split), t then split with the add after it.
    text = """HloModule m

r {
  a = s32[] parameter(0)
  b = s32[] parameter(1)
  ROOT c = s32[] add(a, b)
}

mx {
  a = s32[] parameter(0)
  b = s32[] parameter(1)
  ROOT c = s32[] maximum(a, b)
}

fused {
  p = s32[1048576] parameter(0)
  z = s32[] constant(0)
  s = s32[] reduce(p, z), dimensions={0}, to_apply=r
  low = s32[] constant(-2147483648)
  t = s32[] reduce(p, low), dimensions={0}, to_apply=mx
  ROOT o = s32[] add(s, t)
}

ENTRY main {
  p0 = s32[1048576] parameter(0)
  ROOT f = s32[] fusion(p0), kind=kLoop, calls=fused
}
"""
    fusion = parse_hlo(text).fusions()[0]
    parts = split_reduction(fusion)
    assert len(parts) == 4 and parts[-1].fused_computation.root.opcode == "add"
    for root in [p.fused_computation.root for p in parts[:-1]] + \
            [i for i in parts[-1].fused_computation.instructions if i.opcode == "reduce"]:
        assert reduction_is_race_free(reduction_dimensions(root))
    import numpy as np
    x = np.random.RandomState(7).randint(-1000, 1000, 1048576).astype(np.int32)
    assert int(_run_parts(fusion, parts, [x])) == int(x.sum() + x.max())


def _run_parts(fusion, parts, inputs):
    """The last part's result, each part's kernel run on the CPU target on
    `fusion`'s inputs and the results of the parts before it (a tuple
    part's elements taken by its get-tuple-elements)."""
    import numpy as np
    from mlir import ir
    from xla_gpu.emitters import emit_fusion
    from xla_gpu.runtime import CpuKernel
    values = {id(o): a for o, a in zip(fusion.operands, inputs)}
    for part in parts:
        if part.opcode == "get-tuple-element":
            values[id(part)] = values[id(part.operands[0])][part.attr("index")]
            continue
        with ir.Context():
            kernel = CpuKernel(str(emit_fusion(part)))
        outs = [np.zeros(leaf.dims, leaf.element_type.dtype) for leaf in part.shape.leaves()]
        kernel(*[values[id(o)] for o in part.operands], *outs)
        values[id(part)] = outs if part.shape.is_tuple else outs[0]
    return values[id(parts[-1])]


def _argmax(shape: tuple[int, ...]):
    """An argmax's fusion over the last dimension of f32[shape] as XLA:CPU
    leaves jnp.argmax's (a loop fusion: a variadic reduce of the values and
    an iota, whose comparator takes the lower index among equal values)."""
    from test_random_heroes import ARGMAX
    dims = ",".join(map(str, shape))
    out = ",".join(map(str, shape[:-1]))
    text = f"""HloModule m

{ARGMAX}

fused {{
  p = f32[{dims}] parameter(0)
  iota = s32[{dims}] iota(), iota_dimension={len(shape) - 1}
  ninf = f32[] constant(-inf)
  zero = s32[] constant(0)
  ROOT r = (f32[{out}], s32[{out}]) reduce(p, iota, ninf, zero), dimensions={{{len(shape) - 1}}}, to_apply=argmax
}}

ENTRY main {{
  p0 = f32[{dims}] parameter(0)
  ROOT f = (f32[{out}], s32[{out}]) fusion(p0), kind=kLoop, calls=fused
}}
"""
    return parse_hlo(text).fusions()[0]


@pytest.mark.parametrize("shape, k", [((128000,), 500), ((100003,), 339), ((8, 128256), 501)])
def test_an_argmax_is_split_as_its_values_and_indices(ctx, shape, k):
    """A variadic reduce (jnp.argmax over a long row: XLA:CPU's loop fusion,
    one thread walking the row) is split as a sum is: each input padded
    with its init (-inf, index 0; 100003 padded to 339 x 295) and reshaped,
    k partial values and indices a row, then their reduce -- each part the
    reduction emitter's.
    The values and indices are XLA:CPU's, ties (rounded values) and all."""
    import numpy as np
    from xla_gpu.reference import run_with_xla
    from xla_gpu.tools.test_correctness import reference_text
    fusion = _argmax(shape)
    assert analyze_fusion(fusion).kind == EmitterKind.LOOP
    parts = split_reduction(fusion, host=True)
    first, *gets, last = parts
    assert [g.opcode for g in gets] == ["get-tuple-element"] * 2
    assert [leaf.dims for leaf in first.shape.leaves()] == [(*shape[:-1], k)] * 2
    assert last.shape == fusion.shape
    for part in (first, last):
        assert analyze_fusion(part).kind == EmitterKind.REDUCTION
    x = np.round(np.random.default_rng(3).standard_normal(shape) * 4).astype(np.float32)
    want = run_with_xla(reference_text(fusion.fused_computation), [x])
    got = _run_parts(fusion, parts, [x])
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)


def _assert_one_reduce_each_and_xlas_result(fusion, parts, rtol, inputs=None):
    """Each part holds one reduce (nothing recomputed), and the parts, run
    one after the other on the fusion's f32 input (or `inputs`), give
    XLA:CPU's result of the fusion within `rtol` (the order of the sums)."""
    import numpy as np
    from xla_gpu.reference import run_with_xla
    from xla_gpu.tools.test_correctness import reference_text
    for part in parts:
        assert [i.opcode for i in part.fused_computation.instructions].count("reduce") == 1
    if inputs is None:
        shape = fusion.operands[0].shape.dims
        inputs = [np.random.default_rng(0).standard_normal(shape).astype(np.float32)]
    (want,) = run_with_xla(reference_text(fusion.fused_computation), inputs)
    np.testing.assert_allclose(_run_parts(fusion, parts, inputs), want, rtol=rtol)


def _softmax_reducers(max_type: str) -> str:
    """A softmax's reducer computations: `mx` (maximum of `max_type`) and
    `add` (of f32)."""
    return f"""mx {{
  a = {max_type}[] parameter(0)
  b = {max_type}[] parameter(1)
  ROOT c = {max_type}[] maximum(a, b)
}}

add {{
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT c = f32[] add(a, b)
}}
"""


def _softmax(rows: int, cols: int):
    text = f"""HloModule m

{_softmax_reducers('f32')}
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
    assert mx.users == [total, rest] and total.users == [rest] and rest.users == []
    assert "reduce" not in {i.opcode for i in rest.fused_computation.instructions}
    assert rest.name == "f" and rest.shape == fusion.shape
    assert len({p.name for p in (mx, total, rest)}) == 3


def _bf16_softmax(rows: int, cols: int):
    """jax.nn.softmax of bf16 as XLA:CPU fuses it: its max, (x - max) and
    exp rounded to bf16, the sum of the unrounded exps."""
    s, r = f"[{rows},{cols}]", f"[{rows}]"
    text = f"""HloModule m

{_softmax_reducers('bf16')}
fused {{
  x = bf16{s} parameter(0)
  xf = f32{s} convert(x)
  ninf = bf16[] constant(-inf)
  m = bf16{r} reduce(x, ninf), dimensions={{1}}, to_apply=mx
  mf = f32{r} convert(m)
  mb = f32{s} broadcast(mf), dimensions={{0}}
  d = f32{s} subtract(xf, mb)
  dr = bf16{s} convert(d)
  df = f32{s} convert(dr)
  e = f32{s} exponential(df)
  er = bf16{s} convert(e)
  ef = f32{s} convert(er)
  z = f32[] constant(0)
  t = f32{r} reduce(e, z), dimensions={{1}}, to_apply=add
  tb = f32{s} broadcast(t), dimensions={{0}}
  o = f32{s} divide(ef, tb)
  ROOT y = bf16{s} convert(o)
}}

ENTRY main {{
  p0 = bf16{s} parameter(0)
  ROOT f = bf16{s} fusion(p0), kind=kLoop, calls=fused
}}
"""
    return parse_hlo(text).fusions()[0]


def test_a_bf16_softmax_keeps_its_rounded_exp_for_the_rest():
    """With side_outputs (xla_gpu.jax.jit's), the sum's part of a bf16
    softmax also writes the bf16 exp that the rest would compute again:
    a tuple, its elements read by the rest, which has no exponential left.
    The result is the same, bit for bit. Not in f32 (its 4-byte exps cost
    more to write and read than to recompute), nor without side_outputs."""
    import ml_dtypes
    import numpy as np
    fusion = _bf16_softmax(256, 512)
    plain = split_reduction(fusion, host=True)
    assert [p.opcode for p in plain] == ["fusion"] * 3
    assert "exponential" in {i.opcode for i in plain[-1].fused_computation.instructions}
    parts = split_reduction(fusion, host=True, side_outputs=True)
    mx, total, total_sum, total_exp, rest = parts
    assert [p.opcode for p in parts] == ["fusion", "fusion", "get-tuple-element",
                                         "get-tuple-element", "fusion"]
    assert [leaf.to_text(layout=False) for leaf in total.shape.leaves()] == \
        ["f32[256]", "bf16[256,512]"]
    assert total_sum.operands == [total] and total_exp.operands == [total]
    assert rest.operands[-2:] == [total_sum, total_exp]
    assert "exponential" not in {i.opcode for i in rest.fused_computation.instructions}
    x = np.random.default_rng(0).standard_normal((256, 512)).astype(ml_dtypes.bfloat16)
    got = _run_parts(fusion, parts, [x])
    want = _run_parts(fusion, plain, [x])
    np.testing.assert_array_equal(got.view(np.uint16), want.view(np.uint16))
    assert [p.opcode for p in split_reduction(_softmax(512, 1024), host=True,
                                              side_outputs=True)] == ["fusion"] * 3


def _log_softmax(rows: int, cols: int, summed: bool = False):
    """jax.nn.log_softmax as XLA:CPU fuses it (for YNNPACK), or with
    `summed` its sum, jax's -log_softmax(x).mean()'s: one loop fusion whose
    scalar sum reads x - max - log(sum(exp(x - max))) of every row."""
    s, r = f"[{rows},{cols}]", f"[{rows}]"
    root = (f"  y = f32{s} subtract(d, lb)\n"
            f"  ROOT total = f32[] reduce(y, z), dimensions={{0,1}}, to_apply=add" if summed
            else f"  ROOT y = f32{s} subtract(d, lb)")
    out = "f32[]" if summed else f"f32{s}"
    text = f"""HloModule m

{_softmax_reducers('f32')}
fused {{
{row_exp_sum(s, r)}
  l = f32{r} log(t)
  lb = f32{s} broadcast(l), dimensions={{0}}
{root}
}}

ENTRY main {{
  p0 = f32{s} parameter(0)
  ROOT f = {out} fusion(p0), kind=kLoop, calls=fused
}}
"""
    return parse_hlo(text).fusions()[0]


def test_a_reduce_that_a_later_reduce_reads_is_taken_out():
    """A row's max and sum that the fusion's scalar sum reads for each
    element (a cross-entropy: its result is no output's broadcast, so the
    count of elements that read them is the sum's input, not the one
    output) are taken out, then the sum split as a tree: four reductions
    where it was one fusion (the loop emitter's one thread over f32[4096,
    1000], each element's row max and sum recomputed unless LLVM hoisted
    them: 17 ms through xla_gpu.jax.jit where XLA:CPU took 1.7-3; 1.95
    split). The result is XLA:CPU's but for the order of the sums."""
    fusion = _log_softmax(512, 1000, summed=True)
    parts = split_reduction(fusion, host=True, side_outputs=True)
    assert [analyze_fusion(p).kind for p in parts] == [EmitterKind.REDUCTION] * 4
    mx, total, tree, last = parts
    assert mx.shape.dims == total.shape.dims == (512,) and last.shape.dims == ()
    # The sum's first part sums each row (what the fusion reads a row at
    # is one value a part), not sqrt(n)-element pieces across rows.
    assert tree.shape.dims == (512,)
    assert total.operands == [fusion.operands[0], mx]
    assert tree.operands[-2:] == [mx, total] and last.operands[-1] is tree
    _assert_one_reduce_each_and_xlas_result(fusion, parts, rtol=1e-5)


def _lse_sum(rows: int, cols: int, z_loss: bool, kind: str):
    """The sum over the rows of each row's log-sum-exp (the row max an
    operand) as XLA:CPU fuses it for YNNPACK, with `z_loss` plus 1e-4
    times its square (a cross-entropy's z-loss): a fusion of `kind` whose
    scalar sum reads each row's sum of exps once."""
    s, r = f"[{rows},{cols}]", f"[{rows}]"
    tail = (f"""  sq = f32{r} multiply(lse, lse)
  k = f32[] constant(0.0001)
  kb = f32{r} broadcast(k), dimensions={{}}
  w = f32{r} multiply(sq, kb)
  y = f32{r} add(lse, w)
  ROOT total = f32[] reduce(y, z), dimensions={{0}}, to_apply=add""" if z_loss else
            "  ROOT total = f32[] reduce(lse, z), dimensions={0}, to_apply=add")
    text = f"""HloModule m

{_softmax_reducers('f32')}
fused {{
  x = f32{s} parameter(0)
  m = f32{r} parameter(1)
  mb = f32{s} broadcast(m), dimensions={{0}}
  d = f32{s} subtract(x, mb)
  e = f32{s} exponential(d)
  z = f32[] constant(0)
  t = f32{r} reduce(e, z), dimensions={{1}}, to_apply=add
  l = f32{r} log(t)
  lse = f32{r} add(l, m)
{tail}
}}

ENTRY main {{
  p0 = f32{s} parameter(0)
  p1 = f32{r} parameter(1)
  ROOT f = f32[] fusion(p0, p1), kind={kind}, calls=fused
}}
"""
    return parse_hlo(text).fusions()[0]


def _x_and_row_max(fusion) -> list:
    """_lse_sum's inputs: a standard normal x and its rows' max."""
    x = np.random.default_rng(0).standard_normal(fusion.operands[0].shape.dims)
    x = x.astype(np.float32)
    return [x, x.max(axis=1)]


def test_a_row_sum_a_scalar_sum_reads_once_is_taken_out():
    """A cross-entropy with a z-loss as XLA:CPU fuses it for YNNPACK: the
    row max an operand, each row's sum of exps read once (its log plus the
    max, and that squared) by the scalar sum over the rows. The reduction
    emitter reduced each row on a thread of the scalar sum's one block
    (8.4 ms over f32[4096,1000] through xla_gpu.jax.jit, 10x jax.jit's
    time); the row sum is taken out for a kernel of its own (its log with
    it), the scalar sum reading its rows' values."""
    fusion = _lse_sum(512, 1000, z_loss=True, kind="kInput")
    assert analyze_fusion(fusion).kind == EmitterKind.REDUCTION
    parts = split_reduction(fusion, host=True, side_outputs=True)
    assert parts is not None and [p.shape.dims for p in parts] == [(512,), ()]
    rows, last = parts
    assert analyze_fusion(rows).kind == EmitterKind.REDUCTION
    assert rows.operands == fusion.operands and last.operands[-1] is rows
    assert rows.fused_computation.root.opcode == "log"  # the sum's epilogue goes with it
    _assert_one_reduce_each_and_xlas_result(fusion, parts, rtol=1e-5,
                                            inputs=_x_and_row_max(fusion))


def test_a_short_row_sum_is_taken_out_where_the_sum_over_the_rows_needs_a_split():
    """jax.nn.logsumexp(x, -1).sum() over rows of 16 as XLA:CPU fuses it
    (the row max an operand): the rows' sums are too short to take out for
    their own sake (MIN_TAKEN_OUT), but kept in, the fusion's two reduces
    kept the scalar sum over the 65536 rows from its tree split -- one
    block (3.0 ms through xla_gpu.jax.jit, 7x jax.jit's time). Taken out,
    the scalar sum splits: the rows' kernel, then the sum's two parts."""
    fusion = _lse_sum(65536, 16, z_loss=False, kind="kLoop")
    parts = split_reduction(fusion, host=True, side_outputs=True)
    assert parts is not None and len(parts) == 3, parts
    assert parts[0].shape.dims == (65536,) and parts[0].operands == fusion.operands
    assert parts[-1].shape.dims == ()
    _assert_one_reduce_each_and_xlas_result(fusion, parts, rtol=1e-5,
                                            inputs=_x_and_row_max(fusion))


def test_a_part_split_twice_names_its_instructions_anew():
    """-log_softmax(x).mean() over rows of 64: the sum's first part sums
    each row, and its second, 65536 rows, is split again. That split's
    names are the reduce's with a suffix none of its computation's
    instructions has: its `.partial` parameter, from the first split, was
    defined twice (an HLO parse error out of xla_gpu.jax.jit)."""
    fusion = _log_softmax(65536, 64, summed=True)
    parts = split_reduction(fusion, host=True, side_outputs=True)
    assert [p.shape.dims for p in parts] == [(65536,)] * 3 + [(256,), ()]
    for part in parts:
        names = [i.name for i in part.fused_computation.instructions]
        assert len(names) == len(set(names))
    _assert_one_reduce_each_and_xlas_result(fusion, parts, rtol=1e-5)


def test_a_log_softmax_takes_the_log_with_the_sum():
    """jax.nn.log_softmax as XLA:CPU fuses it: the log of each row's sum
    goes with the sum's part (an epilogue, once a row), not with the rest
    (once an element: f32[4096,1000]'s last kernel 3.89 -> 0.59 ms); the
    result is XLA:CPU's but for the order of the sums."""
    import numpy as np
    from xla_gpu.reference import run_with_xla
    from xla_gpu.tools.test_correctness import reference_text
    fusion = _log_softmax(512, 1000)
    mx, total, rest = split_reduction(fusion, host=True, side_outputs=True)
    assert total.fused_computation.root.opcode == "log"
    assert analyze_fusion(total).kind == EmitterKind.REDUCTION
    assert {"log", "reduce"}.isdisjoint(i.opcode for i in rest.fused_computation.instructions)
    x = np.random.default_rng(0).standard_normal((512, 1000)).astype(np.float32)
    (want,) = run_with_xla(reference_text(fusion.fused_computation), [x])
    got = _run_parts(fusion, [mx, total, rest], [x])
    np.testing.assert_allclose(got, want, rtol=2e-6, atol=2e-6)


def _softmax_and_lse(rows: int, cols: int):
    """A softmax and its log-sum-exp (m + log(sum(exp(x - m)))) as one
    fusion of the two outputs, as xla_gpu.jax's row regions merge them."""
    s, r = f"[{rows},{cols}]", f"[{rows}]"
    return parse_hlo(f"""HloModule m

{_softmax_reducers('f32')}
fused {{
{row_exp_sum(s, r)}
  l = f32{r} log(t)
  lse = f32{r} add(m, l)
  tb = f32{s} broadcast(t), dimensions={{0}}
  y = f32{s} divide(e, tb)
  ROOT out = (f32{s}, f32{r}) tuple(y, lse)
}}

ENTRY main {{
  p0 = f32{s} parameter(0)
  ROOT f = (f32{s}, f32{r}) fusion(p0), kind=kLoop, calls=fused
}}
""").fusions()[0]


def test_a_rows_output_made_of_its_sum_goes_with_the_sums_part():
    """On the CPU target, an output a row made of a reduce's result and
    the row values before it (a log-sum-exp, m + log(s), beside the
    softmax that divides by s) is the sum's part's too, its epilogue
    (within host_short_rows its hero is the sum: m is read at the row's
    index); the rest, which reads it, returns it as it came (its
    parameter, which xla_gpu.jax drops from it). For XLA:GPU's kernels
    (host=False) the rest computes it, as before."""
    from xla_gpu.emitters.fusion_analysis import host_short_rows
    fusion = _softmax_and_lse(256, 1000)
    with host_short_rows():
        mx, total, *gets, rest = split_reduction(fusion, host=True, side_outputs=True)
        assert analyze_fusion(total).kind == EmitterKind.REDUCTION
    root = total.fused_computation.root
    assert root.opcode == "tuple" and [o.opcode for o in root.operands] == ["reduce", "add"]
    assert [g.attr("index") for g in gets] == [0, 1]
    out = rest.fused_computation.root
    assert out.operands[1].opcode == "parameter"
    assert rest.operands[out.operands[1].parameter_number] is gets[1]
    assert "log" not in {i.opcode for i in rest.fused_computation.instructions}
    *_, last = split_reduction(fusion, host=False, side_outputs=True)
    assert last.fused_computation.root.operands[1].opcode == "add"


def _row_sum_fusion(epilogue: str, max_made_finite: bool = False):
    """A loop fusion of s = sum(x) over f32[64,100]'s rows and then
    `epilogue` (its lines, the last its ROOT); with `max_made_finite`, s
    sums exp(x - mf), mf a row's max (a parameter) made finite, and l is
    log(s)."""
    exps = """  m = f32[64] parameter(1)
  fin = pred[64] is-finite(m)
  zb = f32[64] broadcast(z), dimensions={}
  mf = f32[64] select(fin, m, zb)
  mb = f32[64,100] broadcast(mf), dimensions={0}
  d = f32[64,100] subtract(x, mb)
  e = f32[64,100] exponential(d)
  s = f32[64] reduce(e, z), dimensions={1}, to_apply=add
  l = f32[64] log(s)""" if max_made_finite else """  s = f32[64] reduce(x, z), dimensions={1}, to_apply=add"""
    params = "p0, p1" if max_made_finite else "p0"
    return parse_hlo(f"""HloModule m

add {{
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT c = f32[] add(a, b)
}}

fused {{
  x = f32[64,100] parameter(0)
  z = f32[] constant(0)
{exps}
{epilogue}
}}

ENTRY main {{
  p0 = f32[64,100] parameter(0)
  p1 = f32[64] parameter(1)
  ROOT f = f32[64] fusion({params}), kind=kLoop, calls=fused
}}
""").fusions()[0]


def test_the_host_takes_a_scaled_reduce_as_its_hero():
    """Within host_short_rows (xla_gpu.jax.jit's kernels) an elementwise op
    whose other operands are scalar constants, parameters of its shape or
    values made of them only passes on its one other to the hero search:
    x.mean(-1) (the sum times broadcast(1/n)) and m + log(sum) are
    reductions, one kernel with their epilogue; XLA's rule stops at them
    (a loop fusion, its reduce then taken out)."""
    from xla_gpu.emitters.fusion_analysis import host_short_rows
    mean = _row_sum_fusion("""  c = f32[] constant(0.01)
  cb = f32[64] broadcast(c), dimensions={}
  ROOT mean = f32[64] multiply(s, cb)""")
    lse = _row_sum_fusion("""  ROOT lse = f32[64] add(mf, l)""", max_made_finite=True)
    for fusion in (mean, lse):
        assert analyze_fusion(fusion).kind == EmitterKind.LOOP
        with host_short_rows():
            analysis = analyze_fusion(fusion)
        assert analysis.kind == EmitterKind.REDUCTION
        assert [h.opcode for h in analysis.heroes] == ["reduce"]


def test_reduces_in_a_reductions_inputs_are_taken_out():
    """softmax(x).max(-1) as XLA:CPU fuses it (for YNNPACK): a reduction
    fusion whose hero, the max of each row's probabilities, reads the
    row's max and sum -- reduces that XLA:GPU never fuses into a
    reduction's inputs. They are taken out as a loop fusion's are, each
    a part of its own; the reduction emitter evaluated them again for
    every element (f32[4096,1000] through xla_gpu.jax.jit: 263 ms, 175x
    jax.jit's time; 1.75 split). The result is XLA:CPU's but for the
    order of the sum."""
    fusion = top_probability_fusion(512, 1000)
    assert analyze_fusion(fusion).kind == EmitterKind.REDUCTION
    parts = split_reduction(fusion, host=True, side_outputs=True)
    assert [analyze_fusion(p).kind for p in parts] == [EmitterKind.REDUCTION] * 3
    _assert_one_reduce_each_and_xlas_result(fusion, parts, rtol=1e-6)


def test_a_cheap_reduce_over_short_rows_stays_in_the_fusion():
    """x - max(x) over rows of 8: each element reads its row's max, 8
    times the input read, no costly op on the way: left whole (through
    xla_gpu.jax.jit over f32[65536,8]: 0.18 ms, taken out 0.24)."""
    text = f"""HloModule m

{_softmax_reducers('f32')}
fused {{
  x = f32[256,8] parameter(0)
  ninf = f32[] constant(-inf)
  m = f32[256] reduce(x, ninf), dimensions={{1}}, to_apply=mx
  mb = f32[256,8] broadcast(m), dimensions={{0}}
  ROOT d = f32[256,8] subtract(x, mb)
}}

ENTRY main {{
  p0 = f32[256,8] parameter(0)
  ROOT f = f32[256,8] fusion(p0), kind=kLoop, calls=fused
}}
"""
    assert split_reduction(parse_hlo(text).fusions()[0]) is None


def test_reads_through_nested_reduces_multiply():
    """A softmax over rows of 4: the sum reads each row's max for each of
    its 4 exps, and each element reads the sum: the max is evaluated 4
    times an element, 16 reads an element, and is taken out; so is the
    sum, 4 reads through an exp (one fusion over f32[65536,4] through
    xla_gpu.jax.jit: 1.20 ms, taken apart 0.40; jax.jit 0.47)."""
    fusion = _softmax(256, 4)
    found = recomputed_reduce(fusion)
    assert found is not None and found[0].name == "m" and found[1] == 16
    parts = split_reduction(fusion)
    assert [p.shape.dims for p in parts] == [(256,), (256,), (256, 4)]


def test_a_reductions_hero_never_reads_a_reduce_again():
    """softmax(x).max(-1) over rows of 8: its max and sum are taken out
    although the hero reads them only 8 times an element (one kernel over
    f32[65536,8]: 3.0 ms; taken out 0.63, jax.jit 0.78)."""
    fusion = top_probability_fusion(256, 8)
    parts = split_reduction(fusion, host=True, side_outputs=True)
    assert [analyze_fusion(p).kind for p in parts] == [EmitterKind.REDUCTION] * 3


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


# --- random splits against XLA:CPU ------------------------------------------

# (input shape, reduced dimensions): each not race-free (long rows, long
# columns, more than 8 batched rows, a padded length), or a reduction a
# loop fusion would recompute (its result broadcast back).
SPLIT_SHAPES = [((2, 20000), (1,)), ((20001,), (0,)), ((5000, 3), (0,)), ((3, 4500, 2), (1,)),
                ((20, 3, 64), (0, 2)), ((70001,), (0,)), ((40, 500), (0, 1)),
                ((4, 160, 3, 20), (1, 3))]  # dimensions apart: 160 first
# Order-independent reducers (the parts reduce in another order): integer
# ones wrap exactly; f32 max/min, and add over small integers.
INT_TYPES = ["s32", "u32", "s16", "u8"]


def _int_identity(op: str, t: str) -> str:
    """The identity of integer reducer `op` on type `t` (the parts apply
    the init more than once: only an identity gives one answer)."""
    bits, signed = int(t[1:]), t[0] == "s"
    low, high = (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if signed else (0, (1 << bits) - 1)
    return str({"add": 0, "multiply": 1, "or": 0, "xor": 0, "and": -1 if signed else high,
                "maximum": low, "minimum": high}[op])


def _random_split_case(seed: int) -> str:
    import random
    r = random.Random(seed)
    shape, dims = r.choice(SPLIT_SHAPES)
    kept = tuple(n for i, n in enumerate(shape) if i not in dims)
    full, out = (f"[{','.join(map(str, s))}]" for s in (shape, kept))
    if r.random() < 0.5:
        t = r.choice(INT_TYPES)
        op = r.choice(["add", "multiply", "and", "or", "xor", "maximum", "minimum"])
        init = _int_identity(op, t)
        unary = r.choice(["negate", "not"] if t[0] == "s" else ["not"])
        body = [f"  p = {t}{full} parameter(0)", f"  x = {t}{full} {unary}(p)"]
    else:
        t = "f32"
        op = r.choice(["add", "maximum", "minimum"])
        init = {"add": "0", "maximum": "-inf", "minimum": "inf"}[op]
        body = [f"  p = s8{full} parameter(0)", f"  x = f32{full} convert(p)"]
    body.append(f"  z = {t}[] constant({init})")
    body.append(f"  s = {t}{out} reduce(x, z), dimensions={{{','.join(map(str, dims))}}}, "
                "to_apply=r")
    if r.random() < 0.4 and len(kept) < len(shape):
        # The result broadcast back (a softmax's shape): taken out.
        kept_dims = [i for i in range(len(shape)) if i not in dims]
        body.append(f"  b = {t}{full} broadcast(s), dimensions={{{','.join(map(str, kept_dims))}}}")
        # Unsigned: xor, not subtract, which XLA:CPU's YNNPACK fusion
        # saturates (u8 x - max(x) over u8[40,500] is all zeros through
        # jax.jit; HLO's subtract wraps).
        body.append(f"  ROOT o = {t}{full} {'xor' if t[0] == 'u' else 'subtract'}(x, b)")
        root = f"{t}{full}"
    elif r.random() < 0.3 and math.prod(shape) > 16384:
        # A second reduce, the two combined: the loop emitter's fusion, each
        # reduce (more than a block reduces alone) taken out.
        body.append(f"  second = {t}{out} reduce(x, z), dimensions={{{','.join(map(str, dims))}}}, "
                    "to_apply=r")
        body.append(f"  ROOT o = {t}{out} {'maximum' if op != 'maximum' else 'minimum'}(s, second)")
        root = f"{t}{out}"
    elif r.random() < 0.5:
        body.append(f"  ROOT o = {t}{out} {'negate' if t[0] != 'u' else 'not'}(s)")
        root = f"{t}{out}"
    else:
        body[-1] = body[-1].replace("  s = ", "  ROOT s = ")
        root = f"{t}{out}"
    param = body[0].split(" = ")[1].split(" ")[0]
    return (f"HloModule split\n\nr {{\n  a = {t}[] parameter(0)\n  b = {t}[] parameter(1)\n"
            f"  ROOT c = {t}[] {op}(a, b)\n}}\n\nfused {{\n" + "\n".join(body) + "\n}\n\n"
            f"ENTRY main {{\n  p0 = {param} parameter(0)\n"
            f"  ROOT f = {root} fusion(p0), kind=kLoop, calls=fused\n}}\n")


@pytest.mark.parametrize("seed", range(int(__import__("os").environ.get("XLA_GPU_RANDOM_SEEDS",
                                                                         "40")) // 2))
def test_random_split_matches_xla(seed):
    """A random fusion split into parts (as XLA:GPU splits it, or as the CPU
    target does), each part's kernel run on the CPU target on the results
    of those before it, gives XLA:CPU's result of the whole fusion, bit for
    bit."""
    import numpy as np
    from xla_gpu.reference import run_with_xla
    from xla_gpu.tools.test_correctness import random_input, reference_text
    text = _random_split_case(seed)
    fusion = parse_hlo(text).fusions()[0]
    # Every other seed splits for the CPU target (its columns elsewhere).
    parts = split_reduction(fusion, host=seed % 2 == 1)
    assert parts, text
    rng = np.random.RandomState(seed)
    inputs = [random_input(p.shape, rng) for p in fusion.fused_computation.parameters]
    (want,) = run_with_xla(reference_text(fusion.fused_computation), inputs)
    np.testing.assert_array_equal(_run_parts(fusion, parts, inputs), want,
                                  err_msg=f"seed {seed}\n{text}")


def test_random_splits_reach_every_kind_of_split():
    """Over the default seeds the generator makes a reduction taken out of
    its broadcast, a padded split, a split of three parts, one with an
    epilogue and two reduces combined."""
    seen = set()
    for seed in range(20):
        text = _random_split_case(seed)
        parts = split_reduction(parse_hlo(text).fusions()[0])
        ops = {i.opcode for p in parts for i in p.fused_computation.instructions}
        seen |= {"broadcast"} & ops | {"pad"} & ops
        seen |= {"three"} if len(parts) >= 3 else set()
        root = parts[-1].fused_computation.root.opcode
        seen |= {"epilogue"} if root in ("negate", "not") else set()
        seen |= {"two reduces"} if root in ("maximum", "minimum") else set()
    assert seen == {"broadcast", "pad", "three", "epilogue", "two reduces"}, seen
