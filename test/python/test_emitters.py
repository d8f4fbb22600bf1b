"""The partitioner and the loop emitter from Python."""

from pathlib import Path

import ml_dtypes
import numpy as np
import pytest
from mlir import ir

from xla_gpu.emitters import (EmitterError, device_named, emit_fusion, emit_kernel, find_fusion,
                              loop_launch_dims, make_emitter)
from xla_gpu.emitters.partitioner import partition
from xla_gpu.hlo import parse_hlo, parse_shape
from xla_gpu.runtime import CpuKernel

HLO = Path(__file__).resolve().parents[1] / "hlo"


def _fused(body: str, params: str):
    text = f"HloModule m\nfused {{\n{body}\n}}\nENTRY e {{\n{params}\n}}\n"
    return find_fusion(parse_hlo(text))


def test_gelu_is_one_subgraph(ctx):
    fusion = find_fusion(parse_hlo((HLO / "gelu.hlo").read_text()))
    subgraphs = partition(fusion.fused_computation)
    assert [s.name for s in subgraphs] == ["gelu_multiply_0"]
    # Everything but the parameter is emitted in it.
    assert len(subgraphs[0].instructions) == len(fusion.fused_computation.instructions) - 1


def test_reads_at_different_indices_split(ctx):
    fusion = _fused("p0 = f32[20,20] parameter(0)\nlog = f32[20,20] log(p0)\n"
                    "t = f32[20,20] transpose(log), dimensions={1,0}\n"
                    "ROOT add = f32[20,20] add(log, t)",
                    "a = f32[20,20] parameter(0)\n"
                    "ROOT f = f32[20,20] fusion(a), kind=kLoop, calls=fused")
    names = [[i.name for i in s.instructions] for s in partition(fusion.fused_computation)]
    # The spec's picture: three functions of one instruction each.
    assert names == [["add"], ["t"], ["log"]]


def test_users_reading_a_split_instruction_differently_are_split(ctx):
    # Both slices read `e` at other indices: each is its own function, so no
    # function evaluates `e` at two indices.
    fusion = _fused("p0 = f32[8] parameter(0)\ne = f32[8] exponential(p0)\n"
                    "lo = f32[4] slice(e), slice={[0:4]}\nhi = f32[4] slice(e), slice={[4:8]}\n"
                    "n = f32[4] negate(hi)\nROOT m = f32[4] multiply(lo, n)",
                    "a = f32[8] parameter(0)\n"
                    "ROOT f = f32[4] fusion(a), kind=kLoop, calls=fused")
    names = [[i.name for i in s.instructions] for s in partition(fusion.fused_computation)]
    assert names == [["m", "n"], ["hi"], ["lo"], ["e"]]


def test_reads_at_the_same_index_stay_together(ctx):
    fusion = _fused("p0 = f32[8] parameter(0)\ne = f32[8] exponential(p0)\n"
                    "n = f32[8] negate(e)\nROOT m = f32[8] multiply(e, n)",
                    "a = f32[8] parameter(0)\n"
                    "ROOT f = f32[8] fusion(a), kind=kLoop, calls=fused")
    assert len(partition(fusion.fused_computation)) == 1


@pytest.mark.parametrize("shape, device, expected", [
    ("bf16[6,512,4096]", "h100", (128, 24576, 4)),   # the spec's launch
    # Fewer elements than the GPU's resident threads: one per thread.
    ("f32[1000]", "h100", (128, 8, 1)),
    ("f32[7,9]", "h100", (63, 1, 1)),
    ("f32[2]", "h100", (2, 1, 1)),
    # 132 SMs x 2048 threads = 270336 elements unroll on an H100; an L4
    # (58 x 1536 = 89088) unrolls at 100000 already.
    ("f32[100000]", "h100", (128, 782, 1)),
    ("f32[100000]", "l4", (128, 196, 4)),
    ("f32[270336]", "h100", (128, 528, 4)),
    ("f32[270338]", "h100", (128, 1057, 2)),
    # 4- and 2-bit types: a whole packed byte per thread.
    ("s4[9]", "h100", (5, 1, 2)),
    ("u2[9]", "h100", (3, 1, 4)),
])
def test_launch_dims(shape, device, expected):
    d = loop_launch_dims(parse_shape(shape), device_named(device))
    assert (d.threads, d.blocks, d.unroll_factor) == expected


def test_expensive_ops_are_not_unrolled(ctx):
    big = "f32[6,512,4096]"
    for op, unroll in [("exponential", 4), ("sine", 1), ("tanh", 4)]:
        fusion = _fused(f"p0 = {big} parameter(0)\nROOT r = {big} {op}(p0)",
                        f"a = {big} parameter(0)\n"
                        f"ROOT f = {big} fusion(a), kind=kLoop, calls=fused")
        assert make_emitter(fusion).launch.unroll_factor == unroll, op


def test_multi_output_fusion(ctx):
    fusion = _fused("p0 = f32[6] parameter(0)\ne = f32[6] exponential(p0)\n"
                    "n = f32[6] negate(p0)\nROOT t = (f32[6], f32[6]) tuple(e, n)",
                    "a = f32[6] parameter(0)\n"
                    "ROOT f = (f32[6], f32[6]) fusion(a), kind=kLoop, calls=fused")
    module = emit_fusion(fusion)
    x = np.linspace(-1, 1, 6).astype(np.float32)
    e, n = np.zeros(6, np.float32), np.zeros(6, np.float32)
    CpuKernel(str(module))(x, e, n)
    np.testing.assert_allclose(e, np.exp(x), rtol=1e-6)
    np.testing.assert_array_equal(n, -x)


def test_unsupported_opcode_names_the_instruction(ctx):
    fusion = _fused("p0 = f32[8] parameter(0)\nROOT s = f32[8] sort(p0), dimensions={0}, "
                    "to_apply=fused",
                    "a = f32[8] parameter(0)\n"
                    "ROOT f = f32[8] fusion(a), kind=kLoop, calls=fused")
    with pytest.raises(EmitterError, match=r"cannot emit s \(sort\)"):
        emit_fusion(fusion)


EMITTER_TESTS = sorted((HLO.parent / "emitters" / "loop").glob("*.hlo"))
# XLA's folder names for the reduction emitters' tests (headerless HLO).
# (input_slices/packed.hlo is a fusion no emitter takes: its test checks the error.)
HERO_EMITTER_TESTS = sorted(p for d in ("reduce_*", "transpose", "concatenate", "input_slices",
                                         "scatter", "dynamic_update_slice")
                            for p in (HLO.parent / "emitters").glob(f"{d}/*.hlo")
                            if p.name != "packed.hlo")


@pytest.mark.parametrize("path", [p for p in EMITTER_TESTS if p.name != "unsupported.hlo"],
                         ids=lambda p: p.name)
@pytest.mark.parametrize("sm", [80, 90])
def test_every_loop_test_kernel_assembles(ctx, path, sm):
    """Every loop emitter test's kernel compiles to PTX that ptxas accepts."""
    from xla_gpu import pipelines, ptx
    if ptx.find_ptxas() is None or pipelines.find_libdevice() is None:
        pytest.skip("ptxas/libdevice (CUDA) is not installed on this machine")
    text = path.read_text()
    source = (HLO / "gelu.hlo").read_text() if "HloModule" not in text else text
    module = emit_fusion(find_fusion(parse_hlo(source)))
    opts = pipelines.PipelineOptions(compute_capability=(sm // 10, sm % 10))
    code = pipelines.compile_to_ptx(ir.Module.parse(str(module)), opts)
    result = ptx.ptxas_check(code, opts.chip)
    assert result.ok, result.log


# What each hero emitter's kernels must contain, but for the files named
# (the loop emitter takes those, or they need no atomics).
HERO_MARKERS = {"reduce": ("xla_gpu.shuffle_reduce", {"max_12.hlo", "empty_input.hlo"}),
                "transpose": ("xla_gpu.allocate_shared", {"fallback.hlo"}),
                "concatenate": ("xla_gpu.loop", set()),
                "input": ("xla_gpu.predicated_insert", set()),
                "scatter": ("xla_gpu.atomic_rmw", {"unique_indices.hlo"}),
                "dynamic": ("xla_gpu.loop", {"empty_update.hlo"})}


@pytest.mark.parametrize("path", HERO_EMITTER_TESTS, ids=lambda p: f"{p.parent.name}/{p.name}")
@pytest.mark.parametrize("sm", [80, 90])
def test_every_hero_emitter_test_kernel_assembles(ctx, path, sm):
    """Every reduction, transpose and concatenate emitter test's kernel
    (shuffles, shared tiles, barriers) compiles to PTX that ptxas accepts;
    shared tiles become .shared memory."""
    from xla_gpu import pipelines, ptx
    if ptx.find_ptxas() is None or pipelines.find_libdevice() is None:
        pytest.skip("ptxas/libdevice (CUDA) is not installed on this machine")
    module = str(emit_fusion(find_fusion(parse_hlo(path.read_text()))))
    marker, loop_fallbacks = HERO_MARKERS[path.parent.name.split("_")[0]]
    assert (marker in module) != (path.name in loop_fallbacks)
    opts = pipelines.PipelineOptions(compute_capability=(sm // 10, sm % 10))
    code = pipelines.compile_to_ptx(ir.Module.parse(module), opts)
    assert (".shared" in code) == ("xla_gpu.allocate_shared" in module)
    result = ptx.ptxas_check(code, opts.chip)
    assert result.ok, result.log


HERO_CASES = {
    # A binary op is a hero itself (XLA follows one-operand ops only).
    "binary": ("p0 = f32[8] parameter(0)\ne = f32[8] exponential(p0)\n"
               "ROOT m = f32[8] multiply(e, e)", "f32[8]", "f32[8]", ["m"], "loop"),
    # Swapping two large dimensions: the transpose emitter's.
    "tiled transpose": ("p0 = f32[64,32] parameter(0)\n"
                        "t = f32[32,64] transpose(p0), dimensions={1,0}\n"
                        "ROOT e = f32[32,64] exponential(t)", "f32[64,32]", "f32[32,64]",
                        ["t"], "transpose"),
    # Moving a unit dimension is a bitcast: the hero lies beyond.
    "bitcast transpose": ("p0 = f32[1,32] parameter(0)\ne = f32[1,32] exponential(p0)\n"
                          "ROOT t = f32[32,1] transpose(e), dimensions={1,0}", "f32[1,32]",
                          "f32[32,1]", ["e"], "loop"),
    # XLA looks harder for a transpose: through elementwise ops of several
    # operands, when it is the only one.
    "transpose under a binary op": (
        "p0 = f32[64,32] parameter(0)\nt = f32[32,64] transpose(p0), dimensions={1,0}\n"
        "c = f32[] constant(2)\nb = f32[32,64] broadcast(c), dimensions={}\n"
        "ROOT m = f32[32,64] multiply(t, b)", "f32[64,32]", "f32[32,64]", ["t"], "transpose"),
    "two transposes": (
        "p0 = f32[64,64] parameter(0)\nt = f32[64,64] transpose(p0), dimensions={1,0}\n"
        "n = f32[64,64] negate(p0)\nu = f32[64,64] transpose(n), dimensions={1,0}\n"
        "ROOT m = f32[64,64] multiply(t, u)", "f32[64,64]", "f32[64,64]", ["m"], "loop"),
    # A non-elementwise op after the transpose (here a slice) hides it.
    "transpose under a slice": (
        "p0 = f32[64,32] parameter(0)\nt = f32[32,64] transpose(p0), dimensions={1,0}\n"
        "c = f32[] constant(2)\nb = f32[32,64] broadcast(c), dimensions={}\n"
        "m = f32[32,64] multiply(t, b)\n"
        "ROOT s = f32[16,64] slice(m), slice={[0:16], [0:64]}", "f32[64,32]", "f32[16,64]",
        ["s"], "loop"),
}


@pytest.mark.parametrize("name", sorted(HERO_CASES))
def test_heroes(ctx, name):
    from xla_gpu.emitters import analyze_fusion
    body, param, out, heroes, kind = HERO_CASES[name]
    fusion = _fused(body, f"a = {param} parameter(0)\n"
                          f"ROOT f = {out} fusion(a), kind=kLoop, calls=fused")
    a = analyze_fusion(fusion)
    assert [h.name for h in a.heroes] == heroes and a.kind.value == kind


def test_reduction_hero_is_found_through_trivial_ops(ctx):
    from xla_gpu.emitters import analyze_fusion
    add = "add {\nx = f32[] parameter(0)\ny = f32[] parameter(1)\nROOT s = f32[] add(x, y)\n}\n"
    # convert(negate(reduce)): the reduce decides.
    text = (add + "fused {\np = f32[8,16] parameter(0)\nz = f32[] constant(0)\n"
            "r = f32[8] reduce(p, z), dimensions={1}, to_apply=add\nn = f32[8] negate(r)\n"
            "ROOT c = f16[8] convert(n)\n}\nENTRY e {\np = f32[8,16] parameter(0)\n"
            "ROOT f = f16[8] fusion(p), kind=kInput, calls=fused\n}\n")
    a = analyze_fusion(find_fusion(parse_hlo("HloModule m\n" + text)))
    assert [h.name for h in a.heroes] == ["r"] and a.kind.value == "reduction"


def test_dynamic_update_slice_is_in_place(ctx):
    """The in-place emitter writes the update's box, the start clamped;
    the rest of the output is the operand (the runtime starts the aliased
    output as a copy of it)."""
    fusion = _fused("p0 = f32[8] parameter(0)\nu = f32[3] parameter(1)\ni = s32[] parameter(2)\n"
                    "ROOT d = f32[8] dynamic-update-slice(p0, u, i)",
                    "a = f32[8] parameter(0)\nb = f32[3] parameter(1)\nc = s32[] parameter(2)\n"
                    "ROOT f = f32[8] fusion(a, b, c), kind=kLoop, calls=fused")
    from xla_gpu.emitters import analyze_fusion
    assert analyze_fusion(fusion).kind.value == "in-place dynamic-update-slice"
    kernel = CpuKernel(str(emit_fusion(fusion)))
    x, u = np.arange(8, dtype=np.float32), np.array([-1, -2, -3], np.float32)
    for start, at in [(2, 2), (7, 5), (-4, 0)]:
        out = np.zeros(8, np.float32)
        kernel(x, u, np.array(start, np.int32), out)
        want = x.copy()
        want[at:at + 3] = u
        np.testing.assert_array_equal(out, want)


# What the emitters cannot take yet in jax's optimized module, by fusion.
JAX_UNSUPPORTED = {
    "ynn_fusion": "opcode 'dot' is not supported",
}


def test_every_loop_fusion_of_a_jax_module_matches_xla(ctx):
    """The fusions XLA made of a real jax program (test/hlo/jax_optimized.hlo:
    bitcasts with layouts, gathers, dynamic slices, pads, iotas, selects, a
    reduce-window) run
    on the CPU target and match XLA running the same fused computation."""
    from xla_gpu.reference import run_with_xla
    from xla_gpu.tools.test_correctness import errors, random_input, reference_text

    module = parse_hlo((HLO / "jax_optimized.hlo").read_text())
    checked = 0
    for fusion in module.fusions():
        comp = fusion.fused_computation
        if fusion.name in JAX_UNSUPPORTED:
            with pytest.raises(EmitterError, match=JAX_UNSUPPORTED[fusion.name]):
                emit_fusion(fusion)
            continue
        rng = np.random.RandomState(0)
        inputs = [random_input(p.shape, rng) for p in comp.parameters]
        roots = comp.root.operands if comp.root.opcode == "tuple" else [comp.root]
        outputs = [np.zeros(r.shape.dims, r.shape.element_type.dtype) for r in roots]
        CpuKernel(str(emit_fusion(fusion)))(*inputs, *outputs)
        for got, want in zip(outputs, run_with_xla(reference_text(comp), inputs)):
            diff, rel = errors(got, want)
            assert ((diff <= 1e-6) | (rel <= 1e-6)).all(), fusion.name
        checked += 1
    assert checked == len(module.fusions()) - len(JAX_UNSUPPORTED) == 13


def test_every_elemental_opcode_is_in_the_opcode_table():
    """The partitioner asks the indexing analysis about every user, and the
    verifier checks every elementwise op, both from the one opcode table:
    an opcode the elemental emitter has must be in it (`cosine` was once
    spelled `cos` in one of four tables, which only failed once a cosine
    had an operand inside the fusion)."""
    from xla_gpu.emitters.elemental import DISPATCH, ELEMENTAL
    from xla_gpu.hlo.opcodes import OPCODES, arity
    from xla_gpu.indexing.analysis import _RULES

    assert sorted(op for op in DISPATCH if op not in OPCODES) == []
    assert sorted(op for op in ELEMENTAL if arity(op) is None and op not in _RULES) == []
    # Every elementwise opcode but map has a fixed number of operands.
    assert sorted(n for n, o in OPCODES.items() if o.elementwise and o.arity is None) == ["map"]


@pytest.mark.parametrize("body", [
    # One user reading e at two indices: directly and through a reverse.
    "e = f32[8] exponential(p0)\nr = f32[8] reverse(e), dimensions={0}\n"
    "ROOT a = f32[8] add(e, r)",
    # One user reading e twice, at two different output positions.
    "e = f32[4] exponential(p0)\nROOT c = f32[8] concatenate(e, e), dimensions={0}",
])
def test_one_user_reading_at_two_indices_splits(ctx, body):
    """The partitioner's 'same indexing' rule counts every read, not every
    user: e, read through two different maps, roots its own function (else
    it would be recomputed, or worse, emitted at one of the two indices)."""
    params = "p0 = f32[8] parameter(0)" if "reverse" in body else "p0 = f32[4] parameter(0)"
    out = "f32[8]"
    fusion = _fused(f"{params}\n{body}", f"a = {params.split('=')[1].split()[0]} parameter(0)\n"
                                         f"ROOT f = {out} fusion(a), kind=kLoop, calls=fused")
    subgraphs = partition(fusion.fused_computation)
    e_owner = [s for s in subgraphs if any(i.name == "e" for i in s.instructions)]
    assert len(e_owner) == 1 and e_owner[0].roots[0].name == "e", \
        [[i.name for i in s.instructions] for s in subgraphs]
    x = np.linspace(-1, 1, 8 if "reverse" in body else 4).astype(np.float32)
    out_array = np.zeros(8, np.float32)
    CpuKernel(emit_kernel(fusion))(x, out_array)
    e = np.exp(x)
    want = e + e[::-1] if "reverse" in body else np.concatenate([e, e])
    np.testing.assert_allclose(out_array, want, rtol=1e-6)


@pytest.mark.parametrize("etype,atom80,atom90", [
    ("f32", "atom.global.add.f32", "atom.global.add.f32"),
    ("s32", "atom.global.add.u32", "atom.global.add.u32"),
    ("f16", "atom.global.add.noftz.f16", "atom.global.add.noftz.f16"),
    ("bf16", "cas.b32", "atom.global.add.noftz.bf16"),
    ("s8", "cas.b32", "cas.b32"), ("s4", "cas.b32", "cas.b32"),
    ("c64", "cas.b64", "cas.b64")])
@pytest.mark.parametrize("sm", [80, 90])
def test_scatter_atomics_in_ptx(ctx, etype, atom80, atom90, sm):
    """Scatter-add's atomics: native ones for 32-bit values, f16 (sm_70 on)
    and bf16 (sm_90); the other sub-word ones (bf16 before sm_90, s8,
    packed s4) a compare-and-swap loop on the enclosing 32-bit word;
    complex<f32> one 64-bit compare-and-swap."""
    atom = atom80 if sm == 80 else atom90
    from xla_gpu import pipelines, ptx
    if ptx.find_ptxas() is None:
        pytest.skip("ptxas (CUDA) is not installed on this machine")
    text = (HLO.parent / "emitters" / "scatter" / "add.hlo").read_text().replace("f32", etype)
    module = emit_fusion(find_fusion(parse_hlo(text)))
    opts = pipelines.PipelineOptions(compute_capability=(sm // 10, sm % 10))
    code = pipelines.compile_to_ptx(ir.Module.parse(str(module)), opts)
    atoms = {line.split()[0] for line in code.splitlines() if line.strip().startswith("atom.")}
    assert any(atom in a for a in atoms), atoms
    result = ptx.ptxas_check(code, opts.chip)
    assert result.ok, result.log


def test_in_place_update_writes_only_the_update(ctx):
    """The KV-cache update in one buffer (the cache is the output, as XLA's
    buffer assignment makes it): every element outside the update's box
    keeps the sentinel it had, the box holds the token; the kernel's grid
    is the update's 64 x 128 elements, not the cache's 8M."""
    path = HLO.parent / "emitters" / "dynamic_update_slice" / "kv_cache.hlo"
    kernel = emit_kernel(find_fusion(parse_hlo(path.read_text())))
    assert kernel.aliases == {0: 0}
    assert kernel.launch.num_blocks * kernel.launch.num_threads_per_block == 64 * 128
    cpu = CpuKernel(kernel)
    bf16 = ml_dtypes.bfloat16
    cache = np.full((64, 1024, 128), 7, bf16)
    token = np.arange(64 * 128).reshape(64, 1, 128).astype(bf16)
    cpu(cache, token, np.array(300, np.int32), cache)
    want = np.full((64, 1024, 128), 7, bf16)
    want[:, 300:301, :] = token
    np.testing.assert_array_equal(cache.view(np.uint16), want.view(np.uint16))
    # In separate buffers the output starts as a copy of the cache (XLA's
    # copy when it cannot share them); the cache itself stays as it was.
    out = np.zeros_like(cache)
    cpu(cache, -token, np.array(5000, np.int32), out)
    want[:, 1023:1024, :] = -token
    np.testing.assert_array_equal(out.view(np.uint16), want.view(np.uint16))
    assert (cache[:, 1023] == 7).all()


@pytest.mark.parametrize("shape, perm, order", [
    # 7 x 2 tiles: one group of all 7 rows of tiles.
    ((200, 64), (1, 0), ((1, 7, 2), (0, 2, 1))),
    # 12 x 3 tiles: groups of 6, with a batch dimension outside.
    ((3, 384, 96), (0, 2, 1), ((3, 2, 6, 3), (0, 1, 3, 2))),
    # 17 tile rows: no divisor in [2, 8] and too many for one group.
    ((544, 64), (1, 0), None),
    # The input's minor dimension has one tile: nothing to reorder.
    ((200, 20), (1, 0), None),
])
def test_transpose_block_order_runs_every_block(ctx, shape, perm, order):
    """The CPU runs a transpose's tiles in groups along the input's rows
    (TransposeEmitter.block_order); every block still runs once: the
    output is the transpose, also where the tile counts do not divide."""
    dims = ",".join(map(str, shape))
    out_shape = [shape[p] for p in perm]
    out_dims = ",".join(map(str, out_shape))
    permutation = ",".join(map(str, perm))
    fusion = _fused(f"p0 = f32[{dims}] parameter(0)\n"
                    f"t = f32[{out_dims}] transpose(p0), dimensions={{{permutation}}}\n"
                    f"ROOT n = f32[{out_dims}] negate(t)",
                    f"a = f32[{dims}] parameter(0)\n"
                    f"ROOT f = f32[{out_dims}] fusion(a), kind=kInput, calls=fused")
    kernel = emit_kernel(fusion)
    entry = next(op for op in kernel.module.body.operations if "sym_name" in op.attributes
                 and ir.StringAttr(op.attributes["sym_name"]).value == kernel.entry)
    if order is None:
        assert "xla.block_order" not in entry.attributes
    else:
        attr = ir.DictAttr(entry.attributes["xla.block_order"])
        assert (tuple(ir.DenseI64ArrayAttr(attr["tiles"])),
                tuple(ir.DenseI64ArrayAttr(attr["order"]))) == order
    x = np.random.RandomState(0).randn(*shape).astype(np.float32)
    out = np.full(out_shape, np.nan, np.float32)
    CpuKernel(kernel)(x, out)
    np.testing.assert_array_equal(out, -np.transpose(x, perm))
