"""The HLO module model: modules, computations, instructions.

Attributes keep the text they were written with (so printing gives back what
was read, unknown attributes included) next to the parsed value of the ones
the emitters use (`dimensions`, `slice`, `padding`, `window`, gather
dimension numbers, ...).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Iterator, TypeVar

import numpy as np

from .shape import Shape
from .types import ElementType

__all__ = ["Attribute", "HloComputation", "HloInstruction", "HloModule", "Literal",
           "computations_called_by", "replace_uses"]


@dataclass
class Attribute:
    """`name=text`; `value` is the parsed form for the attributes the
    parser knows (None for the others, which print back as they came)."""

    name: str
    text: str
    value: Any = None


@dataclass
class Literal:
    """A constant's literal: its text and its values as a numpy array of the
    element type (None when the text elides them, as in `{...}`)."""

    text: str
    value: np.ndarray | None

    @classmethod
    def of(cls, value: np.ndarray, etype: ElementType) -> "Literal":
        """The literal of `value` (of element type `etype`), its text made
        when something prints it (a table of 8M values would take seconds
        to print, and a constant hoisted out of the module is never
        printed)."""
        literal = _ValueLiteral.__new__(_ValueLiteral)
        literal.value, literal._etype, literal._text = value, etype, None
        return literal

    @property
    def from_value(self) -> bool:
        """Whether the literal was made from its values (Literal.of)."""
        return False


class _ValueLiteral(Literal):
    from_value = True

    @property
    def text(self) -> str:  # noqa: D102  (Literal.text)
        if self._text is None:
            self._text = literal_text(self.value, self._etype)
        return self._text


def value_text(value, etype: ElementType) -> str:
    """One value as HLO writes it (a float's shortest repr is exact: the
    double it denotes is the value itself; a NaN keeps its sign)."""
    if etype.is_pred:
        return "true" if value else "false"
    if etype.is_float:
        v = float(value)
        if math.isnan(v):
            return "-nan" if math.copysign(1.0, v) < 0 else "nan"
        if math.isinf(v):
            return "inf" if v > 0 else "-inf"
        return repr(v)
    return str(int(value))


def literal_text(value: np.ndarray, etype: ElementType) -> str:
    """XLA's text of an array literal (`{{1, 2}, {3, 4}}`; a scalar bare)
    of a numeric or pred array (complex ones are not made here)."""
    items = [value_text(v, etype) for v in value.reshape(-1).tolist()]
    if value.ndim == 0:
        return items[0]
    for n in reversed(value.shape):
        items = ["{" + ", ".join(items[k:k + n]) + "}" for k in range(0, len(items), n)] \
            if n else ["{}" for _ in range(len(items) or 1)]
    return items[0] if items else "{}"


@dataclass(eq=False)
class HloInstruction:
    name: str
    opcode: str
    shape: Shape
    operands: list["HloInstruction"] = field(default_factory=list)
    attributes: dict[str, Attribute] = field(default_factory=dict)
    literal: Literal | None = None
    parameter_number: int | None = None
    parent: "HloComputation | None" = None
    users: list["HloInstruction"] = field(default_factory=list)
    called_computations: list["HloComputation"] = field(default_factory=list)
    control_predecessors: list["HloInstruction"] = field(default_factory=list)
    # Where the instruction starts in the source text (1-based).
    line: int = 0
    column: int = 0

    def attr(self, name: str, default: Any = None) -> Any:
        """The parsed value of attribute `name` (or `default`)."""
        a = self.attributes.get(name)
        if a is None:
            return default
        return a.value if a.value is not None else a.text

    # Frequently used attributes, by their XLA names.
    @property
    def dimensions(self) -> list[int]:
        return self.attr("dimensions", [])

    @property
    def fusion_kind(self) -> str | None:
        return self.attr("kind")

    @property
    def is_root(self) -> bool:
        return self.parent is not None and self.parent.root is self

    @property
    def fused_computation(self) -> "HloComputation | None":
        if self.opcode != "fusion" or not self.called_computations:
            return None
        return self.called_computations[0]

    def operand_text(self) -> str:
        if self.opcode == "parameter":
            return str(self.parameter_number)
        if self.opcode == "constant":
            return self.literal.text if self.literal else ""
        return ", ".join(f"%{o.name}" for o in self.operands)

    def to_text(self) -> str:
        text = f"%{self.name} = {self.shape} {self.opcode}({self.operand_text()})"
        for a in self.attributes.values():
            text += f", {a.name}={a.text}"
        return ("ROOT " if self.is_root else "") + text

    def __repr__(self) -> str:
        return f"<HloInstruction {self.name} = {self.shape} {self.opcode}>"


@dataclass(eq=False)
class HloComputation:
    name: str
    instructions: list[HloInstruction] = field(default_factory=list)
    root: HloInstruction | None = None
    is_entry: bool = False
    module: "HloModule | None" = None

    @property
    def parameters(self) -> list[HloInstruction]:
        """Parameters ordered by number."""
        params = [i for i in self.instructions if i.opcode == "parameter"]
        return sorted(params, key=lambda p: p.parameter_number)

    @property
    def outputs(self) -> list[HloInstruction]:
        """What the computation returns: a tuple root's operands, else the
        root (a fusion's outputs, a reducer's results)."""
        root = self.root
        return list(root.operands) if root.opcode == "tuple" else [root]

    def callees(self) -> list["HloComputation"]:
        """The computations its instructions call, and those they call,
        each once, callees before their callers."""
        return computations_called_by(self.instructions)

    def instruction(self, name: str) -> HloInstruction:
        for i in self.instructions:
            if i.name == name:
                return i
        raise KeyError(f"computation {self.name} has no instruction {name!r}")

    def topological_order(self) -> list[HloInstruction]:
        """Every instruction after its operands (and control predecessors);
        ties keep the text order."""
        return _post_order(self.instructions,
                           lambda inst: inst.operands + inst.control_predecessors)

    def signature_text(self) -> str:
        params = ", ".join(f"{p.name}: {p.shape.to_text(layout=False)}"
                           for p in self.parameters)
        result = self.root.shape.to_text(layout=False) if self.root else "()"
        return f"({params}) -> {result}"

    def to_text(self) -> str:
        head = ("ENTRY " if self.is_entry else "") + f"%{self.name} {self.signature_text()} {{"
        body = "\n".join("  " + i.to_text() for i in self.instructions)
        return f"{head}\n{body}\n}}"

    def __repr__(self) -> str:
        return f"<HloComputation {self.name}: {len(self.instructions)} instructions>"


def replace_uses(comp: HloComputation, old: HloInstruction, new: HloInstruction) -> None:
    """Every user of `old` (of computation `comp`) reads `new` instead, and
    `new` is the root where `old` was (XLA's ReplaceAllUsesWith)."""
    for user in old.users:
        user.operands = [new if o is old else o for o in user.operands]
        if user not in new.users:
            new.users.append(user)
    old.users = []
    if comp.root is old:
        comp.root = new


def computations_called_by(instructions: Iterable[HloInstruction]) -> list[HloComputation]:
    """The computations `instructions` call, transitively, each once,
    callees before their callers (the order HLO text defines them in)."""
    return _post_order([c for i in instructions for c in i.called_computations],
                       lambda comp: [c for i in comp.instructions for c in i.called_computations])


T = TypeVar("T")


def _post_order(starts: Iterable[T], children: Callable[[T], list[T]]) -> list[T]:
    """Every node reachable from `starts`, once, each after its children;
    ties keep the order given. Iterative: deep graphs do not recurse."""
    order: list[T] = []
    state: dict[int, int] = {}  # 1: visiting, 2: done
    for start in starts:
        if state.get(id(start)) == 2:
            continue
        stack = [(start, False)]
        while stack:
            node, expanded = stack.pop()
            if expanded:
                state[id(node)] = 2
                order.append(node)
                continue
            if state.get(id(node)):
                continue
            state[id(node)] = 1
            stack.append((node, True))
            for child in reversed(children(node)):
                if not state.get(id(child)):
                    stack.append((child, False))
    return order


@dataclass(eq=False)
class HloModule:
    name: str
    attributes: list[Attribute] = field(default_factory=list)
    # The FileNames/FunctionNames/FileLocations/StackFrames tables, verbatim.
    tables: str = ""
    computations: list[HloComputation] = field(default_factory=list)
    entry: HloComputation | None = None
    # The file the module was parsed from (for diagnostics), if any.
    source: str | None = None

    def computation(self, name: str) -> HloComputation:
        for c in self.computations:
            if c.name == name:
                return c
        raise KeyError(f"module {self.name} has no computation {name!r}")

    def instructions(self) -> Iterator[HloInstruction]:
        for c in self.computations:
            yield from c.instructions

    def fusions(self) -> list[HloInstruction]:
        """The fusion instructions of the entry computation, in order."""
        return [i for i in self.entry.instructions if i.opcode == "fusion"] if self.entry else []

    def to_text(self) -> str:
        head = f"HloModule {self.name}"
        for a in self.attributes:
            head += f", {a.name}={a.text}"
        parts = [head]
        if self.tables:
            parts.append(self.tables)
        parts.extend(c.to_text() for c in self.computations)
        return "\n\n".join(parts) + "\n"

    def __str__(self) -> str:
        return self.to_text()
