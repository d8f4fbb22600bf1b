// RUN: xla-gpu-opt %s -split-input-file -xla-gpu-optimize-loops | FileCheck %s --check-prefix=GPU
// RUN: xla-gpu-opt %s -split-input-file \
// RUN:   -xla-gpu-optimize-loops=unroll-top-level-accumulations=false | FileCheck %s --check-prefix=CPU

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
  %zero = arith.constant 0.0 : f32
  %sum = scf.for %j = %c0 to %c4 step %c1 iter_args(%outer = %zero) -> (f32) {
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
