"""Checks a fusion before emission, so that a malformed one is an error
naming the instruction (as XLA's HLO verifier would give) rather than
invalid MLIR: operand counts, shapes and element types of elementwise ops,
no internal tuples, array outputs (how outputs of different shapes are
written is each emitter's rule)."""

from __future__ import annotations

import numpy as np

from ..hlo import HloComputation, HloInstruction
from ..hlo.opcodes import (COMPLEX_OK, FLOAT_ONLY, INTEGER_ONLY, INTEGER_OR_PRED, OPCODES,
                           READS_THROUGH_MAPS, TYPE_CHANGING, arity as elementwise_arity)
from ..indexing import IndexingError, MalformedInstructionError, output_to_input_indexing
from .elemental import COMPLEX_PART, EmitterError, EmitterNotBuiltError, mlir_type

__all__ = ["verify_fusion", "verify_fusion_instruction", "verify_instruction"]

DIRECTIONS = frozenset({"EQ", "NE", "LT", "LE", "GT", "GE"})


def _expected_dims(inst: HloInstruction) -> list[int] | None:
    """The output dimensions XLA's shape inference gives the indexing ops
    (None where this does not check them)."""
    op, operand = inst.opcode, inst.operands[0].shape
    dims = list(operand.dims)
    if op == "transpose":
        perm = inst.dimensions
        if sorted(perm) != list(range(len(dims))):
            raise EmitterError(inst, f"dimensions={{{','.join(map(str, perm))}}} is not a "
                               f"permutation of the operand's {len(dims)} dimensions")
        return [dims[i] for i in perm]
    if op == "broadcast":
        mapped = inst.dimensions
        out = list(inst.shape.dims)
        if len(mapped) != len(dims) or any(not 0 <= d < len(out) for d in mapped) or \
                any(out[d] != n for d, n in zip(mapped, dims)):
            raise EmitterError(inst, f"dimensions={{{','.join(map(str, mapped))}}} does not "
                               f"place {operand} into {inst.shape}")
        return out
    if op in ("reshape", "bitcast") and inst.shape.num_elements != operand.num_elements:
        raise EmitterError(inst, f"{inst.shape} and operand {operand} have different "
                           "element counts")
    if op == "reverse" and any(not 0 <= d < len(dims) for d in inst.dimensions):
        raise EmitterError(inst, f"reverse dimensions {inst.dimensions} out of range")
    if op == "slice":
        ranges = inst.attr("slice")
        if len(ranges) != len(dims):
            return [-1]
        return [max(0, -(-(limit - start) // stride)) for start, limit, stride in ranges]
    if op == "pad":
        padding = inst.attr("padding")
        if len(padding) != len(dims):
            return [-1]
        return [lo + hi + n + max(0, n - 1) * interior
                for n, (lo, hi, interior) in zip(dims, padding)]
    if op == "concatenate":
        axis = inst.dimensions[0] if inst.dimensions else -1
        if not 0 <= axis < len(dims) or any(o.shape.rank != len(dims) for o in inst.operands):
            return [-1]
        dims[axis] = sum(o.shape.dims[axis] for o in inst.operands)
        return dims
    return None


def _verify_get_tuple_element(inst: HloInstruction) -> None:
    """Only a variadic reduction's results are tuples inside a fusion."""
    if len(inst.operands) != 1:
        raise EmitterError(inst, f"get-tuple-element takes 1 operand, got {len(inst.operands)}")
    source = inst.operands[0]
    if source.opcode not in ("reduce", "reduce-window") or not source.shape.is_tuple:
        raise EmitterError(inst, "internal tuples are not supported (a fusion can be "
                           "rewritten without them); only a variadic reduction's results "
                           "are taken apart")
    leaves = source.shape.leaves()
    k = inst.attr("index")
    if not isinstance(k, int) or not 0 <= k < len(leaves):
        raise EmitterError(inst, f"index={k} is not an element of {source.shape}")
    if str(leaves[k]) != str(inst.shape):
        raise EmitterError(inst, f"element {k} of {source.name} is {leaves[k]}, not "
                           f"{inst.shape}")


def _verify_variadic_reduce(inst: HloInstruction) -> None:
    """N inputs of one shape, N scalar inits, a reducer of 2N scalars to N;
    the result a tuple of N arrays when N > 1 (argmax: a value and an index)."""
    n = len(inst.operands) // 2
    if len(inst.operands) % 2 or n == 0:
        raise EmitterError(inst, f"{inst.opcode} takes inputs and as many init values, got "
                           f"{len(inst.operands)} operands")
    inputs, inits = inst.operands[:n], inst.operands[n:]
    leaves = inst.shape.leaves() if inst.shape.is_tuple else [inst.shape]
    if len(leaves) != n or (n > 1) != inst.shape.is_tuple:
        raise EmitterError(inst, f"{n} input{'s' * (n > 1)} produce "
                           f"{'a tuple of ' + str(n) + ' arrays' if n > 1 else 'an array'}, "
                           f"not {inst.shape}")
    for k, (x, init, leaf) in enumerate(zip(inputs, inits, leaves)):
        if not x.shape.is_array or x.shape.dims != inputs[0].shape.dims:
            raise EmitterError(inst, f"input {k} ({x.name}, {x.shape}) differs in shape from "
                               f"input 0 ({inputs[0].shape})")
        if not init.shape.is_array or init.shape.rank != 0:
            raise EmitterError(inst, f"init value {k} ({init.name}) must be a scalar, not "
                               f"{init.shape}")
        types = {x.shape.element_type, init.shape.element_type, leaf.element_type}
        if len(types) != 1:
            raise EmitterError(inst, f"input {k}, its init value and result {k} must have "
                               f"one element type, got {x.shape.element_type}, "
                               f"{init.shape.element_type} and {leaf.element_type}")
    if inst.opcode == "reduce":
        _verify_reduced_dimensions(inst, inputs[0].shape, leaves)
    reducer = inst.called_computations[0] if inst.called_computations else None
    if reducer is None:
        raise EmitterError(inst, f"{inst.opcode} needs a reducer (to_apply=)")
    if len(reducer.parameters) != 2 * n:
        raise EmitterError(inst, f"the reducer {reducer.name} takes "
                           f"{len(reducer.parameters)} parameters; {inst.opcode} of {n} "
                           f"input{'s' * (n > 1)} needs {2 * n}")
    results = reducer.outputs
    if len(results) != n:
        raise EmitterError(inst, f"the reducer {reducer.name} returns {len(results)} "
                           f"value{'s' * (len(results) > 1)}, {inst.opcode} needs {n}")


def _verify_reduced_dimensions(inst: HloInstruction, operand, leaves) -> None:
    """`dimensions=` names distinct dimensions of the input; each result has
    the input's other dimensions."""
    dims = inst.attr("dimensions")
    text = f"dimensions={inst.attributes['dimensions'].text}"
    if not isinstance(dims, list) or len(set(dims)) != len(dims) or any(
            not isinstance(d, int) or not 0 <= d < operand.rank for d in dims):
        raise EmitterError(inst, f"{text} are not distinct dimensions of {operand}")
    kept = tuple(n for i, n in enumerate(operand.dims) if i not in dims)
    for leaf in leaves:
        if leaf.dims != kept:
            raise EmitterError(inst, f"reducing {text} of {operand} leaves "
                               f"[{','.join(map(str, kept))}], not {leaf}")


def _verify_reads(inst: HloInstruction) -> None:
    variadic = inst.opcode in ("reduce", "reduce-window") and inst.shape.is_tuple
    if not (inst.shape.is_array or variadic) or not all(o.shape.is_array
                                                          for o in inst.operands):
        raise EmitterError(inst, "operands and result must be arrays (no tuples)")
    out_dims = (inst.shape.leaves()[0] if variadic else inst.shape).dims
    if inst.opcode == "dynamic-slice":
        sizes = inst.attr("dynamic_slice_sizes")
        text = f"dynamic_slice_sizes={inst.attributes['dynamic_slice_sizes'].text}"
        dims = inst.operands[0].shape.dims
        if not isinstance(sizes, list) or len(sizes) != len(dims) or any(
                not isinstance(n, int) or not 0 <= n <= d for n, d in zip(sizes, dims)):
            raise EmitterError(inst, f"{text} do not fit the operand {inst.operands[0].shape}")
        if list(sizes) != list(inst.shape.dims):
            raise EmitterError(inst, f"{text} do not match the result {inst.shape}")
    starts = {"dynamic-slice": 1, "dynamic-update-slice": 2}.get(inst.opcode)
    if starts is not None:
        rank = inst.operands[0].shape.rank
        if len(inst.operands) != starts + rank or any(
                o.shape.rank != 0 for o in inst.operands[starts:]):
            raise EmitterError(inst, f"{inst.opcode} of a rank-{rank} operand takes {rank} "
                               f"scalar start indices, got {len(inst.operands) - starts}")
        if starts == 2 and inst.operands[1].shape.rank != rank:
            raise EmitterError(inst, f"the update {inst.operands[1].shape} must have the "
                               f"operand's rank {rank}")
    expected = _expected_dims(inst)
    if expected is not None and expected != list(out_dims if variadic else inst.shape.dims):
        raise EmitterError(inst, f"{inst.shape} cannot be made of operand 0 "
                           f"({inst.operands[0].name}, {inst.operands[0].shape})")
    if 0 in out_dims or any(o.shape.num_elements == 0 for o in inst.operands):
        return  # nothing is read (its indexing maps would have empty domains)
    try:
        per_operand = output_to_input_indexing(inst)
    except MalformedInstructionError as e:
        raise EmitterError(inst, e.reason) from None
    except IndexingError as e:
        # Well formed, but a form the emitters do not cover (a gather not
        # in canonical form): XLA can run it.
        raise EmitterNotBuiltError(inst, e.reason) from None
    for k, (operand, maps) in enumerate(zip(inst.operands, per_operand)):
        dims = operand.shape.dims
        for m in maps:
            if m.num_results != len(dims) or m.num_dims != len(out_dims):
                raise EmitterError(inst, f"{inst.shape} cannot be made of operand {k} "
                                   f"({operand.name}, {operand.shape})")
            bounds = {str(e): r for e, r in m.constraints}
            for j, e in enumerate(m.affine_map.results):
                lo, hi = m.range_of(e)
                if str(e) in bounds:
                    lo, hi = max(lo, bounds[str(e)][0]), min(hi, bounds[str(e)][1])
                if lo < 0 or hi > dims[j] - 1:
                    raise EmitterError(inst, f"reads dimension {j} of operand {k} "
                                       f"({operand.name}, {operand.shape}) at [{lo}, {hi}], "
                                       f"outside [0, {dims[j] - 1}]")


def verify_fusion_instruction(fusion: HloInstruction) -> None:
    """The fusion instruction against its computation: one operand per
    parameter, of the parameter's shape; a computation of its own (not the
    entry, not one holding the fusion)."""
    comp = fusion.fused_computation
    if comp is None:
        raise EmitterError(fusion, "a fusion needs calls= naming its computation")
    if fusion.parent is None:
        return  # a computation wrapped as a fusion by the tools
    if comp is fusion.parent or comp.is_entry:
        raise EmitterError(fusion, f"calls={comp.name} names the "
                           f"{'entry' if comp.is_entry else 'calling'} computation")
    params = comp.parameters
    if len(fusion.operands) != len(params):
        raise EmitterError(fusion, f"the fusion has {len(fusion.operands)} operands, its "
                           f"computation {comp.name} {len(params)} parameters")
    for k, (o, p) in enumerate(zip(fusion.operands, params)):
        if o.shape.to_text(layout=False) != p.shape.to_text(layout=False):
            raise EmitterError(fusion, f"operand {k} ({o.name}) is {o.shape}, parameter {k} of "
                               f"{comp.name} is {p.shape}")
    root_shape = comp.root.shape.to_text(layout=False)
    if fusion.shape.to_text(layout=False) != root_shape:
        raise EmitterError(fusion, f"the fusion is {fusion.shape}, its computation returns "
                           f"{comp.root.shape}")


def _verify_constant(inst: HloInstruction) -> None:
    """A literal must be representable in its type (XLA: f16 1e400 is out of
    range, not infinity)."""
    literal = inst.literal
    etype = inst.shape.element_type if inst.shape.is_array else None
    if literal is None or literal.value is None or etype is None or not etype.is_float:
        return
    with np.errstate(all="ignore"):
        values = np.asarray(literal.value).astype(np.float64, copy=False)
    if np.isinf(values).any() and "inf" not in literal.text.lower():
        raise EmitterError(inst, f"the constant {literal.text} is out of range for "
                           f"{etype}")


def verify_instruction(inst: HloInstruction) -> None:
    """Raises EmitterError when `inst` is malformed (operand count, shapes,
    element types, attributes, reads inside its operands); an instruction
    the emitters do not know is left alone."""
    _verify(inst, inst.parent)


# Indices are 64-bit (XLA's int64 indexing); maps multiply them by strides.
kMaxElements = 1 << 62


def verify_fusion(comp: HloComputation) -> None:
    """Raises EmitterError on the first malformed instruction of `comp`."""
    for inst in comp.instructions:
        for leaf in inst.shape.leaves():
            if leaf.num_elements > kMaxElements:
                raise EmitterError(inst, f"{leaf} has {leaf.num_elements} elements, more than "
                                   "64-bit indexing covers (2^62)")
            # A dimension past 64-bit indexing is refused even where another
            # dimension is 0 (the element count alone would not show it).
            if any(d > kMaxElements for d in leaf.dims):
                raise EmitterError(inst, f"{leaf} has a dimension larger than 64-bit "
                                   "indexing covers (2^62)")
    for inst in comp.instructions:
        _verify(inst, comp)
    # The computations it calls (reducers, map computations) too.
    for called in comp.callees():
        for inst in called.instructions:
            _verify(inst, called)
    for r in comp.outputs:
        if not r.shape.is_array:
            raise EmitterError(r, "a fusion output must be an array (no nested tuples)")


def _verify(inst: HloInstruction, comp: HloComputation) -> None:
    op = inst.opcode
    for leaf in inst.shape.leaves():
        try:
            mlir_type(leaf.element_type)
        except ValueError as e:
            raise EmitterError(inst, str(e)) from None
    missing = [a for a in (OPCODES[op].required if op in OPCODES else ())
               if a not in inst.attributes]
    if missing:
        raise EmitterError(inst, f"'{op}' needs {', '.join(a + '=' for a in missing)}")
    if op == "constant":
        _verify_constant(inst)
    if op == "get-tuple-element":
        _verify_get_tuple_element(inst)
        return
    if op == "tuple" and inst is not comp.root:
        raise EmitterError(inst, "internal tuples are not supported (a fusion can be "
                           "rewritten without them)")
    if op == "tuple" or op == "parameter":
        return
    if op in ("reduce", "reduce-window"):
        _verify_variadic_reduce(inst)
    if op == "reduce-precision":
        # XLA's shape inference: at least one exponent bit, no negative
        # mantissa bits (more than the type has change nothing).
        e, m = inst.attr("exponent_bits"), inst.attr("mantissa_bits")
        if not isinstance(e, int) or not isinstance(m, int) or e < 1 or m < 0:
            raise EmitterError(inst, f"exponent_bits={inst.attributes['exponent_bits'].text} "
                               f"and mantissa_bits={inst.attributes['mantissa_bits'].text} must "
                               "be at least 1 and 0")
    if op == "iota":
        d = inst.attr("iota_dimension")
        if not isinstance(d, int) or not 0 <= d < inst.shape.rank:
            raise EmitterError(inst, f"iota_dimension={d} is not a dimension of {inst.shape}")
        return
    arity = elementwise_arity(op)
    if arity is None:
        if op in READS_THROUGH_MAPS:
            count = OPCODES[op].arity
            if (count is not None and len(inst.operands) != count) or not inst.operands:
                raise EmitterError(inst, f"'{op}' takes {count or 'at least 1'} operand"
                                   f"{'s' * (count != 1)}, got {len(inst.operands)}")
            _verify_reads(inst)
        return
    if len(inst.operands) != arity:
        raise EmitterError(inst, f"'{op}' takes {arity} operand{'s' * (arity > 1)}, "
                           f"got {len(inst.operands)}")
    if not inst.shape.is_array:
        raise EmitterError(inst, f"'{op}' must produce an array, not {inst.shape}")
    if op == "bitcast-convert" and inst.operands[0].shape.is_array and inst.shape.is_array:
        src, out = inst.operands[0].shape, inst.shape
        a, b = src.element_type.bits, out.element_type.bits
        wider, narrower = (src, out) if a > b else (out, src)
        if a != b and (wider.dims != narrower.dims[:-1] or
                       narrower.dims[-1:] != (max(a, b) // min(a, b),)):
            raise EmitterError(inst, f"bitcast-convert from {src} to {out}: the narrower "
                               f"side needs one more dimension, of size {max(a, b) // min(a, b)}")
        return
    for k, o in enumerate(inst.operands):
        scalar_bound = op == "clamp" and k != 1 and o.shape.is_array and o.shape.rank == 0
        if not o.shape.is_array or (o.shape.dims != inst.shape.dims and not scalar_bound):
            raise EmitterError(inst, f"operand {k} ({o.name}) has shape {o.shape}, "
                               f"expected dimensions {list(inst.shape.dims)}")
    out = inst.shape.element_type
    types = [o.shape.element_type for o in inst.operands]
    if op == "select":
        if not types[0].is_pred:
            raise EmitterError(inst, f"the predicate of select must be pred, got {types[0]}")
        types = types[1:]
    if op in ("real", "imag") or (op == "abs" and types[0].is_complex):
        part = COMPLEX_PART.get(types[0].name, types[0])
        if out != part:
            raise EmitterError(inst, f"'{op}' of {types[0]} produces {part}, not {out}")
        return
    if op == "complex":
        if types[0] != types[1] or COMPLEX_PART.get(out.name) != types[0]:
            raise EmitterError(inst, f"complex takes two f32 (for c64) or f64 (for c128) "
                               f"parts, got {types[0]} and {types[1]} for {out}")
        return
    if op not in TYPE_CHANGING:
        for k, t in enumerate(types):
            if t != out:
                raise EmitterError(inst, f"operand element type {t} does not match the "
                                   f"result's {out}")
    elif op in ("compare", "is-finite") and not out.is_pred:
        raise EmitterError(inst, f"'{op}' produces pred, not {out}")
    if op == "compare":
        if types[0] != types[1]:
            raise EmitterError(inst, f"compare of {types[0]} with {types[1]}")
        direction = inst.attr("direction")
        if direction not in DIRECTIONS:
            raise EmitterError(inst, f"compare needs direction=EQ|NE|LT|LE|GT|GE, "
                               f"got {direction!r}")
    t = types[0]
    if op in FLOAT_ONLY and not (t.is_float or (t.is_complex and op in COMPLEX_OK)):
        raise EmitterError(inst, f"'{op}' needs a floating-point operand, got {t}")
    if op in INTEGER_ONLY and not t.is_integer:
        raise EmitterError(inst, f"'{op}' needs an integer operand, got {t}")
    if op in INTEGER_OR_PRED and not (t.is_integer or t.is_pred):
        raise EmitterError(inst, f"'{op}' needs an integer or pred operand, got {t}")
