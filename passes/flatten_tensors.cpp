//===- flatten_tensors.cpp - -xla-gpu-flatten-tensors ---------------------===//

#include "dialects/xla_gpu/XlaGpuDialect.h"
#include "llvm/Support/MathExtras.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Func/Transforms/FuncConversions.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/SCF/Transforms/Patterns.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Transforms/DialectConversion.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "passes/Passes.h"

namespace xla::gpu {

#define GEN_PASS_DEF_FLATTENTENSORSPASS
#include "passes/Passes.h.inc"

namespace {

using llvm::SmallVector;
using mlir::Value;

// Statically shaped tensors of rank != 1 need flattening.
bool needsFlattening(mlir::Type type) {
  auto t = llvm::dyn_cast<mlir::RankedTensorType>(type);
  return t && t.hasStaticShape() && t.getRank() != 1;
}

// Whether a static tensor's element count overflows 64 bits (flattening
// would wrap it, e.g. to 0 elements).
bool elementCountOverflows(mlir::Type type) {
  auto t = llvm::dyn_cast<mlir::RankedTensorType>(type);
  if (!t || !t.hasStaticShape()) return false;
  int64_t n = 1;
  for (int64_t d : t.getShape()) {
    if (llvm::MulOverflow(n, d, n)) return true;
  }
  return false;
}

class FlattenTypeConverter : public mlir::TypeConverter {
 public:
  FlattenTypeConverter() {
    addConversion([](mlir::Type t) { return t; });
    addConversion([](mlir::RankedTensorType t) -> mlir::Type {
      if (!t.hasStaticShape()) return t;
      return mlir::RankedTensorType::get({t.getNumElements()}, t.getElementType());
    });
  }
};

// The row-major linear index of `indices` in `type`, as an apply_indexing.
Value linearize(mlir::OpBuilder& b, mlir::Location loc, mlir::RankedTensorType type,
                mlir::ValueRange indices) {
  mlir::MLIRContext* ctx = b.getContext();
  mlir::AffineExpr linear = b.getAffineConstantExpr(0);
  SmallVector<IndexingVar> dims;
  for (auto [i, size] : llvm::enumerate(type.getShape())) {
    linear = linear * size + b.getAffineDimExpr(i);
    dims.push_back({"", {0, size - 1}});
  }
  auto map = mlir::AffineMap::get(dims.size(), 0, linear, ctx);
  IndexingMap indexing(map, dims, {}, {});
  return b.create<ApplyIndexingOp>(loc, indices, mlir::ValueRange{},
                                   IndexingMapAttr::get(ctx, indexing.simplify()))
      .getResult(0);
}

struct FlattenExtract : public mlir::OpConversionPattern<mlir::tensor::ExtractOp> {
  using OpConversionPattern::OpConversionPattern;
  mlir::LogicalResult matchAndRewrite(mlir::tensor::ExtractOp op, OpAdaptor adaptor,
                                      mlir::ConversionPatternRewriter& rewriter) const override {
    auto type = op.getTensor().getType();
    Value index = linearize(rewriter, op.getLoc(), type, adaptor.getIndices());
    rewriter.replaceOpWithNewOp<mlir::tensor::ExtractOp>(op, adaptor.getTensor(), index);
    return mlir::success();
  }
};

struct FlattenInsert : public mlir::OpConversionPattern<mlir::tensor::InsertOp> {
  using OpConversionPattern::OpConversionPattern;
  mlir::LogicalResult matchAndRewrite(mlir::tensor::InsertOp op, OpAdaptor adaptor,
                                      mlir::ConversionPatternRewriter& rewriter) const override {
    auto type = op.getDest().getType();
    Value index = linearize(rewriter, op.getLoc(), type, adaptor.getIndices());
    rewriter.replaceOpWithNewOp<mlir::tensor::InsertOp>(op, adaptor.getScalar(),
                                                        adaptor.getDest(), index);
    return mlir::success();
  }
};

struct FlattenAtomicRMW : public mlir::OpConversionPattern<AtomicRMWOp> {
  using OpConversionPattern::OpConversionPattern;
  mlir::LogicalResult matchAndRewrite(AtomicRMWOp op, OpAdaptor adaptor,
                                      mlir::ConversionPatternRewriter& rewriter) const override {
    auto type = llvm::cast<mlir::RankedTensorType>(op.getInput().getType());
    Value index = linearize(rewriter, op.getLoc(), type, adaptor.getIndices());
    auto flat = rewriter.create<AtomicRMWOp>(op.getLoc(), adaptor.getInput().getType(),
                                             adaptor.getInput(), mlir::ValueRange{index});
    rewriter.inlineRegionBefore(op.getComputation(), flat.getComputation(),
                                flat.getComputation().end());
    rewriter.replaceOp(op, flat.getResult());
    return mlir::success();
  }
};

// A 1-d in-bounds vector transfer along a stride-1 dimension of an N-d
// tensor (what -xla-gpu-lower-tile-copies emits): the same transfer at the
// linear index of its first element.
bool isFlattenableTransfer(mlir::VectorTransferOpInterface op) {
  auto type = llvm::dyn_cast<mlir::RankedTensorType>(op.getBase().getType());
  if (!type || op.getVectorType().getRank() != 1 || !op.isDimInBounds(0) || op.getMask()) {
    return false;
  }
  auto dim = llvm::dyn_cast<mlir::AffineDimExpr>(op.getPermutationMap().getResult(0));
  if (!dim) return false;
  for (int64_t i = dim.getPosition() + 1; i < type.getRank(); ++i) {
    if (type.getDimSize(i) != 1) return false;
  }
  return true;
}

// The linear index of a flattenable transfer's first element; null (and a
// match failure) for any other transfer.
template <typename OpT, typename AdaptorT>
Value flatTransferIndex(OpT op, AdaptorT adaptor, mlir::ConversionPatternRewriter& rewriter) {
  if (!isFlattenableTransfer(op)) {
    (void)rewriter.notifyMatchFailure(op, "not a 1-d in-bounds transfer along a stride-1 "
                                          "dimension");
    return nullptr;
  }
  auto type = llvm::cast<mlir::RankedTensorType>(op.getBase().getType());
  return linearize(rewriter, op.getLoc(), type, adaptor.getIndices());
}

struct FlattenTransferRead : public mlir::OpConversionPattern<mlir::vector::TransferReadOp> {
  using OpConversionPattern::OpConversionPattern;
  mlir::LogicalResult matchAndRewrite(mlir::vector::TransferReadOp op, OpAdaptor adaptor,
                                      mlir::ConversionPatternRewriter& rewriter) const override {
    Value index = flatTransferIndex(op, adaptor, rewriter);
    if (!index) return mlir::failure();
    llvm::SmallVector<bool> inBounds{true};
    rewriter.replaceOpWithNewOp<mlir::vector::TransferReadOp>(
        op, op.getVectorType(), adaptor.getBase(), mlir::ValueRange{index},
        std::optional<Value>(adaptor.getPadding()), llvm::ArrayRef<bool>(inBounds));
    return mlir::success();
  }
};

struct FlattenTransferWrite : public mlir::OpConversionPattern<mlir::vector::TransferWriteOp> {
  using OpConversionPattern::OpConversionPattern;
  mlir::LogicalResult matchAndRewrite(mlir::vector::TransferWriteOp op, OpAdaptor adaptor,
                                      mlir::ConversionPatternRewriter& rewriter) const override {
    Value index = flatTransferIndex(op, adaptor, rewriter);
    if (!index) return mlir::failure();
    llvm::SmallVector<bool> inBounds{true};
    rewriter.replaceOpWithNewOp<mlir::vector::TransferWriteOp>(
        op, adaptor.getValueToStore(), adaptor.getBase(), mlir::ValueRange{index},
        llvm::ArrayRef<bool>(inBounds));
    return mlir::success();
  }
};

// Ops whose only change is the types of their operands and results.
struct RetypeOp : public mlir::ConversionPattern {
  RetypeOp(const mlir::TypeConverter& converter, mlir::MLIRContext* ctx)
      : ConversionPattern(converter, MatchAnyOpTypeTag(), /*benefit=*/1, ctx) {}
  mlir::LogicalResult matchAndRewrite(mlir::Operation* op, llvm::ArrayRef<Value> operands,
                                      mlir::ConversionPatternRewriter& rewriter) const override {
    if (!llvm::isa<AllocateSharedOp, SyncThreadsOp, PureCallOp>(op)) {
      return rewriter.notifyMatchFailure(op, "not retyped here");
    }
    SmallVector<mlir::Type> types;
    if (failed(getTypeConverter()->convertTypes(op->getResultTypes(), types))) {
      return mlir::failure();
    }
    mlir::OperationState state(op->getLoc(), op->getName(), operands, types, op->getAttrs());
    rewriter.replaceOp(op, rewriter.create(state)->getResults());
    return mlir::success();
  }
};

// An N-d constant array: the same elements, row-major, in one dimension.
struct FlattenConstant : public mlir::OpConversionPattern<mlir::arith::ConstantOp> {
  using OpConversionPattern::OpConversionPattern;
  mlir::LogicalResult matchAndRewrite(mlir::arith::ConstantOp op, OpAdaptor,
                                      mlir::ConversionPatternRewriter& rewriter) const override {
    auto dense = llvm::dyn_cast<mlir::DenseElementsAttr>(op.getValue());
    if (!dense || !needsFlattening(op.getType())) return mlir::failure();
    auto flat = llvm::cast<mlir::RankedTensorType>(getTypeConverter()->convertType(op.getType()));
    rewriter.replaceOpWithNewOp<mlir::arith::ConstantOp>(op, flat, dense.reshape(flat));
    return mlir::success();
  }
};

class FlattenTensorsPass : public impl::FlattenTensorsPassBase<FlattenTensorsPass> {
 public:
  void runOnOperation() override {
    // 1. Convert every statically shaped N-d tensor type to 1-d: function
    //    signatures, scf structure, and the ops that index tensors.
    // 2. Fold the linearizing apply_indexing ops into the ones that produced
    //    the indices, so each access has one simplified index map.
    mlir::MLIRContext* ctx = &getContext();
    bool overflow = getOperation().walk([&](mlir::Operation* op) {
      llvm::SmallVector<mlir::Type> types(op->getOperandTypes());
      llvm::append_range(types, op->getResultTypes());
      if (auto f = llvm::dyn_cast<mlir::func::FuncOp>(op)) {
        llvm::append_range(types, f.getFunctionType().getInputs());
        llvm::append_range(types, f.getFunctionType().getResults());
      }
      for (mlir::Type t : types) {
        if (elementCountOverflows(t)) {
          op->emitOpError() << "uses " << t << ", whose element count does not fit in 64 bits";
          return mlir::WalkResult::interrupt();
        }
      }
      return mlir::WalkResult::advance();
    }).wasInterrupted();
    if (overflow) return signalPassFailure();
    FlattenTypeConverter converter;
    mlir::ConversionTarget target(*ctx);
    target.addDynamicallyLegalOp<mlir::func::FuncOp>([&](mlir::func::FuncOp f) {
      return converter.isSignatureLegal(f.getFunctionType()) &&
             converter.isLegal(&f.getBody());
    });
    target.markUnknownOpDynamicallyLegal([&](mlir::Operation* op) {
      auto legal = [](mlir::Type t) { return !needsFlattening(t); };
      return llvm::all_of(op->getOperandTypes(), legal) &&
             llvm::all_of(op->getResultTypes(), legal);
    });
    target.addLegalOp<mlir::ModuleOp>();
    mlir::RewritePatternSet patterns(ctx);
    mlir::populateFunctionOpInterfaceTypeConversionPattern<mlir::func::FuncOp>(patterns,
                                                                               converter);
    mlir::populateReturnOpTypeConversionPattern(patterns, converter);
    mlir::populateCallOpTypeConversionPattern(patterns, converter);
    mlir::scf::populateSCFStructuralTypeConversions(converter, patterns);
    patterns.add<FlattenExtract, FlattenInsert, FlattenAtomicRMW, FlattenConstant,
                 FlattenTransferRead, FlattenTransferWrite>(converter, ctx);
    patterns.add<RetypeOp>(converter, ctx);
    if (failed(mlir::applyPartialConversion(getOperation(), target, std::move(patterns)))) {
      signalPassFailure();
      return;
    }
    mlir::RewritePatternSet folds(ctx);
    ApplyIndexingOp::getCanonicalizationPatterns(folds, ctx);
    if (failed(mlir::applyPatternsGreedily(getOperation(), std::move(folds)))) {
      getOperation().emitError() << "xla-gpu-flatten-tensors: folding the index maps "
                                    "failed to converge";
      signalPassFailure();
    }
  }
};

}  // namespace
}  // namespace xla::gpu
