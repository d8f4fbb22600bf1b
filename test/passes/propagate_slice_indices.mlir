// RUN: xla-gpu-opt %s -xla-gpu-propagate-slice-indices | FileCheck %s

// The entry's slice indices reach the callees (and their callees).
// CHECK-LABEL: func.func private @inner(%{{.*}}: tensor<4xf32> {xla.slice_index = 1 : i64}, %{{.*}}: index)
// CHECK-LABEL: func.func private @outer(%{{.*}}: tensor<4xf32> {xla.slice_index = 1 : i64}, %{{.*}}: tensor<4xf32> {xla.slice_index = 0 : i64}, %{{.*}}: index)
// CHECK-LABEL: func.func @main
func.func private @inner(%t: tensor<4xf32>, %i: index) -> f32 {
  %v = tensor.extract %t[%i] : tensor<4xf32>
  return %v : f32
}
func.func private @outer(%a: tensor<4xf32>, %b: tensor<4xf32>, %i: index) -> f32 {
  %v = xla_gpu.pure_call @inner(%a, %i) : (tensor<4xf32>, index) -> f32
  return %v : f32
}
func.func @main(%x: tensor<4xf32> {xla.slice_index = 0}, %y: tensor<4xf32> {xla.slice_index = 1}, %i: index) -> f32 {
  %v = xla_gpu.pure_call @outer(%y, %x, %i) : (tensor<4xf32>, tensor<4xf32>, index) -> f32
  return %v : f32
}
