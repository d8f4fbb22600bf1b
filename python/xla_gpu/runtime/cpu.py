"""Run a kernel on the CPU, with GPU semantics, as compiled code.

The kernel IR is what the GPU path takes (an entry function over
`gpu.thread_id`/`gpu.block_id` with `xla.range`, xla_gpu loops, shared
memory, barriers, shuffles, atomics). The CPU pipeline turns the grid into
loops (`-xla-gpu-lower-kernel-to-cpu`), LLVM JIT-compiles the result
(host_code.py: an object, kept on disk with $XLA_GPU_CACHE_DIR), and the
blocks are spread over the cores: one call into HostLaunch.cpp (ctypes
releases the GIL) runs chunks of blocks on the caller and on a native
pool's workers.
`compile_kernels` compiles several kernels on several threads.

    kernel = CpuKernel(open("kernel.mlir").read())
    kernel(x, out)                    # numpy arrays, outputs written in place
"""

from __future__ import annotations

import atexit
import ctypes
import functools
import hashlib
import itertools
import os
import threading
import time
import weakref
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from math import prod

import numpy as np
from mlir import ir

import xla_gpu  # noqa: F401  (registers the dialect and the passes)

from .. import _capi, pipelines
from ..emitters.device import DeviceDescription
from ..emitters.kernel import (BLOCK_LOCAL_DIMS, LAUNCH_DIMS_ATTR, EmittedKernel, LaunchDimensions,
                              block_local_arguments, launch_dims_of)
from ..hlo.types import BY_MLIR, ELEMENT_TYPES
from .host_code import (HostCode, HostCompile, JitError, cached_object, compile_object,
                        has_512_bit_vectors, store_object)
from .packing import pack as _pack, unpack as _unpack

__all__ = ["ALIGNMENT", "CpuKernel", "JitError", "KernelArgumentError", "StartedCompile",
           "aligned", "aligned_empty", "compile_kernels", "run_on_cpu", "start_compile"]


class KernelArgumentError(ValueError):
    """Wrong number, shape or type of arrays for a kernel (raised before
    anything runs)."""


@dataclass(frozen=True)
class _Param:
    shape: tuple[int, ...]
    dtype: np.dtype
    type_text: str
    # Width of a packed sub-byte integer element (2 or 4), else 0.
    packed_bits: int = 0


# Sub-byte integers: ml_dtypes holds them one a byte; the kernel reads and
# writes them packed as XLA's buffers do (the runner packs and unpacks, see
# _pack). 8-bit floats: one byte each, as ml_dtypes holds them.
_MLIR_TO_DTYPE = {mlir: t.dtype for mlir, t in BY_MLIR.items()}
_SUB_BYTE = [{ELEMENT_TYPES["s4"].dtype, ELEMENT_TYPES["u4"].dtype},
             {ELEMENT_TYPES["s2"].dtype, ELEMENT_TYPES["u2"].dtype}]

# The GPU path turns a thread's few contiguous elements into one vector
# transfer (a wide memory transaction). On the CPU the vectors LLVM wants are
# across threads -- the thread loop -- and a loop holding vector-typed loads
# is one LLVM's loop vectorizer leaves alone: measured on the seed's GELU,
# 55 ms with the transfers, 20 ms without.
_CPUS = os.cpu_count() or 1

# The host's options. Indices are 64-bit (the GPU's are 32 where tensors are
# small): LLVM's induction-variable widening, and the no-wrap assumptions
# its vectorizer needs for 32-bit offsets extended to 64, were a third of
# O3 on the benchmarks (O3 1.15 -> 0.82 s over all cases, whole compiles
# -16 %; the transposes' halved), and no kernel ran slower. Loop peeling
# (PipelineOptions.peel_loops) only of an accumulation's outer range
# variables: peeling every loop's, A/B in one process over the benchmarks,
# the f16 021 transpose ran 1.27x the time (a loop that writes its tile),
# a column sum with a partial tile (f32[4096,1040]) 3-3.5x (its thread's
# vector peeled, one walk an element). Peeled, an accumulation's last step
# that reaches past the edge keeps its bounds check, and the steps before
# it -- unrolled into one lane loop, xla-gpu-lower-kernel-to-cpu's visits --
# have none, so LLVM vectorizes them: exp + column sum f32[1000,512] (rows
# 32 a step) 0.34 -> 0.08 ms, every bench kernel within noise, every result
# bit for bit the same. A window walked contiguously by each thread, the
# threads a window apart (PipelineOptions.bound_innermost: XLA:CPU's
# integer row sum, a reduce-window of 1x32 at a stride of 32), has its
# padding as its loop's bounds: s32[4096,1000] 1.45 -> 0.35 ms (XLA:CPU
# 0.57), the f32 form 1.30 -> 0.67 (0.78); no bench kernel's IR changes.
# Transposing writes only where the host has
# 512-bit vectors (PipelineOptions.transposing_writes). Loops are unrolled
# up to the CPU's budget on every host (PipelineOptions.max_unrolled_ops):
# until stop 53 hosts with transposing writes kept XLA's, as a transposing
# write took its phase unrolled; it takes a phase's loop of steps now, and
# with 128 every bench object was the same but the cumsum's (its run the
# same, 0.999x), the bf16 021 transpose's compile 27.0 -> 23.3 ms.
# Exp's scaling as llvm.ldexp (PipelineOptions.ldexp_scaling) on the same
# hosts, and the f64 functions' vector variants of 8 lanes there (else 4).
_WIDE_VECTORS = has_512_bit_vectors()
CPU_DEFAULT_OPTIONS = pipelines.PipelineOptions(
    vectorize=False, pipeline_loads=False, unroll_accumulations=False, unroll_math_loops=False,
    unroll_nested_short_loops=True, partial_unroll=False, max_unrolled_ops=128,
    index_bitwidth=64, peel_innermost=False, peel_accumulations_only=True, bound_innermost=True,
    fold_loops_into_threads=True, transposing_writes=_WIDE_VECTORS, ldexp_scaling=_WIDE_VECTORS,
    f64_vector_lanes=8 if _WIDE_VECTORS else 4)

# CUDA's limits, as the device descriptions hold them: threads of a block,
# blocks along one grid dimension.
MAX_THREADS_PER_BLOCK = DeviceDescription.threads_per_block_limit
MAX_GRID_DIM = DeviceDescription.block_dim_limit_x

# From this many bytes a copy (an aliased operand's) is split over the
# workers (_copy); from 2.5 MiB on two threads were as fast as one or
# faster on the bench's cases (2 cores).
MIN_BYTES_FOR_WORKERS = 2 << 20

# A kernel's own times decide its threads (CpuKernel.__call__): its first
# call runs on the workers, untimed (it pays what a first call pays: the
# workers waking, fresh output pages, cold caches), then PROBE_CALLS calls
# on one thread and PROBE_CALLS on the workers, timed (in a row since stop
# 79: alternated, a workers' probe after a one-thread call longer than the
# workers' spin woke a parked worker -- the exp + column sum over
# f32[1000,512] was left on one thread, 56 us against 42 on two; the FFI
# handler's probes on XLA's pool paid that more), and its later calls
# keep the workers unless one thread's fastest took under
# MIN_SECONDS_FOR_WORKERS or was ONE_THREAD_MARGIN faster
# (choose_workers). The seed GELU's first calls on two threads took
# 15-22 ms where its later ones took 9.5, one thread's 18.7: with the
# workers' probes first, a kernel two threads speed up less (or a noisy
# third call) was left on one thread for good -- the JAX GELU read
# 16.8 ms in one bench run, about one thread's time, 8.5 since. A
# worker takes ~0.01-0.1 ms to wake: a kernel over by then runs slower on
# two threads (the scatter-add, 0.045 ms on one thread: 2.1x), one of
# ~0.1 ms or more faster (with HostLaunch.h's chunks, A/B on 2 cores: the
# f16 021 transpose, 0.24 ms, 0.89x; a softmax step, 0.27 ms, 0.82x; the
# row max, 0.32 ms, 0.81x; the softmax exp+sum, 1.6 ms, 0.57x). The bytes
# a kernel moves do not tell: the softmax step moves 32 KB and computes for
# 0.27 ms, and a column reduction XLA makes a loop fusion (f32[16384,
# 1024]: a thread a column over every row, so that each worker reads half
# of each 4 KiB row) moves 64 MiB and ran 4.5 ms on one thread, 6.9 on
# two. The margin keeps the workers where a noisy spell slows a few
# probes (three on two threads each slower than one thread's fastest).
# Since the workers spin before they sleep (HostLaunch.h), kernels of
# 0.02-0.1 ms on one thread run faster on two as well, which a floor of
# 0.1 ms had kept on one (in one process, the floor 0.02 ms against 0.1:
# row max 0.53-0.56x, multi-row max 0.61-0.65x, f16 021 transpose 0.55x,
# concatenate 0.63x, cumsum 0.86x, the rest of the bench 0.95-1.03x).
# The floor is 5 us since stop 79: kernels of 0.01-0.03 ms on one thread
# ran 0.59-0.78x the time on two (A/B in one process, blocks taking
# turns: a pad of a reversed strided slice 14.7 -> 8.6 us, the sum over
# dimensions 0 and 2 27.5 -> 16.9, the row max over f32[8192,12] 10.4
# -> 6.9, the multi-row max 11.5 -> 8.9, the concatenate 29.5 -> 18.4),
# while the scatter-add of 2 us took 61 on two (its atomics).
PROBE_CALLS = 3
MIN_SECONDS_FOR_WORKERS = 5e-6
ONE_THREAD_MARGIN = 1.1
# A kernel the probe left on one thread by its times (not the floor) is
# probed again after REPROBE_CALLS more calls, then twice as many each
# time it stays there: a probe whose calls on the workers all fell in a
# spell where the host's other core was taken (these VMs have such
# spells) left the seed transpose on one thread for good, 1.78x XLA:CPU's
# time in one bench run where it reads 0.74-0.92 (0.84 ms on one thread,
# 0.43 on two). A kernel that is faster on one thread pays 3 slower calls
# a re-probe, after 8 calls on one thread, then 16, 32, ...: 21 in its
# first thousand calls. 8, so that a kernel wrongly left on one thread
# runs on two again within a benchmark's first 30 calls (the bf16 021
# transpose read 0.21 ms on two threads, 0.40 on one, 0.26-0.51 in
# suite runs).
REPROBE_CALLS = 8


def choose_workers(one: list[float], many: list[float], workers: int) -> int:
    """The threads a kernel's later calls take, from the seconds its probe
    calls took on one thread (`one`) and on `workers` threads (`many`)."""
    if min(one) < MIN_SECONDS_FOR_WORKERS:
        return 1
    return 1 if min(one) * ONE_THREAD_MARGIN < min(many) else workers

_cache: dict[str, "CpuKernel"] = {}
_cache_lock = threading.Lock()
_compiling: dict[str, threading.Lock] = {}
# Kernels whose compile start_compile started, until it ends.
_started: dict[str, "StartedCompile"] = {}

# From this size on an aliased operand is copied with streaming stores
# (HostCopy.cpp: no read of the destination's lines). Measured here (32 MiB
# of L3), copies of 16 MiB and more ran 1.1-1.8x faster that way; smaller
# ones stay in the caches and copy faster plainly.
MIN_BYTES_FOR_STREAMING = 16 << 20


# Where buffers start: XLA's start on 64-byte boundaries (a cache line, an
# AVX-512 vector), numpy's large arrays 16 or 32 bytes past one, so that
# each 64-byte vector load or store of a kernel spans two lines. Measured
# on the transpose+add f32[1024,1024] (a C loop of our kernel's accesses,
# 2 threads): 0.36 ms on numpy's offsets, 0.26 ms aligned.
ALIGNMENT = 64


def aligned_empty(shape, dtype) -> np.ndarray:
    """An uninitialized C-contiguous array whose first byte is on an
    ALIGNMENT boundary (a view into a larger byte array)."""
    dtype = np.dtype(dtype)
    nbytes = prod(shape) * dtype.itemsize
    raw = np.empty(nbytes + ALIGNMENT, np.uint8)
    start = -raw.ctypes.data % ALIGNMENT
    return raw[start:start + nbytes].view(dtype).reshape(shape)


def aligned(array: np.ndarray) -> np.ndarray:
    """`array` when it is C-contiguous on an ALIGNMENT boundary, else such
    a copy of it."""
    array = np.asarray(array)
    if array.flags.c_contiguous and array.ctypes.data % ALIGNMENT == 0:
        return array
    copy = aligned_empty(array.shape, array.dtype)
    copy[...] = array
    return copy


def _address(a: np.ndarray) -> int:
    """The address of a C-contiguous array's first byte: through the buffer
    protocol (~0.3 us), or `.ctypes.data` (~0.9 us, it builds a ctypes
    helper object) for the arrays that export no writable buffer (ml_dtypes'
    types, read-only or empty arrays). A tiny kernel's call passes a few
    arrays: ~3 of its ~15 us had gone to their addresses."""
    # numpy exports buffers of its own types only (dtype.isbuiltin 1), not
    # of ml_dtypes' (2: bf16, the f8s -- float8_e5m2 is even of kind "f").
    if a.dtype.isbuiltin == 1 and a.flags.writeable and a.size:
        return ctypes.addressof(ctypes.c_char.from_buffer(a))
    return a.ctypes.data


def _copy(dst: int, src: int, nbytes: int, workers: int) -> None:
    """Copies `nbytes` from address `src` to address `dst`, split over
    `workers` threads when large (HostCopy.cpp on HostLaunch.cpp's pool,
    without the GIL; one core does not saturate the memory bandwidth)."""
    if nbytes < MIN_BYTES_FOR_WORKERS:
        workers = 1
    _capi.lib.xlaGpuHostCopy(dst, src, nbytes, nbytes >= MIN_BYTES_FOR_STREAMING, workers)


def _entry_function(module: ir.Module, entry: str | None):
    """The function named `entry`, or the module's one public function."""
    funcs = [op for op in module.body.operations if op.operation.name == "func.func"]
    if entry is not None:
        for op in funcs:
            if ir.StringAttr(op.attributes["sym_name"]).value == entry:
                return op
        raise KernelArgumentError(f"the module has no function @{entry}")
    public = [op for op in funcs if "sym_visibility" not in op.attributes
              and len(op.regions[0].blocks) > 0]
    if len(public) != 1:
        names = ", ".join("@" + ir.StringAttr(op.attributes["sym_name"]).value for op in public)
        raise KernelArgumentError(f"the module has {len(public)} public functions "
                                  f"({names or 'none'}); name the kernel's entry")
    return public[0]


def _launch_dims(func) -> LaunchDimensions:
    """The grid: the entry's `xla.launch_dims` (the emitters write it), else
    the `xla.range`s of its thread and block ids, per dimension."""
    recorded = launch_dims_of(func.operation)
    counts = {"gpu.thread_id": [1, 1, 1], "gpu.block_id": [1, 1, 1]}

    def find_ids(op):
        for region in op.regions:
            for block in region.blocks:
                for inner in block.operations:
                    name = inner.operation.name
                    if name in counts and "xla.range" in inner.attributes:
                        hi = ir.IntegerAttr(ir.ArrayAttr(inner.attributes["xla.range"])[1]).value
                        dim = "xyz".index(str(inner.attributes["dimension"]).split()[-1][0])
                        counts[name][dim] = max(counts[name][dim], hi + 1)
                    find_ids(inner.operation)

    find_ids(func.operation)
    blocks, threads = counts["gpu.block_id"], counts["gpu.thread_id"]
    if recorded is not None:
        blocks = [max(a, b) for a, b in zip(blocks, recorded.block_counts)]
        threads = [max(a, b) for a, b in zip(threads, recorded.thread_counts_per_block)]
    try:
        launch = LaunchDimensions(tuple(blocks), tuple(threads))
    except ValueError as e:
        raise KernelArgumentError(f"the kernel's grid: {e}") from None
    # A GPU's limits, which the CPU target keeps (its per-thread storage is
    # sized by the threads of a block).
    if launch.num_threads_per_block > MAX_THREADS_PER_BLOCK:
        raise KernelArgumentError(f"the kernel's grid has {launch.num_threads_per_block} "
                                  f"threads per block, more than {MAX_THREADS_PER_BLOCK}")
    if any(n > MAX_GRID_DIM for n in launch.block_counts):
        raise KernelArgumentError(f"the kernel's grid {launch} has more than {MAX_GRID_DIM} "
                                  "blocks in a dimension")
    return launch


def _aliases(func) -> dict[int, int]:
    """Arguments that share a buffer slice with an earlier one
    (`xla.slice_index`, e.g. an in-place output and its operand): argument
    position -> the earlier one's. -xla-gpu-merge-pointers makes them one
    argument of the compiled function."""
    if "arg_attrs" not in func.attributes:
        return {}
    first, aliases = {}, {}
    for i, attrs in enumerate(ir.ArrayAttr(func.attributes["arg_attrs"])):
        attrs = ir.DictAttr(attrs)
        if "xla.slice_index" not in attrs:
            continue
        index = ir.IntegerAttr(attrs["xla.slice_index"]).value
        if index in first:
            aliases[i] = first[index]
        else:
            first[index] = i
    return aliases


def _signature(module: ir.Module, entry: str | None
               ) -> tuple[str, list[_Param], int, LaunchDimensions]:
    """The entry's name, tensor parameters, number of results and grid.
    Records the grid on the function (`xla.launch_dims`): optimization may
    delete an unused thread id, but its threads still run. A block-local
    argument (BLOCK_LOCAL_ATTR: its memory never touched) takes a buffer
    of BLOCK_LOCAL_DIMS."""
    func = _entry_function(module, entry)
    name = ir.StringAttr(func.attributes["sym_name"]).value
    ftype = ir.FunctionType(ir.TypeAttr(func.attributes["function_type"]).value)
    local = block_local_arguments(func)
    params = []
    for i, t in enumerate(ftype.inputs):
        if not isinstance(t, ir.RankedTensorType):
            raise KernelArgumentError(f"parameter {i} of @{name} has type {t}; the CPU "
                                      "runner takes tensors only")
        rt = ir.RankedTensorType(t)
        elt = str(rt.element_type)
        if elt not in _MLIR_TO_DTYPE or not rt.has_static_shape:
            raise KernelArgumentError(f"parameter {i} of @{name} has type {t}, which the "
                                      "CPU runner does not support")
        packed = int(elt[1:]) if elt in ("i2", "i4") else 0
        shape = BLOCK_LOCAL_DIMS if i in local else tuple(rt.shape)
        params.append(_Param(shape, _MLIR_TO_DTYPE[elt], str(t), packed))
    launch = _launch_dims(func)
    func.attributes[LAUNCH_DIMS_ATTR] = launch.to_attribute()
    return name, params, len(ftype.results), launch


def _same_storage(a: np.dtype, b: np.dtype) -> bool:
    """Whether arrays of `a` fit a parameter of `b` though the two differ:
    MLIR integers are signless (int8 and uint8 both fit an i8), and packed
    sub-byte integers the same way."""
    return (a.kind in "iu" and b.kind in "iu" and a.itemsize == b.itemsize) or any(
        {a, b} <= kind for kind in _SUB_BYTE)


# Buffer-protocol formats of numpy's integers by size: a signless MLIR
# integer parameter takes either signedness (_same_storage).
_INTEGER_FORMATS = {1: "b,B", 2: "h,H", 4: "i,I", 8: "l,L,q,Q"}


def _buffer_format(dtype: np.dtype) -> str | None:
    """The buffer-protocol format of numpy arrays of `dtype` (None: numpy
    exports no buffer of it, as of ml_dtypes' types)."""
    try:
        return memoryview(np.empty(1, dtype)).format
    except (ValueError, BufferError, TypeError):
        return None


def _host_call_spec(kernel: "CpuKernel"):
    """The HostCall.cpp spec of `kernel`'s calls (and the ctypes arrays it
    points to, to keep), or None where no call can take the fast path:
    packed sub-byte parameters, or an element type numpy exports no buffer
    of (bf16, the f8s)."""
    if kernel._packed:
        return None
    formats = []
    for p in kernel.params:
        own = _buffer_format(p.dtype)
        if own is None:
            return None
        formats.append(_INTEGER_FORMATS[p.dtype.itemsize] if p.dtype.kind in "iu" else own)

    def int64s(values):
        values = list(values)
        return (ctypes.c_int64 * max(1, len(values)))(*values)

    parts = dict(
        ranks=int64s(len(p.shape) for p in kernel.params),
        dims=int64s(d for p in kernel.params for d in p.shape),
        formats=(ctypes.c_char_p * len(formats))(*(f.encode() for f in formats)),
        passed=int64s(kernel._passed),
        in_place=int64s(i for pair in kernel._in_place for i in pair))
    spec = _capi.HostCallSpec(
        fn=kernel._fn, num_params=len(kernel.params), num_results=kernel.num_results,
        num_passed=len(kernel._passed), num_in_place=len(kernel._in_place),
        num_blocks=kernel.num_blocks, min_bytes_for_workers=MIN_BYTES_FOR_WORKERS,
        min_bytes_for_streaming=MIN_BYTES_FOR_STREAMING, ndarray=id(np.ndarray), **parts)
    return spec, parts


def _kernel_key(source: "str | EmittedKernel", opts: pipelines.PipelineOptions | None,
                entry: str | None) -> tuple[str, pipelines.PipelineOptions, str | None, str]:
    """CpuKernel's arguments as it compiles them, and their cache key."""
    if isinstance(source, EmittedKernel):
        source, entry = source.text, entry or source.entry
    opts = opts or CPU_DEFAULT_OPTIONS
    return source, opts, entry, hashlib.sha256(f"{source}\0{opts}\0{entry}".encode()).hexdigest()


class CpuKernel:
    """A kernel compiled for the host, from an EmittedKernel or from IR
    text (its entry: `entry`, else the one public function). Compiled once
    per IR text, options and entry (a cache keyed by their hash)."""

    def __new__(cls, source: "str | EmittedKernel", opts: pipelines.PipelineOptions | None = None,
                entry: str | None = None):
        source, opts, entry, key = _kernel_key(source, opts, entry)
        with _cache_lock:
            cached, started = _cache.get(key), _started.get(key)
            if cached is not None:
                return cached
            if started is None:
                # One lock a key: other kernels compile meanwhile (the
                # LLVM part of a compile runs without the GIL).
                lock = _compiling.setdefault(key, threading.Lock())
        if started is not None:
            return started.result()
        with lock:
            with _cache_lock:
                cached = _cache.get(key)
            if cached is None:
                try:
                    cached = super().__new__(cls)
                    cached._compile(source, opts, entry, key)
                    with _cache_lock:
                        _cache[key] = cached
                finally:
                    with _cache_lock:
                        _compiling.pop(key, None)
        return cached

    def __init__(self, source: "str | EmittedKernel",
                 opts: pipelines.PipelineOptions | None = None, entry: str | None = None):
        pass  # everything happens once, in __new__ -> _compile

    def _compile(self, source: str, opts: pipelines.PipelineOptions, entry: str | None,
                 key: str) -> None:
        with pipelines.compile_context():
            module = self._describe(source, opts, entry)
            if self._load_cached(key):
                return
            pipelines.run_pipeline(module, opts, stages=pipelines.CPU_STAGES)
            obj = compile_object(module, opt_level=3)
        self._load(obj)
        store_object(key, obj)

    def _describe(self, source: str, opts: pipelines.PipelineOptions,
                  entry: str | None) -> ir.Module:
        """Parses `source` (in the current context) and works out what its
        launches need; returns the module."""
        self._source, self._opts, self._llvm_ir = source, opts, None
        module = pipelines.parse_module(source)
        entry, self.params, self.num_results, self.launch = _signature(module, entry)
        self.aliases = _aliases(_entry_function(module, entry))
        self.num_blocks = self.launch.num_blocks
        self.entry = entry
        # What each launch needs, worked out once (a small kernel's launch
        # costs about as much in Python as it runs): the outputs that start
        # as their operand, the arguments the compiled function takes (an
        # alias passes its buffer once) and its packed interface's ctypes
        # arrays (the pointers, the block range).
        first_output = len(self.params) - self.num_results
        self._in_place = tuple((k, v) for k, v in self.aliases.items() if k >= first_output)
        self._passed = tuple(i for i in range(len(self.params)) if i not in self.aliases)
        self._values_type = ctypes.c_int64 * max(1, len(self._passed))
        self._packed = any(p.packed_bits for p in self.params)
        # The workers a call without num_threads takes once its first
        # calls are timed (PROBE_CALLS); until then self._probe_times holds
        # their seconds, on one thread and on the workers, and
        # self._probe_calls numbers the calls (0: the untimed first).
        self._workers = self._max_workers = max(1, min(_CPUS, self.num_blocks))
        self._probe_times = ([], []) if self._workers > 1 else None
        self._probe_calls = itertools.count()
        # Calls on one thread until the next probe (0: none planned), and
        # the wait after that one (REPROBE_CALLS).
        self._reprobe_in, self._reprobe_wait = 0, REPROBE_CALLS
        # Those seconds once decided (one thread's, the workers').
        self.probe_times: tuple[tuple[float, ...], tuple[float, ...]] | None = None
        return module

    def _load_cached(self, key: str) -> bool:
        """Loads the object the disk cache holds under `key`, if any (a
        damaged one is as none: compiled anew)."""
        obj = cached_object(key)
        if obj is None:
            return False
        try:
            self._load(obj)
        except JitError:
            return False
        return True

    def _load(self, obj: bytes) -> None:
        self._code = HostCode(obj)
        # The packed function: (pointers to the argument values, the block
        # range last) -> None; HostLaunch.cpp calls it.
        self._fn = self._code.lookup(f"_mlir_{self.entry}", needed_by=self.entry)
        # A call's checks, addresses, copy and launch in one C call
        # (HostCall.cpp), where its arrays allow.
        self._host_call = _host_call_spec(self)

    @property
    def workers(self) -> int:
        """The threads the calls without num_threads run on once their
        first ones are timed (choose_workers' pick; until then the workers'
        count)."""
        return self._workers

    @property
    def llvm_ir(self) -> str:
        """The kernel after the CPU pipeline (LLVM dialect), as compiled: the
        pipeline runs again here, the first time it is asked for (printing
        it at every compile cost up to ~1 ms of a small kernel's ~30)."""
        if self._llvm_ir is None:
            with pipelines.compile_context():
                module = pipelines.parse_module(self._source)
                _signature(module, self.entry)  # records the grid, as _compile did
                pipelines.run_pipeline(module, self._opts, stages=pipelines.CPU_STAGES)
                self._llvm_ir = str(module)
        return self._llvm_ir

    def check(self, arrays) -> None:
        """Raises KernelArgumentError unless `arrays` fit the parameters."""
        if len(arrays) != len(self.params):
            raise KernelArgumentError(
                f"@{self.entry} takes {len(self.params)} arrays "
                f"({len(self.params) - self.num_results} inputs, {self.num_results} "
                f"outputs), got {len(arrays)}")
        for i, (a, p) in enumerate(zip(arrays, self.params)):
            if not isinstance(a, np.ndarray):
                raise KernelArgumentError(f"argument {i} must be a numpy array, "
                                          f"got {type(a).__name__}")
            if a.shape != p.shape or (a.dtype != p.dtype and not _same_storage(a.dtype, p.dtype)):
                raise KernelArgumentError(
                    f"argument {i} must be {p.type_text} (shape {p.shape}, {p.dtype}), got "
                    f"shape {a.shape}, {a.dtype}")
            if not a.flags.c_contiguous:
                raise KernelArgumentError(f"argument {i} must be C-contiguous")
        for i in range(len(arrays) - self.num_results, len(arrays)):
            if not arrays[i].flags.writeable:
                raise KernelArgumentError(f"output argument {i} is not writeable")

    def __call__(self, *arrays: np.ndarray, num_threads: int | None = None) -> None:
        """Runs the whole grid; outputs (the last arrays) are written in place,
        on `num_threads` threads, or on those that ran its first calls
        faster (PROBE_CALLS, choose_workers)."""
        if num_threads is not None:
            self._launch(arrays, max(1, min(num_threads, self.num_blocks)), num_threads,
                         fast=False)
            return
        probes = self._probe_times
        if probes is None:
            self._launch(arrays, self._workers, _CPUS)
            if self._reprobe_in:
                self._reprobe_in -= 1
                if not self._reprobe_in:
                    self._workers = self._max_workers
                    self._probe_calls = itertools.count(1)  # no untimed first call
                    self._probe_times = ([], [])
            return
        one, many = probes
        call = next(self._probe_calls)  # atomic under the GIL
        if call == 0 or call > 2 * PROBE_CALLS:  # the first; or others still probing
            self._launch(arrays, self._workers, _CPUS)
            return
        workers = 1 if call <= PROBE_CALLS else self._workers
        start = time.perf_counter()
        self._launch(arrays, workers, _CPUS)
        (one if workers == 1 else many).append(time.perf_counter() - start)
        # Calls from other host threads may be timing too; whichever
        # decides first does (calls past the probes take the workers
        # meanwhile).
        if len(one) >= PROBE_CALLS and len(many) >= PROBE_CALLS and \
                self._probe_times is not None:
            self._workers = choose_workers(one, many, self._max_workers)
            self.probe_times = (tuple(one), tuple(many))
            self._probe_times = None
            if self._workers == 1 and min(one) >= MIN_SECONDS_FOR_WORKERS:
                self._reprobe_in, self._reprobe_wait = self._reprobe_wait, 2 * self._reprobe_wait

    def _launch(self, arrays, workers: int, threads: int, fast: bool = True) -> None:
        """One call on `workers` threads, an in-place output's copy on up to
        `threads`; in one C call if `fast` and the arrays allow."""
        if fast and self._host_call is not None:
            # The fast path: the same checks, copy and launch, or nothing
            # done where the arrays need the path below (its errors).
            if _capi.host_call(self._host_call[0], arrays, workers, threads):
                return
        self.check(arrays)
        buffers = ([_pack(a, p.packed_bits) if p.packed_bits else a
                    for a, p in zip(arrays, self.params)] if self._packed else list(arrays))
        # An output in place of its operand (one buffer slice, maybe another
        # shape of the same bytes): it starts as the operand -- XLA copies
        # the operand when the buffers differ -- and is the one buffer the
        # kernel reads and writes.
        # (Two inputs of one slice are read from the first.) Each buffer's
        # address is taken once (~0.5 us each).
        addresses = [_address(b) for b in buffers]
        for k, v in self._in_place:
            if addresses[k] != addresses[v]:
                _copy(addresses[k], addresses[v], buffers[k].nbytes, threads)
            buffers[v], addresses[v] = buffers[k], addresses[k]
        # One call without the GIL: the blocks in chunks, up to 8 a thread,
        # that the workers and the caller take as they are free
        # (HostLaunch.h).
        values = self._values_type(*(addresses[i] for i in self._passed))
        _capi.lib.xlaGpuHostLaunch(self._fn, values, len(self._passed), self.num_blocks,
                                   0, workers)  # 0: HostLaunch.h's defaultChunks
        if self._packed:
            for i in range(len(arrays) - self.num_results, len(arrays)):
                if self.params[i].packed_bits:
                    _unpack(buffers[i], self.params[i].packed_bits, arrays[i])


class StartedCompile:
    """A CpuKernel whose compile goes on without its caller: see
    start_compile."""

    def __init__(self, source: str, opts: pipelines.PipelineOptions, entry: str | None,
                 key: str):
        self._args, self._key = (source, opts, entry), key
        self._lock = threading.Lock()
        self._kernel: CpuKernel | None = None
        self._error: Exception | None = None
        self._compile: HostCompile | None = None
        self._context: ir.Context | None = None

    def _start(self) -> None:
        kernel = object.__new__(CpuKernel)
        context = pipelines.lend_compile_context()
        try:
            with context:
                module = kernel._describe(*self._args)
                if not kernel._load_cached(self._key):
                    pipeline, verify_each = pipelines.parsed_pipeline(
                        module, self._args[1], stages=pipelines.CPU_STAGES)
                    self._compile = HostCompile(module, pipeline, verify_each)
                    self._context = context
        except Exception as e:  # the kernel's error: result()'s
            self._error = e
        finally:
            if self._context is None:
                pipelines.give_back_compile_context(context)
        self._kernel = kernel

    def done(self) -> bool:
        """Whether result() would return (or raise) without waiting."""
        compile_ = self._compile
        return compile_ is None or compile_.done()

    def result(self) -> CpuKernel:
        """The kernel, once compiled (waiting without the GIL); raises what
        CpuKernel(...) would have."""
        with self._lock:
            if self._compile is not None:
                try:
                    obj = self._compile.result()
                    self._kernel._load(obj)
                    store_object(self._key, obj)
                except Exception as e:
                    self._error = e
                finally:
                    self._compile = None
                    pipelines.give_back_compile_context(self._context)
                    self._context = None
            with _cache_lock:
                if self._error is None:
                    _cache.setdefault(self._key, self._kernel)
                if _started.get(self._key) is self:
                    del _started[self._key]
        if self._error is not None:
            raise self._error
        return self._kernel


def start_compile(source: "str | EmittedKernel", opts: pipelines.PipelineOptions | None = None,
                  entry: str | None = None) -> StartedCompile:
    """CpuKernel(source, opts, entry) in two steps: the kernel parsed here,
    the rest of its compile (the CPU pipeline, LLVM) started on a thread of
    the plugin's (host_code.HostCompile), which needs no GIL; the kernel
    from the result() of what is returned. The JAX backend starts a
    kernel's compile when jax traces its call and ends it when XLA
    instantiates the call. An error of the kernel's is result()'s. A
    kernel already compiled or compiling is not compiled again."""
    source, opts, entry, key = _kernel_key(source, opts, entry)
    with _cache_lock:
        started = _started.get(key)
        if started is not None:
            return started
        if key in _cache or key in _compiling:
            return _Elsewhere(source, opts, entry, key)
        started = StartedCompile(source, opts, entry, key)
        started._lock.acquire()  # result() waits for _start
        _started[key] = started
    try:
        _finish_at_exit()
        started._start()
    finally:
        started._lock.release()
    return started


class _Elsewhere(StartedCompile):
    """start_compile's answer for a kernel compiled, or compiling on
    another thread (CpuKernel's own compile): result() is CpuKernel's."""

    def done(self) -> bool:
        with _cache_lock:
            return self._key in _cache

    def result(self) -> CpuKernel:
        return CpuKernel(*self._args)


class _ExitOrder:
    """A finalizer's referent (see _finish_at_exit)."""


@functools.cache
def _finish_at_exit() -> None:
    # The plugin's compiling threads run until the process ends: compiles
    # still going then are waited for, before the interpreter (and LLVM's
    # statics) go -- and before weakref.finalize's exit hook destroys the
    # compile contexts' pass managers (pipelines._CompileContext), which
    # those compiles run: atexit runs the last registered first, and
    # weakref registers its hook with the first finalizer there is, which
    # was the first compile context's, after this (a process that started
    # four compiles and exited died of SIGSEGV or SIGBUS).
    weakref.finalize(_ExitOrder(), lambda: None)

    def finish():
        with _cache_lock:
            started = list(_started.values())
        for s in started:
            try:
                s.result()
            except Exception:  # nobody asked for it
                pass
    atexit.register(finish)


def compile_kernels(sources: "list[str | EmittedKernel]",
                    opts: pipelines.PipelineOptions | None = None,
                    workers: int | None = None) -> list[CpuKernel]:
    """CpuKernel of each source, compiled on up to `workers` threads (the
    cores, by default): our passes and LLVM -- all of a compile but
    parsing the kernel -- run without the GIL. Raises the first source's
    error, in order."""
    workers = max(1, min(workers or _CPUS, len(sources)))
    if workers == 1:
        return [CpuKernel(s, opts) for s in sources]
    with ThreadPoolExecutor(workers, thread_name_prefix="xla-gpu-compile") as pool:
        futures = [pool.submit(CpuKernel, s, opts) for s in sources]
    return [f.result() for f in futures]


def run_on_cpu(source: "str | EmittedKernel", *arrays: np.ndarray,
               opts: pipelines.PipelineOptions | None = None, entry: str | None = None) -> None:
    """Compiles (or fetches from the cache) and runs the kernel in `source`."""
    CpuKernel(source, opts, entry)(*arrays)
