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

// Loop-carried tensors, shared memory, atomics and calls change type too
// (an atomic keeps its marks: the scatter emitter's of sorted indices).
// CHECK-LABEL: func.func private @callee(%{{.*}}: tensor<6xf32>) -> f32
// CHECK-LABEL: func.func @structure
// CHECK: xla_gpu.allocate_shared : tensor<6xf32>
// CHECK: xla_gpu.sync_threads %{{.*}} : tensor<6xf32>
// CHECK: scf.for {{.*}} -> (tensor<6xf32>)
// CHECK: xla_gpu.atomic_rmw %{{.*}}[%{{.*}}] : tensor<6xf32>
// CHECK: } {xla.indices_are_sorted}
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
    } {xla.indices_are_sorted}
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

// -----

// A layout (XLA's minor-to-major as the encoding): dimension 0 is minor, so
// element [i, j] of a 2x3 tensor is at j * 2 + i; the encoding is gone.
// CHECK: #[[$COLMAJOR:.*]] = #xla_gpu.indexing_map<"(d0, d1) -> (d1 * 2 + d0), domain: d0 in [0, 1], d1 in [0, 2]">
// CHECK-LABEL: func.func @layout(
// CHECK-SAME:    %[[T:.*]]: tensor<6xf32>, %[[I:.*]]: index, %[[J:.*]]: index) -> f32
// CHECK:         %[[K:.*]] = xla_gpu.apply_indexing #[[$COLMAJOR]](%[[I]], %[[J]])
// CHECK:         tensor.extract %[[T]][%[[K]]] : tensor<6xf32>
func.func @layout(%t: tensor<2x3xf32, dense<[0, 1]> : tensor<2xi64>>, %i: index, %j: index)
    -> f32 {
  %v = tensor.extract %t[%i, %j] : tensor<2x3xf32, dense<[0, 1]> : tensor<2xi64>>
  return %v : f32
}

// -----

// A constant with a layout is stored in that layout's order ([[1, 2, 3],
// [4, 5, 6]] column-major is 1, 4, 2, 5, 3, 6); a 1-d tensor with the
// identity layout just loses its encoding.
// CHECK-LABEL: func.func @layout_constant
// CHECK: arith.constant dense<[1.000000e+00, 4.000000e+00, 2.000000e+00, 5.000000e+00, 3.000000e+00, 6.000000e+00]> : tensor<6xf32>
// CHECK: tensor.extract %{{.*}} : tensor<4xf32>
func.func @layout_constant(%u: tensor<4xf32, dense<[0]> : tensor<1xi64>>, %i: index)
    -> (tensor<2x3xf32, dense<[0, 1]> : tensor<2xi64>>, f32) {
  %c = arith.constant dense<[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]>
      : tensor<2x3xf32, dense<[0, 1]> : tensor<2xi64>>
  %v = tensor.extract %u[%i] : tensor<4xf32, dense<[0]> : tensor<1xi64>>
  return %c, %v : tensor<2x3xf32, dense<[0, 1]> : tensor<2xi64>>, f32
}

// -----

// An encoding that is no layout is refused at the op.
func.func @not_a_layout(%t: tensor<2x3xf32, dense<[0, 0]> : tensor<2xi64>>, %i: index) -> f32 {
  // expected-error@+1 {{uses 'tensor<2x3xf32, dense<0> : tensor<2xi64>>', whose encoding is not a layout}}
  %v = tensor.extract %t[%i, %i] : tensor<2x3xf32, dense<[0, 0]> : tensor<2xi64>>
  return %v : f32
}

// -----

// N-d vectors: arguments, results, loop-carried values and constants become
// 1-d; a scalar is read and written at its row-major position (constant
// positions fold: [1, 1] of 10x24 is 25).
// CHECK: #[[$ROWMAJOR:.*]] = #xla_gpu.indexing_map<"(d0, d1) -> (d0 * 3 + d1), domain: d0 in [0, 1], d1 in [0, 2]">
// CHECK-LABEL: func.func @vectors(
// CHECK-SAME:    %[[V:.*]]: vector<6xf32>, %[[W:.*]]: vector<240xf32>, %[[I:.*]]: index, %[[J:.*]]: index)
// CHECK-SAME:    -> (f32, vector<240xf32>, vector<6xf32>)
// CHECK-DAG:     %[[K:.*]] = xla_gpu.apply_indexing #[[$ROWMAJOR]](%[[I]], %[[J]])
// CHECK-DAG:     %[[X:.*]] = vector.extract %[[V]][%[[K]]] : f32 from vector<6xf32>
// CHECK-DAG:     %[[INIT:.*]] = arith.constant dense<{{.*}}> : vector<6xf32>
// CHECK:         %[[Y:.*]] = vector.insert %[[X]], %[[W]] [25] : f32 into vector<240xf32>
// CHECK:         %[[L:.*]] = scf.for {{.*}} iter_args(%[[A:.*]] = %[[INIT]]) -> (vector<6xf32>)
// CHECK:           vector.insert %{{.*}}, %[[A]] [%{{.*}}] : f32 into vector<6xf32>
// CHECK:         return %[[X]], %[[Y]], %[[L]] : f32, vector<240xf32>, vector<6xf32>
func.func @vectors(%v: vector<2x3xf32>, %w: vector<10x24xf32>, %i: index, %j: index)
    -> (f32, vector<10x24xf32>, vector<2x3xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  %x = vector.extract %v[%i, %j] : f32 from vector<2x3xf32>
  %y = vector.insert %x, %w [1, 1] : f32 into vector<10x24xf32>
  %init = arith.constant dense<[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]> : vector<2x3xf32>
  %l = scf.for %k = %c0 to %c3 step %c1 iter_args(%a = %init) -> vector<2x3xf32> {
    %b = vector.insert %x, %a [%c1, %k] : f32 into vector<2x3xf32>
    scf.yield %b : vector<2x3xf32>
  }
  return %x, %y, %l : f32, vector<10x24xf32>, vector<2x3xf32>
}

// -----

// Any other op on an N-d vector keeps its type: a shape_cast brings the
// flattened value back to it, and its result to 1-d.
// CHECK-LABEL: func.func @other_vector_ops(
// CHECK-SAME:    %[[V:.*]]: vector<6xf32>) -> vector<6xf32>
// CHECK:         %[[N:.*]] = vector.shape_cast %[[V]] : vector<6xf32> to vector<2x3xf32>
// CHECK:         %[[S:.*]] = arith.addf %[[N]], %[[N]] : vector<2x3xf32>
// CHECK:         %[[F:.*]] = vector.shape_cast %[[S]] : vector<2x3xf32> to vector<6xf32>
// CHECK:         return %[[F]] : vector<6xf32>
func.func @other_vector_ops(%v: vector<2x3xf32>) -> vector<2x3xf32> {
  %s = arith.addf %v, %v : vector<2x3xf32>
  return %s : vector<2x3xf32>
}

// -----

// Tensors through a switch (scf structure), and a pure call of tensors.
// CHECK-LABEL: func.func @switch_and_call(
// CHECK-SAME:    -> (tensor<6xf32>, tensor<6xf32>)
// CHECK:         scf.index_switch %{{.*}} -> tensor<6xf32>
// CHECK:         xla_gpu.pure_call @callee2(%{{.*}}) : (tensor<6xf32>) -> tensor<6xf32>
func.func private @callee2(%t: tensor<2x3xf32>) -> tensor<2x3xf32> {
  return %t : tensor<2x3xf32>
}
func.func @switch_and_call(%a: tensor<2x3xf32>, %b: tensor<2x3xf32>, %k: index)
    -> (tensor<2x3xf32>, tensor<2x3xf32>) {
  %s = scf.index_switch %k -> tensor<2x3xf32>
  case 1 {
    scf.yield %a : tensor<2x3xf32>
  }
  default {
    scf.yield %b : tensor<2x3xf32>
  }
  %c = xla_gpu.pure_call @callee2(%s) : (tensor<2x3xf32>) -> tensor<2x3xf32>
  return %s, %c : tensor<2x3xf32>, tensor<2x3xf32>
}

// -----

// A cast the pass leaves (here one it was given) is reported, as XLA does.
func.func @dangling_cast(%t: tensor<6xf32>, %i: index) -> i32 {
  %v = tensor.extract %t[%i] : tensor<6xf32>
  // expected-error@+1 {{is left over: xla-gpu-flatten-tensors failed to converge}}
  %c = builtin.unrealized_conversion_cast %v : f32 to i32
  return %c : i32
}
