"""The loop emitter, the default: one xla_gpu.loop over thread and block ids
that walks the output linearly (coalesced writes), `vector` consecutive
elements per thread, calling the root subgraph for each element."""

from __future__ import annotations

from dataclasses import dataclass

from mlir import ir
from mlir.dialects import func, tensor

from ..dialects import xla_gpu
from ..hlo import Shape
from ..indexing import delinearize
from ..indexing_map import IndexingMap
from .base import EmitterBase, tensor_type

__all__ = ["LaunchDims", "LoopEmitter", "loop_launch_dims"]

# XLA's default block size for the loop emitter.
kThreadsPerBlock = 128
# XLA's kMaxUnrollFactor: elements per thread, when the count allows it.
kMaxUnrollFactor = 4


@dataclass(frozen=True)
class LaunchDims:
    threads: int
    blocks: int
    vector: int


def loop_launch_dims(shape: Shape) -> LaunchDims:
    n = shape.num_elements
    vector = next(v for v in (kMaxUnrollFactor, 2, 1) if n % v == 0)
    threads = min(kThreadsPerBlock, max(1, -(-n // vector)))
    blocks = max(1, -(-n // (threads * vector)))
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
    def emit_entry_function(self, module: ir.Module) -> None:
        roots = self.subgraphs[0].roots
        shape = roots[0].shape
        self.launch = loop_launch_dims(shape)
        inputs = [tensor_type(p.shape) for p in self.params]
        outputs = [tensor_type(r.shape) for r in roots]
        main = func.FuncOp("main", ir.FunctionType.get(inputs + outputs, outputs))
        block = main.add_entry_block()
        params = list(block.arguments)[: len(inputs)]
        outs = list(block.arguments)[len(inputs):]
        with ir.InsertionPoint(block):
            tid, bid = self.thread_and_block_ids(self.launch.threads, self.launch.blocks)
            m = _thread_to_output_map(shape, self.launch)

            def body(ivs, index, iters):
                values = self.call_root_subgraph(params, index)
                return [tensor.insert(v, t, index) for v, t in zip(values, iters)]

            results = xla_gpu.loop(m, [tid, bid], outs, body)
            func.ReturnOp(results)
