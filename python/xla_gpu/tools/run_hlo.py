"""run-hlo FILE.hlo: compiles every fusion of the module with our emitters,
runs the module on the CPU target (GPU semantics), runs the same HLO text on
XLA:CPU, and reports the largest errors and both times.

    run-hlo gelu.hlo [--platform cpu] [--iterations N] [--dump-to DIR] [--seed S]

The entry computation may hold parameters, fusions and a tuple root (what
XLA's fusion passes leave); anything else is reported, not guessed.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np
from mlir import ir

from .. import pipelines
from ..emitters import DEFAULT_DEVICE, DEVICES, device_named, emit_fusion
from ..reference import run_with_xla
from ..runtime import CPU_DEFAULT_OPTIONS, CpuKernel
from ._cli import ArgumentParser, ToolError, read_hlo, run_tool
from .test_correctness import errors, random_input


def _compile(module, dump_to: Path | None, device) -> dict[int, CpuKernel]:
    kernels = {}
    for fusion in module.fusions():
        with ir.Context():
            mlir_module = emit_fusion(fusion, device)
            text = str(mlir_module)
            if dump_to is not None:
                folder = dump_to / fusion.name
                folder.mkdir(parents=True, exist_ok=True)
                (folder / "emitted.mlir").write_text(text)
                copy = ir.Module.parse(text)
                pipelines.run_pipeline(copy, CPU_DEFAULT_OPTIONS, stages=pipelines.CPU_STAGES,
                                       dump_to=folder / "passes")
        kernels[id(fusion)] = CpuKernel(text)
    return kernels


def _run(module, kernels, inputs) -> list[np.ndarray]:
    values: dict[int, np.ndarray | list] = {}
    for inst in module.entry.instructions:
        if inst.opcode == "parameter":
            values[id(inst)] = inputs[inst.parameter_number]
        elif inst.opcode == "fusion":
            leaves = inst.shape.leaves()
            outs = [np.zeros(s.dims, s.element_type.dtype) for s in leaves]
            kernels[id(inst)](*[values[id(o)] for o in inst.operands], *outs)
            values[id(inst)] = outs if inst.shape.is_tuple else outs[0]
        elif inst.opcode == "tuple":
            values[id(inst)] = [values[id(o)] for o in inst.operands]
        elif inst.opcode == "get-tuple-element":
            values[id(inst)] = values[id(inst.operands[0])][inst.attr("index")]
        else:
            raise ToolError(f"{inst.name} ({inst.opcode}) in the entry computation is not "
                            "a fusion: run-hlo runs modules made of fusions")
    root = values[id(module.entry.root)]
    return root if isinstance(root, list) else [root]


def main(argv: list[str] | None = None) -> int:
    parser = ArgumentParser(prog="run-hlo", description=__doc__.splitlines()[0])
    parser.add_argument("file")
    parser.add_argument("--platform", choices=["cpu", "cuda"], default="cpu")
    parser.add_argument("--iterations", type=int, default=1)
    parser.add_argument("--dump-to", type=Path, default=None)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--device", choices=sorted(DEVICES), default=DEFAULT_DEVICE.name,
                        help="the GPU whose launch dimensions the kernels use")
    args = parser.parse_args(argv)

    def body() -> int:
        if args.platform == "cuda":
            raise ToolError("--platform cuda needs the CUDA runtime, which is not built yet; "
                            "use --platform cpu")
        module = read_hlo(args.file)
        if args.dump_to is not None:
            args.dump_to.mkdir(parents=True, exist_ok=True)
            (args.dump_to / "module.hlo").write_text(module.to_text())
        rng = np.random.RandomState(args.seed)
        inputs = [random_input(p.shape, rng) for p in module.entry.parameters]
        kernels = _compile(module, args.dump_to, device_named(args.device))
        ours, times = None, []
        for _ in range(max(1, args.iterations)):
            start = time.perf_counter()
            ours = _run(module, kernels, inputs)
            times.append(time.perf_counter() - start)
        start = time.perf_counter()
        expected = run_with_xla(module.to_text(), inputs)
        xla_time = time.perf_counter() - start
        for i, (got, want) in enumerate(zip(ours, expected)):
            diff, rel = errors(got, want)
            print(f"output {i}: max abs error {diff.max():.3g}, max rel error {rel.max():.3g}")
        print(f"ours (cpu target, {len(kernels)} fusions): {np.median(times) * 1e3:.2f} ms "
              f"median of {len(times)}; XLA:CPU (compile + run): {xla_time * 1e3:.2f} ms")
        return 0

    return run_tool("run-hlo", body)


if __name__ == "__main__":
    sys.exit(main())
