"""The scatter emitter (XLA's ScatterFusion): a fusion whose root is a
scatter. The output is the scatter's operand updated in place (it aliases
the operand's parameter: `xla.slice_index`, EmittedKernel.aliases); one
thread per element of the updates:

    for each update element U (the loop emitter's grid over the updates):
      S     = scatter_indices[the index vector of U's scatter dimensions]
      start = S placed on scatter_dims_to_operand_dims (0 elsewhere)
      I     = start + U's window position (0 on inserted_window_dims)
      if the whole window fits the operand at start (XLA skips it otherwise):
        output[I] = combiner(output[I], update[U])
            atomically (xla_gpu.atomic_rmw) where updates may collide,
            a plain read-combine-write with unique_indices=true.

Any scatter dimension numbers (not only the ones XLA's ScatterSimplifier
leaves), one operand (XLA's emitter does not take variadic scatters), no
batching dimensions.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from mlir import ir
from mlir.dialects import arith, func, scf, tensor

from ..dialects import xla_gpu
from ..hlo import HloInstruction
from ..indexing_map import IndexingMap
from .base import CallTargets, EmitterBase
from .device import DEFAULT_DEVICE, DeviceDescription
from .elemental import EmitterError
from .fusion_analysis import EmitterKind, FusionAnalysis
from .kernel import LaunchDimensions
from .loop import default_thread_map, loop_launch_dims
from .registry import register_emitter

__all__ = ["ScatterDimensions", "ScatterEmitter", "scatter_dimensions"]


@dataclass(frozen=True)
class ScatterDimensions:
    """A scatter's dimension numbers, checked against its operands."""

    update_window_dims: tuple[int, ...]
    inserted_window_dims: tuple[int, ...]
    scatter_dims_to_operand_dims: tuple[int, ...]
    index_vector_dim: int
    # Per operand dimension: the update dimension of its window position
    # (None for an inserted dimension), and the window's size there.
    window_source: tuple[int | None, ...]
    window_sizes: tuple[int, ...]
    # The update dimensions that pick the index vector, in order.
    update_scatter_dims: tuple[int, ...]


def _ints(inst: HloInstruction, name: str) -> tuple[int, ...]:
    value = inst.attr(name, [])
    if isinstance(value, int):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(v, int) for v in value):
        raise EmitterError(inst, f"{name}={inst.attributes[name].text} is not a list of "
                           "dimensions")
    return tuple(value)


def scatter_dimensions(inst: HloInstruction) -> ScatterDimensions:
    """XLA's shape inference for a scatter (ShapeInference::InferScatterShape,
    the parts the emitter relies on): raises EmitterError at the
    instruction when the dimension numbers do not fit the operands."""
    if len(inst.operands) != 3:
        raise EmitterError(inst, f"a scatter of {len(inst.operands)} operands is variadic; "
                           "the scatter emitter takes one operand, its indices and updates")
    operand, indices, updates = (o.shape for o in inst.operands)
    if not all(s.is_array for s in (operand, indices, updates)):
        raise EmitterError(inst, "a scatter's operands are arrays")
    if inst.shape.dims != operand.dims or inst.shape.element_type != operand.element_type:
        raise EmitterError(inst, f"the result {inst.shape} must be the operand's shape "
                           f"{operand}")
    if indices.element_type.kind not in ("signed", "unsigned"):
        raise EmitterError(inst, f"scatter indices must be integers, got {indices}")
    if updates.element_type != operand.element_type:
        raise EmitterError(inst, f"the updates {updates} must have the operand's element "
                           f"type {operand.element_type}")
    for name in ("input_batching_dims", "scatter_indices_batching_dims"):
        if _ints(inst, name):
            raise EmitterError(inst, f"{name} (batched scatter) is not supported; XLA's "
                               "BatchedScatterRewriter removes them")
    window = _ints(inst, "update_window_dims")
    inserted = _ints(inst, "inserted_window_dims")
    to_operand = _ints(inst, "scatter_dims_to_operand_dims")
    ivd = inst.attr("index_vector_dim", indices.rank)
    if not isinstance(ivd, int) or not 0 <= ivd <= indices.rank:
        raise EmitterError(inst, f"index_vector_dim={ivd} is not a dimension of the indices "
                           f"{indices} (or their rank)")
    vector_size = indices.dims[ivd] if ivd < indices.rank else 1
    if len(to_operand) != vector_size:
        raise EmitterError(inst, f"scatter_dims_to_operand_dims has {len(to_operand)} "
                           f"dimensions; the index vector has {vector_size}")
    if len(set(to_operand)) != len(to_operand) or \
            any(not 0 <= d < operand.rank for d in to_operand):
        raise EmitterError(inst, "scatter_dims_to_operand_dims must be distinct dimensions of "
                           f"the operand {operand}")
    if list(window) != sorted(set(window)) or \
            any(not 0 <= d < updates.rank for d in window):
        raise EmitterError(inst, "update_window_dims must be sorted distinct dimensions of "
                           f"the updates {updates}")
    if list(inserted) != sorted(set(inserted)) or \
            any(not 0 <= d < operand.rank for d in inserted):
        raise EmitterError(inst, "inserted_window_dims must be sorted distinct dimensions of "
                           f"the operand {operand}")
    if len(window) + len(inserted) != operand.rank:
        raise EmitterError(inst, f"update_window_dims ({len(window)}) and inserted_window_dims "
                           f"({len(inserted)}) must cover the operand's {operand.rank} "
                           "dimensions")
    scatter_dims = tuple(d for d in range(updates.rank) if d not in window)
    index_batch = [d for i, d in enumerate(indices.dims) if i != ivd]
    if [updates.dims[d] for d in scatter_dims] != index_batch:
        raise EmitterError(inst, f"the updates' scatter dimensions "
                           f"{[updates.dims[d] for d in scatter_dims]} must be the indices' "
                           f"{index_batch}")
    source, sizes = [], []
    window_iter = iter(window)
    for d in range(operand.rank):
        if d in inserted:
            source.append(None)
            sizes.append(1)
        else:
            u = next(window_iter)
            if updates.dims[u] > operand.dims[d]:
                raise EmitterError(inst, f"the update window's dimension {u} "
                                   f"({updates.dims[u]}) is larger than the operand's "
                                   f"dimension {d} ({operand.dims[d]})")
            source.append(u)
            sizes.append(updates.dims[u])
    return ScatterDimensions(window, inserted, to_operand, ivd, tuple(source), tuple(sizes),
                             scatter_dims)


# The mark of an atomic update whose scatter's indices are sorted
# (indices_are_sorted): its updates of one element come in runs.
SORTED_UPDATES = "xla.indices_are_sorted"


@register_emitter(EmitterKind.SCATTER)
class ScatterEmitter(EmitterBase):

    def __init__(self, analysis: FusionAnalysis, device: DeviceDescription = DEFAULT_DEVICE):
        super().__init__(analysis, device)
        self.scatter = analysis.roots[0]
        if self.scatter.opcode != "scatter" or len(analysis.roots) != 1:
            raise EmitterError(self.fusion, "the scatter emitter takes one scatter output")
        self.dims = scatter_dimensions(self.scatter)
        operand, self.indices, self.updates = self.scatter.operands
        if operand.opcode != "parameter":
            raise EmitterError(self.scatter, "the scatter's operand must be a parameter of "
                               "the fusion: XLA updates it in place (its buffer is the "
                               f"output's), and {operand.name} is computed in the fusion")
        self.operand = operand
        combiner = self.scatter.called_computations
        if len(combiner) != 1 or len(combiner[0].parameters) != 2 or \
                not combiner[0].root.shape.is_array or combiner[0].root.shape.rank != 0:
            raise EmitterError(self.scatter, "the combiner (to_apply) must be a computation of "
                               "two scalars to one")
        self.unique = str(self.scatter.attr("unique_indices", "false")).lower() == "true"
        # Sorted indices of one-element windows: each update's neighbour in
        # the threads' order is the next index's (runs of one element).
        self.sorted = (str(self.scatter.attr("indices_are_sorted", "false")).lower() == "true"
                       and math.prod(self.dims.window_sizes) == 1)
        element = self.scatter.shape.element_type
        if not self.unique and element.is_complex and element.bits > 64:
            raise EmitterError(self.scatter, f"updates of {element.name} that may collide "
                               "need an atomic 128-bit update, which GPUs do not have (with "
                               "unique_indices=true they are plain stores)")
        # XLA: the updates' shape with the loop emitter's grid, unrolled 1.
        self.launch = loop_launch_dims(self.updates.shape, device, prevent_vectorization=True)

    def for_host(self) -> None:
        """A kernel for the CPU target alone: one block (one thread of the
        CPU runs it, its threads' steps the updates' chunks) wherever
        updates may collide. Its atomic updates are then plain loads,
        updates and stores (-xla-gpu-lower-kernel-to-cpu's
        plainAtomicsWhenExclusive); on several threads each is an atomic
        one, x86's float add a locked compare-and-swap loop, and they
        fight over cache lines too: jnp.histogram's scatter of 4M ones into
        257 bins took 2.6 ms a kernel call on one thread, 25 on two; a
        segment sum of f32[65536,64] rows into [4096,64] (random segments,
        16 updates an element) 0.51 ms on one, 11.7 on two. The runtimes'
        probes find that only after several calls, the FFI handler's after
        ~100 of a program of 15 kernels (a GNN layer's gradient through
        xj.jit ran 1.3-1.4x jax.jit's time). XLA:CPU's scatter runs on one
        thread as well."""
        if self.unique:
            return
        self.launch = replace(
            self.launch, dims=LaunchDimensions((1, 1, 1), self.launch.dims.thread_counts_per_block))

    def launch_dims(self) -> LaunchDimensions:
        # No update element: nothing to write, the output is the operand.
        return self.launch.dims if self.updates.shape.num_elements else LaunchDimensions()

    def output_aliases(self) -> dict[int, int]:
        return {0: self.operand.parameter_number}

    def is_subgraph_root(self, inst: HloInstruction) -> bool:
        return inst is self.scatter or inst is self.indices or inst is self.updates

    def thread_to_input_map(self, root_index: int, hero_operand_index: int
                            ) -> IndexingMap | None:
        """Thread -> the update element it applies (operand 2); the others
        are read at data-dependent indices."""
        if root_index != 0 or hero_operand_index != 2:
            return None
        return self._updates_map()

    def _updates_map(self) -> IndexingMap:
        return default_thread_map(self, self.launch.dims, 1, self.updates.shape.dims)

    def emit_entry_function(self, entry: func.FuncOp, call_targets: CallTargets) -> None:
        n = len(self.params)
        params, outputs = list(entry.arguments)[:n], list(entry.arguments)[n:]
        index_type = ir.IndexType.get()
        combiner = call_targets.computations[id(self.scatter.called_computations[0])]
        unsigned = self.indices.shape.element_type.kind == "unsigned"
        operand_dims = self.operand.shape.dims

        def value_of(inst: HloInstruction, index) -> ir.Value:
            return call_targets.value(inst, params, index)

        def c(v: int) -> ir.Value:
            return arith.constant(index_type, v)

        def body(ivs, update_index, iters):
            update_index = list(update_index)
            update = value_of(self.updates, update_index)
            # The index vector of this update's scatter position.
            batch = [update_index[d] for d in self.dims.update_scatter_dims]
            starts = [c(0)] * len(operand_dims)
            in_bounds = None
            for k, d in enumerate(self.dims.scatter_dims_to_operand_dims):
                at = list(batch)
                if self.dims.index_vector_dim < self.indices.shape.rank:
                    at.insert(self.dims.index_vector_dim, c(k))
                raw = value_of(self.indices, at)
                start = (arith.index_castui if unsigned else arith.index_cast)(index_type, raw)
                starts[d] = start
                # XLA skips an update whose window does not fit at start.
                fits = arith.andi(
                    arith.cmpi(arith.CmpIPredicate.sge, start, c(0)),
                    arith.cmpi(arith.CmpIPredicate.sle, start,
                               c(operand_dims[d] - self.dims.window_sizes[d])))
                in_bounds = fits if in_bounds is None else arith.andi(in_bounds, fits)
            target = [start if u is None else arith.addi(start, update_index[u])
                      for start, u in zip(starts, self.dims.window_source)]
            out = iters[0]
            if in_bounds is None:
                return [self._combine(out, target, update, combiner, params)]
            branch = scf.IfOp(in_bounds, [out.type], has_else=True)
            with ir.InsertionPoint(branch.then_block):
                scf.YieldOp([self._combine(out, target, update, combiner, params)])
            with ir.InsertionPoint(branch.else_block):
                scf.YieldOp([out])
            return [branch.result]

        with ir.InsertionPoint(entry.entry_block):
            if self.updates.shape.num_elements == 0:
                func.ReturnOp(outputs)
                return
            ids = self.all_kernel_ids()
            func.ReturnOp(self.emit_kernel_loop(self._updates_map(), outputs, body,
                                                keep_symbols=(1,), ids=ids))

    def _combine(self, out: ir.Value, target, update: ir.Value, combiner: func.FuncOp,
                 params) -> ir.Value:
        """output[target] = combiner(output[target], update): a plain
        read-modify-write when no two updates meet (unique_indices),
        else xla_gpu.atomic_rmw (marked SORTED_UPDATES where the indices
        are sorted)."""
        if self.unique:
            current = tensor.extract(params[self.operand.parameter_number], list(target))
            new = xla_gpu.PureCallOp(combiner, [current, update]).results[0]
            return tensor.insert(new, out, list(target))
        rmw = xla_gpu.AtomicRMWOp(out, list(target))
        if self.sorted:
            # The updates of one element come one after the other: the CPU
            # target carries their runs in registers (flatten-tensors and
            # lower-tensors keep the mark, on the llvm.atomicrmw or the
            # compare-and-swap loop; -xla-gpu-lower-kernel-to-cpu's
            # carryRunsOfUpdates reads it). Not for windows of several
            # elements: a row's updates are neighbours there, the runs of
            # one element a row apart, and carried values kept LLVM from
            # vectorizing a row (f32 rows of 16 into 1000 sorted segments
            # 0.14 -> 0.64 ms).
            rmw.operation.attributes[SORTED_UPDATES] = ir.UnitAttr.get()
        with ir.InsertionPoint(rmw.body):
            new = xla_gpu.PureCallOp(combiner, [rmw.current, update]).results[0]
            xla_gpu.YieldOp([new])
        return rmw.result
