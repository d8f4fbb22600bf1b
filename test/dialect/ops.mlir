// Every op of the dialect round-trips: custom form, and the generic form
// parses back to the same custom form; printing twice gives identical text.
// RUN: xla-gpu-opt %s -split-input-file -allow-unregistered-dialect | FileCheck %s
// RUN: xla-gpu-opt %s -split-input-file -allow-unregistered-dialect -mlir-print-op-generic | xla-gpu-opt -split-input-file -allow-unregistered-dialect | FileCheck %s
// RUN: xla-gpu-opt %s -split-input-file -allow-unregistered-dialect > %t.1
// RUN: xla-gpu-opt %t.1 -split-input-file -allow-unregistered-dialect > %t.2
// RUN: diff %t.1 %t.2
// RUN: xla-gpu-opt %s -split-input-file -allow-unregistered-dialect -mlir-print-op-generic > %t.g1
// RUN: xla-gpu-opt %t.g1 -split-input-file -allow-unregistered-dialect -mlir-print-op-generic > %t.g2
// RUN: diff %t.g1 %t.g2

// CHECK-LABEL: func.func @allocate_shared
// CHECK: %[[SHMEM:.*]] = xla_gpu.allocate_shared : tensor<32x1x33xf32>
// CHECK: %[[SYNCED:.*]] = xla_gpu.sync_threads %[[SHMEM]] : tensor<32x1x33xf32>
// CHECK: return %[[SYNCED]]
func.func @allocate_shared() -> tensor<32x1x33xf32> {
  %shmem = xla_gpu.allocate_shared : tensor<32x1x33xf32>
  %synced = xla_gpu.sync_threads %shmem : tensor<32x1x33xf32>
  return %synced : tensor<32x1x33xf32>
}

// -----

// CHECK-LABEL: func.func @sync_threads_variadic
// CHECK: %{{.*}}:2 = xla_gpu.sync_threads %{{.*}}, %{{.*}} : tensor<4xf32>, tensor<8xi32>
func.func @sync_threads_variadic(%a: tensor<4xf32>, %b: tensor<8xi32>) -> (tensor<4xf32>, tensor<8xi32>) {
  %r:2 = xla_gpu.sync_threads %a, %b : tensor<4xf32>, tensor<8xi32>
  return %r#0, %r#1 : tensor<4xf32>, tensor<8xi32>
}

// -----

// CHECK-LABEL: func.func @atomic_rmw
// CHECK: xla_gpu.atomic_rmw %{{.*}}[%{{.*}}, %{{.*}}] : tensor<2x3xf32> {
// CHECK-NEXT: ^bb0(%[[CUR:.*]]: f32):
// CHECK-NEXT: %[[SUM:.*]] = arith.addf %[[CUR]], %{{.*}} : f32
// CHECK-NEXT: xla_gpu.yield %[[SUM]] : f32
func.func @atomic_rmw(%in: tensor<2x3xf32>, %i: index, %j: index) -> tensor<2x3xf32> {
  %c42 = arith.constant 42.0 : f32
  %ret = xla_gpu.atomic_rmw %in[%i, %j] : tensor<2x3xf32> {
  ^bb0(%current : f32):
    %sum = arith.addf %current, %c42 : f32
    xla_gpu.yield %sum : f32
  }
  return %ret : tensor<2x3xf32>
}

// -----

// CHECK-LABEL: func.func @pure_call
// CHECK: %[[R:.*]] = xla_gpu.pure_call @callee(%{{.*}}, %{{.*}}) : (tensor<4xf32>, index) -> f32
func.func private @callee(%t: tensor<4xf32>, %i: index) -> f32 {
  %v = tensor.extract %t[%i] : tensor<4xf32>
  return %v : f32
}
func.func @pure_call(%t: tensor<4xf32>, %i: index) -> f32 {
  %r = xla_gpu.pure_call @callee(%t, %i) : (tensor<4xf32>, index) -> f32
  return %r : f32
}

// -----

// CHECK-LABEL: func.func @shuffle_reduce
// CHECK: %{{.*}}:2 = xla_gpu.shuffle_reduce(%{{.*}}, %{{.*}}) to 16 combiner=@reducer : f32, i32
func.func private @reducer(%a: f32, %b: i32, %c: f32, %d: i32) -> (f32, i32) {
  %0 = arith.addf %a, %c : f32
  %1 = arith.addi %b, %d : i32
  return %0, %1 : f32, i32
}
func.func @shuffle_reduce(%a: f32, %b: i32) -> (f32, i32) {
  %r:2 = xla_gpu.shuffle_reduce(%a, %b) to 16 combiner=@reducer : f32, i32
  return %r#0, %r#1 : f32, i32
}

// -----

// CHECK-LABEL: func.func @reduce
// CHECK: xla_gpu.reduce(%{{.*}}, %{{.*}}) inits(%{{.*}}, %{{.*}}) dimensions=[0, 2] combiner=@add
// CHECK-SAME: : tensor<16x8x4xf32>, tensor<16x8x4xi32> to tensor<8xf32>, tensor<8xi32>
func.func private @add(%a_acc: f32, %b_acc: i32, %a: f32, %b: i32) -> (f32, i32) {
  %0 = arith.addf %a_acc, %a : f32
  %1 = arith.addi %b_acc, %b : i32
  return %0, %1 : f32, i32
}
func.func @reduce(%in0: tensor<16x8x4xf32>, %in1: tensor<16x8x4xi32>, %init0: f32, %init1: i32) -> (tensor<8xf32>, tensor<8xi32>) {
  %sum:2 = xla_gpu.reduce (%in0, %in1) inits(%init0, %init1) dimensions=[0, 2] combiner=@add
    : tensor<16x8x4xf32>, tensor<16x8x4xi32> to tensor<8xf32>, tensor<8xi32>
  return %sum#0, %sum#1 : tensor<8xf32>, tensor<8xi32>
}

// -----

// CHECK: #[[$MAP:.*]] = #xla_gpu.indexing_map<"(d0, d1)[s0] -> (d0 + s0, d1 floordiv 2), domain: d0 in [0, 127], d1 in [0, 3], s0 in [0, 1]">
// CHECK-LABEL: func.func @apply_indexing
// CHECK: %{{.*}}:2 = xla_gpu.apply_indexing #[[$MAP]](%{{.*}}, %{{.*}})[%{{.*}}]
func.func @apply_indexing(%d0: index, %d1: index, %s0: index) -> (index, index) {
  %0:2 = xla_gpu.apply_indexing #xla_gpu.indexing_map<"(d0, d1)[s0] -> (d0 + s0, d1 floordiv 2), domain: d0 in [0, 127], d1 in [0, 3], s0 in [0, 1]">(%d0, %d1)[%s0]
  return %0#0, %0#1 : index, index
}

// -----

// CHECK: #[[$MAP:.*]] = #xla_gpu.indexing_map<"()[s0] -> (s0 * 2), domain: s0 in [0, 7]">
// CHECK-LABEL: func.func @apply_indexing_symbols_only
// CHECK: xla_gpu.apply_indexing #[[$MAP]][%{{.*}}]
func.func @apply_indexing_symbols_only(%s0: index) -> index {
  %0 = xla_gpu.apply_indexing #xla_gpu.indexing_map<"()[s0] -> (s0 * 2), domain: s0 in [0, 7]">[%s0]
  return %0 : index
}

// -----

// CHECK: #[[$MAP:.*]] = #xla_gpu.indexing_map<"(d0)[s0, s1] -> (d0 * 4 + s0, s1), domain: d0 in [0, 31], s0 in [0, 3], s1 in [0, 7]">
// CHECK-LABEL: func.func @loop
// CHECK: %[[R:.*]] = xla_gpu.loop (%{{.*}})[%[[I:.*]], %[[J:.*]]] -> (%[[A:.*]], %[[B:.*]]) in #[[$MAP]] iter_args(%[[ITER:.*]] = %{{.*}}) -> (tensor<128x8xf32>) {
// CHECK: tensor.insert %{{.*}} into %[[ITER]][%[[A]], %[[B]]]
// CHECK: xla_gpu.yield
func.func @loop(%tid: index, %out: tensor<128x8xf32>, %v: f32) -> tensor<128x8xf32> {
  %r = xla_gpu.loop (%tid)[%i, %j] -> (%a, %b)
      in #xla_gpu.indexing_map<"(d0)[s0, s1] -> (d0 * 4 + s0, s1), domain: d0 in [0, 31], s0 in [0, 3], s1 in [0, 7]">
      iter_args(%iter = %out) -> (tensor<128x8xf32>) {
    %inserted = tensor.insert %v into %iter[%a, %b] : tensor<128x8xf32>
    xla_gpu.yield %inserted : tensor<128x8xf32>
  }
  return %r : tensor<128x8xf32>
}

// -----

// A loop without iteration arguments (e.g. only side effects in its body).
// CHECK-LABEL: func.func @loop_no_iter_args
// CHECK: xla_gpu.loop (%{{.*}}) -> (%{{.*}}) in #{{.*}} {
// CHECK-NEXT: "test.use"
// CHECK-NEXT: xla_gpu.yield
// CHECK-NEXT: } {some_attr}
func.func @loop_no_iter_args(%tid: index) {
  xla_gpu.loop (%tid) -> (%a) in #xla_gpu.indexing_map<"(d0) -> (d0), domain: d0 in [0, 31]"> {
    "test.use"(%a) : (index) -> ()
    xla_gpu.yield
  } {some_attr}
  return
}

// -----

// CHECK-LABEL: func.func @predicated_insert
// CHECK: xla_gpu.predicated_insert %{{.*}} into %{{.*}}[%{{.*}}, %{{.*}}] if %{{.*}} : tensor<2x3xf32>
func.func @predicated_insert(%v: f32, %t: tensor<2x3xf32>, %i: index, %j: index, %c: i1) -> tensor<2x3xf32> {
  %r = xla_gpu.predicated_insert %v into %t[%i, %j] if %c : tensor<2x3xf32>
  return %r : tensor<2x3xf32>
}

// -----

// CHECK-LABEL: func.func @predicated_extract
// CHECK: xla_gpu.predicated_extract %{{.*}}[%{{.*}}, %{{.*}}] if %{{.*}} else %{{.*}} : tensor<2x3xf32>
func.func @predicated_extract(%f: f32, %t: tensor<2x3xf32>, %i: index, %j: index, %c: i1) -> f32 {
  %r = xla_gpu.predicated_extract %t[%i, %j] if %c else %f : tensor<2x3xf32>
  return %r : f32
}

// -----

// The maps go through aliases: an inline map right before `:` would take the
// type as its own (see the op's description). XLA's forms: the materialize's
// map gives the callee's indices, the indexed vector's the element's, and
// the insert's map takes those to the destination's indices.
#map = #xla_gpu.indexing_map<"(d0, d1)[s0, s1] -> (d0 * 2 + s0, d1 * 2 + s1), domain: d0 in [0, 15], d1 in [0, 31], s0 in [0, 1], s1 in [0, 1]">
#vmap = #xla_gpu.indexing_map<"(d0, d1)[s0, s1] -> (d0 * 2 + s0, s1), domain: d0 in [0, 15], d1 in [0, 31], s0 in [0, 1], s1 in [0, 1]">
#imap = #xla_gpu.indexing_map<"(d0, d1) -> (d0, d1), domain: d0 in [0, 31], d1 in [0, 1]">
// CHECK-DAG: #[[$MAP:.*]] = #xla_gpu.indexing_map<"(d0, d1)[s0, s1] -> (d0 * 2 + s0, d1 * 2 + s1), domain: d0 in [0, 15], d1 in [0, 31], s0 in [0, 1], s1 in [0, 1]">
// CHECK-DAG: #[[$VMAP:.*]] = #xla_gpu.indexing_map<"(d0, d1)[s0, s1] -> (d0 * 2 + s0, s1), domain: d0 in [0, 15], d1 in [0, 31], s0 in [0, 1], s1 in [0, 1]">
// CHECK-DAG: #[[$IMAP:.*]] = #xla_gpu.indexing_map<"(d0, d1) -> (d0, d1), domain: d0 in [0, 31], d1 in [0, 1]">
// CHECK-LABEL: func.func @materialize_and_insert
// CHECK: %[[V:.*]] = xla_gpu.materialize @exp(%{{.*}}) at #[[$MAP]](%{{.*}}, %{{.*}}) : (tensor<32x64xf32>) -> !xla_gpu.indexed_vector<2x2xf32, #[[$VMAP]]>
// CHECK: xla_gpu.insert %[[V]](%{{.*}}, %{{.*}}) into %{{.*}} at #[[$IMAP]] : !xla_gpu.indexed_vector<2x2xf32, #[[$VMAP]]> -> tensor<32x2xf32>
func.func private @exp(%t: tensor<32x64xf32>, %i: index, %j: index) -> f32 {
  %v = tensor.extract %t[%i, %j] : tensor<32x64xf32>
  %e = math.exp %v : f32
  return %e : f32
}
func.func @materialize_and_insert(%in: tensor<32x64xf32>, %out: tensor<32x2xf32>, %tid: index, %bid: index) -> tensor<32x2xf32> {
  %v = xla_gpu.materialize @exp(%in) at #map(%tid, %bid)
    : (tensor<32x64xf32>) -> !xla_gpu.indexed_vector<2x2xf32, #vmap>
  %r = xla_gpu.insert %v(%tid, %bid) into %out at #imap
    : !xla_gpu.indexed_vector<2x2xf32, #vmap> -> tensor<32x2xf32>
  return %r : tensor<32x2xf32>
}

// -----

// XLA concatenates apply_indexing's ( ) and [ ] groups: only the total
// must match the map (2 dimensions and 1 symbol here).
// CHECK-LABEL: func.func @apply_indexing_operand_groups
// CHECK: xla_gpu.apply_indexing #{{.*}}(%[[A:.*]], %[[B:.*]])[%[[C:.*]]]
#product = #xla_gpu.indexing_map<"(d0, d1)[s0] -> (d0 * s0 + d1), domain: d0 in [0, 3], d1 in [0, 4], s0 in [0, 2]">
func.func @apply_indexing_operand_groups(%a: index, %b: index, %c: index) -> index {
  %0 = xla_gpu.apply_indexing #product(%a)[%b, %c]
  return %0 : index
}

// -----

// CHECK-LABEL: func.func @copy_tile
// CHECK: xla_gpu.copy_tile %{{.*}}[%{{.*}}, %{{.*}}] [32, 32] to %{{.*}}[%{{.*}}, %{{.*}}] [32, 32] thread %{{.*}} of 128 : tensor<256x32xf32> to tensor<32x32xf32>
// CHECK: xla_gpu.copy_tile {{.*}} thread %{{.*}} of 32 {swizzle = array<i64: 3, 2, 3>} : tensor<32x32xf16> to tensor<32x32xf16>
func.func @copy_tile(%in: tensor<256x32xf32>, %h: tensor<32x32xf16>, %r: index, %t: index) -> (tensor<32x32xf32>, tensor<32x32xf16>) {
  %c0 = arith.constant 0 : index
  %s = xla_gpu.allocate_shared : tensor<32x32xf32>
  %a = xla_gpu.copy_tile %in[%r, %c0] [32, 32] to %s[%c0, %c0] [32, 32] thread %t of 128 : tensor<256x32xf32> to tensor<32x32xf32>
  %sh = xla_gpu.allocate_shared : tensor<32x32xf16>
  %b = xla_gpu.copy_tile %h[%c0, %c0] [32, 32] to %sh[%c0, %c0] [32, 32] thread %t of 32 {swizzle = array<i64: 3, 2, 3>} : tensor<32x32xf16> to tensor<32x32xf16>
  return %a, %b : tensor<32x32xf32>, tensor<32x32xf16>
}
