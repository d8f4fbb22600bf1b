//===- simplify_arith.cpp - -xla-gpu-simplify-arith -----------------------===//
//
// XLA's arithmetic simplifier, on the ranges of ValueRanges.h (xla.range of
// ids and function arguments, loop bounds, constants, index maps):
//
//   1. Annotate: minsi, maxsi, addi and muli index results get their range
//      as `xla.range` (what later passes and readers of the IR see).
//   2. A cmpi the ranges decide becomes a constant; a minsi/maxsi one of
//      whose operands is always the smaller/larger becomes that operand.
//   3. An apply_indexing whose operands are narrower than its map's domain
//      (loop induction variables) gets the narrowed, simplified map.
//   4. Pred reductions: shuffles move i1 values through i32 (extui,
//      shuffle, trunci); an andi/ori of truncated values is done before the
//      trunc, a shuffle of extui(trunci(x)) shuffles x, and extui(trunci(x))
//      of an x that is 0 or 1 is x, so the chain of shuffles stays in i32
//      with one trunc at the end.
//
//===----------------------------------------------------------------------===//

#include <limits>

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
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

// min(a, b) = a when a is never larger (max: never smaller).
template <typename OpT, bool kMin>
struct FoldDecidedMinMax : public mlir::OpRewritePattern<OpT> {
  using mlir::OpRewritePattern<OpT>::OpRewritePattern;
  mlir::LogicalResult matchAndRewrite(OpT op, mlir::PatternRewriter& rewriter) const override {
    auto a = getValueRange(op.getLhs());
    auto b = getValueRange(op.getRhs());
    if (!a || !b) return rewriter.notifyMatchFailure(op, "unknown range");
    CmpIPredicate le = kMin ? CmpIPredicate::sle : CmpIPredicate::sge;
    if (decide(le, *a, *b) == true) {
      rewriter.replaceOp(op, op.getLhs());
    } else if (decide(le, *b, *a) == true) {
      rewriter.replaceOp(op, op.getRhs());
    } else {
      return rewriter.notifyMatchFailure(op, "either operand may be the result");
    }
    return mlir::success();
  }
};

// 3. The map narrowed to its operands' ranges and simplified, when that
// changes it.
struct RefineApplyIndexing : public mlir::OpRewritePattern<ApplyIndexingOp> {
  using OpRewritePattern::OpRewritePattern;
  mlir::LogicalResult matchAndRewrite(ApplyIndexingOp op,
                                      mlir::PatternRewriter& rewriter) const override {
    IndexingMap map = op.getIndexingMap();
    IndexingMap refined = narrowToOperandRanges(map, op.getOperands());
    if (refined == map) return rewriter.notifyMatchFailure(op, "no narrower operand");
    refined = refined.simplify();
    if (refined.isKnownEmpty()) return rewriter.notifyMatchFailure(op, "an empty domain");
    rewriter.modifyOpInPlace(op, [&] {
      op.setIndexingMapAttrAttr(IndexingMapAttr::get(op.getContext(), refined));
    });
    return mlir::success();
  }
};

// The value at the head of a chain of extui/trunci: the narrowest
// truncation (or the value itself).
mlir::Value narrowestInChain(mlir::Value value) {
  if (auto ext = value.getDefiningOp<mlir::arith::ExtUIOp>()) {
    return narrowestInChain(ext.getIn());
  }
  if (auto trunc = value.getDefiningOp<mlir::arith::TruncIOp>()) {
    mlir::Value inner = narrowestInChain(trunc.getIn());
    if (inner.getType().getIntOrFloatBitWidth() <= trunc.getType().getIntOrFloatBitWidth()) {
      return inner;
    }
    return trunc;
  }
  return value;
}

// 4. op(trunc(x), trunc(y)) = trunc(op(x, y)) for bitwise ops.
template <typename OpT>
struct HoistTruncOverBitwise : public mlir::OpRewritePattern<OpT> {
  using mlir::OpRewritePattern<OpT>::OpRewritePattern;
  mlir::LogicalResult matchAndRewrite(OpT op, mlir::PatternRewriter& rewriter) const override {
    mlir::Value lhs = narrowestInChain(op.getLhs());
    mlir::Value rhs = narrowestInChain(op.getRhs());
    if (lhs.getType() != rhs.getType() || lhs.getType() != op.getType()) {
      return rewriter.notifyMatchFailure(op, "operands of other widths");
    }
    auto lhsTrunc = lhs.template getDefiningOp<mlir::arith::TruncIOp>();
    auto rhsTrunc = rhs.template getDefiningOp<mlir::arith::TruncIOp>();
    if (!lhsTrunc && !rhsTrunc) return rewriter.notifyMatchFailure(op, "no truncation");
    mlir::Type wide = (lhsTrunc ? lhsTrunc : rhsTrunc).getIn().getType();
    if (lhsTrunc && rhsTrunc && rhsTrunc.getIn().getType() != wide) {
      return rewriter.notifyMatchFailure(op, "truncations from other widths");
    }
    auto widen = [&](mlir::Value v, mlir::arith::TruncIOp trunc) -> mlir::Value {
      return trunc ? trunc.getIn()
                   : rewriter.create<mlir::arith::ExtUIOp>(op.getLoc(), wide, v).getResult();
    };
    mlir::Value wideOp =
        rewriter.create<OpT>(op.getLoc(), widen(lhs, lhsTrunc), widen(rhs, rhsTrunc));
    rewriter.replaceOpWithNewOp<mlir::arith::TruncIOp>(op, op.getType(), wideOp);
    return mlir::success();
  }
};

// 4. shuffle(extui(trunci(x))) = extui(trunci(shuffle(x))) when x is as wide
// as the shuffled value.
struct ShuffleBeforeTruncExt : public mlir::OpRewritePattern<mlir::gpu::ShuffleOp> {
  using OpRewritePattern::OpRewritePattern;
  mlir::LogicalResult matchAndRewrite(mlir::gpu::ShuffleOp op,
                                      mlir::PatternRewriter& rewriter) const override {
    auto ext = op.getValue().getDefiningOp<mlir::arith::ExtUIOp>();
    auto trunc = ext ? ext.getIn().getDefiningOp<mlir::arith::TruncIOp>() : nullptr;
    if (!trunc || trunc.getIn().getType() != ext.getType()) {
      return rewriter.notifyMatchFailure(op, "not a shuffle of extui(trunci(x))");
    }
    rewriter.setInsertionPointAfter(op);
    auto narrowed = rewriter.create<mlir::arith::TruncIOp>(op.getLoc(), trunc.getType(),
                                                           op.getShuffleResult());
    auto widened = rewriter.create<mlir::arith::ExtUIOp>(op.getLoc(), ext.getType(), narrowed);
    rewriter.modifyOpInPlace(op, [&] { op.getValueMutable().assign(trunc.getIn()); });
    rewriter.replaceAllUsesExcept(op.getShuffleResult(), widened, narrowed);
    return mlir::success();
  }
};

// 4. extui(trunci(x)) = x when x is 0 or 1 (a pred widened and narrowed
// again).
struct FoldBoolRoundTrip : public mlir::OpRewritePattern<mlir::arith::ExtUIOp> {
  using OpRewritePattern::OpRewritePattern;
  mlir::LogicalResult matchAndRewrite(mlir::arith::ExtUIOp op,
                                      mlir::PatternRewriter& rewriter) const override {
    auto trunc = op.getIn().getDefiningOp<mlir::arith::TruncIOp>();
    if (!trunc || trunc.getIn().getType() != op.getType() || !trunc.getType().isInteger(1)) {
      return rewriter.notifyMatchFailure(op, "not extui(trunci(x)) through i1");
    }
    auto range = getValueRange(trunc.getIn());
    if (!range || range->lower < 0 || range->upper > 1) {
      return rewriter.notifyMatchFailure(op, "x may be other than 0 or 1");
    }
    rewriter.replaceOp(op, trunc.getIn());
    return mlir::success();
  }
};

// 1. xla.range on the index results of minsi, maxsi, addi and muli whose
// range is known (and not all of int64).
void annotateRanges(mlir::func::FuncOp func) {
  mlir::Builder b(func.getContext());
  func.walk([&](mlir::Operation* op) {
    // Index values only: the ranges are computed in 64 bits, and a
    // narrower integer could wrap where they do not.
    if (!llvm::isa<mlir::arith::MinSIOp, mlir::arith::MaxSIOp, mlir::arith::AddIOp,
                   mlir::arith::MulIOp>(op) ||
        !op->getResult(0).getType().isIndex() || op->hasAttr("xla.range")) {
      return;
    }
    std::optional<Interval> range = getValueRange(op->getResult(0));
    if (!range || (range->lower == std::numeric_limits<int64_t>::min() &&
                   range->upper == std::numeric_limits<int64_t>::max())) {
      return;
    }
    op->setAttr("xla.range", b.getIndexArrayAttr({range->lower, range->upper}));
  });
}

class SimplifyArithPass : public impl::SimplifyArithPassBase<SimplifyArithPass> {
 public:
  void runOnOperation() override {
    mlir::MLIRContext* ctx = &getContext();
    annotateRanges(getOperation());
    mlir::RewritePatternSet patterns(ctx);
    patterns.add<FoldDecidedCmpI, FoldDecidedMinMax<mlir::arith::MinSIOp, true>,
                 FoldDecidedMinMax<mlir::arith::MaxSIOp, false>, RefineApplyIndexing,
                 HoistTruncOverBitwise<mlir::arith::AndIOp>,
                 HoistTruncOverBitwise<mlir::arith::OrIOp>, ShuffleBeforeTruncExt,
                 FoldBoolRoundTrip>(ctx);
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
