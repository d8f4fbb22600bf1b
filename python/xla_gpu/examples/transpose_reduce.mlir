// A kernel with the rest of the dialect: a shared-memory tile written and
// read across a barrier (the transpose emitter's shape), a warp shuffle
// reduction, and atomic updates (native add into sum[0], compare-and-swap
// maximum into sum[1]).
#in = #xla_gpu.indexing_map<"(d0, d1)[s0] -> (d1 * 32 + s0 * 4 + d0 floordiv 32, d0 mod 32), domain: d0 in [0, 127], d1 in [0, 3], s0 in [0, 7]">
#sh = #xla_gpu.indexing_map<"(d0, d1)[s0] -> (s0 * 4 + d0 floordiv 32, d0 mod 32), domain: d0 in [0, 127], d1 in [0, 3], s0 in [0, 7]">
#out = #xla_gpu.indexing_map<"(d0, d1)[s0] -> (d0 mod 32, d1 * 32 + s0 * 4 + d0 floordiv 32), domain: d0 in [0, 127], d1 in [0, 3], s0 in [0, 7]">
func.func private @add(%a: f32, %b: f32) -> f32 {
  %s = arith.addf %a, %b : f32
  return %s : f32
}
func.func @main(%input: tensor<128x32xf32>, %output: tensor<32x128xf32>, %sum: tensor<2xf32>) -> (tensor<32x128xf32>, tensor<2xf32>) {
  %c0 = arith.constant 0 : index
  %tid = gpu.thread_id x {xla.range = [0 : index, 127 : index]}
  %bid = gpu.block_id x {xla.range = [0 : index, 3 : index]}
  %shmem = xla_gpu.allocate_shared : tensor<32x33xf32>
  %l1 = xla_gpu.loop (%tid, %bid)[%i] -> (%r, %c) in #in iter_args(%it = %shmem) -> (tensor<32x33xf32>) {
    %e = tensor.extract %input[%r, %c] : tensor<128x32xf32>
    %sr:2 = xla_gpu.apply_indexing #sh(%tid, %bid)[%i]
    %ins = tensor.insert %e into %it[%sr#0, %sr#1] : tensor<32x33xf32>
    xla_gpu.yield %ins : tensor<32x33xf32>
  }
  %synced = xla_gpu.sync_threads %l1 : tensor<32x33xf32>
  %l2 = xla_gpu.loop (%tid, %bid)[%i] -> (%r, %c) in #out iter_args(%it = %output) -> (tensor<32x128xf32>) {
    %sr:2 = xla_gpu.apply_indexing #sh(%tid, %bid)[%i]
    %e = tensor.extract %synced[%sr#0, %sr#1] : tensor<32x33xf32>
    %ins = tensor.insert %e into %it[%r, %c] : tensor<32x128xf32>
    xla_gpu.yield %ins : tensor<32x128xf32>
  }
  %x = tensor.extract %input[%tid, %c0] : tensor<128x32xf32>
  %red = xla_gpu.shuffle_reduce(%x) to 16 combiner=@add : f32
  %c1 = arith.constant 1 : index
  %a = xla_gpu.atomic_rmw %sum[%c0] : tensor<2xf32> {
  ^bb0(%cur: f32):
    %s = arith.addf %cur, %red : f32
    xla_gpu.yield %s : f32
  }
  %b = xla_gpu.atomic_rmw %a[%c1] : tensor<2xf32> {
  ^bb0(%cur: f32):
    %m = arith.maximumf %cur, %red : f32
    xla_gpu.yield %m : f32
  }
  return %l2, %b : tensor<32x128xf32>, tensor<2xf32>
}
