"""An elementwise producer fusion merged into the one fusion that reads it
(emitters/fusion_merger.py; xla_gpu.jax.jit merges XLA:CPU's
`wrapped_convert` of a bf16 input into the reduction reading it), and two
sibling fusions merged into one multi-output fusion, and a bare
concatenate wrapped in a fusion with the slices it reads (a roll)."""

import dataclasses

import numpy as np
import pytest
from mlir import ir

from xla_gpu.emitters import emit_kernel
from xla_gpu.emitters.fusion_merger import (computes_cheaply, is_elementwise_producer,
                                            merge_producer, merge_siblings, moves_elements,
                                            reads_at_own_indices,
                                            reads_each_element_at_most_once,
                                            reads_each_element_once, wrapped)
from xla_gpu.hlo import parse_hlo
from xla_gpu.runtime import CpuKernel

_MODULE = """HloModule m
add {{
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}}
to_f32 {{
  p = bf16[64,300] parameter(0)
  c = f32[64,300] convert(p)
  two = f32[] constant(2)
  t = f32[64,300] broadcast(two), dimensions={{}}
  ROOT m = f32[64,300] multiply(c, t)
}}
consumer {{
{consumer}
}}
ENTRY main {{
  x = bf16[64,300] parameter(0)
  y = f32[64] parameter(1)
  w = f32[64,300] fusion(x), kind=kLoop, calls=to_f32
  ROOT r = {out} fusion(y, w), kind=kInput, calls=consumer
}}
"""

# The consumer reads the producer as its parameter 1.
_SQUARES = """  q = f32[64] parameter(0)
  p = f32[64,300] parameter(1)
  m = f32[64,300] multiply(p, p)
  z = f32[] constant(0)
  s = f32[64] reduce(m, z), dimensions={1}, to_apply=add
  ROOT o = f32[64] add(s, q)"""


def _entry(consumer: str, out: str = "f32[64]"):
    module = parse_hlo(_MODULE.format(consumer=consumer, out=out))
    return module, module.entry.instruction("w"), module.entry.instruction("r")


def test_a_convert_and_scale_is_an_elementwise_producer():
    _, producer, consumer = _entry(_SQUARES)
    assert is_elementwise_producer(producer)
    assert not is_elementwise_producer(consumer)   # a reduce
    assert reads_each_element_once(consumer, 1)


@pytest.mark.parametrize("consumer, out", [
    # A slice broadcast: each element it keeps read by every row.
    ("""  q = f32[64] parameter(0)
  p = f32[64,300] parameter(1)
  r = f32[1,300] slice(p), slice={[0:1], [0:300]}
  v = f32[300] reshape(r)
  ROOT b = f32[64,300] broadcast(v), dimensions={1}""", "f32[64,300]"),
    # x - max(x): read by the reduce and by the subtract, twice an element.
    ("""  q = f32[64] parameter(0)
  p = f32[64,300] parameter(1)
  z = f32[] constant(0)
  s = f32[64] reduce(p, z), dimensions={1}, to_apply=add
  b = f32[64,300] broadcast(s), dimensions={0}
  ROOT d = f32[64,300] subtract(p, b)""", "f32[64,300]"),
    # A transpose: another thread's element.
    ("""  q = f32[64] parameter(0)
  p = f32[64,300] parameter(1)
  ROOT t = f32[300,64] transpose(p), dimensions={1,0}""", "f32[300,64]"),
])
def test_a_consumer_that_reads_elements_again_is_not_merged(consumer, out):
    module = parse_hlo(_MODULE.format(consumer=consumer, out=out))
    assert not reads_each_element_once(module.entry.instruction("r"), 1)


@pytest.mark.parametrize("window, once", [
    ("size=1x30 stride=1x30", True),    # windows side by side
    ("size=1x2 stride=1x1", False),     # each element in two windows
])
def test_a_reduce_window_reads_once_where_its_windows_do_not_overlap(window, once):
    consumer = f"""  q = f32[64] parameter(0)
  p = f32[64,300] parameter(1)
  z = f32[] constant(0)
  ROOT w = f32[64,{10 if once else 299}] reduce-window(p, z), window={{{window}}}, to_apply=add"""
    module = parse_hlo(_MODULE.format(consumer=consumer, out=f"f32[64,{10 if once else 299}]"))
    assert reads_each_element_once(module.entry.instruction("r"), 1) is once


def test_a_value_read_by_several_elementwise_ops_reads_each_element_once():
    # A floor remainder's select (XLA:CPU's consumer of its
    # `wrapped_remainder`): the value read by a compare, an add and the
    # select, each at the element's own index -- once an element. Where a
    # reduce reads it too (x - sum(x)), twice.
    consumer = """  q = f32[64] parameter(0)
  p = f32[64,300] parameter(1)
  z = f32[] constant(0)
  zb = f32[64,300] broadcast(z), dimensions={}
  n = pred[64,300] compare(p, zb), direction=LT
  a = f32[64,300] add(p, p)
  ROOT s = f32[64,300] select(n, a, p)"""
    module = parse_hlo(_MODULE.format(consumer=consumer, out="f32[64,300]"))
    assert reads_each_element_once(module.entry.instruction("r"), 1)
    consumer = consumer.replace("ROOT s = f32[64,300] select(n, a, p)",
                                """s = f32[64,300] select(n, a, p)
  r = f32[64] reduce(p, z), dimensions={1}, to_apply=add
  rb = f32[64,300] broadcast(r), dimensions={0}
  ROOT d = f32[64,300] subtract(s, rb)""")
    module = parse_hlo(_MODULE.format(consumer=consumer, out="f32[64,300]"))
    assert not reads_each_element_once(module.entry.instruction("r"), 1)


def test_a_cheap_value_read_by_a_reduce_and_beside_it_is_read_at_its_own_indices():
    # x - sum(x) reads x at its own indices, twice: reads_each_element_once
    # says no, reads_at_own_indices yes. computes_cheaply: a one-hot of
    # per-row columns (operands smaller than its result, no costly op) is;
    # a select of an operand of its own size, or an exp, is not.
    consumer = """  q = f32[64] parameter(0)
  p = f32[64,300] parameter(1)
  z = f32[] constant(0)
  r = f32[64] reduce(p, z), dimensions={1}, to_apply=add
  rb = f32[64,300] broadcast(r), dimensions={0}
  ROOT d = f32[64,300] subtract(p, rb)"""
    module = parse_hlo(_MODULE.format(consumer=consumer, out="f32[64,300]"))
    fusion = module.entry.instruction("r")
    assert not reads_each_element_once(fusion, 1) and reads_at_own_indices(fusion, 1)
    transposed = consumer.replace("ROOT d = f32[64,300] subtract(p, rb)",
                                  "t = f32[300,64] transpose(p), dimensions={1,0}\n"
                                  "  ROOT d = f32[64,300] subtract(p, rb)")
    module = parse_hlo(_MODULE.format(consumer=transposed, out="f32[64,300]"))
    assert not reads_at_own_indices(module.entry.instruction("r"), 1)
    one_hot = parse_hlo("""HloModule m
fused {
  c = s32[64] parameter(0)
  cb = s32[64,300] broadcast(c), dimensions={0}
  i = s32[64,300] iota(), iota_dimension=1
  h = pred[64,300] compare(i, cb), direction=EQ
  one = f32[] constant(1)
  zero = f32[] constant(0)
  ob = f32[64,300] broadcast(one), dimensions={}
  zb = f32[64,300] broadcast(zero), dimensions={}
  ROOT s = f32[64,300] select(h, ob, zb)
}
ENTRY e {
  c = s32[64] parameter(0)
  ROOT f = f32[64,300] fusion(c), kind=kLoop, calls=fused
}
""").entry.root
    assert computes_cheaply(one_hot)
    _, producer, _ = _entry(_SQUARES)
    assert not computes_cheaply(producer)   # its bf16 operand is of its size


def test_an_operand_read_twice_is_not_merged():
    text = _MODULE.format(consumer=_SQUARES.replace("q = f32[64] parameter(0)",
                                                    "q = f32[64,300] parameter(0)")
                          .replace("ROOT o = f32[64] add(s, q)", "ROOT o = f32[64] negate(s)"),
                          out="f32[64]").replace("fusion(y, w)", "fusion(w, w)")
    assert not reads_each_element_once(parse_hlo(text).entry.instruction("r"), 1)


def test_merged_kernel_gives_the_two_kernels_bits(ctx):
    """One kernel of the merged fusion against the producer's kernel then
    the consumer's, on the CPU target: the same bits (the reduction's order
    is the emitter's either way)."""
    _, producer, consumer = _entry(_SQUARES)
    merged = merge_producer(consumer, 1)
    assert merged.name == "r" and merged.shape == consumer.shape
    assert [o.name for o in merged.operands] == ["y", "x"]
    ops = [i.opcode for i in merged.fused_computation.instructions]
    assert ops.count("parameter") == 2 and "convert" in ops and "reduce" in ops
    rng = np.random.RandomState(3)
    import ml_dtypes
    x = rng.standard_normal((64, 300)).astype(ml_dtypes.bfloat16)
    y = rng.standard_normal(64).astype(np.float32)
    w = np.zeros((64, 300), np.float32)
    CpuKernel(emit_kernel(producer).text)(x, w)
    want = np.zeros(64, np.float32)
    CpuKernel(emit_kernel(consumer).text)(y, w, want)
    got = np.zeros(64, np.float32)
    CpuKernel(emit_kernel(merged).text)(y, x, got)
    np.testing.assert_array_equal(got, want)


def test_a_kept_producer_is_the_merged_fusions_last_result(ctx):
    """merge_producer(keep=True): the producer's result a result of the
    merged loop fusion too, after the consumer's (a tuple root of both):
    the bits of the producer's kernel and the consumer's."""
    consumer = """  q = f32[64] parameter(0)
  p = f32[64,300] parameter(1)
  n = f32[64,300] negate(p)
  ROOT a = f32[64,300] add(n, p)"""
    _, producer, fusion = _entry(consumer, "f32[64,300]")
    merged = merge_producer(fusion, 1, keep=True)
    assert merged.shape.is_tuple and [t.dims for t in merged.shape.tuple_shapes] == \
        [(64, 300), (64, 300)]
    root = merged.fused_computation.root
    assert root.opcode == "tuple" and [o.opcode for o in root.operands] == ["add", "multiply"]
    rng = np.random.RandomState(4)
    import ml_dtypes
    x = rng.standard_normal((64, 300)).astype(ml_dtypes.bfloat16)
    y = rng.standard_normal(64).astype(np.float32)
    w, want = np.zeros((64, 300), np.float32), np.zeros((64, 300), np.float32)
    CpuKernel(emit_kernel(producer).text)(x, w)
    CpuKernel(emit_kernel(fusion).text)(y, w, want)
    got, kept = np.zeros((64, 300), np.float32), np.zeros((64, 300), np.float32)
    CpuKernel(emit_kernel(merged).text)(y, x, got, kept)
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(kept, w)


def test_merged_names_do_not_collide(ctx):
    # The producer's instructions named as the consumer's are renamed.
    consumer = _SQUARES.replace("m = f32[64,300] multiply(p, p)",
                                "c = f32[64,300] multiply(p, p)").replace("reduce(m, z)",
                                                                           "reduce(c, z)")
    _, _, r = _entry(consumer)
    merged = merge_producer(r, 1)
    names = [i.name for i in merged.fused_computation.instructions]
    assert len(names) == len(set(names)), names
    emit_kernel(merged)


_SIBLINGS = """HloModule m
first {
  a = f32[64,300] parameter(0)
  k = f32[] parameter(1)
  b = f32[64,300] broadcast(k), dimensions={}
  e = f32[64,300] exponential(a)
  s = f32[64,300] add(e, b)
  ROOT r = f32[64,300] multiply(s, s)
}
second {
  x = f32[64,300] parameter(0)
  y = f32[64,300] parameter(1)
  k = f32[] parameter(2)
  b = f32[64,300] broadcast(k), dimensions={}
  e = f32[64,300] exponential(y)
  s = f32[64,300] add(e, b)
  ROOT r = f32[64,300] subtract(s, x)
}
ENTRY main {
  p = f32[64,300] parameter(0)
  q = f32[64,300] parameter(1)
  c = f32[] parameter(2)
  f = f32[64,300] fusion(p, c), kind=kLoop, calls=first
  g = f32[64,300] fusion(q, p, c), kind=kLoop, calls=second
  ROOT t = (f32[64,300], f32[64,300]) tuple(f, g)
}
"""


def test_merged_siblings_read_a_shared_operand_once_and_compute_a_shared_value_once(ctx):
    """merge_siblings: one loop fusion of both, its results the first's
    then the second's, on the first's operands and then the second's
    others (p and c read by both, once), the second's exp(p) + c being
    the first's (one exponential); the bits of the two kernels."""
    module = parse_hlo(_SIBLINGS)
    f, g = module.entry.instruction("f"), module.entry.instruction("g")
    merged = merge_siblings(f, g)
    assert merged.name == "f" and [t.dims for t in merged.shape.tuple_shapes] == \
        [(64, 300), (64, 300)]
    assert [o.name for o in merged.operands] == ["p", "c", "q"]
    ops = [i.opcode for i in merged.fused_computation.instructions]
    assert ops.count("parameter") == 3 and ops.count("exponential") == 1, ops
    assert ops.count("add") == 1 and ops.count("broadcast") == 1, ops
    root = merged.fused_computation.root
    assert root.opcode == "tuple" and [o.opcode for o in root.operands] == ["multiply", "subtract"]
    names = [i.name for i in merged.fused_computation.instructions]
    assert len(names) == len(set(names)), names
    rng = np.random.RandomState(5)
    p, q = (rng.standard_normal((64, 300)).astype(np.float32) for _ in range(2))
    c = np.array(0.25, np.float32)
    want_f, want_g = np.zeros((64, 300), np.float32), np.zeros((64, 300), np.float32)
    CpuKernel(emit_kernel(f).text)(p, c, want_f)
    CpuKernel(emit_kernel(g).text)(q, p, c, want_g)
    got_f, got_g = np.zeros((64, 300), np.float32), np.zeros((64, 300), np.float32)
    CpuKernel(emit_kernel(merged).text)(p, c, q, got_f, got_g)
    np.testing.assert_array_equal(got_f, want_f)
    np.testing.assert_array_equal(got_g, want_g)


_BROADCASTS = """HloModule m
add {{
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}}
scale {{
  g = f32[300] parameter(0)
  s = f32[64,1] parameter(1)
  v = f32[64] bitcast(s)
{body}
}}
consumer {{
  p = f32[64,300] parameter(0)
  x = f32[64,300] parameter(1)
  m = f32[64,300] multiply(p, x)
  z = f32[] constant(0)
  ROOT r = f32[64] reduce(m, z), dimensions={{1}}, to_apply=add
}}
ENTRY main {{
  g = f32[300] parameter(0)
  s = f32[64,1] parameter(1)
  x = f32[64,300] parameter(2)
  w = f32[64,300] fusion(g, s), kind=kLoop, calls=scale
  ROOT r = f32[64] fusion(w, x), kind=kInput, calls=consumer
}}
"""

# What XLA:CPU materializes for YNNPACK in a layer norm's gradient: the
# scale times rsqrt(var), each broadcast to the rows' shape.
_SCALE_TIMES_RSQRT = """  bg = f32[64,300] broadcast(g), dimensions={1}
  bv = f32[64,300] broadcast(v), dimensions={0}
  ROOT o = f32[64,300] multiply(bg, bv)"""


# A histogram's bin edges made in the fusion (an iota scaled, a constant
# after it, a slice), each row's value compared with them.
_BIN_EDGES = """  i = f32[299] iota(), iota_dimension=0
  k = f32[] constant(0.01)
  bk = f32[299] broadcast(k), dimensions={}
  e = f32[299] multiply(i, bk)
  last = f32[2] constant({3, 4})
  l = f32[1] slice(last), slice={[1:2]}
  c = f32[300] concatenate(e, l), dimensions={0}
  bc = f32[64,300] broadcast(c), dimensions={1}
  bv = f32[64,300] broadcast(v), dimensions={0}
  gt = pred[64,300] compare(bv, bc), direction=GT
  ROOT o = f32[64,300] convert(gt)"""


@pytest.mark.parametrize("body, producer", [
    (_SCALE_TIMES_RSQRT, True),
    # A broadcast alone.
    ("  ROOT bv = f32[64,300] broadcast(v), dimensions={0}", True),
    # A cheap op before the broadcast: run again for each element, cheaply.
    ("""  n = f32[64] negate(v)
  ROOT bv = f32[64,300] broadcast(n), dimensions={0}""", True),
    # A costly one would run 300 times a row instead of once.
    ("""  n = f32[64] rsqrt(v)
  ROOT bv = f32[64,300] broadcast(n), dimensions={0}""", False),
    # A slice is no elementwise op.
    ("""  bg = f32[64,301] broadcast(v), dimensions={0}
  ROOT o = f32[64,300] slice(bg), slice={[0:64], [1:301]}""", False),
    # Values made in the fusion before their broadcast (a histogram's bin
    # edges), compared with the rows: run again for each element, cheaply.
    (_BIN_EDGES, True),
    # An iota of the result's dimensions: a one-hot's columns.
    ("""  i = s32[64,300] iota(), iota_dimension=1
  n = s32[64] convert(v)
  bn = s32[64,300] broadcast(n), dimensions={0}
  eq = pred[64,300] compare(i, bn), direction=EQ
  ROOT o = f32[64,300] convert(eq)""", True),
    # A constant of more than MAX_BROADCAST_CONSTANT values (a weight, not
    # a table of edges) stays in the producer's kernel.
    ("""  t = f32[1025] constant({%s})
  u = f32[300] slice(t), slice={[0:300]}
  ROOT bu = f32[64,300] broadcast(u), dimensions={1}""" % ", ".join(["1"] * 1025), False),
    # A concatenate of the result's dimensions is no elementwise op.
    ("""  a = f32[64,150] broadcast(v), dimensions={0}
  ROOT o = f32[64,300] concatenate(a, a), dimensions={1}""", False),
])
def test_broadcasts_of_smaller_operands_make_an_elementwise_producer(body, producer):
    module = parse_hlo(_BROADCASTS.format(body=body))
    assert is_elementwise_producer(module.entry.instruction("w")) is producer


@pytest.mark.parametrize("body", [_SCALE_TIMES_RSQRT, _BIN_EDGES])
def test_merged_broadcasts_give_the_two_kernels_bits(ctx, body):
    """The reduction reading the scale and rsqrt(var) themselves, not their
    broadcast product (or the bin edges, made again for each element): the
    same bits as the product written and read back."""
    module = parse_hlo(_BROADCASTS.format(body=body))
    producer, consumer = module.entry.instruction("w"), module.entry.instruction("r")
    assert is_elementwise_producer(producer) and reads_each_element_once(consumer, 0)
    merged = merge_producer(consumer, 0)
    assert [o.name for o in merged.operands] == ["x", "g", "s"]
    rng = np.random.RandomState(4)
    g = rng.standard_normal(300).astype(np.float32)
    s = rng.standard_normal((64, 1)).astype(np.float32)
    x = rng.standard_normal((64, 300)).astype(np.float32)
    w = np.zeros((64, 300), np.float32)
    CpuKernel(emit_kernel(producer).text)(g, s, w)
    want = np.zeros(64, np.float32)
    CpuKernel(emit_kernel(consumer).text)(w, x, want)
    got = np.zeros(64, np.float32)
    CpuKernel(emit_kernel(merged).text)(x, g, s, got)
    np.testing.assert_array_equal(got, want)


# jnp.roll(u, 1, 1) as XLA:CPU leaves it: two `wrapped_slice` fusions and
# a bare concatenate of them, read by a stencil's loop fusion.
_ROLL = """HloModule m
first {
  p = f32[64,300] parameter(0)
  ROOT s = f32[64,1] slice(p), slice={[0:64], [299:300]}
}
rest {
  p = f32[64,300] parameter(0)
  ROOT s = f32[64,299] slice(p), slice={[0:64], [0:299]}
}
stencil {
  u = f32[64,300] parameter(0)
  r = f32[64,300] parameter(1)
  %s = f32[64,300] subtract(r, u)
  ROOT %o = f32[64,300] %STENCIL_ROOT
}
ENTRY main {
  u = f32[64,300] parameter(0)
  a = f32[64,1] fusion(u), kind=kLoop, calls=first
  b = f32[64,299] fusion(u), kind=kLoop, calls=rest
  c = f32[64,300] concatenate(a, b), dimensions={1}
  ROOT o = f32[64,300] fusion(u, c), kind=kLoop, calls=stencil
}
"""


@pytest.mark.parametrize("root, once", [
    ("multiply(s, r)", True),                 # r read by two elementwise ops, at its index
    ("reverse(s), dimensions={1}", True),     # each element moved once
    ("add(s, u)", True),
])
def test_a_roll_is_read_at_most_once_an_element(root, once):
    module = parse_hlo(_ROLL.replace("%STENCIL_ROOT", root))
    entry = module.entry
    assert reads_each_element_at_most_once(entry.instruction("o"), 1) is once
    for piece in ("a", "b"):
        assert moves_elements(entry.instruction(piece))
    concat = wrapped(entry.instruction("c"))
    assert concat.fusion_kind == "kLoop" and concat.fused_computation.root.opcode == "concatenate"
    assert [o.name for o in concat.operands] == ["a", "b"]
    assert all(reads_each_element_at_most_once(concat, k) for k in (0, 1))


_TWICE = """HloModule m
twice {
  p = f32[64,300] parameter(0)
  r = f32[64,300] reverse(p), dimensions={1}
  ROOT s = f32[64,300] add(p, r)
}
sliced_twice {
  p = f32[64,300] parameter(0)
  a = f32[64,299] slice(p), slice={[0:64], [0:299]}
  b = f32[64,299] slice(p), slice={[0:64], [1:300]}
  ROOT s = f32[64,299] add(a, b)
}
broadcast {
  p = f32[64] parameter(0)
  ROOT b = f32[64,300] broadcast(p), dimensions={0}
}
branched {
  p = f32[64,300] parameter(0)
  a = f32[64,300] negate(p)
  b = f32[64,300] exponential(p)
  c = f32[64,600] concatenate(a, b), dimensions={1}
  ROOT s = f32[64,600] multiply(c, c)
}
ENTRY main {
  u = f32[64,300] parameter(0)
  v = f32[64] parameter(1)
  t = f32[64,300] fusion(u), kind=kLoop, calls=twice
  s = f32[64,299] fusion(u), kind=kLoop, calls=sliced_twice
  d = f32[64,600] fusion(u), kind=kLoop, calls=branched
  ROOT b = f32[64,300] fusion(v), kind=kLoop, calls=broadcast
}
"""


@pytest.mark.parametrize("name", ["t", "s", "b", "d"])
def test_a_value_moved_and_read_again_is_not_read_at_most_once(name):
    """An element read at its own index and moved (x + reverse(x)), two
    slices of one value (each element read twice), a broadcast (each
    element read for a whole row), and two values of each element both
    concatenated (each element read for two of the result's)."""
    fusion = parse_hlo(_TWICE).entry.instruction(name)
    assert not reads_each_element_at_most_once(fusion, 0)
    assert moves_elements(fusion) is (name != "b")  # (a broadcast does not)


def test_merged_roll_gives_the_kernels_bits(ctx):
    """The slices merged into the wrapped concatenate and that into the
    stencil: one kernel of u alone, the bits of the four kernels and the
    concatenate apart."""
    module = parse_hlo(_ROLL.replace("%STENCIL_ROOT", "multiply(s, r)"))
    entry = module.entry
    moved = wrapped(entry.instruction("c"))
    for _ in range(2):
        moved = merge_producer(moved, 0)
    assert [o.name for o in moved.operands] == ["u"]
    stencil = entry.instruction("o")
    merged = merge_producer(dataclasses.replace(stencil, operands=[stencil.operands[0], moved]), 1)
    assert [o.name for o in merged.operands] == ["u"]
    ops = [i.opcode for i in merged.fused_computation.instructions]
    assert ops.count("slice") == 2 and ops.count("concatenate") == 1, ops
    u = np.random.RandomState(7).standard_normal((64, 300)).astype(np.float32)
    a, b = np.zeros((64, 1), np.float32), np.zeros((64, 299), np.float32)
    CpuKernel(emit_kernel(entry.instruction("a")).text)(u, a)
    CpuKernel(emit_kernel(entry.instruction("b")).text)(u, b)
    want = np.zeros((64, 300), np.float32)
    CpuKernel(emit_kernel(stencil).text)(u, np.concatenate([a, b], 1), want)
    np.testing.assert_array_equal(want, (np.roll(u, 1, 1) - u) * np.roll(u, 1, 1))
    got = np.zeros((64, 300), np.float32)
    CpuKernel(emit_kernel(merged).text)(u, got)
    np.testing.assert_array_equal(got, want)
