//===- inline_calls.cpp - -xla-gpu-inline-calls ---------------------------===//

#include "mlir/Interfaces/CallInterfaces.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "mlir/Transforms/Passes.h"
#include "passes/Passes.h"

namespace xla::gpu {

#define GEN_PASS_DEF_INLINECALLSPASS
#include "passes/Passes.h.inc"

namespace {

class InlineCallsPass : public impl::InlineCallsPassBase<InlineCallsPass> {
 public:
  mlir::LogicalResult initialize(mlir::MLIRContext*) override {
    inliner_ = mlir::OpPassManager(mlir::ModuleOp::getOperationName());
    inliner_.addPass(mlir::createInlinerPass({}, [](mlir::OpPassManager& pm) {
      // The pipeline's canonicalize: regions are not simplified.
      mlir::GreedyRewriteConfig config;
      config.setRegionSimplificationLevel(mlir::GreedySimplifyRegionLevel::Disabled);
      pm.addPass(mlir::createCanonicalizerPass(config));
      pm.addPass(mlir::createCSEPass());
    }));
    return mlir::success();
  }

  void runOnOperation() override {
    mlir::ModuleOp module = getOperation();
    bool calls = module
                     .walk([](mlir::CallOpInterface) { return mlir::WalkResult::interrupt(); })
                     .wasInterrupted();
    if (calls && mlir::failed(runPipeline(inliner_, module))) signalPassFailure();
  }

 private:
  mlir::OpPassManager inliner_{mlir::ModuleOp::getOperationName()};
};

}  // namespace
}  // namespace xla::gpu
