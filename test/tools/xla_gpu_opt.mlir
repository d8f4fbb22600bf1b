// The driver behaves like mlir-opt.
// RUN: xla-gpu-opt --help | FileCheck %s --check-prefix=HELP
// RUN: xla-gpu-opt - < %s | FileCheck %s --check-prefix=STDIN
// RUN: xla-gpu-opt %s -o %t && FileCheck %s --check-prefix=STDIN < %t
// RUN: xla-gpu-opt %s --pass-pipeline='builtin.module(xla-erase-dead-functions)' | FileCheck %s --check-prefix=PIPELINE
// RUN: xla-gpu-opt %s -xla-erase-dead-functions -canonicalize | FileCheck %s --check-prefix=PIPELINE
// RUN: xla-gpu-opt %s -xla-erase-dead-functions --mlir-print-ir-after-all -o /dev/null 2>&1 | FileCheck %s --check-prefix=AFTER
// RUN: xla-gpu-opt %s -xla-erase-dead-functions --mlir-print-ir-before-all -o /dev/null 2>&1 | FileCheck %s --check-prefix=BEFORE
// RUN: xla-gpu-opt %s --mlir-print-op-generic | FileCheck %s --check-prefix=GENERIC
// RUN: xla-gpu-opt %s --mlir-print-debuginfo | FileCheck %s --check-prefix=DEBUGINFO
// RUN: not xla-gpu-opt %s --pass-pipeline='builtin.module(no-such-pass)' 2>&1 | FileCheck %s --check-prefix=BADPASS
// RUN: not xla-gpu-opt %t.does-not-exist.mlir 2>&1 | FileCheck %s --check-prefix=MISSING
// RUN: xla-gpu-opt --show-dialects | FileCheck %s --check-prefix=DIALECTS

// HELP-DAG: --canonicalize{{ +}}-{{ +}}Canonicalize operations
// HELP-DAG: --xla-erase-dead-functions{{ +}}-{{ +}}Deletes private functions that nothing calls.
// HELP-DAG: --split-input-file
// HELP-DAG: --verify-diagnostics
// HELP-DAG: --mlir-print-debuginfo

// STDIN: func.func @main
// STDIN: xla_gpu.apply_indexing

// PIPELINE-NOT: @unused
// PIPELINE: func.func @main

// AFTER: // -----// IR Dump After EraseDeadFunctionsPass (xla-erase-dead-functions) //----- //
// AFTER-NOT: @unused
// BEFORE: // -----// IR Dump Before EraseDeadFunctionsPass (xla-erase-dead-functions) //----- //
// BEFORE: @unused

// GENERIC: "xla_gpu.apply_indexing"(%{{.*}}) <{indexing_map_attr = #indexing_map}> : (index) -> index
// DEBUGINFO: loc(

// BADPASS: 'no-such-pass' does not refer to a registered pass or pass pipeline
// MISSING: xla-gpu-opt: cannot open input file '{{.*}}does-not-exist.mlir': No such file or directory
// DIALECTS: Available Dialects: {{.*}}xla_gpu

#map = #xla_gpu.indexing_map<"(d0) -> (d0 * 2), domain: d0 in [0, 3]">
func.func private @unused() {
  return
}
func.func @main(%a: index) -> index {
  %0 = xla_gpu.apply_indexing #map(%a)
  return %0 : index
}
