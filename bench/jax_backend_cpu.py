"""Benchmark: the JAX backend (xla_gpu.jax) on the CPU, against plain jax
(XLA:CPU) in the same process.

  - custom-call overhead: a jitted call of one of our kernels on a tiny
    array (f32[8] + 1) against the same jnp op jitted; the difference per
    call is the FFI dispatch (XLA's custom-call thunk, then our handler:
    buffer verification, block launch; the attributes are decoded once,
    when XLA instantiates the call). Goal: at most 2 us more.
  - the seed's GELU through `xla_gpu.jax.kernel` against `jax.jit` of the
    same function. Goal: ratio <= 1.0.

Medians (and quartiles) of --runs timed runs, the two sides taking turns
in blocks (benchmarks.block_times_ms, as every case of `make bench`);
each run of the overhead case is the mean of CALLS back-to-back calls.
The compile times are each side's `jax.jit` + first call of the
function, after both sides have compiled another function (_warm_up):
what the first use in a process pays once (loading and registering our
FFI library, a thread's first LLVM target machine) is left out, as jax's
own first compile is.

    .venv/bin/python bench/jax_backend_cpu.py [--runs 10]
"""

from __future__ import annotations

import argparse
import time

import jax
import jax.numpy as jnp
import numpy as np

from xla_gpu.benchmarks import block_times_ms, quartiles

CALLS = 2000


def _gelu(x):
    # The seed's GELU (tanh form), in the input's type.
    return 0.5 * x * (1 + jnp.tanh(0.7978845608 * (x + 0.044715 * x * x * x)))


def _warm_up() -> None:
    from xla_gpu.jax import kernel

    y = jnp.ones((3, 5), jnp.float32)
    jax.jit(kernel(lambda v: v * 3.0))(y).block_until_ready()
    jax.jit(lambda v: v * 3.0)(y).block_until_ready()


def cases(runs: int) -> list[dict]:
    """One record per case: name, ours_ms, xla_ms, compile times,
    max_abs_error (bench/suite.py's fields)."""
    from xla_gpu.jax import kernel

    records = []
    _warm_up()
    # 1. Overhead.
    x = jnp.arange(8, dtype=jnp.float32)
    start = time.perf_counter()
    ours = jax.jit(kernel(lambda v: v + 1.0))
    ours(x).block_until_ready()
    compile_ours = time.perf_counter() - start
    start = time.perf_counter()
    plain = jax.jit(lambda v: v + 1.0)
    plain(x).block_until_ready()
    compile_xla = time.perf_counter() - start
    ours_t, xla_t = block_times_ms([lambda: ours(x).block_until_ready(),
                                    lambda: plain(x).block_until_ready()], runs, calls=CALLS)
    ours_q, xla_q = quartiles(ours_t), quartiles(xla_t)
    ours_ms, xla_ms = ours_q[1], xla_q[1]
    err = float(np.max(np.abs(np.asarray(ours(x)) - np.asarray(plain(x)))))
    records.append(dict(name="jax_backend_cpu: custom-call overhead f32[8] + 1 "
                             f"(+{(ours_ms - xla_ms) * 1e3:.2f} us a call)",
                        ours_ms=ours_ms, xla_ms=xla_ms, ours_quartiles_ms=ours_q,
                        xla_quartiles_ms=xla_q, compile_ours_ms=compile_ours * 1e3,
                        compile_xla_ms=compile_xla * 1e3, max_abs_error=err))
    # 2. The seed's GELU, bf16[6,512,4096].
    g = jnp.asarray(np.random.default_rng(0).standard_normal((6, 512, 4096), np.float32),
                    jnp.bfloat16)
    start = time.perf_counter()
    ours = jax.jit(kernel(_gelu))
    ours(g).block_until_ready()
    compile_ours = time.perf_counter() - start
    start = time.perf_counter()
    plain = jax.jit(_gelu)
    plain(g).block_until_ready()
    compile_xla = time.perf_counter() - start
    ours_t, xla_t = block_times_ms([lambda: ours(g).block_until_ready(),
                                    lambda: plain(g).block_until_ready()], runs)
    ours_q, xla_q = quartiles(ours_t), quartiles(xla_t)
    ours_ms, xla_ms = ours_q[1], xla_q[1]
    err = float(np.max(np.abs(np.asarray(ours(g), np.float32) - np.asarray(plain(g), np.float32))))
    records.append(dict(name="jax_backend_cpu: seed GELU bf16 via xla_gpu.jax.kernel",
                        ours_ms=ours_ms, xla_ms=xla_ms, ours_quartiles_ms=ours_q,
                        xla_quartiles_ms=xla_q, compile_ours_ms=compile_ours * 1e3,
                        compile_xla_ms=compile_xla * 1e3, max_abs_error=err))
    for r in records:
        r["ratio"] = r["ours_ms"] / r["xla_ms"]
    return records


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
