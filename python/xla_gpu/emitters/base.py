"""The emitter framework (XLA's MlirFusionEmitterBase): the fixed sequence
every emitter follows, and the one hook each fills in.

    analysis (heroes, kind) ──► Emitter(analysis, device)
                                   │ launch_dims()              (hook)
                                   ▼
    emit():  module ─► partition ─► declare + emit subgraph functions
                   └─► entry function @<fusion name>  (params..., outputs...)
                         xla.slice_index per argument, xla.launch_dims
                         (xla.block_order: the CPU's order of the blocks)
                         └─► emit_entry_function(entry, call_targets)  (hook)
                   ─► EmittedKernel (module, entry, launch, shapes, aliases)

Kernel maps use XLA's six dimensions (th_x, th_y, th_z, bl_x, bl_y, bl_z)
and its symbol names (chunk_id, unroll_id); `emit_kernel_loop` leaves out
of the emitted IR the dimensions whose range is a single value, as the
seed's `(th_x, bl_x)[...]` maps show.
"""

from __future__ import annotations

from dataclasses import dataclass

from mlir import ir
from mlir.dialects import arith, func, gpu, tensor

from ..dialects import xla_gpu
from ..hlo import HloComputation, HloInstruction, Shape
from ..indexing import delinearize
from ..indexing_map import IndexingMap
from ..pipelines import verify
from .device import DEFAULT_DEVICE, DeviceDescription
from .elemental import ElementalEmitter, EmitterError, mlir_type
from .fusion_analysis import FusionAnalysis
from .kernel import BLOCK_ORDER_ATTR, LAUNCH_DIMS_ATTR, EmittedKernel, LaunchDimensions
from .partitioner import Subgraph, partition, sanitize_function_name

__all__ = ["KERNEL_DIM_NAMES", "CallTargets", "EmitterBase", "Epilogue", "apply_map",
           "apply_map_at", "bitcast_map", "check_constraints", "sanitize_function_name",
           "tensor_type"]

# XLA's names of the kernel maps' dimensions, in order.
KERNEL_DIM_NAMES = ("th_x", "th_y", "th_z", "bl_x", "bl_y", "bl_z")


def tensor_type(shape: Shape) -> ir.RankedTensorType:
    return ir.RankedTensorType.get(list(shape.dims), mlir_type(shape.element_type))


def _index_range(lo: int, hi: int) -> ir.ArrayAttr:
    index = ir.IndexType.get()
    return ir.ArrayAttr.get([ir.IntegerAttr.get(index, lo), ir.IntegerAttr.get(index, hi)])


def bitcast_map(src: tuple[int, ...], dst: tuple[int, ...]) -> IndexingMap:
    """The row-major index of `dst` at the same linear position as an
    index of `src`."""
    d = [ir.AffineDimExpr.get(i) for i in range(len(src))]
    linear = ir.AffineConstantExpr.get(0)
    for e, n in zip(d, src):
        linear = linear * n + e
    affine = ir.AffineMap.get(len(src), 0, delinearize(linear, dst))
    return IndexingMap.get(affine, [(0, n - 1) for n in src]).simplify()


def apply_map(m: IndexingMap, dims) -> list[ir.Value]:
    """`xla_gpu.apply_indexing` of a map without symbols: its results."""
    return apply_map_at(m, dims)


def apply_map_at(m: IndexingMap, dims, symbols=()) -> list[ir.Value]:
    """`xla_gpu.apply_indexing` of a map at dimensions and symbols (a map
    to a scalar's index has no results: nothing is emitted)."""
    if m.num_results == 0:
        return []
    result = xla_gpu.apply_indexing(m, list(dims), list(symbols))
    return [result] if isinstance(result, ir.Value) else list(result)


def check_constraints(m: IndexingMap, dims, symbols=()) -> ir.Value:
    """An i1 that is true where `m`'s constraints hold and its dimensions
    are in their ranges (XLA's CheckConstraints)."""
    index = ir.IndexType.get()

    def in_range(value: ir.Value, lo: int, hi: int) -> ir.Value:
        ge = arith.cmpi(arith.CmpIPredicate.sge, value, arith.constant(index, lo))
        le = arith.cmpi(arith.CmpIPredicate.sle, value, arith.constant(index, hi))
        return arith.andi(ge, le)

    ok = arith.constant(ir.IntegerType.get_signless(1), 1)
    constraints = m.constraints
    if constraints:
        exprs = ir.AffineMap.get(m.num_dims, m.num_symbols, [e for e, _ in constraints])
        as_map = IndexingMap.get(exprs, [(v.lower, v.upper) for v in m.dim_vars],
                                 [(v.lower, v.upper) for v in m.range_vars],
                                 [(v.lower, v.upper) for v in m.runtime_vars])
        for value, (_, (lo, hi)) in zip(apply_map_at(as_map, dims, symbols), constraints):
            ok = arith.andi(ok, in_range(value, lo, hi))
    for value, var in zip(dims, m.dim_vars):
        known = _known_range(value)
        if known is None or not var.lower <= known[0] <= known[1] <= var.upper:
            ok = arith.andi(ok, in_range(value, var.lower, var.upper))
    return ok


def _known_range(value: ir.Value) -> tuple[int, int] | None:
    """The range of an index constant or of a thread/block id (its
    xla.range), else None."""
    owner = value.owner
    if not isinstance(owner, ir.Operation) and hasattr(owner, "operation"):
        owner = owner.operation
    if not isinstance(owner, ir.Operation):
        return None
    if owner.name == "arith.constant" and isinstance(value.type, ir.IndexType):
        c = ir.IntegerAttr(owner.attributes["value"]).value
        return c, c
    if owner.name in ("gpu.thread_id", "gpu.block_id") and "xla.range" in owner.attributes:
        lo, hi = (ir.IntegerAttr(a).value for a in ir.ArrayAttr(owner.attributes["xla.range"]))
        return lo, hi
    return None


@dataclass(eq=False)
class Epilogue:
    """The instructions between heroes and fusion outputs, as one function
    (XLA's EmitEpilogue): `(params..., index..., hero values...) -> output
    values`, the index that of the outputs (one shape), each hero's value
    given by the hero emitter that computed it (a reduced row, a tile
    element)."""

    heroes: list[HloInstruction]
    roots: list[HloInstruction]
    name: str = ""


def _leaves(shape: Shape) -> list[Shape]:
    return shape.leaves() if shape.is_tuple else [shape]


class CallTargets:
    """The functions of a fusion: `call(inst, params, index)` calls the
    subgraph function that computes `inst` and gives `inst`'s value (a list
    for a tuple-shaped one); `call_computation(comp, args)` calls the
    function of a reducer or map computation."""

    def __init__(self, subgraphs: list[Subgraph], functions: dict[Subgraph, func.FuncOp],
                 computations: dict[int, func.FuncOp] | None = None):
        self.subgraphs = subgraphs
        self.functions = functions
        self.computations = computations or {}
        self.epilogues: dict[Epilogue, func.FuncOp] = {}
        # The subgraphs something calls: only their bodies are emitted.
        self.called: set[Subgraph] = set()
        self._owner = {id(i): s for s in subgraphs for i in s.instructions}

    def subgraph_of(self, inst: HloInstruction) -> Subgraph:
        return self._owner[id(inst)]

    def function_of(self, inst: HloInstruction) -> func.FuncOp:
        return self.functions[self.subgraph_of(inst)]

    def call(self, inst: HloInstruction, params, index) -> ir.Value | list[ir.Value]:
        s = self.subgraph_of(inst)
        results = self.call_all(s, params, index)
        start = 0
        for r in s.roots:
            n = len(_leaves(r.shape))
            if r is inst:
                return results[start:start + n] if r.shape.is_tuple else results[start]
            start += n
        raise KeyError(inst.name)

    def value(self, inst: HloInstruction, params, index) -> ir.Value | list[ir.Value]:
        """`inst` at `index`: a parameter's element (`tensor.extract`), else
        the call of the subgraph function that computes it."""
        if inst.opcode == "parameter":
            return tensor.extract(params[inst.parameter_number], list(index))
        return self.call(inst, params, list(index))

    def call_all(self, s: Subgraph, params, index) -> list[ir.Value]:
        self.called.add(s)
        return list(xla_gpu.PureCallOp(self.functions[s], [*params, *index]).results)

    def call_computation(self, comp: HloComputation, args) -> list[ir.Value]:
        return list(xla_gpu.PureCallOp(self.computations[id(comp)], list(args)).results)

    def call_epilogue(self, epilogue: Epilogue, params, index, hero_values) -> list[ir.Value]:
        """The epilogue's outputs at `index`, from the heroes' values."""
        f = self.epilogues[epilogue]
        return list(xla_gpu.PureCallOp(f, [*params, *index, *hero_values]).results)


class EmitterBase:
    """Subclasses are registered with `@register_emitter(EmitterKind.X)`
    and implement `launch_dims`, `emit_entry_function` and the kernel maps
    (`thread_to_output_map`, `thread_to_input_map`)."""

    def __init__(self, analysis: FusionAnalysis, device: DeviceDescription = DEFAULT_DEVICE):
        if analysis.fusion.fused_computation is None:
            raise EmitterError(analysis.fusion, "not a fusion")
        self.analysis = analysis
        self.device = device
        self.fusion = analysis.fusion
        self.computation = analysis.computation
        self.params = self.computation.parameters
        # Output k written over parameter v's buffer, where the caller's
        # buffer assignment shares them (emit_kernel's `shared_operand`).
        self.shared_outputs: dict[int, int] = {}

    # -- the hooks -----------------------------------------------------------

    @classmethod
    def host_class(cls, analysis, device) -> type:
        """The class that makes the kernel for the CPU target alone
        (make_emitter's `host`), for_host making the rest of its host
        choices: by default this one."""
        return cls

    def for_host(self) -> None:
        """Makes the kernel one for the CPU target alone (make_emitter's
        `host`): the emitter's host choices, where it has any; a valid GPU
        kernel either way. By default XLA:GPU's kernel as it is."""

    def launch_dims(self) -> LaunchDimensions:
        raise NotImplementedError

    def emit_entry_function(self, entry: func.FuncOp, call_targets: CallTargets) -> None:
        """Fills `entry`'s body: arguments are the parameters then the
        outputs; it returns the outputs (updated with tensor.insert)."""
        raise NotImplementedError

    def is_subgraph_root(self, inst: HloInstruction) -> bool:
        """XLA's hook: instructions the emitter emits itself (its heroes)
        root their own subgraph, so that no other function inlines them."""
        return False

    def epilogues(self) -> list[Epilogue]:
        """The epilogues the entry function calls (one function each)."""
        return []

    def thread_to_output_map(self, root_index: int) -> IndexingMap | None:
        """(th_x, th_y, th_z, bl_x, bl_y, bl_z)[symbols] -> the element of
        output `root_index` a thread writes (None: not an affine map)."""
        return None

    def thread_to_input_map(self, root_index: int, hero_operand_index: int
                            ) -> IndexingMap | None:
        """The element of operand `hero_operand_index` of output
        `root_index`'s hero that a thread reads (None: not an affine map)."""
        return None

    # -- the fixed sequence -------------------------------------------------------

    def output_roots(self) -> list[HloInstruction]:
        return list(self.analysis.roots)

    def emit(self) -> EmittedKernel:
        """The fusion as a kernel: subgraph functions and the entry
        function. Needs an active context."""
        roots = self.output_roots()
        empty = roots[0].shape.num_elements == 0
        launch = LaunchDimensions() if empty else self.launch_dims()
        with ir.Location.name(self.fusion.name):
            module = ir.Module.create()
            # Nothing to compute (XLA runs no kernel for it): the entry
            # returns its outputs as they are.
            self.subgraphs = [] if empty else partition(self.computation,
                                                         self.is_subgraph_root)
            with ir.InsertionPoint(module.body):
                # Reducers and map computations, each a function of scalars.
                called = [] if empty else self.computation.callees()
                taken = {s.name for s in self.subgraphs}
                computations = {id(c): self._declare_computation(c, taken) for c in called}
                functions = {s: self._declare(s) for s in self.subgraphs}
                self.call_targets = CallTargets(self.subgraphs, functions, computations)
                for c in called:
                    self._emit_computation(c)
                for e in ([] if empty else self.epilogues()):
                    self._emit_epilogue(e, taken)
                name = sanitize_function_name(self.fusion.name)
                while name in taken:
                    name += "_entry"
                entry = self._create_entry(name, roots, launch)
                if empty:
                    with ir.InsertionPoint(entry.add_entry_block()):
                        func.ReturnOp(list(entry.arguments)[len(self.params):])
                else:
                    entry.add_entry_block()
                    self.emit_entry_function(entry, self.call_targets)
                self._emit_called_subgraphs()
        verify(module)
        return EmittedKernel(module, name, launch, [p.shape for p in self.params],
                             [r.shape for r in roots], aliases=self.buffer_aliases())

    def emit_module(self) -> ir.Module:
        return self.emit().module

    def block_order(self) -> tuple[tuple[int, ...], tuple[int, ...]] | None:
        """The order the CPU target runs the blocks in, (tiles, order): the
        block id is the row-major index into a grid of `tiles`, run
        row-major with its dimensions taken in `order` (outermost first).
        None: in id order. A GPU's blocks have no order; the attribute
        (`xla.block_order`) is the CPU target's alone."""
        return None

    def output_aliases(self) -> dict[int, int]:
        """Output k written in place into parameter v (the in-place
        emitters); such pairs share an `xla.slice_index`."""
        return {}

    def buffer_aliases(self) -> dict[int, int]:
        """Output k's buffer is parameter v's: the in-place emitters'
        (output_aliases) and those the caller shares (shared_outputs)."""
        return {**self.shared_outputs, **self.output_aliases()}

    def _create_entry(self, name: str, roots, launch: LaunchDimensions) -> func.FuncOp:
        inputs = [tensor_type(p.shape) for p in self.params]
        outputs = [tensor_type(r.shape) for r in roots]
        entry = func.FuncOp(name, ir.FunctionType.get(inputs + outputs, outputs))
        entry.attributes[LAUNCH_DIMS_ATTR] = launch.to_attribute()
        if (order := self.block_order()) is not None:
            tiles, dims = order
            entry.attributes[BLOCK_ORDER_ATTR] = ir.DictAttr.get({
                "tiles": ir.DenseI64ArrayAttr.get(list(tiles)),
                "order": ir.DenseI64ArrayAttr.get(list(dims))})
        aliases = self.buffer_aliases()
        i32 = ir.IntegerType.get_signless(32)
        slices = list(range(len(inputs)))
        next_slice = len(inputs)
        for k in range(len(outputs)):
            if k in aliases:
                slices.append(aliases[k])
            else:
                slices.append(next_slice)
                next_slice += 1
        entry.arg_attrs = ir.ArrayAttr.get([
            ir.DictAttr.get({"xla.slice_index": ir.IntegerAttr.get(i32, s)}) for s in slices])
        return entry

    # -- helpers shared by the emitters ---------------------------------------

    def kernel_map(self, results: list[ir.AffineExpr], symbols: list[tuple[str, int, int]],
                   constraints=()) -> IndexingMap:
        """A map over XLA's six kernel dimensions (d0..d5 in `results`,
        ranges from `launch_dims()`) and the named range symbols."""
        affine = ir.AffineMap.get(6, len(symbols), results)
        return IndexingMap.get(affine, self.launch_dims().ranges(),
                               [(lo, hi) for _, lo, hi in symbols], constraints=constraints,
                               names=[*KERNEL_DIM_NAMES, *(n for n, _, _ in symbols)])

    def kernel_ids(self, which: list[int]) -> list[ir.Value]:
        """`gpu.thread_id`/`gpu.block_id` for the kernel dimensions in
        `which` (positions in KERNEL_DIM_NAMES), each with its xla.range."""
        launch = self.launch_dims()
        counts = (*launch.thread_counts_per_block, *launch.block_counts)
        dims = (gpu.Dimension.x, gpu.Dimension.y, gpu.Dimension.z)
        ids = []
        for i in which:
            op = (gpu.ThreadIdOp if i < 3 else gpu.BlockIdOp)(dims[i % 3])
            op.attributes["xla.range"] = _index_range(0, counts[i] - 1)
            ids.append(op.result)
        return ids

    def all_kernel_ids(self) -> list[ir.Value]:
        """XLA's six thread and block ids (EmitThreadAndBlockIds): an id op
        for th_x, bl_x and every dimension with more than one value, the
        index 0 for the others."""
        launch = self.launch_dims()
        counts = (*launch.thread_counts_per_block, *launch.block_counts)
        live = [i for i in range(6) if counts[i] > 1 or i in (0, 3)]
        ids = dict(zip(live, self.kernel_ids(live)))
        zero = arith.constant(ir.IndexType.get(), 0)
        return [ids.get(i, zero) for i in range(6)]

    def apply_kernel_map(self, kernel_map: IndexingMap, ids: list[ir.Value],
                         symbols) -> list[ir.Value]:
        """`xla_gpu.apply_indexing` of a six-dimensional kernel map at the
        six `ids` and `symbols` (all kept), the single-valued dimensions
        left out as in `emit_kernel_loop`."""
        compact, dims, _ = kernel_map.without_fixed_vars(
            keep_dims=(0, 3), keep_symbols=tuple(range(kernel_map.num_symbols)))
        return apply_map_at(compact, [ids[i] for i in dims], symbols)

    def emit_kernel_loop(self, kernel_map: IndexingMap, inits, body,
                         keep_symbols: tuple[int, ...] = (),
                         ids: list[ir.Value] | None = None,
                         keep_dims: tuple[int, ...] = ()) -> list[ir.Value]:
        """`xla_gpu.loop` over a six-dimensional kernel map; th_x, bl_x,
        `keep_dims` and the dimensions with more than one value are its
        operands (from `ids`, the six ids, when given; else new id ops)."""
        compact, dims, _ = kernel_map.without_fixed_vars(keep_dims=(0, 3, *keep_dims),
                                                         keep_symbols=keep_symbols)
        operands = [ids[i] for i in dims] if ids is not None else self.kernel_ids(dims)
        return xla_gpu.loop(compact, operands, inits, body)

    # -- subgraphs -----------------------------------------------------------------

    def _declare_computation(self, comp: HloComputation, taken: set[str]) -> func.FuncOp:
        name = sanitize_function_name(comp.name)
        while name in taken:
            name += "_computation"
        taken.add(name)
        inputs = [mlir_type(p.shape.element_type) for p in comp.parameters]
        results = [mlir_type(leaf.element_type) for leaf in _leaves(comp.root.shape)]
        f = func.FuncOp(name, ir.FunctionType.get(inputs, results))
        f.sym_visibility = ir.StringAttr.get("private")
        return f

    def _emit_computation(self, comp: HloComputation) -> None:
        """A scalar computation (a reducer) as a function of its parameters:
        `xla_gpu.reduce`, the elemental emitter's loops and, next, shuffles
        and atomics call it."""
        f = self.call_targets.computations[id(comp)]
        block = f.add_entry_block()
        args = list(block.arguments)
        members = {id(i) for i in comp.instructions if i.opcode != "parameter"}
        with ir.InsertionPoint(block), ir.Location.name(comp.name):
            emitter = ElementalEmitter(members, lambda inst, idx: args[inst.parameter_number],
                                       self.call_targets.call_computation)
            result = emitter.emit(comp.root, [])
            func.ReturnOp(result if isinstance(result, list) else [result])

    def _emit_epilogue(self, e: Epilogue, taken: set[str]) -> None:
        """`@<fusion>__epilogue__<roots>`: the roots at an index, the heroes
        replaced by the values passed in; what else the roots read is
        computed inline (parameters extracted, other subgraphs called)."""
        if not e.roots or any(r.shape.dims != e.roots[0].shape.dims for r in e.roots):
            raise EmitterError(e.roots[0] if e.roots else self.fusion,
                               "an epilogue's outputs have one shape")
        name = e.name or sanitize_function_name(
            f"{self.fusion.name}__epilogue__{'_'.join(r.name for r in e.roots)}")
        while name in taken:
            name += "_"
        taken.add(name)
        rank = e.roots[0].shape.rank
        inputs = ([tensor_type(p.shape) for p in self.params] + [ir.IndexType.get()] * rank +
                  [mlir_type(h.shape.element_type) for h in e.heroes])
        results = [mlir_type(r.shape.element_type) for r in e.roots]
        f = func.FuncOp(name, ir.FunctionType.get(inputs, results))
        f.sym_visibility = ir.StringAttr.get("private")
        self.call_targets.epilogues[e] = f
        block = f.add_entry_block()
        args = list(block.arguments)
        params = args[: len(self.params)]
        index = args[len(self.params): len(self.params) + rank]
        hero_values = dict(zip((id(h) for h in e.heroes), args[len(self.params) + rank:]))
        # Everything from the roots back to the heroes and parameters.
        members: set[int] = set()
        stack = list(e.roots)
        while stack:
            inst = stack.pop()
            if id(inst) in members or id(inst) in hero_values or inst.opcode == "parameter":
                continue
            members.add(id(inst))
            stack.extend(inst.operands)

        def outside(inst: HloInstruction, idx):
            if id(inst) in hero_values:
                return hero_values[id(inst)]
            return self.call_targets.value(inst, params, idx)

        with ir.InsertionPoint(block):
            emitter = ElementalEmitter(members, outside, self.call_targets.call_computation)
            func.ReturnOp([emitter.emit(r, index) for r in e.roots])

    def _emit_called_subgraphs(self) -> None:
        """The bodies of the subgraphs the entry and the epilogues call, and
        of those these call in turn; a subgraph nothing calls (a hero the
        emitter computes itself) is dropped."""
        emitted: set[Subgraph] = set()
        while pending := [s for s in self.subgraphs
                          if s in self.call_targets.called and s not in emitted]:
            for s in pending:
                self._emit_subgraph(s)
                emitted.add(s)
        for s in self.subgraphs:
            if s not in emitted:
                self.call_targets.functions[s].operation.erase()

    def _declare(self, s: Subgraph) -> func.FuncOp:
        rank = _leaves(s.roots[0].shape)[0].rank
        inputs = [tensor_type(p.shape) for p in self.params] + [ir.IndexType.get()] * rank
        results = [mlir_type(leaf.element_type) for r in s.roots for leaf in _leaves(r.shape)]
        f = func.FuncOp(s.name, ir.FunctionType.get(inputs, results))
        f.sym_visibility = ir.StringAttr.get("private")
        return f

    def _emit_subgraph(self, s: Subgraph) -> None:
        f = self.call_targets.functions[s]
        block = f.add_entry_block()
        params = list(block.arguments)[: len(self.params)]
        index = list(block.arguments)[len(self.params):]

        def outside(inst: HloInstruction, idx):
            return self.call_targets.value(inst, params, idx)

        with ir.InsertionPoint(block):
            emitter = ElementalEmitter({id(i) for i in s.instructions}, outside,
                                       self.call_targets.call_computation)
            # Roots of another shape (same element count) are computed at
            # the same linear position: XLA's root indexing of loop fusions.
            first = _leaves(s.roots[0].shape)[0].dims
            results = []
            for r in s.roots:
                dims = _leaves(r.shape)[0].dims
                value = emitter.emit(r, index if dims == first else
                                     apply_map(bitcast_map(first, dims), index))
                results += value if isinstance(value, list) else [value]
            func.ReturnOp(results)
