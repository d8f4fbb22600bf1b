"""Benchmark: the JAX backend (xla_gpu.jax) on the CPU, against plain jax
(XLA:CPU) in the same process.

  - custom-call overhead: a jitted call of one of our kernels on a tiny
    array (f32[8] + 1) against the same jnp op jitted; the difference per
    call is the FFI dispatch (XLA's custom-call thunk, then our handler:
    buffer verification, block launch; the attributes are decoded once,
    when XLA instantiates the call). Goal: at most 2 us more.
  - the seed's GELU through `xla_gpu.jax.kernel` against `jax.jit` of the
    same function. Goal: ratio <= 1.0.
  - an MSE loss, mean((x - 0.5)^2) over f32[4096,256], through
    `xla_gpu.jax.kernel`: a reduction no block can do alone, run as the
    kernels of its two parts (a KernelChain).
  - whole programs through `xla_gpu.jax.jit` (XLA's fusions, ours where
    our emitters take them) against `jax.jit`: a sum of f32[1024,1024]
    (a reduction XLA:CPU leaves whole, which we split as XLA:GPU's
    tree-reduction-rewriter does), a layer norm, a softmax (its last
    kernel writes over the exp before it), a bf16 RMS norm (XLA:CPU's
    convert to f32 merged into the reduction), a bf16 column sum (a
    long column, split for the CPU target), a bf16 softmax (XLA:CPU
    fuses it whole for YNNPACK; ours: its max and exp+sum, the rest
    computing the exp again: with excess precision, XLA's default, the
    exp is read unrounded, as YNNPACK reads it), and three XLA:CPU fuses whole for
    YNNPACK with a reduce that a later reduce or a combining op reads: a
    cross-entropy -log_softmax(x).mean() (max, sum with its log, the sum
    of x - max - log(sum) as a tree), a logsumexp and max(x) - min(x)
    over rows of 1000 (each reduce taken out for the reduction emitter;
    found by running real programs through `xla_gpu.jax.jit` in stop 62:
    9.3x, 2.0x and 5.0x jax.jit's time before), and softmax(x).max(-1),
    a reduction whose inputs read a row's max and sum (both taken out;
    stop 63: 175x before), over rows of 1000 and of 64 (a warp a row,
    its parts merged without barriers of their own; stop 64: 27x
    before), a ViT's attention softmax over bf16 rows of 197 (odd rows:
    a warp's last step taken by a few lanes), a layer norm's gradient
    (XLA:CPU's broadcasts for YNNPACK merged into the reductions reading
    them) and a rotary embedding's gradient (pads of interior padding,
    two lanes a step), a NaN check (XLA:CPU's windows of 32 x 32 walked
    along their rows), a pad of H and W (the batch's division taken out
    of the lanes), a pad of a reversed strided slice (a block a row), a
    histogram by comparisons (the bin edges merged into XLA:CPU's integer
    column sum), a cross-entropy with a z-loss (its rows' sums taken out
    of the sum over the rows), a softmax with its log-sum-exp (XLA:CPU's
    fusions merged as one row region), a cross-entropy's gradient (its last part
    row-mapped, an exp an element), an argmax over a vocabulary (a
    variadic reduce split), and NHWC images' reflect pad (a concatenate's
    block a row), NHWC -> NCHW (the channels walked last) and RGBA -> RGB
    (a step's 3 bytes of stride 4 vectorized), a bf16 layer norm (its mean and
    variance one kernel), a layer norm of 31.2 MiB in all (a row a
    block, its last part row-mapped), a column sum over rows of 500
    (its first part's blocks a row each), a dropout (jax.random's
    threefry lowered as for the GPU, one kernel) and a Laplacian of
    jnp.rolls (the rolls' slices and concatenates merged into it). Its compile is jax's
    lowering, XLA:CPU's compile for the fusions, ours of the kernels and
    XLA:CPU's again of the module that calls them.

Medians (and quartiles) of --runs timed runs, the two sides taking turns
in blocks (benchmarks.block_times_ms, as every case of `make bench`);
each run of the overhead case is the mean of CALLS back-to-back calls.
The compile times are the median of COMPILE_REPEATS `jax.jit` + first
calls a side, the sides taking turns (benchmarks.compile_times_ms), each
of a function of its own (the case's with another constant: a new
kernel, a new XLA executable), after both sides have compiled another
function (_warm_up): what the first use in a process pays once (loading
and registering our FFI library, a thread's first LLVM target machine) is
left out, as jax's own first compile is. Where jax.jit hands a fusion to
a library (YNNPACK's reductions: no code generated), a third side is
jax.jit with XLA:CPU's library fusions off (compile_xla_codegen_ms), the
anchor the HLO cases' compiles have: XLA:CPU's code generator doing the
work ours does.

    .venv/bin/python bench/jax_backend_cpu.py [--runs 10]
"""

from __future__ import annotations

import argparse
import functools
import itertools

import jax
import jax.numpy as jnp
import numpy as np

from xla_gpu.benchmarks import block_times_ms, compile_times_ms, quartiles

CALLS = 2000
# Calls of our side before block_times_ms's own first calls.
WARM_CALLS = 64


def _gelu(x, cubic=0.044715):
    # The seed's GELU (tanh form), in the input's type.
    return 0.5 * x * (1 + jnp.tanh(0.7978845608 * (x + cubic * x * x * x)))


def _warm_up() -> None:
    from xla_gpu.jax import kernel

    y = jnp.ones((3, 5), jnp.float32)
    jax.jit(kernel(lambda v: v * 3.0))(y).block_until_ready()
    jax.jit(lambda v: v * 3.0)(y).block_until_ready()


def _kernel_jit(fn):
    """jax.jit of `fn` as one of our kernels."""
    from xla_gpu.jax import kernel
    return jax.jit(kernel(fn))


# XLA:CPU's options that hand no fusion to a library (reference.py's
# XlaCpuExecutable(library_fusions=False)): it generates every fusion's code.
_LIBRARIES_OFF = {"xla_cpu_experimental_ynn_fusion_type": "", "xla_cpu_use_xnnpack": False}


def _library_fusions(fn, arg) -> int:
    """How many fusions of jax.jit(fn)'s optimized module call a library
    (kCustom fusions: YNNPACK's reductions and dots)."""
    return jax.jit(fn).lower(arg).compile().as_text().count("kind=kCustom")


def _compile_ms(make, arg, jit, codegen: bool) -> tuple[float, float, float]:
    """(ours, plain jax, plain jax with no library fusions) median
    milliseconds of `jit` (ours) or jax.jit and the first call of
    `make(k)`, the k-th function (k = 1, 2, ...), the sides taking turns;
    without `codegen` (jax.jit calls no library), the third is the
    second."""
    def first_call(wrap):
        count = itertools.count(1)
        return lambda: jax.block_until_ready(wrap(make(next(count)))(arg))

    sides = [(first_call(jit), None), (first_call(jax.jit), None)]
    if codegen:
        sides.append((first_call(functools.partial(jax.jit, compiler_options=_LIBRARIES_OFF)),
                      None))
    times = [t for t, _ in compile_times_ms(sides)]
    return times[0], times[1], times[-1]


def _case(name: str, fn, make, arg, runs: int, calls: int = 1, jit=_kernel_jit) -> dict:
    """The record of `jit(fn)` (ours) against jax.jit of it, on `arg`;
    the compiles timed on `make(k)`'s functions."""
    libraries = _library_fusions(fn, arg)
    compile_ours, compile_xla, compile_codegen = _compile_ms(make, arg, jit, libraries > 0)
    ours, plain = jit(fn), jax.jit(fn)
    # The FFI handler probes one instruction at a time (WorkerChoice): a
    # program of n kernels has chosen its threads after ~7n calls.
    for _ in range(WARM_CALLS):
        jax.block_until_ready(ours(arg))
    ours_t, xla_t = block_times_ms([lambda: jax.block_until_ready(ours(arg)),
                                    lambda: jax.block_until_ready(plain(arg))], runs, calls=calls)
    ours_q, xla_q = quartiles(ours_t), quartiles(xla_t)
    err = max(float(np.max(np.abs(np.asarray(a, np.float32) - np.asarray(b, np.float32))))
              for a, b in zip(jax.tree_util.tree_leaves(ours(arg)),
                              jax.tree_util.tree_leaves(plain(arg))))
    return dict(name=name, ours_ms=ours_q[1], xla_ms=xla_q[1], ratio=ours_q[1] / xla_q[1],
                ours_quartiles_ms=ours_q, xla_quartiles_ms=xla_q, compile_ours_ms=compile_ours,
                compile_xla_ms=compile_xla, compile_xla_codegen_ms=compile_codegen,
                xla_library_fusions=libraries, max_abs_error=err)


def cases(runs: int) -> list[dict]:
    """One record per case: name, ours_ms, xla_ms, compile times,
    max_abs_error (bench/suite.py's fields)."""
    _warm_up()
    # 1. Overhead (compiles timed on + 2, + 3, ...).
    x = jnp.arange(8, dtype=jnp.float32)
    overhead = _case("jax_backend_cpu: custom-call overhead f32[8] + 1", lambda v: v + 1.0,
                     lambda k: lambda v: v + (1.0 + k), x, runs, calls=CALLS)
    overhead["name"] += f" (+{(overhead['ours_ms'] - overhead['xla_ms']) * 1e3:.2f} us a call)"
    # 2. The seed's GELU, bf16[6,512,4096] (compiles timed on cubic
    # coefficients 1/16 apart: distinct in bf16).
    g = jnp.asarray(np.random.default_rng(0).standard_normal((6, 512, 4096), np.float32),
                    jnp.bfloat16)
    gelu = _case("jax_backend_cpu: seed GELU bf16 via xla_gpu.jax.kernel", _gelu,
                 lambda k: functools.partial(_gelu, cubic=0.044715 * (1 + k / 16)), g, runs)
    # 3. A loss as one kernel: two parts (compiles timed on other centres).
    y = jnp.asarray(np.random.default_rng(2).standard_normal((4096, 256), np.float32))
    loss = _case("jax_backend_cpu: MSE loss f32[4096,256] via xla_gpu.jax.kernel",
                 lambda v: ((v - 0.5) ** 2).mean(),
                 lambda k: lambda v: ((v - 0.5 * k) ** 2).mean(), y, runs)
    # 4. Whole programs (compiles timed on other scales of the input).
    x = jnp.asarray(np.random.default_rng(1).standard_normal((1024, 1024), np.float32))
    s = jnp.asarray(np.random.default_rng(3).standard_normal((512, 1024), np.float32))
    c = jnp.asarray(np.random.default_rng(4).standard_normal((8192, 512), np.float32),
                    jnp.bfloat16)
    b = jnp.asarray(np.random.default_rng(5).standard_normal((8, 8, 256, 256), np.float32),
                    jnp.bfloat16)
    e = jnp.asarray(np.random.default_rng(6).standard_normal((4096, 1000), np.float32))
    r = jnp.asarray(np.random.default_rng(7).standard_normal((65536, 64), np.float32))
    w = jnp.asarray(np.random.default_rng(10).standard_normal((1024, 4096), np.float32))
    v = jnp.asarray(np.random.default_rng(11).standard_normal((5322, 197), np.float32))
    o = jnp.asarray(np.random.default_rng(12).standard_normal((2048, 333), np.float32))
    a = jnp.asarray(np.random.default_rng(13).standard_normal((4, 12, 197, 197), np.float32),
                    jnp.bfloat16)
    d = jnp.asarray(np.random.default_rng(16).standard_normal((2048, 1024), np.float32))
    q = jnp.asarray(np.random.default_rng(17).standard_normal((8, 16, 256, 64), np.float32))
    n = jnp.asarray(np.random.default_rng(18).standard_normal((2048, 2048), np.float32))
    h = jnp.asarray(np.random.default_rng(19).standard_normal((8, 56, 56, 64), np.float32))
    table = jnp.asarray(np.random.default_rng(20).standard_normal((32000, 64), np.float32))
    ids = jnp.asarray(np.random.default_rng(21).integers(0, 32000, 4096), jnp.int32)
    u = jnp.asarray(np.random.default_rng(22).standard_normal(1 << 20, np.float32))
    labels = jnp.asarray(np.random.default_rng(23).integers(0, 1000, 4096), jnp.int32)
    vocab = jnp.asarray(np.random.default_rng(24).standard_normal((1, 128256), np.float32),
                        jnp.bfloat16)
    image = jnp.asarray(np.random.default_rng(25).standard_normal((16, 224, 224, 3), np.float32))
    pixels = jnp.asarray(np.random.default_rng(26).integers(0, 256, (16, 224, 224, 4)),
                         jnp.uint8)
    tokens = jnp.asarray(np.random.default_rng(27).standard_normal((32, 512, 768), np.float32),
                         jnp.bfloat16)
    angles = jnp.asarray(np.random.default_rng(28).uniform(-1e3, 1e3, (1024, 1024)), jnp.float32)
    integers = tuple(jnp.asarray(np.random.default_rng(29 + i).integers(lo, 2 ** 31, (1024, 1024)),
                                 jnp.int32) for i, lo in enumerate((-2 ** 31, 1)))
    # Parameters, gradients, first and second moments (v >= 0).
    adam_state = tuple({k: jnp.asarray(np.abs(x) if i == 3 else x) for k, x in (
        ("w", np.random.default_rng(32 + i).standard_normal((1024, 1024), np.float32)),
        ("b", np.random.default_rng(36 + i).standard_normal(1024, np.float32)))}
        for i in range(4))
    small_images = jnp.asarray(np.random.default_rng(40).standard_normal((8, 128, 128, 3),
                                                                         np.float32))
    rows, residual = (jnp.asarray(np.random.default_rng(41 + i).standard_normal(
        (4096, 1024), np.float32), jnp.bfloat16) for i in range(2))
    narrow = jnp.asarray(np.random.default_rng(31).standard_normal((1024, 1024, 5), np.float32))
    key = jax.random.PRNGKey(44)
    columns = jnp.asarray(np.random.default_rng(43).standard_normal((8192, 500), np.float32))
    programs = [_case(f"jax_backend_cpu: xla_gpu.jax.jit {name}", fn, make, arg, runs,
                      jit=xj_jit)
                for name, fn, make, arg in [
                    ("sum f32[1024,1024]", lambda v: v.sum(),
                     lambda k: lambda v: (v * (1.0 + k)).sum(), x),
                    ("layer norm f32[1024,1024]", _layer_norm,
                     lambda k: lambda v: _layer_norm(v * (1.0 + k)), x),
                    # Its last fusion writes over the exp before it.
                    ("softmax f32[512,1024]", jax.nn.softmax,
                     lambda k: lambda v: jax.nn.softmax(v * (1.0 + k)), s),
                    # XLA:CPU's convert to f32 merged into the reduction.
                    ("RMS norm bf16[1024,1024]", _rms_norm,
                     lambda k: lambda v: _rms_norm(v, 1e-6 * k), x.astype(jnp.bfloat16)),
                    # XLA:CPU's one fusion for YNNPACK: its max and
                    # exp+sum one kernel, the rest another (stop 71: the
                    # exp unrounded, as YNNPACK computes it).
                    ("softmax bf16[8,8,256,256]", jax.nn.softmax,
                     lambda k: lambda v: jax.nn.softmax(v * (1.0 + k)), b),
                    # A long column, split for the CPU target (2 rows of
                    # partial sums, where XLA:GPU's split leaves 128).
                    ("column sum bf16[8192,512]", _column_sum,
                     lambda k: lambda v: _column_sum(v * (1.0 + k)), c),
                    # Rows of 500, split in 16 parts of 512 rows (stop 84:
                    # the first part a block a row of [16,500], 4.7x
                    # jax.jit's time with XLA's blocks cutting its rows).
                    ("column sum f32[8192,500]", _column_sum,
                     lambda k: lambda v: _column_sum(v * (1.0 + k)), columns),
                    # Reduces that a later reduce or op reads (stop 62).
                    ("cross-entropy f32[4096,1000]", _cross_entropy,
                     lambda k: lambda v: _cross_entropy(v * (1.0 + k)), e),
                    # A cross-entropy with a z-loss (stop 89): XLA:CPU's
                    # last fusion sums the rows' log-sum-exps, its rows'
                    # sums taken out of the scalar sum (10x jax.jit's
                    # time before, the rows summed on one block).
                    ("cross-entropy with a z-loss f32[4096,1000]", _z_loss,
                     lambda k: functools.partial(_z_loss, scale=1.0 + k), (e, labels)),
                    ("logsumexp f32[4096,1000]", _logsumexp,
                     lambda k: lambda v: _logsumexp(v * (1.0 + k)), e),
                    # A softmax that returns its log-sum-exp too (an
                    # attention's, kept for its gradient; stop 90):
                    # XLA:CPU's five fusions, cut at the max and the sum
                    # two of them read, merged as one row region, one
                    # kernel (1.16-1.52x jax.jit's time before).
                    ("softmax and its log-sum-exp f32[4096,1000]", _softmax_and_lse,
                     lambda k: lambda v: _softmax_and_lse(v * (1.0 + k)), e),
                    ("max - min f32[4096,1000]", _max_minus_min,
                     lambda k: lambda v: _max_minus_min(v * (1.0 + k)), e),
                    # Reduces in a reduction's inputs, taken out (stop 63:
                    # 175x jax.jit's time before).
                    ("softmax(x).max(-1) f32[4096,1000]", _top_probability,
                     lambda k: lambda v: _top_probability(v * (1.0 + k)), e),
                    # Rows of 64, a warp a row: the parts, without
                    # barriers of their own, merged (stop 64: 27x jax.jit's
                    # time before, the max and sum recomputed per element).
                    ("softmax(x).max(-1) f32[65536,64]", _top_probability,
                     lambda k: lambda v: _top_probability(v * (1.0 + k)), r),
                    # XLA:CPU's four fusions over rows of 4096 (the exp
                    # written once, read twice) merged into one row
                    # program (stop 65: 1.7x jax.jit's time before).
                    ("softmax f32[1024,4096]", jax.nn.softmax,
                     lambda k: lambda v: jax.nn.softmax(v * (1.0 + k)), w),
                    # Rows of 197 (a ViT's tokens), 5322 of them: no
                    # multiple of XLA:GPU's 8 rows a block, nor of its
                    # vectors of 2 (stop 65: 4.4x jax.jit's time before).
                    ("softmax(x).max(-1) f32[5322,197]", _top_probability,
                     lambda k: lambda v: _top_probability(v * (1.0 + k)), v),
                    # bf16 rows of 1000: an element a load where the
                    # parts compute exps (stop 66: 1.8x jax.jit's time
                    # with XLA:GPU's vectors of 4).
                    ("softmax(x).max(-1) bf16[4096,1000]", _top_probability,
                     lambda k: lambda v: _top_probability(v * (1.0 + k)),
                     e.astype(jnp.bfloat16)),
                    # Rows of an odd length: vectors of 1, a warp's steps
                    # along the row its only loop, peeled before the last
                    # step (stop 67: 1.28x the time before, each step's
                    # lanes masked).
                    ("softmax(x).max(-1) f32[2048,333]", _top_probability,
                     lambda k: lambda v: _top_probability(v * (1.0 + k)), o),
                    # A ViT's attention scores: bf16 rows of 197, a warp's
                    # 7 steps, the last taken by 5 lanes in a loop of its
                    # own (stop 68: 1.2-1.3x jax.jit's time before, the
                    # 5 lanes' 6 other steps in 8-lane vectors).
                    ("attention softmax bf16[4,12,197,197]", _attention_softmax,
                     lambda k: lambda v: _attention_softmax(v, 8.0 + k), a),
                    # A loop's body: its fusions ours since stop 67.
                    ("fori_loop of a softmax f32[256,1024]", _softmax_loop,
                     lambda k: lambda v: _softmax_loop(v * (1.0 + k)), s[:256]),
                    # A gradient: XLA:CPU's broadcasts of the scale and of
                    # rsqrt(var) for YNNPACK, merged into the reductions
                    # that read them (stop 69: 1.2-1.3x jax.jit's time
                    # before, 8 MiB written and read back a broadcast).
                    ("layer norm gradient f32[2048,1024]", _layer_norm_grad,
                     lambda k: functools.partial(_layer_norm_grad, scale=1.0 + k), d),
                    # An LLM's rotary embedding, its gradient: XLA:CPU
                    # interleaves the halves with pads of interior padding,
                    # which the CPU target runs two lanes a step (stop 69:
                    # 1.15x jax.jit's time before, every lane computing
                    # both pads' sin and cos).
                    ("RoPE gradient f32[8,16,256,64]", _rope_grad,
                     lambda k: functools.partial(_rope_grad, base=10000.0 + k), q),
                    # A NaN check: XLA:CPU reduces 32 x 32 windows first
                    # (reduce-windows), each thread's window walked along
                    # its rows (stop 70: 1.4-1.5x jax.jit's time before,
                    # its lanes a row apart).
                    ("isnan(x).any() f32[2048,2048]", _any_nan,
                     lambda k: lambda v: _any_nan(v * (1.0 + k)), n),
                    # A pad of H and W: the loop emitter's index of the
                    # batch divided by 207936 an element before (stop 70:
                    # 2.0x jax.jit's time before).
                    ("pad of H, W f32[8,56,56,64]", _pad_hw,
                     lambda k: lambda v: _pad_hw(v * (1.0 + k)), h),
                    # A lookup in a closed-over table (2M values): read from
                    # XLA's serialized module, passed as an argument (stop
                    # 72: its compile took ~5 s with the table printed,
                    # parsed and printed again, 1 s with the literal read
                    # in bulk, 0.14 s now).
                    ("embedding lookup in a closed-over f32[32000,64]", _lookup(table),
                     lambda k: _lookup(table * (1.0 + k)), ids),
                    # jnp.pad(x[::-1, ::2], ...)[:, 1:-1] (stop 73): a block
                    # a row of 257 (loop._shifts_minor), each cut once at the
                    # pad's column, where XLA's blocks of 512 elements cut
                    # the rows and kept the pad's guard in their loops (2-3x
                    # jax.jit's time before).
                    ("pad of a reversed strided slice f32[512,512]", _pad_reversed,
                     lambda k: lambda v: _pad_reversed(v * (1.0 + k)), n[:512, :512]),
                    # A histogram by comparisons (stop 74): the bin edges
                    # merged into XLA:CPU's integer column sum (a
                    # reduce-window of 32x1 windows, a block a row), where
                    # s32[1048576,33] was written and read back (1.6x
                    # jax.jit's time before).
                    ("histogram f32[1048576] into 33 bins", _histogram,
                     lambda k: lambda v: _histogram(v * (1.0 + k)), u),
                    # A cross-entropy's gradient by the logits, integer
                    # labels (stop 74): its last part, an exp an element,
                    # row-mapped into the kernel of its reductions (0.80-
                    # 0.86x the time apart, A/B in one process); since
                    # stop 78 XLA:CPU's scatter of the labels into zeros
                    # a one-hot computed in that kernel (1.03-1.22x
                    # jax.jit's time before).
                    ("cross-entropy gradient f32[4096,1000]", _cross_entropy_grad,
                     lambda k: functools.partial(_cross_entropy_grad, scale=1.0 + k),
                     (e, labels)),
                    # Greedy decoding's next token over a vocabulary (stop
                    # 74): XLA:CPU's variadic reduce walked on one thread,
                    # split as a sum is (9x jax.jit's time before).
                    ("argmax bf16[1,128256]", _argmax,
                     lambda k: lambda v: _argmax(v * (1.0 + k)), vocab),
                    # A reflect pad of NHWC images (stop 76): each of XLA's
                    # concatenates a block a row of W * C (its operands the
                    # block's first lanes or whole blocks), where XLA's
                    # blocks of 512 elements left each a guard of (e / 3)
                    # mod 224 (6.9x jax.jit's time before).
                    ("reflect pad of H, W f32[16,224,224,3]", _reflect_pad,
                     lambda k: lambda v: _reflect_pad(v * (1.0 + k)), image),
                    # NHWC -> NCHW (stop 76): the channels walked last, each
                    # lane's 3 the input's next ones (5.4x jax.jit's time
                    # before, each lane loading one byte of stride 3).
                    ("NHWC -> NCHW u8[16,224,224,3]", _to_nchw,
                     lambda k: lambda v: _to_nchw(v + jnp.uint8(k)), pixels[..., :3]),
                    # RGBA -> RGB (stop 76): 3 bytes of stride 4 a step
                    # vectorized as one interleave group (4.9x jax.jit's
                    # time before, left scalar).
                    ("RGB of RGBA u8[16,224,224,4]", _rgb,
                     lambda k: lambda v: _rgb(v + jnp.uint8(k)), pixels),
                    # A bf16 layer norm (stop 76): its mean and variance
                    # one kernel, both with XLA's vectors, where their
                    # thread maps had differed (1.3-1.5x jax.jit's time
                    # before, the rows read from memory twice).
                    ("layer norm bf16[32,512,768]", _layer_norm_bf16,
                     lambda k: lambda v: _layer_norm_bf16(v * (1.0 + k)), tokens),
                    # Angles wrapped into [0, 2 pi) (stop 78): the f32
                    # remainder exact in f64 arithmetic, vectorized, where
                    # XLA:CPU (and we before) called fmodf an element
                    # (70-100x jax.jit's time of a copy).
                    ("jnp.mod(x, 2 pi) f32[1024,1024]", _wrap_angle,
                     lambda k: lambda v: _wrap_angle(v * (1.0 + k)), angles),
                    # jnp's integer %: its divisor guard, remainder and
                    # floor select one kernel (stop 78; XLA:CPU's three
                    # fusions), the division through f64 (idiv before).
                    ("floor remainder s32[1024,1024]", _floor_remainder,
                     lambda k: lambda ab: _floor_remainder((ab[0] + k, ab[1])), integers),
                    # Narrow columns (stop 78): a width below the warp that
                    # does not divide it walked with the rows flattened
                    # (the small column variant), where XLA's column
                    # variant kept 3 or 5 of a vector's lanes busy (1.1x
                    # and 0.56x jax.jit's time before).
                    ("max over the middle dimension f32[1024,1024,5]", _middle_max,
                     lambda k: lambda v: _middle_max(v * (1.0 + k)), narrow),
                    # A separable 5x5 blur of NHWC images (stop 80): the
                    # horizontal pass, a subgraph read at 5 rows, inlined
                    # while its indices are index maps, so that each tap
                    # reads a row whole (2.5x jax.jit's time before: each
                    # tap's (e / 3) mod 128 and e mod 3 across the call).
                    ("separable 5x5 blur f32[8,128,128,3]", _blur,
                     lambda k: lambda v: _blur(v * (1.0 + k)), small_images),
                    ("channel mean and variance f32[16,224,224,3]", _channel_moments,
                     lambda k: lambda v: _channel_moments(v * (1.0 + k)), image),
                    # An optimizer step (stop 78): each new moment, a
                    # result, merged into the update that reads it as a
                    # result of its own (the moments read back before).
                    # A layer norm of x plus a closed-over residual (stop
                    # 81): XLA:CPU folds the residual's convert to f32 into
                    # its fusion, a constant of 4M values, now the kernel's
                    # operand (41 s to compile and 1.7x jax.jit's time
                    # before, the table in the kernel's text).
                    ("layer norm of x + a closed-over residual bf16[4096,1024]",
                     _residual_layer_norm(residual),
                     lambda k: _residual_layer_norm(residual * (1.0 + k)), rows),
                    # A layer norm of 31.2 MiB in all (stop 84): its rows
                    # a row a block from 24 MiB, the last part row-mapped
                    # with them (1.23x jax.jit's time at XLA's 4 rows).
                    ("layer norm f32[4096,1000]", _layer_norm,
                     lambda k: lambda v: _layer_norm(v * (1.0 + k)), e),
                    ("Adam step f32[1024,1024] and [1024]", _adam,
                     lambda k: functools.partial(_adam, lr=1e-3 * (1 + k)), adam_state),
                    # Dropout (stop 86): jax.random's threefry, on the CPU
                    # a while loop whose five steps read and write the
                    # counters (two fusions a step), lowered as for the
                    # GPU: its 20 rounds one kernel from the key to the
                    # result (3.9-4.7 -> 0.9-1.0 ms; jax.jit 4.7-5.1).
                    ("dropout f32[2048,1024]", _dropout,
                     lambda k: functools.partial(_dropout, rate=0.1 + k / 100), (key, d)),
                    # A Laplacian of jnp.rolls (stop 87): XLA:CPU's slices
                    # of each minor-axis roll and its copies into their
                    # concatenates, merged into the stencil (four slice
                    # kernels, two copies and the stencil before: 1.2-1.6x
                    # jax.jit's time).
                    ("Laplacian by rolls f32[1024,1024]", _laplacian_by_rolls,
                     lambda k: lambda v: _laplacian_by_rolls(v * (1.0 + k)), x)]]
    return [overhead, gelu, loss, *programs]


def _laplacian_by_rolls(u):
    return (jnp.roll(u, 1, 0) + jnp.roll(u, -1, 0) + jnp.roll(u, 1, 1) + jnp.roll(u, -1, 1)
            - 4 * u)


def _dropout(key_and_x, rate=0.1):
    key, x = key_and_x
    keep = jax.random.bernoulli(key, 1 - rate, x.shape)
    return jnp.where(keep, x / (1 - rate), 0)


def _lookup(table):
    """The rows of `table` (closed over: a constant of the module) at ids."""
    return lambda ids: table[ids]


def _attention_softmax(scores, scale=8.0):
    return jax.nn.softmax(scores / scale, axis=-1)


def _layer_norm(x):
    m = x.mean(-1, keepdims=True)
    v = ((x - m) ** 2).mean(-1, keepdims=True)
    return (x - m) * jax.lax.rsqrt(v + 1e-5)


def _layer_norm_grad(x, scale=1.0):
    """d/dx of sum(layer_norm(x) * g), g a scale along the rows."""
    g = jnp.linspace(0.5, 1.5, x.shape[-1], dtype=x.dtype) * scale
    return jax.grad(lambda v: (_layer_norm(v) * g).sum())(x)


def _rope(x, base=10000.0):
    """Rotary position embedding over x[..., T, D]: pairs (x[2i], x[2i+1])
    rotated by t / base^(2i/D)."""
    t, d = x.shape[-2], x.shape[-1]
    inv = 1.0 / (base ** (jnp.arange(0, d, 2) / d))
    angle = jnp.arange(t)[:, None] * inv[None, :]
    c, s = jnp.cos(angle), jnp.sin(angle)
    x1, x2 = x[..., ::2], x[..., 1::2]
    return jnp.stack([x1 * c - x2 * s, x1 * s + x2 * c], -1).reshape(x.shape)


def _rope_grad(x, base=10000.0):
    return jax.grad(lambda v: (_rope(v, base) ** 2).sum())(x)


def _column_sum(x):
    return x.astype(jnp.float32).sum(0)


def _cross_entropy(x):
    return -jax.nn.log_softmax(x).mean()


def _z_loss(batch, scale=1.0):
    """A cross-entropy with PaLM's z-loss (1e-4 log(Z)^2) of a batch
    (logits, integer labels)."""
    logits, labels = batch
    lse = jax.nn.logsumexp(logits * scale, -1)
    picked = jnp.take_along_axis(logits * scale, labels[:, None], axis=1)[:, 0]
    return jnp.mean(lse - picked + 1e-4 * lse ** 2)


def _logsumexp(x):
    return jax.nn.logsumexp(x, -1)


def _softmax_and_lse(x):
    """softmax(x) over the rows and each row's log-sum-exp."""
    m = x.max(-1, keepdims=True)
    e = jnp.exp(x - m)
    s = e.sum(-1, keepdims=True)
    return e / s, (m + jnp.log(s))[:, 0]


def _max_minus_min(x):
    return x.max(-1) - x.min(-1)


def _top_probability(x):
    return jax.nn.softmax(x).max(-1)


def _softmax_loop(x):
    return jax.lax.fori_loop(0, 3, lambda i, v: jax.nn.softmax(v * 1.5 + i, -1), x)


def _any_nan(x):
    return jnp.isnan(x).any()


def _argmax(x):
    return jnp.argmax(x, -1)


def _histogram(x):
    edges = jnp.linspace(-3, 3, 33)
    return (x[:, None] > edges[None, :]).sum(0)


def _adam(state, lr=1e-3, b1=0.9, b2=0.999, eps=1e-8):
    """One Adam step (step 3's bias corrections) of parameters, gradients
    and moments (pytrees): the new parameters and moments."""
    p, g, m, v = state
    m = jax.tree_util.tree_map(lambda m, g: b1 * m + (1 - b1) * g, m, g)
    v = jax.tree_util.tree_map(lambda v, g: b2 * v + (1 - b2) * g * g, v, g)
    p = jax.tree_util.tree_map(
        lambda p, m, v: p - lr * (m / (1 - b1 ** 3)) / (jnp.sqrt(v / (1 - b2 ** 3)) + eps),
        p, m, v)
    return p, m, v


def _middle_max(x):
    return x.max(1)


def _channel_moments(images):
    """Each channel's mean and variance over NHWC images (stacked)."""
    return jnp.stack([images.mean((0, 1, 2)), images.var((0, 1, 2))])


def _wrap_angle(x):
    return jnp.mod(x, 2 * np.pi)


def _floor_remainder(pair):
    """a % b of a pair of s32 arrays (b of every magnitude)."""
    a, b = pair
    return a % (b >> (b & 31))


def _cross_entropy_grad(batch, scale=1.0):
    """The gradient of a cross-entropy's sum by the logits, of a batch
    (logits, integer labels)."""
    def loss(logits, labels):
        logp = jax.nn.log_softmax(logits * scale)
        return -jnp.take_along_axis(logp, labels[:, None], axis=1).sum()
    return jax.grad(loss)(*batch)


def _pad_reversed(x):
    return jnp.pad(x[::-1, ::2], ((1, 2), (3, 0)))[:, 1:-1]


def _layer_norm_bf16(x):
    m = x.mean(-1, keepdims=True)
    return ((x - m) * jax.lax.rsqrt(x.var(-1, keepdims=True) + 1e-5)).astype(jnp.bfloat16)


def _residual_layer_norm(residual):
    """A bf16 layer norm of x + `residual` in f32 (closed over: a constant
    of the module)."""
    def layer_norm(x):
        h = x.astype(jnp.float32) + residual.astype(jnp.float32)
        m = h.mean(-1, keepdims=True)
        v = ((h - m) ** 2).mean(-1, keepdims=True)
        return ((h - m) * jax.lax.rsqrt(v + 1e-6)).astype(jnp.bfloat16)
    return layer_norm


def _reflect_pad(x):
    return jnp.pad(x, ((0, 0), (2, 2), (2, 2), (0, 0)), mode="reflect")


def _blur(x):
    """A binomial 5x5 blur of NHWC images, its edges repeated, in two
    passes (along W, then H)."""
    taps = [1 / 16, 4 / 16, 6 / 16, 4 / 16, 1 / 16]
    _, h, w, _ = x.shape
    p = jnp.pad(x, ((0, 0), (2, 2), (2, 2), (0, 0)), mode="edge")
    across = sum(t * p[:, :, i:i + w] for i, t in enumerate(taps))
    return sum(t * across[:, i:i + h] for i, t in enumerate(taps))


def _to_nchw(x):
    return jnp.transpose(x, (0, 3, 1, 2))


def _rgb(x):
    return x[..., :3]


def _pad_hw(x):
    return jnp.pad(x, ((0, 0), (0, 1), (0, 1), (0, 0)))


def _rms_norm(x, eps=1e-6):
    ms = (x.astype(jnp.float32) ** 2).mean(-1, keepdims=True)
    return x * jax.lax.rsqrt(ms + eps).astype(x.dtype)


def xj_jit(fn):
    """xla_gpu.jax.jit as `_case` takes a wrapper: jitted already."""
    from xla_gpu.jax import jit
    return jit(fn)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10)
    args = parser.parse_args(argv)
    for r in cases(args.runs):
        print(f"{r['name']:70s} ratio {r['ratio']:6.2f} (ours {r['ours_ms']:.4f} ms, "
              f"jax {r['xla_ms']:.4f} ms, max error {r['max_abs_error']:.3g})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
