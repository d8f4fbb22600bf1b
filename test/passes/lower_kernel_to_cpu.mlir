// RUN: xla-gpu-opt %s -split-input-file -xla-gpu-lower-kernel-to-cpu -verify-diagnostics | FileCheck %s

// A barrier cuts the kernel into two loops over the threads, inside the loop
// over the blocks of [first, last); a value used across it lives in a
// per-thread array; shared memory is a buffer per call.
// CHECK-LABEL: func.func @main
// CHECK-SAME: (%[[IN:.*]]: !llvm.ptr, %[[OUT:.*]]: !llvm.ptr, %[[FIRST:.*]]: index, %[[LAST:.*]]: index)
// CHECK-DAG: %[[SPILL:.*]] = llvm.alloca %{{.*}} x f32 {alignment = 16 : i64} : (i64) -> !llvm.ptr
// CHECK-DAG: %[[SHMEM:.*]] = llvm.alloca %{{.*}} x !llvm.array<64 x f32> {alignment = 16 : i64} : (i64) -> !llvm.ptr
// CHECK: scf.for %[[BID:.*]] = %[[FIRST]] to %[[LAST]]
// CHECK:   scf.for %[[T1:.*]] = %c0 to %c64
// CHECK:     %[[V:.*]] = llvm.load
// CHECK:     llvm.store %[[V]], %{{.*}}
// CHECK:     llvm.store %[[V]], %{{.*}}
// CHECK:   scf.for %[[T2:.*]] = %c0 to %c64
// CHECK:     llvm.load %{{.*}} : !llvm.ptr -> f32
// CHECK-NOT: gpu.
llvm.mlir.global private @shared_0() {addr_space = 3 : i32, alignment = 16 : i64} : !llvm.array<64 x f32>
func.func @main(%in: !llvm.ptr, %out: !llvm.ptr) {
  %tid = gpu.thread_id x {xla.range = [0 : index, 63 : index]}
  %bid = gpu.block_id x {xla.range = [0 : index, 3 : index]}
  %sh = llvm.mlir.addressof @shared_0 : !llvm.ptr<3>
  %shp = llvm.addrspacecast %sh : !llvm.ptr<3> to !llvm.ptr
  %i = arith.index_cast %tid : index to i64
  %p = llvm.getelementptr %in[%i] : (!llvm.ptr, i64) -> !llvm.ptr, f32
  %v = llvm.load %p : !llvm.ptr -> f32
  %q = llvm.getelementptr %shp[%i] : (!llvm.ptr, i64) -> !llvm.ptr, f32
  llvm.store %v, %q : f32, !llvm.ptr
  gpu.barrier
  %o = llvm.getelementptr %out[%i] : (!llvm.ptr, i64) -> !llvm.ptr, f32
  llvm.store %v, %o : f32, !llvm.ptr
  return
}

// -----

// A shuffle is a phase of its own: lane l reads lane l + 4 of its 32-lane
// segment, or itself past the segment.
// CHECK-LABEL: func.func @shuffle
// CHECK: %[[LANE:.*]] = arith.remui %[[T:.*]], %c32
// CHECK: %[[TARGET:.*]] = arith.addi %[[LANE]], %c4
// CHECK: %[[VALID:.*]] = arith.cmpi ult, %[[TARGET]], %c32
// CHECK: %[[OTHER:.*]] = arith.addi %[[T]], %c4
// CHECK: %[[SRC:.*]] = arith.select %[[VALID]], %[[OTHER]], %[[T]]
// CHECK: llvm.getelementptr %{{.*}}[%{{.*}}]
func.func @shuffle(%out: !llvm.ptr) {
  %tid = gpu.thread_id x {xla.range = [0 : index, 63 : index]}
  %c4 = arith.constant 4 : i32
  %c32 = arith.constant 32 : i32
  %x = arith.index_cast %tid : index to i32
  %f = arith.sitofp %x : i32 to f32
  %s, %valid = gpu.shuffle down %f, %c4, %c32 : f32
  %i = arith.index_cast %tid : index to i64
  %o = llvm.getelementptr %out[%i] : (!llvm.ptr, i64) -> !llvm.ptr, f32
  llvm.store %s, %o : f32, !llvm.ptr
  return
}

// -----

func.func @barrier_in_control_flow(%c: i1) {
  %tid = gpu.thread_id x {xla.range = [0 : index, 63 : index]}
  scf.if %c {
    // expected-error@+1 {{'gpu.barrier' op inside control flow is not supported by the CPU target}}
    gpu.barrier
  }
  return
}

// -----

func.func @no_range(%out: !llvm.ptr) {
  // expected-error@+1 {{needs an xla.range attribute for the CPU target to know the size of the grid}}
  %tid = gpu.thread_id x
  return
}
