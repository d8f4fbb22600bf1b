// RUN: xla-gpu-opt %s -split-input-file -xla-gpu-lower-tensors -verify-diagnostics | FileCheck %s

// Tensors become pointers; the entry writes its result in place and
// returns nothing. The input is never written: its loads are invariant.
// CHECK-LABEL: func.func @main
// CHECK-SAME: (%[[IN:.*]]: !llvm.ptr, %[[OUT:.*]]: !llvm.ptr, %[[I:.*]]: index) {
// CHECK: %[[II:.*]] = arith.index_castui %[[I]] : index to i64
// CHECK: %[[P:.*]] = llvm.getelementptr inbounds %[[IN]][%[[II]]] : (!llvm.ptr, i64) -> !llvm.ptr, f32
// CHECK: %[[V:.*]] = llvm.load %[[P]] invariant : !llvm.ptr -> f32
// CHECK: %[[Q:.*]] = llvm.getelementptr inbounds %[[OUT]][%{{.*}}]
// CHECK: llvm.store %[[V]], %[[Q]] : f32, !llvm.ptr
// CHECK: return
func.func @main(%in: tensor<8xf32>, %out: tensor<8xf32>, %i: index) -> tensor<8xf32> {
  %v = tensor.extract %in[%i] : tensor<8xf32>
  %r = tensor.insert %v into %out[%i] : tensor<8xf32>
  return %r : tensor<8xf32>
}

// -----

// An output in place of its operand (one xla.slice_index: one buffer, the
// arguments merged later by -xla-gpu-merge-pointers): the operand's loads
// read what the kernel writes, so they are not invariant -- in a function
// that only reads the slice too. Another slice, only read, stays invariant.
// CHECK-LABEL: func.func private @reads_the_slice
// CHECK: llvm.load %{{[0-9]+}} : !llvm.ptr -> f32
// CHECK-LABEL: func.func @in_place
// CHECK: llvm.load %{{[0-9]+}} : !llvm.ptr -> f32
// CHECK: llvm.load %{{[0-9]+}} invariant : !llvm.ptr -> f32
// CHECK: llvm.store
func.func private @reads_the_slice(%t: tensor<8xf32> {xla.slice_index = 0 : i32}, %i: index) -> f32 {
  %v = tensor.extract %t[%i] : tensor<8xf32>
  return %v : f32
}
func.func @in_place(%operand: tensor<8xf32> {xla.slice_index = 0 : i32},
                    %other: tensor<8xf32> {xla.slice_index = 1 : i32},
                    %out: tensor<8xf32> {xla.slice_index = 0 : i32}, %i: index) -> tensor<8xf32> {
  %v = tensor.extract %operand[%i] : tensor<8xf32>
  %w = tensor.extract %other[%i] : tensor<8xf32>
  %x = func.call @reads_the_slice(%operand, %i) : (tensor<8xf32>, index) -> f32
  %s = arith.addf %v, %w : f32
  %t = arith.addf %s, %x : f32
  %j = arith.addi %i, %i : index
  %r = tensor.insert %t into %out[%j] : tensor<8xf32>
  return %r : tensor<8xf32>
}

// -----

// Vector transfers; a tensor that is written is not loaded as invariant.
// CHECK-LABEL: func.func @vectors
// CHECK: %[[V:.*]] = llvm.load %{{.*}} : !llvm.ptr -> vector<4xf32>
// CHECK: %[[N:.*]] = arith.negf %[[V]]
// CHECK: llvm.store %[[N]], %{{.*}} : vector<4xf32>, !llvm.ptr
func.func @vectors(%t: tensor<16xf32>, %i: index) -> tensor<16xf32> {
  %pad = arith.constant 0.0 : f32
  %v = vector.transfer_read %t[%i], %pad {in_bounds = [true]} : tensor<16xf32>, vector<4xf32>
  %n = arith.negf %v : vector<4xf32>
  %r = vector.transfer_write %n, %t[%i] {in_bounds = [true]} : vector<4xf32>, tensor<16xf32>
  return %r : tensor<16xf32>
}

// -----

// LLVM has no 8-bit float types: their elements and vectors move as bytes
// and are bitcast.
// CHECK-LABEL: func.func @float8
// CHECK: %[[B:.*]] = llvm.load %{{.*}} invariant : !llvm.ptr -> i8
// CHECK: %[[F:.*]] = arith.bitcast %[[B]] : i8 to f8E4M3FN
// CHECK: %[[S:.*]] = arith.bitcast %[[F]] : f8E4M3FN to i8
// CHECK: llvm.store %[[S]], %{{.*}} : i8, !llvm.ptr
// CHECK: %[[VB:.*]] = llvm.load %{{.*}} invariant : !llvm.ptr -> vector<4xi8>
// CHECK: %[[VF:.*]] = arith.bitcast %[[VB]] : vector<4xi8> to vector<4xf8E5M2>
// CHECK: %[[VS:.*]] = arith.bitcast %[[VF]] : vector<4xf8E5M2> to vector<4xi8>
// CHECK: llvm.store %[[VS]], %{{.*}} : vector<4xi8>, !llvm.ptr
func.func @float8(%in: tensor<8xf8E4M3FN>, %vin: tensor<8xf8E5M2>, %out: tensor<8xf8E4M3FN>,
                  %vout: tensor<8xf8E5M2>, %i: index) -> (tensor<8xf8E4M3FN>, tensor<8xf8E5M2>) {
  %v = tensor.extract %in[%i] : tensor<8xf8E4M3FN>
  %r = tensor.insert %v into %out[%i] : tensor<8xf8E4M3FN>
  %pad = arith.constant 0.0 : f8E5M2
  %w = vector.transfer_read %vin[%i], %pad {in_bounds = [true]} : tensor<8xf8E5M2>, vector<4xf8E5M2>
  %vr = vector.transfer_write %w, %vout[%i] {in_bounds = [true]} : vector<4xf8E5M2>, tensor<8xf8E5M2>
  return %r, %vr : tensor<8xf8E4M3FN>, tensor<8xf8E5M2>
}

// -----

// A constant array is a private constant global.
// CHECK: llvm.mlir.global private constant @constant_0(dense<[1.000000e+00, 2.000000e+00, 3.000000e+00]> : tensor<3xf32>) {addr_space = 0 : i32, alignment = 16 : i64} : !llvm.array<3 x f32>
// CHECK-LABEL: func.func @constant_array
// CHECK: %[[A:.*]] = llvm.mlir.addressof @constant_0 : !llvm.ptr
// CHECK: %[[P:.*]] = llvm.getelementptr inbounds %[[A]][%{{.*}}] : (!llvm.ptr, i64) -> !llvm.ptr, f32
// CHECK: llvm.load %[[P]] : !llvm.ptr -> f32
func.func @constant_array(%i: index) -> f32 {
  %c = arith.constant dense<[1.0, 2.0, 3.0]> : tensor<3xf32>
  %v = tensor.extract %c[%i] : tensor<3xf32>
  return %v : f32
}

// -----

// Sub-byte integers are packed, two s4 a byte, the first in the low bits (as
// XLA's buffers): a load takes the byte and shifts; a store replaces the
// element's bits in it. A constant array is packed the same way.
// CHECK: llvm.mlir.global private constant @constant_0(dense<[33, 67, 5]> : tensor<3xi8>)
// CHECK-SAME: !llvm.array<3 x i8>
// CHECK-LABEL: func.func @int4
// CHECK-SAME: (%[[IN:.*]]: !llvm.ptr, %[[OUT:.*]]: !llvm.ptr, %[[I:.*]]: index)
// CHECK: %[[B:.*]] = arith.divui %[[I]], %c2
// CHECK: %[[R:.*]] = arith.remui %[[I]], %c2
// CHECK: %[[BIT:.*]] = arith.muli %[[R]], %c4
// CHECK: %[[SH:.*]] = arith.index_cast %[[BIT]] : index to i8
// CHECK: %[[BI:.*]] = arith.index_castui %[[B]] : index to i64
// CHECK: %[[P:.*]] = llvm.getelementptr inbounds %[[IN]][%[[BI]]] : (!llvm.ptr, i64) -> !llvm.ptr, i8
// CHECK: %[[BYTE:.*]] = llvm.load %[[P]] invariant : !llvm.ptr -> i8
// CHECK: %[[V:.*]] = arith.shrui %[[BYTE]], %[[SH]] : i8
// CHECK: arith.trunci %[[V]] : i8 to i4
// CHECK: %[[SUM:.*]] = arith.addi %{{.*}}, %{{.*}} : i4
// CHECK: %[[OSH:.*]] = arith.index_cast %{{.*}} : index to i8
// CHECK: %[[Q:.*]] = llvm.getelementptr inbounds %[[OUT]]
// CHECK: %[[OLD:.*]] = llvm.load %[[Q]] : !llvm.ptr -> i8
// CHECK: %[[MASK:.*]] = arith.shli %c15_i8, %[[OSH]] : i8
// CHECK: %[[NOT:.*]] = arith.xori %[[MASK]], %c-1_i8
// CHECK: %[[KEEP:.*]] = arith.andi %[[OLD]], %[[NOT]]
// CHECK: %[[WIDE:.*]] = arith.extui %[[SUM]] : i4 to i8
// CHECK: %[[NEW:.*]] = arith.shli %[[WIDE]], %[[OSH]] : i8
// CHECK: %[[BOTH:.*]] = arith.ori %[[KEEP]], %[[NEW]]
// CHECK: llvm.store %[[BOTH]], %[[Q]] : i8, !llvm.ptr
func.func @int4(%in: tensor<6xi4>, %out: tensor<6xi4>, %i: index) -> tensor<6xi4> {
  %v = tensor.extract %in[%i] : tensor<6xi4>
  %c = arith.constant dense<[1, 2, 3, 4, 5, 0]> : tensor<6xi4>
  %w = tensor.extract %c[%i] : tensor<6xi4>
  %s = arith.addi %v, %w : i4
  %r = tensor.insert %s into %out[%i] : tensor<6xi4>
  return %r : tensor<6xi4>
}

// -----

// An index that is a multiple of the elements a byte holds plus a constant
// (a thread's k-th of several unrolled elements, 4 * t + 1 here): the byte
// is the multiple's quotient plus the constant's, the shift a constant --
// no division, and a thread's two elements of one byte share its load.
// CHECK-LABEL: func.func @int4_known_position
// CHECK-SAME: (%[[IN:.*]]: !llvm.ptr, %[[T:.*]]: index)
// CHECK-NOT: arith.divui
// CHECK-NOT: arith.remui
// CHECK: %[[HALF:.*]] = arith.muli %[[T]], %c2
// CHECK: %[[BI:.*]] = arith.index_castui %[[HALF]] : index to i64
// CHECK: %[[P:.*]] = llvm.getelementptr inbounds %[[IN]][%[[BI]]] : (!llvm.ptr, i64) -> !llvm.ptr, i8
// CHECK: %[[BYTE:.*]] = llvm.load %[[P]] invariant : !llvm.ptr -> i8
// CHECK: arith.shrui %[[BYTE]], %c4_i8 : i8
func.func @int4_known_position(%in: tensor<64xi4>, %t: index) -> i4 {
  %c4 = arith.constant 4 : index
  %c1 = arith.constant 1 : index
  %base = arith.muli %t, %c4 : index
  %i = arith.addi %base, %c1 : index
  %v = tensor.extract %in[%i] : tensor<64xi4>
  return %v : i4
}

// -----

// Shared memory is a global in address space 3; sync_threads a barrier.
// CHECK: llvm.mlir.global private @shared_0() {addr_space = 3 : i32, alignment = 16 : i64} : !llvm.array<64 x f32>
// CHECK-LABEL: func.func @shared
// CHECK: %[[A:.*]] = llvm.mlir.addressof @shared_0 : !llvm.ptr<3>
// CHECK: %[[G:.*]] = llvm.addrspacecast %[[A]] : !llvm.ptr<3> to !llvm.ptr
// CHECK: llvm.store %{{.*}}, %{{.*}}
// CHECK: gpu.barrier
// CHECK: llvm.load
func.func @shared(%v: f32, %i: index, %j: index) -> f32 {
  %shmem = xla_gpu.allocate_shared : tensor<64xf32>
  %w = tensor.insert %v into %shmem[%i] : tensor<64xf32>
  %s = xla_gpu.sync_threads %w : tensor<64xf32>
  %r = tensor.extract %s[%j] : tensor<64xf32>
  return %r : f32
}

// -----

// An add is a native atomic; a multiply needs a compare-and-swap loop.
// CHECK-LABEL: func.func @atomics
// CHECK: llvm.atomicrmw fadd %{{.*}}, %{{.*}} monotonic : !llvm.ptr, f32
// CHECK: scf.while
// CHECK: arith.mulf
// CHECK: llvm.cmpxchg %{{.*}}, %{{.*}}, %{{.*}} monotonic monotonic : !llvm.ptr, i32
func.func @atomics(%t: tensor<8xf32>, %i: index, %x: f32) -> tensor<8xf32> {
  %a = xla_gpu.atomic_rmw %t[%i] : tensor<8xf32> {
  ^bb0(%cur: f32):
    %s = arith.addf %cur, %x : f32
    xla_gpu.yield %s : f32
  }
  %b = xla_gpu.atomic_rmw %a[%i] : tensor<8xf32> {
  ^bb0(%cur: f32):
    %p = arith.mulf %cur, %x : f32
    xla_gpu.yield %p : f32
  }
  return %b : tensor<8xf32>
}

// -----

// The scatter emitter's mark of sorted indices stays on the native atomic,
// or on the compare-and-swap loop (-xla-gpu-lower-kernel-to-cpu carries
// the runs of such updates).
// CHECK-LABEL: func.func @sorted_atomic
// CHECK: llvm.atomicrmw fadd %{{.*}}, %{{.*}} monotonic {xla.indices_are_sorted} : !llvm.ptr, f32
// CHECK: scf.while
// CHECK: llvm.cmpxchg
// CHECK: } attributes {xla.indices_are_sorted}
func.func @sorted_atomic(%t: tensor<8xf32>, %i: index, %x: f32) -> tensor<8xf32> {
  %a = xla_gpu.atomic_rmw %t[%i] : tensor<8xf32> {
  ^bb0(%cur: f32):
    %s = arith.addf %cur, %x : f32
    xla_gpu.yield %s : f32
  } {xla.indices_are_sorted}
  %b = xla_gpu.atomic_rmw %a[%i] : tensor<8xf32> {
  ^bb0(%cur: f32):
    %m = arith.maximumf %cur, %x : f32
    xla_gpu.yield %m : f32
  } {xla.indices_are_sorted}
  return %b : tensor<8xf32>
}

// -----

// N-d tensors must be flattened first.
func.func @not_flat(%t: tensor<2x4xf32>, %i: index) -> f32 {
  // expected-error@+2 {{has 2 indices; run -xla-gpu-flatten-tensors before lowering tensors}}
  // expected-error@+1 {{failed to legalize operation 'tensor.extract'}}
  %v = tensor.extract %t[%i, %i] : tensor<2x4xf32>
  return %v : f32
}

// -----

// Each native integer atomic is its own LLVM operation: signed and unsigned
// max/min differ (a maxui lowered as a signed max is wrong from 2^31 on).
// CHECK-LABEL: func.func @native_atomics
// CHECK: llvm.atomicrmw add %{{.*}}, %{{.*}} monotonic : !llvm.ptr, i32
// CHECK: llvm.atomicrmw max %{{.*}}, %{{.*}} monotonic : !llvm.ptr, i32
// CHECK: llvm.atomicrmw min %{{.*}}, %{{.*}} monotonic : !llvm.ptr, i32
// CHECK: llvm.atomicrmw umax %{{.*}}, %{{.*}} monotonic : !llvm.ptr, i32
// CHECK: llvm.atomicrmw umin %{{.*}}, %{{.*}} monotonic : !llvm.ptr, i32
// CHECK: llvm.atomicrmw _and %{{.*}}, %{{.*}} monotonic : !llvm.ptr, i32
// CHECK: llvm.atomicrmw _or %{{.*}}, %{{.*}} monotonic : !llvm.ptr, i32
// CHECK: llvm.atomicrmw _xor %{{.*}}, %{{.*}} monotonic : !llvm.ptr, i32
// CHECK-NOT: llvm.cmpxchg
func.func @native_atomics(%t: tensor<8xi32>, %i: index, %x: i32) -> tensor<8xi32> {
  %r0 = xla_gpu.atomic_rmw %t[%i] : tensor<8xi32> {
  ^bb0(%cur: i32):
    %s = arith.addi %cur, %x : i32
    xla_gpu.yield %s : i32
  }
  %r1 = xla_gpu.atomic_rmw %r0[%i] : tensor<8xi32> {
  ^bb0(%cur: i32):
    %s = arith.maxsi %cur, %x : i32
    xla_gpu.yield %s : i32
  }
  %r2 = xla_gpu.atomic_rmw %r1[%i] : tensor<8xi32> {
  ^bb0(%cur: i32):
    %s = arith.minsi %cur, %x : i32
    xla_gpu.yield %s : i32
  }
  %r3 = xla_gpu.atomic_rmw %r2[%i] : tensor<8xi32> {
  ^bb0(%cur: i32):
    %s = arith.maxui %cur, %x : i32
    xla_gpu.yield %s : i32
  }
  %r4 = xla_gpu.atomic_rmw %r3[%i] : tensor<8xi32> {
  ^bb0(%cur: i32):
    %s = arith.minui %cur, %x : i32
    xla_gpu.yield %s : i32
  }
  %r5 = xla_gpu.atomic_rmw %r4[%i] : tensor<8xi32> {
  ^bb0(%cur: i32):
    %s = arith.andi %cur, %x : i32
    xla_gpu.yield %s : i32
  }
  %r6 = xla_gpu.atomic_rmw %r5[%i] : tensor<8xi32> {
  ^bb0(%cur: i32):
    %s = arith.ori %cur, %x : i32
    xla_gpu.yield %s : i32
  }
  %r7 = xla_gpu.atomic_rmw %r6[%i] : tensor<8xi32> {
  ^bb0(%cur: i32):
    %s = arith.xori %cur, %x : i32
    xla_gpu.yield %s : i32
  }
  return %r7 : tensor<8xi32>
}

// -----

// complex<f32>: one 64-bit compare-and-swap of the (re, im) pair.
// CHECK-LABEL: func.func @complex_atomic
// CHECK: llvm.load %{{.*}} : !llvm.ptr -> i64
// CHECK: scf.while
// CHECK: complex.create
// CHECK: complex.add
// CHECK: llvm.cmpxchg %{{.*}}, %{{.*}}, %{{.*}} monotonic monotonic : !llvm.ptr, i64
func.func @complex_atomic(%t: tensor<4xcomplex<f32>>, %i: index, %v: complex<f32>) -> tensor<4xcomplex<f32>> {
  %r = xla_gpu.atomic_rmw %t[%i] : tensor<4xcomplex<f32>> {
  ^bb0(%cur: complex<f32>):
    %s = complex.add %cur, %v : complex<f32>
    xla_gpu.yield %s : complex<f32>
  }
  return %r : tensor<4xcomplex<f32>>
}

// -----

// complex<f64> would need a 128-bit compare-and-swap: refused, not an abort.
func.func @complex128_atomic(%t: tensor<4xcomplex<f64>>, %i: index, %v: complex<f64>) -> tensor<4xcomplex<f64>> {
  // expected-error@+1 {{has no atomic update for 'complex<f64>' values (only integers, floats and complex<f32>; a 128-bit compare-and-swap does not exist)}}
  %r = xla_gpu.atomic_rmw %t[%i] : tensor<4xcomplex<f64>> {
  ^bb0(%cur: complex<f64>):
    %s = complex.add %cur, %v : complex<f64>
    xla_gpu.yield %s : complex<f64>
  }
  return %r : tensor<4xcomplex<f64>>
}

// -----

// Sub-word values: packed s4 and s8 as a compare-and-swap of the 32-bit
// word holding them (XLA's form): the word's address is the element's with
// its offset in the word (address & 3) taken off, the element's bits are
// at 8 * offset (+ the nibble's shift for s4). A native integer atomic is
// 32- or 64-bit: an s8 max is a compare-and-swap too.
// CHECK-LABEL: func.func @sub_word_atomics
// CHECK: %[[A:.*]] = llvm.ptrtoint %{{.*}} : !llvm.ptr to i64
// CHECK: %[[OFF:.*]] = arith.andi %[[A]], %c3_i64 : i64
// CHECK: %[[BACK:.*]] = arith.subi %c0_i64, %[[OFF]] : i64
// CHECK: %[[WORD:.*]] = llvm.getelementptr inbounds %{{.*}}[%[[BACK]]] : (!llvm.ptr, i64) -> !llvm.ptr, i8
// CHECK: scf.while
// CHECK: arith.shrui %{{.*}} : i32
// CHECK: arith.trunci %{{.*}} : i32 to i4
// CHECK: llvm.cmpxchg %[[WORD]], %{{.*}}, %{{.*}} monotonic monotonic : !llvm.ptr, i32
// CHECK: llvm.ptrtoint
// CHECK: scf.while
// CHECK: arith.trunci %{{.*}} : i32 to i8
// CHECK: arith.muli %{{.*}} : i8
// CHECK: llvm.cmpxchg %{{.*}}, %{{.*}}, %{{.*}} monotonic monotonic : !llvm.ptr, i32
// CHECK: llvm.ptrtoint
// CHECK: scf.while
// CHECK: arith.maxsi %{{.*}} : i8
// CHECK: llvm.cmpxchg %{{.*}}, %{{.*}}, %{{.*}} monotonic monotonic : !llvm.ptr, i32
// CHECK-NOT: llvm.atomicrmw
func.func @sub_word_atomics(%t: tensor<8xi4>, %u: tensor<8xi8>, %i: index, %x: i4, %y: i8) -> (tensor<8xi4>, tensor<8xi8>) {
  %a = xla_gpu.atomic_rmw %t[%i] : tensor<8xi4> {
  ^bb0(%cur: i4):
    %s = arith.addi %cur, %x : i4
    xla_gpu.yield %s : i4
  }
  %b = xla_gpu.atomic_rmw %u[%i] : tensor<8xi8> {
  ^bb0(%cur: i8):
    %s = arith.muli %cur, %y : i8
    xla_gpu.yield %s : i8
  }
  %c = xla_gpu.atomic_rmw %b[%i] : tensor<8xi8> {
  ^bb0(%cur: i8):
    %s = arith.maxsi %cur, %y : i8
    xla_gpu.yield %s : i8
  }
  return %a, %c : tensor<8xi4>, tensor<8xi8>
}

// -----

// A transfer not marked in bounds would load or store a whole vector past
// the end of the tensor: refused (the vectorizer marks the ones it makes).
func.func @transfer_maybe_out_of_bounds(%t: tensor<10xf32>, %i: index) -> vector<4xf32> {
  %c0 = arith.constant 0.0 : f32
  // expected-error@+1 {{may access past the end of its tensor}}
  %v = vector.transfer_read %t[%i], %c0 : tensor<10xf32>, vector<4xf32>
  return %v : vector<4xf32>
}

// -----

func.func @transfer_write_maybe_out_of_bounds(%t: tensor<10xf32>, %i: index,
                                              %v: vector<4xf32>) -> tensor<10xf32> {
  // expected-error@+1 {{may access past the end of its tensor}}
  %w = vector.transfer_write %v, %t[%i] : vector<4xf32>, tensor<10xf32>
  return %w : tensor<10xf32>
}

// -----

// A grid larger than the tensor: thread ids up to 1023 index 16 elements.
// Refused before anything is lowered (it would read and write past the
// buffers). An access under an scf.if is left alone (its condition may be
// the guard), as is one whose index stays inside.
func.func @grid_past_the_tensor(%in: tensor<16xf32>, %out: tensor<16xf32>, %c: i1)
    -> tensor<16xf32> {
  %t = gpu.thread_id x {xla.range = [0 : index, 1023 : index]}
  // expected-error@+1 {{index 0 takes values in [0, 1023], outside the dimension's [0, 15]: the access would run past its tensor}}
  %v = tensor.extract %in[%t] : tensor<16xf32>
  %r = scf.if %c -> tensor<16xf32> {
    %w = tensor.insert %v into %out[%t] : tensor<16xf32>
    scf.yield %w : tensor<16xf32>
  } else {
    scf.yield %out : tensor<16xf32>
  }
  return %r : tensor<16xf32>
}

// -----

// A padded window's last one (a reduce-window over s32[1023], windows of
// 32, pad=0_1): the loop lowering makes the constraint d0 * 32 + s0 <= 1022
// the loop's bound, s0 < min(32, 1023 - d0 * 32), which the index's range
// ([0, 1023]: d0's and s0's apart) cannot see. An index of a loop whose
// bounds are computed is left alone.
// CHECK-LABEL: func.func @window_cut_by_its_loop_bound(
// CHECK: scf.for
// CHECK: llvm.load
func.func @window_cut_by_its_loop_bound(%in: tensor<1023xi32>, %out: tensor<32xi32>)
    -> tensor<32xi32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c32 = arith.constant 32 : index
  %c1023 = arith.constant 1023 : index
  %zero = arith.constant 0 : i32
  %t = gpu.thread_id x {xla.range = [0 : index, 31 : index]}
  %base = arith.muli %t, %c32 : index
  %left = arith.subi %c1023, %base : index
  %end = arith.minsi %left, %c32 : index
  %sum = scf.for %s = %c0 to %end step %c1 iter_args(%acc = %zero) -> (i32) {
    %i = arith.addi %base, %s : index
    %x = tensor.extract %in[%i] : tensor<1023xi32>
    %a = arith.addi %acc, %x : i32
    scf.yield %a : i32
  }
  %w = tensor.insert %sum into %out[%t] : tensor<32xi32>
  return %w : tensor<32xi32>
}

// -----

// The same window over constant bounds does run past the tensor.
func.func @window_past_the_tensor(%in: tensor<1023xi32>, %out: tensor<32xi32>)
    -> tensor<32xi32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c32 = arith.constant 32 : index
  %zero = arith.constant 0 : i32
  %t = gpu.thread_id x {xla.range = [0 : index, 31 : index]}
  %base = arith.muli %t, %c32 : index
  %sum = scf.for %s = %c0 to %c32 step %c1 iter_args(%acc = %zero) -> (i32) {
    %i = arith.addi %base, %s : index
    // expected-error@+1 {{index 0 takes values in [0, 1023], outside the dimension's [0, 1022]: the access would run past its tensor}}
    %x = tensor.extract %in[%i] : tensor<1023xi32>
    %a = arith.addi %acc, %x : i32
    scf.yield %a : i32
  }
  %w = tensor.insert %sum into %out[%t] : tensor<32xi32>
  return %w : tensor<32xi32>
}

// -----

func.func @insert_past_the_tensor(%out: tensor<16xf32>, %v: f32) -> tensor<16xf32> {
  %t = gpu.thread_id x {xla.range = [0 : index, 15 : index]}
  %c1 = arith.constant 1 : index
  %n = arith.addi %t, %c1 : index
  // expected-error@+1 {{index 0 takes values in [1, 16], outside the dimension's [0, 15]}}
  %w = tensor.insert %v into %out[%n] : tensor<16xf32>
  return %w : tensor<16xf32>
}

// -----

// A constant index goes into the GEP (XLA's form): no index arithmetic.
// CHECK-LABEL: func.func @constant_index(
// CHECK-SAME:    %[[IN:.*]]: !llvm.ptr
// CHECK-NOT:   arith.index_cast
// CHECK:       %[[P:.*]] = llvm.getelementptr inbounds %[[IN]][5] : (!llvm.ptr) -> !llvm.ptr, f32
// CHECK:       llvm.load %[[P]]
func.func @constant_index(%in: tensor<16xf32>) -> f32 {
  %c5 = arith.constant 5 : index
  %x = tensor.extract %in[%c5] : tensor<16xf32>
  return %x : f32
}

// -----

// A vector of pred is a byte an element in memory, as XLA stores pred (an
// LLVM store of vector<4xi1> would pack it into 4 bits): widened to i8 on
// the way out, any nonzero byte true on the way in.
// CHECK-LABEL: func.func @pred_vectors(
// CHECK-SAME:    %[[A:.*]]: !llvm.ptr, %[[B:.*]]: !llvm.ptr
// CHECK:       %[[LOADED:.*]] = llvm.load %{{.*}} invariant : !llvm.ptr -> vector<4xi8>
// CHECK:       %[[ZERO:.*]] = arith.constant dense<0> : vector<4xi8>
// CHECK:       %[[V:.*]] = arith.cmpi ne, %[[LOADED]], %[[ZERO]] : vector<4xi8>
// CHECK:       %[[N:.*]] = arith.xori %[[V]]
// CHECK:       %[[BYTES:.*]] = arith.extui %[[N]] : vector<4xi1> to vector<4xi8>
// CHECK:       llvm.store %[[BYTES]], %{{.*}} : vector<4xi8>, !llvm.ptr
func.func @pred_vectors(%a: tensor<16xi1>, %b: tensor<16xi1>, %i: index) -> tensor<16xi1> {
  %false = arith.constant false
  %ones = arith.constant dense<true> : vector<4xi1>
  %v = vector.transfer_read %a[%i], %false {in_bounds = [true]} : tensor<16xi1>, vector<4xi1>
  %n = arith.xori %v, %ones : vector<4xi1>
  %w = vector.transfer_write %n, %b[%i] {in_bounds = [true]} : vector<4xi1>, tensor<16xi1>
  return %w : tensor<16xi1>
}

// -----

// A scalar pred too: loaded and stored as its byte (i8), which LLVM's loop
// vectorizer widens into one load of 16 bytes (a load of i1 it could only
// gather); a constant array of pred a byte an element.
// CHECK:       llvm.mlir.global private constant @{{.*}}(dense<[1, 0, 0, 1]> : tensor<4xi8>) {{.*}} : !llvm.array<4 x i8>
// CHECK-LABEL: func.func @pred_scalars(
// CHECK:       %[[LOADED:.*]] = llvm.load %{{.*}} invariant : !llvm.ptr -> i8
// CHECK:       %[[ZERO:.*]] = arith.constant 0 : i8
// CHECK:       %[[P:.*]] = arith.cmpi ne, %[[LOADED]], %[[ZERO]] : i8
// CHECK:       %[[T:.*]] = llvm.load %{{.*}} : !llvm.ptr -> i8
// CHECK:       %[[N:.*]] = arith.xori %[[P]], %{{.*}} : i1
// CHECK:       %[[BYTE:.*]] = arith.extui %{{.*}} : i1 to i8
// CHECK:       llvm.store %[[BYTE]], %{{.*}} : i8, !llvm.ptr
func.func @pred_scalars(%a: tensor<16xi1>, %b: tensor<16xi1>, %i: index, %j: index) -> tensor<16xi1> {
  %table = arith.constant dense<[true, false, false, true]> : tensor<4xi1>
  %v = tensor.extract %a[%i] : tensor<16xi1>
  %t = tensor.extract %table[%j] : tensor<4xi1>
  %n = arith.xori %v, %t : i1
  %w = tensor.insert %n into %b[%i] : tensor<16xi1>
  return %w : tensor<16xi1>
}
