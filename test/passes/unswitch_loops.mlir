// RUN: xla-gpu-opt %s -split-input-file -xla-gpu-unswitch-loops | FileCheck %s

// XLA's unswitch_loops test: a loop whose body is one scf.if on a
// condition from outside becomes an if of two loops, each with the branch
// it takes.
// CHECK-LABEL: func.func @unswitchable
// CHECK-SAME: (%[[COND:.*]]: i1, %[[A:.*]]: f32, %[[B:.*]]: f32)
// CHECK:      %[[R:.*]] = scf.if %[[COND]] -> (f32) {
// CHECK-NEXT:   %[[L1:.*]] = scf.for {{.*}} iter_args(%[[X:.*]] = %[[A]]) -> (f32) {
// CHECK-NEXT:     %[[S:.*]] = arith.addf %[[X]], %[[B]]
// CHECK-NEXT:     scf.yield %[[S]]
// CHECK:        scf.yield %[[L1]]
// CHECK-NEXT: } else {
// CHECK-NEXT:   %[[L2:.*]] = scf.for {{.*}} iter_args(%[[Y:.*]] = %[[A]]) -> (f32) {
// CHECK-NEXT:     %[[M:.*]] = arith.mulf %[[Y]], %[[B]]
// CHECK-NEXT:     scf.yield %[[M]]
// CHECK:        scf.yield %[[L2]]
// CHECK:      return %[[R]]
func.func @unswitchable(%cond: i1, %a: f32, %b: f32) -> f32 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %r = scf.for %i = %c0 to %c8 step %c1 iter_args(%x = %a) -> (f32) {
    %y = scf.if %cond -> (f32) {
      %s = arith.addf %x, %b : f32
      scf.yield %s : f32
    } else {
      %m = arith.mulf %x, %b : f32
      scf.yield %m : f32
    }
    scf.yield %y : f32
  }
  return %r : f32
}

// -----

// Not unswitched: a condition computed in the loop, and a body with more
// than the if.
// CHECK-LABEL: func.func @not_unswitchable
// CHECK:      scf.for
// CHECK:        arith.cmpi
// CHECK:        scf.if
// CHECK:      scf.for
// CHECK:        arith.subf
// CHECK:        scf.if
func.func @not_unswitchable(%cond: i1, %a: f32, %b: f32) -> (f32, f32) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %r = scf.for %i = %c0 to %c8 step %c1 iter_args(%x = %a) -> (f32) {
    %in = arith.cmpi ult, %i, %c1 : index
    %y = scf.if %in -> (f32) {
      %s = arith.addf %x, %b : f32
      scf.yield %s : f32
    } else {
      %m = arith.mulf %x, %b : f32
      scf.yield %m : f32
    }
    scf.yield %y : f32
  }
  %q = scf.for %i = %c0 to %c8 step %c1 iter_args(%x = %a) -> (f32) {
    %d = arith.subf %x, %b : f32
    %y = scf.if %cond -> (f32) {
      %s = arith.addf %d, %b : f32
      scf.yield %s : f32
    } else {
      %m = arith.mulf %d, %b : f32
      scf.yield %m : f32
    }
    scf.yield %y : f32
  }
  return %r, %q : f32, f32
}
