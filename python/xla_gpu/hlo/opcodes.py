"""One table of what the emitters need to know about each HLO opcode: the
indexing analysis, the verifier, the elemental emitter and the loop
emitter's launch heuristics all read it (there is no other copy).

    OPCODES["tanh"].elementwise, OPCODES["tanh"].arity    # True, 1
    ELEMENTWISE, READS_THROUGH_MAPS                       # derived sets
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["XLA_OPCODES", "COMPLEX_OK", "ELEMENTWISE", "FLOAT_ONLY", "INDEXING_OPS", "INTEGER_ONLY",
           "INTEGER_OR_PRED", "OPCODES", "Opcode", "PREVENTS_VECTORIZATION",
           "READS_THROUGH_MAPS", "TYPE_CHANGING", "arity"]


# Every opcode the HLO parser of the reference XLA (jaxlib 0.10.2) knows,
# with its number of operands (XLA's HloOpcodeArity; * any number): an
# instruction with another opcode or operand count is a parse error, as in
# XLA. The table below describes the opcodes the emitters know about.
_XLA_ARITIES = """
    abs 1  acos 1  acosh 1  add 2  add-dependency 2  after-all *  all-gather *
    all-gather-done 1  all-gather-start *  all-reduce *  all-reduce-done 1
    all-reduce-start *  all-to-all *  and 2  asin 1  asinh 1  async-done 1
    async-start *  async-update *  atan2 2  atanh 1  batch-norm-grad 5
    batch-norm-inference 5  batch-norm-training 3  bitcast 1  bitcast-convert 1
    broadcast 1  call *  cbrt 1  ceil 1  cholesky 1  clamp 3
    collective-broadcast *  collective-permute *  collective-permute-done 1
    collective-permute-start *  compare 2  complex 2  concatenate *  conditional *
    constant 0  convert 1  convolution *  copy 1  copy-done 1  copy-start 1
    cosh 1  cosine 1  count-leading-zeros 1  custom-call *  divide 2  domain 1
    dot 2  dynamic-reshape *  dynamic-slice *  dynamic-update-slice *  erf 1
    exponential 1  exponential-minus-one 1  fft 1  floor 1  fusion *  gather 2
    get-dimension-size 1  get-tuple-element 1  imag 1  infeed 1  iota 0
    is-finite 1  log 1  log-plus-one 1  logistic 1  map *  maximum 2  minimum 2
    mulhi 2  multiply 2  negate 1  not 1  opt-barrier 1  or 2  outfeed 2  pad 2
    parameter 0  partition-id 0  popcnt 1  power 2  ragged-all-to-all 6
    ragged-dot 3  real 1  recv 1  recv-done 1  reduce *  reduce-precision 1
    reduce-scatter *  reduce-window *  remainder 2  replica-id 0  reshape 1
    reverse 1  rng *  rng-bit-generator 1  rng-get-and-update-state 0
    round-nearest-afz 1  round-nearest-even 1  rsqrt 1  scaled-dot 4  scan *
    scatter *  select 3  select-and-scatter 3  send 2  send-done 1
    set-dimension-size 2  shift-left 2  shift-right-arithmetic 2
    shift-right-logical 2  sign 1  sine 1  sinh 1  slice 1  sort *  sqrt 1
    stochastic-convert 2  subtract 2  tan 1  tanh 1  topk 1  transpose 1
    triangular-solve 2  tuple *  while 1  xor 2
""".split()
XLA_OPCODES: dict[str, int | None] = {
    name: None if n == "*" else int(n) for name, n in zip(_XLA_ARITIES[::2], _XLA_ARITIES[1::2])}


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
