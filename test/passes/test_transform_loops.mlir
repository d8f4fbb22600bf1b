// XLA's -xla-gpu-test-transform-loops pipeline (lower-xla-gpu-to-scf,
// fuse-loops, inline, canonicalize, cse, peel-loops,
// lower-xla-gpu-loops-to-scf, propagate-slice-indices, flatten-tensors,
// licm, unswitch-loops, licm, vectorize-loads-stores, optimize-loops,
// canonicalize, cse), as XLA's emitter tests run it.
// RUN: xla-gpu-opt %s -split-input-file -xla-gpu-test-transform-loops | FileCheck %s
// RUN: xla-gpu-opt --help | FileCheck %s --check-prefix=HELP
// HELP-DAG: --xla-gpu-test-transform-loops
// HELP-DAG: --xla-gpu-fuse-loops
// HELP-DAG: --xla-gpu-convert-float-nvidia

// A vector built by one loop (exp of the input, through a pure call) and
// written out by the next: the loops fuse, the call is inlined, the
// loop over the vector's four elements becomes one 128-bit read, four
// exps and one 128-bit write; no vector is carried and no loop is left.
// CHECK-LABEL: func.func @fusion(
// CHECK-SAME:    %[[IN:[a-z0-9]+]]: tensor<4096xf32>
// CHECK-SAME:    %[[OUT:[a-z0-9]+]]: tensor<4096xf32>
// CHECK-NOT:   xla_gpu.loop
// CHECK-NOT:   scf.for
// CHECK-NOT:   xla_gpu.pure_call
// CHECK:       %[[INDEX:.*]] = xla_gpu.apply_indexing
// CHECK:       %[[V:.*]] = vector.transfer_read %[[IN]][%[[INDEX]]]{{.*}} vector<4xf32>
// CHECK-COUNT-4: math.exp
// CHECK:       vector.transfer_write %{{.*}}, %[[OUT]][%[[INDEX]]]
// CHECK-NOT:   vector.insert
// CHECK-NOT:   scf.for
#map = #xla_gpu.indexing_map<"(d0, d1)[s0] -> (d1 * 512 + d0 * 4 + s0), domain: d0 in [0, 127], d1 in [0, 7], s0 in [0, 3]">
module {
  func.func private @exp(%in: tensor<4096xf32>, %i: index) -> f32 {
    %e = tensor.extract %in[%i] : tensor<4096xf32>
    %x = math.exp %e : f32
    return %x : f32
  }
  func.func @fusion(%in: tensor<4096xf32> {xla.slice_index = 0 : index}, %out: tensor<4096xf32> {xla.slice_index = 1 : index}) -> tensor<4096xf32> attributes {xla.entry} {
    %cst = arith.constant dense<0.0> : vector<4xf32>
    %tid = gpu.thread_id x {xla.range = [0 : index, 127 : index]}
    %bid = gpu.block_id x {xla.range = [0 : index, 7 : index]}
    %vec = xla_gpu.loop (%tid, %bid)[%i] -> (%r) in #map iter_args(%iter = %cst) -> (vector<4xf32>) {
      %x = xla_gpu.pure_call @exp(%in, %r) : (tensor<4096xf32>, index) -> f32
      %v = vector.insert %x, %iter [%i] : f32 into vector<4xf32>
      xla_gpu.yield %v : vector<4xf32>
    }
    %res = xla_gpu.loop (%tid, %bid)[%i] -> (%r) in #map iter_args(%iter = %out) -> (tensor<4096xf32>) {
      %x = vector.extract %vec[%i] : f32 from vector<4xf32>
      %t = tensor.insert %x into %iter[%r] : tensor<4096xf32>
      xla_gpu.yield %t : tensor<4096xf32>
    }
    return %res : tensor<4096xf32>
  }
}

// -----

// XLA's materialize + insert: lowered to a loop that builds a vector and
// one that writes it out, which fuse-loops makes one. Each thread's two
// elements (exp of the input, one 64-bit read) go straight to the output,
// transposed; no vector is built.
#read = #xla_gpu.indexing_map<"(d0)[s0] -> (d0, s0), domain: d0 in [0, 15], s0 in [0, 1]">
#write = #xla_gpu.indexing_map<"(d0, d1) -> (d1, d0), domain: d0 in [0, 15], d1 in [0, 1]">
// CHECK-LABEL: func.func @materialize_insert(
// CHECK-SAME:    %[[IN:[a-z0-9]+]]: tensor<32xf32>
// CHECK-SAME:    %[[OUT:[a-z0-9]+]]: tensor<32xf32>
// CHECK-NOT:   xla_gpu.materialize
// CHECK-NOT:   vector.insert
// CHECK:       vector.transfer_read %[[IN]]{{.*}} vector<2xf32>
// CHECK:       math.exp
// CHECK:       %[[FIRST:.*]] = tensor.insert %{{.*}} into %[[OUT]]
// CHECK:       math.exp
// CHECK:       tensor.insert %{{.*}} into %[[FIRST]]
// CHECK-NOT:   vector.insert
// CHECK:       return
module {
  func.func private @exp(%in: tensor<16x2xf32>, %i: index, %j: index) -> f32 {
    %e = tensor.extract %in[%i, %j] : tensor<16x2xf32>
    %x = math.exp %e : f32
    return %x : f32
  }
  func.func @materialize_insert(%in: tensor<16x2xf32> {xla.slice_index = 0 : index}, %out: tensor<2x16xf32> {xla.slice_index = 1 : index}) -> tensor<2x16xf32> attributes {xla.entry} {
    %tid = gpu.thread_id x {xla.range = [0 : index, 15 : index]}
    %v = xla_gpu.materialize @exp(%in) at #read(%tid) : (tensor<16x2xf32>) -> !xla_gpu.indexed_vector<2xf32, #read>
    %r = xla_gpu.insert %v(%tid) into %out at #write : !xla_gpu.indexed_vector<2xf32, #read> -> tensor<2x16xf32>
    return %r : tensor<2x16xf32>
  }
}
