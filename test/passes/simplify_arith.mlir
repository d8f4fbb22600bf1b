// RUN: xla-gpu-opt %s -split-input-file -xla-gpu-simplify-arith | FileCheck %s

// The bounds check of in-range thread and block ids disappears.
// CHECK-LABEL: func.func @bounds_check
// CHECK-NOT: arith.cmpi
// CHECK-NOT: scf.if
// CHECK: tensor.insert
func.func @bounds_check(%t: tensor<4096xf32>, %v: f32) -> tensor<4096xf32> {
  %c0 = arith.constant 0 : index
  %c127 = arith.constant 127 : index
  %c31 = arith.constant 31 : index
  %tid = gpu.thread_id x {xla.range = [0 : index, 127 : index]}
  %bid = gpu.block_id x {xla.range = [0 : index, 31 : index]}
  %a = arith.cmpi sge, %tid, %c0 : index
  %b = arith.cmpi sle, %tid, %c127 : index
  %ab = arith.andi %a, %b : i1
  %c = arith.cmpi sle, %bid, %c31 : index
  %ok = arith.andi %ab, %c : i1
  %r = scf.if %ok -> (tensor<4096xf32>) {
    %i = xla_gpu.apply_indexing #xla_gpu.indexing_map<"(d0, d1) -> (d1 * 128 + d0), domain: d0 in [0, 127], d1 in [0, 31]">(%tid, %bid)
    %ins = tensor.insert %v into %t[%i] : tensor<4096xf32>
    scf.yield %ins : tensor<4096xf32>
  } else {
    scf.yield %t : tensor<4096xf32>
  }
  return %r : tensor<4096xf32>
}

// -----

// Loop bounds and indexing maps give ranges too; comparisons they do not
// decide stay.
// CHECK-LABEL: func.func @ranges
// CHECK: %[[TRUE:.*]] = arith.constant true
// CHECK: scf.for
// CHECK: arith.cmpi slt
// CHECK: %[[UNKNOWN:.*]] = arith.cmpi slt, %{{.*}}#1, %{{.*}} : index
// CHECK: return %[[TRUE]], %[[UNKNOWN]]
func.func @ranges(%n: index) -> (i1, i1) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %c16 = arith.constant 16 : index
  %r:2 = scf.for %i = %c0 to %c8 step %c1 iter_args(%a = %c0, %b = %c0) -> (index, index) {
    %j = xla_gpu.apply_indexing #xla_gpu.indexing_map<"(d0) -> (d0 * 2), domain: d0 in [0, 100]">(%i)
    %lt = arith.cmpi slt, %j, %c16 : index
    %x = arith.extui %lt : i1 to i64
    %xi = arith.index_cast %x : i64 to index
    %unknown = arith.cmpi slt, %j, %n : index
    %y = arith.extui %unknown : i1 to i64
    %yi = arith.index_cast %y : i64 to index
    scf.yield %xi, %yi : index, index
  }
  %t = arith.cmpi eq, %r#0, %r#0 : index
  %true_check = arith.cmpi sge, %c16, %c8 : index
  %u = arith.cmpi slt, %r#1, %n : index
  return %true_check, %u : i1, i1
}
