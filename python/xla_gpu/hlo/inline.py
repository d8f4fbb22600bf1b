"""Call inlining, as XLA's CallInliner: jax's pre-optimization modules wrap
helpers (`_where`, `_pad`, `_take`) in `call`s, nested ones too; the
emitters see their bodies instead.

    inline_calls(computation)     # in place; the computation means the same
"""

from __future__ import annotations

import dataclasses

from .module import HloComputation, HloInstruction
from .parser import HloParseError

__all__ = ["inline_calls"]


def inline_calls(comp: HloComputation) -> HloComputation:
    """Replaces every `call` of `comp` by a copy of the called computation's
    instructions (its own calls inlined too), the parameters bound to the
    call's operands; users of the call then read the copy of the callee's
    root. The called computations are not changed; the copies' names get
    the call's name as a prefix, so they stay unique."""
    if not any(i.opcode == "call" for i in comp.instructions):
        return comp
    replaced: dict[int, HloInstruction] = {}
    out: list[HloInstruction] = []
    for inst in comp.topological_order():
        inst.operands = [replaced.get(id(o), o) for o in inst.operands]
        if inst.opcode != "call" or not inst.called_computations:
            out.append(inst)
            continue
        callee = inst.called_computations[0]
        if len(callee.parameters) != len(inst.operands):
            module = comp.module
            raise HloParseError(f"call {inst.name} passes {len(inst.operands)} operands to "
                                f"{callee.name}, which takes {len(callee.parameters)}",
                                inst.line, inst.column, module.source if module else None)
        body, root = _clone_body(callee, inst.operands, inst, comp)
        out += body
        replaced[id(inst)] = root
        if comp.root is inst:
            comp.root = root
    comp.instructions = out
    for inst in out:
        inst.users = []
    for inst in out:
        for o in inst.operands:
            if all(u is not inst for u in o.users):
                o.users.append(inst)
    return comp


def _clone_body(callee: HloComputation, args: list[HloInstruction], call: HloInstruction,
                parent: HloComputation, prefix: str | None = None
                ) -> tuple[list[HloInstruction], HloInstruction]:
    """Copies of `callee`'s instructions with its parameters bound to
    `args` (nested calls expanded): the copies in order, and its root's."""
    prefix = prefix or call.name
    copies: dict[int, HloInstruction] = {}
    out: list[HloInstruction] = []
    for c in callee.topological_order():
        if c.opcode == "parameter":
            copies[id(c)] = args[c.parameter_number]
            continue
        operands = [copies[id(o)] for o in c.operands]
        if c.opcode == "call" and c.called_computations:
            body, root = _clone_body(c.called_computations[0], operands, call, parent,
                                     f"{prefix}.{c.name}")
            out += body
            copies[id(c)] = root
            continue
        clone = dataclasses.replace(c, name=f"{prefix}.{c.name}", parent=parent, users=[],
                                    operands=operands, control_predecessors=[], line=c.line or call.line,
                                    column=c.column or call.column)
        copies[id(c)] = clone
        out.append(clone)
    return out, copies[id(callee.root)]
