// RUN: xla-gpu-opt %s -split-input-file \
// RUN:   -pass-pipeline='builtin.module(func.func(xla-gpu-expand-bf16-conversions))' \
// RUN:   | FileCheck %s

// bf16 -> f32: the bits shifted into the high half of an f32's.
// CHECK-LABEL: func.func @extend
// CHECK: %[[BITS:.*]] = arith.bitcast %{{.*}} : bf16 to i16
// CHECK: %[[WIDE:.*]] = arith.extui %[[BITS]] : i16 to i32
// CHECK: %[[HIGH:.*]] = arith.shli %[[WIDE]], %{{.*}} : i32
// CHECK: %[[F:.*]] = arith.bitcast %[[HIGH]] : i32 to f32
// CHECK-NOT: arith.extf
// CHECK: return %[[F]]
func.func @extend(%a: bf16) -> f32 {
  %e = arith.extf %a : bf16 to f32
  return %e : f32
}

// -----

// f32 -> bf16: rounded to nearest even on the bits (0x7fff plus the kept
// half's lowest bit), a NaN made the quiet NaN 0x7fc0.
// CHECK-LABEL: func.func @truncate
// CHECK: %[[NAN:.*]] = arith.cmpf une, %[[X:.*]], %[[X]] : f32
// CHECK-DAG: %[[QNAN:.*]] = arith.constant 32704 : i16
// CHECK-DAG: %[[HALF:.*]] = arith.constant 32767 : i32
// CHECK: arith.addi %{{.*}}, %[[HALF]] : i32
// CHECK: %[[R:.*]] = arith.trunci %{{.*}} : i32 to i16
// CHECK: %[[S:.*]] = arith.select %[[NAN]], %[[QNAN]], %[[R]] : i16
// CHECK: arith.bitcast %[[S]] : i16 to bf16
// CHECK-NOT: arith.truncf
func.func @truncate(%x: f32) -> bf16 {
  %t = arith.truncf %x : f32 to bf16
  return %t : bf16
}

// -----

// Everything else stays as it is: max and min (arith-expand would make
// compares and selects of them), f16 conversions, f32 arithmetic.
// CHECK-LABEL: func.func @others
// CHECK: arith.maximumf
// CHECK: arith.minimumf
// CHECK: arith.extf %{{.*}} : f16 to f32
// CHECK: arith.addf
// CHECK-NOT: arith.cmpf
// CHECK-NOT: arith.select
func.func @others(%a: f32, %b: f32, %h: f16) -> (f32, f32, f32, f32) {
  %max = arith.maximumf %a, %b : f32
  %min = arith.minimumf %a, %b : f32
  %e = arith.extf %h : f16 to f32
  %zero = arith.constant -0.0 : f32
  %same = arith.addf %a, %zero : f32
  return %max, %min, %e, %same : f32, f32, f32, f32
}
