"""Benchmark: loop fusions through our emitters on the CPU target against
XLA:CPU running the same HLO.

Each case is a module with one fusion at a size where memory traffic
dominates. Both sides are compiled once and run on the same inputs in the
same process; medians of --runs timed runs, each side in blocks of
BLOCK_RUNS runs in a row after an untimed one, the sides taking turns
(benchmarks.block_times_ms). Read the ratio ours / XLA (machines are
noisy), and the max error beside it.
Compile times are the median of COMPILE_REPEATS compiles a side, the
sides taking turns, ours with the kernel caches cleared
(benchmarks.compile_times_ms: the disk cache, $XLA_GPU_CACHE_DIR, is not
used for them).

    .venv/bin/python bench/loop_fusions_cpu.py [--runs 10] [--only NAME]
"""

from __future__ import annotations

import argparse

import numpy as np

from xla_gpu import examples
from xla_gpu.benchmarks import block_times_ms, compile_times_ms, quartiles
from xla_gpu.emitters import DEFAULT_DEVICE
from xla_gpu.hlo import parse_hlo
from xla_gpu.reference import XlaCpuExecutable
from xla_gpu.runtime import cpu as cpu_runtime
from xla_gpu.tools.run_hlo import _compile, _run, reference_text
from xla_gpu.tools.test_correctness import errors, random_input


def _module(body: str, params: list[str], out: str) -> str:
    entry_params = "\n".join(f"  p{i} = {t} parameter({i})" for i, t in enumerate(params))
    fused_params = "\n".join(f"  a{i} = {t} parameter({i})" for i, t in enumerate(params))
    operands = ", ".join(f"p{i}" for i in range(len(params)))
    return (f"HloModule bench\n\nfused {{\n{fused_params}\n{body}\n}}\n\n"
            f"ENTRY main {{\n{entry_params}\n  ROOT f = {out} fusion({operands}), "
            "kind=kLoop, calls=fused\n}\n")


def _summing_module(ty: str, body: str, params: list[str], out: str) -> str:
    """_module with a computation add_<ty> (a + b) for its reductions."""
    return (f"HloModule bench\n\nadd_{ty} {{\n  a = {ty}[] parameter(0)\n"
            f"  b = {ty}[] parameter(1)\n  ROOT c = {ty}[] add(a, b)\n}}\n\n" +
            _module(body, params, out).removeprefix("HloModule bench\n\n"))


def _blur_taps(source: str, name: str, shape: str, window: str, size: int,
               root: bool = False) -> str:
    """HLO of `name` (the computation's root with `root`) = the sum of a
    binomial filter's 5 taps over `source`: tap i its slice `window` (a
    dimension's `{}:{}`) from i to i + size."""
    result = f"ROOT {name}" if root else name
    lines = []
    for i, weight in enumerate((0.0625, 0.25, 0.375, 0.25, 0.0625)):
        lines += [f"  {name}s{i} = {shape} slice({source}), slice={{{window.format(i, i + size)}}}",
                  f"  {name}k{i} = f32[] constant({weight})",
                  f"  {name}b{i} = {shape} broadcast({name}k{i}), dimensions={{}}",
                  f"  {name}m{i} = {shape} multiply({name}s{i}, {name}b{i})"]
    total = f"{name}m0"
    for i in range(1, 5):
        step = result if i == 4 else f"{name}a{i}"
        lines.append(f"  {step} = {shape} add({total}, {name}m{i})")
        total = step
    return "\n".join(lines)


N = "[4096,2048]"
CASES = {
    "gelu bf16 (seed)": examples.path("gelu.hlo").read_text(),
    "f32 chain": _module(f"  e = f32{N} exponential(a0)\n  m = f32{N} multiply(e, a1)\n"
                         f"  ROOT t = f32{N} tanh(m)", [f"f32{N}", f"f32{N}"], f"f32{N}"),
    "s8 integer ops": _module(f"  x = s8{N} xor(a0, a1)\n"
                              f"  s = s8{N} shift-right-arithmetic(x, a1)\n"
                              f"  d = s8{N} divide(a0, s)\n  ROOT r = s32{N} convert(d)",
                              [f"s8{N}", f"s8{N}"], f"s32{N}"),
    # Integer division by a varying divisor, through f64 (stop 78; idiv an
    # element before, as XLA:CPU's).
    "s32 divide + remainder": _module(f"  d = s32{N} divide(a0, a1)\n"
                                      f"  r = s32{N} remainder(a0, a1)\n"
                                      f"  ROOT s = s32{N} add(d, r)",
                                      [f"s32{N}", f"s32{N}"], f"s32{N}"),
    # The f32 and f64 remainder (C's fmod) exact in f64 arithmetic,
    # vectorized (stop 78; libm's an element before, as XLA:CPU's).
    "remainder f32": _module(f"  ROOT r = f32{N} remainder(a0, a1)", [f"f32{N}", f"f32{N}"],
                             f"f32{N}"),
    "remainder f64[1024,1024]": _module("  ROOT r = f64[1024,1024] remainder(a0, a1)",
                                        ["f64[1024,1024]", "f64[1024,1024]"], "f64[1024,1024]"),
    "f8e4m3fn <- f32": _module(f"  ROOT c = f8e4m3fn{N} convert(a0)", [f"f32{N}"],
                               f"f8e4m3fn{N}"),
    "s4 add": _module(f"  ROOT s = s4{N} add(a0, a1)", [f"s4{N}", f"s4{N}"], f"s4{N}"),
    "transpose + add": _module("  t = f32[2048,4096] transpose(a0), dimensions={1,0}\n"
                               "  ROOT s = f32[2048,4096] add(t, a1)",
                               [f"f32{N}", "f32[2048,4096]"], "f32[2048,4096]"),
    "expm1, log1p f32": _module(f"  e = f32{N} exponential-minus-one(a0)\n"
                                f"  s = f32{N} multiply(a1, a1)\n"
                                f"  l = f32{N} log-plus-one(s)\n  ROOT r = f32{N} add(e, l)",
                                [f"f32{N}", f"f32{N}"], f"f32{N}"),
    # f64 exp and log1p (stop 77): arithmetic LLVM vectorizes, within 0.9
    # ulp; they were libm calls (scalar loops), as XLA:CPU's log1p still is.
    "exp, log1p f64[1024,1024]": _module(
        "  e = f64[1024,1024] exponential(a0)\n  s = f64[1024,1024] multiply(a1, a1)\n"
        "  l = f64[1024,1024] log-plus-one(s)\n  ROOT r = f64[1024,1024] add(e, l)",
        ["f64[1024,1024]", "f64[1024,1024]"], "f64[1024,1024]"),
    # f64 tanh (stop 81): XLA:CPU's own rational, its bits (a form within
    # 0.71 ulp ran 2.6x its time through xla_gpu.jax.jit).
    "tanh f64[1024,1024]": _module("  ROOT t = f64[1024,1024] tanh(a0)", ["f64[1024,1024]"],
                                   "f64[1024,1024]"),
    # f64 sin, cos (stop 77): fdlibm's reduction and kernels, libm's past
    # 2^19; pow and erf: unrounded pairs, fdlibm's intervals. XLA:CPU calls
    # libm for each.
    "sin, cos f64[1024,1024]": _module(
        "  s = f64[1024,1024] sine(a0)\n  c = f64[1024,1024] cosine(a1)\n"
        "  ROOT r = f64[1024,1024] add(s, c)",
        ["f64[1024,1024]", "f64[1024,1024]"], "f64[1024,1024]"),
    "pow, erf f64[1024,1024]": _module(
        "  a = f64[1024,1024] abs(a0)\n  p = f64[1024,1024] power(a, a1)\n"
        "  e = f64[1024,1024] erf(a1)\n  ROOT r = f64[1024,1024] add(p, e)",
        ["f64[1024,1024]", "f64[1024,1024]"], "f64[1024,1024]"),
    "sin, cos f32": _module(f"  s = f32{N} sine(a0)\n  c = f32{N} cosine(a1)\n"
                            f"  ROOT r = f32{N} add(s, c)", [f"f32{N}", f"f32{N}"], f"f32{N}"),
    "power f32": _module(f"  a = f32{N} abs(a0)\n  ROOT r = f32{N} power(a, a1)",
                         [f"f32{N}", f"f32{N}"], f"f32{N}"),
    "atan2 f32": _module(f"  ROOT r = f32{N} atan2(a0, a1)", [f"f32{N}", f"f32{N}"], f"f32{N}"),
    "cbrt f32": _module(f"  ROOT r = f32{N} cbrt(a0)", [f"f32{N}"], f"f32{N}"),
    "slices + concat": _module("  lo = f32[2048,2048] slice(a0), slice={[0:2048], [0:2048]}\n"
                               "  hi = f32[2048,2048] slice(a0), slice={[2048:4096], [0:2048]}\n"
                               "  ROOT c = f32[2048,4096] concatenate(hi, lo), dimensions={1}",
                               [f"f32{N}"], "f32[2048,4096]"),
    # An image batch normalized (stop 63): the thread map delinearized over
    # [8,224,224,3] linearizes back to the thread's index (the IndexingMap
    # simplifier's digit merge); before, each element divided by 294, 168,
    # 224 and 3 (0.97 -> 0.12 ms).
    "u8 image normalization [8,224,224,3]": _module(
        "  c = f32[8,224,224,3] convert(a0)\n  k = f32[] constant(0.00392156886)\n"
        "  b = f32[8,224,224,3] broadcast(k), dimensions={}\n"
        "  m = f32[8,224,224,3] multiply(c, b)\n  h = f32[] constant(-0.5)\n"
        "  bh = f32[8,224,224,3] broadcast(h), dimensions={}\n"
        "  ROOT a = f32[8,224,224,3] add(m, bh)", ["u8[8,224,224,3]"], "f32[8,224,224,3]"),
    # jax.jit's (x / 255 - mean) / std per channel of NHWC images (stop 75,
    # through xla_gpu.jax.jit): the channel is the element mod 3, its mean
    # and std gathered. The lane loop runs 3 lanes a step, each lane's
    # channel a constant (-xla-gpu-lower-kernel-to-cpu's
    # unrollAtLanePeriod): a CpuKernel call 0.87 -> 0.09 ms.
    "u8 image normalization per channel [16,224,224,3]": _module(
        "  c = f32[16,224,224,3] convert(a0)\n  k = f32[] constant(0.00392156886)\n"
        "  b = f32[16,224,224,3] broadcast(k), dimensions={}\n"
        "  m = f32[16,224,224,3] multiply(c, b)\n"
        "  bm = f32[16,224,224,3] broadcast(a1), dimensions={3}\n"
        "  s = f32[16,224,224,3] add(m, bm)\n"
        "  bs = f32[16,224,224,3] broadcast(a2), dimensions={3}\n"
        "  ROOT n = f32[16,224,224,3] multiply(s, bs)",
        ["u8[16,224,224,3]", "f32[3]", "f32[3]"], "f32[16,224,224,3]"),
    # A flip along W of NHWC images (stop 75, x[:, :, ::-1]): its 3 lanes a
    # step load backwards from one address, an interleave group (a
    # CpuKernel call 0.47 -> 0.16 ms); since stop 80 a block a row of W and
    # C (loop._host_pixel_row_launch), one loop of 24-float vectors (0.15
    # -> 0.11 ms, its compile 24 -> 15 ms).
    "flip along W f32[16,224,224,3]": _module(
        "  ROOT r = f32[16,224,224,3] reverse(a0), dimensions={2}",
        ["f32[16,224,224,3]"], "f32[16,224,224,3]"),
    # A nearest upsampling of NHWC images by 2 (stop 76, jnp.repeat along H
    # and W): pixel (e / 3) / 2 is e / 6, 6 lanes a step (a CpuKernel call
    # 0.24 -> 0.08 ms); since stop 81 a block a row of W and C, one loop of
    # 6-lane steps (0.094 -> 0.063 ms, compile 26 -> 11 ms: XLA's blocks of
    # 512 elements had cut each row into pieces, a loop of steps each).
    "nearest upsampling by 2 f32[16,112,112,3]": _module(
        "  b = f32[16,112,2,112,2,3] broadcast(a0), dimensions={0,1,3,5}\n"
        "  ROOT r = f32[16,224,224,3] bitcast(b)",
        ["f32[16,112,112,3]"], "f32[16,224,224,3]"),
    # A pixel shuffle (depth to space, XLA:CPU's copy of a transpose of a
    # bitcast) into rows of 112 pixels of 16 channels (stop 81): a block a
    # row of 1792 elements, 4 a thread a block's threads apart, where
    # XLA's blocks of 512 elements cut the rows into segments of 32 lanes,
    # each divided by 112 (0.097 -> 0.063 ms a kernel call).
    "pixel shuffle f32[8,56,56,64] -> [8,112,112,16]": _module(
        "  b = f32[8,56,56,2,2,16] bitcast(a0)\n"
        "  t = f32[8,56,2,56,2,16]{5,4,2,3,1,0} transpose(b), dimensions={0,1,3,2,4,5}\n"
        "  c = f32[8,56,2,56,2,16] copy(t)\n"
        "  ROOT r = f32[8,112,112,16] bitcast(c)",
        ["f32[8,56,56,64]"], "f32[8,112,112,16]"),
    # Its inverse, space to depth (stop 81): the output's rows of 56 pixels
    # of 12 channels read 2 x 2 pixels of 3, a block a row (0.072 -> 0.042
    # ms a kernel call, compile 63 -> 24 ms: XLA's blocks of 512 elements
    # cut the rows of 672).
    "space to depth f32[16,112,112,3] -> [16,56,56,12]": _module(
        "  b = f32[16,56,2,56,2,3] bitcast(a0)\n"
        "  t = f32[16,56,56,2,2,3]{5,4,2,3,1,0} transpose(b), dimensions={0,1,3,2,4,5}\n"
        "  c = f32[16,56,56,2,2,3] copy(t)\n"
        "  ROOT r = f32[16,56,56,12] bitcast(c)",
        ["f32[16,112,112,3]"], "f32[16,56,56,12]"),
    # A separable 5x5 binomial blur of padded NHWC images (stop 80): the
    # horizontal pass h, read at 5 rows by the vertical one, is a subgraph
    # function; the CPU target inlines it while its indices are index
    # maps, and each tap's 3 w + c, w = (e / 3) mod 128 and c = e mod 3,
    # composes to e mod 384, a row (in one run each way: 2.8-3.6x XLA:CPU's
    # time -> 0.42-0.43x, compile 115-119 -> 33-36 ms against XLA's 43;
    # each tap an interleave group of 3 lanes before).
    "separable 5x5 blur f32[8,132,132,3] -> [8,128,128,3]": _module(
        _blur_taps("a0", "h", "f32[8,132,128,3]", "[0:8], [0:132], [{}:{}], [0:3]", 128) + "\n"
        + _blur_taps("h", "v", "f32[8,128,128,3]", "[0:8], [{}:{}], [0:128], [0:3]", 128,
                     root=True),
        ["f32[8,132,132,3]"], "f32[8,128,128,3]"),
    # XLA:CPU's integer row sum, x.sum(-1) over s32[4096,1000] (stop 63):
    # a reduce-window of 1x32 at a stride of 32, then a reduce over 32. A
    # thread's window is one contiguous walk, its padding the loop's
    # bounds (1.45 -> 0.35 ms).
    "s32 row sum's reduce-window 1x32 stride 32":
        _summing_module("s32", "  ROOT r = s32[4096,32] reduce-window(a0, a1), window={size=1x32 "
                        "stride=1x32 pad=0_0x12_12}, to_apply=add_s32",
                        ["s32[4096,1000]", "s32[]"], "s32[4096,32]"),
    # jnp.cumsum(x, 1) over f32[100,10000] (stop 84, through
    # xla_gpu.jax.jit): jax's first reduce-window, windows of 16 over
    # [100,625,16], in blocks of 80 that tile each batch of 10000
    # (loop.host_whole_batch_launch; blocks of 128 crossed a batch's end,
    # every load gathered: 3.0 -> 0.37 ms a kernel call).
    "cumsum's reduce-window of 16 f32[100,625,16]":
        _summing_module("f32", "  ROOT r = f32[100,625,16] reduce-window(a0, a1), "
                        "window={size=1x1x16 pad=0_0x0_0x15_0}, to_apply=add_f32",
                        ["f32[100,625,16]", "f32[]"], "f32[100,625,16]"),
    # jnp.pad(x[::-1, ::2], ((1, 2), (3, 0)))[:, 1:-1] (stop 73, found
    # running jax programs through xla_gpu.jax.jit): rows of 257 over
    # blocks of 128, each row's segment cut at the pad's first column and
    # at the kernel's last element, so that the strided loads vectorize
    # (cut at the last element only: a scalar loop of conditional loads;
    # a CpuKernel call 41 -> 21 us; XLA:CPU 15-31 us in make bench). The
    # strided loads are still an element at a time: LLVM's vectorizer
    # drops their interleave group, its address "may wrap".
    "pad of a reversed strided slice f32[515,257]": _module(
        "  s = f32[512,256] slice(a0), slice={[0:512:1], [0:512:2]}\n"
        "  r = f32[512,256] reverse(s), dimensions={0}\n  z = f32[] constant(0)\n"
        "  p = f32[515,259] pad(r, z), padding=1_2x3_0\n"
        "  ROOT o = f32[515,257] slice(p), slice={[0:515], [1:258]}",
        ["f32[512,512]"], "f32[515,257]"),
    # x.sum((0, 2)) over f32[8,16,32,24] (stop 73, through
    # xla_gpu.jax.jit): no reduction hero, the loop emitter's thread an
    # output over 256 steps, its lanes rows of 24 -- cut into segments in
    # each step, where each lane divided by 24 every step (a CpuKernel
    # call 66 -> 17 us).
    # x[:, :-2] + 2 * x[:, 1:-1] + x[:, 2:] (stop 73, through
    # xla_gpu.jax.jit): rows of 998 over blocks of 512 threads, cut at the
    # rows' ends into pieces LLVM vectorized masked, every iteration (a
    # CpuKernel call 0.75-0.86 -> 0.34-0.38 ms with its epilogue instead).
    "three shifted slices f32[4096,1000] -> [4096,998]": _module(
        "  l = f32[4096,998] slice(a0), slice={[0:4096], [0:998]}\n"
        "  m = f32[4096,998] slice(a0), slice={[0:4096], [1:999]}\n"
        "  c = f32[] constant(2)\n  b = f32[4096,998] broadcast(c), dimensions={}\n"
        "  t = f32[4096,998] multiply(m, b)\n  s = f32[4096,998] add(l, t)\n"
        "  r = f32[4096,998] slice(a0), slice={[0:4096], [2:1000]}\n"
        "  ROOT o = f32[4096,998] add(s, r)", ["f32[4096,1000]"], "f32[4096,998]"),
    # Softmax's exp(x - max) over rows of 2048 (stop 83), 16 MiB in and
    # out: a block a row of 512 threads, 4 elements each, folded into 2048
    # threads (-xla-gpu-fold-loops-into-threads past 1024), one walk along
    # the row; until then the thread's 4 a block's threads apart, 4
    # streams a row side by side (0.39-0.48 -> 0.24-0.25 ms a kernel call).
    "exp(x - max) over rows of 2048 f32[2048,2048]": _module(
        "  b = f32[2048,2048] broadcast(a1), dimensions={0}\n"
        "  s = f32[2048,2048] subtract(a0, b)\n  ROOT e = f32[2048,2048] exponential(s)",
        ["f32[2048,2048]", "f32[2048]"], "f32[2048,2048]"),
    "sum over dimensions 0 and 2 of f32[8,16,32,24]":
        _summing_module("f32", "  ROOT r = f32[16,24] reduce(a0, a1), dimensions={0,2}, "
                        "to_apply=add_f32", ["f32[8,16,32,24]", "f32[]"], "f32[16,24]"),
}


def bench(text: str, runs: int) -> dict:
    module = parse_hlo(text)
    rng = np.random.RandomState(0)
    # On 64-byte boundaries, as XLA's buffers (which xla.put copies them
    # into, and which the JAX backend's kernels get) are.
    inputs = [cpu_runtime.aligned(random_input(p.shape, rng)) for p in module.entry.parameters]
    # Our kernels are the CPU target's own variants (host=True), as
    # xla_gpu.jax.jit runs them (since stop 79; XLA:GPU's kernels before:
    # the same for most cases, a narrow middle-dimension sum's small column
    # variant 3x faster). Where XLA:CPU calls a library (YNNPACK for
    # reductions) it generates no code; its compile with the libraries off
    # is the code generator's. The three sides' compiles take turns
    # (compile_times_ms); where XLA calls no library, the third is the
    # second again, and the second's time is the code generator's.
    reference = reference_text(module)
    (ours_compile, kernels), (xla_compile, xla), (xla_codegen_compile, _) = compile_times_ms([
        (lambda: _compile(module, None, DEFAULT_DEVICE, host=True), cpu_runtime._cache.clear),
        (lambda: XlaCpuExecutable(reference), None),
        (lambda: XlaCpuExecutable(reference, library_fusions=False), None)])
    library_fusions = xla.library_fusions()
    if not library_fusions:
        xla_codegen_compile = xla_compile
    buffers = xla.put(inputs)
    ours = _run(module, kernels, inputs)
    want = [np.asarray(o) for o in xla.execute(buffers)]
    ours_t, xla_t = block_times_ms([lambda: _run(module, kernels, inputs),
                                    lambda: xla.execute(buffers)], runs)
    err = max(float(np.max(errors(g, w)[0])) for g, w in zip(ours, want))
    ours_q = quartiles(ours_t)
    xla_q = quartiles(xla_t)
    return {"ours_ms": ours_q[1], "xla_ms": xla_q[1], "ours_quartiles_ms": ours_q,
            "xla_quartiles_ms": xla_q, "ours_compile_ms": ours_compile,
            "xla_compile_ms": xla_compile, "xla_codegen_compile_ms": xla_codegen_compile,
            "xla_library_fusions": library_fusions, "max_abs_error": err}


def run_cases(cases: dict[str, str], title: str, argv=None) -> int:
    """The command line of a benchmark file: times each case (or those
    --only names) and prints a line each."""
    parser = argparse.ArgumentParser(description=title)
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--only", default=None, help="run the cases whose name has this")
    args = parser.parse_args(argv)
    print(f"{title}, medians of {args.runs} runs")
    width = max(len(name) for name in cases)
    for name, text in cases.items():
        if args.only and args.only not in name:
            continue
        r = bench(text, args.runs)
        print(f"  {name:{width}s} ours {r['ours_ms']:8.3f} ms  XLA {r['xla_ms']:8.3f} ms  "
              f"ratio {r['ours_ms'] / r['xla_ms']:5.2f}  compile {r['ours_compile_ms']:4.0f} / "
              f"{r['xla_compile_ms']:4.0f} ms  max abs error {r['max_abs_error']:.3g}", flush=True)
    return 0


def main(argv=None) -> int:
    return run_cases(CASES, "loop fusions on the CPU target vs XLA:CPU", argv)


if __name__ == "__main__":
    raise SystemExit(main())
