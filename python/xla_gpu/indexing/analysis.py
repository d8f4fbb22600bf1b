"""Output-to-input and input-to-output indexing maps of HLO instructions.

Every map has the output's (or input's) dimensions as its dimensions, with
the shape's bounds as their ranges. Reductions and windows add range
symbols for the dimensions they iterate; dynamic offsets are runtime
variables. Maps come simplified (the IndexingMap algebra): a reshape's
linearised index collapses back to plain dimensions wherever it can.
"""

from __future__ import annotations

import weakref
from typing import Callable, Sequence

from mlir import ir

from ..hlo import HloInstruction, Shape
from ..hlo.opcodes import ELEMENTWISE
from ..indexing_map import IndexingMap

__all__ = [
    "IndexingError",
    "delinearize",
    "identity_map",
    "input_to_output_indexing",
    "output_to_input_indexing",
]

# One entry per operand: the (deduplicated) maps by which the output reads it.
OperandMaps = list[list[IndexingMap]]


class IndexingError(ValueError):
    """An instruction whose indexing is not defined here (with the reason)."""

    def __init__(self, instr: HloInstruction, reason: str):
        self.instruction = instr
        self.reason = reason
        super().__init__(f"{instr.name} ({instr.opcode}): {reason}")


class MalformedInstructionError(IndexingError):
    """The instruction's attributes do not fit its shapes (malformed HLO),
    as opposed to a well-formed instruction this analysis does not cover."""


# -- small builders -------------------------------------------------------------


def _dim(i: int) -> ir.AffineExpr:
    return ir.AffineDimExpr.get(i)


def _sym(i: int) -> ir.AffineExpr:
    return ir.AffineSymbolExpr.get(i)


def _const(c: int) -> ir.AffineExpr:
    return ir.AffineConstantExpr.get(c)


def _floordiv(e: ir.AffineExpr, c: int) -> ir.AffineExpr:
    return ir.AffineExpr.get_floor_div(e, _const(c))


def _bounds(dims: Sequence[int]) -> list[tuple[int, int]]:
    return [(0, d - 1) for d in dims]


class _MalformedMap(ValueError):
    """A rule built an expression over a variable the map does not have
    (the instruction's attributes do not fit its shapes)."""


def _check_positions(expr: ir.AffineExpr, num_dims: int, num_symbols: int) -> None:
    """MLIR asserts (aborts) on such a map: checked here first, without
    recursion."""
    stack = [expr]
    while stack:
        e = stack.pop().maybe_downcast()
        if isinstance(e, ir.AffineDimExpr):
            if e.position >= num_dims:
                raise _MalformedMap(f"d{e.position} of {num_dims} dimensions")
        elif isinstance(e, ir.AffineSymbolExpr):
            if e.position >= num_symbols:
                raise _MalformedMap(f"s{e.position} of {num_symbols} symbols")
        elif isinstance(e, ir.AffineBinaryExpr):
            stack += [e.lhs, e.rhs]


def _map(num_dims: int, results: Sequence[ir.AffineExpr], dim_ranges,
         range_ranges=(), runtime_ranges=(), constraints=()) -> IndexingMap:
    n_syms = len(range_ranges) + len(runtime_ranges)
    for e in [*results, *(c for c, _ in constraints)]:
        _check_positions(e, num_dims, n_syms)
    ranges = [*dim_ranges, *range_ranges, *runtime_ranges]
    if any(lo > hi for lo, hi in ranges):
        # A 0-element dimension or window (a reduce of f32[0]): XLA's
        # known-empty map, every variable in [0, -1] and every result 0.
        zero = ir.AffineConstantExpr.get(0)
        empty = (0, -1)
        return IndexingMap.get(ir.AffineMap.get(num_dims, n_syms, [zero] * len(results)),
                               [empty] * len(dim_ranges), [empty] * len(range_ranges),
                               [empty] * len(runtime_ranges), [])
    affine = ir.AffineMap.get(num_dims, n_syms, list(results))
    return IndexingMap.get(affine, list(dim_ranges), list(range_ranges),
                           list(runtime_ranges), list(constraints)).simplify()


def _array_shape(instr: HloInstruction, shape: Shape) -> Shape:
    if not shape.is_array:
        raise IndexingError(instr, f"shape {shape} is not an array")
    return shape


def _output_shape(instr: HloInstruction, output_id: int) -> Shape:
    if instr.shape.is_tuple:
        leaves = instr.shape.leaves()
        if not 0 <= output_id < len(leaves):
            raise IndexingError(instr, f"output {output_id} does not exist")
        return leaves[output_id]
    return _array_shape(instr, instr.shape)


# Maps every fusion asks for again and again (an elementwise chain's
# identities, its scalar constants' reads), made once a context: each is an
# immutable attribute of its context. The erf GELU's 150-op fusion built
# ~150 of them, a third of its emission.
_MADE: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _once(key: tuple, make: Callable[[], IndexingMap]) -> IndexingMap:
    made = _MADE.setdefault(ir.Context.current, {})
    m = made.get(key)
    if m is None:
        m = made[key] = make()
    return m


def identity_map(dims: Sequence[int]) -> IndexingMap:
    """The identity map on an array of shape `dims` (XLA's CreateIdentityMap)."""
    return _once(("identity", *dims), lambda: _map(len(dims), [_dim(i) for i in range(len(dims))],
                                                   _bounds(dims)))


def _scalar_read(dims: Sequence[int]) -> IndexingMap:
    """Every output element reads the one element of a scalar."""
    return _once(("scalar", *dims), lambda: _map(len(dims), [], _bounds(dims)))


def _linearize(index: Sequence[ir.AffineExpr], dims: Sequence[int]) -> ir.AffineExpr:
    linear = _const(0)
    for e, d in zip(index, dims):
        linear = linear * d + e
    return linear


def delinearize(linear: ir.AffineExpr, dims: Sequence[int]) -> list[ir.AffineExpr]:
    """The row-major index into an array of shape `dims` of element `linear`."""
    out, stride = [], 1
    strides = []
    for d in reversed(dims):
        strides.append(stride)
        stride *= d
    strides.reverse()
    for d, s in zip(dims, strides):
        e = _floordiv(linear, s) if s != 1 else linear
        out.append(e % d if s * d != stride else e)
    return out


# -- output to input ------------------------------------------------------------

_RULES: dict[str, Callable[[HloInstruction, Shape], OperandMaps]] = {}


def _rule(*opcodes):
    def register(fn):
        for op in opcodes:
            _RULES[op] = fn
        return fn
    return register


def _elementwise(instr: HloInstruction, out: Shape) -> OperandMaps:
    maps = []
    identity = None  # one map for the operands of the output's shape
    for op in instr.operands:
        if op.shape.is_array and op.shape.rank == 0 and out.rank > 0:
            maps.append([_scalar_read(out.dims)])  # clamp/select scalar operands
        elif op.shape.is_array and op.shape.dims == out.dims:
            if identity is None:
                identity = identity_map(out.dims)
            maps.append([identity])
        else:
            raise IndexingError(instr, f"operand {op.name} of shape {op.shape} does not "
                                f"match the output {out}")
    return maps


@_rule("broadcast")
def _broadcast(instr, out):
    dims = instr.dimensions
    return [[_once(("broadcast", *out.dims, None, *dims),
                   lambda: _map(out.rank, [_dim(d) for d in dims], _bounds(out.dims)))]]


@_rule("transpose")
def _transpose(instr, out):
    perm = instr.dimensions
    inverse = [perm.index(j) for j in range(len(perm))]
    return [[_map(out.rank, [_dim(i) for i in inverse], _bounds(out.dims))]]


@_rule("reshape")
def _reshape(instr, out):
    operand = _array_shape(instr, instr.operands[0].shape)
    linear = _linearize([_dim(i) for i in range(out.rank)], out.dims)
    return [[_map(out.rank, delinearize(linear, operand.dims), _bounds(out.dims))]]


def _physical_order(shape: Shape) -> list[int]:
    """Logical dimensions from major to minor."""
    return list(reversed(shape.minor_to_major))


@_rule("bitcast")
def _bitcast(instr, out):
    operand = _array_shape(instr, instr.operands[0].shape)
    if operand.num_elements != out.num_elements:
        raise IndexingError(instr, "a bitcast that changes the number of elements")
    out_order, in_order = _physical_order(out), _physical_order(operand)
    linear = _linearize([_dim(i) for i in out_order], [out.dims[i] for i in out_order])
    physical = delinearize(linear, [operand.dims[i] for i in in_order])
    logical: list = [None] * operand.rank
    for pos, dim in enumerate(in_order):
        logical[dim] = physical[pos]
    return [[_map(out.rank, logical, _bounds(out.dims))]]


@_rule("slice")
def _slice(instr, out):
    ranges = instr.attr("slice")
    results = [_dim(i) * stride + start for i, (start, _, stride) in enumerate(ranges)]
    return [[_map(out.rank, results, _bounds(out.dims))]]


@_rule("reverse")
def _reverse(instr, out):
    rev = set(instr.dimensions)
    results = [(_const(out.dims[i] - 1) - _dim(i)) if i in rev else _dim(i)
               for i in range(out.rank)]
    return [[_map(out.rank, results, _bounds(out.dims))]]


@_rule("pad")
def _pad(instr, out):
    operand = _array_shape(instr, instr.operands[0].shape)
    results, constraints = [], []
    for i, (lo, _, interior) in enumerate(instr.attr("padding")):
        shifted = _dim(i) - lo
        step = interior + 1
        results.append(_floordiv(shifted, step) if step > 1 else shifted)
        # Reads the operand only where the position is not padding.
        constraints.append((shifted, (0, (operand.dims[i] - 1) * step)))
        if step > 1:
            constraints.append((shifted % step, (0, 0)))
    return [[_map(out.rank, results, _bounds(out.dims), constraints=constraints)],
            [_scalar_read(out.dims)]]


@_rule("concatenate")
def _concatenate(instr, out):
    axis = instr.dimensions[0]
    maps, offset = [], 0
    for op in instr.operands:
        size = op.shape.dims[axis]
        results = [_dim(i) - offset if i == axis else _dim(i) for i in range(out.rank)]
        ranges = _bounds(out.dims)
        ranges[axis] = (offset, offset + size - 1)
        maps.append([_map(out.rank, results, ranges)])
        offset += size
    return maps


@_rule("iota", "parameter", "constant", "rng-get-and-update-state")
def _no_operands(instr, out):
    return [[] for _ in instr.operands]


@_rule("dynamic-slice")
def _dynamic_slice(instr, out):
    operand = _array_shape(instr, instr.operands[0].shape)
    # The start indices are clamped to [0, dim - size]: runtime variables.
    rt = [(0, d - s) for d, s in zip(operand.dims, out.dims)]
    results = [_dim(i) + _sym(i) for i in range(out.rank)]
    maps = [[_map(out.rank, results, _bounds(out.dims), runtime_ranges=rt)]]
    maps += [[_scalar_read(out.dims)] for _ in instr.operands[1:]]
    return maps


@_rule("dynamic-update-slice")
def _dynamic_update_slice(instr, out):
    update = _array_shape(instr, instr.operands[1].shape)
    rt = [(0, d - u) for d, u in zip(out.dims, update.dims)]
    results = [_dim(i) - _sym(i) for i in range(out.rank)]
    constraints = [(_dim(i) - _sym(i), (0, u - 1)) for i, u in enumerate(update.dims)]
    maps = [[identity_map(out.dims)],
            [_map(out.rank, results, _bounds(out.dims), runtime_ranges=rt,
                  constraints=constraints)]]
    maps += [[_scalar_read(out.dims)] for _ in instr.operands[2:]]
    return maps


@_rule("gather")
def _gather(instr, out):
    operand = _array_shape(instr, instr.operands[0].shape)
    indices = _array_shape(instr, instr.operands[1].shape)
    offset_dims = instr.attr("offset_dims", [])
    start_index_map = instr.attr("start_index_map", [])
    canonical = (instr.attr("collapsed_slice_dims", []) == [] and
                 instr.attr("index_vector_dim") == 1 and indices.rank == 2 and
                 offset_dims == list(range(1, operand.rank + 1)) and
                 not instr.attr("operand_batching_dims", []))
    if not canonical:
        raise IndexingError(instr, "gather is not in the canonical form of XLA's gather "
                            "simplifier (indices [N, k], index_vector_dim=1, "
                            "offset_dims={1..rank}, no collapsed dims)")
    slice_sizes = instr.attr("slice_sizes")
    if (not isinstance(start_index_map, list) or len(set(start_index_map)) != len(start_index_map)
            or any(not 0 <= j < operand.rank for j in start_index_map)
            or len(start_index_map) != indices.dims[1]):
        raise MalformedInstructionError(
            instr, f"start_index_map={instr.attributes['start_index_map'].text} must name "
            f"{indices.dims[1]} distinct dimensions of the operand {operand} (one per index)")
    if (not isinstance(slice_sizes, list) or len(slice_sizes) != operand.rank or
            any(not 0 <= n <= d for n, d in zip(slice_sizes, operand.dims))):
        raise MalformedInstructionError(
            instr, f"slice_sizes={instr.attributes['slice_sizes'].text} do not fit the operand "
            f"{operand}")
    rt_ranges, results = [], []
    for j in range(operand.rank):
        if j in start_index_map:
            rt_ranges.append((0, operand.dims[j] - slice_sizes[j]))
            results.append(_dim(j + 1) + _sym(len(rt_ranges) - 1))
        else:
            results.append(_dim(j + 1))
    operand_map = _map(out.rank, results, _bounds(out.dims), runtime_ranges=rt_ranges)
    indices_map = _map(out.rank, [_dim(0), _sym(0)], _bounds(out.dims),
                       range_ranges=[(0, indices.dims[1] - 1)])
    return [[operand_map], [indices_map]]


@_rule("get-tuple-element")
def _get_tuple_element(instr, out):
    """An element of a variadic reduction's result: the same index (the
    reduction's results share their shape)."""
    return [[identity_map(out.dims)]]


@_rule("reduce")
def _reduce(instr, out_leaf):
    n = len(instr.operands) // 2
    operand = _array_shape(instr, instr.operands[0].shape)
    reduced = instr.dimensions
    out_dims = [d for i, d in enumerate(operand.dims) if i not in reduced]
    results, kept, syms = [], 0, []
    for i, d in enumerate(operand.dims):
        if i in reduced:
            results.append(_sym(len(syms)))
            syms.append((0, d - 1))
        else:
            results.append(_dim(kept))
            kept += 1
    input_map = _map(len(out_dims), results, _bounds(out_dims), range_ranges=syms)
    return [[input_map] for _ in range(n)] + [[_scalar_read(out_dims)] for _ in range(n)]


@_rule("reduce-window")
def _reduce_window(instr, out_leaf):
    n = len(instr.operands) // 2
    operand = _array_shape(instr, instr.operands[0].shape)
    window = instr.attr("window")
    rank = operand.rank
    size = window.get("size", [1] * rank)
    stride = window.get("stride", [1] * rank)
    pad = window.get("pad", [(0, 0)] * rank)
    lhs_dilate = window.get("lhs_dilate", [1] * rank)
    rhs_dilate = window.get("rhs_dilate", [1] * rank)
    for name, values in [("size", size), ("stride", stride), ("rhs_dilate", rhs_dilate)]:
        if len(values) != rank or any(v < 1 for v in values):
            raise MalformedInstructionError(instr, f"window {name}={'x'.join(map(str, values))} must be "
                                f"{rank} values >= 1 for the rank-{rank} operand")
    if len(pad) != rank:
        raise MalformedInstructionError(instr, f"window pad has {len(pad)} entries for the rank-{rank} "
                            "operand")
    if any(d != 1 for d in lhs_dilate):
        raise IndexingError(instr, "reduce-window with base dilation")
    out = _array_shape(instr, out_leaf)
    results, syms, constraints = [], [], []
    for j in range(rank):
        e = _dim(j) * stride[j] + _sym(j) * rhs_dilate[j] - pad[j][0]
        results.append(e)
        syms.append((0, size[j] - 1))
        if pad[j] != (0, 0):
            constraints.append((e, (0, operand.dims[j] - 1)))
    input_map = _map(rank, results, _bounds(out.dims), range_ranges=syms,
                     constraints=constraints)
    return [[input_map] for _ in range(n)] + [[_scalar_read(out.dims)] for _ in range(n)]


@_rule("dot")
def _dot(instr, out):
    lhs = _array_shape(instr, instr.operands[0].shape)
    rhs = _array_shape(instr, instr.operands[1].shape)
    lb, rb = instr.attr("lhs_batch_dims", []), instr.attr("rhs_batch_dims", [])
    lc, rc = instr.attr("lhs_contracting_dims", []), instr.attr("rhs_contracting_dims", [])
    nb = len(lb)
    contract_ranges = [(0, lhs.dims[d] - 1) for d in lc]

    def operand_results(shape, batch, contracting, free_start):
        results, free = [], free_start
        for j in range(shape.rank):
            if j in batch:
                results.append(_dim(batch.index(j)))
            elif j in contracting:
                results.append(_sym(contracting.index(j)))
            else:
                results.append(_dim(free))
                free += 1
        return results, free

    lhs_results, next_free = operand_results(lhs, lb, lc, nb)
    rhs_results, _ = operand_results(rhs, rb, rc, next_free)
    return [[_map(out.rank, lhs_results, _bounds(out.dims), range_ranges=contract_ranges)],
            [_map(out.rank, rhs_results, _bounds(out.dims), range_ranges=contract_ranges)]]


@_rule("fusion")
def _fusion(instr, out):
    comp = instr.fused_computation
    if comp is None:
        raise IndexingError(instr, "fusion without a fused computation")
    root = comp.root
    return _through_computation(comp, root, out, instr)


def _through_computation(comp, root, out, instr) -> OperandMaps:
    """Composes the maps of a computation's instructions from `root` back to
    its parameters; parameter p's maps are operand p's."""
    start = root
    output_id = 0
    if root.opcode == "tuple":
        leaves = [o for o in root.operands]
        shapes = [o.shape for o in leaves]
        try:
            output_id = shapes.index(out)
        except ValueError:
            output_id = 0
        start = leaves[output_id]
    reached = indexing_from(comp, start, out.dims)
    params = comp.parameters
    return [reached.get(id(p), []) for p in params]


def indexing_from(comp, start: HloInstruction,
                  dims: Sequence[int]) -> dict[int, list[IndexingMap]]:
    """For every instruction of `comp` that `start` reads (by id), the maps
    from an element of `start`'s output (of dimensions `dims`) to its
    elements: the output-to-input maps composed along every path."""
    reached: dict[int, list[IndexingMap]] = {id(start): [identity_map(dims)]}
    for inst in reversed(comp.topological_order()):
        maps = reached.get(id(inst))
        if not maps or inst.opcode == "parameter":
            continue
        per_operand = output_to_input_indexing(inst)
        for operand, operand_maps in zip(inst.operands, per_operand):
            bucket = reached.setdefault(id(operand), [])
            for m in maps:
                for om in operand_maps:
                    composed = m.then(om)
                    if composed not in bucket:
                        bucket.append(composed)
    return reached


def _bitcast_convert_resize(instr, src: Shape, out: Shape) -> IndexingMap:
    """bitcast-convert between element sizes: to a narrower type the
    output has one more (minor) dimension, the pieces of an operand element;
    to a wider one the operand has it, read whole (a range variable)."""
    if out.dims[:-1] == src.dims:
        return _map(out.rank, [_dim(i) for i in range(src.rank)], _bounds(out.dims))
    if src.dims[:-1] == out.dims:
        results = [_dim(i) for i in range(out.rank)] + [_sym(0)]
        return _map(out.rank, results, _bounds(out.dims), range_ranges=[(0, src.dims[-1] - 1)])
    raise IndexingError(instr, f"bitcast-convert from {src} to {out}: the shapes must differ "
                        "by the last dimension, the size ratio of the element types")


def output_to_input_indexing(instr: HloInstruction, output_id: int = 0) -> OperandMaps:
    """For each operand of `instr`, the maps from an element of output
    `output_id` to the operand elements it reads. A map list with several
    entries means several reads (a fusion reading a parameter two ways);
    an empty list, that the operand is not read for this output."""
    out = _output_shape(instr, output_id)
    if instr.opcode in ELEMENTWISE:
        if instr.opcode == "bitcast-convert":
            src = instr.operands[0].shape
            if src.is_array and src.dims != out.dims:
                return [[_bitcast_convert_resize(instr, src, out)]]
        return _elementwise(instr, out)
    rule = _RULES.get(instr.opcode)
    if rule is None:
        raise IndexingError(instr, f"no output-to-input indexing for opcode "
                            f"'{instr.opcode}'")
    try:
        return rule(instr, out)
    except (_MalformedMap, IndexError) as e:
        raise MalformedInstructionError(instr, f"its attributes do not fit its shapes ({e}): "
                            f"{' '.join(str(o.shape) for o in instr.operands)} -> "
                            f"{instr.shape}") from None


# -- input to output ------------------------------------------------------------


def input_to_output_indexing(instr: HloInstruction, operand_id: int) -> list[IndexingMap]:
    """The maps from an element of operand `operand_id` to the output
    elements it contributes to (XLA has these for elementwise ops, broadcast,
    transpose, reshape, bitcast, reverse, slice, concatenate, pad, reduce)."""
    if not 0 <= operand_id < len(instr.operands):
        raise IndexingError(instr, f"operand {operand_id} does not exist")
    operand = _array_shape(instr, instr.operands[operand_id].shape)
    op = instr.opcode
    n = operand.rank
    d = [_dim(i) for i in range(n)]
    ranges = _bounds(operand.dims)
    if op in ELEMENTWISE and op != "bitcast-convert":
        out = _array_shape(instr, instr.shape)
        if n == 0 and out.rank > 0:  # a scalar operand reaches every element
            return [_map(0, [_sym(i) for i in range(out.rank)], [],
                         range_ranges=_bounds(out.dims))]
        return [identity_map(operand.dims)]
    if op == "broadcast":
        out = instr.shape
        dims = instr.dimensions
        results, syms = [], []
        for i in range(out.rank):
            if i in dims:
                results.append(_dim(dims.index(i)))
            else:
                results.append(_sym(len(syms)))
                syms.append((0, out.dims[i] - 1))
        return [_map(n, results, ranges, range_ranges=syms)]
    if op == "transpose":
        perm = instr.dimensions
        return [_map(n, [_dim(perm[i]) for i in range(n)], ranges)]
    if op in ("reshape", "bitcast"):
        out = instr.shape
        if op == "reshape":
            linear = _linearize(d, operand.dims)
            return [_map(n, delinearize(linear, out.dims), ranges)]
        in_order, out_order = _physical_order(operand), _physical_order(out)
        linear = _linearize([d[i] for i in in_order], [operand.dims[i] for i in in_order])
        physical = delinearize(linear, [out.dims[i] for i in out_order])
        logical = [None] * out.rank
        for pos, dim in enumerate(out_order):
            logical[dim] = physical[pos]
        return [_map(n, logical, ranges)]
    if op == "reverse":
        rev = set(instr.dimensions)
        return [_map(n, [(_const(operand.dims[i] - 1) - d[i]) if i in rev else d[i]
                         for i in range(n)], ranges)]
    if op == "slice":
        results, constraints = [], []
        out = instr.shape
        for i, (start, _, stride) in enumerate(instr.attr("slice")):
            shifted = d[i] - start
            results.append(_floordiv(shifted, stride) if stride > 1 else shifted)
            constraints.append((shifted, (0, (out.dims[i] - 1) * stride)))
            if stride > 1:
                constraints.append((shifted % stride, (0, 0)))
        return [_map(n, results, ranges, constraints=constraints)]
    if op == "concatenate":
        axis = instr.dimensions[0]
        offset = sum(o.shape.dims[axis] for o in instr.operands[:operand_id])
        return [_map(n, [d[i] + offset if i == axis else d[i] for i in range(n)], ranges)]
    if op == "pad" and operand_id == 0:
        results = [d[i] * (interior + 1) + lo
                   for i, (lo, _, interior) in enumerate(instr.attr("padding"))]
        out = instr.shape
        constraints = [(r, (0, out.dims[i] - 1)) for i, r in enumerate(results)]
        return [_map(n, results, ranges, constraints=constraints)]
    if op == "reduce" and operand_id < len(instr.operands) // 2:
        reduced = instr.dimensions
        return [_map(n, [d[i] for i in range(n) if i not in reduced], ranges)]
    raise IndexingError(instr, f"no input-to-output indexing for opcode '{op}' "
                        f"(operand {operand_id})")
