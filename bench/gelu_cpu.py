"""Benchmark: the seed's GELU loop kernel on the CPU target against XLA:CPU.

Both run the same computation on the same machine in the same process: our
kernel (examples/seed_gelu.mlir, and its f32 variant) through CpuKernel, and
XLA:CPU through jax.jit. Medians of --runs timed runs after one warm-up; the
ratio ours / XLA is what to read (machines are noisy).

    .venv/bin/python bench/gelu_cpu.py [--runs 20]
"""

from __future__ import annotations

import argparse

import jax

from xla_gpu.benchmarks import GELU_SHAPE, bench_gelu_cpu


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20)
    args = parser.parse_args(argv)
    if args.runs < 10:
        parser.error("use at least 10 runs")
    print(f"GELU {GELU_SHAPE} on {jax.devices()[0].platform}, median of {args.runs} runs")
    for name in ("bf16", "f32"):
        r = bench_gelu_cpu(name, args.runs)
        print(f"  {name:5s} ours {r['ours_ms']:7.2f} ms   XLA:CPU {r['xla_ms']:7.2f} ms   "
              f"ratio {r['ratio']:.2f}   compile ours {r['ours_compile_ms']:.0f} ms / "
              f"XLA {r['xla_compile_ms']:.0f} ms   max |ours - XLA| {r['max_abs_diff_vs_xla']:.3g}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
