// The IR examples of the spec (seed 000) parse, verify and round-trip. What
// the seed elides ("...", constants, thread ids) is filled in; its second
// transpose loop writes `(%thread_id_x %block_id_x)`, a typo for the comma
// form used here.
// RUN: xla-gpu-opt %s -split-input-file | FileCheck %s
// RUN: xla-gpu-opt %s -split-input-file | xla-gpu-opt -split-input-file | FileCheck %s

// The loop emitter's @main/@gelu is python/xla_gpu/examples/seed_gelu.mlir,
// checked by gelu_example.mlir beside this file.

// After the inliner.
#map = #xla_gpu.indexing_map<"(th_x, bl_x)[vector_index] -> ("
 "bl_x floordiv 4096, (bl_x floordiv 8) mod 512, (bl_x mod 8) * 512 + th_x * 4 + vector_index),"
 "domain: th_x in [0, 127], bl_x in [0, 24575], vector_index in [0, 3]">

// CHECK-LABEL: func.func @main
// CHECK-NOT: xla_gpu.pure_call
// CHECK: xla_gpu.loop
// CHECK: tensor.extract
// CHECK: math.tanh
// CHECK: tensor.insert
func.func @main(%input: tensor<6x512x4096xbf16>, %output: tensor<6x512x4096xbf16>) -> tensor<6x512x4096xbf16> {
  %cst = arith.constant 4.467770e-02 : bf16
  %cst_0 = arith.constant 7.968750e-01 : bf16
  %cst_1 = arith.constant 1.000000e+00 : bf16
  %cst_2 = arith.constant 5.000000e-01 : bf16
  %thread_id_x = gpu.thread_id  x {xla.range = [0 : index, 127 : index]}
  %block_id_x = gpu.block_id  x {xla.range = [0 : index, 24575 : index]}

  %xla_loop = xla_gpu.loop (%thread_id_x, %block_id_x)[%vector_index] -> (%dim0, %dim1, %dim2)
      in #map iter_args(%iter = %output) -> (tensor<6x512x4096xbf16>) {
    %extracted = tensor.extract %input[%dim0, %dim1, %dim2] : tensor<6x512x4096xbf16>
    %0 = arith.mulf %extracted, %extracted : bf16
    %1 = arith.mulf %0, %extracted : bf16
    %2 = arith.mulf %1, %cst : bf16
    %3 = arith.addf %extracted, %2 : bf16
    %4 = arith.mulf %3, %cst_0 : bf16
    %5 = math.tanh %4 : bf16
    %6 = arith.addf %5, %cst_1 : bf16
    %7 = arith.mulf %6, %cst_2 : bf16
    %8 = arith.mulf %extracted, %7 : bf16
    %inserted = tensor.insert %8 into %iter[%dim0, %dim1, %dim2] : tensor<6x512x4096xbf16>
    xla_gpu.yield %inserted : tensor<6x512x4096xbf16>
  }
  return %xla_loop : tensor<6x512x4096xbf16>
}

// -----

// After xla_gpu -> scf: the loop is an scf.for with a bounds check, the
// map's results come from apply_indexing.
#map = #xla_gpu.indexing_map<"(th_x, bl_x)[vector_index] -> (bl_x floordiv 4096), domain: th_x in [0, 127], bl_x in [0, 24575], vector_index in [0, 3]">
#map1 = #xla_gpu.indexing_map<"(th_x, bl_x)[vector_index] -> ((bl_x floordiv 8) mod 512), domain: th_x in [0, 127], bl_x in [0, 24575], vector_index in [0, 3]">
#map2 = #xla_gpu.indexing_map<"(th_x, bl_x)[vector_index] -> ((bl_x mod 8) * 512 + th_x * 4 + vector_index), domain: th_x in [0, 127], bl_x in [0, 24575], vector_index in [0, 3]">

// CHECK-LABEL: func.func @main
// CHECK: scf.for
// CHECK: scf.if
// CHECK-COUNT-3: xla_gpu.apply_indexing
func.func @main(%input: tensor<6x512x4096xbf16>, %output: tensor<6x512x4096xbf16>) -> tensor<6x512x4096xbf16> {
 %c0 = arith.constant 0 : index
 %c1 = arith.constant 1 : index
 %c4 = arith.constant 4 : index
 %c127 = arith.constant 127 : index
 %c24575 = arith.constant 24575 : index
 %thread_id_x = gpu.thread_id  x {xla.range = [0 : index, 127 : index]}
 %block_id_x = gpu.block_id  x {xla.range = [0 : index, 24575 : index]}
 %xla_loop = scf.for %vector_index = %c0 to %c4 step %c1 iter_args(%iter = %output) -> (tensor<6x512x4096xbf16>) {
   %2 = arith.cmpi sge, %thread_id_x, %c0 : index
   %3 = arith.cmpi sle, %thread_id_x, %c127 : index
   %4 = arith.andi %2, %3 : i1
   %5 = arith.cmpi sge, %block_id_x, %c0 : index
   %6 = arith.cmpi sle, %block_id_x, %c24575 : index
   %7 = arith.andi %5, %6 : i1
   %inbounds = arith.andi %4, %7 : i1
   %9 = scf.if %inbounds -> (tensor<6x512x4096xbf16>) {
     %dim0 = xla_gpu.apply_indexing #map(%thread_id_x,  %block_id_x)[%vector_index]
     %dim1 = xla_gpu.apply_indexing #map1(%thread_id_x, %block_id_x)[%vector_index]
     %dim2 = xla_gpu.apply_indexing #map2(%thread_id_x, %block_id_x)[%vector_index]
     %extracted = tensor.extract %input[%dim0, %dim1, %dim2] : tensor<6x512x4096xbf16>
     %28 = math.tanh %extracted : bf16
     %29 = arith.mulf %extracted, %28 : bf16
     %inserted = tensor.insert %29 into %iter[%dim0, %dim1, %dim2] : tensor<6x512x4096xbf16>
     scf.yield %inserted : tensor<6x512x4096xbf16>
   } else {
     scf.yield %iter : tensor<6x512x4096xbf16>
   }
   scf.yield %9 : tensor<6x512x4096xbf16>
 }
 return %xla_loop : tensor<6x512x4096xbf16>
}

// -----

// After flattening: 1-d tensors, one linear index.
#map = #xla_gpu.indexing_map<"(th_x, bl_x, vector_index) -> (th_x * 4 + bl_x * 512 + vector_index),"
 "domain: th_x in [0, 127], bl_x in [0, 24575], vector_index in [0, 3]">

// CHECK-LABEL: func.func @main
// CHECK: xla_gpu.apply_indexing #indexing_map(%thread_id_x, %block_id_x, %{{.*}})
func.func @main(%input: tensor<12582912xbf16>, %output: tensor<12582912xbf16>) -> tensor<12582912xbf16> {
 %c0 = arith.constant 0 : index
 %c1 = arith.constant 1 : index
 %c4 = arith.constant 4 : index
 %thread_id_x = gpu.thread_id  x {xla.range = [0 : index, 127 : index]}
 %block_id_x = gpu.block_id  x {xla.range = [0 : index, 24575 : index]}
 %xla_loop = scf.for %vector_index = %c0 to %c4 step %c1 iter_args(%iter = %output) -> (tensor<12582912xbf16>) {
   %dim = xla_gpu.apply_indexing #map(%thread_id_x, %block_id_x, %vector_index)
   %extracted = tensor.extract %input[%dim] : tensor<12582912xbf16>
   %7 = math.tanh %extracted : bf16
   %inserted = tensor.insert %7 into %iter[%dim] : tensor<12582912xbf16>
   scf.yield %inserted : tensor<12582912xbf16>
 }
 return %xla_loop : tensor<12582912xbf16>
}

// -----

// The transpose emitter: a shared-memory tile, a barrier, two loops.
#map = #xla_gpu.indexing_map<"(d0, d1)[s0, s1] -> ("
  "d0 floordiv 32 + s0 * 4, d1 floordiv 6, (d1 mod 6) * 32 + d0 mod 32,"
  "d0 floordiv 32 + s0 * 4, 0, d0 mod 32),"
  "domain: d0 in [0, 127], d1 in [0, 959], s0 in [0, 7], s1 in [0, 0],"
  "(d1 mod 6) * 32 + d0 mod 32 in [0, 169], d0 floordiv 32 + s0 * 4 in [0, 19]">
#map1 = #xla_gpu.indexing_map<"(d0, d1)[s0, s1] -> ("
  "(d1 mod 6) * 32 + s0 * 4 + d0 floordiv 32, d1 floordiv 6, d0 mod 32),"
  "domain: d0 in [0, 127], d1 in [0, 959], s0 in [0, 7], s1 in [0, 0],"
  "(d1 mod 6) * 32 + s0 * 4 + d0 floordiv 32 in [0, 169], d0 mod 32 in [0, 19]">
#shmem_row = #xla_gpu.indexing_map<"(d0, d1)[s0] -> (s0 * 4 + d0 floordiv 32), domain: d0 in [0, 127], d1 in [0, 959], s0 in [0, 7]">
#shmem_col = #xla_gpu.indexing_map<"(d0) -> (d0 mod 32), domain: d0 in [0, 127]">

// CHECK-LABEL: func.func @transpose
// CHECK: %[[SHMEM:.*]] = xla_gpu.allocate_shared : tensor<32x1x33xf32>
// CHECK: %[[LOOP:.*]] = xla_gpu.loop {{.*}} iter_args(%{{.*}} = %[[SHMEM]])
// CHECK: %[[SYNCED:.*]] = xla_gpu.sync_threads %[[LOOP]] : tensor<32x1x33xf32>
// CHECK: xla_gpu.loop
// CHECK: tensor.extract %[[SYNCED]]
func.func @transpose(%arg0: tensor<20x160x170xf32>, %arg1: tensor<170x160x20xf32>) -> tensor<170x160x20xf32> {
  %c0 = arith.constant 0 : index
  %thread_id_x = gpu.thread_id  x {xla.range = [0 : index, 127 : index]}
  %block_id_x = gpu.block_id  x {xla.range = [0 : index, 959 : index]}

  %shmem = xla_gpu.allocate_shared : tensor<32x1x33xf32>
  %xla_loop = xla_gpu.loop (%thread_id_x, %block_id_x)[%i, %j]
      -> (%input_dim0, %input_dim1, %input_dim2, %shmem_dim0, %shmem_dim1, %shmem_dim2)
      in #map iter_args(%iter = %shmem) -> (tensor<32x1x33xf32>) {
    %extracted = tensor.extract %arg0[%input_dim0, %input_dim1, %input_dim2] : tensor<20x160x170xf32>
    %0 = math.exp %extracted : f32
    %inserted = tensor.insert %0 into %iter[%shmem_dim0, %shmem_dim1, %shmem_dim2] : tensor<32x1x33xf32>
    xla_gpu.yield %inserted : tensor<32x1x33xf32>
  }

  %synced_tensor = xla_gpu.sync_threads %xla_loop : tensor<32x1x33xf32>

  %xla_loop_0 = xla_gpu.loop (%thread_id_x, %block_id_x)[%i, %j] -> (%dim0, %dim1, %dim2)
      in #map1 iter_args(%iter = %arg1) -> (tensor<170x160x20xf32>) {
    // indexing computations
    %0 = xla_gpu.apply_indexing #shmem_row(%thread_id_x, %block_id_x)[%i]
    %1 = xla_gpu.apply_indexing #shmem_col(%thread_id_x)
    %extracted = tensor.extract %synced_tensor[%0, %c0, %1] : tensor<32x1x33xf32>
    %2 = math.absf %extracted : f32
    %inserted = tensor.insert %2 into %iter[%dim0, %dim1, %dim2] : tensor<170x160x20xf32>
    xla_gpu.yield %inserted : tensor<170x160x20xf32>
  }
  return %xla_loop_0 : tensor<170x160x20xf32>
}
