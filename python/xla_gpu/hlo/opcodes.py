"""One table of what the emitters need to know about each HLO opcode: the
indexing analysis, the verifier, the elemental emitter and the loop
emitter's launch heuristics all read it (there is no other copy).

    OPCODES["tanh"].elementwise, OPCODES["tanh"].arity    # True, 1
    ELEMENTWISE, READS_THROUGH_MAPS                       # derived sets
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["COMPLEX_OK", "ELEMENTWISE", "FLOAT_ONLY", "INDEXING_OPS", "INTEGER_ONLY",
           "INTEGER_OR_PRED", "OPCODES", "Opcode", "PREVENTS_VECTORIZATION",
           "READS_THROUGH_MAPS", "TYPE_CHANGING", "arity"]


@dataclass(frozen=True)
class Opcode:
    name: str
    # Elementwise: output element i reads element i of each operand (or
    # the one element of a scalar operand).
    elementwise: bool = False
    # Its number of operands (None: any number, as map's or concatenate's).
    arity: int | None = None
    # The operand element types it takes: "any", "float" (complex too when
    # `complex_ok`), "integer", "integer_or_pred".
    operands: str = "any"
    complex_ok: bool = False
    # The result's element type differs from the operands'.
    type_changing: bool = False
    # A pure index transformation: its operand is read through an indexing
    # map (XLA's elemental emitter reads it at the mapped index).
    indexing: bool = False
    # Reads operand elements through indexing maps that the verifier checks
    # land inside the operand.
    reads_through_maps: bool = False
    # XLA's MayPreventVectorization: a loop or a libcall per element makes
    # unrolling a loss.
    prevents_vectorization: bool = False
    # Attributes the instruction cannot be read without.
    required: tuple[str, ...] = ()


def _table() -> dict[str, Opcode]:
    rows: list[Opcode] = []

    def unary(names: str, **kw):
        rows.extend(Opcode(n, elementwise=True, arity=1, **kw) for n in names.split())

    def binary(names: str, **kw):
        rows.extend(Opcode(n, elementwise=True, arity=2, **kw) for n in names.split())

    # Elementwise, one operand.
    unary("abs negate sign")
    unary("bitcast-convert convert", type_changing=True)
    unary("copy", indexing=True, reads_through_maps=True)
    unary("cbrt ceil erf floor logistic round-nearest-afz round-nearest-even",
          operands="float")
    unary("reduce-precision", operands="float", required=("exponent_bits", "mantissa_bits"))
    unary("exponential exponential-minus-one log log-plus-one rsqrt sqrt tanh",
          operands="float", complex_ok=True)
    unary("cosine sine tan", operands="float", complex_ok=True, prevents_vectorization=True)
    unary("is-finite", operands="float", type_changing=True)
    unary("real imag", type_changing=True)
    unary("count-leading-zeros popcnt", operands="integer")
    unary("not", operands="integer_or_pred")
    # Elementwise, two operands.
    binary("add divide maximum minimum multiply remainder subtract")
    binary("atan2", operands="float", prevents_vectorization=True)
    binary("power", prevents_vectorization=True)
    binary("complex", type_changing=True)
    binary("compare", type_changing=True, required=("direction",))
    binary("and or xor", operands="integer_or_pred")
    binary("shift-left shift-right-arithmetic shift-right-logical", operands="integer")
    # Elementwise, three operands, and map (its computation's arity).
    rows += [Opcode("clamp", elementwise=True, arity=3),
             Opcode("select", elementwise=True, arity=3),
             Opcode("stochastic-convert", elementwise=True, arity=2, type_changing=True),
             Opcode("map", elementwise=True, required=("to_apply",))]
    # Index transformations and other reads through maps.
    needs = {"broadcast": ("dimensions",), "transpose": ("dimensions",), "slice": ("slice",),
             "reverse": ("dimensions",), "pad": ("padding",), "concatenate": ("dimensions",),
             "dynamic-slice": ("dynamic_slice_sizes",), "reduce": ("dimensions", "to_apply"),
             "gather": ("offset_dims", "collapsed_slice_dims", "start_index_map",
                        "index_vector_dim", "slice_sizes")}
    for n in "broadcast transpose reshape bitcast slice reverse".split():
        rows.append(Opcode(n, arity=1, indexing=True, reads_through_maps=True,
                           required=needs.get(n, ())))
    fixed = {"pad": 2, "gather": 2}
    for n in "pad concatenate dynamic-slice dynamic-update-slice gather reduce".split():
        rows.append(Opcode(n, arity=fixed.get(n), reads_through_maps=True,
                           required=needs.get(n, ())))
    rows.append(Opcode("reduce-window", reads_through_maps=True, prevents_vectorization=True,
                       required=("window", "to_apply")))
    rows += [Opcode("sort", prevents_vectorization=True),
             Opcode("dot", prevents_vectorization=True)]
    # The rest the emitters know by name.
    rows += [Opcode(n) for n in "parameter constant tuple fusion call scatter".split()]
    rows += [Opcode("iota", required=("iota_dimension",)),
             Opcode("get-tuple-element", required=("index",))]
    return {o.name: o for o in rows}


OPCODES: dict[str, Opcode] = _table()


def _where(**kw) -> frozenset[str]:
    return frozenset(n for n, o in OPCODES.items()
                     if all(getattr(o, k) == v for k, v in kw.items()))


ELEMENTWISE = _where(elementwise=True)
FLOAT_ONLY = _where(operands="float")
INTEGER_ONLY = _where(operands="integer")
INTEGER_OR_PRED = _where(operands="integer_or_pred")
COMPLEX_OK = _where(complex_ok=True)
TYPE_CHANGING = _where(type_changing=True)
INDEXING_OPS = _where(indexing=True)
READS_THROUGH_MAPS = _where(reads_through_maps=True)
PREVENTS_VECTORIZATION = _where(prevents_vectorization=True)


def arity(opcode: str) -> int | None:
    """Operands of an elementwise opcode (None: not elementwise, or map)."""
    o = OPCODES.get(opcode)
    return o.arity if o is not None and o.elementwise else None
