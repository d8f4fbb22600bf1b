// RUN: xla-gpu-opt %s -split-input-file -xla-gpu-merge-pointers -verify-diagnostics | FileCheck %s

// Arguments 0 and 2 are the same buffer slice: passed once. The distinct
// slices left are noalias (XLA).
// CHECK-LABEL: func.func @main
// CHECK-SAME: (%[[A:.*]]: !llvm.ptr {llvm.noalias, xla.slice_index = 0 : i64}, %[[B:.*]]: !llvm.ptr {llvm.noalias, xla.slice_index = 1 : i64})
// CHECK: llvm.load %[[A]]
// CHECK: llvm.store %{{.*}}, %[[A]]
func.func @main(%a: !llvm.ptr {xla.slice_index = 0}, %b: !llvm.ptr {xla.slice_index = 1},
                %c: !llvm.ptr {xla.slice_index = 0}) {
  %v = llvm.load %a : !llvm.ptr -> f32
  llvm.store %v, %c : f32, !llvm.ptr
  return
}

// -----

// expected-error@+1 {{arguments 0 and 1 share a buffer slice but have different types}}
func.func @mismatch(%a: !llvm.ptr {xla.slice_index = 0}, %b: i64 {xla.slice_index = 0}) {
  return
}

// -----

// A private function whose arguments share a slice: merged too, and its
// call passes the buffer once (XLA merges in callees).
// CHECK-LABEL: func.func private @callee(
// CHECK-SAME:    %[[X:[a-z0-9]+]]: !llvm.ptr {llvm.noalias, xla.slice_index = 0 : i64}, %[[I:[a-z0-9]+]]: i64)
// CHECK:       llvm.load %[[X]]
// CHECK:       llvm.store %{{.*}}, %[[X]]
// CHECK-LABEL: func.func @entry(
// CHECK:       call @callee(%{{.*}}, %{{.*}}) : (!llvm.ptr, i64) -> ()
func.func private @callee(%x: !llvm.ptr {xla.slice_index = 0}, %i: i64, %y: !llvm.ptr {xla.slice_index = 0}) {
  %v = llvm.load %x : !llvm.ptr -> f32
  llvm.store %v, %y : f32, !llvm.ptr
  return
}
func.func @entry(%a: !llvm.ptr {xla.slice_index = 0}, %i: i64) {
  call @callee(%a, %i, %a) : (!llvm.ptr, i64, !llvm.ptr) -> ()
  return
}
