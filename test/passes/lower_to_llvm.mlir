// RUN: xla-gpu-opt %s -split-input-file -xla-gpu-lower-to-llvm | FileCheck %s
// RUN: not xla-gpu-opt %s -split-input-file -xla-gpu-lower-to-llvm=index-bitwidth=7 2>&1 | FileCheck %s --check-prefix=BITWIDTH
// RUN: not xla-gpu-opt %s -split-input-file -xla-gpu-lower-to-llvm=target=tpu 2>&1 | FileCheck %s --check-prefix=TARGET
// BITWIDTH: error: index-bitwidth must be 32 or 64, got 7
// TARGET: error: target must be gpu or cpu, got tpu
// RUN: xla-gpu-opt %s -split-input-file -xla-gpu-lower-to-llvm=index-bitwidth=32 | FileCheck %s --check-prefix=I32

// CHECK: llvm.func @__nv_tanhf(f32) -> f32
// CHECK-LABEL: llvm.func @main
// CHECK-SAME: attributes {nvvm.kernel}
// CHECK: nvvm.read.ptx.sreg.tid.x : i32
// CHECK: nvvm.read.ptx.sreg.ctaid.x : i32
// CHECK: llvm.call @__nv_tanhf(%{{.*}}) : (f32) -> f32
// I32-LABEL: llvm.func @main
// I32: %[[T:.*]] = nvvm.read.ptx.sreg.tid.x : i32
// I32-NOT: llvm.sext
// I32: llvm.mul %{{.*}}, %{{.*}} : i32
func.func @main(%p: !llvm.ptr) {
  %tid = gpu.thread_id x
  %bid = gpu.block_id x
  %c4 = arith.constant 4 : index
  %i = arith.muli %bid, %c4 : index
  %j = arith.addi %i, %tid : index
  %ii = arith.index_cast %j : index to i64
  %q = llvm.getelementptr %p[%ii] : (!llvm.ptr, i64) -> !llvm.ptr, f32
  %v = llvm.load %q : !llvm.ptr -> f32
  %t = math.tanh %v : f32
  llvm.store %t, %q : f32, !llvm.ptr
  return
}

// -----

// Private functions are not kernels; scf becomes branches.
// CHECK-LABEL: llvm.func @helper
// CHECK-NOT: nvvm.kernel
// CHECK: llvm.cond_br
func.func private @helper(%c: i1, %a: f32, %b: f32) -> f32 {
  %r = scf.if %c -> (f32) {
    scf.yield %a : f32
  } else {
    scf.yield %b : f32
  }
  return %r : f32
}


// -----

// A pad's shifted index divided with floor semantics (it may be negative):
// arith.floordivsi / ceildivsi have no LLVM op and are expanded.
// CHECK-LABEL: llvm.func @floor_and_ceil_division
// CHECK-NOT: arith.
// CHECK: llvm.sdiv
// CHECK: llvm.select
// CHECK: llvm.sdiv
func.func @floor_and_ceil_division(%p: !llvm.ptr, %x: index) {
  %c16 = arith.constant 16 : index
  %f = arith.floordivsi %x, %c16 : index
  %c = arith.ceildivsi %x, %c16 : index
  %s = arith.addi %f, %c : index
  %i = arith.index_cast %s : index to i64
  llvm.store %i, %p : i64, !llvm.ptr
  return
}
