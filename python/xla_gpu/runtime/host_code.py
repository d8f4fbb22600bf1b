"""Host code of CPU-target kernels: compiled to an object, loaded into a
JIT, and kept on disk by content hash.

Two steps of the plugin's C API (dialects/xla_gpu/HostJit.cpp), each
called through ctypes, which releases the GIL -- so the kernels of one
module compile on several threads at once:

    obj = compile_object(module)      # LLVM-dialect module -> O3 -> ELF object
    code = HostCode(obj)              # the object in a JIT; process symbols
    address = code.lookup("_mlir_f")  # f's packed wrapper

HostCompile runs the CPU pipeline and compile_object on a thread of the
plugin's (HostCompile.cpp), started at once and ended by its result().

With $XLA_GPU_CACHE_DIR set, `cached_object(key)` / `store_object(key, obj)`
keep objects in `$XLA_GPU_CACHE_DIR/cpu/`, keyed by the kernel's content
hash and `fingerprint()` (the host CPU and features the object is
compiled for, and the plugin library holding the passes that produced
it): a second run of a tool or a test on the same machine compiles no
kernel it has seen.
"""

from __future__ import annotations

import ctypes
import functools
import hashlib
import os
import re
from pathlib import Path

from mlir import ir

from .. import _capi, pipelines

__all__ = ["COMPILE_STEPS", "HostCode", "HostCompile", "JitError", "cached_object",
           "compile_object", "fingerprint", "has_512_bit_vectors", "host_target", "store_object"]

_ERROR_CAPACITY = 8192

# Objects compiled and objects read from the disk cache in this process.
counts = {"compiled": 0, "from_cache": 0}


class JitError(RuntimeError):
    """The JIT could not produce the kernel's code (a symbol it cannot
    resolve, e.g. a compiler-rt helper no library of the process exports)."""


# The steps of compile_object, as `seconds` reports them.
COMPILE_STEPS = ("translate", "O3", "codegen")


def compile_object(module: ir.Module, opt_level: int = 3,
                   seconds: dict[str, float] | None = None) -> bytes:
    """The host object of `module` (LLVM dialect only, the CPU pipeline's
    output) at LLVM's -O`opt_level`, with the packed wrapper `_mlir_<f>` of
    each public function f. With `seconds`, the time of each of
    COMPILE_STEPS goes there."""
    size = ctypes.c_size_t()
    times = (ctypes.c_double * len(COMPILE_STEPS))()
    error = ctypes.create_string_buffer(_ERROR_CAPACITY)
    data = _capi.lib.xlaGpuCompileToHostObject(_capi.unwrap(module, "Module"), opt_level,
                                               ctypes.byref(size), times, error, len(error))
    if seconds is not None:
        seconds.update(zip(COMPILE_STEPS, times))
    return _object_bytes(data, size.value, error)


def _object_bytes(data: int | None, size: int, error: ctypes.Array) -> bytes:
    """The object the C API returned (freed here), or JitError."""
    if not data:
        raise JitError(f"the JIT could not compile the kernel: {error.value.decode()}")
    try:
        counts["compiled"] += 1
        return ctypes.string_at(data, size)
    finally:
        _capi.lib.xlaGpuFreeBuffer(data)


class HostCompile:
    """The CPU pipeline and compile_object of a module, on a thread of the
    plugin's (HostCompile.cpp), without the GIL or any Python: started
    here, the caller going on meanwhile, and ended by result(). `pipeline`
    is a parsed pass manager of the module's context
    (pipelines.parsed_pipeline); the module, the pipeline and their context
    are the compile's until result() returns (the module is kept alive
    here)."""

    def __init__(self, module: ir.Module, pipeline: int, verify_each: bool,
                 opt_level: int = 3):
        self._module = module
        self._job = _capi.lib.xlaGpuStartHostCompile(
            pipeline, _capi.unwrap(module, "Module"), int(verify_each), opt_level)

    def done(self) -> bool:
        """Whether result() would return without waiting."""
        return self._job is None or bool(_capi.lib.xlaGpuHostCompileDone(self._job))

    def result(self, seconds: dict[str, float] | None = None) -> bytes:
        """The object (waiting for it, without the GIL); raises
        pipelines.PipelineError where the pipeline failed, JitError where
        LLVM did. Once only."""
        if self._job is None:
            raise RuntimeError("HostCompile.result() called twice")
        job, self._job = self._job, None
        size = ctypes.c_size_t()
        times = (ctypes.c_double * len(COMPILE_STEPS))()
        pipeline_error = ctypes.c_void_p()
        error = ctypes.create_string_buffer(_ERROR_CAPACITY)
        data = _capi.lib.xlaGpuFinishHostCompile(job, ctypes.byref(size), times,
                                                 ctypes.byref(pipeline_error), error, len(error))
        self._module = None
        if seconds is not None:
            seconds.update(zip(COMPILE_STEPS, times))
        pipelines._raise_message(pipeline_error.value)  # PipelineError, if any
        return _object_bytes(data, size.value, error)


class HostCode:
    """An object loaded into its own JIT; undefined symbols resolve to the
    process's (libm, and whatever else is loaded)."""

    def __init__(self, obj: bytes):
        error = ctypes.create_string_buffer(_ERROR_CAPACITY)
        self._jit = _capi.lib.xlaGpuHostJitLoad(obj, len(obj), error, len(error))
        if not self._jit:
            raise JitError(error.value.decode())

    def lookup(self, name: str, needed_by: str) -> int:
        """The address of `name` (linked now). A symbol left undefined is a
        JitError naming it, never an address of 0."""
        error = ctypes.create_string_buffer(_ERROR_CAPACITY)
        address = _capi.lib.xlaGpuHostJitLookup(self._jit, name.encode(), error, len(error))
        if address:
            return address
        report = error.value.decode()
        missing = re.findall(r"Symbols not found: \[ (.*?) \]", report)
        if missing:
            raise JitError(f"the JIT cannot resolve {', '.join(missing)} (needed by "
                           f"@{needed_by}); no library loaded in this process defines it")
        raise JitError(f"the JIT could not link @{needed_by}: {report or 'no such symbol'}")

    def __del__(self):
        if getattr(self, "_jit", None):
            _capi.lib.xlaGpuHostJitDestroy(self._jit)
            self._jit = None


def host_target() -> str:
    """The host target objects are compiled for: its triple, CPU name and
    LLVM features (`+avx2,-avx512f,...`)."""
    text = ctypes.create_string_buffer(4096)
    _capi.lib.xlaGpuHostTarget(text, len(text))
    return text.value.decode()


@functools.cache
def _host_features() -> frozenset[str]:
    """The host target's LLVM features on (`avx2`, ...)."""
    return frozenset(f[1:] for f in host_target().rpartition(" ")[2].split(",")
                     if f.startswith("+"))


def is_x86() -> bool:
    """Whether the host is x86-64."""
    return host_target().startswith(("x86_64", "i386", "i686"))


def has_512_bit_vectors() -> bool:
    """Whether the host's vector registers hold 512 bits (x86's AVX-512)."""
    return "avx512f" in _host_features()


def has_avx512dq() -> bool:
    """Whether the host has AVX-512DQ (x86's VRANGE, which the host code's
    vector maxima and minima use)."""
    return "avx512dq" in _host_features()


def has_half_arithmetic() -> bool:
    """Whether the host computes f16 itself (x86's AVX512-FP16)."""
    return "avx512fp16" in _host_features()


@functools.cache
def fingerprint() -> str:
    """What an object depends on besides the kernel text and the pipeline
    options: the host target it is compiled for and the build of the
    passes (the plugin library's content)."""
    digest = hashlib.sha256(host_target().encode())
    with open(_capi.LIB_PATH, "rb") as lib:
        for block in iter(lambda: lib.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _cache_file(key: str) -> Path | None:
    folder = os.environ.get("XLA_GPU_CACHE_DIR")
    if not folder:
        return None
    name = hashlib.sha256(f"{key}\0{fingerprint()}".encode()).hexdigest()
    return Path(folder) / "cpu" / f"{name}.o"


def cached_object(key: str) -> bytes | None:
    """The object stored under `key` on this machine's build, if any."""
    path = _cache_file(key)
    try:
        obj = path.read_bytes() if path is not None else None
    except OSError:
        return None
    counts["from_cache"] += obj is not None
    return obj


def store_object(key: str, obj: bytes) -> None:
    """Keeps `obj` under `key` (when $XLA_GPU_CACHE_DIR is set). Written to
    a temporary name and renamed: readers see a whole object or none."""
    path = _cache_file(key)
    if path is None:
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_suffix(f".{os.getpid()}.{id(obj)}.tmp")
    partial.write_bytes(obj)
    partial.replace(path)
