//===- simplify_arith.cpp - -xla-gpu-simplify-arith -----------------------===//

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "passes/Passes.h"
#include "passes/ValueRanges.h"

namespace xla::gpu {

#define GEN_PASS_DEF_SIMPLIFYARITHPASS
#include "passes/Passes.h.inc"

namespace {

using mlir::arith::CmpIPredicate;

// true/false when the ranges decide `a pred b`.
std::optional<bool> decide(CmpIPredicate pred, Interval a, Interval b) {
  switch (pred) {
    case CmpIPredicate::slt:
      if (a.upper < b.lower) return true;
      if (a.lower >= b.upper) return false;
      break;
    case CmpIPredicate::sle:
      if (a.upper <= b.lower) return true;
      if (a.lower > b.upper) return false;
      break;
    case CmpIPredicate::sgt:
      if (a.lower > b.upper) return true;
      if (a.upper <= b.lower) return false;
      break;
    case CmpIPredicate::sge:
      if (a.lower >= b.upper) return true;
      if (a.upper < b.lower) return false;
      break;
    case CmpIPredicate::eq:
      if (a.isPoint() && b.isPoint() && a.lower == b.lower) return true;
      if (a.upper < b.lower || b.upper < a.lower) return false;
      break;
    case CmpIPredicate::ne:
      if (a.upper < b.lower || b.upper < a.lower) return true;
      if (a.isPoint() && b.isPoint() && a.lower == b.lower) return false;
      break;
    default:
      // Unsigned comparisons: only when both sides are known non-negative.
      if (a.lower < 0 || b.lower < 0) return std::nullopt;
      switch (pred) {
        case CmpIPredicate::ult: return decide(CmpIPredicate::slt, a, b);
        case CmpIPredicate::ule: return decide(CmpIPredicate::sle, a, b);
        case CmpIPredicate::ugt: return decide(CmpIPredicate::sgt, a, b);
        case CmpIPredicate::uge: return decide(CmpIPredicate::sge, a, b);
        default: break;
      }
  }
  return std::nullopt;
}

struct FoldDecidedCmpI : public mlir::OpRewritePattern<mlir::arith::CmpIOp> {
  using OpRewritePattern::OpRewritePattern;
  mlir::LogicalResult matchAndRewrite(mlir::arith::CmpIOp op,
                                      mlir::PatternRewriter& rewriter) const override {
    auto a = getValueRange(op.getLhs());
    auto b = getValueRange(op.getRhs());
    if (!a || !b) return rewriter.notifyMatchFailure(op, "unknown range");
    std::optional<bool> result = decide(op.getPredicate(), *a, *b);
    if (!result) return rewriter.notifyMatchFailure(op, "the ranges do not decide");
    rewriter.replaceOpWithNewOp<mlir::arith::ConstantIntOp>(op, *result ? 1 : 0, 1);
    return mlir::success();
  }
};

class SimplifyArithPass : public impl::SimplifyArithPassBase<SimplifyArithPass> {
 public:
  void runOnOperation() override {
    mlir::MLIRContext* ctx = &getContext();
    mlir::RewritePatternSet patterns(ctx);
    patterns.add<FoldDecidedCmpI>(ctx);
    // The folded i1 constants feed andi/select/scf.if: their canonical
    // patterns finish the job.
    mlir::arith::AndIOp::getCanonicalizationPatterns(patterns, ctx);
    mlir::arith::SelectOp::getCanonicalizationPatterns(patterns, ctx);
    mlir::scf::IfOp::getCanonicalizationPatterns(patterns, ctx);
    if (mlir::failed(mlir::applyPatternsGreedily(getOperation(), std::move(patterns)))) {
      signalPassFailure();
    }
  }
};

}  // namespace
}  // namespace xla::gpu
