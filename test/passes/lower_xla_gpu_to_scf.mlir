// RUN: xla-gpu-opt %s -split-input-file -xla-gpu-lower-xla-gpu-to-scf -verify-diagnostics | FileCheck %s

// CHECK-LABEL: func.func @predicated
// CHECK-SAME: (%[[V:.*]]: f32, %[[T:.*]]: tensor<4xf32>, %[[I:.*]]: index, %[[C:.*]]: i1)
// CHECK: %[[INS:.*]] = scf.if %[[C]] -> (tensor<4xf32>) {
// CHECK:   %[[R:.*]] = tensor.insert %[[V]] into %[[T]][%[[I]]]
// CHECK:   scf.yield %[[R]]
// CHECK: } else {
// CHECK:   scf.yield %[[T]]
// CHECK: %[[EXT:.*]] = scf.if %[[C]] -> (f32) {
// CHECK:   %[[E:.*]] = tensor.extract %[[INS]][%[[I]]]
// CHECK:   scf.yield %[[E]]
// CHECK: } else {
// CHECK:   scf.yield %[[V]]
// CHECK-NOT: xla_gpu.predicated
func.func @predicated(%v: f32, %t: tensor<4xf32>, %i: index, %c: i1) -> f32 {
  %r = xla_gpu.predicated_insert %v into %t[%i] if %c : tensor<4xf32>
  %e = xla_gpu.predicated_extract %r[%i] if %c else %v : tensor<4xf32>
  return %e : f32
}

// -----

// A butterfly over the warp: distances 4, 2, 1, each a shuffle down and a
// pure call of the combiner (as XLA); a 16-bit value travels in an i32.
// CHECK-LABEL: func.func @shuffle_reduce
// CHECK: %[[S4:.*]], %{{.*}} = gpu.shuffle down %{{.*}}, %c4_i32, %c32_i32 : f32
// CHECK: %[[H4:.*]], %{{.*}} = gpu.shuffle down %{{.*}}, %c4_i32, %c32_i32 : i32
// CHECK: %[[R4:[a-z_0-9]+]], %{{.*}} = xla_gpu.pure_call @reducer
// CHECK: gpu.shuffle down %[[R4]], %c2_i32
// CHECK: %[[R2:[a-z_0-9]+]], %{{.*}} = xla_gpu.pure_call @reducer
// CHECK: gpu.shuffle down %[[R2]], %c1_i32
// CHECK: %[[R1A:[a-z_0-9]+]], %[[R1B:[a-z_0-9]+]] = xla_gpu.pure_call @reducer
// CHECK: return %[[R1A]], %[[R1B]]
func.func private @reducer(%a: f32, %b: f16, %c: f32, %d: f16) -> (f32, f16) {
  %0 = arith.addf %a, %c : f32
  %1 = arith.addf %b, %d : f16
  return %0, %1 : f32, f16
}
func.func @shuffle_reduce(%a: f32, %b: f16) -> (f32, f16) {
  %r:2 = xla_gpu.shuffle_reduce(%a, %b) to 4 combiner=@reducer : f32, f16
  return %r#0, %r#1 : f32, f16
}

// -----

// materialize + insert, XLA's forms: a loop over the materialize's map
// that calls the callee at the map's results and builds a vector at the
// range variables, then a loop over the indexed vector's map that takes
// each element at the same position and writes it at the insert's map of
// the vector map's results (here (d0, s0) -> (s0, d0): transposed).
#read = #xla_gpu.indexing_map<"(d0)[s0] -> (d0, s0), domain: d0 in [0, 15], s0 in [0, 1]">
#vmap = #xla_gpu.indexing_map<"(d0)[s0] -> (d0, s0), domain: d0 in [0, 15], s0 in [0, 1]">
#write = #xla_gpu.indexing_map<"(d0, d1) -> (d1, d0), domain: d0 in [0, 15], d1 in [0, 1]">
// CHECK-LABEL: func.func @materialize_insert
// CHECK-SAME: (%[[IN:.*]]: tensor<16x2xf32>, %[[OUT:.*]]: tensor<2x16xf32>, %[[TID:.*]]: index)
// CHECK:      %[[ZERO:.*]] = arith.constant dense<0.0{{.*}}> : vector<2xf32>
// CHECK:      %[[VEC:.*]] = xla_gpu.loop (%[[TID]])[%[[S:.*]]] -> (%[[A:.*]], %[[B:.*]]) in #{{.*}} iter_args(%[[ITER:.*]] = %[[ZERO]]) -> (vector<2xf32>)
// CHECK:        %[[V:.*]] = xla_gpu.pure_call @f(%[[IN]], %[[A]], %[[B]])
// CHECK:        %[[NEW:.*]] = vector.insert %[[V]], %[[ITER]] [%[[S]]] : f32 into vector<2xf32>
// CHECK:        xla_gpu.yield %[[NEW]]
// CHECK:      %[[R:.*]] = xla_gpu.loop (%[[TID]])[%[[S2:.*]]] -> (%[[C:.*]], %[[D:.*]]) in #{{.*}} iter_args(%[[T:.*]] = %[[OUT]])
// CHECK:        %[[E:.*]] = vector.extract %[[VEC]][%[[S2]]] : f32 from vector<2xf32>
// The insert's map of (d0, s0), a permutation, folds to the operands.
// CHECK:        tensor.insert %[[E]] into %[[T]][%[[D]], %[[C]]]
// CHECK-NOT:  xla_gpu.materialize
// CHECK-NOT:  unrealized_conversion_cast
// CHECK:      return %[[R]]
func.func private @f(%t: tensor<16x2xf32>, %i: index, %j: index) -> f32 {
  %v = tensor.extract %t[%i, %j] : tensor<16x2xf32>
  return %v : f32
}
func.func @materialize_insert(%in: tensor<16x2xf32>, %out: tensor<2x16xf32>, %tid: index) -> tensor<2x16xf32> {
  %v = xla_gpu.materialize @f(%in) at #read(%tid) : (tensor<16x2xf32>) -> !xla_gpu.indexed_vector<2xf32, #vmap>
  %r = xla_gpu.insert %v(%tid) into %out at #write : !xla_gpu.indexed_vector<2xf32, #vmap> -> tensor<2x16xf32>
  return %r : tensor<2x16xf32>
}

// -----

// reduce: an outer loop nest over the output, an inner one over the reduced
// dimensions starting from the init.
// CHECK-LABEL: func.func @reduce
// CHECK-SAME: (%[[IN:.*]]: tensor<4x8x2xf32>, %[[INIT:.*]]: f32)
// CHECK: %[[E:.*]] = tensor.empty() : tensor<8xf32>
// CHECK: scf.for %[[J:.*]] = {{.*}} iter_args(%[[RES:.*]] = %[[E]])
// CHECK: %[[ACC:.*]] = scf.for %[[I:.*]] = {{.*}} iter_args(%[[A0:.*]] = %[[INIT]])
// CHECK: scf.for %[[K:.*]] = {{.*}} iter_args(%[[A1:.*]] = %[[A0]])
// CHECK: %[[X:.*]] = tensor.extract %[[IN]][%[[I]], %[[J]], %[[K]]]
// CHECK: call @add(%[[A1]], %[[X]])
// CHECK: tensor.insert %[[ACC]] into %[[RES]][%[[J]]]
func.func private @add(%a: f32, %b: f32) -> f32 {
  %0 = arith.addf %a, %b : f32
  return %0 : f32
}
func.func @reduce(%in: tensor<4x8x2xf32>, %init: f32) -> tensor<8xf32> {
  %r = xla_gpu.reduce (%in) inits(%init) dimensions=[0, 2] combiner=@add : tensor<4x8x2xf32> to tensor<8xf32>
  return %r : tensor<8xf32>
}

// -----

#vmap = #xla_gpu.indexing_map<"(d0)[s0] -> (d0, s0), domain: d0 in [0, 15], s0 in [0, 1]">
#imap = #xla_gpu.indexing_map<"(d0, d1) -> (d0, d1), domain: d0 in [0, 15], d1 in [0, 1]">
func.func @insert_of_an_argument(%v: !xla_gpu.indexed_vector<2xf32, #vmap>, %out: tensor<16x2xf32>, %tid: index) -> tensor<16x2xf32> {
  // expected-error@+1 {{can only be lowered with the xla_gpu.materialize that produces its source}}
  %r = xla_gpu.insert %v(%tid) into %out at #imap : !xla_gpu.indexed_vector<2xf32, #vmap> -> tensor<16x2xf32>
  return %r : tensor<16x2xf32>
}

// -----

// A materialize whose indexed vector goes elsewhere than to an insert
// cannot be lowered: an error that says so.
#read2 = #xla_gpu.indexing_map<"(d0)[s0] -> (d0, s0), domain: d0 in [0, 15], s0 in [0, 1]">
#vmap2 = #xla_gpu.indexing_map<"(d0)[s0] -> (d0, s0), domain: d0 in [0, 15], s0 in [0, 1]">
func.func private @g(%t: tensor<16x2xf32>, %i: index, %j: index) -> f32 {
  %v = tensor.extract %t[%i, %j] : tensor<16x2xf32>
  return %v : f32
}
func.func @stray_materialize(%in: tensor<16x2xf32>, %tid: index) -> !xla_gpu.indexed_vector<2xf32, #vmap2> {
  // expected-error@+1 {{the indexed vector of this xla_gpu.materialize is used by something other than an xla_gpu.insert; it cannot be lowered}}
  %v = xla_gpu.materialize @g(%in) at #read2(%tid) : (tensor<16x2xf32>) -> !xla_gpu.indexed_vector<2xf32, #vmap2>
  return %v : !xla_gpu.indexed_vector<2xf32, #vmap2>
}
