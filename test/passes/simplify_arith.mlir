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

// -----

// Ranges of function arguments (`xla.range`, XLA's convention) decide
// compares, as in XLA's tests; an undecided one stays.
// CHECK-LABEL: func.func @argument_ranges(
// CHECK-DAG:   %[[TRUE:.*]] = arith.constant true
// CHECK-DAG:   %[[FALSE:.*]] = arith.constant false
// CHECK:       %[[EQ:.*]] = arith.cmpi eq, %{{.*}}, %{{.*}} : index
// CHECK:       return %[[TRUE]], %[[FALSE]], %[[TRUE]], %[[EQ]]
func.func @argument_ranges(%a: index {xla.range = [12 : index, 42 : index]},
                           %b: index {xla.range = [63 : index, 100 : index]}) -> (i1, i1, i1, i1) {
  %c5 = arith.constant 5 : index
  %c12 = arith.constant 12 : index
  %0 = arith.cmpi sge, %a, %c5 : index
  %1 = arith.cmpi slt, %a, %c5 : index
  %2 = arith.cmpi slt, %a, %b : index
  %3 = arith.cmpi eq, %a, %c12 : index
  return %0, %1, %2, %3 : i1, i1, i1, i1
}

// -----

// minsi/maxsi whose operands' ranges decide them become the operand, also
// through an addi (whose range is annotated); an undecided one stays.
// CHECK-LABEL: func.func @min_max(
// CHECK-SAME:    %[[A:[a-z0-9]+]]: index {{.*}}, %[[B:[a-z0-9]+]]: index {{.*}}, %[[C:[a-z0-9]+]]: index
// CHECK:       %[[ADD:.*]] = arith.addi %[[A]], %[[B]] {xla.range = [165 : index, 242 : index]} : index
// CHECK:       %[[UNDECIDED:.*]] = arith.minsi %[[A]], %[[C]]
// CHECK:       return %[[A]], %[[B]], %[[ADD]], %[[B]], %[[UNDECIDED]]
func.func @min_max(%a: index {xla.range = [102 : index, 142 : index]},
                   %b: index {xla.range = [63 : index, 100 : index]},
                   %c: index {xla.range = [0 : index, 200 : index]})
    -> (index, index, index, index, index) {
  %0 = arith.maxsi %b, %a : index
  %1 = arith.minsi %a, %b : index
  %add = arith.addi %a, %b : index
  %2 = arith.maxsi %add, %b : index
  %3 = arith.minsi %add, %b : index
  %4 = arith.minsi %a, %c : index
  return %0, %1, %2, %3, %4 : index, index, index, index, index
}

// -----

// A loop's induction variable ([0, 2]) narrows the map it feeds (declared
// [0, 9]): d0 mod 4 is d0 there (XLA's refine-constraints case), and the
// identity map folds away.
// CHECK-LABEL: func.func @refine_by_loop_range(
// CHECK:       scf.for %[[I:[a-z0-9]+]] =
// CHECK-NOT:     xla_gpu.apply_indexing
// CHECK:         tensor.insert %{{.*}} into %{{.*}}[%[[I]]]
func.func @refine_by_loop_range(%t: tensor<100xf32>) -> tensor<100xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  %v = arith.constant 42.0 : f32
  %r = scf.for %i = %c0 to %c3 step %c1 iter_args(%acc = %t) -> (tensor<100xf32>) {
    %0 = xla_gpu.apply_indexing #xla_gpu.indexing_map<"(d0) -> (d0 mod 4), domain: d0 in [0, 9]">(%i)
    %u = tensor.insert %v into %acc[%0] : tensor<100xf32>
    scf.yield %u : tensor<100xf32>
  }
  return %r : tensor<100xf32>
}

// -----

// XLA's second case: the outer loop runs s0 over [0, 72], not the map's
// [0, 73], and the `mod 2400000` goes (the sum stays below it).
#map = #xla_gpu.indexing_map<"(d0, d1)[s0, s1] -> (((d0 * 4 + d1 * 512 + s1) floordiv 9 + s0 * 32768) mod 2400000), domain: d0 in [0, 127], d1 in [0, 575], s0 in [0, 73], s1 in [0, 3]">
// CHECK-DAG:   #[[$REFINED:.*]] = #xla_gpu.indexing_map<"(d0, d1)[s0, s1] -> ((d0 * 4 + d1 * 512 + s1) floordiv 9 + s0 * 32768), domain: d0 in [0, 127], d1 in [0, 575], s0 in [0, 72], s1 in [0, 3]">
// CHECK-LABEL: func.func @refine_symbol_by_loop_range(
// CHECK:       xla_gpu.apply_indexing #[[$REFINED]]
func.func @refine_symbol_by_loop_range(%out: tensor<2400000xf32>) -> tensor<2400000xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c73 = arith.constant 73 : index
  %v = arith.constant 42.0 : f32
  %tx = gpu.thread_id x {xla.range = [0 : index, 127 : index]}
  %bx = gpu.block_id x {xla.range = [0 : index, 575 : index]}
  %r = scf.for %i = %c0 to %c73 step %c1 iter_args(%a = %out) -> (tensor<2400000xf32>) {
    %s = scf.for %j = %c0 to %c4 step %c1 iter_args(%b = %a) -> (tensor<2400000xf32>) {
      %idx = xla_gpu.apply_indexing #map(%tx, %bx)[%i, %j]
      %u = tensor.insert %v into %b[%idx] : tensor<2400000xf32>
      scf.yield %u : tensor<2400000xf32>
    }
    scf.yield %s : tensor<2400000xf32>
  }
  return %r : tensor<2400000xf32>
}

// -----

// A pred reduction's shuffles (i1 through i32): the ori of truncated values
// is done in i32 and each shuffle takes the i32 directly, so one trunci is
// left, at the end (XLA's pred_reduce case, two rounds).
// CHECK-LABEL: func.func @pred_reduce(
// CHECK-SAME:    %[[IN:.*]]: i1)
// CHECK:       %[[EXT:.*]] = arith.extui %[[IN]] : i1 to i32
// CHECK:       %[[S0:.*]], %{{.*}} = gpu.shuffle down %[[EXT]]
// CHECK:       %[[OR0:.*]] = arith.ori %{{.*}}, %[[S0]] : i32
// CHECK:       %[[S1:.*]], %{{.*}} = gpu.shuffle down %[[OR0]]
// CHECK:       %[[OR1:.*]] = arith.ori %[[OR0]], %[[S1]] : i32
// CHECK:       %[[R:.*]] = arith.trunci %[[OR1]] : i32 to i1
// CHECK:       return %[[R]]
func.func @pred_reduce(%in: i1) -> i1 {
  %c1 = arith.constant 1 : i32
  %c2 = arith.constant 2 : i32
  %c32 = arith.constant 32 : i32
  %0 = arith.extui %in : i1 to i32
  %s0, %v0 = gpu.shuffle down %0, %c2, %c32 : i32
  %1 = arith.trunci %s0 : i32 to i1
  %2 = arith.ori %in, %1 : i1
  %3 = arith.extui %2 : i1 to i32
  %s1, %v1 = gpu.shuffle down %3, %c1, %c32 : i32
  %4 = arith.trunci %s1 : i32 to i1
  %5 = arith.ori %2, %4 : i1
  return %5 : i1
}

// -----

// Narrowest values of different widths: nothing moves (XLA's case).
// CHECK-LABEL: func.func @ori_mismatched_narrowest(
// CHECK-NEXT:  arith.trunci
// CHECK-NEXT:  arith.extui
// CHECK-NEXT:  arith.ori
// CHECK-NEXT:  return
func.func @ori_mismatched_narrowest(%a: i8, %b: i8) -> i8 {
  %0 = arith.trunci %a : i8 to i4
  %1 = arith.extui %0 : i4 to i8
  %r = arith.ori %b, %1 : i8
  return %r : i8
}
