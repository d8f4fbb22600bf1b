"""One of our kernels as a jax operation: an `EmittedKernel` dispatched
through `jax.ffi.ffi_call` to the project's FFI handlers.

    call(kernel, x, y)                  # -> the kernel's results (jax arrays)
    prepare(kernel, "cpu")(x, y)        # the same, the compilation kept

The call's attributes make it self-contained (ffi/kernel_call.h): the
kernel's content hash, its text (MLIR for the CPU target, PTX for CUDA), the
launch dimensions and the typed signature the handler verifies every buffer
against; so a serialized program runs in another process.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field

import jax
import numpy as np
from mlir import ir
from jax._src.hashable_array import HashableArray
from jax._src.lib import xla_client

from .. import pipelines
from ..emitters.device import DEFAULT_DEVICE, DeviceDescription
from ..emitters.kernel import EmittedKernel
from ..hlo import Shape
from ..runtime.cpu import CpuKernel
from . import _ffi

__all__ = ["KernelCall", "KernelChain", "Target", "call", "call_from_json", "kernel_from_mlir",
           "prepare"]


class Target:
    """ffi/kernel_call.h's Target enum."""

    CPU = 0
    CUDA = 1


def _dtype_code(shape: Shape) -> int:
    """XLA's PrimitiveType number of an element type (the FFI's DataType
    uses the same numbers)."""
    return xla_client.PrimitiveType[shape.element_type.name.upper()].value


def _array(values, dtype) -> HashableArray:
    """A dense array attribute inside a struct attribute (ffi_call hashes
    its attributes; a bare numpy array in a dict would not hash)."""
    return HashableArray(np.array(values, dtype))


def _signature(params: list[Shape], num_results: int, aliases: dict[int, int]) -> dict:
    return {
        "dtypes": _array([_dtype_code(s) for s in params], np.int32),
        "ranks": _array([s.rank for s in params], np.int64),
        "dims": _array([d for s in params for d in s.dims], np.int64),
        "aliases": _array([aliases.get(i, -1) for i in range(len(params))], np.int64),
        "num_results": np.int64(num_results),
    }


@dataclass(frozen=True, eq=False)
class KernelCall:
    """What calling one compiled kernel needs: the custom-call target, its
    attributes, the results' shapes and the in-place pairs."""

    target: str
    attributes: dict
    result_shapes: tuple[jax.ShapeDtypeStruct, ...]
    # Input index -> result index (an in-place result and its operand).
    input_output_aliases: dict[int, int] = field(default_factory=dict)
    kernel_hash: str = ""
    # Results that are scratch memory (seed 003's tuple outputs as temporary
    # buffers): the kernel gets them, the caller does not.
    scratch: tuple[int, ...] = ()

    def to_json(self) -> str:
        """The call as JSON (the disk cache): everything but compiled code."""
        return json.dumps(self._to_dict())

    @classmethod
    def from_json(cls, text: str) -> "KernelCall":
        """A call written by to_json; a CPU kernel is compiled (from the MLIR
        it carries, in the background) and registered with the handler."""
        return cls._from_dict(json.loads(text))

    def _to_dict(self) -> dict:
        def encode(v):
            if isinstance(v, HashableArray):
                return {"array": v.val.tolist(), "dtype": str(v.val.dtype)}
            if isinstance(v, np.generic):
                return {"scalar": v.item(), "dtype": str(v.dtype)}
            if isinstance(v, dict):
                return {"dict": {k: encode(x) for k, x in v.items()}}
            return v

        return {
            "target": self.target, "kernel_hash": self.kernel_hash,
            "attributes": encode(self.attributes),
            "result_shapes": [[list(s.shape), str(s.dtype)] for s in self.result_shapes],
            "input_output_aliases": [[i, o] for i, o in self.input_output_aliases.items()],
            "scratch": list(self.scratch)}

    @classmethod
    def _from_dict(cls, d: dict) -> "KernelCall":
        def decode(v):
            if isinstance(v, dict) and "array" in v:
                return _array(v["array"], np.dtype(v["dtype"]))
            if isinstance(v, dict) and "scalar" in v:
                return np.dtype(v["dtype"]).type(v["scalar"])
            if isinstance(v, dict) and "dict" in v:
                return {k: decode(x) for k, x in v["dict"].items()}
            return v

        attributes = decode(d["attributes"])
        if d["target"] == _ffi.CPU_TARGET:
            _ffi.compile_cpu_kernel_soon(d["kernel_hash"], attributes["kernel"])
        shapes = tuple(jax.ShapeDtypeStruct(tuple(dims), _dtype(name))
                       for dims, name in d["result_shapes"])
        return cls(d["target"], attributes, shapes,
                   {i: o for i, o in d["input_output_aliases"]}, d["kernel_hash"],
                   tuple(d.get("scratch", ())))

    def __call__(self, *arrays):
        # `sequential`: a kernel is compiled for one shape, so a batch runs
        # the kernel once an element.
        out = jax.ffi.ffi_call(self.target, self.result_shapes, vmap_method="sequential",
                               input_output_aliases=self.input_output_aliases or None)(
                                   *arrays, **self.attributes)
        return [o for k, o in enumerate(out) if k not in self.scratch]


@dataclass(frozen=True, eq=False)
class KernelChain:
    """Kernels run one after another as one function: a reduction split in
    parts (emitters/tree_reduction.py), each part a kernel. `sources[i]`
    are the operands of `calls[i]`: k >= 0 the function's argument k, -j
    the (one) result of `calls[j - 1]`. The function's results are the last
    call's."""

    calls: tuple[KernelCall, ...]
    sources: tuple[tuple[int, ...], ...]

    def to_json(self) -> str:
        return json.dumps({"chain": [c._to_dict() for c in self.calls],
                           "sources": [list(s) for s in self.sources]})

    @classmethod
    def from_json(cls, text: str) -> "KernelChain":
        return cls._from_dict(json.loads(text))

    @classmethod
    def _from_dict(cls, d: dict) -> "KernelChain":
        return cls(tuple(KernelCall._from_dict(c) for c in d["chain"]),
                   tuple(tuple(s) for s in d["sources"]))

    def __call__(self, *arrays):
        results: list = []
        for call, sources in zip(self.calls, self.sources):
            out = call(*[arrays[k] if k >= 0 else results[-k - 1] for k in sources])
            results.append(out[0])
        return out


def call_from_json(text: str) -> "KernelCall | KernelChain":
    """A KernelCall's or a KernelChain's to_json, read back."""
    d = json.loads(text)
    return (KernelChain if "chain" in d else KernelCall)._from_dict(d)


def _dtype(name: str) -> np.dtype:
    """A numpy dtype by name, ml_dtypes' (bfloat16, float8_*, int4) too."""
    import ml_dtypes  # noqa: F401  (registers its names with numpy)
    return np.dtype(getattr(ml_dtypes, name, name))


def _launch(kernel) -> dict:
    return {"block_counts": _array(kernel.launch.block_counts, np.int64),
            "thread_counts_per_block": _array(kernel.launch.thread_counts_per_block, np.int64)}


def prepare(kernel: EmittedKernel, platform: str = "cpu",
            device: DeviceDescription = DEFAULT_DEVICE, scratch: tuple[int, ...] = (),
            background: bool = False) -> KernelCall:
    """Compiles `kernel` for `platform` ("cpu": the CPU target, JIT-compiled
    and registered with the handler; "cuda": PTX for `device`) and returns
    the call. Results listed in `scratch` are temporary memory of the
    kernel: passed to it, never returned. With `background`, a CPU kernel
    is parsed here and compiled on a thread of the plugin's while the
    caller goes on (jax compiling the program around the call); XLA's
    instantiation of the call waits for it, and a compile error is that
    call's error."""
    if any(not 0 <= k < len(kernel.results) for k in scratch):
        raise ValueError(f"scratch results {scratch} are not results of the kernel "
                         f"({len(kernel.results)})")
    params = list(kernel.parameters) + list(kernel.results)
    num_inputs = len(kernel.parameters)
    result_shapes = tuple(jax.ShapeDtypeStruct(s.dims, s.element_type.dtype)
                          for s in kernel.results)
    aliases = {num_inputs + k: v for k, v in kernel.aliases.items()}
    if platform == "cpu":
        text, entry = canonical_names(kernel)
        key = _ffi.content_hash(text)
        if background:
            _ffi.compile_cpu_kernel_soon(key, text, entry)
        else:
            _ffi.register_cpu_kernel(key, CpuKernel(text, entry=entry))
        # The handler checks both against the compiled kernel's.
        attributes = {"kernel_hash": key, "kernel": text, "launch": _launch(kernel),
                      "target": np.int32(Target.CPU)}
        target = _ffi.CPU_TARGET
    elif platform == "cuda":
        # The PTX path lowers the module in place: lower a copy.
        with kernel.module.context:
            copy = ir.Module.parse(kernel.text)
        text = pipelines.compile_to_ptx(copy, pipelines.PipelineOptions.for_device(device))
        key = _ffi.content_hash(text)
        attributes = {"kernel_hash": key, "kernel": text, "entry": kernel.entry,
                      "launch": _launch(kernel), "shared_memory_bytes": np.int64(0),
                      "target": np.int32(Target.CUDA)}
        target = _ffi.CUDA_TARGET
    else:
        raise ValueError(f"platform must be 'cpu' or 'cuda', got {platform!r}")
    attributes["signature"] = _signature(params, len(kernel.results), aliases)
    # XLA aliases an input and a result of one type only: a result in
    # place of an input of another shape (an in-place dynamic-update-slice
    # whose output is a bitcast of it) gets a buffer of its own, which the
    # handler fills with the input's bytes before the kernel updates it
    # (the signature still says they are one: PointerSlots' copy).
    io_aliases = {v: k - num_inputs for k, v in aliases.items()
                  if k >= num_inputs and params[k].dims == params[v].dims and
                  params[k].element_type == params[v].element_type}
    if any(k in io_aliases.values() for k in scratch):
        raise ValueError("a scratch result cannot be written in place into an input")
    return KernelCall(target, attributes, result_shapes, io_aliases, key, tuple(scratch))


# A symbol reference's name ends before any other character (MLIR's
# bare identifiers: letters, digits, `_$.-`).
_NAME_END = r"(?![\w$.-])"


def canonical_names(kernel: EmittedKernel) -> tuple[str, str]:
    """The kernel's text with its functions named k0, k1, ... in the order
    they are defined, and its entry's new name: kernels that differ only in the
    names of their fusions (a model's layers, one after the other) are
    then one text, one hash and one compile. A 2-layer transformer's
    training step through xla_gpu.jax.jit emitted 199 kernels, 82 of them
    different."""
    text = kernel.text
    # Definitions only: a declaration's name is what the JIT resolves it by
    # (a helper of the host's).
    names = re.findall(r"^\s*func\.func (?:private )?@([\w$.-]+)\(.*\{$", text, re.MULTILINE)
    if not names or kernel.entry not in names:
        return text, kernel.entry
    renamed = {name: f"k{i}" for i, name in enumerate(names)}
    pattern = re.compile("@(" + "|".join(map(re.escape, sorted(names, key=len, reverse=True)))
                         + ")" + _NAME_END)
    return pattern.sub(lambda m: "@" + renamed[m.group(1)], text), renamed[kernel.entry]


def call(kernel: EmittedKernel, *arrays, scratch: tuple[int, ...] = ()):
    """Runs `kernel` on jax arrays (under jit too) on the default backend;
    returns its results but the `scratch` ones, a list."""
    platform = "cuda" if jax.default_backend() == "gpu" else "cpu"
    return prepare(kernel, platform, scratch=scratch)(*arrays)


def kernel_from_mlir(text: str, entry: str | None = None) -> EmittedKernel:
    """An EmittedKernel from kernel IR written or emitted elsewhere (the
    form the emitters produce: an entry over tensors, inputs then outputs,
    the outputs returned; launch dimensions from `xla.launch_dims` or the
    ids' `xla.range`s; in-place outputs by `xla.slice_index`). Integer
    element types are signless in MLIR: they are taken as signed. Needs a
    current context."""
    from ..hlo.types import BY_MLIR
    from ..runtime.cpu import _aliases, _entry_function, _launch_dims

    module = pipelines.parse_module(text)
    func = _entry_function(module, entry)
    name = ir.StringAttr(func.attributes["sym_name"]).value
    ftype = ir.FunctionType(ir.TypeAttr(func.attributes["function_type"]).value)
    shapes = []
    for i, t in enumerate(ftype.inputs):
        t = ir.RankedTensorType(t) if isinstance(t, ir.RankedTensorType) else None
        etype = BY_MLIR.get(str(t.element_type)) if t is not None else None
        if etype is None or not t.has_static_shape:
            raise ValueError(f"parameter {i} of @{name} is not a static tensor of a "
                             "supported element type")
        shapes.append(Shape(etype, tuple(t.shape)))
    num_inputs = len(shapes) - len(ftype.results)
    aliases = {i - num_inputs: v for i, v in _aliases(func).items() if i >= num_inputs}
    return EmittedKernel(module, name, _launch_dims(func), shapes[:num_inputs],
                         shapes[num_inputs:], aliases=aliases)
