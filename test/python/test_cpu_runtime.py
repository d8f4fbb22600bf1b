"""Kernels run on the CPU with GPU semantics, compared with numpy."""

import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import ml_dtypes
import pytest

from xla_gpu import examples, pipelines
from xla_gpu.hlo import parse_hlo
from xla_gpu.runtime import CpuKernel, KernelArgumentError, cpu
from xla_gpu.runtime.packing import pack, unpack

rng = np.random.RandomState(0)


def gelu_bf16(x):
    """The seed's gelu.hlo in numpy, rounding to bf16 after every op as XLA."""
    b = ml_dtypes.bfloat16
    r = lambda v: v.astype(b).astype(np.float32)  # noqa: E731
    xf = x.astype(np.float32)
    cube = r(r(xf * xf) * xf)
    inner = r(r(xf + r(cube * np.float32(b(0.044708)))) * np.float32(b(0.79785)))
    return r(xf * r(r(r(np.tanh(inner)) + np.float32(1)) * np.float32(0.5))).astype(b)


def test_seed_gelu_is_bit_exact():
    kernel = CpuKernel(examples.path("seed_gelu.mlir").read_text())
    x = rng.randn(6, 512, 4096).astype(ml_dtypes.bfloat16)
    out = np.zeros_like(x)
    kernel(x, out)
    np.testing.assert_array_equal(out.view(np.uint16), gelu_bf16(x).view(np.uint16))


def test_kernels_are_cached():
    src = examples.path("seed_gelu.mlir").read_text()
    assert CpuKernel(src) is CpuKernel(src)
    assert CpuKernel(src) is not CpuKernel(src, pipelines.PipelineOptions(unroll=False))


def test_gpu_vectorization_gives_the_same_numbers():
    """The vector transfers the GPU path makes are numerically neutral."""
    src = examples.path("seed_gelu.mlir").read_text()
    x = rng.randn(6, 512, 4096).astype(ml_dtypes.bfloat16)
    plain, vectorized = np.zeros_like(x), np.zeros_like(x)
    CpuKernel(src)(x, plain)
    CpuKernel(src, pipelines.PipelineOptions(vectorize=True))(x, vectorized)
    np.testing.assert_array_equal(plain.view(np.uint16), vectorized.view(np.uint16))


# Phase 1 writes shmem[tid]; phase 2 reads shmem[(tid + 1) mod 128], written
# by another thread: wrong unless every thread finished phase 1 first.
BARRIER = """
#write = #xla_gpu.indexing_map<"(d0, d1) -> (d1 * 128 + d0), domain: d0 in [0, 127], d1 in [0, 15]">
#next = #xla_gpu.indexing_map<"(d0) -> ((d0 + 1) mod 128), domain: d0 in [0, 127]">
func.func @main(%in: tensor<2048xf32>, %out: tensor<2048xf32>) -> tensor<2048xf32> {
  %tid = gpu.thread_id x {xla.range = [0 : index, 127 : index]}
  %bid = gpu.block_id x {xla.range = [0 : index, 15 : index]}
  %shmem = xla_gpu.allocate_shared : tensor<128xf32>
  %i = xla_gpu.apply_indexing #write(%tid, %bid)
  %v = tensor.extract %in[%i] : tensor<2048xf32>
  %w = tensor.insert %v into %shmem[%tid] : tensor<128xf32>
  %s = xla_gpu.sync_threads %w : tensor<128xf32>
  %j = xla_gpu.apply_indexing #next(%tid)
  %u = tensor.extract %s[%j] : tensor<128xf32>
  %r = tensor.insert %u into %out[%i] : tensor<2048xf32>
  return %r : tensor<2048xf32>
}
"""


def test_barrier_separates_phases():
    x = rng.randn(2048).astype(np.float32)
    out = np.zeros_like(x)
    CpuKernel(BARRIER)(x, out)
    expected = np.roll(x.reshape(16, 128), -1, axis=1).reshape(-1)
    np.testing.assert_array_equal(out, expected)


def test_a_started_compile_gives_the_kernel_of_a_compile_in_one_step(monkeypatch):
    """start_compile parses the kernel on the caller's thread and runs its
    pipeline and LLVM on a thread of the plugin's: result() is the kernel
    CpuKernel gives (the same object after, from the cache), the compile
    is started once however often it is asked for, and the compile context
    it held goes back to the pool."""
    from xla_gpu.runtime import host_code
    monkeypatch.delenv("XLA_GPU_CACHE_DIR", raising=False)
    src = BARRIER + "// compiled by start_compile\n"  # a kernel of its own
    lent, compiled = dict(pipelines._lent), host_code.counts["compiled"]
    started = cpu.start_compile(src)
    assert cpu.start_compile(src) is started
    kernel = started.result()
    assert started.result() is kernel and started.done()
    assert CpuKernel(src) is kernel and cpu.start_compile(src).result() is kernel
    assert pipelines._lent == lent
    assert host_code.counts["compiled"] == compiled + 1
    x = rng.randn(2048).astype(np.float32)
    out = np.zeros_like(x)
    kernel(x, out)
    np.testing.assert_array_equal(out, np.roll(x.reshape(16, 128), -1, axis=1).reshape(-1))


# A barrier under an scf.if: the CPU pipeline refuses it.
BARRIER_IN_IF = """
func.func @main(%out: tensor<128xf32>, %flag: tensor<1xi1>) -> tensor<128xf32> {
  %c0 = arith.constant 0 : index
  %c = tensor.extract %flag[%c0] : tensor<1xi1>
  %tid = gpu.thread_id x {xla.range = [0 : index, 127 : index]}
  %r = scf.if %c -> (tensor<128xf32>) {
    %s = xla_gpu.sync_threads %out : tensor<128xf32>
    scf.yield %s : tensor<128xf32>
  } else {
    scf.yield %out : tensor<128xf32>
  }
  return %r : tensor<128xf32>
}
"""


@pytest.mark.parametrize("src, error, match", [
    # Refused where it is parsed, on the caller's thread...
    (BARRIER.replace("%out: tensor<2048xf32>)", "%out: tensor<2048xf32>, %c: i1)"),
     KernelArgumentError, "takes tensors only"),
    # ...and by the pipeline, on the plugin's.
    (BARRIER_IN_IF, pipelines.PipelineError,
     "'gpu.barrier' op inside control flow is not supported"),
])
def test_a_started_compile_fails_at_its_result(src, error, match):
    """A kernel start_compile cannot compile raises at result() what
    CpuKernel raises, and again at the next attempt (nothing is cached);
    its compile context goes back to the pool either way."""
    lent = dict(pipelines._lent)
    started = cpu.start_compile(src)
    with pytest.raises(error, match=match):
        started.result()
    assert pipelines._lent == lent
    with pytest.raises(error, match=match):
        CpuKernel(src)


# Four kernels' compiles started, and the interpreter left while they run.
_EXIT_WHILE_COMPILING = '''
import os
os.environ.pop("XLA_GPU_CACHE_DIR", None)
from xla_gpu.context import new_context
from xla_gpu.emitters import emit_kernel, find_fusion
from xla_gpu.hlo import parse_hlo
from xla_gpu.runtime import cpu
hlo = """HloModule m
fc {
  p = f32[4096,1024] parameter(0)
  c = f32[] constant(%s)
  b = f32[4096,1024] broadcast(c), dimensions={}
  e = f32[4096,1024] exponential(p)
  t = f32[4096,1024] tanh(e)
  ROOT r = f32[4096,1024] multiply(t, b)
}
ENTRY e {
  v = f32[4096,1024] parameter(0)
  ROOT f = f32[4096,1024] fusion(v), kind=kLoop, calls=fc
}
"""
with new_context():
    texts = [emit_kernel(find_fusion(parse_hlo(hlo % (k + 2)))).text for k in range(4)]
started = [cpu.start_compile(t) for t in texts]
print(sum(not s.done() for s in started), "running")
'''


def test_the_interpreter_exits_while_compiles_run():
    """Compiles still running at exit are waited for before weakref's
    exit hook destroys the pass managers they run (it ran first: SIGSEGV
    or SIGBUS at every exit of this script)."""
    done = subprocess.run([sys.executable, "-c", _EXIT_WHILE_COMPILING], capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip().endswith("running")


_LAUNCHES = """
import sys
import numpy as np
from xla_gpu.runtime import CpuKernel
sys.path.insert(0, sys.argv[1])
from test_cpu_runtime import BARRIER
kernel = CpuKernel(BARRIER)
x = np.random.RandomState(1).randn(2048).astype(np.float32)
expected = np.roll(x.reshape(16, 128), -1, axis=1).reshape(-1)
for i in range(300):
    out = np.zeros_like(x)
    kernel(x * (i % 3), out, num_threads=2)
    np.testing.assert_array_equal(out, expected * (i % 3))
print("same")
"""


@pytest.mark.parametrize("spin_us", ["0", "1000000"])
def test_launches_are_right_whether_threads_sleep_or_spin(spin_us):
    """Between launches the pool's workers, and a launch's caller waiting
    for the others' chunks, spin a while before they sleep
    ($XLA_GPU_SPIN_US, read once: in a process of its own). Back-to-back
    launches on two threads give the right outputs when every wait sleeps
    (0) and when none does (1 s)."""
    env = dict(os.environ, XLA_GPU_SPIN_US=spin_us)
    proc = subprocess.run([sys.executable, "-c", _LAUNCHES, str(Path(__file__).parent)],
                          capture_output=True, text=True, timeout=300, env=env)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.strip() == "same"


def test_storage_past_a_megabyte_is_on_the_heap():
    """2 MiB of shared memory does not fit a thread's stack next to
    everything else: -xla-gpu-lower-kernel-to-cpu puts it on the heap (one
    block a call), and the kernel runs as before, on several threads too."""
    big = BARRIER.replace("tensor<128xf32>", "tensor<524288xf32>")
    kernel = CpuKernel(big)
    x = rng.randn(2048).astype(np.float32)
    expected = np.roll(x.reshape(16, 128), -1, axis=1).reshape(-1)
    for threads in (1, 2):
        out = np.zeros_like(x)
        kernel(x, out, num_threads=threads)
        np.testing.assert_array_equal(out, expected)


# A butterfly with a combiner that is neither commutative nor associative:
# the result depends on which lane's value arrives where.
SHUFFLE = """
func.func private @combine(%a: f32, %b: f32) -> f32 {
  %c3 = arith.constant 3.0 : f32
  %t = arith.mulf %a, %c3 : f32
  %r = arith.subf %t, %b : f32
  return %r : f32
}
#idx = #xla_gpu.indexing_map<"(d0, d1) -> (d1 * 64 + d0), domain: d0 in [0, 63], d1 in [0, 3]">
func.func @main(%in: tensor<256xf32>, %out: tensor<256xf32>) -> tensor<256xf32> {
  %tid = gpu.thread_id x {xla.range = [0 : index, 63 : index]}
  %bid = gpu.block_id x {xla.range = [0 : index, 3 : index]}
  %i = xla_gpu.apply_indexing #idx(%tid, %bid)
  %v = tensor.extract %in[%i] : tensor<256xf32>
  %r = xla_gpu.shuffle_reduce(%v) to 16 combiner=@combine : f32
  %o = tensor.insert %r into %out[%i] : tensor<256xf32>
  return %o : tensor<256xf32>
}
"""


def shuffle_reduce_reference(values, max_distance, combine, warp=32):
    """shfl.down semantics, lane by lane: a lane whose partner is past the
    warp gets its own value back."""
    v = values.astype(np.float64).copy()
    d = max_distance
    while d >= 1:
        lane = np.arange(v.size) % warp
        partner = np.where(lane + d < warp, np.arange(v.size) + d, np.arange(v.size))
        v = combine(v, v[partner])
        d //= 2
    return v


def test_shuffle_lane_order():
    x = rng.randint(-4, 5, size=256).astype(np.float32)
    out = np.zeros_like(x)
    CpuKernel(SHUFFLE)(x, out)
    expected = shuffle_reduce_reference(x, 16, lambda a, b: a * 3 - b)
    np.testing.assert_array_equal(out, expected.astype(np.float32))


def counting_kernel(blocks: int, counters: int, counter: str) -> str:
    """Every thread of `blocks` blocks of 128 adds 1 to count[counter]
    (an index expression of %bid and %c0), atomically."""
    return f"""
func.func @main(%count: tensor<{counters}xi32>) -> tensor<{counters}xi32> {{
  %tid = gpu.thread_id x {{xla.range = [0 : index, 127 : index]}}
  %bid = gpu.block_id x {{xla.range = [0 : index, {blocks - 1} : index]}}
  %c0 = arith.constant 0 : index
  %one = arith.constant 1 : i32
  %r = xla_gpu.atomic_rmw %count[{counter}] : tensor<{counters}xi32> {{
  ^bb0(%cur: i32):
    %s = arith.addi %cur, %one : i32
    xla_gpu.yield %s : i32
  }}
  return %r : tensor<{counters}xi32>
}}
"""


# Every thread of 64 blocks adds 1 to one element: atomic across cores.
ATOMIC = counting_kernel(64, 1, "%c0")


@pytest.mark.parametrize("threads", [1, 2, 4])
def test_atomic_accumulation(threads):
    acc = np.zeros(1, dtype=np.int32)
    CpuKernel(ATOMIC)(acc, num_threads=threads)
    assert acc[0] == 64 * 128


# Every thread adds 1 to its block's counter: a block run twice, or not at
# all, shows as 2 * 128 or 0.
PER_BLOCK = counting_kernel(96, 96, "%bid")


@pytest.mark.parametrize("blocks", [9, 17, 1001])
def test_uneven_chunks_run_every_block_once(blocks):
    """A launch cuts its grid into up to 8 chunks a thread of at least 8
    blocks (HostLaunch.h's defaultChunks): 1001 blocks on 2 threads are 16
    chunks of 62 or 63, 17 on 3 threads 3 chunks, 9 one chunk a thread."""
    kernel = CpuKernel(counting_kernel(blocks, blocks, "%bid"))
    for threads in (1, 2, 3, 8):
        count = np.zeros(blocks, dtype=np.int32)
        kernel(count, num_threads=threads)
        np.testing.assert_array_equal(count, np.full(blocks, 128, np.int32))


def test_launch_runs_every_block_once():
    """The launch (HostLaunch.cpp) cuts the grid into chunks for the
    calling thread and the pool's workers; launches from several host
    threads at once share the workers or run on their callers."""
    kernel = CpuKernel(PER_BLOCK)
    for threads in (1, 2, 3, 8):
        count = np.zeros(96, dtype=np.int32)
        kernel(count, num_threads=threads)
        np.testing.assert_array_equal(count, np.full(96, 128, np.int32))

    def launches(threads):
        counts = []
        for _ in range(50):
            counts.append(np.zeros(96, dtype=np.int32))
            kernel(counts[-1], num_threads=threads)
        return counts

    with ThreadPoolExecutor(4) as pool:
        results = list(pool.map(launches, (1, 2, 2, 4)))
    for counts in results:
        np.testing.assert_array_equal(np.stack(counts), np.full((50, 96), 128, np.int32))


def iterating_kernel(iterations: int) -> str:
    """Each of 4 x 128 threads runs x = x * 0.999 + 0.5 `iterations` times
    on its element of 2 KB: its time grows with `iterations`, not bytes."""
    return f"""
#elem = #xla_gpu.indexing_map<"(d0, d1) -> (d1 * 128 + d0), domain: d0 in [0, 127], d1 in [0, 3]">
func.func @main(%in: tensor<512xf32>, %out: tensor<512xf32>) -> tensor<512xf32> {{
  %tid = gpu.thread_id x {{xla.range = [0 : index, 127 : index]}}
  %bid = gpu.block_id x {{xla.range = [0 : index, 3 : index]}}
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = arith.constant {iterations} : index
  %scale = arith.constant 0.999 : f32
  %half = arith.constant 0.5 : f32
  %i = xla_gpu.apply_indexing #elem(%tid, %bid)
  %v = tensor.extract %in[%i] : tensor<512xf32>
  %r = scf.for %k = %c0 to %n step %c1 iter_args(%a = %v) -> f32 {{
    %m = arith.mulf %a, %scale : f32
    %s = arith.addf %m, %half : f32
    scf.yield %s : f32
  }}
  %o = tensor.insert %r into %out[%i] : tensor<512xf32>
  return %o : tensor<512xf32>
}}
"""


def iterate(x: np.ndarray, iterations: int) -> np.ndarray:
    for _ in range(iterations):
        x = x * np.float32(0.999) + np.float32(0.5)
    return x


def _threads_of_calls(kernel: CpuKernel, iterations: int, calls: int) -> list[int]:
    """The threads each of `calls` calls of `kernel` (an
    iterating_kernel(iterations)) ran on, its result checked each time."""
    x = rng.randn(512).astype(np.float32)
    ran = []
    launch = kernel._launch

    def recorded(arrays, threads_used, threads, fast=True):
        ran.append(threads_used)
        launch(arrays, threads_used, threads, fast)

    kernel._launch = recorded
    try:
        for _ in range(calls):
            out = np.zeros_like(x)
            kernel(x, out)
            np.testing.assert_allclose(out, iterate(x, iterations), rtol=1e-5)
    finally:
        del kernel._launch  # the class's again (the kernel is cached)
    return ran


@pytest.mark.skipif(cpu._CPUS < 2, reason="one core: every call runs on it")
def test_workers_follow_a_kernels_time_not_its_bytes():
    """A kernel's first call runs on the workers, untimed; its next
    PROBE_CALLS run on one thread and the PROBE_CALLS after them on the
    workers, timed; and its
    later calls take what choose_workers makes of those times: one thread
    for one over in microseconds (4 KB, one step). Every call's result is
    right."""
    workers = min(cpu._CPUS, 4)
    probes = cpu.PROBE_CALLS
    for iterations in (1, 20000):
        kernel = CpuKernel(iterating_kernel(iterations))
        ran = _threads_of_calls(kernel, iterations, 2 * probes + 2)
        assert ran[:-1] == [workers] + [1] * probes + [workers] * probes, ran
        one, many = kernel.probe_times
        assert len(one) == len(many) == probes
        assert kernel.workers == ran[-1] == cpu.choose_workers(one, many, workers)
        if iterations == 1:
            assert kernel.workers == 1, (one, many)


@pytest.mark.skipif(cpu._CPUS < 2, reason="one core: every call runs on it")
def test_a_kernel_left_on_one_thread_is_probed_again(monkeypatch):
    """A kernel whose probe picked one thread by its times (a spell where
    the other core was busy) is probed again after REPROBE_CALLS calls on
    one thread, and then takes what that probe's times say; the wait
    doubles each time."""
    monkeypatch.setattr(cpu, "REPROBE_CALLS", 4)
    picks = iter([1, 2])
    monkeypatch.setattr(cpu, "choose_workers", lambda one, many, workers: next(picks))
    probes = cpu.PROBE_CALLS
    kernel = CpuKernel(iterating_kernel(20001))
    workers = kernel.workers
    ran = _threads_of_calls(kernel, 20001, 1 + 2 * probes + 4 + 2 * probes + 3)
    assert ran == ([workers] + [1] * probes + [workers] * probes + [1] * 4 + [1] * probes
                   + [workers] * probes + [2] * 3), ran
    assert kernel.workers == 2 and kernel._reprobe_in == 0
    assert kernel._reprobe_wait == 8  # for the next time it is left on one thread


def test_choose_workers():
    """One thread where its fastest probe was under MIN_SECONDS_FOR_WORKERS
    or ONE_THREAD_MARGIN faster than the workers' fastest; else the
    workers (a noisy spell slowing a few probes does not take them)."""
    fast, slow = cpu.MIN_SECONDS_FOR_WORKERS / 2, cpu.MIN_SECONDS_FOR_WORKERS * 10
    assert cpu.choose_workers([fast, slow, slow], [fast / 4] * 3, 8) == 1
    assert cpu.choose_workers([slow] * 3, [slow / 2, slow * 3, slow * 3], 2) == 2
    assert cpu.choose_workers([slow] * 3, [slow * 1.05] * 3, 2) == 2
    assert cpu.choose_workers([slow * 2, slow, slow * 2], [slow * 1.5] * 3, 4) == 1


# 1000 elements on 8 blocks of 128 threads: the last block is ragged.
RAGGED = """
#map = #xla_gpu.indexing_map<"(d0, d1) -> (d1 * 128 + d0), domain: d0 in [0, 127], d1 in [0, 7], d1 * 128 + d0 in [0, 999]">
func.func @main(%in: tensor<1000xf32>, %out: tensor<1000xf32>) -> tensor<1000xf32> {
  %tid = gpu.thread_id x {xla.range = [0 : index, 127 : index]}
  %bid = gpu.block_id x {xla.range = [0 : index, 7 : index]}
  %r = xla_gpu.loop (%tid, %bid) -> (%i) in #map iter_args(%it = %out) -> (tensor<1000xf32>) {
    %v = tensor.extract %in[%i] : tensor<1000xf32>
    %d = arith.addf %v, %v : f32
    %w = tensor.insert %d into %it[%i] : tensor<1000xf32>
    xla_gpu.yield %w : tensor<1000xf32>
  }
  return %r : tensor<1000xf32>
}
"""


def test_ragged_last_block():
    x = rng.randn(1000).astype(np.float32)
    # Guard cells around the output catch writes past the end.
    buf = np.full(1016, 7.0, dtype=np.float32)
    out = buf[8:1008]
    CpuKernel(RAGGED)(x, out)
    np.testing.assert_array_equal(out, 2 * x)
    assert (buf[:8] == 7).all() and (buf[1008:] == 7).all()


def test_transpose_shuffle_atomics_example():
    """The shared-memory transpose, warp reduction and atomics example."""
    kernel = CpuKernel(examples.path("transpose_reduce.mlir").read_text())
    x = rng.randint(-3, 4, size=(128, 32)).astype(np.float32)
    out = np.zeros((32, 128), np.float32)
    acc = np.zeros(2, np.float32)
    kernel(x, out, acc)
    np.testing.assert_array_equal(out, x.T)
    # Thread t of every one of the 4 blocks reduces column 0 over its warp
    # (lane by lane, as shfl.down does), adds its value to acc[0] and takes
    # the maximum into acc[1].
    lanes = shuffle_reduce_reference(x[:, 0], 16, lambda a, b: a + b)
    assert acc[0] == 4 * lanes.sum()
    assert acc[1] == max(0.0, lanes.max())


def test_array_addresses():
    """A kernel's arguments are passed by the address of their first byte,
    read through the buffer protocol where numpy exports a writable buffer
    and through .ctypes otherwise (ml_dtypes' types, read-only and empty
    arrays): the same address either way, views included."""
    from xla_gpu.runtime.cpu import _address
    base = np.arange(48, dtype=np.int8).reshape(3, 16)
    read_only = np.zeros(16, np.float32)
    read_only.flags.writeable = False
    arrays = [np.zeros(16, np.float32), np.zeros((2, 3), np.complex64), np.zeros(5, np.bool_),
              np.zeros(16, ml_dtypes.bfloat16), np.zeros(16, ml_dtypes.float8_e4m3fn),
              np.zeros(16, ml_dtypes.float8_e5m2), np.zeros(16, ml_dtypes.int4),
              np.zeros(0, np.float32), np.zeros((), np.float32), read_only, base[1],
              base[1:].view(np.int16)]
    for a in arrays:
        assert _address(a) == a.__array_interface__["data"][0]
    assert _address(base[1]) == _address(base) + 16


def test_aligned_arrays_start_on_64_byte_boundaries():
    """aligned_empty and aligned give C-contiguous arrays whose first byte
    is on a 64-byte boundary, as XLA's buffers are (numpy's large arrays
    start 16 or 32 bytes past one; an empty array has no first byte);
    aligned copies only what is not such an array, values and shape kept.
    run-hlo's outputs are aligned too."""
    from xla_gpu.runtime.cpu import ALIGNMENT, aligned, aligned_empty
    from xla_gpu.tools.run_hlo import _OutputPool
    assert ALIGNMENT == 64
    for shape, dtype in [((1024, 1024), np.float32), ((3, 5), ml_dtypes.bfloat16),
                         ((7,), ml_dtypes.int4), ((0, 4), np.float32), ((), np.complex64),
                         ((33,), np.bool_)]:
        a = aligned_empty(shape, dtype)
        assert (a.shape, a.dtype) == (shape, np.dtype(dtype)) and a.flags.c_contiguous
        assert a.flags.writeable and (a.size == 0 or a.ctypes.data % 64 == 0)
    rng = np.random.RandomState(0)
    x = rng.rand(1024, 1024).astype(np.float32)
    unaligned = np.empty(x.size + 1, np.float32)[1:].reshape(x.shape)
    unaligned[...] = x
    assert unaligned.ctypes.data % 64 != 0
    copy = aligned(unaligned)
    assert copy is not unaligned and copy.ctypes.data % 64 == 0 and np.array_equal(copy, x)
    assert aligned(copy) is copy
    strided = aligned(copy.T)  # not C-contiguous: copied C-contiguous
    assert strided.flags.c_contiguous and np.array_equal(strided, x.T)
    inst = parse_hlo("HloModule m\nENTRY e {\n  p0 = f32[1000,3] parameter(0)\n"
                     "  p1 = bf16[17] parameter(1)\n"
                     "  ROOT t = (f32[1000,3], bf16[17]) tuple(p0, p1)\n}\n").entry.root
    assert all(o.ctypes.data % 64 == 0 for o in _OutputPool(inst).take())


def test_bad_arrays_are_rejected_before_running():
    kernel = CpuKernel(BARRIER)
    x = np.zeros(2048, np.float32)
    with pytest.raises(KernelArgumentError, match="takes 2 arrays .1 inputs, 1 outputs., got 1"):
        kernel(x)
    with pytest.raises(KernelArgumentError, match=r"argument 1 must be tensor<2048xf32> "
                                                  r"\(shape \(2048,\), float32\), got shape "
                                                  r"\(2047,\), float32"):
        kernel(x, np.zeros(2047, np.float32))
    with pytest.raises(KernelArgumentError, match="argument 0 must be tensor<2048xf32>"):
        kernel(np.zeros(2048, np.float64), x)
    with pytest.raises(KernelArgumentError, match="argument 1 must be C-contiguous"):
        kernel(x, np.zeros(4096, np.float32)[::2])
    with pytest.raises(KernelArgumentError, match="must be a numpy array"):
        kernel(x, [0.0] * 2048)


def test_barrier_in_control_flow_is_reported():
    scalar_flag = BARRIER_IN_IF.replace("%flag: tensor<1xi1>", "%c: i1").replace(
        "  %c0 = arith.constant 0 : index\n  %c = tensor.extract %flag[%c0] : tensor<1xi1>\n",
        "")
    assert "tensor.extract" not in scalar_flag
    with pytest.raises(KernelArgumentError, match="takes tensors only"):
        CpuKernel(scalar_flag)
    with pytest.raises(pipelines.PipelineError,
                       match="'gpu.barrier' op inside control flow is not supported"):
        CpuKernel(BARRIER_IN_IF)


def test_missing_grid_size_is_reported():
    src = """
    func.func @main(%out: tensor<4xf32>) -> tensor<4xf32> {
      %tid = gpu.thread_id x
      %v = arith.constant 1.0 : f32
      %r = tensor.insert %v into %out[%tid] : tensor<4xf32>
      return %r : tensor<4xf32>
    }"""
    with pytest.raises(pipelines.PipelineError, match="needs an xla.range attribute"):
        CpuKernel(src)


# The transpose emitter's scheme on a shape that is not a multiple of the
# 32x32 tile: 100x36 -> 36x100, 4 x 2 tiles, bounds checks on the edges.
TRANSPOSE = examples.path("transpose.mlir").read_text()


@pytest.mark.parametrize("vectorize", [False, True])
def test_transpose_ragged_tiles(vectorize):
    kernel = CpuKernel(TRANSPOSE, pipelines.PipelineOptions(vectorize=vectorize))
    x = rng.randn(100, 36).astype(np.float32)
    out = np.zeros((36, 100), np.float32)
    kernel(x, out)
    np.testing.assert_array_equal(out, x.T)


# XLA's row reduction: each thread sums two elements, warps reduce with
# shuffles, lane 0 of each warp leaves its sum in shared memory, and after a
# barrier the first warp reduces those and thread 0 writes the row's sum.
ROW_REDUCTION = examples.path("row_reduction.mlir").read_text()


def test_row_reduction():
    x = rng.randint(-8, 9, size=(64, 256)).astype(np.float32)  # exact in f32
    out = np.zeros(64, np.float32)
    CpuKernel(ROW_REDUCTION)(x, out)
    np.testing.assert_array_equal(out, x.sum(axis=1))


@pytest.mark.parametrize("dtype, bits", [(ml_dtypes.int4, 4), (ml_dtypes.uint4, 4),
                                         (ml_dtypes.int2, 2)])
def test_sub_byte_packing_is_xlas(dtype, bits):
    """The kernels read s4/u4/s2 packed; the runner packs numpy's one-a-byte
    arrays exactly as XLA holds them in its own buffers (read back from a
    jax array on the CPU device)."""
    import ctypes
    import jax
    from xla_gpu.runtime.cpu import _pack, _unpack

    info = ml_dtypes.iinfo(dtype)
    a = np.random.RandomState(bits).randint(info.min, info.max + 1, 37).astype(dtype)
    packed = _pack(a, bits)
    x = jax.device_put(a)
    xla_bytes = bytes((ctypes.c_uint8 * packed.size).from_address(x.unsafe_buffer_pointer()))
    assert packed.tobytes() == xla_bytes
    back = np.zeros_like(a)
    _unpack(packed, bits, back)
    np.testing.assert_array_equal(back.astype(np.int32), a.astype(np.int32))


# f64 -> f16 and f64 -> bf16: compiler-rt helpers on the host unless lowered
# in IR (a fresh process may not have them). The cases that a double
# rounding through f32 would get wrong are the ones that matter: values just
# above or below a halfway point of the narrow type, by less than an f32 ulp.
NARROWING = """
#map = #xla_gpu.indexing_map<"(d0, d1) -> (d1 * 128 + d0), domain: d0 in [0, 127], d1 in [0, 63], d1 * 128 + d0 in [0, {last}]">
func.func @main(%in: tensor<{n}xf64>, %h: tensor<{n}xf16>, %b: tensor<{n}xbf16>)
    -> (tensor<{n}xf16>, tensor<{n}xbf16>) {{
  %tid = gpu.thread_id x {{xla.range = [0 : index, 127 : index]}}
  %bid = gpu.block_id x {{xla.range = [0 : index, 63 : index]}}
  %r:2 = xla_gpu.loop (%tid, %bid) -> (%i) in #map iter_args(%ih = %h, %ib = %b)
      -> (tensor<{n}xf16>, tensor<{n}xbf16>) {{
    %v = tensor.extract %in[%i] : tensor<{n}xf64>
    %vh = arith.truncf %v : f64 to f16
    %vb = arith.truncf %v : f64 to bf16
    %wh = tensor.insert %vh into %ih[%i] : tensor<{n}xf16>
    %wb = tensor.insert %vb into %ib[%i] : tensor<{n}xbf16>
    xla_gpu.yield %wh, %wb : tensor<{n}xf16>, tensor<{n}xbf16>
  }}
  return %r#0, %r#1 : tensor<{n}xf16>, tensor<{n}xbf16>
}}
"""


def narrowing_cases(n):
    """Halfway points of f16 and bf16 nudged by a few f64 ulps either way,
    subnormals, overflow boundaries, zeros, infinities, NaN, random bits."""
    r = np.random.RandomState(1)
    halves = []
    for narrow in (np.float16, ml_dtypes.bfloat16):
        bits = r.randint(0, 0x7c00 if narrow is np.float16 else 0x7f80, size=n // 8)
        lo = bits.astype(np.uint16).view(narrow).astype(np.float64)
        hi = (bits + 1).astype(np.uint16).view(narrow).astype(np.float64)
        mid = (lo + hi) / 2
        for ulps in (-2, -1, 0, 1, 2):
            halves.append(np.nextafter(mid, np.inf * ulps) if ulps else mid)
    special = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 65504.0, 65519.99, 65520.0,
                        5.96e-8, 2.98e-8, 2.99e-8, 1e-300, -1e-300, 3.4e38, 3.5e38, 1e300,
                        np.finfo(np.float64).max, -np.finfo(np.float64).tiny])
    random_bits = r.randint(0, 2**63, size=n // 4, dtype=np.int64).view(np.float64)
    values = np.concatenate([*halves, special, random_bits, -np.concatenate(halves)])
    signs = np.where(r.rand(values.size) < 0.5, -1.0, 1.0)
    with np.errstate(invalid="ignore"):
        return (values * signs)[:n]


def correctly_rounded(x, narrow):
    """x rounded once to `narrow` (to nearest, ties to even): of the three
    patterns around a first guess, the nearest to x. Differences of nearby
    values are exact in f64 (Sterbenz), so the comparison is too."""
    with np.errstate(all="ignore"):
        guess = x.astype(np.float32).astype(narrow).view(np.uint16).astype(np.int32)
        best = guess.copy()
        best_error = np.abs(guess.astype(np.uint16).view(narrow).astype(np.float64) - x)
        for step in (-1, 1):
            candidate = guess + step
            ok = (candidate >= 0) & (candidate <= 0xffff) & ((candidate & 0x7fff) != 0x8000)
            value = np.where(ok, candidate, guess).astype(np.uint16).view(narrow).astype(
                np.float64)
            error = np.abs(value - x)
            closer = ok & ((error < best_error) | ((error == best_error) & (candidate % 2 == 0)
                                                   & np.isfinite(value)))
            best = np.where(closer, candidate, best)
            best_error = np.where(closer, error, best_error)
        # Past the largest finite value by half an ulp or more: infinity
        # (the distance comparison above would keep the finite value).
        top = float(ml_dtypes.finfo(narrow).max)
        below = float(np.nextafter(narrow(top), narrow(0)))
        over = np.abs(x) >= top + (top - below) / 2
        inf = np.array([np.inf], narrow).view(np.uint16).astype(np.int32)[0]
        best = np.where(over, inf | (np.signbit(x) << 15), best)
    return best.astype(np.uint16)


def test_f64_narrowing_is_correctly_rounded_without_helpers():
    """f64 -> f16/bf16 rounds once, as the GPU's cvt.rn.f16.f64 and
    cvt.rn.bf16.f64 do. (XLA:CPU rounds through f32 -- twice: it differs
    just off the halfway points, so it is the reference only elsewhere.)"""
    from xla_gpu.reference import run_with_xla
    n = 128 * 64
    x = narrowing_cases(n)
    assert x.size == n
    h = np.zeros(n, np.float16)
    b = np.zeros(n, ml_dtypes.bfloat16)
    kernel = CpuKernel(NARROWING.format(n=n, last=n - 1))
    # No compiler-rt call is left for the JIT to resolve.
    assert "__trunc" not in kernel.llvm_ir
    kernel(x, h, b)
    nan = np.isnan(x)
    assert np.isnan(h[nan].astype(np.float32)).all() and np.isnan(b[nan].astype(np.float32)).all()
    np.testing.assert_array_equal(h[~nan].view(np.uint16), correctly_rounded(x, np.float16)[~nan])
    np.testing.assert_array_equal(b[~nan].view(np.uint16),
                                  correctly_rounded(x, ml_dtypes.bfloat16)[~nan])
    # numpy rounds f64 -> f16 once too: a second opinion.
    with np.errstate(over="ignore"):
        np.testing.assert_array_equal(h[~nan].view(np.uint16),
                                      x[~nan].astype(np.float16).view(np.uint16))
    # Away from the halfway points XLA:CPU agrees bit for bit, except where
    # it flushes f32 subnormals to zero (its threads run with FTZ/DAZ).
    want_h, want_b = run_with_xla(
        f"HloModule m\nENTRY e {{\n  p = f64[{n}] parameter(0)\n"
        f"  h = f16[{n}] convert(p)\n  b = bf16[{n}] convert(p)\n"
        f"  ROOT t = (f16[{n}], bf16[{n}]) tuple(h, b)\n}}\n", [x])
    with np.errstate(over="ignore"):
        single = ~nan & (x.astype(np.float32).astype(np.float64) == x) & (
            (np.abs(x) >= np.finfo(np.float32).tiny) | (x == 0))
    assert single.sum() > 1000
    np.testing.assert_array_equal(h[single].view(np.uint16), want_h[single].view(np.uint16))
    np.testing.assert_array_equal(b[single].view(np.uint16), want_b[single].view(np.uint16))


def test_unresolved_symbol_is_an_error_not_a_jump_to_null():
    from conftest import UNRESOLVED_HELPER_KERNEL
    from xla_gpu.runtime import JitError
    with pytest.raises(JitError, match="cannot resolve xla_gpu_no_such_helper .needed by @main"):
        CpuKernel(UNRESOLVED_HELPER_KERNEL)


@pytest.mark.parametrize("bits,dtype", [(4, "int4"), (4, "uint4"), (2, "int2"), (2, "uint2")])
@pytest.mark.parametrize("size", [1, 2, 3, 7, 64, 1001])
def test_packing_matches_xlas_layout(bits, dtype, size):
    """pack/unpack (the packed buffers of sub-byte parameters) against the
    layout element by element: 8 / bits a byte, the first in the low bits,
    the last byte padded with zeros; unpack gives the values back."""
    dt = getattr(ml_dtypes, dtype)
    lo = 0 if dtype.startswith("u") else -(1 << (bits - 1))
    a = np.random.RandomState(size).randint(lo, lo + (1 << bits), size).astype(dt)
    per, mask = 8 // bits, (1 << bits) - 1
    want = np.zeros(-(-size // per), np.uint8)
    for i, v in enumerate(a.view(np.uint8)):
        want[i // per] |= (int(v) & mask) << (i % per * bits)
    packed = pack(a, bits)
    assert packed.dtype == np.uint8 and np.array_equal(packed, want)
    back = np.zeros_like(a)
    unpack(packed, bits, back)
    assert np.array_equal(back.astype(np.int32), a.astype(np.int32))


@pytest.mark.parametrize("ty", ["s8", "u8", "s16", "u16", "s32", "u32"])
def test_integer_division_is_exact(ty):
    """The CPU target divides i8/i16 through f32 and i32 through f64
    (vectorizable): every s8/u8 pair, and s16/u16/s32/u32 pairs with the
    extremes (and quotients just below integers: a = q b - 1) and random
    ones of every magnitude, against XLA:CPU bit for bit
    -- divide and remainder with XLA's semantics (x / 0 = -1, x % 0 = x,
    MIN / -1 = MIN, MIN % -1 = 0), which the emitters guard around the
    division."""
    from mlir import ir
    from xla_gpu.emitters import emit_fusion, find_fusion
    from xla_gpu.hlo import parse_hlo
    from xla_gpu.reference import run_with_xla
    from xla_gpu.tools.test_correctness import reference_text
    dtype = {"s8": np.int8, "u8": np.uint8, "s16": np.int16, "u16": np.uint16,
             "s32": np.int32, "u32": np.uint32}[ty]
    info = np.iinfo(dtype)
    if info.bits == 8:
        values = np.arange(info.min, info.max + 1)
        a, b = (v.astype(dtype).reshape(-1) for v in np.meshgrid(values, values))
    else:
        rng = np.random.RandomState(0)
        edges = np.array([info.min, info.min + 1, -2, -1, 0, 1, 2, 3, 7, 255, 256,
                          info.max - 1, info.max], np.int64)
        edges = edges[(edges >= info.min) & (edges <= info.max)]
        # Random pairs of random magnitudes (a divisor of a few bits as
        # often as a wide one), and a = q b - 1 for large q: the quotients
        # closest to an integer.
        bits = rng.randint(1, info.bits + 1, (2, 60000))
        wide = [rng.randint(0, 2 ** 62, 60000) % (2 ** k) for k in bits]
        signs = rng.choice([-1, 1] if info.min else [1], (2, 60000))
        random_a, random_b = (np.clip(s * w, info.min, info.max) for s, w in zip(signs, wide))
        near_b = rng.randint(2, 1 << 15, 20000)
        near_a = near_b * (info.max // near_b) - 1
        a = np.concatenate([np.repeat(edges, edges.size), random_a, near_a]).astype(dtype)
        b = np.concatenate([np.tile(edges, edges.size), random_b, near_b]).astype(dtype)
    n = a.size
    text = (f"HloModule m\n\nfused {{\n  a = {ty}[{n}] parameter(0)\n  b = {ty}[{n}] parameter(1)\n"
            f"  d = {ty}[{n}] divide(a, b)\n  r = {ty}[{n}] remainder(a, b)\n"
            f"  ROOT t = ({ty}[{n}], {ty}[{n}]) tuple(d, r)\n}}\n\nENTRY e {{\n"
            f"  a = {ty}[{n}] parameter(0)\n  b = {ty}[{n}] parameter(1)\n"
            f"  ROOT f = ({ty}[{n}], {ty}[{n}]) fusion(a, b), kind=kLoop, calls=fused\n}}\n")
    fusion = find_fusion(parse_hlo(text))
    quotient, remainder = np.zeros(n, dtype), np.zeros(n, dtype)
    with ir.Context():
        kernel = CpuKernel(str(emit_fusion(fusion)))
    kernel(a, b, quotient, remainder)
    want = run_with_xla(reference_text(fusion.fused_computation), [a, b])
    np.testing.assert_array_equal(quotient, np.asarray(want[0]))
    np.testing.assert_array_equal(remainder, np.asarray(want[1]))


@pytest.mark.parametrize("workers", [1, 2])
@pytest.mark.parametrize("offset", [0, 3, 16])
def test_streaming_copy_of_an_aliased_operand_is_exact(workers, offset):
    """The copy an in-place output starts from, past MIN_BYTES_FOR_STREAMING
    (streaming stores after a head up to a 16-byte boundary and before a
    tail shorter than a line): every byte is the source's, and the bytes
    around the destination are not touched. Sizes and offsets make the
    head, the tail and the split between the workers fall mid-line."""
    from xla_gpu.runtime import cpu
    n = cpu.MIN_BYTES_FOR_STREAMING + 77
    src = np.frombuffer(rng.bytes(n + 32), np.uint8)[5:5 + n]
    backing = np.full(n + 64, 0xAB, np.uint8)
    dst = backing[offset:offset + n]
    cpu._copy(cpu._address(dst), cpu._address(src), n, workers)
    np.testing.assert_array_equal(dst, src)
    assert (backing[:offset] == 0xAB).all() and (backing[offset + n:] == 0xAB).all()


def test_host_indices_are_64_bit():
    """The host computes indices in 64 bits (CPU_DEFAULT_OPTIONS): no
    32-bit offset is extended before an address, which is what 32-bit
    indices (the GPU's for small tensors) give."""
    import dataclasses
    import re
    from xla_gpu.runtime import CPU_DEFAULT_OPTIONS
    src = examples.path("seed_gelu.mlir").read_text()
    extended = re.compile(r"llvm\.[sz]ext %\S+ : i32 to i64")
    assert not extended.search(CpuKernel(src).llvm_ir)
    narrow = dataclasses.replace(CPU_DEFAULT_OPTIONS, index_bitwidth=32)
    assert extended.search(CpuKernel(src, narrow).llvm_ir)


@pytest.mark.parametrize("threads", [1, 2])
def test_a_kernel_of_more_buffers_than_the_packed_arguments_hold_inline(threads):
    """19 operands and the result: 22 packed arguments with the block
    range, past the 16 PackedArgs (HostLaunch.h) holds in itself, on one
    thread (the launch's own arguments) and on two (a chunked launch)."""
    from mlir import ir

    from xla_gpu.emitters import emit_fusion, find_fusion
    from xla_gpu.hlo import parse_hlo

    n, k = 4096, 19
    params = "".join(f"  a{i} = f32[{n}] parameter({i})\n" for i in range(k))
    sums = "".join(f"  s{i} = f32[{n}] add(s{i - 1}, a{i})\n" for i in range(1, k))
    args = ", ".join(f"a{i}" for i in range(k))
    text = (f"HloModule m\n\nfused {{\n{params}  s0 = f32[{n}] add(a0, a0)\n{sums}"
            f"  ROOT r = f32[{n}] add(s{k - 1}, s{k - 1})\n}}\n\nENTRY e {{\n{params}"
            f"  ROOT f = f32[{n}] fusion({args}), kind=kLoop, calls=fused\n}}\n")
    with ir.Context():
        kernel = CpuKernel(str(emit_fusion(find_fusion(parse_hlo(text)))))
    xs = [np.full(n, float(i + 1), np.float32) for i in range(k)]
    out = np.zeros(n, np.float32)
    kernel(*xs, out, num_threads=threads)
    want = 2 * (2 * xs[0] + sum(xs[1:]))
    np.testing.assert_array_equal(out, want)


def _counting_host_calls(monkeypatch) -> list[int]:
    """What each call of HostCall.cpp's fast path returned (1: it ran)."""
    from xla_gpu import _capi
    returned = []
    real = _capi.host_call

    def counting(*args):
        returned.append(real(*args))
        return returned[-1]

    monkeypatch.setattr(_capi, "host_call", counting)
    return returned


def test_calls_run_in_one_c_call_where_their_arrays_allow(monkeypatch):
    """A call of exact numpy arrays of the kernel's shapes and types checks,
    copies and launches in one C call (HostCall.cpp). Any other arrays it
    leaves to the Python path, which says what is wrong; and a call that
    asks for threads goes that way too. The results are the same."""
    returned = _counting_host_calls(monkeypatch)
    kernel = CpuKernel(BARRIER)
    x = rng.randn(2048).astype(np.float32)
    fast, slow = np.empty(2048, np.float32), np.empty(2048, np.float32)
    kernel(x, fast)
    kernel(x, slow, num_threads=1)
    assert returned == [1]
    np.testing.assert_array_equal(fast, slow)
    read_only = np.zeros(2048, np.float32)
    read_only.flags.writeable = False
    for args, message in [
            ((x,), "takes 2 arrays"),
            ((x, np.zeros(2047, np.float32)), "argument 1 must be tensor<2048xf32>"),
            ((x.astype(np.float64), fast), "argument 0 must be tensor<2048xf32>"),
            ((x, np.zeros(4096, np.float32)[::2]), "argument 1 must be C-contiguous"),
            ((x, [0.0] * 2048), "must be a numpy array"),
            ((x, read_only), "output argument 1 is not writeable")]:
        returned.clear()
        with pytest.raises(KernelArgumentError, match=message):
            kernel(*args)
        assert returned == [0], message
    # A subclass of ndarray runs on the Python path; a read-only input on
    # the C path.
    class Sub(np.ndarray):
        pass

    returned.clear()
    kernel(x.view(Sub), fast)
    x_read_only = x.copy()
    x_read_only.flags.writeable = False
    kernel(x_read_only, slow)
    assert returned == [0, 1]
    np.testing.assert_array_equal(fast, slow)
    # bf16: numpy exports no buffer of ml_dtypes' types; no fast path.
    assert CpuKernel(examples.path("seed_gelu.mlir").read_text())._host_call is None


def test_in_place_outputs_on_the_c_path_copy_or_share_their_operand(monkeypatch):
    """A dynamic-update-slice written in place: an output in a buffer of its
    own starts as the operand's copy, one in the operand's buffer updates
    it; a signless s32 index takes int32 and uint32 arrays. The C path and
    the Python path give the same bytes."""
    from mlir import ir

    from xla_gpu.emitters import emit_fusion, find_fusion

    text = ("HloModule m\n\nfused {\n  c = f32[64,128] parameter(0)\n"
            "  t = f32[1,128] parameter(1)\n  p = s32[] parameter(2)\n  z = s32[] constant(0)\n"
            "  ROOT d = f32[64,128] dynamic-update-slice(c, t, p, z)\n}\n\nENTRY e {\n"
            "  c = f32[64,128] parameter(0)\n  t = f32[1,128] parameter(1)\n"
            "  p = s32[] parameter(2)\n"
            "  ROOT f = f32[64,128] fusion(c, t, p), kind=kLoop, calls=fused\n}\n")
    with ir.Context():
        kernel = CpuKernel(str(emit_fusion(find_fusion(parse_hlo(text)))))
    assert kernel._in_place and kernel._host_call is not None
    returned = _counting_host_calls(monkeypatch)
    cache = rng.randn(64, 128).astype(np.float32)
    tok = rng.randn(1, 128).astype(np.float32)
    want = cache.copy()
    want[37] = tok[0]
    for pos in (np.array(37, np.int32), np.array(37, np.uint32)):
        fast, slow = np.zeros_like(cache), np.zeros_like(cache)
        kernel(cache, tok, pos, fast)
        kernel(cache, tok, pos, slow, num_threads=1)
        np.testing.assert_array_equal(fast, want)
        np.testing.assert_array_equal(slow, want)
        shared = cache.copy()
        kernel(shared, tok, pos, shared)
        np.testing.assert_array_equal(shared, want)
    assert returned == [1, 1, 1, 1]
