"""The loop emitter, the default: one xla_gpu.loop over thread and block ids
that walks the output linearly (coalesced writes), `vector` consecutive
elements per thread, calling the root subgraph for each element."""

from __future__ import annotations

from dataclasses import dataclass

from mlir import ir
from mlir.dialects import func, tensor

from ..dialects import xla_gpu
from ..hlo import HloComputation, HloInstruction, Shape
from ..indexing import delinearize
from ..indexing_map import IndexingMap
from .base import EmitterBase, tensor_type
from .elemental import EmitterError
from .device import DEFAULT_DEVICE, DeviceDescription

__all__ = ["LaunchDims", "LoopEmitter", "loop_launch_dims", "may_prevent_vectorization"]

# XLA: a block is this many warps (warp scheduling granularity).
kWarpSchedulingGranularity = 4
# XLA's kMaxUnrollFactor: elements per thread, when the count allows it.
kMaxUnrollFactor = 4
# XLA: a concatenate of more operands is not unrolled (register spilling).
kMaxConcatArgumentsForUnrolling = 10


@dataclass(frozen=True)
class LaunchDims:
    threads: int
    blocks: int
    vector: int


def may_prevent_vectorization(comp: HloComputation) -> bool:
    """XLA's MayPreventVectorization: ops that become loops or libcalls
    make unrolling a loss."""
    for inst in comp.instructions:
        if inst.opcode in ("reduce-window", "sort", "dot", "sine", "cosine", "tan", "power",
                           "atan2"):
            return True
        if inst.opcode == "concatenate" and len(inst.operands) > kMaxConcatArgumentsForUnrolling:
            return True
        if inst.opcode == "reduce" and inst.shape.is_tuple:
            return True
    return False


def loop_launch_dims(shape: Shape, device: DeviceDescription = DEFAULT_DEVICE,
                     prevent_vectorization: bool = False) -> LaunchDims:
    """XLA's loop fusion launch: unroll only outputs with at least as many
    elements as the device has resident threads (a small output wants one
    thread per element), by the largest of 4, 2, 1 dividing the count, and
    at least 8 / bits for 2- and 4-bit types (one thread writes a whole
    packed byte); blocks of
    four warps, fewer threads if there are fewer elements."""
    n = shape.num_elements
    vector = 1
    if n >= device.max_resident_threads and not prevent_vectorization:
        vector = next(v for v in (kMaxUnrollFactor, 2, 1) if n % v == 0)
    bits = shape.element_type.bits if shape.element_type is not None else 8
    if bits < 8 and not shape.element_type.is_pred:
        vector = max(vector, 8 // bits)
    per_thread = -(-n // vector)
    threads = min(device.threads_per_warp * kWarpSchedulingGranularity, max(1, per_thread))
    blocks = max(1, -(-per_thread // threads))
    if blocks > device.block_dim_limit_x:
        raise ValueError(f"{shape} needs {blocks} blocks, more than {device.name}'s "
                         f"{device.block_dim_limit_x}")
    return LaunchDims(threads, blocks, vector)


def _thread_to_output_map(shape: Shape, dims: LaunchDims) -> IndexingMap:
    """(th, bl)[v] -> the output index of element (bl * threads + th) * vector
    + v, in row-major order; a constraint cuts a ragged tail."""
    th, bl, v = ir.AffineDimExpr.get(0), ir.AffineDimExpr.get(1), ir.AffineSymbolExpr.get(0)
    linear = bl * (dims.threads * dims.vector) + th * dims.vector + v
    constraints = []
    if dims.threads * dims.blocks * dims.vector != shape.num_elements:
        constraints.append((linear, (0, shape.num_elements - 1)))
    affine = ir.AffineMap.get(2, 1, delinearize(linear, shape.dims))
    return IndexingMap.get(affine, [(0, dims.threads - 1), (0, dims.blocks - 1)],
                           [(0, dims.vector - 1)], constraints=constraints,
                           names=["th", "bl", "v"]).simplify()


class LoopEmitter(EmitterBase):
    def __init__(self, fusion: HloInstruction, device: DeviceDescription = DEFAULT_DEVICE):
        super().__init__(fusion)
        comp = self.computation
        root = self.output_roots()[0]
        self.output_shape = root.shape
        self.launch = loop_launch_dims(root.shape, device, may_prevent_vectorization(comp))

    def thread_to_output_map(self) -> IndexingMap:
        """(thread, block)[element] -> the output index it writes."""
        if self.output_shape.num_elements == 0:
            raise EmitterError(self.output_roots()[0], "the output has no elements, no thread "
                               "writes one")
        return _thread_to_output_map(self.output_shape, self.launch)

    def emit_entry_function(self, module: ir.Module) -> None:
        roots = self.subgraphs[0].roots
        shape = roots[0].shape
        inputs = [tensor_type(p.shape) for p in self.params]
        outputs = [tensor_type(r.shape) for r in roots]
        main = func.FuncOp("main", ir.FunctionType.get(inputs + outputs, outputs))
        block = main.add_entry_block()
        params = list(block.arguments)[: len(inputs)]
        outs = list(block.arguments)[len(inputs):]
        with ir.InsertionPoint(block):
            tid, bid = self.thread_and_block_ids(self.launch.threads, self.launch.blocks)
            m = self.thread_to_output_map()

            def body(ivs, index, iters):
                values = self.call_root_subgraph(params, index)
                return [tensor.insert(v, t, index) for v, t in zip(values, iters)]

            results = xla_gpu.loop(m, [tid, bid], outs, body)
            func.ReturnOp(results)
