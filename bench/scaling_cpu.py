"""Benchmark: how our time grows with the problem size and the number of
worker threads, beside XLA:CPU's, on the seed's GELU (f32[n], n = 2^16 ...
2^26), with the machine's copy bandwidth measured in the same run (a numpy
copy of 256 MiB) to say where the kernel is memory-bound: GELU reads and
writes 8 bytes an element.

    .venv/bin/python bench/scaling_cpu.py [--runs 7] [--max-log2 26]

XLA:CPU's thread count is fixed when its backend starts, so it runs with
its default; ours runs with 1 and 2 worker threads and as a call without a
thread count does (one thread below CpuKernel's MIN_BYTES_FOR_WORKERS);
the ratio and GB/s are of the latter.
"""

from __future__ import annotations

import argparse
import time

import jax
import numpy as np
from mlir import ir

from xla_gpu.benchmarks import FIRST_CALLS, gelu, median_ms
from xla_gpu.emitters import DEFAULT_DEVICE, emit_kernel, find_fusion
from xla_gpu.hlo import parse_hlo
from xla_gpu.runtime import CpuKernel
from xla_gpu.runtime.cpu import aligned, aligned_empty


def gelu_hlo(n: int) -> str:
    """The seed's GELU on f32[n] (its constants, op for op)."""
    s = f"f32[{n}]"
    consts = [("c0", "0.5"), ("c1", "1"), ("c2", "0.79785"), ("c3", "0.044708")]
    lines = [f"  p = {s} parameter(0)"]
    for name, value in consts:
        lines += [f"  {name}s = f32[] constant({value})",
                  f"  {name} = {s} broadcast({name}s), dimensions={{}}"]
    lines += [f"  sq = {s} multiply(p, p)", f"  cube = {s} multiply(sq, p)",
              f"  m3 = {s} multiply(cube, c3)", f"  a1 = {s} add(p, m3)",
              f"  m2 = {s} multiply(a1, c2)", f"  t = {s} tanh(m2)",
              f"  a0 = {s} add(t, c1)", f"  m1 = {s} multiply(a0, c0)",
              f"  ROOT r = {s} multiply(p, m1)"]
    return "HloModule gelu\n\nENTRY gelu {\n" + "\n".join(lines) + "\n}\n"


def copy_bandwidth_gbs(runs: int) -> float:
    """Bytes read and written a second by a numpy copy of 256 MiB."""
    src = np.ones(1 << 26, np.float32)
    dst = np.empty_like(src)
    ms = median_ms(lambda: np.copyto(dst, src), runs)
    return 2 * src.nbytes / (ms * 1e-3) / 1e9


def run(runs: int, max_log2: int) -> tuple[float, list[dict]]:
    copy_gbs = copy_bandwidth_gbs(runs)
    rows = []
    for log2 in range(16, max_log2 + 1, 2):
        n = 1 << log2
        with ir.Context():
            kernel = CpuKernel(emit_kernel(find_fusion(parse_hlo(gelu_hlo(n))), DEFAULT_DEVICE))
        # On 64-byte boundaries, as XLA's buffers are (cpu.aligned).
        x = aligned(np.random.RandomState(0).randn(n).astype(np.float32))
        out = aligned_empty(x.shape, x.dtype)
        ours = {t: median_ms(lambda t=t: kernel(x, out, num_threads=t), runs) for t in (1, 2)}
        # What a call without a thread count does (small grids: the caller),
        # once its first calls have chosen its threads (CpuKernel's probe,
        # the calls block_times_ms makes first: timed among the runs, half
        # of them on one thread, they made this column read between the
        # two above at 2^24 with --runs 7).
        for _ in range(FIRST_CALLS):
            kernel(x, out)
        ours["default"] = median_ms(lambda: kernel(x, out), runs)
        xj = jax.numpy.asarray(x)
        compiled = jax.jit(gelu).lower(xj).compile()
        xla = median_ms(lambda: compiled(xj).block_until_ready(), runs)
        err = float(np.max(np.abs(out - np.asarray(compiled(xj)))))
        gbs = 8 * n / (ours["default"] * 1e-3) / 1e9
        rows.append({"n": n, "ours_1_thread_ms": ours[1], "ours_2_threads_ms": ours[2],
                     "ours_ms": ours["default"], "xla_ms": xla, "ratio": ours["default"] / xla,
                     "ours_gbs": gbs,
                     "fraction_of_copy_bandwidth": gbs / copy_gbs, "max_abs_error": err})
    return copy_gbs, rows


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--max-log2", type=int, default=26)
    args = parser.parse_args(argv)
    start = time.perf_counter()
    copy_gbs, rows = run(args.runs, args.max_log2)
    print(f"numpy copy bandwidth: {copy_gbs:.1f} GB/s (read + write)")
    print(f"{'n':>10} {'ours 1 thr':>11} {'ours 2 thr':>11} {'ours':>9} {'XLA:CPU':>9} "
          f"{'ratio':>6} {'GB/s':>6} {'of copy':>8} {'max err':>8}")
    for r in rows:
        print(f"{r['n']:>10} {r['ours_1_thread_ms']:>9.3f}ms {r['ours_2_threads_ms']:>9.3f}ms "
              f"{r['ours_ms']:>7.3f}ms {r['xla_ms']:>7.3f}ms {r['ratio']:>6.2f} "
              f"{r['ours_gbs']:>6.1f} "
              f"{r['fraction_of_copy_bandwidth']:>7.0%} {r['max_abs_error']:>8.1e}")
    print(f"({time.perf_counter() - start:.0f} s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
