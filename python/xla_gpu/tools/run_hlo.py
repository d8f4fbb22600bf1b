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

Whole modules run, as jax's optimized ones are: our emitters take the
fusions they own; XLA runs everything else, one instruction at a time in a
module of its own (dots, convolutions, custom calls and kCustom fusions,
while loops, sort, collectives, fusions whose emitter is not built yet);
parameters, tuples, constants and row-major bitcasts/reshapes/copies/
transposes are numpy's. A report says which kernel ran where (and why),
with its median time. An output off XLA's by more than both
--abs_error_bound and --rel_error_bound fails (status 1).
Times are medians of --iterations runs of the compiled module, ours and
XLA's, with their ratio.
"""

from __future__ import annotations

import contextlib
import dataclasses
import re
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import numpy as np
from mlir import ir

from .. import pipelines
from ..context import new_context
from ..emitters import (DEFAULT_DEVICE, DEVICES, EmitterError, EmitterNotBuiltError,
                        device_named, emit_kernel, make_emitter)
from ..emitters.fusion_analysis import host_short_rows
from ..emitters.tree_reduction import needs_tree_split, split_reduction
from ..emitters.partitioner import sanitize_function_name
from ..hlo import HloComputation, HloInstruction, HloModule
from ..hlo.module import computations_called_by
from ..reference import XlaCpuExecutable, as_xla_takes_it, row_major, xla_parser_error
from ..emitters.kernel import EmittedKernel
from ..runtime import CPU_DEFAULT_OPTIONS, CpuKernel
from ..runtime.cpu import aligned_empty, compile_kernels
from ._cli import (ArgumentParser, ToolError, add_verbose_flag, check_host_memory,
                   enable_remarks, platform_arg, read_hlo, refuse_divisions_xla_cannot_fold,
                   require_platform, run_tool)
from .test_correctness import random_input, report


@dataclass(eq=False)
class _Step:
    """One instruction of the entry computation that runs as a kernel: ours,
    or XLA's for what we do not own (and why)."""

    inst: HloInstruction
    run: Callable[[list], list[np.ndarray]]
    ours: bool
    reason: str = ""
    times: list[float] = field(default_factory=list)


def _on_host(inst: HloInstruction) -> bool:
    """Entry instructions numpy computes (`_host_value`): they move no data
    or only rename elements."""
    op = inst.opcode
    if op in ("parameter", "tuple", "get-tuple-element"):
        return True
    if op == "constant":
        return inst.literal is not None and inst.literal.value is not None
    return op in ("bitcast", "reshape", "copy", "transpose") and row_major(inst)


def _host_value(inst: HloInstruction, values: dict):
    """The value of an instruction `_on_host` takes."""
    op = inst.opcode
    if op == "tuple":
        return [values[id(o)] for o in inst.operands]
    if op == "get-tuple-element":
        return values[id(inst.operands[0])][inst.attr("index")]
    if op == "constant":
        return np.asarray(inst.literal.value).reshape(inst.shape.dims)
    if op == "transpose":
        return np.ascontiguousarray(np.transpose(values[id(inst.operands[0])],
                                                 inst.dimensions))
    # A row-major bitcast, reshape or copy only renames the elements.
    return values[id(inst.operands[0])].reshape(inst.shape.dims).copy()


def single_instruction_module(inst: HloInstruction) -> str:
    """`inst` alone as a module for XLA: its operands become parameters (a
    tuple operand one parameter per element, tupled again inside), the
    computations it calls come along (fusions as calls)."""
    params: list[HloInstruction] = []
    operands: list[HloInstruction] = []
    body: list[HloInstruction] = []
    for k, o in enumerate(inst.operands):
        leaves = o.shape.tuple_shapes if o.shape.is_tuple else None
        if leaves is None:
            operands.append(HloInstruction(f"arg.{k}", "parameter", o.shape,
                                           parameter_number=len(params)))
            params.append(operands[-1])
            continue
        parts = []
        for j, leaf in enumerate(leaves):
            parts.append(HloInstruction(f"arg.{k}.{j}", "parameter", leaf,
                                        parameter_number=len(params)))
            params.append(parts[-1])
        body.append(HloInstruction(f"arg.{k}", "tuple", o.shape, operands=parts))
        operands.append(body[-1])
    clone = dataclasses.replace(inst, operands=operands, users=[], control_predecessors=[])
    entry = HloComputation(f"{sanitize_function_name(inst.name)}.xla",
                           [*params, *body, clone], root=clone, is_entry=True)
    for i in entry.instructions:
        i.parent = entry
    called = computations_called_by([inst])
    module = HloModule("single_instruction", computations=[*called, entry], entry=entry)
    with as_xla_takes_it(module.computations):
        return module.to_text()


def _nested(shape) -> bool:
    return shape.is_tuple and any(s.is_tuple for s in shape.tuple_shapes)


def _on_xla(inst: HloInstruction, reason: str) -> _Step:
    if any(_nested(s) for s in [inst.shape, *(o.shape for o in inst.operands)]):
        raise ToolError(f"{inst.name} ({inst.opcode}) has a nested tuple shape, which run-hlo "
                        "cannot take apart")
    executable = XlaCpuExecutable(single_instruction_module(inst))

    def run(args):
        flat = [a for arg in args for a in (arg if isinstance(arg, list) else [arg])]
        return executable.run(flat)

    return _Step(inst, run, ours=False, reason=reason)


def _verify_fusions(module, device) -> None:
    """Raises EmitterError at the first malformed fusion our emitters would
    take (the checks emit_kernel makes, without emitting)."""
    with new_context():
        for inst in module.entry.instructions:
            if inst.opcode == "fusion" and inst.fusion_kind != "kCustom":
                try:
                    make_emitter(inst, device)
                except EmitterNotBuiltError:
                    pass


def _compile(module, dump_to: Path | None, device, dump_passes: bool = True,
             platform: str = "cpu", host: bool = False) -> list[_Step]:
    """A step per entry instruction that is a kernel: our emitters' for the
    fusions they own, XLA's (one instruction each) for the rest. The CPU
    kernels compile on several threads (compile_kernels). With `host`, the
    CPU target's own variants of the kernels (emit_kernel(host=True) within
    host_short_rows(), as xla_gpu.jax.jit emits them; the CPU platform
    only); else XLA:GPU's kernels, run on the CPU."""
    steps: list = []
    # (step, fusion, its parts' kernels: the fusion's own where it is one)
    on_cpu: list[tuple[int, HloInstruction, list[tuple[HloInstruction, EmittedKernel]]]] = []
    host = host and platform == "cpu"
    # One MLIR context for the module's fusions (creating one costs ~1 ms).
    with new_context(), (host_short_rows() if host else contextlib.nullcontext()):
        for inst in module.entry.instructions:
            if _on_host(inst):
                continue
            if inst.opcode != "fusion":
                steps.append(_on_xla(inst, f"{inst.opcode} is not a fusion"))
                continue
            if inst.fusion_kind == "kCustom":
                steps.append(_on_xla(inst, "a kCustom fusion (XLA's library or Triton call)"))
                continue
            parts = _split_parts(inst, device) if platform == "cpu" else None
            try:
                parts = parts or [(inst, emit_kernel(inst, device, host=host))]
            except EmitterNotBuiltError as e:
                steps.append(_on_xla(inst, str(e)))
                continue
            if dump_to is not None:
                folder = dump_to / inst.name
                folder.mkdir(parents=True, exist_ok=True)
                for k, (_, kernel) in enumerate(parts):
                    text = kernel.text  # printing a kernel costs ~0.6 ms: only to dump it
                    suffix = f".part{k}" if len(parts) > 1 else ""
                    (folder / f"emitted{suffix}.mlir").write_text(text)
                    if dump_passes:
                        copy = ir.Module.parse(text)
                        pipelines.run_pipeline(copy, CPU_DEFAULT_OPTIONS,
                                               stages=pipelines.CPU_STAGES,
                                               dump_to=folder / f"passes{suffix}")
            if platform == "cuda":
                from ..runtime.bundle import make_bundle
                from ..runtime.cuda import CudaKernel
                (_, kernel), = parts
                steps.append(_ours_on_gpu(inst, CudaKernel(make_bundle(kernel, device,
                                                                       name=inst.name))))
                continue
            on_cpu.append((len(steps), inst, parts))
            steps.append(None)
    compiled = iter(compile_kernels([kernel for _, _, parts in on_cpu for _, kernel in parts]))
    for at, inst, parts in on_cpu:
        kernels = [next(compiled) for _ in parts]
        steps[at] = _ours(inst, kernels[0]) if len(parts) == 1 else \
            _ours_in_parts(inst, [part for part, _ in parts], kernels)
    return steps


def _split_parts(inst: HloInstruction, device) -> list[tuple[HloInstruction, EmittedKernel]] | None:
    """Where fusion `inst`'s reduction is one XLA:GPU's
    tree-reduction-rewriter would have split before fusion, its parts with
    their kernels, as xla_gpu.jax.jit runs it on the CPU target
    (tree_reduction.split_reduction, split where the CPU target runs it
    fastest); None where it is one kernel. A column sum over
    f32[16384,1024], one kernel a thread per column, read 512 B of each 4
    KiB row a block: 2.2 ms against XLA:CPU's 1.6 (YNNPACK's threads each
    read their own rows); as 2 kernels, 32 partial sums a column then
    their sum, 0.80-1.11. (xla_gpu.jax.jit also takes reduces out of
    loop fusions and merges the parts into one kernel again: not here, as
    two kernels the softmax step's exp(x - max(x)) over f32[2,4,32,32] ran
    0.15 -> 0.97x XLA's time.)"""
    if not needs_tree_split(inst, device.threads_per_warp, host=True):
        return None
    try:
        parts = split_reduction(inst, device.threads_per_warp, host=True)
        return [(part, emit_kernel(part, device, host=True)) for part in parts] if parts else None
    except EmitterError:
        return None


def _references(arrays: list[np.ndarray]) -> list[tuple[int, int]]:
    """The references to each array and to the bytes under it (its base:
    a view of the array, as numpy makes it, holds those, not the array)."""
    return [(sys.getrefcount(a), sys.getrefcount(a.base)) for a in arrays]


# What _references counts for an output only a list holds.
_ALONE = _references([aligned_empty((1,), np.float32)])[0]


class _OutputPool:
    """The output arrays of one kernel's launches, reused once nothing but
    the pool holds them, as an allocator's free list: the first writes to a
    fresh array of a few MiB fault in a page every 4 KiB, which costs more
    than a transpose of it. Every kernel writes all of its outputs
    (test-correctness starts them as garbage to check it): none is zeroed.
    They start on 64-byte boundaries, as XLA's buffers do (aligned_empty)."""

    KEPT = 4  # sets of outputs kept at most

    def __init__(self, inst: HloInstruction):
        self._specs = [(tuple(s.dims), s.element_type.dtype) for s in inst.shape.leaves()]
        self._sets: list[list[np.ndarray]] = []

    def take(self) -> list[np.ndarray]:
        for outs in self._sets:
            if all(n == _ALONE for n in _references(outs)):
                return list(outs)  # the caller's list holds the arrays
        outs = [aligned_empty(dims, dtype) for dims, dtype in self._specs]
        self._sets = [*self._sets[1 - self.KEPT:], outs]
        return list(outs)


def _ours(inst: HloInstruction, kernel: CpuKernel) -> _Step:
    pool = _OutputPool(inst)

    def run(args):
        outs = pool.take()
        kernel(*args, *outs)
        return outs

    return _Step(inst, run, ours=True)


def _ours_in_parts(inst: HloInstruction, parts: list[HloInstruction],
                   kernels: list[CpuKernel]) -> _Step:
    """Fusion `inst` as the kernels of its parts (_split_parts), one after
    the other, each reading `inst`'s operands and the parts before it."""
    pools = [_OutputPool(part) for part in parts]

    def run(args):
        values = {id(o): a for o, a in zip(inst.operands, args)}
        for part, kernel, pool in zip(parts, kernels, pools):
            outs = pool.take()
            kernel(*[values[id(o)] for o in part.operands], *outs)
            values[id(part)] = outs if part.shape.is_tuple else outs[0]
        return outs

    return _Step(inst, run, ours=True, reason=f"as {len(parts)} kernels (its reduction split, "
                                               "as xla_gpu.jax.jit runs it)")


def _ours_on_gpu(inst: HloInstruction, kernel) -> _Step:
    """A fusion of ours on the GPU (runtime/cuda.py: copies in, one launch,
    copies out)."""
    return _Step(inst, lambda args: kernel(*args), ours=True)


def reference_text(module) -> str:
    """The module as XLA takes it (its fusions as calls, see as_xla_takes_it)."""
    with as_xla_takes_it(module.computations):
        return module.to_text()


def _run(module, steps: list[_Step], inputs) -> list[np.ndarray]:
    by_inst = {id(s.inst): s for s in steps}
    values: dict[int, np.ndarray | list] = {}
    for inst in module.entry.instructions:
        if inst.opcode == "parameter":
            values[id(inst)] = inputs[inst.parameter_number]
            continue
        step = by_inst.get(id(inst))
        if step is None:
            values[id(inst)] = _host_value(inst, values)
            continue
        start = time.perf_counter()
        outs = step.run([values[id(o)] for o in inst.operands])
        step.times.append(time.perf_counter() - start)
        values[id(inst)] = list(outs) if inst.shape.is_tuple else outs[0]
    root = values[id(module.entry.root)]
    return root if isinstance(root, list) else [root]


def _report_steps(steps: list[_Step]) -> None:
    """Which kernels ran where, with their median times."""
    ours = [s for s in steps if s.ours]
    print(f"{len(ours)} of {len(steps)} kernels ran on our emitters:")
    for s in steps:
        ms = float(np.median(s.times)) * 1e3 if s.times else 0.0
        where = "ours" if s.ours else "XLA "
        why = f"  ({s.reason})" if s.reason else ""
        print(f"  {where} {s.inst.name}: {ms:.3f} ms{why}")


def _reference_platform(text: str) -> str | None:
    """`""` (XLA's spelling for none) runs no reference."""
    return None if text == "" else platform_arg(text)


def main(argv: list[str] | None = None) -> int:
    parser = ArgumentParser(prog="run-hlo", description=__doc__.splitlines()[0])
    parser.add_argument("file")
    parser.add_argument("--platform", type=platform_arg, default="cpu",
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
    add_verbose_flag(parser)
    args = parser.parse_args(argv)
    enable_remarks(args.verbose)
    if args.xla_dump_hlo_pass_re is not None:
        try:
            dump_passes = re.search(args.xla_dump_hlo_pass_re, "fusion-emitter") is not None
        except re.error as e:
            parser.error(f"--xla_dump_hlo_pass_re: {e}")
    else:
        dump_passes = True

    def body() -> int:
        require_platform(args.platform)
        module = read_hlo(args.file)
        if args.dump_to is not None:
            args.dump_to.mkdir(parents=True, exist_ok=True)
            (args.dump_to / "module.hlo").write_text(module.to_text())
        check_host_memory([i.shape for i in module.entry.instructions
                           if i.opcode not in ("tuple", "get-tuple-element")],
                          f"the arrays of {module.entry.name}")
        # Our fusions checked first (an error at the instruction), then XLA,
        # which runs the rest and the reference: its parser sees the module
        # in a child process, since some malformed modules crash it.
        _verify_fusions(module, device_named(args.device))
        error = xla_parser_error(reference_text(module))
        if error is not None:
            raise ToolError(f"{args.file}: {error}")
        # XLA runs the entry's other instructions, and the reference.
        if args.reference_platform is not None:
            refuse_divisions_xla_cannot_fold(
                args.file, module.computations, "the reference cannot run; "
                "--reference_platform=\"\" runs our kernels alone")
        else:
            refuse_divisions_xla_cannot_fold(args.file, [module.entry],
                                             "run-hlo has XLA run the entry's instructions")
        rng = np.random.RandomState(args.seed)
        inputs = [random_input(p.shape, rng) for p in module.entry.parameters]
        steps = _compile(module, args.dump_to, device_named(args.device), dump_passes,
                         args.platform)
        ours, times = None, []
        for _ in range(max(1, args.iterations)):
            start = time.perf_counter()
            ours = _run(module, steps, inputs)
            times.append(time.perf_counter() - start)
        ours_ms = np.median(times) * 1e3
        _report_steps(steps)
        fusions = sum(s.ours for s in steps)
        target = "cpu target" if args.platform == "cpu" else "CUDA"
        if args.reference_platform is None:
            print(f"ours ({target}, {fusions} fusions): {ours_ms:.2f} ms, median of "
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
        print(f"ours ({target}, {fusions} fusions): {ours_ms:.2f} ms; XLA:CPU: "
              f"{xla_ms:.2f} ms (compile {xla_compile * 1e3:.0f} ms); medians of "
              f"{len(times)}; ratio ours/XLA {ours_ms / xla_ms:.2f}")
        return 1 if failed else 0

    return run_tool("run-hlo", body)


if __name__ == "__main__":
    sys.exit(main())
