"""The emitter registry: one class per EmitterKind, registered where it is
defined.

    @register_emitter(EmitterKind.REDUCTION)
    class ReductionEmitter(EmitterBase): ...

A hero emitter is added by writing its file (`reduction.py`, ...), and
importing it in `emitters/__init__.py` so that it registers.
"""

from __future__ import annotations

import logging
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


# Remarks (`--verbose` in the tools): which emitter took a fusion and why.
REMARKS = logging.getLogger("xla_gpu.emitters")


def emitter_class(analysis: FusionAnalysis, device=None) -> type:
    """The registered emitter for the analysis' kind; the loop emitter
    where it is correct and the kind's own is not built yet, or declines
    the fusion (an emitter's `decline_reason(analysis, device)`, said as a
    remark)."""
    name = analysis.fusion.name
    if analysis.kind in EMITTERS:
        cls = EMITTERS[analysis.kind]
        # One kind, several emitters (XLA's CreateTransposeFusion).
        specialize = getattr(cls, "specialize", None)
        if specialize is not None:
            cls = specialize(analysis)
        decline = getattr(cls, "decline_reason", None)
        reason = decline(analysis, device) if decline is not None and device else None
        if reason is None or analysis.kind not in _LOOP_CAN_STAND_IN:
            REMARKS.info("%s: the %s emitter (%s)", name, analysis.kind.value, cls.__name__)
            return cls
        REMARKS.info("%s: the %s emitter declines: %s; the loop emitter writes it", name,
                     analysis.kind.value, reason)
        return EMITTERS[EmitterKind.LOOP]
    if analysis.kind in _LOOP_CAN_STAND_IN:
        REMARKS.info("%s: the %s emitter is not built; the loop emitter writes it", name,
                     analysis.kind.value)
        return EMITTERS[EmitterKind.LOOP]
    raise EmitterNotBuiltError(analysis.deciding_hero, f"the fusion's hero needs the "
                               f"{analysis.kind.value} emitter, which is not built yet")
