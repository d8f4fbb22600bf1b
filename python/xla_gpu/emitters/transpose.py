"""The transpose emitter (XLA's TransposeFusion): a fusion whose hero is a
transpose that swaps the minor dimension with another one. A block owns a
tile of the transpose's (normalized) input; the tile goes through shared
memory so that both the reads of the input and the writes of the output
walk their minor dimension (coalesced):

    input tile ──(loop 1: coalesced reads, shared[swapped] = x)──► shared tile
                                                     xla_gpu.sync_threads
    shared tile ──(loop 2: x = shared[i], epilogue)──► output (coalesced)

Normalized as XLA's TransposeDimensionGrouper leaves them, the transposes
are 021 / 210 / 10 (the minor dimension swapped with dimension
`permutation[-1]`; a tile of `32v x 32v`) and 102 (the minor dimension
kept: it rides along in every tile element, a `32 x 32 x minor` tile).
Each thread of a block's 128 moves `v` consecutive elements per step
("vectorized tiles": v > 1 for small element types when the grid has work
and shared memory to spare). The shared tile is padded by one element on
the dimension a warp walks down when writing it, against bank conflicts
(the seed's `32x1x33`). Outputs that are not transposed (side outputs,
with the input's element count) are written by the first loop at the
input's index. Element types narrower than a 32-bit bank take XLA's packed
transpose instead where its tile applies (packed_transpose.py, chosen by
`specialize`).
"""

from __future__ import annotations

from math import prod

from mlir import ir
from mlir.dialects import arith, func, scf, tensor

from ..dialects import xla_gpu
from ..hlo import HloInstruction, Shape
from ..indexing import delinearize, output_to_input_indexing
from ..indexing_map import IndexingMap
from .base import CallTargets, EmitterBase, Epilogue, apply_map, bitcast_map
from .device import DEFAULT_DEVICE, DeviceDescription
from .elemental import EmitterError, mlir_type
from .fusion_analysis import EmitterKind, FusionAnalysis, tiled_transpose_description
from .kernel import LaunchDimensions
from .registry import register_emitter

__all__ = ["TransposeEmitter", "kNumRows", "kNumThreadsPerBlock", "kTileSize"]

# XLA's transpose tile: 32 x 32 elements (times the vector size), walked
# by kNumRows warps; 128 threads a block, what XLA:GPU (jaxlib 0.10.2)
# launches for the seed's transpose (960 x 128).
kTileSize = 32
kNumRows = 4
kNumThreadsPerBlock = kNumRows * kTileSize
# XLA: at most 16 bytes a thread moves per vectorized step.
kMaxVectorizedBytes = 16
# The CPU target's tiles a group along the input's rows (block_order).
kCpuTileGroup = 8


def _byte_width(inst: HloInstruction) -> int:
    return max(1, inst.shape.element_type.bits // 8)


def _permute(values, permutation) -> list:
    """XLA's Permute: element i of the result is values[permutation[i]]."""
    return [values[p] for p in permutation]


def transpose_shared_memory_bytes(analysis: FusionAnalysis) -> int:
    """The shared tiles' bytes without vectors (XLA's shmem_usage; a vector
    of v elements makes each tile v^2 times larger)."""
    desc = analysis.tiled_transpose
    minor_kept = desc.permutation[-1] == len(desc.permutation) - 1
    total = 0
    for hero in _transposes(analysis):
        size = _byte_width(hero) * (desc.input_shape[-1] if minor_kept else 1)
        total += kTileSize * (kTileSize + 1) * size
    return total


def _transposes(analysis: FusionAnalysis) -> list[HloInstruction]:
    """The distinct transpose heroes, in output order."""
    out: list[HloInstruction] = []
    for hero in analysis.heroes:
        if tiled_transpose_description(hero) is not None and all(h is not hero for h in out):
            out.append(hero)
    return out


@register_emitter(EmitterKind.TRANSPOSE)
class TransposeEmitter(EmitterBase):

    @classmethod
    def specialize(cls, analysis: FusionAnalysis) -> type:
        """XLA's CreateTransposeFusion: the packed transpose where its tile
        applies (packed_transpose.py), else this one."""
        from .packed_transpose import PackedTransposeEmitter, packed_transpose_applies
        return PackedTransposeEmitter if packed_transpose_applies(analysis) else cls

    @classmethod
    def decline_reason(cls, analysis: FusionAnalysis, device: DeviceDescription) -> str | None:
        """Why this fusion is not tiled (the loop emitter writes it then),
        or None. XLA's fusion passes never form such a fusion; a handwritten
        one with many transposes can ask for more shared memory than a
        block has."""
        used = transpose_shared_memory_bytes(analysis)
        if used > device.shared_memory_per_block:
            return (f"its {len(_transposes(analysis))} shared tiles need {used} bytes, more "
                    f"than the {device.shared_memory_per_block} a block has")
        return None

    def __init__(self, analysis: FusionAnalysis, device: DeviceDescription = DEFAULT_DEVICE):
        super().__init__(analysis, device)
        desc = analysis.tiled_transpose
        if desc is None:
            raise EmitterError(self.fusion, "the fusion has no tiled transpose hero")
        self.description = desc
        self.permutation = list(desc.permutation)
        self.input_shape = list(desc.input_shape)
        self.output_shape = list(desc.dimensions)
        self.transposes = _transposes(analysis)
        self.transposed_roots: list[HloInstruction] = []
        self.side_output_roots: list[HloInstruction] = []
        for root, hero in zip(analysis.roots, analysis.heroes):
            is_tiled = any(hero is t for t in self.transposes)
            (self.transposed_roots if is_tiled else self.side_output_roots).append(root)
        # What the partitioner roots apart: the transposes (emitted here),
        # their operands (read at the tile's indices), the side outputs.
        self._forced = {id(i) for i in (*self.transposes, *self.side_output_roots)}
        self._forced.update(id(t.operands[0]) for t in self.transposes)
        # The ops after a transpose (`abs(transpose)`), one function each.
        self.epilogue_of = {id(r): Epilogue([analysis.hero_of(r)], [r])
                            for r in self.transposed_roots if analysis.hero_of(r) is not r}
        self._choose_tiling()

    # -- tiling (XLA's TransposeFusion constructor) --------------------------------

    @property
    def minor_dimension_kept(self) -> bool:
        """XLA's MostMinorDimensionUnchanged: a 102 transpose."""
        return self.permutation[-1] == len(self.permutation) - 1

    def _set_vector_size(self, vector_size: int) -> None:
        rank = len(self.input_shape)
        self.vector_size = vector_size
        sizes = [1] * rank
        if self.minor_dimension_kept:
            self.block_size = kTileSize
            sizes[-1] = vector_size
            sizes[-2] = kTileSize
            sizes[self.permutation[-2]] = kTileSize
        else:
            self.block_size = kTileSize * vector_size
            sizes[-1] = self.block_size
            sizes[self.permutation[-1]] = self.block_size
        self.block_sizes = sizes
        self.output_block_sizes = _permute(sizes, self.permutation)
        self.block_counts = [-(-n // b) for n, b in zip(self.input_shape, sizes)]

    def _choose_tiling(self) -> None:
        """The kept minor dimension is the vector of a 102 transpose.
        Otherwise XLA's rule: the widest vector (16 bytes at most) for which
        the grid still fills the device v^2 times over, the shared tiles
        fit, and both swapped dimensions divide by it."""
        if self.minor_dimension_kept:
            self._set_vector_size(self.input_shape[-1])
            return
        self._set_vector_size(1)
        widest = max(_byte_width(t) for t in self.transposes)
        threads = prod(self.block_counts) * kNumThreadsPerBlock
        shmem = transpose_shared_memory_bytes(self.analysis)
        v = kMaxVectorizedBytes // widest
        while v > 1:
            enough_work = threads >= v * v * self.device.max_resident_threads
            enough_shmem = shmem * v * v <= self.device.shared_memory_per_block
            aligned = (self.input_shape[-1] % v == 0 and
                       self.input_shape[self.permutation[-1]] % v == 0)
            if enough_work and enough_shmem and aligned:
                self._set_vector_size(v)
                return
            v //= 2

    def launch_dims(self) -> LaunchDimensions:
        return LaunchDimensions((prod(self.block_counts), 1, 1), (kNumThreadsPerBlock, 1, 1))

    def block_order(self) -> tuple[tuple[int, ...], tuple[int, ...]] | None:
        """On the CPU, the tiles of the two swapped dimensions in groups of
        `kCpuTileGroup` along the input's rows: a group's tiles go down
        its rows, then on along them, so that the input's rows and the
        output's both advance a few tiles at a time. In id order a
        block's output rows (and the rows of any operand read at the
        output's index) lie a tile apart from the previous block's, and
        the input's do in the output's row-major order (XLA:CPU's tile
        order). Measured in one process against id order, one thread /
        two: transpose+add f32[1024,1024] 0.83-0.90x / 0.71-0.86x,
        f32[2048,4096] 0.89-0.95x / 0.86-1.03x; in the output's order
        0.87x / 0.92x and 1.12x / 0.98x. The other dimensions stay
        outside, in id order (the seed's transpose, whose row dimension
        has one tile: the output's order ran 1.06-1.09x slower)."""
        # The tiled dimensions: the input's minor one (its second-minor in
        # a 102) and `a`, the one that becomes the output's.
        minor = len(self.permutation) - (2 if self.minor_dimension_kept else 1)
        a = self.permutation[minor]
        n = self.block_counts[a]
        if self.block_counts[minor] == 1:
            return None
        group = max((g for g in range(2, kCpuTileGroup + 1) if n % g == 0), default=None)
        if group is None:
            if not 1 < n <= 2 * kCpuTileGroup:
                return None
            group = n
        # The block id as an index into the counts with dimension a split
        # into (groups, tiles of a group), the latter run innermost.
        tiles = [*self.block_counts[:a], n // group, group, *self.block_counts[a + 1:]]
        order = [d for d in range(len(tiles)) if d != a + 1] + [a + 1]
        return tuple(tiles), tuple(order)

    # -- maps ----------------------------------------------------------------------

    def _symbols(self) -> list[tuple[str, int, int]]:
        return [("loop", 0, self.block_size // kNumRows - 1),
                ("vector", 0, self.vector_size - 1)]

    def _thread_offsets(self, input_side: bool) -> list[ir.AffineExpr]:
        """Where a thread's element lies in the tile at step (loop, vector):
        128 threads times v consecutive elements per step, row-major over
        the input tile (the output tile for the output side)."""
        thread = ir.AffineDimExpr.get(0)
        loop, vec = ir.AffineSymbolExpr.get(0), ir.AffineSymbolExpr.get(1)
        stride = self.block_size * kNumRows
        if self.minor_dimension_kept:
            stride *= self.vector_size
        linear = loop * stride + thread * self.vector_size + vec
        return delinearize(linear, self.block_sizes if input_side else self.output_block_sizes)

    def _tile_map(self, input_side: bool, shape: tuple[int, ...],
                  shifted: bool = False) -> IndexingMap:
        """XLA's GetIndexing: (th_x, ..., bl_z)[loop, vector] -> the element
        of `shape` (a bitcast of the normalized input or output) a thread
        handles; constraints cut the partial tiles at the edges. With
        `shifted` (the CPU target's, _shifts_edge_tiles), a block at an
        edge takes the last whole tile instead, overlapping its neighbour's:
        the map has no constraints."""
        block = ir.AffineDimExpr.get(3)
        block_ids = delinearize(block, self.block_counts)
        origins = [b * s for b, s in zip(block_ids, self.block_sizes)]
        if shifted:
            # The last block of a partial dimension (its id divided by the
            # last id is 1) starts n - s in, not its id times s.
            origins = [o - ir.AffineExpr.get_floor_div(b, count - 1) * (s - n % s)
                       if n % s else o for o, b, s, n, count in
                       zip(origins, block_ids, self.block_sizes, self.input_shape,
                           self.block_counts)]
        normalized = self.input_shape
        if not input_side:
            origins, normalized = _permute(origins, self.permutation), self.output_shape
        offsets = [o + t for o, t in zip(origins, self._thread_offsets(input_side))]
        m = self.kernel_map(offsets, self._symbols(),
                            [] if shifted else
                            [(e, (0, n - 1)) for e, n in zip(offsets, normalized)])
        m = m.then(bitcast_map(tuple(normalized), tuple(shape))).simplify()
        # (The bitcast's ranges, which the composition adds, hold.)
        return m.without_constraints() if shifted else m

    # Whether the kernel is for the CPU target alone (for_host).
    host = False

    def for_host(self) -> None:
        """For the CPU target alone: where tiles are partial at an edge,
        the blocks there take the last whole tile (_shifts_edge_tiles), or
        each loop of the kernel is emitted once for the blocks of whole
        tiles, without the edges' bounds checks, and once for the rest
        (_versioned_kernel_loop)."""
        self.host = True

    def _partial_tile_dims(self) -> list[int]:
        """The dimensions of the normalized input whose last tile is partial."""
        return [d for d, (n, b) in enumerate(zip(self.input_shape, self.block_sizes)) if n % b]

    # Where the edge tiles shift (_shifts_edge_tiles), how much more of the
    # shape the blocks may cover in all than it has: the overlap is
    # computed twice. A/B against the scf.if (_versioned_kernel_loop), the
    # same buffers (ms): covering 1.09x, f32[16,300,500] to [16,500,300]
    # 0.298 -> 0.172; 1.64x, f32[8,1000,40] 0.036 -> 0.028; 1.98x,
    # f32[16,33,500] 0.037 -> 0.029; but 2.48x, f32[16,100,33] 0.009 ->
    # 0.010, and 3.1x, f32[64,40,33] 0.013 -> 0.015.
    max_shifted_cover = 2.0

    def _shifts_edge_tiles(self) -> bool:
        """Whether the CPU target's blocks at a partial edge take the last
        whole tile (_tile_map's `shifted`): where every partial dimension
        has two tiles or more, the blocks then cover at most
        max_shifted_cover times the shape, and no output is written in
        place of an input (the overlap is computed twice, by two blocks: a
        block that read an element its neighbour had already written over
        would write back a wrong value). Transposes are never merged into
        other kernels, whose later phases could write over the overlap."""
        partial = self._partial_tile_dims()
        cover = prod(self.block_counts[d] * self.block_sizes[d] / self.input_shape[d]
                     for d in partial)
        return (all(self.block_counts[d] > 1 for d in partial)
                and cover <= self.max_shifted_cover and not self.buffer_aliases())

    def _whole_tile(self, block: ir.Value) -> ir.Value:
        """Whether block `block`'s tile is whole (an i1)."""
        d0 = ir.AffineDimExpr.get(0)
        ids = delinearize(d0, self.block_counts)
        partial = self._partial_tile_dims()
        m = IndexingMap.get(ir.AffineMap.get(1, 0, [ids[d] for d in partial]),
                            [(0, prod(self.block_counts) - 1)], [])
        whole = None
        for d, bid in zip(partial, apply_map(m, [block])):
            full = arith.ConstantOp(ir.IndexType.get(),
                                    self.input_shape[d] // self.block_sizes[d]).result
            below = arith.CmpIOp(arith.CmpIPredicate.ult, bid, full).result
            whole = below if whole is None else arith.AndIOp(whole, below).result
        return whole

    def _versioned_kernel_loop(self, input_side: bool, inits, body, ids) -> list[ir.Value]:
        """emit_kernel_loop over the tile map of the normalized input (or
        output): on the CPU target, where tiles are partial at an edge, an
        scf.if of the block's tile being whole, its loop without the
        bounds checks, else with them. Each lane's check (its row and
        column against the tile's edges, a period of the tile's 32 lanes)
        cut no lane loop: every block's loops ran them lane by lane. A/B,
        the same buffers, two threads (ms): 2 x transpose of f32[500,3000]
        0.275 -> 0.178, of f32[100,10000] 0.204 -> 0.136, of f32[496,2992]
        0.296 -> 0.208, f32[16,300,500] to [16,500,300] (+ 1) 0.474 ->
        0.287, compiled in 53 ms instead of 60-63; one dimension partial
        the same (f32[512,3000], f32[500,3008], the bench's seed transpose
        f32[20,160,170]).

        Since stop 85, where every partial dimension has two tiles or more
        (and the blocks cover at most max_shifted_cover times the shape),
        no scf.if: a block at an edge takes the last whole tile instead
        (_shifts_edge_tiles), and both loops run unchecked in every block.
        The overlap with the neighbouring tile is computed twice, by two
        blocks, each writing the same values (a kernel that writes over an
        input keeps the scf.if). A/B against the scf.if, the same buffers
        (ms): f32[16,300,500] to [16,500,300] (+ 1) 0.298-0.317 ->
        0.172-0.228, 2 x transpose of f32[500,3000] 0.200 -> 0.089, of
        f32[100,10000] 0.120 -> 0.067, of f32[512,3000] 0.191 -> 0.128;
        each compiled in ~20 ms instead of 29-41."""
        shape = tuple(self.input_shape if input_side else self.output_shape)
        versioned = self.host and bool(self._partial_tile_dims())
        shifted = versioned and self._shifts_edge_tiles()
        # (Not `shifted` passed on: the packed tiles' map takes none.)
        tile_map = (self._tile_map(input_side, shape, shifted=True) if shifted
                    else self._tile_map(input_side, shape))
        keep = tuple(range(tile_map.num_symbols))
        if not versioned or shifted:
            return self.emit_kernel_loop(tile_map, inits, body, keep_symbols=keep, ids=ids)
        # This class's tile map constrains the edges alone (the packed
        # tiles' also their populated rows: they are not versioned), so a
        # whole tile's map is the map without constraints -- not the map
        # built without the edges': composed with the bitcast it gains the
        # normalized shape's ranges, the same checks (LLVM proved them true
        # from the branch's condition, in a compile of 47 ms instead of 36,
        # f32[16,300,500] -> [16,500,300]).
        whole = tile_map.without_constraints()
        branch = scf.IfOp(self._whole_tile(ids[3]), [v.type for v in inits], has_else=True)
        for block, m in ((branch.then_block, whole), (branch.else_block, tile_map)):
            with ir.InsertionPoint(block):
                scf.YieldOp(self.emit_kernel_loop(m, inits, body, keep_symbols=keep, ids=ids))
        return list(branch.results)

    def shared_memory_map(self, read: bool) -> IndexingMap:
        """XLA's GetSharedMemoryIndexing: the element of the shared tile a
        thread reads at step (loop, vector) in the second loop -- its
        position in the input tile -- and, with the two swapped dimensions
        exchanged, the one it writes in the first loop."""
        offsets = self._thread_offsets(input_side=True)
        if not read:
            a = len(offsets) - 2 if self.minor_dimension_kept else len(offsets) - 1
            b = self.permutation[a]
            offsets[a], offsets[b] = offsets[b], offsets[a]
        return self.kernel_map(offsets, self._symbols()).simplify()

    def shared_tile_type(self, hero: HloInstruction) -> ir.RankedTensorType:
        """The block's tile, padded by one on the dimension the first loop's
        warps walk down (a new bank for each row)."""
        shape = list(self.block_sizes)
        shape[-2 if self.minor_dimension_kept else -1] += 1
        return ir.RankedTensorType.get(shape, mlir_type(hero.shape.element_type))

    def thread_to_output_map(self, root_index: int) -> IndexingMap:
        root = self.output_roots()[root_index]
        if any(root is r for r in self.transposed_roots):
            return self._tile_map(False, root.shape.dims)
        return self._tile_map(True, root.shape.dims)

    def thread_to_input_map(self, root_index: int, hero_operand_index: int
                            ) -> IndexingMap | None:
        root = self.output_roots()[root_index]
        hero = self.analysis.hero_of(root)
        if not 0 <= hero_operand_index < len(hero.operands):
            return None
        if any(root is r for r in self.transposed_roots):
            return self._tile_map(True, hero.operands[hero_operand_index].shape.dims)
        reads = output_to_input_indexing(root)
        if len(reads[hero_operand_index]) != 1:
            return None
        return self.thread_to_output_map(root_index).then(reads[hero_operand_index][0])

    # -- emission ------------------------------------------------------------------

    def is_subgraph_root(self, inst: HloInstruction) -> bool:
        return id(inst) in self._forced

    def epilogues(self) -> list[Epilogue]:
        return list(self.epilogue_of.values())

    def _root_index(self, root: HloInstruction) -> int:
        return [r is root for r in self.analysis.roots].index(True)

    def emit_entry_function(self, entry: func.FuncOp, call_targets: CallTargets) -> None:
        n = len(self.params)
        params, outputs = list(entry.arguments)[:n], list(entry.arguments)[n:]

        def value_of(inst: HloInstruction, index) -> ir.Value:
            return call_targets.value(inst, params, index)

        def at(index, normalized, shape: Shape) -> list[ir.Value]:
            if tuple(normalized) == tuple(shape.dims):
                return list(index)
            return apply_map(bitcast_map(tuple(normalized), tuple(shape.dims)), index)

        with ir.InsertionPoint(entry.entry_block):
            ids = self.all_kernel_ids()
            tiles = [xla_gpu.allocate_shared(self.shared_tile_type(t)) for t in self.transposes]
            side = [self._root_index(r) for r in self.side_output_roots]
            write_map = self.shared_memory_map(read=False)

            def write_body(ivs, index, iters):
                shared_at = self.apply_kernel_map(write_map, ids, ivs)
                written = []
                for t, tile in zip(self.transposes, iters):
                    x = value_of(t.operands[0], at(index, self.input_shape, t.operands[0].shape))
                    written.append(tensor.insert(x, tile, shared_at))
                for root, out in zip(self.side_output_roots, iters[len(tiles):]):
                    idx = at(index, self.input_shape, root.shape)
                    written.append(tensor.insert(value_of(root, idx), out, idx))
                return written

            loop1 = self._versioned_kernel_loop(True, [*tiles, *(outputs[k] for k in side)],
                                                write_body, ids)
            synced = xla_gpu.sync_threads(loop1[:len(tiles)])
            synced = [synced] if isinstance(synced, ir.Value) else list(synced)
            outputs = list(outputs)
            for k, value in zip(side, loop1[len(tiles):]):
                outputs[k] = value
            read_map = self.shared_memory_map(read=True)
            tile_of = {id(t): s for t, s in zip(self.transposes, synced)}

            def read_body(ivs, index, iters):
                shared_at = self.apply_kernel_map(read_map, ids, ivs)
                values = {key: tensor.extract(s, shared_at) for key, s in tile_of.items()}
                results = list(iters)
                for root in self.transposed_roots:
                    k = self._root_index(root)
                    idx = at(index, self.output_shape, root.shape)
                    value = values[id(self.analysis.hero_of(root))]
                    if id(root) in self.epilogue_of:
                        value = call_targets.call_epilogue(self.epilogue_of[id(root)], params,
                                                           idx, [value])[0]
                    results[k] = tensor.insert(value, results[k], idx)
                return results

            func.ReturnOp(self._versioned_kernel_loop(False, outputs, read_body, ids))
