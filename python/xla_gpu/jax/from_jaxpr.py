"""A jaxpr as HLO text, without jax's lowering: the JAX backend's fast path.

    text = hlo_from_jaxpr(jax.jit(fn).trace(*avals).jaxpr, "gelu")
    # None: an operation only jax's lowering takes (then lower as usual)

Building a kernel used to lower the traced function to StableHLO and
convert it to HLO text (4 + 4 ms for a one-op function, against 0.25 ms for
the trace): most of a jitted call's compile. The operations a fusion is
made of -- elementwise, broadcasts, reshapes, transposes, slices, dynamic
slices and updates, pads, concatenates, reductions (argmax and argmin
too), cumulative reductions, iotas -- map one to one onto HLO
instructions, which this module writes straight from the jaxpr, as jax's
HLO has them: `integer_pow` as jax's multiplies, `logistic` and `exp2` as
jax's expansions, cumulative ops as jax's reduce-windows (cumsum only for
the CPU: jax lowers it its own way on GPUs), and what StableHLO's
canonicalizer does that the bits depend on -- constant operands moved to
the right, x + 0, x - 0 and x * 1 folded to x, the sign of a constant
folded (sign(-0.0) is +0.0 there), a dynamic slice at constant starts
made a slice. Calls (`jit`, `custom_jvp_call`,
`custom_vjp_call`, ...) are inlined, as our emitters inline jax's `call`s.

Anything else -- dots, gathers, scatters, sorts, cumlogsumexp, complex
numbers, an operation with a result accuracy, effects, and outputs that
are inputs or constants -- gives None, and the caller takes jax's
lowering: this path must give the kernel jax's HLO would, or nothing
(test_jax_from_jaxpr.py builds both and compares the bits).
"""

from __future__ import annotations

import math

import numpy as np
from jax.extend import core as jax_core

from ..hlo.module import value_text
from ..hlo.types import ELEMENT_TYPES

__all__ = ["hlo_from_jaxpr"]

# jax primitive -> HLO opcode, elementwise with one operand.
_UNARY = {
    "abs": "abs", "cbrt": "cbrt", "ceil": "ceil", "clz": "count-leading-zeros",
    "cos": "cosine", "erf": "erf", "exp": "exponential", "expm1": "exponential-minus-one",
    "floor": "floor", "is_finite": "is-finite", "log": "log", "log1p": "log-plus-one",
    "neg": "negate", "not": "not", "population_count": "popcnt", "rsqrt": "rsqrt",
    "sign": "sign", "sin": "sine", "sqrt": "sqrt", "tan": "tan", "tanh": "tanh",
}
# ... with two operands (of one type).
_BINARY = {
    "add": "add", "and": "and", "atan2": "atan2", "div": "divide", "max": "maximum",
    "min": "minimum", "mul": "multiply", "or": "or", "pow": "power", "rem": "remainder",
    "shift_left": "shift-left", "shift_right_arithmetic": "shift-right-arithmetic",
    "shift_right_logical": "shift-right-logical", "sub": "subtract", "xor": "xor",
}
_COMPARE = {"eq": "EQ", "ne": "NE", "lt": "LT", "le": "LE", "gt": "GT", "ge": "GE"}
# StableHLO's canonicalization puts a constant operand of these on the
# right (a comparison's direction mirrored), and jax's HLO carries it: so
# does ours (maximum and minimum may tell -0 from +0 by operand order).
_COMMUTATIVE = {"add", "and", "max", "min", "mul", "or", "xor"}
_MIRRORED = {"EQ": "EQ", "NE": "NE", "LT": "GT", "LE": "GE", "GT": "LT", "GE": "LE"}
# reduce_* -> the reducer's opcode and its identity ("lowest"/"highest": of the type).
_REDUCE = {
    "reduce_sum": ("add", 0), "reduce_prod": ("multiply", 1),
    "reduce_max": ("maximum", "lowest"), "reduce_min": ("minimum", "highest"),
    "reduce_and": ("and", True), "reduce_or": ("or", False),
}
# cum* -> the reducer's opcode, its identity, and the platforms jax lowers
# it as a reduce-window on (None: every one; its GPU lowering of cumsum is
# its own).
_CUMULATIVE = {
    "cumsum": ("add", 0, ("cpu",)), "cumprod": ("multiply", 1, None),
    "cummax": ("maximum", "lowest", None), "cummin": ("minimum", "highest", None),
}
# The value passes through unchanged.
_IDENTITY = {"copy", "copy_p", "stop_gradient", "optimization_barrier"}
# Calls whose body is their semantics (the custom rules only matter to
# differentiation, which happened before the trace reached us).
_CALLS = {"jit": "jaxpr", "pjit": "jaxpr", "closed_call": "call_jaxpr",
          "core_call": "call_jaxpr", "custom_jvp_call": "call_jaxpr",
          "custom_vjp_call": "call_jaxpr", "custom_vjp_call_jaxpr": "fun_jaxpr",
          "checkpoint": "jaxpr", "remat": "jaxpr"}
# Closed-over arrays up to this size become constants; larger ones go to
# jax's lowering (a literal in the text costs parse time per element).
_MAX_CONSTANT_ELEMENTS = 1024

_TYPE_NAMES = {t.dtype: t.name for t in ELEMENT_TYPES.values()
               if t.dtype is not None and t.kind not in ("complex", "token")}


class _Unsupported(Exception):
    """An operation this path does not write (jax's lowering will)."""


class _Value:
    """An HLO value: its instruction's name, element type and dims."""

    __slots__ = ("name", "etype", "dims", "constant", "splat")

    def __init__(self, name: str, etype: str, dims: tuple[int, ...]):
        self.name, self.etype, self.dims = name, etype, dims
        # A constant, or a broadcast of one (what StableHLO folds into one).
        self.constant = False
        # Its one value, where every element of such a constant is the same.
        self.splat = None

    @property
    def shape(self) -> str:
        return f"{self.etype}[{','.join(map(str, self.dims))}]"


def _etype(dtype) -> str:
    name = _TYPE_NAMES.get(np.dtype(dtype)) if _is_numpy(dtype) else None
    if name is None:
        raise _Unsupported(f"element type {dtype}")
    return name


def _is_numpy(dtype) -> bool:
    try:
        np.dtype(dtype)
        return True
    except TypeError:
        return False


def _identity(kind, etype: str):
    if not isinstance(kind, str):
        return kind
    t = ELEMENT_TYPES[etype]
    if t.is_float:
        return -math.inf if kind == "lowest" else math.inf
    if t.is_pred:
        return kind == "highest"
    info = np.iinfo(t.dtype)
    return int(info.min if kind == "lowest" else info.max)


class _Writer:
    """The entry computation's instructions (and reducer computations), in
    definition order; `text` keeps those the outputs use."""

    def __init__(self, platform: str):
        self.platform = platform  # jax's lowering of some ops depends on it
        self.lines: list[tuple[str, str, tuple[str, ...]]] = []  # name, text, operands
        self.regions: dict[tuple[str, str], str] = {}
        self.region_text: list[str] = []
        self.leaves: set[str] = set()  # parameters and constants

    def add(self, etype: str, dims, opcode: str, operands=(), attrs: str = "",
            head: str | None = None) -> _Value:
        value = _Value(f"v{len(self.lines)}", etype, tuple(dims))
        args = head if head is not None else ", ".join(o.name for o in operands)
        self.lines.append((value.name, f"{value.shape} {opcode}({args}){attrs}",
                           tuple(o.name for o in operands)))
        return value

    def leaf(self, etype: str, dims, opcode: str, head: str) -> _Value:
        """A parameter or a constant (`head`: its number or literal)."""
        value = self.add(etype, dims, opcode, head=head)
        value.constant = opcode == "constant"
        self.leaves.add(value.name)
        return value

    def constant(self, value, etype: str) -> _Value:
        out = self.leaf(etype, (), "constant", value_text(value, ELEMENT_TYPES[etype]))
        out.splat = value
        return out

    def raw(self, shape: str, opcode: str, operands, attrs: str = "") -> _Value:
        """An instruction of a tuple shape (written as `shape`)."""
        value = _Value(f"v{len(self.lines)}", "", ())
        names = tuple(o.name for o in operands)
        self.lines.append((value.name, f"{shape} {opcode}({', '.join(names)}){attrs}", names))
        return value

    def tuple(self, values: list[_Value]) -> _Value:
        return self.raw(f"({', '.join(v.shape for v in values)})", "tuple", values)

    def broadcast(self, value: _Value, dims, mapping=None) -> _Value:
        """`value` as an array of `dims`, its dims at `mapping`'s (jax's
        broadcast_in_dim; by default an elementwise operand's: a scalar, or
        an array of the same rank). A mapped dim of size 1 may expand: HLO's
        broadcast cannot, so (as jax's HLO) a reshape drops it first."""
        dims = tuple(dims)
        if mapping is None:
            if value.dims == dims:
                return value
            if value.dims and len(value.dims) != len(dims):
                raise _Unsupported("an operand of another rank")
            mapping = range(len(value.dims))
        pairs = list(zip(value.dims, mapping))
        if len(pairs) != len(value.dims) or any(n not in (1, dims[d]) for n, d in pairs):
            raise _Unsupported("a broadcast that does not place its operand")
        kept = [(n, d) for n, d in pairs if n == dims[d]]
        if len(kept) != len(pairs):
            value = self.derived(value, self.add(value.etype, [n for n, _ in kept], "reshape",
                                                 [value]))
        if value.dims == dims:
            return value
        return self.derived(value, self.add(value.etype, dims, "broadcast", [value],
                                            f", dimensions={_dims_attr(d for _, d in kept)}"))

    @staticmethod
    def derived(source: _Value, out: _Value) -> _Value:
        """`out`, `source`'s elements moved (a reshape, broadcast,
        transpose, reverse): a constant if it is, of its splat if any."""
        out.constant, out.splat = source.constant, source.splat
        return out

    def region(self, opcode: str, etype: str) -> str:
        """A reducer computation: `opcode` of two scalars."""
        return self._region((opcode, etype), f"""\
  a = {etype}[] parameter(0)
  b = {etype}[] parameter(1)
  ROOT r = {etype}[] {opcode}(a, b)""")

    def arg_region(self, direction: str, etype: str, itype: str) -> str:
        """jax's argmax/argmin reducer (_compute_argminmax) over (value,
        index) pairs: the operand's value where it compares `direction`
        against the accumulator's or is NaN; the lower index of two equal
        values."""
        return self._region(("arg", direction, etype, itype), f"""\
  a = {etype}[] parameter(0)
  ai = {itype}[] parameter(1)
  b = {etype}[] parameter(2)
  bi = {itype}[] parameter(3)
  better = pred[] compare(a, b), direction={direction}
  nan = pred[] compare(a, a), direction=NE
  pick = pred[] or(better, nan)
  value = {etype}[] select(pick, a, b)
  equal = pred[] compare(a, b), direction=EQ
  first = pred[] compare(ai, bi), direction=LT
  tie = pred[] and(equal, first)
  pick_index = pred[] or(pick, tie)
  index = {itype}[] select(pick_index, ai, bi)
  ROOT r = ({etype}[], {itype}[]) tuple(value, index)""")

    def _region(self, key, body: str) -> str:
        if key not in self.regions:
            name = f"region_{len(self.regions)}"
            self.regions[key] = name
            self.region_text.append(f"{name} {{\n{body}\n}}\n")
        return self.regions[key]

    def text(self, module: str, root: str) -> str:
        used = {root}
        for name, _, operands in reversed(self.lines):
            if name in used:
                used.update(operands)
        body = []
        for name, line, _ in self.lines:
            if name in used or " parameter(" in line:  # keep_unused: every parameter
                body.append(f"  {'ROOT ' if name == root else ''}{name} = {line}")
        return (f"HloModule {module}\n\n" + "\n".join(self.region_text)
                + "\nENTRY main {\n" + "\n".join(body) + "\n}\n")


def _atom(env: dict, atom, w: _Writer) -> _Value:
    if isinstance(atom, jax_core.Literal):
        etype = _etype(atom.aval.dtype)
        if atom.aval.shape:
            raise _Unsupported("an array literal")
        return w.constant(np.asarray(atom.val, ELEMENT_TYPES[etype].dtype).item(), etype)
    return env[atom]


def _out(eqn, k: int = 0) -> tuple[str, tuple[int, ...]]:
    aval = eqn.outvars[k].aval
    return _etype(aval.dtype), tuple(aval.shape)


def _integer_pow(w: _Writer, x: _Value, y: int) -> _Value:
    """x ** y by squaring, the multiplies in jax's order (so the rounding
    is jax's)."""
    if y == 0:
        return w.broadcast(w.constant(1, x.etype), x.dims)
    negative, y = y < 0, abs(y)
    acc = None
    while y > 0:
        if y & 1:
            acc = x if acc is None else w.add(x.etype, x.dims, "multiply", [acc, x])
        y >>= 1
        if y > 0:
            x = w.add(x.etype, x.dims, "multiply", [x, x])
    if negative:
        one = w.broadcast(w.constant(1, acc.etype), acc.dims)
        acc = w.add(acc.etype, acc.dims, "divide", [one, acc])
    return acc


def _identity_fold(prim: str, a: _Value, b: _Value) -> _Value | None:
    """The operand StableHLO's canonicalizer folds `a prim b` to, as jax's
    HLO has it: x + 0 and 0 + x (either zero: -0.0 + 0.0 would be +0.0
    computed), x - 0, x * 1 and 1 * x (a signaling NaN would come out quiet
    computed); None where it folds nothing."""
    def splat(v: _Value, value) -> bool:
        return v.splat is not None and not isinstance(v.splat, bool) and v.splat == value

    if prim == "add":
        return a if splat(b, 0) else b if splat(a, 0) else None
    if prim == "sub":
        return a if splat(b, 0) else None
    if prim == "mul":
        return a if splat(b, 1) else b if splat(a, 1) else None
    return None


def _folded_sign(w: _Writer, x: _Value, etype: str, dims) -> _Value:
    """sign(x) of a constant x as StableHLO's folder makes it, which jax's
    HLO has: -1, 1, or +0 for either zero (computed, sign(-0.0) is -0.0);
    a NaN is not folded. A constant array (not a splat) goes to jax's
    lowering (its folder works element by element)."""
    v = x.splat
    if v is None:
        raise _Unsupported("sign of a constant array")
    if v != v:  # NaN
        return w.add(etype, dims, "sign", [x])
    return w.broadcast(w.constant((v > 0) - (v < 0), etype), dims)


def _dims_attr(values) -> str:
    return "{" + ",".join(str(int(v)) for v in values) + "}"


def _equation(eqn, args: list[_Value], w: _Writer) -> list[_Value]:
    prim, p = eqn.primitive.name, eqn.params
    if prim in _CALLS:
        body = p.get(_CALLS[prim])
        if body is None:
            raise _Unsupported(prim)
        return _jaxpr(body, args, w)
    if len(eqn.outvars) != 1:
        raise _Unsupported(prim)
    etype, dims = _out(eqn)
    if p.get("accuracy") is not None:
        raise _Unsupported("a result accuracy")  # an HLO attribute of its own
    if prim in _IDENTITY and len(args) == 1:
        return args
    if prim == "logistic":  # jax's expansion: 1 / (1 + exp(-x))
        x = args[0]
        one = w.broadcast(w.constant(1, etype), dims)
        e = w.add(etype, dims, "exponential", [w.add(etype, dims, "negate", [x])])
        return [w.add(etype, dims, "divide", [one, w.add(etype, dims, "add", [e, one])])]
    if prim == "exp2":  # jax's expansion: exp(log(2) * x)
        log2 = np.asarray(np.log(2), ELEMENT_TYPES[etype].dtype).item()
        log2 = w.broadcast(w.constant(log2, etype), dims)
        scaled = w.add(etype, dims, "multiply", [args[0], log2])
        return [w.add(etype, dims, "exponential", [scaled])]
    if prim == "sign" and args[0].constant:
        return [_folded_sign(w, args[0], etype, dims)]
    if prim in _UNARY:
        if args[0].etype != etype and prim not in ("is_finite",):
            raise _Unsupported(f"{prim} changing the type")
        return [w.add(etype, dims, _UNARY[prim], args)]
    if prim in _BINARY or prim in _COMPARE:
        if args[0].etype != args[1].etype:
            raise _Unsupported(f"{prim} of two types")
        a, b = (w.broadcast(v, dims) for v in args)
        folded = _identity_fold(prim, a, b)
        if folded is not None:
            return [folded]
        swap = a.constant and not b.constant and (prim in _COMMUTATIVE or prim in _COMPARE)
        if swap:
            a, b = b, a
        if prim in _COMPARE:
            direction = _MIRRORED[_COMPARE[prim]] if swap else _COMPARE[prim]
            return [w.add(etype, dims, "compare", [a, b], f", direction={direction}")]
        return [w.add(etype, dims, _BINARY[prim], [a, b])]
    if prim == "integer_pow":
        return [_integer_pow(w, args[0], int(p["y"]))]
    if prim == "square":
        return [w.add(etype, dims, "multiply", [args[0], args[0]])]
    if prim == "round":
        opcode = "round-nearest-even" if int(p["rounding_method"]) == 1 else "round-nearest-afz"
        return [w.add(etype, dims, opcode, args)]
    if prim == "reduce_precision":
        return [w.add(etype, dims, "reduce-precision", args,
                      f", exponent_bits={int(p['exponent_bits'])}, "
                      f"mantissa_bits={int(p['mantissa_bits'])}")]
    if prim == "convert_element_type":
        x = args[0]
        if x.etype == etype:
            return args
        if etype == "pred":  # as jax lowers it: x != 0
            zero = w.broadcast(w.constant(0, x.etype), dims)
            return [w.add(etype, dims, "compare", [x, zero], ", direction=NE")]
        out = w.add(etype, dims, "convert", args)
        if x.constant:  # StableHLO folds it into a constant
            out.constant = True
            if x.splat is not None:
                out.splat = np.asarray(x.splat, ELEMENT_TYPES[x.etype].dtype).astype(
                    ELEMENT_TYPES[etype].dtype).item()
        return [out]
    if prim == "select_n":
        which, *cases = args
        if len(cases) == 1:
            return cases
        if len(cases) != 2 or which.etype != "pred":
            raise _Unsupported("select_n of more than two cases")
        which = w.broadcast(which, dims)
        return [w.add(etype, dims, "select", [which, cases[1], cases[0]])]
    if prim == "clamp":
        lo, x, hi = args
        return [w.add(etype, dims, "clamp", [w.broadcast(lo, dims), x, w.broadcast(hi, dims)])]
    if prim == "broadcast_in_dim":
        if len(args) != 1:
            raise _Unsupported("a dynamic broadcast")
        return [w.broadcast(args[0], dims, p["broadcast_dimensions"])]
    # Moving a constant's elements leaves a constant (StableHLO folds it).
    if prim in ("reshape", "squeeze"):
        if prim == "reshape" and (p.get("dimensions") is not None or len(args) != 1):
            raise _Unsupported("a reshape with dimensions")
        return [w.derived(args[0], w.add(etype, dims, "reshape", args[:1]))]
    if prim == "transpose":
        return [w.derived(args[0], w.add(etype, dims, "transpose", args,
                                         f", dimensions={_dims_attr(p['permutation'])}"))]
    if prim == "rev":
        return [w.derived(args[0], w.add(etype, dims, "reverse", args,
                                         f", dimensions={_dims_attr(p['dimensions'])}"))]
    if prim == "concatenate":
        return [w.add(etype, dims, "concatenate", args, f", dimensions={{{int(p['dimension'])}}}")]
    if prim == "pad":
        config = "x".join(f"{int(lo)}_{int(hi)}" + (f"_{int(mid)}" if mid else "")
                          for lo, hi, mid in p["padding_config"])
        return [w.add(etype, dims, "pad", args, f", padding={config}")]
    if prim == "slice":
        strides = p["strides"] or (1,) * len(dims)
        ranges = ", ".join(f"[{int(s)}:{int(e)}:{int(k)}]" for s, e, k in
                           zip(p["start_indices"], p["limit_indices"], strides))
        return [w.add(etype, dims, "slice", args, f", slice={{{ranges}}}")]
    if prim == "dynamic_slice":
        x, *starts = args
        sizes = [int(n) for n in p["slice_sizes"]]
        if len(args) != 1 + len(x.dims):
            raise _Unsupported("a dynamic slice with dynamic sizes")
        literals = [a.val for a in eqn.invars[1:] if isinstance(a, jax_core.Literal)]
        if len(literals) == len(starts):
            # All starts constant: a slice (as StableHLO folds it), the
            # starts clamped as dynamic-slice clamps them.
            ranges = []
            for start, size, dim in zip(literals, sizes, x.dims):
                start = min(max(int(start), 0), dim - size)
                ranges.append(f"[{start}:{start + size}]")
            return [w.add(etype, dims, "slice", [x], f", slice={{{', '.join(ranges)}}}")]
        return [w.add(etype, dims, "dynamic-slice", args,
                      f", dynamic_slice_sizes={_dims_attr(sizes)}")]
    if prim == "dynamic_update_slice":
        if len(args) != 2 + len(args[0].dims):
            raise _Unsupported("a dynamic update slice of another form")
        return [w.add(etype, dims, "dynamic-update-slice", args)]
    if prim == "iota":
        if p.get("sharding") is not None:
            raise _Unsupported("a sharded iota")
        return [w.add(etype, dims, "iota", [], f", iota_dimension={int(p['dimension'])}")]
    if prim in ("argmax", "argmin"):
        # As jax's _compute_argminmax: a variadic reduce of the operand and
        # an iota along the axis.
        x = args[0]
        (axis,) = p["axes"]
        iota = w.add(etype, (x.dims[axis],), "iota", [], ", iota_dimension=0")
        indices = w.add(etype, x.dims, "broadcast", [iota], f", dimensions={{{axis}}}")
        lowest = prim == "argmax"
        init = w.constant(_identity("lowest" if lowest else "highest", x.etype), x.etype)
        start = w.constant(0, etype)
        region = w.arg_region("GT" if lowest else "LT", x.etype, etype)
        out = ",".join(map(str, dims))
        pair = w.raw(f"({x.etype}[{out}], {etype}[{out}])", "reduce", [x, indices, init, start],
                     f", dimensions={{{axis}}}, to_apply={region}")
        return [w.add(etype, dims, "get-tuple-element", [pair], ", index=1")]
    if prim in _CUMULATIVE:
        # As jax's cumred_reduce_window_impl: a reduce-window over the whole
        # axis, padded before it (after it, reversed).
        opcode, identity, platforms = _CUMULATIVE[prim]
        if platforms is not None and w.platform not in platforms:
            raise _Unsupported(f"{prim} on {w.platform}")  # lowered otherwise there
        x = args[0]
        axis, n = int(p["axis"]), x.dims[int(p["axis"])]
        if n == 0:
            return args
        size = "x".join(str(n if d == axis else 1) for d in range(len(dims)))
        pad = "x".join((f"0_{n - 1}" if p["reverse"] else f"{n - 1}_0") if d == axis else "0_0"
                       for d in range(len(dims)))
        init = w.constant(_identity(identity, x.etype), x.etype)
        return [w.add(etype, dims, "reduce-window", [x, init],
                      f", window={{size={size} pad={pad}}}, to_apply={w.region(opcode, etype)}")]
    if prim in _REDUCE:
        opcode, identity = _REDUCE[prim]
        x = args[0]
        init = w.constant(_identity(identity, x.etype), x.etype)
        return [w.add(etype, dims, "reduce", [x, init],
                      f", dimensions={_dims_attr(p['axes'])}, to_apply={w.region(opcode, etype)}")]
    raise _Unsupported(prim)


def _jaxpr(body, args: list[_Value], w: _Writer) -> list[_Value]:
    """Writes the equations of a (closed) jaxpr called on `args`; returns
    its outputs."""
    if isinstance(body, jax_core.ClosedJaxpr):
        jaxpr, consts = body.jaxpr, body.consts
    else:
        jaxpr, consts = body, ()
    if jaxpr.effects:
        raise _Unsupported("effects")
    env: dict = {}
    for var, value in zip(jaxpr.constvars, consts):
        env[var] = _constant(w, value)
    for var, value in zip(jaxpr.invars, args, strict=True):
        env[var] = value
    for eqn in jaxpr.eqns:
        outs = _equation(eqn, [_atom(env, a, w) for a in eqn.invars], w)
        for var, value in zip(eqn.outvars, outs, strict=True):
            env[var] = value
    return [_atom(env, a, w) for a in jaxpr.outvars]


def _constant(w: _Writer, value) -> _Value:
    """A closed-over array as a constant instruction."""
    array = np.asarray(value)
    etype = _etype(array.dtype)
    if array.size > _MAX_CONSTANT_ELEMENTS:
        raise _Unsupported("a large closed-over array")
    if not array.shape:
        return w.constant(array.item(), etype)
    flat = array.reshape(-1)
    values = ", ".join(value_text(v, ELEMENT_TYPES[etype]) for v in flat.tolist())
    out = w.leaf(etype, array.shape, "constant", "{" + values + "}")
    # A splat (bit for bit: StableHLO's zero matches take 0.0 and -0.0, but
    # not a mix).
    rows = flat.view(np.uint8).reshape(flat.size, -1)
    if flat.size and (rows == rows[0]).all():
        out.splat = flat[0].item()
    return out


def hlo_from_jaxpr(closed, name: str = "fn", platform: str = "cpu") -> str | None:
    """The HLO text of a traced function's ClosedJaxpr (one entry
    computation, the jaxpr's inputs its parameters in order, its outputs
    the root or a tuple) as jax lowers it for `platform` ("cpu" or
    "cuda"), or None where only jax's lowering can write it."""
    w = _Writer(platform)
    try:
        params = []
        for k, var in enumerate(closed.jaxpr.invars):
            aval = var.aval
            params.append(w.leaf(_etype(aval.dtype), aval.shape, "parameter", str(k)))
        outs = _jaxpr(closed, params, w)
        if not outs or any(v.name in w.leaves for v in outs):
            raise _Unsupported("an output that is an input or a constant")
        root = (outs[0] if len(outs) == 1 else w.tuple(outs)).name
    except _Unsupported:
        return None
    module = "jit_" + "".join(c if c.isalnum() or c == "_" else "_" for c in name)
    return w.text(module, root)
