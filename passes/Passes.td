//===- Passes.td - the passes of xla_gpu --------------------*- tablegen -*-===//
//
// One pass per file, the file named after the flag
// (`xla-erase-dead-functions` <-> erase_dead_functions.cpp).
//
//===----------------------------------------------------------------------===//

#ifndef XLA_GPU_PASSES_TD
#define XLA_GPU_PASSES_TD

include "mlir/Pass/PassBase.td"

def EraseDeadFunctionsPass : Pass<"xla-erase-dead-functions", "mlir::ModuleOp"> {
  let summary = "Deletes private functions that nothing calls.";
  let description = [{
    After inlining, the subgraph functions of a fusion whose calls were all
    inlined are dead. A function is dead when it is private and no op of the
    module refers to it (a `func.call`, an `xla_gpu.pure_call`, a combiner
    reference, ...). Public functions, such as the entry function, stay.
  }];
}

#endif  // XLA_GPU_PASSES_TD
