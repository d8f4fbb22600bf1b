"""Fusion analysis, the part of XLA's HloFusionAnalysis that picks the
emitter: each output's hero -- the instruction that decides how the fusion
is emitted -- is found by walking up from the output through trivial ops
(FindNonTrivialHero), and the heroes decide the emitter kind."""

from __future__ import annotations

import contextlib
import contextvars
import enum
from dataclasses import dataclass

from ..hlo import Attribute, HloComputation, HloInstruction
from ..hlo.opcodes import ELEMENTWISE

__all__ = ["EmitterKind", "FusionAnalysis", "ReductionDimensions", "TransposeDescription",
           "analyze_fusion", "broadcasts_along", "find_consistent_transpose_hero", "find_hero",
           "flag_set", "host_short_rows", "is_real_reduction_hero",
           "is_reduction_from_or_to_contiguous", "normalized_transpose", "reduction_dimensions",
           "tiled_transpose_description", "with_tuple_of_outputs"]


class EmitterKind(enum.Enum):
    """XLA's seven emitter kinds (EmitterFusionKind, the MLIR emitters')."""

    LOOP = "loop"
    TRANSPOSE = "transpose"
    REDUCTION = "reduction"
    SCATTER = "scatter"
    CONCATENATE = "concatenate"
    IN_PLACE_DYNAMIC_UPDATE_SLICE = "in-place dynamic-update-slice"
    INPUT_SLICES = "input slices"

# XLA's thresholds for the tiled transpose (ir_emission_utils.h): both
# swapped dimensions at least kMinDimensionToTransposeTiled, or both at
# least kMinDimensionToTransposeTiled2 and their product at least
# kMinTotalDimensionsToTransposeTiled; a 102 transpose (minor dimension
# kept) only when the kept minor dimension is at most
# kMaxBytesInMostMinorDimension bytes (it is part of the shared tile).
kMinDimensionToTransposeTiled = 16
kMinDimensionToTransposeTiled2 = 8
kMinTotalDimensionsToTransposeTiled = 64 * 128
kMaxBytesInMostMinorDimension = 8


def normalized_transpose(operand_dims: tuple[int, ...], permutation: tuple[int, ...]
                         ) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """XLA's TransposeDimensionGrouper (GetNormalizedLogicalTransposeShape):
    the operand's dimensions without unit ones, runs of operand dimensions
    that stay adjacent and in order in the output merged into one, and the
    permutation over the merged dimensions. A permutation of fewer than two
    dimensions moves no element: a bitcast."""
    kept = [d for d in permutation if operand_dims[d] != 1]
    # Operand dimensions (non-unit) in output order, grouped into runs.
    groups: list[list[int]] = []
    for d in kept:
        if groups and groups[-1][-1] == _previous_non_unit(operand_dims, d):
            groups[-1].append(d)
        else:
            groups.append([d])
    order = sorted(range(len(groups)), key=lambda g: groups[g][0])
    dims = tuple(prod_of(operand_dims[d] for d in groups[g]) for g in order)
    position = {g: k for k, g in enumerate(order)}
    return dims, tuple(position[g] for g in range(len(groups)))


def _previous_non_unit(dims: tuple[int, ...], d: int) -> int | None:
    for e in range(d - 1, -1, -1):
        if dims[e] != 1:
            return e
    return None


def prod_of(values) -> int:
    n = 1
    for v in values:
        n *= v
    return n


@dataclass(frozen=True)
class TransposeDescription:
    """XLA's TransposeDescription: a transpose as its normalized output
    dimensions and permutation (output dimension i is operand dimension
    permutation[i])."""

    instr: HloInstruction
    dimensions: tuple[int, ...]
    permutation: tuple[int, ...]

    @property
    def input_shape(self) -> tuple[int, ...]:
        """The normalized operand dimensions."""
        dims = [0] * len(self.dimensions)
        for i, p in enumerate(self.permutation):
            dims[p] = self.dimensions[i]
        return tuple(dims)

    def is_equivalent(self, other: "TransposeDescription") -> bool:
        return self.dimensions == other.dimensions and self.permutation == other.permutation


# XLA's packed transpose (ir_emission_utils: TransposeSpec,
# GetPackedTransposeTileSizes): shared memory of 32 banks of 32 bits.
kNumShmemBanks = 32
kBankBitwidth = 32
# Below this many populated rows or columns (times the vector size) a
# packed tile is too empty to pay.
kMinPopulatedPerVector = 10


def element_bits(inst: HloInstruction) -> int:
    """XLA's GetBitwidth: a predicate is a byte."""
    etype = inst.shape.element_type
    return 8 if etype.is_pred else etype.bits


@dataclass(frozen=True)
class TransposeSpec:
    """XLA's TransposeSpec: the canonical `[.., T2, .., A, T1, B]` ->
    `[.., T1, .., A, T2, B]` form of a (normalized) transpose."""

    canonical_output_shape: tuple[int, ...]
    canonical_permutation: tuple[int, ...]
    canonical_inv_permutation: tuple[int, ...]
    canonical_input_shape: tuple[int, ...]

    @property
    def rank(self) -> int:
        return len(self.canonical_input_shape)

    @property
    def a_id(self) -> int:
        return self.rank - 3

    @property
    def t1_input_id(self) -> int:
        return self.rank - 2

    @property
    def t1_output_id(self) -> int:
        return self.canonical_inv_permutation[self.rank - 2]

    @property
    def t2_input_id(self) -> int:
        return self.canonical_permutation[self.rank - 2]

    @property
    def t2_output_id(self) -> int:
        return self.rank - 2

    @property
    def dim_a(self) -> int:
        return self.canonical_input_shape[self.a_id]

    @property
    def dim_b(self) -> int:
        return self.canonical_input_shape[-1]

    @property
    def dim_t1(self) -> int:
        return self.canonical_input_shape[self.t1_input_id]

    @property
    def dim_t2(self) -> int:
        return self.canonical_input_shape[self.t2_input_id]


def _inverse_permutation(permutation) -> list[int]:
    inv = [0] * len(permutation)
    for i, p in enumerate(permutation):
        inv[p] = i
    return inv


def transpose_spec(desc: TransposeDescription) -> TransposeSpec:
    """XLA's GetTransposeSpec on the normalized transpose `desc`."""
    output = list(desc.dimensions)
    perm = list(desc.permutation)
    # A transposed minor dimension: a unit B dimension after it.
    if perm[-1] != len(output) - 1:
        perm.append(len(output))
        output.append(1)
    dim_t1 = next(i for i in range(len(perm) - 1, -1, -1) if perm[i] != i)
    rank = len(output)
    # A unit A dimension where T1 has none beside it.
    if perm[rank - 3] != rank - 3:
        output.insert(dim_t1, 1)
        perm = [p + 1 if p > rank - 3 else p for p in perm]
        perm.insert(dim_t1, dim_t1)
    inv = _inverse_permutation(perm)
    return TransposeSpec(tuple(output), tuple(perm), tuple(inv), tuple(output[p] for p in inv))


def packed_tile_sizes(spec: TransposeSpec, bits: int) -> list[int] | None:
    """XLA's GetPackedTransposeTileSizes: the block's tile in the canonical
    output's dimensions, or None where the packed transpose does not apply
    (XLA's reasons: too wide an element, too empty a tile, a kept minor
    dimension, or sizes the tile does not divide)."""
    if not 8 <= bits < kBankBitwidth:   # sub-byte types: not here (see above)
        return None
    v = kBankBitwidth // bits
    shmem_dim = kNumShmemBanks * v
    tile_t1 = min(spec.dim_t1, shmem_dim)
    tile_a = min(spec.dim_a, shmem_dim // tile_t1)
    tile_t2 = min(spec.dim_t2, shmem_dim)
    rows, cols = tile_t2, tile_a * tile_t1
    if cols < kMinPopulatedPerVector * v or rows < kMinPopulatedPerVector * v:
        return None
    if spec.dim_b != 1 or rows % v or cols % v or spec.dim_t2 % tile_t2 % v:
        return None
    tiles = [1] * spec.rank
    tiles[spec.t1_output_id] = tile_t1
    tiles[spec.t2_output_id] = tile_t2
    tiles[spec.a_id] = tile_a
    return tiles


def tiled_transpose_description(inst: HloInstruction) -> TransposeDescription | None:
    """XLA's GetDescriptionForTiledTransposeEmitter: a transpose the tiled
    transpose emitter takes, described on its normalized dimensions."""
    if inst.opcode != "transpose" or inst.operands[0].shape.element_type is None:
        return None
    operand_dims, perm = normalized_transpose(inst.operands[0].shape.dims,
                                              tuple(inst.dimensions))
    if len(perm) < 2:
        return None
    dims = tuple(operand_dims[p] for p in perm)
    desc = TransposeDescription(inst, dims, perm)
    # XLA takes every transpose its packed tile applies to, whatever the
    # thresholds below say.
    if packed_tile_sizes(transpose_spec(desc), element_bits(inst)) is not None:
        return desc
    if perm[-1] == len(perm) - 1:
        # 102: the kept minor dimension travels with each tile element.
        byte_width = max(1, inst.shape.element_type.bits // 8)
        minor_bytes = byte_width * dims[-1]
        swapped = min(operand_dims[-2], dims[-2])
        if minor_bytes <= kMaxBytesInMostMinorDimension and \
                minor_bytes * swapped >= kMinDimensionToTransposeTiled:
            return desc
        return None
    operand_minor, output_minor = operand_dims[-1], dims[-1]
    if (operand_minor >= kMinDimensionToTransposeTiled and
            output_minor >= kMinDimensionToTransposeTiled) or \
            (operand_minor >= kMinDimensionToTransposeTiled2 and
             output_minor >= kMinDimensionToTransposeTiled2 and
             operand_minor * output_minor >= kMinTotalDimensionsToTransposeTiled):
        return desc
    return None


def _is_bitcast_transpose(inst: HloInstruction) -> bool:
    """A transpose that moves only unit dimensions (row-major layouts)."""
    dims = inst.operands[0].shape.dims
    kept = [d for d in inst.dimensions if dims[d] != 1]
    return kept == sorted(kept)


def is_intermediate(inst: HloInstruction, allowed_operand_count: int = 1) -> bool:
    """XLA's IsIntermediate: ops that pass their operands on element by
    element or as a bitcast, with at most `allowed_operand_count`
    operands: the hero lies beyond them. An element of a variadic reduce
    (get-tuple-element) leads to the reduce, XLA's hero of such an output."""
    if not 1 <= len(inst.operands) <= allowed_operand_count:
        return False
    if inst.opcode in ELEMENTWISE or inst.opcode in ("bitcast", "reshape"):
        return True
    if inst.opcode == "get-tuple-element":
        return inst.operands[0].opcode == "reduce"
    return inst.opcode == "transpose" and _is_bitcast_transpose(inst)


def _unique_hero_above(start: HloInstruction, is_hero) -> HloInstruction | None:
    """XLA's FindNonTrivialHero(root, predicate): the one instruction
    satisfying `is_hero` reached from `start` through intermediate ops of
    up to three operands (consumers first), provided nothing but
    intermediate ops (and the tuple) lies between it and the outputs;
    None when there is none or more than one."""
    hero, seen, queue = None, set(), [start]
    while queue:
        node = queue.pop(0)
        if id(node) in seen:
            continue
        seen.add(id(node))
        if is_hero(node):
            if hero is not None:
                return None
            hero = node
            continue
        if is_intermediate(node, 3):
            queue.extend(node.operands)
    if hero is None:
        return None
    seen, queue = set(), list(hero.users)
    while queue:
        node = queue.pop(0)
        if id(node) in seen:
            continue
        seen.add(id(node))
        if node.opcode not in ("tuple", "parameter") and not is_intermediate(node, 3):
            return None
        queue.extend(node.users)
    return hero


def _scalar_constant(inst: HloInstruction) -> bool:
    """A scalar constant, or a broadcast of one."""
    if inst.opcode == "broadcast":
        inst = inst.operands[0]
    return inst.opcode == "constant" and inst.shape.is_array and inst.shape.rank == 0


# How deep passed_by looks into the ops that make an operand.
_PASSED_BY_DEPTH = 4


def passed_by(operand: HloInstruction, inst: HloInstruction, depth: int = 0) -> bool:
    """Whether `operand` of elementwise op `inst` is one _host_scaled
    passes by: made of no other instruction of the fusion but a scalar
    constant or parameter (or its broadcast: a mean's 1/n, passed in as
    XLA:CPU's `wrapped_broadcast`), parameters of `inst`'s dimensions,
    read at the element's own index (a row's max beside log(sum) in a
    log-sum-exp, m + log(s)), and elementwise ops of those dimensions on
    them (a max made finite, select(is-finite(m), m, 0))."""
    if _scalar_constant(operand) or (
            operand.opcode == "broadcast" and operand.operands[0].opcode == "parameter" and
            operand.operands[0].shape.is_array and operand.operands[0].shape.rank == 0):
        return True
    if operand.opcode == "parameter":
        return operand.shape.dims == inst.shape.dims
    return (depth < _PASSED_BY_DEPTH and operand.opcode in ELEMENTWISE and
            operand.shape.is_array and operand.shape.dims == inst.shape.dims and
            all(passed_by(o, operand, depth + 1) for o in operand.operands))


def _host_scaled(inst: HloInstruction) -> HloInstruction | None:
    """Within host_short_rows (the CPU target's kernels), the operand an
    elementwise op of two or more passes on where every other operand is
    one passed_by (a scalar constant: `multiply(reduce, broadcast(1/n))`,
    a mean's scaling; a row's value: m + log(sum)); None elsewhere. XLA's
    FindNonTrivialHero stops at such an op, and XLA:CPU's YNNPACK fusion of
    `x.mean(-1)`, whose root it is, was a loop fusion: its reduce taken
    out, the scaling a kernel of its own after it. With it, the
    reduction's epilogue (the reduction emitter's epilogue reads the
    fusion's parameters at the output's index): one kernel, the same bits
    (A/B through xla_gpu.jax.jit, means, norms and log-sum-exps over rows
    of 16 to 4096: 0.82-1.03x the time, but rsqrt(mean(x^2)) over rows
    of 64, 1.06-1.09x: its rsqrt a row on one lane). Stop 89 had measured
    the mean's 0.98-1.22x and left it; the reduction kernel's LLVM IR with
    the scaling is the sum's but for the one multiply, and the two ran the
    same time in one process (f32[4096,1000])."""
    if not _HOST_SHORT_ROWS.get() or inst.opcode not in ELEMENTWISE or len(inst.operands) < 2:
        return None
    rest = [o for o in inst.operands if not passed_by(o, inst)]
    if (len(rest) != 1 or rest[0].opcode == "parameter" or
            rest[0].shape.dims != inst.shape.dims):
        return None
    return rest[0]


def find_hero(root: HloInstruction) -> HloInstruction:
    """XLA's FindNonTrivialHero: up from `root` through one-operand
    intermediate ops, staying inside the fusion (parameters are outside);
    then, looking harder, a unique tiled transpose or concatenate reached
    through elementwise ops of several operands."""
    hero = root
    while True:
        if is_intermediate(hero) and hero.operands[0].opcode != "parameter":
            hero = hero.operands[0]
        elif (through := _host_scaled(hero)) is not None:
            hero = through
        else:
            break
    for is_hero in (lambda i: tiled_transpose_description(i) is not None,
                    lambda i: i.opcode == "concatenate"):
        found = _unique_hero_above(hero, is_hero)
        if found is not None:
            return found
    return hero


def _consecutive(positions: list[int]) -> bool:
    return positions == list(range(positions[0], positions[0] + len(positions)))


@dataclass(frozen=True)
class ReductionDimensions:
    """XLA's ReductionDimensions: a reduction as three contiguous groups of
    its operand's dimensions, major to minor. Row: [D, H, W] -> [H] (the
    minor W and the major D reduced); column: [D, H, W] -> [D, W]."""

    is_row_reduction: bool
    dimensions: tuple[int, int, int]

    @property
    def output_shape(self) -> tuple[int, ...]:
        d = self.dimensions
        return (d[1],) if self.is_row_reduction else (d[0], d[2])


# XLA's names of the three groups.
kRowMajorReduced, kRowKept, kRowMinorReduced = 0, 1, 2
kColMajorKept, kColReduced, kColMinorKept = 0, 1, 2
# XLA's MinThreadsXRowReduction: at most this many threads reduce a row.
kMinThreadsXRowReduction = 1024
# XLA's BatchedReductionRaceFreeBound: rows of a batched row reduction one
# thread loops over.
kBatchedReductionRaceFreeBound = 8
# XLA's reduction tiling: elements a thread reduces along a row (the
# minor reduced dimension), and along a column.
kRowReductionTileX = 16
kColumnReductionTileY = 128


def _non_unit(inst: HloInstruction) -> tuple[list[int], list[int], list[int]]:
    """The operand's non-unit dimensions, and which of them are reduced and
    kept (positions among the non-unit ones). Unit dimensions change no
    element's position: XLA's normalization passes drop them."""
    dims = inst.operands[0].shape.dims
    positions = [i for i in range(len(dims)) if dims[i] != 1]
    reduced = sorted(positions.index(i) for i in inst.dimensions if dims[i] != 1)
    kept = [positions.index(i) for i in positions if i not in inst.dimensions]
    return [dims[i] for i in positions], reduced, kept


def reduction_dimensions(inst: HloInstruction) -> ReductionDimensions:
    """XLA's GetReductionKindAndContiguousComponents (row-major layouts).
    Needs a reduce whose reduced or kept dimensions are adjacent."""
    sizes, reduced, kept = _non_unit(inst)

    def prod(group) -> int:
        n = 1
        for i in group:
            n *= sizes[i]
        return n

    def split(middle: list[int]) -> tuple[int, int, int]:
        """(major, middle, minor) element counts around adjacent `middle`."""
        if not middle:
            return (prod(range(len(sizes))), 1, 1)
        return (prod(range(middle[0])), prod(middle), prod(range(middle[-1] + 1, len(sizes))))

    if not kept:
        return ReductionDimensions(True, (1, 1, prod(range(len(sizes)))))
    if _consecutive(kept):
        major, middle, minor = split(kept)
        if middle == 1:
            return ReductionDimensions(True, (1, 1, major * minor))
        if minor == 1:
            return ReductionDimensions(False, (1, major, middle))
        return ReductionDimensions(True, (major, middle, minor))
    major, middle, minor = split(reduced)
    if minor == 1:
        return ReductionDimensions(True, (1, major, middle))
    return ReductionDimensions(False, (major, middle, minor))


def broadcasts_along(comp: HloComputation, dims: tuple[int, ...], axis: int) -> bool:
    """Whether `comp` broadcasts a value along dimension `axis` into an
    array of `dims` -- with `axis` the rows' minor dimension, a value of
    each row (a softmax's max); a scalar's broadcast is none."""
    return any(i.opcode == "broadcast" and i.shape.dims == dims and i.attr("dimensions") and
               axis not in i.attr("dimensions") for i in comp.instructions)


# Set while xla_gpu.jax.jit makes its kernels (host_short_rows).
_HOST_SHORT_ROWS = contextvars.ContextVar("xla_gpu_host_short_rows", default=False)


@contextlib.contextmanager
def flag_set(flag: contextvars.ContextVar):
    """A context within which the boolean `flag` is True (host_short_rows,
    reduction.host_xla_vectors)."""
    token = flag.set(True)
    try:
        yield
    finally:
        flag.reset(token)


def host_short_rows():
    """Within it, rows of more than half a warp and less than a warp (XLA
    leaves them to the loop emitter: a thread a row) are the reduction
    emitter's, a warp a row with its last lanes idle: on the CPU target a
    thread a row walked its row scalar (each step a gather across the
    lanes), where a warp's lanes load the row as one vector and its tree
    becomes vector folds. For the CPU target alone (xla_gpu.jax.jit's
    kernels); a valid GPU kernel either way. Through xla_gpu.jax.jit, A/B
    in one process: softmax(x).max(-1) over f32[43690,24] 1.97 -> 0.70 ms
    (jax.jit 0.68-0.75), -log_softmax(x).mean() 2.12 -> 0.93, the row
    max of f32[16384,28] 0.28 -> 0.11."""
    return flag_set(_HOST_SHORT_ROWS)


def is_unnested_reduction_faster_than_elemental(dims: ReductionDimensions,
                                                warp_size: int = 32) -> bool:
    """XLA's IsUnnestedReductionFasterThanElemental: rows at least a warp
    long (or a divisor of it: several rows a warp); columns neither short
    nor narrow (XLA's rule from a sweep of small column reductions)."""
    d = dims.dimensions
    if dims.is_row_reduction:
        if _HOST_SHORT_ROWS.get() and warp_size // 2 < d[2] < warp_size:
            return True
        return d[2] >= warp_size or warp_size % d[2] == 0
    major, minor = d[1], d[2]
    prefer_elemental = (major < warp_size or (major < 2 * warp_size and minor < warp_size) or
                        (major < 4 * warp_size and minor < 8) or
                        (major < 8 * warp_size and minor < 3))
    return not prefer_elemental


# The CPU target's column reductions of at most this many rows, each at
# least HOST_LOOP_COLUMN_LANES columns wide, are the loop emitter's
# (host_prefers_loop_for).
HOST_LOOP_COLUMN_ROWS = 1024
HOST_LOOP_COLUMN_LANES = 16


def host_prefers_loop_for(dims: ReductionDimensions) -> bool:
    """Whether a column reduction runs faster on the CPU target as a loop
    kernel (a thread an output, summing its column in order): at most
    HOST_LOOP_COLUMN_ROWS rows and at least HOST_LOOP_COLUMN_LANES columns.
    The lanes LLVM vectorizes are then adjacent columns, each step one
    vector load of a row, where the reduction emitter's block transposes
    its tile through shared memory and runs a tree over a warp's lanes for
    every 32 rows or fewer: f32[128,64,512] summed over its middle
    dimension 1.32 -> 0.16 ms, f32[64,32,128] 0.12 -> 0.014,
    f32[16,256,512] 0.15 -> 0.07, each compiled in half the time; up to
    1024 rows, the most a race-free column reduction has (jnp.mean(x, 0)
    through xla_gpu.jax.jit, f32[1000,4096] 0.84 -> 0.42 ms, f32[1000,512]
    0.14 -> 0.07; jax.jit 0.64-0.72 and 0.14). More rows the tree
    reduction splits first, and one thread's sum in order drifts further
    from XLA's; narrower columns leave the lanes of a vector in
    different rows of the batch (f32[200,500,10]: 0.16 -> 0.38 ms). A
    valid GPU kernel either way: XLA:GPU's loop emitter takes its small
    column reductions the same way."""
    d = dims.dimensions
    return (not dims.is_row_reduction and d[1] <= HOST_LOOP_COLUMN_ROWS and
            d[2] >= HOST_LOOP_COLUMN_LANES)


def is_reduction_from_or_to_contiguous(inst: HloInstruction, warp_size: int = 32) -> bool:
    """XLA's IsReductionFromOrToContiguousDimensions (row-major): the
    reduced or the kept dimensions (unit ones aside) are adjacent, and the
    reduction emitter beats a loop for its sizes. Such a reduce is the
    reduction emitter's; any other the loop emitter's."""
    # Nothing to reduce (a 0-element input): the init is the result, which
    # the loop emitter writes.
    if inst.opcode != "reduce" or inst.operands[0].shape.num_elements == 0:
        return False
    _, reduced, kept = _non_unit(inst)
    if not reduced:
        return False
    if not (_consecutive(reduced) or not kept or _consecutive(kept)):
        return False
    return is_unnested_reduction_faster_than_elemental(reduction_dimensions(inst), warp_size)


def reduction_is_race_free(dims: ReductionDimensions, warp_size: int = 32) -> bool:
    """XLA's ReductionIsRaceFree: one block computes each output element.
    XLA splits longer reductions first (TreeReductionRewriter); here the
    loop emitter takes them."""
    d = dims.dimensions
    if dims.is_row_reduction:
        return (d[2] <= kMinThreadsXRowReduction * kRowReductionTileX and
                d[0] <= kBatchedReductionRaceFreeBound)
    return d[1] <= warp_size * kColumnReductionTileY


def is_real_reduction_hero(hero: HloInstruction, warp_size: int = 32) -> bool:
    """XLA's IsRealReductionHero, for the emitters that use no atomics."""
    return (is_reduction_from_or_to_contiguous(hero, warp_size) and
            reduction_is_race_free(reduction_dimensions(hero), warp_size))


@dataclass(eq=False)
class FusionAnalysis:
    """What the emitters need to know about a fusion, computed once and
    handed to the emitter: its outputs (`roots`), each output's hero, and
    the emitter kind the heroes call for."""

    fusion: HloInstruction
    roots: list[HloInstruction]
    heroes: list[HloInstruction]
    kind: EmitterKind
    # The hero that decided `kind` (None for the loop emitter).
    deciding_hero: HloInstruction | None
    # The transpose every transposed output shares (the transpose kind).
    tiled_transpose: TransposeDescription | None = None

    @property
    def computation(self) -> HloComputation:
        return self.fusion.fused_computation

    def hero_of(self, root: HloInstruction) -> HloInstruction:
        return self.heroes[[r is root for r in self.roots].index(True)]


def with_tuple_of_outputs(comp: HloComputation) -> HloComputation:
    """A fusion whose root is a tuple-shaped instruction (a variadic
    reduction) in XLA's multi-output form: the root becomes a tuple of its
    get-tuple-elements, so that every output is an array instruction.
    Changes `comp` in place (the computation means the same); idempotent."""
    root = comp.root
    if root is None or root.opcode == "tuple" or not root.shape.is_tuple:
        return comp
    parts = []
    for k, leaf in enumerate(root.shape.leaves()):
        gte = HloInstruction(f"{root.name}.{k}", "get-tuple-element", leaf, operands=[root],
                             attributes={"index": Attribute("index", str(k), k)},
                             parent=comp, line=root.line, column=root.column)
        root.users.append(gte)
        parts.append(gte)
    tuple_root = HloInstruction(f"{root.name}.tuple", "tuple", root.shape, operands=parts,
                                parent=comp, line=root.line, column=root.column)
    for gte in parts:
        gte.users.append(tuple_root)
    comp.instructions += [*parts, tuple_root]
    comp.root = tuple_root
    return comp


# XLA's limit for the concatenate emitter: it emits code per operand, and
# more operands hurt occupancy (UseConcatenateFusion).
kMaxConcatenateOperands = 4


def _is_input_slices(roots: list[HloInstruction]) -> bool:
    """XLA's IsInputFusibleNonStridedSlices + AllSliceInputsAreCompatible:
    every output a unit-stride slice, of operands of one shape."""
    if not all(r.opcode == "slice" for r in roots):
        return False
    for r in roots:
        strides = r.attr("slice")
        if isinstance(strides, list) and any(len(s) > 2 and s[2] != 1 for s in strides):
            return False
    return len({r.operands[0].shape.dims for r in roots}) == 1


def find_consistent_transpose_hero(roots: list[HloInstruction], heroes: list[HloInstruction]
                                   ) -> TransposeDescription | None:
    """XLA's FindConsistentTransposeHero: the tiled transpose of the
    transposed outputs, when they all have one (normalized dimensions and
    permutation) and every other output has the transpose's input element
    count (a bitcast of it: written from the same tile)."""
    found = None
    others = []
    for root, hero in zip(roots, heroes):
        desc = tiled_transpose_description(hero)
        if desc is None:
            others.append(root)
        elif found is None:
            found = desc
        elif not found.is_equivalent(desc):
            return None
    if found is None:
        return None
    elements = prod_of(found.input_shape)
    if any(not r.shape.is_array or r.shape.num_elements != elements for r in others):
        return None
    return found


def analyze_fusion(fusion: HloInstruction) -> FusionAnalysis:
    """XLA's emitter choice for a fusion instruction (GetEmitterFusionKind,
    in its order): a scatter root -> scatter; packed sub-byte types ->
    input slices or loop; a reduction hero whose fusion's other outputs
    have the reduced operand's element count -> reduction; a tiled
    transpose -> transpose; several outputs -> input slices or loop; a
    concatenate of at most 4 operands -> concatenate; else loop, which
    is the in-place DUS emitter when every output is a dynamic-update-slice.
    Kinds whose emitter is not built fall back to the loop emitter where it
    is correct (see registry.py)."""
    comp = fusion.fused_computation
    roots = comp.outputs
    heroes = [find_hero(r) for r in roots]

    def result(kind: EmitterKind, hero: HloInstruction | None = None) -> FusionAnalysis:
        return FusionAnalysis(fusion, roots, heroes, kind, hero)

    shapes = [p.shape for p in comp.parameters] + [r.shape for r in roots]
    # A scatter of packed sub-byte types too (XLA's emitters since 2025):
    # its atomics update whole bytes.
    if len(roots) == 1 and roots[0].opcode == "scatter":
        return result(EmitterKind.SCATTER, roots[0])
    if any(s.is_array and s.element_type.bits < 8 for s in shapes):
        multi_slices = len(roots) > 1 and _is_input_slices(roots)
        return result(EmitterKind.INPUT_SLICES if multi_slices else EmitterKind.LOOP)
    reduction = next((h for h in heroes if is_real_reduction_hero(h)), None)
    if reduction is not None:
        # XLA: every other output is a compatible reduction or has the
        # reduced operand's element count (written by the same threads).
        operand_elements = reduction.operands[0].shape.num_elements
        dims = reduction_dimensions(reduction)
        if all(reduction_dimensions(h) == dims if is_real_reduction_hero(h)
               else r.shape.num_elements == operand_elements for r, h in zip(roots, heroes)):
            return result(EmitterKind.REDUCTION, reduction)
    transpose = find_consistent_transpose_hero(roots, heroes)
    if transpose is not None:
        return FusionAnalysis(fusion, roots, heroes, EmitterKind.TRANSPOSE, transpose.instr,
                              transpose)
    # XLA's loop kind becomes the in-place DUS emitter when every output is
    # a dynamic-update-slice (IsDynamicUpdateSliceFusion).
    if all(h.opcode == "dynamic-update-slice" for h in heroes):
        loop = result(EmitterKind.IN_PLACE_DYNAMIC_UPDATE_SLICE, heroes[0])
    else:
        loop = result(EmitterKind.LOOP)
    if len(roots) > 1:
        return result(EmitterKind.INPUT_SLICES) if _is_input_slices(roots) else loop
    if heroes[0].opcode == "concatenate" and len(heroes[0].operands) <= kMaxConcatenateOperands:
        return result(EmitterKind.CONCATENATE, heroes[0])
    return loop
