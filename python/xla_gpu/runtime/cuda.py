"""Run a kernel's PTX on a GPU through the CUDA driver API (ctypes on
libcuda.so.1), from a *bundle*: the PTX and a small JSON of what a launch
needs.

    bundle = KernelBundle.load("bundles/fusion")       # kernel.ptx + kernel.json
    kernel = CudaKernel(bundle)                        # the module, loaded once
    outputs = kernel(x, y)                             # numpy in, numpy out
    ms = kernel.time(x, y, iterations=20)              # CUDA events, median

This module needs numpy and the driver only -- no MLIR, no CUDA toolkit --
so that a machine with a GPU but without this project's MLIR wheels runs
bundles made elsewhere (`fusion-to-mlir FILE.hlo --bundle DIR`). It can be
imported by path (`sys.path.insert(0, ".../runtime"); import cuda`).

The kernel's PTX parameters are one device pointer a distinct buffer:
inputs then outputs, an in-place output (`aliases`) sharing its operand's
pointer, as our lowering (-xla-gpu-merge-pointers) emits them. Without a
driver or a device, every entry point raises CudaUnavailable with one line
saying so.
"""

from __future__ import annotations

import ctypes
import hashlib
import json
import threading
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

try:
    from .packing import pack, unpack
except ImportError:  # imported by path, beside packing.py
    from packing import pack, unpack

__all__ = ["BUNDLE_VERSION", "CudaError", "CudaKernel", "CudaUnavailable", "KernelBundle",
           "driver", "random_array", "random_inputs"]

BUNDLE_VERSION = 1

# XLA's element type names -> numpy dtype names (ml_dtypes' for the narrow
# floats and the sub-byte integers, which it holds one a byte).
_DTYPES = {
    "pred": "bool", "s8": "int8", "s16": "int16", "s32": "int32", "s64": "int64",
    "u8": "uint8", "u16": "uint16", "u32": "uint32", "u64": "uint64",
    "f16": "float16", "f32": "float32", "f64": "float64", "bf16": "bfloat16",
    "c64": "complex64", "c128": "complex128", "s4": "int4", "u4": "uint4",
    "s2": "int2", "u2": "uint2", "f8e4m3fn": "float8_e4m3fn", "f8e5m2": "float8_e5m2",
    "f8e4m3": "float8_e4m3", "f8e3m4": "float8_e3m4", "f8e4m3fnuz": "float8_e4m3fnuz",
    "f8e5m2fnuz": "float8_e5m2fnuz", "f8e4m3b11fnuz": "float8_e4m3b11fnuz",
    "f8e8m0fnu": "float8_e8m0fnu", "f4e2m1fn": "float4_e2m1fn",
}
_PACKED_BITS = {"s4": 4, "u4": 4, "s2": 2, "u2": 2}


def numpy_dtype(xla_type: str) -> np.dtype:
    """The numpy dtype of an XLA element type name."""
    name = _DTYPES.get(xla_type)
    if name is None:
        raise ValueError(f"unknown element type {xla_type!r}")
    try:
        return np.dtype(name)
    except TypeError:
        import ml_dtypes
        return np.dtype(getattr(ml_dtypes, name))


class CudaError(RuntimeError):
    """A driver call failed (its name and CUDA's message)."""


class CudaUnavailable(CudaError):
    """No driver or no device: kernels cannot run on a GPU here."""


@dataclass(frozen=True)
class BufferSpec:
    """One kernel parameter or result: its shape and XLA element type."""

    shape: tuple[int, ...]
    dtype: str

    @property
    def numpy_dtype(self) -> np.dtype:
        return numpy_dtype(self.dtype)

    @property
    def num_bytes(self) -> int:
        n = int(np.prod(self.shape, dtype=np.int64))
        bits = _PACKED_BITS.get(self.dtype)
        return -(-n * bits // 8) if bits else n * self.numpy_dtype.itemsize


@dataclass(frozen=True)
class KernelBundle:
    """What launching a kernel needs, written once by the emitters' side:
    the PTX, its entry, the launch dimensions, the dynamic shared memory,
    parameters and results, and the in-place pairs (result k written into
    parameter aliases[k])."""

    name: str
    entry: str
    ptx: str
    block_counts: tuple[int, int, int]
    thread_counts_per_block: tuple[int, int, int]
    parameters: tuple[BufferSpec, ...]
    results: tuple[BufferSpec, ...]
    aliases: dict[int, int] = field(default_factory=dict)
    shared_memory_bytes: int = 0      # dynamic; our tiles are static in the PTX
    chip: str = "sm_90"
    # Facts for reports, not for launching (the emitter's shared memory).
    info: dict = field(default_factory=dict)

    def __post_init__(self):
        for name in ("block_counts", "thread_counts_per_block"):
            counts = getattr(self, name)
            if len(counts) != 3 or any(int(c) < 1 for c in counts):
                raise ValueError(f"bundle {self.name}: {name} must be three counts >= 1, "
                                 f"got {counts}")
        for k, v in self.aliases.items():
            if not (0 <= k < len(self.results) and 0 <= v < len(self.parameters)):
                raise ValueError(f"bundle {self.name}: alias {k} -> {v} is not a result "
                                 "and a parameter")
            # One buffer, maybe another shape of the same bytes.
            if self.results[k].num_bytes != self.parameters[v].num_bytes:
                raise ValueError(f"bundle {self.name}: result {k} and parameter {v} share a "
                                 "buffer but differ in size")

    def to_json(self) -> dict:
        return {
            "version": BUNDLE_VERSION, "name": self.name, "entry": self.entry,
            "ptx_file": "kernel.ptx", "chip": self.chip,
            "launch": {"block_counts": list(self.block_counts),
                       "thread_counts_per_block": list(self.thread_counts_per_block),
                       "shared_memory_bytes": self.shared_memory_bytes},
            "parameters": [{"shape": list(p.shape), "dtype": p.dtype} for p in self.parameters],
            "results": [{"shape": list(r.shape), "dtype": r.dtype} for r in self.results],
            "aliases": {str(k): v for k, v in self.aliases.items()},
            "info": self.info,
        }

    def save(self, folder: str | Path) -> Path:
        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "kernel.ptx").write_text(self.ptx)
        (folder / "kernel.json").write_text(json.dumps(self.to_json(), indent=1) + "\n")
        return folder

    @classmethod
    def load(cls, folder: str | Path) -> "KernelBundle":
        """Reads a bundle; a malformed one is a ValueError naming the file."""
        folder = Path(folder)
        meta_path = folder / "kernel.json"
        try:
            meta = json.loads(meta_path.read_text())
            if meta.get("version") != BUNDLE_VERSION:
                raise ValueError(f"version {meta.get('version')!r}, this runtime reads "
                                 f"{BUNDLE_VERSION}")
            launch = meta["launch"]
            specs = lambda items: tuple(BufferSpec(tuple(int(d) for d in i["shape"]),  # noqa: E731
                                                   str(i["dtype"])) for i in items)
            bundle = cls(
                name=str(meta["name"]), entry=str(meta["entry"]),
                ptx=(folder / meta["ptx_file"]).read_text(),
                block_counts=tuple(int(c) for c in launch["block_counts"]),
                thread_counts_per_block=tuple(int(c) for c in launch["thread_counts_per_block"]),
                parameters=specs(meta["parameters"]), results=specs(meta["results"]),
                aliases={int(k): int(v) for k, v in meta.get("aliases", {}).items()},
                shared_memory_bytes=int(launch.get("shared_memory_bytes", 0)),
                chip=str(meta.get("chip", "sm_90")), info=dict(meta.get("info", {})))
            for spec in bundle.parameters + bundle.results:
                spec.numpy_dtype  # noqa: B018  (an unknown type fails here)
            return bundle
        except (OSError, KeyError, TypeError, ValueError, json.JSONDecodeError) as e:
            raise ValueError(f"{meta_path}: not a kernel bundle: {e}") from None


def random_array(shape, xla_type: str, rng: np.random.RandomState) -> np.ndarray:
    """test-correctness's inputs: floats uniform in [-2, 2), small integers
    (8 bits at most: the edge cases of every width), every code of an 8-bit
    float (subnormals, infinities, NaNs too)."""
    dtype = numpy_dtype(xla_type)
    if xla_type == "pred":
        return rng.randint(0, 2, size=shape).astype(np.bool_)
    if xla_type[0] in "su":
        bits = min(8, int(xla_type[1:]))
        lo, hi = (-(1 << (bits - 1)), 1 << (bits - 1)) if xla_type[0] == "s" else (0, 1 << bits)
        return rng.randint(lo, hi, size=shape).astype(dtype)
    if xla_type.startswith("c"):
        parts = rng.uniform(-2, 2, size=(2, *shape))
        return (parts[0] + 1j * parts[1]).astype(dtype)
    if xla_type.startswith("f8"):
        return rng.randint(0, 256, size=shape).astype(np.uint8).view(dtype)
    return rng.uniform(-2, 2, size=shape).astype(dtype)


def random_inputs(bundle: KernelBundle, seed: int = 0) -> list[np.ndarray]:
    """Inputs for a bundle's parameters (random_array); a reduction's init
    value its reducer's identity (`info["init_values"]`)."""
    rng = np.random.RandomState(seed)
    inits = {int(k): v for k, v in bundle.info.get("init_values", {}).items()}
    return [np.full(p.shape, inits[i], p.numpy_dtype) if i in inits
            else random_array(p.shape, p.dtype, rng) for i, p in enumerate(bundle.parameters)]


# --- the driver ------------------------------------------------------------

_CU_JIT_INFO_LOG_BUFFER = 3
_CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES = 4
_CU_JIT_ERROR_LOG_BUFFER = 5
_CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES = 6
_CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8
_LOG_BYTES = 16384


class _Driver:
    """libcuda.so.1, initialized, with device 0's primary context current."""

    def __init__(self):
        try:
            self.lib = ctypes.CDLL("libcuda.so.1")
        except OSError:
            raise CudaUnavailable("there is no CUDA driver (libcuda.so.1) on this "
                                  "machine") from None
        lib = self.lib
        for name in ("cuGetErrorName", "cuGetErrorString"):
            getattr(lib, name).argtypes = [ctypes.c_int, ctypes.POINTER(ctypes.c_char_p)]
        result = lib.cuInit(0)
        if result != 0:
            raise CudaUnavailable(f"the CUDA driver has no usable device (cuInit: "
                                  f"{self.error_text(result)})")
        count = ctypes.c_int()
        self.check(lib.cuDeviceGetCount(ctypes.byref(count)), "cuDeviceGetCount")
        if count.value < 1:
            raise CudaUnavailable("the CUDA driver sees no device")
        self.device = ctypes.c_int()
        self.check(lib.cuDeviceGet(ctypes.byref(self.device), 0), "cuDeviceGet")
        self.context = ctypes.c_void_p()
        self.check(lib.cuDevicePrimaryCtxRetain(ctypes.byref(self.context), self.device),
                   "cuDevicePrimaryCtxRetain")
        self.make_current()
        self.modules: dict[str, ctypes.c_void_p] = {}
        self.lock = threading.Lock()

    def make_current(self) -> None:
        self.check(self.lib.cuCtxSetCurrent(self.context), "cuCtxSetCurrent")

    def error_text(self, result: int) -> str:
        name, text = ctypes.c_char_p(), ctypes.c_char_p()
        self.lib.cuGetErrorName(result, ctypes.byref(name))
        self.lib.cuGetErrorString(result, ctypes.byref(text))
        return f"{(name.value or b'?').decode()}: {(text.value or b'').decode()}"

    def check(self, result: int, what: str) -> None:
        if result != 0:
            raise CudaError(f"{what} failed: {self.error_text(result)}")

    def compute_capability(self) -> tuple[int, int]:
        major, minor = ctypes.c_int(), ctypes.c_int()
        self.check(self.lib.cuDeviceGetAttribute(ctypes.byref(major), 75, self.device),
                   "cuDeviceGetAttribute")
        self.check(self.lib.cuDeviceGetAttribute(ctypes.byref(minor), 76, self.device),
                   "cuDeviceGetAttribute")
        return major.value, minor.value

    def load_function(self, ptx: str, entry: str, dynamic_shared: int) -> ctypes.c_void_p:
        """The entry of `ptx`, its module loaded once (cached by content)."""
        key = hashlib.sha256(ptx.encode()).hexdigest() + "/" + entry
        with self.lock:
            if key in self.modules:
                return self.modules[key]
            self.make_current()
            module = ctypes.c_void_p()
            error_log = ctypes.create_string_buffer(_LOG_BYTES)
            options = (ctypes.c_int * 2)(_CU_JIT_ERROR_LOG_BUFFER,
                                         _CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES)
            values = (ctypes.c_void_p * 2)(ctypes.cast(error_log, ctypes.c_void_p),
                                           ctypes.c_void_p(_LOG_BYTES))
            result = self.lib.cuModuleLoadDataEx(ctypes.byref(module), ptx.encode() + b"\0",
                                                 2, options, values)
            if result != 0:
                raise CudaError(f"cuModuleLoadDataEx failed: {self.error_text(result)}: "
                                f"{error_log.value.decode(errors='replace').strip()}")
            function = ctypes.c_void_p()
            self.check(self.lib.cuModuleGetFunction(ctypes.byref(function), module,
                                                    entry.encode()),
                       f"cuModuleGetFunction({entry})")
            if dynamic_shared > 48 * 1024:
                self.check(self.lib.cuFuncSetAttribute(
                    function, _CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                    ctypes.c_int(dynamic_shared)), "cuFuncSetAttribute")
            self.modules[key] = function
            return function

    def alloc(self, num_bytes: int) -> ctypes.c_uint64:
        pointer = ctypes.c_uint64()
        self.check(self.lib.cuMemAlloc_v2(ctypes.byref(pointer), ctypes.c_size_t(max(1, num_bytes))),
                   f"cuMemAlloc({num_bytes})")
        return pointer

    def free(self, pointer: ctypes.c_uint64) -> None:
        self.lib.cuMemFree_v2(pointer)

    def to_device(self, pointer, array: np.ndarray) -> None:
        self.check(self.lib.cuMemcpyHtoD_v2(pointer, array.ctypes.data_as(ctypes.c_void_p),
                                            ctypes.c_size_t(array.nbytes)), "cuMemcpyHtoD")

    def to_host(self, array: np.ndarray, pointer) -> None:
        self.check(self.lib.cuMemcpyDtoH_v2(array.ctypes.data_as(ctypes.c_void_p), pointer,
                                            ctypes.c_size_t(array.nbytes)), "cuMemcpyDtoH")


_driver: _Driver | None = None
_driver_lock = threading.Lock()


def driver() -> _Driver:
    """The process's driver (loaded on first use); CudaUnavailable if none."""
    global _driver
    with _driver_lock:
        if _driver is None:
            _driver = _Driver()
        return _driver


class CudaKernel:
    """A bundle's kernel, loaded into the current device's context."""

    def __init__(self, bundle: KernelBundle):
        self.bundle = bundle
        self.driver = driver()
        self.function = self.driver.load_function(bundle.ptx, bundle.entry,
                                                  bundle.shared_memory_bytes)

    def check(self, arrays) -> list[np.ndarray]:
        """The inputs as C-contiguous arrays of the parameters' types; a
        wrong one is a ValueError before anything reaches the device."""
        params = self.bundle.parameters
        if len(arrays) != len(params):
            raise ValueError(f"{self.bundle.name} takes {len(params)} arrays, got {len(arrays)}")
        out = []
        for i, (a, p) in enumerate(zip(arrays, params)):
            a = np.asarray(a)
            if a.shape != p.shape or a.dtype != p.numpy_dtype:
                raise ValueError(f"{self.bundle.name}: argument {i} must be {p.dtype}{list(p.shape)}"
                                 f", got {a.dtype}{list(a.shape)}")
            out.append(np.ascontiguousarray(a))
        return out

    def _device_buffers(self, inputs):
        """Device copies of the inputs, output buffers, and the launch's
        pointer slots (an in-place output takes its operand's slot)."""
        b, d = self.bundle, self.driver
        host = [pack(a, _PACKED_BITS[p.dtype]) if p.dtype in _PACKED_BITS else a
                for a, p in zip(inputs, b.parameters)]
        in_ptrs = []
        for a, p in zip(host, b.parameters):
            ptr = d.alloc(p.num_bytes)
            d.to_device(ptr, a)
            in_ptrs.append(ptr)
        # An in-place result is its operand's buffer (the bytes, in the
        # result's shape).
        out_ptrs = [in_ptrs[b.aliases[k]] if k in b.aliases else d.alloc(r.num_bytes)
                    for k, r in enumerate(b.results)]
        slots = list(in_ptrs) + [p for k, p in enumerate(out_ptrs) if k not in b.aliases]
        return in_ptrs, out_ptrs, slots

    def _launch(self, slots, stream=None) -> None:
        b = self.bundle
        values = [ctypes.c_uint64(p.value) for p in slots]
        params = (ctypes.c_void_p * max(1, len(values)))(
            *[ctypes.cast(ctypes.byref(v), ctypes.c_void_p) for v in values])
        self.driver.check(self.driver.lib.cuLaunchKernel(
            self.function, *[ctypes.c_uint(c) for c in b.block_counts],
            *[ctypes.c_uint(c) for c in b.thread_counts_per_block],
            ctypes.c_uint(b.shared_memory_bytes), stream, params, None),
            f"cuLaunchKernel({b.entry})")

    def _results(self, out_ptrs) -> list[np.ndarray]:
        outs = []
        for ptr, r in zip(out_ptrs, self.bundle.results):
            bits = _PACKED_BITS.get(r.dtype)
            if bits:
                packed = np.empty(r.num_bytes, np.uint8)
                self.driver.to_host(packed, ptr)
                out = np.empty(r.shape, r.numpy_dtype)
                unpack(packed, bits, out)
            else:
                out = np.empty(r.shape, r.numpy_dtype)
                self.driver.to_host(out, ptr)
            outs.append(out)
        return outs

    def __call__(self, *arrays) -> list[np.ndarray]:
        """Copies the inputs in, launches once, copies the results out."""
        inputs = self.check(arrays)
        self.driver.make_current()
        in_ptrs, out_ptrs, slots = self._device_buffers(inputs)
        try:
            self._launch(slots)
            self.driver.check(self.driver.lib.cuCtxSynchronize(), "cuCtxSynchronize")
            return self._results(out_ptrs)
        finally:
            for p in {p.value: p for p in in_ptrs + out_ptrs}.values():
                self.driver.free(p)

    def time(self, *arrays, iterations: int = 20) -> float:
        """The median time of one launch in milliseconds (CUDA events
        around each launch, after a warm-up launch)."""
        inputs = self.check(arrays)
        d = self.driver
        d.make_current()
        in_ptrs, out_ptrs, slots = self._device_buffers(inputs)
        start, stop = ctypes.c_void_p(), ctypes.c_void_p()
        d.check(d.lib.cuEventCreate(ctypes.byref(start), 0), "cuEventCreate")
        d.check(d.lib.cuEventCreate(ctypes.byref(stop), 0), "cuEventCreate")
        times = []
        try:
            self._launch(slots)
            for _ in range(max(1, iterations)):
                d.check(d.lib.cuEventRecord(start, None), "cuEventRecord")
                self._launch(slots)
                d.check(d.lib.cuEventRecord(stop, None), "cuEventRecord")
                d.check(d.lib.cuEventSynchronize(stop), "cuEventSynchronize")
                ms = ctypes.c_float()
                d.check(d.lib.cuEventElapsedTime(ctypes.byref(ms), start, stop),
                        "cuEventElapsedTime")
                times.append(ms.value)
        finally:
            d.lib.cuEventDestroy_v2(start)
            d.lib.cuEventDestroy_v2(stop)
            for p in {p.value: p for p in in_ptrs + out_ptrs}.values():
                d.free(p)
        return float(np.median(times))
