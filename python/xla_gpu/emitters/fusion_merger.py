"""An elementwise producer fusion merged into its one consumer, as XLA's
fusion passes would have fused them: one kernel instead of two, and no
buffer between them.

    merged = merge_producer(consumer, k)   # consumer's operand k merged in

XLA:CPU keeps such pairs apart for its libraries: YNNPACK reduces f32, so
a bf16 RMS norm's `x.astype(f32)` is a fusion of its own
(`wrapped_convert`) whose f32[1024,1024] result -- 4 MiB written, then
read back by the reduction -- only feeds the reduction's library fusion.
XLA:GPU fuses the convert into the reduction (a prologue its reduction
emitter reads each element through once).

The merged fusion is built as HLO text and parsed (the emitters read the
parsed attributes): the consumer's parameters but k, then the producer's
(numbered after them, its operands after the consumer's), the producer's
instructions (renamed where the consumer has the name), and the
consumer's, which read the producer's root where they read parameter k.

Siblings -- two fusions reading one operand, neither the other's result
-- are one multi-output fusion the same way, as XLA:GPU's multi-output
fusion makes them (XLA:CPU keeps them apart):

    merged = merge_siblings(first, second)   # results: first's, second's
"""

from __future__ import annotations

import dataclasses

from ..hlo import HloInstruction, Shape, parse_hlo
from ..hlo.opcodes import ELEMENTWISE
from .tree_reduction import COSTLY_OPS, call_the_originals

__all__ = ["computes_cheaply", "is_elementwise_producer", "merge_producer", "merge_region",
           "merge_siblings",
           "moves_elements", "reads_at_own_indices", "reads_each_element_at_most_once",
           "reads_each_element_once", "wrapped"]


# The most elements of an array constant in an elementwise producer (a
# value to broadcast: a table of bin edges, not a closed-over weight).
MAX_BROADCAST_CONSTANT = 1024
# The most pieces of a concatenate there.
MAX_CONCATENATED = 4


def is_elementwise_producer(fusion: HloInstruction) -> bool:
    """A fusion of one array result computed elementwise from operands of
    its dimensions, scalar constants and broadcasts (of smaller operands,
    through bitcasts and reshapes): merged into a consumer that reads each
    of its elements once, it is computed once an element, each element of
    a broadcast operand read again from the cache where the materialized
    array was written to memory and read back. An op before a broadcast
    runs again for each element the broadcast makes, so it is no costly
    one (COSTLY_OPS: an exp, a divide). XLA:CPU materializes broadcasts
    for its library fusions (YNNPACK takes arrays): a layer norm's
    gradient wrote and read three f32[2048,1024] broadcasts (of the scale,
    of rsqrt(var), of their product) that its reductions read once. The
    values broadcast may be made in the fusion too, from iotas, small
    constants, slices and concatenates of them (a histogram's bin edges,
    `linspace`: (x[:, None] > edges).sum(0) over f32[1048576] into 33
    bins wrote and read back s32[1048576,33], 138 MB), and an iota may be
    of the result's dimensions (a one-hot's columns)."""
    comp = fusion.fused_computation
    if comp is None or not fusion.shape.is_array:
        return False
    dims = fusion.shape.dims
    for inst in comp.instructions:
        if inst.opcode == "parameter":
            continue
        if inst.opcode == "constant":
            if inst.shape.dims and (inst.shape.dims == dims or
                                    inst.shape.num_elements > MAX_BROADCAST_CONSTANT):
                return False
        elif inst.opcode in ("broadcast", "bitcast", "reshape", "iota"):
            if not inst.shape.is_array:
                return False
        elif inst.opcode in ("concatenate", "slice"):
            # (A concatenate picks its piece by comparisons, again for
            # each element: of a few pieces.)
            if (not inst.shape.is_array or inst.shape.dims == dims or
                    len(inst.operands) > MAX_CONCATENATED):
                return False
        elif inst.opcode not in ELEMENTWISE or not inst.shape.is_array:
            return False
        elif inst.shape.dims != dims and inst.opcode in COSTLY_OPS:
            return False
    # Every value of the result's dimensions is of its elements, one for
    # one: no broadcast to them from values of its dimensions.
    return comp.root.opcode not in ("parameter", "bitcast", "reshape") and all(
        _elementwise_to_root(comp, p, dims) for p in comp.parameters if p.shape.dims == dims)


def _elementwise_to_root(comp, inst: HloInstruction, dims) -> bool:
    """Whether every path from `inst` (of the result's dimensions `dims`)
    to `comp`'s root is elementwise ops of those dimensions: each element
    it has read once an element of the result."""
    seen, todo = set(), [inst]
    while todo:
        inst = todo.pop()
        if id(inst) in seen:
            continue
        seen.add(id(inst))
        if inst is comp.root and inst.opcode == "tuple":
            continue  # the results (of one shape: a loop fusion's)
        if inst.opcode != "parameter" and (inst.opcode not in ELEMENTWISE or
                                           inst.shape.dims != dims):
            return False
        todo.extend(inst.users)
    return True


def reads_each_element_once(consumer: HloInstruction, k: int) -> bool:
    """Whether fusion `consumer` reads each element of operand k once: it
    is its operand once, and its parameter goes to the root through
    elementwise ops of its dimensions alone, or through one chain of
    elementwise ops of its dimensions (each the only reader of the one
    before) to the root, a reduction's input or that of a reduce-window
    whose windows do not overlap. A value read by a reduce
    and by an elementwise op too (x - max(x)) is read twice an element,
    where a fission (tree_reduction) makes them two kernels."""
    if sum(o is consumer.operands[k] for o in consumer.operands) != 1:
        return False
    comp = consumer.fused_computation
    (inst,) = [p for p in comp.parameters if p.parameter_number == k]
    dims = inst.shape.dims
    if _elementwise_to_root(comp, inst, dims):
        # Read by several elementwise ops, each at the element's own index
        # (a floor remainder's select, compares and add of XLA:CPU's
        # `wrapped_remainder`): one value an element.
        return True
    while inst is not comp.root:
        users = {id(u): u for u in inst.users}
        if len(users) != 1:
            return False
        (user,) = users.values()
        if user.opcode == "reduce":
            return all(o is not inst for o in user.operands[len(user.operands) // 2:])
        if user.opcode == "reduce-window":
            # Windows that do not overlap (XLA:CPU's integer sums: a
            # reduce-window of 1x32 windows, then a reduce).
            window = user.attr("window", {})
            size = window.get("size", [])
            dilations = [*window.get("lhs_dilate", []), *window.get("rhs_dilate", [])]
            return (all(o is not inst for o in user.operands[len(user.operands) // 2:]) and
                    window.get("stride", [1] * len(size)) == size and
                    all(d == 1 for d in dilations))
        if user.opcode not in ELEMENTWISE or user.shape.dims != dims:
            return False
        inst = user
    return True


# Ops whose result holds each element of their operand (the first, of a
# pad) at most once: a read of each result element reads each operand
# element at most once.
_INJECTIVE_MOVES = {"slice", "concatenate", "pad", "bitcast", "reshape", "reverse"}


def reads_each_element_at_most_once(consumer: HloInstruction, k: int) -> bool:
    """Whether fusion `consumer` reads each element of operand k at most
    once: it is its operand once, and from its parameter each value is
    read by elementwise ops of its dimensions alone (all at the element's
    own index), or by one op that moves elements injectively
    (_INJECTIVE_MOVES: a slice, a concatenate's piece, a pad's operand),
    on to the root (a tuple's element) or a reduction's input. A roll
    (jnp.roll: a concatenate of two slices) merged into the stencil that
    reads it, each element of the rolled array computed once."""
    return _reads_at_indices(consumer, k, moves=True)


def _reads_at_indices(consumer: HloInstruction, k: int, moves: bool) -> bool:
    """reads_at_own_indices (without `moves`) or
    reads_each_element_at_most_once (with): the walk from operand k's
    parameter (k once an operand), each value read by elementwise ops of
    its dimensions (at its own index) and the inputs of reduces, or with
    `moves` by one injective move (_INJECTIVE_MOVES) alone, where no
    value before it had two readers (two values of one element, each
    moved elsewhere, would read it twice)."""
    if sum(o is consumer.operands[k] for o in consumer.operands) != 1:
        return False
    comp = consumer.fused_computation
    (param,) = [p for p in comp.parameters if p.parameter_number == k]
    seen, todo = set(), [(param, False)]  # a value, whether a value before it branched
    while todo:
        inst, branched = todo.pop()
        if id(inst) in seen:
            continue
        seen.add(id(inst))
        users = list({id(u): u for u in inst.users}.values())
        if moves and len(users) == 1 and users[0].opcode in _INJECTIVE_MOVES:
            user = users[0]
            if branched or sum(o is inst for o in user.operands) != 1 or (
                    user.opcode == "pad" and user.operands[0] is not inst):
                return False
            todo.append((user, branched))
            continue
        branched = branched or len(users) > 1
        for user in users:
            if user.opcode == "reduce":
                if any(o is inst for o in user.operands[len(user.operands) // 2:]):
                    return False  # read as an init
                continue
            if user is comp.root and user.opcode == "tuple":
                continue
            if user.opcode not in ELEMENTWISE or user.shape.dims != inst.shape.dims:
                return False
            todo.append((user, branched))
    return True


def moves_elements(fusion: HloInstruction, maps: bool = True) -> bool:
    """Whether `fusion` (one array result) only moves its operands'
    elements and (with `maps`) maps them elementwise: parameters through
    slices, concatenates, pads, bitcasts, reshapes, reverses and
    elementwise ops with scalar constants (XLA:CPU's `wrapped_slice`, a
    bf16 roll's converts of the slices to f32)."""
    comp = fusion.fused_computation
    ops = _INJECTIVE_MOVES | ELEMENTWISE if maps else _INJECTIVE_MOVES
    return (comp is not None and fusion.shape.is_array and comp.root.opcode != "parameter" and
            all(i.opcode == "parameter" or (i.opcode == "constant" and not i.shape.dims) or
                (i.opcode in ops and i.shape.is_array) for i in comp.instructions))


def wrapped(inst: HloInstruction) -> HloInstruction:
    """A loop fusion of instruction `inst` alone (of one array result, a
    bare concatenate of XLA:CPU's entry) on its operands, as XLA's
    `wrapped_` fusions are. In no computation yet."""
    lines = [f"%p{i} = {o.shape} parameter({i})" for i, o in enumerate(inst.operands)]
    names = {id(o): f"p{i}" for i, o in enumerate(inst.operands)}
    if len(names) != len(inst.operands):
        raise ValueError(f"{inst.name} reads an operand twice")
    lines.append("ROOT " + _renamed_line(inst, inst.name, names))
    return _fusion_of(f"wrapped_{inst.name}", "kLoop", f"wrapped_{inst.name}_computation",
                      lines, list(inst.operands), inst.shape, (),
                      f"<{inst.name} wrapped>")


def computes_cheaply(fusion: HloInstruction) -> bool:
    """Whether fusion `fusion` has no costly op (COSTLY_OPS: an exp, a
    divide) and reads no operand as large as its result (a one-hot's
    compare of an iota with a column a row): computing it again at each
    read costs less than writing and reading it. (A masked softmax's
    select of x merged into the softmax, which reads it twice, read x and
    the mask twice: 0.83 ms against 0.60 unmerged.)"""
    size = fusion.shape.num_elements
    return (not any(i.opcode in COSTLY_OPS for i in fusion.fused_computation.instructions) and
            all(leaf.num_elements < size for o in fusion.operands for leaf in o.shape.leaves()))


def reads_at_own_indices(consumer: HloInstruction, k: int) -> bool:
    """Whether fusion `consumer` reads operand k (once an operand) only at
    the indices of its elements, by elementwise ops of its dimensions and
    the inputs of reduces (a row's sum and the value beside it: a
    cross-entropy gradient's one-hot), each element a few times."""
    return _reads_at_indices(consumer, k, moves=False)


def merge_producer(consumer: HloInstruction, k: int, keep: bool = False) -> HloInstruction:
    """Fusion `consumer` with its operand k (a fusion of one array result:
    an elementwise producer, see is_elementwise_producer, or a row
    program's part, see xla_gpu.jax's _merge_row_programs) merged in: a
    new fusion of `consumer`'s name, shape and kind, on `consumer`'s
    operands but k followed by the producer's that `consumer` does not
    read already, calling a new computation (and the computations both
    called). With `keep`, the producer's result is a result too: the
    fusion's is the tuple of `consumer`'s results (a tuple's elements) and
    the producer's, last. In no computation yet."""
    producer = consumer.operands[k]
    cc, pc = consumer.fused_computation, producer.fused_computation
    fresh = _fresh_names(cc, producer.name)
    names: dict[int, str] = {}

    kept = sorted((p for p in cc.parameters if p.parameter_number != k),
                  key=lambda p: p.parameter_number)
    lines = []
    for number, p in enumerate(kept):
        names[id(p)] = p.name
        lines.append(f"%{p.name} = {p.shape} parameter({number})")
    # A producer's operand the consumer reads already is the consumer's
    # parameter (once an operand of the merged fusion).
    operands = [consumer.operands[p.parameter_number] for p in kept]
    for p in sorted(pc.parameters, key=lambda p: p.parameter_number):
        o = producer.operands[p.parameter_number]
        shared = next((q for q, r in zip(kept, operands) if r is o), None)
        if shared is not None:
            names[id(p)] = shared.name
            continue
        names[id(p)] = fresh(p.name)
        lines.append(f"%{names[id(p)]} = {p.shape} parameter({len(operands)})")
        operands.append(o)
    for inst in pc.topological_order():
        if inst.opcode != "parameter":
            names[id(inst)] = fresh(inst.name)
            lines.append(_renamed_line(inst, names[id(inst)], names))
    (param,) = [p for p in cc.parameters if p.parameter_number == k]
    names[id(param)] = names[id(pc.root)]
    shape = consumer.shape
    # With `keep`, the results: the consumer's (its root tuple's operands,
    # the tuple itself dropped) and the producer's.
    results = (list(cc.root.operands) if cc.root.opcode == "tuple" else [cc.root]) + [pc.root]
    for inst in cc.topological_order():
        if inst.opcode == "parameter" or (keep and inst is cc.root and inst.opcode == "tuple"):
            continue
        names[id(inst)] = inst.name
        lines.append(("ROOT " if inst is cc.root and not keep else "") +
                     _renamed_line(inst, inst.name, names))
    if keep:
        shape = Shape(tuple_shapes=tuple(r.shape for r in results))
        lines.append(f"ROOT %{fresh(consumer.name + '.results')} = {shape} tuple("
                     + ", ".join(f"%{names[id(r)]}" for r in results) + ")")
    return _fusion_of(consumer.name, consumer.fusion_kind or "kLoop", f"{cc.name}.{pc.name}",
                      lines, operands, shape, (pc, cc),
                      f"<{producer.name} merged into {consumer.name}>")


def merge_siblings(first: HloInstruction, second: HloInstruction) -> HloInstruction:
    """Fusions `first` and `second` (of one computation, neither reading
    the other) as one multi-output fusion, as XLA:GPU's sibling
    multi-output fusion makes them: a new fusion of `first`'s name and
    kind on `first`'s operands followed by `second`'s that `first` does
    not read already (an operand both read is read once), calling a new
    computation of both's instructions (`second`'s renamed where `first`
    has the name), whose result is the tuple of `first`'s results (a
    tuple's elements) and `second`'s. In no computation yet."""
    fc, sc = first.fused_computation, second.fused_computation
    fresh = _fresh_names(fc, second.name)
    names: dict[int, str] = {}

    lines, operands = [], list(first.operands)
    param_of: dict[int, str] = {}  # an operand's parameter in the merged fusion
    for p in sorted(fc.parameters, key=lambda p: p.parameter_number):
        names[id(p)] = p.name
        param_of.setdefault(id(first.operands[p.parameter_number]), p.name)
        lines.append(f"%{p.name} = {p.shape} parameter({p.parameter_number})")
    for p in sorted(sc.parameters, key=lambda p: p.parameter_number):
        o = second.operands[p.parameter_number]
        if id(o) not in param_of:
            param_of[id(o)] = fresh(p.name)
            lines.append(f"%{param_of[id(o)]} = {p.shape} parameter({len(operands)})")
            operands.append(o)
        names[id(p)] = param_of[id(o)]
    # An instruction of `second` that computes what one of `first` does
    # (the same op on the same values) is that one: jax's threefry steps
    # share three of their four rounds.
    computed: dict[tuple, str] = {}
    results = []
    for comp in (fc, sc):
        for inst in comp.topological_order():
            if inst.opcode == "parameter" or (inst is comp.root and inst.opcode == "tuple"):
                continue
            key = (inst.opcode, str(inst.shape), tuple(names[id(o)] for o in inst.operands),
                   inst.operand_text() if inst.opcode == "constant" else None,
                   tuple((a.name, a.text) for a in inst.attributes.values()
                         if a.name != "metadata"))
            if comp is sc and not inst.called_computations and key in computed:
                names[id(inst)] = computed[key]
                continue
            names[id(inst)] = inst.name if comp is fc else fresh(inst.name)
            computed.setdefault(key, names[id(inst)])
            lines.append(_renamed_line(inst, names[id(inst)], names))
        results += list(comp.root.operands) if comp.root.opcode == "tuple" else [comp.root]
    shape = Shape(tuple_shapes=tuple(r.shape for r in results))
    lines.append(f"ROOT %{fresh(first.name + '.results')} = {shape} tuple("
                 + ", ".join(f"%{names[id(r)]}" for r in results) + ")")
    return _fusion_of(first.name, first.fusion_kind or "kLoop", f"{fc.name}.{sc.name}", lines,
                      operands, shape, (fc, sc), f"<{second.name} merged with {first.name}>")


def merge_region(members: list[HloInstruction], outputs: list[HloInstruction],
                 name: str) -> HloInstruction:
    """Fusions `members` (of one computation, each of one array result,
    in an order where each comes after the members it reads) as one
    fusion named `name`: on the operands they read from outside (each
    once), calling a new computation of all their instructions, each
    member's parameter that reads another member that member's root; its
    result is `outputs`' (members read from outside) values, their tuple
    where there are several. In no computation yet."""
    fresh = _fresh_names(None, name)
    inside = {id(m) for m in members}
    lines, operands = [], []
    param_of: dict[int, str] = {}  # an outside operand: its parameter
    root_of: dict[int, str] = {}  # a member: its root's name
    names: dict[int, str] = {}
    for member in members:
        comp = member.fused_computation
        for p in comp.parameters:
            o = member.operands[p.parameter_number]
            if id(o) in inside:
                names[id(p)] = root_of[id(o)]
                continue
            if id(o) not in param_of:
                param_of[id(o)] = fresh(p.name)
                lines.append(f"%{param_of[id(o)]} = {p.shape} parameter({len(operands)})")
                operands.append(o)
            names[id(p)] = param_of[id(o)]
        for inst in comp.topological_order():
            if inst.opcode != "parameter":
                names[id(inst)] = fresh(inst.name)
                lines.append(_renamed_line(inst, names[id(inst)], names))
        root_of[id(member)] = names[id(comp.root)]
    if len(outputs) == 1:
        # (The last member's root, its last line: every other member is
        # read by a later one.)
        shape = outputs[0].shape
        lines[-1] = "ROOT " + lines[-1]
    else:
        shape = Shape(tuple_shapes=tuple(o.shape for o in outputs))
        lines.append(f"ROOT %{fresh(name + '.results')} = {shape} tuple("
                     + ", ".join(f"%{root_of[id(o)]}" for o in outputs) + ")")
    comps = [m.fused_computation for m in members]
    return _fusion_of(name, "kLoop", f"{name}.region", lines, operands, shape, comps,
                      f"<the row program of {', '.join(m.name for m in members)}>")


def _fresh_names(comp, source: str):
    """A function that returns a name for an instruction joining `comp`
    (or a new computation, None): its own, or where that is taken (by
    `comp` or an earlier one) its own followed by `source` (the fusion it
    comes from) and a number."""
    taken = {i.name for i in comp.instructions} if comp is not None else set()

    def fresh(name: str) -> str:
        new, n = name, 0
        while new in taken:
            n += 1
            new = f"{name}.{source}{n if n > 1 else ''}"
        taken.add(new)
        return new

    return fresh


def _renamed_line(inst: HloInstruction, name: str, names: dict[int, str]) -> str:
    """`inst`'s text under `name`, its operands under their `names` (by
    id), never ROOT."""
    clone = dataclasses.replace(
        inst, name=name, parent=None,
        operands=[dataclasses.replace(o, name=names[id(o)]) for o in inst.operands])
    return clone.to_text()


def _fusion_of(name: str, kind: str, computation: str, lines: list[str],
               operands: list[HloInstruction], shape: Shape, sources, source: str
               ) -> HloInstruction:
    """A new fusion `name` of `kind` on `operands`, of result `shape`,
    calling a new computation named `computation` of `lines` (its
    parameters and instructions, its ROOT last), built as HLO text and
    parsed; the computations the `sources`' instructions call are called
    as they are. In no computation yet."""
    called = []
    for comp in sources:
        called += [c for c in comp.callees() if c not in called]
    args = ", ".join(f"%arg{i}" for i in range(len(operands)))
    text = ("HloModule merged\n\n" + "".join(c.to_text() + "\n\n" for c in called) +
            f"%{computation} {{\n  " + "\n  ".join(lines) + "\n}\n\nENTRY %merged {\n" +
            "".join(f"  %arg{i} = {o.shape} parameter({i})\n" for i, o in enumerate(operands)) +
            f"  ROOT %{name} = {shape} fusion({args}), kind={kind}, calls=%{computation}\n}}\n")
    module = parse_hlo(text, source=source)
    merged = module.entry.root
    merged.operands = operands
    merged.shape = shape
    merged.parent = None
    call_the_originals(merged, called)
    return merged
