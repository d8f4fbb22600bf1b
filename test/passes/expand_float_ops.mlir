// RUN: xla-gpu-opt %s -split-input-file -xla-gpu-expand-float-ops=gpu-approximations=false | FileCheck %s
// RUN: xla-gpu-opt %s -split-input-file -xla-gpu-expand-float-ops=gpu-approximations=false -canonicalize | FileCheck %s --check-prefix=ROUNDED
// RUN: xla-gpu-opt %s -split-input-file -xla-gpu-expand-float-ops | FileCheck %s --check-prefix=APPROX --implicit-check-not=math.tanh --implicit-check-not=math.erf

// Each bf16 op runs in f32 and is rounded back right after.
// CHECK-LABEL: func.func @bf16_chain
// CHECK: %[[A:.*]] = arith.extf %{{.*}} : bf16 to f32
// CHECK: %[[M:.*]] = arith.mulf %[[A]], %[[A]] : f32
// CHECK: %[[MT:.*]] = arith.truncf %[[M]] : f32 to bf16
// CHECK: %[[ME:.*]] = arith.extf %[[MT]] : bf16 to f32
// CHECK: %[[T:.*]] = math.tanh %[[ME]] : f32
// CHECK: arith.truncf %[[T]] : f32 to bf16
// The rounding survives canonicalization (no extf(truncf(x)) -> x).
// ROUNDED-LABEL: func.func @bf16_chain
// ROUNDED: arith.mulf
// ROUNDED-NEXT: arith.truncf
// ROUNDED-NEXT: arith.extf
// ROUNDED-NEXT: math.tanh
func.func @bf16_chain(%x: bf16) -> bf16 {
  %0 = arith.mulf %x, %x : bf16
  %1 = math.tanh %0 : bf16
  return %1 : bf16
}

// -----

// f32 and f16 comparisons: f32 untouched, f16 extended.
// CHECK-LABEL: func.func @mixed
// CHECK-SAME: (%[[A:.*]]: f32, %[[B:.*]]: f16, %[[C:.*]]: f16)
// CHECK-DAG: %[[BE:.*]] = arith.extf %[[B]] : f16 to f32
// CHECK-DAG: %[[CE:.*]] = arith.extf %[[C]] : f16 to f32
// CHECK-DAG: arith.addf %[[A]], %[[A]] : f32
// CHECK: arith.cmpf olt, %[[BE]], %[[CE]] : f32
func.func @mixed(%a: f32, %b: f16, %c: f16) -> (f32, i1) {
  %0 = arith.addf %a, %a : f32
  %1 = arith.cmpf olt, %b, %c : f16
  return %0, %1 : f32, i1
}

// -----

// f32 to f8E4M3FN as integer code: the mantissa rounded to nearest even
// on the bits (normal range), roundeven on a multiple of the smallest
// subnormal (2^-9), overflow to NaN (0x7F: the format has no infinity),
// the sign put back, NaN for NaN; the byte bitcast to the f8 type.
// CHECK-LABEL: func.func @trunc_to_e4m3fn
// CHECK-SAME:    (%[[X:.*]]: f32)
// CHECK-DAG:   %[[BITS:.*]] = arith.bitcast %[[X]] : f32 to i32
// CHECK-DAG:   arith.constant 5.120000e+02 : f32
// CHECK-DAG:   math.roundeven
// CHECK-DAG:   arith.constant 126 : i32
// CHECK-DAG:   arith.constant 127 : i32
// CHECK-DAG:   arith.cmpf uno, %[[X]], %[[X]] : f32
// CHECK:       %[[BYTE:.*]] = arith.trunci %{{.*}} : i32 to i8
// CHECK:       %[[R:.*]] = arith.bitcast %[[BYTE]] : i8 to f8E4M3FN
// CHECK:       return %[[R]]
// CHECK-NOT:   arith.truncf
func.func @trunc_to_e4m3fn(%x: f32) -> f8E4M3FN {
  %0 = arith.truncf %x : f32 to f8E4M3FN
  return %0 : f8E4M3FN
}

// -----

// From f64 through f32 (as XLA), from f16 extended to f32 (exact).
// CHECK-LABEL: func.func @trunc_from_other_types
// CHECK:       arith.truncf %{{.*}} : f64 to f32
// CHECK:       arith.bitcast %{{.*}} : i8 to f8E5M2
// CHECK:       arith.extf %{{.*}} : f16 to f32
// CHECK:       arith.bitcast %{{.*}} : i8 to f8E4M3FNUZ
// CHECK-NOT:   arith.truncf %{{.*}} to f8
func.func @trunc_from_other_types(%x: f64, %y: f16) -> (f8E5M2, f8E4M3FNUZ) {
  %0 = arith.truncf %x : f64 to f8E5M2
  %1 = arith.truncf %y : f16 to f8E4M3FNUZ
  return %0, %1 : f8E5M2, f8E4M3FNUZ
}

// -----

// f8E5M2 to bf16: the exact f32 (exponent rebiased by 127 - 15 = 112,
// subnormals as mantissa * 2^-16, infinities and NaN where the exponent is
// all ones), then truncated to bf16 (exact). f8E4M3B11FNUZ: NaN is 0x80.
// CHECK-LABEL: func.func @ext_from_f8
// CHECK-DAG:   %[[BYTE:.*]] = arith.bitcast %{{.*}} : f8E5M2 to i8
// CHECK-DAG:   arith.constant 112 : i32
// CHECK-DAG:   arith.constant 1.52587891E-5 : f32
// CHECK-DAG:   arith.constant 0x7F800000 : f32
// CHECK-DAG:   arith.constant 128 : i32
// CHECK:       arith.truncf %{{.*}} : f32 to bf16
// CHECK:       arith.bitcast %{{.*}} : f8E4M3B11FNUZ to i8
// CHECK-NOT:   arith.extf %{{.*}} : f8
func.func @ext_from_f8(%x: f8E5M2, %y: f8E4M3B11FNUZ) -> (bf16, f32) {
  %0 = arith.extf %x : f8E5M2 to bf16
  %1 = arith.extf %y : f8E4M3B11FNUZ to f32
  return %0, %1 : bf16, f32
}

// -----

// Arithmetic on f8 runs in f32 (emulation) and its casts are expanded too.
// CHECK-LABEL: func.func @f8_arith
// CHECK:       arith.addf %{{.*}}, %{{.*}} : f32
// CHECK:       arith.bitcast %{{.*}} : i8 to f8E4M3FN
// CHECK-NOT:   arith.extf %{{.*}} : f8E4M3FN
func.func @f8_arith(%x: f8E4M3FN) -> f8E4M3FN {
  %0 = arith.addf %x, %x : f8E4M3FN
  return %0 : f8E4M3FN
}

// -----

// By default f32 tanh and erf become XLA:GPU's rational approximations (no
// math call is left, bf16's included): tanh clamped to +-7.99881172 and x
// itself below 4e-4; erf clamped to +-3.74392128, x P(x^2) / Q(x^2) with
// Eigen's coefficients (P's last 1.12837911, Q's first -1.17916031e-7).
// f64 is left alone.
// APPROX-LABEL: func.func @tanh_erf
// APPROX-DAG: arith.constant 7.99881172 : f32
// APPROX-DAG: arith.constant -7.99881172 : f32
// APPROX-DAG: arith.constant 4.000000e-04 : f32
// APPROX-DAG: arith.constant 3.74392128 : f32
// APPROX-DAG: arith.constant -3.74392128 : f32
// APPROX-DAG: arith.constant 1.12837911 : f32
// APPROX-DAG: arith.constant -1.17916031E-7 : f32
// APPROX: math.fma
// APPROX: arith.truncf %{{.*}} : f32 to bf16
// APPROX: math.tanh %{{.*}} : f64
// APPROX: math.erf %{{.*}} : f64
func.func @tanh_erf(%x: f32, %y: bf16, %z: f64) -> (f32, f32, bf16, f64, f64) {
  %t = math.tanh %x : f32
  %e = math.erf %x : f32
  %b = math.erf %y : bf16
  %tz = math.tanh %z : f64
  %ez = math.erf %z : f64
  return %t, %e, %b, %tz, %ez : f32, f32, bf16, f64, f64
}

// APPROX-LABEL: func.func @vector_tanh
// APPROX: arith.constant dense<7.99881172> : vector<4xf32>
// APPROX: return
func.func @vector_tanh(%x: vector<4xf32>) -> vector<4xf32> {
  %t = math.tanh %x : vector<4xf32>
  return %t : vector<4xf32>
}
