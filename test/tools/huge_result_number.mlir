// Found by fuzz/fuzz.py (mlir harness): MLIR's parser aborts on a use of a
// huge result number (it grows a vector to it first). xla-gpu-opt and
// xla_gpu.pipelines.parse_module refuse it, located.
// RUN: not xla-gpu-opt %s 2>&1 | FileCheck %s
// RUN: not %python -m xla_gpu.pipelines %s 2>&1 | FileCheck %s
// CHECK: huge_result_number.mlir:12:12: error: result number 2147483647 is larger than any operation has

func.func @f(%a: index) -> index {
  %r:2 = scf.execute_region -> (index, index) {
    scf.yield %a, %a : index, index
  }
  return %r#2147483647 : index
}
