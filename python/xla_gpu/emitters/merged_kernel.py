"""Kernels run one after the other as one kernel: the first's entry, a
barrier of each block's threads, the second's entry reading the first's
results.

    merged = merge_kernels(first, second, feeds={1: 0})
    # second's parameter 1 is first's result 0; merged takes first's
    # parameters, then second's other parameters, and returns first's
    # results, then second's.

Only where every block of the second reads, of the first's results, what
the same block of the first wrote: a row reduction's parts taken apart by
tree_reduction (a softmax's max, then its exp + sum reading the row's max)
over the same rows with the same thread map, each block reducing the same
rows in both (the caller checks that: same_row_blocks). On the CPU target a
block then reads its rows again from its core's caches, not from memory:
the max and the exp + sum of f32[4096,1000] in 0.87x the time of the two
kernels (A/B in one process, bits the same).
"""

from __future__ import annotations

import re

from mlir import ir

from .kernel import BLOCK_ORDER_ATTR, LAUNCH_DIMS_ATTR, EmittedKernel

__all__ = ["merge_kernels", "same_row_blocks"]

# The maps of a kernel over its thread and block ids: which elements and
# rows each thread reads and writes.
_THREAD_MAP = re.compile(r'#xla_gpu\.indexing_map<"\((?:th_x, bl_x|th_x, th_y, th_z, bl_x, '
                         r'bl_y, bl_z)\)[^"]*">')


def same_row_blocks(first: EmittedKernel, second: EmittedKernel) -> bool:
    """Whether the two kernels run the same grid over the same thread maps
    (each thread reading and writing the same rows in both), and no block
    order or in-place result of their own. Kernels without a barrier of
    their own (a warp a row, rows of 512 or less) merge too: the CPU
    target then runs their shuffle trees phase by phase, each tree's lanes
    computed first in a loop over them (softmax(x).max(-1) over rows of 256
    to 512 through xla_gpu.jax.jit, 0.78-0.84x the time of the three
    kernels)."""
    if first.launch != second.launch or first.aliases or second.aliases:
        return False
    texts = (first.text, second.text)
    if any(BLOCK_ORDER_ATTR in t for t in texts):
        return False
    maps = [set(_THREAD_MAP.findall(t)) for t in texts]
    return bool(maps[0]) and maps[0] == maps[1]


def _entry_op(module: ir.Module, name: str) -> ir.Operation:
    for op in module.body.operations:
        if ir.StringAttr(op.attributes["sym_name"]).value == name:
            return op.operation
    raise ValueError(f"no function @{name} in the kernel")


def _renamed(kernel: EmittedKernel, prefix: str) -> tuple[ir.Operation, ir.FunctionType]:
    """A copy of the kernel's module, its functions each renamed with
    `prefix`, the entry private and without its launch attributes; and the
    entry's type. Copied in IR: printing a kernel and parsing it again took
    most of a merge (5-6 ms of a softmax's two merges)."""
    module = kernel.module.operation.clone(ip=False)
    ops = list(module.regions[0].blocks[0].operations)
    names = [ir.StringAttr(op.attributes["sym_name"]).value for op in ops]
    for name in names:
        ir.SymbolTable.replace_all_symbol_uses(name, prefix + name, module)
    entry = None
    for op, name in zip(ops, names):
        op.attributes["sym_name"] = ir.StringAttr.get(prefix + name)
        if name == kernel.entry:
            entry = op.operation
    if entry is None:
        raise ValueError(f"no function @{kernel.entry} in the kernel")
    entry.attributes["sym_visibility"] = ir.StringAttr.get("private")
    for attr in (LAUNCH_DIMS_ATTR, BLOCK_ORDER_ATTR):
        if attr in entry.attributes:
            del entry.attributes[attr]
    func_type = ir.FunctionType(ir.TypeAttr(entry.attributes["function_type"]).value)
    return module, func_type


def _declaration(name: str, func_type: ir.FunctionType) -> str:
    return (f"  func.func private @{name}({_types(func_type.inputs)}) -> "
            f"({_types(func_type.results)})\n")


def _types(types) -> str:
    return ", ".join(str(t) for t in types)


def _lhs(name: str, count: int) -> str:
    """The left-hand side of an op of `count` results named `name`."""
    return f"%{name}" + (f":{count}" if count > 1 else "")


def _values(name: str, count: int) -> list[str]:
    """The results of that op, one by one."""
    return [f"%{name}"] if count == 1 else [f"%{name}#{k}" for k in range(count)]


def _call(callee: str, args: list[str], func_type: ir.FunctionType, result: str) -> str:
    return (f"    {_lhs(result, len(func_type.results))} = func.call @{callee}"
            f"({', '.join(args)}) : ({_types(func_type.inputs)}) -> "
            f"({_types(func_type.results)})\n")


def merge_kernels(first: EmittedKernel, second: EmittedKernel, feeds: dict[int, int],
                  shared: dict[int, int] | None = None,
                  entry: str | None = None) -> EmittedKernel:
    """One kernel running `first`, a barrier, then `second` (in the current
    context), `second`'s parameter j being `first`'s result feeds[j], or
    `first`'s parameter shared[j] (the same array); see the module's
    docstring. Parameters: first's, then second's others; results: first's,
    then second's."""
    shared = shared or {}
    a_module, a_type = _renamed(first, "a_")
    b_module, b_type = _renamed(second, "b_")
    a_in, a_out = len(first.parameters), len(first.results)
    b_in, b_out = len(second.parameters), len(second.results)
    b_own = [j for j in range(b_in) if j not in feeds and j not in shared]
    types_in = [a_type.inputs[k] for k in range(a_in)] + [b_type.inputs[j] for j in b_own]
    types_out = list(a_type.results) + list(b_type.results)
    args = [f"%p{k}" for k in range(len(types_in))]
    outs = [f"%r{k}" for k in range(len(types_out))]
    signature = ", ".join(
        f"{v}: {t} {{xla.slice_index = {k} : i32}}"
        for k, (v, t) in enumerate(zip(args + outs, types_in + types_out)))
    launch = str(_entry_op(first.module, first.entry).attributes[LAUNCH_DIMS_ATTR])
    name = entry or first.entry
    synced = _values("s", a_out)
    body = _call(f"a_{first.entry}", args[:a_in] + outs[:a_out], a_type, "a")
    body += (f"    {_lhs('s', a_out)} = xla_gpu.sync_threads {', '.join(_values('a', a_out))} : "
             f"{_types(a_type.results)}\n")
    own = iter(args[a_in:])
    b_args = [synced[feeds[j]] if j in feeds else args[shared[j]] if j in shared else next(own)
              for j in range(b_in)]
    body += _call(f"b_{second.entry}", b_args + outs[a_out:], b_type, "b")
    results = synced + _values("b", b_out)
    body += f"    return {', '.join(results)} : {_types(types_out)}\n"
    # The entry parsed beside declarations of what it calls, which the
    # kernels' own functions then replace.
    callees = _declaration(f"a_{first.entry}", a_type) + _declaration(f"b_{second.entry}", b_type)
    text = (f"module {{\n{callees}  func.func @{name}({signature}) -> "
            f"({_types(types_out)}) attributes {{{LAUNCH_DIMS_ATTR} = {launch}}} {{\n"
            f"{body}  }}\n}}\n")
    module = ir.Module.parse(text)
    declarations = list(module.body.operations)[:2]
    for op in declarations:
        op.operation.erase()
    merged_entry = list(module.body.operations)[0].operation
    for copy in (a_module, b_module):
        for op in list(copy.regions[0].blocks[0].operations):
            op.operation.move_before(merged_entry)
    parameters = list(first.parameters) + [second.parameters[j] for j in b_own]
    return EmittedKernel(module, name, first.launch, parameters,
                         list(first.results) + list(second.results),
                         shared_memory_bytes=first.shared_memory_bytes +
                         second.shared_memory_bytes)
