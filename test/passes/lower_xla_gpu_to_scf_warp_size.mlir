// The warp_size option bounds how far a shuffle may reach.
// RUN: xla-gpu-opt %s -xla-gpu-lower-xla-gpu-to-scf=warp_size=16 -verify-diagnostics
// RUN: not xla-gpu-opt %s -xla-gpu-lower-xla-gpu-to-scf=warp_size=12 2>&1 | FileCheck %s --check-prefix=POW2

// POW2: error: warp_size must be a power of two, got 12

func.func private @add(%a: f32, %b: f32) -> f32 {
  %0 = arith.addf %a, %b : f32
  return %0 : f32
}
func.func @too_far_for_the_warp(%a: f32) -> f32 {
  // With warp_size=16, a distance of 16 leaves the warp.
  // expected-error@+1 {{max_distance 16 does not fit a warp of 16 lanes}}
  %r = xla_gpu.shuffle_reduce(%a) to 16 combiner=@add : f32
  return %r : f32
}

