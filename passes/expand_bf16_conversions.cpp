//===- expand_bf16_conversions.cpp - -xla-gpu-expand-bf16-conversions -----===//

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Transforms/Passes.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/TypeUtilities.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "passes/Passes.h"

namespace xla::gpu {

#define GEN_PASS_DEF_EXPANDBF16CONVERSIONSPASS
#include "passes/Passes.h.inc"

namespace {

bool convertsBf16(mlir::Operation* op) {
  if (!mlir::isa<mlir::arith::ExtFOp, mlir::arith::TruncFOp>(op)) return false;
  return mlir::getElementTypeOrSelf(op->getOperand(0).getType()).isBF16() ||
         mlir::getElementTypeOrSelf(op->getResult(0).getType()).isBF16();
}

class ExpandBf16ConversionsPass
    : public impl::ExpandBf16ConversionsPassBase<ExpandBf16ConversionsPass> {
 public:
  void runOnOperation() override {
    // The patterns go to the conversions alone: a greedy rewrite of the
    // whole function would visit (and try to fold) every op, ~1 ms of a
    // column sum's lowering with no bf16 in it.
    llvm::SmallVector<mlir::Operation*> conversions;
    getOperation().walk([&](mlir::Operation* op) {
      if (convertsBf16(op)) conversions.push_back(op);
    });
    if (conversions.empty()) return;
    mlir::RewritePatternSet patterns(&getContext());
    mlir::arith::populateExpandBFloat16Patterns(patterns);
    mlir::GreedyRewriteConfig config;
    config.setStrictness(mlir::GreedyRewriteStrictness::ExistingOps);
    if (failed(mlir::applyOpPatternsGreedily(conversions, std::move(patterns), config))) {
      signalPassFailure();
    }
  }
};

}  // namespace
}  // namespace xla::gpu
