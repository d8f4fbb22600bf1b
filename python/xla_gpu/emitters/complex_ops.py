"""Elementwise ops on complex numbers (c64, c128) as `complex` dialect ops;
-xla-gpu-lower-to-llvm expands them to arith/math on the parts
(upstream's complex-to-standard) and lowers a value to a struct of two
floats. In memory an element is its (re, im) pair (lower-tensors)."""

from __future__ import annotations

from mlir import ir
from mlir.dialects import arith
from mlir.dialects import complex as cplx

from ..hlo import HloInstruction

__all__ = ["convert_complex", "emit_complex", "emit_complex_create", "part_type"]

_UNARY = {
    "negate": cplx.neg, "exponential": cplx.exp, "log": cplx.log, "sqrt": cplx.sqrt,
    "rsqrt": cplx.rsqrt, "tanh": cplx.tanh, "sine": cplx.sin, "cosine": cplx.cos,
    "tan": cplx.tan, "log-plus-one": cplx.log1p, "exponential-minus-one": cplx.expm1,
    "sign": cplx.sign,
}
_BINARY = {"add": cplx.add, "subtract": cplx.sub, "multiply": cplx.mul, "divide": cplx.div,
           "power": cplx.pow}


def part_type(t: ir.Type) -> ir.Type:
    """The float type of a complex type's parts."""
    return ir.ComplexType(t).element_type


def emit_complex_create(t: ir.Type, re: ir.Value, im: ir.Value) -> ir.Value:
    return cplx.create_(t, re, im)


def emit_complex(inst: HloInstruction, args: list[ir.Value], error) -> ir.Value:
    """One element of `inst`, an op with a complex operand or result.
    `error(reason)` builds the exception for an op that has no complex form."""
    op = inst.opcode
    if op == "complex":
        t = ir.ComplexType.get(args[0].type)
        return cplx.create_(t, *args)
    if op in ("real", "imag"):
        x = args[0]
        if not isinstance(x.type, ir.ComplexType):
            return x if op == "real" else arith.constant(x.type, 0.0)
        return (cplx.re if op == "real" else cplx.im)(x)
    if op == "abs":
        return cplx.abs(args[0])
    if op in _UNARY:
        return _UNARY[op](args[0])
    if op in _BINARY:
        return _BINARY[op](*args)
    if op == "compare":
        direction = inst.attr("direction")
        if direction not in ("EQ", "NE"):
            raise error(f"complex numbers are compared for EQ and NE only, not {direction}")
        return (cplx.eq if direction == "EQ" else cplx.neq)(*args)
    raise error(f"'{op}' has no complex form")


def convert_complex(x: ir.Value, to: ir.Type, convert_part, error) -> ir.Value:
    """`convert` into complex type `to`: from another complex type part by
    part, from a real type as (x, 0). `convert_part(value, float_type)`
    converts a real value."""
    part = part_type(to)
    if isinstance(x.type, ir.ComplexType):
        re, im = cplx.re(x), cplx.im(x)
        return cplx.create_(to, convert_part(re, part), convert_part(im, part))
    return cplx.create_(to, convert_part(x, part), arith.constant(part, 0.0))
