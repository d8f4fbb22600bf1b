// RUN: xla-gpu-opt %s -split-input-file -xla-gpu-propagate-slice-indices | FileCheck %s

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

// -----

// XLA's rule where no call shows the way (the call was inlined, or the
// function takes the entry's tensors without being called from it here):
// the leading tensor parameters of the entry's types get the entry's
// attributes by position, xla.invariant too; past the first other
// parameter, nothing. Attributes the calls gave stay.
// CHECK-LABEL: func.func private @subgraph(
// CHECK-SAME:    %{{.*}}: tensor<4xf32> {xla.invariant, xla.slice_index = 0 : i64},
// CHECK-SAME:    %{{.*}}: tensor<8xf32> {xla.slice_index = 1 : i64},
// CHECK-SAME:    %{{.*}}: index,
// CHECK-SAME:    %{{.*}}: tensor<4xf32>)
// CHECK-LABEL: func.func private @other_types(
// CHECK-SAME:    %{{.*}}: tensor<8xf32>)
// CHECK-LABEL: func.func @fusion
func.func private @subgraph(%a: tensor<4xf32>, %b: tensor<8xf32>, %i: index, %c: tensor<4xf32>) -> f32 {
  %v = tensor.extract %a[%i] : tensor<4xf32>
  return %v : f32
}
func.func private @other_types(%a: tensor<8xf32>) -> f32 {
  %c0 = arith.constant 0 : index
  %v = tensor.extract %a[%c0] : tensor<8xf32>
  return %v : f32
}
func.func @fusion(%x: tensor<4xf32> {xla.slice_index = 0, xla.invariant}, %y: tensor<8xf32> {xla.slice_index = 1}) -> f32 attributes {xla.entry} {
  %c0 = arith.constant 0 : index
  %v = tensor.extract %x[%c0] : tensor<4xf32>
  return %v : f32
}
