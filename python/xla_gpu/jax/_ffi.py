"""The XLA FFI handlers (ffi/, libxla_gpu_ffi.so) as jax sees them: the
custom-call targets registered with jax, the process-wide CPU kernel
registry they look kernels up in, and the compiler the CPU handler calls for
a kernel it has not seen (a program deserialized in a fresh process).

Importing this module registers everything; it is idempotent.
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import re
import threading
from pathlib import Path

import jax

from .. import _capi
from ..runtime.cpu import CpuKernel, StartedCompile, start_compile

__all__ = ["CPU_TARGET", "CUDA_TARGET", "compile_cpu_kernel_soon", "cpu_kernel_count",
           "library", "register_cpu_kernel"]

CPU_TARGET = "xla_gpu_cpu_kernel"
CUDA_TARGET = "xla_gpu_cuda_kernel"
CPU_STATE_TYPE = "xla_gpu_cpu_call_state"

_LIBRARY_PATH = Path(__file__).resolve().parent.parent / "_mlir_libs" / "libxla_gpu_ffi.so"

_COMPILE_FN = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_int64, ctypes.c_void_p,
                               ctypes.c_int64, ctypes.c_void_p, ctypes.c_int64)
_lock = threading.Lock()
_library: ctypes.CDLL | None = None
# Compiled kernels stay alive (their code is what the registry points at).
_compiled: dict[str, CpuKernel] = {}
# Kernels whose compile compile_cpu_kernel_soon started, by hash, until
# they are registered.
_pending: dict[str, StartedCompile] = {}


def content_hash(text: str) -> str:
    """The hash a kernel is known by: of its text (MLIR or PTX)."""
    return hashlib.sha256(text.encode()).hexdigest()


def library() -> ctypes.CDLL:
    """libxla_gpu_ffi.so, loaded and registered with jax once."""
    global _library
    with _lock:
        if _library is None:
            if not _LIBRARY_PATH.exists():
                raise RuntimeError(f"{_LIBRARY_PATH} is missing: run `make build` first")
            lib = ctypes.CDLL(str(_LIBRARY_PATH))
            lib.XlaGpuFfiRegisterCpuKernel.restype = ctypes.c_int
            lib.XlaGpuFfiRegisterCpuKernel.argtypes = [
                ctypes.c_char_p, ctypes.c_int64, ctypes.c_void_p, ctypes.c_int64,
                *[ctypes.POINTER(ctypes.c_int64)] * 4,
                ctypes.c_int64, ctypes.c_int64, ctypes.c_int64]
            lib.XlaGpuFfiSetCpuCompiler.argtypes = [_COMPILE_FN]
            lib.XlaGpuFfiNumCpuKernels.restype = ctypes.c_int64
            for fn in (lib.XlaGpuCpuCallStateTypeId, lib.XlaGpuCpuCallStateTypeInfo):
                fn.restype = ctypes.c_void_p
            # The CPU handler keeps the kernel it found for an instruction in
            # the instruction's state (instantiate once, execute a call).
            # Registrations made before the CPU backend starts wait for it,
            # and jaxlib 0.10.2 replays them handlers first, types second --
            # but a handler's state type must exist before the handler. So
            # the type goes straight to XLA's (process-wide) type registry
            # now; a no-op once the backend has started. Starting the
            # backend here instead would fix its XLA_FLAGS at import.
            from jax._src.lib import xla_client
            xla_client.register_custom_type_handler("cpu", xla_client._xla.register_custom_type)
            jax.ffi.register_ffi_type(CPU_STATE_TYPE, {
                "type_id": _capsule(lib.XlaGpuCpuCallStateTypeId()),
                "type_info": _capsule(lib.XlaGpuCpuCallStateTypeInfo())}, platform="cpu")
            jax.ffi.register_ffi_target(CPU_TARGET, {
                "instantiate": jax.ffi.pycapsule(lib.XlaGpuCpuKernelInstantiate),
                "execute": jax.ffi.pycapsule(lib.XlaGpuCpuKernelExecute)}, platform="cpu")
            # Registered for CUDA even where jax has no CUDA backend: XLA
            # keeps the registration for the platform.
            jax.ffi.register_ffi_target(CUDA_TARGET, jax.ffi.pycapsule(lib.XlaGpuCudaKernel),
                                        platform="CUDA")
            lib.XlaGpuFfiSetCpuCompiler(_compile_callback)
            _library = lib
        return _library


def _capsule(address: int):
    """A capsule of a data pointer, as the FFI's type registration takes one
    (through _capi's own PyCapsule_New prototype: ctypes.pythonapi's is
    shared, and jax sets its argtypes)."""
    return _capi._PyCapsule_New(address, None, None)


def _int64s(values) -> ctypes.Array:
    values = list(values)
    return (ctypes.c_int64 * max(1, len(values)))(*values)


def register_cpu_kernel(key: str, kernel: CpuKernel) -> None:
    """Puts a compiled kernel into the handler's registry under `key`, then
    into `_compiled` -- whose keys the compiler callback takes as
    registered: set first, a handler on another thread found the key there
    and the registry still without it ("the compiler registered no kernel
    of that hash", one run in four of four threads compiling at once)."""
    lib = library()
    n = len(kernel.params)
    address = kernel._fn
    bits = [p.packed_bits or p.dtype.itemsize * 8 for p in kernel.params]
    aliases = [kernel.aliases.get(i, -1) for i in range(n)]
    encoded = key.encode()
    status = lib.XlaGpuFfiRegisterCpuKernel(
        encoded, len(encoded), address, n, _int64s(len(p.shape) for p in kernel.params),
        _int64s(d for p in kernel.params for d in p.shape), _int64s(bits), _int64s(aliases),
        kernel.num_results, kernel.launch.num_blocks, kernel.launch.num_threads_per_block)
    if status != 0:
        raise RuntimeError(f"the FFI registry refused kernel {key[:12]}")
    with _lock:
        _compiled[key] = kernel


def compile_cpu_kernel_soon(key: str, text: str, entry: str | None = None) -> None:
    """Starts the compile of the kernel IR `text` (runtime.cpu.start_compile:
    parsed here, the rest on a thread of the plugin's, without the GIL), so
    that the caller goes on -- jax traces, lowers and compiles the program
    around the call meanwhile. The handler's compiler registers it under
    `key` (its content hash) when XLA instantiates a call of it, waiting
    for it then; a compile error is that call's. Without `entry`, the
    text's one public function (the object cached under the same key as
    when `prepare` named it)."""
    with _lock:
        if key in _compiled or key in _pending:
            return
        _pending[key] = start_compile(text, entry=entry or _public_function(text))
        ended = [k for k, started in _pending.items() if k != key and started.done()]
    # Those that ended, registered now (each holds a compile context until
    # then); a failed one fails again when a call needs it.
    for k in ended:
        try:
            _finish_compile(k)
        except Exception:
            pass


def _finish_compile(key: str) -> None:
    """Registers the kernel `key` whose compile compile_cpu_kernel_soon
    started (waiting for it)."""
    with _lock:
        started = _pending.get(key)
    if started is None:
        return
    try:
        kernel = started.result()
        with _lock:
            registered = key in _compiled
        if not registered:
            register_cpu_kernel(key, kernel)
    finally:
        with _lock:
            _pending.pop(key, None)


def cpu_kernel_count() -> int:
    """Kernels in the handler's registry (for tests)."""
    return library().XlaGpuFfiNumCpuKernels()


def _public_function(text: str) -> str | None:
    """The one public function of kernel IR `text` (its entry), named as
    `prepare` names it, so that the kernel's cached object (keyed by the
    entry too) is the one a compile in `prepare` stored; None where the
    text does not have exactly one."""
    names = re.findall(r"^\s*func\.func @([\w$.-]+)\(", text, re.M)
    return names[0] if len(names) == 1 else None


@_COMPILE_FN
def _compile_callback(key_ptr, key_len, text_ptr, text_len, error_ptr, error_capacity):
    """The CPU handler's compiler: the `kernel` attribute's MLIR, compiled
    and registered under its hash (which it must have)."""
    try:
        key = ctypes.string_at(key_ptr, key_len).decode()
        text = ctypes.string_at(text_ptr, text_len).decode()
        if content_hash(text) != key:
            raise ValueError("the kernel text does not have the hash the call names")
        with _lock:
            done, started = key in _compiled, key in _pending
        if started:
            _finish_compile(key)
        elif not done:
            register_cpu_kernel(key, CpuKernel(text, entry=_public_function(text)))
        return 0
    except Exception as e:  # reported to XLA as the call's error
        message = f"{type(e).__name__}: {e}".encode()[:max(0, error_capacity - 1)]
        ctypes.memmove(error_ptr, message + b"\0", len(message) + 1)
        return 1
