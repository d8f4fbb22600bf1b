"""Consecutive parts of a split reduction over the same rows run as one
kernel (emitters/merged_kernel.py, xla_gpu.jax.jit's _merge_row_parts)."""

import re

import numpy as np
from mlir import ir

from xla_gpu.emitters import DEFAULT_DEVICE, emit_kernel
from xla_gpu.emitters.merged_kernel import merge_kernels, same_row_blocks
from xla_gpu.emitters.tree_reduction import split_reduction
from xla_gpu.hlo import parse_hlo
from xla_gpu.runtime import CpuKernel
from xla_gpu.runtime import cpu as cpu_runtime

from conftest import top_probability_fusion

REDUCERS = """add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT c = f32[] add(a, b)
}
"""


def _zeros(shape, dtype=np.float32):
    return cpu_runtime.aligned(np.zeros(shape, dtype))


def test_merged_parts_compute_the_parts_bits():
    """The three parts as one kernel (first, a barrier, second, a barrier,
    third): the results bit for bit those of the three kernels run one
    after the other, and one entry holding the barriers between them."""
    fusion = top_probability_fusion(512, 1000)
    with ir.Context():
        parts = split_reduction(fusion, 32, host=True, side_outputs=True)
        kernels = [emit_kernel(p, DEFAULT_DEVICE, host=True) for p in parts]
        assert len(kernels) == 3
        assert all(same_row_blocks(kernels[0], k) for k in kernels[1:])
        # The second reads x (shared) and the max (fed); the third x, the
        # max and the sum.
        two = merge_kernels(kernels[0], kernels[1], feeds={1: 0}, shared={0: 0})
        three = merge_kernels(two, kernels[2], feeds={1: 0, 2: 1}, shared={0: 0})
        assert len(three.parameters) == 1 and len(three.results) == 3
        text = three.text
        barriers = sum(k.text.count("xla_gpu.sync_threads") for k in kernels)
        assert text.count("xla_gpu.sync_threads") == barriers + 2
        assert sum(" private " not in line for line in text.splitlines()
                   if line.lstrip().startswith("func.func")) == 1
        separate = [CpuKernel(k) for k in kernels]
        merged = CpuKernel(three)
    x = cpu_runtime.aligned(np.random.default_rng(0).standard_normal((512, 1000), np.float32))
    m, t, top = _zeros(512), _zeros(512), _zeros(512)
    separate[0](x, m)
    separate[1](x, m, t)
    separate[2](x, m, t, top)
    outs = [_zeros(512) for _ in range(3)]
    merged(x, *outs)
    for want, got in zip((m, t, top), outs):
        np.testing.assert_array_equal(got.view(np.uint32), want.view(np.uint32))


def test_kernels_over_other_rows_are_not_merged():
    """A row reduction's part and a column reduction's kernel: other grids
    and thread maps."""
    column = f"""HloModule m

{REDUCERS}
fused {{
  x = f32[512,1000] parameter(0)
  z = f32[] constant(0)
  ROOT t = f32[1000] reduce(x, z), dimensions={{0}}, to_apply=add
}}

ENTRY main {{
  p0 = f32[512,1000] parameter(0)
  ROOT f = f32[1000] fusion(p0), kind=kInput, calls=fused
}}
"""
    with ir.Context():
        rows = emit_kernel(split_reduction(top_probability_fusion(512, 1000), 32, host=True)[0],
                           DEFAULT_DEVICE, host=True)
        cols = emit_kernel(parse_hlo(column).fusions()[0], DEFAULT_DEVICE, host=True)
        assert same_row_blocks(rows, rows)
        assert not same_row_blocks(rows, cols)


def test_kernels_without_barriers_of_their_own_merge_into_lane_loops():
    """Rows of 256, a warp a row: the parts' reductions need no barrier of
    their own. Merged, the exp + sum reads x as the max read it (one load
    after cse), and -xla-gpu-lower-kernel-to-cpu counts those values of an
    earlier phase as loads of a lane: its shuffle tree's lanes are
    computed in a loop over them (8 exps a lane), not each tree's 32 lanes
    by lane 0 of each warp (256 exps inline, vectorized across the rows:
    4x the time of the kernels). The bits are the kernels'."""
    from xla_gpu import pipelines
    rows, cols = 64, 256
    with ir.Context():
        parts = split_reduction(top_probability_fusion(rows, cols), 32, host=True,
                                side_outputs=True)
        kernels = [emit_kernel(p, DEFAULT_DEVICE, host=True) for p in parts]
        assert "xla_gpu.sync_threads" not in kernels[0].text
        assert all(same_row_blocks(kernels[0], k) for k in kernels[1:])
        two = merge_kernels(kernels[0], kernels[1], feeds={1: 0}, shared={0: 0})
        module = pipelines.parse_module(two.text)
        pipelines.run_pipeline(module, cpu_runtime.CPU_DEFAULT_OPTIONS,
                               stages=pipelines.CPU_STAGES)
        # Each exp's reduction to [-ln 2 / 2, ln 2 / 2] rounds once.
        assert str(module).count("llvm.intr.roundeven") == cols // 32
        separate = [CpuKernel(k) for k in kernels[:2]]
        merged = CpuKernel(two)
    x = cpu_runtime.aligned(np.random.default_rng(0).standard_normal((rows, cols), np.float32))
    m, t = _zeros(rows), _zeros(rows)
    separate[0](x, m)
    separate[1](x, m, t)
    outs = [_zeros(rows) for _ in range(2)]
    merged(x, *outs)
    for want, got in zip((m, t), outs):
        np.testing.assert_array_equal(got.view(np.uint32), want.view(np.uint32))


def test_a_part_that_reads_an_earlier_result_elsewhere_is_not_merged():
    """_reads_by_row: a row's max read through a broadcast along the reduced
    dimension, or elementwise at its own rows, is read where the block that
    wrote it runs; reversed, it is another block's row."""
    from xla_gpu.jax.whole_program import _reads_by_row

    def part(read: str):
        text = f"""HloModule m

{REDUCERS}
fused {{
  x = f32[512,1000] parameter(0)
  m = f32[512] parameter(1)
{read}
  d = f32[512,1000] subtract(x, mb)
  z = f32[] constant(0)
  ROOT t = f32[512] reduce(d, z), dimensions={{1}}, to_apply=add
}}

ENTRY main {{
  p0 = f32[512,1000] parameter(0)
  p1 = f32[512] parameter(1)
  ROOT f = f32[512] fusion(p0, p1), kind=kInput, calls=fused
}}
"""
        return parse_hlo(text).fusions()[0]

    assert _reads_by_row(part("  mb = f32[512,1000] broadcast(m), dimensions={0}"), 1)
    assert _reads_by_row(part("  n = f32[512] negate(m)\n"
                              "  mb = f32[512,1000] broadcast(n), dimensions={0}"), 1)
    assert not _reads_by_row(part("  r = f32[512] reverse(m), dimensions={0}\n"
                                  "  mb = f32[512,1000] broadcast(r), dimensions={0}"), 1)


def _jit(fn, x):
    """xla_gpu.jax.jit of `fn` run on `x`: its output, the decision on its
    one library fusion (kCustom), and the custom calls of the program XLA
    compiled, as text lines."""
    import xla_gpu.jax as xj
    f = xj.jit(fn)
    out = np.asarray(f(x))
    (decision,) = [d for d in f.decisions() if d.kind == "kCustom"]
    text = f._last.executable.executable.hlo_modules()[0].to_string()
    return out, decision, [line for line in text.splitlines() if "custom-call(" in line]


def test_jit_runs_the_parts_over_the_same_rows_as_one_kernel():
    """softmax(x).max(-1) through xla_gpu.jax.jit: its max, exp + sum and
    max of the probabilities, taken apart, run as one custom call (a tuple
    of the three row values and the exp the last reads -- block-local, a
    buffer of no element for XLA), whose result is jax.jit's. (Over fewer
    rows XLA:CPU fuses the program otherwise.)"""
    import jax
    fn = lambda v: jax.nn.softmax(v).max(-1)  # noqa: E731
    x = np.random.default_rng(1).standard_normal((4096, 1000)).astype(np.float32)
    out, decision, calls = _jit(fn, x)
    assert decision.ours and decision.reason.startswith("as 1 kernel "), decision
    assert len(calls) == 1 and ("(f32[4096]{0}, f32[4096]{0}, f32[0]{0}, f32[4096]{0}) "
                                "custom-call") in calls[0]
    np.testing.assert_allclose(out, np.asarray(jax.jit(fn)(x)), rtol=2e-6)


def test_jit_keeps_a_merged_row_programs_f32_exp_in_its_blocks(monkeypatch):
    """The exp + sum part of softmax(x).max(-1) also writes the f32 exp,
    which the last part reads instead of computing it again: in one kernel
    with it, each block's 4 rows of 1000 (16000 bytes) are the block's own
    (xla.block_local_bytes), kept in the CPU target's storage, not written
    to memory. A/B in one process: f32[4096,1000] 1.00-1.16 -> 0.77-0.97x
    jax.jit's time, bf16 1.38 -> 0.83-0.86x, f32[1024,4096] 0.74 -> 0.48x.
    The bits are those of the exp computed again (16-bit side values only,
    as through memory)."""
    import jax
    from xla_gpu.jax import whole_program
    fn = lambda v: jax.nn.softmax(v).max(-1)  # noqa: E731
    # Rows of 197 (a ViT's), 5322 of them: 6 rows a block (887 blocks);
    # rows of 4096: a block a row (its row index bl_x).
    for shape, rows_a_block in (((4096, 1000), 4), ((5322, 197), 6), ((1024, 4096), 1)):
        x = np.random.default_rng(2).standard_normal(shape).astype(np.float32)
        out, text = _jit_text(fn, x)
        assert re.findall(r"xla\.block_local_bytes = \d+", text) == [
            f"xla.block_local_bytes = {rows_a_block * shape[1] * 4}"]
        with monkeypatch.context() as m:
            m.setattr(whole_program, "BLOCK_SIDE_BITS", whole_program.NARROW_SIDE_BITS)
            again, text = _jit_text(fn, x)
        assert "block_local" not in text
        np.testing.assert_array_equal(out.view(np.uint32), again.view(np.uint32))


def test_jit_keeps_a_softmaxs_exp_in_its_blocks_for_its_last_part(monkeypatch):
    """A softmax: its exp + sum part also writes the exp, and the last
    part, the normalization, row-mapped into the same kernel, reads it
    from its block's storage instead of computing it again (f64 too: a
    64-bit last part is row-mapped where it reads such a side value). A/B
    in one process, through xla_gpu.jax.jit: f64[2048,1024] 0.83-0.92x
    the time, f64[4096,1000] 0.82-0.87x, f64[5322,197] 0.83-0.96x,
    f64[512,4096] 0.86-0.88x (streamed rows, a row a block);
    f32[4096,1000] 0.87-0.95x, f32[5322,197] 0.77-0.79x, f32[65536,64]
    0.83-0.91x (a kernel less). With the exp computed again (side values
    of 16 bits at most) the values are the same but for the sums'
    order."""
    import jax
    from xla_gpu.jax import whole_program
    cases = ((np.float32, (4096, 1000), 1), (np.float32, (5322, 197), 6),
             (np.float64, (2048, 1024), 1), (np.float64, (4096, 1000), 1),
             (np.float64, (5322, 197), 6), (np.float64, (512, 4096), 1))
    for dtype, shape, rows_a_block in cases:
        with jax.enable_x64(True):
            x = np.random.default_rng(4).standard_normal(shape).astype(dtype)
            out, text = _jit_text(jax.nn.softmax, x)
            calls = [line for line in text.splitlines() if "custom-call(" in line]
            assert len(calls) == 1, (shape, calls)
            assert re.findall(r"xla\.block_local_bytes = \d+", text) == [
                f"xla.block_local_bytes = {rows_a_block * shape[1] * x.itemsize}"], shape
            with monkeypatch.context() as m:
                m.setattr(whole_program, "BLOCK_SIDE_BITS", whole_program.NARROW_SIDE_BITS)
                again, text = _jit_text(jax.nn.softmax, x)
            assert "block_local" not in text
            want = np.asarray(jax.jit(jax.nn.softmax)(x))
        tolerance = 4 * np.finfo(dtype).eps
        np.testing.assert_allclose(out, again, rtol=tolerance, atol=0)
        np.testing.assert_allclose(out, want, rtol=tolerance, atol=0)


def test_jit_keeps_a_bf16_softmaxs_exp_in_its_blocks(monkeypatch):
    """A bf16 softmax (a ViT's attention scores, rows of 197; rows of 256):
    the f32 exp stays in the blocks and the last part, writing bf16,
    is row-mapped into the one kernel, rows of up to
    MAX_16_BIT_ROW_MAPPED_ROW (longer ones ran slower so: two kernels).
    The bits of the exp computed again by a kernel apart. The row-mapped
    part's kept reduce is written by no lane (_drop_kept_inserts): the
    kernel's only predicated inserts are the max's and the sum's."""
    import jax
    import ml_dtypes
    from xla_gpu.jax import whole_program
    for shape in ((4, 12, 197, 197), (64, 64, 256), (512, 2048)):
        x = np.random.default_rng(7).standard_normal(shape).astype(ml_dtypes.bfloat16)
        out, text = _jit_text(jax.nn.softmax, x)
        calls = [line for line in text.splitlines() if "custom-call(" in line]
        short = shape[-1] <= whole_program.MAX_16_BIT_ROW_MAPPED_ROW
        assert len(calls) == (1 if short else 2), (shape, calls)
        assert ("block_local" in text) == short
        if short:
            (kernel,) = _kernel_texts(text)
            assert kernel.count("xla_gpu.predicated_insert") == 2, shape
        with monkeypatch.context() as m:
            m.setattr(whole_program, "MAX_16_BIT_ROW_MAPPED_ROW", 0)
            again, text = _jit_text(jax.nn.softmax, x)
        assert "block_local" not in text
        np.testing.assert_array_equal(out.view(np.uint16), again.view(np.uint16))


def test_jit_gives_a_block_local_result_no_memory():
    """softmax(x).max(-1) over f32[4096,1000]: the exp its kernel's blocks
    keep is a result of no element for XLA (BLOCK_LOCAL_DIMS), which so
    allocates none of its 16 MB (it did until stop 88, never written);
    the kernel, called directly, takes an empty array there too."""
    import jax
    import xla_gpu.jax as xj
    from xla_gpu.emitters.kernel import BLOCK_LOCAL_DIMS
    from xla_gpu.runtime import CpuKernel
    fn = lambda v: jax.nn.softmax(v).max(-1)  # noqa: E731
    x = np.random.default_rng(6).standard_normal((4096, 1000)).astype(np.float32)
    f = xj.jit(fn)
    out = np.asarray(f(x))
    assert f._last.executable.executable.get_compiled_memory_stats().temp_size_in_bytes < \
        x.nbytes // 8
    (kernel,) = _kernel_texts(_jit_text(fn, x)[1])
    k = CpuKernel(kernel)
    shapes = [p.shape for p in k.params]
    assert shapes == [(4096, 1000), (4096,), (4096,), BLOCK_LOCAL_DIMS, (4096,)], shapes
    results = [np.empty(s, np.float32) for s in shapes[1:]]
    k(x, *results)
    np.testing.assert_array_equal(results[-1], out)


def _kernel_texts(text: str) -> list[str]:
    """The MLIR of each of our kernels a compiled program's text calls."""
    return [re.sub(r"\\([0-9A-F]{2})", lambda m: chr(int(m.group(1), 16)), k)
            for k in re.findall(r'kernel = "((?:[^"\\]|\\.)*)", kernel_hash', text)]


def _jit_text(fn, x):
    """xla_gpu.jax.jit of `fn` run on `x`: its output and the text of the
    program XLA compiled."""
    import xla_gpu.jax as xj
    f = xj.jit(fn)
    out = np.asarray(f(x))
    return out, f._last.executable.executable.hlo_modules()[0].to_string()


def test_jit_merges_a_part_that_writes_a_side_value(monkeypatch):
    """A bf16 softmax through xla_gpu.jax.jit: its max, and its exp + sum
    writing the rounded exp the rest reads (a tuple part), run as one
    custom call whose results are the three values in line, each read by
    a get-tuple-element; the results are bit for bit those of the three
    kernels (A/B over bf16[8,8,256,256]: 1.59 against 1.68 ms)."""
    import jax
    import jax.numpy as jnp
    import xla_gpu.jax as xj
    from xla_gpu.jax import whole_program
    # (Over fewer rows XLA:CPU fuses the program otherwise.) The exp is
    # rounded where XLA allows no excess precision; with it, it is read
    # unrounded and computed again. Where the last part is not row-mapped
    # (see test_jit_keeps_a_bf16_softmaxs_exp_in_its_blocks).
    monkeypatch.setattr(whole_program, "excess_precision_allowed", lambda: False)
    monkeypatch.setattr(whole_program, "MAX_16_BIT_ROW_MAPPED_ROW", 0)
    x = jnp.asarray(np.random.default_rng(2).standard_normal((64, 64, 256)), jnp.bfloat16)
    out, decision, calls = _jit(jax.nn.softmax, x)
    assert decision.reason.startswith("as 2 kernels "), decision
    assert len(calls) == 2
    assert "(bf16[64,64]{1,0}, f32[64,64]{1,0}, bf16[64,64,256]{2,1,0}) custom-call" in calls[0]
    monkeypatch.setattr(whole_program, "_merge_row_parts", lambda parts, device: parts)
    apart = xj.jit(jax.nn.softmax)
    np.testing.assert_array_equal(np.asarray(apart(x)).view(np.uint16), out.view(np.uint16))
    assert apart.decisions()[0].reason.startswith("as 3 kernels ")
    want = np.asarray(jax.jit(jax.nn.softmax)(x), np.float32)
    np.testing.assert_allclose(out.astype(np.float32), want, rtol=2 ** -7, atol=2 ** -9)


def test_jit_merges_a_last_part_over_the_rows(monkeypatch):
    """A layer norm through xla_gpu.jax.jit: its mean, its variance and the
    normalized rows (the last part, a loop fusion of the rows' shape) run
    as one kernel: the last part is emitted over the rows as a reduction
    of them (_row_mapped: its output, and a reduce of it that nothing
    reads, whose reducer keeps its accumulator: no code is left of it),
    so that it reads x again from the caches of the core
    that reduced it (0.86-0.88x the time apart, f32[4096,1000]). The bits
    are those of the kernels apart. So is a softmax's last part, which
    computes an exp an element, over rows of more than 64 elements
    (MAX_COSTLY_ROW); over rows of 64, whose lanes hold 2 elements each,
    it stays apart where it computes the exp again (row-mapped: 2.1x the
    time), and joins where it reads the exp its blocks kept."""
    import re
    import jax
    import xla_gpu.jax as xj
    from xla_gpu.jax import whole_program

    def layer_norm(v):
        m = v.mean(-1, keepdims=True)
        s = ((v - m) ** 2).mean(-1, keepdims=True)
        return (v - m) * jax.lax.rsqrt(s + 1e-5)

    x = np.random.default_rng(3).standard_normal((4096, 1000)).astype(np.float32)
    out, decision, calls = _jit(layer_norm, x)
    assert decision.reason.startswith("as 1 kernel "), decision
    assert len(calls) == 1
    assert re.search(r"\(f32\[4096\]\{0\}, f32\[4096\]\{0\}, f32\[4096,1000\]\{1,0\}, "
                     r"f32\[4096\]\{0\}\) custom-call", calls[0])
    softmax, decision, _ = _jit(jax.nn.softmax, x)
    assert decision.reason.startswith("as 1 kernel "), decision
    short = x.reshape(-1, whole_program.MAX_COSTLY_ROW)[:8192]
    assert _jit(jax.nn.softmax, short)[1].reason.startswith("as 1 kernel ")
    with monkeypatch.context() as m:
        m.setattr(whole_program, "BLOCK_SIDE_BITS", whole_program.NARROW_SIDE_BITS)
        assert _jit(jax.nn.softmax, short)[1].reason.startswith("as 2 kernels ")
    monkeypatch.setattr(whole_program, "_row_mapped", lambda *args: None)
    apart = xj.jit(layer_norm)
    np.testing.assert_array_equal(np.asarray(apart(x)).view(np.uint32), out.view(np.uint32))
    assert apart.decisions()[0].reason.startswith("as 2 kernels ")
    apart = xj.jit(jax.nn.softmax)
    np.testing.assert_array_equal(np.asarray(apart(x)).view(np.uint32),
                                  softmax.view(np.uint32))
    assert apart.decisions()[0].reason.startswith("as 2 kernels ")
    np.testing.assert_allclose(out, np.asarray(jax.jit(layer_norm)(x)), rtol=1e-4, atol=1e-5)


def test_jit_joins_no_part_that_reads_other_rows():
    """jnp.flip over the batch of a broadcast row sum (f32[3,32,100]): the
    last part reads the sums through a reverse of the rows, so a block
    would read rows another block reduces -- not yet, in one kernel
    (the first batch's results were garbage, 1e24; found by random jax
    programs in stop 74). It runs as two kernels, jax.jit's values."""
    import jax
    import jax.numpy as jnp

    def flipped_sums(v):
        v = jnp.where(v > 0, v, 0)
        v = jnp.broadcast_to(v.sum(2, keepdims=True), v.shape)
        return jnp.flip(jnp.broadcast_to(v.sum(2, keepdims=True), v.shape), 0)

    import xla_gpu.jax as xj
    x = np.random.default_rng(5).standard_normal((3, 32, 100)).astype(np.float32)
    f = xj.jit(flipped_sums)
    np.testing.assert_allclose(np.asarray(f(x)), np.asarray(jax.jit(flipped_sums)(x)),
                               rtol=1e-5)
    assert [d.reason for d in f.decisions() if not d.reason.startswith("merged")] == [
        "as 2 kernels (its reductions split or taken out)"], f.fusion_report()
