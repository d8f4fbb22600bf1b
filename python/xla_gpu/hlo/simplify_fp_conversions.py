"""XLA's simplify-fp-conversions on one computation: a chain of two or more
floating-point converts, A -> B -> ... -> D, becomes one convert A -> D (or
A itself where D is A's type).

XLA runs it where excess precision is allowed (`xla_allow_excess_precision`,
on by default): an f32 -> bf16 -> f32 round trip then leaves the value
unrounded. The JAX backend runs it on the fusions XLA:CPU hands to YNNPACK,
which computes them that way (whole_program.py)."""

from __future__ import annotations

from .module import HloComputation, HloInstruction, replace_uses

__all__ = ["simplify_fp_conversions"]


def _is_float_convert(inst: HloInstruction) -> bool:
    return inst.opcode == "convert" and inst.shape.element_type.is_float


def _remove_dead(comp: HloComputation, inst: HloInstruction) -> None:
    """Removes `inst` if nothing uses it (and isn't the root), then its
    operands that this leaves unused, as XLA's ReplaceInstruction does."""
    work = [inst]
    while work:
        dead = work.pop()
        if dead.users or dead is comp.root or dead.opcode == "parameter" or \
                dead not in comp.instructions:
            continue
        comp.instructions.remove(dead)
        for o in dead.operands:
            o.users = [u for u in o.users if u is not dead]
            work.append(o)


def simplify_fp_conversions(comp: HloComputation) -> bool:
    """Rewrites `comp` in place; whether anything changed."""
    changed = False
    for inst in comp.topological_order():
        if not inst.users and inst is not comp.root:
            continue  # removed with a chain before it
        source, length = inst, 0
        while _is_float_convert(source):
            source, length = source.operands[0], length + 1
        if length < 2:
            continue
        first = inst.operands[0]
        if inst.shape.element_type.name == source.shape.element_type.name:
            replace_uses(comp, inst, source)
            _remove_dead(comp, inst)
        else:
            inst.operands = [source]
            source.users.append(inst)
            first.users = [u for u in first.users if u is not inst]
            _remove_dead(comp, first)
        changed = True
    return changed
