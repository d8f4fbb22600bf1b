"""Seed 004's global <-> shared tile copies (`xla_gpu.copy_tile`,
-xla-gpu-lower-tile-copies) end to end: the f32 round trip's PTX moves
128 bits per access on both sides and assembles; on the CPU target the
round trips (several blocks at their own offsets, a swizzled tile, f16 and
i8 tiles, a declined element-by-element copy) give back their input."""

from __future__ import annotations

import numpy as np
import pytest
from mlir import ir

from xla_gpu import pipelines, ptx
from xla_gpu.dialects import xla_gpu
from xla_gpu.runtime import CpuKernel

ROUND_TRIP = """
func.func @round_trip(%in: tensor<{rows}x32x{t}> {{xla.slice_index = 0 : i32}},
                      %out: tensor<{rows}x32x{t}> {{xla.slice_index = 1 : i32}}) -> tensor<{rows}x32x{t}>
    attributes {{xla.launch_dims = {{block_counts = array<i64: {blocks}, 1, 1>,
                                  thread_counts_per_block = array<i64: {threads}, 1, 1>}}}} {{
  %tid = gpu.thread_id x {{xla.range = [0 : index, {last_thread} : index]}}
  %bid = gpu.block_id x {{xla.range = [0 : index, {last_block} : index]}}
  %c0 = arith.constant 0 : index
  %row = xla_gpu.apply_indexing #xla_gpu.indexing_map<"(d0) -> (d0 * 32), domain: d0 in [0, {last_block}]">(%bid)
  %shmem = xla_gpu.allocate_shared : tensor<32x{shared_cols}x{t}>
  %filled = xla_gpu.copy_tile %in[%row, %c0] [32, 32] to %shmem[%c0, %c0] [32, 32]
      thread %tid of {threads} {attrs} : tensor<{rows}x32x{t}> to tensor<32x{shared_cols}x{t}>
  %synced = xla_gpu.sync_threads %filled : tensor<32x{shared_cols}x{t}>
  %r = xla_gpu.copy_tile %synced[%c0, %c0] [32, 32] to %out[%row, %c0] [32, 32]
      thread %tid of {threads} {attrs} : tensor<32x{shared_cols}x{t}> to tensor<{rows}x32x{t}>
  return %r : tensor<{rows}x32x{t}>
}}
"""


def _round_trip(t: str = "f32", blocks: int = 1, threads: int = 32, swizzle=None,
                shared_cols: int = 32) -> str:
    attrs = "" if swizzle is None else f"{{swizzle = array<i64: {', '.join(map(str, swizzle))}>}}"
    return ROUND_TRIP.format(rows=32 * blocks, t=t, blocks=blocks, threads=threads,
                             last_thread=threads - 1, last_block=blocks - 1, attrs=attrs,
                             shared_cols=shared_cols)


@pytest.fixture
def ctx():
    with ir.Context(), ir.Location.unknown():
        yield


@pytest.mark.parametrize("sm", [80, 90])
def test_f32_round_trip_ptx_moves_128_bits_per_access(ctx, sm):
    if ptx.find_ptxas() is None:
        pytest.skip("ptxas (CUDA) is not installed on this machine")
    opts = pipelines.PipelineOptions(compute_capability=(sm // 10, sm % 10))
    code = pipelines.compile_to_ptx(ir.Module.parse(_round_trip()), opts)
    accesses = [line.split()[0] for line in code.splitlines()
                if line.strip().startswith(("ld.", "st."))]
    # Each copy is 8 rounds of one 128-bit load and one 128-bit store.
    for space, op in (("global", "ld"), ("shared", "st"), ("shared", "ld"), ("global", "st")):
        wide = [a for a in accesses if a.startswith(f"{op}.{space}") and ".v4." in a]
        assert wide, f"no 128-bit {op}.{space} in {accesses}"
    assert all(".v4." in a for a in accesses if ".global" in a or ".shared" in a), accesses
    result = ptx.ptxas_check(code, opts.chip)
    assert result.ok, result.log


@pytest.mark.parametrize("t,dtype", [("f32", np.float32), ("f16", np.float16), ("i8", np.int8)])
@pytest.mark.parametrize("case", ["one block", "8 blocks of 128", "swizzled", "padded"])
def test_round_trips_give_back_their_input_on_the_cpu(t, dtype, case):
    blocks, threads, swizzle, cols = {"one block": (1, 32, None, 32),
                                      "8 blocks of 128": (8, 128, None, 32),
                                      "swizzled": (2, 64, (3, 2, 3), 32),
                                      "padded": (1, 32, None, 33)}[case]
    kernel = CpuKernel(_round_trip(t, blocks, threads, swizzle, cols))
    rng = np.random.default_rng(0)
    x = (rng.standard_normal((32 * blocks, 32)) * 50).astype(dtype)
    out = np.zeros_like(x)
    kernel(x, out)
    np.testing.assert_array_equal(out, x)


def test_declined_copy_is_element_by_element_and_exact():
    """25 elements among 32 threads: no vectors, a bounds check, every
    element copied once."""
    text = """
func.func @odd(%in: tensor<5x5xf32> {xla.slice_index = 0 : i32},
               %out: tensor<5x5xf32> {xla.slice_index = 1 : i32}) -> tensor<5x5xf32>
    attributes {xla.launch_dims = {block_counts = array<i64: 1, 1, 1>,
                                  thread_counts_per_block = array<i64: 32, 1, 1>}} {
  %tid = gpu.thread_id x {xla.range = [0 : index, 31 : index]}
  %c0 = arith.constant 0 : index
  %shmem = xla_gpu.allocate_shared : tensor<5x5xf32>
  %filled = xla_gpu.copy_tile %in[%c0, %c0] [5, 5] to %shmem[%c0, %c0] [5, 5]
      thread %tid of 32 : tensor<5x5xf32> to tensor<5x5xf32>
  %synced = xla_gpu.sync_threads %filled : tensor<5x5xf32>
  %r = xla_gpu.copy_tile %synced[%c0, %c0] [5, 5] to %out[%c0, %c0] [5, 5]
      thread %tid of 32 : tensor<5x5xf32> to tensor<5x5xf32>
  return %r : tensor<5x5xf32>
}
"""
    x = np.arange(25, dtype=np.float32).reshape(5, 5)
    out = np.full_like(x, -1)
    CpuKernel(text)(x, out)
    np.testing.assert_array_equal(out, x)


def test_builder_writes_the_syntax(ctx):
    module = ir.Module.parse("""
func.func @f(%in: tensor<64x32xf32>) -> tensor<32x32xf32> {
  %tid = gpu.thread_id x {xla.range = [0 : index, 31 : index]}
  %c0 = arith.constant 0 : index
  %shmem = xla_gpu.allocate_shared : tensor<32x32xf32>
  return %shmem : tensor<32x32xf32>
}""")
    f = module.body.operations[0]
    block = f.regions[0].blocks[0]
    tid, c0, shmem = (op.result for op in list(block.operations)[:3])
    with ir.InsertionPoint(list(block.operations)[-1]):
        copied = xla_gpu.copy_tile(block.arguments[0], [c0, c0], [32, 32], shmem, [c0, c0],
                                   [32, 32], tid, 32, swizzle=[3, 2, 3])
    assert copied.type == shmem.type
    text = str(copied.owner)
    assert "xla_gpu.copy_tile %arg0[%c0, %c0] [32, 32] to %shmem[%c0, %c0] [32, 32] " \
           "thread %thread_id_x of 32 {swizzle = array<i64: 3, 2, 3>}" in text, text
    module.operation.verify()
