// The transpose emitter's scheme (seed 000) on a shape that is not a
// multiple of the 32x32 tile: 100x36 -> 36x100 in 4 x 2 tiles, read into a
// padded shared tile, a barrier, written out transposed; bounds checks on
// the edge tiles.
#in = #xla_gpu.indexing_map<"(d0, d1)[s0] -> ((d1 floordiv 2) * 32 + s0 * 4 + d0 floordiv 32, (d1 mod 2) * 32 + d0 mod 32), domain: d0 in [0, 127], d1 in [0, 7], s0 in [0, 7], (d1 floordiv 2) * 32 + s0 * 4 + d0 floordiv 32 in [0, 99], (d1 mod 2) * 32 + d0 mod 32 in [0, 35]">
#out = #xla_gpu.indexing_map<"(d0, d1)[s0] -> ((d1 mod 2) * 32 + s0 * 4 + d0 floordiv 32, (d1 floordiv 2) * 32 + d0 mod 32), domain: d0 in [0, 127], d1 in [0, 7], s0 in [0, 7], (d1 mod 2) * 32 + s0 * 4 + d0 floordiv 32 in [0, 35], (d1 floordiv 2) * 32 + d0 mod 32 in [0, 99]">
#tile = #xla_gpu.indexing_map<"(d0)[s0] -> (s0 * 4 + d0 floordiv 32, d0 mod 32), domain: d0 in [0, 127], s0 in [0, 7]">
#tile_t = #xla_gpu.indexing_map<"(d0)[s0] -> (d0 mod 32, s0 * 4 + d0 floordiv 32), domain: d0 in [0, 127], s0 in [0, 7]">
func.func @main(%input: tensor<100x36xf32>, %output: tensor<36x100xf32>) -> tensor<36x100xf32> {
  %tid = gpu.thread_id x {xla.range = [0 : index, 127 : index]}
  %bid = gpu.block_id x {xla.range = [0 : index, 7 : index]}
  %shmem = xla_gpu.allocate_shared : tensor<32x33xf32>
  %filled = xla_gpu.loop (%tid, %bid)[%s] -> (%r, %c) in #in iter_args(%t = %shmem) -> (tensor<32x33xf32>) {
    %v = tensor.extract %input[%r, %c] : tensor<100x36xf32>
    %ij:2 = xla_gpu.apply_indexing #tile(%tid)[%s]
    %w = tensor.insert %v into %t[%ij#0, %ij#1] : tensor<32x33xf32>
    xla_gpu.yield %w : tensor<32x33xf32>
  }
  %synced = xla_gpu.sync_threads %filled : tensor<32x33xf32>
  %res = xla_gpu.loop (%tid, %bid)[%s] -> (%r, %c) in #out iter_args(%o = %output) -> (tensor<36x100xf32>) {
    %ij:2 = xla_gpu.apply_indexing #tile_t(%tid)[%s]
    %v = tensor.extract %synced[%ij#0, %ij#1] : tensor<32x33xf32>
    %w = tensor.insert %v into %o[%r, %c] : tensor<36x100xf32>
    xla_gpu.yield %w : tensor<36x100xf32>
  }
  return %res : tensor<36x100xf32>
}
