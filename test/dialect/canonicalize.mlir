// Folding and canonicalization of xla_gpu ops.
// RUN: xla-gpu-opt %s -split-input-file -canonicalize | FileCheck %s
// RUN: xla-gpu-opt %s -split-input-file -cse | FileCheck %s --check-prefix=CSE

#map = #xla_gpu.indexing_map<"(d0, d1)[s0] -> (d0 * 4 + d1 floordiv 2 + s0), domain: d0 in [0, 127], d1 in [0, 7], s0 in [0, 3]">
// With constant operands apply_indexing folds to a constant.
// CHECK-LABEL: func.func @apply_indexing_constants
// CHECK-NEXT: %[[C:.*]] = arith.constant 17 : index
// CHECK-NEXT: return %[[C]]
func.func @apply_indexing_constants() -> index {
  %c4 = arith.constant 4 : index
  %c3 = arith.constant 3 : index
  %c0 = arith.constant 0 : index
  %0 = xla_gpu.apply_indexing #map(%c4, %c3)[%c0]
  return %0 : index
}

// -----

#map = #xla_gpu.indexing_map<"(d0, d1)[s0] -> (d0 * 4 + d1 floordiv 2 + s0), domain: d0 in [0, 127], d1 in [0, 7], s0 in [0, 3]">
// Some constant operands move into the map; the others stay (the symbol
// becomes a dimension).
// CHECK: #[[$MAP:.*]] = #xla_gpu.indexing_map<"(d0, d1) -> (d0 * 4 + d1 + 2), domain: d0 in [0, 127], d1 in [0, 3]">
// CHECK-LABEL: func.func @apply_indexing_some_constants
// CHECK-SAME: (%[[A:.*]]: index, %[[S:.*]]: index)
// CHECK: xla_gpu.apply_indexing #[[$MAP]](%[[A]], %[[S]])
func.func @apply_indexing_some_constants(%a: index, %s: index) -> index {
  %c5 = arith.constant 5 : index
  %0 = xla_gpu.apply_indexing #map(%a, %c5)[%s]
  return %0 : index
}

// -----

#map = #xla_gpu.indexing_map<"(d0, d1) -> (d0, d1 * 2), domain: d0 in [0, 127], d1 in [0, 7]">
// A result that is one of the operands folds to it (XLA's
// FoldApplyIndexingResults); the op keeps the other result, and the operand
// only the folded result used goes.
// CHECK: #[[$TWICE:.*]] = #xla_gpu.indexing_map<"(d0) -> (d0 * 2), domain: d0 in [0, 7]">
// CHECK-LABEL: func.func @apply_indexing_identity
// CHECK-SAME: (%[[A:.*]]: index, %[[B:.*]]: index)
// CHECK: %[[R:.*]] = xla_gpu.apply_indexing #[[$TWICE]](%[[B]])
// CHECK: return %[[A]], %[[R]]
func.func @apply_indexing_identity(%a: index, %b: index) -> (index, index) {
  %0:2 = xla_gpu.apply_indexing #map(%a, %b)
  return %0#0, %0#1 : index, index
}

// -----

#map = #xla_gpu.indexing_map<"(d0) -> (d0), domain: d0 in [0, 127]">
// CHECK-LABEL: func.func @apply_indexing_single_identity
// CHECK-SAME: (%[[A:.*]]: index)
// CHECK-NEXT: return %[[A]]
func.func @apply_indexing_single_identity(%a: index) -> index {
  %0 = xla_gpu.apply_indexing #map(%a)
  return %0 : index
}

// -----

// An atomic_rmw that writes back the current value does nothing.
// CHECK-LABEL: func.func @atomic_rmw_noop
// CHECK-SAME: (%[[IN:.*]]: tensor<2x3xf32>
// CHECK-NOT: xla_gpu.atomic_rmw
// CHECK: return %[[IN]]
func.func @atomic_rmw_noop(%in: tensor<2x3xf32>, %i: index, %j: index) -> tensor<2x3xf32> {
  %ret = xla_gpu.atomic_rmw %in[%i, %j] : tensor<2x3xf32> {
  ^bb0(%current : f32):
    xla_gpu.yield %current : f32
  }
  return %ret : tensor<2x3xf32>
}

// -----

// One that changes the value stays.
// CHECK-LABEL: func.func @atomic_rmw_add
// CHECK: xla_gpu.atomic_rmw
func.func @atomic_rmw_add(%in: tensor<2x3xf32>, %i: index, %j: index, %x: f32) -> tensor<2x3xf32> {
  %ret = xla_gpu.atomic_rmw %in[%i, %j] : tensor<2x3xf32> {
  ^bb0(%current : f32):
    %sum = arith.addf %current, %x : f32
    xla_gpu.yield %sum : f32
  }
  return %ret : tensor<2x3xf32>
}

// -----

// Predicated ops with a constant condition.
// CHECK-LABEL: func.func @predicated_constant
// CHECK-SAME: (%[[V:.*]]: f32, %[[T:.*]]: tensor<2x3xf32>, %[[I:.*]]: index)
// CHECK-NOT: xla_gpu.predicated
// CHECK: %[[INS:.*]] = tensor.insert %[[V]] into %[[T]][%[[I]], %[[I]]]
// CHECK: %[[EXT:.*]] = tensor.extract %[[T]][%[[I]], %[[I]]]
// CHECK: return %[[INS]], %[[T]], %[[EXT]], %[[V]]
func.func @predicated_constant(%v: f32, %t: tensor<2x3xf32>, %i: index) -> (tensor<2x3xf32>, tensor<2x3xf32>, f32, f32) {
  %true = arith.constant true
  %false = arith.constant false
  %a = xla_gpu.predicated_insert %v into %t[%i, %i] if %true : tensor<2x3xf32>
  %b = xla_gpu.predicated_insert %v into %t[%i, %i] if %false : tensor<2x3xf32>
  %c = xla_gpu.predicated_extract %t[%i, %i] if %true else %v : tensor<2x3xf32>
  %d = xla_gpu.predicated_extract %t[%i, %i] if %false else %v : tensor<2x3xf32>
  return %a, %b, %c, %d : tensor<2x3xf32>, tensor<2x3xf32>, f32, f32
}

// -----

// pure_call has no side effects: CSE merges identical calls, and an unused
// call disappears.
// CSE-LABEL: func.func @pure_call_cse
// CSE: %[[R:.*]] = xla_gpu.pure_call @callee
// CSE-NOT: xla_gpu.pure_call
// CSE: arith.addf %[[R]], %[[R]]
// CHECK-LABEL: func.func @pure_call_cse
// CHECK-COUNT-2: xla_gpu.pure_call
// CHECK-NOT: xla_gpu.pure_call
func.func private @callee(%t: tensor<4xf32>, %i: index) -> f32 {
  %v = tensor.extract %t[%i] : tensor<4xf32>
  return %v : f32
}
func.func @pure_call_cse(%t: tensor<4xf32>, %i: index) -> f32 {
  %a = xla_gpu.pure_call @callee(%t, %i) : (tensor<4xf32>, index) -> f32
  %b = xla_gpu.pure_call @callee(%t, %i) : (tensor<4xf32>, index) -> f32
  %unused = xla_gpu.pure_call @callee(%t, %i) : (tensor<4xf32>, index) -> f32
  %s = arith.addf %a, %b : f32
  return %s : f32
}

// -----

// XLA's canonicalization of apply_indexing: the map simplified by its
// ranges (d0 mod 16 with d0 in [0, 9] is d0, which folds to the operand), a
// constant result becomes a constant, results nobody uses go, and symbols
// become dimensions.
#m = #xla_gpu.indexing_map<"(d0)[s0] -> (d0 + s0, 42, d0 * 3, d0 mod 16), domain: d0 in [0, 9], s0 in [0, 3]">
// CHECK: #[[$SUM:.*]] = #xla_gpu.indexing_map<"(d0, d1) -> (d0 + d1), domain: d0 in [0, 9], d1 in [0, 3]">
// CHECK-LABEL: func.func @apply_indexing_results(
// CHECK-SAME:    %[[A:.*]]: index, %[[B:.*]]: index)
// CHECK-DAG:   %[[C42:.*]] = arith.constant 42 : index
// CHECK-DAG:   %[[SUM:.*]] = xla_gpu.apply_indexing #[[$SUM]](%[[A]], %[[B]])
// CHECK:       return %[[SUM]], %[[C42]], %[[A]]
func.func @apply_indexing_results(%a: index, %b: index) -> (index, index, index) {
  %0:4 = xla_gpu.apply_indexing #m(%a)[%b]
  return %0#0, %0#1, %0#3 : index, index, index
}
