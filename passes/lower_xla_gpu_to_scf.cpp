//===- lower_xla_gpu_to_scf.cpp - -xla-gpu-lower-xla-gpu-to-scf -----------===//

#include "dialects/xla_gpu/XlaGpuDialect.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Complex/IR/Complex.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/SCF/Utils/Utils.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "passes/Passes.h"

namespace xla::gpu {

#define GEN_PASS_DEF_LOWERXLAGPUTOSCFPASS
#include "passes/Passes.h.inc"

namespace {

using llvm::SmallVector;
using mlir::Value;

struct LowerPredicatedInsert : public mlir::OpRewritePattern<PredicatedInsertOp> {
  using OpRewritePattern::OpRewritePattern;
  mlir::LogicalResult matchAndRewrite(PredicatedInsertOp op,
                                      mlir::PatternRewriter& rewriter) const override {
    auto ifOp = rewriter.create<mlir::scf::IfOp>(
        op.getLoc(), op.getCondition(),
        [&](mlir::OpBuilder& b, mlir::Location loc) {
          Value r = b.create<mlir::tensor::InsertOp>(loc, op.getValue(), op.getDest(),
                                                     op.getIndices());
          b.create<mlir::scf::YieldOp>(loc, r);
        },
        [&](mlir::OpBuilder& b, mlir::Location loc) {
          b.create<mlir::scf::YieldOp>(loc, op.getDest());
        });
    rewriter.replaceOp(op, ifOp.getResults());
    return mlir::success();
  }
};

struct LowerPredicatedExtract : public mlir::OpRewritePattern<PredicatedExtractOp> {
  using OpRewritePattern::OpRewritePattern;
  mlir::LogicalResult matchAndRewrite(PredicatedExtractOp op,
                                      mlir::PatternRewriter& rewriter) const override {
    auto ifOp = rewriter.create<mlir::scf::IfOp>(
        op.getLoc(), op.getCondition(),
        [&](mlir::OpBuilder& b, mlir::Location loc) {
          Value r = b.create<mlir::tensor::ExtractOp>(loc, op.getSrc(), op.getIndices());
          b.create<mlir::scf::YieldOp>(loc, r);
        },
        [&](mlir::OpBuilder& b, mlir::Location loc) {
          b.create<mlir::scf::YieldOp>(loc, op.getFallback());
        });
    rewriter.replaceOp(op, ifOp.getResults());
    return mlir::success();
  }
};

// A butterfly over the warp: distance max, max/2, ..., 1; each step shuffles
// every value down by the distance and combines it with the lane's own.
struct LowerShuffleReduce : public mlir::OpRewritePattern<ShuffleReduceOp> {
  LowerShuffleReduce(mlir::MLIRContext* ctx, int64_t warpSize)
      : OpRewritePattern(ctx), warpSize(warpSize) {}

  // NVVM shuffles 32-bit registers (XLA's lowering does the same): a
  // narrower value travels zero-extended in an i32, a 64-bit one as two
  // i32 halves, a complex value part by part.
  Value shuffle32(mlir::OpBuilder& b, mlir::Location loc, Value v, int64_t distance) const {
    Value offset = b.create<mlir::arith::ConstantIntOp>(loc, distance, 32);
    Value width = b.create<mlir::arith::ConstantIntOp>(loc, warpSize, 32);
    return b.create<mlir::gpu::ShuffleOp>(loc, v, offset, width, mlir::gpu::ShuffleMode::DOWN)
        .getShuffleResult();
  }

  Value shuffleDown(mlir::OpBuilder& b, mlir::Location loc, Value v, int64_t distance) const {
    mlir::Type type = v.getType();
    if (auto complex = llvm::dyn_cast<mlir::ComplexType>(type)) {
      Value re = shuffleDown(b, loc, b.create<mlir::complex::ReOp>(loc, v), distance);
      Value im = shuffleDown(b, loc, b.create<mlir::complex::ImOp>(loc, v), distance);
      return b.create<mlir::complex::CreateOp>(loc, complex, re, im);
    }
    unsigned bits = type.getIntOrFloatBitWidth();
    if (bits == 32) return shuffle32(b, loc, v, distance);
    mlir::Type intType = b.getIntegerType(bits);
    Value asInt = type.isInteger() ? v : b.create<mlir::arith::BitcastOp>(loc, intType, v);
    Value moved;
    if (bits == 64) {
      Value c32 = b.create<mlir::arith::ConstantIntOp>(loc, 32, 64);
      Value lo = b.create<mlir::arith::TruncIOp>(loc, b.getI32Type(), asInt);
      Value hi = b.create<mlir::arith::TruncIOp>(
          loc, b.getI32Type(), b.create<mlir::arith::ShRUIOp>(loc, asInt, c32));
      Value lo2 = b.create<mlir::arith::ExtUIOp>(loc, intType, shuffle32(b, loc, lo, distance));
      Value hi2 = b.create<mlir::arith::ExtUIOp>(loc, intType, shuffle32(b, loc, hi, distance));
      moved = b.create<mlir::arith::OrIOp>(loc, lo2,
                                           b.create<mlir::arith::ShLIOp>(loc, hi2, c32));
    } else {
      Value wide = b.create<mlir::arith::ExtUIOp>(loc, b.getI32Type(), asInt);
      moved = b.create<mlir::arith::TruncIOp>(loc, intType, shuffle32(b, loc, wide, distance));
    }
    return type.isInteger() ? moved : b.create<mlir::arith::BitcastOp>(loc, type, moved);
  }

  static bool isShuffled(mlir::Type t) {
    if (auto complex = llvm::dyn_cast<mlir::ComplexType>(t)) t = complex.getElementType();
    return t.isIntOrFloat() && t.getIntOrFloatBitWidth() <= 64;
  }

  mlir::LogicalResult matchAndRewrite(ShuffleReduceOp op,
                                      mlir::PatternRewriter& rewriter) const override {
    for (mlir::Type t : op.getOperandTypes()) {
      if (!isShuffled(t)) {
        return op.emitOpError() << "cannot shuffle values of type " << t;
      }
    }
    if (op.getMaxDistance() * 2 > warpSize) {
      return op.emitOpError() << "max_distance " << op.getMaxDistance()
                              << " does not fit a warp of " << warpSize << " lanes";
    }
    auto func = mlir::SymbolTable::lookupNearestSymbolFrom<mlir::func::FuncOp>(
        op, op.getCombinerAttr());
    if (!func) return rewriter.notifyMatchFailure(op, "combiner not found");
    SmallVector<Value> values(op.getOperands());
    for (int64_t d = op.getMaxDistance(); d >= 1; d /= 2) {
      SmallVector<Value> args(values);
      for (Value v : values) args.push_back(shuffleDown(rewriter, op.getLoc(), v, d));
      values = rewriter.create<mlir::func::CallOp>(op.getLoc(), func, args).getResults();
    }
    rewriter.replaceOp(op, values);
    return mlir::success();
  }

  int64_t warpSize;
};

// materialize + insert: every element of the indexed vector is computed by
// the callee and written to the destination, so the pair becomes one
// xla_gpu.loop over the vector's symbols (with the insert's map, whose
// domain and constraints decide which elements exist).
struct LowerMaterializeInsert : public mlir::OpRewritePattern<InsertOp> {
  using OpRewritePattern::OpRewritePattern;
  mlir::LogicalResult matchAndRewrite(InsertOp insert,
                                      mlir::PatternRewriter& rewriter) const override {
    auto materialize = insert.getSource().getDefiningOp<MaterializeOp>();
    if (!materialize) {
      return insert.emitOpError() << "can only be lowered with the xla_gpu.materialize "
                                     "that produces its source";
    }
    if (!materialize->hasOneUse()) {
      return materialize.emitOpError() << "can only be lowered when its one user is an "
                                          "xla_gpu.insert";
    }
    const IndexingMap& read = materialize.getMap().getIndexingMap();
    const IndexingMap& write = insert.getMap().getIndexingMap();
    if (!read.getConstraints().empty() || read.getNumRuntimeVars() != 0 ||
        write.getNumRuntimeVars() != 0 ||
        read.getNumRangeVars() != write.getNumRangeVars()) {
      return materialize.emitOpError()
             << "lowering needs maps with the same range variables, no runtime "
                "variables, and no constraints on the read map";
    }
    auto callee = mlir::SymbolTable::lookupNearestSymbolFrom<mlir::func::FuncOp>(
        materialize, materialize.getCalleeAttr());
    if (!callee) return rewriter.notifyMatchFailure(insert, "callee not found");
    auto loop = rewriter.create<LoopOp>(insert.getLoc(), insert.getMap(), insert.getIndices(),
                                        mlir::ValueRange{insert.getDest()});
    {
      mlir::OpBuilder::InsertionGuard guard(rewriter);
      rewriter.setInsertionPointToStart(loop.getBody());
      SmallVector<Value> symbols(loop.getInductionVars());
      auto indices = rewriter.create<ApplyIndexingOp>(
          insert.getLoc(), materialize.getIndices(), symbols, materialize.getMap());
      SmallVector<Value> args(materialize.getInput());
      args.append(indices->result_begin(), indices->result_end());
      Value v = rewriter.create<PureCallOp>(insert.getLoc(), callee, args).getResult(0);
      Value updated = rewriter.create<mlir::tensor::InsertOp>(
          insert.getLoc(), v, loop.getRegionIterArgs()[0], loop.getIndexingMapResults());
      rewriter.create<YieldOp>(insert.getLoc(), updated);
    }
    rewriter.replaceOp(insert, loop.getResults());
    rewriter.eraseOp(materialize);
    return mlir::success();
  }
};

// reduce: a loop nest over the output, and inside it one over the reduced
// dimensions that folds the elements with the combiner, starting at the inits.
struct LowerReduce : public mlir::OpRewritePattern<ReduceOp> {
  using OpRewritePattern::OpRewritePattern;
  mlir::LogicalResult matchAndRewrite(ReduceOp op,
                                      mlir::PatternRewriter& rewriter) const override {
    auto combiner = mlir::SymbolTable::lookupNearestSymbolFrom<mlir::func::FuncOp>(
        op, op.getCombinerAttr());
    if (!combiner) return rewriter.notifyMatchFailure(op, "combiner not found");
    mlir::Location loc = op.getLoc();
    auto inType = llvm::cast<mlir::RankedTensorType>(op.getInputs()[0].getType());
    llvm::ArrayRef<int64_t> reduced = op.getDimensions();
    auto index = [&](int64_t v) -> Value {
      return rewriter.create<mlir::arith::ConstantIndexOp>(loc, v);
    };
    SmallVector<Value> outLbs, outUbs, outSteps, redLbs, redUbs, redSteps;
    for (int64_t d = 0; d < inType.getRank(); ++d) {
      bool isReduced = llvm::is_contained(reduced, d);
      (isReduced ? redLbs : outLbs).push_back(index(0));
      (isReduced ? redUbs : outUbs).push_back(index(inType.getDimSize(d)));
      (isReduced ? redSteps : outSteps).push_back(index(1));
    }
    SmallVector<Value> empties;
    for (mlir::Type t : op.getResultTypes()) {
      auto rt = llvm::cast<mlir::RankedTensorType>(t);
      empties.push_back(
          rewriter.create<mlir::tensor::EmptyOp>(loc, rt.getShape(), rt.getElementType()));
    }
    auto nest = mlir::scf::buildLoopNest(
        rewriter, loc, outLbs, outUbs, outSteps, empties,
        [&](mlir::OpBuilder& b, mlir::Location l, mlir::ValueRange outIvs,
            mlir::ValueRange results) -> mlir::scf::ValueVector {
          auto inner = mlir::scf::buildLoopNest(
              b, l, redLbs, redUbs, redSteps, op.getInits(),
              [&](mlir::OpBuilder& b2, mlir::Location l2, mlir::ValueRange redIvs,
                  mlir::ValueRange accs) -> mlir::scf::ValueVector {
                SmallVector<Value> full;
                unsigned o = 0, r = 0;
                for (int64_t d = 0; d < inType.getRank(); ++d) {
                  full.push_back(llvm::is_contained(reduced, d) ? redIvs[r++] : outIvs[o++]);
                }
                SmallVector<Value> args(accs);
                for (Value in : op.getInputs()) {
                  args.push_back(b2.create<mlir::tensor::ExtractOp>(l2, in, full));
                }
                auto call = b2.create<mlir::func::CallOp>(l2, combiner, args);
                return mlir::scf::ValueVector(call.getResults());
              });
          mlir::scf::ValueVector updated;
          for (auto [acc, res] : llvm::zip(inner.results, results)) {
            updated.push_back(b.create<mlir::tensor::InsertOp>(l, acc, res, outIvs));
          }
          return updated;
        });
    rewriter.replaceOp(op, nest.results);
    return mlir::success();
  }
};

class LowerXlaGpuToScfPass : public impl::LowerXlaGpuToScfPassBase<LowerXlaGpuToScfPass> {
 public:
  using LowerXlaGpuToScfPassBase::LowerXlaGpuToScfPassBase;

  void runOnOperation() override {
    if (warpSize <= 0 || (warpSize & (warpSize - 1)) != 0) {
      getOperation().emitError() << "warp_size must be a power of two, got "
                                 << static_cast<int64_t>(warpSize);
      return signalPassFailure();
    }
    mlir::MLIRContext* ctx = &getContext();
    mlir::RewritePatternSet patterns(ctx);
    patterns.add<LowerPredicatedInsert, LowerPredicatedExtract, LowerMaterializeInsert,
                 LowerReduce>(ctx);
    patterns.add<LowerShuffleReduce>(ctx, warpSize);
    bool failedOp = false;
    if (mlir::failed(mlir::applyPatternsGreedily(getOperation(), std::move(patterns)))) {
      getOperation().emitError() << "lowering xla_gpu ops to scf did not converge";
      failedOp = true;
    }
    // Whatever is left could not be lowered. The patterns say why for
    // inserts, shuffles and reductions; a materialize without its insert
    // has no pattern to say it (the pass used to fail silently).
    getOperation().walk([&](mlir::Operation* op) {
      if (llvm::isa<MaterializeOp>(op)) {
        op->emitOpError() << "is lowered only together with the xla_gpu.insert that "
                             "consumes it, and has none";
      }
      if (llvm::isa<ShuffleReduceOp, MaterializeOp, InsertOp, ReduceOp>(op)) failedOp = true;
    });
    if (failedOp) signalPassFailure();
  }
};

}  // namespace
}  // namespace xla::gpu
