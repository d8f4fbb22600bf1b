"""The packed transpose (XLA's PackedTranspose, what XLA:GPU has used since
2025 for element types narrower than a shared-memory bank): one square
shared tile of `32v x 32v` elements, v = 32 bits / the element's bits (64 x
64 for f16/bf16, 128 x 128 for 8-bit types), *swizzled* instead of padded
against bank conflicts.

The transpose is taken in XLA's canonical form (TransposeSpec): the input
`[D..., T2, D..., A, T1, B]` becomes `[D'..., T1, D'..., A, T2, B]`, where
T1 (the input's minor transposed dimension) and T2 (where it goes) are
swapped, A rides along with T1, B is the kept minor dimension (1 here) and
the D are batch dimensions, tiled by 1:

    loop 1 (symbols loop, vector): shared[row][swizzle(row, col)] = input
        row = loop * 4 + warp             T2 within the tile
        col = lane * v + vector           A * T1 within the tile
    sync_threads
    loop 2 (symbols loop, h, v): output = shared[row][swizzle(row, col)]
        row = lane * v + v                T2 within the tile
        col = (loop * 4 + warp) * v + h   A * T1 within the tile

    swizzle(row, col) = (col + (row floordiv v) * v) mod (32 v)

Every thread reads v consecutive input elements (one 32-bit word) and
writes v consecutive output elements, so both sides stay coalesced. Like
XLA, tiles need at least 10 v populated rows and columns and the shape's
divisibility below (`packed_tile_sizes`); otherwise the 32 x 33 tiled
transpose (transpose.py) is used. Sub-byte types stay with that one here.
"""

from __future__ import annotations

from math import prod

from mlir import ir

from ..hlo import HloInstruction
from ..indexing import delinearize
from ..indexing_map import IndexingMap
from .base import bitcast_map
from .elemental import mlir_type
from .fusion_analysis import (FusionAnalysis, kBankBitwidth, kNumShmemBanks, TransposeSpec, element_bits, packed_tile_sizes,
                              transpose_spec)
from .kernel import LaunchDimensions
from .transpose import TransposeEmitter, _permute, _transposes

__all__ = ["PackedTransposeEmitter", "TransposeSpec", "packed_tile_sizes", "transpose_spec"]

kNumWarpsPerBlock = 4      # XLA's CreateTransposeFusion: num_warps = 4
kWarpSize = 32


def packed_transpose_applies(analysis: FusionAnalysis) -> bool:
    """Whether the fusion's transposes take the packed tile: one element
    width among them, and tile sizes for its spec."""
    desc = analysis.tiled_transpose
    heroes = _transposes(analysis)
    if desc is None or not heroes or len({element_bits(h) for h in heroes}) != 1:
        return False
    return packed_tile_sizes(transpose_spec(desc), element_bits(heroes[0])) is not None


class PackedTransposeEmitter(TransposeEmitter):
    """TransposeEmitter's two loops around one barrier, with XLA's packed
    tile and maps (the module docstring). Chosen by
    TransposeEmitter.specialize; not registered on its own."""

    @classmethod
    def shared_memory_bytes(cls, analysis: FusionAnalysis) -> int:
        heroes = _transposes(analysis)
        v = kBankBitwidth // element_bits(heroes[0])
        return len(heroes) * (kNumShmemBanks * v) ** 2 * max(1, element_bits(heroes[0]) // 8)

    @classmethod
    def host_class(cls, analysis: FusionAnalysis, device) -> type:
        """On the CPU target 16-bit transposes take the 32 x 33 tiles
        (TransposeEmitter): its copies into and out of the packed 64 x 64
        tile, swizzled, matched none of the CPU lowering's transposing
        copies once an epilogue computed anything, and LLVM made gathers
        of them. A/B, the same buffers (ms, packed -> 32 x 33): a 021
        transpose + 1 of f16[16,320,512] 0.598 -> 0.291, f16[16,300,500]
        0.489 -> 0.303, bf16[16,256,512] 0.371 -> 0.261, bf16[16,300,500]
        0.527 -> 0.362, f16[64,128,96] 0.170 -> 0.088, f16[8,200,96] 0.042
        -> 0.022, bf16[32,197,197] the same, -x of bf16[1024,1024] 0.159 ->
        0.135; pure copies: the bench's f16[8,200,96] 0.032 -> 0.009,
        f16[64,128,96] 0.112 -> 0.028, bf16[32,512,512] 1.055 -> 0.905,
        f16[2048,1000] 0.187 -> 0.170, f16[16,320,512] the same, but
        bf16[16,256,512] 0.071 -> 0.079 and f16[1024,1024] 0.054 -> 0.059.
        8-bit ones keep the packed tile (u8[16,300,500] + 1 0.217 -> 0.232
        on 32 x 33 tiles, its copy 0.286 -> 0.255)."""
        if element_bits(_transposes(analysis)[0]) == 16:
            return TransposeEmitter
        return cls

    @classmethod
    def decline_reason(cls, analysis, device) -> str | None:
        used = cls.shared_memory_bytes(analysis)
        if used > device.shared_memory_per_block:
            return (f"its {len(_transposes(analysis))} packed tiles need {used} bytes, more "
                    f"than the {device.shared_memory_per_block} a block has")
        return None

    def _choose_tiling(self) -> None:
        spec = self.spec = transpose_spec(self.description)
        bits = element_bits(self.transposes[0])
        self.vector_size = kBankBitwidth // bits
        self.shmem_dim = kNumShmemBanks * self.vector_size
        self.output_tile = packed_tile_sizes(spec, bits)
        self.input_tile = _permute(self.output_tile, spec.canonical_inv_permutation)
        self.block_counts = [-(-n // t) for n, t in
                             zip(spec.canonical_output_shape, self.output_tile)]
        self.tile_t1 = self.input_tile[spec.t1_input_id]
        self.populated_cols = self.input_tile[spec.a_id] * self.tile_t1
        self.populated_rows = self.input_tile[spec.t2_input_id]

    # -- maps (XLA's GetInputIndexing, GetShmem{Write,Read}Indexing,
    #    GetOutputIndexing) ---------------------------------------------------------

    def _lane_warp(self):
        thread = ir.AffineDimExpr.get(0)
        return thread % kWarpSize, ir.AffineExpr.get_floor_div(thread, kWarpSize)

    def _swizzle(self, row, col):
        v = self.vector_size
        return (col + ir.AffineExpr.get_floor_div(row, v) * v) % (kNumShmemBanks * v)

    def _write_side(self):
        """(symbols, shared row, shared col) of the first loop."""
        lane, warp = self._lane_warp()
        loop, vec = ir.AffineSymbolExpr.get(0), ir.AffineSymbolExpr.get(1)
        symbols = [("loop", 0, -(-self.populated_rows // kNumWarpsPerBlock) - 1),
                   ("vector", 0, self.vector_size - 1)]
        return symbols, loop * kNumWarpsPerBlock + warp, lane * self.vector_size + vec

    def _read_side(self):
        """(symbols, shared row, shared col) of the second loop."""
        lane, warp = self._lane_warp()
        loop, h, vv = (ir.AffineSymbolExpr.get(i) for i in range(3))
        v = self.vector_size
        symbols = [("loop", 0, -(-self.populated_cols // (v * kNumWarpsPerBlock)) - 1),
                   ("vector_h", 0, v - 1), ("vector_v", 0, v - 1)]
        return symbols, lane * v + vv, (loop * kNumWarpsPerBlock + warp) * v + h

    def _canonical_map(self, input_side: bool) -> IndexingMap:
        spec = self.spec
        symbols, row, col = self._write_side() if input_side else self._read_side()
        block_ids = delinearize(ir.AffineDimExpr.get(3), self.block_counts)
        if input_side:
            block_ids = _permute(block_ids, spec.canonical_inv_permutation)
        tile = self.input_tile if input_side else self.output_tile
        within = [ir.AffineConstantExpr.get(0)] * spec.rank
        within[spec.a_id] = ir.AffineExpr.get_floor_div(col, self.tile_t1)
        t1 = spec.t1_input_id if input_side else spec.t1_output_id
        t2 = spec.t2_input_id if input_side else spec.t2_output_id
        within[t1] = col % self.tile_t1
        within[t2] = row
        offsets = [b * t + w for b, t, w in zip(block_ids, tile, within)]
        shape = spec.canonical_input_shape if input_side else spec.canonical_output_shape
        constraints = [(col, (0, self.populated_cols - 1)), (row, (0, self.populated_rows - 1))]
        constraints += [(e, (0, n - 1)) for e, n in zip(offsets, shape)]
        return self.kernel_map(offsets, symbols, constraints).simplify()

    def _tile_map(self, input_side: bool, shape: tuple[int, ...]) -> IndexingMap:
        canonical = (self.spec.canonical_input_shape if input_side
                     else self.spec.canonical_output_shape)
        return self._canonical_map(input_side).then(
            bitcast_map(tuple(canonical), tuple(shape))).simplify()

    def shared_memory_map(self, read: bool) -> IndexingMap:
        symbols, row, col = self._read_side() if read else self._write_side()
        constraints = [(col, (0, self.populated_cols - 1)), (row, (0, self.populated_rows - 1))]
        return self.kernel_map([row, self._swizzle(row, col)], symbols, constraints).simplify()

    def shared_tile_type(self, hero: HloInstruction) -> ir.RankedTensorType:
        return ir.RankedTensorType.get([self.shmem_dim, self.shmem_dim],
                                       mlir_type(hero.shape.element_type))

    def launch_dims(self) -> LaunchDimensions:
        return LaunchDimensions((prod(self.block_counts), 1, 1),
                                (kNumWarpsPerBlock * kWarpSize, 1, 1))

    def block_order(self) -> None:
        """XLA's packed tiles are numbered in the output's row-major order
        already (block_counts is over the canonical output)."""
        return None

    def _partial_tile_dims(self) -> list[int]:
        """None: the packed tiles' loops are neither versioned nor shifted
        for the CPU target (TransposeEmitter._versioned_kernel_loop), which
        takes them for 8-bit types alone (host_class). Versioned, A/B on
        the same buffers: a 021 transpose of bf16[16,300,500] ran 0.53 ->
        0.65 ms, of u8 0.21 -> 0.39, of the bench's f16[8,200,96] 0.030 ->
        0.025; in stop 85 with the whole tiles' maps keeping the populated
        rows' and columns' constraints alone, bf16 0.52 -> 0.61, u8 0.19 ->
        0.28. Shifted (the last whole tile at an edge, its 128 x 128 tile
        overlapping its neighbour's), u8[16,380,500] + 1 ran 0.92-0.99x
        the time, u8[16,300,500] + 1 (128 rows of overlap a 300) 1.22x."""
        return []
