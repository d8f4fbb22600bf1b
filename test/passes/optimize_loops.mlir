// RUN: xla-gpu-opt %s -split-input-file -xla-gpu-optimize-loops | FileCheck %s

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

// A long loop stays a loop.
// CHECK-LABEL: func.func @do_not_unroll_long
// CHECK: scf.for
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
