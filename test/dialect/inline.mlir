// The inliner follows XLA's rule for subgraph functions.
// RUN: xla-gpu-opt %s -split-input-file -inline | FileCheck %s

// A callee with a single caller is inlined and disappears.
// CHECK-LABEL: func.func @called_once
// CHECK-NOT: xla_gpu.pure_call
// CHECK: math.exp
// CHECK-NOT: func.func private @exp_once
func.func private @exp_once(%t: tensor<4xf32>, %i: index) -> f32 {
  %v = tensor.extract %t[%i] : tensor<4xf32>
  %e = math.exp %v : f32
  return %e : f32
}
func.func @called_once(%t: tensor<4xf32>, %i: index) -> f32 {
  %r = xla_gpu.pure_call @exp_once(%t, %i) : (tensor<4xf32>, index) -> f32
  return %r : f32
}

// -----

// A callee called twice stays a function: copying it would duplicate the
// work the partitioner split out.
// CHECK-LABEL: func.func private @big
// CHECK-LABEL: func.func @called_twice
// CHECK-COUNT-2: xla_gpu.pure_call @big
func.func private @big(%t: tensor<4xf32>, %i: index) -> f32 {
  %v = tensor.extract %t[%i] : tensor<4xf32>
  %0 = math.exp %v : f32
  %1 = math.log %0 : f32
  %2 = math.tanh %1 : f32
  %3 = arith.mulf %2, %2 : f32
  %4 = arith.addf %3, %v : f32
  %5 = math.sqrt %4 : f32
  %6 = math.exp %5 : f32
  %7 = arith.mulf %6, %5 : f32
  return %7 : f32
}
func.func @called_twice(%t: tensor<4xf32>, %i: index, %j: index) -> f32 {
  %a = xla_gpu.pure_call @big(%t, %i) : (tensor<4xf32>, index) -> f32
  %b = xla_gpu.pure_call @big(%t, %j) : (tensor<4xf32>, index) -> f32
  %s = arith.addf %a, %b : f32
  return %s : f32
}

// -----

// ... unless it is tiny (at most 8 ops): then a copy is cheaper than a call.
// CHECK-LABEL: func.func @tiny_called_twice
// CHECK-NOT: xla_gpu.pure_call
// CHECK-COUNT-2: tensor.extract
func.func private @tiny(%t: tensor<4xf32>, %i: index) -> f32 {
  %v = tensor.extract %t[%i] : tensor<4xf32>
  return %v : f32
}
func.func @tiny_called_twice(%t: tensor<4xf32>, %i: index, %j: index) -> f32 {
  %a = xla_gpu.pure_call @tiny(%t, %i) : (tensor<4xf32>, index) -> f32
  %b = xla_gpu.pure_call @tiny(%t, %j) : (tensor<4xf32>, index) -> f32
  %s = arith.addf %a, %b : f32
  return %s : f32
}

// -----

// Calls inside an xla_gpu.loop body are inlined into the body.
// CHECK-LABEL: func.func @inline_into_loop
// CHECK: xla_gpu.loop
// CHECK-NOT: xla_gpu.pure_call
// CHECK: math.exp
// CHECK: xla_gpu.yield
#map = #xla_gpu.indexing_map<"(d0) -> (d0), domain: d0 in [0, 3]">
func.func private @exp_in_loop(%t: tensor<4xf32>, %i: index) -> f32 {
  %v = tensor.extract %t[%i] : tensor<4xf32>
  %e = math.exp %v : f32
  return %e : f32
}
func.func @inline_into_loop(%t: tensor<4xf32>, %out: tensor<4xf32>, %tid: index) -> tensor<4xf32> {
  %r = xla_gpu.loop (%tid) -> (%i) in #map iter_args(%iter = %out) -> (tensor<4xf32>) {
    %v = xla_gpu.pure_call @exp_in_loop(%t, %i) : (tensor<4xf32>, index) -> f32
    %ins = tensor.insert %v into %iter[%i] : tensor<4xf32>
    xla_gpu.yield %ins : tensor<4xf32>
  }
  return %r : tensor<4xf32>
}
