//===- lower_xla_gpu_to_scf.cpp - -xla-gpu-lower-xla-gpu-to-scf -----------===//

#include "dialects/xla_gpu/XlaGpuDialect.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Complex/IR/Complex.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/SCF/Utils/Utils.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
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
      // XLA calls the combiner with a pure call (the inliner after this
      // pass folds it in).
      values = rewriter.create<PureCallOp>(op.getLoc(), func, args).getResults();
    }
    rewriter.replaceOp(op, values);
    return mlir::success();
  }

  int64_t warpSize;
};

// materialize, as XLA lowers it: an xla_gpu.loop over its map that calls
// the callee for every element (with the inputs and the map's results) and
// puts the value into a vector at the element's position, the loop's
// induction variables. The vector stands for the indexed vector (an
// unrealized_conversion_cast between them) until the insert that consumes
// it is lowered; -xla-gpu-fuse-loops then makes the two loops one.
struct LowerMaterialize : public mlir::OpRewritePattern<MaterializeOp> {
  using OpRewritePattern::OpRewritePattern;
  mlir::LogicalResult matchAndRewrite(MaterializeOp op,
                                      mlir::PatternRewriter& rewriter) const override {
    auto type = llvm::cast<IndexedVectorType>(op.getType());
    auto vectorType = mlir::VectorType::get(type.getShape(), type.getElementType());
    const IndexingMap& map = op.getMap().getIndexingMap();
    if (map.getNumRangeVars() != type.getShape().size()) {
      return op.emitOpError() << "can only be lowered with one range variable per dimension "
                                 "of the indexed vector";
    }
    for (auto [var, size] : llvm::zip(map.getRangeVars(), type.getShape())) {
      if (var.bounds.lower < 0 || var.bounds.upper >= size) {
        return op.emitOpError() << "range variable " << var.name << " in ["
                                << var.bounds.lower << ", " << var.bounds.upper
                                << "] is not a position in the indexed vector of shape "
                                << vectorType;
      }
    }
    auto callee = mlir::SymbolTable::lookupNearestSymbolFrom<mlir::func::FuncOp>(
        op, op.getCalleeAttr());
    if (!callee) return rewriter.notifyMatchFailure(op, "callee not found");
    auto zero = llvm::dyn_cast_or_null<mlir::TypedAttr>(rewriter.getZeroAttr(vectorType));
    if (!zero) {
      return op.emitOpError() << "cannot build a vector of " << type.getElementType();
    }
    mlir::Location loc = op.getLoc();
    Value init = rewriter.create<mlir::arith::ConstantOp>(loc, zero);
    auto loop = rewriter.create<LoopOp>(loc, op.getMap(), op.getIndices(), mlir::ValueRange{init});
    {
      mlir::OpBuilder::InsertionGuard guard(rewriter);
      rewriter.setInsertionPointToStart(loop.getBody());
      SmallVector<Value> args(op.getInput());
      llvm::append_range(args, loop.getIndexingMapResults());
      Value v = rewriter.create<PureCallOp>(loc, callee, args).getResult(0);
      SmallVector<mlir::OpFoldResult> position(loop.getInductionVars());
      Value updated = rewriter.create<mlir::vector::InsertOp>(
          loc, v, loop.getRegionIterArgs()[0], position);
      rewriter.create<YieldOp>(loc, updated);
    }
    rewriter.replaceOpWithNewOp<mlir::UnrealizedConversionCastOp>(op, type, loop.getResults());
    return mlir::success();
  }
};

// insert, as XLA lowers it: an xla_gpu.loop over the source's map (the
// indexed vector's) that takes each element from the vector at its
// position and writes it to the destination at the insert's map of the
// source map's results.
struct LowerInsert : public mlir::OpRewritePattern<InsertOp> {
  using OpRewritePattern::OpRewritePattern;
  mlir::LogicalResult matchAndRewrite(InsertOp op,
                                      mlir::PatternRewriter& rewriter) const override {
    if (op.getSource().getDefiningOp<MaterializeOp>()) {
      return rewriter.notifyMatchFailure(op, "the materialize is lowered first");
    }
    auto cast = op.getSource().getDefiningOp<mlir::UnrealizedConversionCastOp>();
    if (!cast || cast.getInputs().size() != 1 ||
        !llvm::isa<mlir::VectorType>(cast.getInputs()[0].getType())) {
      return op.emitOpError() << "can only be lowered with the xla_gpu.materialize "
                                 "that produces its source";
    }
    Value vector = cast.getInputs()[0];
    auto type = llvm::cast<IndexedVectorType>(op.getSource().getType());
    mlir::Location loc = op.getLoc();
    auto loop = rewriter.create<LoopOp>(loc, type.getIndexingMapAttr(), op.getIndices(),
                                        mlir::ValueRange{op.getDest()});
    {
      mlir::OpBuilder::InsertionGuard guard(rewriter);
      rewriter.setInsertionPointToStart(loop.getBody());
      SmallVector<mlir::OpFoldResult> position(loop.getInductionVars());
      Value element = rewriter.create<mlir::vector::ExtractOp>(loc, vector, position);
      auto indices = rewriter.create<ApplyIndexingOp>(
          loc, loop.getIndexingMapResults(), mlir::ValueRange{}, op.getMap());
      Value updated = rewriter.create<mlir::tensor::InsertOp>(
          loc, element, loop.getRegionIterArgs()[0], indices->getResults());
      rewriter.create<YieldOp>(loc, updated);
    }
    rewriter.replaceOp(op, loop.getResults());
    if (cast->use_empty()) rewriter.eraseOp(cast);
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
    patterns.add<LowerPredicatedInsert, LowerPredicatedExtract, LowerMaterialize, LowerInsert,
                 LowerReduce>(ctx);
    patterns.add<LowerShuffleReduce>(ctx, warpSize);
    bool failedOp = false;
    if (mlir::failed(mlir::applyPatternsGreedily(getOperation(), std::move(patterns)))) {
      getOperation().emitError() << "lowering xla_gpu ops to scf did not converge";
      failedOp = true;
    }
    // Whatever is left could not be lowered. The patterns say why for
    // inserts, shuffles and reductions; an indexed vector that no insert
    // consumed is still a cast, which nothing after this pass lowers.
    getOperation().walk([&](mlir::Operation* op) {
      auto cast = llvm::dyn_cast<mlir::UnrealizedConversionCastOp>(op);
      if (cast && cast->getNumResults() == 1 &&
          llvm::isa<IndexedVectorType>(cast->getResult(0).getType())) {
        op->emitError() << "the indexed vector of this xla_gpu.materialize is used by "
                           "something other than an xla_gpu.insert; it cannot be lowered";
        failedOp = true;
      }
      if (llvm::isa<ShuffleReduceOp, MaterializeOp, InsertOp, ReduceOp>(op)) failedOp = true;
    });
    if (failedOp) signalPassFailure();
  }
};

}  // namespace
}  // namespace xla::gpu
