// RUN: xla-gpu-opt %s -split-input-file -xla-gpu-convert-float-nvidia | FileCheck %s

// f32 to f8E4M3FN: one cvt (both lanes the value, round to nearest even,
// saturating), then XLA's overflow: magnitudes above 464.0 (0x43E80000,
// halfway between the largest finite 448 and the next code, rounding to
// even 448; ml_dtypes agrees) up to infinity (0x7F800000) give NaN with
// the sign (0x7F | sign << 7): the format has no infinity.
// CHECK-LABEL: func.func @trunc_f32_to_e4m3fn(
// CHECK-SAME:    %[[X:.*]]: f32)
// CHECK-DAG:   %[[NAN:.*]] = arith.constant 127 : i8
// CHECK-DAG:   %[[LARGEST:.*]] = arith.constant 1139277824 : i32
// CHECK-DAG:   %[[INF:.*]] = arith.constant 2139095040 : i32
// CHECK:       %[[PACKED:.*]] = nvvm.convert.f32x2.to.f8x2 %[[X]], %[[X]] {rnd = #nvvm.fp_rnd_mode<rn>, sat = #nvvm.sat_mode<satfinite>} : i16(f8E4M3FN)
// CHECK:       %[[CVT:.*]] = arith.trunci %[[PACKED]] : i16 to i8
// CHECK:       %[[BITS:.*]] = arith.bitcast %[[X]] : f32 to i32
// CHECK:       %[[MAG:.*]] = arith.andi %[[BITS]]
// CHECK-DAG:   arith.cmpi ule, %[[MAG]], %[[INF]]
// CHECK-DAG:   arith.cmpi ugt, %[[MAG]], %[[LARGEST]]
// CHECK:       %[[SIGNED:.*]] = arith.ori %{{.*}}, %[[NAN]] : i8
// CHECK:       %[[R:.*]] = arith.select %{{.*}}, %[[SIGNED]], %[[CVT]] : i8
// CHECK:       arith.bitcast %[[R]] : i8 to f8E4M3FN
// CHECK-NOT:   arith.truncf
func.func @trunc_f32_to_e4m3fn(%x: f32) -> f8E4M3FN {
  %r = arith.truncf %x : f32 to f8E4M3FN
  return %r : f8E4M3FN
}

// -----

// f16 to f8E5M2 with the f16x2 cvt; overflow above 0x7B7F (61408, below
// the halfway point 61440 to the next code, which rounds to infinity: the
// largest finite 57344 has an odd mantissa) gives the signed infinity 0x7C.
// CHECK-LABEL: func.func @trunc_f16_to_e5m2(
// CHECK-SAME:    %[[X:.*]]: f16)
// CHECK-DAG:   arith.constant 124 : i8
// CHECK-DAG:   arith.constant 31615 : i16
// CHECK-DAG:   arith.constant 31744 : i16
// CHECK:       %[[PAIR:.*]] = vector.broadcast %[[X]] : f16 to vector<2xf16>
// CHECK:       nvvm.convert.f16x2.to.f8x2 %[[PAIR]] : vector<2xf16> -> i16(f8E5M2)
// CHECK:       arith.bitcast %{{.*}} : i8 to f8E5M2
func.func @trunc_f16_to_e5m2(%x: f16) -> f8E5M2 {
  %r = arith.truncf %x : f16 to f8E5M2
  return %r : f8E5M2
}

// -----

// f64 is truncated to f32 first, bf16 extended; f32's threshold for
// f8E5M2 is 0x476FFFFF (1198522367).
// CHECK-LABEL: func.func @trunc_other_sources(
// CHECK-SAME:    %[[X:.*]]: f64, %[[Y:.*]]: bf16)
// CHECK-DAG:   %[[XF:.*]] = arith.truncf %[[X]] : f64 to f32
// CHECK-DAG:   %[[YF:.*]] = arith.extf %[[Y]] : bf16 to f32
// CHECK-DAG:   nvvm.convert.f32x2.to.f8x2 %[[XF]], %[[XF]] {{.*}} : i16(f8E4M3FN)
// CHECK-DAG:   nvvm.convert.f32x2.to.f8x2 %[[YF]], %[[YF]] {{.*}} : i16(f8E5M2)
// CHECK-DAG:   arith.constant 1198522367 : i32
func.func @trunc_other_sources(%x: f64, %y: bf16) -> (f8E4M3FN, f8E5M2) {
  %a = arith.truncf %x : f64 to f8E4M3FN
  %b = arith.truncf %y : bf16 to f8E5M2
  return %a, %b : f8E4M3FN, f8E5M2
}

// -----

// From f8: the byte in both lanes of the f8x2 -> f16x2 cvt, lane 0 taken,
// then widened (f32, f64) or, for bf16, through f32.
// CHECK-LABEL: func.func @ext_from_f8(
// CHECK-SAME:    %[[X:.*]]: f8E4M3FN, %[[Y:.*]]: f8E5M2)
// CHECK:       %[[B:.*]] = arith.bitcast %[[X]] : f8E4M3FN to i8
// CHECK:       %[[PAIR:.*]] = vector.broadcast %[[B]] : i8 to vector<2xi8>
// CHECK:       %[[H:.*]] = nvvm.convert.f8x2.to.f16x2 %[[PAIR]] : vector<2xi8>(f8E4M3FN) -> vector<2xf16>
// CHECK:       %[[H0:.*]] = vector.extract %[[H]][0] : f16 from vector<2xf16>
// CHECK:       arith.extf %[[H0]] : f16 to f32
// CHECK:       nvvm.convert.f8x2.to.f16x2 %{{.*}} : vector<2xi8>(f8E5M2) -> vector<2xf16>
// CHECK:       %[[W:.*]] = arith.extf %{{.*}} : f16 to f32
// CHECK:       arith.truncf %[[W]] : f32 to bf16
// CHECK-NOT:   arith.extf %{{.*}} : f8
func.func @ext_from_f8(%x: f8E4M3FN, %y: f8E5M2) -> (f32, bf16) {
  %a = arith.extf %x : f8E4M3FN to f32
  %b = arith.extf %y : f8E5M2 to bf16
  return %a, %b : f32, bf16
}

// -----

// Formats without a cvt stay for -xla-gpu-expand-float-ops.
// CHECK-LABEL: func.func @other_formats_stay(
// CHECK:       arith.truncf %{{.*}} : f32 to f8E4M3FNUZ
// CHECK:       arith.extf %{{.*}} : f8E5M2FNUZ to f32
// CHECK-NOT:   nvvm.convert
func.func @other_formats_stay(%x: f32, %y: f8E5M2FNUZ) -> (f8E4M3FNUZ, f32) {
  %a = arith.truncf %x : f32 to f8E4M3FNUZ
  %b = arith.extf %y : f8E5M2FNUZ to f32
  return %a, %b : f8E4M3FNUZ, f32
}
