//===- expand_bf16_conversions.cpp - -xla-gpu-expand-bf16-conversions -----===//

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Transforms/Passes.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "passes/Passes.h"

namespace xla::gpu {

#define GEN_PASS_DEF_EXPANDBF16CONVERSIONSPASS
#include "passes/Passes.h.inc"

namespace {

class ExpandBf16ConversionsPass
    : public impl::ExpandBf16ConversionsPassBase<ExpandBf16ConversionsPass> {
 public:
  void runOnOperation() override {
    mlir::RewritePatternSet patterns(&getContext());
    mlir::arith::populateExpandBFloat16Patterns(patterns);
    if (failed(mlir::applyPatternsGreedily(getOperation(), std::move(patterns)))) {
      signalPassFailure();
    }
  }
};

}  // namespace
}  // namespace xla::gpu
