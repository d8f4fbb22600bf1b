"""`make bench`: every benchmark of bench/ in one run -- the seed's GELU and
each file's CASES (loop fusions, reductions, transposes and concatenates,
scatter and in-place updates), ours on the CPU target against XLA:CPU on
the same HLO in the same process, and the JAX backend's cases
(jax_backend_cpu.py: jax programs calling our kernels against plain jax) --
with a progress line per case, then

    bench/out/results.json   one record per case: name, ours_ms, xla_ms,
                             ratio, compile_ours_ms, compile_xla_ms,
                             max_abs_error, xla_library_fusions (XLA:CPU's
                             fusions that call a library: YNNPACK's
                             reductions), compile_xla_codegen_ms (XLA:CPU's
                             compile with those libraries off, so that it
                             generates every fusion's code as we do; the
                             same compile where it calls none), and the
                             spread: each side's
                             quartiles (ours_q1_ms, ours_q3_ms, xla_q1_ms,
                             xla_q3_ms) and the ratio's band between them
                             (ratio_low = ours_q1 / xla_q3, ratio_high =
                             ours_q3 / xla_q1)
    bench/out/results.png    the ratios ours / XLA:CPU with their bands,
                             log scale, 1.0 drawn

    .venv/bin/python bench/suite.py [--runs 10] [--only NAME] [--out DIR]

A benchmark file joins the suite by defining CASES (name -> HLO module
text) and being listed in BENCH_FILES.
"""

from __future__ import annotations

import argparse
import importlib
import json
import math
import os
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

# The files whose CASES run, in the order they are reported.
BENCH_FILES = ["loop_fusions_cpu", "reductions_cpu", "transposes_cpu", "scatter_cpu", "programs_cpu"]
RECORD_FIELDS = ("name", "ours_ms", "xla_ms", "ratio", "compile_ours_ms", "compile_xla_ms",
                 "compile_xla_codegen_ms", "xla_library_fusions", "max_abs_error",
                 "ours_q1_ms", "ours_q3_ms", "xla_q1_ms", "xla_q3_ms", "ratio_low", "ratio_high")


def hlo_cases() -> list[tuple[str, str, str]]:
    """(file, case name, HLO text) of every benchmark file's CASES."""
    out = []
    for module_name in BENCH_FILES:
        module = importlib.import_module(module_name)
        out += [(module_name, name, text) for name, text in module.CASES.items()]
    return out


def _record(name: str, ours: tuple[float, float, float], xla: tuple[float, float, float],
            compile_ours_ms: float, compile_xla_ms: float, max_abs_error: float,
            compile_xla_codegen_ms: float | None = None, xla_library_fusions: int = 0) -> dict:
    """A case's record from each side's (first quartile, median, third
    quartile) in ms. The ratio is of the medians; its band, of the
    quartiles crosswise -- how far apart the middle halves of the two
    sides' runs reach (the machines are noisy: read a band that straddles
    1.0 as a tie)."""
    (ours_q1, ours_ms, ours_q3), (xla_q1, xla_ms, xla_q3) = ours, xla
    return {"name": name, "ours_ms": ours_ms, "xla_ms": xla_ms, "ratio": ours_ms / xla_ms,
            "compile_ours_ms": compile_ours_ms, "compile_xla_ms": compile_xla_ms,
            "compile_xla_codegen_ms": (compile_xla_ms if compile_xla_codegen_ms is None
                                       else compile_xla_codegen_ms),
            "xla_library_fusions": xla_library_fusions,
            "max_abs_error": max_abs_error, "ours_q1_ms": ours_q1, "ours_q3_ms": ours_q3,
            "xla_q1_ms": xla_q1, "xla_q3_ms": xla_q3, "ratio_low": ours_q1 / xla_q3,
            "ratio_high": ours_q3 / xla_q1}


def run_suite(runs: int, only: str | None = None, progress=print) -> list[dict]:
    """Runs the cases (those whose name has `only`), a progress line each."""
    from loop_fusions_cpu import bench
    from xla_gpu.benchmarks import bench_gelu_cpu

    records = []

    def report(r: dict) -> None:
        records.append(r)
        progress(f"  [{len(records):2d}] {r['name']:62s} ratio {r['ratio']:6.2f} "
                 f"[{r['ratio_low']:.2f}, {r['ratio_high']:.2f}]  "
                 f"(ours {r['ours_ms']:8.3f} ms, XLA {r['xla_ms']:8.3f} ms)", flush=True)

    for dtype in ("bf16", "f32"):
        name = f"gelu_cpu: seed GELU {dtype}"
        if only and only not in name:
            continue
        g = bench_gelu_cpu(dtype, runs)
        report(_record(name, g["ours_quartiles_ms"], g["xla_quartiles_ms"],
                       g["ours_compile_ms"], g["xla_compile_ms"], g["max_abs_diff_vs_xla"]))
    for module_name, case, text in hlo_cases():
        name = f"{module_name}: {case}"
        if only and only not in name:
            continue
        r = bench(text, runs)
        report(_record(name, r["ours_quartiles_ms"], r["xla_quartiles_ms"],
                       float(r["ours_compile_ms"]), float(r["xla_compile_ms"]),
                       float(r["max_abs_error"]), float(r["xla_codegen_compile_ms"]),
                       int(r["xla_library_fusions"])))
    # The JAX backend: jax programs calling our kernels against plain jax.
    if not only or only in "jax_backend_cpu":
        import jax_backend_cpu
        for r in jax_backend_cpu.cases(runs):
            report(_record(r["name"], r["ours_quartiles_ms"], r["xla_quartiles_ms"],
                           r["compile_ours_ms"], r["compile_xla_ms"], r["max_abs_error"],
                           r["compile_xla_codegen_ms"], r["xla_library_fusions"]))
    return records


def host_summary() -> str:
    """The machine a run measured: the host CPU as LLVM names it, its
    vector extensions that change our code (AVX-512 and its BF16 and FP16,
    else AVX2) and the cores the process may use (os.sched_getaffinity).
    Ratios from two hosts differ (stop 91's Zen 3 host, AVX2, ran the f16
    row max 4x XLA:CPU's time where the Zen 5 ones ran 0.8x)."""
    from xla_gpu.runtime import host_code

    target = host_code.host_target().split()
    features = {f[1:] for f in target[-1].split(",") if f.startswith("+")}
    vectors = [name for feature, name in [("avx512f", "AVX-512"), ("avx512bf16", "AVX512-BF16"),
                                          ("avx512fp16", "AVX512-FP16")] if feature in features]
    if not vectors:
        vectors = ["AVX2" if "avx2" in features else "no AVX2"]
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return f"{target[1] if len(target) > 1 else target[0]}, {', '.join(vectors)}, {cores} cores"


def write_results(records: list[dict], out: Path, host: str = "") -> tuple[Path, Path]:
    """results.json and results.png (bars of the ratios on a log scale with
    their bands, the 1.0 line drawn, worse than XLA in red) under `out`."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out.mkdir(parents=True, exist_ok=True)
    json_path, png_path = out / "results.json", out / "results.png"
    json_path.write_text(json.dumps([{k: r[k] for k in RECORD_FIELDS} for r in records],
                                    indent=2) + "\n")
    ratios = [r["ratio"] for r in records]
    band = [[x - r["ratio_low"] for x, r in zip(ratios, records)],
            [r["ratio_high"] - x for x, r in zip(ratios, records)]]
    fig, ax = plt.subplots(figsize=(12, 0.32 * len(records) + 1.5))
    ax.barh(range(len(records)), ratios, xerr=band, error_kw={"linewidth": 0.8},
            color=["tab:red" if x > 1 else "tab:green" for x in ratios])
    ax.set_yticks(range(len(records)), [r["name"] for r in records], fontsize=7)
    ax.invert_yaxis()
    ax.set_xscale("log")
    lo = min([*ratios, *(r["ratio_low"] for r in records), 1.0])
    hi = max([*ratios, *(r["ratio_high"] for r in records), 1.0])
    ax.set_xlim(10 ** math.floor(math.log10(lo * 0.8)), 10 ** math.ceil(math.log10(hi * 1.25)))
    ax.axvline(1.0, color="black", linewidth=1)
    ax.set_xlabel("time ours / XLA:CPU (log scale; left of 1.0: faster than XLA:CPU)")
    ax.set_title("xla_gpu on the CPU target vs XLA:CPU, same HLO, same process"
                 + (f" ({host})" if host else ""))
    fig.tight_layout()
    fig.savefig(png_path, dpi=120)
    plt.close(fig)
    return json_path, png_path


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--only", default=None, help="run the cases whose name has this")
    parser.add_argument("--out", type=Path, default=HERE / "out")
    args = parser.parse_args(argv)
    host = host_summary()
    print(f"make bench: ours (CPU target) vs XLA:CPU, medians of {args.runs} runs "
          f"[the ratio's band: the quartiles crosswise] on {host}")
    records = run_suite(args.runs, args.only)
    if not records:
        print(f"no case matches --only {args.only!r}", file=sys.stderr)
        return 1
    json_path, png_path = write_results(records, args.out, host)
    worst = max(records, key=lambda r: r["ratio"])
    print(f"worst ratio {worst['ratio']:.2f} [{worst['ratio_low']:.2f}, {worst['ratio_high']:.2f}] "
          f"({worst['name']}); wrote {json_path} and {png_path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
