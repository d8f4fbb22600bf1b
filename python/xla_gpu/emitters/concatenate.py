"""The concatenate emitter (XLA's ConcatenateFusion): a fusion whose hero
is a concatenate of at most four operands. The grid is the loop
emitter's for the largest operand; one `xla_gpu.loop` per operand walks
that operand's elements (the largest operand's thread map, restricted to
the operand's shape) and writes each to its place in the output, through
the epilogue (the ops after the concatenate). No thread computes an
element of an operand it does not write, as the loop emitter's
per-output-element select over the operands would.

    concat(a: [n, 100], b: [n, 200], c: [n, 28]) -> [n, 328]
      grid over [n, 200] (the largest), unroll dividing 100, 200 and 28
      loop a: out[i, j]       = epilogue(a(i, j))         j < 100
      loop b: out[i, 100 + j] = epilogue(b(i, j))         j < 200
      loop c: out[i, 300 + j] = epilogue(c(i, j))         j < 28
"""

from __future__ import annotations

from math import gcd, prod

from mlir import ir
from mlir.dialects import func, tensor

from ..hlo import HloInstruction
from ..indexing import delinearize
from ..indexing_map import IndexingMap
from .base import CallTargets, EmitterBase, Epilogue, bitcast_map
from .device import DEFAULT_DEVICE, DeviceDescription
from .elemental import EmitterError
from .fusion_analysis import EmitterKind, FusionAnalysis
from .kernel import LaunchDimensions
from .loop import (LoopLaunch, block_row, default_thread_map, launch_grid, loop_launch_dims,
                   may_prevent_vectorization)
from .registry import register_emitter

__all__ = ["ConcatenateEmitter"]


@register_emitter(EmitterKind.CONCATENATE)
class ConcatenateEmitter(EmitterBase):

    def __init__(self, analysis: FusionAnalysis, device: DeviceDescription = DEFAULT_DEVICE):
        super().__init__(analysis, device)
        if len(analysis.roots) != 1 or analysis.heroes[0].opcode != "concatenate":
            raise EmitterError(self.fusion, "the concatenate emitter takes one output whose "
                               "hero is a concatenate")
        self.root = analysis.roots[0]
        self.concat = analysis.heroes[0]
        self.dimension = self.concat.dimensions[0]
        # XLA's GetLargestConcatOperandShape: the longest along the
        # concatenated dimension (the first such).
        self.largest = max(self.concat.operands,
                           key=lambda op: op.shape.dims[self.dimension]).shape
        self.launch = loop_launch_dims(self.largest, device,
                                       may_prevent_vectorization(self.computation))
        # XLA's ComputeUnrollFactor: a thread's consecutive elements must
        # not straddle two operands.
        self.unroll_factor = self.launch.unroll_factor
        for op in self.concat.operands:
            self.unroll_factor = gcd(self.unroll_factor, op.shape.dims[self.dimension])
        self.epilogue = (Epilogue([self.concat], [self.root]) if self.root is not self.concat
                         else None)
        # Where the largest operand's rows start (for_host): its block a
        # row of the dimensions from this one on; None for XLA's map.
        self.host_split: int | None = None

    def for_host(self) -> None:
        """A kernel for the CPU target alone: a block a row of the largest
        operand, a thread an element -- its dimensions after the
        concatenated one, or from it on where those make fewer than 32
        elements -- where that row is 32 to 1024 elements. An operand's
        elements are then the block's lanes below a bound (a cut of the
        lane loop) or the blocks of some rows (a guard of the block alone),
        at an offset in the output a block's row makes, where XLA's blocks
        of 512 elements, a thread's two or four side by side, left each
        operand's lanes a guard of their quotient by the row's minor
        dimensions (a reflect pad of NHWC images along W, f32[16,228,224,3]
        into [16,228,228,3]: 2.35 -> 0.26 ms a kernel call, 0.12 with the
        CPU target's lanes 3 a step, lower_kernel_to_cpu's periodOf)."""
        dims = self.largest.dims
        split = self.dimension + 1
        if prod(dims[split:]) < 32:
            split = self.dimension
        row = prod(dims[split:])
        if split == 0 or not 32 <= row <= self.device.threads_per_block_limit:
            return
        self.launch = LoopLaunch(launch_grid(prod(dims[:split]), row, self.device), 1)
        self.unroll_factor = 1
        self.host_split = split

    def launch_dims(self) -> LaunchDimensions:
        return self.launch.dims

    def is_subgraph_root(self, inst: HloInstruction) -> bool:
        # The concatenate is emitted here, operand by operand; its operands
        # are read at indices this emitter computes.
        return inst is self.concat or any(inst is op for op in self.concat.operands)

    def epilogues(self) -> list[Epilogue]:
        return [self.epilogue] if self.epilogue is not None else []

    # -- maps ----------------------------------------------------------------------

    def _largest_map(self) -> IndexingMap:
        split = self.host_split
        if split is None:
            return default_thread_map(self, self.launch.dims, self.unroll_factor,
                                      self.largest.dims)
        # A row of the largest operand a block (for_host).
        dims = self.largest.dims
        row, constraints = block_row(self.launch.dims, dims[:split])
        return self.kernel_map(row + delinearize(ir.AffineDimExpr.get(0), dims[split:]),
                               [("chunk_id", 0, 0), ("unroll_id", 0, 0)],
                               constraints).simplify()

    def _operand_offset(self, k: int) -> int:
        return sum(op.shape.dims[self.dimension] for op in self.concat.operands[:k])

    def thread_to_input_map(self, root_index: int, hero_operand_index: int
                            ) -> IndexingMap | None:
        """The largest operand's thread map, on operand `hero_operand_index`'s
        elements: the threads of that operand's loop."""
        operands = self.concat.operands
        if root_index != 0 or not 0 <= hero_operand_index < len(operands):
            return None
        dims = operands[hero_operand_index].shape.dims
        rank = len(dims)
        identity = ir.AffineMap.get(rank, 0, [ir.AffineDimExpr.get(i) for i in range(rank)])
        return self._largest_map().then(
            IndexingMap.get(identity, [(0, n - 1) for n in dims])).simplify()

    def _operand_to_output_map(self, k: int) -> IndexingMap:
        """Operand k's element -> the fusion output's element it becomes:
        shifted along the concatenated dimension, then the epilogue's
        bitcast (elementwise ops keep the index)."""
        dims = self.concat.operands[k].shape.dims
        offset = self._operand_offset(k)
        results = [ir.AffineDimExpr.get(i) + (offset if i == self.dimension else 0)
                   for i in range(len(dims))]
        to_concat = IndexingMap.get(ir.AffineMap.get(len(dims), 0, results),
                                    [(0, n - 1) for n in dims])
        if self.root.shape.dims == self.concat.shape.dims:
            return to_concat
        return to_concat.then(bitcast_map(self.concat.shape.dims, self.root.shape.dims))

    # -- emission ------------------------------------------------------------------

    def emit_entry_function(self, entry: func.FuncOp, call_targets: CallTargets) -> None:
        n = len(self.params)
        params, outputs = list(entry.arguments)[:n], list(entry.arguments)[n:]
        with ir.InsertionPoint(entry.entry_block):
            ids = self.all_kernel_ids()
            largest = self._largest_map()
            for k, operand in enumerate(self.concat.operands):
                loop_map = largest.then(self._operand_to_output_map(k)).simplify()
                if loop_map.is_known_empty:
                    continue

                def body(ivs, index, iters, k=k, operand=operand):
                    at = self.apply_kernel_map(largest, ids, ivs)
                    value = call_targets.value(operand, params, at)
                    if self.epilogue is not None:
                        value = call_targets.call_epilogue(self.epilogue, params, list(index),
                                                           [value])[0]
                    return [tensor.insert(value, iters[0], list(index))]

                outputs = self.emit_kernel_loop(loop_map, outputs, body, keep_symbols=(0, 1),
                                                ids=ids)
            func.ReturnOp(outputs)
