"""The emitters: HLO fusion -> MLIR (func/scf/tensor/arith + xla_gpu).

    with ir.Context():
        module = emit_fusion(fusion_instruction)
"""

from __future__ import annotations

from mlir import ir

import xla_gpu  # noqa: F401  (registers the dialect)

from ..hlo import HloInstruction, HloModule
from .elemental import EmitterError
from .device import DEFAULT_DEVICE, DEVICES, DeviceDescription, device_named
from .fusion_analysis import FusionAnalysis, analyze_fusion, find_hero
from .loop import LoopEmitter, loop_launch_dims
from .verifier import verify_fusion

__all__ = ["DEFAULT_DEVICE", "DEVICES", "DeviceDescription", "EmitterError", "FusionAnalysis",
           "LoopEmitter", "analyze_fusion", "choose_emitter", "device_named", "emit_fusion",
           "find_fusion", "find_hero", "loop_launch_dims", "make_emitter", "verify_fusion"]


def choose_emitter(fusion: HloInstruction):
    """The emitter class for a fusion, from its heroes (XLA's fusion
    analysis): the loop emitter unless a hero needs a special one. Until
    those exist, the loop emitter stands in where it is correct: a tiled
    transpose (its reads not coalesced) and a dynamic-update-slice (the
    whole output written, not just the update in place)."""
    analysis = analyze_fusion(fusion.fused_computation)
    if analysis.kind in ("loop", "transpose", "in-place dynamic-update-slice"):
        return LoopEmitter
    raise EmitterError(analysis.deciding_hero, f"the fusion's hero needs the {analysis.kind} "
                       "emitter, which is not built yet (only the loop emitter is)")


def make_emitter(fusion: HloInstruction, device: DeviceDescription = DEFAULT_DEVICE):
    """The emitter for a checked fusion, its launch chosen for `device`."""
    verify_fusion(fusion.fused_computation)
    return choose_emitter(fusion)(fusion, device)


def emit_fusion(fusion: HloInstruction, device: DeviceDescription = DEFAULT_DEVICE) -> ir.Module:
    """The MLIR of one fusion instruction (in the current context)."""
    return make_emitter(fusion, device).emit_module()


def find_fusion(module: HloModule) -> HloInstruction:
    """The one fusion of a module (as `fusion-to-mlir` takes it): the entry's
    only fusion, else the entry computation wrapped into one."""
    fusions = module.fusions()
    if len(fusions) == 1:
        return fusions[0]
    if len(fusions) > 1:
        raise ValueError(f"the module has {len(fusions)} fusions: "
                         f"{', '.join(f.name for f in fusions)}")
    # A computation without fusions: fuse the whole entry, as XLA's tool does.
    entry = module.entry
    wrapper = HloInstruction(f"{entry.name}_fusion", "fusion", entry.root.shape,
                             operands=[], called_computations=[entry])
    wrapper.attributes = {}
    return wrapper
