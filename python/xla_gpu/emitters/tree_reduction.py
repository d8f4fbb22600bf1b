"""XLA:GPU's tree-reduction-rewriter, on one fusion: a reduction no block
can do alone (not race-free, see fusion_analysis.reduction_is_race_free)
as two reductions, each race-free.

XLA:GPU runs the rewrite before fusion, so its reduction emitter never
sees such a reduce. A module XLA:CPU optimized (what xla_gpu.jax.jit takes)
has not been through it: `x.sum()` over f32[1024,1024] is one reduce of a
million elements, which the loop emitter then runs as one thread summing
all of them in order (0.89 ms where XLA:CPU takes 0.13). Split, it is a
row reduction of 1024 rows of 1024 and one of a row of 1024.

    fusions = split_reduction(fusion)   # None, or [first, ..., last]

`fusion` must hold one reduce, of one operand, and after it (up to the
root) only ops one to one on its result (a mean's scaling, a convert),
or a variadic reduce that is its result (an argmax: the values and an
iota, each padded with its own init value; since stop 74):
the first part keeps what comes before the reduce, the last what comes
after it. The reduced dimension n
(of the normalized reduction, see fusion_analysis.reduction_dimensions)
becomes [k, n / k], padded with the init value where k does not divide it;
n / k is about sqrt(n), at most the race-free bound, the one of least
padding between half of that and it, a power of two among equals (XLA's
choice). The first fusion is `fusion`'s computation with the reduce over
n / k only (its operands' ops stay fused with it: the input is read once);
the last reduces k (then the ops after the reduce) and has `fusion`'s
shape. A row reduction of more than
kBatchedReductionRaceFreeBound rows a block first reduces its minor
dimension, then the rows (XLA's case 1). Each part is split again until it
is race-free. XLA leaves min/max to atomics; here they are split too (any
order gives their result). For the CPU target (host=True: xla_gpu.jax's
kernels on the CPU) a column reduction is split where the first part
keeps the fewest rows of partial sums that leave it a loop kernel of
short columns, or enough blocks of the reduction emitter
(_host_column_split): there the tiles' transposes and trees, not the
sums, are what a block costs. It also splits race-free column reductions
longer than its loop kernels sum (_host_splits_columns).

The sums run in another order than one thread's, as on XLA:GPU.

A loop fusion whose elements would each recompute a reduce (its result
broadcast back: a softmax's max and sum, XLA:CPU's library fusion of
x - max(x)) more than MOST_REREADS times over its inputs has the reduce
taken out first (recomputed_reduce): a fusion of the reduce and what it
reads, then the rest, reading the reduce's result as its last parameter;
again for the next such reduce. On XLA:GPU such a reduce ends its fusion
(what follows it there is an epilogue on its result's shape), or Triton's
softmax fusion takes the whole; XLA:CPU's fusions hand it to a library.
"""

from __future__ import annotations

import math

from ..hlo import HloInstruction, parse_hlo
from ..hlo.opcodes import ELEMENTWISE
from ..hlo.shape import Layout, Shape
from .fusion_analysis import (HOST_LOOP_COLUMN_LANES, HOST_LOOP_COLUMN_ROWS, EmitterKind,
                              _consecutive, _non_unit, ReductionDimensions, analyze_fusion,
                              passed_by,
                              broadcasts_along, is_reduction_from_or_to_contiguous,
                              kBatchedReductionRaceFreeBound, kColumnReductionTileY,
                              kMinThreadsXRowReduction, kRowReductionTileX,
                              reduction_dimensions, reduction_is_race_free)

__all__ = ["COSTLY_OPS", "MOST_REREADS", "needs_tree_split", "recomputed_reduce",
           "split_reduction"]

# The first part of a column reduction split for the CPU target
# (_host_column_split) has at least this many blocks (two cores' pool
# threads take turns over them; each block as much work as may be).
HOST_SPLIT_BLOCKS = 16
# The most rows of a wide column split's first part (_host_column_split),
# a loop kernel (at most fusion_analysis.HOST_LOOP_COLUMN_ROWS).
HOST_SPLIT_COLUMN_ROWS = 512
# Parts of one fusion at most (each tree split at least squares the bound;
# a fission takes out one reduce).
_MAX_PARTS = 8
# How many times over a loop fusion may read its inputs recomputing a
# reduction inside it before the reduction is taken out; a read through a
# costly op (COSTLY_OPS: a sum of exps) counts COSTLY_READ reads. Through
# xla_gpu.jax.jit over f32[65536, 4 to 32] (jax.jit's time in brackets):
# the softmax over rows of 8 (its max read by the sum's exps, the sum by
# each element) 1.39 -> 0.54 ms (0.53), over rows of 4 1.20 -> 0.40
# (0.47); softmax(x).var(-1) over rows of 8 13.2 -> 0.74 (1.15), from 64
# re-reads without nesting (XLA:CPU's count for a max it fuses into its
# elementwise consumer); the layer norm over rows of 16 1.07 at 32 re-reads
# -> 0.49 (0.59); x - max(x) over rows of 8 left whole, 0.18 (taken out
# 0.24; 0.23).
MOST_REREADS = 8
COSTLY_READ = 8
# From this many elements an output, and more than a block reduces alone
# in all, a reduce the loop emitter would run on a thread an output is
# taken out for the reduction emitter (a tree split's last part, at most
# a block's elements and its epilogue, stays one kernel). The loop
# emitter's reduce is a serial loop of an output's elements from 16 on
# (rows of 8 it unrolls, vectorized across outputs): through
# xla_gpu.jax.jit over 4M elements, max(x) - min(x), sum(x) * max(x),
# mean / std and logsumexp ran 1.4-6.8x jax.jit's time over rows of 32 to
# 1000 with 1024 here, 0.5-1.4x with 32; rows of 16 were mixed (the
# logsumexp's 3x slower taken out), of 8 2-3x slower taken out.
MIN_TAKEN_OUT, MIN_TAKEN_OUT_INPUT = 32, kMinThreadsXRowReduction * kRowReductionTileX + 1


def split_reduction(fusion: HloInstruction, warp_size: int = 32, host: bool = False,
                    side_outputs: bool = False,
                    side_bits: int = 16) -> list[HloInstruction] | None:
    """`fusion` as fusions run one after the other, the last of `fusion`'s
    shape (and name), each reading `fusion`'s operands and the results of
    parts before it; None when it has no reduction to split or take out.
    The new fusions are in no computation yet. `host`: the kernels run on
    the CPU target, which splits a column reduction where it runs fastest
    there (_host_column_split), not where XLA:GPU does. `side_outputs`: a
    reduce taken out may also write a narrow value the rest would
    recompute (_side_value), of `side_bits` or less; its part is then a
    tuple, followed in the list by its get-tuple-elements."""
    parts = _parts(fusion, warp_size, 0, host, side_outputs and side_bits)
    kernels = sum(part.opcode == "fusion" for part in parts)  # not get-tuple-elements
    if kernels == 1 or kernels > _MAX_PARTS:
        return None
    for i, part in enumerate(parts[:-1]):  # unique in the module
        part.name = f"{fusion.name}.part{i}"
    for part in parts:
        part.users = [p for p in parts if any(o is part for o in p.operands)]
    return parts


def _parts(fusion: HloInstruction, warp_size: int, depth: int, host: bool = False,
           side_outputs: int = 0) -> list[HloInstruction]:
    """`fusion` split (or a reduce taken out) until no part can be, each
    part once: [fusion] where it cannot be. `side_outputs`: the most bits
    of a side value (0: none)."""
    halves = None
    if depth <= _MAX_PARTS:
        halves = (_fission_once(fusion, warp_size, side_outputs=side_outputs, host=host) or
                  _split_noncontiguous(fusion, host) or
                  _split_once(fusion, warp_size, host) or
                  _fission_once(fusion, warp_size, serial=True, host=host))
    if halves is None:
        return [fusion]
    *first_parts, last = halves
    if len(first_parts) > 1:  # a tuple and its elements: split no further
        return first_parts + _parts(last, warp_size, depth + 1, host, side_outputs)
    (first,) = first_parts
    firsts = _parts(first, warp_size, depth + 1, host, side_outputs)
    last.operands = [firsts[-1] if o is first else o for o in last.operands]
    return firsts + _parts(last, warp_size, depth + 1, host, side_outputs)


def recomputed_reduce(fusion: HloInstruction) -> tuple[HloInstruction, float] | None:
    """A reduce the loop emitter would evaluate again for each element that
    reads it (its result broadcast back: a softmax's max; or read by a
    reduce after it: a cross-entropy's sum over x - logsumexp(x)), when
    that reads the fusion's inputs more than MOST_REREADS times over: the
    reduce and how many times. In a reduction fusion, any reduce its
    heroes' inputs read more than once a result (XLA:CPU's YNNPACK fusion of
    softmax(x).max(-1), three reduces in a row: XLA:GPU never fuses a
    reduce into a reduction's inputs, and the reduction emitter evaluated
    the max and the sum again for each element, 175x jax.jit's time)."""
    comp = fusion.fused_computation
    if analyze_fusion(fusion).kind not in (EmitterKind.LOOP, EmitterKind.REDUCTION):
        return None
    inputs = max(1, sum(p.shape.num_elements for p in comp.parameters))
    # In a reduction fusion, any: the max and sum of softmax(x).max(-1)
    # over rows of 64 (64 times) ran 45 ms as one kernel, 1.8 taken out
    # (jax.jit 1.7); over rows of 8, 3.0 and 0.63 (0.78).
    most = MOST_REREADS if analyze_fusion(fusion).kind == EmitterKind.LOOP else 0
    readers = _readers(comp)
    for inst in comp.topological_order():
        if inst.opcode != "reduce":
            continue
        results = _elements(inst)
        window = inst.operands[0].shape.num_elements // results
        times = readers.get(id(inst), 0)
        if times > results and times * window * _read_cost(inst) > most * inputs:
            return inst, times * window / inputs
    return None


def _read_cost(reduce: HloInstruction) -> int:
    """What reading an element of `reduce`'s operand costs, in reads: 1,
    or COSTLY_READ through a costly op (a sum of exps), up to the fusion's
    parameters and other reduces (each evaluated on its own)."""
    stack, seen = list(reduce.operands[:1]), set()
    while stack:
        inst = stack.pop()
        if id(inst) in seen:
            continue
        seen.add(id(inst))
        if inst.opcode in COSTLY_OPS:
            return COSTLY_READ
        if inst.opcode != "reduce":
            stack.extend(inst.operands)
    return 1


def _elements(inst: HloInstruction) -> int:
    return max(1, max(s.num_elements for s in inst.shape.leaves()))


def _readers(comp) -> dict[int, int]:
    """For each instruction (by id), how many times the loop emitter
    evaluates it: for each instruction after it that reads it (through
    others), as many times as that one is evaluated, times its window where
    that is a reduce reading it (the most over the readers: each reads a
    value once an element of its own, which its loops may hoist: a row's
    max, once a row in a reduce over the rows' elements). Nested reduces
    multiply: softmax(x).var(-1) over rows of 16, its max read by the exp
    of a sum read by a sum read by the variance's sum, 17 ms as one loop
    fusion against jax.jit's 0.33."""
    readers: dict[int, int] = {}
    for inst in reversed(comp.topological_order()):
        times = max(_elements(inst), readers.get(id(inst), 0))
        for k, o in enumerate(inst.operands):
            window = (inst.operands[0].shape.num_elements // _elements(inst)
                      if inst.opcode == "reduce" and k < len(inst.operands) // 2 else 1)
            readers[id(o)] = max(readers.get(id(o), 0), times * max(1, window))
    return readers


def _serial_reduce(fusion: HloInstruction, warp_size: int) -> HloInstruction | None:
    """A reduce inside a loop fusion that is not one of its outputs (what
    follows it makes the loop emitter the fusion's: log(sum(x)) + m), of at
    least MIN_TAKEN_OUT elements an output, which the reduction emitter
    would take (whole, or split where its dimensions are apart:
    _first_run): the loop emitter reduces it on a thread an output, in
    order. In a reduction fusion, such a reduce that is no output's hero
    (read once an element by the heroes' inputs; recomputed_reduce takes
    those read more): XLA:GPU never fuses a reduce into a reduction's
    inputs, and the reduction emitter reduced it on a thread for each of
    the hero's input elements. Of any size where an output reduce needs a
    tree split (no block can do it alone), which the reduce before it
    kept whole (_split_once takes a fusion of one reduce): the scalar sum
    ran on one block, or the loop emitter's one thread.

    XLA:CPU's YNNPACK fusions of a row reduce and a sum over the rows,
    through xla_gpu.jax.jit (ms; jax.jit's; A/B in one process but the
    z-loss's): a cross-entropy with a z-loss, mean(lse - x[y] + 1e-4
    lse^2), over f32[4096,1000] 8.9 -> 0.45 (0.86-1.3); logsumexp(x).sum()
    over f32[4096,1000] 8.15 -> 0.52 (0.83), over rows of 128 to 2 2.1-3.8
    -> 0.09-0.40 (0.27-1.39); x.sum(-1).max() over f32[4096,1000] 1.82 ->
    0.19 (0.25); norm(x, axis=-1).mean() and x.var(-1).mean() over rows
    of 128 to 2 0.07-0.58x; x.sum(-1).max() over rows of 8 to 2 1.25-1.5x
    (0.016 -> 0.025 ms over f32[65536,4]: the rows' sums written and read
    again; jax.jit 0.11-0.35). Where XLA:CPU's fusions end at the rows'
    values (over f32[1024,4096], [2048,2048]) nothing changes."""
    comp = fusion.fused_computation
    analysis = analyze_fusion(fusion)
    if analysis.kind not in (EmitterKind.LOOP, EmitterKind.REDUCTION):
        return None
    heroes = comp.outputs
    if analysis.kind == EmitterKind.REDUCTION:
        heroes = [analysis.hero_of(o) for o in comp.outputs]
    outputs = {id(o) for o in comp.outputs} | {id(h) for h in heroes}
    least = MIN_TAKEN_OUT
    if any(h.opcode == "reduce" and len(h.operands) == 2 and _splits_as_a_tree(h, warp_size)
           for h in heroes):
        least = 2
    for inst in comp.topological_order():
        n = inst.operands[0].shape.num_elements if inst.opcode == "reduce" else 0
        if (n >= MIN_TAKEN_OUT_INPUT and id(inst) not in outputs and inst.shape.is_array and
                n >= least * inst.shape.num_elements and
                (is_reduction_from_or_to_contiguous(inst, warp_size) or
                 (len(inst.operands) == 2 and _first_run(inst) is not None))):
            return inst
    return None


def _fission_once(fusion: HloInstruction, warp_size: int, serial: bool = False,
                  side_outputs: int = 0, host: bool = False) -> list[HloInstruction] | None:
    """A reduce `fusion` recomputes (recomputed_reduce), or with `serial`
    one it reduces on a thread an output (_serial_reduce), as a fusion of
    its own, whose result the rest reads: [the reduce's, the rest]; with
    `side_outputs` and a _side_value, [the reduce's and the value's tuple,
    its two get-tuple-elements, the rest reading both]. For the CPU target
    (`host`) the fusion's outputs made of the reduce's result a row
    (_row_outputs) join the reduce's part too, handed on to the rest as
    the side value is, which returns them as they are."""
    if serial:
        reduce = _serial_reduce(fusion, warp_size)
    else:
        found = recomputed_reduce(fusion)
        reduce = found[0] if found is not None else None
    if reduce is None or not reduce.shape.is_array:
        return None
    comp = fusion.fused_computation
    params = comp.parameters
    outputs = comp.outputs + ([comp.root] if comp.root.opcode == "tuple" else [])
    # The reduce's result, or the last of the ops on it alone (its epilogue),
    # or an output they make beside others (the rest then passes it on).
    value = _output_epilogue_end(comp, reduce) or _epilogue_end(comp, reduce, outputs)
    cone = _before([value])
    rest = _before(outputs, stop=[value])
    side = (_side_value(comp, reduce, cone, rest, warp_size, side_outputs)
            if side_outputs and not serial and value is reduce else None)
    # What the first part hands the rest: the value, the side value, the
    # outputs made of the reduce's result.
    taken = [value] if side is None else [value, side]
    taken += _row_outputs(comp, reduce, taken) if host else []
    if len(taken) > 1:
        cone |= _before(taken)
        rest = _before(outputs, stop=taken)
    # (A part's parameters may come after its value in the text: a value
    # that is the ROOT goes last.)
    alone = len(taken) == 1
    first = [i.to_text().removeprefix("ROOT ") for i in comp.instructions
             if i.opcode == "parameter" or (id(i) in cone and not (alone and i is value))]
    if alone:
        first.append("ROOT " + value.to_text().removeprefix("ROOT "))
    else:
        first.append(f"ROOT %{'.and.'.join(t.name for t in taken)} = "
                     f"({', '.join(t.shape.to_text(layout=False) for t in taken)}) "
                     f"tuple({', '.join('%' + t.name for t in taken)})")
    last = [i.to_text().removeprefix("ROOT ") for i in params]
    for k, handed in enumerate(taken):
        last.append(f"%{handed.name} = {handed.shape.to_text(layout=False)} "
                    f"parameter({len(params) + k})")
    last += [i.to_text() for i in comp.instructions
             if id(i) in rest and i.opcode != "parameter"]
    return _parse_parts(fusion, first, last, [v.shape for v in taken], f"reduce.{reduce.name}",
                        f"rest.{reduce.name}", ("kInput", fusion.fusion_kind or "kLoop"))


def _chain_after(comp, reduce: HloInstruction, passes):
    """The elementwise ops that follow `reduce` one after the other, each
    the only reader of the one before and of its shape, its other
    operands each one `passes(operand, op)` takes, in order."""
    value = reduce
    while True:
        readers = [i for i in comp.instructions if any(o is value for o in i.operands)]
        if len(readers) != 1:
            return
        (reader,) = readers
        if (reader.opcode not in ELEMENTWISE or reader.shape != value.shape or
                any(o is not value and not passes(o, reader) for o in reader.operands)):
            return
        yield reader
        value = reader


def _epilogue_end(comp, reduce: HloInstruction, outputs) -> HloInstruction:
    """The last of the elementwise ops that follow `reduce` one after the
    other (_chain_after), their other operands constants (log(sum(x)),
    what a log_softmax subtracts), before an output (the rest would be
    nothing but the outputs): the reduce's part computes them once a
    reduced element, where the rest would once an element of its own;
    `reduce` where there is none. The log_softmax of f32[4096,1000]'s last
    kernel: 3.89 -> 0.59 ms."""
    value = reduce
    for reader in _chain_after(comp, reduce, lambda o, _: o.opcode == "constant"):
        if reader in outputs:
            break
        value = reader
    return value


def _row_outputs(comp, reduce: HloInstruction, taken) -> list[HloInstruction]:
    """The outputs of the fusion (but those `taken`) of the reduce's
    result's dimensions made of it a row: through elementwise ops of its
    dimensions from it (or what is `taken`), the fusion's parameters of
    its dimensions (read at the row's own index) and scalar constants (a
    log-sum-exp, m + log(s), beside the softmax). The reduce's part makes
    them: the reduction emitter's epilogue, as fusion_analysis's
    passed_by reads them. [] where they would be all of the outputs."""
    root = comp.root
    if root.opcode != "tuple" or not reduce.shape.is_array:
        return []
    dims = reduce.shape.dims
    taken_ids = {id(t) for t in taken}
    known = {id(t): True for t in [*taken, reduce]}  # an instruction: of the row

    def of_the_row(inst) -> bool:
        if id(inst) not in known:  # (each once: a chain of squares reads each twice)
            ops = inst.operands
            known[id(inst)] = (
                inst.shape.is_array and inst.shape.dims == dims and
                inst.opcode in ELEMENTWISE and
                all(of_the_row(o) or passed_by(o, inst) for o in ops) and
                any(of_the_row(o) for o in ops))
        return known[id(inst)]

    found = []
    for o in root.operands:
        if id(o) not in taken_ids and all(f is not o for f in found) and of_the_row(o):
            found.append(o)
    if all(id(o) in taken_ids or any(o is f for f in found) for o in root.operands):
        return []
    return found


def _output_epilogue_end(comp, reduce: HloInstruction) -> HloInstruction | None:
    """Where the elementwise ops that follow the reduce one after the
    other (_chain_after), their other operands made of no instruction of
    the fusion that reads it (fusion_analysis.passed_by: scalar constants,
    a row's values), reach one of the fusion's outputs that others
    accompany (a row's rstd beside x * rstd): that output. The reduce's
    part then makes it, and the rest passes it on as its parameter. Else
    None."""
    root = comp.root
    if root.opcode != "tuple":
        return None
    for reader in _chain_after(comp, reduce, passed_by):
        if any(o is reader for o in root.operands):
            return None if all(o is reader for o in root.operands) else reader
    return None


def _the_reduce(fusion: HloInstruction) -> HloInstruction | None:
    """The fusion's one reduce (scalar inits that are constants or
    parameters) when everything after it works on its elements one to one
    (an epilogue: converts, scalings, reshapes) up to the root; else None.
    A variadic reduce (an argmax: the values and an iota) only as the
    fusion's results, in order, with no epilogue."""
    comp = fusion.fused_computation
    if comp is None:
        return None
    reduces = [i for i in comp.instructions if i.opcode == "reduce"]
    if len(reduces) != 1:
        return None
    (reduce,) = reduces
    if len(reduce.called_computations) != 1:
        return None
    xs, inits = _inputs_and_inits(reduce)
    if any(i.opcode not in ("constant", "parameter") or i.shape.rank != 0 for i in inits):
        return None
    if reduce.shape.is_tuple:
        root = comp.root
        whole = root is reduce or (
            root.opcode == "tuple" and len(root.operands) == len(xs) and
            all(o.opcode == "get-tuple-element" and o.operands[0] is reduce and
                o.attr("index") == k for k, o in enumerate(root.operands)))
        return reduce if whole and len(xs) > 1 else None
    if not comp.root.shape.is_array:
        return None
    after = _after(comp, reduce)
    size = reduce.shape.num_elements
    if comp.root not in after or any(i.shape.num_elements != size or not i.shape.is_array
                                     for i in after):
        return None
    return reduce


def _inputs_and_inits(reduce: HloInstruction) -> tuple[list[HloInstruction],
                                                       list[HloInstruction]]:
    """A reduce's inputs and their init values (one each: an argmax's
    values and iota)."""
    n = len(reduce.operands) // 2
    return reduce.operands[:n], reduce.operands[n:]


def _result_dims(reduce: HloInstruction) -> tuple[int, ...]:
    """The dimensions of a reduce's result (each of a variadic one's)."""
    shape = reduce.shape.tuple_shapes[0] if reduce.shape.is_tuple else reduce.shape
    return shape.dims


def _reduce_text(name: str, inputs: list[str], inits: list[HloInstruction], etypes, dims,
                 reduced, to_apply: str, root: bool = False) -> str:
    """The line of a reduce named `name` of `inputs` (names), each of its
    init and element type, into `dims` over `reduced`; a tuple of them
    where there are several."""
    shapes = [_shape(t, dims) for t in etypes]
    shape = shapes[0] if len(shapes) == 1 else "(" + ", ".join(shapes) + ")"
    operands = ", ".join([*inputs, *(f"%{i.name}" for i in inits)])
    return (("ROOT " if root else "") + f"%{name} = {shape} reduce({operands}), "
            f"dimensions={{{','.join(map(str, reduced))}}}, to_apply={to_apply}")


def _after(comp, reduce) -> list[HloInstruction]:
    """`reduce` and the instructions that read it, directly or not."""
    seen = {id(reduce)}
    out = [reduce]
    for inst in comp.topological_order():
        if id(inst) not in seen and any(id(o) in seen for o in inst.operands):
            seen.add(id(inst))
            out.append(inst)
    return out


# Ops whose recomputation costs more than reading back a narrow value they
# made (_side_value); a read through one counts COSTLY_READ reads
# (recomputed_reduce).
COSTLY_OPS = frozenset({"exponential", "exponential-minus-one", "log", "log-plus-one",
                        "logistic", "tanh", "erf", "power", "sine", "cosine", "tan",
                        "atan2", "cbrt", "rsqrt", "sqrt", "divide"})


def _side_value(comp, reduce: HloInstruction, cone: set[int], rest: set[int],
                warp_size: int, bits: int = 16) -> HloInstruction | None:
    """A value of the reduce's operand's shape that the rest of the fusion
    reads (in `rest`, not computed from the reduce) and the reduce's part
    computes all the costly ops (COSTLY_OPS) of, at least one, on the way
    (in `cone`), of `bits` or less: the last such in the computation's
    order, or None. The reduce's part then writes it too, and the rest
    reads it: a bf16 softmax's round(exp(x - max)) (the exp+sum kernel
    0.80 -> 0.93 ms, the last kernel, which recomputed it, 1.17 -> 0.33,
    bf16[8,8,256,256]); in f32 the reads and writes cost more than the
    exps (1.05 -> 1.24 ms), unless each block keeps its rows' values
    itself (the JAX backend's merged kernels: 32 bits there). None where
    the reduce's part would be split again (a tuple is not)."""
    if not (is_reduction_from_or_to_contiguous(reduce, warp_size) and
            reduction_is_race_free(reduction_dimensions(reduce), warp_size)):
        return None
    dims = reduce.operands[0].shape.dims
    found = None
    for inst in comp.topological_order():
        if (id(inst) not in rest or inst is reduce or not inst.shape.is_array or
                inst.shape.dims != dims or inst.shape.element_type.bits > bits):
            continue
        made_of = _before([inst])
        costly = [id(i) for i in comp.instructions
                  if id(i) in made_of and i.opcode in COSTLY_OPS]
        if id(reduce) not in made_of and costly and all(c in cone for c in costly):
            found = inst
    return found


def _before(roots, stop=()) -> set[int]:
    """The ids of `roots` and of every instruction they read (but not
    through the instructions `stop`)."""
    seen: set[int] = {id(i) for i in stop}
    stack = list(roots)
    while stack:
        inst = stack.pop()
        if id(inst) not in seen:
            seen.add(id(inst))
            stack.extend(inst.operands)
    return seen - {id(i) for i in stop}


def _best_split(n: int, bound: int) -> tuple[int, int]:
    """(k, padded n): n as k rows of padded_n / k, XLA's choice."""
    n_div_k = min(math.isqrt(n), bound)
    padding = (n_div_k - n % n_div_k) % n_div_k
    best_k = (n + padding) // n_div_k
    for i in range(n_div_k - 1, n_div_k // 2, -1):
        p = (i - n % i) % i
        if p < padding or (p == padding and i & (i - 1) == 0):
            padding, best_k = p, (n + p) // i
    return best_k, n + padding


def _prefix_with_product(dims: tuple[int, ...], product: int) -> int:
    """How many leading `dims` multiply to `product`."""
    p, n = 0, 1
    while n != product:
        n *= dims[p]
        p += 1
    return p


def _host_column_split(n: int, bound: int, tiles: int, columns: int) -> tuple[int, int]:
    """(k, padded n) for the CPU target: n reduced rows as k of padded_n / k.
    Where the columns are as wide as host_prefers_loop_for asks, k is the
    least that leaves at most HOST_SPLIT_COLUMN_ROWS rows, so that the
    first part is a loop kernel (bf16[8192,512]: k = 16, 0.14 ms and
    compiled in 17 ms, where k = 2 ran alike compiled in 67; k = 8, the
    first part's rows HOST_LOOP_COLUMN_ROWS, alike again). Else k is as
    small (the rows a thread sums in its loop as many) as leaves the first
    part HOST_SPLIT_BLOCKS blocks or more (`tiles` blocks a row of k). From
    there the least padding up to twice that k. XLA's k (about sqrt(n))
    leaves each thread of the first part two rows: the rest of its
    block's work is the transpose through shared memory and the lanes'
    tree, which on the CPU cost many times the sums (x.astype(f32).sum(0)
    over bf16[8192,512]: the first part 1.0 ms at XLA's k = 128; the
    f32[8192,128] one 0.22 -> 0.05 at k = 8)."""
    if columns >= HOST_LOOP_COLUMN_LANES:
        least = max(-(-n // HOST_SPLIT_COLUMN_ROWS), 2)
    else:
        least = max(-(-n // bound), -(-HOST_SPLIT_BLOCKS // tiles), 2)
    best = None
    for k in range(least, min(2 * least, n + 1)):
        padded = -(-n // k) * k
        if best is None or padded < best[1]:
            best = (k, padded)
    return best


def needs_tree_split(fusion: HloInstruction, warp_size: int = 32, host: bool = False) -> bool:
    """Whether `fusion`'s reduction is one XLA:GPU's tree-reduction-rewriter
    splits before fusion (a contiguous reduction no block can do alone), or
    with `host` one the CPU target splits too (_host_splits_columns): what
    _split_once splits."""
    return _tree_split_reduce(fusion, warp_size, host) is not None


def _tree_split_reduce(fusion: HloInstruction, warp_size: int,
                       host: bool = False) -> HloInstruction | None:
    """The reduce of `fusion` that needs_tree_split, or None."""
    root = _the_reduce(fusion)
    return root if root is not None and _splits_as_a_tree(root, warp_size, host) else None


def _splits_as_a_tree(reduce: HloInstruction, warp_size: int, host: bool = False) -> bool:
    """Whether `reduce` is a contiguous reduction no block can do alone
    (or with `host` one the CPU target splits: _host_splits_columns)."""
    if not is_reduction_from_or_to_contiguous(reduce, warp_size):
        return False
    dims = reduction_dimensions(reduce)
    return not reduction_is_race_free(dims, warp_size) or (host and _host_splits_columns(dims))


def _host_splits_columns(dims: ReductionDimensions) -> bool:
    """Whether the CPU target splits a race-free column reduction: one of
    more rows than host_prefers_loop_for takes (HOST_LOOP_COLUMN_ROWS) and
    columns as wide as it asks, whose first part is then such a loop
    kernel (_host_column_split: parts of HOST_SPLIT_COLUMN_ROWS rows at
    most), where the reduction emitter's blocks transposed a tile through
    shared memory and ran a tree over a warp's lanes every 32 rows or
    fewer. Through xla_gpu.jax.jit, A/B in one process (ms; jax.jit):
    x.sum(0) over f32[3000,700] 0.121 -> 0.052 (0.146), over
    f32[3000,1024] 0.330 -> 0.087 (0.194), over f32[2000,1500] 0.274 ->
    0.113 (0.230), over bf16[2000,1500] 0.345 -> 0.074 (0.167); x.max(0)
    over f32[2000,1500] 0.251 -> 0.110 (0.144); x.var(0) over
    f32[3000,700] 0.243 -> 0.111 (0.249); f32[4096,1024] the same (0.156
    -> 0.146). The sums' order is another: x.sum(0) over f32[3000,700]
    within 1.2e-4 of jax.jit's, 3.8e-5 before (sums of about 55)."""
    d = dims.dimensions
    return (not dims.is_row_reduction and d[1] > HOST_LOOP_COLUMN_ROWS and
            d[2] >= HOST_LOOP_COLUMN_LANES)


def _split_once(fusion: HloInstruction, warp_size: int,
                host: bool = False) -> list[HloInstruction] | None:
    root = _tree_split_reduce(fusion, warp_size, host)
    if root is None:
        return None
    rd: ReductionDimensions = reduction_dimensions(root)
    d0, d1, d2 = rd.dimensions
    out = _result_dims(root)
    pad = None  # (dimension of the normalized (d0, d1, d2), padded size)
    if rd.is_row_reduction and d0 > kBatchedReductionRaceFreeBound:
        # The minor reduced dimension first, then the rows.
        operand_dims = (d0, *out, d2)
        inner_reduced = [len(out) + 1]
        middle = (d0, *out)
        outer_reduced = 0
    elif rd.is_row_reduction:
        k, padded = _best_split(d2, kMinThreadsXRowReduction * kRowReductionTileX)
        if host and (rows := _whole_rows(root.operands[0], d2, fusion.fused_computation)):
            k, padded = rows, d2
        if padded != d2:
            pad = (2, padded)
        lead = (d0,) if d0 > 1 else ()
        operand_dims = (*lead, *out, k, padded // k)
        inner_reduced = ([0] if lead else []) + [len(operand_dims) - 1]
        middle = (*out, k)
        outer_reduced = len(out)
    else:
        bound = warp_size * kColumnReductionTileY
        # The column reduction emitter's blocks a row of the first part:
        # each covers a warp's width of 32-bit pairs of the minor dimension.
        tiles = d0 * -(-d2 // (2 * warp_size))
        k, padded = (_host_column_split(d1, bound, tiles, d2) if host
                     else _best_split(d1, bound))
        if padded != d1:
            pad = (1, padded)
        p = _prefix_with_product(out, d0)
        operand_dims = (*out[:p], k, padded // k, *out[p:])
        inner_reduced = [p + 1]
        middle = (*out[:p], k, *out[p:])
        outer_reduced = p
    return _build(fusion, root, (d0, d1, d2), pad, operand_dims, inner_reduced, middle,
                  outer_reduced)


# XLA:GPU's ReductionSplitter leaves a reduction over dimensions that are
# not contiguous whole where its largest reduced dimension is smaller.
MIN_NONCONTIGUOUS_SPLIT = 128

# For the CPU target, where the minor dimension is reduced, runs down to
# this many elements are split off (_first_run with `host`).
HOST_MIN_NONCONTIGUOUS_SPLIT = 16


def _first_run(reduce: HloInstruction, host: bool = False) -> list[int] | None:
    """Where neither the reduced nor the kept dimensions of `reduce` are
    contiguous, the dimensions its split reduces first (_split_noncontiguous):
    the run of adjacent reduced ones of the most elements, at least
    MIN_NONCONTIGUOUS_SPLIT, and the unit ones it reduces; else None.
    With `host` (the CPU target), where the minor dimension is one of the
    reduced, runs of HOST_MIN_NONCONTIGUOUS_SPLIT elements or more: whole,
    the loop emitter's thread an output walks a row of its own in order,
    a lane a row apart from the next, which the CPU target runs as scalar
    code in each lane where the reduction may not be reordered (a float
    sum). Through xla_gpu.jax.jit, A/B in one process: a sum over
    dimensions 1 and 3 of f32[16,64,32,64] 1.03 -> 0.74x jax.jit's time
    (and 6.9e-5 from XLA:CPU's sums, 4.6e-4 whole), a bf16-rounded mean
    over them 2.20 -> 0.76x, runs of 16 and 32 0.89 -> 0.65x and 1.15 ->
    0.90x, a group norm's mean over 7 x 7 x 16 0.70 -> 0.52x. Where the
    minor dimension is kept, the lanes are adjacent outputs and read
    adjacent elements: whole stays faster (f32[16,256,64,64] over 0 and 2
    0.83x whole, 0.98x split). A valid GPU kernel either way."""
    sizes, reduced, kept = _non_unit(reduce)
    if not reduced or not kept or _consecutive(reduced) or _consecutive(kept):
        return None
    runs: list[list[int]] = []
    for p in reduced:
        if runs and runs[-1][-1] == p - 1:
            runs[-1].append(p)
        else:
            runs.append([p])
    first = max(runs, key=lambda run: math.prod(sizes[p] for p in run))
    least = MIN_NONCONTIGUOUS_SPLIT
    if host and len(sizes) - 1 in reduced:
        least = HOST_MIN_NONCONTIGUOUS_SPLIT
    if math.prod(sizes[p] for p in first) < least:
        return None
    dims = reduce.operands[0].shape.dims
    positions = [i for i in range(len(dims)) if dims[i] != 1]
    return sorted({positions[p] for p in first} | {d for d in reduce.dimensions if dims[d] == 1})


def _split_noncontiguous(fusion: HloInstruction,
                         host: bool = False) -> list[HloInstruction] | None:
    """XLA:GPU's reduction-splitter, on the fusion's one reduce: where
    neither its reduced nor its kept dimensions are contiguous (a group
    norm's [N, H, W, G, C/G] -> [N, G]), which only the loop emitter takes
    (a thread an output, walking its elements one by one, strided), the
    largest run of adjacent reduced dimensions (its elements at least
    MIN_NONCONTIGUOUS_SPLIT) is reduced first, in a fusion of what the
    reduce reads, and the rest of the dimensions in a second, with what
    follows the reduce: each contiguous, the reduction emitter's. XLA
    groups adjacent dimensions first (ReductionDimensionGrouper), then
    splits off the largest; the same here. A group norm's gradient over
    f32[8,32,32,128] (8 groups): its four reductions of 16384 elements to
    64 took 0.46-1.1 ms each, on one block of 64 threads. `host`: see
    _first_run."""
    root = _the_reduce(fusion)
    inner = _first_run(root, host) if root is not None else None
    if inner is None:
        return None
    xs, inits = _inputs_and_inits(root)
    dims = xs[0].shape.dims
    middle = tuple(n for d, n in enumerate(dims) if d not in inner)
    outer = [d - sum(i < d for i in inner) for d in sorted(root.dimensions) if d not in inner]
    comp = fusion.fused_computation
    etypes = [x.shape.element_type for x in xs]
    to_apply = root.attributes["to_apply"].text
    first_lines = _first_lines(comp, root) + [
        _reduce_text(root.name, [f"%{x.name}" for x in xs], inits, etypes, middle, inner,
                     to_apply, root=True)]
    last_lines = _last_lines(comp, root, f"%{root.name}.pre", middle, outer)
    return _parse_parts(fusion, first_lines, last_lines,
                        [Shape(t, middle) for t in etypes], "pre", "final",
                        ("kInput", "kInput"))


# Rows of fewer than 32 elements, down to this many, are whole parts too
# where the fusion reads a value of each row (_whole_rows).
MIN_WHOLE_ROW_READ_BY_ROW = 8


def _whole_rows(x: HloInstruction, n: int, comp) -> int | None:
    """For the CPU target: where a reduction of `n` elements of `x` is
    whole rows of its minor dimension (of 32 elements to a block's bound),
    as many parts as rows, so that each part is a row (n / k about sqrt(n)
    cuts rows in pieces: what the fusion reads a row at, a cross-entropy's
    max and log(sum) of each row, the part's lanes then gather); None
    otherwise. The cross-entropy -log_softmax(x).mean() of f32[4096,1000]
    summed x - max - log(sum) in 4000 parts of 1024 in 0.48 ms, in its
    4096 rows in 0.31 ms. Rows of MIN_WHOLE_ROW_READ_BY_ROW to 31 elements
    only where `comp` reads such a value (a broadcast along the rows):
    through xla_gpu.jax.jit, A/B in one process, the cross-entropy over
    f32[65536,24] 1.46 -> 1.18 ms (jax.jit 1.12), f32[32768,20] 0.88 ->
    0.61, f32[65536,16] 0.78 -> 0.55, bf16[65536,24] 2.55 -> 1.70; a sum
    of the inputs alone over f32[65536,24] 1.36x slower in rows."""
    dims = x.shape.dims
    if not dims:
        return None
    minor = dims[x.shape.minor_to_major[0]]
    bound = kMinThreadsXRowReduction * kRowReductionTileX
    if not (MIN_WHOLE_ROW_READ_BY_ROW <= minor <= bound and n % minor == 0 and n > minor):
        return None
    if minor < 32 and not broadcasts_along(comp, dims, x.shape.minor_to_major[0]):
        return None
    return n // minor


def _shape(etype, dims) -> str:
    return Shape(etype, tuple(dims)).to_text()


def _build(fusion, root, normalized, pad, operand_dims, inner_reduced, middle,
           outer_reduced) -> list[HloInstruction]:
    """The two fusions, parsed from the text of a module that holds them
    (the emitters read the parsed attributes). Both take `fusion`'s
    operands (each reads those it needs); the second also the first's
    result, as its last."""
    comp = fusion.fused_computation
    xs, inits = _inputs_and_inits(root)
    etypes = [x.shape.element_type for x in xs]
    to_apply = root.attributes["to_apply"].text
    # The new instructions' names: the reduce's, with a suffix no
    # instruction of the computation has in any of them (a part split
    # again keeps those of its first split: the last part of a split holds
    # its `.partial` parameter, the first its `.split`).
    taken = {i.name for i in comp.instructions}
    depth = 0
    while any(f"{root.name}.{kind}{depth or ''}{tag}" in taken
              for kind in ("split", "partial", "normalized", "padded") for tag in ("", ".0")):
        depth += 1
    name, suffix = root.name, str(depth or "")
    # The first: the reduce's operands and what they read, the reduce over
    # n / k only (each operand of a variadic reduce padded with its init).
    lines = _first_lines(comp, root)
    splits = []
    for j, (x, init, etype) in enumerate(zip(xs, inits, etypes)):
        tag = f".{j}" if len(xs) > 1 else ""
        value = f"%{x.name}"
        if pad is not None:
            dim, size = pad
            padded = list(normalized)
            padded[dim] = size
            config = "x".join(f"0_{size - normalized[d]}" if d == dim else "0_0"
                              for d in range(3))
            lines.append(f"%{name}.normalized{suffix}{tag} = {_shape(etype, normalized)} "
                         f"reshape({value})")
            lines.append(f"%{name}.padded{suffix}{tag} = {_shape(etype, padded)} "
                         f"pad(%{name}.normalized{suffix}{tag}, %{init.name}), padding={config}")
            value = f"%{name}.padded{suffix}{tag}"
        elif tuple(x.shape.dims) == tuple(operand_dims):
            # Rows reduced as they are (a sum over all of [4096,1000], its
            # rows first): no reshape, which would keep the part from
            # reading its row values at its own rows (_reads_by_row's walk
            # of elementwise ops) and out of a row program.
            splits.append(value)
            continue
        lines.append(f"%{name}.split{suffix}{tag} = {_shape(etype, operand_dims)} "
                     f"reshape({value})")
        splits.append(f"%{name}.split{suffix}{tag}")
    lines.append(_reduce_text(name, splits, inits, etypes, middle, inner_reduced, to_apply,
                              root=True))
    first_lines = lines
    # The last: k reduced, then what the computation did after the reduce.
    lines = _last_lines(comp, root, f"%{name}.partial{suffix}", middle, [outer_reduced])
    return _parse_parts(fusion, first_lines, lines, [Shape(t, tuple(middle)) for t in etypes],
                        "tree", "outer", ("kInput", "kInput"))


def _first_lines(comp, reduce: HloInstruction) -> list[str]:
    """The first part's computation but its root: `comp`'s parameters and
    what `reduce`'s operands read (ROOT dropped)."""
    needed = _before(reduce.operands)
    return [i.to_text().removeprefix("ROOT ") for i in comp.instructions
            if i.opcode == "parameter" or id(i) in needed]


def _last_lines(comp, reduce: HloInstruction, partial: str, middle, dims: list[int]) -> list[str]:
    """The last part's computation: `comp`'s parameters, then `partial`
    (the first part's result, of dimensions `middle`) as its last, `reduce`
    over `dims` of it, and what `comp` computes after `reduce`."""
    xs, inits = _inputs_and_inits(reduce)
    after = {id(i) for i in _after(comp, reduce)}
    needed = _before([*inits] + [o for i in comp.instructions if id(i) in after and i is not reduce
                                 for o in i.operands], stop=[reduce])
    params = comp.parameters
    lines = [i.to_text().removeprefix("ROOT ") for i in params]
    partials = [partial + (f".{j}" if len(xs) > 1 else "") for j in range(len(xs))]
    for j, (x, name) in enumerate(zip(xs, partials)):
        lines.append(f"{name} = {_shape(x.shape.element_type, middle)} "
                     f"parameter({len(params) + j})")
    for inst in comp.instructions:
        if inst is reduce:
            lines.append(_reduce_text(reduce.name, partials, inits,
                                      [x.shape.element_type for x in xs], _result_dims(reduce),
                                      dims, reduce.attributes["to_apply"].text,
                                      root=inst is comp.root))
        elif inst.opcode != "parameter" and (id(inst) in after or id(inst) in needed):
            lines.append(inst.to_text())
    return lines


def _parse_parts(fusion, first: list[str], last: list[str], middles: list[Shape],
                 first_suffix: str, last_suffix: str,
                 kinds: tuple[str, str]) -> list[HloInstruction]:
    """Two fusions from their computations' lines, parsed from the text of
    a module that holds them (the emitters read the parsed attributes):
    the first of `middles`' one shape, on `fusion`'s operands; the last of
    `fusion`'s, on them and the first's result (its last parameter). Both
    call `fusion`'s computations. Where `middles` has several shapes, the
    first is their tuple, its get-tuple-elements (returned between the
    two) the last's last parameters."""
    comp = fusion.fused_computation
    names = (f"{comp.name}.{first_suffix}", f"{comp.name}.{last_suffix}")
    texts = [f"%{name} {{\n  " + "\n  ".join(lines) + "\n}"
             for name, lines in zip(names, (first, last))]
    args = "".join(f"%arg{i}, " for i in range(len(fusion.operands)))
    inner_name = f"{fusion.name}.{first_suffix}"
    shapes = [m.to_text(layout=False) for m in middles]
    results = [f"%{inner_name}"]
    elements = ""
    if len(middles) > 1:
        results = [f"%{inner_name}.{k}" for k in range(len(middles))]
        elements = "".join(f"  {r} = {t} get-tuple-element(%{inner_name}), index={k}\n"
                           for k, (r, t) in enumerate(zip(results, shapes)))
    inner_shape = shapes[0] if len(shapes) == 1 else "(" + ", ".join(shapes) + ")"
    entry = ("ENTRY %parts {\n" +
             "".join(f"  %arg{i} = {o.shape.to_text(layout=False)} parameter({i})\n"
                     for i, o in enumerate(fusion.operands)) +
             f"  %{inner_name} = {inner_shape} fusion({args.rstrip(', ')}), "
             f"kind={kinds[0]}, calls=%{names[0]}\n" + elements +
             f"  ROOT %{fusion.name} = {fusion.shape.to_text(layout=False)} fusion("
             f"{args}{', '.join(results)}), kind={kinds[1]}, calls=%{names[1]}\n}}")
    called = comp.callees()
    callees = "\n\n".join(c.to_text() for c in called)
    module = parse_hlo(f"HloModule parts\n\n{callees}\n\n{texts[0]}\n\n{texts[1]}\n\n"
                       f"{entry}\n", source=f"<the parts of {fusion.name}>")
    inner, *gets, outer = module.entry.instructions[len(fusion.operands):]
    # Bound to `fusion`'s operands, calling `fusion`'s computations.
    inner.operands = list(fusion.operands)
    outer.operands = [*fusion.operands, *(gets or [inner])]
    leaves = [Shape(m.element_type, m.dims, Layout(tuple(range(m.rank - 1, -1, -1))))
              for m in middles]
    for get, leaf in zip(gets, leaves):
        get.shape = leaf
    inner.shape = leaves[0] if len(leaves) == 1 else Shape(tuple_shapes=tuple(leaves))
    outer.shape = fusion.shape
    for part in (inner, outer):
        call_the_originals(part, called)
    return [inner, *gets, outer]


def call_the_originals(fusion: HloInstruction, called) -> None:
    """Fusion `fusion`, parsed from text that held copies of the
    computations `called`, calls those instead (its instructions' callees
    by name)."""
    by_name = {c.name: c for c in called}
    for inst in fusion.fused_computation.instructions:
        inst.called_computations = [by_name[c.name] for c in inst.called_computations]
