"""Kernels run on the CPU with GPU semantics, compared with numpy."""

import numpy as np
import ml_dtypes
import pytest

from xla_gpu import examples, pipelines
from xla_gpu.runtime import CpuKernel, KernelArgumentError

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


# Every thread of 64 blocks adds 1 to one element: atomic across cores.
ATOMIC = """
func.func @main(%acc: tensor<1xi32>) -> tensor<1xi32> {
  %tid = gpu.thread_id x {xla.range = [0 : index, 127 : index]}
  %bid = gpu.block_id x {xla.range = [0 : index, 63 : index]}
  %c0 = arith.constant 0 : index
  %one = arith.constant 1 : i32
  %r = xla_gpu.atomic_rmw %acc[%c0] : tensor<1xi32> {
  ^bb0(%cur: i32):
    %s = arith.addi %cur, %one : i32
    xla_gpu.yield %s : i32
  }
  return %r : tensor<1xi32>
}
"""


@pytest.mark.parametrize("threads", [1, 2, 4])
def test_atomic_accumulation(threads):
    acc = np.zeros(1, dtype=np.int32)
    CpuKernel(ATOMIC)(acc, num_threads=threads)
    assert acc[0] == 64 * 128


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
    src = """
    func.func @main(%out: tensor<128xf32>, %c: i1) -> tensor<128xf32> {
      %tid = gpu.thread_id x {xla.range = [0 : index, 127 : index]}
      %r = scf.if %c -> (tensor<128xf32>) {
        %s = xla_gpu.sync_threads %out : tensor<128xf32>
        scf.yield %s : tensor<128xf32>
      } else {
        scf.yield %out : tensor<128xf32>
      }
      return %r : tensor<128xf32>
    }"""
    with pytest.raises(KernelArgumentError, match="takes tensors only"):
        CpuKernel(src)
    src2 = src.replace("%c: i1", "%flag: tensor<1xi1>").replace(
        "%tid = gpu", "%c0 = arith.constant 0 : index\n"
        "      %c = tensor.extract %flag[%c0] : tensor<1xi1>\n      %tid = gpu")
    with pytest.raises(pipelines.PipelineError,
                       match="'gpu.barrier' op inside control flow is not supported"):
        CpuKernel(src2)


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
