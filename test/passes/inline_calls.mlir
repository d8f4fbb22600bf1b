// RUN: xla-gpu-opt %s -split-input-file -xla-gpu-inline-calls | FileCheck %s

// A subgraph function read at two rows of 3-channel pixels (rows of 8
// pixels out of an input's 10): inlined, its index map composed with the
// ones of its arguments -- the pixel (w, c) = ((e floordiv 3) mod 8, e mod
// 3) of the element e, 3 w + c, is e mod 24 -- and the function erased.
// CHECK-DAG: #[[$ROW:.*]] = #xla_gpu.indexing_map<"(d0) -> ((d0 floordiv 24) * 30 + d0 mod 24), domain: d0 in [0, 95]">
// CHECK-DAG: #[[$NEXT:.*]] = #xla_gpu.indexing_map<"(d0) -> ((d0 floordiv 24) * 30 + d0 mod 24 + 30), domain: d0 in [0, 71]">
#pixel = #xla_gpu.indexing_map<"(d0, d1, d2) -> (d0 * 30 + d1 * 3 + d2), domain: d0 in [0, 3], d1 in [0, 7], d2 in [0, 2]">
#row = #xla_gpu.indexing_map<"(e) -> (e floordiv 24), domain: e in [0, 95]">
#w = #xla_gpu.indexing_map<"(e) -> ((e floordiv 3) mod 8), domain: e in [0, 95]">
#c = #xla_gpu.indexing_map<"(e) -> (e mod 3), domain: e in [0, 95]">
#next = #xla_gpu.indexing_map<"(e) -> (e floordiv 24 + 1), domain: e in [0, 71]">
func.func private @tap(%in: tensor<120xf32>, %h: index, %w: index, %c: index) -> f32 {
  %i = xla_gpu.apply_indexing #pixel(%h, %w, %c)
  %v = tensor.extract %in[%i] : tensor<120xf32>
  return %v : f32
}
func.func @rows(%in: tensor<120xf32>, %e: index) -> f32 {
  %h = xla_gpu.apply_indexing #row(%e)
  %h1 = xla_gpu.apply_indexing #next(%e)
  %w = xla_gpu.apply_indexing #w(%e)
  %c = xla_gpu.apply_indexing #c(%e)
  %a = func.call @tap(%in, %h, %w, %c) : (tensor<120xf32>, index, index, index) -> f32
  %b = func.call @tap(%in, %h1, %w, %c) : (tensor<120xf32>, index, index, index) -> f32
  %s = arith.addf %a, %b : f32
  return %s : f32
}
// CHECK-NOT: @tap
// CHECK-LABEL: func.func @rows
// CHECK-SAME: (%[[IN:.*]]: tensor<120xf32>, %[[E:.*]]: index)
// CHECK-NEXT: %[[I:.*]] = xla_gpu.apply_indexing #[[$ROW]](%[[E]])
// CHECK-NEXT: %[[A:.*]] = tensor.extract %[[IN]][%[[I]]]
// CHECK-NEXT: %[[J:.*]] = xla_gpu.apply_indexing #[[$NEXT]](%[[E]])
// CHECK-NEXT: %[[B:.*]] = tensor.extract %[[IN]][%[[J]]]
// CHECK-NEXT: arith.addf %[[A]], %[[B]]
// CHECK-NOT: call

// -----

// Two calls at the same indices: one copy is left once both are inlined.
// CHECK-NOT: @twice_read
// CHECK-LABEL: func.func @same
// CHECK-COUNT-1: tensor.extract
// CHECK-NOT: tensor.extract
func.func private @twice_read(%in: tensor<8xf32>, %i: index) -> f32 {
  %v = tensor.extract %in[%i] : tensor<8xf32>
  %e = math.exp %v : f32
  return %e : f32
}
func.func @same(%in: tensor<8xf32>, %i: index) -> f32 {
  %a = func.call @twice_read(%in, %i) : (tensor<8xf32>, index) -> f32
  %b = func.call @twice_read(%in, %i) : (tensor<8xf32>, index) -> f32
  %s = arith.mulf %a, %b : f32
  return %s : f32
}

// -----

// Without a call the module is left as it is: not even canonicalized.
// CHECK-LABEL: func.func @no_calls
// CHECK: arith.addi
func.func @no_calls(%i: index) -> index {
  %z = arith.constant 0 : index
  %s = arith.addi %i, %z : index
  return %s : index
}
