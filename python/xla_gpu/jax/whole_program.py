"""`xla_gpu.jax.jit`: a whole jax program, XLA's fusions run by our
emitters.

    f = xla_gpu.jax.jit(transformer_block)
    y = f(x, params)               # one XLA executable; params a pytree
    print(f.fusion_report())       # which fusions are ours, which XLA's, why

For the shapes of a call:
  1. jax and XLA compile the program as usual (XLA:CPU's optimized module:
     its fusion decisions, layouts, everything else);
  2. every fusion our emitters take, of the entry and of its while loops'
     bodies, conditionals' branches and calls (there, not one of few
     elements: MIN_CONTROL_FLOW_ELEMENTS) -- row-major
     operands and results, no dot or convolution (what XLA's library fusions
     are for; a kCustom fusion of reductions and elementwise ops is taken),
     an emitter for its hero --
     becomes a typed-FFI custom call to its kernel (`xla_gpu_cpu_kernel`,
     self-contained attributes as xla_gpu.jax.call makes them; an in-place
     kernel's output aliased to its operand) -- or several, one after the
     other, where its reduction is one no block can do alone or one its
     elements would each recompute (emitters/tree_reduction.py);
  3. the module, as XLA takes HLO text (fusions as calls, see
     reference.as_xla_takes_it), is compiled again by XLA:CPU, which keeps
     the custom calls as they are, and runs as one executable.
"""

from __future__ import annotations

import functools
import hashlib
import json
import math
import os
import pickle
import re
import threading
import weakref
from dataclasses import dataclass, replace
from pathlib import Path

import jax
import numpy as np
from jax.experimental import serialize_executable
from mlir import ir

from ..context import new_context
from ..emitters import EmitterError, emit_kernel, shareable_operands
from ..emitters.device import DEFAULT_DEVICE, DeviceDescription
from ..emitters.kernel import BLOCK_LOCAL_ATTR, BLOCK_LOCAL_DIMS, EmittedKernel
from ..hlo import HloInstruction, HloModule, parse_hlo
from ..hlo.parser import HloParseError
from ..hlo.module import Attribute, Literal, replace_uses
from ..hlo.proto import constant_values
from ..hlo.simplify_fp_conversions import simplify_fp_conversions
from ..reference import (XlaCpuExecutable, as_xla_takes_it, excess_precision_allowed,
                         kernel_row_major)
from ..emitters.tree_reduction import _before, call_the_originals
from ..emitters.fusion_merger import (computes_cheaply, is_elementwise_producer, merge_producer,
                                      merge_region,
                                      merge_siblings, moves_elements, reads_at_own_indices,
                                      reads_each_element_at_most_once, reads_each_element_once,
                                      wrapped)
from ..emitters.fusion_analysis import EmitterKind, analyze_fusion, host_short_rows
from ..emitters.merged_kernel import _function, merge_kernels, same_row_blocks
from ..emitters.reduction import (host_streamed_rows, host_xla_vectors, keeps_xla_vectors,
                                  streamed_program, streams_program_rows)
from ..emitters.tree_reduction import COSTLY_OPS, split_reduction
from ..hlo.opcodes import ELEMENTWISE
from ..hlo.shape import Layout, Shape
from .kernel_call import KernelCall, prepare

__all__ = ["FusionDecision", "jit"]


@dataclass(frozen=True)
class FusionDecision:
    """One fusion of XLA's optimized module: ours, or XLA's and why."""

    name: str
    kind: str
    ours: bool
    reason: str = ""

    def __str__(self) -> str:
        return (f"{self.name} ({self.kind}): " + ("ours" if self.ours else "XLA's") +
                (f" -- {self.reason}" if self.reason else ""))


def _mlir_attribute(value) -> ir.Attribute:
    """A KernelCall attribute (what ffi_call takes) as the MLIR attribute
    XLA reads from a typed-FFI custom call's backend_config."""
    from jax._src.hashable_array import HashableArray
    if isinstance(value, HashableArray):
        value = value.val
    if isinstance(value, str):
        return ir.StringAttr.get(value)
    if isinstance(value, dict):
        return ir.DictAttr.get({k: _mlir_attribute(v) for k, v in value.items()})
    if isinstance(value, np.ndarray):
        if value.dtype == np.int32:
            return ir.DenseI32ArrayAttr.get([int(v) for v in value])
        return ir.DenseI64ArrayAttr.get([int(v) for v in value])
    if isinstance(value, (np.int32, np.int64)):
        width = 32 if isinstance(value, np.int32) else 64
        return ir.IntegerAttr.get(ir.IntegerType.get_signless(width), int(value))
    raise TypeError(f"no MLIR attribute for {type(value).__name__}")


def _hlo_string(text: str) -> str:
    """An HLO string literal (C escapes)."""
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


# What a library (kCustom) fusion keeps XLA's: XLA:CPU's YNNPACK fusions
# also hold plain reductions and elementwise ops, which are ours to take.
_LIBRARY_OPS = {"dot", "convolution", "custom-call", "fft", "cholesky", "triangular-solve"}


# The kernels _replace_fusions has emitted, by _fusion_key (on the thread
# that runs it; None elsewhere).
_emitted = threading.local()

# An instruction's name where an attribute refers to one (to_apply=%add,
# calls=%fused_computation): its callee is in the key by position.
_NAME_REFERENCE = re.compile(r"%[\w.\-]+")


def _fusion_key(fusion: HloInstruction) -> tuple:
    """What the kernel of `fusion` is made from, without names: its shape,
    its operands' (and which are the same), its attributes, and each
    instruction of its computations (opcode, shape with layout, operands
    and callees by position, literal, attributes; metadata left out). Two
    fusions of one key have one kernel but for its functions' names: a
    model's layers, one after the other."""
    comps = [fusion.fused_computation, *fusion.fused_computation.callees()]
    position = {id(c): k for k, c in enumerate(comps)}

    def attributes(inst):
        return tuple((a.name, _NAME_REFERENCE.sub("%", a.text)) for a in inst.attributes.values()
                     if a.name != "metadata")

    def literal(inst):
        lit = inst.literal
        if lit is None:
            return None
        if lit.value is None:  # elided: its values unknown, the key its own
            return object()
        if lit.from_value:  # its text not made (a large table's takes seconds)
            return (lit.value.dtype.str, lit.value.shape,
                    hashlib.sha256(np.ascontiguousarray(lit.value).tobytes()).digest())
        return lit.text

    first = {}
    key = [(fusion.shape, tuple(o.shape for o in fusion.operands),
            tuple(first.setdefault(id(o), k) for k, o in enumerate(fusion.operands)),
            attributes(fusion))]
    for comp in comps:
        index = {id(i): k for k, i in enumerate(comp.instructions)}
        key.append(tuple(
            (i.opcode, i.shape, i.parameter_number, literal(i), i is comp.root,
             tuple(index[id(o)] for o in i.operands),
             tuple(position[id(c)] for c in i.called_computations), attributes(i))
            for i in comp.instructions))
    return tuple(key)


def _emit(fusion: HloInstruction, device: DeviceDescription,
          shared_operand: int | None = None) -> EmittedKernel:
    """emit_kernel(fusion, device, shared_operand, host=True), emitted once
    for all the fusions of one key (_fusion_key) in one _replace_fusions:
    the kernel is shared, never changed (a merge makes a new one). A
    12-layer transformer's forward pass asks for 223 kernels, 19 of them
    different (an error is not kept: its message names its fusion)."""
    memo = getattr(_emitted, "kernels", None)
    if memo is None:
        return emit_kernel(fusion, device, shared_operand, host=True)
    key = (_fusion_key(fusion), device, shared_operand, keeps_xla_vectors(),
           streamed_program())
    kernel = memo.get(key)
    if kernel is None:
        kernel = memo[key] = emit_kernel(fusion, device, shared_operand, host=True)
    return kernel


def _as_custom_call(inst: HloInstruction, call: KernelCall) -> None:
    """Turns fusion `inst` into the typed-FFI custom call of `call` (in the
    current context)."""
    config = str(ir.DictAttr.get({k: _mlir_attribute(v) for k, v in call.attributes.items()}))
    # The kernel takes and writes row-major arrays (kernel_row_major): its
    # operands' layouts are part of the call, and so is its result's
    # (as_xla_takes_it keeps it). Unconstrained, XLA's layout assignment
    # of the module may pick another for the result: in jax.scipy.linalg.
    # expm it made a [16,16] difference of a conditional's results
    # column-major, for LAPACK's solve after it, and read our row-major
    # values transposed.
    constraints = ", ".join(o.shape.to_text() for o in inst.operands)
    attributes = {
        "custom_call_target": Attribute("custom_call_target", _hlo_string(call.target)),
        "operand_layout_constraints": Attribute("operand_layout_constraints",
                                                f"{{{constraints}}}"),
        "api_version": Attribute("api_version", "API_VERSION_TYPED_FFI"),
        "backend_config": Attribute("backend_config", _hlo_string(config)),
    }
    if call.input_output_aliases:
        index = (lambda k: f"{{{k}}}") if inst.shape.is_tuple else (lambda k: "{}")
        pairs = ", ".join(f"{index(k)}: ({i}, {{}})" for i, k in call.input_output_aliases.items())
        attributes["output_to_operand_aliasing"] = Attribute("output_to_operand_aliasing",
                                                             f"{{{pairs}}}")
    inst.opcode = "custom-call"
    inst.attributes = attributes
    inst.called_computations = []


# XLA's fusions that may write over an operand's buffer themselves.
_IN_PLACE_ROOTS = {"dynamic-update-slice", "scatter"}


def _shared_operand(inst: HloInstruction) -> int | None:
    """The operand of fusion `inst` whose buffer its kernel writes its result
    over, as XLA's buffer assignment shares an elementwise fusion's result
    with an operand (emitters.shareable_operands): a value of the program
    no other instruction reads afterwards, so that XLA's copy insertion
    adds no copy for it -- not a parameter or constant, not the result of
    `inst`'s computation (the program's, a loop body's state), its other
    readers all before `inst`, and a buffer of its own
    (our kernel or XLA's fusion, not written in place); or the element of
    a while loop body's state that `inst` makes next (_loop_state_of).
    None where none is. A softmax's exp(x - max) kept 2 MiB of temporary memory the
    program's last fusion could have written over; XLA allocates its
    temporaries at every run, and fresh pages cost the kernels writing
    them a page fault each (0.2 -> 1.4 ms). The operand is of the result's
    element type: the custom call's output_operand_aliases takes no other
    (a kernel may write i32 over f32 of the same width, but XLA refused
    the module of softmax(x).astype(int32), stop 74)."""
    comp = inst.parent
    live_out = {id(comp.root)}
    if comp.root.opcode == "tuple":
        live_out |= {id(o) for o in comp.root.operands}
    before = None  # what `inst` reads, directly or not
    for k in shareable_operands(inst):
        operand = inst.operands[k]
        if (id(operand) in live_out or "output_to_operand_aliasing" in operand.attributes or
                operand.shape.element_type != inst.shape.element_type):
            continue
        # An element of a tuple fusion (a reduce's part with a side value,
        # split_reduction) is a buffer of its own as well.
        made_by = operand.operands[0] if operand.opcode == "get-tuple-element" else operand
        others = [u for u in operand.users if u is not inst]
        if made_by.opcode == "fusion":
            if _IN_PLACE_ROOTS & {i.opcode for i in made_by.fused_computation.instructions}:
                continue
        elif made_by.opcode == "parameter":
            state = _loop_state_of(inst, operand)
            if state is None:
                continue
            others = [u for g in state for u in g.users if u is not inst]
        elif made_by.opcode != "custom-call":
            continue
        if others and before is None:
            before, todo = set(), list(inst.operands)
            while todo:
                o = todo.pop()
                if id(o) not in before:
                    before.add(id(o))
                    todo.extend(o.operands)
        if all(id(u) in before for u in others):
            return k
    return None


def _loop_state_of(inst: HloInstruction, operand: HloInstruction) -> list | None:
    """Where `operand` is element i of a while loop body's state (a
    get-tuple-element of the body's parameter) and `inst` makes the body's
    next element i, the get-tuple-elements of element i (whose other
    readers must come before `inst` for it to write over the element);
    else None. XLA's buffer assignment keeps each element of a loop's
    state in one buffer, which a fusion making the next value from the
    last writes over: a loop of `tanh(v) * 1.1` over f32[1024,1024] wrote
    a temporary a step, which XLA then copied into the state."""
    comp = inst.parent
    if (operand.opcode != "get-tuple-element" or comp.is_entry or comp.module is None or
            comp.root.opcode != "tuple"):
        return None
    param, index = operand.operands[0], operand.attr("index")
    if index >= len(comp.root.operands) or comp.root.operands[index] is not inst:
        return None
    if not any(w.opcode == "while" and w.attr("body") == comp.name
               for c in comp.module.computations for w in c.instructions):
        return None
    return [g for g in param.users
            if g.opcode == "get-tuple-element" and g.attr("index") == index]


# The most bits of a side value (tree_reduction._side_value) a split
# writes for the parts after it: 16 where it goes through memory (an f32
# exp written and read back cost more than computing it again), 64 where
# the parts that read it run with its writer as one kernel, whose blocks
# keep their rows' values themselves (_keep_sides_in_blocks): 32 until
# stop 88, when an f64 softmax's exp stayed in the blocks too (0.80-0.92x
# the time of computing it again, through xla_gpu.jax.jit).
NARROW_SIDE_BITS, BLOCK_SIDE_BITS = 16, 64


def _emitted_parts(inst: HloInstruction, device: DeviceDescription, side_bits: int):
    """split_reduction's parts of `inst` (side values of `side_bits` or
    less), its fusions and their kernels; None where it has none, a part
    is not ours, or a side value wider than NARROW_SIDE_BITS could not
    stay in blocks (_wide_side_before_a_loop)."""
    parts = split_reduction(inst, device.threads_per_warp, host=True, side_outputs=True,
                            side_bits=side_bits)
    if not parts:
        return None
    if all(u.opcode == "get-tuple-element" for u in inst.users):  # (_take_passed_on's)
        _drop_passed_on(parts[-1])
    fusions = [part for part in parts if part.opcode == "fusion"]  # not get-tuple-elements
    if side_bits > NARROW_SIDE_BITS and _wide_side_before_a_loop(fusions):
        return None
    try:
        kernels = [_emit(part, device) for part in fusions]
        if _rows_apart_by_vectors(fusions, kernels):
            with host_xla_vectors():
                again = [_emit(part, device) for part in fusions]
            if not _rows_apart_by_vectors(fusions, again):
                kernels = again
        return parts, fusions, kernels
    except EmitterError:
        return None


# The last part of a split (see _drop_passed_on) and, for each result of
# the fusion it stands for that an earlier part makes, that part (or its
# get-tuple-element).
_PASSED_ON: "weakref.WeakKeyDictionary[HloInstruction, dict[int, HloInstruction]]" = \
    weakref.WeakKeyDictionary()


def _drop_passed_on(last: HloInstruction) -> None:
    """The results of split `last` that are its parameters -- values an
    earlier part made (tree_reduction._output_epilogue_end: a row's rstd
    beside x * rstd), which it would only pass on -- taken out of it: its
    root then returns the others (the one, not a tuple, where one is
    left), and _PASSED_ON[last] maps each taken result's index to the
    operand that makes it. A loop fusion's results are of one element
    count; without these, the rest is a loop fusion over the rows alone,
    which may join the rows' parts row-mapped (_merge_row_parts)."""
    comp = last.fused_computation
    root = comp.root
    if root.opcode != "tuple":
        return
    passed = {j: last.operands[o.parameter_number] for j, o in enumerate(root.operands)
              if o.opcode == "parameter"}
    if not passed or len(passed) == len(root.operands):
        return
    kept = [o for j, o in enumerate(root.operands) if j not in passed]
    for j, o in enumerate(root.operands):
        if j in passed:
            o.users = [u for u in o.users if u is not root]
    if len(kept) == 1:
        (new_root,) = kept
        new_root.users = [u for u in new_root.users if u is not root]
        comp.instructions.remove(root)
        comp.root = new_root
        last.shape = new_root.shape
    else:
        root.operands = kept
        root.shape = Shape(tuple_shapes=tuple(o.shape for o in kept))
        last.shape = root.shape
    _PASSED_ON[last] = passed


def _wide_sides(part: HloInstruction) -> tuple[Shape, list[Shape]]:
    """The shape of the rows split part `part` reduces, and the side values
    it writes that are wider than NARROW_SIDE_BITS."""
    rows, *sides = part.shape.tuple_shapes if part.shape.is_tuple else (part.shape,)
    return rows, [side for side in sides if side.element_type.bits > NARROW_SIDE_BITS]


def _wide_side_before_a_loop(fusions) -> bool:
    """Whether a part writing a side value wider than NARROW_SIDE_BITS has
    a loop fusion after it that will not be row-mapped (a last part that
    _row_mappable takes is a reduction's kernel then): a reduction's
    kernel and a loop kernel never run the same row blocks, so the side
    cannot stay in blocks (_sides_stay_in_blocks), and the parts of such
    sides need not be emitted (a softmax's f32 exp over f32[1024,4096],
    rows streamed: its fusion's emission 21-29 -> 17-22 ms, six compiles
    a side)."""
    loops = [f for f in fusions if analyze_fusion(f).kind != EmitterKind.REDUCTION]
    rows_part = _first_rows_part(fusions)
    if loops and loops[-1] is fusions[-1] and rows_part is not None and \
            _row_mappable(fusions[-1], rows_part):
        loops.pop()
    return any(_wide_sides(part)[1] and any(f in loops for f in fusions[w + 1:])
               for w, part in enumerate(fusions))


def _first_rows_part(fusions) -> HloInstruction | None:
    """The first of a split's parts that reduces rows (a reduction fusion,
    the rows a last loop part is row-mapped over), if any."""
    return next((f for f in fusions if analyze_fusion(f).kind == EmitterKind.REDUCTION), None)


def _rows_apart_by_vectors(fusions, kernels) -> bool:
    """Whether two consecutive parts reduce rows in the same grid but
    different thread maps, and no part computes a costly op an element:
    a bf16 layer norm's mean (a sum of the inputs as they are: XLA's
    vectors of 4) and variance ((x - mean)^2, read an element a load on
    the CPU target, HOST_MAX_UNVECTORIZED_COMPUTED_ROW) did not merge into
    one kernel; with XLA's vectors in both (host_xla_vectors) they do:
    through xla_gpu.jax.jit over bf16[32,512,768] 1.94-2.58 -> 1.50-1.55
    ms (jax.jit 1.51-1.81). A costly op's part (a softmax's exp) keeps its
    element a load (1.4x faster)."""
    rows = [(f, k) for f, k in zip(fusions, kernels)
            if analyze_fusion(f).kind == EmitterKind.REDUCTION]
    if any(i.opcode in COSTLY_OPS for f, _ in rows for i in f.fused_computation.instructions):
        return False
    return any(a.launch == b.launch and not same_row_blocks(a, b)
               for (_, a), (_, b) in zip(rows, rows[1:]))


def _sides_stay_in_blocks(fusions, kernels, device: DeviceDescription) -> bool:
    """Whether each side value wider than NARROW_SIDE_BITS is written by a
    part whose kernel runs the same row blocks as every kernel after it
    (merged_kernel.same_row_blocks), each block its own rows
    (_block_bytes): merged with them, it stays in its blocks
    (_keep_sides_in_blocks). A last part that is a loop fusion counts as
    _merge_row_parts will merge it: row-mapped, where it can be."""
    rows_part = _first_rows_part(fusions)
    if rows_part is not None and any(_wide_sides(part)[1] for part in fusions[:-1]) and \
            analyze_fusion(fusions[-1]).kind == EmitterKind.LOOP and \
            (mapped := _row_mapped(fusions[-1], rows_part, device)) is not None:
        kernels = [*kernels[:-1], mapped[1]]
    for w, part in enumerate(fusions):
        rows, wide = _wide_sides(part)
        for side in wide:
            if (_block_bytes(kernels[w], side, rows) is None or
                    not all(same_row_blocks(kernels[w], k) for k in kernels[w + 1:])):
                return False
    return True


# A row reduction's map of its input over the threads and blocks, and a
# row index of it that gives each block k consecutive rows: bl_x (k = 1),
# or bl_x * k + th_x floordiv w over k * w threads.
_ROWS_MAP = re.compile(r'#xla_gpu\.indexing_map<"\(th_x, bl_x\)\[[^\]]*\] -> \(([^)]*)\)')
_BLOCK_ROWS = re.compile(r"bl_x(?: \* (\d+) \+ th_x floordiv (\d+))?")


def _block_bytes(kernel, side: Shape, rows: Shape) -> int | None:
    """The bytes of side value `side` (a row reduction's operand's shape,
    the reduce's `rows`) that each block of `kernel` writes, where each
    block reduces consecutive rows (_BLOCK_ROWS); None otherwise."""
    maps = set(_ROWS_MAP.findall(kernel.text))
    if len(maps) != 1 or math.prod(kernel.launch.block_counts[1:]) != 1:
        return None
    found = [m for m in map(_BLOCK_ROWS.fullmatch, maps.pop().split(", ")) if m]
    if len(found) != 1:
        return None
    k, w = (int(found[0].group(1)), int(found[0].group(2))) if found[0].group(1) else (1, 0)
    threads = math.prod(kernel.launch.thread_counts_per_block)
    row_count, elements = math.prod(rows.dims), math.prod(side.dims)
    if (k > 1 and k * w != threads) or math.prod(kernel.launch.block_counts) * k != row_count \
            or elements % row_count:
        return None
    return k * (elements // row_count) * side.element_type.bits // 8


def _keep_sides_in_blocks(group: list[tuple[HloInstruction, object]], merged,
                          outputs: dict[int, int]) -> list[int]:
    """Marks each side value of the merged kernel's parts that only later
    parts of it read, and that each block writes at its own rows
    (_block_bytes), as the block's own (the entry's result argument's
    xla.block_local_bytes): the CPU target keeps a block's values in its
    storage, the L1, not in memory (a softmax's f32 exp, written once and
    read back, instead of computed again; through memory, 16 MiB written
    back a call, it cost more than the exps). Such a result is one of
    BLOCK_LOCAL_DIMS, no element, for its callers (XLA allocated the whole
    value until stop 88, never written); which results of `merged` they
    are is returned."""
    local = []
    members = {id(p) for p, _ in group} | {id(_ROW_MAPPED_FROM[p]) for p, _ in group
                                            if p in _ROW_MAPPED_FROM}
    entry = _function(merged.module.body, merged.entry)
    for part, kernel in group:
        if not part.shape.is_tuple or part in _ROW_MAPPED_FROM:
            continue
        for g in part.users:
            if (g.opcode != "get-tuple-element" or g.attr("index") == 0 or
                    id(g) not in outputs or not g.users or
                    any(id(u) not in members for u in g.users)):
                continue
            # The writer's own kernel: the merged one's row map and grid
            # (same_row_blocks), a smaller text.
            size = _block_bytes(kernel, g.shape, part.shape.tuple_shapes[0])
            if size is None:
                continue
            with merged.module.context:
                attrs = list(ir.ArrayAttr(entry.attributes["arg_attrs"]))
                at = len(merged.parameters) + outputs[id(g)]
                values = {a.name: a.attr for a in ir.DictAttr(attrs[at])}
                values[BLOCK_LOCAL_ATTR] = ir.IntegerAttr.get(ir.IntegerType.get_signless(64), size)
                attrs[at] = ir.DictAttr.get(values)
                entry.attributes["arg_attrs"] = ir.ArrayAttr.get(attrs)
            local.append(outputs[id(g)])
            merged.results[outputs[id(g)]] = _block_local_shape(g.shape)
    return local


def _block_local_shape(shape: Shape) -> Shape:
    """The shape callers give a block-local result of `shape`'s elements."""
    return Shape(shape.element_type, BLOCK_LOCAL_DIMS, Layout(tuple(range(len(BLOCK_LOCAL_DIMS)))))


def _split_reduction(inst: HloInstruction,
                     device: DeviceDescription) -> list[tuple[HloInstruction, object]]:
    """Where `inst` is a reduction no block can do alone (XLA:GPU's
    tree-reduction-rewriter would have split it before fusion; XLA:CPU
    does not), or a loop fusion that would recompute a reduction for each
    element reading it (XLA:CPU's library fusions of x - max(x)), its
    parts' kernels (tree_reduction.split_reduction), the parts put in
    `inst`'s computation before it, and it becomes the last; [] (and `inst` untouched)
    where it is neither, or a part is not ours. In the current context."""
    moved = _bytes_moved(inst), _narrowest_input_bits(inst)
    tried = _TRIED_SPLITS.pop(inst, None)
    if tried is not None and tried[0] == (inst.fused_computation, tuple(map(id, inst.operands))):
        got = tried[1]
    else:
        got = _emitted_split(inst, device)
    if got is None:
        return []
    parts, fusions, kernels = got
    comp = inst.parent
    *first, last = parts
    for o in inst.operands:  # the module's instructions the parts read
        o.users = [u for u in o.users if u is not inst] + \
            [p for p in parts if any(n is o for n in p.operands)]
    for part in first:
        part.parent = comp
        part.users = [inst if u is last else u for u in part.users]
    comp.instructions[comp.instructions.index(inst):0] = first
    inst.operands = last.operands
    inst.called_computations = last.called_computations
    inst.attributes = last.attributes
    for o in inst.operands:  # `last` is `inst` from now on
        o.users = [inst if u is last else u for u in o.users]
    if last in _PASSED_ON:
        _take_passed_on(inst, last.shape, _PASSED_ON[last])
    if (shared := _shared_operand(inst)) is not None:
        kernels[-1] = _emit(inst, device, shared)
    with host_streamed_rows(*moved):  # a row-mapped last part as its rows' parts
        return _merge_row_parts([*zip(fusions[:-1], kernels), (inst, kernels[-1])], device)


def _take_passed_on(inst: HloInstruction, shape: Shape,
                    passed: dict[int, HloInstruction]) -> None:
    """Fusion `inst` (a tuple, read through get-tuple-elements alone)
    returns the results of `shape` now, its results `passed` (index: the
    earlier part that makes each) no more: their readers read those parts;
    the other results' get-tuple-elements are renumbered, or, where one is
    left, it gives way to `inst` itself."""
    comp = inst.parent
    kept = [j for j in range(len(inst.shape.tuple_shapes)) if j not in passed]
    for g in list(inst.users):
        j = g.attr("index")
        if j in passed:
            source = passed[j]
        elif not shape.is_tuple:
            source = inst
        else:
            g.attributes = {"index": _index(kept.index(j))}
            continue
        replace_uses(comp, g, source)
        inst.users.remove(g)
        comp.instructions.remove(g)
    inst.shape = shape


# A row region's fusion (see _merge_row_regions) and its split, tried
# before it joined the module: its computation and operands then, and
# _emitted_split's result, which _split_reduction takes where they are
# the same still (a producer merged into it since makes it anew).
_TRIED_SPLITS: "weakref.WeakKeyDictionary[HloInstruction, tuple]" = weakref.WeakKeyDictionary()


def _emitted_split(inst: HloInstruction, device: DeviceDescription):
    """_emitted_parts of `inst`, its side values kept in blocks where they
    can be (_sides_stay_in_blocks), else narrow ones; emitted as its rows
    come (host_streamed_rows)."""
    with host_streamed_rows(_bytes_moved(inst), _narrowest_input_bits(inst)):
        got = _emitted_parts(inst, device, BLOCK_SIDE_BITS)
        if got is None or not _sides_stay_in_blocks(*got[1:], device):
            got = _emitted_parts(inst, device, NARROW_SIDE_BITS)
    return got


def _bytes_moved(inst: HloInstruction) -> int:
    """The bytes fusion `inst` reads and writes in all, its operands and
    its outputs: from enough (reduction._min_streamed_program_bytes) its
    row reductions' parts are emitted as where their rows come from memory
    (reduction.host_streamed_rows), a row a block where XLA's blocks have
    several. Through xla_gpu.jax.jit, A/B in one process (ms): softmax
    over f32[2048,2048] (16 MiB in, 16 out) 1.24 -> 0.89, over
    f32[4096,1536] 1.95 -> 1.57, over f32[16384,256] 1.00 -> 0.83; a layer
    norm over f32[2048,2048] 1.03 -> 0.61, over f32[8192,768] 1.73 -> 1.46
    (jax.jit 1.05, 6.8 -- its output's pages faulted --, 1.11, 1.12, 3.8)."""
    arrays = [a for i in [*inst.operands, inst] for a in i.shape.leaves() if a.is_array]
    return sum(a.num_elements * a.element_type.bits // 8 for a in arrays)


def _narrowest_input_bits(inst: HloInstruction) -> int:
    """The bits of the narrowest element type of `inst`'s array operands
    (0 where it has none)."""
    return min((a.element_type.bits for o in inst.operands for a in o.shape.leaves()
                if a.is_array), default=0)


def _reads_by_row(part: HloInstruction, k: int) -> bool:
    """Whether reduction fusion `part` reads its operand `k` (a row value
    of an earlier part: a row's max) only at the rows it reduces: through
    broadcasts along its reduce's reduced dimensions, and elementwise ops
    of the operand's shape (its epilogue's: the log of a row's sum) and
    of the rows' (what reads the broadcast, up to the reduce or the
    outputs: a reverse of the rows there reads another block's rows --
    jnp.flip of a broadcast row sum over f32[3,32,100] read rows the
    kernel had not reduced yet, stop 74)."""
    comp = part.fused_computation
    reduces = [i for i in comp.instructions if i.opcode == "reduce"]
    if len(reduces) != 1:
        return False
    rows = reduces[0].operands[0].shape
    kept = [d for d in range(rows.rank) if d not in reduces[0].dimensions]
    param = comp.parameters[k]
    todo, seen = [param], set()
    while todo:
        value = todo.pop()
        if id(value) in seen:
            continue
        seen.add(id(value))
        # A value of the rows' shape (a broadcast row value, or a side
        # value an earlier part wrote) is read where its thread wrote it,
        # as the reduce and the outputs read it.
        of_rows = value.shape.dims == rows.dims and value.opcode != "parameter" or (
            value is param and param.shape.dims == rows.dims)
        for user in value.users:
            if of_rows and (user is reduces[0] or (user is comp.root and user.opcode == "tuple")):
                continue
            if (user is comp.root and user.opcode == "tuple" and
                    value.shape.dims == param.shape.dims):
                continue  # an output a row (a log-sum-exp), written at its row
            if (value.shape.dims == param.shape.dims and user.opcode == "broadcast" and
                    user.shape.dims == rows.dims and list(user.dimensions) == kept):
                todo.append(user)
                continue
            if user.opcode not in ELEMENTWISE or user.shape.dims != value.shape.dims:
                return False
            todo.append(user)
    return True


def _merge_row_parts(parts: list[tuple[HloInstruction, object]],
                     device: DeviceDescription) -> list[tuple[HloInstruction, object]]:
    """Consecutive parts of a split reduction that reduce the same rows
    with the same thread map (merged_kernel.same_row_blocks), each reading
    the earlier ones' results only at its own rows (_reads_by_row), as one
    kernel: one custom call of a tuple of their results, each part its
    get-tuple-element (a tuple part's elements, its reduce and the side
    value it writes, each theirs). A block then reads its rows again from
    its core's caches: softmax(x).max(-1) over f32[4096,1000], a row max,
    an exp + sum and a max of the probabilities, 0.87x the time of the
    three kernels (A/B in one process, bits the same). The last part, a
    loop fusion, joins them row-mapped where it can (_row_mapped)."""
    out: list[tuple[HloInstruction, object]] = []
    group: list[tuple[HloInstruction, object]] = []
    merged = None
    inputs: list[HloInstruction] = []  # the merged kernel's parameters
    outputs: dict[int, int] = {}  # a value the group makes: its result in merged

    def flush():
        if len(group) > 1:
            local = _keep_sides_in_blocks(group, merged, outputs)
            tuple_of = _as_tuple_of([p for p, _ in group], inputs)
            leaves = list(tuple_of.shape.tuple_shapes)
            for k in local:
                leaves[k] = merged.results[k]
            tuple_of.shape = Shape(tuple_shapes=tuple(leaves))
            for g in tuple_of.users:  # a block-local result's, read by none
                if g.attr("index") in local:
                    g.shape = leaves[g.attr("index")]
            out.append((tuple_of, merged))
        else:
            out.extend(group)

    def rows_part(part) -> bool:
        return part.opcode == "fusion" and analyze_fusion(part).kind == EmitterKind.REDUCTION

    def made(part, first: int) -> dict[int, int]:
        if part in _ROW_MAPPED_FROM:
            return {id(_ROW_MAPPED_FROM[part]): first}
        if not part.shape.is_tuple:
            return {id(part): first}
        return {id(g): first + g.attr("index") for g in part.users
                if g.opcode == "get-tuple-element"}

    def joins(part, kernel) -> bool:
        return (rows_part(part) and same_row_blocks(group[0][1], kernel) and
                all(_reads_by_row(part, j) for j, o in enumerate(part.operands)
                    if id(o) in outputs))

    for part, kernel in parts:
        joined = bool(group) and joins(part, kernel)
        if group and not joined and part is parts[-1][0]:
            # The last part, elementwise over the rows (a layer norm's
            # normalized x), row-mapped if that joins.
            mapped = _row_mapped(part, group[0][0], device)
            joined = mapped is not None and joins(*mapped)
            if joined:
                part, kernel = mapped
        if joined:
            feeds = {j: outputs[id(o)] for j, o in enumerate(part.operands) if id(o) in outputs}
            known = {id(o): k for k, o in enumerate(inputs)}
            shared = {j: known[id(o)] for j, o in enumerate(part.operands)
                      if id(o) in known and j not in feeds}
            outputs.update(made(part, len(merged.results)))
            merged = merge_kernels(merged, kernel, feeds, shared)
            inputs += [o for j, o in enumerate(part.operands) if j not in feeds and j not in shared]
            group.append((part, kernel))
            continue
        flush()
        group, merged, inputs = [(part, kernel)], kernel, list(part.operands)
        outputs = made(part, 0)
        if not rows_part(part):
            out.append(group.pop())
    flush()
    return out


# A row-mapped part (see _row_mapped) and the part it stands for.
_ROW_MAPPED_FROM: "weakref.WeakKeyDictionary[HloInstruction, HloInstruction]" = \
    weakref.WeakKeyDictionary()


# The longest rows (elements reduced) whose row-mapped part writes 16-bit
# elements (where it reads a wide side value: a bf16 softmax's f32 exp,
# kept in the blocks). Through xla_gpu.jax.jit, A/B in one process (one
# kernel / the exp computed again by a loop kernel apart), bits the same:
# bf16 softmax over rows of 128 0.78x, 197 0.79x (a ViT's attention
# scores, [4,12,197,197], 0.80x), 256 0.61x, 300 0.64x, 512 0.79x, 768
# 0.81x, 1000 and 1024 1.04-1.05x; longer rows slower (1536 1.03x, 2000
# 1.18x, 2048 1.14x, 4096 1.20x).
MAX_16_BIT_ROW_MAPPED_ROW = 1024
# The longest rows (elements reduced) whose row-mapped part may not
# compute a costly op an element (see _row_mapped).
MAX_COSTLY_ROW = 64
# The rows (elements reduced) whose row-mapped part joins their parts
# where those read a row a block as from memory (host_streamed_rows):
# rows a block's one warp reduces, each lane more than 8 elements. Through
# xla_gpu.jax.jit, A/B in one process, a layer norm, softmax, log_softmax
# and x - mean (ms, the last part a kernel apart -> row-mapped): over
# f32[4096,1000] 0.73, 0.99, 0.99, 0.55 -> 0.74, 0.98, 0.85, 0.50, over
# f32[8192,768] 1.53, 1.71, 1.63, 1.06 -> 0.99, 1.42, 1.29, 0.77, over
# f32[12288,512] 1.57, 1.90, 1.90, 1.14 -> 1.09, 1.52, 1.43, 0.83, over
# f32[11000,384] 0.75, 1.09, 1.33, 0.54 -> 0.70, 1.02, 0.94, 0.41. Not
# over rows of 256 (0.59, 0.84, 0.83, 0.55 -> 0.57, 0.93, 1.05, 0.65), nor
# over longer rows, a block's several warps (f32[3000,1500] 0.77, 1.09,
# 1.08, 0.62 -> 1.12, 1.20, 1.27, 0.84; f32[1536,4096] 0.84, 1.19, 1.43,
# 1.00 -> 1.19, 1.36, 1.63, 1.05). Until stop 84 the part was row-mapped
# as XLA's rows, which joined streamed rows only where XLA's launch is a
# row a block already (rows of more than 2048). Since stop 88 any streamed
# rows where a 64-bit part reads the f64 exp its blocks kept (softmax over
# f64[512,4096] 0.86-0.88x, [256,8192] 0.82-0.84x, [128,16384] 0.83x;
# f32 parts reading the f32 exp ran 1.15-1.33x, not taken).
STREAMED_ROW_MAPPED_ROWS = range(257, 1025)


def _row_mappable(part: HloInstruction, rows_part: HloInstruction) -> HloInstruction | None:
    """The reduce of `rows_part` where _row_mapped would map `part` over its
    rows (but for an error of the emitters'); else None."""
    reduces = [i for i in rows_part.fused_computation.instructions if i.opcode == "reduce"]
    if (part.opcode != "fusion" or part.shape.is_tuple or len(reduces) != 1 or
            analyze_fusion(part).kind != EmitterKind.LOOP):
        return None
    (reduce,) = reduces
    rows = reduce.operands[0].shape
    ty = part.shape.element_type
    row = math.prod(rows.dims[d] for d in reduce.dimensions)
    wide_side = _reads_a_wide_side(part)
    bits = (32,)
    if wide_side:
        bits = (16, 32, 64) if row <= MAX_16_BIT_ROW_MAPPED_ROW else (32, 64)
    if (part.shape.dims != rows.dims or not part.shape.has_default_layout or
            not rows.has_default_layout or ty.bits not in bits or
            not (ty.is_float or ty.is_integer)):
        return None
    if streams_program_rows(row) and row not in STREAMED_ROW_MAPPED_ROWS and not (
            ty.bits == 64 and wide_side):
        return None
    if row <= MAX_COSTLY_ROW and any(i.opcode in COSTLY_OPS and i.shape.dims == rows.dims
                                     for i in part.fused_computation.instructions):
        return None
    return reduce


def _reads_a_wide_side(part: HloInstruction) -> bool:
    """Whether `part` reads a side value wider than NARROW_SIDE_BITS that an
    earlier part of its split writes (an element past the first of a
    part's tuple, of `part`'s shape)."""
    return any(o.opcode == "get-tuple-element" and o.attr("index") > 0 and
               o.shape.dims == part.shape.dims and o.shape.element_type.bits > NARROW_SIDE_BITS
               for o in part.operands)


def _row_mapped(part: HloInstruction, rows_part: HloInstruction,
                device: DeviceDescription) -> tuple[HloInstruction, object] | None:
    """`part`, a loop fusion of one output of the shape of the rows that
    reduction fusion `rows_part` reduces (row-major both), as a reduction
    fusion over those rows, and its kernel: the output, and a reduce of it
    that nothing reads -- so that the reduction emitter's thread map, the
    rows' parts', writes it, and the part merges with them (a layer norm's
    last part then reads x again from the caches of the core that reduced
    it: f32[4096,1000] 0.86-0.88x the time apart). The reduce's reducer
    keeps its accumulator (max(a, a): each row's result is the init, 0),
    so that no code is left of it, and its result is written nowhere
    (_drop_kept_inserts): with a row max, each lane kept one in
    memory, loaded and stored every step (a layer norm over f32[1024,1024]
    through xla_gpu.jax.jit 0.90x the time without, the cross-entropy over
    f32[2048,320] 0.92x; A/B in one process). None where
    `part` is no such fusion, where it writes other than 32-bit elements
    (bf16 results ran 1.13-1.44x the time row-mapped: the emitter's lanes
    hold 2 or 4 elements each, apart), and where it computes a costly op
    an element over rows of up to 64 elements (MAX_COSTLY_ROW: a warp's
    lanes 2 elements each, one step a row; a softmax's exp over
    f32[65536,64] ran 2.1x the time). Over longer rows the costly op
    costs the same either way and the rows are read again from the
    core's caches: softmax over f32[1024,4096] 0.75x the time, the
    cross-entropy's gradient over f32[4096,1000] 0.79-0.82x, rows of 72
    to 4096 0.77-1.03x (A/B in one process, bits the same). 64-bit
    results too where the part reads a wide side value (_reads_a_wide_side:
    an f64 softmax's exp, kept in the blocks then), and 16-bit ones over
    rows of up to MAX_16_BIT_ROW_MAPPED_ROW (a bf16 softmax's)."""
    reduce = _row_mappable(part, rows_part)
    if reduce is None:
        return None
    rows = reduce.operands[0].shape
    ty = part.shape.element_type
    comp = part.fused_computation
    kept_shape = Shape(ty, tuple(n for d, n in enumerate(rows.dims) if d not in reduce.dimensions))
    kept = kept_shape.to_text(layout=False)
    out = part.shape.to_text(layout=False)
    name = f"{part.name}.rows"
    lines = [i.to_text().removeprefix("ROOT ") for i in comp.instructions]
    lines += [f"%{name}.init = {ty.name}[] constant(0)",
              f"%{name}.kept = {kept} reduce(%{comp.root.name}, "
              f"%{name}.init), dimensions={{{','.join(map(str, reduce.dimensions))}}}, "
              f"to_apply=%{name}.keep",
              f"ROOT %{name}.both = ({out}, {kept}) "
              f"tuple(%{comp.root.name}, %{name}.kept)"]
    callees = "\n\n".join(c.to_text() for c in comp.callees())
    params = "".join(f"  %p{i} = {o.shape.to_text(layout=False)} parameter({i})\n"
                     for i, o in enumerate(part.operands))
    text = (f"HloModule rows\n\n{callees}\n\n"
            f"%{name}.keep {{\n  %a = {ty.name}[] parameter(0)\n"
            f"  %b = {ty.name}[] parameter(1)\n  ROOT %m = {ty.name}[] maximum(%a, %a)\n}}\n\n"
            f"%{name}.computation {{\n  " + "\n  ".join(lines) + "\n}\n\n"
            f"ENTRY %main {{\n{params}  ROOT %{name} = ({out}, {kept}) "
            f"fusion({', '.join(f'%p{i}' for i in range(len(part.operands)))}), kind=kInput, "
            f"calls=%{name}.computation\n}}\n")
    try:
        mapped = parse_hlo(text, source=f"<{name}>").entry.root
        mapped.operands = list(part.operands)
        kernel = _emit(mapped, device)
        _drop_kept_inserts(kernel, kept_shape.dims)
    except (EmitterError, HloParseError):
        return None
    _ROW_MAPPED_FROM[mapped] = part
    return mapped, kernel


def _drop_kept_inserts(kernel: EmittedKernel, kept: tuple[int, ...]) -> None:
    """Drops the predicated inserts of row-mapped `kernel`'s last result (of
    dimensions `kept`), the kept reduce that nothing reads (its values are
    then whatever the buffer held): lane 0 of each row wrote it, and the
    CPU target ran that lane apart from the others, whose loop LLVM
    vectorized 4 wide with 7 lanes scalar (a bf16 softmax's last phase
    over rows of 256: its one kernel 1.15x the time of two; without the
    inserts 0.61x). A/B in one process, f32: a softmax and a layer norm
    over [8192,256] 0.89x and 0.67x, the rest of 11 programs 0.95-1.02x
    (noise), bits the same."""
    inserts = []

    def visit(op):
        if op.name == "xla_gpu.predicated_insert":
            inserts.append(op)
        return ir.WalkResult.ADVANCE

    with kernel.module.context:
        kernel.module.operation.walk(visit)
        for op in inserts:
            uses = list(op.result.uses)
            if len(uses) != 1 or uses[0].owner.name != "func.return":
                continue
            ret = uses[0].owner
            if uses[0].operand_number != len(ret.operands) - 1 or \
                    tuple(ir.RankedTensorType(op.result.type).shape) != tuple(kept):
                continue
            op.result.replace_all_uses_with(op.operands[2])
            op.erase()


def _as_tuple_of(parts: list[HloInstruction],
                 inputs: list[HloInstruction]) -> HloInstruction:
    """A new instruction of the parts' computation, before them, on `inputs`, whose
    result is the tuple of their results (a tuple part's elements in
    line); each part becomes its get-tuple-element (keeping its name,
    shape and users), and a tuple part's get-tuple-elements read it
    instead (the part leaves the computation). A row-mapped part's results are
    its output, which the part it stands for becomes, and a value per row
    that nothing reads."""
    first = parts[0]
    comp = first.parent
    leaves = [leaf for p in parts for leaf in (p.shape.tuple_shapes if p.shape.is_tuple
                                               else (p.shape,))]
    tuple_of = HloInstruction(
        name=f"{first.name}.merged", opcode="fusion", shape=Shape(tuple_shapes=tuple(leaves)),
        operands=list(inputs), attributes=dict(first.attributes), parent=comp, users=[],
        called_computations=list(first.called_computations))
    comp.instructions.insert(comp.instructions.index(first), tuple_of)
    merged = [_ROW_MAPPED_FROM.get(p, p) for p in parts]
    for o in inputs:
        o.users = [u for u in o.users if not any(u is p for p in merged)] + [tuple_of]
    offset = 0
    for part in parts:
        if part.shape.is_tuple and part not in _ROW_MAPPED_FROM:
            gets = [g for g in part.users if g.opcode == "get-tuple-element"]
            for g in gets:
                g.operands = [tuple_of]
                g.attributes = {"index": _index(offset + g.attr("index"))}
            tuple_of.users += gets
            comp.instructions.remove(part)
            offset += len(part.shape.tuple_shapes)
            continue
        results = len(part.shape.tuple_shapes) if part.shape.is_tuple else 1
        part = _ROW_MAPPED_FROM.get(part, part)
        part.users = [u for u in part.users if not any(u is p for p in merged)]
        part.opcode = "get-tuple-element"
        part.operands = [tuple_of]
        part.attributes = {"index": _index(offset)}
        part.called_computations = []
        tuple_of.users.append(part)
        offset += results
    return tuple_of


def _index(k: int) -> Attribute:
    return Attribute("index", str(k), k)


def _through_bitcasts(inst: HloInstruction) -> HloInstruction:
    while inst.opcode in ("bitcast", "reshape"):
        inst = inst.operands[0]
    return inst


def _row_index_column(indices: HloInstruction, rows: int) -> HloInstruction | None:
    """Where fusion `indices` makes [rows, 2] scatter indices whose first
    column is the row's own index (XLA's gradient of take_along_axis:
    concatenate(iota over the rows, the column) along the minor
    dimension), the instruction of its computation holding the second
    column (an element a row); else None."""
    if (indices.opcode != "fusion" or indices.shape.dims != (rows, 2) or
            not kernel_row_major(indices)):
        return None
    concat = _through_bitcasts(indices.fused_computation.root)
    if (concat.opcode != "concatenate" or len(concat.operands) != 2 or
            list(concat.attr("dimensions", [])) != [concat.shape.rank - 1]):
        return None
    iota, column = concat.operands
    iota = _through_bitcasts(iota)
    if (iota.opcode != "iota" or iota.attr("iota_dimension") != 0 or
            iota.shape.dims[0] != rows or math.prod(iota.shape.dims) != rows or
            math.prod(column.shape.dims) != rows):
        return None
    return column


def _one_hot_scatters(module: HloModule) -> list[tuple[HloInstruction, HloInstruction]]:
    """XLA's gradient of a take_along_axis (a cross-entropy's by the
    logits): a broadcast constant c of [R, C] (XLA:CPU writes it: 16 MiB
    over f32[4096,1000]) and a scatter-add of an update u[r] a row at
    (r, column[r]) into it. Rewritten in place as the loop fusion
    select(iota over C == column[r], c + u[r], c) -- the same values (an
    index out of [0, C) matches no column, as the scatter skips it; each
    element gets at most one update, its row's) -- which merges into the
    fusion reading it (_merge_into_consumer), so that nothing of [R, C] is
    written or read for it. Returns (fusion gone, the fusion it went
    into) for the broadcast and the indices' fusions nothing else reads."""
    entry = module.entry
    gone = []
    for scatter_fusion in [i for i in entry.instructions if i.opcode == "fusion"]:
        comp = scatter_fusion.fused_computation
        scatter = comp.root
        if (scatter.opcode != "scatter" or len(comp.instructions) != 4 or
                any(o.opcode != "parameter" for o in scatter.operands)):
            continue
        operand, indices, updates = (scatter_fusion.operands[o.parameter_number]
                                     for o in scatter.operands)
        if (operand.shape.rank != 2 or not operand.shape.is_array or
                not kernel_row_major(scatter_fusion)):
            continue
        rows, cols = operand.shape.dims
        if (updates.shape.dims != (rows, 1, 1) or scatter.attr("index_vector_dim") != 1 or
                list(scatter.attr("update_window_dims", [])) != [1, 2] or
                list(scatter.attr("inserted_window_dims", [])) or
                list(scatter.attr("scatter_dims_to_operand_dims", [])) != [0, 1] or
                list(scatter.attr("input_batching_dims", [])) or
                updates.shape.element_type != operand.shape.element_type):
            continue
        combiner = scatter.called_computations[0]
        if (combiner.root.opcode != "add" or
                {o.opcode for o in combiner.root.operands} != {"parameter"}):
            continue
        broadcast = operand.fused_computation.root if operand.opcode == "fusion" else None
        if (broadcast is None or broadcast.opcode != "broadcast" or
                broadcast.operands[0].opcode != "parameter" or broadcast.operands[0].shape.dims):
            continue
        constant = operand.operands[broadcast.operands[0].parameter_number]
        column = _row_index_column(indices, rows)
        if column is None:
            continue
        ic = indices.fused_computation
        reads = _before([column])
        needed = [i for i in ic.topological_order() if id(i) in reads]
        ty = operand.shape.element_type.name
        ity = column.shape.element_type.name
        params = sorted(ic.parameters, key=lambda q: q.parameter_number)
        lines = [f"%onehot.c = {constant.shape.to_text(layout=False)} parameter(0)",
                 f"%onehot.u = {updates.shape.to_text(layout=False)} parameter(1)"]
        lines += [f"%{q.name} = {q.shape.to_text(layout=False)} parameter({2 + q.parameter_number})"
                  for q in params]
        lines += [i.to_text().removeprefix("ROOT ") for i in needed if i.opcode != "parameter"]
        shape = f"{ty}[{rows},{cols}]"
        lines += [f"%onehot.y = {ity}[{rows}] reshape(%{column.name})",
                  f"%onehot.yb = {ity}[{rows},{cols}] broadcast(%onehot.y), dimensions={{0}}",
                  f"%onehot.col = {ity}[{rows},{cols}] iota(), iota_dimension=1",
                  f"%onehot.hit = pred[{rows},{cols}] compare(%onehot.col, %onehot.yb), "
                  "direction=EQ",
                  f"%onehot.cb = {shape} broadcast(%onehot.c), dimensions={{}}",
                  f"%onehot.ur = {ty}[{rows}] reshape(%onehot.u)",
                  f"%onehot.ub = {shape} broadcast(%onehot.ur), dimensions={{0}}",
                  f"%onehot.sum = {shape} add(%onehot.cb, %onehot.ub)",
                  f"ROOT %onehot.out = {shape} select(%onehot.hit, %onehot.sum, %onehot.cb)"]
        operands = [constant, updates, *(indices.operands[q.parameter_number] for q in params)]
        callees = "".join(c.to_text() + "\n\n" for c in ic.callees())
        text = (f"HloModule onehot\n\n{callees}%{scatter_fusion.name}.onehot {{\n  "
                + "\n  ".join(lines) + "\n}\n\nENTRY %e {\n"
                + "".join(f"  %a{k} = {o.shape.to_text(layout=False)} parameter({k})\n"
                          for k, o in enumerate(operands))
                + f"  ROOT %{scatter_fusion.name} = {shape} fusion("
                + ", ".join(f"%a{k}" for k in range(len(operands)))
                + f"), kind=kLoop, calls=%{scatter_fusion.name}.onehot\n}}\n")
        try:
            made = parse_hlo(text, source=f"<{scatter_fusion.name} as a one-hot>").entry.root
        except HloParseError:
            continue
        call_the_originals(made, ic.callees())
        old = list(scatter_fusion.operands)
        scatter_fusion.operands = operands
        scatter_fusion.called_computations = made.called_computations
        scatter_fusion.attributes = made.attributes
        for o in old:
            o.users = [u for u in o.users if u is not scatter_fusion]
        for o in operands:
            o.users.append(scatter_fusion)
        module.computations.insert(module.computations.index(entry), made.fused_computation)
        for dead in (operand, indices):  # nothing else reads them
            if not dead.users and dead in entry.instructions:
                entry.instructions.remove(dead)
                for o in dead.operands:
                    o.users = [u for u in o.users if u is not dead]
                gone.append((dead, scatter_fusion))
    return gone


def _merge_into_consumer(module: HloModule, inst: HloInstruction) -> HloInstruction | None:
    """Where fusion `inst` computes elementwise what one fusion alone reads,
    each element once (XLA:CPU's `wrapped_convert` of a bf16 input to f32
    for YNNPACK's reduction), merges it into that consumer
    (fusion_merger.merge_producer: the consumer changes in place, `inst`
    leaves the entry) and returns the consumer; else None. A bf16 RMS norm
    then writes and reads no f32 copy of its input (4 MiB over
    bf16[1024,1024]). Where the entry's result holds `inst` too (an
    optimizer's new moments, which its parameter update reads), a loop
    consumer of its dimensions computes it as a result of its own
    (_merge_in_place's `keep`): Adam's update of a [1024,1024] weight
    read its two moments back from memory."""
    if not is_elementwise_producer(inst) or not kernel_row_major(inst):
        return None
    readers = {id(u): u for u in inst.users}
    fusions = [u for u in readers.values() if u.opcode == "fusion"]
    others = [u for u in readers.values() if u.opcode != "fusion"]
    if len(fusions) != 1 or any(u is not module.entry.root for u in others):
        return None
    consumer = fusions[0]
    if (consumer.parent is not module.entry or not kernel_row_major(consumer)):
        return None
    ops = {i.opcode for i in consumer.fused_computation.instructions}
    k = next(i for i, o in enumerate(consumer.operands) if o is inst)
    keep = bool(others)
    if _LIBRARY_OPS & ops or not (reads_each_element_once(consumer, k) or (
            not keep and computes_cheaply(inst) and reads_at_own_indices(consumer, k))):
        return None
    if keep and ("reduce" in ops or any(
            leaf.dims != inst.shape.dims for leaf in consumer.shape.leaves())):
        return None  # a loop fusion's results are of one shape
    return _merge_in_place(module, consumer, k, keep)


def _merge_in_place(module: HloModule, consumer: HloInstruction, k: int,
                    keep: bool = False) -> HloInstruction:
    """Merges fusion `consumer`'s operand k, a fusion of its computation
    (the entry, or a loop's body), into it (fusion_merger.merge_producer):
    `consumer` changes in place, the producer leaves the computation, the
    merged computation joins the module;
    returns `consumer`. With `keep` the producer's result stays, the
    merged fusion's last result: a consumer of one result becomes a new
    fusion of the tuple (its name; the consumer its get-tuple-element),
    and the producer a get-tuple-element of the one returned."""
    producer = consumer.operands[k]
    comp = consumer.parent
    if keep and not consumer.shape.is_tuple:
        name = consumer.name
        element = _result_name(name, {i.name for c in module.computations for i in c.instructions})
        consumer = _as_tuple_of([consumer], list(consumer.operands))
        consumer.name, consumer.users[0].name = name, element
    merged = merge_producer(consumer, k, keep)
    sources = list(producer.operands)
    consumer.operands = merged.operands
    consumer.called_computations = merged.called_computations
    consumer.attributes = merged.attributes
    for o in sources:
        o.users = [u for u in o.users if u is not producer and u is not consumer] + [consumer]
    comp.instructions.remove(producer)
    if keep:
        producer.opcode = "get-tuple-element"
        producer.operands = [consumer]
        producer.attributes = {"index": _index(len(consumer.shape.tuple_shapes))}
        producer.called_computations = []
        producer.users = [u for u in producer.users if u is not consumer]
        consumer.shape = merged.shape
        consumer.users.append(producer)
        comp.instructions.insert(comp.instructions.index(consumer) + 1, producer)
    # (Before the computation that calls it: XLA's parser takes no use of
    # a computation before its definition.)
    module.computations.insert(module.computations.index(comp), merged.fused_computation)
    return consumer


# What a loop fusion that joins its siblings (_merge_siblings) may hold
# besides elementwise ops: values made from its operands' elements at the
# result's indices, or broadcast to them.
_SIBLING_OPS = ELEMENTWISE | {"parameter", "constant", "broadcast", "slice", "bitcast", "reshape",
                              "iota", "tuple"}
# Of those, the ops that move elements: on smaller values only (the loop
# emitter's walks of a fusion whose results are a slice, a bitcast or a
# reshape are its own).
_MOVING_OPS = {"slice", "bitcast", "reshape"}
# The most instructions of a fusion _merge_siblings makes.
MAX_SIBLING_INSTRUCTIONS = 512


def _sibling_dims(inst: HloInstruction) -> tuple[int, ...] | None:
    """The dimensions of loop fusion `inst`'s results, where it may join
    siblings of those dimensions (_merge_siblings): results all of one
    shape (of a tuple, each read through get-tuple-elements alone),
    computed by _SIBLING_OPS (_MOVING_OPS on smaller values), row-major,
    without a large constant (MAX_FUSED_CONSTANT_ELEMENTS) or a control
    dependency; else None."""
    if (inst.opcode != "fusion" or inst.fusion_kind != "kLoop" or inst.control_predecessors
            or not kernel_row_major(inst) or (inst.shape.is_tuple and any(
                u.opcode != "get-tuple-element" for u in inst.users))):
        return None
    dims = {tuple(leaf.dims) for leaf in inst.shape.leaves()}
    if len(dims) != 1:
        return None
    (dims,) = dims
    for i in inst.fused_computation.instructions:
        if i.opcode not in _SIBLING_OPS or (
                i.opcode == "constant" and i.shape.is_array and
                i.shape.num_elements > MAX_FUSED_CONSTANT_ELEMENTS):
            return None
        if i.opcode in _MOVING_OPS and i.shape.is_array and tuple(i.shape.dims) == dims:
            return None  # (values of the results' shape read at their own indices alone)
    return dims


def _reads(inst: HloInstruction, other: HloInstruction) -> bool:
    """Whether `inst` reads `other`'s result, directly or through others
    (of their one computation)."""
    seen, todo = set(), list(inst.operands) + list(inst.control_predecessors)
    while todo:
        o = todo.pop()
        if o is other:
            return True
        if id(o) not in seen:
            seen.add(id(o))
            todo += list(o.operands) + list(o.control_predecessors)
    return False


def _merge_siblings(module: HloModule, device: DeviceDescription
                    ) -> list[tuple[HloInstruction, HloInstruction]]:
    """Loop fusions of one computation that read one operand of their
    results' size, neither reading the other's result, merged into one
    multi-output fusion (fusion_merger.merge_siblings), in place, as
    XLA:GPU's multi-output fusion merges siblings; XLA:CPU keeps them
    apart. The operand they share is read once: each of the while loop
    iterations of jax's threefry (jax.random) reads the two halves of its
    counters in two fusions, one for each half of the next, 24 MiB read a
    step over [2048,1024] where 16 do. The merged fusion stands where the
    later of the two stood (every reader of the earlier one after it);
    the two become its get-tuple-elements; it keeps the first's name. A
    merge whose kernel our loop emitter refuses is not made. Returns
    (gone, the fusion it went into) for each merge, in order."""
    merges = []
    for comp in (module.entry, *_control_flow_computations(module)):
        changed = True
        while changed:
            changed = False
            order = {id(i): k for k, i in enumerate(comp.instructions)}
            for shared in comp.instructions:
                if not shared.shape.is_array:
                    continue
                readers = sorted({id(u): u for u in shared.users
                                  if _sibling_dims(u) is not None}.values(),
                                 key=lambda u: order[id(u)])
                pair = next(((a, b) for k, a in enumerate(readers) for b in readers[k + 1:]
                             if _siblings(a, b, shared, comp, order)), None)
                if pair is None:
                    continue
                merged = _merged_siblings(*pair, device)
                if merged is not None:
                    merges.append((pair[1], merged))
                    changed = True
                    break
    return merges


def _siblings(a: HloInstruction, b: HloInstruction, shared: HloInstruction, comp,
              order: dict[int, int]) -> bool:
    """Whether fusions `a` and `b` (in that order in `comp`), both reading
    `shared`, may be one (_merge_siblings)."""
    dims = _sibling_dims(a)
    if dims != _sibling_dims(b) or shared.shape.num_elements < math.prod(dims):
        return False
    if (len(a.fused_computation.instructions) + len(b.fused_computation.instructions) >
            MAX_SIBLING_INSTRUCTIONS or a.is_root or b.is_root):
        return False
    if any(a in i.control_predecessors or b in i.control_predecessors
           for i in comp.instructions):
        return False
    between = range(order[id(a)] + 1, order[id(b)])
    return not _reads(b, a) and all(order[id(u)] not in between for u in a.users)


def _merged_siblings(a: HloInstruction, b: HloInstruction,
                     device: DeviceDescription) -> HloInstruction | None:
    """_merge_siblings's merge of `a` and `b`: the new fusion, in their
    computation where `b` was, or None where it would not be ours (our
    emitters refuse it, or it stays XLA's in a loop's body)."""
    merged = merge_siblings(a, b)
    comp = a.parent
    if not _would_be_ours(merged, comp, device):
        return None
    module = comp.module
    module.computations.insert(module.computations.index(module.entry),
                               merged.fused_computation)
    comp.instructions.insert(comp.instructions.index(b), merged)
    for o in merged.operands:
        o.users = [u for u in o.users if u is not a and u is not b] + [merged]
    offset = 0
    for part in (a, b):
        comp.instructions.remove(part)
        if part.shape.is_tuple:
            # (a fusion an earlier merge made: its get-tuple-elements read
            # the new one)
            for g in part.users:
                g.operands = [merged]
                g.attributes = {"index": _index(offset + g.attr("index"))}
            merged.users += part.users
            offset += len(part.shape.tuple_shapes)
            continue
        part.opcode, part.operands = "get-tuple-element", [merged]
        part.attributes, part.called_computations = {"index": _index(offset)}, []
        comp.instructions.insert(comp.instructions.index(merged) + 1, part)
        merged.users.append(part)
        offset += 1
    name = a.name
    if not a.shape.is_tuple:
        a.name = _result_name(name, {i.name for i in comp.instructions})
    merged.name = name
    return merged


def _would_be_ours(merged: HloInstruction, comp, device: DeviceDescription) -> bool:
    """Whether fusion `merged`, which a merge made for `comp` (in no
    computation yet; its parent `comp` from now on), would be ours there:
    not one that stays XLA's in a loop's body (_xlas_in_control_flow), and
    one our emitters take (its kernel kept for the fusion's turn: _emit's
    memo)."""
    merged.parent = comp
    if comp is not comp.module.entry and _xlas_in_control_flow(merged):
        return False
    try:
        _emit(merged, device)
    except EmitterError:
        return False
    return True


def _merge_moves(module: HloModule, device: DeviceDescription
                 ) -> list[tuple[HloInstruction, HloInstruction]]:
    """A bare concatenate of a computation (XLA:CPU fuses none: it copies
    each piece into place) whose one reader is a loop or reduction
    fusion, merged into it with the fusions that only move (and map)
    elements into it (its pieces: XLA:CPU's `wrapped_slice`s) and that it
    alone reads, where the reader reads each of its elements at most once
    (or the concatenate with its pieces computes nothing: only moves
    elements) and so do the concatenate and those pieces
    (fusion_merger.reads_each_element_at_most_once): one kernel, as
    XLA:GPU fuses them, instead of the pieces' kernels writing them,
    XLA's copies into the concatenate and the reader reading it. One that
    computes nothing merges into each of several readers too. A
    jnp.roll's stencil (u rolled by one each way along both axes,
    f64[1024,1024]) was four slice kernels, two copies and the stencil's
    kernel, 24 MiB written and read between them. A merge whose kernel our
    emitters refuse is not made. Returns (gone, the fusion it went into)
    for each fusion merged."""
    merges = []
    for comp in (module.entry, *_control_flow_computations(module)):
        for concat in [i for i in comp.instructions if i.opcode == "concatenate"]:
            merges += _merged_moves(comp, concat, device)
    return merges


# The most pieces of a concatenate along the minor dimension that
# _merge_moves merges (the lanes of a vector pick their pieces by
# comparisons, each element; along a major dimension a row's one piece),
# and the most where its reader reads it more than once. A/B in one
# process (merged / XLA's copy): sin(concatenate(...)) over f32[512,4096]
# 0.20-0.24x the time of 2 and 4 pieces, 0.57x of 8, 0.83x of 16, 2.2x of
# 32; c * 2 + c[:, ::-1] 0.07x of 2 pieces, 0.71x of 4, 1.5x of 8.
MAX_MINOR_PIECES, MAX_MINOR_PIECES_READ_AGAIN = 4, 2


def _merged_moves(comp, concat: HloInstruction, device: DeviceDescription
                  ) -> list[tuple[HloInstruction, HloInstruction]]:
    """_merge_moves's merge of bare concatenate `concat` of `comp`, in
    place: (gone, into) for each fusion merged; [] where none is."""
    readers = list({id(u): u for u in concat.users}.values())
    minor = concat.shape.is_array and concat.dimensions == [concat.shape.rank - 1]
    if (not readers or not concat.shape.is_array or concat.is_root or
            not concat.shape.has_default_layout or concat.control_predecessors or
            (minor and len(concat.operands) > MAX_MINOR_PIECES) or
            len({id(o) for o in concat.operands}) != len(concat.operands) or
            not all(o.shape.is_array and o.shape.has_default_layout for o in concat.operands)):
        return []
    if not all(r.opcode == "fusion" and r.fusion_kind in ("kLoop", "kInput") and
               kernel_row_major(r) and sum(o is concat for o in r.operands) == 1
               for r in readers):
        return []
    moved = wrapped(concat)
    pieces = []
    # The pieces that only move (and map) elements and that the
    # concatenate alone reads, merged in (each merge puts the piece's
    # operands last).
    while (j := next((j for j, o in enumerate(moved.operands)
                      if o.opcode == "fusion" and o.parent is comp and not o.is_root and
                      all(u is concat for u in o.users) and not o.control_predecessors and
                      moves_elements(o) and kernel_row_major(o) and
                      reads_each_element_at_most_once(moved, j)), None)) is not None:
        pieces.append(moved.operands[j])
        moved = merge_producer(moved, j)
    # A concatenate of its operands' elements alone, read twice or by
    # several readers, is read from them again instead (its copy saved);
    # one that computes, by one reader each element at most once.
    again = moves_elements(moved, maps=False) and not (
        minor and len(concat.operands) > MAX_MINOR_PIECES_READ_AGAIN)
    if len(readers) > 1 and not again:
        return []
    merges = []
    for reader in readers:
        k = next(j for j, o in enumerate(reader.operands) if o is concat)
        if not (again or reads_each_element_at_most_once(reader, k)):
            return []
        merged = merge_producer(replace(reader, operands=[
            moved if j == k else o for j, o in enumerate(reader.operands)]), k)
        if not _would_be_ours(merged, comp, device):
            return []
        merges.append((reader, merged))
    gone = {id(i) for i in (concat, *pieces)}
    module = comp.module
    for reader, merged in merges:
        for o in reader.operands:
            o.users = [u for u in o.users if u is not reader]
        reader.operands = merged.operands
        reader.called_computations = merged.called_computations
        reader.attributes = merged.attributes
        for o in merged.operands:
            o.users = [u for u in o.users if id(u) not in gone and u is not reader] + [reader]
        module.computations.insert(module.computations.index(module.entry),
                                   merged.fused_computation)
    comp.instructions = [i for i in comp.instructions if id(i) not in gone]
    return [(piece, readers[0]) for piece in pieces]


def _result_name(name: str, taken: set[str]) -> str:
    """The name of the get-tuple-element that fusion `name` becomes where a
    merged fusion takes its name: `name.result`, numbered past `taken`."""
    return next(n for n in (f"{name}.result{j or ''}" for j in range(len(taken) + 1))
                if n not in taken)


def _is_row_program(instructions: list[HloInstruction]) -> bool:
    """Whether `instructions` (a fused computation's, or two that would
    merge) reduce rows alone: one or more reduces, each of one input over
    its minor dimension, all of the same rows R; every value an array of
    R's dimensions, of R's rows (R less its minor dimension) or a scalar.
    Such a fusion's parts (tree_reduction.split_reduction) are one kernel
    (_merge_row_parts), which reads the rows once from memory."""
    reduces = [i for i in instructions if i.opcode == "reduce"]
    if not reduces:
        return False
    rows = reduces[0].operands[0].shape.dims
    if len(rows) < 2:
        return False
    if any(len(r.operands) != 2 or r.operands[0].shape.dims != rows or
           list(r.dimensions) != [len(rows) - 1] for r in reduces):
        return False
    allowed = {tuple(rows), tuple(rows[:-1]), ()}
    return all(i.shape.is_array and tuple(i.shape.dims) in allowed for i in instructions)


def _mergeable(inst: HloInstruction) -> bool:
    """Whether fusion `inst` may join a row program (_merge_row_programs,
    _merge_row_regions): no library op, no in-place root, row-major."""
    ops = {i.opcode for i in inst.fused_computation.instructions}
    return not (_LIBRARY_OPS & ops or _IN_PLACE_ROOTS & ops) and kernel_row_major(inst)


def _cheap_again(inst: HloInstruction) -> bool:
    """Whether fusion `inst` computes at most one costly op an element
    (a softmax's exp): merged, a producer's elements are computed again
    where each is read, and a chain of costly ops (a Gumbel-softmax's two
    logs and exp: over f32[1024,4096] 0.80x the time unmerged, A/B in one
    process) stays apart."""
    return sum(i.opcode in COSTLY_OPS and i.shape.dims == inst.shape.dims
               for i in inst.fused_computation.instructions) <= 1


def _merge_row_programs(module: HloModule) -> list[tuple[HloInstruction, HloInstruction]]:
    """Merges fusions that compute one row program between them into one
    fusion (fusion_merger.merge_producer), in place: a producer whose
    result one fusion alone reads, where the merged computation is a row
    program (_is_row_program). XLA:CPU cuts a softmax over rows of 4096
    into exp(x - max(x)), its sum, the sum's reciprocal and the product, a
    buffer of exps written once and read twice; merged, one kernel reads
    x and writes the result (the exps computed again, as in the one fusion
    XLA:CPU makes over rows of 1000). A producer computing more than one
    costly op an element stays apart. In the entry and, since stop 90, in
    the computations of its loops and branches (a scan over a model's
    layers). Returns (producer, the fusion it went into) for each merge,
    in order."""
    merges = []
    for comp in (module.entry, *_control_flow_computations(module)):
        merges += _merge_row_programs_of(module, comp)
    return merges


def _merge_row_programs_of(module: HloModule, comp) -> list[tuple[HloInstruction,
                                                                   HloInstruction]]:
    """_merge_row_programs in computation `comp`."""
    live_out = {id(comp.root)}
    if comp.root.opcode == "tuple":
        live_out |= {id(o) for o in comp.root.operands}

    merges = []
    changed = True
    while changed:
        changed = False
        for producer in reversed(comp.instructions):
            if (producer.opcode != "fusion" or id(producer) in live_out or
                    not producer.shape.is_array):
                continue
            users = {id(u): u for u in producer.users}
            if len(users) != 1:
                continue
            (consumer,) = users.values()
            if (consumer.opcode != "fusion" or consumer.parent is not comp or
                    (comp is not module.entry and _xlas_in_control_flow(producer) and
                     _xlas_in_control_flow(consumer)) or
                    sum(o is producer for o in consumer.operands) != 1 or
                    not _is_row_program(producer.fused_computation.instructions +
                                        consumer.fused_computation.instructions) or
                    not _mergeable(producer) or not _mergeable(consumer) or
                    not _cheap_again(producer)):
                continue
            _merge_in_place(module, consumer,
                            next(i for i, o in enumerate(consumer.operands) if o is producer))
            merges.append((producer, consumer))
            changed = True
            break
    return merges


# The most fusions of one row region (_merge_row_regions).
MAX_REGION_FUSIONS = 8
# What a row region's fusions may hold.
_REGION_OPS = ELEMENTWISE | {"parameter", "constant", "broadcast", "reduce", "tuple"}


def _row_region_member(inst: HloInstruction, rows: tuple[int, ...],
                       ordered: set[int] = frozenset()) -> bool:
    """Whether `inst` may join a row region over `rows`: a fusion of the
    computation, of one array result, _mergeable and _cheap_again, with
    no control dependency (`ordered`: the ids of the computation's control
    predecessors), whose values
    are of the rows' dimensions, a row's (the rows less the minor one) or
    scalars, made by elementwise ops, constants, broadcasts of a row's
    values along the rows or of scalars, and reduces of the rows over
    their minor dimension (of one input)."""
    if (inst.opcode != "fusion" or inst.parent is None or
            not inst.shape.is_array or inst.control_predecessors or id(inst) in ordered or
            not _mergeable(inst) or not _cheap_again(inst)):
        return False
    allowed = {rows, rows[:-1], ()}
    for i in inst.fused_computation.instructions:
        if (i.opcode not in _REGION_OPS or i.opcode == "tuple" or not i.shape.is_array or
                tuple(i.shape.dims) not in allowed):
            return False
        if i.opcode == "reduce" and (len(i.operands) != 2 or
                                     tuple(i.operands[0].shape.dims) != rows or
                                     list(i.dimensions) != [len(rows) - 1]):
            return False
        if i.opcode == "broadcast" and i.operands[0].shape.rank and (
                tuple(i.shape.dims) != rows or
                list(i.dimensions) != list(range(len(rows) - 1))):
            return False
    return True


def _rows_of(inst: HloInstruction) -> tuple[int, ...] | None:
    """The rows a fusion's first reduce reduces over their minor
    dimension (of two or more dimensions), if any."""
    for i in inst.fused_computation.instructions:
        if i.opcode == "reduce" and i.operands[0].shape.rank >= 2:
            return tuple(i.operands[0].shape.dims)
    return None


def _control_predecessors(comp) -> set[int]:
    """The ids of the instructions of `comp` that another must follow."""
    return {id(p) for i in comp.instructions for p in i.control_predecessors}


def _row_region(seed: HloInstruction, rows: tuple[int, ...],
                ordered: set[int] | None = None) -> list[HloInstruction]:
    """The fusions of `seed`'s computation connected to it (reading or
    read by one another) that may join a row region over `rows`
    (`ordered`: the computation's _control_predecessors), up to
    MAX_REGION_FUSIONS, in the computation's order; [] where they could
    not be one fusion: a value outside them that reads one of them and is
    read by another (the merged fusion would read its own result)."""
    entry = seed.parent
    if ordered is None:
        ordered = _control_predecessors(entry)
    region, todo = {id(seed): seed}, [seed]
    while todo and len(region) < MAX_REGION_FUSIONS:
        inst = todo.pop()
        for n in [*inst.operands, *inst.users]:
            if id(n) not in region and _row_region_member(n, rows, ordered):
                region[id(n)] = n
                todo.append(n)
                if len(region) == MAX_REGION_FUSIONS:
                    break
    members = list(region.values())
    below = _reached([u for m in members for u in m.users if id(u) not in region],
                     lambda inst: inst.users)
    above = _reached([o for m in members for o in m.operands if id(o) not in region],
                     lambda inst: inst.operands)
    if below & above:
        return []
    return [i for i in entry.instructions if id(i) in region]


def _reached(starts: list[HloInstruction], step) -> set[int]:
    """The ids of `starts` and of every instruction `step` (its users, or
    its operands) reaches from them."""
    seen, todo = set(), list(starts)
    while todo:
        inst = todo.pop()
        if id(inst) not in seen:
            seen.add(id(inst))
            todo += step(inst)
    return seen


# Ops a row region over rows of up to MAX_COSTLY_ROW elements may not
# compute a row (see _short_rows_cost_more).
_COSTLY_A_ROW = COSTLY_OPS - {"rsqrt", "sqrt", "divide"}


def _short_rows_cost_more(members: list[HloInstruction], rows: tuple[int, ...]) -> bool:
    """Whether the fusions of a row region over `rows` run slower as one
    kernel than apart: over rows of up to MAX_COSTLY_ROW elements, where
    they compute a log or an exp a row (_COSTLY_A_ROW: the merged kernel's
    epilogue computes it on one lane of a row's warp, where a loop kernel
    apart vectorizes it over the rows -- a softmax with its log-sum-exp
    over f32[16384,64] 1.09-1.19x the time as one kernel, through
    xla_gpu.jax.jit, A/B in one process; an RMS norm with its rstd,
    a square root a row, 0.73x), and over rows shorter than a warp where
    they compute a costly op an element (a softmax with its rows' sums
    over f32[65536,16]: 1.12-1.16x, three kernels of five)."""
    row = rows[-1]
    values = [i for m in members for i in m.fused_computation.instructions]
    return (row <= MAX_COSTLY_ROW and any(i.opcode in _COSTLY_A_ROW and
                                          tuple(i.shape.dims) == rows[:-1] for i in values)) or \
        (row < 32 and any(i.opcode in COSTLY_OPS and tuple(i.shape.dims) == rows
                          for i in values))


def _merge_row_regions(module: HloModule, device: DeviceDescription
                       ) -> list[tuple[HloInstruction, HloInstruction]]:
    """Fusions of the entry that compute one row program between them --
    reduces of the same rows over their minor dimension and what reads
    them a row or an element of the rows (_row_region) -- where
    _merge_row_programs left several (a value of them read by two of them,
    or by the program's result too: a softmax that also returns its rows'
    sums or log-sum-exp, an RMS norm with its rstd), as one fusion
    (fusion_merger.merge_region) whose results are the values read
    outside them: split (tree_reduction.split_reduction), its parts are one
    kernel (_merge_row_parts), the statistics written by the rows' parts
    (tree_reduction._output_epilogue_end, _row_outputs). Only where that
    split is ours (_emitted_split). Returns (a fusion, the fusion it went
    into) for each fusion merged, in place. In the entry and in the computations of its
    loops and branches."""
    merges = []
    for comp in (module.entry, *_control_flow_computations(module)):
        merges += _merge_row_regions_of(module, comp, device)
    return merges


def _merge_row_regions_of(module: HloModule, comp, device: DeviceDescription
                          ) -> list[tuple[HloInstruction, HloInstruction]]:
    """_merge_row_regions in computation `comp` (the entry, or a loop's
    body)."""
    merges = []
    seen: set[int] = set()
    ordered = _control_predecessors(comp)
    for seed in list(comp.instructions):
        if id(seed) in seen or seed.opcode != "fusion" or seed.parent is not comp:
            continue
        rows = _rows_of(seed)
        if rows is None or not _row_region_member(seed, rows, ordered):
            continue
        members = _row_region(seed, rows, ordered)
        seen |= {id(m) for m in members}
        if len(members) < 2 or _short_rows_cost_more(members, rows):
            continue
        inside = {id(m) for m in members}
        outputs = [m for m in members if m is comp.root or
                   any(id(u) not in inside for u in m.users)]
        if len(outputs) == 1 and outputs[0] is not members[-1]:
            continue  # (merge_region's one result is its last member's)
        taken = {i.name for c in module.computations for i in c.instructions}
        name = next(n for n in (f"{members[-1].name}.rows{j or ''}" for j in range(len(taken) + 1))
                    if n not in taken)
        merged = merge_region(members, outputs, name)
        if comp is not module.entry and _xlas_in_control_flow(merged):
            continue  # (XLA's as it is: a call costs more)
        got = _emitted_split(merged, device)
        if got is None:
            continue
        _TRIED_SPLITS[merged] = ((merged.fused_computation, tuple(map(id, merged.operands))), got)
        _replace_by_region(module, members, outputs, merged)
        merges += [(m, merged) for m in members]
    return merges


def _replace_by_region(module: HloModule, members: list[HloInstruction],
                       outputs: list[HloInstruction], merged: HloInstruction) -> None:
    """Fusion `merged` (merge_region's) in the members' computation in
    place of `members`: each output member becomes its get-tuple-element
    (keeping its name and the readers outside), or `merged` itself is the
    one output's; the computation's instructions in an order of their
    operands."""
    comp = members[0].parent
    inside = {id(m) for m in members}
    merged.parent = comp
    merged.users = []
    for o in merged.operands:
        o.users = [u for u in o.users if id(u) not in inside] + [merged]
    position = comp.instructions.index(members[-1])
    comp.instructions[position:position] = [merged]
    for k, out in enumerate(outputs):
        out.users = [u for u in out.users if id(u) not in inside]  # its readers outside
        if len(outputs) == 1:
            replace_uses(comp, out, merged)
            continue
        get = HloInstruction(name=out.name, opcode="get-tuple-element", shape=out.shape,
                             operands=[merged], attributes={"index": _index(k)}, parent=comp)
        replace_uses(comp, out, get)
        merged.users.append(get)
        comp.instructions.insert(comp.instructions.index(merged) + 1 + k, get)
    comp.instructions = [i for i in comp.instructions if id(i) not in inside]
    comp.instructions = comp.topological_order()
    module.computations.insert(module.computations.index(comp), merged.fused_computation)


def _replace_fusions(module: HloModule, device: DeviceDescription) -> list[FusionDecision]:
    """Step 2 on `module` (in place); the decision for every fusion of the
    entry and of its control-flow computations.
    One context for all of the module's kernels: a context a kernel cost
    ~1 ms each, twice (the emission, the custom call's attribute)."""
    with new_context(), host_short_rows():
        _emitted.kernels = {}
        try:
            return _replace_fusions_in_context(module, device)
        finally:
            _emitted.kernels = None


def _computed_by_ynnpack(inst: HloInstruction) -> bool:
    config = inst.attributes.get("backend_config")
    return inst.fusion_kind == "kCustom" and config is not None and \
        '"__ynn_fusion"' in config.text


def _as_xla_cpu_computes(module: HloModule) -> None:
    """The fusions XLA:CPU hands to YNNPACK, as it computes them: where
    XLA allows excess precision (its default), YNNPACK drops the f32 ->
    bf16 -> f32 round trips that XLA:CPU's bf16 normalization put in them
    (a bf16 softmax's exp, rounded to bf16 and read back as f32, is read
    unrounded), as XLA:GPU's simplify-fp-conversions does before its
    fusions form. XLA:CPU's own fusions keep them: it rounds each one. A
    fusion with a library op (a dot) stays XLA's, as it is."""
    if not excess_precision_allowed():
        return
    for comp in (module.entry, *_control_flow_computations(module)):
        for inst in comp.instructions:
            if inst.opcode == "fusion" and _computed_by_ynnpack(inst) and not _LIBRARY_OPS & {
                    i.opcode for i in inst.fused_computation.instructions}:
                simplify_fp_conversions(inst.fused_computation)


def _replace_fusions_in_context(module: HloModule,
                                device: DeviceDescription) -> list[FusionDecision]:
    _as_xla_cpu_computes(module)
    decisions = []
    emitted = []
    merged: list[tuple[int, HloInstruction]] = []  # a decision, the fusion it went into
    for producer, consumer in _merge_row_programs(module):
        merged.append((len(decisions), consumer))
        decisions.append(FusionDecision(producer.name, producer.fusion_kind or "?", True,
                                        f"merged into {consumer.name}"))
    for member, region in _merge_row_regions(module, device):
        merged.append((len(decisions), region))
        decisions.append(FusionDecision(member.name, member.fusion_kind or "?", True,
                                        f"merged into {region.name} (a row program)"))
    for gone, into in _one_hot_scatters(module):
        merged.append((len(decisions), into))
        decisions.append(FusionDecision(gone.name, gone.fusion_kind or "?", True,
                                        f"merged into {into.name} (as a one-hot)"))
    fusions = [inst for comp in (module.entry, *_control_flow_computations(module))
               for inst in list(comp.instructions) if inst.opcode == "fusion"]
    # The entry's producers merged into their consumers, the last first:
    # a producer read by two fusions, one of which merges into the other
    # (a floor remainder's divisor, read by XLA:CPU's `wrapped_remainder`
    # and by the select after it), is read by one then.
    kinds = {id(inst): inst.fusion_kind or "?" for inst in fusions}
    consumers = {id(inst): consumer for inst in reversed(fusions)
                 if inst.parent is module.entry and
                 (consumer := _merge_into_consumer(module, inst)) is not None}
    # A consumer that took a producer's result as its own (then or later)
    # is a new fusion (of its name), the one it was its get-tuple-element.
    consumers = {k: c.operands[0] if c.opcode == "get-tuple-element" else c
                 for k, c in consumers.items()}
    # Then siblings (after: an optimizer's moments, siblings reading its
    # gradient, merge into the update that reads them).
    for gone, into in _merge_siblings(module, device):
        merged.append((len(decisions), into))
        decisions.append(FusionDecision(gone.name, "kLoop", True,
                                        f"merged into {into.name} (siblings)"))
    # Then bare concatenates into their one reader (after: two siblings
    # that read one are its one reader then).
    for gone, into in _merge_moves(module, device):
        merged.append((len(decisions), into))
        decisions.append(FusionDecision(gone.name, gone.fusion_kind or "?", True,
                                        f"merged into {into.name} (with a concatenate)"))
    # The fusions now: the merged producers (their decisions), then those
    # of the computations (the new ones among them).
    fusions = [inst for inst in fusions if id(inst) in consumers] + [
        inst for comp in (module.entry, *_control_flow_computations(module))
        for inst in comp.instructions if inst.opcode == "fusion"]
    for inst in fusions:
        kind = kinds.get(id(inst)) or inst.fusion_kind or "?"
        if inst.parent is not module.entry and (reason := _xlas_in_control_flow(inst)):
            decisions.append(FusionDecision(inst.name, kind, False, reason))
            continue
        if (consumer := consumers.get(id(inst))) is not None:
            merged.append((len(decisions), consumer))
            decisions.append(FusionDecision(inst.name, kind, True, f"merged into {consumer.name}"))
            continue
        ops = sorted({i.opcode for i in inst.fused_computation.instructions} -
                     {"parameter", "tuple", "get-tuple-element", "constant"})
        if kind == "kCustom" and _LIBRARY_OPS & set(ops):
            decisions.append(FusionDecision(inst.name, kind, False,
                                            f"an XLA library fusion ({', '.join(ops)})"))
            continue
        if not kernel_row_major(inst):
            decisions.append(FusionDecision(inst.name, kind, False,
                                            "an operand or result is not row-major"))
            continue
        _hoist_fused_constants(inst)
        split = _split_reduction(inst, device)
        if split:
            emitted += split
            decisions.append(FusionDecision(
                inst.name, kind, True, f"as {len(split)} kernel{'s' * (len(split) > 1)} (its "
                "reductions split or taken out)"))
            continue
        try:
            emitted.append((inst, _emit(inst, device, _shared_operand(inst))))
        except EmitterError as e:
            decisions.append(FusionDecision(inst.name, kind, False, str(e)))
            continue
        decisions.append(FusionDecision(inst.name, kind, True))
    # A merged producer is ours where its consumer is (the last merged
    # first: a consumer may have been merged on in turn).
    ours = {d.name: d.ours for d in decisions}
    for i, consumer in reversed(merged):
        d = decisions[i]
        ours[d.name] = ours[consumer.name]
        decisions[i] = FusionDecision(d.name, d.kind, ours[d.name], d.reason)
    # Compiled on the plugin's threads while XLA compiles the module around
    # them.
    # A kernel emitted for several fusions (_emit), prepared once.
    calls: dict[int, KernelCall] = {}
    for inst, kernel in emitted:
        if id(kernel) not in calls:
            calls[id(kernel)] = prepare(kernel, "cpu", device, background=True)
        _as_custom_call(inst, calls[id(kernel)])
    # Computations nothing calls any more (the replaced fusions' bodies).
    called = {id(c) for i in module.instructions() for c in i.called_computations}
    module.computations = [c for c in module.computations
                           if c is module.entry or id(c) in called]
    return decisions


# A constant of more elements than this in a fusion we take becomes an
# operand of the fusion (_hoist_fused_constants).
MAX_FUSED_CONSTANT_ELEMENTS = 1024


def _hoist_fused_constants(inst: HloInstruction) -> None:
    """The large constants of fusion `inst`'s body (over
    MAX_FUSED_CONSTANT_ELEMENTS elements) as its operands: constants of
    the computation that holds it, which _hoist_constants makes the
    program's parameters where that is the entry. XLA:CPU fuses constants
    of any size (one it folded from a closed-over array, `convert(y)` of a
    layer norm's residual); in a kernel, a table of 4M floats was 33 MB
    of kernel text, 1.8 s to emit (three times) and ~35 s of LLVM, the
    program's first call 41 s (a buffer read like any operand after).
    XLA:GPU fuses only scalar constants; the small ones stay, values
    LLVM can fold (a pixel's 3 channel scales)."""
    comp = inst.fused_computation
    outer = inst.parent
    names = {i.name for i in outer.instructions}
    for const in list(comp.instructions):
        # (An elided literal, `{...}`, stays: its fusion is then XLA's.)
        if (const.opcode != "constant" or const.literal is None or const.literal.value is None
                or not const.shape.is_array
                or const.shape.num_elements <= MAX_FUSED_CONSTANT_ELEMENTS):
            continue
        name = const.name
        while name in names:
            name += ".hoisted"
        names.add(name)
        hoisted = HloInstruction(name, "constant", const.shape, literal=const.literal,
                                 parent=outer, users=[inst])
        outer.instructions.insert(outer.instructions.index(inst), hoisted)
        inst.operands.append(hoisted)
        const.opcode, const.literal = "parameter", None
        const.parameter_number = len(inst.operands) - 1


# A fusion of a loop's body (or a branch, a called computation) that
# computes fewer elements than this -- its result's, or its reductions'
# inputs' -- stays XLA's: a custom call's own cost, every iteration,
# against a few microseconds of work (a scan's RNN step over f32[32,64],
# 1.2x the time with its fusions ours).
MIN_CONTROL_FLOW_ELEMENTS = 16384


def _xlas_in_control_flow(inst: HloInstruction) -> str | None:
    """Why fusion `inst`, of a control-flow computation, stays XLA's; None
    where our emitters take it as they take the entry's."""
    comp = inst.fused_computation
    reduced = [r.operands[0] for r in comp.instructions if r.opcode in ("reduce", "reduce-window")]
    work = max(leaf.num_elements for v in (inst, *reduced) for leaf in v.shape.leaves())
    if work < MIN_CONTROL_FLOW_ELEMENTS:
        return (f"{work} element{'s' * (work != 1)} in a loop's body or a branch (a call "
                f"costs more under {MIN_CONTROL_FLOW_ELEMENTS})")
    return None


# The instructions whose computations run as a program's own steps (a
# while loop's condition and body, a conditional's branches, a call's
# computation), not as a fusion's body or a reducer.
_CONTROL_FLOW = ("while", "conditional", "call")


def _control_flow_computations(module: HloModule) -> list:
    """The computations of the while loops, conditionals and calls reached
    from the entry (nested ones too), each once."""
    found, todo, seen = [], [module.entry], {id(module.entry)}
    while todo:
        comp = todo.pop()
        for inst in comp.instructions:
            if inst.opcode not in _CONTROL_FLOW:
                continue
            for called in inst.called_computations:
                if id(called) not in seen:
                    seen.add(id(called))
                    found.append(called)
                    todo.append(called)
    return found


@dataclass(eq=False)
class _Compiled:
    call: jax.stages.Compiled  # XLA's executable of our module (_with_executable)
    decisions: list[FusionDecision]

    @property
    def executable(self) -> XlaCpuExecutable:
        return XlaCpuExecutable.of(self.call.runtime_executable())


def _with_executable(compiled: jax.stages.Compiled, executable: XlaCpuExecutable,
                     constants: list[np.ndarray] = ()) -> jax.stages.Compiled:
    """jax's `compiled` (the O0 compile whose module gave the decisions)
    running `executable` instead, XLA's compile of our module: the same
    parameters and results, their layouts and shardings (the entry
    computation is XLA's, its layout with it). Called through jax's own
    dispatch, as a `jax.jit` function is: a call of a program of one small
    kernel took 4.7 us against 9.6 us through `execute_sharded` from
    Python, and arguments are taken as jax.jit takes them (Python scalars,
    float64 numpy arrays where x64 is off). jax builds its own deserialized
    executables this way (jax.experimental.serialize_executable).

    `constants` are the values of the module's first parameters
    (_hoist_constants): jax passes them ahead of the arguments, as it
    passes the constants it hoists itself (its `const_args`)."""
    unloaded = replace(compiled._executable._unloaded_executable,
                       xla_executable=executable.executable)
    params = compiled._params
    const_args = list(params.const_args)
    if constants:
        unloaded = _with_leading_constants(unloaded, len(const_args), constants)
        const_args += [jax.device_put(c, unloaded.device_list[0]) for c in constants]
    return _compiled_like(compiled, unloaded.load(), const_args)


def _compiled_like(compiled: jax.stages.Compiled, executable,
                   const_args: list) -> jax.stages.Compiled:
    """A jax.stages.Compiled of `executable` (a loaded one) taking
    `const_args` ahead of the arguments, its arguments and results as
    `compiled`'s."""
    return jax.stages.Compiled(executable, const_args, compiled.args_info, compiled.out_tree,
                               no_kwargs=compiled._params.no_kwargs)


def _with_leading_constants(unloaded, at: int, constants: list[np.ndarray]):
    """jax's unloaded executable with parameters for `constants` inserted
    at `at` (after jax's own constants): their avals, shardings (the
    executable's device) and row-major layouts, and every index past them
    moved up."""
    from jax._src import core
    from jax._src.layout import Layout
    k = len(constants)
    avals = [core.ShapedArray(c.shape, c.dtype) for c in constants]
    sharding = jax.sharding.SingleDeviceSharding(unloaded.device_list[0])

    def spliced(values, new):
        values = list(values)
        return values[:at] + list(new) + values[at:]

    layouts = [Layout(major_to_minor=tuple(range(c.ndim)), tiling=()) for c in constants]
    info = unloaded.all_args_info
    if info is not None:
        names = info.debug_info.arg_names
        info = info._replace(
            in_avals=spliced(info.in_avals, avals),
            debug_info=info.debug_info._replace(
                arg_names=None if names is None else tuple(spliced(names, [""] * k))))
    return replace(
        unloaded, input_avals=spliced(unloaded.input_avals, avals),
        input_shardings=spliced(unloaded.input_shardings, [sharding] * k),
        kept_var_idx={i if i < at else i + k for i in unloaded.kept_var_idx} |
        set(range(at, at + k)),
        xla_in_layouts=spliced(unloaded.xla_in_layouts, layouts),
        dispatch_in_layouts=spliced(unloaded.dispatch_in_layouts, [None] * k),
        all_args_info=info)


@functools.cache
def _code_fingerprint() -> str:
    """What a compiled program depends on besides its lowered module: jax's
    and jaxlib's versions (XLA's serialization), XLA's flags as XLA read
    them (XLA_FLAGS may have changed since; excess precision changes our
    decisions, _as_xla_cpu_computes), the host and the plugin library
    (runtime.host_code.fingerprint) and xla_gpu's own Python, whose
    decisions and kernels the program holds."""
    import jaxlib
    from ..reference import _round_as_the_hlo_says, xla_options_in_effect
    from ..runtime.host_code import fingerprint
    _round_as_the_hlo_says()  # XLA_FLAGS as the compile of the program has them
    digest = hashlib.sha256(f"{jax.__version__}\0{jaxlib.__version__}\0"
                            f"{fingerprint()}\0".encode())
    digest.update(xla_options_in_effect())
    package = Path(__file__).resolve().parent.parent
    for source in sorted(package.rglob("*.py")):
        digest.update(source.read_bytes())
    return digest.hexdigest()


def _disk_file(lowered, device: DeviceDescription) -> Path | None:
    """Where $XLA_GPU_CACHE_DIR keeps the program of `lowered` (jax's
    lowering: its StableHLO without locations), if set."""
    folder = os.environ.get("XLA_GPU_CACHE_DIR")
    if not folder:
        return None
    key = hashlib.sha256(f"{lowered.as_text()}\0{device.name}\0{_code_fingerprint()}"
                         .encode()).hexdigest()
    return Path(folder) / "jit" / f"{key}.bin"


def _load(path: Path, lowered) -> _Compiled | None:
    """A program _store wrote for `lowered`: jax's
    executable (its custom calls' kernels compiled, from the kernel cache,
    as XLA loads it: `import xla_gpu.jax` installed the handler's
    compiler) and the decisions; None where there is none or it does not
    load (a damaged file: compiled anew)."""
    try:
        head, _, body = path.read_bytes().partition(b"\n")
        meta = json.loads(head)
        decisions = [FusionDecision(*d) for d in meta["decisions"]]
        payload = body[:meta["payload_bytes"]]
        constants, at = [], meta["payload_bytes"]
        for dtype, shape, size in meta["constants"]:
            constants.append(np.frombuffer(body[at:at + size], np.dtype(dtype)).reshape(shape))
            at += size
        if at != len(body):
            return None
        call = serialize_executable.deserialize_and_load(payload, lowered.in_tree,
                                                         lowered.out_tree, backend="cpu")
        if constants:
            device = call._executable._unloaded_executable.device_list[0]
            call = _compiled_like(call, call._executable,
                                  [jax.device_put(c, device) for c in constants])
        return _Compiled(call, decisions)
    except (OSError, ValueError, KeyError, TypeError, RuntimeError, pickle.UnpicklingError,
            EOFError):
        return None


def _store(path: Path, compiled: _Compiled) -> None:
    """Writes the program (the decisions, a line of JSON, then jax's
    serialization of the executable, then the bytes of the constants it
    takes ahead of its arguments: jax does not serialize those) to a
    temporary name and renames it: readers see a whole file or none. A
    program jax does not serialize is not kept."""
    call = compiled.call
    constants = [np.asarray(c) for c in call._params.const_args]
    try:
        payload, _, _ = serialize_executable.serialize(_compiled_like(call, call._executable, []))
    except (NotImplementedError, ValueError):
        return
    meta = {"decisions": [[d.name, d.kind, d.ours, d.reason] for d in compiled.decisions],
            "payload_bytes": len(payload),
            "constants": [[c.dtype.name, list(c.shape), c.nbytes] for c in constants]}
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_suffix(f".{os.getpid()}.tmp")
    with partial.open("wb") as out:
        out.write(json.dumps(meta).encode() + b"\n" + payload)
        for c in constants:
            out.write(np.ascontiguousarray(c).tobytes())
    partial.replace(path)


def _optimized_text(compiled, large_constants: bool = True) -> str:
    """XLA's optimized module as text, every constant's literal whole (or,
    without `large_constants`, those of more than 10 values as `{...}`,
    which parses back as no value: `Compiled.as_text()` prints them so,
    and a jnp.where over a closed-over mask once kept the elements of
    another mask)."""
    return _module_text(_xla_module(compiled), large_constants)


def _xla_module(compiled):
    """XLA's optimized HloModule of a jax Compiled."""
    return compiled.runtime_executable().hlo_modules()[0]


def _module_text(xla_module, large_constants: bool) -> str:
    from jax._src.lib import xla_client as xc
    options = xc.hlo.HloPrintOptions()
    options.print_large_constants = large_constants
    return xla_module.to_string(options)


def _optimized_module(compiled, source: str) -> HloModule:
    """XLA's optimized module, its large constants' values read from its
    serialized form (hlo/proto.py) rather than printed and parsed: an
    embedding table of 8M floats is ~100 MB of text, 1.5 s for XLA to
    print and 1.4 s for us to read. Where one is not read so (a type or
    layout it does not take), the module is read from its whole text."""
    xla_module = _xla_module(compiled)
    module = parse_hlo(_module_text(xla_module, large_constants=False), source=source)
    elided = {(comp.name, inst.name): inst for comp in module.computations
              for inst in comp.instructions
              if inst.opcode == "constant" and inst.literal is not None
              and inst.literal.value is None}
    if not elided:
        return module
    if all(inst.shape.is_array for inst in elided.values()):
        proto = xla_module.as_serialized_hlo_module_proto()
        try:
            values = constant_values(proto, {key: (inst.shape.element_type,
                                                   tuple(inst.shape.dims))
                                             for key, inst in elided.items()})
        except (ValueError, IndexError):  # a message our reader misreads: the text
            values = {}
        if len(values) == len(elided):
            for key, inst in elided.items():
                inst.literal = Literal.of(values[key], inst.shape.element_type)
            return module
    return parse_hlo(_module_text(xla_module, large_constants=True), source=source)


def _hoist_constants(module: HloModule, at: int) -> list[np.ndarray]:
    """The entry computation's constants read from XLA's serialized module
    (_optimized_module) become its parameters `at`, `at` + 1, ... (after
    the constants jax passes itself), the parameters from `at` on numbered
    after them; their values, in order. XLA then reads no text of them,
    and jax passes them to each call (_with_executable)."""
    entry = module.entry
    hoisted = [i for i in entry.instructions
               if i.opcode == "constant" and i.literal is not None and i.literal.from_value]
    if not hoisted:
        return []
    for inst in entry.parameters:
        if inst.parameter_number >= at:
            inst.parameter_number += len(hoisted)
    values = []
    for number, inst in enumerate(hoisted, start=at):
        values.append(inst.literal.value)
        inst.opcode, inst.parameter_number, inst.literal = "parameter", number, None
    layout = next((a for a in module.attributes if a.name == "entry_computation_layout"), None)
    if layout is not None:
        # {(p0, p1, ...)->result}: the hoisted shapes go in at `at`.
        head, rest = layout.text.split("(", 1)
        params, tail = _split_top_level(rest)
        params[at:at] = [  # row-major, as _optimized_module read them
            i.shape.to_text(layout=False) +
            "{" + ",".join(map(str, range(i.shape.rank - 1, -1, -1))) + "}" for i in hoisted]
        layout.text = f"{head}({', '.join(params)}{tail}"
        layout.value = None
    return values


def _split_top_level(text: str) -> tuple[list[str], str]:
    """The comma-separated items of `text` up to its first unmatched `)`
    (brackets inside items kept whole), and the rest from that `)` on."""
    items, depth, start = [], 0, 0
    for k, c in enumerate(text):
        if c in "([{":
            depth += 1
        elif c in ")]}":
            if depth == 0:
                last = text[start:k].strip()
                return items + ([last] if last else []), text[k:]
            depth -= 1
        elif c == "," and depth == 0:
            items.append(text[start:k].strip())
            start = k + 1
    raise ValueError(f"no closing ')' in {text!r}")


@functools.cache
def _as_for_xla_gpu():
    """jax's lowering parameters for our programs: its rules for XLA:GPU
    where its CPU rule differs for XLA:CPU's sake. jax lowers threefry2x32
    (jax.random's bits) on the CPU as a while loop of five steps of four
    rounds (compile time), each step a fusion that reads and writes the
    counters' two halves; for the GPU it unrolls the 20 rounds, which
    XLA's fusion makes one loop fusion from the key to the values drawn,
    the counters never in memory: `xj.jit` of uniform f32[2048,1024]
    3.8-4.4 -> 0.85 ms (`jax.jit` 4.4-5.2), the bits the same. The rules
    are part of the lowering's cache key (jax's export uses them so): a
    `jax.jit` of the same function is lowered with its own."""
    from jax._src.interpreters import mlir
    try:
        from jax._src.random import threefry2x32
        rules = ((threefry2x32.threefry2x32_p, threefry2x32._threefry2x32_lowering_rule),)
    except (ImportError, AttributeError):  # another jax: its own rules
        rules = None
    return mlir.LoweringParameters(override_lowering_rules=rules)


class jit:  # noqa: N801  (named as jax.jit, which it stands beside)
    """A jax function compiled by XLA with our kernels in place of the
    fusions our emitters take. CPU only (the CPU target); positional
    arguments, arrays or pytrees of arrays (a model's parameters)."""

    def __init__(self, fn, *, device: DeviceDescription = DEFAULT_DEVICE):
        self.fn = fn
        self.device = device
        self._compiled: dict[tuple, _Compiled] = {}
        self._last: _Compiled | None = None
        self._dispatch = None  # the C++ dispatch of self._last's program
        functools.update_wrapper(self, fn)
        # What the module's parse errors name: a functools.partial (which
        # jax.jit takes) has no __name__ for update_wrapper to copy.
        self._name = getattr(fn, "__name__", None) or getattr(
            getattr(fn, "func", None), "__name__", type(fn).__name__)

    def _compile(self, leaves, tree) -> _Compiled:
        # The key from the arrays' own fields where they have them: building
        # avals costs more than a small program runs.
        key = (tree, *((a.shape, a.dtype) if isinstance(a, jax.Array)
                       else (np.shape(a), jax.numpy.result_type(a)) for a in leaves))
        if key not in self._compiled:
            avals = [jax.ShapeDtypeStruct(shape, dtype) for shape, dtype in key[1:]]
            # Lowered over the arguments' own tree (the module's parameters
            # are its leaves): the compiled call takes the arguments as
            # given and flattens them in C++ (__call__).
            lowered = jax.jit(self.fn, keep_unused=True).trace(
                *jax.tree_util.tree_unflatten(tree, avals)).lower(
                    _private_parameters=_as_for_xla_gpu())
            disk = _disk_file(lowered, self.device)
            loaded = _load(disk, lowered) if disk is not None and disk.exists() else None
            if loaded is not None:
                self._compiled[key] = loaded
            else:
                # Only XLA's optimized module is used (its executable never
                # runs): its code made at LLVM's O0. The level is LLVM's
                # alone (the fusions XLA's HLO passes make are the same); a
                # layer norm's whole compile took 129 ms instead of 140.
                optimized = lowered.compile(
                    compiler_options={"xla_backend_optimization_level": 0})
                module = _optimized_module(optimized, source=f"<{self._name}>")
                decisions = _replace_fusions(module, self.device)
                # (Not where jax tracks arguments the program mutates: their
                # indices would move too. The constants are printed then.)
                constants = (_hoist_constants(module, len(optimized._params.const_args))
                             if optimized._executable._unloaded_executable.mut is None else [])
                with as_xla_takes_it(module.computations):
                    text = module.to_text()
                self._compiled[key] = _Compiled(
                    _with_executable(optimized, XlaCpuExecutable(text), constants), decisions)
                if disk is not None:
                    _store(disk, self._compiled[key])
        self._last = self._compiled[key]
        return self._last

    def _compile_args(self, args) -> tuple[_Compiled, list]:
        leaves, tree = jax.tree_util.tree_flatten(args)
        return self._compile(leaves, tree), leaves

    def __call__(self, *args):
        # Results not waited for: jax arrays are futures, as jax.jit's are.
        dispatch = self._dispatch
        if dispatch is not None:
            # The last program's dispatch flattens the arguments and checks
            # their tree, shapes and types itself, in C++, and raises
            # TypeError where they differ: _compile's key of a model's 200
            # parameters took 76 us a call; the tree flattened here and
            # jax's Compiled.__call__ took ~0.9 us of a small program's ~4.
            try:
                return dispatch(*args)
            except TypeError:
                pass
        call = self._compile_args(args)[0].call
        out = call(*args)
        self._dispatch = getattr(call, "_call", None)  # made by the call above
        return out

    def fusion_report(self, *args) -> str:
        """Which fusions of XLA's module are ours, which stayed XLA's and why
        (for `args`' shapes, else for the last call's)."""
        compiled = self._compile_args(args)[0] if args else self._last
        if compiled is None:
            raise ValueError("call the function (or pass example arguments) first")
        ours = sum(d.ours for d in compiled.decisions)
        lines = [f"{ours} of {len(compiled.decisions)} fusions are ours"]
        lines += [f"  {d}" for d in compiled.decisions]
        return "\n".join(lines)

    def decisions(self, *args) -> list[FusionDecision]:
        compiled = self._compile_args(args)[0] if args else self._last
        return list(compiled.decisions) if compiled else []

