"""Benchmark: reduction fusions through our reduction emitters on the CPU
target against XLA:CPU running the same HLO (the cases of the reduction
issue: row sum, column sum, short-row max, softmax's exp + sum; and an
exp + column sum whose last step reaches past the rows).

Both sides are compiled once and run on the same inputs in the same
process; medians of --runs timed runs a side, in blocks
(loop_fusions_cpu.bench). Read the ratio
ours / XLA (machines are noisy), and the max error beside it: f32 sums in
another order than XLA's differ in the last bits; in the bf16 softmax
XLA:CPU keeps exp() in f32 at this size (it rounds to bf16 on small
inputs), which our kernel, as the HLO says and XLA:GPU does, does not.

    .venv/bin/python bench/reductions_cpu.py [--runs 10] [--only NAME]
"""

from __future__ import annotations

from loop_fusions_cpu import run_cases


def _module(reducer: str, body: str, param: str, out: str) -> str:
    ty = reducer.split("_")[1]
    op = {"add": "add", "max": "maximum"}[reducer.split("_")[0]]
    return (f"HloModule bench\n\n{reducer} {{\n  a = {ty}[] parameter(0)\n"
            f"  b = {ty}[] parameter(1)\n  ROOT r = {ty}[] {op}(a, b)\n}}\n\n"
            f"fused {{\n  a0 = {param} parameter(0)\n{body}\n}}\n\n"
            f"ENTRY main {{\n  p0 = {param} parameter(0)\n"
            f"  ROOT f = {out} fusion(p0), kind=kInput, calls=fused\n}}\n")


CASES = {
    "row sum f32[1024,4096]": _module(
        "add_f32", "  z = f32[] constant(0)\n"
        "  ROOT r = f32[1024] reduce(a0, z), dimensions={1}, to_apply=add_f32",
        "f32[1024,4096]", "f32[1024]"),
    # 64 MiB, twice the last-level cache: the rows stream from memory, a
    # row a block (reduction.HOST_MIN_STREAMED_ROWS_BYTES; XLA's 4 rows a
    # block side by side ran 1.6x slower).
    "row sum f32[16384,1024] (64 MiB)": _module(
        "add_f32", "  z = f32[] constant(0)\n"
        "  ROOT r = f32[16384] reduce(a0, z), dimensions={1}, to_apply=add_f32",
        "f32[16384,1024]", "f32[16384]"),
    # Sums over a middle dimension of 64 MiB that XLA's heuristic leaves to
    # the loop emitter (a thread an output): two blocks a row of 256 columns,
    # batched two rows' streams at a time on the CPU target (8 before: 1.4x
    # slower); and 16 columns, a block two slabs of 16 KiB (32 outputs),
    # unbatched (16 blocks side by side: 2.2x slower). -xla-gpu-lower-kernel-to-cpu's
    # blocksAlongStream and blocksFarApart.
    "middle-dimension sum f32[256,256,256] (64 MiB)": _module(
        "add_f32", "  z = f32[] constant(0)\n"
        "  ROOT r = f32[256,256] reduce(a0, z), dimensions={1}, to_apply=add_f32",
        "f32[256,256,256]", "f32[256,256]"),
    "middle-dimension sum f32[4096,256,16] (64 MiB)": _module(
        "add_f32", "  z = f32[] constant(0)\n"
        "  ROOT r = f32[4096,16] reduce(a0, z), dimensions={1}, to_apply=add_f32",
        "f32[4096,256,16]", "f32[4096,16]"),
    "column sum f32[4096,1024]": _module(
        "add_f32", "  z = f32[] constant(0)\n"
        "  ROOT r = f32[1024] reduce(a0, z), dimensions={0}, to_apply=add_f32",
        "f32[4096,1024]", "f32[1024]"),
    # 16384 rows: XLA's heuristic makes it a loop fusion (a thread a column
    # over every row); on two threads each would read half of each 4 KiB
    # row, which ran 1.5x slower than one (CpuKernel's probe calls decide).
    # Since stop 72 run-hlo splits it as XLA:GPU's tree-reduction-rewriter
    # would have (and xla_gpu.jax.jit does): 32 partial sums a column, then
    # their sum (2.2 -> 0.8-1.1 ms; XLA:CPU's YNNPACK 1.2-1.6).
    "column sum f32[16384,1024]": _module(
        "add_f32", "  z = f32[] constant(0)\n"
        "  ROOT r = f32[1024] reduce(a0, z), dimensions={0}, to_apply=add_f32",
        "f32[16384,1024]", "f32[1024]"),
    # Rows of 12: XLA's heuristic leaves them to the loop emitter.
    "row max f32[8192,12]": _module(
        "max_f32", "  z = f32[] constant(-inf)\n"
        "  ROOT r = f32[8192] reduce(a0, z), dimensions={1}, to_apply=max_f32",
        "f32[8192,12]", "f32[8192]"),
    "multi-row max f32[8192,16]": _module(
        "max_f32", "  z = f32[] constant(-inf)\n"
        "  ROOT r = f32[8192] reduce(a0, z), dimensions={1}, to_apply=max_f32",
        "f32[8192,16]", "f32[8192]"),
    # A bf16 attention softmax's max (rows of 256): each thread's 8
    # elements are computed by every lane before the warp's shuffle tree
    # (lower_kernel_to_cpu.cpp, kMaxLoadsAtLanes).
    "row max bf16[16384,256]": _module(
        "max_bf16", "  z = bf16[] constant(-inf)\n"
        "  ROOT r = bf16[16384] reduce(a0, z), dimensions={1}, to_apply=max_bf16",
        "bf16[16384,256]", "bf16[16384]"),
    # The same in f16: its max computed in f32 folds back to f16 maxima
    # (LLVM's InstCombine), which x86 without AVX512-FP16 runs a lane at a
    # time; HostJit.cpp widens them again.
    "row max f16[16384,256]": _module(
        "max_f16", "  z = f16[] constant(-inf)\n"
        "  ROOT r = f16[16384] reduce(a0, z), dimensions={1}, to_apply=max_f16",
        "f16[16384,256]", "f16[16384]"),
    # Long f16 rows: each lane's accumulator lives across its steps (and
    # its warp's result across the block's tree) in stack slots, which
    # -xla-gpu-expand-bf16-conversions keeps in f32 (they held f16,
    # converted at every step: 0.53x).
    "row max f16[2048,2048]": _module(
        "max_f16", "  z = f16[] constant(-inf)\n"
        "  ROOT r = f16[2048] reduce(a0, z), dimensions={1}, to_apply=max_f16",
        "f16[2048,2048]", "f16[2048]"),
    "softmax exp+sum bf16[512,777]": _module(
        "add_f32", "  e = bf16[512,777] exponential(a0)\n  c = f32[512,777] convert(e)\n"
        "  z = f32[] constant(0)\n"
        "  ROOT r = f32[512] reduce(c, z), dimensions={1}, to_apply=add_f32",
        "bf16[512,777]", "f32[512]"),
    # A softmax over axis 0's sum (stop 63): 32 rows a step, the last step
    # past row 999 for most warps, peeled on the CPU target so that the
    # steps before it vectorize (0.34 -> 0.08 ms; XLA:CPU 0.19).
    "exp + column sum f32[1000,512]": _module(
        "add_f32", "  e = f32[1000,512] exponential(a0)\n  z = f32[] constant(0)\n"
        "  ROOT r = f32[512] reduce(e, z), dimensions={0}, to_apply=add_f32",
        "f32[1000,512]", "f32[512]"),
    # An f64 pow in a loop the vectorizer leaves scalar (a sum over the
    # middle dimension, 3 columns; stop 77): the pow's function calls
    # libm there, its vector variants only where a loop vectorizes (the
    # approximation inlined in the scalar loop took 6.6x libm's time).
    "pow in a middle-dimension sum f64[512,512,3]": _module(
        "add_f64", "  c = f64[] constant(-1.5)\n  cb = f64[512,512,3] broadcast(c), dimensions={}\n"
        "  a = f64[512,512,3] abs(a0)\n  p = f64[512,512,3] power(a, cb)\n"
        "  m = f64[512,512,3] multiply(a0, p)\n  z = f64[] constant(0)\n"
        "  ROOT r = f64[512,3] reduce(m, z), dimensions={1}, to_apply=add_f64",
        "f64[512,512,3]", "f64[512,3]"),
}


def main(argv=None) -> int:
    return run_cases(CASES, "reductions on the CPU target vs XLA:CPU", argv)


if __name__ == "__main__":
    raise SystemExit(main())
