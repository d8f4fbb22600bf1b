"""What an emitter hands to every runtime: the kernel's module and the facts
about it that no runtime should rediscover from the IR.

    kernel = emit_kernel(fusion)          # an EmittedKernel
    kernel.launch                         # LaunchDimensions, written once
    CpuKernel(kernel)(x, out)             # the CPU target reads it
    compile_to_ptx(kernel.module)         # the PTX path, the same entry

The launch dimensions are also an attribute of the entry function
(`xla.launch_dims = {block_counts = array<i64: x, y, z>,
thread_counts_per_block = array<i64: x, y, z>}`), so that IR written to a
file and read back (the CPU target, `xla-gpu-opt`) knows its grid even after
optimization removed an unused thread id.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from math import prod

from mlir import ir

from ..hlo import Shape

__all__ = ["BLOCK_LOCAL_ATTR", "BLOCK_LOCAL_DIMS", "BLOCK_ORDER_ATTR", "LAUNCH_DIMS_ATTR",
           "EmittedKernel", "LaunchDimensions", "block_local_arguments", "launch_dims_of"]

LAUNCH_DIMS_ATTR = "xla.launch_dims"
# A result argument's attribute (-xla-gpu-lower-kernel-to-cpu): the bytes
# of it each block writes and reads back alone, at its own offset, kept in
# the block's storage on the CPU target -- the argument's memory is never
# touched. Callers pass a buffer of BLOCK_LOCAL_DIMS (no element) for it.
BLOCK_LOCAL_ATTR = "xla.block_local_bytes"
BLOCK_LOCAL_DIMS = (0,)
# The order the CPU target runs the blocks in (EmitterBase.block_order):
# `xla.block_order = {tiles = array<i64: ...>, order = array<i64: ...>}`.
BLOCK_ORDER_ATTR = "xla.block_order"


@dataclass(frozen=True)
class LaunchDimensions:
    """XLA's LaunchDimensions: blocks of the grid and threads of a block,
    each (x, y, z)."""

    block_counts: tuple[int, int, int] = (1, 1, 1)
    thread_counts_per_block: tuple[int, int, int] = (1, 1, 1)

    def __post_init__(self):
        for name in ("block_counts", "thread_counts_per_block"):
            value = getattr(self, name)
            if len(value) != 3 or any(int(v) < 1 for v in value):
                raise ValueError(f"{name} must be three counts >= 1, got {value}")

    @property
    def num_blocks(self) -> int:
        return prod(self.block_counts)

    @property
    def num_threads_per_block(self) -> int:
        return prod(self.thread_counts_per_block)

    def ranges(self) -> list[tuple[int, int]]:
        """The domain of XLA's kernel maps, (th_x, th_y, th_z, bl_x, bl_y,
        bl_z), each [0, count - 1]."""
        return [(0, n - 1) for n in (*self.thread_counts_per_block, *self.block_counts)]

    def to_attribute(self) -> ir.Attribute:
        return ir.DictAttr.get({
            "block_counts": ir.DenseI64ArrayAttr.get(list(self.block_counts)),
            "thread_counts_per_block": ir.DenseI64ArrayAttr.get(
                list(self.thread_counts_per_block)),
        })

    @classmethod
    def from_attribute(cls, attr: ir.Attribute) -> "LaunchDimensions":
        d = ir.DictAttr(attr)
        return cls(tuple(ir.DenseI64ArrayAttr(d["block_counts"])),
                   tuple(ir.DenseI64ArrayAttr(d["thread_counts_per_block"])))

    def __str__(self) -> str:
        b, t = self.block_counts, self.thread_counts_per_block
        return f"[block: {{{b[0]}, {b[1]}, {b[2]}}}, thread: {{{t[0]}, {t[1]}, {t[2]}}}]"


def launch_dims_of(func_op: ir.Operation) -> LaunchDimensions | None:
    """The launch dimensions recorded on an entry function, if any."""
    if LAUNCH_DIMS_ATTR not in func_op.attributes:
        return None
    return LaunchDimensions.from_attribute(func_op.attributes[LAUNCH_DIMS_ATTR])


def block_local_arguments(func_op) -> set[int]:
    """The positions of an entry function's arguments marked
    BLOCK_LOCAL_ATTR."""
    if "arg_attrs" not in func_op.attributes:
        return set()
    return {i for i, attrs in enumerate(ir.ArrayAttr(func_op.attributes["arg_attrs"]))
            if BLOCK_LOCAL_ATTR in ir.DictAttr(attrs)}


@dataclass(eq=False)
class EmittedKernel:
    """One fusion's kernel: its module (subgraph functions and the entry),
    the entry's name, and the facts every runtime needs."""

    module: ir.Module
    entry: str
    launch: LaunchDimensions
    parameters: list[Shape]
    results: list[Shape]
    # Output k written in place into parameter aliases[k] (the in-place
    # emitters); the entry's `xla.slice_index` attributes say the same.
    aliases: dict[int, int] = field(default_factory=dict)
    shared_memory_bytes: int = 0

    @property
    def text(self) -> str:
        return str(self.module)

    def __str__(self) -> str:
        return self.text
