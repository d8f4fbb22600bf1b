// The full unrolling and load pipelining (CHECK) are checked without
// XLA's partial unrolling, which the PARTIAL cases check on its own.
// RUN: xla-gpu-opt %s -split-input-file -xla-gpu-optimize-loops=partial-unroll=false | FileCheck %s
// RUN: xla-gpu-opt %s -split-input-file -xla-gpu-optimize-loops | FileCheck %s --check-prefix=PARTIAL

// CHECK-LABEL: func.func @unroll
// CHECK-NOT: scf.for
// CHECK-COUNT-4: arith.addf
func.func @unroll(%x: f32) -> f32 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %r = scf.for %i = %c0 to %c4 step %c1 iter_args(%acc = %x) -> (f32) {
    %s = arith.addf %acc, %x : f32
    scf.yield %s : f32
  }
  return %r : f32
}

// -----

// A long loop stays a loop; with partial unrolling, 100 iterations of a
// 2-op body fit in the budget and it is unrolled completely.
// CHECK-LABEL: func.func @do_not_unroll_long
// CHECK: scf.for
// PARTIAL-LABEL: func.func @do_not_unroll_long
// PARTIAL-NOT: scf.for
// PARTIAL-COUNT-100: arith.addf
// PARTIAL-NEXT: return
func.func @do_not_unroll_long(%x: f32) -> f32 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c100 = arith.constant 100 : index
  %r = scf.for %i = %c0 to %c100 step %c1 iter_args(%acc = %x) -> (f32) {
    %s = arith.addf %acc, %x : f32
    scf.yield %s : f32
  }
  return %r : f32
}

// -----

// So does one whose bounds are not known.
// CHECK-LABEL: func.func @do_not_unroll_dynamic
// CHECK: scf.for
func.func @do_not_unroll_dynamic(%x: f32, %n: index) -> f32 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %r = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %x) -> (f32) {
    %s = arith.addf %acc, %x : f32
    scf.yield %s : f32
  }
  return %r : f32
}

// -----

// Unrolling would exceed the op budget.
// RUN: xla-gpu-opt %s -split-input-file -xla-gpu-optimize-loops=max-unrolled-ops=6 | FileCheck %s --check-prefix=BUDGET
// BUDGET-LABEL: func.func @do_not_unroll_big_body
// BUDGET: scf.for
// CHECK-LABEL: func.func @do_not_unroll_big_body
// CHECK-NOT: scf.for
func.func @do_not_unroll_big_body(%x: f32) -> f32 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %r = scf.for %i = %c0 to %c4 step %c1 iter_args(%acc = %x) -> (f32) {
    %s = arith.addf %acc, %x : f32
    %t = arith.mulf %s, %x : f32
    scf.yield %t : f32
  }
  return %r : f32
}

// -----

// A long loop that loads at the top of its body: the first element is
// loaded before the loop, each iteration loads the next one.
// CHECK-LABEL: func.func @pipeline_loads
// CHECK-SAME: (%[[T:.*]]: tensor<1024xf32>
// The loop may not run: the first load is guarded by lb < ub.
// CHECK: %[[G0:.*]] = arith.cmpi slt, %c0, %c100 : index
// CHECK: %[[FIRST:.*]] = scf.if %[[G0]] -> (f32) {
// CHECK:   %[[I0:.*]] = xla_gpu.apply_indexing #{{.*}}(%c0)
// CHECK:   tensor.extract %[[T]][%[[I0]]]
// CHECK: %[[R:.*]]:2 = scf.for %[[IV:.*]] = %c0 to %c100 step %c1 iter_args(%[[ACC:.*]] = %{{.*}}, %[[CUR:.*]] = %[[FIRST]])
// CHECK:   %[[S:.*]] = arith.addf %[[ACC]], %[[CUR]]
// CHECK:   %[[NEXT:.*]] = arith.addi %[[IV]], %c1
// The next iteration's load only if there is one (next < ub, strictly: the
// last iteration must not read element ub).
// CHECK:   %[[G:.*]] = arith.cmpi slt, %[[NEXT]], %c100 : index
// CHECK:   %[[PREFETCH:.*]] = scf.if %[[G]] -> (f32) {
// CHECK:     %[[IN:.*]] = xla_gpu.apply_indexing #{{.*}}(%[[NEXT]])
// CHECK:     tensor.extract %[[T]][%[[IN]]]
// CHECK:   } else {
// CHECK:     scf.yield %[[CUR]]
// CHECK:   scf.yield %[[S]], %[[PREFETCH]]
// CHECK: return %[[R]]#0
#map = #xla_gpu.indexing_map<"(d0) -> (d0 * 8), domain: d0 in [0, 99]">
func.func @pipeline_loads(%t: tensor<1024xf32>, %x: f32) -> f32 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c100 = arith.constant 100 : index
  %r = scf.for %i = %c0 to %c100 step %c1 iter_args(%acc = %x) -> (f32) {
    %idx = xla_gpu.apply_indexing #map(%i)
    %v = tensor.extract %t[%idx] : tensor<1024xf32>
    %s = arith.addf %acc, %v : f32
    scf.yield %s : f32
  }
  return %r : f32
}

// -----

// Bounds known only at run time (the loop may run zero times): both loads
// are guarded by the loop's own bounds.
// CHECK-LABEL: func.func @pipeline_dynamic_bounds
// CHECK-SAME: (%[[T:.*]]: tensor<1024xf32>, %{{.*}}: f32, %[[LB:.*]]: index, %[[UB:.*]]: index)
// CHECK: %[[G0:.*]] = arith.cmpi slt, %[[LB]], %[[UB]] : index
// CHECK: scf.if %[[G0]]
// CHECK: scf.for %[[IV:.*]] = %[[LB]] to %[[UB]]
// CHECK:   %[[NEXT:.*]] = arith.addi %[[IV]], %c1
// CHECK:   arith.cmpi slt, %[[NEXT]], %[[UB]] : index
#map1 = #xla_gpu.indexing_map<"(d0) -> (d0 * 8), domain: d0 in [0, 99]">
func.func @pipeline_dynamic_bounds(%t: tensor<1024xf32>, %x: f32, %lb: index, %ub: index) -> f32 {
  %c1 = arith.constant 1 : index
  %r = scf.for %i = %lb to %ub step %c1 iter_args(%acc = %x) -> (f32) {
    %idx = xla_gpu.apply_indexing #map1(%i)
    %v = tensor.extract %t[%idx] : tensor<1024xf32>
    %s = arith.addf %acc, %v : f32
    scf.yield %s : f32
  }
  return %r : f32
}

// -----

// The index depends on the loop-carried value: nothing to prefetch.
// CHECK-LABEL: func.func @do_not_pipeline_dependent_index
// CHECK: scf.for
// CHECK-NOT: scf.if
// CHECK: tensor.extract
func.func @do_not_pipeline_dependent_index(%t: tensor<1024xindex>, %x: index) -> index {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c100 = arith.constant 100 : index
  %r = scf.for %i = %c0 to %c100 step %c1 iter_args(%j = %x) -> (index) {
    %v = tensor.extract %t[%j] : tensor<1024xindex>
    scf.yield %v : index
  }
  return %r : index
}

// -----

// XLA's partial unrolling: 256 iterations of a body XLA sizes at 23 (an
// exp counts 20) is unrolled by 16, the largest factor that divides 256 and
// keeps the body within 400; the loop steps by 16.
// PARTIAL-LABEL: func.func @partial_unroll(
// PARTIAL:       %[[C16:.*]] = arith.constant 16 : index
// PARTIAL:       scf.for %{{.*}} = %{{.*}} to %{{.*}} step %[[C16]]
// PARTIAL-COUNT-16: math.exp
// PARTIAL-NOT:   math.exp
// PARTIAL:       scf.yield
// CHECK-LABEL: func.func @partial_unroll(
// CHECK:       scf.for %{{.*}} = %{{.*}} to %{{.*}} step %c1
// CHECK-COUNT-1: math.exp
// CHECK-NOT:   math.exp
func.func @partial_unroll(%in: tensor<2048xf32>, %init: f32) -> f32 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c256 = arith.constant 256 : index
  %r = scf.for %i = %c0 to %c256 step %c1 iter_args(%acc = %init) -> f32 {
    %x = tensor.extract %in[%i] : tensor<2048xf32>
    %e = math.exp %x : f32
    %s = arith.addf %acc, %e : f32
    scf.yield %s : f32
  }
  return %r : f32
}

// -----

// 257 iterations: no factor within the budget divides a prime; the loop
// stays as it is.
// CHECK-LABEL: func.func @prime_trip_count(
// CHECK-COUNT-1: math.exp
// CHECK-NOT:   math.exp
// PARTIAL-LABEL: func.func @prime_trip_count(
// PARTIAL:       scf.for %{{.*}} = %{{.*}} to %{{.*}} step %c1
// PARTIAL-COUNT-1: math.exp
// PARTIAL-NOT:   math.exp
func.func @prime_trip_count(%in: tensor<2048xf32>, %init: f32) -> f32 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c257 = arith.constant 257 : index
  %r = scf.for %i = %c0 to %c257 step %c1 iter_args(%acc = %init) -> f32 {
    %x = tensor.extract %in[%i] : tensor<2048xf32>
    %e = math.exp %x : f32
    %s = arith.addf %acc, %e : f32
    scf.yield %s : f32
  }
  return %r : f32
}

// -----

// XLA's PipelineLoad on transfers: a vector.transfer_read at the top of a
// long loop, its index from the induction variable through apply_indexing,
// is loaded for the first iteration before the loop and for the next one
// at the end of each (guarded), the vector carried.
#map4 = #xla_gpu.indexing_map<"(d0) -> (d0 * 4), domain: d0 in [0, 255]">
// CHECK-LABEL: func.func @pipeline_transfer_reads
// CHECK-SAME: (%[[T:.*]]: tensor<1024xf32>
// CHECK:       %[[FIRST:.*]] = scf.if %{{.*}} -> (vector<4xf32>) {
// CHECK:         vector.transfer_read %[[T]]
// CHECK:       scf.for %[[IV:.*]] = {{.*}} iter_args(%[[ACC:.*]] = %{{.*}}, %[[CUR:.*]] = %[[FIRST]]) -> (vector<4xf32>, vector<4xf32>)
// CHECK:         arith.addf %[[ACC]], %[[CUR]] : vector<4xf32>
// CHECK:         %[[NEXT:.*]] = arith.addi %[[IV]], %c1
// CHECK:         scf.if %{{.*}} -> (vector<4xf32>) {
// CHECK:           xla_gpu.apply_indexing #{{.*}}(%[[NEXT]])
// CHECK:           vector.transfer_read %[[T]]
// CHECK:         } else {
// CHECK:           scf.yield %[[CUR]]
func.func @pipeline_transfer_reads(%t: tensor<1024xf32>, %x: vector<4xf32>) -> vector<4xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c256 = arith.constant 256 : index
  %pad = arith.constant 0.0 : f32
  %r = scf.for %i = %c0 to %c256 step %c1 iter_args(%acc = %x) -> (vector<4xf32>) {
    %idx = xla_gpu.apply_indexing #map4(%i)
    %v = vector.transfer_read %t[%idx], %pad {in_bounds = [true]} : tensor<1024xf32>, vector<4xf32>
    %s = arith.addf %acc, %v : vector<4xf32>
    scf.yield %s : vector<4xf32>
  }
  return %r : vector<4xf32>
}
