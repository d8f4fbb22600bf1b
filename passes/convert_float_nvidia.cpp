//===- convert_float_nvidia.cpp - -xla-gpu-convert-float-nvidia -----------===//
//
// XLA's f8 conversions through the hardware's `cvt` (sm_89 with PTX 8.1,
// sm_90 with PTX 7.8; the pipeline adds the pass only there):
//
//   * `arith.truncf` to f8E4M3FN or f8E5M2: from f16 with
//     `nvvm.convert.f16x2.to.f8x2`, from anything else through f32 (f64
//     truncated to f32 first, as XLA does) with
//     `nvvm.convert.f32x2.to.f8x2` (round to nearest even). The hardware
//     saturates (`.satfinite`); XLA's conversion does not, so inputs whose
//     magnitude rounds past the largest finite value, and infinities, give
//     the signed infinity of the destination (f8E4M3FN has none: its NaN,
//     sign included, as XLA gives).
//   * `arith.extf` from those types: `nvvm.convert.f8x2.to.f16x2` and then
//     to the destination type (bf16 through f32: there is no f16 -> bf16
//     conversion, and every f8 value is exact in both).
//
// Each value is converted in both lanes of the packed pair, so which lane
// the hardware fills first does not matter. Other types, and vectors,
// stay for -xla-gpu-expand-float-ops.
//
//===----------------------------------------------------------------------===//

#include "llvm/ADT/APFloat.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/ImplicitLocOpBuilder.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "passes/Passes.h"

namespace xla::gpu {

#define GEN_PASS_DEF_CONVERTFLOATNVIDIAPASS
#include "passes/Passes.h.inc"

namespace {

using mlir::Value;
namespace arith = mlir::arith;

bool hasF8Cvt(mlir::Type type) {
  return llvm::isa<mlir::Float8E4M3FNType, mlir::Float8E5M2Type>(type);
}

const llvm::fltSemantics& semanticsOf(mlir::Type type) {
  return llvm::cast<mlir::FloatType>(type).getFloatSemantics();
}

uint64_t bitsOf(const llvm::APFloat& value) {
  return value.bitcastToAPInt().getZExtValue();
}

// The largest magnitude (as the source's bits, sign cleared) that rounds,
// to nearest even, to a finite value of `to`: every larger one, up to the
// infinity, overflows. The largest finite value of `to` in the source's
// bits, plus the half ulp of `to` below which values round down to it
// (less one when its mantissa is odd: the halfway point rounds up, to
// even).
uint64_t largestNotOverflowing(mlir::Type from, mlir::Type to) {
  const llvm::fltSemantics& src = semanticsOf(from);
  const llvm::fltSemantics& dst = semanticsOf(to);
  int srcMantissa = llvm::APFloat::semanticsPrecision(src) - 1;
  int dstMantissa = llvm::APFloat::semanticsPrecision(dst) - 1;
  int srcBias = 1 - llvm::APFloat::semanticsMinExponent(src);
  int dstBias = 1 - llvm::APFloat::semanticsMinExponent(dst);
  uint64_t largest = bitsOf(llvm::APFloat::getLargest(dst));
  uint64_t shift = srcMantissa - dstMantissa;
  uint64_t inSource = (largest << shift) + (uint64_t(srcBias - dstBias) << srcMantissa);
  return inSource | ((uint64_t{1} << (shift - 1)) - (largest & 1));
}

// `converted` (the hardware's saturated result, i8), or the signed
// infinity of `to` where `source` (its bits, of an integer type as wide as
// the source) overflows it.
Value withInfinities(mlir::ImplicitLocOpBuilder& b, Value source, mlir::Type from,
                     Value converted, mlir::Type to) {
  auto type = llvm::cast<mlir::IntegerType>(source.getType());
  unsigned width = type.getWidth();
  auto constant = [&](uint64_t v, mlir::Type t) -> Value {
    return b.create<arith::ConstantIntOp>(t, static_cast<int64_t>(v));
  };
  Value sign = b.create<arith::ShRUIOp>(source, constant(width - 1, type));
  Value magnitude =
      b.create<arith::AndIOp>(source, constant((uint64_t{1} << (width - 1)) - 1, type));
  uint64_t infinity = bitsOf(llvm::APFloat::getInf(semanticsOf(from)));
  Value overflows = b.create<arith::AndIOp>(
      b.create<arith::CmpIOp>(arith::CmpIPredicate::ugt, magnitude,
                              constant(largestNotOverflowing(from, to), type)),
      b.create<arith::CmpIOp>(arith::CmpIPredicate::ule, magnitude, constant(infinity, type)));
  // APFloat's infinity of a type without one is its NaN.
  mlir::Type i8 = b.getI8Type();
  Value signedInfinity = b.create<arith::OrIOp>(
      constant(bitsOf(llvm::APFloat::getInf(semanticsOf(to))), i8),
      b.create<arith::ShLIOp>(b.create<arith::TruncIOp>(i8, sign), constant(7, i8)));
  return b.create<arith::SelectOp>(overflows, signedInfinity, converted);
}

struct TruncToF8 : public mlir::OpRewritePattern<arith::TruncFOp> {
  using OpRewritePattern::OpRewritePattern;

  mlir::LogicalResult matchAndRewrite(arith::TruncFOp op,
                                      mlir::PatternRewriter& rewriter) const override {
    mlir::Type to = op.getType();
    if (!hasF8Cvt(to)) return rewriter.notifyMatchFailure(op, "not to f8E4M3FN or f8E5M2");
    mlir::ImplicitLocOpBuilder b(op.getLoc(), rewriter);
    Value value = op.getIn();
    mlir::Type i16 = b.getI16Type();
    Value packed;
    if (value.getType().isF16()) {
      Value pair = b.create<mlir::vector::BroadcastOp>(mlir::VectorType::get({2}, b.getF16Type()),
                                                       value);
      packed = b.create<mlir::NVVM::ConvertF16x2ToF8x2Op>(i16, pair, /*relu=*/false, to);
    } else {
      mlir::Type f32 = b.getF32Type();
      if (value.getType().getIntOrFloatBitWidth() < 32) {
        value = b.create<arith::ExtFOp>(f32, value);
      } else if (!value.getType().isF32()) {
        value = b.create<arith::TruncFOp>(f32, value);
      }
      packed = b.create<mlir::NVVM::ConvertF32x2ToF8x2Op>(
          i16, value, value, mlir::NVVM::FPRoundingMode::RN,
          mlir::NVVM::SaturationMode::SATFINITE, /*relu=*/false, to);
    }
    Value converted = b.create<arith::TruncIOp>(b.getI8Type(), packed);
    mlir::Type from = value.getType();
    Value bits = b.create<arith::BitcastOp>(b.getIntegerType(from.getIntOrFloatBitWidth()), value);
    rewriter.replaceOpWithNewOp<arith::BitcastOp>(
        op, to, withInfinities(b, bits, from, converted, to));
    return mlir::success();
  }
};

struct ExtFromF8 : public mlir::OpRewritePattern<arith::ExtFOp> {
  using OpRewritePattern::OpRewritePattern;

  mlir::LogicalResult matchAndRewrite(arith::ExtFOp op,
                                      mlir::PatternRewriter& rewriter) const override {
    mlir::Type from = op.getIn().getType();
    if (!hasF8Cvt(from)) {
      return rewriter.notifyMatchFailure(op, "not from f8E4M3FN or f8E5M2");
    }
    mlir::ImplicitLocOpBuilder b(op.getLoc(), rewriter);
    Value byte = b.create<arith::BitcastOp>(b.getI8Type(), op.getIn());
    Value pair = b.create<mlir::vector::BroadcastOp>(mlir::VectorType::get({2}, b.getI8Type()),
                                                     byte);
    Value halves = b.create<mlir::NVVM::ConvertF8x2ToF16x2Op>(
        mlir::VectorType::get({2}, b.getF16Type()), pair, /*relu=*/false, from);
    Value result = b.create<mlir::vector::ExtractOp>(halves, int64_t{0});
    mlir::Type to = op.getType();
    if (to.isBF16()) {
      result = b.create<arith::TruncFOp>(to, b.create<arith::ExtFOp>(b.getF32Type(), result));
    } else if (!to.isF16()) {
      result = b.create<arith::ExtFOp>(to, result);
    }
    rewriter.replaceOp(op, result);
    return mlir::success();
  }
};

class ConvertFloatNvidiaPass : public impl::ConvertFloatNvidiaPassBase<ConvertFloatNvidiaPass> {
 public:
  void runOnOperation() override {
    mlir::RewritePatternSet patterns(&getContext());
    patterns.add<TruncToF8, ExtFromF8>(&getContext());
    if (failed(mlir::applyPatternsGreedily(getOperation(), std::move(patterns)))) {
      signalPassFailure();
    }
  }
};

}  // namespace
}  // namespace xla::gpu
