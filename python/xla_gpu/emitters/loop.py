"""The loop emitter, the default: one xla_gpu.loop over thread and block ids
that walks the output linearly (coalesced writes), `vector` consecutive
elements per thread, calling the root subgraph for each element."""

from __future__ import annotations

from dataclasses import dataclass

from mlir import ir
from mlir.dialects import func, tensor

from ..dialects import xla_gpu
from ..hlo import Shape
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
    linear = f"(bl * {dims.threads * dims.vector} + th * {dims.vector} + v)"
    results, stride = [], 1
    strides = []
    for d in reversed(shape.dims):
        strides.append(stride)
        stride *= d
    strides.reverse()
    for d, s in zip(shape.dims, strides):
        e = f"({linear} floordiv {s})" if s > 1 else linear
        results.append(f"{e} mod {d}" if s * d != stride else e)
    domain = (f"th in [0, {dims.threads - 1}], bl in [0, {dims.blocks - 1}], "
              f"v in [0, {dims.vector - 1}]")
    if dims.threads * dims.blocks * dims.vector != shape.num_elements:
        domain += f", {linear} in [0, {shape.num_elements - 1}]"
    text = f"(th, bl)[v] -> ({', '.join(results)}), domain: {domain}"
    return IndexingMap.parse(text).simplify()


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
