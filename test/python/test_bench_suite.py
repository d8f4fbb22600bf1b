"""`make bench`'s plumbing (bench/suite.py): every benchmark file's cases
are in the suite, and the results are written as the issue specifies (a
JSON record per case with its fields, a PNG chart). The timings themselves
are benchmarks, not tests."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2] / "bench"
sys.path.insert(0, str(BENCH))

import suite  # noqa: E402


def test_every_benchmark_file_with_cases_is_in_the_suite():
    files = sorted(p.stem for p in BENCH.glob("*.py")
                   if "\nCASES = {" in p.read_text())
    assert sorted(suite.BENCH_FILES) == files
    names = [name for _, name, _ in suite.hlo_cases()]
    assert "KV-cache update bf16[64,1,128] -> [64,1024,128]" in names
    assert len(names) == len(set(names))
    assert all(text.startswith("HloModule") for _, _, text in suite.hlo_cases())


def test_results_are_a_json_record_per_case_and_a_png(tmp_path):
    # Each side as (first quartile, median, third quartile), in ms.
    records = [suite._record("fast", (0.5, 1.0, 2.0), (2.0, 4.0, 5.0), 10.0, 20.0, 0.0),
               suite._record("slow", (9.0, 9.0, 9.0), (1.5, 3.0, 4.5), 30.0, 20.0, 1e-6,
                             compile_xla_codegen_ms=55.0, xla_library_fusions=1)]
    json_path, png_path = suite.write_results(records, tmp_path / "out")
    written = json.loads(json_path.read_text())
    assert [r["name"] for r in written] == ["fast", "slow"]
    assert all(set(r) == set(suite.RECORD_FIELDS) for r in written)
    assert [r["ratio"] for r in written] == [0.25, 3.0]
    # The ratio's band: our first quartile over XLA's third, our third over
    # XLA's first.
    assert [(r["ratio_low"], r["ratio_high"]) for r in written] == [(0.1, 1.0), (2.0, 6.0)]
    assert written[0]["ours_q1_ms"] == 0.5 and written[1]["xla_q3_ms"] == 4.5
    # XLA's code generator's compile: its own where XLA calls a library,
    # else the same compile.
    assert [(r["compile_xla_codegen_ms"], r["xla_library_fusions"]) for r in written] == [
        (20.0, 0), (55.0, 1)]
    png = png_path.read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 5000


def test_a_run_names_its_host():
    # The host CPU as LLVM names it, its vector extensions and its cores:
    # the ratios differ from host to host.
    from xla_gpu.runtime import host_code
    summary = suite.host_summary()
    cpu = host_code.host_target().split()[1]
    assert summary.startswith(f"{cpu}, ")
    assert summary.endswith(f" {len(os.sched_getaffinity(0))} cores")
    assert ("AVX-512" in summary) == host_code.has_512_bit_vectors()


def test_xla_cpu_generates_the_code_of_a_reduction_with_its_libraries_off():
    # The compile anchor beside XLA:CPU's own: by default it hands a
    # reduction to YNNPACK (a kCustom fusion, no code generated); with its
    # library fusions off it emits the reduction as a loop fusion. Both
    # compute the same sums.
    import numpy as np
    from reductions_cpu import CASES
    from xla_gpu.hlo import parse_hlo
    from xla_gpu.reference import XlaCpuExecutable
    from xla_gpu.tools.run_hlo import reference_text

    text = reference_text(parse_hlo(CASES["row sum f32[1024,4096]"]))
    library, codegen = XlaCpuExecutable(text), XlaCpuExecutable(text, library_fusions=False)
    assert (library.library_fusions(), codegen.library_fusions()) == (1, 0)
    x = np.random.RandomState(0).uniform(-1, 1, (1024, 4096)).astype(np.float32)
    want = x.astype(np.float64).sum(axis=1)
    for executable in (library, codegen):
        np.testing.assert_allclose(executable.run([x])[0], want, rtol=0, atol=1e-3)


def test_the_jax_cases_code_generator_anchor_calls_no_library():
    # The JAX cases' compile anchor beside jax.jit's: jax.jit with
    # XLA:CPU's library fusions off (jax_backend_cpu._LIBRARIES_OFF), which
    # generates the row sum's code where jax.jit hands it to YNNPACK, and
    # computes the same sums.
    import jax
    import jax.numpy as jnp
    import numpy as np
    import jax_backend_cpu

    x = jnp.asarray(np.random.RandomState(0).uniform(-1, 1, (1024, 4096)).astype(np.float32))
    fn = lambda v: v.sum(axis=1)  # noqa: E731
    assert jax_backend_cpu._library_fusions(fn, x) == 1
    codegen = jax.jit(fn, compiler_options=jax_backend_cpu._LIBRARIES_OFF)
    assert codegen.lower(x).compile().as_text().count("kind=kCustom") == 0
    want = np.asarray(x, np.float64).sum(axis=1)
    for f in (jax.jit(fn), codegen):
        np.testing.assert_allclose(np.asarray(f(x)), want, rtol=0, atol=1e-3)


def test_each_side_is_timed_in_blocks_after_an_untimed_run():
    # The suite's HLO cases time ours and XLA:CPU in turns of a block each:
    # one untimed call (the side's caches and pool warm again after the
    # other side ran), then up to `block` timed calls in a row; the sides'
    # order reversed every turn, so that neither always follows the other.
    # Before all that, each side's FIRST_CALLS untimed calls: a CPU kernel's
    # first call and its thread probe (half of whose calls run on one
    # thread) are over before any run is timed.
    from xla_gpu.benchmarks import FIRST_CALLS, block_times_ms
    from xla_gpu.runtime.cpu import PROBE_CALLS

    assert FIRST_CALLS == 1 + 2 * PROBE_CALLS
    first = "a" * FIRST_CALLS + "b" * FIRST_CALLS
    calls = []
    times = block_times_ms([lambda: calls.append("a"), lambda: calls.append("b")], runs=12,
                           block=5)
    assert "".join(calls) == first + "a" * 6 + "b" * 6 + "b" * 6 + "a" * 6 + "a" * 3 + "b" * 3
    assert [len(t) for t in times] == [12, 12]
    assert all(t >= 0 for side in times for t in side)
    # Three sides: forwards, backwards, forwards.
    calls.clear()
    block_times_ms([lambda: calls.append("a"), lambda: calls.append("b"),
                    lambda: calls.append("c")], runs=3, block=1)
    assert "".join(calls) == "".join(c * FIRST_CALLS for c in "abc") + "aabbcc" + "ccbbaa" + \
        "aabbcc"
    # Runs of several calls each (the JAX backend's overhead case).
    calls.clear()
    times = block_times_ms([lambda: calls.append("a"), lambda: calls.append("b")], runs=3,
                           block=2, calls=4)
    assert "".join(calls) == first + "a" * 9 + "b" * 9 + "b" * 5 + "a" * 5
    assert [len(t) for t in times] == [3, 3]


def test_the_sides_compiles_take_turns_each_after_clearing_its_caches(monkeypatch):
    # benchmarks.compile_times_ms: one compile a side, forwards then
    # backwards; `before` right ahead of its side's each compile; the disk
    # cache unset while they run.
    from xla_gpu.benchmarks import compile_times_ms

    monkeypatch.setenv("XLA_GPU_CACHE_DIR", "/nonexistent")
    calls = []

    def side(name):
        def compile_once():
            assert "XLA_GPU_CACHE_DIR" not in os.environ
            calls.append(name)
            return f"{name}{len(calls)}"
        return compile_once

    result = compile_times_ms([(side("a"), lambda: calls.append("clear")), (side("b"), None)],
                              repeats=3)
    assert calls == ["clear", "a", "b", "b", "clear", "a", "clear", "a", "b"]
    assert [r for _, r in result] == ["a8", "b9"]  # what each side's last compile returned
    assert all(ms >= 0 for ms, _ in result)
    assert os.environ["XLA_GPU_CACHE_DIR"] == "/nonexistent"
