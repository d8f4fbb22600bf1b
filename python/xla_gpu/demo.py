"""`make demo`: the project's main job as far as it goes today.

1. Parse, verify and print the spec's loop-emitter kernel (@main/@gelu).
2. Inline the subgraph function, as the first stage of the pipeline does.
3. Lower a small GPU kernel to PTX for sm_80 and sm_90 and have ptxas
   assemble it.
"""

from __future__ import annotations

import sys
import time

from mlir import ir
from mlir.passmanager import PassManager

import xla_gpu  # noqa: F401  (registers the dialect and passes)
from xla_gpu import examples, ptx


def _banner(title: str) -> None:
    print(f"\n=== {title} " + "=" * max(0, 72 - len(title)))


def main() -> int:
    with ir.Context():
        _banner("seed kernel: parse + verify (examples/seed_gelu.mlir)")
        module = ir.Module.parse(examples.path("seed_gelu.mlir").read_text())
        module.operation.verify()
        print(module)

        _banner("after -inline -xla-erase-dead-functions")
        PassManager.parse("builtin.module(inline,xla-erase-dead-functions,cse)").run(
            module.operation)
        print(module)

        ptxas = ptx.find_ptxas()
        for chip in ("sm_80", "sm_90"):
            _banner(f"small kernel -> PTX ({chip})")
            kernel = ir.Module.parse(examples.path("small_kernel.mlir").read_text())
            start = time.perf_counter()
            code = ptx.gpu_module_to_ptx(kernel, chip)["kernels"]
            elapsed = (time.perf_counter() - start) * 1e3
            print(code)
            print(f"lowered in {elapsed:.1f} ms, {len(code.splitlines())} lines of PTX")
            if ptxas is None:
                print("ptxas: not found, PTX not assembled")
                continue
            result = ptx.ptxas_check(code, chip, ptxas)
            print(f"ptxas -arch={chip}: {'accepted' if result.ok else 'REJECTED'}")
            if not result.ok:
                print(result.log)
                return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
