"""The computation partitioner: splits a fusion's computation into subgraphs
that can each be emitted as one function.

Why: an element of an instruction's output is computed where it is needed.
If two users need the same instruction at *different* indices, emitting it
inline in both recomputes it; with several such splits the code grows
exponentially. In

        param
          |
         log
         |  \\
         |  transpose
         |  /
         add

`add` reads `log` at (i, j) and, through `transpose`, at (j, i). The rules
(XLA's):

1. an instruction with one user is emitted with that user;
2. an instruction whose users all read it through the same indexing (from
   their subgraph's root) is emitted with them;

otherwise it roots a new subgraph. And since `add` and `transpose` read
`log` at different indices, they are not emitted together either: a user
that reads a split instruction through a map other than the identity roots
its own subgraph. The example is thus three functions of one instruction
each, as the spec draws it, and no function reads another at two indices.
An instruction read at several elements per element of its user (through
a map with range variables: gather's indices, a reduction's input) roots
its own subgraph too. Parameters are not emitted: subgraph functions take
the computation's parameters as tensors.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Callable

from ..hlo import HloComputation, HloInstruction
from ..indexing import identity_map, output_to_input_indexing
from ..indexing_map import IndexingMap
from .elemental import EmitterError

__all__ = ["Subgraph", "partition", "partition_to_dot", "sanitize_function_name"]


def sanitize_function_name(name: str) -> str:
    """An HLO name as a function name (XLA's SanitizeFunctionName): what
    is not a letter, digit or underscore becomes an underscore."""
    clean = re.sub(r"[^A-Za-z0-9_]", "_", name)
    return clean if clean and not clean[0].isdigit() else f"_{clean}"


@dataclass(eq=False)
class Subgraph:
    """Instructions emitted as one function, computing `roots` at an index
    of their (common) shape."""

    name: str
    roots: list[HloInstruction]
    instructions: list[HloInstruction] = field(default_factory=list)

    def __contains__(self, inst: HloInstruction) -> bool:
        return any(i is inst for i in self.instructions)


def partition(comp: HloComputation,
              is_subgraph_root: Callable[[HloInstruction], bool] | None = None
              ) -> list[Subgraph]:
    """The subgraphs of `comp`, the one of its outputs first. `is_subgraph_root`
    (XLA's hook) forces instructions to root their own subgraph: a hero
    emitter's heroes, which it emits itself, and outputs it writes apart
    from the others. Needs an active MLIR context (indexing maps are
    compared)."""
    forced = is_subgraph_root or (lambda inst: False)
    roots = comp.outputs
    # The outputs share one function, except those the emitter roots in
    # their own (a reduction's outputs and side outputs have other shapes).
    shared = [r for r in roots if not forced(r)]
    subgraphs: list[Subgraph] = []
    owner: dict[int, Subgraph] = {}
    if shared:
        main = Subgraph(sanitize_function_name(f"{comp.name}_{shared[0].name}"), list(shared),
                        list(shared))
        subgraphs.append(main)
        owner.update({id(r): main for r in shared})
    for r in roots:
        if id(r) not in owner:
            own = Subgraph(sanitize_function_name(f"{comp.name}_{r.name}"), [r], [r])
            subgraphs.append(own)
            owner[id(r)] = own
    # The map from an element of the owning subgraph's roots to the element
    # of the instruction they read.
    reach: dict[int, IndexingMap] = {id(r): identity_map(_index_dims(r)) for r in roots}
    # Each user's operand maps, computed once (both walks ask for them
    # once per operand).
    operand_maps: _OperandMaps = {}
    composed_maps: dict[tuple[int, int], tuple[IndexingMap, IndexingMap, IndexingMap]] = {}
    split = _users_reading_at_different_indices(comp, operand_maps)
    for inst in reversed(comp.topological_order()):
        # A multi-output fusion's tuple root only names the outputs.
        if id(inst) in owner or inst.opcode == "parameter" or inst is comp.root:
            continue
        users = [u for u in inst.users if u.parent is comp]
        groups = {id(owner[id(u)]) for u in users if id(u) in owner}
        maps: list[IndexingMap] = []
        if len(groups) == 1 and len(users) == sum(id(u) in owner for u in users):
            for u in users:
                for m in _reads(u, inst, operand_maps):
                    composed = _then(reach[id(u)], m, composed_maps)
                    if composed not in maps:
                        maps.append(composed)
        # A map with range variables reads several elements (gather's
        # indices, a reduction's input).
        several = any(v.upper > v.lower for v in maps[0].range_vars) if maps else False
        if len(groups) == 1 and len(maps) == 1 and not several and id(inst) not in split \
                and not forced(inst):
            group = owner[id(users[0])]
            group.instructions.append(inst)
            owner[id(inst)] = group
            reach[id(inst)] = maps[0]
            continue
        sub = Subgraph(sanitize_function_name(f"{comp.name}_{inst.name}"), [inst], [inst])
        subgraphs.append(sub)
        owner[id(inst)] = sub
        reach[id(inst)] = identity_map(_index_dims(inst))
    _refuse_call_cycles(subgraphs, owner)
    return subgraphs


def _refuse_call_cycles(subgraphs: list[Subgraph], owner: dict[int, Subgraph]) -> None:
    """Raises EmitterError where a subgraph's function would call itself
    through others: the outputs' shared function (one function of several
    roots) computing an output that reads a reduction whose input reads
    another of those outputs (x - mean beside (x - mean) * rsqrt(sum((x -
    mean)^2)): the input's function called the outputs' for x - mean, which
    called the reduction again, until the stack overflowed; stop 90's row
    regions made such fusions, found by their random generator)."""
    calls = {id(s): {id(owner[id(o)]) for i in s.instructions for o in i.operands
                     if id(o) in owner and owner[id(o)] is not s} for s in subgraphs}
    state: dict[int, int] = {}  # 1: on the walk's path, 2: done

    def walk(s: int) -> bool:
        state[s] = 1
        for t in calls[s]:
            if state.get(t) == 1 or (t not in state and walk(t)):
                return True
        state[s] = 2
        return False

    for s in subgraphs:
        if id(s) not in state and walk(id(s)):
            raise EmitterError(s.roots[0], "its outputs read one another through a "
                                           "reduction (a subgraph would call itself)")


def _then(first: IndexingMap, second: IndexingMap,
          composed: dict[tuple[int, int], tuple[IndexingMap, IndexingMap, IndexingMap]]
          ) -> IndexingMap:
    """first.then(second), composed once a pair of maps (an elementwise
    chain composes the same identity with the same identity at every op)."""
    key = (id(first), id(second))
    hit = composed.get(key)
    if hit is None:  # the pair is kept, so that the ids stay theirs
        hit = composed[key] = (first, second, first.then(second))
    return hit[2]


# Each user's maps per operand (output_to_input_indexing), by user.
_OperandMaps = dict[HloInstruction, list[list[IndexingMap]]]


def _index_dims(inst: HloInstruction) -> tuple[int, ...]:
    """The dimensions a subgraph function of `inst` is indexed by: those of
    its array, or of the arrays of a tuple (a variadic reduce's, all of one
    shape)."""
    shape = inst.shape
    return shape.leaves()[0].dims if shape.is_tuple else shape.dims


def _reads(user: HloInstruction, inst: HloInstruction,
           operand_maps: _OperandMaps) -> list[IndexingMap]:
    """The maps through which `user` reads `inst` (one per operand slot);
    none for a user that reads at data-dependent indices (a scatter: the
    emitter that owns it reads its operands), so `inst` roots its own
    subgraph. `operand_maps` keeps each user's maps."""
    if user.opcode == "scatter":
        return []
    per_operand = operand_maps.get(user)
    if per_operand is None:
        per_operand = operand_maps[user] = output_to_input_indexing(user)
    return [m for k, op in enumerate(user.operands) if op is inst for m in per_operand[k]]


def _users_reading_at_different_indices(comp: HloComputation,
                                        operand_maps: _OperandMaps) -> set[int]:
    """Users that read an instruction (not a parameter) at other indices
    than its other users do, through a map other than the identity. A
    scalar has one element: all its users read the same."""
    split: set[int] = set()
    for inst in comp.instructions:
        if inst.opcode == "parameter" or inst.shape.rank == 0:
            continue
        users = [u for u in inst.users if u.parent is comp and u.opcode != "tuple"]
        reads = {id(u): _reads(u, inst, operand_maps) for u in users}
        distinct: list[IndexingMap] = []
        for m in (m for ms in reads.values() for m in ms):
            if m not in distinct:
                distinct.append(m)
        if len(distinct) < 2:
            continue
        identity = identity_map(inst.shape.dims)
        for u in users:
            if any(m != identity for m in reads[id(u)]):
                split.add(id(u))
    return split


def partition_to_dot(comp: HloComputation, subgraphs: list[Subgraph]) -> str:
    """A Graphviz picture of the partition: one cluster per subgraph (its
    function), parameters outside, edges from operands to users."""
    lines = [f'digraph "{comp.name}" {{', "  rankdir=BT;", '  node [shape=box, fontname="monospace"];']
    for p in comp.parameters:
        lines.append(f'  "{p.name}" [label="{p.name}\\n{p.shape}", shape=ellipse];')
    for i, s in enumerate(subgraphs):
        lines.append(f'  subgraph "cluster_{i}" {{')
        lines.append(f'    label="{s.name}"; style=rounded; color={"red" if i == 0 else "blue"};')
        for inst in s.instructions:
            lines.append(f'    "{inst.name}" [label="{inst.name}\\n{inst.opcode} {inst.shape}"];')
        lines.append("  }")
    for inst in comp.instructions:
        for op in inst.operands:
            lines.append(f'  "{op.name}" -> "{inst.name}";')
    lines.append("}")
    return "\n".join(lines) + "\n"
