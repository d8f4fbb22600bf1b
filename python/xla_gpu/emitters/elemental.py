"""Elemental emission: one element of an HLO instruction's output, as
arith/math ops, given its index.

Elementwise opcodes map to arith/math through a registry
(`@register_elemental`); ops that only move elements (broadcast, transpose,
reshape, bitcast, slice, reverse) go through their output-to-input
indexing map; pad and concatenate add the checks of their constraints.
"""

from __future__ import annotations

from typing import Callable, Sequence

import numpy as np
from mlir import ir
from mlir.dialects import arith, math, scf, tensor

from ..hlo import ElementType, HloComputation, HloInstruction
from ..hlo.opcodes import INDEXING_OPS
from ..hlo.types import ELEMENT_TYPES
from ..dialects import xla_gpu
from ..indexing import IndexingError, output_to_input_indexing
from ..indexing_map import IndexingMap
from .complex_ops import convert_complex, emit_complex, emit_complex_create

__all__ = ["DISPATCH", "EmitterError", "EmitterNotBuiltError", "mlir_type", "register_elemental", "ELEMENTAL"]

# The signed 8-bit floats. LLVM has none: their values are only moved
# (loaded, stored, selected) as bytes; ops on them are computed widened to
# f16 (XLA's rule), and their conversions, emitted as arith.extf/truncf,
# become integer code in -xla-gpu-expand-float-ops (the format table is
# there) or one cvt in -xla-gpu-convert-float-nvidia.
FLOAT8 = frozenset({"f8e3m4", "f8e4m3", "f8e4m3fn", "f8e4m3fnuz", "f8e4m3b11fnuz", "f8e5m2",
                    "f8e5m2fnuz"})


class EmitterError(ValueError):
    """An instruction the emitters cannot emit (with the instruction's name)."""

    def __init__(self, inst: HloInstruction, reason: str):
        self.instruction = inst
        super().__init__(f"cannot emit {inst.name} ({inst.opcode}): {reason}")

    @property
    def location(self) -> str | None:
        """`file:line:col` of the instruction, when it was parsed from a file."""
        inst = self.instruction
        module = inst.parent.module if inst.parent is not None else None
        if not inst.line or module is None:
            return None
        return f"{module.source or '<hlo>'}:{inst.line}:{inst.column}"


class EmitterNotBuiltError(EmitterError):
    """The fusion is well formed but needs what this project does not have
    yet (an emitter kind, an opcode): run-hlo hands such fusions to XLA."""


def mlir_type(etype: ElementType) -> ir.Type:
    """The MLIR element type of an HLO element type (the type table's;
    integers signless)."""
    if etype.mlir is None:
        raise ValueError(f"element type {etype.name} is not supported by the emitters yet")
    return ir.Type.parse(etype.mlir)


# The element type of a complex type's parts.
COMPLEX_PART = {t.name: ELEMENT_TYPES[t.part] for t in ELEMENT_TYPES.values() if t.part}

Elemental = Callable[[HloInstruction, list[ir.Value]], ir.Value]
ELEMENTAL: dict[str, Elemental] = {}


def register_elemental(*opcodes: str):
    def register(fn: Elemental) -> Elemental:
        for op in opcodes:
            ELEMENTAL[op] = fn
        return fn
    return register


def _is_float(inst: HloInstruction) -> bool:
    return inst.operands[0].shape.element_type.is_float


def _binary(float_op, signed_op, unsigned_op=None, pred_op=None):
    """By operand type; pred is a 1-bit unsigned integer (true is 1) unless
    the op has its own logic form (XLA: add and max are `or`, multiply and
    min are `and`)."""
    def emit(inst, args):
        etype = inst.operands[0].shape.element_type
        if etype.is_float:
            return float_op(*args)
        if etype.is_pred and pred_op is not None:
            return pred_op(*args)
        if etype.is_signed or unsigned_op is None:
            return signed_op(*args)
        return unsigned_op(*args)
    return emit


register_elemental("add")(_binary(arith.addf, arith.addi, pred_op=arith.ori))
register_elemental("subtract")(_binary(arith.subf, arith.subi))
register_elemental("multiply")(_binary(arith.mulf, arith.muli, pred_op=arith.andi))


def _int_const(like: ir.Value, value: int) -> ir.Value:
    return arith.constant(like.type, value)


def _eq(a: ir.Value, b: ir.Value) -> ir.Value:
    return arith.cmpi(arith.CmpIPredicate.eq, a, b)


def _integer_division(inst, a, remainder: bool):
    """XLA's integer division: x / 0 is -1 (all ones), x % 0 is x, and
    INT_MIN / -1 is INT_MIN with remainder 0 -- no undefined behaviour."""
    n, d = a
    etype = inst.operands[0].shape.element_type
    zero = _eq(d, _int_const(d, 0))
    bad = zero
    overflow = None
    if etype.is_signed:
        int_min = _int_const(n, -(1 << (etype.bits - 1)))
        overflow = arith.andi(_eq(n, int_min), _eq(d, _int_const(d, -1)))
        bad = arith.ori(zero, overflow)
    safe = arith.select(bad, _int_const(d, 1), d)
    if remainder:
        r = (arith.remsi if etype.is_signed else arith.remui)(n, safe)
        r = arith.select(zero, n, r)
        return arith.select(overflow, _int_const(n, 0), r) if overflow is not None else r
    q = (arith.divsi if etype.is_signed else arith.divui)(n, safe)
    q = arith.select(zero, _int_const(n, -1), q)
    return arith.select(overflow, n, q) if overflow is not None else q


@register_elemental("divide")
def _divide(inst, a):
    if _is_float(inst):
        return arith.divf(*a)
    return _integer_division(inst, a, remainder=False)


@register_elemental("remainder")
def _remainder(inst, a):
    if _is_float(inst):
        return arith.remf(*a)
    return _integer_division(inst, a, remainder=True)
register_elemental("maximum")(_binary(arith.maximumf, arith.maxsi, arith.maxui, arith.ori))
register_elemental("minimum")(_binary(arith.minimumf, arith.minsi, arith.minui, arith.andi))
register_elemental("and")(_binary(arith.andi, arith.andi))
register_elemental("or")(_binary(arith.ori, arith.ori))
register_elemental("xor")(_binary(arith.xori, arith.xori))
def _shift(op, oversized_fill):
    """XLA's shifts: an amount of at least the bit width (as unsigned) shifts
    everything out (0), or fills with the sign for arithmetic right shifts."""
    def emit(inst, a):
        x, amount = a
        bits = inst.shape.element_type.bits
        too_far = arith.cmpi(arith.CmpIPredicate.uge, amount, _int_const(amount, bits))
        safe = arith.select(too_far, _int_const(amount, 0), amount)
        return arith.select(too_far, oversized_fill(x, bits), op(x, safe))
    return emit


register_elemental("shift-left")(_shift(arith.shli, lambda x, bits: _int_const(x, 0)))
register_elemental("shift-right-logical")(_shift(arith.shrui, lambda x, bits: _int_const(x, 0)))
register_elemental("shift-right-arithmetic")(
    _shift(arith.shrsi, lambda x, bits: arith.shrsi(x, _int_const(x, bits - 1))))
register_elemental("popcnt")(lambda inst, a: math.ctpop(a[0]))
register_elemental("count-leading-zeros")(lambda inst, a: math.ctlz(a[0]))
register_elemental("is-finite")(lambda inst, a: math.isfinite(a[0]))
register_elemental("atan2")(lambda inst, a: math.atan2(*a))


@register_elemental("power")
def _power(inst, a):
    if _is_float(inst):
        return math.powf(*a)
    return _integer_power(inst, *a)


def _integer_power(inst, base, exponent):
    """XLA's integer power: squaring over the exponent's low 6 bits (any
    larger exponent overflows); a negative exponent gives 1 for base 1,
    +-1 for base -1 and 0 otherwise -- "negative" and "-1" as signed
    values, for unsigned types too (in XLA u8 2^200 is 0, 255^200 is 1)."""
    one, zero = _int_const(base, 1), _int_const(base, 0)
    acc, b, e = one, base, exponent
    for _ in range(6):
        bit = _eq(arith.andi(e, one), one)
        acc = arith.select(bit, arith.muli(acc, b), acc)
        b = arith.muli(b, b)
        e = arith.shrui(e, one)
    minus_one = _int_const(base, -1)
    odd = _eq(arith.andi(exponent, one), one)
    negative_exponent = arith.select(
        _eq(base, one), one,
        arith.select(_eq(base, minus_one), arith.select(odd, minus_one, one), zero))
    non_negative = arith.cmpi(arith.CmpIPredicate.sge, exponent, zero)
    return arith.select(non_negative, acc, negative_exponent)

_UNARY_FLOAT = {
    "exponential": math.exp, "log": math.log, "tanh": math.tanh, "sqrt": math.sqrt,
    "rsqrt": math.rsqrt, "log-plus-one": math.log1p, "exponential-minus-one": math.expm1,
    "sine": math.sin, "cosine": math.cos, "tan": math.tan, "floor": math.floor,
    "ceil": math.ceil, "erf": math.erf, "cbrt": math.cbrt,
    "round-nearest-even": math.roundeven, "round-nearest-afz": math.round,
}
for _name, _fn in _UNARY_FLOAT.items():
    register_elemental(_name)(lambda inst, a, _fn=_fn: _fn(a[0]))


@register_elemental("negate")
def _negate(inst, a):
    if _is_float(inst):
        return arith.negf(a[0])
    zero = arith.constant(a[0].type, 0)
    return arith.subi(zero, a[0])


@register_elemental("abs")
def _abs(inst, a):
    return math.absf(a[0]) if _is_float(inst) else math.absi(a[0])


@register_elemental("sign")
def _sign(inst, a):
    """XLA's sign: -1, 0 or 1; floats keep the zero's sign and NaN."""
    x = a[0]
    if _is_float(inst):
        zero = arith.constant(x.type, 0.0)
        nonzero = arith.uitofp(x.type, arith.cmpf(arith.CmpFPredicate.ONE, x, zero))
        nan = arith.cmpf(arith.CmpFPredicate.UNO, x, x)
        return arith.select(nan, x, math.copysign(nonzero, x))
    zero = _int_const(x, 0)
    nonzero = arith.extui(x.type, arith.cmpi(arith.CmpIPredicate.ne, x, zero))
    if not inst.shape.element_type.is_signed:
        return nonzero
    negative = arith.cmpi(arith.CmpIPredicate.slt, x, zero)
    return arith.select(negative, _int_const(x, -1), nonzero)


@register_elemental("reduce-precision")
def _reduce_precision(inst, a):
    """Rounds to `mantissa_bits` (to nearest even) and clamps to the range
    of `exponent_bits`, keeping the type: XLA's bit manipulation."""
    x = a[0]
    etype = inst.shape.element_type
    src_mantissa = {"f16": 10, "bf16": 7, "f32": 23, "f64": 52}[etype.name]
    src_exponent = etype.bits - 1 - src_mantissa
    exponent_bits, mantissa_bits = inst.attr("exponent_bits"), inst.attr("mantissa_bits")
    int_type = ir.IntegerType.get_signless(etype.bits)
    bits = arith.bitcast(int_type, x)

    def c(v: int) -> ir.Value:
        return arith.constant(int_type, v - (1 << etype.bits) if v >> (etype.bits - 1) else v)

    if mantissa_bits < src_mantissa:
        shift = src_mantissa - mantissa_bits
        last_bit_mask = 1 << shift
        last_bit = arith.shrui(arith.andi(bits, c(last_bit_mask)), c(shift))
        bias = arith.addi(last_bit, c((last_bit_mask >> 1) - 1))
        truncation = ((1 << etype.bits) - 1) & ~(last_bit_mask - 1)
        bits = arith.andi(arith.addi(bits, bias), c(truncation))
    if exponent_bits < src_exponent:
        sign_mask = 1 << (etype.bits - 1)
        exponent_mask = ((1 << src_exponent) - 1) << src_mantissa
        bias = (1 << (src_exponent - 1)) - 1
        reduced_bias = (1 << (exponent_bits - 1)) - 1
        exponent = arith.andi(bits, c(exponent_mask))
        overflows = arith.cmpi(arith.CmpIPredicate.ugt, exponent,
                               c((bias + reduced_bias) << src_mantissa))
        underflows = arith.cmpi(arith.CmpIPredicate.ule, exponent,
                                c((bias - reduced_bias) << src_mantissa))
        signed_zero = arith.andi(bits, c(sign_mask))
        signed_inf = arith.ori(signed_zero, c(exponent_mask))
        bits = arith.select(overflows, signed_inf, arith.select(underflows, signed_zero, bits))
    result = arith.bitcast(x.type, bits)
    # The rounding above may have turned a NaN into an infinity.
    nan = arith.cmpf(arith.CmpFPredicate.UNO, x, x)
    if mantissa_bits > 0:
        return arith.select(nan, x, result)
    return arith.select(nan, arith.constant(x.type, float("inf")), result)


@register_elemental("not")
def _not(inst, a):
    ones = arith.constant(a[0].type, -1 if a[0].type != ir.IntegerType.get_signless(1) else 1)
    return arith.xori(a[0], ones)


@register_elemental("logistic")
def _logistic(inst, a):
    """1 / (1 + exp(-x)). XLA expands logistic into these HLO ops, each
    rounded in the element type (f16 too), after widening bf16 ops to f32:
    for bf16 it is computed in f32 and rounded once."""
    x = a[0]
    narrow = x.type if isinstance(x.type, ir.BF16Type) else None
    if narrow is not None:
        x = arith.extf(ir.F32Type.get(), x)
    one = arith.constant(x.type, 1.0)
    y = arith.divf(one, arith.addf(one, math.exp(arith.negf(x))))
    return arith.truncf(narrow, y) if narrow is not None else y


@register_elemental("select")
def _select(inst, a):
    return arith.select(*a)


@register_elemental("clamp")
def _clamp(inst, a):
    lo, x, hi = a
    if inst.shape.element_type.is_float:
        return arith.maximumf(arith.minimumf(x, hi), lo)
    if inst.shape.element_type.is_signed:
        return arith.maxsi(arith.minsi(x, hi), lo)
    return arith.maxui(arith.minui(x, hi), lo)


_FLOAT_CMP = {"EQ": "OEQ", "NE": "UNE", "LT": "OLT", "LE": "OLE", "GT": "OGT", "GE": "OGE"}
_INT_CMP = {"EQ": "eq", "NE": "ne", "LT": "slt", "LE": "sle", "GT": "sgt", "GE": "sge"}


@register_elemental("compare")
def _compare(inst, a):
    direction = inst.attr("direction")
    etype = inst.operands[0].shape.element_type
    if etype.is_float:
        pred = getattr(arith.CmpFPredicate, _FLOAT_CMP[direction])
        return arith.cmpf(pred, *a)
    name = _INT_CMP[direction]
    if not etype.is_signed and name[0] == "s":
        name = "u" + name[1:]
    return arith.cmpi(getattr(arith.CmpIPredicate, name), *a)


@register_elemental("convert")
def _convert(inst, a):
    src = inst.operands[0].shape.element_type
    dst = inst.shape.element_type
    x = a[0]
    if src.name == dst.name:
        return x
    if src.name in FLOAT8 or dst.name in FLOAT8:
        # Through f32, which holds every f8 value exactly; the f8 side is an
        # extf/truncf that -xla-gpu-expand-float-ops turns into integer code
        # (or -xla-gpu-convert-float-nvidia into one cvt).
        f32 = ELEMENT_TYPES["f32"]
        if src.name in FLOAT8:
            x, src = arith.extf(mlir_type(f32), x), f32
        if dst.name in FLOAT8:
            # From a wider float directly (the GPU's cvt takes f16 as it is).
            if src.name not in ("f16", "bf16", "f32", "f64"):
                x = _convert_types(x, src, f32)
            return arith.truncf(mlir_type(dst), x)
    return _convert_types(x, src, dst)


def _convert_types(x: ir.Value, src: ElementType, dst: ElementType) -> ir.Value:
    to = mlir_type(dst)
    if src.is_float and dst.is_float:
        if src.name == dst.name:
            return x
        if src.bits == dst.bits:
            # f16 <-> bf16: through f32, which holds both exactly.
            x = arith.extf(ir.F32Type.get(), x)
            return arith.truncf(to, x)
        return arith.extf(to, x) if dst.bits > src.bits else arith.truncf(to, x)
    if not src.is_float and dst.is_float:
        return arith.sitofp(to, x) if src.is_signed else arith.uitofp(to, x)
    if src.is_float and not dst.is_float:
        if dst.is_pred:
            zero = arith.constant(x.type, 0.0)
            return arith.cmpf(arith.CmpFPredicate.UNE, x, zero)
        # XLA saturates, and converts NaN to 0 (LLVM's fptosi would be poison).
        lo = -(1 << (dst.bits - 1)) if dst.is_signed else 0
        hi = (1 << (dst.bits - 1)) - 1 if dst.is_signed else (1 << dst.bits) - 1
        convert = arith.fptosi if dst.is_signed else arith.fptoui
        too_low = arith.cmpf(arith.CmpFPredicate.OLE, x, arith.constant(x.type, float(lo)))
        too_high = arith.cmpf(arith.CmpFPredicate.OGE, x, arith.constant(x.type, float(hi)))
        nan = arith.cmpf(arith.CmpFPredicate.UNO, x, x)
        in_range = arith.select(arith.ori(too_low, arith.ori(too_high, nan)),
                                arith.constant(x.type, 0.0), x)
        result = convert(to, in_range)
        result = arith.select(too_low, arith.constant(to, lo), result)
        return arith.select(too_high, arith.constant(to, hi if dst.is_signed else
                                                     hi - (1 << dst.bits)), result)
    if src.is_pred and dst.is_pred:
        return x
    if src.is_pred:
        return arith.extui(to, x)
    if dst.is_pred:
        return arith.cmpi(arith.CmpIPredicate.ne, x, arith.constant(x.type, 0))
    if src.bits == dst.bits:
        return x
    if dst.bits > src.bits:
        return arith.extsi(to, x) if src.is_signed else arith.extui(to, x)
    return arith.trunci(to, x)


@register_elemental("bitcast-convert")
def _bitcast_convert(inst, a):
    return _as_type(a[0], mlir_type(inst.shape.element_type))


def _as_type(x: ir.Value, t: ir.Type) -> ir.Value:
    """`x`'s bits as type `t` (of the same width)."""
    return x if x.type == t else arith.bitcast(t, x)


class ElementalEmitter:
    """Emits instructions of one subgraph at given indices. `operand_value`
    provides values of instructions outside the subgraph (parameters,
    calls to other subgraphs)."""

    def __init__(self, subgraph_members: set[int],
                 operand_value: Callable[[HloInstruction, list[ir.Value]], ir.Value],
                 call_computation: "CallComputation | None" = None):
        self.members = subgraph_members
        self.operand_value = operand_value
        # Reducers and map computations: calls to their functions (the
        # framework declares one per computation), or inline without one.
        self.call_computation = call_computation or apply_computation
        self.cache: dict[tuple, ir.Value | list[ir.Value]] = {}

    def emit(self, inst: HloInstruction, index: Sequence[ir.Value]) -> ir.Value:
        """`inst`'s element at `index`; a list of values for a tuple-shaped
        instruction (a variadic reduction, a reducer's tuple root)."""
        # The Values themselves (hashable by what they refer to): an id() of
        # a Python wrapper can be reused once the wrapper is freed.
        key = (id(inst), tuple(index))
        if key not in self.cache:
            self._emit_same_index_operands(inst, tuple(index))
            if id(inst) not in self.members or inst.opcode == "parameter":
                self.cache[key] = self.operand_value(inst, list(index))
            else:
                with ir.Location.name(inst.name):
                    self.cache[key] = self._emit(inst, list(index))
        return self.cache[key]

    def _reads_operands_at_its_index(self, inst: HloInstruction) -> bool:
        """An elementwise member: its operands are emitted at its own index
        (scalars at none)."""
        if id(inst) not in self.members or inst.opcode == "parameter":
            return False
        if inst.opcode == "bitcast-convert":
            return inst.operands[0].shape.dims == inst.shape.dims
        return inst.opcode in ELEMENTAL or inst.opcode == "map"

    def _emit_same_index_operands(self, inst: HloInstruction, index: tuple) -> None:
        """Emits, deepest first and with an explicit stack, the chain of
        elementwise operands `inst` reads at its own index: emission then
        never recurses once per op (a 500-op chain is fine)."""
        stack = [(inst, index, False)]
        while stack:
            node, idx, operands_done = stack.pop()
            if (id(node), idx) in self.cache or not self._reads_operands_at_its_index(node):
                continue
            if operands_done:
                if node is not inst:
                    self.emit(node, list(idx))
                continue
            stack.append((node, idx, True))
            for o in reversed(node.operands):
                stack.append((o, idx if o.shape.rank else (), False))

    def _read(self, inst, k: int, index, runtime: Sequence[ir.Value] = ()):
        """Operand k of `inst` at the index its (single) indexing map gives;
        `runtime` holds the values of the map's runtime variables."""
        try:
            maps = output_to_input_indexing(inst)[k]
        except IndexingError as e:
            raise EmitterError(inst, e.reason) from None
        if len(maps) != 1 or maps[0].range_vars or len(maps[0].runtime_vars) != len(runtime):
            raise EmitterError(inst, "operand indexing needs loops or runtime values")
        m = maps[0]
        operand = inst.operands[k]
        if m.num_results == 0:
            return self.emit(operand, [])
        new_index = list(xla_gpu.ApplyIndexingOp(m, index, runtime).results)
        return self.emit(operand, new_index)

    def _start_index(self, value: ir.Value, etype: ElementType, limit: int) -> ir.Value:
        return clamped_start_index(value, etype, limit)

    def _dynamic_slice(self, inst, index):
        operand = inst.operands[0].shape
        starts = [self._start_index(self.emit(s, []), s.shape.element_type, d - n)
                  for s, d, n in zip(inst.operands[1:], operand.dims, inst.shape.dims)]
        return self._read(inst, 0, index, starts)

    def _dynamic_update_slice(self, inst, index):
        """out[i] = update[i - start] inside the update's box, operand[i]
        elsewhere; the starts clamped so the box fits (XLA's)."""
        operand, update = inst.operands[0].shape, inst.operands[1].shape
        starts = [self._start_index(self.emit(s, []), s.shape.element_type, d - u)
                  for s, d, u in zip(inst.operands[2:], operand.dims, update.dims)]
        index_type = ir.IndexType.get()
        inside = arith.constant(ir.IntegerType.get_signless(1), 1)
        for i, start, size in zip(index, starts, update.dims):
            end = arith.addi(start, arith.constant(index_type, size))
            inside = arith.andi(inside, arith.andi(
                arith.cmpi(arith.CmpIPredicate.sge, i, start),
                arith.cmpi(arith.CmpIPredicate.slt, i, end)))
        return self._guarded(inside, lambda: self._read(inst, 1, index, starts),
                             lambda: self._read(inst, 0, index),
                             mlir_type(inst.shape.element_type))

    def _bitcast_convert_resize(self, inst, index):
        """bitcast-convert between element sizes, little-endian as XLA: a
        narrower output element is piece index[-1] of an operand element, a
        wider one the operand's pieces along their last dimension."""
        src, dst = inst.operands[0].shape.element_type, inst.shape.element_type
        src_int = ir.IntegerType.get_signless(src.bits)
        dst_int = ir.IntegerType.get_signless(dst.bits)
        if src.bits > dst.bits:
            whole = _as_type(self._read(inst, 0, index), src_int)
            piece = arith.index_cast(src_int, index[-1])
            shift = arith.muli(piece, arith.constant(src_int, dst.bits))
            part = arith.trunci(dst_int, arith.shrui(whole, shift))
            return _as_type(part, mlir_type(dst))
        ratio = inst.operands[0].shape.dims[-1]
        index_type = ir.IndexType.get()
        result = arith.constant(dst_int, 0)
        for k in range(ratio):
            piece = self.emit(inst.operands[0], [*index, arith.constant(index_type, k)])
            wide = arith.extui(dst_int, _as_type(piece, src_int))
            shifted = arith.shli(wide, arith.constant(dst_int, k * src.bits))
            result = arith.ori(result, shifted)
        return _as_type(result, mlir_type(dst))

    def _gather(self, inst, index):
        """A canonical gather (XLA's gather simplifier): out[n, o...] =
        operand[o + clamp(indices[n, :])] over the dimensions of
        start_index_map."""
        operand, indices = inst.operands[0], inst.operands[1]
        start_map = inst.attr("start_index_map", [])
        sizes = inst.attr("slice_sizes")
        index_type = ir.IndexType.get()
        starts = []
        for j in sorted(start_map):
            k = arith.constant(index_type, start_map.index(j))
            value = self.emit(indices, [index[0], k])
            starts.append(self._start_index(value, indices.shape.element_type,
                                            operand.shape.dims[j] - sizes[j]))
        return self._read(inst, 0, index, starts)

    def _emit(self, inst: HloInstruction, index):
        rule = DISPATCH.get(inst.opcode)
        if rule is None:
            raise EmitterNotBuiltError(inst, f"opcode '{inst.opcode}' is not supported by "
                                       "the elemental emitter")
        return rule(self, inst, index)

    def _iota(self, inst, index):
        etype = inst.shape.element_type
        as_int = arith.index_cast(ir.IntegerType.get_signless(64),
                                  index[inst.attr("iota_dimension")])
        t = mlir_type(etype)
        if etype.is_float:
            return arith.sitofp(t, as_int)
        return as_int if etype.bits == 64 else arith.trunci(t, as_int)

    def _index_transformation(self, inst, index):
        return self._read(inst, 0, index)

    def _bitcast_convert(self, inst, index):
        if inst.operands[0].shape.dims != inst.shape.dims:
            return self._bitcast_convert_resize(inst, index)
        return self._elementwise(inst, index)

    def _map(self, inst, index):
        args = [self.emit(o, index if o.shape.rank else []) for o in inst.operands]
        return self.call_computation(inst.called_computations[0], args)[0]

    def _get_tuple_element(self, inst, index):
        return self.emit(inst.operands[0], index)[inst.attr("index")]

    def _tuple(self, inst, index):
        return [self.emit(o, index if o.shape.rank else []) for o in inst.operands]

    def _elementwise(self, inst, index):
        """An elementwise op on its operands at the same index (scalars at
        none): complex numbers and 8-bit floats have their own paths."""
        op = inst.opcode
        args = [self.emit(o, index if o.shape.rank else []) for o in inst.operands]
        shapes = [inst.shape] + [o.shape for o in inst.operands]
        if op in ("complex", "real", "imag") or (
                op != "select" and any(t.element_type.is_complex for t in shapes)):
            return self._on_complex(inst, args)
        if op not in ("convert", "bitcast-convert", "select") and any(
                o.shape.element_type.name in FLOAT8 for o in inst.operands):
            return self._on_float8(inst, args)
        return ELEMENTAL[op](inst, args)

    def _on_complex(self, inst, args):
        def error(reason: str) -> EmitterError:
            return EmitterError(inst, reason)

        if inst.opcode != "convert":
            return emit_complex(inst, args, error)
        src, dst = inst.operands[0].shape.element_type, inst.shape.element_type
        if not dst.is_complex:
            raise error(f"convert from {src} to {dst}: take real() or imag() first (as XLA)")
        part_src = COMPLEX_PART.get(src.name, src)
        return convert_complex(
            args[0], mlir_type(dst),
            lambda v, t: _convert_types(v, part_src, COMPLEX_PART[dst.name]), error)

    def _on_float8(self, inst, args):
        """An op on f8 operands computed as XLA does: widened to f16 (to
        f32 for compare, exact either way), the result rounded back."""
        if inst.opcode == "reduce-precision":
            raise EmitterError(inst, "reduce-precision of 8-bit floats is not supported")
        wide = ir.F32Type.get() if inst.opcode == "compare" else ir.F16Type.get()
        widened = [arith.extf(wide, v) if o.shape.element_type.name in FLOAT8 else v
                   for o, v in zip(inst.operands, args)]
        result = ELEMENTAL[inst.opcode](inst, widened)
        if inst.shape.element_type.name not in FLOAT8:
            return result
        return arith.truncf(mlir_type(inst.shape.element_type), result)

    def _constant(self, inst, index):
        value = inst.literal.value if inst.literal else None
        if value is None:
            raise EmitterError(inst, "the constant's values are elided ({...})")
        etype, dims = inst.shape.element_type, inst.shape.dims
        if etype.is_complex:
            # Two real constants, the parts.
            part = COMPLEX_PART[etype.name]
            re = _literal_element(value.real.astype(part.dtype), part, dims, index)
            im = _literal_element(value.imag.astype(part.dtype), part, dims, index)
            return emit_complex_create(mlir_type(etype), re, im)
        return _literal_element(value, etype, dims, index)

    def _in_region(self, fn):
        """Runs `fn`, which emits into a nested region, and forgets what it
        emitted: a value defined in the region does not dominate what
        follows it."""
        saved = dict(self.cache)
        try:
            return fn()
        finally:
            self.cache = saved

    def _guarded(self, cond: ir.Value, then_fn, else_fn, result_type: ir.Type) -> ir.Value:
        if_op = scf.IfOp(cond, [result_type], has_else=True)
        with ir.InsertionPoint(if_op.then_block):
            scf.YieldOp([self._in_region(then_fn)])
        with ir.InsertionPoint(if_op.else_block):
            scf.YieldOp([self._in_region(else_fn)])
        return if_op.result

    def _reduce(self, inst, index):
        """reduce and reduce-window as XLA's elemental emitter: an
        xla_gpu.loop over the window (the indexing map's range variables;
        its constraints skip the padding), the reducer called on the
        accumulators and each element. A variadic reduction (argmax: a value
        and an index) carries one accumulator per input and gives a list."""
        n = len(inst.operands) // 2
        reducer = inst.called_computations[0]
        try:
            m = output_to_input_indexing(inst)[0][0]
        except IndexingError as e:
            raise EmitterError(inst, e.reason) from None
        inits = [self.emit(init, []) for init in inst.operands[n:]]

        def body(ivs, operand_index, accumulators):
            def step():
                xs = [self.emit(x, list(operand_index)) for x in inst.operands[:n]]
                return self.call_computation(reducer, [*accumulators, *xs])
            return self._in_region(step)

        results = xla_gpu.loop(m, index, inits, body)
        return results if inst.shape.is_tuple else results[0]

    def _in_domain(self, m, index) -> ir.Value:
        """i1: `index` lies in the map's ranges and satisfies its constraints."""
        index_type = ir.IndexType.get()
        checks = [(ir.AffineDimExpr.get(i), (v.lower, v.upper))
                  for i, v in enumerate(m.dim_vars)] + m.constraints
        cond = None
        for expr, (lo, hi) in checks:
            value = xla_gpu.apply_indexing(_single(m, expr), index)
            ok = arith.andi(
                arith.cmpi(arith.CmpIPredicate.sge, value, arith.constant(index_type, lo)),
                arith.cmpi(arith.CmpIPredicate.sle, value, arith.constant(index_type, hi)))
            cond = ok if cond is None else arith.andi(cond, ok)
        return cond if cond is not None else arith.constant(ir.IntegerType.get_signless(1), 1)

    def _pad(self, inst, index):
        m = output_to_input_indexing(inst)[0][0]
        t = mlir_type(inst.shape.element_type)
        return self._guarded(self._in_domain(m, index), lambda: self._read(inst, 0, index),
                             lambda: self.emit(inst.operands[1], []), t)

    def _concatenate(self, inst, index):
        maps = output_to_input_indexing(inst)
        t = mlir_type(inst.shape.element_type)

        def from_operand(k):
            if k == len(maps) - 1:
                return self._read(inst, k, index)
            return self._guarded(self._in_domain(maps[k][0], index),
                                 lambda: self._read(inst, k, index),
                                 lambda: from_operand(k + 1), t)

        return from_operand(0)


# Every opcode the elemental emitter has, and how it is emitted: the
# elementwise ones through their ELEMENTAL rule, the rest by their method.
_E = ElementalEmitter
DISPATCH: dict[str, Callable[[ElementalEmitter, HloInstruction, list[ir.Value]], object]] = {
    **{op: _E._elementwise for op in (*ELEMENTAL, "complex", "real", "imag")},
    **{op: _E._index_transformation for op in INDEXING_OPS},
    "bitcast-convert": _E._bitcast_convert,
    "constant": _E._constant,
    "iota": _E._iota,
    "pad": _E._pad,
    "concatenate": _E._concatenate,
    "dynamic-slice": _E._dynamic_slice,
    "dynamic-update-slice": _E._dynamic_update_slice,
    "gather": _E._gather,
    "reduce": _E._reduce,
    "reduce-window": _E._reduce,
    "map": _E._map,
    "get-tuple-element": _E._get_tuple_element,
    "tuple": _E._tuple,
}


def clamped_start_index(value: ir.Value, etype: ElementType, limit: int) -> ir.Value:
    """A dynamic-slice / dynamic-update-slice start index as XLA takes it:
    an index clamped to [0, limit], so that the slice stays inside the
    operand."""
    index_type = ir.IndexType.get()
    cast = arith.index_cast if etype.is_signed else arith.index_castui
    i = cast(index_type, value)
    i = arith.maxsi(i, arith.constant(index_type, 0))
    return arith.minsi(i, arith.constant(index_type, limit))


CallComputation = Callable[[HloComputation, Sequence[ir.Value]], list[ir.Value]]


def apply_computation(comp: HloComputation, args: Sequence[ir.Value]) -> list[ir.Value]:
    """The results of a scalar computation (a reducer: one per element of a
    tuple root) on `args`, emitted inline."""
    members = {id(i) for i in comp.instructions if i.opcode != "parameter"}
    emitter = ElementalEmitter(members, lambda inst, idx: args[inst.parameter_number])
    result = emitter.emit(comp.root, [])
    return result if isinstance(result, list) else [result]


def _literal_element(values: np.ndarray, etype: ElementType, dims: Sequence[int],
                     index: Sequence[ir.Value]) -> ir.Value:
    """Element `index` of a literal: a constant for a scalar, an element of
    a constant table for an array. Floats by their exact bits; f8 (LLVM has
    no constants of them) as bytes, bitcast."""
    t = mlir_type(etype)
    flat = values.reshape(-1)
    if etype.name in FLOAT8:
        return arith.bitcast(t, _literal_element(flat.view(np.int8), ELEMENT_TYPES["s8"],
                                                 dims, index))
    if not dims:
        v = flat[0].item()
        if etype.is_float:
            return arith.constant(t, float(v))
        # An unsigned value from 2^(bits-1) on as the signless bits' signed
        # value (the attribute takes an int64: a u64 of 2^63 or more was a
        # TypeError).
        bits = etype.bits
        return arith.constant(t, int(v) - (1 << bits) * (int(v) >= 1 << (bits - 1)))
    tensor_type = ir.RankedTensorType.get(list(dims), t)
    # From the values' bytes where they are the type's storage (floats by
    # their bits): a table of 2M floats took 0.95 s to emit as text, each
    # value formatted and parsed back.
    bits = flat.view(f"u{flat.dtype.itemsize}") if etype.is_float else flat
    if not etype.is_pred and bits.dtype.itemsize * 8 == etype.bits:
        dense = ir.DenseElementsAttr.get(np.ascontiguousarray(bits).reshape(list(dims)), type=t)
        return tensor.extract(arith.ConstantOp(tensor_type, dense).result, index)
    if etype.is_float:
        items = [f"0x{int(b):X}" for b in flat.view(f"u{flat.dtype.itemsize}")]
    elif etype.is_pred:
        items = ["true" if v else "false" for v in flat]
    else:
        items = [str(int(v)) for v in flat]
    dense = ir.Attribute.parse(f"dense<{_nested(items, dims)}> : {tensor_type}")
    return tensor.extract(arith.ConstantOp(tensor_type, dense).result, index)


def _nested(items: list[str], dims: Sequence[int]) -> str:
    """Row-major `items` as a nested literal of shape `dims`: [[a, b], [c, d]]."""
    if len(dims) <= 1:
        return f"[{', '.join(items)}]"
    step = len(items) // dims[0] if dims[0] else 0
    return "[" + ", ".join(_nested(items[i * step:(i + 1) * step], dims[1:])
                           for i in range(dims[0])) + "]"


def _single(m, expr):
    """`m`'s domain with `expr` as its only result."""
    affine = ir.AffineMap.get(m.num_dims, m.num_symbols, [expr])
    return IndexingMap.get(affine, [(v.lower, v.upper) for v in m.dim_vars],
                           [(v.lower, v.upper) for v in m.range_vars])
