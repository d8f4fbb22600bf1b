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

// The layout of a tensor: its encoding `dense<[minor-to-major]>` (XLA's
// layout), row-major without one. Dimensions from major to minor; empty
// when the encoding is not a permutation of the dimensions.
SmallVector<int64_t> majorToMinor(mlir::RankedTensorType type) {
  SmallVector<int64_t> order;
  auto encoding = llvm::dyn_cast_or_null<mlir::DenseIntElementsAttr>(type.getEncoding());
  if (!encoding) {
    for (int64_t i = 0; i < type.getRank(); ++i) order.push_back(i);
    return order;
  }
  if (encoding.getNumElements() != type.getRank()) return {};
  for (const llvm::APInt& d : encoding.getValues<llvm::APInt>()) order.push_back(d.getSExtValue());
  std::reverse(order.begin(), order.end());
  SmallVector<int64_t> sorted(order);
  llvm::sort(sorted);
  for (auto [i, d] : llvm::enumerate(sorted)) {
    if (d != static_cast<int64_t>(i)) return {};
  }
  return order;
}

// Statically shaped tensors of rank != 1 or with a layout, and N-d vectors
// (not scalable), need flattening.
bool needsFlattening(mlir::Type type) {
  if (auto t = llvm::dyn_cast<mlir::RankedTensorType>(type)) {
    return t.hasStaticShape() && (t.getRank() != 1 || t.getEncoding());
  }
  auto v = llvm::dyn_cast<mlir::VectorType>(type);
  return v && v.getRank() > 1 && !v.isScalable();
}

bool isNdVector(mlir::Type type) {
  return llvm::isa<mlir::VectorType>(type) && needsFlattening(type);
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
    addConversion([](mlir::VectorType t) -> mlir::Type {
      if (!needsFlattening(t)) return t;
      return mlir::VectorType::get({t.getNumElements()}, t.getElementType());
    });
    // An op left with an N-d vector gets it through a shape_cast.
    auto shapeCast = [](mlir::OpBuilder& b, mlir::Type type, mlir::ValueRange inputs,
                        mlir::Location loc) -> Value {
      if (inputs.size() != 1 || !llvm::isa<mlir::VectorType>(type) ||
          !llvm::isa<mlir::VectorType>(inputs[0].getType())) {
        return nullptr;
      }
      return b.create<mlir::vector::ShapeCastOp>(loc, type, inputs[0]);
    };
    addSourceMaterialization(shapeCast);
    addTargetMaterialization(shapeCast);
  }
};

// The linear index of `indices` in a `shape` laid out from major to minor
// dimension as `order`, as an apply_indexing.
Value linearize(mlir::OpBuilder& b, mlir::Location loc, llvm::ArrayRef<int64_t> shape,
                llvm::ArrayRef<int64_t> order, mlir::ValueRange indices) {
  mlir::MLIRContext* ctx = b.getContext();
  mlir::AffineExpr linear = b.getAffineConstantExpr(0);
  SmallVector<IndexingVar> dims;
  for (int64_t size : shape) dims.push_back({"", {0, size - 1}});
  for (int64_t d : order) linear = linear * shape[d] + b.getAffineDimExpr(d);
  auto map = mlir::AffineMap::get(dims.size(), 0, linear, ctx);
  IndexingMap indexing(map, dims, {}, {});
  return b.create<ApplyIndexingOp>(loc, indices, mlir::ValueRange{},
                                   IndexingMapAttr::get(ctx, indexing.simplify()))
      .getResult(0);
}

Value linearize(mlir::OpBuilder& b, mlir::Location loc, mlir::RankedTensorType type,
                mlir::ValueRange indices) {
  return linearize(b, loc, type.getShape(), majorToMinor(type), indices);
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
    // Its marks too (kSortedUpdates: the scatter's indices are sorted).
    flat->setDiscardableAttrs(op->getDiscardableAttrDictionary());
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
  // Every dimension more minor than the transfer's has one element.
  SmallVector<int64_t> order = majorToMinor(type);
  auto at = llvm::find(order, static_cast<int64_t>(dim.getPosition()));
  if (at == order.end()) return false;
  return llvm::all_of(llvm::make_range(std::next(at), order.end()),
                      [&](int64_t d) { return type.getDimSize(d) == 1; });
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

// The positions of a vector.extract / vector.insert as index values.
SmallVector<Value> positionValues(mlir::OpBuilder& b, mlir::Location loc,
                                  llvm::ArrayRef<mlir::OpFoldResult> positions) {
  SmallVector<Value> values;
  for (mlir::OpFoldResult p : positions) {
    if (auto v = llvm::dyn_cast<Value>(p)) {
      values.push_back(v);
    } else {
      values.push_back(b.create<mlir::arith::ConstantIndexOp>(
          loc, llvm::cast<mlir::IntegerAttr>(llvm::cast<mlir::Attribute>(p)).getInt()));
    }
  }
  return values;
}

// The row-major position of a scalar in an N-d vector.
Value vectorPosition(mlir::OpBuilder& b, mlir::Location loc, mlir::VectorType type,
                     llvm::ArrayRef<mlir::OpFoldResult> positions) {
  SmallVector<int64_t> order;
  for (int64_t i = 0; i < type.getRank(); ++i) order.push_back(i);
  return linearize(b, loc, type.getShape(), order, positionValues(b, loc, positions));
}

// A scalar of an N-d vector (every position given); other extracts keep
// their N-d source through a shape_cast.
struct FlattenVectorExtract : public mlir::OpConversionPattern<mlir::vector::ExtractOp> {
  using OpConversionPattern::OpConversionPattern;
  mlir::LogicalResult matchAndRewrite(mlir::vector::ExtractOp op, OpAdaptor adaptor,
                                      mlir::ConversionPatternRewriter& rewriter) const override {
    mlir::VectorType type = op.getSourceVectorType();
    if (!isNdVector(type) || llvm::isa<mlir::VectorType>(op.getType())) {
      return rewriter.notifyMatchFailure(op, "not a scalar of an N-d vector");
    }
    Value position = vectorPosition(rewriter, op.getLoc(), type, op.getMixedPosition());
    rewriter.replaceOpWithNewOp<mlir::vector::ExtractOp>(op, adaptor.getSource(),
                                                         mlir::OpFoldResult(position));
    return mlir::success();
  }
};

struct FlattenVectorInsert : public mlir::OpConversionPattern<mlir::vector::InsertOp> {
  using OpConversionPattern::OpConversionPattern;
  mlir::LogicalResult matchAndRewrite(mlir::vector::InsertOp op, OpAdaptor adaptor,
                                      mlir::ConversionPatternRewriter& rewriter) const override {
    mlir::VectorType type = op.getDestVectorType();
    if (!isNdVector(type) || llvm::isa<mlir::VectorType>(op.getValueToStore().getType())) {
      return rewriter.notifyMatchFailure(op, "not a scalar into an N-d vector");
    }
    Value position = vectorPosition(rewriter, op.getLoc(), type, op.getMixedPosition());
    rewriter.replaceOpWithNewOp<mlir::vector::InsertOp>(
        op, adaptor.getValueToStore(), adaptor.getDest(), mlir::OpFoldResult(position));
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

// An N-d constant array or vector: the same elements in one dimension, in
// the order of the tensor's layout.
struct FlattenConstant : public mlir::OpConversionPattern<mlir::arith::ConstantOp> {
  using OpConversionPattern::OpConversionPattern;
  mlir::LogicalResult matchAndRewrite(mlir::arith::ConstantOp op, OpAdaptor,
                                      mlir::ConversionPatternRewriter& rewriter) const override {
    auto dense = llvm::dyn_cast<mlir::DenseElementsAttr>(op.getValue());
    if (!dense || !needsFlattening(op.getType())) return mlir::failure();
    auto flat = llvm::cast<mlir::ShapedType>(getTypeConverter()->convertType(op.getType()));
    auto tensor = llvm::dyn_cast<mlir::RankedTensorType>(op.getType());
    SmallVector<int64_t> order = tensor ? majorToMinor(tensor) : SmallVector<int64_t>();
    if (!tensor || dense.isSplat() || llvm::is_sorted(order)) {
      rewriter.replaceOpWithNewOp<mlir::arith::ConstantOp>(
          op, flat, dense.reshape(flat));
      return mlir::success();
    }
    // Another layout: element i (row-major) goes to its place in it.
    llvm::ArrayRef<int64_t> shape = tensor.getShape();
    SmallVector<int64_t> strides(shape.size());
    int64_t stride = 1;
    for (int64_t d : llvm::reverse(order)) {
      strides[d] = stride;
      stride *= shape[d];
    }
    SmallVector<mlir::Attribute> values(dense.getValues<mlir::Attribute>());
    SmallVector<mlir::Attribute> placed(values.size());
    for (auto [i, v] : llvm::enumerate(values)) {
      int64_t rest = i, at = 0;
      for (int64_t d = shape.size() - 1; d >= 0; --d) {
        at += rest % shape[d] * strides[d];
        rest /= shape[d];
      }
      placed[at] = v;
    }
    rewriter.replaceOpWithNewOp<mlir::arith::ConstantOp>(
        op, flat, mlir::DenseElementsAttr::get(flat, placed));
    return mlir::success();
  }
};

class FlattenTensorsPass : public impl::FlattenTensorsPassBase<FlattenTensorsPass> {
 public:
  void runOnOperation() override {
    // 1. Convert every statically shaped N-d tensor type to 1-d: function
    //    signatures, scf structure, and the ops that index tensors; N-d
    //    vectors where they are carried, made and indexed.
    // 2. Fold the linearizing apply_indexing ops into the ones that produced
    //    the indices, so each access has one simplified index map.
    mlir::MLIRContext* ctx = &getContext();
    // What cannot be flattened, refused at its op: an encoding that is no
    // layout, an element count past 64 bits (flattening would wrap it).
    bool refused = getOperation().walk([&](mlir::Operation* op) {
      llvm::SmallVector<mlir::Type> types(op->getOperandTypes());
      llvm::append_range(types, op->getResultTypes());
      for (mlir::Type t : types) {
        auto tensor = llvm::dyn_cast<mlir::RankedTensorType>(t);
        if (tensor && tensor.getEncoding() && majorToMinor(tensor).empty()) {
          op->emitOpError() << "uses " << t << ", whose encoding is not a layout (a "
                            << "permutation of its dimensions, minor to major)";
          return mlir::WalkResult::interrupt();
        }
      }
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
    if (refused) return signalPassFailure();
    FlattenTypeConverter converter;
    mlir::ConversionTarget target(*ctx);
    target.addDynamicallyLegalOp<mlir::func::FuncOp>([&](mlir::func::FuncOp f) {
      return converter.isSignatureLegal(f.getFunctionType()) &&
             converter.isLegal(&f.getBody());
    });
    // Tensors are flattened everywhere. N-d vectors where functions, calls,
    // control flow and constants carry them and where a scalar is read or
    // written; any other op on one keeps it (through a shape_cast).
    auto flatTensors = [](mlir::Operation* op) {
      auto legal = [](mlir::Type t) {
        return !llvm::isa<mlir::RankedTensorType>(t) || !needsFlattening(t);
      };
      return llvm::all_of(op->getOperandTypes(), legal) &&
             llvm::all_of(op->getResultTypes(), legal);
    };
    auto flatTypes = [&](mlir::Operation* op) { return converter.isLegal(op); };
    target.markUnknownOpDynamicallyLegal(flatTensors);
    target.addDynamicallyLegalOp<mlir::func::ReturnOp, mlir::func::CallOp, PureCallOp,
                                 mlir::scf::ForOp, mlir::scf::IfOp, mlir::scf::WhileOp,
                                 mlir::scf::ConditionOp, mlir::scf::YieldOp,
                                 mlir::scf::IndexSwitchOp, mlir::arith::ConstantOp>(flatTypes);
    target.addDynamicallyLegalOp<mlir::vector::ExtractOp>([](mlir::vector::ExtractOp op) {
      return llvm::isa<mlir::VectorType>(op.getType()) || !isNdVector(op.getSourceVectorType());
    });
    target.addDynamicallyLegalOp<mlir::vector::InsertOp>([](mlir::vector::InsertOp op) {
      return llvm::isa<mlir::VectorType>(op.getValueToStore().getType()) ||
             !isNdVector(op.getDestVectorType());
    });
    target.addLegalOp<mlir::ModuleOp, mlir::vector::ShapeCastOp>();
    mlir::RewritePatternSet patterns(ctx);
    mlir::populateFunctionOpInterfaceTypeConversionPattern<mlir::func::FuncOp>(patterns,
                                                                               converter);
    mlir::populateReturnOpTypeConversionPattern(patterns, converter);
    mlir::populateCallOpTypeConversionPattern(patterns, converter);
    mlir::scf::populateSCFStructuralTypeConversions(converter, patterns);
    patterns.add<FlattenExtract, FlattenInsert, FlattenAtomicRMW, FlattenConstant,
                 FlattenTransferRead, FlattenTransferWrite, FlattenVectorExtract,
                 FlattenVectorInsert>(converter, ctx);
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
      return signalPassFailure();
    }
    // XLA's check: a cast left over is a value the pass could not flatten.
    getOperation().walk([&](mlir::UnrealizedConversionCastOp cast) {
      cast.emitOpError() << "is left over: xla-gpu-flatten-tensors failed to converge";
      signalPassFailure();
    });
  }
};

}  // namespace
}  // namespace xla::gpu
