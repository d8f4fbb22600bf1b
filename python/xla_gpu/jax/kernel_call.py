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

from dataclasses import dataclass, field

import jax
import numpy as np
from jax._src.hashable_array import HashableArray
from jax._src.lib import xla_client

from .. import pipelines
from ..emitters.device import DEFAULT_DEVICE, DeviceDescription
from ..emitters.kernel import EmittedKernel
from ..hlo import Shape
from ..runtime.cpu import CpuKernel
from . import _ffi

__all__ = ["KernelCall", "call", "prepare", "Target"]


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

    def __call__(self, *arrays):
        # `sequential`: a kernel is compiled for one shape, so a batch runs
        # the kernel once an element.
        out = jax.ffi.ffi_call(self.target, self.result_shapes, vmap_method="sequential",
                               input_output_aliases=self.input_output_aliases or None)(
                                   *arrays, **self.attributes)
        return list(out)


def _launch(kernel) -> dict:
    return {"block_counts": _array(kernel.launch.block_counts, np.int64),
            "thread_counts_per_block": _array(kernel.launch.thread_counts_per_block, np.int64)}


def prepare(kernel: EmittedKernel, platform: str = "cpu",
            device: DeviceDescription = DEFAULT_DEVICE) -> KernelCall:
    """Compiles `kernel` for `platform` ("cpu": the CPU target, JIT-compiled
    and registered with the handler; "cuda": PTX for `device`) and returns
    the call."""
    params = list(kernel.parameters) + list(kernel.results)
    num_inputs = len(kernel.parameters)
    result_shapes = tuple(jax.ShapeDtypeStruct(s.dims, s.element_type.dtype)
                          for s in kernel.results)
    if platform == "cpu":
        text = kernel.text
        key = _ffi.content_hash(text)
        compiled = CpuKernel(kernel)
        _ffi.register_cpu_kernel(key, compiled)
        aliases = dict(compiled.aliases)
        attributes = {"kernel_hash": key, "kernel": text, "launch": _launch(compiled),
                      "target": np.int32(Target.CPU)}
        target = _ffi.CPU_TARGET
    elif platform == "cuda":
        # The PTX path lowers the module in place: lower a copy.
        from mlir import ir
        with kernel.module.context:
            copy = ir.Module.parse(kernel.text)
        text = pipelines.compile_to_ptx(copy, pipelines.PipelineOptions.for_device(device))
        key = _ffi.content_hash(text)
        aliases = {num_inputs + k: v for k, v in kernel.aliases.items()}
        attributes = {"kernel_hash": key, "kernel": text, "entry": kernel.entry,
                      "launch": _launch(kernel), "shared_memory_bytes": np.int64(0),
                      "target": np.int32(Target.CUDA)}
        target = _ffi.CUDA_TARGET
    else:
        raise ValueError(f"platform must be 'cpu' or 'cuda', got {platform!r}")
    attributes["signature"] = _signature(params, len(kernel.results), aliases)
    io_aliases = {v: k - num_inputs for k, v in aliases.items() if k >= num_inputs}
    return KernelCall(target, attributes, result_shapes, io_aliases, key)


def call(kernel: EmittedKernel, *arrays):
    """Runs `kernel` on jax arrays (under jit too) on the default backend;
    returns its results, a list."""
    platform = "cuda" if jax.default_backend() == "gpu" else "cpu"
    return prepare(kernel, platform)(*arrays)
