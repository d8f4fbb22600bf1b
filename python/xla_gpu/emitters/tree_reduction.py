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

`fusion`'s root must be a reduce of one operand. The reduced dimension n
(of the normalized reduction, see fusion_analysis.reduction_dimensions)
becomes [k, n / k], padded with the init value where k does not divide it;
n / k is about sqrt(n), at most the race-free bound, the one of least
padding between half of that and it, a power of two among equals (XLA's
choice). The first fusion is `fusion`'s computation with the reduce over
n / k only (its operands' ops stay fused with it: the input is read once);
the last reduces k and has `fusion`'s shape. A row reduction of more than
kBatchedReductionRaceFreeBound rows a block first reduces its minor
dimension, then the rows (XLA's case 1). Each part is split again until it
is race-free. XLA leaves min/max to atomics; here they are split too (any
order gives their result).

The sums run in another order than one thread's, as on XLA:GPU.
"""

from __future__ import annotations

import math

from ..hlo import HloInstruction, parse_hlo
from ..hlo.shape import Layout, Shape
from .fusion_analysis import (ReductionDimensions, is_reduction_from_or_to_contiguous,
                              kBatchedReductionRaceFreeBound, kColumnReductionTileY,
                              kMinThreadsXRowReduction, kRowReductionTileX,
                              reduction_dimensions, reduction_is_race_free)

__all__ = ["split_reduction"]

# Parts of one reduction at most (each split at least squares the bound).
_MAX_PARTS = 4


def split_reduction(fusion: HloInstruction, warp_size: int = 32) -> list[HloInstruction] | None:
    """`fusion` as fusions run one after the other, the last of `fusion`'s
    shape, each taking the one before it (and `fusion`'s operands where it
    reads them); None when `fusion` is not a single-operand reduction that
    needs splitting. The new fusions are in no computation yet."""
    parts = [fusion]
    while len(parts) <= _MAX_PARTS:
        for i, part in enumerate(parts):
            halves = _split_once(part, warp_size)
            if halves is not None:
                parts[i:i + 1] = halves
                for later in parts[i + 2:]:  # read the last half now
                    later.operands = [halves[-1] if o is part else o for o in later.operands]
                halves[-1].users = [u for u in parts[i + 2:] if halves[-1] in u.operands]
                break
        else:
            return parts if len(parts) > 1 else None
    return None


def _reduce_root(fusion: HloInstruction) -> HloInstruction | None:
    comp = fusion.fused_computation
    root = comp.root if comp is not None else None
    if (root is None or root.opcode != "reduce" or len(root.operands) != 2 or
            not root.shape.is_array or len(root.called_computations) != 1):
        return None
    init = root.operands[1]
    if init.opcode not in ("constant", "parameter") or init.shape.rank != 0:
        return None
    return root


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


def _split_once(fusion: HloInstruction, warp_size: int) -> list[HloInstruction] | None:
    root = _reduce_root(fusion)
    if root is None or not is_reduction_from_or_to_contiguous(root, warp_size):
        return None
    rd: ReductionDimensions = reduction_dimensions(root)
    if reduction_is_race_free(rd, warp_size):
        return None
    d0, d1, d2 = rd.dimensions
    out = root.shape.dims
    pad = None  # (dimension of the normalized (d0, d1, d2), padded size)
    if rd.is_row_reduction and d0 > kBatchedReductionRaceFreeBound:
        # The minor reduced dimension first, then the rows.
        operand_dims = (d0, *out, d2)
        inner_reduced = [len(out) + 1]
        middle = (d0, *out)
        outer_reduced = 0
    elif rd.is_row_reduction:
        k, padded = _best_split(d2, kMinThreadsXRowReduction * kRowReductionTileX)
        if padded != d2:
            pad = (2, padded)
        lead = (d0,) if d0 > 1 else ()
        operand_dims = (*lead, *out, k, padded // k)
        inner_reduced = ([0] if lead else []) + [len(operand_dims) - 1]
        middle = (*out, k)
        outer_reduced = len(out)
    else:
        k, padded = _best_split(d1, warp_size * kColumnReductionTileY)
        if padded != d1:
            pad = (1, padded)
        p = _prefix_with_product(out, d0)
        operand_dims = (*out[:p], k, padded // k, *out[p:])
        inner_reduced = [p + 1]
        middle = (*out[:p], k, *out[p:])
        outer_reduced = p
    return _build(fusion, root, (d0, d1, d2), pad, operand_dims, inner_reduced, middle,
                  outer_reduced)


def _shape(etype, dims) -> str:
    return Shape(etype, tuple(dims)).to_text()


def _build(fusion, root, normalized, pad, operand_dims, inner_reduced, middle,
           outer_reduced) -> list[HloInstruction]:
    """The two fusions, parsed from the text of a module that holds them
    (the emitters read the parsed attributes)."""
    comp = fusion.fused_computation
    x, init = root.operands
    etype = x.shape.element_type
    reducer = root.called_computations[0]
    to_apply = root.attributes["to_apply"].text
    # The new instructions' names: the reduce's, with a suffix no
    # instruction of the computation has (a part split again keeps those of
    # its first split).
    taken = {i.name for i in comp.instructions}
    depth = 0
    while f"{root.name}.split{depth or ''}" in taken:
        depth += 1
    name, suffix = root.name, str(depth or "")
    # The first fusion: the computation, the reduce over n / k only.
    lines = [i.to_text() for i in comp.instructions if i is not root]
    value = f"%{x.name}"
    if pad is not None:
        dim, size = pad
        padded = list(normalized)
        padded[dim] = size
        config = "x".join(f"0_{size - normalized[d]}" if d == dim else "0_0" for d in range(3))
        lines.append(f"%{name}.normalized{suffix} = {_shape(etype, normalized)} reshape({value})")
        lines.append(f"%{name}.padded{suffix} = {_shape(etype, padded)} pad(%{name}.normalized{suffix}, "
                     f"%{init.name}), padding={config}")
        value = f"%{name}.padded{suffix}"
    lines.append(f"%{name}.split{suffix} = {_shape(etype, operand_dims)} reshape({value})")
    lines.append(f"ROOT %{name} = {_shape(etype, middle)} reduce(%{name}.split{suffix}, %{init.name}), "
                 f"dimensions={{{','.join(map(str, inner_reduced))}}}, to_apply={to_apply}")
    first = f"%{comp.name}.tree {{\n  " + "\n  ".join(lines) + "\n}"
    # The last: k reduced.
    init_line = (f"%{name}.init = {_shape(etype, ())} constant({init.literal.text})"
                 if init.opcode == "constant" else
                 f"%{name}.init = {_shape(etype, ())} parameter(1)")
    last = (f"%{comp.name}.outer {{\n  %{name}.partial = {_shape(etype, middle)} parameter(0)\n"
            f"  {init_line}\n  ROOT %{name}.outer = {root.shape.to_text(layout=False)} "
            f"reduce(%{name}.partial, %{name}.init), dimensions={{{outer_reduced}}}, "
            f"to_apply={to_apply}\n}}")
    params = "\n  ".join(f"%arg{i} = {o.shape.to_text(layout=False)} parameter({i})"
                         for i, o in enumerate(fusion.operands))
    args = ", ".join(f"%arg{i}" for i in range(len(fusion.operands)))
    init_arg = f", %arg{init.parameter_number}" if init.opcode == "parameter" else ""
    entry = (f"ENTRY %tree {{\n  {params}\n"
             f"  %{fusion.name}.tree = {_shape(etype, middle)} fusion({args}), kind=kInput, "
             f"calls=%{comp.name}.tree\n"
             f"  ROOT %{fusion.name} = {root.shape.to_text(layout=False)} fusion("
             f"%{fusion.name}.tree{init_arg}), kind=kInput, calls=%{comp.name}.outer\n}}")
    reducers = "\n\n".join(c.to_text() for c in [*reducer.callees(), reducer])
    module = parse_hlo(f"HloModule tree\n\n{reducers}\n\n{first}\n\n{last}\n\n{entry}\n",
                       source=f"<tree reduction of {fusion.name}>")
    inner, outer = module.entry.instructions[-2:]
    # Bound to `fusion`'s operands, calling `fusion`'s reducer.
    inner.operands = list(fusion.operands)
    outer.operands = [inner] + ([fusion.operands[init.parameter_number]] if init_arg else [])
    inner.users = [outer]
    outer.users = []
    row_major = lambda s: Layout(tuple(range(s.rank - 1, -1, -1)))  # noqa: E731
    inner.shape = Shape(etype, tuple(middle), row_major(Shape(etype, tuple(middle))))
    outer.shape = fusion.shape
    for part in (inner, outer):
        for inst in part.fused_computation.instructions:
            if inst.opcode == "reduce":
                inst.called_computations = [reducer]
    return [inner, outer]
