"""The input-slices emitter (XLA's InputSlicesFusion): a fusion whose
outputs are unit-stride slices of operands of one shape (outputs of
different shapes). One `xla_gpu.loop` walks the input shape with the loop
emitter's grid; each thread computes its input element once per distinct
sliced operand and writes it to every output whose slice contains it
(`xla_gpu.predicated_insert` at the element's place in that output):

    in [64, 300] ─┬─ out0 = in[:, 0:100]     written where 0 <= j < 100
                  └─ out1 = in[:, 100:300]   written where 100 <= j < 300
"""

from __future__ import annotations

from mlir import ir
from mlir.dialects import arith, func

from ..dialects import xla_gpu
from ..hlo import HloInstruction
from ..indexing_map import IndexingMap
from .base import CallTargets, EmitterBase, apply_map
from .device import DEFAULT_DEVICE, DeviceDescription
from .elemental import EmitterError
from .fusion_analysis import EmitterKind, FusionAnalysis
from .kernel import LaunchDimensions
from .loop import default_thread_map, loop_launch_dims
from .registry import register_emitter

__all__ = ["InputSlicesEmitter"]


def _inside(index, bounds, dims) -> ir.Value:
    """An i1: `index` lies in the slice's box [start, limit) (the bounds
    the input's shape already implies are not tested)."""
    idx = ir.IndexType.get()
    tests = []
    for value, (start, limit, *_), n in zip(index, bounds, dims):
        if start > 0:
            tests.append(arith.cmpi(arith.CmpIPredicate.sge, value, arith.constant(idx, start)))
        if limit < n:
            tests.append(arith.cmpi(arith.CmpIPredicate.slt, value, arith.constant(idx, limit)))
    if not tests:
        return arith.constant(ir.IntegerType.get_signless(1), 1)
    ok = tests[0]
    for t in tests[1:]:
        ok = arith.andi(ok, t)
    return ok


@register_emitter(EmitterKind.INPUT_SLICES)
class InputSlicesEmitter(EmitterBase):

    @classmethod
    def decline_reason(cls, analysis: FusionAnalysis, device: DeviceDescription) -> str | None:
        """Packed sub-byte outputs would have two threads write one byte
        where a slice starts inside it; the loop emitter writes them
        whole bytes per thread."""
        if any(r.shape.element_type.bits < 8 for r in analysis.roots):
            return "its outputs are packed sub-byte types"
        return None

    def __init__(self, analysis: FusionAnalysis, device: DeviceDescription = DEFAULT_DEVICE):
        super().__init__(analysis, device)
        roots = analysis.roots
        if any(r.opcode != "slice" for r in roots) or \
                len({r.operands[0].shape.dims for r in roots}) != 1:
            raise EmitterError(self.fusion, "the input-slices emitter takes outputs that are "
                               "slices of operands of one shape")
        self.input_shape = roots[0].operands[0].shape
        # XLA: a thread handles ceil(8 / bits) elements of the narrowest
        # output (1 for byte-sized types): no unrolling otherwise.
        self.launch = loop_launch_dims(self.input_shape, device, prevent_vectorization=True)
        # The distinct sliced operands, each computed once per element.
        self.operands: list[HloInstruction] = []
        for r in roots:
            if all(r.operands[0] is not op for op in self.operands):
                self.operands.append(r.operands[0])

    def launch_dims(self) -> LaunchDimensions:
        return self.launch.dims

    def is_subgraph_root(self, inst: HloInstruction) -> bool:
        return any(inst is op for op in self.operands)

    def _input_map(self) -> IndexingMap:
        return default_thread_map(self, self.launch.dims, self.launch.unroll_factor,
                                  self.input_shape.dims)

    def _slice_map(self, root: HloInstruction) -> IndexingMap:
        """Input element -> its place in slice `root`, defined where the
        slice holds it."""
        bounds = root.attr("slice")
        dims = self.input_shape.dims
        d = [ir.AffineDimExpr.get(i) for i in range(len(dims))]
        starts = [b[0] for b in bounds]
        affine = ir.AffineMap.get(len(dims), 0, [e - s for e, s in zip(d, starts)])
        constraints = [(e, (b[0], b[1] - 1)) for e, b in zip(d, bounds)]
        return IndexingMap.get(affine, [(0, n - 1) for n in dims], constraints=constraints)

    def thread_to_output_map(self, root_index: int) -> IndexingMap:
        root = self.analysis.roots[root_index]
        return self._input_map().then(self._slice_map(root)).simplify()

    def thread_to_input_map(self, root_index: int, hero_operand_index: int
                            ) -> IndexingMap | None:
        """Every thread reads its input element once, whichever slices hold
        it (XLA's map for every output)."""
        return self._input_map() if hero_operand_index == 0 else None

    def emit_entry_function(self, entry: func.FuncOp, call_targets: CallTargets) -> None:
        n = len(self.params)
        params, outputs = list(entry.arguments)[:n], list(entry.arguments)[n:]
        roots = self.analysis.roots
        with ir.InsertionPoint(entry.entry_block):
            ids = self.all_kernel_ids()
            slice_maps = [self._slice_map(r) for r in roots]

            def body(ivs, index, iters):
                values = {id(op): call_targets.value(op, params, index) for op in self.operands}
                results = list(iters)
                for k, (root, m) in enumerate(zip(roots, slice_maps)):
                    at = apply_map(m, list(index))
                    results[k] = xla_gpu.predicated_insert(
                        _inside(index, root.attr("slice"), self.input_shape.dims),
                        values[id(root.operands[0])], results[k], at)
                return results

            func.ReturnOp(self.emit_kernel_loop(self._input_map(), outputs, body,
                                                keep_symbols=(1,), ids=ids))
