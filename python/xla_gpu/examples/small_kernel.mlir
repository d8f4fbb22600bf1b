// A small GPU kernel, out[i] = in[i] * in[i] + 1 over 32 blocks of 128
// threads, for checking the NVVM -> PTX path until the emitters' own
// pipeline lowers xla_gpu kernels.
module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @square_plus_one(%in: memref<4096xf32>, %out: memref<4096xf32>) kernel
        attributes {known_block_size = array<i32: 128, 1, 1>} {
      %tid = gpu.thread_id x {xla.range = [0 : index, 127 : index]}
      %bid = gpu.block_id x {xla.range = [0 : index, 31 : index]}
      %c128 = arith.constant 128 : index
      %base = arith.muli %bid, %c128 : index
      %i = arith.addi %base, %tid : index
      %x = memref.load %in[%i] : memref<4096xf32>
      %sq = arith.mulf %x, %x : f32
      %one = arith.constant 1.0 : f32
      %y = arith.addf %sq, %one : f32
      memref.store %y, %out[%i] : memref<4096xf32>
      gpu.return
    }
  }
}
