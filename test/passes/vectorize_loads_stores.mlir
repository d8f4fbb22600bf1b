// RUN: xla-gpu-opt %s -split-input-file -xla-gpu-vectorize-loads-stores | FileCheck %s
// RUN: xla-gpu-opt %s -split-input-file -xla-gpu-vectorize-loads-stores=remarks=true -verify-diagnostics > /dev/null

// The spec's loop over the elements of a vector: a load before the loop, a
// store after it.
#map = #xla_gpu.indexing_map<"(d0, d1)[s0] -> (d1 * 512 + d0 * 4 + s0), domain: d0 in [0, 127], d1 in [0, 24575], s0 in [0, 3]">
// CHECK-LABEL: func.func @vectorize
// CHECK-SAME: (%[[IN:.*]]: tensor<12582912xbf16>, %[[OUT:.*]]: tensor<12582912xbf16>, %[[TID:.*]]: index, %[[BID:.*]]: index)
// CHECK: %[[BASE:.*]] = xla_gpu.apply_indexing #{{.*}}(%[[TID]], %[[BID]])[%c0]
// CHECK: %[[VEC:.*]] = vector.transfer_read %[[IN]][%[[BASE]]], %{{.*}} {in_bounds = [true]} : tensor<12582912xbf16>, vector<4xbf16>
// CHECK: %[[LOOP:.*]]:2 = scf.for %[[I:.*]] = {{.*}} iter_args(%[[T:.*]] = %[[OUT]], %[[ACC:.*]] = %{{.*}}) -> (tensor<12582912xbf16>, vector<4xbf16>)
// CHECK: %[[E:.*]] = vector.extract %[[VEC]][%[[I]]] : bf16 from vector<4xbf16>
// CHECK: %[[N:.*]] = arith.negf %[[E]]
// CHECK: %[[UPD:.*]] = vector.insert %[[N]], %[[ACC]] [%[[I]]] : bf16 into vector<4xbf16>
// CHECK: scf.yield %[[T]], %[[UPD]]
// CHECK: %[[W:.*]] = vector.transfer_write %[[LOOP]]#1, %[[LOOP]]#0[%[[BASE]]] {in_bounds = [true]} : vector<4xbf16>, tensor<12582912xbf16>
// CHECK: return %[[W]]
func.func @vectorize(%in: tensor<12582912xbf16>, %out: tensor<12582912xbf16>, %tid: index, %bid: index) -> tensor<12582912xbf16> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %r = scf.for %i = %c0 to %c4 step %c1 iter_args(%t = %out) -> (tensor<12582912xbf16>) {
    %idx = xla_gpu.apply_indexing #map(%tid, %bid)[%i]
    %e = tensor.extract %in[%idx] : tensor<12582912xbf16>
    %n = arith.negf %e : bf16
    %ins = tensor.insert %n into %t[%idx] : tensor<12582912xbf16>
    scf.yield %ins : tensor<12582912xbf16>
  }
  return %r : tensor<12582912xbf16>
}

// -----

// Every second element: not contiguous.
#map = #xla_gpu.indexing_map<"(d0)[s0] -> (d0 * 8 + s0 * 2), domain: d0 in [0, 127], s0 in [0, 3]">
// CHECK-LABEL: func.func @no_vectorize_strided
// CHECK-NOT: vector.transfer_read
// CHECK: tensor.extract
func.func @no_vectorize_strided(%in: tensor<1024xf32>, %tid: index) -> f32 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %zero = arith.constant 0.0 : f32
  %r = scf.for %i = %c0 to %c4 step %c1 iter_args(%acc = %zero) -> (f32) {
    %idx = xla_gpu.apply_indexing #map(%tid)[%i]
    // expected-remark@+1 {{not vectorized: the index is not contiguous in the induction variable}}
    %e = tensor.extract %in[%idx] : tensor<1024xf32>
    %s = arith.addf %acc, %e : f32
    scf.yield %s : f32
  }
  return %r : f32
}

// -----

// Starts one element past a multiple of 4: a 128-bit load would be misaligned.
#map = #xla_gpu.indexing_map<"(d0)[s0] -> (d0 * 4 + s0 + 1), domain: d0 in [0, 127], s0 in [0, 3]">
// CHECK-LABEL: func.func @no_vectorize_unaligned
// CHECK-NOT: vector.transfer_read
func.func @no_vectorize_unaligned(%in: tensor<1024xf32>, %tid: index) -> f32 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %zero = arith.constant 0.0 : f32
  %r = scf.for %i = %c0 to %c4 step %c1 iter_args(%acc = %zero) -> (f32) {
    %idx = xla_gpu.apply_indexing #map(%tid)[%i]
    // expected-remark@+1 {{not vectorized: the base index is not a multiple of the vector size 4}}
    %e = tensor.extract %in[%idx] : tensor<1024xf32>
    %s = arith.addf %acc, %e : f32
    scf.yield %s : f32
  }
  return %r : f32
}

// -----

// Eight f32 are 256 bits: wider than one access.
#map = #xla_gpu.indexing_map<"(d0)[s0] -> (d0 * 8 + s0), domain: d0 in [0, 127], s0 in [0, 7]">
// CHECK-LABEL: func.func @no_vectorize_too_wide
// CHECK-NOT: vector.transfer_read
func.func @no_vectorize_too_wide(%in: tensor<1024xf32>, %tid: index) -> f32 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %zero = arith.constant 0.0 : f32
  %r = scf.for %i = %c0 to %c8 step %c1 iter_args(%acc = %zero) -> (f32) {
    %idx = xla_gpu.apply_indexing #map(%tid)[%i]
    // expected-remark@+1 {{not vectorized: a vector of 8 elements would be 256 bits, not 8, 16, 32, 64 or 128}}
    %e = tensor.extract %in[%idx] : tensor<1024xf32>
    %s = arith.addf %acc, %e : f32
    scf.yield %s : f32
  }
  return %r : f32
}

// -----

// XLA's rewrite before the contiguity test: (d0 * 4 + iv) mod 64 is
// (d0 mod 16) * 4 + iv (d0 * 4 mod 64 is a multiple of 4 below 64, so the
// iv never wraps it): a load and a store of 4.
#map = #xla_gpu.indexing_map<"(d0)[s0] -> ((d0 * 4 + s0) mod 64), domain: d0 in [0, 127], s0 in [0, 3]">
// CHECK-LABEL: func.func @vectorize_mod
// CHECK: vector.transfer_read %{{.*}} {in_bounds = [true]} : tensor<64xf32>, vector<4xf32>
// CHECK: scf.for
// CHECK: vector.transfer_write %{{.*}} {in_bounds = [true]} : vector<4xf32>, tensor<64xf32>
func.func @vectorize_mod(%in: tensor<64xf32>, %out: tensor<64xf32>, %tid: index) -> tensor<64xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %r = scf.for %i = %c0 to %c4 step %c1 iter_args(%t = %out) -> (tensor<64xf32>) {
    %idx = xla_gpu.apply_indexing #map(%tid)[%i]
    %e = tensor.extract %in[%idx] : tensor<64xf32>
    %n = arith.negf %e : f32
    %ins = tensor.insert %n into %t[%idx] : tensor<64xf32>
    scf.yield %ins : tensor<64xf32>
  }
  return %r : tensor<64xf32>
}

// -----

// A modulus that is no multiple of the vector (6) may wrap inside it; nor
// may a sum whose other part is no multiple of 4 (d0 * 2).
#map = #xla_gpu.indexing_map<"(d0)[s0] -> ((d0 * 4 + s0) mod 6), domain: d0 in [0, 127], s0 in [0, 3]">
#map1 = #xla_gpu.indexing_map<"(d0)[s0] -> ((d0 * 2 + s0) mod 64), domain: d0 in [0, 127], s0 in [0, 3]">
// CHECK-LABEL: func.func @no_vectorize_mod
// CHECK-NOT: vector.transfer_read
func.func @no_vectorize_mod(%in: tensor<64xf32>, %tid: index) -> f32 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %zero = arith.constant 0.0 : f32
  %r = scf.for %i = %c0 to %c4 step %c1 iter_args(%acc = %zero) -> (f32) {
    %idx = xla_gpu.apply_indexing #map(%tid)[%i]
    // expected-remark@+1 {{not vectorized: the index is not contiguous in the induction variable}}
    %e = tensor.extract %in[%idx] : tensor<64xf32>
    %jdx = xla_gpu.apply_indexing #map1(%tid)[%i]
    // expected-remark@+1 {{not vectorized: the index is not contiguous in the induction variable}}
    %f = tensor.extract %in[%jdx] : tensor<64xf32>
    %s = arith.addf %acc, %e : f32
    %t = arith.addf %s, %f : f32
    scf.yield %t : f32
  }
  return %r : f32
}
