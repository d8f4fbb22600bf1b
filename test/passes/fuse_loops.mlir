// RUN: xla-gpu-opt %s -split-input-file -xla-gpu-fuse-loops | FileCheck %s

// XLA's case: a transpose tile read into a vector (exp of the input) and
// written into shared memory from it. One loop: the map has both loops'
// results, the extract reads the insert of the same iteration.
#read = #xla_gpu.indexing_map<"(d0, d1, d2, d3, d4, d5)[s0, s1] -> (d3 floordiv 30, ((d3 floordiv 6) mod 5) * 32 + s0 * 4 + d0 floordiv 32, (d3 mod 6) * 32 + d0 mod 32), domain: d0 in [0, 127], d1 in [0, 0], d2 in [0, 0], d3 in [0, 599], d4 in [0, 0], d5 in [0, 0], s0 in [0, 7], s1 in [0, 0], (d3 mod 6) * 32 + d0 mod 32 in [0, 169]">
#write = #xla_gpu.indexing_map<"(d0, d1, d2, d3, d4, d5)[s0, s1] -> (0, d0 mod 32, d0 floordiv 32 + s0 * 4), domain: d0 in [0, 127], d1 in [0, 0], d2 in [0, 0], d3 in [0, 599], d4 in [0, 0], d5 in [0, 0], s0 in [0, 7], s1 in [0, 0], (d3 mod 6) * 32 + d0 mod 32 in [0, 169]">
func.func @fuse_tile_read_and_write(%arg0: tensor<20x160x170xf32>) -> tensor<1x32x33xf32> {
  %cst = arith.constant dense<0.000000e+00> : vector<8x1xf32>
  %tx = gpu.thread_id x {xla.range = [0 : index, 127 : index]}
  %ty = gpu.thread_id y {xla.range = [0 : index, 0 : index]}
  %tz = gpu.thread_id z {xla.range = [0 : index, 0 : index]}
  %bx = gpu.block_id x {xla.range = [0 : index, 599 : index]}
  %by = gpu.block_id y {xla.range = [0 : index, 0 : index]}
  %bz = gpu.block_id z {xla.range = [0 : index, 0 : index]}
  %shmem = xla_gpu.allocate_shared : tensor<1x32x33xf32>
  %vec = xla_gpu.loop (%tx, %ty, %tz, %bx, %by, %bz)[%i, %j] -> (%ra, %rb, %rc) in #read iter_args(%iter = %cst) -> (vector<8x1xf32>) {
    %e = tensor.extract %arg0[%ra, %rb, %rc] : tensor<20x160x170xf32>
    %x = math.exp %e : f32
    %v = vector.insert %x, %iter [%i, %j] : f32 into vector<8x1xf32>
    xla_gpu.yield %v : vector<8x1xf32>
  }
  %tile = xla_gpu.loop (%tx, %ty, %tz, %bx, %by, %bz)[%i, %j] -> (%ra, %rb, %rc) in #write iter_args(%iter = %shmem) -> (tensor<1x32x33xf32>) {
    %x = vector.extract %vec[%i, %j] : f32 from vector<8x1xf32>
    %t = tensor.insert %x into %iter[%ra, %rb, %rc] : tensor<1x32x33xf32>
    xla_gpu.yield %t : tensor<1x32x33xf32>
  }
  %synced = xla_gpu.sync_threads %tile : tensor<1x32x33xf32>
  return %synced : tensor<1x32x33xf32>
}
// CHECK: #[[$FUSED:.*]] = #xla_gpu.indexing_map<"(d0, d1, d2, d3, d4, d5)[s0, s1] -> (d3 floordiv 30, ((d3 floordiv 6) mod 5) * 32 + s0 * 4 + d0 floordiv 32, (d3 mod 6) * 32 + d0 mod 32, 0, d0 mod 32, d0 floordiv 32 + s0 * 4), domain: d0 in [0, 127], d1 in [0, 0], d2 in [0, 0], d3 in [0, 599], d4 in [0, 0], d5 in [0, 0], s0 in [0, 7], s1 in [0, 0], (d3 mod 6) * 32 + d0 mod 32 in [0, 169]">
// CHECK-LABEL: func.func @fuse_tile_read_and_write(
// CHECK:       %[[CST:.*]] = arith.constant dense<0.0{{.*}}> : vector<8x1xf32>
// CHECK:       %[[SHMEM:.*]] = xla_gpu.allocate_shared
// CHECK:       %[[FUSED:.*]]:2 = xla_gpu.loop ({{.*}})[%[[I:.*]], %[[J:.*]]] -> (%[[A:.*]], %[[B:.*]], %[[C:.*]], %[[D:.*]], %[[E:.*]], %[[F:.*]]) in #[[$FUSED]] iter_args(%[[VEC:.*]] = %[[CST]], %[[TILE:.*]] = %[[SHMEM]])
// CHECK:         %[[X:.*]] = tensor.extract %{{.*}}[%[[A]], %[[B]], %[[C]]]
// CHECK:         %[[EXP:.*]] = math.exp %[[X]]
// CHECK:         %[[INSERTED:.*]] = vector.insert %[[EXP]], %[[VEC]] [%[[I]], %[[J]]]
// CHECK:         %[[Y:.*]] = vector.extract %[[INSERTED]][%[[I]], %[[J]]]
// CHECK:         %[[T:.*]] = tensor.insert %[[Y]] into %[[TILE]][%[[D]], %[[E]], %[[F]]]
// CHECK:         xla_gpu.yield %[[INSERTED]], %[[T]]
// CHECK:       xla_gpu.sync_threads %[[FUSED]]#1
// CHECK-NOT:   xla_gpu.loop

// -----

// The vector is also returned: it stays a result of the fused loop.
#map = #xla_gpu.indexing_map<"(d0)[s0] -> (d0 * 4 + s0), domain: d0 in [0, 31], s0 in [0, 3]">
func.func @vector_used_after(%in: tensor<128xf32>, %out: tensor<128xf32>, %tid: index)
    -> (vector<4xf32>, tensor<128xf32>) {
  %cst = arith.constant dense<0.0> : vector<4xf32>
  %vec = xla_gpu.loop (%tid)[%i] -> (%r) in #map iter_args(%iter = %cst) -> (vector<4xf32>) {
    %e = tensor.extract %in[%r] : tensor<128xf32>
    %v = vector.insert %e, %iter [%i] : f32 into vector<4xf32>
    xla_gpu.yield %v : vector<4xf32>
  }
  %res = xla_gpu.loop (%tid)[%i] -> (%r) in #map iter_args(%iter = %out) -> (tensor<128xf32>) {
    %x = vector.extract %vec[%i] : f32 from vector<4xf32>
    %t = tensor.insert %x into %iter[%r] : tensor<128xf32>
    xla_gpu.yield %t : tensor<128xf32>
  }
  return %vec, %res : vector<4xf32>, tensor<128xf32>
}
// CHECK-LABEL: func.func @vector_used_after(
// CHECK:       %[[FUSED:.*]]:2 = xla_gpu.loop
// CHECK-NOT:   xla_gpu.loop
// CHECK:       return %[[FUSED]]#0, %[[FUSED]]#1

// -----

// The second loop reads the element another iteration wrote (s0 and 3 -
// s0 are not the same position): the loops stay.
#map = #xla_gpu.indexing_map<"(d0)[s0] -> (d0 * 4 + s0), domain: d0 in [0, 31], s0 in [0, 3]">
func.func @do_not_fuse_other_position(%in: tensor<128xf32>, %out: tensor<128xf32>, %tid: index)
    -> tensor<128xf32> {
  %cst = arith.constant dense<0.0> : vector<4xf32>
  %c3 = arith.constant 3 : index
  %vec = xla_gpu.loop (%tid)[%i] -> (%r) in #map iter_args(%iter = %cst) -> (vector<4xf32>) {
    %e = tensor.extract %in[%r] : tensor<128xf32>
    %v = vector.insert %e, %iter [%i] : f32 into vector<4xf32>
    xla_gpu.yield %v : vector<4xf32>
  }
  %res = xla_gpu.loop (%tid)[%i] -> (%r) in #map iter_args(%iter = %out) -> (tensor<128xf32>) {
    %k = arith.subi %c3, %i : index
    %x = vector.extract %vec[%k] : f32 from vector<4xf32>
    %t = tensor.insert %x into %iter[%r] : tensor<128xf32>
    xla_gpu.yield %t : tensor<128xf32>
  }
  return %res : tensor<128xf32>
}
// CHECK-LABEL: func.func @do_not_fuse_other_position(
// CHECK-COUNT-2: xla_gpu.loop

// -----

// Different domains (the second loop has a constraint the first lacks):
// an iteration of one is not one of the other.
#map = #xla_gpu.indexing_map<"(d0)[s0] -> (d0 * 4 + s0), domain: d0 in [0, 31], s0 in [0, 3]">
#cut = #xla_gpu.indexing_map<"(d0)[s0] -> (d0 * 4 + s0), domain: d0 in [0, 31], s0 in [0, 3], d0 * 4 + s0 in [0, 99]">
func.func @do_not_fuse_other_domain(%in: tensor<128xf32>, %out: tensor<128xf32>, %tid: index)
    -> tensor<128xf32> {
  %cst = arith.constant dense<0.0> : vector<4xf32>
  %vec = xla_gpu.loop (%tid)[%i] -> (%r) in #map iter_args(%iter = %cst) -> (vector<4xf32>) {
    %e = tensor.extract %in[%r] : tensor<128xf32>
    %v = vector.insert %e, %iter [%i] : f32 into vector<4xf32>
    xla_gpu.yield %v : vector<4xf32>
  }
  %res = xla_gpu.loop (%tid)[%i] -> (%r) in #cut iter_args(%iter = %out) -> (tensor<128xf32>) {
    %x = vector.extract %vec[%i] : f32 from vector<4xf32>
    %t = tensor.insert %x into %iter[%r] : tensor<128xf32>
    xla_gpu.yield %t : tensor<128xf32>
  }
  return %res : tensor<128xf32>
}
// CHECK-LABEL: func.func @do_not_fuse_other_domain(
// CHECK-COUNT-2: xla_gpu.loop

// -----

// Other dimension values (another thread id): not the same iterations.
#map = #xla_gpu.indexing_map<"(d0)[s0] -> (d0 * 4 + s0), domain: d0 in [0, 31], s0 in [0, 3]">
func.func @do_not_fuse_other_dims(%in: tensor<128xf32>, %out: tensor<128xf32>, %tid: index,
    %other: index) -> tensor<128xf32> {
  %cst = arith.constant dense<0.0> : vector<4xf32>
  %vec = xla_gpu.loop (%tid)[%i] -> (%r) in #map iter_args(%iter = %cst) -> (vector<4xf32>) {
    %e = tensor.extract %in[%r] : tensor<128xf32>
    %v = vector.insert %e, %iter [%i] : f32 into vector<4xf32>
    xla_gpu.yield %v : vector<4xf32>
  }
  %res = xla_gpu.loop (%other)[%i] -> (%r) in #map iter_args(%iter = %out) -> (tensor<128xf32>) {
    %x = vector.extract %vec[%i] : f32 from vector<4xf32>
    %t = tensor.insert %x into %iter[%r] : tensor<128xf32>
    xla_gpu.yield %t : tensor<128xf32>
  }
  return %res : tensor<128xf32>
}
// CHECK-LABEL: func.func @do_not_fuse_other_dims(
// CHECK-COUNT-2: xla_gpu.loop

// -----

// The insert does not use s1: element s0 is written by every s1 and the
// vector holds the last; reading it in the same iteration would see an
// earlier one.
#map = #xla_gpu.indexing_map<"(d0)[s0, s1] -> (d0 * 8 + s0 * 2 + s1), domain: d0 in [0, 15], s0 in [0, 3], s1 in [0, 1]">
func.func @do_not_fuse_overwritten(%in: tensor<128xf32>, %out: tensor<128xf32>, %tid: index)
    -> tensor<128xf32> {
  %cst = arith.constant dense<0.0> : vector<4xf32>
  %vec = xla_gpu.loop (%tid)[%i, %j] -> (%r) in #map iter_args(%iter = %cst) -> (vector<4xf32>) {
    %e = tensor.extract %in[%r] : tensor<128xf32>
    %v = vector.insert %e, %iter [%i] : f32 into vector<4xf32>
    xla_gpu.yield %v : vector<4xf32>
  }
  %res = xla_gpu.loop (%tid)[%i, %j] -> (%r) in #map iter_args(%iter = %out) -> (tensor<128xf32>) {
    %x = vector.extract %vec[%i] : f32 from vector<4xf32>
    %t = tensor.insert %x into %iter[%r] : tensor<128xf32>
    xla_gpu.yield %t : tensor<128xf32>
  }
  return %res : tensor<128xf32>
}
// CHECK-LABEL: func.func @do_not_fuse_overwritten(
// CHECK-COUNT-2: xla_gpu.loop

// -----

// The whole vector is used in the second loop: it is not complete until
// the first loop ends.
#map = #xla_gpu.indexing_map<"(d0)[s0] -> (d0 * 4 + s0), domain: d0 in [0, 31], s0 in [0, 3]">
func.func @do_not_fuse_whole_vector_read(%in: tensor<128xf32>, %out: tensor<128xf32>,
    %tid: index) -> tensor<128xf32> {
  %cst = arith.constant dense<0.0> : vector<4xf32>
  %vec = xla_gpu.loop (%tid)[%i] -> (%r) in #map iter_args(%iter = %cst) -> (vector<4xf32>) {
    %e = tensor.extract %in[%r] : tensor<128xf32>
    %v = vector.insert %e, %iter [%i] : f32 into vector<4xf32>
    xla_gpu.yield %v : vector<4xf32>
  }
  %res = xla_gpu.loop (%tid)[%i] -> (%r) in #map iter_args(%iter = %out) -> (tensor<128xf32>) {
    %x = vector.extract %vec[%i] : f32 from vector<4xf32>
    %s = vector.reduction <add>, %vec : vector<4xf32> into f32
    %y = arith.addf %x, %s : f32
    %t = tensor.insert %y into %iter[%r] : tensor<128xf32>
    xla_gpu.yield %t : tensor<128xf32>
  }
  return %res : tensor<128xf32>
}
// CHECK-LABEL: func.func @do_not_fuse_whole_vector_read(
// CHECK-COUNT-2: xla_gpu.loop
