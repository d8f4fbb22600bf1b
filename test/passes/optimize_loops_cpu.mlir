// RUN: xla-gpu-opt %s -split-input-file -xla-gpu-optimize-loops | FileCheck %s --check-prefix=GPU
// RUN: xla-gpu-opt %s -split-input-file \
// RUN:   -xla-gpu-optimize-loops="pipeline-loads=false unroll-top-level-accumulations=false \
// RUN:   unroll-top-level-math-loops=false" | FileCheck %s --check-prefix=CPU
// RUN: xla-gpu-opt %s -split-input-file \
// RUN:   -xla-gpu-optimize-loops="pipeline-loads=false unroll-top-level-accumulations=false \
// RUN:   unroll-top-level-math-loops=false max-unrolled-ops=8" | FileCheck %s --check-prefix=KEPT
// RUN: xla-gpu-opt %s -split-input-file \
// RUN:   -xla-gpu-optimize-loops="pipeline-loads=false unroll-top-level-accumulations=false \
// RUN:   unroll-top-level-math-loops=false max-unrolled-ops=8 unroll-nested-short-loops=true" \
// RUN:   | FileCheck %s --check-prefix=NESTED

// A thread's accumulation over 8 elements at the top level of the kernel:
// unrolled for the GPU; for the CPU target (unroll-top-level-accumulations
// =false) it stays a loop, which -xla-gpu-lower-kernel-to-cpu runs
// interchanged with the threads.
// GPU-LABEL: func.func @accumulate
// GPU-NOT:   scf.for
// GPU-COUNT-8: arith.addf
// CPU-LABEL: func.func @accumulate
// CPU:       scf.for {{.*}} iter_args
// CPU-COUNT-1: arith.addf
// CPU-NOT:   arith.addf
func.func @accumulate(%t: tensor<64xf32>, %tid: index) -> f32 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %zero = arith.constant 0.0 : f32
  %sum = scf.for %k = %c0 to %c8 step %c1 iter_args(%acc = %zero) -> (f32) {
    %i = arith.addi %k, %tid : index
    %x = tensor.extract %t[%i] : tensor<64xf32>
    %next = arith.addf %acc, %x : f32
    scf.yield %next : f32
  }
  return %sum : f32
}

// -----

// Four elements (a thread's vector of 4): unrolled on the CPU target too
// (its lanes' elements one interleaved load, see kMinAccumulationTrips).
// CPU-LABEL: func.func @accumulate_four
// CPU-NOT:   scf.for
// CPU-COUNT-4: arith.addf
func.func @accumulate_four(%t: tensor<64xf32>, %tid: index) -> f32 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %zero = arith.constant 0.0 : f32
  %sum = scf.for %k = %c0 to %c4 step %c1 iter_args(%acc = %zero) -> (f32) {
    %i = xla_gpu.apply_indexing #xla_gpu.indexing_map<"(d0, d1) -> (d1 * 4 + d0), domain: d0 in [0, 3], d1 in [0, 15]">(%k, %tid)
    %x = tensor.extract %t[%i] : tensor<64xf32>
    %next = arith.addf %acc, %x : f32
    scf.yield %next : f32
  }
  return %sum : f32
}

// -----

// Four steps 64 f32 apart (a row of 256 on 32 lanes of 2): unrolled; four
// steps 1024 apart (a column reduction down its rows): kept, interchanged.
// CPU-LABEL: func.func @accumulate_near
// CPU-NOT:   scf.for
// CPU-COUNT-4: arith.maximumf
// CPU-LABEL: func.func @accumulate_far
// CPU:       scf.for {{.*}} iter_args
// CPU-COUNT-1: arith.maximumf
// CPU-NOT:   arith.maximumf
func.func @accumulate_near(%t: tensor<4096xf32>, %tid: index) -> f32 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %zero = arith.constant 0.0 : f32
  %m = scf.for %k = %c0 to %c4 step %c1 iter_args(%acc = %zero) -> (f32) {
    %i = xla_gpu.apply_indexing #xla_gpu.indexing_map<"(d0, d1) -> (d0 * 64 + d1), domain: d0 in [0, 3], d1 in [0, 63]">(%k, %tid)
    %x = tensor.extract %t[%i] : tensor<4096xf32>
    %next = arith.maximumf %acc, %x : f32
    scf.yield %next : f32
  }
  return %m : f32
}
func.func @accumulate_far(%t: tensor<4096xf32>, %tid: index) -> f32 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %zero = arith.constant 0.0 : f32
  %m = scf.for %k = %c0 to %c4 step %c1 iter_args(%acc = %zero) -> (f32) {
    %i = xla_gpu.apply_indexing #xla_gpu.indexing_map<"(d0, d1) -> (d0 * 1024 + d1), domain: d0 in [0, 3], d1 in [0, 1023]">(%k, %tid)
    %x = tensor.extract %t[%i] : tensor<4096xf32>
    %next = arith.maximumf %acc, %x : f32
    scf.yield %next : f32
  }
  return %m : f32
}

// -----

// Two elements (a vector's pair), or a loop inside another one, or a loop
// carrying only a tensor: unrolled on both targets.
// CPU-LABEL: func.func @short
// CPU-NOT:   scf.for
// CPU-COUNT-2: arith.addf
// CPU-LABEL: func.func @nested
// CPU:       scf.for
// CPU-NOT:   scf.for
// CPU-LABEL: func.func @tensor_only
// CPU-NOT:   scf.for
func.func @short(%t: tensor<64xf32>, %tid: index) -> f32 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %zero = arith.constant 0.0 : f32
  %sum = scf.for %k = %c0 to %c2 step %c1 iter_args(%acc = %zero) -> (f32) {
    %i = arith.addi %k, %tid : index
    %x = tensor.extract %t[%i] : tensor<64xf32>
    %next = arith.addf %acc, %x : f32
    scf.yield %next : f32
  }
  return %sum : f32
}
func.func @nested(%t: tensor<64xf32>, %tid: index) -> f32 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c8 = arith.constant 8 : index
  %zero = arith.constant 0.0 : f32
  %sum = scf.for %j = %c0 to %c8 step %c1 iter_args(%outer = %zero) -> (f32) {
    %s = scf.for %k = %c0 to %c4 step %c1 iter_args(%acc = %outer) -> (f32) {
      %i = arith.addi %k, %j : index
      %x = tensor.extract %t[%i] : tensor<64xf32>
      %next = arith.addf %acc, %x : f32
      scf.yield %next : f32
    }
    scf.yield %s : f32
  }
  return %sum : f32
}
func.func @tensor_only(%t: tensor<64xf32>, %v: f32) -> tensor<64xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %r = scf.for %k = %c0 to %c8 step %c1 iter_args(%acc = %t) -> (tensor<64xf32>) {
    %u = tensor.insert %v into %acc[%k] : tensor<64xf32>
    scf.yield %u : tensor<64xf32>
  }
  return %r : tensor<64xf32>
}

// -----

// A thread's rows of exp written into a tile, at the top level or as the
// whole of a guard (a partial tile's threads past the edge skip it):
// unrolled for the GPU; for the CPU target (unroll-top-level-math-loops
// =false) they stay loops, which -xla-gpu-lower-kernel-to-cpu runs
// interchanged with the threads, one exp a step for LLVM to vectorize.
// The same loop without a transcendental (@tensor_only), or inside another
// op than a top-level guard, is unrolled on both targets.
// GPU-LABEL: func.func @math_rows
// GPU-NOT:   scf.for
// GPU-COUNT-5: math.exp
// CPU-LABEL: func.func @math_rows
// CPU:       scf.for {{.*}} iter_args
// CPU-COUNT-1: math.exp
// CPU-NOT:   math.exp
// CPU-LABEL: func.func @guarded_math_rows
// CPU:       scf.if
// CPU-NEXT:    scf.for {{.*}} iter_args
// CPU-COUNT-1: math.exp
// CPU-NOT:   math.exp
// CPU-LABEL: func.func @math_rows_after_other_work
// CPU-NOT:   scf.for
// CPU-COUNT-5: math.exp
func.func @math_rows(%t: tensor<160xf32>, %in: tensor<160xf32>, %tid: index) -> tensor<160xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c5 = arith.constant 5 : index
  %c32 = arith.constant 32 : index
  %r = scf.for %k = %c0 to %c5 step %c1 iter_args(%acc = %t) -> (tensor<160xf32>) {
    %row = arith.muli %k, %c32 : index
    %i = arith.addi %row, %tid : index
    %x = tensor.extract %in[%i] : tensor<160xf32>
    %e = math.exp %x : f32
    %u = tensor.insert %e into %acc[%i] : tensor<160xf32>
    scf.yield %u : tensor<160xf32>
  }
  return %r : tensor<160xf32>
}
func.func @guarded_math_rows(%t: tensor<160xf32>, %in: tensor<160xf32>, %tid: index,
                             %inside: i1) -> tensor<160xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c5 = arith.constant 5 : index
  %c32 = arith.constant 32 : index
  %g = scf.if %inside -> (tensor<160xf32>) {
    %r = scf.for %k = %c0 to %c5 step %c1 iter_args(%acc = %t) -> (tensor<160xf32>) {
      %row = arith.muli %k, %c32 : index
      %i = arith.addi %row, %tid : index
      %x = tensor.extract %in[%i] : tensor<160xf32>
      %e = math.exp %x : f32
      %u = tensor.insert %e into %acc[%i] : tensor<160xf32>
      scf.yield %u : tensor<160xf32>
    }
    scf.yield %r : tensor<160xf32>
  } else {
    scf.yield %t : tensor<160xf32>
  }
  return %g : tensor<160xf32>
}
func.func @math_rows_after_other_work(%t: tensor<160xf32>, %in: tensor<160xf32>, %tid: index,
                                      %inside: i1) -> tensor<160xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c5 = arith.constant 5 : index
  %c32 = arith.constant 32 : index
  %g = scf.if %inside -> (tensor<160xf32>) {
    %zero = arith.constant 0.0 : f32
    %first = tensor.insert %zero into %t[%tid] : tensor<160xf32>
    %r = scf.for %k = %c0 to %c5 step %c1 iter_args(%acc = %first) -> (tensor<160xf32>) {
      %row = arith.muli %k, %c32 : index
      %i = arith.addi %row, %tid : index
      %x = tensor.extract %in[%i] : tensor<160xf32>
      %e = math.exp %x : f32
      %u = tensor.insert %e into %acc[%i] : tensor<160xf32>
      scf.yield %u : tensor<160xf32>
    }
    scf.yield %r : tensor<160xf32>
  } else {
    scf.yield %t : tensor<160xf32>
  }
  return %g : tensor<160xf32>
}

// -----

// Eight steps of one byte (a thread's 8 elements of an s8 row): unrolled,
// where a step at a time LLVM gathered every 8th byte of the lanes; nine
// are kept.
// CPU-LABEL: func.func @accumulate_eight_bytes
// CPU-NOT:   scf.for
// CPU-COUNT-8: arith.maxsi
// CPU-LABEL: func.func @accumulate_nine_bytes
// CPU:       scf.for {{.*}} iter_args
// CPU-COUNT-1: arith.maxsi
// CPU-NOT:   arith.maxsi
func.func @accumulate_eight_bytes(%t: tensor<4096xi8>, %tid: index) -> i8 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %low = arith.constant -128 : i8
  %m = scf.for %k = %c0 to %c8 step %c1 iter_args(%acc = %low) -> (i8) {
    %i = xla_gpu.apply_indexing #xla_gpu.indexing_map<"(d0, d1) -> (d1 * 8 + d0), domain: d0 in [0, 7], d1 in [0, 511]">(%k, %tid)
    %x = tensor.extract %t[%i] : tensor<4096xi8>
    %next = arith.maxsi %acc, %x : i8
    scf.yield %next : i8
  }
  return %m : i8
}
func.func @accumulate_nine_bytes(%t: tensor<4608xi8>, %tid: index) -> i8 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c9 = arith.constant 9 : index
  %low = arith.constant -128 : i8
  %m = scf.for %k = %c0 to %c9 step %c1 iter_args(%acc = %low) -> (i8) {
    %i = xla_gpu.apply_indexing #xla_gpu.indexing_map<"(d0, d1) -> (d1 * 9 + d0), domain: d0 in [0, 8], d1 in [0, 511]">(%k, %tid)
    %x = tensor.extract %t[%i] : tensor<4608xi8>
    %next = arith.maxsi %acc, %x : i8
    scf.yield %next : i8
  }
  return %m : i8
}

// -----

// A thread's steps far apart (kept, run interchanged with the threads)
// around its vector of 2 elements, whose body is over max-unrolled-ops:
// kept, the vector's loop is the innermost in the CPU target's loop over
// the lanes, which LLVM then vectorizes instead of the lanes; with
// unroll-nested-short-loops (the CPU target's) it is unrolled. A nested
// loop of 5 stays.
// KEPT-LABEL: func.func @nested_vector
// KEPT:       scf.for
// KEPT:       scf.for
// KEPT-COUNT-1: math.exp
// KEPT-NOT:   math.exp
// KEPT-LABEL: func.func @nested_five
// NESTED-LABEL: func.func @nested_vector
// NESTED:     scf.for {{.*}} iter_args
// NESTED-NOT: scf.for
// NESTED-COUNT-2: math.exp
// NESTED-NOT: math.exp
// NESTED-LABEL: func.func @nested_five
// NESTED:     scf.for
// NESTED:     scf.for
// NESTED-COUNT-1: math.exp
// NESTED-NOT: math.exp
func.func @nested_vector(%t: tensor<16384xf32>, %tid: index) -> f32 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c8 = arith.constant 8 : index
  %zero = arith.constant 0.0 : f32
  %sum = scf.for %k = %c0 to %c8 step %c1 iter_args(%acc = %zero) -> (f32) {
    %inner = scf.for %v = %c0 to %c2 step %c1 iter_args(%a = %acc) -> (f32) {
      %i = xla_gpu.apply_indexing #xla_gpu.indexing_map<"(d0, d1, d2) -> (d0 * 2048 + d2 * 2 + d1), domain: d0 in [0, 7], d1 in [0, 1], d2 in [0, 1023]">(%k, %v, %tid)
      %x = tensor.extract %t[%i] : tensor<16384xf32>
      %e = math.exp %x : f32
      %l = math.log %e : f32
      %m = arith.mulf %e, %l : f32
      %n = arith.addf %a, %m : f32
      scf.yield %n : f32
    }
    scf.yield %inner : f32
  }
  return %sum : f32
}
func.func @nested_five(%t: tensor<40960xf32>, %tid: index) -> f32 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c5 = arith.constant 5 : index
  %c8 = arith.constant 8 : index
  %zero = arith.constant 0.0 : f32
  %sum = scf.for %k = %c0 to %c8 step %c1 iter_args(%acc = %zero) -> (f32) {
    %inner = scf.for %v = %c0 to %c5 step %c1 iter_args(%a = %acc) -> (f32) {
      %i = xla_gpu.apply_indexing #xla_gpu.indexing_map<"(d0, d1, d2) -> (d0 * 5120 + d2 * 5 + d1), domain: d0 in [0, 7], d1 in [0, 4], d2 in [0, 1023]">(%k, %v, %tid)
      %x = tensor.extract %t[%i] : tensor<40960xf32>
      %e = math.exp %x : f32
      %l = math.log %e : f32
      %m = arith.mulf %e, %l : f32
      %n = arith.addf %a, %m : f32
      scf.yield %n : f32
    }
    scf.yield %inner : f32
  }
  return %sum : f32
}
