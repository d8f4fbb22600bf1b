// RUN: xla-gpu-opt %s -split-input-file -xla-gpu-merge-pointers -verify-diagnostics | FileCheck %s

// Arguments 0 and 2 are the same buffer slice: passed once.
// CHECK-LABEL: func.func @main
// CHECK-SAME: (%[[A:.*]]: !llvm.ptr {xla.slice_index = 0 : i64}, %[[B:.*]]: !llvm.ptr {xla.slice_index = 1 : i64})
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
