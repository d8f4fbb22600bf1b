"""run-hlo FILE.hlo: compiles every fusion of the module with our emitters,
runs the module on the CPU target (GPU semantics), runs the same HLO text on
XLA:CPU, and reports the largest errors and both times.

    run-hlo gelu.hlo [--platform=cpu] [--iterations N] [--xla_dump_to DIR] [--seed S]

XLA's run_hlo_module command line works as written (it is also installed
as `run_hlo_module`):

    run_hlo_module --platform=CUDA --xla_disable_all_hlo_passes \
        --reference_platform="" gelu.hlo \
        --xla_dump_hlo_pass_re=fusion-emitter --xla_dump_to=DIR

`--platform` is case-insensitive (cpu/host, cuda/gpu); `--reference_platform=""`
runs no reference (ours alone, timed); `--xla_dump_to` (or `--dump-to`)
writes the module, each fusion's emitted MLIR and, when
`--xla_dump_hlo_pass_re` matches `fusion-emitter` (or is not given), the IR
after every pass of the compile pipeline. No HLO pass runs here, so
`--xla_disable_all_hlo_passes` is accepted and changes nothing.

The entry computation may hold parameters, fusions, constants, a tuple root
and row-major bitcasts, reshapes, copies and transposes (what XLA's fusion
passes leave); anything else is reported, not guessed. An output off XLA's
by more than both --abs_error_bound and --rel_error_bound fails (status 1).
Times are medians of --iterations runs of the compiled module, ours and
XLA's, with their ratio.
"""

from __future__ import annotations

import argparse
import ctypes
import re
import sys
import time
from pathlib import Path

import numpy as np
from mlir import ir

from .. import pipelines
from ..emitters import DEFAULT_DEVICE, DEVICES, device_named, emit_kernel
from ..reference import XlaCpuExecutable, as_xla_takes_it, row_major
from ..runtime import CPU_DEFAULT_OPTIONS, CpuKernel
from ._cli import ArgumentParser, ToolError, read_hlo, run_tool
from .test_correctness import random_input, report


def _compile(module, dump_to: Path | None, device, dump_passes: bool = True
             ) -> dict[int, CpuKernel]:
    kernels = {}
    for fusion in module.fusions():
        with ir.Context():
            kernel = emit_kernel(fusion, device)
            text = kernel.text
            if dump_to is not None:
                folder = dump_to / fusion.name
                folder.mkdir(parents=True, exist_ok=True)
                (folder / "emitted.mlir").write_text(text)
            if dump_to is not None and dump_passes:
                copy = ir.Module.parse(text)
                pipelines.run_pipeline(copy, CPU_DEFAULT_OPTIONS, stages=pipelines.CPU_STAGES,
                                       dump_to=folder / "passes")
        kernels[id(fusion)] = CpuKernel(kernel)
    return kernels


def reference_text(module) -> str:
    """The module as XLA takes it (its fusions as calls, see as_xla_takes_it)."""
    with as_xla_takes_it(module.computations):
        return module.to_text()


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
        elif inst.opcode == "constant" and inst.literal is not None and \
                inst.literal.value is not None:
            values[id(inst)] = np.asarray(inst.literal.value).reshape(inst.shape.dims)
        elif inst.opcode in ("bitcast", "reshape", "copy") and row_major(inst):
            # Between row-major arrays these only rename the elements.
            values[id(inst)] = values[id(inst.operands[0])].reshape(inst.shape.dims).copy()
        elif inst.opcode == "transpose" and row_major(inst):
            values[id(inst)] = np.ascontiguousarray(
                np.transpose(values[id(inst.operands[0])], inst.dimensions))
        else:
            raise ToolError(f"{inst.name} ({inst.opcode}) in the entry computation is not "
                            "a fusion: run-hlo runs modules made of fusions")
    root = values[id(module.entry.root)]
    return root if isinstance(root, list) else [root]


_PLATFORMS = {"cpu": "cpu", "host": "cpu", "cuda": "cuda", "gpu": "cuda"}


def _platform(text: str) -> str:
    """XLA's platform names, any case."""
    name = _PLATFORMS.get(text.lower())
    if name is None:
        raise argparse.ArgumentTypeError(f"unknown platform '{text}' (cpu, host, cuda, gpu)")
    return name


def _reference_platform(text: str) -> str | None:
    """`""` (XLA's spelling for none) runs no reference."""
    return None if text == "" else _platform(text)


def _cuda_driver_missing() -> str | None:
    """Why kernels cannot run on a GPU here, if they cannot."""
    try:
        ctypes.CDLL("libcuda.so.1")
    except OSError:
        return "there is no CUDA driver (libcuda.so.1) on this machine"
    return "the CUDA runtime of xla_gpu is not built yet"


def main(argv: list[str] | None = None) -> int:
    parser = ArgumentParser(prog="run-hlo", description=__doc__.splitlines()[0])
    parser.add_argument("file")
    parser.add_argument("--platform", type=_platform, default="cpu",
                        help="where our kernels run: cpu (default) or cuda")
    parser.add_argument("--reference_platform", type=_reference_platform, default="cpu",
                        help='the reference: cpu (XLA:CPU, default); "" runs none')
    parser.add_argument("--iterations", type=int, default=1)
    parser.add_argument("--xla_dump_to", "--dump-to", dest="dump_to", type=Path, default=None,
                        help="write the module, the emitted MLIR and the IR after every pass")
    parser.add_argument("--xla_dump_hlo_pass_re", default=None, metavar="REGEX",
                        help="dump the IR after every pass of the fusion emitter when REGEX "
                             "matches 'fusion-emitter' (default: always)")
    parser.add_argument("--xla_disable_all_hlo_passes", action="store_true",
                        help="accepted for XLA's command lines: no HLO pass runs here")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--abs_error_bound", type=float, default=1e-5)
    parser.add_argument("--rel_error_bound", type=float, default=1e-5)
    parser.add_argument("--device", choices=sorted(DEVICES), default=DEFAULT_DEVICE.name,
                        help="the GPU whose launch dimensions the kernels use")
    args = parser.parse_args(argv)
    if args.xla_dump_hlo_pass_re is not None:
        try:
            dump_passes = re.search(args.xla_dump_hlo_pass_re, "fusion-emitter") is not None
        except re.error as e:
            parser.error(f"--xla_dump_hlo_pass_re: {e}")
    else:
        dump_passes = True

    def body() -> int:
        if args.platform == "cuda":
            raise ToolError(f"--platform=CUDA: {_cuda_driver_missing()}; use --platform=cpu")
        module = read_hlo(args.file)
        if args.dump_to is not None:
            args.dump_to.mkdir(parents=True, exist_ok=True)
            (args.dump_to / "module.hlo").write_text(module.to_text())
        rng = np.random.RandomState(args.seed)
        inputs = [random_input(p.shape, rng) for p in module.entry.parameters]
        kernels = _compile(module, args.dump_to, device_named(args.device), dump_passes)
        ours, times = None, []
        for _ in range(max(1, args.iterations)):
            start = time.perf_counter()
            ours = _run(module, kernels, inputs)
            times.append(time.perf_counter() - start)
        ours_ms = np.median(times) * 1e3
        if args.reference_platform is None:
            print(f"ours (cpu target, {len(kernels)} fusions): {ours_ms:.2f} ms, median of "
                  f"{len(times)}; no reference (--reference_platform=\"\")")
            return 0
        start = time.perf_counter()
        xla = XlaCpuExecutable(reference_text(module))
        xla_compile = time.perf_counter() - start
        buffers = xla.put(inputs)
        expected, xla_times = None, []
        for _ in range(max(1, args.iterations)):
            start = time.perf_counter()
            expected = xla.execute(buffers)
            xla_times.append(time.perf_counter() - start)
        failed = False
        for i, (got, want) in enumerate(zip(ours, expected)):
            failed |= report(f"output {i}", got, np.asarray(want), args.abs_error_bound,
                             args.rel_error_bound)
        xla_ms = np.median(xla_times) * 1e3
        print(f"ours (cpu target, {len(kernels)} fusions): {ours_ms:.2f} ms; XLA:CPU: "
              f"{xla_ms:.2f} ms (compile {xla_compile * 1e3:.0f} ms); medians of "
              f"{len(times)}; ratio ours/XLA {ours_ms / xla_ms:.2f}")
        return 1 if failed else 0

    return run_tool("run-hlo", body)


if __name__ == "__main__":
    sys.exit(main())
