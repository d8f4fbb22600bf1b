"""XLA as the numerical reference: run HLO text on XLA:CPU through jaxlib
(hlo_module_from_text -> StableHLO -> compile -> execute)."""

from __future__ import annotations

import dataclasses
import os
import re
from contextlib import contextmanager
from typing import Iterable, Iterator

import numpy as np

from .hlo.module import Attribute, HloComputation, HloInstruction
from .hlo.proto import proto_field
from .hlo.shape import Shape

__all__ = ["XlaCpuExecutable", "as_xla_takes_it", "division_xla_cannot_fold",
           "excess_precision_allowed", "kernel_row_major", "row_major", "run_with_xla"]


def _all_row_major(shapes) -> bool:
    return all(s.is_array and s.has_default_layout for s in shapes)


def row_major(inst: HloInstruction) -> bool:
    """`inst` and its operands are arrays in the default (row-major) layout."""
    return _all_row_major([inst.shape, *(o.shape for o in inst.operands)])


def kernel_row_major(inst: HloInstruction) -> bool:
    """Every array a kernel of `inst` (a fusion) reads or writes -- each
    operand, each element of a tuple result -- is row-major: what a call
    with XLA's default layouts (a custom call, a bundle) hands it."""
    return _all_row_major([*inst.shape.leaves(), *(o.shape for o in inst.operands)])


def _layout_constrained(inst: HloInstruction) -> bool:
    """Whether `inst` is a custom call whose operands' layouts are part of
    its contract (operand_layout_constraints: LAPACK's column-major
    matrices), and so is its result's layout: without it XLA took the
    result as row-major and read jax.random.orthogonal's Q, which LAPACK
    wrote column-major in place of its operand, as values of ~1e13."""
    return inst.opcode == "custom-call" and "operand_layout_constraints" in inst.attributes


def _without_layouts(shape: Shape) -> Shape:
    if shape.is_tuple:
        return dataclasses.replace(
            shape, tuple_shapes=tuple(_without_layouts(s) for s in shape.tuple_shapes))
    return dataclasses.replace(shape, layout=None)


def _logical_bitcast(inst: HloInstruction) -> list[HloInstruction]:
    """A bitcast between layouts as XLA takes it before layout assignment:
    the operand in its physical order (a transpose), reshaped to the
    result's physical shape, transposed to the result's logical order; the
    bitcast itself becomes that last transpose. Returns the two new
    instructions (to be placed before it)."""
    src, dst = inst.operands[0].shape, inst.shape
    src_order = list(reversed(src.minor_to_major))    # major to minor
    dst_order = list(reversed(dst.minor_to_major))

    def dims_attr(perm):
        return {"dimensions": Attribute("dimensions", "{" + ",".join(map(str, perm)) + "}",
                                        list(perm))}

    physical = HloInstruction(
        f"{inst.name}.source_physical", "transpose",
        Shape(src.element_type, tuple(src.dims[d] for d in src_order)),
        operands=[inst.operands[0]], attributes=dims_attr(src_order), parent=inst.parent)
    reshaped = HloInstruction(
        f"{inst.name}.result_physical", "reshape",
        Shape(dst.element_type, tuple(dst.dims[d] for d in dst_order)),
        operands=[physical], parent=inst.parent)
    inst.opcode = "transpose"
    inst.operands = [reshaped]
    inst.attributes = dims_attr([dst_order.index(i) for i in range(len(dst.dims))])
    return [physical, reshaped]


def _retyping_bitcast(inst: HloInstruction) -> list[HloInstruction]:
    """A row-major bitcast (now a reshape) that also changes the element
    type, of one width (XLA:CPU's sort comparators bitcast f32[] to s32[]):
    a reshape keeps its element type, so it becomes a bitcast-convert, of
    a reshape where the dimensions change too; returns the instruction
    added before it (none where the type is the same)."""
    src, dst = inst.operands[0].shape, inst.shape
    if not (src.is_array and dst.is_array) or src.element_type == dst.element_type or \
            src.element_type.bits != dst.element_type.bits:
        return []
    inst.opcode = "bitcast-convert"
    if src.dims == dst.dims:
        return []
    reshaped = HloInstruction(f"{inst.name}.reshaped", "reshape",
                              Shape(src.element_type, dst.dims), operands=[inst.operands[0]],
                              parent=inst.parent)
    inst.operands = [reshaped]
    return [reshaped]


@contextmanager
def as_xla_takes_it(computations: Iterable[HloComputation]) -> Iterator[None]:
    """For the duration, the instructions of `computations` are what XLA's
    compile pipeline accepts as input: fusions become calls (its simplifier
    can rewrite a given fusion's shape but not its computation), bitcasts
    become reshapes (row-major ones; bitcast-converts where the element
    type changes too) or transpose-reshape-transpose (those
    that change the layout: XLA takes bitcasts only after its layout
    assignment), layouts go (every value is then the logical array it
    stands for), and metadata goes (its stack frames point into tables the
    text may not carry)."""
    computations = list(computations)
    insts = [i for c in computations for i in c.instructions]
    saved = [(i, i.opcode, i.attributes, i.operands, i.shape) for i in insts]
    saved_lists = [(c, list(c.instructions)) for c in computations]
    try:
        for inst in insts:
            attributes = {k: a for k, a in inst.attributes.items() if k != "metadata"}
            added = []  # instructions to place before `inst`
            if inst.opcode == "fusion":
                inst.opcode = "call"
                attributes = {"to_apply": Attribute("to_apply", inst.attributes["calls"].text)}
            elif inst.opcode == "bitcast" and row_major(inst):
                inst.opcode = "reshape"
                added = _retyping_bitcast(inst)
            inst.attributes = attributes
            if inst.opcode == "bitcast" and inst.shape.is_array and \
                    inst.operands[0].shape.is_array:
                added = _logical_bitcast(inst)
            if added:
                comp = inst.parent
                at = next(k for k, i in enumerate(comp.instructions) if i is inst)
                comp.instructions[at:at] = added
        for c in computations:
            for inst in c.instructions:
                if not _layout_constrained(inst):
                    inst.shape = _without_layouts(inst.shape)
        yield
    finally:
        for inst, opcode, attributes, operands, shape in saved:
            inst.opcode, inst.attributes, inst.operands, inst.shape = (
                opcode, attributes, operands, shape)
        for c, instructions in saved_lists:
            c.instructions = instructions


def _round_as_the_hlo_says() -> None:
    """Turns off XLA's excess precision (read from XLA_FLAGS when the
    backend starts): with it XLA:CPU computes bf16 ops in f32 and drops the
    f32 -> bf16 -> f32 round trips, so `convert(bf16 add)` would be the
    unrounded f32 sum. A fusion handed to an emitter means what it says.
    A flag the user set explicitly is kept."""
    flags = os.environ.get("XLA_FLAGS", "")
    if "xla_allow_excess_precision" not in flags:
        os.environ["XLA_FLAGS"] = f"{flags} --xla_allow_excess_precision=false".strip()


# CompileOptionsProto.executable_build_options (3) ->
# ExecutableBuildOptionsProto.debug_options (3) ->
# DebugOptions.xla_allow_excess_precision (122).
_EXCESS_PRECISION_PATH = (3, 3, 122)


def xla_options_in_effect() -> bytes:
    """XLA's default compile options, serialized: its DebugOptions as it
    parsed them from XLA_FLAGS. XLA reads XLA_FLAGS once, at its first
    compile (or here, where nothing has compiled yet): what every compile
    of the process uses, jax's included, whatever XLA_FLAGS says later."""
    from jax._src.lib import xla_client as xc

    return xc.CompileOptions().SerializeAsString()


def excess_precision_allowed() -> bool:
    """Whether this process's XLA allows excess precision
    (`--xla_allow_excess_precision`, true unless XLA_FLAGS said false when
    XLA read it). jaxlib's DebugOptions does not expose the field; the
    serialized options hold it."""
    message = xla_options_in_effect()
    for number in _EXCESS_PRECISION_PATH:
        message = proto_field(message, number) if isinstance(message, bytes) else None
    return message != 0  # absent: the default, true


_PARSE_WITH_XLA = ("import sys\n"
                   "from jax._src.lib import xla_client as xc\n"
                   "xc.hlo.hlo_module_from_text(sys.stdin.read())\n")


def xla_parser_error(hlo_text: str) -> str | None:
    """What XLA's HLO parser says of `hlo_text`, or None when it takes it.
    Run in a child process: on some malformed modules (a `tuple` whose shape
    is not its operands', `replica-id` of another type) XLA's parser aborts
    or dies of SIGSEGV instead of returning an error."""
    import signal
    import subprocess
    import sys

    r = subprocess.run([sys.executable, "-c", _PARSE_WITH_XLA], input=hlo_text,
                       capture_output=True, text=True)
    if r.returncode == 0:
        return None
    if r.returncode < 0:
        return (f"XLA's HLO parser crashed ({signal.Signals(-r.returncode).name}) on the "
                "module: it is malformed in a way the checks here do not catch")
    # XLA's message: "... was parsing L:C: error: WHAT", the source line and
    # a caret under column C (the last line: a caret alone says nothing).
    lines = [line for line in r.stderr.strip().splitlines() if line.strip()]
    for i, line in enumerate(lines):
        found = re.search(r"(\d+:\d+: error: .*)", line)
        if found:
            source = lines[i + 1].strip() if i + 1 < len(lines) else ""
            return f"XLA's HLO parser: {found.group(1)}" + (f" (in '{source}')" if source else "")
    return lines[-1] if lines else f"XLA's HLO parser failed (exit status {r.returncode})"


# What XLA's compile folds a constant through as it is.
_FOLDED_THROUGH = frozenset({"broadcast", "reshape", "bitcast", "copy", "transpose", "slice",
                             "reverse"})


def _folded_constant(inst: HloInstruction) -> np.ndarray | None:
    """The values of the constant `inst` is (through _FOLDED_THROUGH ops),
    or None where it is none or its literal is elided."""
    while inst.opcode in _FOLDED_THROUGH and inst.operands:
        inst = inst.operands[0]
    if inst.opcode != "constant" or inst.literal is None:
        return None
    return inst.literal.value


def division_xla_cannot_fold(computations: Iterable[HloComputation]) -> HloInstruction | None:
    """An integer divide or remainder of two constants (through broadcasts,
    reshapes and the like) whose divisor holds a zero, or None. XLA:CPU's
    compile (jaxlib 0.10.2) dies of SIGFPE on it, also with every HLO pass
    off (it is folded on the way in, dividing as the machine does), where
    XLA's code at run time -- and our kernels -- give x / 0 = -1 and
    x % 0 = x."""
    for comp in computations:
        for inst in comp.instructions:
            if inst.opcode not in ("divide", "remainder") or len(inst.operands) != 2:
                continue
            etype = inst.shape.element_type
            if etype is None or etype.is_float or etype.is_complex:
                continue
            dividend, divisor = (_folded_constant(o) for o in inst.operands)
            if dividend is not None and divisor is not None and not np.all(divisor):
                return inst
    return None


# XLA:CPU's flags that hand fusions to its libraries (YNNPACK reductions,
# dots and convolutions; XNNPACK) rather than generate their code.
_LIBRARY_FLAGS_OFF = (("xla_cpu_experimental_ynn_fusion_type", ""), ("xla_cpu_use_xnnpack", False))


class XlaCpuExecutable:
    """HLO text compiled by XLA:CPU (once); `run` executes it. With
    `library_fusions=False`, XLA:CPU generates the code of every fusion
    itself: by default it calls YNNPACK for reductions (a `__ynn_fusion`),
    whose compile is no code generation at all."""

    def __init__(self, hlo_text: str, library_fusions: bool = True):
        _round_as_the_hlo_says()
        from jax._src import xla_bridge
        from jax._src.lib import xla_client as xc

        module = xc.hlo.hlo_module_from_text(hlo_text)
        stablehlo = xc._xla.mlir.hlo_to_stablehlo(module.as_serialized_hlo_module_proto())
        client = xla_bridge.get_backend("cpu")
        self.device = client.devices()[0]
        options = xc.CompileOptions()
        if not library_fusions:
            options.env_option_overrides = list(_LIBRARY_FLAGS_OFF)
        self.executable = client.compile_and_load(stablehlo, xc.DeviceList((self.device,)),
                                                  options)

    @classmethod
    def of(cls, executable) -> "XlaCpuExecutable":
        """An executable XLA:CPU has compiled and loaded already (one that
        jax deserialized: a `LoadedExecutable`), as this class's."""
        self = cls.__new__(cls)
        self.device = executable.local_devices()[0]
        self.executable = executable
        return self

    def library_fusions(self) -> int:
        """How many fusions of XLA's optimized module call a library
        (kCustom fusions: YNNPACK's, XNNPACK's)."""
        return sum(m.to_string().count("kind=kCustom") for m in self.executable.hlo_modules())

    def put(self, args: list[np.ndarray]) -> list:
        """The arguments as device buffers (to time `execute` alone)."""
        import jax
        # 64-bit arrays stay 64-bit (jax would make f64 f32 by default).
        with jax.enable_x64(True):
            return [jax.device_put(a, self.device) for a in args]

    def execute(self, buffers: list) -> list:
        """Runs on device buffers; waits for the results."""
        results = self.executable.execute_sharded(buffers).disassemble_into_single_device_arrays()
        outputs = [r[0] for r in results]
        for o in outputs:
            o.block_until_ready()
        return outputs

    def run(self, args: list[np.ndarray]) -> list[np.ndarray]:
        """The outputs (the elements of a tuple result, or the one result)."""
        return [np.asarray(o) for o in self.execute(self.put(args))]


def run_with_xla(hlo_text: str, args: list[np.ndarray]) -> list[np.ndarray]:
    """Runs the entry computation of `hlo_text` on XLA:CPU; returns the
    outputs (the elements of a tuple result, or the one result)."""
    return XlaCpuExecutable(hlo_text).run(args)
