//===- lower_xla_gpu_to_scf.cpp - -xla-gpu-lower-xla-gpu-to-scf -----------===//

#include "dialects/xla_gpu/XlaGpuDialect.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
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

  // gpu.shuffle moves 32- or 64-bit values; narrower ones travel in an i32.
  Value shuffleDown(mlir::OpBuilder& b, mlir::Location loc, Value v, int64_t distance) const {
    mlir::Type type = v.getType();
    unsigned bits = type.getIntOrFloatBitWidth();
    Value offset = b.create<mlir::arith::ConstantIntOp>(loc, distance, 32);
    Value width = b.create<mlir::arith::ConstantIntOp>(loc, warpSize, 32);
    if (bits == 32 || bits == 64) {
      return b.create<mlir::gpu::ShuffleOp>(loc, v, offset, width,
                                            mlir::gpu::ShuffleMode::DOWN)
          .getShuffleResult();
    }
    mlir::Type intType = b.getIntegerType(bits);
    Value asInt = type.isInteger() ? v : b.create<mlir::arith::BitcastOp>(loc, intType, v);
    Value wide = b.create<mlir::arith::ExtUIOp>(loc, b.getI32Type(), asInt);
    Value moved = b.create<mlir::gpu::ShuffleOp>(loc, wide, offset, width,
                                                 mlir::gpu::ShuffleMode::DOWN)
                      .getShuffleResult();
    Value narrow = b.create<mlir::arith::TruncIOp>(loc, intType, moved);
    return type.isInteger() ? narrow : b.create<mlir::arith::BitcastOp>(loc, type, narrow);
  }

  mlir::LogicalResult matchAndRewrite(ShuffleReduceOp op,
                                      mlir::PatternRewriter& rewriter) const override {
    for (mlir::Type t : op.getOperandTypes()) {
      if (!t.isIntOrFloat() || t.getIntOrFloatBitWidth() > 64) {
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

class LowerXlaGpuToScfPass : public impl::LowerXlaGpuToScfPassBase<LowerXlaGpuToScfPass> {
 public:
  using LowerXlaGpuToScfPassBase::LowerXlaGpuToScfPassBase;

  void runOnOperation() override {
    if (warpSize <= 0 || (warpSize & (warpSize - 1)) != 0) {
      getOperation().emitError() << "warp_size must be a power of two, got " << warpSize;
      return signalPassFailure();
    }
    mlir::MLIRContext* ctx = &getContext();
    mlir::RewritePatternSet patterns(ctx);
    patterns.add<LowerPredicatedInsert, LowerPredicatedExtract>(ctx);
    patterns.add<LowerShuffleReduce>(ctx, warpSize);
    bool failedOp = false;
    if (mlir::failed(mlir::applyPatternsGreedily(getOperation(), std::move(patterns)))) {
      failedOp = true;
    }
    getOperation().walk([&](ShuffleReduceOp op) { failedOp = true; });
    if (failedOp) signalPassFailure();
  }
};

}  // namespace
}  // namespace xla::gpu
