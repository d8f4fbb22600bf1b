// RUN: xla-gpu-opt %s -split-input-file -xla-gpu-lower-xla-gpu-to-scf | FileCheck %s
// RUN: xla-gpu-opt %s -split-input-file -xla-gpu-lower-xla-gpu-to-scf=warp_size=16 -verify-diagnostics > /dev/null

// CHECK-LABEL: func.func @predicated
// CHECK-SAME: (%[[V:.*]]: f32, %[[T:.*]]: tensor<4xf32>, %[[I:.*]]: index, %[[C:.*]]: i1)
// CHECK: %[[INS:.*]] = scf.if %[[C]] -> (tensor<4xf32>) {
// CHECK:   %[[R:.*]] = tensor.insert %[[V]] into %[[T]][%[[I]]]
// CHECK:   scf.yield %[[R]]
// CHECK: } else {
// CHECK:   scf.yield %[[T]]
// CHECK: %[[EXT:.*]] = scf.if %[[C]] -> (f32) {
// CHECK:   %[[E:.*]] = tensor.extract %[[INS]][%[[I]]]
// CHECK:   scf.yield %[[E]]
// CHECK: } else {
// CHECK:   scf.yield %[[V]]
// CHECK-NOT: xla_gpu.predicated
func.func @predicated(%v: f32, %t: tensor<4xf32>, %i: index, %c: i1) -> f32 {
  %r = xla_gpu.predicated_insert %v into %t[%i] if %c : tensor<4xf32>
  %e = xla_gpu.predicated_extract %r[%i] if %c else %v : tensor<4xf32>
  return %e : f32
}

// -----

// A butterfly over the warp: distances 4, 2, 1, each a shuffle down and a
// call of the combiner; a 16-bit value travels in an i32.
// CHECK-LABEL: func.func @shuffle_reduce
// CHECK: %[[S4:.*]], %{{.*}} = gpu.shuffle down %{{.*}}, %c4_i32, %c32_i32 : f32
// CHECK: %[[H4:.*]], %{{.*}} = gpu.shuffle down %{{.*}}, %c4_i32, %c32_i32 : i32
// CHECK: %[[R4:.*]]:2 = call @reducer
// CHECK: gpu.shuffle down %[[R4]]#0, %c2_i32
// CHECK: %[[R2:.*]]:2 = call @reducer
// CHECK: gpu.shuffle down %[[R2]]#0, %c1_i32
// CHECK: %[[R1:.*]]:2 = call @reducer
// CHECK: return %[[R1]]#0, %[[R1]]#1
func.func private @reducer(%a: f32, %b: f16, %c: f32, %d: f16) -> (f32, f16) {
  %0 = arith.addf %a, %c : f32
  %1 = arith.addf %b, %d : f16
  return %0, %1 : f32, f16
}
func.func @shuffle_reduce(%a: f32, %b: f16) -> (f32, f16) {
  %r:2 = xla_gpu.shuffle_reduce(%a, %b) to 4 combiner=@reducer : f32, f16
  return %r#0, %r#1 : f32, f16
}

// -----

func.func private @add(%a: f32, %b: f32) -> f32 {
  %0 = arith.addf %a, %b : f32
  return %0 : f32
}
func.func @too_far_for_the_warp(%a: f32) -> f32 {
  // With warp_size=16, a distance of 16 leaves the warp.
  // expected-error@+1 {{max_distance 16 does not fit a warp of 16 lanes}}
  %r = xla_gpu.shuffle_reduce(%a) to 16 combiner=@add : f32
  return %r : f32
}
