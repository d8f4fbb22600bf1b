// RUN: xla-gpu-opt %s -split-input-file -xla-gpu-expand-float-ops | FileCheck %s
// RUN: xla-gpu-opt %s -split-input-file -xla-gpu-expand-float-ops -canonicalize | FileCheck %s --check-prefix=ROUNDED

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
