//===- unswitch_loops.cpp - -xla-gpu-unswitch-loops -----------------------===//

#include "dialects/xla_gpu/XlaGpuDialect.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "passes/Passes.h"

namespace xla::gpu {

#define GEN_PASS_DEF_UNSWITCHLOOPSPASS
#include "passes/Passes.h.inc"

namespace {

struct UnswitchLoop : public mlir::OpRewritePattern<mlir::scf::ForOp> {
  using OpRewritePattern::OpRewritePattern;

  mlir::LogicalResult matchAndRewrite(mlir::scf::ForOp loop,
                                      mlir::PatternRewriter& rewriter) const override {
    mlir::Block* body = loop.getBody();
    if (body->getOperations().size() != 2) {
      return rewriter.notifyMatchFailure(loop, "the body is not one op and the yield");
    }
    auto branch = llvm::dyn_cast<mlir::scf::IfOp>(body->front());
    if (!branch) return rewriter.notifyMatchFailure(loop, "the body is not an scf.if");
    mlir::Value condition = branch.getCondition();
    if (mlir::matchPattern(condition, mlir::m_Constant())) {
      return rewriter.notifyMatchFailure(loop, "the condition is a constant");
    }
    if (!loop.isDefinedOutsideOfLoop(condition)) {
      return rewriter.notifyMatchFailure(loop, "the condition varies in the loop");
    }
    mlir::Location loc = loop.getLoc();
    auto unswitched = rewriter.create<mlir::scf::IfOp>(loc, loop.getResultTypes(), condition,
                                                       /*withElseRegion=*/true);
    // One copy of the loop per value of the condition.
    for (bool value : {true, false}) {
      mlir::Block& block = value ? unswitched.getThenRegion().front()
                                 : unswitched.getElseRegion().front();
      mlir::OpBuilder b = mlir::OpBuilder::atBlockEnd(&block);
      mlir::IRMapping mapping;
      mapping.map(condition, b.create<mlir::arith::ConstantIntOp>(loc, value, 1).getResult());
      mlir::Operation* copy = b.clone(*loop, mapping);
      b.create<mlir::scf::YieldOp>(loc, copy->getResults());
    }
    rewriter.replaceOp(loop, unswitched.getResults());
    return mlir::success();
  }
};

class UnswitchLoopsPass : public impl::UnswitchLoopsPassBase<UnswitchLoopsPass> {
 public:
  void runOnOperation() override {
    mlir::RewritePatternSet patterns(&getContext());
    patterns.add<UnswitchLoop>(&getContext());
    // The copies' ifs fold away (their conditions are constants now).
    mlir::scf::IfOp::getCanonicalizationPatterns(patterns, &getContext());
    if (failed(mlir::applyPatternsGreedily(getOperation(), std::move(patterns)))) {
      signalPassFailure();
    }
  }
};

}  // namespace
}  // namespace xla::gpu
