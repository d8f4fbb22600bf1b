// XLA's row reduction, sum over 256 columns of 64 rows: each thread sums two
// elements, warps reduce with shuffles, lane 0 of each warp leaves its sum in
// shared memory, and after a barrier the first warp reduces those and
// thread 0 writes the row's sum.
func.func private @add(%a: f32, %b: f32) -> f32 {
  %s = arith.addf %a, %b : f32
  return %s : f32
}
#cols = #xla_gpu.indexing_map<"(d0, d1)[s0] -> (d1, s0 * 128 + d0), domain: d0 in [0, 127], d1 in [0, 63], s0 in [0, 1]">
#lane = #xla_gpu.indexing_map<"(d0) -> (d0 mod 32, d0 floordiv 32), domain: d0 in [0, 127]">
func.func @main(%in: tensor<64x256xf32>, %out: tensor<64xf32>) -> tensor<64xf32> {
  %c0 = arith.constant 0 : index
  %c4 = arith.constant 4 : index
  %zero = arith.constant 0.0 : f32
  %tid = gpu.thread_id x {xla.range = [0 : index, 127 : index]}
  %bid = gpu.block_id x {xla.range = [0 : index, 63 : index]}
  %partial = xla_gpu.loop (%tid, %bid)[%s] -> (%r, %c) in #cols iter_args(%acc = %zero) -> (f32) {
    %v = tensor.extract %in[%r, %c] : tensor<64x256xf32>
    %a = arith.addf %acc, %v : f32
    xla_gpu.yield %a : f32
  }
  %warp_sum = xla_gpu.shuffle_reduce(%partial) to 16 combiner=@add : f32
  %lw:2 = xla_gpu.apply_indexing #lane(%tid)
  %is_lane0 = arith.cmpi eq, %lw#0, %c0 : index
  %shmem = xla_gpu.allocate_shared : tensor<4xf32>
  %written = xla_gpu.predicated_insert %warp_sum into %shmem[%lw#1] if %is_lane0 : tensor<4xf32>
  %synced = xla_gpu.sync_threads %written : tensor<4xf32>
  %in_first_warp = arith.cmpi ult, %tid, %c4 : index
  %v = xla_gpu.predicated_extract %synced[%tid] if %in_first_warp else %zero : tensor<4xf32>
  %total = xla_gpu.shuffle_reduce(%v) to 2 combiner=@add : f32
  %is_thread0 = arith.cmpi eq, %tid, %c0 : index
  %r = xla_gpu.predicated_insert %total into %out[%bid] if %is_thread0 : tensor<64xf32>
  return %r : tensor<64xf32>
}
