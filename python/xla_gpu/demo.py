"""`make demo`: the project's main job as far as it goes today.

1. Parse, verify and print the spec's loop-emitter kernel (@main/@gelu).
2. Run the compile pipeline on it (optimization, loop transformation,
   lowering) and print the LLVM/NVVM IR.
3. Lower it to PTX for sm_80 and sm_90 and have ptxas assemble it.
4. Run it on the CPU (GPU semantics, compiled) and time it beside XLA:CPU.
5. The spec's gelu.hlo end to end: the loop emitter, PTX (ptxas), a run on
   the CPU target compared with XLA:CPU running the same HLO text.
"""

from __future__ import annotations

import sys
import time

from mlir import ir

import xla_gpu  # noqa: F401  (registers the dialect and passes)
from xla_gpu import benchmarks, emitters, examples, pipelines, ptx
from xla_gpu.context import new_context
from xla_gpu.hlo import parse_hlo
from xla_gpu.tools import run_hlo


def _banner(title: str) -> None:
    print(f"\n=== {title} " + "=" * max(0, 72 - len(title)))


def main() -> int:
    source = examples.path("seed_gelu.mlir").read_text()
    with new_context():
        _banner("seed kernel: parse + verify (examples/seed_gelu.mlir)")
        module = ir.Module.parse(source)
        module.operation.verify()
        print(module)

        _banner("after the compile pipeline (optimization, loops, lowering)")
        start = time.perf_counter()
        pipelines.run_pipeline(module)
        print(module)
        print(f"pipeline: {(time.perf_counter() - start) * 1e3:.1f} ms")

        ptxas = ptx.find_ptxas()
        for sm in (80, 90):
            opts = pipelines.PipelineOptions(compute_capability=(sm // 10, sm % 10))
            _banner(f"seed kernel -> PTX ({opts.chip})")
            start = time.perf_counter()
            code = pipelines.compile_to_ptx(ir.Module.parse(source), opts)
            elapsed = (time.perf_counter() - start) * 1e3
            lines = code.splitlines()
            print("\n".join(lines[:40] + ["    ..."]))
            print(f"compiled in {elapsed:.1f} ms, {len(lines)} lines of PTX")
            if ptxas is None:
                print("ptxas: not found, PTX not assembled")
                continue
            result = ptx.ptxas_check(code, opts.chip, ptxas)
            print(f"ptxas -arch={opts.chip}: {'accepted' if result.ok else 'REJECTED'}")
            if not result.ok:
                print(result.log)
                return 1

    _banner("seed kernel on the CPU target, beside XLA:CPU (jax.jit)")
    for dtype in ("bf16", "f32"):
        r = benchmarks.bench_gelu_cpu(dtype, runs=10)
        print(f"{dtype:5s} ours {r['ours_ms']:7.2f} ms   XLA:CPU {r['xla_ms']:7.2f} ms   "
              f"ratio {r['ratio']:.2f}   max |ours - XLA| {r['max_abs_diff_vs_xla']:.3g}   "
              f"compile {r['ours_compile_ms']:.0f} ms (XLA {r['xla_compile_ms']:.0f} ms)")

    _banner("gelu.hlo -> loop emitter -> PTX and a CPU run against XLA")
    hlo = str(examples.path("gelu.hlo"))
    with new_context():
        fusion = emitters.find_fusion(parse_hlo(examples.path("gelu.hlo").read_text()))
        emitted = str(emitters.emit_fusion(fusion))
        print(emitted)
        code = pipelines.compile_to_ptx(ir.Module.parse(emitted))
        if ptxas is not None:
            result = ptx.ptxas_check(code, "sm_90", ptxas)
            print(f"ptxas -arch=sm_90 on the emitted kernel: "
                  f"{'accepted' if result.ok else 'REJECTED'}")
            if not result.ok:
                return 1
    return run_hlo.main([hlo, "--iterations", "10"])


if __name__ == "__main__":
    sys.exit(main())
