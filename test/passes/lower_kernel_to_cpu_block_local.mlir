// RUN: xla-gpu-opt %s -split-input-file -xla-gpu-lower-kernel-to-cpu -verify-diagnostics | FileCheck %s

// A result each block writes and reads back only at its own 256 bytes
// (xla.block_local_bytes: a row program's side value, the exp its last
// part reads): the blocks of a batch (here all 8 of the grid) keep theirs
// in a slot of the storage, 8 x 256 bytes, the argument's address moved
// so that the batch's first block's bytes fall on it. Its element
// addresses are no longer in bounds of an object where they start: no
// inbounds. The argument itself is not read or written.
// CHECK-LABEL: func.func @block_local
// CHECK-SAME: (%[[IN:.*]]: !llvm.ptr, %[[TMP:.*]]: !llvm.ptr {xla.block_local_bytes = 256 : i64}, %[[OUT:.*]]: !llvm.ptr, %[[FIRST:.*]]: index, %[[LAST:.*]]: index)
// CHECK-DAG: %[[BYTES:.*]] = llvm.mlir.constant(2048 : i64) : i64
// CHECK-DAG: %[[SLOT:.*]] = llvm.alloca %[[BYTES]] x i8 {alignment = 16 : i64} : (i64) -> !llvm.ptr
// CHECK: scf.for %[[B0:.*]] = %[[FIRST]] to %[[LAST]] step %c8
// CHECK:   %[[B64:.*]] = arith.index_cast %[[B0]] : index to i64
// CHECK:   %[[BACK:.*]] = llvm.mul %[[B64]], %{{.*}} : i64
// CHECK:   %[[BASE:.*]] = llvm.getelementptr %[[SLOT]][%[[BACK]]] : (!llvm.ptr, i64) -> !llvm.ptr, i8
// CHECK:     %[[W:.*]] = llvm.getelementptr %[[BASE]][%{{.*}}] : (!llvm.ptr, i64) -> !llvm.ptr, f32
// CHECK:     llvm.store %{{.*}}, %[[W]] : f32, !llvm.ptr
// CHECK:     %[[R:.*]] = llvm.getelementptr %[[BASE]][%{{.*}}] : (!llvm.ptr, i64) -> !llvm.ptr, f32
// CHECK:     llvm.load %[[R]] : !llvm.ptr -> f32
// CHECK:     llvm.getelementptr inbounds %[[OUT]]
// CHECK-NOT: %[[TMP]]
// CHECK: return
func.func @block_local(%in: !llvm.ptr, %tmp: !llvm.ptr {xla.block_local_bytes = 256 : i64},
                       %out: !llvm.ptr) {
  %tid = gpu.thread_id x {xla.range = [0 : index, 63 : index]}
  %bid = gpu.block_id x {xla.range = [0 : index, 7 : index]}
  %t = arith.index_cast %tid : index to i64
  %b = arith.index_cast %bid : index to i64
  %c64 = arith.constant 64 : i64
  %c63 = arith.constant 63 : i64
  %row = arith.muli %b, %c64 : i64
  %i = arith.addi %row, %t : i64
  %p = llvm.getelementptr inbounds %in[%i] : (!llvm.ptr, i64) -> !llvm.ptr, f32
  %v = llvm.load %p : !llvm.ptr -> f32
  %e = math.exp %v : f32
  %q = llvm.getelementptr inbounds %tmp[%i] : (!llvm.ptr, i64) -> !llvm.ptr, f32
  llvm.store %e, %q : f32, !llvm.ptr
  gpu.barrier
  %r = arith.subi %c63, %t : i64
  %j = arith.addi %row, %r : i64
  %s = llvm.getelementptr inbounds %tmp[%j] : (!llvm.ptr, i64) -> !llvm.ptr, f32
  %w = llvm.load %s : !llvm.ptr -> f32
  %o = llvm.getelementptr inbounds %out[%i] : (!llvm.ptr, i64) -> !llvm.ptr, f32
  llvm.store %w, %o : f32, !llvm.ptr
  return
}

// -----

// Not a byte count, or not on a pointer: an error at the function.
// expected-error @+1 {{argument 0: xla.block_local_bytes must be a positive integer on a pointer argument}}
func.func @not_bytes(%tmp: !llvm.ptr {xla.block_local_bytes = 0 : i64}) {
  %tid = gpu.thread_id x {xla.range = [0 : index, 63 : index]}
  %t = arith.index_cast %tid : index to i64
  %f = arith.constant 1.0 : f32
  %q = llvm.getelementptr inbounds %tmp[%t] : (!llvm.ptr, i64) -> !llvm.ptr, f32
  llvm.store %f, %q : f32, !llvm.ptr
  return
}

// -----

// expected-error @+1 {{argument 0: xla.block_local_bytes must be a positive integer on a pointer argument}}
func.func @not_a_pointer(%n: i64 {xla.block_local_bytes = 64 : i64}, %out: !llvm.ptr) {
  %tid = gpu.thread_id x {xla.range = [0 : index, 63 : index]}
  %t = arith.index_cast %tid : index to i64
  %q = llvm.getelementptr inbounds %out[%t] : (!llvm.ptr, i64) -> !llvm.ptr, i64
  llvm.store %n, %q : i64, !llvm.ptr
  return
}
