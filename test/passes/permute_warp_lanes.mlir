// RUN: xla-gpu-opt %s -split-input-file -xla-gpu-permute-warp-lanes | FileCheck %s
// RUN: xla-gpu-opt %s -split-input-file -xla-gpu-permute-warp-lanes \
// RUN:   -xla-gpu-lower-xla-gpu-loops-to-scf -canonicalize | FileCheck %s --check-prefix=INDEX

// A row max of f16[16,256], a row a warp, 4 elements a thread a step (XLA's
// vector): lane l's element j of a step becomes the warp's element
// j * 32 + l (the row's column s0 * 128 + s1 * 32 + l once the body's map
// reads the results), its result read at lane 0 alone.
#map = #xla_gpu.indexing_map<"(th_x, bl_x)[s0, s1] -> (bl_x * 8 + th_x floordiv 32, th_x mod 32 + s0 * 32, s1), domain: th_x in [0, 255], bl_x in [0, 1], s0 in [0, 1], s1 in [0, 3]">
#col = #xla_gpu.indexing_map<"(d0, d1) -> (d0 * 4 + d1), domain: d0 in [0, 63], d1 in [0, 3]">
#lane = #xla_gpu.indexing_map<"(th_x) -> (th_x mod 32), domain: th_x in [0, 255]">
#row = #xla_gpu.indexing_map<"(th_x, bl_x) -> (bl_x * 8 + th_x floordiv 32), domain: th_x in [0, 255], bl_x in [0, 1]">
func.func private @max(%a: f16, %b: f16) -> f16 {
  %m = arith.maximumf %a, %b : f16
  return %m : f16
}
func.func @row_max(%in: tensor<16x256xf16>, %out: tensor<16xf16>) -> tensor<16xf16> {
  %c0 = arith.constant 0 : index
  %init = arith.constant 0xFC00 : f16
  %tid = gpu.thread_id x {xla.range = [0 : index, 255 : index]}
  %bid = gpu.block_id x {xla.range = [0 : index, 1 : index]}
  %acc = xla_gpu.loop (%tid, %bid)[%s0, %s1] -> (%r, %v, %e) in #map iter_args(%a = %init) -> (f16) {
    %c = xla_gpu.apply_indexing #col(%v, %e)
    %x = tensor.extract %in[%r, %c] : tensor<16x256xf16>
    %m = arith.maximumf %a, %x : f16
    xla_gpu.yield %m : f16
  }
  %warp = xla_gpu.shuffle_reduce(%acc) to 16 combiner=@max : f16
  %lane = xla_gpu.apply_indexing #lane(%tid)
  %first = arith.cmpi eq, %lane, %c0 : index
  %row = xla_gpu.apply_indexing #row(%tid, %bid)
  %w = xla_gpu.predicated_insert %warp into %out[%row] if %first : tensor<16xf16>
  return %w : tensor<16xf16>
}
// CHECK: #indexing_map = #xla_gpu.indexing_map<"(th_x, bl_x)[s0, s1] -> (bl_x * 8 + th_x floordiv 32, (th_x mod 32) floordiv 4 + s1 * 8 + s0 * 32, th_x mod 4)
// CHECK-LABEL: func.func @row_max
// CHECK: xla_gpu.loop {{.*}} in #indexing_map iter_args
// The column the element is read at, composed and simplified: a lane's
// elements 32 apart, the lanes' consecutive.
// INDEX: #xla_gpu.indexing_map<"(d0, d1, d2) -> (d2 * 32 + d1 * 128 + d0 mod 32)
// INDEX-LABEL: func.func @row_max

// -----

// A sum of f32 is not exact in another order: left as it is.
#map = #xla_gpu.indexing_map<"(th_x, bl_x)[s0, s1] -> (bl_x * 8 + th_x floordiv 32, th_x mod 32 + s0 * 32, s1), domain: th_x in [0, 255], bl_x in [0, 1], s0 in [0, 1], s1 in [0, 3]">
#col = #xla_gpu.indexing_map<"(d0, d1) -> (d0 * 4 + d1), domain: d0 in [0, 63], d1 in [0, 3]">
#lane = #xla_gpu.indexing_map<"(th_x) -> (th_x mod 32), domain: th_x in [0, 255]">
func.func private @add(%a: f32, %b: f32) -> f32 {
  %m = arith.addf %a, %b : f32
  return %m : f32
}
func.func @row_sum(%in: tensor<16x256xf32>, %out: tensor<16xf32>) -> tensor<16xf32> {
  %c0 = arith.constant 0 : index
  %init = arith.constant 0.0 : f32
  %tid = gpu.thread_id x {xla.range = [0 : index, 255 : index]}
  %bid = gpu.block_id x {xla.range = [0 : index, 1 : index]}
  %acc = xla_gpu.loop (%tid, %bid)[%s0, %s1] -> (%r, %v, %e) in #map iter_args(%a = %init) -> (f32) {
    %c = xla_gpu.apply_indexing #col(%v, %e)
    %x = tensor.extract %in[%r, %c] : tensor<16x256xf32>
    %m = arith.addf %a, %x : f32
    xla_gpu.yield %m : f32
  }
  %warp = xla_gpu.shuffle_reduce(%acc) to 16 combiner=@add : f32
  %lane = xla_gpu.apply_indexing #lane(%tid)
  %first = arith.cmpi eq, %lane, %c0 : index
  %w = xla_gpu.predicated_insert %warp into %out[%c0] if %first : tensor<16xf32>
  return %w : tensor<16xf32>
}
// CHECK: #indexing_map = #xla_gpu.indexing_map<"(th_x, bl_x)[s0, s1] -> (bl_x * 8 + th_x floordiv 32, th_x mod 32 + s0 * 32, s1)
// CHECK-LABEL: func.func @row_sum
// CHECK: xla_gpu.loop {{.*}} in #indexing_map iter_args

// -----

// The warp's result read at every lane (a lane's value that is not the
// warp's maximum would change): left as it is.
#map = #xla_gpu.indexing_map<"(th_x, bl_x)[s0, s1] -> (bl_x * 8 + th_x floordiv 32, th_x mod 32 + s0 * 32, s1), domain: th_x in [0, 255], bl_x in [0, 1], s0 in [0, 1], s1 in [0, 3]">
#col = #xla_gpu.indexing_map<"(d0, d1) -> (d0 * 4 + d1), domain: d0 in [0, 63], d1 in [0, 3]">
func.func private @max(%a: f16, %b: f16) -> f16 {
  %m = arith.maximumf %a, %b : f16
  return %m : f16
}
func.func @every_lane(%in: tensor<16x256xf16>, %out: tensor<256xf16>) -> tensor<256xf16> {
  %init = arith.constant 0xFC00 : f16
  %tid = gpu.thread_id x {xla.range = [0 : index, 255 : index]}
  %bid = gpu.block_id x {xla.range = [0 : index, 1 : index]}
  %acc = xla_gpu.loop (%tid, %bid)[%s0, %s1] -> (%r, %v, %e) in #map iter_args(%a = %init) -> (f16) {
    %c = xla_gpu.apply_indexing #col(%v, %e)
    %x = tensor.extract %in[%r, %c] : tensor<16x256xf16>
    %m = arith.maximumf %a, %x : f16
    xla_gpu.yield %m : f16
  }
  %warp = xla_gpu.shuffle_reduce(%acc) to 16 combiner=@max : f16
  %w = tensor.insert %warp into %out[%tid] : tensor<256xf16>
  return %w : tensor<256xf16>
}
// CHECK: #indexing_map = #xla_gpu.indexing_map<"(th_x, bl_x)[s0, s1] -> (bl_x * 8 + th_x floordiv 32, th_x mod 32 + s0 * 32, s1)
// CHECK-LABEL: func.func @every_lane
// CHECK: xla_gpu.loop {{.*}} in #indexing_map iter_args

// -----

// A row's partial last step (a constraint of the thread): left as it is
// (dealt out, it would be checked element by element).
#map = #xla_gpu.indexing_map<"(th_x, bl_x)[s0, s1] -> (bl_x * 8 + th_x floordiv 32, th_x mod 32 + s0 * 32, s1), domain: th_x in [0, 255], bl_x in [0, 1], s0 in [0, 1], s1 in [0, 3], th_x mod 32 + s0 * 32 in [0, 49]">
#col = #xla_gpu.indexing_map<"(d0, d1) -> (d0 * 4 + d1), domain: d0 in [0, 63], d1 in [0, 3]">
#lane = #xla_gpu.indexing_map<"(th_x) -> (th_x mod 32), domain: th_x in [0, 255]">
func.func private @max(%a: f16, %b: f16) -> f16 {
  %m = arith.maximumf %a, %b : f16
  return %m : f16
}
func.func @partial_step(%in: tensor<16x256xf16>, %out: tensor<16xf16>) -> tensor<16xf16> {
  %c0 = arith.constant 0 : index
  %init = arith.constant 0xFC00 : f16
  %tid = gpu.thread_id x {xla.range = [0 : index, 255 : index]}
  %bid = gpu.block_id x {xla.range = [0 : index, 1 : index]}
  %acc = xla_gpu.loop (%tid, %bid)[%s0, %s1] -> (%r, %v, %e) in #map iter_args(%a = %init) -> (f16) {
    %c = xla_gpu.apply_indexing #col(%v, %e)
    %x = tensor.extract %in[%r, %c] : tensor<16x256xf16>
    %m = arith.maximumf %a, %x : f16
    xla_gpu.yield %m : f16
  }
  %warp = xla_gpu.shuffle_reduce(%acc) to 16 combiner=@max : f16
  %lane = xla_gpu.apply_indexing #lane(%tid)
  %first = arith.cmpi eq, %lane, %c0 : index
  %w = xla_gpu.predicated_insert %warp into %out[%c0] if %first : tensor<16xf16>
  return %w : tensor<16xf16>
}
// CHECK: #indexing_map = #xla_gpu.indexing_map<"(th_x, bl_x)[s0, s1] -> (bl_x * 8 + th_x floordiv 32, th_x mod 32 + s0 * 32, s1)
// CHECK-LABEL: func.func @partial_step
// CHECK: xla_gpu.loop {{.*}} in #indexing_map iter_args
