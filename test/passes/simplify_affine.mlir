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

// -----

// affine.apply, as XLA's pass lowers it: with every operand's range known
// (the thread id's xla.range, a loop's bounds) the map is simplified and
// divides unsigned; `d0 floordiv 128` of a thread id below 128 is 0.
// CHECK-LABEL: func.func @affine_apply_known
// CHECK-NOT:   affine.apply
// CHECK:       arith.divui %{{.*}}, %c32
// CHECK:       arith.remui %{{.*}}, %c32
// CHECK-NOT:   arith.floordivsi
// CHECK-NOT:   %c128
func.func @affine_apply_known(%out: tensor<64xindex>) -> tensor<64xindex> {
  %tid = gpu.thread_id x {xla.range = [0 : index, 127 : index]}
  %a = affine.apply affine_map<(d0) -> (d0 floordiv 32 + d0 mod 32 + d0 floordiv 128)>(%tid)
  %c0 = arith.constant 0 : index
  %r = tensor.insert %a into %out[%c0] : tensor<64xindex>
  return %r : tensor<64xindex>
}

// -----

// An operand of unknown range (a function argument): expanded as it is,
// with signed floor division and modulo.
// CHECK-LABEL: func.func @affine_apply_unknown
// CHECK-NOT:   affine.apply
// CHECK:       arith.floordivsi %{{.*}}, %c32
// CHECK-NOT:   arith.divui
func.func @affine_apply_unknown(%x: index, %out: tensor<64xindex>) -> tensor<64xindex> {
  %a = affine.apply affine_map<(d0)[s0] -> (d0 floordiv 32 + s0)>(%x)[%x]
  %c0 = arith.constant 0 : index
  %r = tensor.insert %a into %out[%c0] : tensor<64xindex>
  return %r : tensor<64xindex>
}
