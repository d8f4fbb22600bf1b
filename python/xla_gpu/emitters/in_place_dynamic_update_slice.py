"""The in-place dynamic-update-slice emitter (XLA's
InPlaceDynamicUpdateSliceFusion): a fusion whose outputs are
dynamic-update-slices of its parameters (a KV-cache update). Each output
is its operand's buffer (`xla.slice_index`, EmittedKernel.aliases), so the
threads walk the *update*, not the output, and write only the update's
box:

    for each update element u (the loop emitter's grid over the update):
      start = clamp(start indices, 0, operand dims - update dims)   (XLA's)
      output[start + u] = update[u]        for every DUS output, same u

The outputs may have different shapes; their updates have one element
count (the one grid). An output that is a bitcast of its DUS is written at
the bitcast index.
"""

from __future__ import annotations

from mlir import ir
from mlir.dialects import arith, func, tensor

from ..hlo import HloInstruction
from ..indexing_map import IndexingMap
from .base import CallTargets, EmitterBase, apply_map, bitcast_map
from .device import DEFAULT_DEVICE, DeviceDescription
from .elemental import EmitterError, clamped_start_index
from .fusion_analysis import EmitterKind, FusionAnalysis
from .kernel import LaunchDimensions
from .loop import default_thread_map, loop_launch_dims
from .registry import register_emitter

__all__ = ["InPlaceDynamicUpdateSliceEmitter"]


def _in_place_operand(dus: HloInstruction) -> HloInstruction | None:
    """The parameter a dynamic-update-slice updates in place (its operand,
    through bitcasts), or None."""
    operand = dus.operands[0]
    while operand.opcode == "bitcast":
        operand = operand.operands[0]
    return operand if operand.opcode == "parameter" else None


@register_emitter(EmitterKind.IN_PLACE_DYNAMIC_UPDATE_SLICE)
class InPlaceDynamicUpdateSliceEmitter(EmitterBase):

    @classmethod
    def decline_reason(cls, analysis: FusionAnalysis, device: DeviceDescription) -> str | None:
        """XLA's IsDynamicUpdateSliceFusion and
        CanEmitFusedDynamicUpdateSliceInPlaceForGpu, the parts the fusion
        itself decides: every output is a DUS (through bitcasts), every DUS
        updates a parameter of the fusion
        (its buffer becomes the output's), each a different one, with
        updates of one element count."""
        heroes = analysis.heroes
        if any(h.opcode != "dynamic-update-slice" for h in heroes):
            return "an output's hero is not a dynamic-update-slice"
        for root, hero in zip(analysis.roots, heroes):
            while root is not hero and root.opcode == "bitcast":
                root = root.operands[0]
            if root is not hero:
                return (f"output {root.name} computes on its dynamic-update-slice's result "
                        "(every element is written)")
        operands = [_in_place_operand(h) for h in heroes]
        if any(op is None for op in operands):
            return "a dynamic-update-slice's operand is computed in the fusion, not a parameter"
        if len({id(op) for op in operands}) != len(operands):
            return "two dynamic-update-slices update one parameter"
        if any(op.shape.dims != h.shape.dims for op, h in zip(operands, heroes)) or any(
                op.shape.element_type != h.shape.element_type for op, h in zip(operands, heroes)):
            return "an updated parameter is not the output's shape"
        if any(len(op.users) != 1 for op in operands):
            return "an updated parameter is read elsewhere in the fusion"
        if len({h.operands[1].shape.num_elements for h in heroes}) != 1:
            return "the updates have different element counts"
        return None

    def __init__(self, analysis: FusionAnalysis, device: DeviceDescription = DEFAULT_DEVICE):
        super().__init__(analysis, device)
        reason = self.decline_reason(analysis, device)
        if reason is not None:
            raise EmitterError(self.fusion, f"not an in-place dynamic-update-slice: {reason}")
        self.updates = [h for h in analysis.heroes]
        self.update_shape = self.updates[0].operands[1].shape
        self.launch = loop_launch_dims(self.update_shape, device)

    def launch_dims(self) -> LaunchDimensions:
        # No update element: nothing to write, the output is the operand.
        return self.launch.dims if self.update_shape.num_elements else LaunchDimensions()

    def output_aliases(self) -> dict[int, int]:
        return {k: _in_place_operand(h).parameter_number for k, h in enumerate(self.updates)}

    def is_subgraph_root(self, inst: HloInstruction) -> bool:
        # The DUS ops are emitted here; their updates and start indices are
        # read at indices this emitter computes.
        return any(inst is h or any(inst is o for o in h.operands[1:]) for h in self.updates)

    def _update_map(self) -> IndexingMap:
        return default_thread_map(self, self.launch.dims, self.launch.unroll_factor,
                                  self.update_shape.dims)

    def thread_to_input_map(self, root_index: int, hero_operand_index: int
                            ) -> IndexingMap | None:
        """Thread -> the element of the update (operand 1) it writes: the
        threads walk the update, each element once."""
        if hero_operand_index != 1:
            return None
        dims = self.updates[root_index].operands[1].shape.dims
        if dims == self.update_shape.dims:
            return self._update_map()
        return self._update_map().then(bitcast_map(self.update_shape.dims, dims)).simplify()

    def emit_entry_function(self, entry: func.FuncOp, call_targets: CallTargets) -> None:
        n = len(self.params)
        params, outputs = list(entry.arguments)[:n], list(entry.arguments)[n:]
        roots = self.analysis.roots

        def value_of(inst: HloInstruction, index) -> ir.Value:
            return call_targets.value(inst, params, index)

        with ir.InsertionPoint(entry.entry_block):
            if self.update_shape.num_elements == 0:
                func.ReturnOp(outputs)
                return
            ids = self.all_kernel_ids()
            # The clamped starts of every DUS, computed once per thread.
            starts = []
            for dus in self.updates:
                operand, update = dus.operands[0].shape, dus.operands[1].shape
                starts.append([clamped_start_index(value_of(s, []), s.shape.element_type, d - u)
                               for s, d, u in zip(dus.operands[2:], operand.dims, update.dims)])

            def body(ivs, index, iters):
                results = list(iters)
                for k, (dus, root, start) in enumerate(zip(self.updates, roots, starts)):
                    update = dus.operands[1].shape.dims
                    at = list(index) if update == self.update_shape.dims else \
                        apply_map(bitcast_map(self.update_shape.dims, update), index)
                    value = value_of(dus.operands[1], at)
                    target = [arith.addi(s, i) for s, i in zip(start, at)]
                    if root.shape.dims != dus.shape.dims:
                        target = apply_map(bitcast_map(dus.shape.dims, root.shape.dims), target)
                    results[k] = tensor.insert(value, results[k], target)
                return results

            func.ReturnOp(self.emit_kernel_loop(self._update_map(), outputs, body,
                                                keep_symbols=(1,), ids=ids))
