//===- test_pipelines.cpp - XLA's test pipelines --------------------------===//
//
// The pipelines XLA's emitter tests run through its opt tool, under their
// flags: `-xla-gpu-test-optimize` = simplify-arith, canonicalize, cse,
// erase-dead-functions, cse; `-xla-gpu-test-transform-loops` = XLA's loop
// transformations in the order of its emitter pipeline, from
// lower-xla-gpu-to-scf (warp size 32) to optimize-loops.
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
  mlir::PassPipelineRegistration<>(
      "xla-gpu-test-transform-loops",
      "XLA's test pipeline: lower-xla-gpu-to-scf, fuse-loops, inline, canonicalize, cse, "
      "peel-loops, lower-xla-gpu-loops-to-scf, propagate-slice-indices, flatten-tensors, "
      "licm, unswitch-loops, licm, vectorize-loads-stores, optimize-loops, canonicalize, cse",
      [](mlir::OpPassManager& pm) {
        (void)mlir::parsePassPipeline(
            "func.func(xla-gpu-lower-xla-gpu-to-scf{warp_size=32},xla-gpu-fuse-loops),"
            "inline,canonicalize,cse,"
            "func.func(xla-gpu-peel-loops,xla-gpu-lower-xla-gpu-loops-to-scf),"
            "xla-gpu-propagate-slice-indices,xla-gpu-flatten-tensors,"
            "loop-invariant-code-motion,func.func(xla-gpu-unswitch-loops),"
            "loop-invariant-code-motion,"
            "func.func(xla-gpu-vectorize-loads-stores,xla-gpu-optimize-loops),"
            "canonicalize,cse",
            pm);
      });
}

}  // namespace xla::gpu
