//===- lower_xla_gpu_loops_to_scf.cpp - -xla-gpu-lower-xla-gpu-loops-to-scf -===//

#include "dialects/xla_gpu/XlaGpuDialect.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
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

struct LowerLoop : public mlir::OpRewritePattern<LoopOp> {
  using OpRewritePattern::OpRewritePattern;

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
    for (const IndexingVar& var : map.getRangeVars()) {
      Value lb = rewriter.create<mlir::arith::ConstantIndexOp>(loc, var.bounds.lower);
      Value ub = rewriter.create<mlir::arith::ConstantIndexOp>(loc, var.bounds.upper + 1);
      Value step = rewriter.create<mlir::arith::ConstantIndexOp>(loc, 1);
      auto forOp = rewriter.create<mlir::scf::ForOp>(loc, lb, ub, step, iterArgs);
      if (!fors.empty()) rewriter.create<mlir::scf::YieldOp>(loc, forOp.getResults());
      rewriter.setInsertionPointToStart(forOp.getBody());
      ivs.push_back(forOp.getInductionVar());
      iterArgs.assign(forOp.getRegionIterArgs().begin(), forOp.getRegionIterArgs().end());
      fors.push_back(forOp);
    }
    SmallVector<Value> dims(loop.getDims());
    Value inBounds;
    auto conjoin = [&](Value c) {
      inBounds = inBounds ? rewriter.create<mlir::arith::AndIOp>(loc, inBounds, c) : c;
    };
    for (auto [dim, var] : llvm::zip(dims, map.getDimVars())) {
      conjoin(inRange(rewriter, loc, dim, var.bounds));
    }
    for (const auto& [expr, interval] : map.getConstraints()) {
      mlir::AffineMap affine = mlir::AffineMap::get(map.getNumDims(), map.getNumSymbols(),
                                                    expr, loop.getContext());
      IndexingMap constraintMap(affine, llvm::to_vector(map.getDimVars()),
                                llvm::to_vector(map.getRangeVars()), {});
      Value v = rewriter.create<ApplyIndexingOp>(
          loc, dims, ivs, IndexingMapAttr::get(loop.getContext(), constraintMap)).getResult(0);
      conjoin(inRange(rewriter, loc, v, interval));
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
  void runOnOperation() override {
    mlir::RewritePatternSet patterns(&getContext());
    patterns.add<LowerLoop>(&getContext());
    mlir::GreedyRewriteConfig config;
    config.enableFolding(false);
    if (mlir::failed(mlir::applyPatternsGreedily(getOperation(), std::move(patterns), config))) {
      signalPassFailure();
    }
  }
};

}  // namespace
}  // namespace xla::gpu
