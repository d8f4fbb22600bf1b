//===- expand_float_ops.cpp - -xla-gpu-expand-float-ops -------------------===//
//
// Narrow floats as XLA computes them:
//
//   1. Every arith and math op on bf16, f16 or an f8 type runs in f32: its
//      operands are extended, the result truncated right after (XLA rounds
//      after every op).
//   2. Conversions to and from the 8-bit float types become integer code
//      on their bits (LLVM has no f8 types; MLIR lowers them to i8), as
//      XLA's expand-float-ops does: exact from f8 to f32; from f32 to f8
//      rounded to nearest even, out-of-range magnitudes to infinity where
//      the format has one and NaN where it has not (XLA's convert does not
//      saturate). Other types go through f32 (f64 truncated to f32 first,
//      as XLA does; every f8 value is exact in f16, bf16 and f32). On GPUs
//      with f8 `cvt` instructions, -xla-gpu-convert-float-nvidia takes
//      f8E4M3FN and f8E5M2 first.
//   3. f32 tanh and erf (those of step 1's included) become XLA:GPU's
//      rational approximations (see tanhRational and Erf below).
//
// The f8 formats, as ml_dtypes and XLA define them:
//
//     type            exp man bias infinity NaN              -0
//     f8E3M4           3   4   3    yes      exp all ones     yes
//     f8E4M3           4   3   7    yes      exp all ones     yes
//     f8E4M3FN         4   3   7    no       S.1111.111       yes
//     f8E4M3FNUZ       4   3   8    no       0x80             no
//     f8E4M3B11FNUZ    4   3   11   no       0x80             no
//     f8E5M2           5   2   15   yes      exp all ones     yes
//     f8E5M2FNUZ       5   2   16   no       0x80             no
//
//===----------------------------------------------------------------------===//

#include <cmath>

#include "llvm/ADT/APFloat.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Transforms/Passes.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/IR/ImplicitLocOpBuilder.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/DialectConversion.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "passes/F32Approximations.h"
#include "passes/Passes.h"

namespace xla::gpu {

#define GEN_PASS_DEF_EXPANDFLOATOPSPASS
#include "passes/Passes.h.inc"

namespace {

using mlir::Value;
namespace arith = mlir::arith;

// What the integer code needs to know of an 8-bit float format.
struct Float8Format {
  enum class Kind { kIeee, kFn, kFnuz };  // see the table above
  int exponent;
  int mantissa;
  int bias;
  Kind kind;

  int minNormalExponent() const { return 1 - bias; }
  // The largest finite magnitude's 7-bit code.
  int64_t maxCode() const {
    if (kind == Kind::kIeee) return (((1 << exponent) - 1) << mantissa) - 1;
    return kind == Kind::kFn ? 0x7E : 0x7F;
  }
  // The code (sign clear) of an overflowing magnitude.
  int64_t overflowCode() const {
    if (kind == Kind::kIeee) return ((1 << exponent) - 1) << mantissa;  // infinity
    return kind == Kind::kFn ? 0x7F : 0x80;                             // NaN
  }
  int64_t nanCode() const {
    if (kind == Kind::kIeee) return (((1 << exponent) - 1) << mantissa) | (1 << (mantissa - 1));
    return kind == Kind::kFn ? 0x7F : 0x80;
  }
};

std::optional<Float8Format> float8FormatOf(mlir::Type type) {
  auto f = llvm::dyn_cast<mlir::FloatType>(type);
  if (!f || f.getWidth() != 8) return std::nullopt;
  Float8Format::Kind kind;
  if (llvm::isa<mlir::Float8E3M4Type, mlir::Float8E4M3Type, mlir::Float8E5M2Type>(type)) {
    kind = Float8Format::Kind::kIeee;
  } else if (llvm::isa<mlir::Float8E4M3FNType>(type)) {
    kind = Float8Format::Kind::kFn;
  } else if (llvm::isa<mlir::Float8E4M3FNUZType, mlir::Float8E4M3B11FNUZType,
                       mlir::Float8E5M2FNUZType>(type)) {
    kind = Float8Format::Kind::kFnuz;
  } else {
    return std::nullopt;  // f8E8M0FNU: no sign, a different code
  }
  const llvm::fltSemantics& semantics = f.getFloatSemantics();
  int mantissa = llvm::APFloat::semanticsPrecision(semantics) - 1;
  return Float8Format{7 - mantissa, mantissa,
                      1 - llvm::APFloat::semanticsMinExponent(semantics), kind};
}

struct Builder : mlir::ImplicitLocOpBuilder {
  using ImplicitLocOpBuilder::ImplicitLocOpBuilder;

  Value i32(int64_t v) { return create<arith::ConstantIntOp>(getI32Type(), v); }
  Value f32(double v) {
    return create<arith::ConstantFloatOp>(getF32Type(), llvm::APFloat(static_cast<float>(v)));
  }
  Value cmp(arith::CmpIPredicate p, Value a, Value b) { return create<arith::CmpIOp>(p, a, b); }
  Value select(Value c, Value a, Value b) { return create<arith::SelectOp>(c, a, b); }
};

// The f32 of an f8 value (exact).
Value f8ToF32(Builder& b, const Float8Format& fmt, Value value) {
  using P = arith::CmpIPredicate;
  mlir::Type f32 = b.getF32Type();
  Value byte = b.create<arith::ExtUIOp>(
      b.getI32Type(), b.create<arith::BitcastOp>(b.getI8Type(), value));
  Value code = b.create<arith::AndIOp>(byte, b.i32(0x7F));
  Value exponent = b.create<arith::ShRUIOp>(code, b.i32(fmt.mantissa));
  Value mantissa = b.create<arith::AndIOp>(code, b.i32((1 << fmt.mantissa) - 1));
  // Normal: rebias the exponent, widen the mantissa.
  Value normalBits = b.create<arith::OrIOp>(
      b.create<arith::ShLIOp>(b.create<arith::AddIOp>(exponent, b.i32(127 - fmt.bias)),
                              b.i32(23)),
      b.create<arith::ShLIOp>(mantissa, b.i32(23 - fmt.mantissa)));
  Value normal = b.create<arith::BitcastOp>(f32, normalBits);
  // Subnormal: mantissa * 2^(min exponent - mantissa bits).
  Value subnormal = b.create<arith::MulFOp>(
      b.create<arith::UIToFPOp>(f32, mantissa),
      b.f32(std::ldexp(1.0, fmt.minNormalExponent() - fmt.mantissa)));
  Value magnitude = b.select(b.cmp(P::eq, exponent, b.i32(0)), subnormal, normal);
  Value negative = b.cmp(P::ne, b.create<arith::AndIOp>(byte, b.i32(0x80)), b.i32(0));
  Value result = b.select(negative, b.create<arith::NegFOp>(magnitude), magnitude);
  Value nan = b.f32(NAN);
  switch (fmt.kind) {
    case Float8Format::Kind::kIeee: {
      Value special = b.cmp(P::eq, exponent, b.i32((1 << fmt.exponent) - 1));
      Value inf = b.select(negative, b.f32(-INFINITY), b.f32(INFINITY));
      Value nonFinite = b.select(b.cmp(P::eq, mantissa, b.i32(0)), inf, nan);
      return b.select(special, nonFinite, result);
    }
    case Float8Format::Kind::kFn:
      return b.select(b.cmp(P::eq, code, b.i32(0x7F)), nan, result);
    case Float8Format::Kind::kFnuz:
      return b.select(b.cmp(P::eq, byte, b.i32(0x80)), nan, result);
  }
  llvm_unreachable("all kinds handled");
}

// `x` (f32) rounded to nearest even in the f8 type `type`.
Value f32ToF8(Builder& b, const Float8Format& fmt, Value x, mlir::Type type) {
  using P = arith::CmpIPredicate;
  Value bits = b.create<arith::BitcastOp>(b.getI32Type(), x);
  Value absBits = b.create<arith::AndIOp>(bits, b.i32(0x7FFFFFFF));
  int shift = 23 - fmt.mantissa;
  // Normal range: round the f32 mantissa to the format's (a carry moves
  // into the exponent), then rebias.
  Value odd = b.create<arith::AndIOp>(b.create<arith::ShRUIOp>(absBits, b.i32(shift)), b.i32(1));
  Value rounded = b.create<arith::AddIOp>(
      absBits, b.create<arith::AddIOp>(b.i32((1 << (shift - 1)) - 1), odd));
  Value normal = b.create<arith::SubIOp>(b.create<arith::ShRUIOp>(rounded, b.i32(shift)),
                                         b.i32((127 - fmt.bias) << fmt.mantissa));
  // Subnormal range: the multiple of the smallest subnormal; 2^mantissa of
  // them is the smallest normal, whose code it also is.
  Value magnitude = b.create<mlir::math::AbsFOp>(x);
  Value steps = b.create<mlir::math::RoundEvenOp>(b.create<arith::MulFOp>(
      magnitude, b.f32(std::ldexp(1.0, fmt.mantissa - fmt.minNormalExponent()))));
  Value subnormal = b.create<arith::FPToUIOp>(
      b.getI32Type(), b.create<arith::MinimumFOp>(steps, b.f32(1 << fmt.mantissa)));
  Value isNormal = b.create<arith::CmpFOp>(arith::CmpFPredicate::OGE, magnitude,
                                           b.f32(std::ldexp(1.0, fmt.minNormalExponent())));
  Value code = b.select(isNormal, normal, subnormal);
  // An overflowing magnitude includes f32's infinity (its code is large).
  Value overflows = b.create<arith::AndIOp>(
      b.create<arith::CmpFOp>(arith::CmpFPredicate::OGT, magnitude, b.f32(0.0)),
      b.cmp(P::sgt, code, b.i32(fmt.maxCode())));
  code = b.select(overflows, b.i32(fmt.overflowCode()), code);
  Value negative = b.cmp(P::slt, bits, b.i32(0));
  if (fmt.kind == Float8Format::Kind::kFnuz) {
    // No -0: a negative value that rounds to zero is +0; 0x80 is NaN.
    negative = b.create<arith::AndIOp>(negative, b.cmp(P::ne, code, b.i32(0)));
    negative = b.create<arith::AndIOp>(negative, b.cmp(P::ne, code, b.i32(0x80)));
  }
  Value signedCode = b.create<arith::OrIOp>(code, b.select(negative, b.i32(0x80), b.i32(0)));
  Value isNan = b.create<arith::CmpFOp>(arith::CmpFPredicate::UNO, x, x);
  Value result = b.select(isNan, b.i32(fmt.nanCode()), signedCode);
  return b.create<arith::BitcastOp>(type, b.create<arith::TruncIOp>(b.getI8Type(), result));
}

// `value` (a float) as f32: extended, or truncated from f64.
Value toF32(Builder& b, Value value) {
  mlir::Type f32 = b.getF32Type();
  unsigned width = value.getType().getIntOrFloatBitWidth();
  if (value.getType() == f32) return value;
  if (width > 32) return b.create<arith::TruncFOp>(f32, value);
  return b.create<arith::ExtFOp>(f32, value);
}

struct ExpandTruncToFloat8 : public mlir::OpRewritePattern<arith::TruncFOp> {
  using OpRewritePattern::OpRewritePattern;

  mlir::LogicalResult matchAndRewrite(arith::TruncFOp op,
                                      mlir::PatternRewriter& rewriter) const override {
    std::optional<Float8Format> fmt = float8FormatOf(op.getType());
    if (!fmt) return rewriter.notifyMatchFailure(op, "not to a signed 8-bit float");
    Builder b(op.getLoc(), rewriter);
    rewriter.replaceOp(op, f32ToF8(b, *fmt, toF32(b, op.getIn()), op.getType()));
    return mlir::success();
  }
};

struct ExpandExtFromFloat8 : public mlir::OpRewritePattern<arith::ExtFOp> {
  using OpRewritePattern::OpRewritePattern;

  mlir::LogicalResult matchAndRewrite(arith::ExtFOp op,
                                      mlir::PatternRewriter& rewriter) const override {
    std::optional<Float8Format> fmt = float8FormatOf(op.getIn().getType());
    if (!fmt) return rewriter.notifyMatchFailure(op, "not from a signed 8-bit float");
    Builder b(op.getLoc(), rewriter);
    Value result = f8ToF32(b, *fmt, op.getIn());
    mlir::Type to = op.getType();
    if (to.getIntOrFloatBitWidth() > 32) {
      result = b.create<arith::ExtFOp>(to, result);
    } else if (to != result.getType()) {
      result = b.create<arith::TruncFOp>(to, result);  // exact
    }
    rewriter.replaceOp(op, result);
    return mlir::success();
  }
};

// tanh as upstream MLIR's approximation, which XLA:GPU uses (Eigen's with
// FMA).
struct GpuTanh {
  static Value build(const F32Builder& f32, Value a) {
    return tanhRational(f32, a, 7.99881172180175781);
  }
};

// erf as XLA:GPU's: x P(x^2) / Q(x^2), a 9/12-degree rational interpolant
// (Eigen's coefficients), on x clamped to +-3.7439211627767994 (beyond
// which erf rounds to +-1 in f32).
struct GpuErf {
  static Value build(const F32Builder& f32, Value a) {
    return erfRational(f32, f32.clamp(a, -3.7439211627767994, 3.7439211627767994));
  }
};

class ExpandFloatOpsPass : public impl::ExpandFloatOpsPassBase<ExpandFloatOpsPass> {
 public:
  using ExpandFloatOpsPassBase::ExpandFloatOpsPassBase;

  void runOnOperation() override {
    // 1. Upstream's float emulation extends the operands of an op on a
    // narrow type, runs the op in f32 and truncates the result: exactly
    // XLA's rounding after every op. Upstream applies it to arith; math ops
    // (tanh, exp, ...) need the same treatment, so they are made subject
    // to it too.
    mlir::MLIRContext* ctx = &getContext();
    mlir::Builder b(ctx);
    llvm::SmallVector<mlir::Type> narrow = {
        b.getBF16Type(), b.getF16Type(), mlir::Float8E4M3FNType::get(ctx),
        mlir::Float8E5M2Type::get(ctx), mlir::Float8E4M3FNUZType::get(ctx),
        mlir::Float8E5M2FNUZType::get(ctx), mlir::Float8E4M3B11FNUZType::get(ctx),
        mlir::Float8E4M3Type::get(ctx), mlir::Float8E3M4Type::get(ctx)};
    mlir::TypeConverter converter;
    mlir::arith::populateEmulateUnsupportedFloatsConversions(converter, narrow,
                                                             b.getF32Type());
    mlir::ConversionTarget target(*ctx);
    mlir::arith::populateEmulateUnsupportedFloatsLegality(target, converter);
    target.addDynamicallyLegalDialect<mlir::math::MathDialect>(
        [&](mlir::Operation* op) -> std::optional<bool> { return converter.isLegal(op); });
    mlir::RewritePatternSet patterns(ctx);
    mlir::arith::populateEmulateUnsupportedFloatsPatterns(patterns, converter);
    if (failed(mlir::applyPartialConversion(getOperation(), target, std::move(patterns)))) {
      return signalPassFailure();
    }
    // Upstream marks the casts `contract`, which lets canonicalization fold
    // extf(truncf(x)) to x and keep whole chains in f32. XLA rounds after
    // every op: the casts must stay.
    getOperation().walk([&](arith::ExtFOp op) { op.setFastmathAttr(nullptr); });
    getOperation().walk([&](arith::TruncFOp op) { op.setFastmathAttr(nullptr); });

    // 2. The f8 conversions, the emulation's included; 3. tanh and erf.
    mlir::RewritePatternSet f8(ctx);
    f8.add<ExpandTruncToFloat8, ExpandExtFromFloat8>(ctx);
    if (gpuApproximations) {
      f8.add<ApproximateF32<mlir::math::TanhOp, GpuTanh>,
             ApproximateF32<mlir::math::ErfOp, GpuErf>>(ctx);
    }
    if (failed(mlir::applyPatternsGreedily(getOperation(), std::move(f8)))) {
      signalPassFailure();
    }
  }
};

}  // namespace
}  // namespace xla::gpu
