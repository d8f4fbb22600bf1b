//===- peel_loops.cpp - -xla-gpu-peel-loops -------------------------------===//
//
// XLA's loop peeler. A constraint on a range variable (`s0 + d0 in [0, 9]`)
// is a condition the lowered loop tests on every iteration; often it can
// fail only on the variable's last value (the partial tile at an edge).
// Then the loop is split in two, chained through its iteration arguments:
// the main loop over all but the last value, where the constraint is
// implied by the ranges and simplification drops it, and a tail loop over
// the last value, which keeps it.
//
//   1. Simplify the loop's map.
//   2. From the last range variable to the first, while the loops made so
//      far stay small (the product of the trip counts below 64, XLA's
//      limit: peeling more would blow up the code): if the variable is in
//      a constraint and has more than one value, split the current main
//      map into main (upper bound - 1) and tail (lower bound = upper
//      bound); keep the split only if the main map no longer constrains
//      the variable.
//   3. Emit the main loop first, then each tail loop (tails known empty
//      skipped), each cloning the original body, each starting from the
//      previous one's results.
//
//===----------------------------------------------------------------------===//

#include "dialects/xla_gpu/XlaGpuDialect.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "passes/Passes.h"

namespace xla::gpu {

#define GEN_PASS_DEF_PEELLOOPSPASS
#include "passes/Passes.h.inc"

namespace {

// XLA's limit on the trip count of the peeled loop nest.
constexpr int64_t kMaxPeeledLoopSize = 64;

bool isRangeVarConstrained(const IndexingMap& map, unsigned index) {
  unsigned symbol = index;  // range variables are the first symbols
  for (const auto& [expr, interval] : map.getConstraints()) {
    if (expr.isFunctionOfSymbol(symbol)) return true;
  }
  return false;
}

// Whether range variable `index` steps through a thread's contiguous
// elements: some result adds it with a coefficient of 1 (`th_x * 4 + s1`:
// a thread's vector, the loop emitter's unroll) or takes it through a
// division or modulo (not known, so taken as such). A variable every
// result scales (`th_x + s0 * 32`: a warp's steps along a row, with
// vectors of 1) does not.
bool stepsContiguously(const IndexingMap& map, unsigned index) {
  // Range variables are the first symbols.
  mlir::AffineExpr symbol = mlir::getAffineSymbolExpr(index, map.getContext());
  // Whether `e` holds the symbol only in sums and products by constants.
  std::function<bool(mlir::AffineExpr)> linear = [&](mlir::AffineExpr e) -> bool {
    auto binary = mlir::dyn_cast<mlir::AffineBinaryOpExpr>(e);
    if (!binary || !binary.isFunctionOfSymbol(index)) return true;
    if (binary.getKind() == mlir::AffineExprKind::Add) {
      return linear(binary.getLHS()) && linear(binary.getRHS());
    }
    return binary.getKind() == mlir::AffineExprKind::Mul &&
           mlir::isa<mlir::AffineConstantExpr>(binary.getRHS()) && linear(binary.getLHS());
  };
  // Whether a term of the sum `e` is the symbol itself.
  std::function<bool(mlir::AffineExpr)> addsItself = [&](mlir::AffineExpr e) -> bool {
    if (e == symbol) return true;
    auto binary = mlir::dyn_cast<mlir::AffineBinaryOpExpr>(e);
    return binary && binary.getKind() == mlir::AffineExprKind::Add &&
           (addsItself(binary.getLHS()) || addsItself(binary.getRHS()));
  };
  return llvm::any_of(map.getAffineMap().getResults(), [&](mlir::AffineExpr result) {
    return !linear(result) || addsItself(result);
  });
}

// The map with range variable `index` bounded by `bounds`, simplified.
IndexingMap withRangeBounds(const IndexingMap& map, unsigned index, Interval bounds) {
  llvm::SmallVector<IndexingVar> range(map.getRangeVars().begin(), map.getRangeVars().end());
  range[index].bounds = bounds;
  return IndexingMap(map.getAffineMap(),
                     llvm::SmallVector<IndexingVar>(map.getDimVars().begin(),
                                                    map.getDimVars().end()),
                     std::move(range),
                     llvm::SmallVector<IndexingVar>(map.getRuntimeVars().begin(),
                                                    map.getRuntimeVars().end()),
                     llvm::SmallVector<IndexingMap::Constraint>(map.getConstraints().begin(),
                                                                map.getConstraints().end()))
      .simplify();
}

struct PeelLoop : public mlir::OpRewritePattern<LoopOp> {
  PeelLoop(mlir::MLIRContext* context, bool peelInnermost, bool accumulationsOnly)
      : OpRewritePattern(context),
        peelInnermost(peelInnermost),
        accumulationsOnly(accumulationsOnly) {}
  bool peelInnermost;
  bool accumulationsOnly;

  mlir::LogicalResult matchAndRewrite(LoopOp loop,
                                      mlir::PatternRewriter& rewriter) const override {
    if (accumulationsOnly && llvm::all_of(loop.getInits().getTypes(), [](mlir::Type t) {
          return llvm::isa<mlir::RankedTensorType>(t);
        })) {
      return rewriter.notifyMatchFailure(loop, "carries no accumulator");
    }
    // 1.-2. The main map last, the tails before it.
    llvm::SmallVector<IndexingMap, 4> maps{loop.getIndexingMap().simplify()};
    int64_t loop_size = 1;
    const int last = static_cast<int>(maps.front().getNumRangeVars()) - 1;
    for (int index = last; index >= 0 && loop_size < kMaxPeeledLoopSize; --index) {
      const IndexingMap main = maps.back();
      Interval bounds = main.getRangeVars()[index].bounds;
      loop_size *= bounds.upper - bounds.lower + 1;
      if (index == last && !peelInnermost && stepsContiguously(main, index)) continue;
      if (bounds.isPoint() || !isRangeVarConstrained(main, index)) continue;
      IndexingMap peeled = withRangeBounds(main, index, {bounds.lower, bounds.upper - 1});
      if (isRangeVarConstrained(peeled, index)) continue;  // peeling does not help
      IndexingMap tail = withRangeBounds(main, index, {bounds.upper, bounds.upper});
      maps.back() = tail;
      maps.push_back(peeled);
    }
    if (maps.size() == 1) return rewriter.notifyMatchFailure(loop, "no range variable to peel");

    // 3.
    mlir::ValueRange inits = loop.getInits();
    llvm::SmallVector<mlir::Value> results(inits.begin(), inits.end());
    for (const IndexingMap& map : llvm::reverse(maps)) {
      if (map.isKnownEmpty()) continue;
      auto peeled = rewriter.create<LoopOp>(
          loop.getLoc(), IndexingMapAttr::get(rewriter.getContext(), map), loop.getDims(),
          results);
      mlir::IRMapping mapping;
      mlir::Block* body = peeled.getBody();
      mapping.map(loop.getBody()->getArguments(), body->getArguments());
      mlir::OpBuilder b = mlir::OpBuilder::atBlockEnd(body);
      for (mlir::Operation& op : loop.getBody()->getOperations()) b.clone(op, mapping);
      results.assign(peeled->getResults().begin(), peeled->getResults().end());
    }
    rewriter.replaceOp(loop, results);
    return mlir::success();
  }
};

class PeelLoopsPass : public impl::PeelLoopsPassBase<PeelLoopsPass> {
 public:
  using PeelLoopsPassBase::PeelLoopsPassBase;
  void runOnOperation() override {
    // One walk, not a greedy fixpoint: the loops made here must not be
    // peeled again.
    llvm::SmallVector<LoopOp> loops;
    getOperation().walk([&](LoopOp loop) { loops.push_back(loop); });
    mlir::PatternRewriter rewriter(&getContext());
    PeelLoop pattern(&getContext(), peelInnermost, accumulationsOnly);
    for (LoopOp loop : loops) {
      rewriter.setInsertionPoint(loop);
      (void)pattern.matchAndRewrite(loop, rewriter);
    }
  }
};

}  // namespace
}  // namespace xla::gpu
