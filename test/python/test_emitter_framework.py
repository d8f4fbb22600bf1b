"""The emitter framework: the registry, the entry function's conventions,
EmittedKernel, XLA's six-dimensional kernel maps, and grids that use block y
(run on the CPU target, which executes y and z ids too)."""

import dataclasses
import re

import ml_dtypes
import numpy as np
import pytest
from mlir import ir

from xla_gpu.emitters import (EMITTERS, EmittedKernel, EmitterError, EmitterKind,
                              DEFAULT_DEVICE, InPlaceDynamicUpdateSliceEmitter, LaunchDimensions,
                              LoopEmitter, ReductionEmitter, ScatterEmitter, TransposeEmitter,
                              analyze_fusion, device_named, emit_kernel, emitter_class,
                              find_fusion, loop_launch_dims, make_emitter, register_emitter)
from xla_gpu.emitters.base import sanitize_function_name
from xla_gpu.hlo import parse_hlo, parse_shape
from xla_gpu.runtime import CpuKernel, KernelArgumentError


def _fusion(body: str, params: str, name: str = "f"):
    text = (f"HloModule m\nfused {{\n{body}\n}}\nENTRY e {{\n{params}\n"
            f"ROOT {name} = {{out}} fusion({{args}}), kind=kLoop, calls=fused\n}}\n")
    return text


def _negate(shape: str, name: str = "f"):
    text = (f"HloModule m\nfused {{\np = {shape} parameter(0)\nROOT n = {shape} negate(p)\n}}\n"
            f"ENTRY e {{\na = {shape} parameter(0)\n"
            f"ROOT {name} = {shape} fusion(a), kind=kLoop, calls=fused\n}}\n")
    return find_fusion(parse_hlo(text))


def test_every_kind_is_xlas():
    assert [k.value for k in EmitterKind] == [
        "loop", "transpose", "reduction", "scatter", "concatenate",
        "in-place dynamic-update-slice", "input slices"]
    assert EMITTERS[EmitterKind.LOOP] is LoopEmitter and LoopEmitter.kind is EmitterKind.LOOP


def test_a_kind_has_one_emitter():
    with pytest.raises(ValueError, match="two emitters for loop: LoopEmitter and Other"):
        @register_emitter(EmitterKind.LOOP)
        class Other:  # noqa: F841
            pass


def test_registry_gives_each_kind_its_emitter_and_falls_back_where_one_declines(ctx):
    fusion = _negate("f32[64,32]")
    analysis = analyze_fusion(fusion)
    assert emitter_class(analysis) is LoopEmitter
    for kind, cls in [(EmitterKind.REDUCTION, ReductionEmitter),
                      (EmitterKind.TRANSPOSE, TransposeEmitter),
                      (EmitterKind.SCATTER, ScatterEmitter)]:
        assert emitter_class(dataclasses.replace(analysis, kind=kind)) is cls
    # An emitter that declines the fusion (with the device to judge it by)
    # leaves it to the loop emitter where that is correct: a negate is no
    # in-place dynamic-update-slice.
    dus = dataclasses.replace(analysis, kind=EmitterKind.IN_PLACE_DYNAMIC_UPDATE_SLICE)
    assert emitter_class(dus, DEFAULT_DEVICE) is LoopEmitter
    assert InPlaceDynamicUpdateSliceEmitter.decline_reason(dus, DEFAULT_DEVICE) == \
        "an output's hero is not a dynamic-update-slice"


def test_emitter_gets_the_analysis(ctx):
    emitter = make_emitter(_negate("f32[8]"))
    assert emitter.analysis.kind is EmitterKind.LOOP
    assert [r.name for r in emitter.analysis.roots] == ["n"]
    assert emitter.analysis.hero_of(emitter.analysis.roots[0]).name == "n"


@pytest.mark.parametrize("hlo_name, function", [
    ("f", "f"), ("fusion.12", "fusion_12"), ("add-mul.3", "add_mul_3")])
def test_entry_is_named_after_the_fusion(ctx, hlo_name, function):
    kernel = emit_kernel(_negate("f32[8]", hlo_name))
    assert kernel.entry == function
    assert f"func.func @{function}(" in kernel.text


def test_sanitized_names():
    assert sanitize_function_name("3d") == "_3d"
    assert sanitize_function_name("a.b-c") == "a_b_c"


def test_entry_name_never_collides_with_a_subgraph(ctx):
    # The root subgraph is @fused_n; a fusion named fused_n takes another name.
    kernel = emit_kernel(_negate("f32[8]", "fused_n"))
    assert kernel.entry == "fused_n_entry"
    assert "func.func private @fused_n(" in kernel.text


def test_emitted_kernel_carries_what_runtimes_need(ctx):
    kernel = emit_kernel(_negate("f32[1000]"))
    assert isinstance(kernel, EmittedKernel)
    assert kernel.launch == LaunchDimensions((8, 1, 1), (128, 1, 1))
    assert [str(s) for s in kernel.parameters] == ["f32[1000]"]
    assert [str(s) for s in kernel.results] == ["f32[1000]"]
    assert kernel.aliases == {} and kernel.shared_memory_bytes == 0
    # Written once, as an attribute of the entry, with a slice per buffer.
    assert ("xla.launch_dims = {block_counts = array<i64: 8, 1, 1>, "
            "thread_counts_per_block = array<i64: 128, 1, 1>}") in kernel.text
    assert "{xla.slice_index = 0 : i32}" in kernel.text
    assert "{xla.slice_index = 1 : i32}" in kernel.text
    x = np.arange(1000, dtype=np.float32)
    out = np.zeros_like(x)
    CpuKernel(kernel)(x, out)
    np.testing.assert_array_equal(out, -x)


def test_kernel_maps_have_xlas_six_dimensions(ctx):
    emitter = make_emitter(_negate("f32[100000]"), device_named("l4"))
    m = emitter.thread_to_output_map(0)
    assert [v.name for v in m.dim_vars] == ["th_x", "th_y", "th_z", "bl_x", "bl_y", "bl_z"]
    assert [v.name for v in m.range_vars] == ["chunk_id", "unroll_id"]
    assert [(v.lower, v.upper) for v in m.dim_vars] == [(0, 127), (0, 0), (0, 0), (0, 195),
                                                         (0, 0), (0, 0)]
    assert m.is_bijection([100000])[0]
    # The input read by the negate: the same element.
    assert emitter.thread_to_input_map(0, 0) == m
    assert emitter.thread_to_input_map(0, 1) is None


def test_launch_dims_object():
    launch = LaunchDimensions((4, 2, 1), (32, 2, 1))
    assert launch.num_blocks == 8 and launch.num_threads_per_block == 64
    assert str(launch) == "[block: {4, 2, 1}, thread: {32, 2, 1}]"
    with pytest.raises(ValueError, match="block_counts must be three counts >= 1"):
        LaunchDimensions((0, 1, 1), (1, 1, 1))


def test_more_blocks_than_the_x_limit_use_block_y():
    # 2^40 f32 elements: 2^31 blocks of 128 threads x 4, one more than x allows.
    d = loop_launch_dims(parse_shape("f32[1099511627776]"), device_named("h100"))
    assert d.dims.block_counts == (2**30, 2, 1)
    assert d.dims.thread_counts_per_block == (128, 1, 1) and d.unroll_factor == 4


TINY = dataclasses.replace(device_named("h100"), name="tiny", core_count=1,
                           threads_per_core_limit=64, block_dim_limit_x=3)


def test_block_y_grid_runs_on_the_cpu_target(ctx):
    """A device whose x limit is 3 blocks: 2500 elements, 4 a thread, in 5
    blocks of 128 threads become a 3 x 2 grid, the linear block
    (bl_y * 3 + bl_x); the sixth block is past the end (cut by the map's
    constraint)."""
    emitter = make_emitter(_negate("f32[2500]"), TINY)
    kernel = emitter.emit()
    assert kernel.launch.block_counts == (3, 2, 1)
    text = kernel.text
    assert "gpu.block_id  y {xla.range = [0 : index, 1 : index]}" in text
    m = emitter.thread_to_output_map(0)
    assert m.is_bijection([2500])[0]
    x = np.random.RandomState(0).randn(2500).astype(np.float32)
    out = np.full(2500, 7, np.float32)
    CpuKernel(kernel)(x, out)
    np.testing.assert_array_equal(out, -x)


# Two-dimensional blocks and a three-dimensional grid: element
# (((bz * 2 + by) * 2 + bx) * 8 + ty) * 4 + tx holds its own coordinates.
GRID_3D = """
func.func @grid(%out: tensor<32x4x8xi32>) -> tensor<32x4x8xi32> {
  %tx = gpu.thread_id x {xla.range = [0 : index, 3 : index]}
  %ty = gpu.thread_id y {xla.range = [0 : index, 7 : index]}
  %bx = gpu.block_id x {xla.range = [0 : index, 1 : index]}
  %by = gpu.block_id y {xla.range = [0 : index, 1 : index]}
  %bz = gpu.block_id z {xla.range = [0 : index, 7 : index]}
  %c2 = arith.constant 2 : index
  %c4 = arith.constant 4 : index
  %b0 = arith.muli %bz, %c4 : index
  %b1 = arith.muli %by, %c2 : index
  %b2 = arith.addi %b0, %b1 : index
  %b = arith.addi %b2, %bx : index
  %c100 = arith.constant 100 : index
  %c10000 = arith.constant 10000 : index
  %v0 = arith.muli %b, %c10000 : index
  %v1 = arith.muli %ty, %c100 : index
  %v2 = arith.addi %v0, %v1 : index
  %v3 = arith.addi %v2, %tx : index
  %v = arith.index_cast %v3 : index to i32
  %r = tensor.insert %v into %out[%b, %tx, %ty] : tensor<32x4x8xi32>
  return %r : tensor<32x4x8xi32>
}
"""


def test_three_dimensional_ids_on_the_cpu_target():
    kernel = CpuKernel(GRID_3D)
    assert kernel.launch == LaunchDimensions((2, 2, 8), (4, 8, 1))
    out = np.full((32, 4, 8), -1, np.int32)
    kernel(out)
    b, tx, ty = np.meshgrid(np.arange(32), np.arange(4), np.arange(8), indexing="ij")
    np.testing.assert_array_equal(out, b * 10000 + ty * 100 + tx)


def test_runtime_refuses_a_grid_past_the_gpus_limits():
    too_many = GRID_3D.replace("[0 : index, 7 : index]}\n  %bx",
                               "[0 : index, 1023 : index]}\n  %bx")
    with pytest.raises(KernelArgumentError, match="4096 threads per block, more than 1024"):
        CpuKernel(too_many)


def test_cpu_kernel_needs_a_named_entry_when_several_are_public():
    two = GRID_3D + GRID_3D.replace("@grid", "@other")
    with pytest.raises(KernelArgumentError, match="2 public functions .@grid, @other.; name"):
        CpuKernel(two)
    assert CpuKernel(two, entry="other").entry == "other"


BARE_FUSION = """
fused {
  p0 = f32[4,6] parameter(0)
  p1 = f32[4,6] parameter(1)
  t = f32[6,4] transpose(p0), dimensions={1,0}
  r = f32[4,6] reshape(t)
  ROOT s = f32[4,6] subtract(r, p1)
}
"""


def test_bare_computation_is_the_same_fusion_as_in_a_module(ctx):
    """XLA's emitter tests write a fused computation alone (no HloModule,
    no ENTRY); emitted as the same fusion in a module would be."""
    bare = find_fusion(parse_hlo(BARE_FUSION, "bare.hlo"))
    module = parse_hlo("HloModule m\n" + BARE_FUSION + """
ENTRY e {
  a = f32[4,6] parameter(0)
  b = f32[4,6] parameter(1)
  ROOT fused_fusion = f32[4,6] fusion(a, b), kind=kLoop, calls=fused
}
""")
    assert parse_hlo(BARE_FUSION, "dir/bare.test.hlo").name == "bare.test"
    assert str(emit_kernel(bare).module) == str(emit_kernel(find_fusion(module)).module)


def _chain_module(n: int) -> str:
    ops = ["negate({prev})", "abs({prev})", "add({prev}, p)", "multiply({prev}, half)"]
    lines = ["p = f32[64] parameter(0)", "c = f32[] constant(0.5)",
             "half = f32[64] broadcast(c), dimensions={}"]
    prev = "p"
    for i in range(n):
        lines.append(f"x{i} = f32[64] " + ops[i % 4].format(prev=prev))
        prev = f"x{i}"
    lines.append(f"ROOT r = f32[64] subtract({prev}, p)")
    body = "\n  ".join(lines)
    return (f"HloModule m\nfused {{\n  {body}\n}}\nENTRY e {{\n  p = f32[64] parameter(0)\n"
            "  ROOT f = f32[64] fusion(p), kind=kLoop, calls=fused\n}\n")


def test_long_elementwise_chain_does_not_recurse_per_op(ctx):
    """500 ops in a row (Python's recursion limit is 1000): emitted with an
    explicit stack, and bit for bit XLA's."""
    import sys
    from xla_gpu.reference import run_with_xla
    from xla_gpu.tools.test_correctness import reference_text
    text = _chain_module(500)
    fusion = find_fusion(parse_hlo(text))
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(400)
    try:
        kernel = emit_kernel(fusion)
    finally:
        sys.setrecursionlimit(limit)
    x = np.random.RandomState(0).uniform(-2, 2, 64).astype(np.float32)
    out = np.zeros(64, np.float32)
    CpuKernel(kernel)(x, out)
    want, = run_with_xla(reference_text(fusion.fused_computation), [x])
    np.testing.assert_array_equal(out, want)


def test_zero_element_slice_is_an_empty_kernel(ctx):
    fusion = find_fusion(parse_hlo("""HloModule m
fused {
  p = f32[8,4] parameter(0)
  ROOT s = f32[0,4] slice(p), slice={[3:3], [0:4]}
}
ENTRY e {
  p = f32[8,4] parameter(0)
  ROOT f = f32[0,4] fusion(p), kind=kLoop, calls=fused
}
"""))
    kernel = emit_kernel(fusion)
    assert kernel.launch == LaunchDimensions()
    assert "xla_gpu.loop" not in kernel.text
    out = np.zeros((0, 4), np.float32)
    CpuKernel(kernel)(np.ones((8, 4), np.float32), out)


ARGMAX = """HloModule m
argmax {
  a = f32[] parameter(0)
  ai = s32[] parameter(1)
  b = f32[] parameter(2)
  bi = s32[] parameter(3)
  gt = pred[] compare(a, b), direction=GT
  v = f32[] select(gt, a, b)
  i = s32[] select(gt, ai, bi)
  ROOT t = (f32[], s32[]) tuple(v, i)
}
fused {
  p = f32[6,5,7] parameter(0)
  io = s32[6,5,7] iota(), iota_dimension=1
  ninf = f32[] constant(-inf)
  z = s32[] constant(0)
  r = (f32[6,7], s32[6,7]) reduce(p, io, ninf, z), dimensions={1}, to_apply=argmax
  v = f32[6,7] get-tuple-element(r), index=0
  i = s32[6,7] get-tuple-element(r), index=1
  ROOT t = (f32[6,7], s32[6,7]) tuple(v, i)
}
ENTRY e {
  p = f32[6,5,7] parameter(0)
  ROOT f = (f32[6,7], s32[6,7]) fusion(p), kind=kLoop, calls=fused
}
"""


def test_variadic_reduce_taken_apart_by_get_tuple_element(ctx):
    """The elemental emitter gives a variadic reduction's values as a
    list; get-tuple-element picks one. Checked against numpy's argmax."""
    kernel = emit_kernel(find_fusion(parse_hlo(ARGMAX)))
    assert "func.func private @argmax(" in kernel.text
    x = np.random.RandomState(1).randn(6, 5, 7).astype(np.float32)
    v, i = np.zeros((6, 7), np.float32), np.zeros((6, 7), np.int32)
    CpuKernel(kernel)(x, v, i)
    np.testing.assert_array_equal(v, x.max(axis=1))
    np.testing.assert_array_equal(i, x.argmax(axis=1))


@pytest.mark.parametrize("old, new, message", [
    ("ROOT t = (f32[], s32[]) tuple(v, i)", "ROOT t = f32[] add(a, b)",
     "the reducer argmax returns 1 value, reduce needs 2"),
    ("i = s32[6,7] get-tuple-element(r), index=1", "i = s32[6,7] get-tuple-element(r), index=2",
     r"index=2 is not an element of \(f32\[6,7\], s32\[6,7\]\)"),
    ("i = s32[6,7] get-tuple-element(r), index=1", "i = s32[6,7] get-tuple-element(r), index=0",
     r"element 0 of r is f32\[6,7\], not s32\[6,7\]"),
    ("ninf = f32[] constant(-inf)", "ninf = f32[2] constant({0, 0})",
     r"init value 0 \(ninf\) must be a scalar"),
])
def test_malformed_variadic_reduce_is_located(ctx, old, new, message):
    with pytest.raises(EmitterError, match=message):
        emit_kernel(find_fusion(parse_hlo(ARGMAX.replace(old, new))))


EPILOGUE_FUSION = """HloModule m
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
fused {
  p = f32[8,16] parameter(0)
  z = f32[] constant(0)
  r = f32[8] reduce(p, z), dimensions={1}, to_apply=add
  e = f32[8] exponential(r)
  ROOT n = f32[8] negate(e)
}
ENTRY e {
  p = f32[8,16] parameter(0)
  ROOT f = f32[8] fusion(p), kind=kInput, calls=fused
}
"""


def test_epilogue_gets_the_heros_value(ctx):
    """A hero emitter declares an epilogue (the ops between its hero and the
    output) and roots its hero in its own subgraph; the framework emits the
    epilogue as a function of (params, index, hero value). A probe emitter
    (not registered) computes the hero one way and hands it over."""
    from mlir.dialects import func as func_d, tensor as tensor_d
    from xla_gpu.emitters.base import EmitterBase, Epilogue

    fusion = find_fusion(parse_hlo(EPILOGUE_FUSION))
    analysis = analyze_fusion(fusion)
    assert analysis.kind is EmitterKind.REDUCTION
    hero, root = analysis.heroes[0], analysis.roots[0]

    class Probe(EmitterBase):
        def launch_dims(self):
            return LaunchDimensions((1, 1, 1), (8, 1, 1))

        def is_subgraph_root(self, inst):
            return inst is hero

        def epilogues(self):
            self._epilogue = getattr(self, "_epilogue", None) or Epilogue([hero], [root])
            return [self._epilogue]

        def emit_entry_function(self, entry, call_targets):
            params = list(entry.arguments)[:1]
            out = entry.arguments[1]
            with ir.InsertionPoint(entry.entry_block):
                tid, = self.kernel_ids([0])
                value = call_targets.call(hero, params, [tid])
                result, = call_targets.call_epilogue(self._epilogue, params, [tid], [value])
                func_d.ReturnOp([tensor_d.insert(result, out, [tid])])

    kernel = Probe(analysis).emit()
    text = kernel.text
    assert ("func.func private @f__epilogue__n(%arg0: tensor<8x16xf32>, %arg1: index, "
            "%arg2: f32) -> f32") in text
    assert "func.func private @fused_r(" in text  # the hero roots its own subgraph
    p = np.random.RandomState(2).randn(8, 16).astype(np.float32)
    out = np.zeros(8, np.float32)
    CpuKernel(kernel)(p, out)
    np.testing.assert_allclose(out, -np.exp(p.sum(axis=1)), rtol=1e-5)


def test_partitioner_hook_roots_a_hero(ctx):
    from xla_gpu.emitters.partitioner import partition
    comp = find_fusion(parse_hlo(EPILOGUE_FUSION)).fused_computation
    plain = [[i.name for i in s.instructions] for s in partition(comp)]
    hooked = [[i.name for i in s.instructions]
              for s in partition(comp, lambda inst: inst.name == "e")]
    # Alone, e is emitted with its one user; forced, it roots its own.
    assert plain[0][:2] == ["n", "e"]
    assert hooked[0] == ["n"] and hooked[1][0] == "e"


def test_outputs_that_read_one_another_through_a_reduction_are_refused(ctx):
    """x - mean and (x - mean) * rsqrt(sum((x - mean)^2) / n) as two
    outputs of one loop fusion over rows of 7 (a reduce the loop emitter
    keeps): the outputs' shared function computed the second through the
    reduce, whose input's function called the shared one for x - mean,
    which reduced again, until the stack overflowed (a segfault through
    xla_gpu.jax.jit, stop 90). Refused now, by name."""
    from xla_gpu.emitters.elemental import EmitterError
    text = """HloModule m

add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT c = f32[] add(a, b)
}

fused {
  x = f32[64,7] parameter(0)
  mean = f32[64] parameter(1)
  mb = f32[64,7] broadcast(mean), dimensions={0}
  d = f32[64,7] subtract(x, mb)
  sq = f32[64,7] multiply(d, d)
  z = f32[] constant(0)
  v = f32[64] reduce(sq, z), dimensions={1}, to_apply=add
  eps = f32[] constant(1e-05)
  eb = f32[64] broadcast(eps), dimensions={}
  ve = f32[64] add(v, eb)
  r = f32[64] rsqrt(ve)
  rb = f32[64,7] broadcast(r), dimensions={0}
  n = f32[64,7] multiply(d, rb)
  ROOT out = (f32[64,7], f32[64,7]) tuple(d, n)
}

ENTRY main {
  p0 = f32[64,7] parameter(0)
  p1 = f32[64] parameter(1)
  ROOT f = (f32[64,7], f32[64,7]) fusion(p0, p1), kind=kLoop, calls=fused
}
"""
    with pytest.raises(EmitterError, match="read one another through a reduction"):
        emit_kernel(find_fusion(parse_hlo(text)))


@pytest.mark.parametrize("device, target", [("a100", "sm_80"), ("h100", "sm_90"),
                                            ("a6000", "sm_86")])
def test_emitted_kernel_to_ptx_for_a_device(ctx, device, target):
    """The PTX path takes the EmittedKernel and derives its options from the
    device description; the entry is the kernel, named after the fusion."""
    from xla_gpu import pipelines, ptx
    kernel = emit_kernel(_negate("f32[1000]", "neg.1"), device_named(device))
    code = pipelines.compile_kernel_to_ptx(kernel, device_named(device))
    assert f".target {target}" in code
    assert ".entry neg_1(" in code
    if ptx.find_ptxas() is not None:
        result = ptx.ptxas_check(code, target)
        assert result.ok, result.log


def _kind_of(body: str, params: str, out: str) -> str:
    fusion = find_fusion(parse_hlo(
        "HloModule m\nadd {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n"
        "  ROOT s = f32[] add(a, b)\n}\n"
        f"fused {{\n{body}\n}}\nENTRY e {{\n{params}\n"
        f"  ROOT f = {out} fusion({', '.join(l.split('=')[0].strip() for l in params.splitlines())}),"
        " kind=kLoop, calls=fused\n}\n"))
    return analyze_fusion(fusion).kind.value


@pytest.mark.parametrize("body, params, out, kind", [
    # A concatenate hero of up to 4 operands; more stay with the loop emitter.
    ("  a = f32[4,8] parameter(0)\n  b = f32[4,8] parameter(1)\n"
     "  c = f32[8,8] concatenate(a, b), dimensions={0}\n  ROOT e = f32[8,8] exponential(c)",
     "  a = f32[4,8] parameter(0)\n  b = f32[4,8] parameter(1)", "f32[8,8]", "concatenate"),
    ("  a = f32[1,8] parameter(0)\n  c = f32[5,8] concatenate(a, a, a, a, a), dimensions={0}\n"
     "  ROOT e = f32[5,8] exponential(c)", "  a = f32[1,8] parameter(0)", "f32[5,8]", "loop"),
    # Several outputs, all unit-stride slices of one shape: input slices.
    ("  a = f32[16] parameter(0)\n  n = f32[16] negate(a)\n"
     "  s1 = f32[8] slice(n), slice={[0:8]}\n  s2 = f32[8] slice(n), slice={[8:16]}\n"
     "  ROOT t = (f32[8], f32[8]) tuple(s1, s2)", "  a = f32[16] parameter(0)",
     "(f32[8], f32[8])", "input slices"),
    ("  a = f32[16] parameter(0)\n  s1 = f32[4] slice(a), slice={[0:8:2]}\n"
     "  s2 = f32[4] slice(a), slice={[8:12]}\n  ROOT t = (f32[4], f32[4]) tuple(s1, s2)",
     "  a = f32[16] parameter(0)", "(f32[4], f32[4])", "loop"),
    # A reduction beside an output whose size is not the reduced operand's.
    ("  a = f32[8,16] parameter(0)\n  z = f32[] constant(0)\n"
     "  r = f32[8] reduce(a, z), dimensions={1}, to_apply=add\n  n = f32[8,16] negate(a)\n"
     "  ROOT t = (f32[8], f32[8,16]) tuple(r, n)", "  a = f32[8,16] parameter(0)",
     "(f32[8], f32[8,16])", "reduction"),
    ("  a = f32[8,16] parameter(0)\n  z = f32[] constant(0)\n"
     "  r = f32[8] reduce(a, z), dimensions={1}, to_apply=add\n  n = f32[8] negate(r)\n"
     "  s = f32[4] slice(n), slice={[0:4]}\n  ROOT t = (f32[8], f32[4]) tuple(r, s)",
     "  a = f32[8,16] parameter(0)", "(f32[8], f32[4])", "loop"),
    # Every output a dynamic-update-slice: the in-place emitter.
    ("  a = f32[8] parameter(0)\n  b = f32[8] parameter(1)\n  u = f32[2] parameter(2)\n"
     "  i = s32[] parameter(3)\n  d1 = f32[8] dynamic-update-slice(a, u, i)\n"
     "  d2 = f32[8] dynamic-update-slice(b, u, i)\n  ROOT t = (f32[8], f32[8]) tuple(d1, d2)",
     "  a = f32[8] parameter(0)\n  b = f32[8] parameter(1)\n  u = f32[2] parameter(2)\n"
     "  i = s32[] parameter(3)", "(f32[8], f32[8])", "in-place dynamic-update-slice"),
    # Packed 4-bit types: loop (XLA's other emitters do not take them).
    ("  a = s4[8,16] parameter(0)\n  z = s4[] constant(0)\n"
     "  ROOT r = s4[8] reduce(a, z), dimensions={1}, to_apply=add",
     "  a = s4[8,16] parameter(0)", "s4[8]", "loop"),
])
def test_emitter_kind_follows_xlas_order(ctx, body, params, out, kind):
    assert _kind_of(body, params, out) == kind


# --- a loop fusion's result over an operand's buffer ------------------------

def _loop_fusion(params: list[str], body: str, out: str, args: str | None = None,
                 kind: str = "kLoop"):
    decls = "\n".join(f"p{i} = {t} parameter({i})" for i, t in enumerate(params))
    entry = "\n".join(f"a{i} = {t} parameter({i})" for i, t in enumerate(params))
    args = args or ", ".join(f"a{i}" for i in range(len(params)))
    add = "add {\na = f32[] parameter(0)\nb = f32[] parameter(1)\nROOT s = f32[] add(a, b)\n}\n"
    text = (f"HloModule m\n{add}fused {{\n{decls}\n{body}\n}}\nENTRY e {{\n{entry}\n"
            f"ROOT f = {out} fusion({args}), kind={kind}, calls=fused\n}}\n")
    return find_fusion(parse_hlo(text))


_SHARING = {
    # An elementwise chain from p0; p1 broadcast.
    "exp of a scaled operand": (
        ["f32[64,130]", "f32[130]"],
        "b = f32[64,130] broadcast(p1), dimensions={1}\nm = f32[64,130] multiply(p0, b)\n"
        "ROOT r = f32[64,130] exponential(m)", "f32[64,130]", None, [0]),
    "select of two operands": (
        ["f32[64,130]", "f32[64,130]"],
        "c = pred[64,130] compare(p0, p1), direction=GT\n"
        "ROOT r = f32[64,130] select(c, p0, p1)", "f32[64,130]", None, [0, 1]),
    "a convert of the same width": (
        ["f32[4096]"], "ROOT r = s32[4096] convert(p0)", "s32[4096]", None, [0]),
    "a convert to half the width": (
        ["f32[4096]"], "ROOT r = f16[4096] convert(p0)", "f16[4096]", None, []),
    "packed nibbles": (["s4[4096]", "s4[4096]"], "ROOT r = s4[4096] add(p0, p1)", "s4[4096]",
                       None, []),
    # p0 also read at every element of its row (a reduce inside the fusion).
    "x - sum(x)": (
        ["f32[64,130]"],
        "z = f32[] constant(0)\ns = f32[64] reduce(p0, z), dimensions={1}, to_apply=add\n"
        "b = f32[64,130] broadcast(s), dimensions={0}\nROOT r = f32[64,130] subtract(p0, b)",
        "f32[64,130]", None, []),
    "a transpose": (["f32[64,64]"], "t = f32[64,64] transpose(p0), dimensions={1,0}\n"
                    "ROOT r = f32[64,64] negate(t)", "f32[64,64]", None, []),
    "one buffer read twice": (["f32[256]", "f32[256]"], "ROOT r = f32[256] add(p0, p1)",
                              "f32[256]", "a0, a0", []),
    # 40 rounds of a hash, each value read twice (jax.random's threefry
    # unrolled): 2^40 paths from p0 to the root, walked once each value.
    "a hash's rounds": (
        ["u32[4096]", "u32[4096]"],
        "x0 = u32[4096] add(p0, p1)\ny0 = u32[4096] xor(x0, p1)\n" + "".join(
            f"x{k} = u32[4096] add(x{k - 1}, y{k - 1})\ny{k} = u32[4096] xor(x{k}, y{k - 1})\n"
            for k in range(1, 40)) + "ROOT r = u32[4096] add(x39, y39)", "u32[4096]", None,
        [0, 1]),
}


@pytest.mark.parametrize("name", list(_SHARING))
def test_shareable_operands_of_a_loop_fusion(name):
    from xla_gpu.emitters import shareable_operands
    params, body, out, args, want = _SHARING[name]
    assert shareable_operands(_loop_fusion(params, body, out, args)) == want


def test_a_reduction_fusion_shares_no_operand():
    from xla_gpu.emitters import shareable_operands
    text = ("HloModule m\nadd {\na = f32[] parameter(0)\nb = f32[] parameter(1)\n"
            "ROOT s = f32[] add(a, b)\n}\nfused {\np = f32[64,1024] parameter(0)\n"
            "z = f32[] constant(0)\nROOT r = f32[64] reduce(p, z), dimensions={1}, to_apply=add\n}\n"
            "ENTRY e {\na = f32[64,1024] parameter(0)\n"
            "ROOT f = f32[64] fusion(a), kind=kInput, calls=fused\n}\n")
    assert shareable_operands(find_fusion(parse_hlo(text))) == []


@pytest.mark.parametrize("name", ["exp of a scaled operand", "select of two operands",
                                  "a convert of the same width"])
def test_a_kernel_writing_over_its_operand_matches_xla(ctx, name):
    """The kernel with one buffer for its result and operand k (the CPU
    target reads and writes the one buffer) gives XLA:CPU's bits."""
    from xla_gpu.reference import run_with_xla
    from xla_gpu.tools.test_correctness import reference_text
    params, body, out, args, shareable = _SHARING[name]
    fusion = _loop_fusion(params, body, out, args)
    rng = np.random.RandomState(7)
    inputs = [(rng.standard_normal(parse_shape(p).dims) * 1.5).astype(np.float32)
              for p in params]
    want = np.asarray(run_with_xla(reference_text(fusion.fused_computation), inputs)[0])
    for k in shareable:
        kernel = emit_kernel(fusion, shared_operand=k)
        assert kernel.aliases == {0: k}
        cpu = CpuKernel(kernel.text)
        assert cpu.aliases == {len(params): k}
        result = np.zeros(want.shape, want.dtype)
        cpu(*inputs, result)
        np.testing.assert_array_equal(result, want)


def test_an_operand_that_cannot_share_the_result_is_refused(ctx):
    params, body, out, args, _ = _SHARING["a transpose"]
    with pytest.raises(ValueError, match="operand 0 cannot share the result's buffer"):
        emit_kernel(_loop_fusion(params, body, out, args), shared_operand=0)


def _sum_over(shape: tuple[int, ...], dims: tuple[int, ...], ty: str = "f32",
              extra_root: bool = False, exp: bool = False) -> str:
    """A fusion summing an f32 conversion of its `ty` parameter over `dims`
    (of its exps, with `exp`); with `extra_root`, the exps are a second
    result."""
    kept = [n for i, n in enumerate(shape) if i not in dims]
    full = f"{ty}[{','.join(map(str, shape))}]"
    out = f"f32[{','.join(map(str, kept))}]"
    f32 = f"f32[{','.join(map(str, shape))}]"
    converted = f"  q = {f32} convert(p)\n  c = {f32} exponential(q)\n" if exp else \
        f"  c = {f32} convert(p)\n"
    body = (f"  p = {full} parameter(0)\n{converted}"
            f"  z = f32[] constant(0)\n"
            f"  s = {out} reduce(c, z), dimensions={{{','.join(map(str, dims))}}}, to_apply=add\n")
    if extra_root:
        body += (f"  e = f32[{','.join(map(str, shape))}] exponential(c)\n"
                 f"  ROOT t = ({out}, f32[{','.join(map(str, shape))}]) tuple(s, e)\n")
        root = f"({out}, f32[{','.join(map(str, shape))}])"
    else:
        body = body.replace("  s = ", "  ROOT s = ")
        root = out
    return (f"HloModule m\nadd {{\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n"
            f"  ROOT r = f32[] add(a, b)\n}}\nfused {{\n{body}}}\nENTRY e {{\n"
            f"  p0 = {full} parameter(0)\n  ROOT f = {root} fusion(p0), kind=kInput, "
            f"calls=fused\n}}\n")


def _sum_and_xla(fusion, kernel, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """A sum fusion of _sum_over's (one f32 result) run by `kernel` on the
    CPU target over a random input, and XLA:CPU's result of the same."""
    from xla_gpu.reference import run_with_xla
    from xla_gpu.tools.test_correctness import random_input, reference_text
    (param,) = fusion.fused_computation.parameters
    x = random_input(param.shape, np.random.RandomState(seed))
    out = np.zeros(fusion.shape.dims, np.float32)
    CpuKernel(kernel)(x, out)
    (want,) = run_with_xla(reference_text(fusion.fused_computation), [x])
    return out, want


_ROW_VALUES = """HloModule rows
fused {
  x = f32[512,1000] parameter(0)
  m = f32[512] parameter(1)
  s = f32[512] parameter(2)
  mb = f32[512,1000] broadcast(m), dimensions={0}
  sb = f32[512,1000] broadcast(s), dimensions={0}
  d = f32[512,1000] subtract(x, mb)
  ROOT o = f32[512,1000] divide(d, sb)
}
ENTRY e {
  x = f32[512,1000] parameter(0)
  m = f32[512] parameter(1)
  s = f32[512] parameter(2)
  ROOT f = f32[512,1000] fusion(x, m, s), kind=kLoop, calls=fused
}"""


def test_the_host_gives_a_loop_fusion_that_reads_row_values_a_block_a_row(ctx):
    """emit_kernel(host=True): a loop fusion reading values broadcast along
    its output's minor dimension (a softmax's last part, (x - max) / sum of
    each row) gets a block a row (250 threads of 4 elements over rows of
    1000), so that a row's values are one for all of a block's lanes,
    where XLA's blocks of 512 elements cut rows and the lanes gathered them
    (xla_gpu.jax.jit's softmax f32[4096,1000] 3.31 -> 2.00 ms, a
    cross-entropy's gradient 5.75 -> 4.60). The result is the bits of
    XLA:GPU's launch. Without `host`, or with nothing broadcast along rows
    (a scalar's broadcast is not), the launch is XLA:GPU's."""
    from xla_gpu.reference import run_with_xla
    from xla_gpu.tools.test_correctness import random_input, reference_text
    fusion = find_fusion(parse_hlo(_ROW_VALUES))
    host = make_emitter(fusion, host=True)
    assert host.launch.dims.block_counts == (512, 1, 1)
    assert host.launch.dims.thread_counts_per_block == (250, 1, 1)
    assert "-> (bl_x, th_x * 4 + unroll_id)" in str(host.thread_to_output_map())
    assert make_emitter(fusion).launch.dims.thread_counts_per_block == (128, 1, 1)
    plain_fusion = find_fusion(parse_hlo(
        "fused {\n  x = f32[512,1000] parameter(0)\n  c = f32[] constant(2)\n"
        "  b = f32[512,1000] broadcast(c), dimensions={}\n"
        "  ROOT o = f32[512,1000] multiply(x, b)\n}\n"))
    assert make_emitter(plain_fusion, host=True).launch == make_emitter(plain_fusion).launch
    rng = np.random.RandomState(2)
    inputs = [random_input(p.shape, rng) for p in fusion.fused_computation.parameters]
    out = np.zeros((512, 1000), np.float32)
    CpuKernel(emit_kernel(fusion, host=True))(*inputs, out)
    same = np.zeros_like(out)
    CpuKernel(emit_kernel(fusion))(*inputs, same)
    np.testing.assert_array_equal(out.view(np.uint32), same.view(np.uint32))
    # XLA:CPU divides by a broadcast as a multiply by its reciprocal: 1 ulp.
    (want,) = run_with_xla(reference_text(fusion.fused_computation), inputs)
    np.testing.assert_allclose(out, want, rtol=2.5e-7)


@pytest.mark.parametrize("shape, dims, ty, extra_root, loop", [
    ((64, 32, 128), (1,), "f32", False, True),      # the embedding sum's
    ((128, 64, 512), (1,), "bf16", False, True),
    ((1024, 256), (0,), "f32", False, True),        # 1024 rows: the most
    ((1025, 256), (0,), "f32", False, False),       # 1025: the reduction emitter's
    ((200, 500, 10), (1,), "f32", False, False),    # columns narrower than 16 lanes
    ((256, 512), (1,), "f32", False, False),        # rows are not
    ((64, 32, 128), (1,), "f32", True, False),      # nor a fusion of two outputs
])
def test_the_host_sums_short_columns_with_the_loop_emitter(ctx, shape, dims, ty, extra_root,
                                                           loop):
    """emit_kernel(host=True) (xla_gpu.jax's kernels on the CPU) makes a
    one-output column reduction of at most HOST_LOOP_COLUMN_ROWS rows and
    at least HOST_LOOP_COLUMN_LANES columns a loop kernel (a thread an output, its column summed in order), whose
    sums on the CPU target are XLA:CPU's within f32's rounding; without
    `host`, and for other reductions, the kernel is XLA:GPU's choice."""
    from xla_gpu.emitters import host_prefers_loop
    fusion = find_fusion(parse_hlo(_sum_over(shape, dims, ty, extra_root)))
    assert isinstance(make_emitter(fusion), ReductionEmitter)
    host_emitter = make_emitter(fusion, host=True)
    assert isinstance(host_emitter, LoopEmitter) == loop
    assert host_prefers_loop(analyze_fusion(fusion)) == loop
    if not loop:
        return
    kernel = emit_kernel(fusion, host=True)
    assert kernel.launch != emit_kernel(fusion).launch
    out, want = _sum_and_xla(fusion, kernel, 1)
    rows = np.prod([shape[d] for d in dims])
    np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-6 * rows)


@pytest.mark.parametrize("shape, launch", [
    ((16, 512, 500), (16, 500, 1)),    # XLA's blocks of 128 cut rows of 500: a block a row
    ((4, 1000, 700), (4, 700, 1)),
    ((8, 64, 1500), (8, 750, 2)),      # 2 a thread, next to each other (folded)
    ((2, 64, 40), (2, 40, 1)),
    ((256, 64, 256), None),            # XLA's blocks tile the rows: its launch
    ((16, 64, 512), None),
])
def test_the_host_sums_columns_a_block_a_row_where_xlas_blocks_cut_rows(ctx, shape, launch):
    """A column reduction the loop emitter takes on the CPU target
    (host_prefers_loop) whose rows XLA's blocks do not tile runs a block
    a row of its output (loop._reduces_columns_across_blocks): a block's
    lanes in one row, each step one vector load (lanes in two rows made
    LLVM gather them, 8x slower). Each output its column summed in order:
    numpy's sequential f32 sums (cumsum), bit for bit."""
    fusion = find_fusion(parse_hlo(_sum_over(shape, (1,))))
    host = make_emitter(fusion, host=True)
    assert isinstance(host, LoopEmitter)
    if launch is None:
        assert host.launch.threads % 128 == 0 and not host.launch.past_row, host.launch
        assert host.launch.dims.num_blocks > shape[0], host.launch
    else:
        blocks, threads, unroll = launch
        assert host.launch.dims.block_counts == (blocks, 1, 1)
        assert host.launch.dims.thread_counts_per_block == (threads, 1, 1)
        assert host.launch.unroll_factor == unroll
    x = np.random.default_rng(5).standard_normal(shape).astype(np.float32)
    out = np.zeros((shape[0], shape[2]), np.float32)
    CpuKernel(emit_kernel(fusion, host=True))(x, out)
    want = np.cumsum(x, axis=1, dtype=np.float32)[:, -1, :]
    np.testing.assert_array_equal(out.view(np.uint32), want.view(np.uint32))


@pytest.mark.parametrize("shape, dims, threads", [
    ((512, 512, 3), (1,), 96),        # 3 image channels: 3 warps, 32 rows a column
    ((64, 1000, 5), (1,), 160),
    ((40, 333, 6), (1,), 96),         # 16 rows a column
    ((8, 77, 12), (1,), 96),          # 8 rows: a rows' count and a loop's tail
    ((4, 2000, 31), (1,), 992),
    ((16, 4096, 3), (1,), 96),
])
def test_the_host_walks_narrow_columns_flattened(ctx, shape, dims, threads):
    """emit_kernel(host=True) gives a column reduction whose kept minor
    width W is below the warp and does not divide it the small column
    variant (ReductionEmitter.host_class): threads the fewest warps whose
    count W divides walk the rows and columns flattened, each thread's
    elements in one column, where XLA:GPU's column variant (without
    `host`) had W of a warp's 32 lanes busy. The sums are XLA:CPU's within
    f32's rounding, over the exps of the input too."""
    from xla_gpu.emitters.reduction import ColumnReductionEmitter, SmallColumnReductionEmitter
    for exp in (False, True):
        fusion = find_fusion(parse_hlo(_sum_over(shape, dims, exp=exp)))
        assert type(make_emitter(fusion)) is ColumnReductionEmitter
        host = make_emitter(fusion, host=True)
        assert type(host) is SmallColumnReductionEmitter
        assert host.launch_dims().thread_counts_per_block == (threads, 1, 1)
        out, want = _sum_and_xla(fusion, emit_kernel(fusion, host=True), 3)
        rows = np.prod([shape[d] for d in dims])
        np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-6 * rows * (1 + 2 * exp))


def _concatenate(operands: list[str], dimension: int, epilogue: bool = False) -> str:
    """A fusion concatenating f32 operands of `operands`' dimensions (each
    a "d0,d1,..." string) along `dimension`; `epilogue`: times 2 after."""
    dims = [list(map(int, o.split(","))) for o in operands]
    out = list(dims[0])
    out[dimension] = sum(d[dimension] for d in dims)
    text = lambda d: f"f32[{','.join(map(str, d))}]"
    params = "".join(f"  p{k} = {text(d)} parameter({k})\n" for k, d in enumerate(dims))
    names = ", ".join(f"p{k}" for k in range(len(dims)))
    concat = f"{text(out)} concatenate({names}), dimensions={{{dimension}}}"
    body = (f"  c = {concat}\n  two = f32[] constant(2)\n"
            f"  twos = {text(out)} broadcast(two), dimensions={{}}\n"
            f"  ROOT o = {text(out)} multiply(c, twos)\n" if epilogue else f"  ROOT c = {concat}\n")
    return (f"HloModule m\nfused {{\n{params}{body}}}\n"
            f"ENTRY e {{\n{params}  ROOT f = {text(out)} fusion({names}), kind=kLoop, "
            f"calls=fused\n}}\n")


@pytest.mark.parametrize("operands, dimension, epilogue, row", [
    # A reflect pad of NHWC images along W: rows of W * C from the
    # concatenated dimension on (the dimensions after it make 3 elements).
    (["4,9,2,3", "4,9,30,3", "4,9,2,3"], 2, False, 90),
    # Along H: a row of W * C after it, the operands' rows whole blocks.
    (["4,2,30,3", "4,30,30,3", "4,2,30,3"], 1, True, 90),
    (["64,40", "64,24"], 1, True, 40),                 # along the rows
    (["16,5,64", "16,3,64", "16,8,64"], 1, False, 64),
    (["8,30", "8,2"], 1, False, None),                 # rows of 30: XLA's blocks
    (["3,700,2", "3,400,2"], 1, False, None),          # 1400 elements a row
    (["40,64", "24,64"], 0, False, 64),                # along the major dimension
    (["40,8", "24,8"], 0, False, None),                # its rows of 8: XLA's blocks
])
def test_the_host_gives_a_concatenate_a_block_a_row(ctx, operands, dimension, epilogue, row):
    """emit_kernel(host=True): a concatenate's block is a row of its
    largest operand, from the dimension after the concatenated one (or from
    it, where those make fewer than 32 elements), a thread an element,
    where the row is 32 to 1024 elements: each operand's part of the row
    is the block's first lanes or a whole block (the CPU target cuts the
    lane loop there), where XLA's blocks of 512 elements, each thread two
    or four, left its lanes a guard of a quotient (a reflect pad of
    f32[16,224,224,3] along W: 2.35 -> 0.26 ms a kernel call). Every
    element XLA:CPU's; without `host`, or outside those rows, the launch is
    XLA:GPU's."""
    from xla_gpu.reference import run_with_xla
    from xla_gpu.tools.test_correctness import random_input, reference_text
    fusion = find_fusion(parse_hlo(_concatenate(operands, dimension, epilogue)))
    gpu, host = make_emitter(fusion), make_emitter(fusion, host=True)
    if row is None:
        assert host.launch == gpu.launch
    else:
        assert host.launch.dims.thread_counts_per_block == (row, 1, 1)
        assert host.launch.dims.num_blocks * row == max(
            (p.shape for p in fusion.fused_computation.parameters),
            key=lambda s: s.dims[dimension]).num_elements
        assert gpu.launch.dims.thread_counts_per_block != (row, 1, 1)
    rng = np.random.RandomState(3)
    inputs = [random_input(p.shape, rng) for p in fusion.fused_computation.parameters]
    out = np.full(fusion.shape.dims, np.nan, np.float32)
    CpuKernel(emit_kernel(fusion, host=True))(*inputs, out)
    (want,) = run_with_xla(reference_text(fusion.fused_computation), inputs)
    np.testing.assert_array_equal(out, want)


def _transpose_fusion(dims: tuple[int, ...], permutation: tuple[int, ...], ty: str = "f32",
                      add: bool = False) -> str:
    """A loop fusion transposing an input of `dims` by `permutation` (a
    transpose and a copy to the default layout, as XLA:CPU fuses jnp's);
    `add`: plus a second input of the output's dimensions."""
    out = [dims[k] for k in permutation]
    text = lambda d: f"{ty}[{','.join(map(str, d))}]"
    layout = ",".join(str(permutation.index(k)) for k in reversed(range(len(dims))))
    second = f"  q = {text(out)} parameter(1)\n" if add else ""
    root = (f"  c = {text(out)} copy(t)\n  ROOT r = {text(out)} add(c, q)\n" if add
            else f"  ROOT c = {text(out)} copy(t)\n")
    params = f"  p = {text(dims)} parameter(0)\n" + second
    order = ",".join(map(str, permutation))
    operands = "p, q" if add else "p"
    return (f"HloModule m\nfused {{\n{params}"
            f"  t = {text(out)}{{{layout}}} transpose(p), dimensions={{{order}}}\n"
            f"{root}}}\nENTRY e {{\n{params}  ROOT f = {text(out)} fusion({operands}), "
            f"kind=kLoop, calls=fused\n}}\n")


@pytest.mark.parametrize("dims, permutation, ty, add, walked_last", [
    ((4096, 3), (1, 0), "f32", False, 0),               # points AoS -> SoA
    ((4, 30, 30, 3), (0, 3, 1, 2), "f32", False, 1),    # NHWC -> NCHW
    ((4, 30, 30, 3), (0, 3, 1, 2), "u8", False, 1),
    ((2, 16, 16, 8), (0, 3, 1, 2), "bf16", False, 1),
    ((4096, 4), (1, 0), "f32", True, 0),                # plus a row-major input
    ((4096, 7), (1, 0), "f32", False, 0),               # 8 and more: transposed tiles
    ((4, 3, 30, 30), (0, 2, 3, 1), "f32", False, None), # NCHW -> NHWC: rows already
    ((64, 30, 3), (2, 1, 0), "f32", False, None),       # the output's minor not next
])
def test_the_host_walks_a_transposed_small_dimension_last(ctx, dims, permutation, ty, add,
                                                          walked_last):
    """emit_kernel(host=True): a loop fusion whose output has, as one of
    its major dimensions of 2 to 8 elements, an input's minor dimension
    (the output's minor one next to it) walks that dimension last: the
    threads take the input's elements in its order, so that each lane's
    elements are the input's next ones (one interleave group on the CPU
    target) and the output's lanes apart along its rows (NHWC -> NCHW of
    f32[16,224,224,3] 0.39 -> 0.14 ms a kernel call; u8 through
    xla_gpu.jax.jit 5.4x -> 0.53x jax.jit's time). The launch stays
    XLA:GPU's; every element XLA:CPU's."""
    from xla_gpu.emitters.loop import host_transposed_dim
    from xla_gpu.reference import run_with_xla
    from xla_gpu.tools.test_correctness import random_input, reference_text
    fusion = find_fusion(parse_hlo(_transpose_fusion(dims, permutation, ty, add)))
    host = make_emitter(fusion, host=True)
    assert host.host_transposed == walked_last
    assert host_transposed_dim(fusion.fused_computation, fusion.shape) == walked_last
    assert host.launch == make_emitter(fusion).launch
    assert make_emitter(fusion).host_transposed is None
    rng = np.random.RandomState(4)
    inputs = [random_input(p.shape, rng) for p in fusion.fused_computation.parameters]
    kernel = emit_kernel(fusion, host=True)
    out = np.zeros(fusion.shape.dims, kernel.results[0].element_type.dtype)
    CpuKernel(kernel)(*inputs, out)
    (want,) = run_with_xla(reference_text(fusion.fused_computation), inputs)
    np.testing.assert_array_equal(out, want)


def _loop_map_ranges(kernel) -> list[int]:
    """How many ranges each xla_gpu.loop's map states, its variables' and
    its constraints', in the order of the loops."""
    maps = dict(re.findall(r"^(#indexing_map\d*) = (.*)$", kernel.text, re.M))
    return [maps[m].count(" in [")
            for m in re.findall(r"xla_gpu\.loop .* in (#indexing_map\d*)", kernel.text)]


@pytest.mark.parametrize("dims, permutation, edges", [
    ((500, 3000), (1, 0), "shifted"),    # both swapped dimensions' last tiles partial
    ((100, 10000), (1, 0), "shifted"),
    ((3, 300, 500), (0, 2, 1), "shifted"),
    ((512, 3000), (1, 0), "shifted"),    # one
    ((45, 70, 2), (1, 0, 2), "shifted"),  # a kept minor dimension (the vector)
    ((31, 1000), (1, 0), "versioned"),   # a partial dimension of one tile
    ((16, 100, 33), (0, 2, 1), "versioned"),  # shifted, the blocks would cover 2.48x it
    ((512, 3008), (1, 0), "whole"),      # whole tiles everywhere
])
def test_the_host_runs_whole_transpose_tiles_without_bounds_checks(ctx, dims, permutation,
                                                                   edges):
    """emit_kernel(host=True) on a transpose whose tiles are partial at an
    edge runs every block on a whole tile, without the edges' bounds
    checks (maps without constraints), which the CPU target ran lane by
    lane in every block: a block at an edge takes the last whole tile,
    overlapping its neighbour's (TransposeEmitter._shifts_edge_tiles), or
    where a partial dimension has one tile alone, or the blocks would
    cover over twice the shape, each loop is emitted twice, under an
    scf.if of the block's tile being whole (_versioned_kernel_loop). Every element (the transpose's and a side
    output's) numpy's, bit for bit; without `host` XLA:GPU's kernel (no
    scf.if, its edges constrained)."""
    from xla_gpu.emitters.transpose import TransposeEmitter
    out_dims = tuple(dims[k] for k in permutation)
    text = lambda d: f"f32[{','.join(map(str, d))}]"  # noqa: E731
    order = ",".join(map(str, permutation))
    fusion = _loop_fusion(
        [text(dims)],
        f"t = {text(out_dims)} transpose(p0), dimensions={{{order}}}\n"
        f"c = f32[] constant(2)\nb = {text(out_dims)} broadcast(c), dimensions={{}}\n"
        f"m = {text(out_dims)} multiply(t, b)\ne = {text(dims)} add(p0, p0)\n"
        f"ROOT r = ({text(out_dims)}, {text(dims)}) tuple(m, e)",
        f"({text(out_dims)}, {text(dims)})", kind="kInput")
    assert type(make_emitter(fusion, host=True)) is TransposeEmitter

    def checks(kernel) -> list[int]:
        """Each loop's map: how many ranges its domain states beyond its
        four variables' (th_x, bl_x, loop, vector) -- the bounds checks."""
        return [n - 4 for n in _loop_map_ranges(kernel)]

    kernel = emit_kernel(fusion, host=True)
    gpu = emit_kernel(fusion)
    assert "scf.if" not in gpu.text
    assert ("scf.if" in kernel.text) == (edges == "versioned")
    if edges == "versioned":   # the read and write loops: the whole tiles', the edges'
        assert checks(kernel)[0] == checks(kernel)[2] == 0
        assert checks(kernel)[1] > 0 and checks(kernel)[3] > 0
    else:
        assert checks(kernel) == [0, 0]
    if edges == "shifted":
        assert checks(gpu)[0] > 0 and checks(gpu)[1] > 0
    x = np.random.default_rng(8).standard_normal(dims).astype(np.float32)
    out, side = np.zeros(out_dims, np.float32), np.zeros(dims, np.float32)
    CpuKernel(kernel)(x, out, side)
    np.testing.assert_array_equal(out, np.transpose(x, permutation) * np.float32(2))
    np.testing.assert_array_equal(side, x + x)


@pytest.mark.parametrize("dtype, dims, host_tile", [
    ("bf16", (16, 300, 500), "32 x 33"),
    ("f16", (16, 320, 512), "32 x 33"),
    ("s16", (8, 200, 96), "32 x 33"),
    ("u8", (16, 300, 500), "packed"),
    ("s8", (16, 256, 512), "packed"),
])
def test_the_host_transposes_16_bit_types_through_32_by_33_tiles(ctx, dtype, dims, host_tile):
    """XLA:GPU takes the packed tile for 16- and 8-bit transposes; on the
    CPU target the 16-bit ones take the 32 x 33 tiles
    (PackedTransposeEmitter.host_class: their epilogues ran up to 2x
    slower packed), the 8-bit ones keep it. Every element numpy's, bit
    for bit."""
    import ml_dtypes
    from xla_gpu.emitters.packed_transpose import PackedTransposeEmitter
    from xla_gpu.emitters.transpose import TransposeEmitter
    np_type = {"bf16": ml_dtypes.bfloat16, "f16": np.float16, "s16": np.int16,
               "u8": np.uint8, "s8": np.int8}[dtype]
    out_dims = (dims[0], dims[2], dims[1])
    text = lambda d: f"{dtype}[{','.join(map(str, d))}]"  # noqa: E731
    fusion = _loop_fusion([text(dims), text(out_dims)],
                          f"t = {text(out_dims)} transpose(p0), dimensions={{0,2,1}}\n"
                          f"ROOT a = {text(out_dims)} add(t, p1)", text(out_dims), kind="kInput")
    assert type(make_emitter(fusion)) is PackedTransposeEmitter
    want_class = TransposeEmitter if host_tile == "32 x 33" else PackedTransposeEmitter
    assert type(make_emitter(fusion, host=True)) is want_class
    rng = np.random.default_rng(3)
    x = rng.integers(0, 100, dims).astype(np_type)
    y = rng.integers(0, 100, out_dims).astype(np_type)
    out = np.zeros(out_dims, np_type)
    CpuKernel(emit_kernel(fusion, host=True))(x, y, out)
    want = (np.transpose(x, (0, 2, 1)).astype(np.float32) + y.astype(np.float32)).astype(np_type)
    np.testing.assert_array_equal(out, want)


def _histogram_scatter(bins: int, updates: int, unique: bool = False) -> str:
    """A scatter-add of `updates` ones into `bins` bins at given indices."""
    flag = ", unique_indices=true" if unique else ""
    return f"""HloModule m
add {{
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT c = f32[] add(a, b)
}}
fused {{
  bins = f32[{bins}] parameter(0)
  at = s32[{updates},1] parameter(1)
  ones = f32[{updates},1] parameter(2)
  ROOT s = f32[{bins}] scatter(bins, at, ones), update_window_dims={{1}},
    inserted_window_dims={{}}, scatter_dims_to_operand_dims={{0}}, index_vector_dim=1,
    to_apply=add{flag}
}}
ENTRY e {{
  bins = f32[{bins}] parameter(0)
  at = s32[{updates},1] parameter(1)
  ones = f32[{updates},1] parameter(2)
  ROOT f = f32[{bins}] fusion(bins, at, ones), kind=kLoop, calls=fused
}}
"""


@pytest.mark.parametrize("bins, updates, unique, one_block", [
    (8, 4096, False, True),      # 512 updates a bin
    (128, 4096, False, True),    # 32
    (16384, 4096, False, True),  # fewer updates than bins: still atomics
    (8, 4096, True, False),      # unique indices: plain stores, XLA's grid
])
def test_the_host_runs_a_colliding_scatter_on_one_block(ctx, bins, updates, unique, one_block):
    """emit_kernel(host=True): a scatter whose updates may collide (a
    histogram's ones into its bins) is one block, which one thread of the
    CPU runs, its atomic updates plain ones: on two cores each was an
    atomic update, and they fought over the bins' cache lines
    (jnp.histogram's 4M ones into 257 bins: 25 ms a kernel call on two
    threads, 2.6 on one). Every bin XLA:CPU's (sums of ones: exact in any
    order)."""
    from xla_gpu.reference import run_with_xla
    from xla_gpu.tools.test_correctness import reference_text
    fusion = find_fusion(parse_hlo(_histogram_scatter(bins, updates, unique)))
    gpu, host = make_emitter(fusion), make_emitter(fusion, host=True)
    assert (host.launch_dims().block_counts == (1, 1, 1)) == one_block
    assert gpu.launch_dims().block_counts != (1, 1, 1)
    if not one_block:
        assert host.launch == gpu.launch
    rng = np.random.RandomState(5)
    at = rng.randint(0, bins, (updates, 1)).astype(np.int32)
    if unique:  # each bin once, the rest past the end (skipped, as XLA does)
        at = np.minimum(np.arange(updates, dtype=np.int32), bins).reshape(updates, 1)
    inputs = [np.zeros(bins, np.float32), at, np.ones((updates, 1), np.float32)]
    out = np.full(bins, np.nan, np.float32)
    CpuKernel(emit_kernel(fusion, host=True))(*inputs, out)
    (want,) = run_with_xla(reference_text(fusion.fused_computation), inputs)
    np.testing.assert_array_equal(out, want)


def _segment_sum(dtype: str, segments: int, updates: int, width: int = 0,
                 combiner: str = "add") -> str:
    """jax.ops.segment_sum(u, at, segments, indices_are_sorted=True) (or
    segment_max etc., `combiner`): of scalars, or (width) of rows of
    `width` elements (a window of [1, width] at each index; 2-d tensors,
    flattened by the pipeline)."""
    if combiner != "add":
        return _segment_sum(dtype, segments, updates, width).replace(
            "ROOT c = " + f"{dtype}[] add(a, b)", "ROOT c = " + f"{dtype}[] {combiner}(a, b)")
    if width:
        rows = f"{segments},{width}"
        return _segment_sum(dtype, segments, updates).replace(
            f"{dtype}[{segments}]", f"{dtype}[{rows}]").replace(
            f"{dtype}[{updates}]", f"{dtype}[{updates},{width}]").replace(
            "update_window_dims={}", "update_window_dims={1}")
    return f"""HloModule m
add {{
  a = {dtype}[] parameter(0)
  b = {dtype}[] parameter(1)
  ROOT c = {dtype}[] add(a, b)
}}
fused {{
  x = {dtype}[{segments}] parameter(0)
  at = s32[{updates},1] parameter(1)
  u = {dtype}[{updates}] parameter(2)
  ROOT s = {dtype}[{segments}] scatter(x, at, u), update_window_dims={{}}, inserted_window_dims={{0}}, scatter_dims_to_operand_dims={{0}}, index_vector_dim=1, indices_are_sorted=true, to_apply=add
}}
ENTRY e {{
  x = {dtype}[{segments}] parameter(0)
  at = s32[{updates},1] parameter(1)
  u = {dtype}[{updates}] parameter(2)
  ROOT f = {dtype}[{segments}] fusion(x, at, u), kind=kInput, calls=fused
}}
"""


@pytest.mark.parametrize("dtype, width, combiner", [
    ("f32", 0, "add"), ("s32", 0, "add"), ("f32", 1, "add"),
    ("f32", 0, "maximum"), ("f16", 0, "maximum"), ("s32", 0, "multiply")])
@pytest.mark.parametrize("host, threads", [(True, 1), (False, 1), (False, 2)])
def test_sorted_segment_updates_carry_their_runs(ctx, dtype, width, combiner, host, threads):
    """A scatter-add (and -max, -multiply: lower-tensors' compare-and-swap
    loops, f16's on a 32-bit word) of sorted indices (indices_are_sorted)
    on the CPU target: an exclusive launch carries each run of updates of
    one segment in registers (-xla-gpu-lower-kernel-to-cpu's
    carryRunsOfUpdates), across threads and blocks -- the host's one
    block, or XLA's grid run on one thread -- with the same operations in
    the same order as one update after the other: every float sum is
    numpy's sequential np.add.at bit for bit (and XLA:CPU's within
    rounding). On two threads the updates stay atomic. Runs of 1 to 300
    updates, a first and a last run cut off by ids out of range (skipped,
    as XLA skips them), and segments no update touches (the operand's
    values kept)."""
    from xla_gpu.reference import run_with_xla
    from xla_gpu.tools.test_correctness import reference_text
    segments, updates = 1000, 20000
    fusion = find_fusion(parse_hlo(_segment_sum(dtype, segments, updates, width, combiner)))
    kernel = emit_kernel(fusion, host=host)
    assert "xla.indices_are_sorted" in kernel.text
    rng = np.random.RandomState(7)
    counts = rng.randint(1, 300, 2 * updates // 150)
    ids = np.repeat(np.arange(-20, len(counts) - 20) * 3, counts)[:updates]
    ids[-500:] = segments + 5  # past the end
    at = ids.astype(np.int32).reshape(updates, 1)
    np_type = {"f32": np.float32, "f16": np.float16, "s32": np.int32}[dtype]
    floats = dtype != "s32"
    u = (rng.standard_normal(updates) * 100 if floats
         else rng.randint(-1000, 1000, updates)).astype(np_type)
    if combiner == "multiply":  # products that stay in range
        u = rng.choice([-1, 1, 1, 1], updates).astype(np_type)
    x = (rng.standard_normal(segments) if floats
         else rng.randint(-9, 9, segments)).astype(np_type)
    want = x.copy()
    inside = (ids >= 0) & (ids < segments)
    {"add": np.add, "maximum": np.maximum, "multiply": np.multiply}[combiner].at(
        want, ids[inside], u[inside])
    if width:
        x, u, want = x.reshape(-1, 1), u.reshape(-1, 1), want.reshape(-1, 1)
    out = np.full(x.shape, 7, np_type)
    compiled = CpuKernel(kernel)
    # The loops carry an address (a block argument of pointer type).
    assert re.search(r"\^bb\d+\([^)]*: !llvm\.ptr", compiled.llvm_ir)
    compiled(x, at, u, out, num_threads=threads)
    if threads == 1:
        np.testing.assert_array_equal(out, want)
    else:
        np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-3)
    (xla,) = run_with_xla(reference_text(fusion.fused_computation), [x, at, u])
    np.testing.assert_allclose(out, xla, rtol=1e-5, atol=1e-3)
    untouched = ~np.isin(np.arange(segments), ids)
    np.testing.assert_array_equal(out[untouched], x[untouched])


def test_sorted_rows_are_not_carried(ctx):
    """Sorted indices of windows of several elements are not marked: a
    row's updates are neighbours in the threads' order, the runs of one
    element a row apart, and carried values kept LLVM from vectorizing a
    row (f32 rows of 16 into 1000 sorted segments 0.14 -> 0.64 ms)."""
    kernel = emit_kernel(find_fusion(parse_hlo(_segment_sum("f32", 1000, 4096, width=16))),
                         host=True)
    assert "xla.indices_are_sorted" not in kernel.text


_COUNT_POSITIVE = """HloModule m
add {
  a = s32[] parameter(0)
  b = s32[] parameter(1)
  ROOT c = s32[] add(a, b)
}
fused {
  p = f32[8,64,64] parameter(0)
  z = f32[] constant(0)
  zb = f32[8,64,64] broadcast(z), dimensions={}
  g = pred[8,64,64] compare(p, zb), direction=GT
  c = s32[8,64,64] convert(g)
  i = s32[] constant(0)
  ROOT r = s32[2,4,4] reduce-window(c, i), window={size=4x16x16 stride=4x16x16}, to_apply=add
}
ENTRY e {
  p = f32[8,64,64] parameter(0)
  ROOT f = s32[2,4,4] fusion(p), kind=kLoop, calls=fused
}
"""


def test_the_host_splits_a_loop_fusion_of_heavy_elements_into_blocks(ctx):
    """emit_kernel(host=True): a loop fusion of one block whose elements
    each read HOST_SPLIT_READS input elements or more (XLA:CPU's count of
    (x > 0).sum(): a reduce-window of windows of 1024 elements) runs on
    HOST_MIN_BLOCKS blocks, which the CPU target spreads over its threads:
    over f32[64,256,256] into s32[2,8,8] 0.92 -> 0.33 ms a kernel call;
    and in blocks no wider than its output's rows (32 threads at least).
    Every count XLA:CPU's; without `host`, or for light elements, the
    launch is XLA:GPU's."""
    from xla_gpu.emitters.loop import HOST_MIN_BLOCKS
    from xla_gpu.reference import run_with_xla
    from xla_gpu.tools.test_correctness import random_input, reference_text
    fusion = find_fusion(parse_hlo(_COUNT_POSITIVE))
    gpu, host = make_emitter(fusion), make_emitter(fusion, host=True)
    assert gpu.launch.dims.block_counts == (1, 1, 1)
    assert host.launch.dims.block_counts == (HOST_MIN_BLOCKS, 1, 1)
    assert host.launch.dims.thread_counts_per_block == (32 // HOST_MIN_BLOCKS, 1, 1)
    light = find_fusion(parse_hlo(
        "fused {\n  x = f32[32] parameter(0)\n  ROOT o = f32[32] add(x, x)\n}\n"))
    assert make_emitter(light, host=True).launch == make_emitter(light).launch
    # A sum over rows of 16 columns (a loop kernel on the host): blocks of
    # 32 threads, two rows of columns, not XLA's 128.
    narrow = find_fusion(parse_hlo(_sum_over((64, 256, 16), (1,), "f32", False)))
    assert make_emitter(narrow).launch_dims().thread_counts_per_block != (32, 1, 1)
    assert make_emitter(narrow, host=True).launch.dims.thread_counts_per_block == (32, 1, 1)
    x = random_input(fusion.fused_computation.parameters[0].shape, np.random.RandomState(6))
    out = np.full((2, 4, 4), -1, np.int32)
    CpuKernel(emit_kernel(fusion, host=True))(x, out)
    (want,) = run_with_xla(reference_text(fusion.fused_computation), [x])
    np.testing.assert_array_equal(out, want)


_TAKE_COLUMNS = """HloModule m
fused {
  x = f32[64,300]{1,0} parameter(0)
  i = s32[40]{0} parameter(1)
  zero = s32[] constant(0)
  zeros = s32[40]{0} broadcast(zero), dimensions={}
  negative = pred[40]{0} compare(i, zeros), direction=LT
  width = s32[] constant(300)
  widths = s32[40]{0} broadcast(width), dimensions={}
  wrapped = s32[40]{0} add(i, widths)
  index = s32[40]{0} select(negative, wrapped, i)
  starts = s32[40,1]{1,0} bitcast(index)
  columns = f32[40,64,1]{2,1,0} gather(x, starts), offset_dims={1,2}, collapsed_slice_dims={},
    start_index_map={1}, index_vector_dim=1, slice_sizes={64,1}
  rows = f32[40,64]{1,0} bitcast(columns)
  t = f32[64,40]{0,1} transpose(rows), dimensions={1,0}
  ROOT c = f32[64,40]{1,0} copy(t)
}
ENTRY e {
  x = f32[64,300]{1,0} parameter(0)
  i = s32[40]{0} parameter(1)
  ROOT f = f32[64,40]{1,0} fusion(x, i), kind=kLoop, calls=fused
}
"""


def test_the_host_takes_columns_with_the_loop_emitter(ctx):
    """emit_kernel(host=True) makes a transpose of gathered columns (XLA's
    jnp.take(x, i, axis=1): gather, then transpose back) a loop kernel, a
    thread reading along its output row; without `host` it is XLA:GPU's
    transpose emitter's, and a transpose of no gather stays the transpose
    emitter's on the host too. The kernel takes the columns bit for bit."""
    from xla_gpu.emitters import host_prefers_loop
    fusion = find_fusion(parse_hlo(_TAKE_COLUMNS))
    assert isinstance(make_emitter(fusion), TransposeEmitter)
    assert isinstance(make_emitter(fusion, host=True), LoopEmitter)
    assert host_prefers_loop(analyze_fusion(fusion))
    plain = find_fusion(parse_hlo(
        "HloModule m\nfused {\n  x = f32[40,64]{1,0} parameter(0)\n"
        "  n = f32[40,64]{1,0} negate(x)\n"
        "  t = f32[64,40]{0,1} transpose(n), dimensions={1,0}\n"
        "  ROOT c = f32[64,40]{1,0} copy(t)\n}\n"
        "ENTRY e {\n  x = f32[40,64]{1,0} parameter(0)\n"
        "  ROOT f = f32[64,40]{1,0} fusion(x), kind=kLoop, calls=fused\n}\n"))
    assert not host_prefers_loop(analyze_fusion(plain))
    assert isinstance(make_emitter(plain, host=True), TransposeEmitter)
    rng = np.random.default_rng(0)
    x = rng.standard_normal((64, 300)).astype(np.float32)
    i = rng.integers(-300, 300, 40).astype(np.int32)
    out = np.zeros((64, 40), np.float32)
    CpuKernel(emit_kernel(fusion, host=True))(x, i, out)
    np.testing.assert_array_equal(out, x[:, i])


@pytest.mark.parametrize("shape, ty, host_threads", [
    ((13982, 600), "f32", [1, 32]),    # 32 MiB of f32 rows of 600: a warp a row
    ((8192, 1024), "f32", [1, 32]),
    ((13974, 600), "f32", [3, 64]),    # under 32 MiB: XLA's two warps (of its 4 rows, 3 divide)
    ((27964, 600), "bf16", [1, 64]),   # 16-bit rows keep two warps
    ((7000, 600), "f64", [1, 64]),     # and so do f64 rows
    ((16384, 512), "f32", [1, 32]),    # a warp in XLA's launch already
])
def test_the_host_streams_rows_of_up_to_1024_a_warp_a_row(ctx, shape, ty, host_threads):
    """emit_kernel(host=True): a row reduction of 32-bit elements whose
    input has HOST_MIN_STREAMED_ROWS_BYTES (32 MiB), XLA:GPU's two warps
    a row, is one warp a row a block, each lane up to 32 elements (16-bit
    and f64 rows keep two warps); the sums are XLA:CPU's within f32's
    rounding."""
    fusion = find_fusion(parse_hlo(_sum_over(shape, (1,), ty)))
    host, gpu = make_emitter(fusion, host=True), make_emitter(fusion)
    assert gpu.num_threads[1] == (32 if shape[1] <= 512 else 64)
    assert host.num_threads == host_threads
    # Each lane's steps cover the row: one block a row (of its rows).
    assert host.launch_dims().block_counts == (shape[0] // host_threads[0], 1, 1)
    out, want = _sum_and_xla(fusion, emit_kernel(fusion, host=True), 5)
    np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-5 * np.abs(want).max())


def test_the_host_keeps_two_warps_for_a_streamed_variadic_reduce(ctx):
    """A variadic reduce (an argmax: a compare and selects a step) over
    rows of 1024 at 32 MiB keeps XLA:GPU's two warps a row on the host (a
    row a block); its result is numpy's argmax."""
    # ARGMAX's reducer over rows of 1024.
    text = ARGMAX.split("fused {")[0] + """fused {
  x = f32[8192,1024] parameter(0)
  i = s32[8192,1024] iota(), iota_dimension=1
  ninf = f32[] constant(-inf)
  z = s32[] constant(0)
  ROOT r = (f32[8192], s32[8192]) reduce(x, i, ninf, z), dimensions={1}, to_apply=argmax
}
ENTRY e {
  x = f32[8192,1024] parameter(0)
  ROOT f = (f32[8192], s32[8192]) fusion(x), kind=kInput, calls=fused
}
"""
    fusion = find_fusion(parse_hlo(text))
    host = make_emitter(fusion, host=True)
    assert host.num_threads == [1, 64]
    x = np.random.default_rng(2).standard_normal((8192, 1024)).astype(np.float32)
    best, index = np.zeros(8192, np.float32), np.zeros(8192, np.int32)
    CpuKernel(emit_kernel(fusion, host=True))(x, best, index)
    np.testing.assert_array_equal(index, np.argmax(x, axis=1))
    np.testing.assert_array_equal(best, x.max(axis=1))


@pytest.mark.parametrize("shape, perm, ty, loop", [
    ((4, 56, 56, 8), (0, 3, 1, 2), "f32", True),    # NHWC -> NCHW, 8 channels
    ((4, 56, 56, 8), (0, 3, 1, 2), "u8", True),
    ((4, 8, 56, 56), (0, 2, 3, 1), "bf16", True),   # NCHW -> NHWC
    ((2048, 8), (1, 0), "f32", True),
    ((4, 56, 56, 10), (0, 3, 1, 2), "u8", False),   # 10 channels: XLA's tiles
    ((4, 56, 56, 16), (0, 3, 1, 2), "f32", False),
])
def test_the_host_transposes_a_side_of_8_with_the_loop_emitter(ctx, shape, perm, ty, loop):
    """emit_kernel(host=True): a transpose XLA tiles that swaps a dimension
    of at most HOST_LOOP_TRANSPOSE_MAX_SIDE (8) elements is a loop kernel
    (XLA's 32 x 32 tiles a quarter full); one of 10 or more keeps XLA:GPU's
    transpose emitter, as every one does without `host`. The bits are the
    transpose's."""
    from xla_gpu.emitters import host_prefers_loop
    out_shape = tuple(shape[p] for p in perm)
    dims = lambda d: ",".join(map(str, d))  # noqa: E731
    fusion = find_fusion(parse_hlo(
        f"HloModule m\nfused {{\n  x = {ty}[{dims(shape)}] parameter(0)\n"
        f"  ROOT t = {ty}[{dims(out_shape)}] transpose(x), dimensions={{{dims(perm)}}}\n}}\n"
        f"ENTRY e {{\n  x = {ty}[{dims(shape)}] parameter(0)\n"
        f"  ROOT f = {ty}[{dims(out_shape)}] fusion(x), kind=kInput, calls=fused\n}}\n"))
    assert isinstance(make_emitter(fusion), TransposeEmitter)
    assert host_prefers_loop(analyze_fusion(fusion)) == loop
    assert isinstance(make_emitter(fusion, host=True), LoopEmitter if loop else TransposeEmitter)
    from xla_gpu.tools.test_correctness import random_input
    x = random_input(parse_shape(f"{ty}[{dims(shape)}]"), np.random.RandomState(1))
    out = np.zeros(out_shape, x.dtype)
    CpuKernel(emit_kernel(fusion, host=True))(x, out)
    want = np.ascontiguousarray(np.transpose(x, perm))
    np.testing.assert_array_equal(out.view(np.uint8), want.view(np.uint8))


@pytest.mark.parametrize("shape, ty, exp, rows_a_block, gpu_vector, host_vector", [
    ((5322, 197), "f32", False, 6, 1, 1),  # 5322 = 6 * 887: XLA's 8 a block leave 6 past the end
    ((1009, 100), "bf16", False, 1, 2, 1),  # a prime number of rows: a warp a block
    ((16384, 256), "f32", False, 8, 2, 1),  # XLA's 8 divide the rows: its blocks
    ((1022, 1000), "f32", False, 2, 2, 2),  # rows of 1000: XLA's vectors, 2 rows of 64 threads
    ((1022, 1000), "f32", True, 2, 2, 2),   # f32 exps: XLA's vectors
    ((1024, 1000), "bf16", True, 4, 4, 1),  # bf16 exps: an element a load
    ((1024, 1000), "bf16", False, 4, 4, 4),  # converted only: XLA's vectors
    ((256, 2048), "bf16", True, 2, 4, 4),   # past HOST_MAX_UNVECTORIZED_COMPUTED_ROW
    ((16384, 512), "f32", False, 1, 2, 1),  # 32 MiB (HOST_MIN_STREAMED_ROWS_BYTES): a row a block
    ((16382, 512), "f32", True, 2, 2, 1),   # just under it: of XLA's 8, 2 divide the rows
    ((16384, 1024), "bf16", False, 1, 4, 4),  # 32 MiB of bf16: a row a block
])
def test_the_host_reduces_whole_rows_a_block_an_element_a_load(ctx, shape, ty, exp, rows_a_block,
                                                             gpu_vector, host_vector):
    """emit_kernel(host=True): a row reduction's block holds the most rows,
    up to XLA:GPU's, that divide the rows (no block reaches past the last
    row, whose bounds check slowed the CPU target's lane loops), and a
    thread reads the elements of a row of up to HOST_MAX_UNVECTORIZED_ROW
    one at a time, not in XLA:GPU's vectors of 2 or 4
    (RowReductionEmitter._host_rows; one, a row a block, where the input
    has HOST_MIN_STREAMED_ROWS_BYTES), and those of a row of 16-bit values of
    up to HOST_MAX_UNVECTORIZED_COMPUTED_ROW whose fusion computes with them
    (an exp; not a conversion alone). The
    sums are XLA:CPU's within f32's rounding; without `host` the launch is
    XLA:GPU's."""
    fusion = find_fusion(parse_hlo(_sum_over(shape, (1,), ty, exp=exp)))
    gpu, host = make_emitter(fusion), make_emitter(fusion, host=True)
    threads = gpu.num_threads[1]
    assert gpu.num_threads == [256 // threads, threads] and gpu.input_shape[3] == gpu_vector
    assert host.num_threads == [rows_a_block, threads] and host.input_shape[3] == host_vector
    assert host.launch_dims().block_counts == (shape[0] // rows_a_block, 1, 1)
    out, want = _sum_and_xla(fusion, emit_kernel(fusion, host=True), 3)
    np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-5 * np.abs(want).max())


@pytest.mark.parametrize("ty, op, cols, rows_a_block", [
    ("bf16", "add", 512, 8),       # a warp a row, a bf16 sum: XLA's 8 rows a block
    ("bf16", "add", 1024, 1),      # two warps a row: a row a block
    ("bf16", "maximum", 512, 1),   # a maximum does not round: a row a block
    ("f32", "add", 512, 1),
])
def test_the_host_streams_rows_from_memory_a_row_a_block(ctx, ty, op, cols, rows_a_block):
    """emit_kernel(host=True): a row reduction whose input has
    HOST_MIN_STREAMED_ROWS_BYTES (32 MiB) reads a row a block, except
    where a row is one warp and its reducer rounds to a 16-bit float at
    every step (its block's tree then runs a few lanes a level)."""
    rows = (32 << 20) // (cols * (2 if ty == "bf16" else 4))
    text = (f"HloModule m\nr {{\n  a = {ty}[] parameter(0)\n  b = {ty}[] parameter(1)\n"
            f"  ROOT c = {ty}[] {op}(a, b)\n}}\nfused {{\n  p = {ty}[{rows},{cols}] parameter(0)\n"
            f"  z = {ty}[] constant(0)\n"
            f"  ROOT s = {ty}[{rows}] reduce(p, z), dimensions={{1}}, to_apply=r\n}}\n"
            f"ENTRY e {{\n  p0 = {ty}[{rows},{cols}] parameter(0)\n"
            f"  ROOT f = {ty}[{rows}] fusion(p0), kind=kInput, calls=fused\n}}\n")
    fusion = find_fusion(parse_hlo(text))
    host, gpu = make_emitter(fusion, host=True), make_emitter(fusion)
    assert gpu.num_threads[0] == 256 // gpu.num_threads[1] > 1
    assert host.num_threads == [rows_a_block, gpu.num_threads[1]]
    # Eight rows fewer: under 32 MiB, XLA's rows (8 divide them).
    smaller = find_fusion(parse_hlo(text.replace(f"[{rows},", f"[{rows - 8},")
                                    .replace(f"{ty}[{rows}]", f"{ty}[{rows - 8}]")))
    assert make_emitter(smaller, host=True).num_threads == gpu.num_threads


@pytest.mark.parametrize("cols, exp, host_lanes", [
    (16, True, 16),   # exps: an element a lane, a row a 16-lane vector
    (8, True, 8),
    (16, False, 8),   # a sum of the inputs as they are: XLA's vectors of 2
    (4, True, 2),     # rows shorter than HOST_MIN_UNVECTORIZED_MULTI_ROW
])
def test_the_host_reads_rows_of_8_to_16_it_computes_with_an_element_a_lane(ctx, cols, exp,
                                                                          host_lanes):
    """emit_kernel(host=True): a multi-row reduction over rows of
    HOST_MIN_UNVECTORIZED_MULTI_ROW up to 16 elements whose fusion computes
    with them reads a row an element a lane; XLA:GPU's launch (without
    `host`) reads 2 a lane. The sums are XLA:CPU's within f32's rounding."""
    fusion = find_fusion(parse_hlo(_sum_over((65536, cols), (1,), exp=exp)))
    gpu, host = make_emitter(fusion), make_emitter(fusion, host=True)
    assert type(host).__name__ == "MultiRowReductionEmitter"
    assert gpu.num_threads[1] == cols // 2 and gpu.tile_sizes_per_thread[1] == 2
    assert host.num_threads[1] == host_lanes
    assert host.tile_sizes_per_thread[1] == cols // host_lanes
    out, want = _sum_and_xla(fusion, emit_kernel(fusion, host=True), 5)
    np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-5 * np.abs(want).max())


def _assert_host_row_launch(fusion, shape, launch, dtype=np.float32, seed=4):
    """The host's launch of `fusion` (make_emitter(host=True)): XLA:GPU's
    where `launch` is None, else `launch`'s (blocks, threads a block),
    its bits those of XLA:GPU's launch (_assert_host_bits_as_gpu_launch)."""
    host, gpu = make_emitter(fusion, host=True), make_emitter(fusion)
    if launch is None:
        assert host.launch == gpu.launch
        return
    assert host.launch.dims.block_counts == (launch[0], 1, 1)
    assert host.launch.dims.thread_counts_per_block == (launch[1], 1, 1)
    _assert_host_bits_as_gpu_launch(fusion, shape, dtype, seed)


def _assert_host_bits_as_gpu_launch(fusion, shape, dtype=np.float32, seed=4):
    """The host's kernel of `fusion` (emit_kernel(host=True): its own
    launch) gives the bits of XLA:GPU's launch on random inputs."""
    from xla_gpu.tools.test_correctness import random_input
    rng = np.random.RandomState(seed)
    inputs = [random_input(p.shape, rng) for p in fusion.fused_computation.parameters]
    got, same = np.zeros(shape, dtype), np.zeros(shape, dtype)
    CpuKernel(emit_kernel(fusion, host=True))(*inputs, got)
    CpuKernel(emit_kernel(fusion))(*inputs, same)
    np.testing.assert_array_equal(got.view(np.uint32), same.view(np.uint32))


@pytest.mark.parametrize("cols, threads, unroll, apart", [
    (100, 100, 1, False),     # XLA's 4 a thread: 25 threads, a partial warp
    (197, 197, 1, False),     # 4 does not divide a row
    (48, 48, 1, False),
    (1000, 250, 4, False),    # XLA's unroll kept
    (4096, 1024, 4, False),   # more elements than threads: XLA's map, the loop folded
    (24, 32, 1, True),        # a row shorter than a warp: a warp, 8 lanes idle
    (12, 32, 1, True),        # 20 lanes idle
    (8, None, None, False),   # a quarter of a warp or less: XLA's launch
])
def test_the_host_gives_short_rows_a_block_a_row_an_element_a_thread(ctx, cols, threads, unroll,
                                                                     apart):
    """emit_kernel(host=True) on a loop fusion reading row values: a row of
    which XLA's unroll factor leaves fewer than 32 threads, or which it
    does not divide, is still a block's, a thread an element (host_row_launch);
    a row of more elements than a block's 1024 threads has a thread's
    elements next to each other as in XLA's map (the CPU pipeline folds
    them into 4096 threads); a row of 9 to 31 elements is a warp's, its
    lanes past the row idle (host_row_map). The bits are those of
    XLA:GPU's launch."""
    fusion = find_fusion(parse_hlo(_ROW_VALUES.replace("1000", str(cols))))
    host, gpu = make_emitter(fusion, host=True), make_emitter(fusion)
    if threads is None:
        assert host.launch == gpu.launch
        return
    assert host.launch.dims.block_counts == (512, 1, 1)
    assert host.launch.dims.thread_counts_per_block == (threads, 1, 1)
    assert host.launch.unroll_factor == unroll
    assert host.launch.unroll_apart == apart
    if apart:
        column = "th_x" if unroll == 1 else f"th_x + unroll_id * {threads}"
        assert f"(bl_x, {column})" in str(host.thread_to_output_map())
        assert (f"th_x in [0, {cols - 1}]" in str(host.thread_to_output_map())) == (cols < 32)
    _assert_host_bits_as_gpu_launch(fusion, (512, cols))


@pytest.mark.parametrize("body, out, params, row_launch", [
    # A pad of a reversed strided slice (jnp.pad(x[::-1, ::2], ...)[:, 1:-1]).
    ("  s = f32[512,256] slice(p0), slice={[0:512:1], [0:512:2]}\n"
     "  r = f32[512,256] reverse(s), dimensions={0}\n  z = f32[] constant(0)\n"
     "  p = f32[515,259] pad(r, z), padding=1_2x3_0\n"
     "  ROOT o = f32[515,257] slice(p), slice={[0:515], [1:258]}",
     (515, 257), ["f32[512,512]"], True),
    ("  ROOT r = f32[300,100] reverse(p0), dimensions={1}", (300, 100), ["f32[300,100]"], True),
    ("  z = f32[] constant(1)\n  ROOT p = f32[300,100] pad(p0, z), padding=0_0x3_1",
     (300, 100), ["f32[300,96]"], True),
    # Rows of a transposed array tiled along the rows and rolled by 2
    # (jnp.roll(jnp.tile(x.T, (1, 2)), 2, 1)[100:356]): the second piece
    # reads (lane - 2) mod 33, whose lanes the CPU target cut at the
    # remainder's steps from start -2 taken unsigned -- every remainder 16
    # off (lower_kernel_to_cpu.cpp, stop 74; found by random programs).
    ("  t = f32[513,33]{0,1} transpose(p0), dimensions={1,0}\n"
     "  c = f32[513,33] copy(t)\n"
     "  b = f32[1,513,2,33] broadcast(c), dimensions={1,3}\n"
     "  bc = f32[513,66] bitcast(b)\n"
     "  sa = f32[513,2] slice(bc), slice={[0:513], [64:66]}\n"
     "  sb = f32[513,65] slice(bc), slice={[0:513], [0:65]}\n"
     "  cat = f32[513,67] concatenate(sa, sb), dimensions={1}\n"
     "  ROOT s = f32[256,67] slice(cat), slice={[100:356], [0:67]}",
     (256, 67), ["f32[33,513]"], True),
    # Along the major dimension only, interior padding (a pad every other
    # lane), rows shorter than a warp, or elementwise: XLA's launch.
    ("  z = f32[] constant(0)\n  ROOT p = f32[300,99] pad(p0, z), padding=0_0x0_0_1",
     (300, 99), ["f32[300,50]"], False),
    # Rows shorter than a warp (a warp a row would leave lanes idle).
    ("  z = f32[] constant(0)\n  ROOT p = f32[300,16] pad(p0, z), padding=0_0x1_0",
     (300, 16), ["f32[300,15]"], False),
    ("  z = f32[] constant(1)\n  ROOT p = f32[300,100] pad(p0, z), padding=3_1x0_0",
     (300, 100), ["f32[296,100]"], False),
    ("  s = f32[300,100] slice(p0), slice={[1:301], [0:100]}\n"
     "  ROOT e = f32[300,100] exponential(s)", (300, 100), ["f32[302,100]"], False),
    ("  ROOT e = f32[300,100] exponential(p0)", (300, 100), ["f32[300,100]"], False),
    # Rows of more than 1024 elements where XLA's blocks are 128 (an odd
    # element count): a block a row, 2 or 3 elements a thread next to each
    # other, the last ones past the row idle; 5 a block's threads apart
    # past 4096 (the CPU pipeline folds no more). A row's broadcast value
    # too (exp(x - max)).
    ("  z = f32[] constant(0)\n  ROOT p = f32[301,1025] pad(p0, z), padding=0_0x1_1",
     (301, 1025), ["f32[301,1023]"], (301, 513, 2, False)),
    ("  r = f32[301,2049] reverse(p0), dimensions={1}\n"
     "  ROOT e = f32[301,2049] exponential(r)", (301, 2049), ["f32[301,2049]"],
     (301, 683, 3, False)),
    ("  b = f32[301,1025] broadcast(p1), dimensions={0}\n"
     "  s = f32[301,1025] subtract(p0, b)\n  ROOT e = f32[301,1025] exponential(s)",
     (301, 1025), ["f32[301,1025]", "f32[301]"], (301, 513, 2, False)),
    ("  z = f32[] constant(0)\n  ROOT p = f32[301,5001] pad(p0, z), padding=0_0x1_1",
     (301, 5001), ["f32[301,4999]"], (301, 1001, 5, True)),
    # ... and where they are 512 (XLA's 4 a thread), XLA's launch.
    ("  z = f32[] constant(0)\n  ROOT p = f32[300,1025] pad(p0, z), padding=0_0x1_1",
     (300, 1025), ["f32[300,1023]"], False),
])
def test_the_host_gives_rows_read_at_an_offset_a_block_a_row(ctx, body, out, params,
                                                             row_launch):
    """emit_kernel(host=True) on a loop fusion that pads, slices or
    reverses along the minor dimension (loop._shifts_minor; a concatenate
    hero is the concatenate emitter's):
    a block a row, whose lanes are the row's elements -- XLA's blocks of 512
    elements cut every row's end into a loop of its own, a pad's edge a
    guard in each; a row of more than 1024 elements only where XLA's
    blocks are 128 elements, a thread's elements next to each other (a
    block's threads apart past 4096, which the CPU pipeline does not fold
    into its threads). Along the
    major dimension, or elementwise, XLA's launch. The bits are those of
    XLA:GPU's launch."""
    entry = "\n".join(f"  p{i} = {t} parameter({i})" for i, t in enumerate(params))
    fused = "\n".join(f"  p{i} = {t} parameter({i})" for i, t in enumerate(params))
    shape = f"f32[{out[0]},{out[1]}]"
    text = (f"HloModule m\n\nfused {{\n{fused}\n{body}\n}}\n\nENTRY e {{\n{entry}\n"
            f"  ROOT f = {shape} fusion({', '.join(f'p{i}' for i in range(len(params)))}), "
            "kind=kLoop, calls=fused\n}\n")
    fusion = find_fusion(parse_hlo(text))
    launch = row_launch[:2] if isinstance(row_launch, tuple) else out if row_launch else None
    _assert_host_row_launch(fusion, out, launch, seed=6)
    if isinstance(row_launch, tuple):
        _, threads, unroll, apart = row_launch
        host = make_emitter(fusion, host=True)
        assert host.launch.unroll_factor == unroll
        assert host.launch.unroll_apart == apart
        assert host.launch.past_row == (not apart and threads * unroll != out[1])
        if apart or host.launch.past_row:
            column = f"th_x + unroll_id * {threads}" if apart else f"th_x * {unroll} + unroll_id"
            assert f"{column} in [0, {out[1] - 1}]" in str(host.thread_to_output_map())


@pytest.mark.parametrize("dims, launch", [
    ((100, 625, 16), (12500, 80)),   # 10000 a batch: blocks of 80 (5 rows of 16), not 128
    ((6, 250, 16), (300, 80)),
    ((100, 624, 16), None),          # 9984 = 78 x 128: XLA's blocks tile a batch
    ((10, 127, 16), None),           # 2032 = 127 x 16: no multiple of 16 from 32 divides it
])
def test_the_host_tiles_a_reduce_windows_batches_with_whole_blocks(ctx, dims, launch):
    """A reduce-window of 16 along the minor dimension (a cumsum's, as jax
    lowers it for the CPU) whose batches XLA's blocks of 128 do not tile
    runs in blocks of the most threads a batch is a multiple of
    (loop.host_whole_batch_launch): a block's lanes in one batch. The bits
    of XLA:GPU's launch."""
    shape = f"f32[{','.join(map(str, dims))}]"
    text = (f"HloModule m\n\nadd {{\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n"
            f"  ROOT c = f32[] add(a, b)\n}}\n\nfused {{\n  p = {shape} parameter(0)\n"
            f"  z = f32[] constant(0)\n  ROOT r = {shape} reduce-window(p, z), "
            f"window={{size=1x1x16 pad=0_0x0_0x15_0}}, to_apply=add\n}}\n\nENTRY e {{\n"
            f"  p0 = {shape} parameter(0)\n  ROOT f = {shape} fusion(p0), kind=kLoop, "
            f"calls=fused\n}}\n")
    fusion = find_fusion(parse_hlo(text))
    _assert_host_row_launch(fusion, dims, launch)


@pytest.mark.parametrize("dtype, heads, out", [
    ("bf16", (2, 12, 128, 64), (2, 128, 768)),  # -> [2,128,12,64] -> [2,128,768]
    ("f32", (4, 12, 64, 64), (4, 64, 768)),
    ("bf16", (3, 5, 70, 48), (3, 70, 240)),     # a ragged last block
    ("f32", (2, 4, 96, 40), (192, 160)),        # both pairs merged
    ("f32", (2, 4, 96, 40), (96, 320)),         # not neighbours' products: the root's
])
def test_the_host_walks_the_dimensions_a_root_bitcast_merges(ctx, dtype, heads, out):
    """A transformer's heads merged back as XLA:CPU leaves it: a copy into
    a transposed layout's default one, bitcast to merge the last two
    dimensions. On the CPU target the threads walk the copy's dimensions
    (loop.host_walked_dims): the loop's map has the operand's four
    results, the root's index their linear combination, where XLA:GPU's
    kernel walks the root's three. A root bitcast that does not only
    merge neighbouring dimensions keeps the root's. Every element numpy's,
    bit for bit."""
    import ml_dtypes
    np_type = {"bf16": ml_dtypes.bfloat16, "f32": np.float32}[dtype]
    b, h, s, d = heads
    text = lambda dims, layout="": f"{dtype}[{','.join(map(str, dims))}]{layout}"  # noqa: E731
    walked = out[0] in (b, b * s)
    fusion = _loop_fusion(
        [text(heads)],
        f"t = {text((b, s, h, d), '{3,1,2,0}')} transpose(p0), dimensions={{0,2,1,3}}\n"
        f"c = {text((b, s, h, d))} copy(t)\nROOT r = {text(out)} bitcast(c)", text(out))

    def loop_results(kernel) -> int:
        maps = dict(re.findall(r"^(#indexing_map\d*) = (.*)$", kernel.text, re.M))
        loop_map = re.search(r"xla_gpu\.loop .* in (#indexing_map\d*)", kernel.text).group(1)
        return maps[loop_map].split("->")[1].split(", domain")[0].count(",") + 1

    host = emit_kernel(fusion, host=True)
    assert loop_results(emit_kernel(fusion)) == len(out)
    assert loop_results(host) == (4 if walked else len(out))
    x = np.random.default_rng(5).standard_normal(heads).astype(np_type)
    got = np.zeros(out, np_type)
    CpuKernel(host)(x, got)
    np.testing.assert_array_equal(got, np.transpose(x, (0, 2, 1, 3)).reshape(out))


@pytest.mark.parametrize("ty, operand, window, out, row_launch", [
    # XLA:CPU's integer column sum: 32x1 windows, then a reduce.
    ("s32", (1024, 33), "size=32x1 stride=32x1", (32, 33), True),
    # A max pool over NHWC: windows over H and W, one channel each.
    ("f32", (2, 16, 16, 64), "size=1x3x3x1 stride=1x2x2x1 pad=0_0x1_1x1_1x0_0",
     (2, 8, 8, 64), True),
    # Windows along the minor dimension (1x32: XLA:CPU's integer row sum),
    # padded or strided there, or rows shorter than a warp: XLA's launch.
    ("s32", (64, 1024), "size=1x32 stride=1x32", (64, 32), False),
    ("f32", (300, 100), "size=2x1 pad=0_0x1_1", (299, 102), False),
    ("f32", (300, 100), "size=2x1 stride=1x2", (299, 50), False),
    ("s32", (1024, 16), "size=32x1 stride=32x1", (32, 16), False),
])
def test_the_host_gives_windows_across_rows_a_block_a_row(ctx, ty, operand, window, out,
                                                          row_launch):
    """emit_kernel(host=True) on a reduce-window whose windows lie across
    rows (one element wide along the minor dimension, stride 1, unpadded:
    loop._windows_across_rows): a block a row, its lanes reading rows of
    the operand side by side at each step of the window. The bits are
    those of XLA:GPU's launch."""
    dims = lambda d: ",".join(map(str, d))
    init = "0" if ty == "s32" else "-inf"
    op = "add" if ty == "s32" else "maximum"
    text = (f"HloModule m\n\nr {{\n  a = {ty}[] parameter(0)\n  b = {ty}[] parameter(1)\n"
            f"  ROOT c = {ty}[] {op}(a, b)\n}}\n\nfused {{\n"
            f"  p0 = {ty}[{dims(operand)}] parameter(0)\n  z = {ty}[] constant({init})\n"
            f"  ROOT w = {ty}[{dims(out)}] reduce-window(p0, z), window={{{window}}}, "
            f"to_apply=r\n}}\n\nENTRY e {{\n  p0 = {ty}[{dims(operand)}] parameter(0)\n"
            f"  ROOT f = {ty}[{dims(out)}] fusion(p0), kind=kLoop, calls=fused\n}}\n")
    fusion = find_fusion(parse_hlo(text))
    launch = (int(np.prod(out[:-1])), out[-1]) if row_launch else None
    _assert_host_row_launch(fusion, out, launch, np.int32 if ty == "s32" else np.float32, seed=7)


@pytest.mark.parametrize("body, operand, out, launch", [
    # A flip along W of NHWC images, 3 channels: rows of 672 (XLA's 1 a
    # thread at this size), and with XLA's 4 a thread.
    ("  ROOT r = f32[2,6,224,3] reverse(p0), dimensions={2}", (2, 6, 224, 3), (2, 6, 224, 3),
     (12, 672)),
    ("  ROOT r = f32[16,224,224,3] reverse(p0), dimensions={2}", (16, 224, 224, 3),
     (16, 224, 224, 3), (3584, 168)),
    # A zero pad of H and W: rows of 678, which 4 does not divide.
    ("  z = f32[] constant(0)\n"
     "  ROOT p = f32[2,8,226,3] pad(p0, z), padding=0_0x1_1x1_1x0_0", (2, 6, 224, 3),
     (2, 8, 226, 3), (16, 678)),
    # A crop along W, 8 channels: rows of 64 a thread an element (4 would
    # leave 16 threads).
    ("  ROOT s = f32[3,4,8,8] slice(p0), slice={[0:3], [0:4], [2:10], [0:8]}", (3, 4, 12, 8),
     (3, 4, 8, 8), (12, 64)),
    # Rows of more elements than a block has threads (1536): XLA's 4 a
    # thread next to each other (the CPU pipeline folds them into 1536
    # threads).
    ("  ROOT r = f32[8,64,512,3] reverse(p0), dimensions={2}", (8, 64, 512, 3),
     (8, 64, 512, 3), (512, 384)),
    # Such rows that XLA's 1 a thread (a small output) or its 4 (a pad to
    # 514 pixels of 3) does not make fit, a flip along H (not the second
    # minor dimension) or a 32-wide minor dimension: not.
    ("  ROOT r = f32[2,4,400,3] reverse(p0), dimensions={2}", (2, 4, 400, 3), (2, 4, 400, 3),
     None),
    ("  z = f32[] constant(0)\n"
     "  ROOT p = f32[8,66,514,3] pad(p0, z), padding=0_0x1_1x1_1x0_0", (8, 64, 512, 3),
     (8, 66, 514, 3), None),
    ("  ROOT r = f32[2,6,224,3] reverse(p0), dimensions={1}", (2, 6, 224, 3), (2, 6, 224, 3),
     None),
])
def test_the_host_gives_pixel_rows_shifted_along_w_a_block_a_row(ctx, body, operand, out,
                                                                 launch):
    """emit_kernel(host=True) on a loop fusion that pads, slices or
    reverses along the second minor dimension where the minor one is under
    32 elements (W and C of NHWC images): a block a row of both, 32 to
    1024 elements (loop._host_pixel_row_launch), or up to 4096 where
    XLA's 4 a thread divides the row, where XLA's blocks of 512 elements
    cut the rows; otherwise XLA's launch. The bits are those of XLA:GPU's
    launch."""
    dims = lambda d: ",".join(map(str, d))
    text = (f"HloModule m\n\nfused {{\n  p0 = f32[{dims(operand)}] parameter(0)\n{body}\n}}\n\n"
            f"ENTRY e {{\n  p0 = f32[{dims(operand)}] parameter(0)\n"
            f"  ROOT f = f32[{dims(out)}] fusion(p0), kind=kLoop, calls=fused\n}}\n")
    fusion = find_fusion(parse_hlo(text))
    _assert_host_row_launch(fusion, out, launch, seed=8)
    # Neighbours, which fold (apart and folded, a block's lanes scatter).
    assert not make_emitter(fusion, host=True).launch.unroll_apart


def test_the_host_keeps_packed_pixel_rows_elements_apart(ctx):
    """A row of more elements than a block has threads whose output packs
    its elements under a byte (s4): -xla-gpu-fold-loops-into-threads does
    not fold a thread's elements (each byte is one thread's), so they lie
    a block's threads apart, each step a lane loop along the row
    (host_row_map); the flip is numpy's."""
    text = ("HloModule m\n\nfused {\n  p0 = s4[8,64,512,3] parameter(0)\n"
            "  ROOT r = s4[8,64,512,3] reverse(p0), dimensions={2}\n}\n\n"
            "ENTRY e {\n  p0 = s4[8,64,512,3] parameter(0)\n"
            "  ROOT f = s4[8,64,512,3] fusion(p0), kind=kLoop, calls=fused\n}\n")
    fusion = find_fusion(parse_hlo(text))
    host = make_emitter(fusion, host=True)
    assert host.launch.unroll_apart and host.launch.unroll_factor == 4
    assert host.launch.dims.thread_counts_per_block == (384, 1, 1)
    assert "th_x floordiv 3 + unroll_id * 128" in str(host.thread_to_output_map())
    x = np.random.RandomState(9).randint(-8, 8, (8, 64, 512, 3)).astype(ml_dtypes.int4)
    got = np.zeros_like(x)
    CpuKernel(emit_kernel(fusion, host=True))(x, got)
    np.testing.assert_array_equal(got.astype(np.int8), x[:, :, ::-1].astype(np.int8))


@pytest.mark.parametrize("body, operand, out, launch", [
    # A nearest upsampling by 2 of NHWC images of 3 channels ([N,H,2,W,2,C]
    # as [N,2H,2W,C]): rows of 48 a thread an element (XLA's 1 a thread
    # at this size), and of 672 with XLA's 4 a thread.
    ("  b = f32[2,8,2,8,2,3] broadcast(p0), dimensions={0,1,3,5}\n"
     "  ROOT r = f32[2,16,16,3] bitcast(b)", (2, 8, 8, 3), (2, 16, 16, 3), (32, 48)),
    ("  b = f32[16,112,2,112,2,3] broadcast(p0), dimensions={0,1,3,5}\n"
     "  ROOT r = f32[16,224,224,3] bitcast(b)", (16, 112, 112, 3), (16, 224, 224, 3),
     (3584, 168)),
    # A pixel shuffle (depth to space) into rows of 112 pixels of 16
    # channels, 1792 elements: 4 a thread, folded into 1792 threads.
    ("  b = f32[8,56,56,2,2,16] bitcast(p0)\n"
     "  t = f32[8,56,2,56,2,16]{5,4,2,3,1,0} transpose(b), dimensions={0,1,3,2,4,5}\n"
     "  c = f32[8,56,2,56,2,16] copy(t)\n"
     "  ROOT r = f32[8,112,112,16] bitcast(c)", (8, 56, 56, 64), (8, 112, 112, 16), (896, 448)),
    # 5 channels: pixel tid / 10, over kMaxLanePeriod (warps of 10 lanes).
    ("  b = f32[2,6,2,12,2,5] broadcast(p0), dimensions={0,1,3,5}\n"
     "  ROOT r = f32[2,12,24,5] bitcast(b)", (2, 6, 12, 5), (2, 12, 24, 5), (24, 120)),
    # A value a channel: the lane mod 3 along the row.
    ("  c = f32[3] constant({0.5, -2, 3})\n"
     "  b = f32[2,6,40,3] broadcast(c), dimensions={3}\n"
     "  ROOT m = f32[2,6,40,3] multiply(p0, b)", (2, 6, 40, 3), (2, 6, 40, 3), (12, 120)),
    # Elementwise, a value a pixel broadcast along the channels, and a
    # bitcast of the major dimensions alone: XLA's launch.
    ("  ROOT e = f32[2,6,224,3] exponential(p0)", (2, 6, 224, 3), (2, 6, 224, 3), None),
    ("  ROOT b = f32[2,6,224,3] broadcast(p0), dimensions={0,1,2}", (2, 6, 224), (2, 6, 224, 3),
     None),
    ("  ROOT b = f32[12,224,3] bitcast(p0)", (2, 6, 224, 3), (12, 224, 3), None),
])
def test_the_host_gives_regrouped_pixel_rows_a_block_a_row(ctx, body, operand, out, launch):
    """emit_kernel(host=True) on a loop fusion that reads W and C of NHWC
    images at other indices than the output's by a broadcast or a bitcast
    (loop._regroups_pixels: a nearest upsampling, a value a channel): a
    block a row of both, as a pad along W is; otherwise XLA's launch. The
    bits are those of XLA:GPU's launch."""
    test_the_host_gives_pixel_rows_shifted_along_w_a_block_a_row(ctx, body, operand, out, launch)


def test_the_host_reduces_rows_shorter_than_a_warp_a_warp_a_row(ctx):
    """Within host_short_rows() (xla_gpu.jax.jit's kernels), a row
    reduction of 17 to 31 elements is the reduction emitter's, a warp a
    row (XLA's heuristic, and XLA:GPU, leave it to the loop emitter: a
    thread a row); rows of 16 or fewer keep XLA's choice. The sums are
    XLA:CPU's within f32's rounding."""
    from xla_gpu.emitters.fusion_analysis import host_short_rows
    fusion = find_fusion(parse_hlo(_sum_over((1000, 24), (1,))))
    assert isinstance(make_emitter(fusion, host=True), LoopEmitter)
    with host_short_rows():
        emitter = make_emitter(fusion, host=True)
        assert isinstance(emitter, ReductionEmitter)
        assert emitter.num_threads == [8, 32]
        kernel = emit_kernel(fusion, host=True)
        short = find_fusion(parse_hlo(_sum_over((1000, 12), (1,))))
        assert isinstance(make_emitter(short, host=True), LoopEmitter)
    out, want = _sum_and_xla(fusion, kernel, 5)
    np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-5 * np.abs(want).max())


@pytest.mark.parametrize("hlo_type, bits", [
    ("f32", [0x7FC00001, 0x80000000, 0x00000001, 0x7F800000, 0x40490FDB, 0xBF800000]),
    ("bf16", [0x7FC1, 0x8000, 0x0001, 0xFF80, 0x4049, 0x3F80]),
    ("f16", [0x7E01, 0x8000, 0x0001, 0x7C00, 0x4248, 0xBC00]),
    ("f64", [0x7FF8000000000001, 1 << 63, 1, 0x7FF0000000000000,
             0x400921FB54442D18, 0xBFF0000000000000]),
    ("s8", [-128, -1, 0, 1, 77, 127]),
    ("u32", [0, 1, 0x7FFFFFFF, 0x80000000, 0xDEADBEEF, 0xFFFFFFFF]),
])
def test_array_constants_keep_their_bits(ctx, hlo_type, bits):
    """A fusion's array constant is emitted from its values' bytes (a
    dense attribute of the element type's storage; a table of 2M floats
    took 0.95 s to emit as text): every bit kept, a NaN's payload, -0,
    denormals, infinities."""
    from xla_gpu.hlo import Literal
    text = (f"HloModule m\n\nfused {{\n  p0 = pred[2,3] parameter(0)\n"
            f"  c = {hlo_type}[2,3] constant({{{{0, 0, 0}}, {{0, 0, 0}}}})\n"
            f"  z = {hlo_type}[2,3] constant({{{{0, 0, 0}}, {{0, 0, 0}}}})\n"
            f"  ROOT s = {hlo_type}[2,3] select(p0, c, z)\n}}\n\n"
            f"ENTRY e {{\n  p0 = pred[2,3] parameter(0)\n"
            f"  ROOT f = {hlo_type}[2,3] fusion(p0), kind=kLoop, calls=fused\n}}\n")
    fusion = find_fusion(parse_hlo(text))
    const = fusion.fused_computation.instruction("c")
    etype = const.shape.element_type
    width = 8 * np.dtype(etype.dtype).itemsize
    storage = np.array(bits, np.int8 if hlo_type == "s8" else f"u{width // 8}")
    values = storage.view(etype.dtype).reshape(2, 3)
    const.literal = Literal.of(values, etype)
    got = np.zeros((2, 3), etype.dtype)
    CpuKernel(emit_kernel(fusion, host=True))(np.ones((2, 3), bool), got)
    np.testing.assert_array_equal(got.view(storage.dtype).reshape(-1), storage)
