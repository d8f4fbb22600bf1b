"""The reduction emitters (XLA's ReductionFusion): a fusion whose hero is a
reduce over contiguous dimensions, in four variants chosen by the shape of
the reduction (XLA's ReductionDimensions, [D, H, W] major to minor):

    row         [D, H, W] -> [H], W long: a row per warp or per block; each
                thread reduces 16 elements of its row, warps reduce with
                shuffles, and when a row has several warps their results
                meet in shared memory for a second shuffle.
    multi-row   W a power of two that a warp covers: several rows per warp,
                shuffles within segments of W / vector lanes, no shared
                memory.
    column      [D, H, W] -> [D, W]: a 32 x 32 thread tile walks down the
                columns (warps down, lanes across: coalesced reads), the
                partial sums are transposed through a padded shared tile and
                a warp shuffle finishes each column.
    small       W divides the warp size: 128 threads walk the flattened
    column      [H * W] slice; shared rows of W columns, one shuffle.

Every variant has the same phases (EmitReduction in XLA):

    inits ─► per-thread loop (xla_gpu.loop over the reduction's input map:
              accumulators + side outputs written by the same threads)
          ─► [shuffle_reduce] ─► [shared tile ─► sync_threads ─► read back
              ─► shuffle_reduce] ─► epilogue at the output index, written by
              the threads the output map's constraints select.

Reductions with disjoint inputs (XLA's reduction groups) run side by side,
one group per block y.
"""

from __future__ import annotations

import contextlib
import contextvars
import itertools
import math
from dataclasses import dataclass
from math import gcd, prod

from mlir import ir
from mlir.dialects import arith, func, tensor, vector

from ..dialects import xla_gpu
from ..hlo import HloInstruction
from ..hlo.opcodes import ELEMENTWISE
from ..indexing import delinearize, output_to_input_indexing
from ..indexing_map import IndexingMap
from .base import (CallTargets, EmitterBase, Epilogue, apply_map, apply_map_at, bitcast_map,
                   check_constraints)
from .device import DEFAULT_DEVICE, DeviceDescription
from .elemental import EmitterError, mlir_type
from .fusion_analysis import (EmitterKind, FusionAnalysis, ReductionDimensions, flag_set,
                              is_real_reduction_hero, kColMajorKept, kColMinorKept, passed_by,
                              kColReduced, kRowKept, kRowMinorReduced, reduction_dimensions)
from .kernel import LaunchDimensions
from .registry import register_emitter

__all__ = ["ColumnReductionEmitter", "MultiRowReductionEmitter", "ReductionEmitter",
           "ReductionGroups", "RowReductionEmitter", "SmallColumnReductionEmitter",
           "group_disjoint_reductions"]

# XLA: 128 to 512 threads a block is the usual advice; it aims at 256.
kThreadsPerBlockTarget = 256
# XLA's row reduction tile: elements of the minor reduced dimension a
# thread reduces before the shuffles.
kMinorReducedElementsPerThread = 16
# XLA's small column reduction: one block of this many threads per column
# group.
kSmallColumnThreads = 128


@dataclass
class ReductionGroups:
    """XLA's ReductionGroups: the fusion's outputs in groups that share no
    input; group g runs on the blocks with block y == g."""

    grouped_roots: list[list[HloInstruction]]
    group_id_per_root: list[int]
    is_reduction_root: list[bool]


def _is_broadcasted_constant_or_scalar(inst: HloInstruction) -> bool:
    """XLA's IsBroadcastedConstantOrScalar: cheap to recompute, so sharing
    it does not tie two reductions together."""
    if inst.opcode == "constant" or inst.shape.rank == 0:
        return True
    return inst.opcode == "broadcast" and (inst.operands[0].opcode == "constant" or
                                           inst.operands[0].shape.rank == 0)


def group_disjoint_reductions(analysis: FusionAnalysis) -> ReductionGroups:
    """XLA's GroupDisjointReductions: outputs that read a common instruction
    are in one group (a broadcast constant or scalar ties at most one
    reduction); every output that is not a reduction is in one group (XLA
    does not track aliasing between the fusion's inputs and outputs)."""
    roots, heroes = analysis.roots, analysis.heroes
    if len(roots) == 1:
        return ReductionGroups([[roots[0]]], [0], [True])
    parent = list(range(len(roots)))

    def find(k: int) -> int:
        while parent[k] != k:
            parent[k] = parent[parent[k]]
            k = parent[k]
        return k

    def union(a: int, b: int) -> None:
        a, b = find(a), find(b)
        if a != b:
            parent[max(a, b)] = min(a, b)

    is_reduction = [is_real_reduction_hero(h) for h in heroes]
    side = [k for k, r in enumerate(is_reduction) if not r]
    for k in side[1:]:
        union(side[0], k)
    # The outputs each instruction flows into (users first).
    comp = analysis.computation
    reaches: dict[int, set[int]] = {}
    for inst in reversed(comp.topological_order()):
        reached = {k for k, r in enumerate(roots) if r is inst}
        for user in inst.users:
            reached |= reaches.get(id(user), set())
        reaches[id(inst)] = reached
    for inst in comp.instructions:
        reached, tied_to_reduction = [], False
        for k in sorted(reaches.get(id(inst), ())):
            if is_reduction[k] and tied_to_reduction and _is_broadcasted_constant_or_scalar(inst):
                continue
            reached.append(k)
            tied_to_reduction |= is_reduction[k]
        for k in reached[1:]:
            union(reached[0], k)
    leaders = sorted({find(k) for k in range(len(roots))})
    group_of = [leaders.index(find(k)) for k in range(len(roots))]
    grouped = [[r for r, g in zip(roots, group_of) if g == i] for i in range(len(leaders))]
    return ReductionGroups(grouped, group_of, is_reduction)


def _smallest_input_bits(analysis: FusionAnalysis) -> int | float:
    """XLA's smallest_input_dtype_bits: of the fusion's array parameters
    (infinite when there are none)."""
    bits = [p.shape.element_type.bits for p in analysis.computation.parameters
            if p.shape.is_array]
    return min(bits) if bits else float("inf")


def _streams_from_memory(analysis: FusionAnalysis, row: int) -> bool:
    """Whether the fusion's largest array parameter has at least
    HOST_MIN_STREAMED_ROWS_BYTES, or this is within host_streamed_rows()
    of a program moving as many bytes as rows of `row` elements ask for
    (_min_streamed_program_bytes): its rows come from memory."""
    return streams_program_rows(row) or max(
        (p.shape.num_elements * p.shape.element_type.bits // 8
         for p in analysis.computation.parameters if p.shape.is_array),
        default=0) >= HOST_MIN_STREAMED_ROWS_BYTES


# The reducer ops that round their result to its type.
_ROUNDING = frozenset({"add", "subtract", "multiply", "divide"})


def _rounds_in_16_bits(analysis: FusionAnalysis) -> bool:
    """Whether a reduce hero's reducer computes 16-bit floats with an op
    that rounds (a bf16 add; a maximum does not round)."""
    return any(inst.opcode in _ROUNDING and inst.shape.is_array
               and inst.shape.element_type.is_float and inst.shape.element_type.bits == 16
               for hero in analysis.heroes if hero.opcode == "reduce"
               for inst in hero.called_computations[0].instructions)


def _hero_output(root: HloInstruction, hero: HloInstruction) -> tuple[HloInstruction, int]:
    """Where `root`'s chain of intermediate ops meets `hero`: the hero
    itself (an array reduce), or the get-tuple-element that picks result k
    of a variadic one. Returns that instruction and k."""
    inst = root
    while inst is not hero:
        if inst.opcode == "get-tuple-element" and inst.operands[0] is hero:
            return inst, inst.attr("index")
        # (An op whose other operands are passed_by, scalar constants or
        # row values read at the row, passes on its one other:
        # fusion_analysis._host_scaled.)
        inst = next((o for o in inst.operands if not passed_by(o, inst)), inst.operands[0])
    return hero, 0


@register_emitter(EmitterKind.REDUCTION)
class ReductionEmitter(EmitterBase):
    """The shared machinery; `ReductionEmitter(analysis, device)` makes the
    variant XLA's CreateReductionFusion picks."""

    def __new__(cls, analysis: FusionAnalysis, device: DeviceDescription = DEFAULT_DEVICE):
        if cls is ReductionEmitter:
            cls = _variant_for(analysis, device)
        return super().__new__(cls)

    def __init__(self, analysis: FusionAnalysis, device: DeviceDescription = DEFAULT_DEVICE):
        super().__init__(analysis, device)
        self.warp_size = device.threads_per_warp
        first = analysis.deciding_hero
        self.reduction = reduction_dimensions(first)
        self.groups = group_disjoint_reductions(analysis)
        n = len(self.groups.grouped_roots)
        self.reduction_heroes: list[list[HloInstruction]] = [[] for _ in range(n)]
        self.reduction_roots: list[list[HloInstruction]] = [[] for _ in range(n)]
        self.side_output_roots: list[list[HloInstruction]] = [[] for _ in range(n)]
        for root, hero, is_reduction, g in zip(analysis.roots, analysis.heroes,
                                               self.groups.is_reduction_root,
                                               self.groups.group_id_per_root):
            if is_reduction:
                if all(h is not hero for h in self.reduction_heroes[g]):
                    self.reduction_heroes[g].append(hero)
                self.reduction_roots[g].append(root)
            else:
                self.side_output_roots[g].append(root)
        for heroes in self.reduction_heroes:
            for hero in heroes:
                self._check_hero(hero)
        # What the partitioner roots apart: heroes (emitted here), their
        # operands (read at indices this emitter computes), side outputs.
        self._forced = {id(r) for roots in self.side_output_roots for r in roots}
        for heroes in self.reduction_heroes:
            for hero in heroes:
                self._forced.add(id(hero))
                self._forced.update(id(op) for op in hero.operands)
        # The epilogue of each reduction output with ops after its hero
        # (`log(sum)`), by id; an output that is the hero's value has none.
        self.epilogue_of: dict[int, Epilogue] = {}
        for roots in self.reduction_roots:
            for root in roots:
                value, _ = _hero_output(root, analysis.hero_of(root))
                if value is not root:
                    self.epilogue_of[id(root)] = Epilogue([value], [root])
        # Set by each variant: threads and blocks per (logical) dimension,
        # the input as the variant walks it, the loop sizes of a thread, and
        # the width of the per-thread accumulators (1: scalars).
        self.num_threads: list[int] = []
        self.num_blocks: list[int] = []
        self.input_shape: list[int] = []
        self.tile_sizes_per_thread: list[int] = []
        self.vector_size = 1
        self.configure()

    # Whether the kernel is for the CPU target alone (for_host).
    host = False

    @classmethod
    def host_class(cls, analysis: FusionAnalysis, device: DeviceDescription) -> type:
        """XLA's variant, but where a column reduction's kept minor width W
        is below the warp and does not divide it the small column one
        (its _configure_any_width), which walks H x W flattened: W lanes
        of ColumnReductionEmitter's 32 were busy, and the CPU target's
        vector of them 3 of 8 (a pow f64 over [512,512,3] summed over
        its middle dimension: libm's time, XLA:CPU's)."""
        variant = _variant_for(analysis, device) if cls is ReductionEmitter else cls
        dims = reduction_dimensions(analysis.deciding_hero)
        if variant is ColumnReductionEmitter and \
                dims.dimensions[kColMinorKept] < device.threads_per_warp:
            return SmallColumnReductionEmitter
        return variant

    def for_host(self) -> None:
        """A kernel for the CPU target alone: the variant's host choices
        (configure, with `host` set)."""
        self.host = True
        self.configure()

    def _check_hero(self, hero: HloInstruction) -> None:
        # That every hero reduces alike the fusion analysis has checked.
        arity = len(hero.operands) // 2
        shapes = {tuple(op.shape.dims) for op in hero.operands[:arity]}
        if len(shapes) != 1:
            raise EmitterError(hero, "the inputs of a variadic reduction have one shape")

    # -- what each variant defines -------------------------------------------

    def configure(self) -> None:
        raise NotImplementedError

    def reduction_input_map(self) -> IndexingMap:
        """(th_x, ..., bl_z)[tile symbols] -> an element of `input_shape`."""
        raise NotImplementedError

    def reduction_output_map(self) -> IndexingMap:
        """(th_x, ..., bl_z)[symbols] -> an element of the reduction's
        output shape ([H] or [D, W]); constraints pick the writing threads."""
        raise NotImplementedError

    def shared_write_map(self) -> IndexingMap:
        raise NotImplementedError

    def shared_read_map(self) -> IndexingMap:
        raise NotImplementedError

    def emit_group(self, state: "_State", g: int) -> list[ir.Value]:
        raise NotImplementedError

    # -- maps -------------------------------------------------------------------

    def launch_dims(self) -> LaunchDimensions:
        return LaunchDimensions((prod(self.num_blocks), len(self.groups.grouped_roots), 1),
                                (prod(self.num_threads), 1, 1))

    def _map(self, results: list[ir.AffineExpr], symbol_sizes=(), constraints=()
             ) -> IndexingMap:
        """A kernel map with symbols s0.. of the given sizes (XLA's
        GetIndexingMap)."""
        return self.kernel_map(results, [(f"s{i}", 0, n - 1) for i, n in enumerate(symbol_sizes)],
                               constraints)

    def _thread_map(self, results: list[ir.AffineExpr], symbol_sizes=(), constraints=()
                    ) -> IndexingMap:
        """A map of th_x alone and symbols (XLA's GetThreadIndexingMap)."""
        affine = ir.AffineMap.get(1, len(symbol_sizes), results)
        return IndexingMap.get(affine, [(0, prod(self.num_threads) - 1)],
                               [(0, n - 1) for n in symbol_sizes], constraints=constraints,
                               names=["th_x", *(f"s{i}" for i in range(len(symbol_sizes)))])

    def _bounded(self, m: IndexingMap, shape) -> IndexingMap:
        for expr, n in zip(m.affine_map.results, shape):
            m = m.with_constraint(expr, (0, n - 1))
        return m

    def _group_constraint(self, m: IndexingMap, g: int) -> IndexingMap:
        if len(self.groups.grouped_roots) == 1:
            return m
        return m.with_constraint(ir.AffineDimExpr.get(4), (g, g))

    def _root_index(self, root: HloInstruction) -> int:
        return [r is root for r in self.analysis.roots].index(True)

    def thread_to_output_map(self, root_index: int) -> IndexingMap:
        """XLA's ComputeThreadIdToOutputIndexing: a side output is written
        where its elements are read; a reduction's output by the threads
        the output map picks."""
        root = self.analysis.roots[root_index]
        g = self.groups.group_id_per_root[root_index]
        if not self.groups.is_reduction_root[root_index]:
            m = self.reduction_input_map().then(bitcast_map(tuple(self.input_shape),
                                                            root.shape.dims))
            return self._group_constraint(m, g).simplify()
        hero = self.analysis.heroes[root_index]
        out = self.reduction.output_shape
        m = self._bounded(self.reduction_output_map(), out)
        # The reduction's output, as the hero has it, then as the root (the
        # ops between them keep the elements' order).
        hero_dims = tuple(d for i, d in enumerate(hero.operands[0].shape.dims)
                          if i not in hero.dimensions)
        m = m.then(bitcast_map(out, hero_dims))
        if hero_dims != root.shape.dims:
            m = m.then(bitcast_map(hero_dims, root.shape.dims))
        return self._group_constraint(m, g).simplify()

    def thread_to_input_map(self, root_index: int, hero_operand_index: int
                            ) -> IndexingMap | None:
        hero = self.analysis.heroes[root_index]
        g = self.groups.group_id_per_root[root_index]
        if not self.groups.is_reduction_root[root_index]:
            root = self.analysis.roots[root_index]
            reads = output_to_input_indexing(root)
            if not 0 <= hero_operand_index < len(reads) or len(reads[hero_operand_index]) != 1:
                return None
            return self.thread_to_output_map(root_index).then(reads[hero_operand_index][0])
        if hero_operand_index >= len(hero.operands) // 2:
            return None  # the init values: no map
        m = self._group_constraint(self.reduction_input_map(), g)
        return m.then(bitcast_map(tuple(self.input_shape),
                                  hero.operands[hero_operand_index].shape.dims)).simplify()

    # -- partitioning -------------------------------------------------------------

    def is_subgraph_root(self, inst: HloInstruction) -> bool:
        return id(inst) in self._forced

    def epilogues(self) -> list[Epilogue]:
        return list(self.epilogue_of.values())

    # -- emission -----------------------------------------------------------------

    def emit_entry_function(self, entry: func.FuncOp, call_targets: CallTargets) -> None:
        """The groups one after the other, each on the blocks with block y
        == g: its per-thread loop's map and its outputs' maps say so, so
        that other blocks skip its loop and write none of its outputs.
        (XLA branches on block y with an scf.index_switch instead; the CPU
        target runs barriers and shuffles only outside control flow, and
        the phases a block runs for other groups are a few shuffles.)"""
        with ir.InsertionPoint(entry.entry_block):
            state = _State(self, entry, call_targets)
            for g in range(len(self.groups.grouped_roots)):
                state.outputs = self.emit_group(state, g)
            func.ReturnOp(state.outputs)

    def get_vector_size(self, minor_dim: int, num_threads: int) -> int:
        """XLA's GetVectorSizeForMlir: 2 or 4 consecutive elements a thread
        when every thread still has work and the loads are narrow enough."""
        if minor_dim % 2 != 0 or num_threads * 2 > minor_dim:
            return 1
        # Complex values are loaded 8 or 16 bytes at a time already.
        for hero in self.analysis.heroes:
            if any(op.shape.is_array and op.shape.element_type.is_complex
                   for op in hero.operands):
                return 1
        bits = _smallest_input_bits(self.analysis)
        # XLA: 16-byte loads are often slower than 8-byte ones. (XLA tests
        # 32 bits first, so its 64-bit case never fires; its own tests
        # expect no vectors for f64, which is what this order gives.)
        if bits >= 64:
            return 1
        if bits >= 32:
            return 2
        if num_threads * 4 > minor_dim:
            return 2
        return 4 if minor_dim % 4 == 0 else 2



class _State:
    """What one entry function's emission shares (XLA's EmitterState)."""

    def __init__(self, owner: ReductionEmitter, entry: func.FuncOp, call_targets: CallTargets):
        self.owner = owner
        self.call_targets = call_targets
        n = len(owner.params)
        self.params = list(entry.arguments)[:n]
        self.outputs = list(entry.arguments)[n:]
        self.ids = owner.all_kernel_ids()
        self.thread_id = self.ids[0]
        # Each reduction output's thread -> output map, built once (the
        # epilogue is emitted once per vector element of the read loop).
        self.output_maps = {k: owner.thread_to_output_map(k)
                            for k, is_reduction in enumerate(owner.groups.is_reduction_root)
                            if is_reduction}

    def value_of(self, inst: HloInstruction, index) -> ir.Value | list[ir.Value]:
        """`inst` at `index`: a parameter's element, else its subgraph."""
        return self.call_targets.value(inst, self.params, index)

    def reducer(self, hero: HloInstruction) -> func.FuncOp:
        return self.call_targets.computations[id(hero.called_computations[0])]

    def inits(self, g: int) -> dict[int, list[ir.Value]]:
        out = {}
        for hero in self.owner.reduction_heroes[g]:
            arity = len(hero.operands) // 2
            out[id(hero)] = [self.value_of(op, []) for op in hero.operands[arity:]]
        return out

    def per_thread(self, g: int, inits: dict[int, list[ir.Value]]
                   ) -> tuple[dict[int, list[ir.Value]], list[ir.Value]]:
        """Each thread's partial reductions over the input map (vectors of
        `vector_size` when the variant accumulates several outputs a
        thread), and the outputs with the side outputs written."""
        owner = self.owner
        m = owner._group_constraint(owner.reduction_input_map(), g).simplify()
        heroes, sides = owner.reduction_heroes[g], owner.side_output_roots[g]
        vectorize = owner.vector_size > 1
        acc_inits, starts = [], {}
        for hero in heroes:
            starts[id(hero)] = len(self.outputs) + len(acc_inits)
            for v in inits[id(hero)]:
                acc_inits.append(vector.broadcast(
                    ir.VectorType.get([owner.vector_size], v.type), v) if vectorize else v)
        input_shape = tuple(owner.input_shape)
        n_out = len(self.outputs)

        def body(ivs, index, iters):
            results = list(iters)
            lane = ivs[-1] if vectorize else None
            for hero in heroes:
                arity = len(hero.operands) // 2
                start = starts[id(hero)]
                accs = list(iters[start:start + arity])
                if vectorize:
                    accs = [vector.extract(a, [lane], [ir.ShapedType.get_dynamic_size()])
                            for a in accs]
                at = apply_map(bitcast_map(input_shape, hero.operands[0].shape.dims), index)
                xs = [self.value_of(op, at) for op in hero.operands[:arity]]
                new = self.call_targets.call_computation(hero.called_computations[0],
                                                         [*accs, *xs])
                for k, v in enumerate(new):
                    results[start + k] = vector.insert(
                        v, iters[start + k], [lane], [ir.ShapedType.get_dynamic_size()]) \
                        if vectorize else v
            for side in sides:
                at = apply_map(bitcast_map(input_shape, side.shape.dims), index)
                k = owner._root_index(side)
                results[k] = tensor.insert(self.value_of(side, at), results[k], at)
            return results

        symbols = m.range_vars
        keep = (len(symbols) - 1,) if vectorize else ()
        # With several groups, the loop runs on block y == g only.
        grouped = (4,) if len(owner.groups.grouped_roots) > 1 else ()
        loop = owner.emit_kernel_loop(m, [*self.outputs, *acc_inits], body, keep_symbols=keep,
                                      ids=self.ids, keep_dims=grouped)
        accumulated = {id(h): loop[starts[id(h)]:starts[id(h)] + len(inits[id(h)])]
                       for h in heroes}
        return accumulated, loop[:n_out]

    def shuffle(self, g: int, values: dict[int, list[ir.Value]], max_distance: int
                ) -> dict[int, list[ir.Value]]:
        if max_distance < 1:
            return values
        out = {}
        for hero in self.owner.reduction_heroes[g]:
            reduced = xla_gpu.shuffle_reduce(values[id(hero)], max_distance, self.reducer(hero))
            out[id(hero)] = [reduced] if isinstance(reduced, ir.Value) else list(reduced)
        return out

    def write_to_shared(self, g: int, values: dict[int, list[ir.Value]],
                        padding: int | None = None) -> list[ir.Value]:
        """Every thread's values into fresh shared tiles at the write map's
        index (the tile padded against bank conflicts), then a barrier."""
        owner = self.owner
        m = owner.shared_write_map()
        shape = [m.range_of(e)[1] + 1 for e in m.affine_map.results]
        if padding is not None:
            shape[-1] += padding
        elif shape[-1] % owner.warp_size == 0:
            shape[-1] += 1
        tiles = []
        for hero in owner.reduction_heroes[g]:
            for op in hero.operands[:len(hero.operands) // 2]:
                tile_type = ir.RankedTensorType.get(shape, mlir_type(op.shape.element_type))
                tiles.append(xla_gpu.allocate_shared(tile_type))

        def body(ivs, index, iters):
            written, k = list(iters), 0
            for hero in owner.reduction_heroes[g]:
                for value in values[id(hero)]:
                    if isinstance(value.type, ir.VectorType):
                        value = vector.extract(value, [ivs[-1]],
                                               [ir.ShapedType.get_dynamic_size()])
                    written[k] = tensor.insert(value, written[k], index)
                    k += 1
            return written

        written = xla_gpu.loop(m, [self.thread_id], tiles, body)
        synced = xla_gpu.sync_threads(written)
        return [synced] if isinstance(synced, ir.Value) else list(synced)

    def reduce_via_shared(self, g: int, values: dict[int, list[ir.Value]], outputs,
                          inits: dict[int, list[ir.Value]], padding: int | None = None,
                          max_distance: int | None = None) -> list[ir.Value]:
        """Shared tiles written, read back at the read map (threads the map
        excludes read the init values), shuffled, and the epilogue. Every
        thread takes part in the shuffles, so the read loop is unrolled
        here: barriers and shuffles stay out of control flow."""
        owner = self.owner
        max_distance = owner.warp_size // 2 if max_distance is None else max_distance
        read = owner.shared_read_map()
        tiles = self.write_to_shared(g, values, padding)
        index_type = ir.IndexType.get()
        for point in itertools.product(*(range(v.lower, v.upper + 1) for v in read.range_vars)):
            symbols = [arith.constant(index_type, s) for s in point]
            condition = check_constraints(read, [self.thread_id], symbols)
            at = apply_map_at(read, [self.thread_id], symbols)
            args, k = {}, 0
            for hero in owner.reduction_heroes[g]:
                args[id(hero)] = []
                for init in inits[id(hero)]:
                    args[id(hero)].append(xla_gpu.predicated_extract(condition, init, tiles[k], at))
                    k += 1
            outputs = self.epilogue(g, self.shuffle(g, args, max_distance), outputs, symbols)
        return outputs

    def epilogue(self, g: int, values: dict[int, list[ir.Value]], outputs, symbols=()
                 ) -> list[ir.Value]:
        """The reduction outputs of group g at the threads' output index,
        written where the output map's constraints hold (XLA's
        EvaluateEpilogue)."""
        owner = self.owner
        outputs = list(outputs)
        for root in owner.reduction_roots[g]:
            k = owner._root_index(root)
            hero = owner.analysis.hero_of(root)
            m = self.output_maps[k]
            has_output = check_constraints(m, self.ids, symbols)
            at = apply_map_at(m, self.ids, symbols)
            _, result = _hero_output(root, hero)
            value = values[id(hero)][result]
            if id(root) in owner.epilogue_of:
                value = self.call_targets.call_epilogue(owner.epilogue_of[id(root)],
                                                        self.params, at, [value])[0]
            outputs[k] = xla_gpu.predicated_insert(has_output, value, outputs[k], at)
        return outputs


# -- the variants ---------------------------------------------------------------------


def _ceil(a: int, b: int) -> int:
    return -(-a // b)


def _round_up(a: int, b: int) -> int:
    return _ceil(a, b) * b


def _dims() -> list[ir.AffineExpr]:
    return [ir.AffineDimExpr.get(i) for i in range(6)]


def _syms(n: int) -> list[ir.AffineExpr]:
    return [ir.AffineSymbolExpr.get(i) for i in range(n)]


# On the CPU target alone, rows of at most this many elements are read an
# element a load (see RowReductionEmitter._host_rows). Through
# xla_gpu.jax.jit (A/B in one process): -log_softmax(x).mean() over rows
# of 100, 197, 500 took 1.29, 0.53, 3.86 ms with XLA's vectors of 2 and
# 0.38, 0.34, 1.31 without; over rows of 1000 (8192 and 4096 rows) 1.11
# with them and 1.48 without, max(x) - min(x) 0.57 and 0.81 (a thread's
# 16 steps of one element, against 8 of two).
HOST_MAX_UNVECTORIZED_ROW = 512

# And rows of 16-bit elements of up to this many whose fusion computes
# with them (any elementwise op but a conversion or copy: a scale, an exp).
# XLA's vector of 4 is an interleave group of 4 on the host, which LLVM
# loads as a wide vector and takes apart (a permute a step); an element a
# load is a plain vector load across the lanes. Through xla_gpu.jax.jit,
# A/B in one process (ms): bf16[4096,1000] softmax(x).max(-1) 2.64 ->
# 1.82, softmax 2.04 -> 1.96, -log_softmax(x).mean() 1.99 -> 1.89; of
# x * 1.5: its row max 1.08 -> 0.69, over bf16[8192,600] 1.25 -> 0.80,
# -log_softmax(x).mean() there 4.59 -> 3.73, f16[4096,1000] softmax 2.52
# -> 1.68. Left at XLA's: rows of 2048 and more (softmax(x).max(-1) over
# bf16[1024,3000] 1.18x slower an element a load, over bf16[2048,2048]
# 0.98x), and sums and maxima of the inputs as they are (a row max over
# bf16[8192,600] 1.40x slower without XLA's vectors, over rows of 1000
# 1.03x, a row sum 1.01-1.12x).
HOST_MAX_UNVECTORIZED_COMPUTED_ROW = 1024
# On the CPU target alone, a row reduction whose largest input has at least
# this many bytes -- the host's last-level cache (32 MiB here), past which
# the rows come from memory -- reads a row a block (_host_rows). A block of
# XLA's several rows walks them side by side (a step of each row, then the
# next step), and memory streamed that way ran at half the rate of a row at
# a time: A/B in one process, 2 threads, rows of 64 MiB: a sum over
# f32[16384,1024] 1.74 -> 1.11 ms, over f32[8192,2048] 1.66 -> 1.06, an exp
# + sum over f32[8192,2048] 4.09 -> 1.21 (XLA:CPU 0.97, 0.97, 2.99), a max
# over bf16[32768,1024] 2.59 -> 1.15 (XLA:CPU 1.24); a sum over rows of 256
# 1.32 -> 1.02. Within the cache the extra blocks cost their trees: a max
# over bf16[8192,512] 0.23 -> 0.43 ms at 16 MiB, over bf16[24576,512]
# 0.54 -> 0.66 at 24 MiB, 1.10 -> 0.88 at 32 MiB; f32 rows the same either
# way within it. Not where a row is one warp and its reducer rounds to a
# 16-bit float at every step (a bf16 sum): a block's 32 lanes then run its
# tree a level at a time, 1-16 of them -- a bf16 sum over rows of 512 at
# 64 MiB ran 3.47 ms with XLA's 8 rows a block, 4.36 a row a block (rows
# of 1024 and 2048: 4.07 -> 2.47, 4.83 -> 2.18; a bf16 max over rows of
# 512 2.84 -> 1.78, an f32 sum 2.26 -> 1.04).
HOST_MIN_STREAMED_ROWS_BYTES = 32 << 20
# And such a row of 513 to 1024 32-bit elements, two warps in XLA's launch,
# is one warp's there (each lane up to 32 elements, not 16): a block of
# one warp has no second tree over shared memory, the time between its
# row's reads and the next row's. A/B at 64 MiB, a row a block both sides
# (ms): sums over rows of 520 1.10 -> 0.81, 600 1.71 -> 1.15, 700 1.75 ->
# 1.31 (XLA:CPU 0.78, 1.05, 1.06), maxima 1.28 -> 0.93, 2.20 -> 1.50, 1.68
# -> 1.36; rows of 768, 900, 1000 the same either way (within 5 %). Not
# 16-bit rows (XLA's vectors of 4: f16 rows of 1000 1.89 -> 1.98), nor
# f64 rows (sums over rows of 600 1.16 -> 1.22, of 1000 0.90 -> 0.98), nor a
# variadic reduce's (its reducer a compare and selects a step: an argmax
# over f32[16384,1024] through xla_gpu.jax.jit 1.63 -> 1.91 ms).
# Set within host_xla_vectors().
_HOST_XLA_VECTORS = contextvars.ContextVar("xla_gpu_host_xla_vectors", default=False)


# The shortest rows host_streamed_rows() reads a row a block: through
# xla_gpu.jax.jit, A/B in one process, softmax over f32[32768,128] ran 0.74
# -> 0.79 ms a row a block (XLA's 8 rows), over f32[33600,125] 1.45 ->
# 1.48; over f32[16384,256] 0.88 -> 0.72 and 1.00 -> 0.83 (two
# processes), over f32[16800,250] 1.00 -> 0.93 and 0.81 -> 0.91.
HOST_MIN_STREAMED_PART_ROW = 256
# The bytes a row program reads and writes in all from which
# host_streamed_rows() reads its rows a row a block, by the rows XLA's
# launch puts in a block: 8 or more for rows of up to 512 elements, 4 for
# rows of 513 to 1024 (32 MiB, 24 MiB), 2 or 1 for longer rows (16 MiB;
# XLA's one row is a row a block already, and then the last part stays
# apart, whole_program.STREAMED_ROW_MAPPED_ROWS). The fewer rows a block
# walks side by side, the sooner a row a block pays. Through
# xla_gpu.jax.jit, ratios of a row a block to XLA's rows (the medians of
# three processes, A/B in one process each) for a layer norm, softmax,
# log_softmax and x - mean: rows of 1000 at 27.5 MiB 0.78, 1.00, 0.91,
# 0.67, at 25.2 MiB 0.89, 0.96, 0.98, 0.75 and (again) 1.11, 1.06, 0.99,
# 0.77, at 23.4 MiB 1.00, 1.06, 1.06, 0.89, at 20.6 MiB 1.18, 1.10, 1.17,
# 0.95 (not taken); rows of 768 at 28.7 MiB 0.75, 0.94, 0.88, 0.56; rows of
# 2000 at 24.4 MiB 0.73, 0.77, 0.88, 0.69, at 19.8 MiB 0.79, 0.86, 0.94,
# 0.75, at 16.8 MiB 0.96, 0.80, 1.07, 0.94, at 15.3 MiB 0.93, 0.85, 1.05,
# 1.01 (not taken); rows of 4096 at 20 MiB 0.94, 0.86, 0.99, 0.95. Rows of
# 512 at 24-28 MiB ran 1.2-1.3x slower a row a block, at 32 MiB within
# noise (0.85-1.18x).
_MIN_STREAMED_PROGRAM_BYTES = ((512, HOST_MIN_STREAMED_ROWS_BYTES), (1024, 24 << 20))
HOST_MIN_STREAMED_LONG_ROWS_BYTES = 16 << 20
# Set within host_streamed_rows(): the program's bytes and its inputs'
# narrowest element type's bits.
_HOST_STREAMED_ROWS = contextvars.ContextVar("xla_gpu_host_streamed_rows", default=(0, 0))


def _min_streamed_program_bytes(row: int, input_bits: int) -> float:
    """The bytes a row program moves from which its rows of `row` elements
    are read a row a block (_MIN_STREAMED_PROGRAM_BYTES); never rows under
    HOST_MIN_STREAMED_PART_ROW. Inputs other than 32-bit from
    HOST_MIN_STREAMED_ROWS_BYTES: a layer norm, softmax, log_softmax and
    x - mean over bf16[6600,1000] (25.2 MiB) and bf16[2200,2000] (16.8
    MiB) ran 1.03-1.13x slower a row a block (two processes)."""
    if row < HOST_MIN_STREAMED_PART_ROW:
        return math.inf
    if input_bits != 32:
        return HOST_MIN_STREAMED_ROWS_BYTES
    return next((b for longest, b in _MIN_STREAMED_PROGRAM_BYTES if row <= longest),
                HOST_MIN_STREAMED_LONG_ROWS_BYTES)


@contextlib.contextmanager
def host_streamed_rows(program_bytes: int, input_bits: int):
    """Within it, row reductions are emitted as where their rows stream from
    memory (HOST_MIN_STREAMED_ROWS_BYTES) if the row program they are parts
    of (xla_gpu.jax.jit's _emitted_parts) reads and writes `program_bytes`
    in all, its narrowest input of `input_bits`, and that is enough for
    their rows (_min_streamed_program_bytes): a fusion whose output is as
    large as its input (a softmax's) moves twice the bytes its parts' own
    inputs tell."""
    token = _HOST_STREAMED_ROWS.set((program_bytes, input_bits))
    try:
        yield
    finally:
        _HOST_STREAMED_ROWS.reset(token)


def streamed_program() -> tuple[int, int]:
    """host_streamed_rows()'s bytes and bits, else (0, 0)."""
    return _HOST_STREAMED_ROWS.get()


def streams_program_rows(row: int) -> bool:
    """Whether rows of `row` elements are read a row a block within the
    current host_streamed_rows() (_min_streamed_program_bytes)."""
    program_bytes, input_bits = _HOST_STREAMED_ROWS.get()
    return program_bytes >= _min_streamed_program_bytes(row, input_bits)


def host_xla_vectors():
    """Within it, rows of 16-bit inputs that the CPU target would read an
    element a load (HOST_MAX_UNVECTORIZED_COMPUTED_ROW) keep XLA's vectors:
    for the parts of one row program whose other parts keep them (a sum of
    the inputs as they are), so that their thread maps match and the parts
    merge into one kernel (xla_gpu.jax.jit's _emitted_parts)."""
    return flag_set(_HOST_XLA_VECTORS)


def keeps_xla_vectors() -> bool:
    """Whether this is within host_xla_vectors()."""
    return _HOST_XLA_VECTORS.get()


# The elementwise ops that compute nothing (see above).
_NOT_COMPUTING = frozenset({"convert", "bitcast-convert", "copy"})


def _computes_with_inputs(analysis: FusionAnalysis) -> bool:
    """Whether the fusion computes with its values: an elementwise op
    other than a conversion or a copy (HOST_MAX_UNVECTORIZED_COMPUTED_ROW,
    HOST_MIN_UNVECTORIZED_MULTI_ROW)."""
    return any(i.opcode in ELEMENTWISE and i.opcode not in _NOT_COMPUTING
               for i in analysis.computation.instructions)


class RowReductionEmitter(ReductionEmitter):
    """Rows of the minor dimension: `num_threads = [kept, reduced]`, each
    thread reduces up to 16 elements of its row (vectorized loads), a warp
    shuffle, and a second one over shared memory when a row spans warps."""

    def configure(self) -> None:
        d = self.reduction.dimensions
        reduced = min(1024, _round_up(_ceil(d[kRowMinorReduced], kMinorReducedElementsPerThread),
                                      self.warp_size))
        kept = 1
        # More rows a block while a row leaves threads to spare.
        if reduced * 2 <= kThreadsPerBlockTarget:
            if d[kRowKept] * reduced <= kThreadsPerBlockTarget:
                kept = d[kRowKept]
            else:
                kept = kThreadsPerBlockTarget // reduced
        one_warp = self.host and self._host_streams_a_warp_a_row(reduced)
        if one_warp:
            reduced = self.warp_size
        v = self.get_vector_size(d[kRowMinorReduced], reduced)
        if self.host:
            kept = self._host_rows(kept, reduced)
            if d[kRowMinorReduced] <= HOST_MAX_UNVECTORIZED_ROW or self._host_computed_16_bit_row():
                v = 1
        self.num_threads = [kept, reduced]
        # The vector is a dimension of its own: loads of v elements.
        self.input_shape = [d[0], d[1], d[2] // v, v]
        tile = _ceil(self.input_shape[2], reduced)
        if not one_warp:
            tile = min(kMinorReducedElementsPerThread // v, tile)
        self.tile_sizes_per_thread = [d[0], tile, v]
        self.tile_sizes_per_block = [kept, tile * reduced]
        self.num_blocks = [_ceil(self.input_shape[1], self.tile_sizes_per_block[0]),
                           _ceil(self.input_shape[2], self.tile_sizes_per_block[1])]

    def _host_rows(self, kept: int, reduced: int) -> int:
        """The rows of a block on the CPU target: the most, up to XLA's
        `kept`, that divide the rows, so that no block holds rows past the
        end. Those rows' bounds check, a condition of the block id in every
        load and in the store, left LLVM vectorizing a warp's lanes in a
        merged kernel's exp 2 at a time, each load behind its own branch:
        softmax(x).max(-1) over f32[5322,197]
        through xla_gpu.jax.jit took 4.4x jax.jit's time, over f32[5328,197]
        0.84x. And (configure) a thread reads a short row's elements one
        at a time (no vector of 2 or 4, which XLA:GPU loads as one
        transaction): on the host the vectors are across lanes, and a
        thread's pair was an interleave group LLVM would not mask, so a
        warp's lanes past a row's partial last step (rows of 100: 14 of
        32) ran scalar -- softmax(x).max(-1) over f32[10240,100] 2.2 ->
        0.42 ms (jax.jit 0.45); see HOST_MAX_UNVECTORIZED_ROW. One row
        where the rows stream from memory (HOST_MIN_STREAMED_ROWS_BYTES),
        but for rows of a warp whose reducer rounds to 16 bits."""
        d = self.reduction.dimensions
        if (_streams_from_memory(self.analysis, d[kRowMinorReduced])
                and not (reduced <= self.warp_size and _rounds_in_16_bits(self.analysis))):
            return 1
        return max(k for k in range(1, kept + 1) if d[kRowKept] % k == 0)

    def _host_streams_a_warp_a_row(self, reduced: int) -> bool:
        """Whether a row of 32-bit elements that streams from
        memory (HOST_MIN_STREAMED_ROWS_BYTES) and that XLA gives two warps
        is one warp's on the CPU target (see HOST_MIN_STREAMED_ROWS_BYTES);
        not a variadic reduce's (an argmax)."""
        return (reduced == 2 * self.warp_size and _smallest_input_bits(self.analysis) == 32
                and _streams_from_memory(self.analysis,
                                         self.reduction.dimensions[kRowMinorReduced])
                and not any(hero.shape.is_tuple for hero in self.analysis.heroes))

    def _host_computed_16_bit_row(self) -> bool:
        """Whether a row of 16-bit inputs is short enough, and its fusion
        computes with them, so that the CPU target reads it an element a
        load (see HOST_MAX_UNVECTORIZED_COMPUTED_ROW); not within
        host_xla_vectors()."""
        return (not keeps_xla_vectors() and
                self.reduction.dimensions[kRowMinorReduced] <= HOST_MAX_UNVECTORIZED_COMPUTED_ROW
                and _smallest_input_bits(self.analysis) == 16
                and _computes_with_inputs(self.analysis))

    @property
    def warps_per_row(self) -> int:
        return _ceil(self.num_threads[1], self.warp_size)

    def reduction_input_map(self) -> IndexingMap:
        d, s = _dims(), _syms(3)
        th = delinearize(d[0], self.num_threads)
        bl = delinearize(d[3], self.num_blocks)
        tpb = self.tile_sizes_per_block
        results = [s[0], bl[0] * tpb[0] + th[0],
                   bl[1] * tpb[1] + s[1] * self.num_threads[1] + th[1], s[2]]
        return self._bounded(self._map(results, self.tile_sizes_per_thread), self.input_shape)

    def reduction_output_map(self) -> IndexingMap:
        d = _dims()
        th = delinearize(d[0], self.num_threads)
        bl = delinearize(d[3], self.num_blocks)
        return self._map([bl[0] * self.tile_sizes_per_block[0] + th[0]],
                         constraints=[(th[1], (0, 0))])

    def shared_write_map(self) -> IndexingMap:
        """Lane 0 of each warp writes its row's partial value."""
        th = delinearize(ir.AffineDimExpr.get(0), self.num_threads)
        w = self.warp_size
        return self._thread_map([th[0], _floordiv(th[1], w)], constraints=[(th[1] % w, (0, 0))])

    def shared_read_map(self) -> IndexingMap:
        """Lane l of a row's first warp reads warp l's value."""
        th = delinearize(ir.AffineDimExpr.get(0), self.num_threads)
        return self._thread_map([th[0], th[1] % self.warp_size],
                                constraints=[(th[1], (0, self.warps_per_row - 1))])

    def emit_group(self, state: _State, g: int) -> list[ir.Value]:
        inits = state.inits(g)
        values, outputs = state.per_thread(g, inits)
        values = state.shuffle(g, values, self.warp_size // 2)
        if self.warps_per_row == 1:
            return state.epilogue(g, values, outputs)
        return state.reduce_via_shared(g, values, outputs, inits)


# On the CPU target alone, rows of this many elements up to half a warp,
# several a warp, are read an element a lane (a row's lanes its elements,
# not XLA:GPU's vectors of 2 or 4 over half as many lanes) where the
# fusion computes with them (_computes_with_inputs): a vector across the
# lanes of a vector loop is then one row, whose broadcast value (a row's
# max in its exps) is one load, where a thread's pair of elements left
# LLVM vectorizing 8 lanes at a time (a 256-bit vector, one row's). Through
# xla_gpu.jax.jit, A/B in one process (ms): f32[65536,16] softmax(x).max(-1)
# 1.26 -> 0.52 (jax.jit 0.62), softmax 0.90 -> 0.57 (0.62), -log_softmax(x)
# .mean() 0.91 -> 0.69 (0.61), a layer norm 0.50 -> 0.47; over rows of 8
# softmax(x).max(-1) 0.58 -> 0.43, -log_softmax(x).mean() 0.67 -> 0.60;
# bf16[65536,16] -log_softmax(x).mean() 1.34 -> 1.08. Maxima and sums alone
# the same or slower (rows of 8: a row max 1.0-1.6x from run to run); rows
# of 4 and 2 slower (softmax(x).max(-1) over f32[262144,2] 3.3x), of 32 (a
# warp) too (2.3x).
HOST_MIN_UNVECTORIZED_MULTI_ROW = 8


class MultiRowReductionEmitter(ReductionEmitter):
    """Short rows (a power of two a warp covers): `num_threads = [kept,
    W / vector]`, several rows a warp, a shuffle within each row's lanes;
    no shared memory."""

    @staticmethod
    def vector_size_for(analysis: FusionAnalysis, device: DeviceDescription,
                        dims: ReductionDimensions) -> int | None:
        """XLA's MultiRowReductionFusion::TryCreate: the vector size, or
        None when the rows are no power of two or do not fit a warp."""
        w = dims.dimensions[kRowMinorReduced]
        if w & (w - 1):
            return None
        smallest_input = _smallest_input_bits(analysis)
        smallest_output = min(r.shape.element_type.bits for r in analysis.roots)
        smallest = min(smallest_input, smallest_output)
        # XLA's "largest": the larger of the smallest input and output (the
        # output's when there are no inputs).
        largest = smallest_output if smallest_input == float("inf") else \
            max(smallest_input, smallest_output)
        # The input:output ratio is high: narrow outputs count too.
        v = min(w, 64 // smallest)
        if largest >= 32:
            # 16 bytes at most for wide types.
            v = min(128 // largest, v)
        warp = device.threads_per_warp
        if w > warp * max(v, 1):
            return None
        v = max(v, 1)
        # At least a block per SM.
        while v > 1 and MultiRowReductionEmitter._blocks(dims, v) < device.core_count:
            v //= 2
        if w > warp * v:
            return None
        return v

    @staticmethod
    def _threads(dims: ReductionDimensions, v: int) -> list[int]:
        reduced = dims.dimensions[kRowMinorReduced] // v
        kept_size = dims.dimensions[kRowKept]
        kept = kept_size if kept_size * reduced <= kThreadsPerBlockTarget else \
            kThreadsPerBlockTarget // reduced
        return [kept, reduced]

    @staticmethod
    def _blocks(dims: ReductionDimensions, v: int) -> int:
        return _ceil(dims.dimensions[kRowKept], MultiRowReductionEmitter._threads(dims, v)[0])

    def configure(self) -> None:
        d = self.reduction.dimensions
        v = self.vector_size_for(self.analysis, self.device, self.reduction)
        if (self.host and HOST_MIN_UNVECTORIZED_MULTI_ROW <= d[kRowMinorReduced] < self.warp_size
                and _computes_with_inputs(self.analysis)):
            v = 1
        self.input_shape = list(d)
        self.num_threads = self._threads(self.reduction, v)
        self.num_blocks = [self._blocks(self.reduction, v)]
        self.tile_sizes_per_thread = [d[0], v]

    def _block(self) -> ir.AffineExpr:
        return ir.AffineConstantExpr.get(0) if self.num_blocks[0] == 1 else \
            ir.AffineDimExpr.get(3)

    def reduction_input_map(self) -> IndexingMap:
        th = delinearize(ir.AffineDimExpr.get(0), self.num_threads)
        s = _syms(2)
        results = [s[0], self._block() * self.num_threads[0] + th[0],
                   th[1] * self.tile_sizes_per_thread[1] + s[1]]
        return self._bounded(self._map(results, self.tile_sizes_per_thread), self.input_shape)

    def reduction_output_map(self) -> IndexingMap:
        th = delinearize(ir.AffineDimExpr.get(0), self.num_threads)
        return self._map([self._block() * self.num_threads[0] + th[0]],
                         constraints=[(th[1] % self.num_threads[1], (0, 0))])

    def emit_group(self, state: _State, g: int) -> list[ir.Value]:
        values, outputs = state.per_thread(g, state.inits(g))
        values = state.shuffle(g, values, self.num_threads[1] // 2)
        return state.epilogue(g, values, outputs)


class ColumnReductionEmitter(ReductionEmitter):
    """[D, H, W] -> [D, W]: a 32 x 32 thread tile (warps down the column,
    lanes across it), `vector` columns a thread, the partial results
    transposed through a padded 32 x (32 * vector + 1) tile."""

    def configure(self) -> None:
        d = self.reduction.dimensions
        w = self.warp_size
        self.input_shape = list(d)
        self.vector_size = self.get_vector_size(d[kColMinorKept], w)
        self.num_threads = [w, w]
        self.tile_sizes_per_thread = [_ceil(d[kColReduced], w), self.vector_size]
        self.num_blocks = [d[kColMajorKept], _ceil(d[kColMinorKept], w * self.vector_size)]

    def reduction_input_map(self) -> IndexingMap:
        d, s = _dims(), _syms(2)
        th = delinearize(d[0], self.num_threads)
        bl = delinearize(d[3], self.num_blocks)
        w, v = self.warp_size, self.vector_size
        results = [bl[0], th[0] + s[0] * self.num_threads[1], (bl[1] * w + th[1]) * v + s[1]]
        return self._bounded(self._map(results, self.tile_sizes_per_thread), self.input_shape)

    def reduction_output_map(self) -> IndexingMap:
        d, s = _dims(), _syms(1)
        th = delinearize(d[0], self.num_threads)
        bl = delinearize(d[3], self.num_blocks)
        w, v = self.warp_size, self.vector_size
        return self._map([bl[0], (bl[1] * w + th[0]) * v + s[0]], [v],
                         constraints=[(th[1], (0, 0))])

    def shared_write_map(self) -> IndexingMap:
        th = delinearize(ir.AffineDimExpr.get(0), self.num_threads)
        s = _syms(1)
        return self._thread_map([th[1], th[0] * self.vector_size + s[0]], [self.vector_size])

    def shared_read_map(self) -> IndexingMap:
        th = delinearize(ir.AffineDimExpr.get(0), self.num_threads)
        s = _syms(1)
        return self._thread_map([th[0], th[1] * self.vector_size + s[0]], [self.vector_size])

    def emit_group(self, state: _State, g: int) -> list[ir.Value]:
        inits = state.inits(g)
        values, outputs = state.per_thread(g, inits)
        return state.reduce_via_shared(g, values, outputs, inits)


class SmallColumnReductionEmitter(ReductionEmitter):
    """Columns of a width that divides the warp: 128 threads walk the
    flattened [H * W] slice of a block's D, `vector` elements at a time;
    the partial results meet in `shared_rows` rows of W columns."""

    def configure(self) -> None:
        d = self.reduction.dimensions
        w = self.warp_size
        self.input_shape = list(d)
        if w % d[kColMinorKept]:
            self._configure_any_width()
            return
        # One loop over H and W: their product decides the vector.
        v = self.get_vector_size(d[1] * d[2], w)
        threads = kSmallColumnThreads
        shared_rows = v * threads // d[kColMinorKept]
        # More than a warp of shared rows would need a second pass through
        # shared memory (XLA has none): fewer elements, then fewer threads.
        while shared_rows > w and v > 1:
            v //= 2
            shared_rows //= 2
        if shared_rows > w:
            threads //= shared_rows // w
            shared_rows = w
        self.vector_size = v
        self.shared_rows = shared_rows
        self.num_threads = [threads]
        self.num_blocks = [d[kColMajorKept]]
        self.loop_size = _ceil(d[1] * d[2], v * threads)
        self.tile_sizes_per_thread = [self.loop_size, v]

    def _configure_any_width(self) -> None:
        """W below the warp but not dividing it (3 image channels, an
        [N, H, 5] sum over H): the CPU target's (ReductionEmitter.host_class),
        where ColumnReductionEmitter's lanes across W left 3 of a vector's 8
        busy. Elements a thread a step, threads the fewest warps whose
        count W divides: each thread's elements stay in one column, and
        the warp / gcd(W, warp) shared rows of each column are a warp's or
        fewer, which one shuffle tree reduces."""
        d = self.reduction.dimensions
        w, width = self.warp_size, d[kColMinorKept]
        common = gcd(width, w)
        self.vector_size = 1
        self.shared_rows = w // common
        self.num_threads = [w * (width // common)]
        self.num_blocks = [d[kColMajorKept]]
        self.loop_size = _ceil(d[1] * d[2], self.num_threads[0])
        self.tile_sizes_per_thread = [self.loop_size, 1]

    def reduction_input_map(self) -> IndexingMap:
        d, s = _dims(), _syms(2)
        v, t = self.vector_size, self.num_threads[0]
        linear = d[0] * v + s[1] + s[0] * (v * t)
        flat = self._map([d[3], linear], [self.loop_size, v])
        d0, d1, d2 = self.input_shape
        m = flat.then(bitcast_map((d0, d1 * d2), (d0, d1, d2)))
        return self._bounded(m, self.input_shape)

    def reduction_output_map(self) -> IndexingMap:
        d, s = _dims(), _syms(1)
        t = self.num_threads[0]
        return self._map([d[3], _floordiv(d[0] + s[0] * t, self.shared_rows)], [self.vector_size],
                         constraints=[(d[0] % self.shared_rows, (0, 0))])

    def shared_write_map(self) -> IndexingMap:
        th, s = ir.AffineDimExpr.get(0), _syms(1)
        index = delinearize(th * self.vector_size + s[0],
                            [self.shared_rows, self.input_shape[kColMinorKept]])
        return self._thread_map(index, [self.vector_size])

    def shared_read_map(self) -> IndexingMap:
        th, s = ir.AffineDimExpr.get(0), _syms(1)
        index = delinearize(th + s[0] * self.num_threads[0],
                            [self.input_shape[kColMinorKept], self.shared_rows])
        return self._thread_map([index[1], index[0]], [self.vector_size])

    def emit_group(self, state: _State, g: int) -> list[ir.Value]:
        inits = state.inits(g)
        values, outputs = state.per_thread(g, inits)
        # The least padding that avoids every bank conflict (XLA).
        t, v = self.num_threads[0], self.vector_size
        padding = 0 if (t == 32 and v == 1) else _ceil(self.input_shape[kColMinorKept], t * v)
        return state.reduce_via_shared(g, values, outputs, inits, padding,
                                       self.shared_rows // 2)


def _floordiv(expr: ir.AffineExpr, n: int) -> ir.AffineExpr:
    return ir.AffineFloorDivExpr.get(expr, ir.AffineConstantExpr.get(n))


def _variant_for(analysis: FusionAnalysis, device: DeviceDescription) -> type:
    """XLA's CreateReductionFusion."""
    dims = reduction_dimensions(analysis.deciding_hero)
    if dims.is_row_reduction:
        if MultiRowReductionEmitter.vector_size_for(analysis, device, dims) is not None:
            return MultiRowReductionEmitter
        return RowReductionEmitter
    if device.threads_per_warp % dims.dimensions[kColMinorKept] == 0:
        return SmallColumnReductionEmitter
    return ColumnReductionEmitter
