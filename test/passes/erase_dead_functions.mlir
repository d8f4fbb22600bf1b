// RUN: xla-gpu-opt %s -split-input-file -xla-erase-dead-functions | FileCheck %s

// Private functions nothing refers to go; chains of them too. Public ones
// and those still called (by pure_call or a combiner reference) stay.
// CHECK-LABEL: module
// CHECK-NOT: @dead
// CHECK-NOT: @also_dead
// CHECK-DAG: func.func private @called
// CHECK-DAG: func.func private @combiner
// CHECK-DAG: func.func @public_unused
// CHECK-DAG: func.func @main
func.func private @also_dead(%a: f32) -> f32 {
  return %a : f32
}
func.func private @dead(%a: f32) -> f32 {
  %r = xla_gpu.pure_call @also_dead(%a) : (f32) -> f32
  return %r : f32
}
func.func private @called(%a: f32) -> f32 {
  return %a : f32
}
func.func private @combiner(%a: f32, %b: f32) -> f32 {
  %s = arith.addf %a, %b : f32
  return %s : f32
}
func.func @public_unused() {
  return
}
func.func @main(%a: f32) -> f32 {
  %r = xla_gpu.pure_call @called(%a) : (f32) -> f32
  %s = xla_gpu.shuffle_reduce(%r) to 16 combiner=@combiner : f32
  return %s : f32
}
