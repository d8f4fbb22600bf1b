"""Benchmarks shared by bench/ and `make demo`: the seed's GELU loop kernel
on the CPU target against XLA:CPU (jax.jit) in the same process."""

from __future__ import annotations

import os
import time

import jax
import jax.numpy as jnp
import ml_dtypes
import numpy as np

from . import examples
from .runtime import CpuKernel, cpu

__all__ = ["BLOCK_RUNS", "COMPILE_REPEATS", "FIRST_CALLS", "GELU_SHAPE", "bench_gelu_cpu",
           "block_times_ms", "compile_times_ms", "gelu", "median_ms", "quartiles", "times_ms"]

GELU_SHAPE = (6, 512, 4096)

# Timed runs a side gets in a row (block_times_ms).
BLOCK_RUNS = 5

# Untimed calls a side makes before its first block (block_times_ms): a
# CPU kernel's first call and its thread probe's calls.
FIRST_CALLS = 1 + 2 * cpu.PROBE_CALLS

# Compiles timed a side: one compile's time varies up to 2x on these
# machines (and a process's first one also pays for what is set up once).
COMPILE_REPEATS = 5


def gelu(x):
    """The seed's gelu.hlo, op for op."""
    t = x.dtype
    c0, c1 = jnp.asarray(0.5, t), jnp.asarray(1, t)
    c2, c3 = jnp.asarray(0.79785, t), jnp.asarray(0.044708, t)
    return x * ((jnp.tanh((x + x * x * x * c3) * c2) + c1) * c0)


def times_ms(fn, runs: int, calls: int = 1) -> list[float]:
    """The milliseconds a call of `fn` took in each of `runs` timed runs
    (of `calls` calls each, averaged), after one call to warm up."""
    fn()
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        for _ in range(calls):
            fn()
        times.append((time.perf_counter() - start) / calls * 1e3)
    return times


def block_times_ms(sides, runs: int, block: int = BLOCK_RUNS,
                   calls: int = 1) -> list[list[float]]:
    """The milliseconds of `runs` timed calls of each function in `sides`,
    taken in blocks: each side in turn makes one untimed call, then `block`
    timed calls in a row. Each side is timed in its own steady state (its
    data in the caches, its code and thread pool warm, as a program that
    runs it step after step has them), and the sides still share whatever
    the machine does over the minutes of the run. Single runs in turn
    instead time each side after the other has run: the other's buffers
    have displaced its data from the caches (a 16 MiB row sum's input, of a
    32 MiB L3), and the timings carry that: the row sum read 0.58-0.93x,
    interleaved, against 1.08-1.20x in blocks of 5, in one process. A run
    may be the mean of `calls` calls (times_ms), for calls of microseconds.
    The sides take their turns in the order given, then in the reverse
    order, and so on: of two sides (the suite's), each follows the other's
    block as often as its own. In one fixed order each side always ran
    right after the same other side: two loads of one object as the first
    two of three sides (XLA:CPU's the third, so that the first always ran
    after XLA's block) read the first up to 10 % slower than the second,
    2 % at the median over the bench's cases, in each of two processes.
    Before its first block each side makes FIRST_CALLS untimed calls: a
    CPU kernel's first calls are its thread probe (CpuKernel, the FFI
    handler's WorkerChoice), half of them on one thread, and three of them
    fell among the timed runs of each of our kernels."""
    times: list[list[float]] = [[] for _ in sides]
    for side in sides:
        for _ in range(FIRST_CALLS):
            side()
    order = list(range(len(sides)))
    while min(len(t) for t in times) < runs:
        for k in order:
            timed = times[k]
            timed += times_ms(sides[k], min(block, runs - len(timed)), calls)  # a block
        order.reverse()
    return times


def quartiles(times: list[float]) -> tuple[float, float, float]:
    """(first quartile, median, third quartile) of `times`: the median and
    the spread of the middle half of the runs."""
    q1, median, q3 = np.percentile(times, [25, 50, 75])
    return float(q1), float(median), float(q3)


def median_ms(fn, runs: int) -> float:
    """The median of times_ms(fn, runs)."""
    return quartiles(times_ms(fn, runs))[1]


def compile_times_ms(sides, repeats: int = COMPILE_REPEATS) -> list[tuple[float, object]]:
    """The median milliseconds of `repeats` compiles of each side of
    `sides` -- (compile_once, before) pairs, `before` None or what clears
    that side's caches, run untimed ahead of each compile (so that it is a
    compile, not a cache hit) -- and what each side's last compile
    returned. The compiles run with $XLA_GPU_CACHE_DIR unset (a compile,
    not a read of the disk cache), and the sides take turns: one compile
    a side, in the order given, then in the reverse order, and so on. A
    compile is tens of milliseconds and a slow spell of the machine (up to
    2x) lasts longer: with all of one side's compiles first, then all of
    the other's, one side could take all of it (the sin/cos fusion's
    compile read 49 ms in one suite run that way, 27.6 best of 5 in the
    compile profile right after, against XLA's 37)."""
    times: list[list[float]] = [[] for _ in sides]
    results: list = [None] * len(sides)
    order = list(range(len(sides)))
    cache_dir = os.environ.pop("XLA_GPU_CACHE_DIR", None)
    try:
        for _ in range(repeats):
            for k in order:
                compile_once, before = sides[k]
                if before is not None:
                    before()
                start = time.perf_counter()
                results[k] = compile_once()
                times[k].append((time.perf_counter() - start) * 1e3)
            order.reverse()
    finally:
        if cache_dir is not None:
            os.environ["XLA_GPU_CACHE_DIR"] = cache_dir
    return [(float(np.median(t)), r) for t, r in zip(times, results)]


def bench_gelu_cpu(dtype_name: str, runs: int) -> dict:
    """Times our CPU kernel and XLA:CPU on the seed GELU ("bf16" or "f32")."""
    source = examples.path("seed_gelu.mlir").read_text()
    np_dtype, jnp_dtype = ml_dtypes.bfloat16, jnp.bfloat16
    if dtype_name == "f32":
        source = source.replace("bf16", "f32")
        np_dtype, jnp_dtype = np.float32, jnp.float32
    # On 64-byte boundaries, as XLA's buffers are (cpu.aligned).
    x = cpu.aligned(np.random.RandomState(0).randn(*GELU_SHAPE).astype(np_dtype))
    out = cpu.aligned(np.zeros_like(x))

    xj = jnp.asarray(x)
    # jax keeps compiled executables in memory: cleared before each compile.
    (ours_compile, kernel), (xla_compile, compiled) = compile_times_ms([
        (lambda: CpuKernel(source), cpu._cache.clear),
        (lambda: jax.jit(gelu).lower(xj).compile(), jax.clear_caches)])
    ours = quartiles(times_ms(lambda: kernel(x, out), runs))
    xla = quartiles(times_ms(lambda: compiled(xj).block_until_ready(), runs))
    reference = np.asarray(compiled(xj)).astype(np.float32)
    max_diff = float(np.abs(out.astype(np.float32) - reference).max())
    return {"dtype": dtype_name, "ours_ms": ours[1], "xla_ms": xla[1], "ratio": ours[1] / xla[1],
            "ours_quartiles_ms": ours, "xla_quartiles_ms": xla,
            "ours_compile_ms": ours_compile, "xla_compile_ms": xla_compile,
            "max_abs_diff_vs_xla": max_diff}
