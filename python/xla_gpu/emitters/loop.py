"""The loop emitter, the default: one xla_gpu.loop over thread and block ids
that walks the output linearly (coalesced writes), `vector` consecutive
elements per thread, calling the root subgraph for each element."""

from __future__ import annotations

from dataclasses import dataclass
from math import prod

from mlir import ir
from mlir.dialects import func, tensor

from ..hlo import HloComputation, HloInstruction, Shape
from ..hlo.opcodes import ELEMENTWISE, PREVENTS_VECTORIZATION
from ..indexing import IndexingError, delinearize, indexing_from, output_to_input_indexing
from ..indexing_map import IndexingMap
from .base import CallTargets, EmitterBase, apply_map, bitcast_map
from .device import DEFAULT_DEVICE, DeviceDescription
from .elemental import EmitterError
from .fusion_analysis import EmitterKind, FusionAnalysis, analyze_fusion, broadcasts_along
from .kernel import LaunchDimensions
from .registry import register_emitter

__all__ = ["LoopEmitter", "LoopLaunch", "block_row", "default_thread_map", "host_row_launch",
           "launch_grid", "loop_launch_dims", "may_prevent_vectorization", "shareable_operands"]

# XLA: a block is this many warps (warp scheduling granularity).
kWarpSchedulingGranularity = 4
# XLA's kMaxUnrollFactor: elements per thread, when the count allows it.
kMaxUnrollFactor = 4
# XLA: a concatenate of more operands is not unrolled (register spilling).
kMaxConcatArgumentsForUnrolling = 10


@dataclass(frozen=True)
class LoopLaunch:
    """The loop emitter's launch: the grid and the elements per thread."""

    dims: LaunchDimensions
    unroll_factor: int
    # A block a row of the output, a thread's unrolled elements a block's
    # threads apart (not next to each other), threads past the row idle
    # (host_row_launch).
    unroll_apart: bool = False
    # A block a row of the output whose threads' elements, next to each
    # other, reach past the row's end, the elements past it idle
    # (host_row_launch).
    past_row: bool = False
    # The minor dimensions such a row spans: 2 for the W and C of NHWC
    # images (_host_pixel_row_launch).
    row_dims: int = 1

    @property
    def threads(self) -> int:
        return self.dims.thread_counts_per_block[0]

    @property
    def blocks(self) -> int:
        """Blocks in the grid (x times y)."""
        return self.dims.num_blocks


def may_prevent_vectorization(comp: HloComputation) -> bool:
    """XLA's MayPreventVectorization: ops that become loops or libcalls
    make unrolling a loss (the opcode table says which), and so do wide
    concatenates and variadic reductions."""
    for inst in comp.instructions:
        if inst.opcode in PREVENTS_VECTORIZATION:
            return True
        if inst.opcode == "concatenate" and len(inst.operands) > kMaxConcatArgumentsForUnrolling:
            return True
        if inst.opcode == "reduce" and inst.shape.is_tuple:
            return True
    return False


def loop_launch_dims(shape: Shape, device: DeviceDescription = DEFAULT_DEVICE,
                     prevent_vectorization: bool = False) -> LoopLaunch:
    """XLA's loop fusion launch: unroll only outputs with at least as many
    elements as the device has resident threads (a small output wants one
    thread per element), by the largest of 4, 2, 1 dividing the count, and
    at least 8 / bits for 2- and 4-bit types (one thread writes a whole
    packed byte); blocks of four warps, fewer threads if there are fewer
    elements. More blocks than the device's x limit go to block y (XLA
    does this for very large broadcasts)."""
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
    return LoopLaunch(launch_grid(blocks, threads, device), vector)


def launch_grid(blocks: int, threads: int, device: DeviceDescription) -> LaunchDimensions:
    """`blocks` blocks of `threads` threads, those past the device's x limit
    along block y."""
    blocks_y = -(-blocks // device.block_dim_limit_x)
    blocks_x = -(-blocks // blocks_y)
    return LaunchDimensions((blocks_x, blocks_y, 1), (threads, 1, 1))


def _shifts_minor(comp: HloComputation, dims: tuple[int, ...], minor: int | None = None) -> bool:
    """Whether `comp` pads, slices, concatenates or reverses along the minor
    dimension (or dimension `minor`) of an array of the output's rank (an
    operand of `dims`' rows read at an offset, a stride or backwards): its
    index a row's start plus the lane, which XLA's blocks of 512 elements
    cut at every row's end -- each piece a loop of its own on the CPU
    target, and a pad's edge a guard in each. A block a row: a pad of a
    reversed strided slice into f32[515,257] ran 32-38 -> 16 us a kernel
    call."""
    rank = len(dims)
    minor = rank - 1 if minor is None else minor
    for i in comp.instructions:
        if i.shape.rank != rank:
            continue
        op = i.operands[0].shape if i.operands else None
        if i.opcode == "pad":
            # (low, high, interior) a dimension. Interior padding along the
            # rows is not taken: a pad every other lane, which XLA's launch
            # runs two lanes a step (a rotary embedding's gradient over
            # f32[8,16,256,64] ran 2.2 -> 8.0 ms a block a row).
            config = i.attr("padding")
            if (isinstance(config, list) and len(config) == rank and not config[minor][2]
                    and any(config[minor][:2])):
                return True
        elif i.opcode == "slice" and op is not None and op.rank == rank:
            if i.shape.dims[minor] != op.dims[minor]:
                return True
        elif i.opcode == "concatenate" and i.attr("dimensions") == [minor]:
            return True
        elif i.opcode == "reverse" and minor in (i.attr("dimensions") or []):
            return True
    return False


def _regroups_pixels(comp: HloComputation, dims: tuple[int, ...]) -> bool:
    """Whether `comp` reads an operand at other indices than the output's
    along its two minor dimensions (W and C of NHWC images) by a
    broadcast or a bitcast: a broadcast of an array of the output's rank
    that leaves the second minor dimension out (a value a channel, read at
    every pixel: the row's lane mod C), or a bitcast or reshape between
    the output's rank and another shape whose two minor dimensions differ
    (a nearest upsampling's [N,H,2,W,2,C] as [N,2H,2W,C]: pixel (e / C) /
    2). The lanes' indices then have a period along the row that XLA's
    blocks of 512 elements cut at every row's end: a nearest upsampling by
    2 of f32[16,112,112,3] ran 0.093-0.116 -> 0.065-0.083 ms a kernel
    call a block a row, its compile 26-32 -> 12-15 ms (of u8[8,100,100,4]
    0.12 -> 0.011 ms); a scale per channel of f32[16,224,224,3] 0.16 ->
    0.13. Elementwise fusions are left as they are (their lanes' indices
    the output's: an exp over the same images ran 8 % slower a block a
    row), as is a value a pixel broadcast along the channels (a scale of
    each pixel of f32[4096,128,8]: 3-5 % slower)."""
    rank = len(dims)
    for i in comp.instructions:
        if not i.operands:
            continue
        op = i.operands[0].shape
        if i.opcode == "broadcast" and i.shape.rank == rank and op.rank > 0:
            if rank - 2 not in (i.attr("dimensions") or []):
                return True
        elif i.opcode in ("bitcast", "reshape") and rank in (i.shape.rank, op.rank):
            if op.rank >= 2 and i.shape.rank >= 2 and op.dims[-2:] != i.shape.dims[-2:]:
                return True
    return False


def _windows_across_rows(comp: HloComputation, dims: tuple[int, ...]) -> bool:
    """Whether `comp` has a reduce-window of the output's rank whose windows
    lie across rows, a lane's elements along the major dimensions: a
    window of 1 along the minor dimension, stride 1, no padding nor
    dilation there. A row's lanes then read rows of the operand, side by
    side at each step of the window, where XLA's blocks of 512 elements
    cut them at every row's end. XLA:CPU's integer column sums are such
    reduce-windows (32x1 windows): over s32[1048576,33] 19.3 -> 4.6 ms a
    kernel call."""
    rank, minor = len(dims), len(dims) - 1
    for i in comp.instructions:
        if i.opcode != "reduce-window" or i.shape.rank != rank:
            continue
        window = i.attr("window", {})
        size = window.get("size", [])
        if len(size) != rank or size[minor] != 1 or all(n == 1 for n in size):
            continue
        along = {f: v[minor] for f, v in window.items() if len(v) == rank}
        if (along.get("stride", 1) == 1 and along.get("pad", (0, 0)) in ((0, 0), 0) and
                along.get("lhs_dilate", 1) == 1 and along.get("rhs_dilate", 1) == 1):
            return True
    return False


def host_row_launch(comp: HloComputation, shape: Shape, launch: LoopLaunch,
                    device: DeviceDescription = DEFAULT_DEVICE) -> LoopLaunch | None:
    """For the CPU target alone: a block a row of the output's minor
    dimension (its threads times the elements a thread makes), where the
    fusion reads values broadcast along that dimension (a row's max, its
    log-sum; not a scalar's broadcast) and a row is 32 to 1024 threads
    (a longer one several elements a thread, where XLA's are 128 a block).
    The row is then the block's, one value for all of its lanes, where
    XLA's blocks of 512 elements cut rows of 1000: each lane's row
    computed, the values gathered lane by lane. A row that XLA's unroll
    factor does not divide, or leaves fewer than 32 threads, is a thread
    an element (rows of 48 to 197: softmax through xla_gpu.jax.jit 2x
    jax.jit's time before, 0.93-1.0x after); a row of 9 to 31 elements
    a warp's, its last lanes idle (host_row_map: softmax over
    f32[32768,24] 0.90 -> 0.49 ms, jax.jit 0.47-0.49; over f32[87381,12]
    1.07 -> 0.64, jax.jit 0.69-0.72). None where that does not apply."""
    dims, unroll = shape.dims, launch.unroll_factor
    if len(dims) < 2 or not shape.has_default_layout:
        return None
    if dims[-1] < 32 and len(dims) > 2 and (_shifts_minor(comp, dims, len(dims) - 2) or
                                            _regroups_pixels(comp, dims)):
        return _host_pixel_row_launch(comp, shape, launch, device)
    if dims[-1] % unroll or dims[-1] // unroll < 32:
        unroll = 1
    threads = dims[-1] // unroll
    # A row of 9 to 31 elements: a warp, its last lanes idle (rows of 12
    # 10 and 14: the softmax's last kernel 0.70-0.76x the time of XLA's
    # blocks of 512 elements, a layer norm's 0.86-0.91x).
    short = 8 < threads < 32
    if short:
        threads = 32
    # A row of more than 1024 elements where XLA's blocks are 128 (an
    # element count that 2 does not divide): as many elements a thread as
    # make it 1024 threads at most, those past the row idle. Each of XLA's
    # blocks was a step of its lanes cut at a row's end, a loop of its own
    # either side, under ten vectors each. A/B in one process, the same
    # buffers, 16-24 MiB (ms): a pad of a reversed strided slice into
    # f32[2051,1025] 0.23-0.26 -> 0.13-0.14 (XLA:CPU 0.17-0.19), x[:, :-2]
    # + 2 x[:, 1:-1] + x[:, 2:] into f32[2047,2999] 1.12-1.17 -> 0.68-0.73,
    # a reverse of f32[2047,3001] 0.84 -> 0.55, exp(x - max) over
    # f32[4095,1025] 0.63-0.73 -> 0.28-0.30 (0.64), a row scale there 0.40
    # -> 0.17-0.19, exp(x - max) over f32[1023,5001] (5 a thread, apart)
    # 0.98-1.03 -> 0.55-0.61 (0.76). Where XLA's blocks are 256 or 512
    # elements they stay: exp(x - max) over f32[4096,1025] ran 0.47 ->
    # 0.54 a block a row, the three shifted slices into f32[2048,2998]
    # 0.81 -> 0.89 (a thread's 2 or 3 elements apart, other buffers).
    long = threads > device.threads_per_block_limit and launch.unroll_factor == 1
    if long:
        unroll = -(-dims[-1] // device.threads_per_block_limit)
        threads = -(-dims[-1] // unroll)
    if not 32 <= threads <= 1024:
        return None
    # Rows read at an offset (_shifts_minor) only from a warp's 32 elements
    # up: a row of 16 a warp, half its lanes idle, ran jax.lax.cummax over
    # f32[64,500] 1.3-1.5x slower.
    if not (broadcasts_along(comp, dims, len(dims) - 1) or
            (not short and (_shifts_minor(comp, dims) or _windows_across_rows(comp, dims) or
                            _reduces_columns_across_blocks(comp, dims, launch)))):
        return None
    # A row of more elements than a block has threads: a thread's elements
    # next to each other, which the CPU pipeline's
    # -xla-gpu-fold-loops-into-threads makes neighbouring threads (up to
    # HOST_MAX_FOLDED_THREADS), the block's lanes one walk along the row.
    # Until stop 83 they were a block's threads apart (host_row_map),
    # each step of the lanes a stretch of the row, walked side by side: a
    # stream each, which from memory ran at about half the rate of one.
    # A/B in one process, the same buffers, 16 MiB in and out (ms): a
    # row's scale over f32[2048,2048] 0.27-0.30 -> 0.16-0.19, over rows of
    # 1028 0.34-0.35 -> 0.18-0.21; exp(x - max) over f32[2048,2048]
    # 0.39-0.48 -> 0.24-0.25; a layer norm's last step into bf16[2048,2048]
    # 0.19-0.21 -> 0.15; a bf16 row scale 0.15 -> 0.13. Apart where the
    # threads do not fold: past HOST_MAX_FOLDED_THREADS, packed sub-byte
    # outputs.
    wide = threads * unroll > device.threads_per_block_limit
    apart = short or (wide and not _folds(comp, threads * unroll))
    return LoopLaunch(launch_grid(shape.num_elements // dims[-1], threads, device), unroll,
                      unroll_apart=apart,
                      past_row=not apart and threads * unroll != dims[-1])


def _reduces_columns_across_blocks(comp: HloComputation, dims: tuple[int, ...],
                                   launch: LoopLaunch) -> bool:
    """Whether `comp` reduces columns into its output of `dims` (a reduce of
    that shape keeping its operand's minor dimension: a column reduction
    the loop emitter takes on the CPU target, host_prefers_loop_for), and
    XLA's blocks (`launch`) do not tile a row of it: a block's lanes then
    span two rows of the batch, each lane's column at (block * threads +
    lane) mod W, and LLVM gathers each step's loads lane by lane. A block
    a row makes them one vector load a step. A/B, two threads (ms, ours
    XLA's blocks -> a block a row; XLA:CPU): f32[16,512,500] summed over
    its middle dimension (a 16 MiB column sum split in 16, the first part
    of jnp.sum(x, 0) over f32[8192,500] through xla_gpu.jax.jit) 0.92 ->
    0.11 (0.16-0.28), f32[8,512,1000] 0.92 -> 0.09 (0.15-0.23),
    f32[4,1000,700] 0.64 -> 0.11 (0.17), f32[8,1024,1500] 3.85 -> 0.79
    (0.81-0.84), bf16[16,512,500] 10.1 -> 0.14 (XLA:CPU 10.7), s32 0.56 ->
    0.10; f32[64,100,300] and [32,256,200] the same. Where XLA's blocks
    tile the rows it keeps them: f32[256,256,256] ran 1.00 -> 1.17 a block
    a row."""
    threads = launch.threads * launch.unroll_factor
    if dims[-1] % threads == 0:
        return False
    return any(i.opcode == "reduce" and i.shape.is_array and i.shape.dims == dims
               and i.operands[0].shape.rank - 1 not in i.dimensions for i in comp.instructions)


# The CPU target's limit on a block's threads once
# -xla-gpu-fold-loops-into-threads made each of them K (passes/Passes.h:
# kMaxFoldedThreadsPerBlock).
HOST_MAX_FOLDED_THREADS = 4096


def _folds(comp: HloComputation, lanes: int) -> bool:
    """Whether -xla-gpu-fold-loops-into-threads folds a loop kernel of
    `comp` whose blocks have `lanes` threads times elements a thread: at
    most HOST_MAX_FOLDED_THREADS, no output of packed sub-byte elements
    (each of their bytes is a thread's)."""
    root = comp.root
    outputs = root.operands if root.opcode == "tuple" else [root]
    return lanes <= HOST_MAX_FOLDED_THREADS and all(
        o.shape.element_type is None or o.shape.element_type.bits >= 8 for o in outputs)


def _host_pixel_row_launch(comp: HloComputation, shape: Shape, launch: LoopLaunch,
                           device: DeviceDescription) -> LoopLaunch | None:
    """host_row_launch's row of the two minor dimensions, for a fusion that
    shifts or reverses along the second one, the minor one under 32
    elements (the W and C of NHWC images, a pixel's channels): a block a
    row of 32 to 1024 elements, a thread XLA's unroll factor of them
    where it divides the row and leaves 32 threads (else one). XLA's
    blocks of 512 elements cut the rows of 672 of a flip along W of
    f32[16,224,224,3]: each piece of a row a loop of its own, a head and
    a tail around 3 lanes a step; a row a block, one loop of 24-float
    vectors (A/B in one process, two threads: 0.154-0.167 -> 0.107-0.115
    ms a kernel call, its compile 24 -> 15 ms; a zero pad of H and W of
    the same images 0.14 -> 0.10 ms, a u8 flip 0.070 -> 0.039). A row of
    1025 to 4096 elements, XLA's 4 a thread next to each other, folded
    into the block's threads (a pixel shuffle into f32[8,112,112,16], rows
    of 1792: 0.097 -> 0.063 ms the thread's 4 a block's threads apart,
    until stop 83; 0.058 folded, A/B in one process 0.142 (*) -> 0.058,
    into f32[16,224,224,16] 5.5 (*) -> 2.0; a flip along W of
    u8[8,64,512,3] 0.024 -> 0.013 apart, 0.011 folded, of f32[16,224,512,3]
    1.50 (*) -> 0.66; an upsampling into u8[4,128,512,3] 0.020 -> 0.010
    apart, 0.009 folded). (*) apart and folded, which scatters a block's
    lanes: the CPU pipeline folds up to 4096 threads since stop 83. None
    where the row does not fit."""
    dims, unroll = shape.dims, launch.unroll_factor
    row, limit = dims[-1] * dims[-2], device.threads_per_block_limit
    blocks = shape.num_elements // row
    if row > limit:
        # More elements than a block has threads: XLA's unroll factor of
        # them a thread, which -xla-gpu-fold-loops-into-threads folds into
        # the block's threads, one walk along the row -- or, where it does
        # not (packed sub-byte outputs), a thread's elements a block's
        # threads apart (host_row_map), each of its steps a lane loop along
        # the row. Only where XLA's unroll factor divides the row (a zero
        # pad of W to 514 pixels of 3 channels apart: 4 steps of 386 lanes,
        # the last two idle, ran 7 % slower in f32 and bf16; 2 steps of 771
        # lanes 1.3-2.2x slower).
        if row % unroll or row // unroll > limit:
            return None
        return LoopLaunch(launch_grid(blocks, row // unroll, device), unroll,
                          unroll_apart=not _folds(comp, row), row_dims=2)
    if row % unroll or row // unroll < 32:
        unroll = 1
    if row // unroll < 32:
        return None
    return LoopLaunch(launch_grid(blocks, row // unroll, device), unroll)


# For the CPU target: a loop fusion whose elements each read
# HOST_SPLIT_READS of its inputs' elements or more (a reduce-window's
# window, an inline reduce) runs on HOST_MIN_BLOCKS blocks at least, of
# no more threads than its output's minor dimension has elements (but
# HOST_MIN_ROW_THREADS) (host_split_launch).
HOST_MIN_BLOCKS = 8
HOST_SPLIT_READS = 64
HOST_MIN_ROW_THREADS = 32


def host_split_launch(comp: HloComputation, shape: Shape, launch: LoopLaunch,
                      device: DeviceDescription = DEFAULT_DEVICE) -> LoopLaunch:
    """For the CPU target alone, where each element of `shape` reads
    HOST_SPLIT_READS input elements or more (the inputs' over the
    output's): `launch` in blocks of no more threads than the output's
    minor dimension has elements (HOST_MIN_ROW_THREADS at least), and in
    HOST_MIN_BLOCKS blocks where it has fewer. The CPU target runs such a
    kernel's threads a step at a time, a batch of blocks together: with
    blocks of 128 threads over rows of 16 (x * x).mean(1) over
    f32[256,1024,16] read 128 lines 64 KiB apart a step, 0.55 ms a kernel
    call; in blocks of 32, 0.25 (1.4x -> 0.83-0.94x jax.jit). And a block
    runs on one thread of the CPU: XLA:CPU's count of (x > 0).sum() over
    f32[64,256,256], a reduce-window of 32x32x32 windows into s32[2,8,8],
    was one block of 128 threads, 0.92 ms a kernel call; as 8 blocks of
    16, 0.33 ms. `launch` itself where that does not apply."""
    n = shape.num_elements
    reads = sum(p.shape.num_elements for p in comp.parameters if p.shape.is_array)
    per_thread = -(-n // launch.unroll_factor)
    if reads < HOST_SPLIT_READS * n or per_thread < HOST_MIN_BLOCKS:
        return launch
    threads = launch.threads
    if shape.rank and shape.dims[-1] < threads:
        threads = max(HOST_MIN_ROW_THREADS, shape.dims[-1])
    if launch.blocks < HOST_MIN_BLOCKS:
        threads = min(threads, -(-per_thread // HOST_MIN_BLOCKS))
    if threads == launch.threads:
        return launch
    return LoopLaunch(launch_grid(-(-per_thread // threads), threads, device),
                      launch.unroll_factor, launch.unroll_apart)


def host_whole_batch_launch(comp: HloComputation, shape: Shape, launch: LoopLaunch,
                            device: DeviceDescription = DEFAULT_DEVICE) -> LoopLaunch:
    """For the CPU target alone, a reduce-window fusion whose output's
    elements under its major dimension (a batch) XLA's blocks do not tile:
    blocks of the most threads up to XLA's that a batch's elements are a
    multiple of, and a multiple of its minor dimension (32 at least).
    Across a batch's end a block's lanes take their indices by a division
    of the block's linear index that LLVM computes lane by lane, each
    step's loads gathered; within one they are a division of the block id
    alone. jnp.cumsum(x, 1) over f32[100,10000] through xla_gpu.jax.jit
    is reduce-windows of 16 over [100,625,16] (blocks of 80, not 128): its
    first kernel 3.0 -> 0.37 ms (XLA:CPU 0.69), the program 4.64 -> 1.82
    (jax.jit 2.36). `launch` itself where that does not apply (XLA's
    unroll factor over 1)."""
    dims = shape.dims
    if len(dims) < 2 or launch.unroll_factor != 1 or not shape.has_default_layout:
        return launch
    if not any(i.opcode == "reduce-window" and i.shape.dims == dims for i in comp.instructions):
        return launch
    batch, threads = prod(dims[1:]), launch.threads
    if batch % threads == 0 or batch < threads or threads % dims[-1]:
        return launch
    tile = max(t for t in range(dims[-1], threads + 1, dims[-1]) if batch % t == 0)
    if tile < 32:
        return launch
    return LoopLaunch(launch_grid(shape.num_elements // tile, tile, device), 1)


# The sizes of a dimension host_transposed_dim walks last.
HOST_TRANSPOSED_SIZES = range(2, 9)


def host_transposed_dim(comp: HloComputation, shape: Shape) -> int | None:
    """For the CPU target alone: a dimension j of the output (of 2 to 8
    elements, not its minor one) that some input of the fusion has as its
    minor dimension, the output's minor dimension next to it -- a
    transpose of channels out of the minor end (NHWC -> NCHW, [n, 3] ->
    [3, n]). Walked last, each lane's elements are the input's next ones
    (j's 2 to 8 side by side) and the output's of one lane apart along
    the rows of each j: the CPU target runs the lanes j's size a step
    (unrollAtLanePeriod), loads them as one interleave group and stores
    each j's contiguously, where row-major each lane read an element of
    stride j's size on its own. None where there is none, and for a
    fusion of several outputs."""
    dims = shape.dims
    rank = len(dims)
    if rank < 2 or not shape.has_default_layout or comp.root.opcode == "tuple":
        return None
    try:
        maps = indexing_from(comp, comp.root, dims)
    except IndexingError:
        return None
    for p in comp.parameters:
        if not p.shape.is_array or not p.shape.has_default_layout or p.shape.rank < 2:
            continue
        for m in maps.get(id(p), []):
            minor, next_to = (_dim_position(e) for e in list(m.affine_map.results)[-2:][::-1])
            if (minor is not None and minor < rank - 1 and next_to == rank - 1 and
                    dims[minor] in HOST_TRANSPOSED_SIZES):
                return minor
    return None


def host_walked_dims(comp: HloComputation) -> tuple[int, ...] | None:
    """For the CPU target alone: the dimensions of the root's operand where
    the root is a bitcast (or reshape) of it that only merges neighbouring
    dimensions of it (each of the root's dimensions the product of a run
    of the operand's), else None. The threads walk the operand's
    dimensions (the same elements in the same order) and the root's index
    is their linear combination: with the root's dimensions walked, its
    operand's index was a division and remainder of the root's merged
    dimension, which LLVM computed lane by lane, the loads gathered. A
    transformer's heads merged back, transpose(0, 2, 1, 3) of
    [8,12,512,64] reshaped to [8,512,768] (XLA:CPU's copy and bitcast),
    A/B on the same buffers: bf16 0.340 -> 0.101 ms (XLA:CPU 0.107), f32
    0.413 -> 0.257 (0.368); compiled in 15 ms instead of 29."""
    root = comp.root
    if root.opcode not in ("bitcast", "reshape") or not root.shape.is_array:
        return None
    operand = root.operands[0].shape
    if (not operand.is_array or operand.dims == root.shape.dims or
            not operand.has_default_layout or not root.shape.has_default_layout):
        return None
    fine = [d for d in operand.dims if d != 1]
    k = 0
    for merged in (d for d in root.shape.dims if d != 1):
        product = 1
        while product < merged and k < len(fine):
            product *= fine[k]
            k += 1
        if product != merged:
            return None
    return tuple(operand.dims) if k == len(fine) else None


def _dim_position(expr: ir.AffineExpr) -> int | None:
    """The position of a dimension expression (d3: 3); None for others."""
    expr = expr.maybe_downcast()
    return expr.position if isinstance(expr, ir.AffineDimExpr) else None


def host_row_map(emitter: EmitterBase, launch: LoopLaunch,
                 shape: tuple[int, ...]) -> IndexingMap:
    """The thread map of a host_row_launch of unroll_apart or past_row:
    block b takes row b (row-major over the leading dimensions), thread t
    its elements t + k * threads for unroll_id k that are in the row
    (unroll_apart), else t * unroll + k. Apart, the block's lanes lie side
    by side at each k, which the CPU target's lane loops load and store as
    whole vectors where the loop does not fold into the threads (with
    XLA's map, unfolded, each lane's elements were a stride-4 group that
    LLVM loaded with permutes and stored an element at a time: softmax
    over f32[1024,4096] through xla_gpu.jax.jit took 1.7x jax.jit's
    time). Where the loop folds into the threads, XLA's map is what makes
    the folded threads' elements neighbours."""
    unroll_id = ir.AffineSymbolExpr.get(0)
    minor = shape[len(shape) - launch.row_dims:]
    row, constraints = block_row(launch.dims, shape[:len(shape) - launch.row_dims])
    thread = ir.AffineDimExpr.get(0)
    column = (thread + unroll_id * launch.threads if launch.unroll_apart
              else thread * launch.unroll_factor + unroll_id)
    if launch.threads * launch.unroll_factor != prod(minor):
        constraints.append((column, (0, prod(minor) - 1)))
    return emitter.kernel_map(row + delinearize(column, minor),
                              [("unroll_id", 0, launch.unroll_factor - 1)],
                              constraints).simplify()


def block_row(dims: LaunchDimensions, rows: tuple[int, ...]
              ) -> tuple[list[ir.AffineExpr], list[tuple[ir.AffineExpr, tuple[int, int]]]]:
    """A grid of a block a row: block b (bl_y * blocks_x + bl_x) as an index
    of `rows` (row-major), and the constraint that cuts the blocks past
    them (none where the grid has as many blocks as rows)."""
    d = [ir.AffineDimExpr.get(i) for i in range(6)]
    block = d[4] * dims.block_counts[0] + d[3]
    count = prod(rows)
    constraints = [(block, (0, count - 1))] if dims.num_blocks != count else []
    return delinearize(block, rows), constraints


def default_thread_map(emitter: EmitterBase, dims: LaunchDimensions, unroll: int,
                       shape: tuple[int, ...], last: int | None = None) -> IndexingMap:
    """XLA's GetDefaultThreadIdIndexingMap: (th_x, th_y, th_z, bl_x, bl_y,
    bl_z)[chunk_id, unroll_id] -> the element of `shape` a thread handles:
    element ((bl_y * blocks_x + bl_x) * threads + th_x) * unroll +
    unroll_id of chunk chunk_id, row-major; chunks cover what one pass of
    the grid does not, and a constraint cuts a ragged tail. `last`: the
    elements in row-major order of `shape` with dimension `last` moved to
    the minor end (host_transposed_dim)."""
    d = [ir.AffineDimExpr.get(i) for i in range(6)]
    chunk, unroll_id = ir.AffineSymbolExpr.get(0), ir.AffineSymbolExpr.get(1)
    threads, blocks_x = dims.thread_counts_per_block[0], dims.block_counts[0]
    per_chunk = dims.num_blocks * threads * unroll
    n = prod(shape)
    chunks = max(1, -(-n // per_chunk))
    linear = chunk * per_chunk + ((d[4] * blocks_x + d[3]) * threads + d[0]) * unroll + unroll_id
    constraints = [(linear, (0, n - 1))] if per_chunk * chunks != n else []
    index = delinearize(linear, shape)
    if last is not None:
        order = [k for k in range(len(shape)) if k != last] + [last]
        walked = delinearize(linear, [shape[k] for k in order])
        index = [walked[order.index(k)] for k in range(len(shape))]
    return emitter.kernel_map(index,
                              [("chunk_id", 0, chunks - 1), ("unroll_id", 0, unroll - 1)],
                              constraints).simplify()


def shareable_operands(fusion: HloInstruction) -> list[int]:
    """The operands of loop fusion `fusion` its kernel may write its result
    over (XLA's buffer assignment shares an elementwise fusion's result
    with an operand nothing reads afterwards; so does xla_gpu.jax.jit):
    the one result has the operand's dimensions, layout and element width
    (of whole bytes), the operand is read once by the fusion, and every
    use of it leads to the root through elementwise ops alone. A thread
    then reads an element of it only to compute the same element of the
    result, before it writes that element, and no thread reads an element
    another writes."""
    comp, out = fusion.fused_computation, fusion.shape
    if (comp is None or not out.is_array or out.element_type.bits < 8 or
            analyze_fusion(fusion).kind != EmitterKind.LOOP):
        return []
    root = comp.root
    # Whether every path from an instruction to the root is elementwise ops
    # of the result's dimensions: users first, each instruction once (walked
    # path by path, a DAG of values read twice took time exponential in its
    # depth: jax.random's hash unrolled, 20 rounds each reading both halves,
    # never finished).
    to_root: dict[int, bool] = {}
    for inst in reversed(comp.topological_order()):
        to_root[id(inst)] = inst is root or (bool(inst.users) and all(
            u.opcode in ELEMENTWISE and u.shape.dims == out.dims and to_root.get(id(u), False)
            for u in inst.users))

    shareable = []
    for p in comp.parameters:
        k = p.parameter_number
        s = p.shape
        if (s.is_array and s.dims == out.dims and s.element_type.bits == out.element_type.bits
                and s.minor_to_major == out.minor_to_major and p is not root
                and sum(o is fusion.operands[k] for o in fusion.operands) == 1
                and to_root[id(p)]):
            shareable.append(k)
    return shareable


@register_emitter(EmitterKind.LOOP)
class LoopEmitter(EmitterBase):
    """Every output written through the same thread -> element map (roots
    of different shapes have one element count: XLA's loop fusions)."""

    def __init__(self, analysis: FusionAnalysis, device: DeviceDescription = DEFAULT_DEVICE):
        super().__init__(analysis, device)
        roots = self.output_roots()
        shape = roots[0].shape
        for r in roots[1:]:
            if r.shape.num_elements != shape.num_elements:
                raise EmitterError(r, f"a loop fusion's outputs have one element count: "
                                   f"{r.shape} has {r.shape.num_elements}, {roots[0].name} "
                                   f"{shape.num_elements}")
        self.output_shape = shape
        self.launch = loop_launch_dims(shape, device,
                                       may_prevent_vectorization(self.computation))
        # The output dimension the threads walk last (for_host), or None:
        # row-major.
        self.host_transposed: int | None = None
        # The dimensions the threads walk in the output's place (for_host:
        # host_walked_dims), or None.
        self.host_walk: tuple[int, ...] | None = None

    def for_host(self) -> None:
        """A kernel for the CPU target alone: a block a row where that
        keeps per-row values out of the lanes' gathers (host_row_launch);
        else the elements in the order of an input the output transposes
        a small dimension of (host_transposed_dim), or blocks that tile a
        batch of a reduce-window's output (host_whole_batch_launch), and
        a root bitcast's operand's dimensions walked where it merges them
        (host_walked_dims)."""
        rows = host_row_launch(self.computation, self.output_shape, self.launch, self.device)
        if rows is not None:
            self.launch = rows
            return
        self.host_transposed = host_transposed_dim(self.computation, self.output_shape)
        self.launch = host_split_launch(self.computation, self.output_shape, self.launch,
                                        self.device)
        if self.host_transposed is None:
            self.launch = host_whole_batch_launch(self.computation, self.output_shape,
                                                  self.launch, self.device)
            self.host_walk = host_walked_dims(self.computation)

    def launch_dims(self) -> LaunchDimensions:
        return self.launch.dims

    def thread_to_output_map(self, root_index: int = 0) -> IndexingMap:
        root = self.output_roots()[root_index]
        if root.shape.num_elements == 0:
            raise EmitterError(root, "the output has no elements, no thread writes one")
        if self.launch.unroll_apart or self.launch.past_row:
            return host_row_map(self, self.launch, root.shape.dims)
        if self.host_walk is not None:
            return self._walked_map().then(
                bitcast_map(self.host_walk, tuple(root.shape.dims))).simplify()
        return default_thread_map(self, self.launch.dims, self.launch.unroll_factor,
                                  root.shape.dims, last=self.host_transposed)

    def thread_to_input_map(self, root_index: int, hero_operand_index: int
                            ) -> IndexingMap | None:
        root = self.output_roots()[root_index]
        hero = self.analysis.hero_of(root)
        to_hero = indexing_from(self.computation, root, root.shape.dims).get(id(hero), [])
        reads = output_to_input_indexing(hero)
        if len(to_hero) != 1 or not 0 <= hero_operand_index < len(reads) or \
                len(reads[hero_operand_index]) != 1:
            return None
        return self.thread_to_output_map(root_index).then(to_hero[0]).then(
            reads[hero_operand_index][0])

    def emit_entry_function(self, entry: func.FuncOp, call_targets: CallTargets) -> None:
        roots = self.output_roots()
        params = list(entry.arguments)[: len(self.params)]
        outs = list(entry.arguments)[len(self.params):]
        root_subgraph = call_targets.subgraph_of(roots[0])
        walk = self.host_walk
        to_root = (bitcast_map(walk, tuple(self.output_shape.dims)) if walk is not None
                   else None)
        with ir.InsertionPoint(entry.entry_block):
            def body(ivs, index, iters):
                if to_root is not None:
                    index = apply_map(to_root, index)
                values = call_targets.call_all(root_subgraph, params, index)
                by_root = dict(zip((id(r) for r in root_subgraph.roots), values))
                written = []
                for r, t in zip(roots, iters):
                    written.append(tensor.insert(by_root[id(r)], t, self._index_of(r, index)))
                return written

            loop_map = self.thread_to_output_map(0) if walk is None else self._walked_map()
            func.ReturnOp(self.emit_kernel_loop(loop_map, outs, body, keep_symbols=(1,)))

    def _walked_map(self) -> IndexingMap:
        """The thread map over host_walk's dimensions."""
        return default_thread_map(self, self.launch.dims, self.launch.unroll_factor,
                                  self.host_walk)

    def _index_of(self, root: HloInstruction, index: list[ir.Value]) -> list[ir.Value]:
        """The element of `root` at the first output's `index`: the same
        linear position (a bitcast) when the shapes differ."""
        first = self.output_shape
        if root.shape.dims == first.dims:
            return index
        return apply_map(bitcast_map(first.dims, root.shape.dims), index)

