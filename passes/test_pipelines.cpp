//===- test_pipelines.cpp - XLA's test pipelines --------------------------===//
//
// The pipelines XLA's emitter tests run through its opt tool, under their
// flags: `-xla-gpu-test-optimize` = simplify-arith, canonicalize, cse,
// erase-dead-functions, cse. (`-xla-gpu-test-transform-loops` needs the
// fuse-loops pass, which does not exist yet; peel-loops does.)
//
//===----------------------------------------------------------------------===//

#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "passes/Passes.h"

namespace xla::gpu {

void registerXlaGpuTestPipelines() {
  mlir::PassPipelineRegistration<>(
      "xla-gpu-test-optimize", "XLA's test pipeline: simplify-arith, canonicalize, cse, "
                               "erase-dead-functions, cse",
      [](mlir::OpPassManager& pm) {
        (void)mlir::parsePassPipeline(
            "func.func(xla-gpu-simplify-arith),canonicalize,cse,xla-erase-dead-functions,cse",
            pm);
      });
}

}  // namespace xla::gpu
