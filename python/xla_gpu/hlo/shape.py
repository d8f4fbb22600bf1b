"""HLO shapes: an element type with dimensions and a layout, or a tuple."""

from __future__ import annotations

from dataclasses import dataclass, field

from .types import ElementType

__all__ = ["Layout", "Shape"]


@dataclass(frozen=True)
class Layout:
    """`{1,0}`: minor_to_major, plus whatever follows a `:` (tiling, memory
    space...), kept as text."""

    minor_to_major: tuple[int, ...]
    extra: str = ""

    def __str__(self) -> str:
        body = ",".join(str(d) for d in self.minor_to_major)
        return "{" + body + (":" + self.extra if self.extra else "") + "}"


@dataclass(frozen=True)
class Shape:
    """An array shape (`f32[2,3]{1,0}`), a tuple (`(f32[2], s32[])`) or a
    token (`token[]`). `dynamic` marks `<=N` (bounded dynamic) dimensions."""

    element_type: ElementType | None = None
    dims: tuple[int, ...] = ()
    layout: Layout | None = None
    tuple_shapes: tuple["Shape", ...] | None = None
    dynamic: tuple[bool, ...] = field(default=())

    @property
    def is_tuple(self) -> bool:
        return self.tuple_shapes is not None

    @property
    def is_array(self) -> bool:
        return not self.is_tuple and self.element_type is not None and \
            self.element_type.kind != "token"

    @property
    def rank(self) -> int:
        return len(self.dims)

    @property
    def num_elements(self) -> int:
        n = 1
        for d in self.dims:
            n *= d
        return n

    @property
    def minor_to_major(self) -> tuple[int, ...]:
        """The layout's minor-to-major order; the default is row-major."""
        if self.layout is not None and len(self.layout.minor_to_major) == self.rank:
            return self.layout.minor_to_major
        return tuple(range(self.rank - 1, -1, -1))

    @property
    def has_default_layout(self) -> bool:
        return self.minor_to_major == tuple(range(self.rank - 1, -1, -1))

    def leaves(self) -> list["Shape"]:
        """The array shapes of a (nested) tuple, in order; [self] for an array."""
        if not self.is_tuple:
            return [self]
        return [leaf for s in self.tuple_shapes for leaf in s.leaves()]

    def without_layout(self) -> "Shape":
        if self.is_tuple:
            return Shape(tuple_shapes=tuple(s.without_layout() for s in self.tuple_shapes))
        return Shape(self.element_type, self.dims, None, dynamic=self.dynamic)

    def to_text(self, layout: bool = True) -> str:
        if self.is_tuple:
            return "(" + ", ".join(s.to_text(layout) for s in self.tuple_shapes) + ")"
        dims = ",".join(("<=" if self.dynamic and self.dynamic[i] else "") + str(d)
                        for i, d in enumerate(self.dims))
        text = f"{self.element_type.name}[{dims}]"
        if layout and self.layout is not None:
            text += str(self.layout)
        return text

    def __str__(self) -> str:
        return self.to_text()
