// RUN: xla-gpu-opt %s -xla-gpu-convert-pure-call-ops | FileCheck %s

// CHECK-LABEL: func.func @caller
// CHECK: %[[R:.*]] = call @callee(%{{.*}}) : (f32) -> f32
// CHECK-NOT: xla_gpu.pure_call
func.func private @callee(%a: f32) -> f32 {
  return %a : f32
}
func.func @caller(%a: f32) -> f32 {
  %r = xla_gpu.pure_call @callee(%a) : (f32) -> f32
  return %r : f32
}
