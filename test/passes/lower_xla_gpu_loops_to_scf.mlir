// RUN: xla-gpu-opt %s -split-input-file -xla-gpu-lower-xla-gpu-loops-to-scf | FileCheck %s

#map = #xla_gpu.indexing_map<"(d0)[s0, s1] -> (d0 * 4 + s0, s1), domain: d0 in [0, 31], s0 in [0, 3], s1 in [0, 7], d0 * 4 + s0 in [0, 99]">
// CHECK-LABEL: func.func @loop
// CHECK-SAME: (%[[TID:.*]]: index, %[[OUT:.*]]: tensor<100x8xf32>, %[[V:.*]]: f32)
// CHECK-DAG: %[[C0:.*]] = arith.constant 0 : index
// CHECK-DAG: %[[C4:.*]] = arith.constant 4 : index
// CHECK-DAG: %[[C8:.*]] = arith.constant 8 : index
// CHECK: %[[R:.*]] = scf.for %[[I:.*]] = %[[C0]] to %[[C4]] step %{{.*}} iter_args(%[[A0:.*]] = %[[OUT]])
// CHECK: %[[R1:.*]] = scf.for %[[J:.*]] = %[[C0]] to %[[C8]] step %{{.*}} iter_args(%[[A1:.*]] = %[[A0]])
// CHECK: arith.cmpi sge, %[[TID]]
// CHECK: arith.cmpi sle, %[[TID]]
// The constraint is checked through its own apply_indexing.
// CHECK: %[[CV:.*]] = xla_gpu.apply_indexing #{{.*}}(%[[TID]])[%[[I]], %[[J]]]
// CHECK: arith.cmpi sle, %[[CV]]
// CHECK: %[[IF:.*]] = scf.if %{{.*}} -> (tensor<100x8xf32>) {
// CHECK: %[[X:.*]] = xla_gpu.apply_indexing #{{.*}}(%[[TID]])[%[[I]], %[[J]]]
// CHECK: %[[Y:.*]] = xla_gpu.apply_indexing #{{.*}}(%[[TID]])[%[[I]], %[[J]]]
// CHECK: %[[INS:.*]] = tensor.insert %[[V]] into %[[A1]][%[[X]], %[[Y]]]
// CHECK: scf.yield %[[INS]]
// CHECK: } else {
// CHECK: scf.yield %[[A1]]
// CHECK: scf.yield %[[IF]]
// CHECK: scf.yield %[[R1]]
// CHECK: return %[[R]]
// CHECK-NOT: xla_gpu.loop
func.func @loop(%tid: index, %out: tensor<100x8xf32>, %v: f32) -> tensor<100x8xf32> {
  %r = xla_gpu.loop (%tid)[%i, %j] -> (%a, %b) in #map iter_args(%iter = %out) -> (tensor<100x8xf32>) {
    %inserted = tensor.insert %v into %iter[%a, %b] : tensor<100x8xf32>
    xla_gpu.yield %inserted : tensor<100x8xf32>
  }
  return %r : tensor<100x8xf32>
}

// -----

// Without range variables there is no scf.for, only the bounds check.
#map = #xla_gpu.indexing_map<"(d0) -> (d0), domain: d0 in [0, 31]">
// CHECK-LABEL: func.func @no_range_variables
// CHECK-NOT: scf.for
// CHECK: %[[IF:.*]] = scf.if
// CHECK: return %[[IF]]
func.func @no_range_variables(%tid: index, %out: tensor<32xf32>, %v: f32) -> tensor<32xf32> {
  %r = xla_gpu.loop (%tid) -> (%a) in #map iter_args(%iter = %out) -> (tensor<32xf32>) {
    %inserted = tensor.insert %v into %iter[%a] : tensor<32xf32>
    xla_gpu.yield %inserted : tensor<32xf32>
  }
  return %r : tensor<32xf32>
}
