// The spec's walk through the compile pipeline on the GELU kernel
// (python/xla_gpu/examples/seed_gelu.mlir): after each step, the IR the spec
// shows.
// RUN: xla-gpu-opt %S/../../python/xla_gpu/examples/seed_gelu.mlir -inline -xla-erase-dead-functions | FileCheck %s --check-prefix=INLINED
// RUN: xla-gpu-opt %S/../../python/xla_gpu/examples/seed_gelu.mlir -inline -xla-erase-dead-functions -xla-gpu-lower-xla-gpu-loops-to-scf | FileCheck %s --check-prefix=SCF
// RUN: xla-gpu-opt %S/../../python/xla_gpu/examples/seed_gelu.mlir --pass-pipeline='%optimization_pipeline' | xla-gpu-opt -xla-gpu-flatten-tensors -canonicalize -cse | FileCheck %s --check-prefix=FLAT
// RUN: xla-gpu-opt %S/../../python/xla_gpu/examples/seed_gelu.mlir --pass-pipeline='%optimization_pipeline' | xla-gpu-opt -xla-gpu-flatten-tensors -canonicalize -cse -xla-gpu-vectorize-loads-stores -canonicalize | FileCheck %s --check-prefix=VECTOR
// RUN: xla-gpu-opt %S/../../python/xla_gpu/examples/seed_gelu.mlir --pass-pipeline='%optimization_pipeline' | xla-gpu-opt --pass-pipeline='%loop_transformation_pipeline' | FileCheck %s --check-prefix=UNROLLED
// RUN: xla-gpu-opt %S/../../python/xla_gpu/examples/seed_gelu.mlir --pass-pipeline='%full_pipeline' | FileCheck %s --check-prefix=LLVM

// INLINED-LABEL: func.func @main
// INLINED: xla_gpu.loop (%thread_id_x, %block_id_x)
// INLINED-NOT: xla_gpu.pure_call
// INLINED: tensor.extract
// INLINED: math.tanh
// INLINED-NOT: func.func private @gelu

// SCF-LABEL: func.func @main
// SCF: scf.for %[[VI:[^ ]+]] = %c0 to %c4 step %c1 iter_args(%[[ITER:.*]] = %{{.*}}) -> (tensor<6x512x4096xbf16>)
// SCF: arith.cmpi sge, %thread_id_x, %c0
// SCF: arith.cmpi sle, %thread_id_x, %c127
// SCF: arith.cmpi sge, %block_id_x, %c0
// SCF: arith.cmpi sle, %block_id_x, %c24575
// SCF: scf.if %{{.*}} -> (tensor<6x512x4096xbf16>)
// SCF: %[[D0:.*]] = xla_gpu.apply_indexing #indexing_map(%thread_id_x, %block_id_x)[%[[VI]]]
// SCF: %[[D1:.*]] = xla_gpu.apply_indexing #indexing_map1(%thread_id_x, %block_id_x)[%[[VI]]]
// SCF: %[[D2:.*]] = xla_gpu.apply_indexing #indexing_map2(%thread_id_x, %block_id_x)[%[[VI]]]
// SCF: tensor.extract %{{.*}}[%[[D0]], %[[D1]], %[[D2]]]
// SCF: tensor.insert %{{.*}} into %[[ITER]][%[[D0]], %[[D1]], %[[D2]]]
// SCF: } else {
// SCF: scf.yield %[[ITER]]

// The bounds checks are gone (xla.range), the tensors are flat and one map
// computes th_x * 4 + bl_x * 512 + vector_index.
// (XLA's canonicalization makes the symbol a dimension.)
// FLAT: #[[$FMAP:.*]] = #xla_gpu.indexing_map<"(d0, d1, d2) -> (d1 * 4 + d2 + d0 * 512), domain: d0 in [0, 24575], d1 in [0, 127], d2 in [0, 3]">
// FLAT-LABEL: func.func @main(%{{.*}}: tensor<12582912xbf16>, %{{.*}}: tensor<12582912xbf16>) -> tensor<12582912xbf16>
// FLAT-NOT: arith.cmpi
// FLAT: scf.for %[[VI:[^ ]+]] =
// FLAT: %[[I:.*]] = xla_gpu.apply_indexing #[[$FMAP]](%block_id_x, %thread_id_x, %[[VI]])
// FLAT: tensor.extract %{{.*}}[%[[I]]] : tensor<12582912xbf16>
// FLAT: tensor.insert %{{.*}}[%[[I]]] : tensor<12582912xbf16>

// VECTOR-LABEL: func.func @main
// VECTOR: %[[BASE:.*]] = xla_gpu.apply_indexing #{{.*}}(%block_id_x, %thread_id_x)
// VECTOR: %[[V:.*]] = vector.transfer_read %{{.*}}[%[[BASE]]], %{{.*}} {in_bounds = [true]} : tensor<12582912xbf16>, vector<4xbf16>
// The loop no longer carries the tensor, only the vector being filled.
// VECTOR: scf.for %[[VI:[^ ]+]] = {{.*}} -> (vector<4xbf16>)
// VECTOR: vector.extract %[[V]][%[[VI]]] : bf16 from vector<4xbf16>
// VECTOR: math.tanh
// VECTOR: vector.insert
// VECTOR: vector.transfer_write %{{.*}}[%[[BASE]]] {in_bounds = [true]} : vector<4xbf16>, tensor<12582912xbf16>

// The loop over the vector elements is gone: four copies of the body.
// UNROLLED-LABEL: func.func @main
// UNROLLED-NOT: scf.for
// UNROLLED: vector.transfer_read {{.*}} vector<4xbf16>
// UNROLLED-COUNT-4: math.tanh
// UNROLLED: vector.transfer_write

// LLVM: llvm.func @__nv_tanhf(f32) -> f32
// LLVM-LABEL: llvm.func @main(%{{.*}}: !llvm.ptr, %{{.*}}: !llvm.ptr) attributes {nvvm.kernel}
// LLVM: nvvm.read.ptx.sreg.tid.x : i32
// LLVM: nvvm.read.ptx.sreg.ctaid.x : i32
// LLVM: llvm.getelementptr inbounds
// LLVM: llvm.load %{{.*}} invariant : !llvm.ptr -> vector<4xbf16>
// LLVM: llvm.extractelement
// LLVM: llvm.fpext %{{.*}} : bf16 to f32
// LLVM: llvm.call @__nv_tanhf(%{{.*}}) : (f32) -> f32
// LLVM: llvm.fptrunc %{{.*}} : f32 to bf16
// LLVM: llvm.store %{{.*}}, %{{.*}} : vector<4xbf16>, !llvm.ptr
