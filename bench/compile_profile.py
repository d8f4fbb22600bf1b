"""Where compile time goes: each HLO case of `make bench` (every
benchmark file's CASES), HLO -> CPU code and HLO -> PTX, stage by stage,
beside XLA:CPU's compile of the same module.

Per case (its fusions together, one after the other), milliseconds of
wall time, the best of --repeats compiles (compile times are noisy too):

    emit        our emitters (Python): HLO fusion -> xla_gpu/func/scf IR
    opt, loops  our pipeline's optimization and loop-transformation stages
                (C++ passes; the CPU path's options)
    lower       the CPU path's last stage (grid -> loops, LLVM dialect)
    translate, O3, codegen
                MLIR -> LLVM IR, LLVM's O3 pipeline, x86 code generation
                (HostJit.cpp times each; a kernel of several phases is
                compiled in parts on the cores at once: O3 until the last
                part's O3 ends, codegen from then on)
    load        the object into the JIT, linked
    gpu passes  the GPU path's three stages (GPU options, sm_90)
    nvptx       convert-gpu-to-nvvm, translation, O3 and the NVPTX backend
                (upstream's gpu-module-to-binary: one step)
    xla:cpu     XLA:CPU compiling the module (its whole pipeline)
    xla nolib   XLA:CPU with its library fusions off (lib: how many fusions
                of the module it otherwise hands to a library -- YNNPACK
                for reductions -- whose code it does not generate)
    xla cpu     the CPU time of that compile (xla nolib), all threads: XLA
                compiles a module's kernels in parallel, so where it has
                several (the cumsum's six) its wall time above is under
                its work, where ours here compiles a kernel at a time

`cpu total` is emit through load; `make bench`'s compile_ours_ms is the
wall time of the same on the cores (compile_kernels, a thread a kernel).
Writes bench/out/compile_profile.json (a record per case) and prints the
table.

    .venv/bin/python bench/compile_profile.py [--only NAME] [--repeats 3] [--out DIR]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

CPU_COLUMNS = ("emit", "opt", "loops", "lower", "translate", "O3", "codegen", "load")
COLUMNS = (*CPU_COLUMNS, "cpu total", "gpu passes", "nvptx", "xla:cpu", "xla nolib", "xla cpu")
_STAGE_COLUMN = {"optimization": "opt", "loop-transformation": "loops", "cpu-lowering": "lower"}


def _timed(fn, *args, **kwargs):
    start = time.perf_counter()
    result = fn(*args, **kwargs)
    return result, time.perf_counter() - start


def profile_once(text: str) -> dict[str, float]:
    """Seconds per column for the module's fusions (summed), one compile."""
    from xla_gpu import pipelines
    from xla_gpu.context import new_context
    from xla_gpu.emitters import DEFAULT_DEVICE, emit_kernel
    from xla_gpu.emitters.fusion_analysis import host_short_rows
    from xla_gpu.hlo import parse_hlo
    from xla_gpu.reference import XlaCpuExecutable
    from xla_gpu.runtime.cpu import CPU_DEFAULT_OPTIONS, _signature
    from xla_gpu.runtime.host_code import HostCode, compile_object
    from xla_gpu.tools.run_hlo import reference_text

    row = dict.fromkeys(COLUMNS, 0.0)
    module = parse_hlo(text)
    gpu_opts = pipelines.PipelineOptions.for_device(DEFAULT_DEVICE)
    for inst in module.entry.instructions:
        if inst.opcode != "fusion" or inst.fusion_kind == "kCustom":
            continue
        # The CPU columns compile the CPU target's own variant of the
        # kernel, as the bench runs it (emit_kernel(host=True)); the GPU
        # columns XLA:GPU's.
        with new_context(), host_short_rows():
            kernel, row_emit = _timed(emit_kernel, inst, DEFAULT_DEVICE, host=True)
            source = kernel.text
            row["emit"] += row_emit
        with new_context():
            gpu_source = emit_kernel(inst, DEFAULT_DEVICE).text
        with pipelines.compile_context():  # a context CpuKernel compiles in
            cpu = pipelines.parse_module(source)
            _signature(cpu, kernel.entry)
            opts = CPU_DEFAULT_OPTIONS  # as CpuKernel compiles
            for stage in pipelines.CPU_STAGES:
                row[_STAGE_COLUMN[stage]] += _timed(pipelines.run_pipeline, cpu, opts,
                                                    stages=[stage])[1]
            steps: dict[str, float] = {}
            obj = compile_object(cpu, seconds=steps)
            for step, seconds in steps.items():
                row[step] += seconds
            start = time.perf_counter()
            HostCode(obj).lookup(f"_mlir_{kernel.entry}", needed_by=kernel.entry)
            row["load"] += time.perf_counter() - start
        with new_context():
            gpu = pipelines.parse_module(gpu_source)
            row["gpu passes"] += _timed(pipelines.run_pipeline, gpu, gpu_opts)[1]
            row["nvptx"] += _timed(pipelines.lowered_to_ptx, gpu, gpu_opts)[1]
    row["cpu total"] = sum(row[c] for c in CPU_COLUMNS)
    cpu_start = time.process_time()
    xla, row["xla:cpu"] = _timed(XlaCpuExecutable, reference_text(module))
    row["xla cpu"] = time.process_time() - cpu_start
    row["lib"] = xla.library_fusions()
    row["xla nolib"] = row["xla:cpu"]
    if row["lib"]:
        cpu_start = time.process_time()
        row["xla nolib"] = _timed(XlaCpuExecutable, reference_text(module),
                                  library_fusions=False)[1]
        row["xla cpu"] = time.process_time() - cpu_start
    return row


def profile(text: str, repeats: int) -> dict[str, float]:
    """Milliseconds per column: the best of `repeats` compiles, column by
    column (the first also warms up what is loaded once)."""
    rows = [profile_once(text) for _ in range(repeats)]
    return {**{c: min(r[c] for r in rows) * 1e3 for c in COLUMNS}, "lib": rows[0]["lib"]}


def main(argv=None) -> int:
    import suite

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", default=None, help="the cases whose name has this")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--out", type=Path, default=HERE / "out")
    args = parser.parse_args(argv)
    cases = [(f"{f}: {name}", text) for f, name, text in suite.hlo_cases()
             if not args.only or args.only in f"{f}: {name}"]
    if not cases:
        print(f"no case matches --only {args.only!r}", file=sys.stderr)
        return 1
    width = max(len(name) for name, _ in cases)
    print(f"compile time (ms, best of {args.repeats}, a kernel at a time)")
    print(f"  {'case':{width}s} " + " ".join(f"{c:>9s}" for c in COLUMNS) + "  lib")
    records = []
    for name, text in cases:
        row = profile(text, args.repeats)
        records.append({"name": name, **row})
        print(f"  {name:{width}s} " + " ".join(f"{row[c]:9.1f}" for c in COLUMNS)
              + f"  {row['lib']:3d}", flush=True)
    totals = {c: sum(r[c] for r in records) for c in COLUMNS}
    print(f"  {'all cases':{width}s} " + " ".join(f"{totals[c]:9.1f}" for c in COLUMNS))
    share = {c: totals[c] / totals["cpu total"] for c in CPU_COLUMNS}
    print("  CPU path shares: " + ", ".join(f"{c} {100 * s:.0f} %" for c, s in share.items()))
    args.out.mkdir(parents=True, exist_ok=True)
    path = args.out / "compile_profile.json"
    path.write_text(json.dumps(records, indent=2) + "\n")
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
