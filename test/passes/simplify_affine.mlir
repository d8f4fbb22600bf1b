// RUN: xla-gpu-opt %s -split-input-file -xla-gpu-simplify-affine | FileCheck %s

// Non-negative dividends use unsigned division and remainder; the operand
// ranges (xla.range) simplify the map first.
// CHECK-LABEL: func.func @lower
// CHECK: %[[TID:.*]] = gpu.thread_id x
// CHECK: %[[D:.*]] = arith.divui %[[TID]], %c8
// CHECK: %[[M:.*]] = arith.remui %[[TID]], %c8
// CHECK-NOT: xla_gpu.apply_indexing
// CHECK: return %[[D]], %[[M]], %c0
func.func @lower() -> (index, index, index) {
  %tid = gpu.thread_id x {xla.range = [0 : index, 63 : index]}
  %r:3 = xla_gpu.apply_indexing #xla_gpu.indexing_map<"(d0) -> (d0 floordiv 8, d0 mod 8, d0 floordiv 64), domain: d0 in [0, 1023]">(%tid)
  return %r#0, %r#1, %r#2 : index, index, index
}

// -----

// A dividend that may be negative keeps floor semantics.
// CHECK-LABEL: func.func @signed
// CHECK: arith.floordivsi
// CHECK: arith.floordivsi
// CHECK: arith.subi
func.func @signed(%i: index) -> (index, index) {
  %r:2 = xla_gpu.apply_indexing #xla_gpu.indexing_map<"(d0) -> ((d0 - 3) floordiv 4, (d0 - 3) mod 4), domain: d0 in [0, 15]">(%i)
  return %r#0, %r#1 : index, index
}
