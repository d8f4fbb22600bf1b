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
from mlir.dialects import func

from ..dialects import xla_gpu
from ..pipelines import verify

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


def _function(body: ir.Block, name: str) -> ir.Operation:
    """The function @`name` of a module's `body`."""
    for op in body.operations:
        if ir.StringAttr(op.attributes["sym_name"]).value == name:
            return op.operation
    raise ValueError(f"no function @{name} in the kernel")


def _renamed(kernel: EmittedKernel, prefix: str) -> tuple[ir.Operation, ir.FunctionType]:
    """A copy of the kernel's module, its functions each renamed with
    `prefix`, the entry private and without its launch attributes; and the
    entry's type. Copied in IR: printing a kernel and parsing it again took
    most of a merge (5-6 ms of a softmax's two merges)."""
    module = kernel.module.operation.clone(ip=False)
    body = module.regions[0].blocks[0]
    names = [ir.StringAttr(op.attributes["sym_name"]).value for op in body.operations]
    for name in names:
        ir.SymbolTable.replace_all_symbol_uses(name, prefix + name, module)
    for op, name in zip(body.operations, names):
        op.attributes["sym_name"] = ir.StringAttr.get(prefix + name)
    entry = _function(body, prefix + kernel.entry)
    entry.attributes["sym_visibility"] = ir.StringAttr.get("private")
    for attr in (LAUNCH_DIMS_ATTR, BLOCK_ORDER_ATTR):
        if attr in entry.attributes:
            del entry.attributes[attr]
    func_type = ir.FunctionType(ir.TypeAttr(entry.attributes["function_type"]).value)
    return module, func_type


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
    a_in, b_in = len(first.parameters), len(second.parameters)
    a_out = len(a_type.results)
    b_own = [j for j in range(b_in) if j not in feeds and j not in shared]
    types_in = [a_type.inputs[k] for k in range(a_in)] + [b_type.inputs[j] for j in b_own]
    types_out = list(a_type.results) + list(b_type.results)
    name = entry or first.entry
    first_entry = _function(first.module.body, first.entry)
    with first_entry.location:  # the merged entry is where the first kernel's was
        module = ir.Module.create()
        with ir.InsertionPoint(module.body):
            merged = func.FuncOp(name, ir.FunctionType.get(types_in + types_out, types_out))
        merged.attributes[LAUNCH_DIMS_ATTR] = first_entry.attributes[LAUNCH_DIMS_ATTR]
        i32 = ir.IntegerType.get_signless(32)
        merged.arg_attrs = ir.ArrayAttr.get([
            ir.DictAttr.get({"xla.slice_index": ir.IntegerAttr.get(i32, k)})
            for k in range(len(types_in) + len(types_out))])
        with ir.InsertionPoint(merged.add_entry_block()):
            values = list(merged.arguments)
            args, outs = values[:len(types_in)], values[len(types_in):]
            a = func.CallOp(list(a_type.results), f"a_{first.entry}", args[:a_in] + outs[:a_out])
            synced = list(xla_gpu.SyncThreadsOp(list(a.results)).results)
            own = iter(args[a_in:])
            b_args = [synced[feeds[j]] if j in feeds else args[shared[j]] if j in shared
                      else next(own) for j in range(b_in)]
            b = func.CallOp(list(b_type.results), f"b_{second.entry}", b_args + outs[a_out:])
            func.ReturnOp(synced + list(b.results))
    # The kernels' own functions before the entry, as they were emitted.
    for copy in (a_module, b_module):
        for op in list(copy.regions[0].blocks[0].operations):
            op.operation.move_before(merged.operation)
    verify(module)
    parameters = list(first.parameters) + [second.parameters[j] for j in b_own]
    return EmittedKernel(module, name, first.launch, parameters,
                         list(first.results) + list(second.results),
                         shared_memory_bytes=first.shared_memory_bytes +
                         second.shared_memory_bytes)
