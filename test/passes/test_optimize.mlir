// XLA's -xla-gpu-test-optimize pipeline (simplify-arith, canonicalize, cse,
// erase-dead-functions, cse), as XLA's emitter tests run it.
// RUN: xla-gpu-opt %s -xla-gpu-test-optimize | FileCheck %s
// RUN: xla-gpu-opt --help | FileCheck %s --check-prefix=HELP
// HELP-DAG: --xla-gpu-test-optimize
// HELP-DAG: --xla-gpu-unswitch-loops

// The range of the thread id folds the compare (simplify-arith), the dead
// private function goes, the duplicate constant is CSE'd.
// CHECK-NOT: func.func private @dead
// CHECK-LABEL: func.func @kernel
// CHECK-NOT: arith.cmpi
// CHECK: %[[C:.*]] = arith.constant 7 : index
// CHECK-NOT: arith.constant 7
// CHECK: return %[[C]], %[[C]]
func.func private @dead() -> index {
  %c = arith.constant 1 : index
  return %c : index
}
func.func @kernel() -> (index, index) {
  %tid = gpu.thread_id x {xla.range = [0 : index, 127 : index]}
  %c128 = arith.constant 128 : index
  %lt = arith.cmpi ult, %tid, %c128 : index
  %a = arith.constant 7 : index
  %b = arith.constant 7 : index
  %c0 = arith.constant 0 : index
  %x = arith.select %lt, %a, %c0 : index
  return %x, %b : index, index
}
