"""The emitter framework: the fixed sequence every emitter follows -- create
the module, partition the fusion, declare and emit the subgraph functions,
then the entry function, the one hook each emitter fills in."""

from __future__ import annotations

from mlir import ir
from mlir.dialects import func, gpu, tensor

from ..dialects import xla_gpu
from ..hlo import HloInstruction, Shape
from .elemental import ElementalEmitter, EmitterError, mlir_type
from .partitioner import Subgraph, partition

__all__ = ["EmitterBase", "tensor_type"]


def tensor_type(shape: Shape) -> ir.RankedTensorType:
    return ir.RankedTensorType.get(list(shape.dims), mlir_type(shape.element_type))


def _index_range(lo: int, hi: int) -> ir.ArrayAttr:
    index = ir.IndexType.get()
    return ir.ArrayAttr.get([ir.IntegerAttr.get(index, lo), ir.IntegerAttr.get(index, hi)])


class EmitterBase:
    """Subclasses implement `emit_entry_function` (and `launch_dims`)."""

    def __init__(self, fusion: HloInstruction):
        if fusion.fused_computation is None:
            raise EmitterError(fusion, "not a fusion")
        self.fusion = fusion
        self.computation = fusion.fused_computation

    # -- the fixed sequence ----------------------------------------------------

    def emit_module(self) -> ir.Module:
        """The fusion as MLIR: subgraph functions and the entry `@main`.
        Needs an active context."""
        with ir.Location.name(self.fusion.name):
            module = ir.Module.create()
            self.params = self.computation.parameters
            if self.output_roots()[0].shape.num_elements == 0:
                # Nothing to compute (XLA runs no kernel for it): @main
                # returns its outputs as they are.
                self.subgraphs = []
                with ir.InsertionPoint(module.body):
                    self._emit_empty_entry()
                return module
            self.subgraphs = partition(self.computation)
            with ir.InsertionPoint(module.body):
                self.functions = {id(s): self._declare(s) for s in self.subgraphs}
                for s in self.subgraphs:
                    self._emit_subgraph(s)
                self.emit_entry_function(module)
        module.operation.verify()
        return module

    def emit_entry_function(self, module: ir.Module) -> None:
        raise NotImplementedError

    def output_roots(self) -> list[HloInstruction]:
        root = self.computation.root
        return list(root.operands) if root.opcode == "tuple" else [root]

    def _emit_empty_entry(self) -> None:
        inputs = [tensor_type(p.shape) for p in self.params]
        outputs = [tensor_type(r.shape) for r in self.output_roots()]
        main = func.FuncOp("main", ir.FunctionType.get(inputs + outputs, outputs))
        block = main.add_entry_block()
        with ir.InsertionPoint(block):
            func.ReturnOp(list(block.arguments)[len(inputs):])

    # -- helpers shared by the emitters ---------------------------------------

    def thread_and_block_ids(self, threads: int, blocks: int) -> tuple[ir.Value, ir.Value]:
        tid = gpu.ThreadIdOp(gpu.Dimension.x)
        tid.attributes["xla.range"] = _index_range(0, threads - 1)
        bid = gpu.BlockIdOp(gpu.Dimension.x)
        bid.attributes["xla.range"] = _index_range(0, blocks - 1)
        return tid.result, bid.result

    def call_root_subgraph(self, params, index) -> list[ir.Value]:
        f = self.functions[id(self.subgraphs[0])]
        return list(xla_gpu.PureCallOp(f, [*params, *index]).results)

    # -- subgraphs -----------------------------------------------------------------

    def _declare(self, s: Subgraph) -> func.FuncOp:
        rank = s.roots[0].shape.rank
        inputs = [tensor_type(p.shape) for p in self.params] + [ir.IndexType.get()] * rank
        results = [mlir_type(r.shape.element_type) for r in s.roots]
        f = func.FuncOp(s.name, ir.FunctionType.get(inputs, results))
        f.sym_visibility = ir.StringAttr.get("private")
        return f

    def _emit_subgraph(self, s: Subgraph) -> None:
        f = self.functions[id(s)]
        block = f.add_entry_block()
        params = list(block.arguments)[: len(self.params)]
        index = list(block.arguments)[len(self.params):]
        owner = {id(i): sub for sub in self.subgraphs for i in sub.instructions}

        def outside(inst: HloInstruction, idx):
            if inst.opcode == "parameter":
                return tensor.extract(params[inst.parameter_number], idx)
            other = owner[id(inst)]
            results = xla_gpu.PureCallOp(self.functions[id(other)], [*params, *idx]).results
            return results[[r is inst for r in other.roots].index(True)]

        with ir.InsertionPoint(block):
            emitter = ElementalEmitter({id(i) for i in s.instructions}, outside)
            func.ReturnOp([emitter.emit(r, index) for r in s.roots])
