// RUN: xla-gpu-opt %s -split-input-file -xla-gpu-flatten-tensors -verify-diagnostics | FileCheck %s

// Signatures and accesses become 1-d; the linearization folds into the
// apply_indexing that computed the indices: (i floordiv 8) * 8 + i mod 8 is
// i, and an apply_indexing that returns its operand folds away.
#map = #xla_gpu.indexing_map<"(d0) -> (d0 floordiv 8, d0 mod 8), domain: d0 in [0, 31]">
// CHECK-LABEL: func.func @extract_insert
// CHECK-SAME: (%[[IN:.*]]: tensor<32xf32>, %[[OUT:.*]]: tensor<32xf32>, %[[I:.*]]: index) -> tensor<32xf32>
// CHECK-NOT: apply_indexing
// CHECK: %[[V:.*]] = tensor.extract %[[IN]][%[[I]]] : tensor<32xf32>
// CHECK: tensor.insert %[[V]] into %[[OUT]][%[[I]]] : tensor<32xf32>
func.func @extract_insert(%in: tensor<4x8xf32>, %out: tensor<4x8xf32>, %i: index) -> tensor<4x8xf32> {
  %ij:2 = xla_gpu.apply_indexing #map(%i)
  %v = tensor.extract %in[%ij#0, %ij#1] : tensor<4x8xf32>
  %r = tensor.insert %v into %out[%ij#0, %ij#1] : tensor<4x8xf32>
  return %r : tensor<4x8xf32>
}

// -----

// Loop-carried tensors, shared memory, atomics and calls change type too.
// CHECK-LABEL: func.func private @callee(%{{.*}}: tensor<6xf32>) -> f32
// CHECK-LABEL: func.func @structure
// CHECK: xla_gpu.allocate_shared : tensor<6xf32>
// CHECK: xla_gpu.sync_threads %{{.*}} : tensor<6xf32>
// CHECK: scf.for {{.*}} -> (tensor<6xf32>)
// CHECK: xla_gpu.atomic_rmw %{{.*}}[%{{.*}}] : tensor<6xf32>
// CHECK: xla_gpu.pure_call @callee(%{{.*}}) : (tensor<6xf32>) -> f32
func.func private @callee(%t: tensor<2x3xf32>) -> f32 {
  %c0 = arith.constant 0 : index
  %v = tensor.extract %t[%c0, %c0] : tensor<2x3xf32>
  return %v : f32
}
func.func @structure(%x: f32) -> f32 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %shmem = xla_gpu.allocate_shared : tensor<2x3xf32>
  %synced = xla_gpu.sync_threads %shmem : tensor<2x3xf32>
  %loop = scf.for %i = %c0 to %c2 step %c1 iter_args(%t = %synced) -> (tensor<2x3xf32>) {
    %u = xla_gpu.atomic_rmw %t[%i, %c1] : tensor<2x3xf32> {
    ^bb0(%cur: f32):
      %s = arith.addf %cur, %x : f32
      xla_gpu.yield %s : f32
    }
    scf.yield %u : tensor<2x3xf32>
  }
  %r = xla_gpu.pure_call @callee(%loop) : (tensor<2x3xf32>) -> f32
  return %r : f32
}

// -----

// Already flat or dynamically shaped tensors are left alone.
// CHECK-LABEL: func.func @unchanged
// CHECK-SAME: (%{{.*}}: tensor<8xf32>, %{{.*}}: tensor<?x4xf32>, %{{.*}}: index)
// CHECK-NOT: apply_indexing
func.func @unchanged(%a: tensor<8xf32>, %b: tensor<?x4xf32>, %i: index) -> f32 {
  %v = tensor.extract %a[%i] : tensor<8xf32>
  return %v : f32
}

// -----

// An N-d constant array is flattened row-major; the input has no xla_gpu op
// (the pass loads the dialect for the maps it creates).
// CHECK-LABEL: func.func @constant
// CHECK: %[[C:.*]] = arith.constant dense<[1.000000e+00, 2.000000e+00, 3.000000e+00, 4.000000e+00, 5.000000e+00, 6.000000e+00]> : tensor<6xf32>
// CHECK: %[[I:.*]] = xla_gpu.apply_indexing
// CHECK: tensor.extract %[[C]][%[[I]]] : tensor<6xf32>
func.func @constant(%i: index, %j: index) -> f32 {
  %c = arith.constant dense<[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]> : tensor<2x3xf32>
  %v = tensor.extract %c[%i, %j] : tensor<2x3xf32>
  return %v : f32
}

// -----

// 2^62 x 4 elements would flatten to tensor<0xf32>: an error instead.
func.func @huge(%t: tensor<4611686018427387904x4xf32>) -> f32 {
  %c0 = arith.constant 0 : index
  // expected-error@+1 {{'tensor.extract' op uses 'tensor<4611686018427387904x4xf32>', whose element count does not fit in 64 bits}}
  %v = tensor.extract %t[%c0, %c0] : tensor<4611686018427387904x4xf32>
  return %v : f32
}

// -----

// A 1-d transfer along the minor dimension (what -xla-gpu-lower-tile-copies
// emits) reads at the linear index of its first element.
// CHECK-LABEL: func.func @transfer_minor
// CHECK-SAME: (%[[T:.*]]: tensor<1024xf32>, %[[I:.*]]: index, %[[J:.*]]: index)
// CHECK: %[[L:.*]] = xla_gpu.apply_indexing #[[$IJ:.*]](%[[I]], %[[J]])
// CHECK: %[[V:.*]] = vector.transfer_read %[[T]][%[[L]]], %{{.*}} {in_bounds = [true]} : tensor<1024xf32>, vector<4xf32>
// CHECK: %[[M:.*]] = xla_gpu.apply_indexing #[[$IJ]](%[[J]], %[[I]])
// CHECK: vector.transfer_write %[[V]], %[[T]][%[[M]]] {in_bounds = [true]} : vector<4xf32>, tensor<1024xf32>
func.func @transfer_minor(%t: tensor<32x32xf32>, %i: index, %j: index) -> tensor<32x32xf32> {
  %pad = arith.constant 0.0 : f32
  %v = vector.transfer_read %t[%i, %j], %pad {in_bounds = [true]} : tensor<32x32xf32>, vector<4xf32>
  %w = vector.transfer_write %v, %t[%j, %i] {in_bounds = [true]} : vector<4xf32>, tensor<32x32xf32>
  return %w : tensor<32x32xf32>
}
