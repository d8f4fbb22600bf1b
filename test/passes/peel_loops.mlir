// RUN: xla-gpu-opt %s -split-input-file -xla-gpu-peel-loops | FileCheck %s

// Both range variables constrained only on their last value (XLA's own
// test case): a main loop without constraints, then one tail loop a
// variable, chained through the iteration argument. The tails keep only
// the threads (d0) whose last values are in the domain.
#map = #xla_gpu.indexing_map<"(d0)[s0, s1] -> (s0, s1), domain: d0 in [0, 3], s0 in [0, 7], s1 in [0, 10], d0 + s0 in [0, 9], d0 + s1 in [0, 12]">
func.func @peel_constrained(%input: tensor<16x32xf32>, %dim: index, %init: f32) -> f32 {
  %sum = xla_gpu.loop (%dim)[%i, %j] -> (%r0, %r1) in #map iter_args(%sum_ = %init) -> (f32) {
    %t = tensor.extract %input[%i, %j] : tensor<16x32xf32>
    %add = arith.addf %sum_, %t : f32
    xla_gpu.yield %add : f32
  }
  func.return %sum : f32
}
// CHECK-DAG: #[[$MAIN:.*]] = #xla_gpu.indexing_map<"(d0)[s0, s1] -> (s0, s1), domain: d0 in [0, 3], s0 in [0, 6], s1 in [0, 9]">
// CHECK-DAG: #[[$TAIL0:.*]] = #xla_gpu.indexing_map<"(d0)[s0, s1] -> (7, s1), domain: d0 in [0, 2], s0 in [7, 7], s1 in [0, 9]">
// CHECK-DAG: #[[$TAIL1:.*]] = #xla_gpu.indexing_map<"(d0)[s0, s1] -> (s0, 10), domain: d0 in [0, 2], s0 in [0, 7], s1 in [10, 10]">
// CHECK-LABEL: func.func @peel_constrained(
// CHECK-SAME:    %[[INIT:[a-z0-9]+]]: f32)
// CHECK:       %[[A:.*]] = xla_gpu.loop {{.*}} in #[[$MAIN]] iter_args(%{{.*}} = %[[INIT]])
// CHECK:         tensor.extract
// CHECK:       %[[B:.*]] = xla_gpu.loop {{.*}} in #[[$TAIL0]] iter_args(%{{.*}} = %[[A]])
// CHECK:       %[[C:.*]] = xla_gpu.loop {{.*}} in #[[$TAIL1]] iter_args(%{{.*}} = %[[B]])
// CHECK:       return %[[C]]

// -----

// The edge tile of a 1-d loop: without s0 = 7 the constraint still cuts
// thread 12 (12 * 8 + 6 > 99), so peeling does not help and the loop stays.
#map = #xla_gpu.indexing_map<"(d0)[s0] -> (d0 * 8 + s0), domain: d0 in [0, 12], s0 in [0, 7], d0 * 8 + s0 in [0, 99]">
func.func @do_not_peel_edge_tile(%input: tensor<100xf32>, %dim: index, %init: f32) -> f32 {
  %sum = xla_gpu.loop (%dim)[%i] -> (%r0) in #map iter_args(%sum_ = %init) -> (f32) {
    %t = tensor.extract %input[%r0] : tensor<100xf32>
    %add = arith.addf %sum_, %t : f32
    xla_gpu.yield %add : f32
  }
  func.return %sum : f32
}
// CHECK-LABEL: func.func @do_not_peel_edge_tile(
// CHECK:       xla_gpu.loop
// CHECK-NOT:   xla_gpu.loop

// -----

// No constraint: nothing to peel.
#map = #xla_gpu.indexing_map<"(d0)[s0] -> (s0), domain: d0 in [0, 3], s0 in [0, 7]">
func.func @do_not_peel_unconstrained(%input: tensor<16xf32>, %dim: index, %init: f32) -> f32 {
  %sum = xla_gpu.loop (%dim)[%i] -> (%r0) in #map iter_args(%sum_ = %init) -> (f32) {
    %t = tensor.extract %input[%r0] : tensor<16xf32>
    %add = arith.addf %sum_, %t : f32
    xla_gpu.yield %add : f32
  }
  func.return %sum : f32
}
// CHECK-LABEL: func.func @do_not_peel_unconstrained(
// CHECK:       xla_gpu.loop
// CHECK-NOT:   xla_gpu.loop

// -----

// Where simplification alone removes the constraint (d0 is 0, so s0 is
// tightened to [0, 2]), there is nothing to peel.
#map = #xla_gpu.indexing_map<"(d0)[s0] -> (d0 + s0), domain: d0 in [0, 0], s0 in [0, 3], d0 + s0 in [0, 2]">
func.func @simplified_away(%input: tensor<4xf32>, %dim: index, %init: f32) -> f32 {
  %sum = xla_gpu.loop (%dim)[%i] -> (%r0) in #map iter_args(%sum_ = %init) -> (f32) {
    %t = tensor.extract %input[%r0] : tensor<4xf32>
    %add = arith.addf %sum_, %t : f32
    xla_gpu.yield %add : f32
  }
  func.return %sum : f32
}
// CHECK-LABEL: func.func @simplified_away(
// CHECK:       xla_gpu.loop
// CHECK-NOT:   xla_gpu.loop
