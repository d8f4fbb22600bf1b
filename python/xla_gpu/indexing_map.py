"""IndexingMap: the Python face of `#xla_gpu.indexing_map`.

An indexing map is an affine map from (dimensions)[range symbols]{runtime
variables} to tensor indices, with an inclusive range for every variable
and constraints `expr in [lo, hi]`. The C++ class (dialects/xla_gpu/
IndexingMap.h) owns parsing, printing and verification; this class wraps
the attribute and reads every field back as Python values.
"""

from __future__ import annotations

import ctypes
from dataclasses import dataclass
from typing import Iterable, Sequence

from mlir import ir

from . import _capi
from ._capi import lib

__all__ = ["IndexingMap", "IndexingMapError", "Var", "compose_indexing_maps"]

_DIM, _RANGE, _RUNTIME = 0, 1, 2
_ERROR_CAPACITY = 1024


class IndexingMapError(ValueError):
    """An indexing map that does not parse or does not verify.

    `offset` is the byte offset of the problem in the parsed text (None when
    the map was built from parts)."""

    def __init__(self, message: str, text: str | None = None,
                 offset: int | None = None):
        self.message = message
        self.text = text
        self.offset = offset
        where = f" at offset {offset}" if offset is not None else ""
        super().__init__(f"invalid indexing map{where}: {message}")


@dataclass(frozen=True)
class Var:
    """One variable of the domain: its name and inclusive bounds."""

    name: str
    lower: int
    upper: int


def _context(context: ir.Context | None) -> ir.Context:
    if context is not None:
        return context
    current = ir.Context.current
    if current is None:
        raise ValueError("no MLIR context: pass one or use `with ir.Context():`")
    return current


class IndexingMap:
    """An immutable indexing map, backed by an `#xla_gpu.indexing_map`."""

    def __init__(self, attr: ir.Attribute):
        handle = _capi.unwrap(attr, "Attribute")
        if not lib.xlaGpuAttributeIsAIndexingMap(handle):
            raise TypeError(f"not an #xla_gpu.indexing_map: {attr}")
        self.attr = attr
        # The map is immutable: its handle (valid while `attr` lives), its
        # variables and result count are read once (the emitters ask for
        # them thousands of times a fusion).
        self._handle = handle
        self._vars_of: dict[int, list[Var]] = {}
        self._num_results: int | None = None

    # -- construction --------------------------------------------------------

    @classmethod
    def parse(cls, text: str, context: ir.Context | None = None) -> "IndexingMap":
        """Parses XLA's text form, e.g.
        `(d0)[s0] -> (d0 * 4 + s0), domain: d0 in [0, 127], s0 in [0, 3]`."""
        ctx = _context(context)
        data = text.encode()
        error = ctypes.create_string_buffer(_ERROR_CAPACITY)
        offset = ctypes.c_size_t(0)
        handle = lib.xlaGpuIndexingMapAttrParse(
            _capi.unwrap(ctx, "Context"), _capi.MlirStringRef(data, len(data)),
            error, _ERROR_CAPACITY, ctypes.byref(offset))
        if not handle.ptr:
            raise IndexingMapError(error.value.decode(), text, offset.value)
        return cls(_capi.wrap(handle, ir.Attribute))

    @classmethod
    def get(cls, affine_map: ir.AffineMap,
            dim_ranges: Sequence[tuple[int, int]],
            range_ranges: Sequence[tuple[int, int]] = (),
            runtime_ranges: Sequence[tuple[int, int]] = (),
            constraints: Iterable[tuple[ir.AffineExpr, tuple[int, int]]] = (),
            names: Sequence[str] | None = None) -> "IndexingMap":
        """Builds a map from an affine map and a [lo, hi] range per variable.

        The map's symbols are the range variables followed by the runtime
        variables. `names`, if given, names every variable in that order."""
        ranges = [*dim_ranges, *range_ranges, *runtime_ranges]
        if len(dim_ranges) != affine_map.n_dims:
            raise IndexingMapError(
                f"the affine map has {affine_map.n_dims} dimensions but "
                f"{len(dim_ranges)} dimension ranges were given")
        if len(range_ranges) + len(runtime_ranges) != affine_map.n_symbols:
            raise IndexingMapError(
                f"the affine map has {affine_map.n_symbols} symbols but "
                f"{len(range_ranges) + len(runtime_ranges)} symbol ranges "
                "were given")
        if names is not None and len(names) != len(ranges):
            raise IndexingMapError(
                f"expected {len(ranges)} names, got {len(names)}")
        bounds = (ctypes.c_int64 * (2 * len(ranges)))(
            *[int(b) for r in ranges for b in _pair(r)])
        name_refs = None
        if names is not None:
            encoded = [n.encode() for n in names]
            name_refs = (_capi.MlirStringRef * len(encoded))(
                *[_capi.MlirStringRef(n, len(n)) for n in encoded])
        constraints = list(constraints)
        exprs = (_capi._Handle * len(constraints))(
            *[_capi.unwrap(e, "AffineExpr") for e, _ in constraints])
        cbounds = (ctypes.c_int64 * (2 * len(constraints)))(
            *[int(b) for _, r in constraints for b in _pair(r)])
        error = ctypes.create_string_buffer(_ERROR_CAPACITY)
        handle = lib.xlaGpuIndexingMapAttrGet(
            _capi.unwrap(affine_map, "AffineMap"), len(range_ranges), bounds,
            name_refs, len(constraints), exprs, cbounds, error, _ERROR_CAPACITY)
        if not handle.ptr:
            raise IndexingMapError(error.value.decode())
        return cls(_capi.wrap(handle, ir.Attribute))

    # -- fields ----------------------------------------------------------------

    @property
    def context(self) -> ir.Context:
        return self.attr.context

    @property
    def affine_map(self) -> ir.AffineMap:
        return _capi.wrap(
            lib.xlaGpuIndexingMapAttrGetAffineMap(self._handle), ir.AffineMap)

    def _vars(self, kind: int) -> list[Var]:
        """The variables of a kind (a new list; Var is immutable)."""
        cached = self._vars_of.get(kind)
        if cached is None:
            cached = []
            for i in range(lib.xlaGpuIndexingMapAttrGetNumVars(self._handle, kind)):
                lo, hi = ctypes.c_int64(), ctypes.c_int64()
                name = lib.xlaGpuIndexingMapAttrGetVar(
                    self._handle, kind, i, ctypes.byref(lo), ctypes.byref(hi))
                cached.append(Var(ctypes.string_at(name.data, name.length).decode(),
                                  lo.value, hi.value))
            self._vars_of[kind] = cached
        return list(cached)

    @property
    def dim_vars(self) -> list[Var]:
        return self._vars(_DIM)

    @property
    def range_vars(self) -> list[Var]:
        return self._vars(_RANGE)

    @property
    def runtime_vars(self) -> list[Var]:
        return self._vars(_RUNTIME)

    @property
    def constraints(self) -> list[tuple[ir.AffineExpr, tuple[int, int]]]:
        out = []
        for i in range(lib.xlaGpuIndexingMapAttrGetNumConstraints(self._handle)):
            lo, hi = ctypes.c_int64(), ctypes.c_int64()
            expr = lib.xlaGpuIndexingMapAttrGetConstraint(
                self._handle, i, ctypes.byref(lo), ctypes.byref(hi))
            out.append((_capi.wrap(expr, ir.AffineExpr), (lo.value, hi.value)))
        return out

    @property
    def num_dims(self) -> int:
        return len(self._vars(_DIM))

    @property
    def num_symbols(self) -> int:
        return self.affine_map.n_symbols

    @property
    def num_results(self) -> int:
        if self._num_results is None:
            self._num_results = len(self.affine_map.results)
        return self._num_results

    # -- algebra ---------------------------------------------------------------

    def _derived(self, fn) -> "IndexingMap":
        return IndexingMap(_capi.wrap(fn(self._handle), ir.Attribute))

    def simplify(self) -> "IndexingMap":
        """Range-aware simplification; never changes what the map computes
        on its domain, and simplifying twice gives the same map."""
        return self._derived(lib.xlaGpuIndexingMapAttrSimplify)

    def then(self, second: "IndexingMap") -> "IndexingMap":
        """This map followed by `second` (see `compose_indexing_maps`)."""
        return compose_indexing_maps(self, second)

    def _derived_or_error(self, handle, what: str) -> "IndexingMap":
        if not handle.ptr:
            raise IndexingMapError(f"{what} is not valid for {self}")
        return IndexingMap(_capi.wrap(handle, ir.Attribute))

    def without_constraints(self) -> "IndexingMap":
        """The same map and variables (names and ranges) without its
        constraints: what `xla_gpu.apply_indexing` takes (XLA drops them
        there; a loop or an `scf.if` checks them)."""
        if not self.constraints:
            return self
        variables = [*self.dim_vars, *self.range_vars, *self.runtime_vars]
        return IndexingMap.get(
            self.affine_map, [(v.lower, v.upper) for v in self.dim_vars],
            [(v.lower, v.upper) for v in self.range_vars],
            [(v.lower, v.upper) for v in self.runtime_vars],
            names=[v.name for v in variables])

    def with_constraint(self, expr: ir.AffineExpr, interval: tuple[int, int]) -> "IndexingMap":
        """This map with `expr in [lo, hi]` added (intersected with a
        constraint on the same expression)."""
        lo, hi = _pair(interval)
        return self._derived_or_error(
            lib.xlaGpuIndexingMapAttrWithConstraint(
                self._handle, _capi.unwrap(expr, "AffineExpr"), lo, hi),
            f"the constraint {expr} in [{lo}, {hi}]")

    def with_dim_bounds(self, dim: int, interval: tuple[int, int]) -> "IndexingMap":
        """This map with dimension `dim` in [lo, hi] (replacing its range)."""
        lo, hi = _pair(interval)
        return self._derived_or_error(
            lib.xlaGpuIndexingMapAttrWithDimBounds(self._handle, dim, lo, hi),
            f"dimension {dim} in [{lo}, {hi}]")

    def submap(self, result: int) -> "IndexingMap":
        """The map of result `result` alone (the same domain)."""
        return self._derived_or_error(
            lib.xlaGpuIndexingMapAttrGetSubMap(self._handle, result), f"result {result}")

    def convert_symbols_to_dims(self) -> "IndexingMap":
        """The map whose dimensions are this one's dimensions, then its
        range and runtime variables (XLA's ConvertSymbolsToDimensions)."""
        return self._derived(lib.xlaGpuIndexingMapAttrConvertSymbolsToDims)

    def remove_unused_symbols(self) -> "IndexingMap":
        return self._derived(lib.xlaGpuIndexingMapAttrRemoveUnusedSymbols)

    def remove_unused_dimensions(self) -> "IndexingMap":
        return self._derived(lib.xlaGpuIndexingMapAttrRemoveUnusedDimensions)

    def without_fixed_vars(self, keep_dims: Sequence[int] = (),
                           keep_symbols: Sequence[int] = ()
                           ) -> tuple["IndexingMap", list[int], list[int]]:
        """The map with every dimension and range variable whose range is
        a single value replaced by that value and removed, except those in
        `keep_*` (XLA's kernel maps have six thread/block dimensions; most
        are [0, 0]). Returns the map and the positions of the variables it
        kept, dimensions and range variables (runtime variables stay)."""
        dims, ranges, runtimes = self.dim_vars, self.range_vars, self.runtime_vars
        kept_dims = [i for i, v in enumerate(dims) if v.lower != v.upper or i in keep_dims]
        kept_ranges = [i for i, v in enumerate(ranges)
                       if v.lower != v.upper or i in keep_symbols]
        if len(kept_dims) == len(dims) and len(kept_ranges) == len(ranges):
            return self, kept_dims, kept_ranges
        with self.context:
            # One map holding the results and the constraints; variables are
            # replaced in increasing order, each by a constant or by its new
            # position, which no variable still in use holds any more.
            n_dims, n_syms = self.num_dims, self.num_symbols
            constraints = self.constraints
            m = ir.AffineMap.get(n_dims, n_syms, [*self.affine_map.results,
                                                  *(e for e, _ in constraints)])
            for i, v in enumerate(dims):
                to = (ir.AffineDimExpr.get(kept_dims.index(i)) if i in kept_dims
                      else ir.AffineConstantExpr.get(v.lower))
                m = m.replace(ir.AffineDimExpr.get(i), to, n_dims, n_syms)
            for i, v in enumerate([*ranges, *runtimes]):
                if i >= len(ranges):
                    to = ir.AffineSymbolExpr.get(len(kept_ranges) + i - len(ranges))
                elif i in kept_ranges:
                    to = ir.AffineSymbolExpr.get(kept_ranges.index(i))
                else:
                    to = ir.AffineConstantExpr.get(v.lower)
                m = m.replace(ir.AffineSymbolExpr.get(i), to, n_dims, n_syms)
            exprs = list(m.results)
            n = self.num_results
            affine = ir.AffineMap.get(len(kept_dims), len(kept_ranges) + len(runtimes), exprs[:n])
            constraints = [(e, r) for e, (_, r) in zip(exprs[n:], constraints)]
            new = IndexingMap.get(
                affine, [(dims[i].lower, dims[i].upper) for i in kept_dims],
                [(ranges[i].lower, ranges[i].upper) for i in kept_ranges],
                [(v.lower, v.upper) for v in runtimes], constraints,
                names=[*(dims[i].name for i in kept_dims), *(ranges[i].name for i in kept_ranges),
                       *(v.name for v in runtimes)])
        return new, kept_dims, kept_ranges

    @property
    def is_known_empty(self) -> bool:
        """No point satisfies the ranges and constraints (as the ranges tell)."""
        return bool(lib.xlaGpuIndexingMapAttrIsKnownEmpty(self._handle))

    def range_of(self, expr: ir.AffineExpr) -> tuple[int, int]:
        """The interval `expr` (in this map's variables) takes on the domain."""
        lo, hi = ctypes.c_int64(), ctypes.c_int64()
        lib.xlaGpuIndexingMapAttrGetRange(self._handle, _capi.unwrap(expr, "AffineExpr"),
                                          ctypes.byref(lo), ctypes.byref(hi))
        return lo.value, hi.value

    def _point(self, dims: Sequence[int], symbols: Sequence[int]):
        if len(dims) != self.num_dims or len(symbols) != self.num_symbols:
            raise ValueError(
                f"expected {self.num_dims} dims and {self.num_symbols} symbols, "
                f"got {len(dims)} and {len(symbols)}")
        d = (ctypes.c_int64 * max(1, len(dims)))(*[int(v) for v in dims])
        s = (ctypes.c_int64 * max(1, len(symbols)))(*[int(v) for v in symbols])
        return d, s

    def evaluate(self, dims: Sequence[int], symbols: Sequence[int] = ()) -> list[int]:
        """The results at a point (symbols: range variables, then runtime)."""
        d, s = self._point(dims, symbols)
        out = (ctypes.c_int64 * max(1, self.num_results))()
        lib.xlaGpuIndexingMapAttrEvaluate(self._handle, d, s, out)
        return list(out)[: self.num_results]

    def contains(self, dims: Sequence[int], symbols: Sequence[int] = ()) -> bool:
        """Whether the point is in the ranges and satisfies the constraints."""
        d, s = self._point(dims, symbols)
        return bool(lib.xlaGpuIndexingMapAttrContains(self._handle, d, s))

    def is_bijection(self, shape: Sequence[int]) -> tuple[bool, str]:
        """(True, "") when the map takes its domain one-to-one onto the
        indices of `shape`; (False, why) otherwise. Raises IndexingMapError
        when the domain is too large or has runtime variables."""
        dims = (ctypes.c_int64 * max(1, len(shape)))(*[int(v) for v in shape])
        reason = ctypes.create_string_buffer(_ERROR_CAPACITY)
        result = lib.xlaGpuIndexingMapAttrIsBijection(
            self._handle, dims, len(shape), reason, _ERROR_CAPACITY)
        if result < 0:
            raise IndexingMapError(reason.value.decode())
        return result == 1, reason.value.decode()

    # -- comparison and printing --------------------------------------------

    def __eq__(self, other) -> bool:
        """Semantic equality: same map, ranges and constraints; names aside."""
        if not isinstance(other, IndexingMap):
            return NotImplemented
        return bool(lib.xlaGpuIndexingMapAttrEqual(self._handle, other._handle))

    def __hash__(self) -> int:
        return hash((str(self.affine_map),
                     tuple((v.lower, v.upper) for v in
                           self.dim_vars + self.range_vars + self.runtime_vars)))

    def __str__(self) -> str:
        """The map's text, as inside the attribute's quotes."""
        text = str(self.attr)
        prefix, suffix = '#xla_gpu.indexing_map<"', '">'
        assert text.startswith(prefix) and text.endswith(suffix), text
        return text[len(prefix):-len(suffix)]

    def __repr__(self) -> str:
        return f"IndexingMap({str(self)!r})"


def compose_indexing_maps(first: IndexingMap, second: IndexingMap) -> IndexingMap:
    """`first` then `second` (XLA's ComposeIndexingMaps): from `first`'s
    domain to `second`'s results. Symbols: first's range variables, second's
    range variables, then the runtime variables of both. Second's dimension
    ranges become constraints on first's results; the result is simplified."""
    if first.num_results != second.num_dims:
        raise IndexingMapError(
            f"cannot compose: the first map has {first.num_results} results, "
            f"the second {second.num_dims} dimensions")
    return IndexingMap(_capi.wrap(
        lib.xlaGpuIndexingMapAttrCompose(first._handle, second._handle), ir.Attribute))


def _pair(r) -> tuple[int, int]:
    lo, hi = r
    return int(lo), int(hi)
