"""The emitter registry: one class per EmitterKind, registered where it is
defined.

    @register_emitter(EmitterKind.REDUCTION)
    class ReductionEmitter(EmitterBase): ...

A hero emitter is added by writing its file (`reduction.py`, ...), and
importing it in `emitters/__init__.py` so that it registers.
"""

from __future__ import annotations

from typing import Callable, TypeVar

from .elemental import EmitterNotBuiltError
from .fusion_analysis import EmitterKind, FusionAnalysis

__all__ = ["EMITTERS", "EmitterNotBuiltError", "emitter_class", "register_emitter"]


EMITTERS: dict[EmitterKind, type] = {}

# Kinds whose fusions the loop emitter writes correctly until their own
# emitter exists (slower: uncoalesced transposes, a whole-output DUS).
_LOOP_CAN_STAND_IN = {EmitterKind.TRANSPOSE, EmitterKind.CONCATENATE,
                      EmitterKind.IN_PLACE_DYNAMIC_UPDATE_SLICE, EmitterKind.INPUT_SLICES}

T = TypeVar("T", bound=type)


def register_emitter(kind: EmitterKind) -> Callable[[T], T]:
    def register(cls: T) -> T:
        if kind in EMITTERS:
            raise ValueError(f"two emitters for {kind.value}: {EMITTERS[kind].__name__} "
                             f"and {cls.__name__}")
        EMITTERS[kind] = cls
        cls.kind = kind
        return cls
    return register


def emitter_class(analysis: FusionAnalysis) -> type:
    """The registered emitter for the analysis' kind; the loop emitter
    where it is correct and the kind's own is not built yet."""
    if analysis.kind in EMITTERS:
        return EMITTERS[analysis.kind]
    if analysis.kind in _LOOP_CAN_STAND_IN:
        return EMITTERS[EmitterKind.LOOP]
    raise EmitterNotBuiltError(analysis.deciding_hero, f"the fusion's hero needs the "
                               f"{analysis.kind.value} emitter, which is not built yet")
