// The seed's loop-emitter kernel (shipped as a package example, the input of
// `make demo`) parses, verifies, round-trips, and inlines as the seed shows.
// RUN: xla-gpu-opt %S/../../python/xla_gpu/examples/seed_gelu.mlir | FileCheck %s
// RUN: xla-gpu-opt %S/../../python/xla_gpu/examples/seed_gelu.mlir | xla-gpu-opt | FileCheck %s
// RUN: xla-gpu-opt %S/../../python/xla_gpu/examples/seed_gelu.mlir -inline -xla-erase-dead-functions | FileCheck %s --check-prefix=INLINED

// CHECK: #indexing_map = #xla_gpu.indexing_map<"(th_x, bl_x)[vector_index] -> (bl_x floordiv 4096, (bl_x floordiv 8) mod 512, (bl_x mod 8) * 512 + th_x * 4 + vector_index), domain: th_x in [0, 127], bl_x in [0, 24575], vector_index in [0, 3]">
// CHECK-LABEL: func.func @main
// CHECK: %thread_id_x = gpu.thread_id x {xla.range = [0 : index, 127 : index]}
// CHECK: %block_id_x = gpu.block_id x {xla.range = [0 : index, 24575 : index]}
// CHECK: xla_gpu.loop (%thread_id_x, %block_id_x)[%{{.*}}] -> (%[[D0:.*]], %[[D1:.*]], %[[D2:.*]]) in #indexing_map iter_args(%[[ITER:.*]] = %{{.*}}) -> (tensor<6x512x4096xbf16>)
// CHECK: %[[V:.*]] = xla_gpu.pure_call @gelu(%{{.*}}, %[[D0]], %[[D1]], %[[D2]]) : (tensor<6x512x4096xbf16>, index, index, index) -> bf16
// CHECK: tensor.insert %[[V]] into %[[ITER]][%[[D0]], %[[D1]], %[[D2]]]
// CHECK-LABEL: func.func private @gelu
// CHECK: math.tanh

// INLINED-LABEL: func.func @main
// INLINED: xla_gpu.loop
// INLINED-NOT: xla_gpu.pure_call
// INLINED: %[[X:.*]] = tensor.extract
// INLINED: math.tanh
// INLINED: tensor.insert
// INLINED: xla_gpu.yield
// INLINED-NOT: func.func private @gelu
