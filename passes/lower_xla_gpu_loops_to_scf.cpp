//===- lower_xla_gpu_loops_to_scf.cpp - -xla-gpu-lower-xla-gpu-loops-to-scf -===//

#include <functional>
#include <limits>

#include "dialects/xla_gpu/XlaGpuDialect.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/AffineExpr.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "passes/Passes.h"

namespace xla::gpu {

#define GEN_PASS_DEF_LOWERXLAGPULOOPSTOSCFPASS
#include "passes/Passes.h.inc"

namespace {

using llvm::SmallVector;
using mlir::Value;

// The map with only result `i` (same variables, ranges, constraints).
IndexingMapAttr singleResult(const IndexingMap& map, unsigned i) {
  mlir::AffineMap affine = mlir::AffineMap::get(
      map.getNumDims(), map.getNumSymbols(), map.getAffineMap().getResult(i),
      map.getContext());
  // Without the constraints: apply_indexing takes none (the scf.if around
  // the body checks them).
  IndexingMap result(affine, llvm::to_vector(map.getDimVars()),
                     llvm::to_vector(map.getRangeVars()),
                     llvm::to_vector(map.getRuntimeVars()));
  return IndexingMapAttr::get(map.getContext(), result);
}

// lo <= v <= hi as i1, in the spec's form (cmpi sge, cmpi sle, andi).
Value inRange(mlir::OpBuilder& b, mlir::Location loc, Value v, Interval range) {
  Value lo = b.create<mlir::arith::ConstantIndexOp>(loc, range.lower);
  Value hi = b.create<mlir::arith::ConstantIndexOp>(loc, range.upper);
  Value ge = b.create<mlir::arith::CmpIOp>(loc, mlir::arith::CmpIPredicate::sge, v, lo);
  Value le = b.create<mlir::arith::CmpIOp>(loc, mlir::arith::CmpIPredicate::sle, v, hi);
  return b.create<mlir::arith::AndIOp>(loc, ge, le);
}

// `expr`, over `map`'s variables (no constraints), at `dims` and `symbols`.
Value applyExpr(mlir::OpBuilder& b, mlir::Location loc, const IndexingMap& map,
                mlir::AffineExpr expr, mlir::ValueRange dims, mlir::ValueRange symbols) {
  mlir::AffineMap affine =
      mlir::AffineMap::get(map.getNumDims(), map.getNumSymbols(), expr, b.getContext());
  IndexingMap single(affine, llvm::to_vector(map.getDimVars()),
                     llvm::to_vector(map.getRangeVars()), {});
  return b.create<ApplyIndexingOp>(loc, dims, symbols,
                                   IndexingMapAttr::get(b.getContext(), single))
      .getResult(0);
}

// `expr` as rest + s with s the range variable `symbol` and rest free of
// it: rest, or none.
std::optional<mlir::AffineExpr> restOfUnitTerm(mlir::AffineExpr expr, unsigned symbol,
                                               unsigned numDims, unsigned numSymbols) {
  mlir::AffineExpr s = mlir::getAffineSymbolExpr(symbol, expr.getContext());
  mlir::AffineExpr rest = mlir::simplifyAffineExpr(expr - s, numDims, numSymbols);
  if (rest.isFunctionOfSymbol(symbol)) return std::nullopt;
  // expr must be affine in s with coefficient 1: rest + s gives it back.
  if (mlir::simplifyAffineExpr(rest + s, numDims, numSymbols) !=
      mlir::simplifyAffineExpr(expr, numDims, numSymbols)) {
    return std::nullopt;
  }
  return rest;
}

// The coefficients of `expr`'s dims, then symbols, where it is linear in
// them (sums and products with constants); none otherwise.
std::optional<SmallVector<int64_t>> linearCoefficients(mlir::AffineExpr expr, unsigned numDims,
                                                       unsigned numSymbols) {
  SmallVector<int64_t> coefficients(numDims + numSymbols, 0);
  std::function<bool(mlir::AffineExpr, int64_t)> walk = [&](mlir::AffineExpr e, int64_t k) {
    if (auto d = llvm::dyn_cast<mlir::AffineDimExpr>(e)) {
      coefficients[d.getPosition()] += k;
      return true;
    }
    if (auto s = llvm::dyn_cast<mlir::AffineSymbolExpr>(e)) {
      coefficients[numDims + s.getPosition()] += k;
      return true;
    }
    if (llvm::isa<mlir::AffineConstantExpr>(e)) return true;
    auto bin = llvm::dyn_cast<mlir::AffineBinaryOpExpr>(e);
    if (!bin) return false;
    if (e.getKind() == mlir::AffineExprKind::Add) {
      return walk(bin.getLHS(), k) && walk(bin.getRHS(), k);
    }
    if (e.getKind() == mlir::AffineExprKind::Mul) {
      if (auto c = llvm::dyn_cast<mlir::AffineConstantExpr>(bin.getRHS())) {
        return walk(bin.getLHS(), k * c.getValue());
      }
      if (auto c = llvm::dyn_cast<mlir::AffineConstantExpr>(bin.getLHS())) {
        return walk(bin.getRHS(), k * c.getValue());
      }
    }
    return false;
  };
  if (!walk(expr, 1)) return std::nullopt;
  return coefficients;
}

// Whether the loop's innermost range variable walks contiguous windows that
// do not overlap: the map's last (minor) result is linear, steps by 1 with
// it, and by 0 or at least its range with each dimension (a reduce-window
// of stride >= size: XLA:CPU's 1x32 windows of an integer row sum). A
// thread's window is then a contiguous walk while the threads of a warp are
// a window apart; overlapping windows (a cumsum's, stride 1) are read
// contiguously across the threads instead.
bool walksDisjointWindows(const IndexingMap& map) {
  const unsigned numDims = map.getNumDims(), numRange = map.getRangeVars().size();
  if (numRange == 0 || map.getAffineMap().getNumResults() == 0) return false;
  auto coefficients = linearCoefficients(map.getAffineMap().getResults().back(), numDims,
                                         map.getNumSymbols());
  if (!coefficients || (*coefficients)[numDims + numRange - 1] != 1) return false;
  const Interval window = map.getRangeVars()[numRange - 1].bounds;
  const int64_t size = window.upper - window.lower + 1;
  for (unsigned d = 0; d < numDims; ++d) {
    int64_t k = std::abs((*coefficients)[d]);
    if (k != 0 && k < size) return false;
  }
  return true;
}

struct LowerLoop : public mlir::OpRewritePattern<LoopOp> {
  LowerLoop(mlir::MLIRContext* context, bool boundInnermost)
      : OpRewritePattern(context), boundInnermost(boundInnermost) {}
  bool boundInnermost;

  mlir::LogicalResult matchAndRewrite(LoopOp loop,
                                      mlir::PatternRewriter& rewriter) const override {
    // 1. One scf.for per range variable, outermost first.
    // 2. In the innermost body: the bounds check of the dimensions and the
    //    constraints, then scf.if { apply_indexing per result; body } else
    //    { iter args }.
    const IndexingMap& map = loop.getIndexingMap();
    mlir::Location loc = loop.getLoc();
    SmallVector<Value> ivs;
    SmallVector<mlir::scf::ForOp> fors;
    SmallVector<Value> iterArgs(loop.getInits());
    SmallVector<Value> dims(loop.getDims());
    // With boundInnermost, the constraints rest + s in [lo, hi] on the
    // innermost range variable s become its loop's bounds:
    // s in [max(lb, lo - rest), min(ub, hi - rest)].
    const unsigned numRange = map.getRangeVars().size();
    llvm::SmallDenseSet<unsigned> asBounds;
    SmallVector<std::pair<mlir::AffineExpr, Interval>> bounds;
    bool scalarsOnly = llvm::all_of(loop.getInits().getTypes(), [](mlir::Type t) {
      return t.isIntOrIndexOrFloat();
    });
    if (boundInnermost && scalarsOnly && map.getRuntimeVars().empty() &&
        walksDisjointWindows(map)) {
      for (auto [k, constraint] : llvm::enumerate(map.getConstraints())) {
        auto [expr, interval] = constraint;
        if (!expr.isFunctionOfSymbol(numRange - 1) ||
            interval.lower == std::numeric_limits<int64_t>::min() ||
            interval.upper == std::numeric_limits<int64_t>::max()) {
          continue;
        }
        if (auto rest = restOfUnitTerm(expr, numRange - 1, map.getNumDims(),
                                       map.getNumSymbols())) {
          asBounds.insert(k);
          bounds.push_back({*rest, interval});
        }
      }
    }
    for (const IndexingVar& var : map.getRangeVars()) {
      Value lb = rewriter.create<mlir::arith::ConstantIndexOp>(loc, var.bounds.lower);
      Value ub = rewriter.create<mlir::arith::ConstantIndexOp>(loc, var.bounds.upper + 1);
      if (ivs.size() + 1 == numRange) {
        // The outer ivs and a 0 for the innermost (rest does not read it).
        SmallVector<Value> symbols(ivs);
        symbols.push_back(rewriter.create<mlir::arith::ConstantIndexOp>(loc, 0));
        for (auto& [rest, interval] : bounds) {
          Value r = applyExpr(rewriter, loc, map, rest, dims, symbols);
          Value lo = rewriter.create<mlir::arith::SubIOp>(
              loc, rewriter.create<mlir::arith::ConstantIndexOp>(loc, interval.lower), r);
          Value hi = rewriter.create<mlir::arith::SubIOp>(
              loc, rewriter.create<mlir::arith::ConstantIndexOp>(loc, interval.upper + 1), r);
          lb = rewriter.create<mlir::arith::MaxSIOp>(loc, lb, lo);
          ub = rewriter.create<mlir::arith::MinSIOp>(loc, ub, hi);
        }
      }
      Value step = rewriter.create<mlir::arith::ConstantIndexOp>(loc, 1);
      auto forOp = rewriter.create<mlir::scf::ForOp>(loc, lb, ub, step, iterArgs);
      if (!fors.empty()) rewriter.create<mlir::scf::YieldOp>(loc, forOp.getResults());
      rewriter.setInsertionPointToStart(forOp.getBody());
      ivs.push_back(forOp.getInductionVar());
      iterArgs.assign(forOp.getRegionIterArgs().begin(), forOp.getRegionIterArgs().end());
      fors.push_back(forOp);
    }
    Value inBounds;
    auto conjoin = [&](Value c) {
      inBounds = inBounds ? rewriter.create<mlir::arith::AndIOp>(loc, inBounds, c) : c;
    };
    for (auto [dim, var] : llvm::zip(dims, map.getDimVars())) {
      conjoin(inRange(rewriter, loc, dim, var.bounds));
    }
    for (auto [k, constraint] : llvm::enumerate(map.getConstraints())) {
      if (asBounds.contains(k)) continue;
      auto [expr, interval] = constraint;
      conjoin(inRange(rewriter, loc, applyExpr(rewriter, loc, map, expr, dims, ivs), interval));
    }
    if (!inBounds) inBounds = rewriter.create<mlir::arith::ConstantIntOp>(loc, 1, 1);
    mlir::TypeRange types = loop.getResultTypes();
    auto ifOp = rewriter.create<mlir::scf::IfOp>(loc, types, inBounds, /*withElse=*/true);
    {
      mlir::OpBuilder::InsertionGuard guard(rewriter);
      rewriter.setInsertionPointToStart(ifOp.thenBlock());
      mlir::IRMapping mapping;
      for (auto [arg, iv] : llvm::zip(loop.getInductionVars(), ivs)) mapping.map(arg, iv);
      for (auto [i, arg] : llvm::enumerate(loop.getIndexingMapResults())) {
        Value v = rewriter.create<ApplyIndexingOp>(loc, dims, ivs, singleResult(map, i))
                      .getResult(0);
        mapping.map(arg, v);
      }
      for (auto [arg, v] : llvm::zip(loop.getRegionIterArgs(), iterArgs)) mapping.map(arg, v);
      for (mlir::Operation& op : loop.getBody()->without_terminator()) {
        rewriter.clone(op, mapping);
      }
      auto yield = llvm::cast<YieldOp>(loop.getBody()->getTerminator());
      SmallVector<Value> yielded;
      for (Value v : yield.getResult()) yielded.push_back(mapping.lookupOrDefault(v));
      rewriter.create<mlir::scf::YieldOp>(loc, yielded);
      rewriter.setInsertionPointToStart(ifOp.elseBlock());
      rewriter.create<mlir::scf::YieldOp>(loc, iterArgs);
    }
    if (fors.empty()) {
      rewriter.replaceOp(loop, ifOp.getResults());
      return mlir::success();
    }
    rewriter.create<mlir::scf::YieldOp>(loc, ifOp.getResults());
    rewriter.replaceOp(loop, fors.front().getResults());
    return mlir::success();
  }
};

class LowerXlaGpuLoopsToScfPass
    : public impl::LowerXlaGpuLoopsToScfPassBase<LowerXlaGpuLoopsToScfPass> {
 public:
  using LowerXlaGpuLoopsToScfPassBase::LowerXlaGpuLoopsToScfPassBase;
  void runOnOperation() override {
    mlir::RewritePatternSet patterns(&getContext());
    patterns.add<LowerLoop>(&getContext(), boundInnermost);
    mlir::GreedyRewriteConfig config;
    config.enableFolding(false);
    if (mlir::failed(mlir::applyPatternsGreedily(getOperation(), std::move(patterns), config))) {
      signalPassFailure();
    }
  }
};

}  // namespace
}  // namespace xla::gpu
