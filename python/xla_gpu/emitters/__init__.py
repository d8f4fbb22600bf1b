"""The emitters: HLO fusion -> MLIR (func/scf/tensor/arith + xla_gpu).

    with ir.Context():
        module = emit_fusion(fusion_instruction)
"""

from __future__ import annotations

import dataclasses

from mlir import ir

import xla_gpu  # noqa: F401  (registers the dialect)

from ..hlo import HloInstruction, HloModule
from ..hlo.inline import inline_calls
from .elemental import EmitterError
from .device import DEFAULT_DEVICE, DEVICES, DeviceDescription, device_named
from .fusion_analysis import (EmitterKind, FusionAnalysis, analyze_fusion, element_bits,
                              find_hero, host_prefers_loop_for, packed_tile_sizes,
                              reduction_dimensions, transpose_spec, with_tuple_of_outputs)
from .kernel import EmittedKernel, LaunchDimensions
from .registry import EMITTERS, EmitterNotBuiltError, emitter_class, register_emitter
from .verifier import verify_fusion, verify_fusion_instruction
# Each emitter registers itself for its kind on import.
from .loop import LoopEmitter, loop_launch_dims, shareable_operands
from .concatenate import ConcatenateEmitter
from .in_place_dynamic_update_slice import InPlaceDynamicUpdateSliceEmitter
from .input_slices import InputSlicesEmitter
from .reduction import ReductionEmitter
from .scatter import ScatterEmitter
from .transpose import TransposeEmitter
from .tree_reduction import _before

__all__ = ["DEFAULT_DEVICE", "DEVICES", "DeviceDescription", "EMITTERS", "EmittedKernel",
           "ConcatenateEmitter", "EmitterError", "EmitterNotBuiltError", "EmitterKind", "FusionAnalysis",
           "InPlaceDynamicUpdateSliceEmitter", "InputSlicesEmitter",
           "LaunchDimensions", "LoopEmitter", "ReductionEmitter", "ScatterEmitter", "TransposeEmitter",
           "analyze_fusion", "device_named", "emit_fusion", "emit_kernel", "emitter_class",
           "find_fusion", "find_hero", "host_prefers_loop", "loop_launch_dims", "make_emitter",
           "register_emitter",
           "shareable_operands", "verify_fusion"]


# On the CPU target alone, a transpose that swaps a dimension of at most
# this many elements with another (XLA tiles one of 8 and one of 1024 or
# more: kMinDimensionToTransposeTiled2) is the loop emitter's. Its 32 x 32
# tiles hold 8 rows then, a quarter of each; a loop's thread an output
# element walks 8 channels of 2 pixels a 16-lane vector. A/B in one
# process, two threads: NHWC -> NCHW f32[16,112,112,8] 0.187 -> 0.071 ms
# (XLA:CPU 0.21), bf16 0.146 -> 0.046 (0.21), u8 0.138 -> 0.030 (0.066);
# NCHW -> NHWC f32 0.099 -> 0.078 (0.20), u8 0.197 -> 0.025 (0.026);
# f32[262144,8] transposed 0.237 -> 0.118 (0.30), f32[8,262144] 0.145 ->
# 0.100. From 10 on the tiles are as fast or faster: 10 channels f32
# 0.302 against 0.316, u8 0.282 against 0.319; 12 u8 0.179 against
# 0.379, bf16 0.201 against 0.379; 16 u8 0.227 against 0.482.
HOST_LOOP_TRANSPOSE_MAX_SIDE = 8


def host_prefers_loop(analysis: FusionAnalysis) -> bool:
    """Whether a fusion runs faster on the CPU target as a loop kernel: a
    reduction of one output, a column reduction host_prefers_loop_for
    takes; a transpose of what a gather reads (_transposes_a_gather), or
    of a side of at most HOST_LOOP_TRANSPOSE_MAX_SIDE (_transposes_a_narrow_side)."""
    if analysis.kind == EmitterKind.TRANSPOSE:
        return _transposes_a_gather(analysis) or _transposes_a_narrow_side(analysis)
    if analysis.kind != EmitterKind.REDUCTION or len(analysis.roots) != 1:
        return False
    return host_prefers_loop_for(reduction_dimensions(analysis.deciding_hero))


def _transposes_a_gather(analysis: FusionAnalysis) -> bool:
    """Whether the transpose hero reads, in its fusion, what a gather reads
    (jnp.take(x, i, axis=1): XLA gathers the columns and transposes them
    back). The transpose emitter's tiles then read gathered elements a row
    apart, a cache line each, where a loop kernel's thread reads along its
    output row, the gathered elements of one row of the operand: x[:, i]
    over f32[512,4096] with 1024 random columns took 0.80 ms on the CPU
    target (two threads), as a loop kernel 0.30 ms. A valid GPU kernel
    either way (the loop emitter's)."""
    read = _before(analysis.deciding_hero.operands)
    return any(i.opcode == "gather" and id(i) in read for i in analysis.computation.instructions)


def _transposes_a_narrow_side(analysis: FusionAnalysis) -> bool:
    """Whether the tiled transpose swaps a dimension of at most
    HOST_LOOP_TRANSPOSE_MAX_SIDE elements (not a 102 transpose, whose
    minor dimension travels whole, nor a packed one of sub-byte
    elements). A valid GPU kernel either way (the loop emitter's)."""
    desc = analysis.tiled_transpose
    if desc is None or desc.permutation[-1] == len(desc.permutation) - 1:
        return False
    if packed_tile_sizes(transpose_spec(desc), element_bits(desc.instr)) is not None:
        return False
    return min(desc.input_shape[-1], desc.dimensions[-1]) <= HOST_LOOP_TRANSPOSE_MAX_SIDE


def make_emitter(fusion: HloInstruction, device: DeviceDescription = DEFAULT_DEVICE,
                 host: bool = False):
    """The emitter for a checked fusion: the fusion analysis picks its kind
    and is handed to it; launch dimensions are chosen for `device`. With
    `host` (a kernel for the CPU target alone) a fusion the loop emitter
    runs faster there (a short column reduction, a transpose of gathered
    columns) is the loop emitter's (host_prefers_loop). Raises
    EmitterError on a malformed fusion, EmitterNotBuiltError when its kind's
    emitter does not exist yet."""
    verify_fusion_instruction(fusion)
    _prepare(fusion.fused_computation)
    verify_fusion(fusion.fused_computation)
    analysis = analyze_fusion(fusion)
    if host and host_prefers_loop(analysis):
        analysis = dataclasses.replace(analysis, kind=EmitterKind.LOOP, deciding_hero=None)
    cls = emitter_class(analysis, device)
    if host:
        cls = cls.host_class(analysis, device)
    emitter = cls(analysis, device)
    if host:
        emitter.for_host()
    return emitter


def emit_kernel(fusion: HloInstruction, device: DeviceDescription = DEFAULT_DEVICE,
                shared_operand: int | None = None, host: bool = False) -> EmittedKernel:
    """One fusion instruction as a kernel (in the current context). With
    `shared_operand`, the kernel writes its result over that operand's
    buffer (one of loop.shareable_operands(fusion): the caller's buffer
    assignment shares them, as XLA's does). `host`: see make_emitter."""
    emitter = make_emitter(fusion, device, host)
    if shared_operand is not None:
        if (not isinstance(emitter, LoopEmitter) or
                shared_operand not in shareable_operands(fusion)):
            raise ValueError(f"{fusion.name}: operand {shared_operand} cannot share the "
                             "result's buffer (not an operand of an elementwise loop "
                             "fusion's one result, read only at the element it makes)")
        emitter.shared_outputs = {0: shared_operand}
    return emitter.emit()


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
