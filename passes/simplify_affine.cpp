//===- simplify_affine.cpp - -xla-gpu-simplify-affine ---------------------===//

#include "dialects/xla_gpu/XlaGpuDialect.h"
#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "passes/Passes.h"
#include "passes/ValueRanges.h"

namespace xla::gpu {

#define GEN_PASS_DEF_SIMPLIFYAFFINEPASS
#include "passes/Passes.h.inc"

namespace {

using mlir::Value;

// Expands `expr` into arith ops over the map's operands. Without
// `ranges` (an operand of unknown range) every division is signed.
class Expander {
 public:
  Expander(mlir::OpBuilder& b, mlir::Location loc, const IndexingMap& map,
           mlir::ValueRange operands, bool ranges = true)
      : b_(b), loc_(loc), map_(map), operands_(operands), ranges_(ranges) {}

  Value expand(mlir::AffineExpr e) {
    switch (e.getKind()) {
      case mlir::AffineExprKind::Constant:
        return b_.create<mlir::arith::ConstantIndexOp>(
            loc_, llvm::cast<mlir::AffineConstantExpr>(e).getValue());
      case mlir::AffineExprKind::DimId:
        return operands_[llvm::cast<mlir::AffineDimExpr>(e).getPosition()];
      case mlir::AffineExprKind::SymbolId:
        return operands_[map_.getNumDims() +
                         llvm::cast<mlir::AffineSymbolExpr>(e).getPosition()];
      default:
        break;
    }
    auto bin = llvm::cast<mlir::AffineBinaryOpExpr>(e);
    Value l = expand(bin.getLHS());
    Value r = expand(bin.getRHS());
    bool nonNegative = ranges_ && map_.getRange(bin.getLHS()).lower >= 0;
    switch (e.getKind()) {
      case mlir::AffineExprKind::Add:
        return b_.create<mlir::arith::AddIOp>(loc_, l, r);
      case mlir::AffineExprKind::Mul:
        return b_.create<mlir::arith::MulIOp>(loc_, l, r);
      case mlir::AffineExprKind::FloorDiv:
        // Unsigned division is cheaper, and exact when the dividend is >= 0.
        if (nonNegative) return b_.create<mlir::arith::DivUIOp>(loc_, l, r);
        return b_.create<mlir::arith::FloorDivSIOp>(loc_, l, r);
      case mlir::AffineExprKind::CeilDiv:
        return b_.create<mlir::arith::CeilDivSIOp>(loc_, l, r);
      case mlir::AffineExprKind::Mod: {
        if (nonNegative) return b_.create<mlir::arith::RemUIOp>(loc_, l, r);
        // mod(a, c) = a - floordiv(a, c) * c: non-negative for c > 0.
        Value q = b_.create<mlir::arith::FloorDivSIOp>(loc_, l, r);
        return b_.create<mlir::arith::SubIOp>(loc_, l,
                                              b_.create<mlir::arith::MulIOp>(loc_, q, r));
      }
      default:
        llvm_unreachable("unknown affine expression");
    }
  }

 private:
  mlir::OpBuilder& b_;
  mlir::Location loc_;
  const IndexingMap& map_;
  mlir::ValueRange operands_;
  bool ranges_;
};

// Replaces `op` by the expansion of every result of `map` over `operands`.
void expandInPlace(mlir::Operation* op, const IndexingMap& map, mlir::ValueRange operands,
                   bool ranges) {
  mlir::OpBuilder b(op);
  Expander expander(b, op->getLoc(), map, operands, ranges);
  llvm::SmallVector<Value> results;
  for (mlir::AffineExpr e : map.getAffineMap().getResults()) {
    results.push_back(expander.expand(e));
  }
  op->replaceAllUsesWith(results);
  op->erase();
}

class SimplifyAffinePass : public impl::SimplifyAffinePassBase<SimplifyAffinePass> {
 public:
  void runOnOperation() override {
    // 1. Narrow each map's variables to the ranges of its operands.
    // 2. Simplify with the indexing-map algebra.
    // 3. Expand to arith; the op is gone afterwards.
    llvm::SmallVector<ApplyIndexingOp> ops;
    getOperation().walk([&](ApplyIndexingOp op) { ops.push_back(op); });
    for (ApplyIndexingOp op : ops) {
      expandInPlace(op, narrowToOperandRanges(op.getIndexingMap(), op.getOperands()).simplify(),
                    op.getOperands(), /*ranges=*/true);
    }
    // affine.apply, as XLA's pass lowers it: by the same expansion, its
    // map narrowed to and simplified by the operands' ranges when all are
    // known (xla.range, constants, loop bounds), else expanded as it is.
    llvm::SmallVector<mlir::affine::AffineApplyOp> applies;
    getOperation().walk([&](mlir::affine::AffineApplyOp op) { applies.push_back(op); });
    for (mlir::affine::AffineApplyOp op : applies) {
      mlir::AffineMap affine = op.getAffineMap();
      llvm::SmallVector<IndexingVar> vars;
      for (Value v : op.getMapOperands()) {
        std::optional<Interval> r = getValueRange(v);
        if (!r) break;
        vars.push_back(IndexingVar{"", *r});
      }
      bool known = vars.size() == op.getMapOperands().size();
      if (!known) vars.assign(op.getMapOperands().size(), IndexingVar{"", Interval{0, 0}});
      llvm::SmallVector<IndexingVar> dims(vars.begin(), vars.begin() + affine.getNumDims());
      llvm::SmallVector<IndexingVar> symbols(vars.begin() + affine.getNumDims(), vars.end());
      IndexingMap map(affine, dims, symbols, {});
      expandInPlace(op, known ? map.simplify() : map, op.getMapOperands(), known);
    }
  }
};

}  // namespace
}  // namespace xla::gpu
