"""The emitters: HLO fusion -> MLIR (func/scf/tensor/arith + xla_gpu).

    with ir.Context():
        module = emit_fusion(fusion_instruction)
"""

from __future__ import annotations

from mlir import ir

import xla_gpu  # noqa: F401  (registers the dialect)

from ..hlo import HloInstruction, HloModule
from ..hlo.inline import inline_calls
from .elemental import EmitterError
from .device import DEFAULT_DEVICE, DEVICES, DeviceDescription, device_named
from .fusion_analysis import (EmitterKind, FusionAnalysis, analyze_fusion, find_hero,
                              with_tuple_of_outputs)
from .kernel import EmittedKernel, LaunchDimensions
from .registry import EMITTERS, EmitterNotBuiltError, emitter_class, register_emitter
from .verifier import verify_fusion, verify_fusion_instruction
# Each emitter registers itself for its kind on import.
from .loop import LoopEmitter, loop_launch_dims
from .concatenate import ConcatenateEmitter
from .in_place_dynamic_update_slice import InPlaceDynamicUpdateSliceEmitter
from .input_slices import InputSlicesEmitter
from .reduction import ReductionEmitter
from .scatter import ScatterEmitter
from .transpose import TransposeEmitter

__all__ = ["DEFAULT_DEVICE", "DEVICES", "DeviceDescription", "EMITTERS", "EmittedKernel",
           "ConcatenateEmitter", "EmitterError", "EmitterNotBuiltError", "EmitterKind", "FusionAnalysis",
           "InPlaceDynamicUpdateSliceEmitter", "InputSlicesEmitter",
           "LaunchDimensions", "LoopEmitter", "ReductionEmitter", "ScatterEmitter", "TransposeEmitter",
           "analyze_fusion", "device_named", "emit_fusion", "emit_kernel", "emitter_class",
           "find_fusion", "find_hero", "loop_launch_dims", "make_emitter", "register_emitter",
           "verify_fusion"]


def make_emitter(fusion: HloInstruction, device: DeviceDescription = DEFAULT_DEVICE):
    """The emitter for a checked fusion: the fusion analysis picks its kind
    and is handed to it; launch dimensions are chosen for `device`. Raises
    EmitterError on a malformed fusion, EmitterNotBuiltError when its kind's
    emitter does not exist yet."""
    verify_fusion_instruction(fusion)
    _prepare(fusion.fused_computation)
    verify_fusion(fusion.fused_computation)
    analysis = analyze_fusion(fusion)
    return emitter_class(analysis, device)(analysis, device)


def emit_kernel(fusion: HloInstruction,
                device: DeviceDescription = DEFAULT_DEVICE) -> EmittedKernel:
    """One fusion instruction as a kernel (in the current context)."""
    return make_emitter(fusion, device).emit()


def emit_fusion(fusion: HloInstruction, device: DeviceDescription = DEFAULT_DEVICE) -> ir.Module:
    """The MLIR of one fusion instruction (in the current context)."""
    return emit_kernel(fusion, device).module


def find_fusion(module: HloModule) -> HloInstruction:
    """The one fusion of a module (as `fusion-to-mlir` takes it): the entry's
    only fusion, else the entry computation wrapped into one."""
    fusions = module.fusions()
    if len(fusions) == 1:
        verify_fusion_instruction(fusions[0])
        _prepare(fusions[0].fused_computation)
        return fusions[0]
    if len(fusions) > 1:
        raise ValueError(f"the module has {len(fusions)} fusions: "
                         f"{', '.join(f.name for f in fusions)}")
    # A computation without fusions: fuse the whole entry, as XLA's tool does.
    entry = module.entry
    wrapper = HloInstruction(f"{entry.name}_fusion", "fusion", entry.root.shape,
                             operands=[], called_computations=[entry])
    wrapper.attributes = {}
    _prepare(entry)
    return wrapper


def _prepare(comp) -> None:
    """What the emitters take: calls inlined (jax's pre-optimization
    modules), a tuple-shaped root as a tuple of its elements."""
    inline_calls(comp)
    with_tuple_of_outputs(comp)
