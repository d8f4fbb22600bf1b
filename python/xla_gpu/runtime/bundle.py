"""Writing kernel bundles (runtime/cuda.py reads them): an emitted kernel
compiled to PTX, with the launch facts beside it, and the fusion alone as
XLA takes it (`reference.hlo`) so that a GPU machine can run XLA:GPU on
the same computation.

    fusion-to-mlir module.hlo --bundle bundles/      # one folder a fusion
"""

from __future__ import annotations

from pathlib import Path

from mlir import ir

from .. import pipelines
from ..context import new_context
from ..emitters import EmitterNotBuiltError, emit_kernel, find_fusion
from ..emitters.device import DeviceDescription
from ..emitters.kernel import EmittedKernel
from ..hlo import HloModule
from ..reference import as_xla_takes_it, kernel_row_major
from .cuda import BufferSpec, KernelBundle

__all__ = ["make_bundle", "write_bundles"]


def make_bundle(kernel: EmittedKernel, device: DeviceDescription, name: str | None = None
                ) -> KernelBundle:
    """The bundle of `kernel` for `device` (its module is left as it is:
    a copy is lowered)."""
    opts = pipelines.PipelineOptions.for_device(device)
    with kernel.module.context:
        copy = ir.Module.parse(kernel.text)
    ptx = pipelines.compile_to_ptx(copy, opts)
    spec = lambda s: BufferSpec(tuple(s.dims), s.element_type.name)  # noqa: E731
    return KernelBundle(
        name=name or kernel.entry, entry=kernel.entry, ptx=ptx,
        block_counts=tuple(kernel.launch.block_counts),
        thread_counts_per_block=tuple(kernel.launch.thread_counts_per_block),
        parameters=tuple(spec(s) for s in kernel.parameters),
        results=tuple(spec(s) for s in kernel.results),
        aliases=dict(kernel.aliases), chip=opts.chip,
        info={"device": device.name, "static_shared_memory_bytes": kernel.shared_memory_bytes})


def write_bundles(module: HloModule, folder: str | Path, device: DeviceDescription
                  ) -> tuple[list[Path], list[str]]:
    """A bundle folder for every fusion of `module`'s entry (the entry
    wrapped into one when it has none), each with `reference.hlo`. Returns
    the folders written and, for fusions our emitters do not take, why."""
    from ..tools.run_hlo import single_instruction_module

    fusions = module.fusions() or [find_fusion(module)]
    written, skipped = [], []
    for fusion in fusions:
        if fusion.fusion_kind == "kCustom":
            skipped.append(f"{fusion.name}: a kCustom fusion (XLA's library or Triton call)")
            continue
        if not kernel_row_major(fusion):
            # A bundle's arrays are logical (row-major), as XLA takes
            # reference.hlo.
            skipped.append(f"{fusion.name}: an operand or result is not row-major")
            continue
        with new_context():
            try:
                kernel = emit_kernel(fusion, device)
            except EmitterNotBuiltError as e:
                skipped.append(f"{fusion.name}: {e}")
                continue
            bundle = make_bundle(kernel, device, name=fusion.name)
        # A reduction's init value is given its reducer's identity (as
        # test-correctness does): XLA may fold it into every partial result.
        from ..tools.test_correctness import reduction_init_values
        bundle.info["init_values"] = {
            str(k): v.item() for k, v in reduction_init_values(fusion.fused_computation).items()}
        # The precision of the computation is its narrowest float type's
        # (a comparison's tolerance follows from it).
        floats = [s.element_type for i in fusion.fused_computation.instructions
                  for s in i.shape.leaves() if s.is_array and s.element_type.is_float]
        if floats:
            bundle.info["narrowest_float"] = min(floats, key=lambda t: t.bits).name
        out = bundle.save(Path(folder) / fusion.name)
        if fusion.operands:
            reference = single_instruction_module(fusion)
        else:  # the wrapped entry: the module is the computation
            with as_xla_takes_it(module.computations):
                reference = module.to_text()
        (out / "reference.hlo").write_text(reference)
        written.append(out)
    return written, skipped
