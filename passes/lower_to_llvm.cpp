//===- lower_to_llvm.cpp - -xla-gpu-lower-to-llvm --------------------------===//

#include <limits>
#include <optional>
#include <type_traits>

#include "mlir/Conversion/ArithToLLVM/ArithToLLVM.h"
#include "mlir/Conversion/ComplexToLLVM/ComplexToLLVM.h"
#include "mlir/Conversion/ComplexToStandard/ComplexToStandard.h"
#include "mlir/Conversion/ControlFlowToLLVM/ControlFlowToLLVM.h"
#include "mlir/Conversion/FuncToLLVM/ConvertFuncToLLVM.h"
#include "mlir/Conversion/GPUToNVVM/GPUToNVVMPass.h"
#include "mlir/Conversion/IndexToLLVM/IndexToLLVM.h"
#include "mlir/Conversion/LLVMCommon/ConversionTarget.h"
#include "mlir/Conversion/LLVMCommon/TypeConverter.h"
#include "mlir/Conversion/MathToLLVM/MathToLLVM.h"
#include "mlir/Conversion/MathToLibm/MathToLibm.h"
#include "mlir/Conversion/SCFToControlFlow/SCFToControlFlow.h"
#include "mlir/Conversion/VectorToLLVM/ConvertVectorToLLVM.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlowOps.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Transforms/DialectConversion.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Transforms/Passes.h"
#include "mlir/IR/Matchers.h"
#include "passes/F32Approximations.h"
#include "passes/Passes.h"

namespace xla::gpu {

#define GEN_PASS_DEF_LOWERTOLLVMPASS
#include "passes/Passes.h.inc"

namespace {

// tanh(x) as XLA:CPU's (its intrinsic's: Eigen's with FMA, clamped at
// +-7.9988, where the ratio is exactly 1). Unlike a libm call it
// vectorizes; it is within a few ulp of tanhf. (The clamp was 7.9053, the
// one for Eigen's evaluation without FMA: from there on the FMA ratio is
// 0.99999976, one 4 ulp below 1 where XLA:CPU gives 1 -- found through
// jax.grad of a GELU MLP, where 1 - tanh^2 multiplies x^3.)
struct Tanh {
  static mlir::Value build(const F32Builder& f32, mlir::Value a) {
    return tanhRational(f32, a, 7.99881172180175781);
  }
};

constexpr double kInfinity = std::numeric_limits<double>::infinity();

// Cephes' P with e^r = 1 + r + r^2 P(r) within 1 ulp of expf on [-ln2/2,
// ln2/2].
mlir::Value expPolynomial(const F32Builder& f32, mlir::Value r) {
  return f32.horner(r, {1.9875691500e-4, 1.3981999507e-3, 8.3334519073e-3, 4.1665795894e-2,
                        1.6666665459e-1, 5.0000001201e-1});
}

// x clamped to [lo, 89] (a NaN kept) as n ln2 + r with |r| <= ln2 / 2:
// n = round(x / ln2), r by Cody-Waite (ln2 in two parts). From 89 on, n is
// 128 and e^r > 1: scaled by 2^128, the result overflows to +inf.
std::pair<mlir::Value, mlir::Value> expReduction(const F32Builder& f32, mlir::Value x, double lo) {
  mlir::Value clamped = f32.clamp(x, lo, 89.0);
  mlir::Value n = f32.rewriter.create<mlir::math::RoundEvenOp>(
      f32.loc,
      f32.rewriter.create<mlir::arith::MulFOp>(f32.loc, clamped, f32.c(1.44269504088896341)));
  mlir::Value r = f32.fma(n, f32.c(-0.693359375), clamped);
  return {n, f32.fma(n, f32.c(2.12194440e-4), r)};
}

// 2^(e + offset) for an i32 e (of f32's shape) where it is a normal float:
// its exponent field.
mlir::Value powerOfTwo(const F32Builder& f32, mlir::Value e, int32_t offset = 0) {
  mlir::PatternRewriter& rewriter = f32.rewriter;
  mlir::Value bits = rewriter.create<mlir::arith::ShLIOp>(
      f32.loc, rewriter.create<mlir::arith::AddIOp>(f32.loc, e, f32.ci(127 + offset)),
      f32.ci(23));
  return rewriter.create<mlir::arith::BitcastOp>(f32.loc, f32.type, bits);
}

// `y`, or x itself where |x| < `bound` (below which the function rounds to
// x: -0 and subnormals kept).
mlir::Value tinyIsItself(const F32Builder& f32, mlir::Value x, mlir::Value y, double bound) {
  mlir::Value tiny = f32.cmp(mlir::arith::CmpFPredicate::OLT,
                             f32.rewriter.create<mlir::math::AbsFOp>(f32.loc, x), f32.c(bound));
  return f32.select(tiny, x, y);
}

// exp(x) for f32 in arithmetic LLVM vectorizes (a libm call does not):
// Cody-Waite reduction x = n ln2 + r (|r| <= ln2 / 2, ln2 in two parts),
// Cephes' degree-6 polynomial for e^r (within 1 ulp of expf on [-ln2/2,
// ln2/2]), and 2^n applied as two exponent-field scalings so that results
// down to the smallest subnormal are reached (with F32Builder's ldexp, one
// llvm.ldexp: AVX-512's VSCALEF, the same result in 3 instructions where
// the scalings take 8; A/B in one process, bits the same: the erf GELU
// 0.93x, the softmax steps 0.91-0.93x, the bf16 exp-sum 0.96x). x above ln(FLT_MAX) is +inf
// (the scaling overflows: x is clamped at 89, n = 128 and e^r > 1 there,
// so no compare and select is needed), below -104 0 (as the rounding would
// give), a NaN stays a NaN.
struct Exp {
  static mlir::Value build(const F32Builder& f32, mlir::Value x) {
    mlir::PatternRewriter& rewriter = f32.rewriter;
    mlir::Location loc = f32.loc;
    // Below -104 the result flushes to 0.
    auto [n, r] = expReduction(f32, x, -104.0);
    mlir::Value p = expPolynomial(f32, r);
    mlir::Value r2 = rewriter.create<mlir::arith::MulFOp>(loc, r, r);
    mlir::Value y = rewriter.create<mlir::arith::AddFOp>(loc, f32.fma(p, r2, r), f32.c(1.0));
    mlir::Value ni = rewriter.create<mlir::arith::FPToSIOp>(loc, f32.i32(), n);
    if (f32.ldexp) return rewriter.create<mlir::LLVM::LoadExpOp>(loc, f32.type, y, ni);
    // y * 2^n as y * 2^(n/2) * 2^(n - n/2): each factor a normal float.
    mlir::Value half = rewriter.create<mlir::arith::ShRSIOp>(loc, ni, f32.ci(1));
    mlir::Value rest = rewriter.create<mlir::arith::SubIOp>(loc, ni, half);
    return rewriter.create<mlir::arith::MulFOp>(
        loc, rewriter.create<mlir::arith::MulFOp>(loc, y, powerOfTwo(f32, half)),
        powerOfTwo(f32, rest));
  }
};

// exp(x) - 1 for f32, reduced as Exp is: x = n ln2 + r, e^r - 1 = r +
// r^2 P(r) (Exp's polynomial without its 1), and e^x - 1 = 2^n (e^r - 1) +
// (2^n - 1), evaluated as 2 (t (e^r - 1) + (t - 1/2)) with t = 2^(n-1): t
// is a normal float for every n the clamp leaves (-25 to 128), t - 1/2 is
// exact, the FMA rounds once, and doubling is exact. Below |x| = 2^-25 the
// result is x (x^2 / 2 is under half its ulp; -0 and subnormals kept),
// below -17.5 it rounds to -1, above ln(FLT_MAX) it is +inf (the doubling
// overflows, as Exp's scaling does); a NaN stays a NaN. Unlike libm's
// expm1f (a call) it vectorizes.
struct Expm1 {
  static mlir::Value build(const F32Builder& f32, mlir::Value x) {
    mlir::PatternRewriter& rewriter = f32.rewriter;
    mlir::Location loc = f32.loc;
    // Below -17.5 the result rounds to -1.
    auto [n, r] = expReduction(f32, x, -17.5);
    mlir::Value e = f32.fma(expPolynomial(f32, r), rewriter.create<mlir::arith::MulFOp>(loc, r, r),
                            r);
    mlir::Value t =
        powerOfTwo(f32, rewriter.create<mlir::arith::FPToSIOp>(loc, f32.i32(), n), -1);
    mlir::Value y = rewriter.create<mlir::arith::MulFOp>(
        loc, f32.fma(t, e, rewriter.create<mlir::arith::SubFOp>(loc, t, f32.c(0.5))), f32.c(2.0));
    return tinyIsItself(f32, x, y, 0x1p-25);
  }
};

// f64 arithmetic in the shape of an F32Builder's type (a scalar or a
// vector), for the functions computed in f64 and rounded once to f32.
struct F64Ops {
  const F32Builder& f32;
  mlir::Type type;

  explicit F64Ops(const F32Builder& f32) : f32(f32), type(f32.rewriter.getF64Type()) {
    if (auto vt = llvm::dyn_cast<mlir::VectorType>(f32.type)) type = vt.clone(type);
  }
  mlir::Value c(double v) const {
    mlir::TypedAttr attr = f32.rewriter.getF64FloatAttr(v);
    if (auto vt = llvm::dyn_cast<mlir::VectorType>(type)) {
      attr = mlir::DenseElementsAttr::get(vt, attr);
    }
    return f32.rewriter.create<mlir::arith::ConstantOp>(f32.loc, attr);
  }
  template <typename Op>
  mlir::Value op(mlir::Value a, mlir::Value b) const {
    return f32.rewriter.create<Op>(f32.loc, a, b);
  }
  mlir::Value add(mlir::Value a, mlir::Value b) const { return op<mlir::arith::AddFOp>(a, b); }
  mlir::Value sub(mlir::Value a, mlir::Value b) const { return op<mlir::arith::SubFOp>(a, b); }
  mlir::Value mul(mlir::Value a, mlir::Value b) const { return op<mlir::arith::MulFOp>(a, b); }
  mlir::Value round(mlir::Value a) const {
    return f32.rewriter.create<mlir::math::RoundEvenOp>(f32.loc, a);
  }
  mlir::Value widen(mlir::Value a) const {
    return f32.rewriter.create<mlir::arith::ExtFOp>(f32.loc, type, a);
  }
  mlir::Value horner(mlir::Value a, llvm::ArrayRef<double> coefficients) const {
    mlir::Value acc = c(coefficients.front());
    for (double k : coefficients.drop_front()) acc = f32.fma(acc, a, c(k));
    return acc;
  }
  mlir::Type integerType() const {
    mlir::Type i64 = f32.rewriter.getI64Type();
    if (auto vt = llvm::dyn_cast<mlir::VectorType>(type)) return vt.clone(i64);
    return i64;
  }
  mlir::Value ci(int64_t v) const {
    mlir::TypedAttr attr = f32.rewriter.getI64IntegerAttr(v);
    if (auto vt = llvm::dyn_cast<mlir::VectorType>(integerType())) {
      attr = mlir::DenseElementsAttr::get(vt, attr);
    }
    return f32.rewriter.create<mlir::arith::ConstantOp>(f32.loc, attr);
  }
  // A positive normal `a` as m 2^e: m in [1, 2) and e (i64) from its bits.
  std::pair<mlir::Value, mlir::Value> split(mlir::Value a) const {
    mlir::PatternRewriter& rewriter = f32.rewriter;
    mlir::Location loc = f32.loc;
    mlir::Value bits = rewriter.create<mlir::arith::BitcastOp>(loc, integerType(), a);
    mlir::Value e = rewriter.create<mlir::arith::SubIOp>(
        loc, rewriter.create<mlir::arith::ShRUIOp>(loc, bits, ci(52)), ci(1023));
    mlir::Value m = rewriter.create<mlir::arith::BitcastOp>(
        loc, type,
        rewriter.create<mlir::arith::OrIOp>(
            loc, rewriter.create<mlir::arith::AndIOp>(loc, bits, ci((int64_t{1} << 52) - 1)),
            ci(int64_t{1023} << 52)));
    return {m, e};
  }
  mlir::Value div(mlir::Value a, mlir::Value b) const { return op<mlir::arith::DivFOp>(a, b); }
  mlir::Value fma(mlir::Value a, mlir::Value b, mlir::Value d) const { return f32.fma(a, b, d); }
  mlir::Value abs(mlir::Value a) const {
    return f32.rewriter.create<mlir::math::AbsFOp>(f32.loc, a);
  }
  mlir::Value cmp(mlir::arith::CmpFPredicate p, mlir::Value a, mlir::Value b) const {
    return f32.cmp(p, a, b);
  }
  mlir::Value select(mlir::Value cond, mlir::Value a, mlir::Value b) const {
    return f32.select(cond, a, b);
  }
  mlir::Value clamp(mlir::Value a, double lo, double hi) const {
    return f32.clamp(a, c(lo), c(hi));
  }
  // The f64 `a`, an integer value, as an i64 of its shape.
  mlir::Value toInteger(mlir::Value a) const {
    return f32.rewriter.create<mlir::arith::FPToSIOp>(f32.loc, integerType(), a);
  }
  // 2^n for an i64 n within f64's normal exponents: its exponent field.
  mlir::Value pow2(mlir::Value n) const {
    mlir::PatternRewriter& rewriter = f32.rewriter;
    mlir::Location loc = f32.loc;
    return rewriter.create<mlir::arith::BitcastOp>(
        loc, type,
        rewriter.create<mlir::arith::ShLIOp>(
            loc, rewriter.create<mlir::arith::AddIOp>(loc, n, ci(1023)), ci(52)));
  }
};

// sin, cos and tan of f32 x, in f64 arithmetic LLVM vectorizes (libm's
// sinf is a call). The argument is reduced exactly for every float:
// x 2/pi = q + f with q an integer mod 4 and |f| <= 1/2, as the sum of x
// times 2/pi's bits in seven 29-bit chunks (kTwoOverPiChunks: 203 bits,
// enough for x up to FLT_MAX). Each product (24 x 29 bits) is exact in
// f64; its integer part is kept mod 4, its fraction added to f, which is
// brought back to [-1/2, 1/2] after each chunk, so that the sum of the
// fractions is exact until its terms are far below f's ulp. Then sin and
// cos of r = f pi/2 (|r| <= pi/4) as Taylor polynomials (truncation below
// 2^-36), picked and signed by q, and rounded once to f32: within 0.51 ulp
// over all floats (XLA:CPU's are within 0.56). Below |x| = 2^-12 sin and
// tan are x (-0 and subnormals kept); inf and NaN give NaN.
//
// A scalar below kCodyWaiteBound in magnitude (every argument but huge
// ones) is reduced in 5 operations instead of 77 (reduceSmallAngle), the
// rest by a call of the exact reduction (HostTrig): see there.
constexpr int64_t kTwoOverPiChunks[] = {0x145f306d, 0x19391054, 0x14fe13ab, 0x1d1f534d,
                                        0x1b81b6c5, 0x05664f10, 0x1c820ff2};

struct ReducedAngle {
  mlir::Value sin, cos;  // of r, in f64
  mlir::Value odd;       // q & 1: sin and cos of x are cos and sin of r
  mlir::Value q;         // q mod 4, i32
};

// sin and cos of the f64 `r` (|r| <= pi/4) and the quadrant of the
// integer-valued f64 `q`.
ReducedAngle anglePolynomials(const F32Builder& f32, mlir::Value r, mlir::Value q) {
  mlir::PatternRewriter& rewriter = f32.rewriter;
  mlir::Location loc = f32.loc;
  F64Ops d(f32);
  mlir::Value r2 = d.mul(r, r);
  mlir::Value sinR = f32.fma(
      d.mul(r, r2),
      d.horner(r2, {-1.0 / 39916800, 1.0 / 362880, -1.0 / 5040, 1.0 / 120, -1.0 / 6}), r);
  mlir::Value cosR = f32.fma(
      r2, d.horner(r2, {-1.0 / 3628800, 1.0 / 40320, -1.0 / 720, 1.0 / 24, -0.5}), d.c(1.0));
  mlir::Value qi = rewriter.create<mlir::arith::AndIOp>(
      loc, rewriter.create<mlir::arith::FPToSIOp>(loc, f32.i32(), q), f32.ci(3));
  mlir::Value odd = rewriter.create<mlir::arith::CmpIOp>(
      loc, mlir::arith::CmpIPredicate::ne,
      rewriter.create<mlir::arith::AndIOp>(loc, qi, f32.ci(1)), f32.ci(0));
  return {sinR, cosR, odd, qi};
}

ReducedAngle reduceAngle(const F32Builder& f32, mlir::Value x) {
  mlir::PatternRewriter& rewriter = f32.rewriter;
  mlir::Location loc = f32.loc;
  F64Ops d(f32);
  mlir::Value wide = d.widen(x);
  mlir::Value f = d.c(0.0), q = d.c(0.0);
  for (size_t i = 0; i < std::size(kTwoOverPiChunks); ++i) {
    mlir::Value t = d.mul(wide, d.c(std::ldexp(static_cast<double>(kTwoOverPiChunks[i]),
                                               -29 * static_cast<int>(i + 1))));
    mlir::Value whole = d.round(t);
    // whole mod 4, exactly.
    mlir::Value quarters = rewriter.create<mlir::math::FloorOp>(loc, d.mul(whole, d.c(0.25)));
    q = d.add(q, f32.fma(quarters, d.c(-4.0), whole));
    f = d.add(f, d.sub(t, whole));
    mlir::Value carry = d.round(f);
    f = d.sub(f, carry);
    q = d.add(q, carry);
  }
  return anglePolynomials(f32, d.mul(f, d.c(1.5707963267948966)), q);
}

// Below 2^24 in magnitude, x = k pi/2 + r by Cody-Waite in f64: k =
// round(x 2/pi) has at most 24 bits, pi/2's first part 29 (k P1 is exact,
// and so is x - k P1: the two are within a factor of 2 of each other), the
// other two parts 53 each, each FMA rounding once. Over every float in
// [2^-12, 2^24) |r| is at least 2^-27.8 (x = 252.898, k = 161), so r is
// within a few f64 ulp of exact: the results are within 0.51 ulp, as the
// exact reduction's. inf and NaN give NaN here too.
constexpr double kCodyWaiteBound = 0x1p24;

ReducedAngle reduceSmallAngle(const F32Builder& f32, mlir::Value x) {
  F64Ops d(f32);
  mlir::Value wide = d.widen(x);
  mlir::Value k = d.round(d.mul(wide, d.c(0x1.45f306dc9c883p-1)));
  mlir::Value r = f32.fma(k, d.c(-0x1.921fb54p+0), wide);
  r = f32.fma(k, d.c(-0x1.10b4611a62633p-30), r);
  r = f32.fma(k, d.c(-0x1.45c06e0e68948p-86), r);
  return anglePolynomials(f32, r, k);
}

// The f64 `value`, negated where bit `bit` of `q` is set, rounded to f32.
mlir::Value signedByQuadrant(const F32Builder& f32, mlir::Value value, mlir::Value q,
                             int32_t bit) {
  mlir::PatternRewriter& rewriter = f32.rewriter;
  mlir::Location loc = f32.loc;
  mlir::Value negative = rewriter.create<mlir::arith::CmpIOp>(
      loc, mlir::arith::CmpIPredicate::ne,
      rewriter.create<mlir::arith::AndIOp>(loc, q, f32.ci(bit)), f32.ci(0));
  value = f32.select(negative, rewriter.create<mlir::arith::NegFOp>(loc, value), value);
  return rewriter.create<mlir::arith::TruncFOp>(loc, f32.type, value);
}

// Below |x| = 2^-12, sin and tan are x: x^3 / 3 is under half x's ulp.
constexpr double kTrigTiny = 0x1p-12;

// Each of sin, cos and tan from x's reduced angle (fromAngle); ExactTrig
// reduces it exactly.
struct Sin {
  static constexpr llvm::StringLiteral kName = "sin";
  static mlir::Value fromAngle(const F32Builder& f32, mlir::Value x, const ReducedAngle& a) {
    // q = 0, 1, 2, 3: sin r, cos r, -sin r, -cos r.
    mlir::Value v = f32.select(a.odd, a.cos, a.sin);
    return tinyIsItself(f32, x, signedByQuadrant(f32, v, a.q, 2), kTrigTiny);
  }
};

struct Cos {
  static constexpr llvm::StringLiteral kName = "cos";
  static mlir::Value fromAngle(const F32Builder& f32, mlir::Value, const ReducedAngle& a) {
    // q = 0, 1, 2, 3: cos r, -sin r, -cos r, sin r: negative where q + 1
    // has bit 2.
    mlir::Value v = f32.select(a.odd, a.sin, a.cos);
    mlir::Value q1 = f32.rewriter.create<mlir::arith::AddIOp>(f32.loc, a.q, f32.ci(1));
    return signedByQuadrant(f32, v, q1, 2);
  }
};

struct Tan {
  static constexpr llvm::StringLiteral kName = "tan";
  static mlir::Value fromAngle(const F32Builder& f32, mlir::Value x, const ReducedAngle& a) {
    // Even q: sin r / cos r; odd q: -cos r / sin r.
    mlir::PatternRewriter& rewriter = f32.rewriter;
    mlir::Value ratio = rewriter.create<mlir::arith::DivFOp>(
        f32.loc, f32.select(a.odd, a.cos, a.sin), f32.select(a.odd, a.sin, a.cos));
    mlir::Value sign = f32.select(a.odd, f32.ci(1), f32.ci(0));
    return tinyIsItself(f32, x, signedByQuadrant(f32, ratio, sign, 1), kTrigTiny);
  }
};

// sin, cos or tan (`Function`) with the exact reduction: for a vector of
// f32, and in the function HostTrig calls past kCodyWaiteBound.
template <typename Function>
struct ExactTrig {
  static mlir::Value build(const F32Builder& f32, mlir::Value x) {
    return Function::fromAngle(f32, x, reduceAngle(f32, x));
  }
};

// The function with the exact reduction of trig function `name` (sin,
// cos, tan) that HostTrig calls past kCodyWaiteBound.
std::string hostTrigName(llvm::StringRef name) { return ("xla_gpu_host_" + name + "_f32").str(); }

// The scalar `op` replaced by `fast`, or where `huge` holds by a call of
// `exact` (of op's operands), in a block of its own.
void replaceByBranch(mlir::PatternRewriter& rewriter, mlir::Operation* op, mlir::Value huge,
                     mlir::func::FuncOp exact, mlir::Value fast) {
  mlir::Location loc = op->getLoc();
  llvm::SmallVector<mlir::Value> operands(op->getOperands());
  mlir::Block* before = op->getBlock();
  mlir::Block* after = rewriter.splitBlock(before, op->getIterator());
  mlir::Value result = after->addArgument(op->getResult(0).getType(), loc);
  mlir::Block* call = rewriter.createBlock(after);
  auto exactValue = rewriter.create<mlir::func::CallOp>(loc, exact, operands);
  rewriter.create<mlir::cf::BranchOp>(loc, after, exactValue.getResults());
  rewriter.setInsertionPointToEnd(before);
  rewriter.create<mlir::cf::CondBranchOp>(loc, huge, call, mlir::ValueRange{}, after,
                                          mlir::ValueRange{fast});
  rewriter.replaceOp(op, result);
}

// The host's scalar f32 sin, cos and tan: Cody-Waite below kCodyWaiteBound,
// and past it (or at inf) a call of the function with the exact reduction,
// `xla_gpu_host_<name>_f32` (addHostTrigFunctions), which the loop
// vectorizer turns into a call of a masked vector variant (HostJit.cpp
// makes those), run only for a vector with a huge lane. So the common
// case costs the short reduction: the bench's sin + cos 0.37x the time
// of the exact reduction's (A/B in one process, one thread, bits the
// same). Where a lane loop is not vectorized, the scalar call runs for
// huge arguments only.
template <typename Op, typename Function>
struct HostTrig : public mlir::OpRewritePattern<Op> {
  using mlir::OpRewritePattern<Op>::OpRewritePattern;
  mlir::LogicalResult matchAndRewrite(Op op, mlir::PatternRewriter& rewriter) const override {
    if (!op.getType().isF32()) return rewriter.notifyMatchFailure(op, "only a scalar f32");
    auto module = op->template getParentOfType<mlir::ModuleOp>();
    auto exact = module.template lookupSymbol<mlir::func::FuncOp>(hostTrigName(Function::kName));
    if (!exact) return rewriter.notifyMatchFailure(op, "no exact function");
    mlir::Location loc = op.getLoc();
    F32Builder f32{rewriter, loc, op.getType(), /*host=*/true};
    mlir::Value x = op.getOperand();
    mlir::Value fast = Function::fromAngle(f32, x, reduceSmallAngle(f32, x));
    // NaN takes the short way (unordered: not OGE), inf the exact one.
    mlir::Value huge = f32.cmp(mlir::arith::CmpFPredicate::OGE,
                               rewriter.create<mlir::math::AbsFOp>(loc, x),
                               f32.c(kCodyWaiteBound));
    replaceByBranch(rewriter, op, huge, exact, fast);
    return mlir::success();
  }
};

// The functions HostFmod calls where its short way does not hold: libm's
// fmodf and fmod (arith.remf, which LLVM makes a call).
std::string hostFmodName(mlir::Type type) {
  return type.isF64() ? "xla_gpu_host_fmod_f64" : "xla_gpu_host_fmod_f32";
}

// The host's scalar f32 and f64 remainder (XLA's: C's fmod, arith.remf),
// exact, in f64 arithmetic LLVM vectorizes, where fmodf is a call of a
// loop over the quotient's bits: jnp.mod(x, 2 pi) of 4M floats ran 75 ms.
// With X = |x| and Y = |y| (f32's exact in f64) and X < 2^51 Y, q =
// trunc(X / Y) is the integer quotient n or n + 1 (the f64 quotient is
// below 2^51; rounding never passes n, an f64, and reaches n + 1 only
// from within half an ulp), X - qY is exact by one FMA (below Y in
// magnitude and a multiple of the smaller of X's and Y's last bits: it
// has no more bits than they), and Y added where it is negative gives X -
// nY, the remainder, which x's type holds exactly; then x's sign (fmod(-4,
// 2) is -0). Past 2^51 Y, and for y = 0 or inf or x inf or NaN (where X <
// 2^51 Y fails or Y is inf), a call of libm's through
// `xla_gpu_host_fmod_<type>`, which the loop vectorizer calls through a
// masked vector variant (HostTrig's way: only for a vector with such a
// lane).
struct HostFmod : public mlir::OpRewritePattern<mlir::arith::RemFOp> {
  using OpRewritePattern::OpRewritePattern;
  mlir::LogicalResult matchAndRewrite(mlir::arith::RemFOp op,
                                      mlir::PatternRewriter& rewriter) const override {
    mlir::Type type = op.getType();
    if (!type.isF32() && !type.isF64()) {
      return rewriter.notifyMatchFailure(op, "only a scalar f32 or f64");
    }
    std::string name = hostFmodName(type);
    auto parent = op->getParentOfType<mlir::func::FuncOp>();
    if (parent && parent.getName() == name) {
      return rewriter.notifyMatchFailure(op, "libm's own call");
    }
    auto module = op->getParentOfType<mlir::ModuleOp>();
    auto exact = module.lookupSymbol<mlir::func::FuncOp>(name);
    if (!exact) return rewriter.notifyMatchFailure(op, "no libm function");
    using P = mlir::arith::CmpFPredicate;
    mlir::Location loc = op.getLoc();
    F32Builder f32{rewriter, loc, type, /*host=*/true};
    F64Ops d(f32);
    auto widen = [&](mlir::Value v) { return type.isF64() ? v : d.widen(v); };
    mlir::Value x = op.getLhs();
    mlir::Value big = d.abs(widen(x));
    mlir::Value divisor = d.abs(widen(op.getRhs()));
    mlir::Value q = rewriter.create<mlir::math::TruncOp>(loc, d.div(big, divisor));
    mlir::Value r = d.fma(rewriter.create<mlir::arith::NegFOp>(loc, q), divisor, big);
    mlir::Value negative = d.cmp(P::OLT, r, d.c(0.0));
    r = d.select(negative, d.add(r, divisor), r);
    if (!type.isF64()) r = rewriter.create<mlir::arith::TruncFOp>(loc, type, r);
    mlir::Value fast = rewriter.create<mlir::math::CopySignOp>(loc, r, x);
    // Unordered: a NaN takes libm's way.
    mlir::Value past = d.cmp(P::UGE, big, d.mul(divisor, d.c(0x1p51)));
    mlir::Value infinite = d.cmp(P::UGE, divisor, d.c(kInfinity));
    mlir::Value libm = rewriter.create<mlir::arith::OrIOp>(loc, past, infinite);
    replaceByBranch(rewriter, op, libm, exact, fast);
    return mlir::success();
  }
};

// C99's special cases of pow(x, y) over `r`, its value through e^(y
// log|x|) (x, y, r of the builder's type: f32 or f64, a scalar or a
// vector): x's sign (its bit, for -0) where y is an odd integer (below
// 2^24 or 2^53 in magnitude: every float past it is even), NaN for a
// negative finite x to a finite non-integer y, and 1 for y = +-0, x = 1
// and x = -1 to +-inf. Zeros, infinities and NaN go through log|x| = -inf,
// inf, NaN.
mlir::Value powSpecialCases(const F32Builder& b, mlir::Value x, mlir::Value y, mlir::Value r) {
  mlir::PatternRewriter& rewriter = b.rewriter;
  mlir::Location loc = b.loc;
  using P = mlir::arith::CmpFPredicate;
  mlir::Type element = mlir::getElementTypeOrSelf(b.type);
  unsigned bits = element.getIntOrFloatBitWidth();
  mlir::Type integer = rewriter.getIntegerType(bits);
  if (auto vt = llvm::dyn_cast<mlir::VectorType>(b.type)) integer = vt.clone(integer);
  auto c = [&](double v) { return b.splat(rewriter.getFloatAttr(element, v)); };
  auto ci = [&](int64_t v) {
    return b.splat(rewriter.getIntegerAttr(mlir::getElementTypeOrSelf(integer), v));
  };
  auto both = [&](mlir::Value u, mlir::Value v) {
    return rewriter.create<mlir::arith::AndIOp>(loc, u, v).getResult();
  };
  mlir::Value floorY = rewriter.create<mlir::math::FloorOp>(loc, y);
  mlir::Value absY = rewriter.create<mlir::math::AbsFOp>(loc, y);
  mlir::Value small = b.cmp(P::OLT, absY, c(bits == 32 ? 0x1p24 : 0x1p53));
  mlir::Value odd = both(
      both(b.cmp(P::OEQ, floorY, y), small),
      rewriter.create<mlir::arith::CmpIOp>(
          loc, mlir::arith::CmpIPredicate::ne,
          rewriter.create<mlir::arith::AndIOp>(
              loc, rewriter.create<mlir::arith::FPToSIOp>(loc, integer, b.select(small, y, c(0.0))),
              ci(1)),
          ci(0)));
  mlir::Value xNegative = rewriter.create<mlir::arith::CmpIOp>(
      loc, mlir::arith::CmpIPredicate::slt,
      rewriter.create<mlir::arith::BitcastOp>(loc, integer, x), ci(0));
  r = b.select(both(odd, xNegative), rewriter.create<mlir::arith::NegFOp>(loc, r), r);
  mlir::Value finiteNegative = both(b.cmp(P::OLT, x, c(0.0)), b.cmp(P::ONE, x, c(-kInfinity)));
  mlir::Value fraction = both(b.cmp(P::ONE, floorY, y), b.cmp(P::OLT, absY, c(kInfinity)));
  r = b.select(both(finiteNegative, fraction), c(std::numeric_limits<double>::quiet_NaN()), r);
  mlir::Value one = rewriter.create<mlir::arith::OrIOp>(
      loc, b.cmp(P::OEQ, y, c(0.0)),
      rewriter.create<mlir::arith::OrIOp>(
          loc, b.cmp(P::OEQ, x, c(1.0)),
          both(b.cmp(P::OEQ, x, c(-1.0)), b.cmp(P::OEQ, absY, c(kInfinity)))));
  return b.select(one, c(1.0), r);
}

// pow(x, y) for f32 in f64 arithmetic LLVM vectorizes (libm's powf is a
// call): 2^(y log2|x|), rounded once to f32. log2|x| = e + log2(m) with m
// in [sqrt(1/2), sqrt(2)) read off x's f64 bits (f32 subnormals are f64
// normals), log(m) = 2 atanh(s) with s = (m - 1) / (m + 1) (|s| <= 0.172,
// the odd series to s^17: below 2^-50); 2^t = 2^n e^(g ln2) with n =
// round(t), |g| <= 1/2 (Taylor to degree 11: below 2^-47), 2^n an f64
// exponent field. t is clamped to [-152, 129], beyond which the f32 result
// is 0 or inf. Within 0.51 ulp; XLA:CPU's powf is within 0.502. The special
// cases are C99's (as libm gives them): pow(x, +-0) = pow(1, y) = 1 (NaN
// too), pow(-1, +-inf) = 1, NaN otherwise propagates, a negative finite x
// to a finite non-integer y is NaN, and an odd integer y keeps x's sign
// (-0 and -inf too).
struct Pow {
  static mlir::Value build(const F32Builder& f32, mlir::Value x, mlir::Value y) {
    mlir::PatternRewriter& rewriter = f32.rewriter;
    F64Ops d(f32);
    mlir::Location loc = f32.loc;
    using P = mlir::arith::CmpFPredicate;
    // log2|x| in f64.
    mlir::Value ax = d.widen(rewriter.create<mlir::math::AbsFOp>(loc, x));
    auto [m, e] = d.split(ax);
    mlir::Value ef = rewriter.create<mlir::arith::SIToFPOp>(loc, d.type, e);
    mlir::Value big = f32.cmp(P::OGT, m, d.c(1.4142135623730951));
    m = f32.select(big, d.mul(m, d.c(0.5)), m);
    ef = f32.select(big, d.add(ef, d.c(1.0)), ef);
    mlir::Value s = rewriter.create<mlir::arith::DivFOp>(loc, d.sub(m, d.c(1.0)),
                                                         d.add(m, d.c(1.0)));
    mlir::Value s2 = d.mul(s, s);
    // 2 atanh(s) / ln2 = s (2 / ln2) (1 + s^2 / 3 + s^4 / 5 + ...).
    llvm::SmallVector<double> series;
    for (int k = 17; k >= 1; k -= 2) series.push_back(2.0 / (k * M_LN2));
    mlir::Value lg = f32.fma(d.mul(s, s2), d.horner(s2, llvm::ArrayRef(series).drop_back()),
                             d.mul(s, d.c(series.back())));
    lg = d.add(ef, lg);
    lg = f32.select(f32.cmp(P::OEQ, ax, d.c(0.0)), d.c(-kInfinity), lg);
    // inf and NaN are their own log2.
    lg = f32.select(f32.cmp(P::UGE, ax, d.c(kInfinity)), ax, lg);
    // 2^(y log2|x|); a NaN stays a NaN through the clamp.
    mlir::Value t = f32.clamp(d.mul(d.widen(y), lg), d.c(-152.0), d.c(129.0));
    mlir::Value n = d.round(t);
    mlir::Value z = d.mul(d.sub(t, n), d.c(M_LN2));
    llvm::SmallVector<double> taylor;
    double factorial = 1.0;
    for (int k = 1; k <= 11; ++k) factorial *= k;
    for (int k = 11; k >= 0; --k) {
      taylor.push_back(1.0 / factorial);
      if (k > 0) factorial /= k;
    }
    mlir::Value scale =
        d.pow2(rewriter.create<mlir::arith::FPToSIOp>(loc, d.integerType(), n));
    mlir::Value r = rewriter.create<mlir::arith::TruncFOp>(
        loc, f32.type, d.mul(d.horner(z, taylor), scale));
    return powSpecialCases(f32, x, y, r);
  }
};

// atan2(y, x) for f32 in f64 arithmetic LLVM vectorizes (libm's atan2f is
// a call): atan(a) of a = min(|x|, |y|) / max(|x|, |y|) in [0, 1], halved
// twice (atan(a) = 2 atan(a / (1 + sqrt(1 + a^2))), leaving |c| <=
// tan(pi/16)) and the odd Taylor series to c^15 (below 2^-40), then pi/2 -
// it where |y| > |x|, pi - it where x's sign bit is set, y's sign; rounded
// once to f32. C99's special cases follow: atan2(+-0, +-0) is +-0 or +-pi
// by x's sign bit, two infinities +-pi/4 or +-3pi/4, NaN gives NaN.
struct Atan2 {
  static mlir::Value build(const F32Builder& f32, mlir::Value y, mlir::Value x) {
    mlir::PatternRewriter& rewriter = f32.rewriter;
    F64Ops d(f32);
    mlir::Location loc = f32.loc;
    using P = mlir::arith::CmpFPredicate;
    mlir::Value ay = d.widen(rewriter.create<mlir::math::AbsFOp>(loc, y));
    mlir::Value ax = d.widen(rewriter.create<mlir::math::AbsFOp>(loc, x));
    mlir::Value swap = f32.cmp(P::OGT, ay, ax);
    mlir::Value lo = f32.select(swap, ax, ay), hi = f32.select(swap, ay, ax);
    // lo / hi, with 0 / 0 = 0 and inf / inf = 1; a NaN stays a NaN.
    mlir::Value a = f32.select(
        f32.cmp(P::OEQ, hi, d.c(0.0)), d.c(0.0),
        f32.select(f32.cmp(P::OEQ, lo, hi), d.c(1.0),
                   rewriter.create<mlir::arith::DivFOp>(loc, lo, hi)));
    for (int i = 0; i < 2; ++i) {
      mlir::Value root =
          rewriter.create<mlir::math::SqrtOp>(loc, f32.fma(a, a, d.c(1.0)));
      a = rewriter.create<mlir::arith::DivFOp>(loc, a, d.add(root, d.c(1.0)));
    }
    mlir::Value a2 = d.mul(a, a);
    llvm::SmallVector<double> series;
    for (int k = 15; k >= 3; k -= 2) series.push_back((k % 4 == 1 ? 1.0 : -1.0) / k);
    mlir::Value r = d.mul(f32.fma(d.mul(a, a2), d.horner(a2, series), a), d.c(4.0));
    r = f32.select(swap, d.sub(d.c(M_PI_2), r), r);
    auto signBit = [&](mlir::Value v) -> mlir::Value {
      return rewriter.create<mlir::arith::CmpIOp>(
          loc, mlir::arith::CmpIPredicate::slt,
          rewriter.create<mlir::arith::BitcastOp>(loc, f32.i32(), v), f32.ci(0));
    };
    r = f32.select(signBit(x), d.sub(d.c(M_PI), r), r);
    r = f32.select(signBit(y), rewriter.create<mlir::arith::NegFOp>(loc, r), r);
    // A NaN operand (which 0 / 0's select can drop) gives NaN.
    return f32.select(f32.cmp(P::UNO, y, x), rewriter.create<mlir::arith::AddFOp>(loc, y, x),
                      rewriter.create<mlir::arith::TruncFOp>(loc, f32.type, r));
  }
};

// cbrt(x) for f32 in f64 arithmetic LLVM vectorizes (libm's cbrtf is a
// call): |x| = m 2^(3q + k) from its f64 bits (k in 0..2), the cube root of
// m 2^k in [1, 8) from a cubic guess (within 1.4 %) and three Newton steps
// y = (2y + a / y^2) / 3 (error squared each: below 2^-49), times 2^q as an
// f64 exponent field, x's sign, rounded once to f32. Zeros, infinities and
// NaN are themselves.
struct Cbrt {
  static mlir::Value build(const F32Builder& f32, mlir::Value x) {
    mlir::PatternRewriter& rewriter = f32.rewriter;
    mlir::Location loc = f32.loc;
    F64Ops d(f32);
    mlir::Type i64 = d.integerType();
    mlir::Value ax = d.widen(rewriter.create<mlir::math::AbsFOp>(loc, x));
    auto [m, e] = d.split(ax);
    mlir::Value ef = rewriter.create<mlir::arith::SIToFPOp>(loc, d.type, e);
    mlir::Value q = rewriter.create<mlir::math::FloorOp>(loc, d.mul(ef, d.c(1.0 / 3)));
    mlir::Value k = f32.fma(q, d.c(-3.0), ef);
    using P = mlir::arith::CmpFPredicate;
    mlir::Value a = d.mul(m, f32.select(f32.cmp(P::OEQ, k, d.c(0.0)), d.c(1.0),
                                        f32.select(f32.cmp(P::OEQ, k, d.c(1.0)), d.c(2.0),
                                                   d.c(4.0))));
    mlir::Value y = d.horner(a, {0.0019168345, -0.0374981214, 0.3400291293, 0.7091206996});
    for (int i = 0; i < 3; ++i) {
      mlir::Value quotient = rewriter.create<mlir::arith::DivFOp>(loc, a, d.mul(y, y));
      y = d.mul(f32.fma(y, d.c(2.0), quotient), d.c(1.0 / 3));
    }
    mlir::Value scale = d.pow2(rewriter.create<mlir::arith::FPToSIOp>(loc, i64, q));
    mlir::Value r = rewriter.create<mlir::arith::TruncFOp>(loc, f32.type, d.mul(y, scale));
    r = rewriter.create<mlir::math::CopySignOp>(loc, r, x);
    // 0, inf and NaN.
    mlir::Value special = rewriter.create<mlir::arith::OrIOp>(
        loc, f32.cmp(P::OEQ, x, f32.c(0.0)),
        f32.cmp(P::UGE, rewriter.create<mlir::math::AbsFOp>(loc, x), f32.c(kInfinity)));
    return f32.select(special, x, r);
  }
};

// erf(x) as XLA:CPU's (Eigen's rational interpolant, FMA Horner): x P(x^2)
// / Q(x^2) for |x| below 3.832506856900711, where erf rounds to 1 in f32,
// and copysign(1, x) from there; a NaN stays a NaN. Unlike libm's erff it
// vectorizes, and its bits are XLA:CPU's.
struct Erf {
  static mlir::Value build(const F32Builder& f32, mlir::Value x) {
    mlir::PatternRewriter& rewriter = f32.rewriter;
    mlir::Location loc = f32.loc;
    mlir::Value saturated = f32.cmp(mlir::arith::CmpFPredicate::OLE, f32.c(3.832506856900711),
                                    rewriter.create<mlir::math::AbsFOp>(loc, x));
    return f32.select(saturated, rewriter.create<mlir::math::CopySignOp>(loc, f32.c(1.0), x),
                      erfRational(f32, x));
  }
};

// log(x) for f32 in arithmetic LLVM vectorizes: x = m 2^e with m in
// [sqrt(1/2), sqrt(2)) read off the bits (subnormals scaled by 2^23 first),
// log(m) = f - f^2/2 + f^3 P(f) with f = m - 1 (Cephes' degree-8 P), plus
// e ln2 in two parts. x < 0 and NaN give NaN, 0 gives -inf, +inf gives
// +inf.
struct Log {
  static mlir::Value build(const F32Builder& f32, mlir::Value x) {
    mlir::PatternRewriter& rewriter = f32.rewriter;
    mlir::Location loc = f32.loc;
    mlir::Type type = f32.type;
    mlir::Type i32 = f32.i32();
    using P = mlir::arith::CmpFPredicate;
    // Subnormals: scaled into the normal range, the exponent corrected.
    mlir::Value subnormal = f32.cmp(P::OLT, x, f32.c(1.17549435e-38));
    mlir::Value normal =
        f32.select(subnormal, rewriter.create<mlir::arith::MulFOp>(loc, x, f32.c(8388608.0)), x);
    mlir::Value bits = rewriter.create<mlir::arith::BitcastOp>(loc, i32, normal);
    mlir::Value e = rewriter.create<mlir::arith::SubIOp>(
        loc, rewriter.create<mlir::arith::ShRUIOp>(loc, bits, f32.ci(23)),
        f32.select(subnormal, f32.ci(127 + 23), f32.ci(127)));
    mlir::Value m = rewriter.create<mlir::arith::BitcastOp>(
        loc, type,
        rewriter.create<mlir::arith::OrIOp>(
            loc, rewriter.create<mlir::arith::AndIOp>(loc, bits, f32.ci(0x7fffff)),
            f32.ci(0x3f800000)));
    mlir::Value ef = rewriter.create<mlir::arith::SIToFPOp>(loc, type, e);
    // m in [sqrt(1/2), sqrt(2)).
    mlir::Value big = f32.cmp(P::OGT, m, f32.c(1.41421356237309505));
    m = f32.select(big, rewriter.create<mlir::arith::MulFOp>(loc, m, f32.c(0.5)), m);
    ef = f32.select(big, rewriter.create<mlir::arith::AddFOp>(loc, ef, f32.c(1.0)), ef);
    mlir::Value f = rewriter.create<mlir::arith::SubFOp>(loc, m, f32.c(1.0));
    mlir::Value z = rewriter.create<mlir::arith::MulFOp>(loc, f, f);
    mlir::Value p = f32.horner(f, {7.0376836292e-2, -1.1514610310e-1, 1.1676998740e-1,
                                   -1.2420140846e-1, 1.4249322787e-1, -1.6668057665e-1,
                                   2.0000714765e-1, -2.4999993993e-1, 3.3333331174e-1});
    mlir::Value y = rewriter.create<mlir::arith::MulFOp>(
        loc, rewriter.create<mlir::arith::MulFOp>(loc, f, z), p);
    y = f32.fma(ef, f32.c(-2.12194440e-4), y);
    y = f32.fma(z, f32.c(-0.5), y);
    mlir::Value r = rewriter.create<mlir::arith::AddFOp>(loc, f, y);
    r = f32.fma(ef, f32.c(0.693359375), r);
    // The special values.
    r = f32.select(f32.cmp(P::OEQ, x, f32.c(0.0)),
                   f32.c(-kInfinity), r);
    r = f32.select(f32.cmp(P::OEQ, x, f32.c(kInfinity)), x, r);
    // x < 0 or NaN: NaN.
    r = f32.select(f32.cmp(P::OGE, x, f32.c(0.0)), r,
                   f32.c(std::numeric_limits<float>::quiet_NaN()));
    return r;
  }
};

// log(1 + x) for f32 as Log of u = 1 + x plus u's rounding error over u:
// log(1 + x) = log(u) + c / u to first order, where c = (1 + x) - u,
// exact as Fast2Sum computes it (the larger magnitude first). Below |x| =
// 2^-25 the result is x (-0 and subnormals kept), at -1 it is -inf, +inf
// stays +inf, below -1 and NaN give NaN. Unlike libm's log1pf (a call) it
// vectorizes.
struct Log1p {
  static mlir::Value build(const F32Builder& f32, mlir::Value x) {
    mlir::PatternRewriter& rewriter = f32.rewriter;
    mlir::Location loc = f32.loc;
    using P = mlir::arith::CmpFPredicate;
    mlir::Value one = f32.c(1.0);
    mlir::Value u = rewriter.create<mlir::arith::AddFOp>(loc, x, one);
    mlir::Value abs = rewriter.create<mlir::math::AbsFOp>(loc, x);
    mlir::Value big = f32.cmp(P::OGT, abs, one);
    mlir::Value c = rewriter.create<mlir::arith::SubFOp>(
        loc, f32.select(big, one, x),
        rewriter.create<mlir::arith::SubFOp>(loc, u, f32.select(big, x, one)));
    mlir::Value r = rewriter.create<mlir::arith::AddFOp>(
        loc, Log::build(f32, u), rewriter.create<mlir::arith::DivFOp>(loc, c, u));
    r = f32.select(f32.cmp(P::OEQ, x, f32.c(kInfinity)), x, r);
    r = f32.select(f32.cmp(P::OEQ, x, f32.c(-1.0)), f32.c(-kInfinity), r);
    return tinyIsItself(f32, x, r, 0x1p-25);
  }
};

// f64 functions on the host in arithmetic LLVM vectorizes: exp, expm1,
// log, log1p, tanh, sin, cos, tan, atan2, cbrt, pow and erf, which were
// calls (MathToLLVM's intrinsics or libm's) that kept their loops scalar:
// f64 tanh of 1M elements took 7.6 ms, XLA:CPU's vectorized one 0.26.
// Each is built on an F32Builder whose type is the op's f64 one (F64Ops'
// arithmetic); each but tanh is within 1 ulp of the exact values
// (test_cpu_math_f64.py), where XLA:CPU's own exp, expm1 and log1p miss
// by up to 1.5, 4.1 and 128 ulp (its others are libm's); tanh is
// XLA:CPU's own (Tanh64), its bits.

// x clamped to [lo, 710] (a NaN kept) as k ln2 + r, k = round(x / ln2),
// |r| <= ln2 / 2, r = hi + lo: hi = x - k ln2hi exact (an FMA; fdlibm's
// ln2hi has 32 bits), lo = -k ln2lo. Then t = e^r - 1 = hi + tLow, tLow =
// lo + r^2 q(r) with q's Taylor coefficients 1/n! to n = 13 (the next
// term is below 2^-57 of e^r) and r = hi + lo rounded, returned unsummed
// (k, hi, tLow). An `extra` small term (pow's low part of x) joins lo.
struct ReducedExp64 {
  mlir::Value k;  // f64, an integer
  mlir::Value hi, tLow;
};
ReducedExp64 reduceExp64Pair(const F64Ops& d, mlir::Value x, double lo,
                             mlir::Value extra = nullptr) {
  mlir::Value clamped = d.clamp(x, lo, 710.0);
  mlir::Value k = d.round(d.mul(clamped, d.c(1.4426950408889634)));
  mlir::Value hi = d.fma(k, d.c(-6.93147180369123816490e-01), clamped);
  mlir::Value low = d.mul(k, d.c(-1.90821492927058770002e-10));
  if (extra) low = d.add(low, extra);
  mlir::Value r = d.add(hi, low);
  mlir::Value q = d.horner(r, {1.0 / 6227020800.0, 1.0 / 479001600.0, 1.0 / 39916800.0,
                               1.0 / 3628800.0, 1.0 / 362880.0, 1.0 / 40320.0, 1.0 / 5040.0,
                               1.0 / 720.0, 1.0 / 120.0, 1.0 / 24.0, 1.0 / 6.0, 0.5});
  // r's rounding, r_exact - r (Fast2Sum: |hi| >= |lo|), moves e^r - 1 by
  // about (r - r_exact) e^r: its first order added (1.15 -> 0.78 ulp for
  // expm1 near x = 0.35, where t ~ -0.29 cancels 1/2 of T - 1/2).
  mlir::Value rError = d.add(d.sub(hi, r), low);
  return {k, hi, d.fma(d.mul(r, r), q, d.fma(rError, r, low))};
}

// exp(x) for f64: 2^k (1 + t) as above (within 0.8 ulp: t's sum and 1 + t
// each round once), scaled by two exponent-field multiplies 2^(k/2) 2^(k -
// k/2), each a normal double for every k the clamp leaves (-1076 to 1024),
// the second the only rounding of a subnormal result (it runs on vectors:
// the LLVM dialect's ldexp takes a scalar exponent only). Above
// ln(DBL_MAX) the scaling overflows to +inf, below -745.2 the result
// rounds to 0, a NaN stays a NaN.
struct Exp64 {
  static constexpr llvm::StringLiteral kName = "exp";
  static mlir::Value build(const F64Ops& d, mlir::Value x) {
    return exp64(d, x);
  }
  // e^(x + extra) for a small `extra` (see reduceExp64Pair).
  static mlir::Value exp64(const F64Ops& d, mlir::Value x, mlir::Value extra = nullptr) {
    mlir::PatternRewriter& rewriter = d.f32.rewriter;
    mlir::Location loc = d.f32.loc;
    auto [k, hi, tLow] = reduceExp64Pair(d, x, -746.0, extra);
    mlir::Value y = d.add(d.c(1.0), d.add(hi, tLow));
    mlir::Value n = d.toInteger(k);
    mlir::Value half = rewriter.create<mlir::arith::ShRSIOp>(loc, n, d.ci(1));
    mlir::Value rest = rewriter.create<mlir::arith::SubIOp>(loc, n, half);
    return d.mul(d.mul(y, d.pow2(half)), d.pow2(rest));
  }
};

// a + b as the pair (s, err), s = a + b rounded and s + err = a + b
// exactly (Knuth's TwoSum: any magnitudes).
std::pair<mlir::Value, mlir::Value> twoSum(const F64Ops& d, mlir::Value a, mlir::Value b) {
  mlir::Value s = d.add(a, b);
  mlir::Value bb = d.sub(s, a);
  return {s, d.add(d.sub(a, d.sub(s, bb)), d.sub(b, bb))};
}

// (e^x - 1) / 2 of x clamped to [-38, 710] (below -37.5 e^x - 1 rounds to
// -1) as an unrounded pair hi + lo, lo below hi's half ulp. With T =
// 2^(k-1) (a normal double for every such k), T (1 + t) - 1/2 = T hi' +
// (T - 1/2) + T tLow, where t = hi' + tLow is reduceExp64Pair's: T - 1/2
// and then T hi' plus it summed by TwoSum (T - 1/2 is inexact from k = 54
// on), the third term added to their errors and the two summed again. No
// cancellation loses bits: near x = 0.5 (k = 1, t ~ -0.29) a rounded t
// lost 1.7 ulp.
std::pair<mlir::Value, mlir::Value> halfExpm1Pair(const F64Ops& d, mlir::Value x) {
  mlir::PatternRewriter& rewriter = d.f32.rewriter;
  auto [k, hi, tLow] = reduceExp64Pair(d, x, -38.0);
  mlir::Value big =
      d.pow2(rewriter.create<mlir::arith::SubIOp>(d.f32.loc, d.toInteger(k), d.ci(1)));
  auto [shift, shiftErr] = twoSum(d, big, d.c(-0.5));
  auto [s, err] = twoSum(d, d.mul(big, hi), shift);
  return twoSum(d, s, d.fma(big, tLow, d.add(err, shiftErr)));
}

// `y`, or x itself where |x| < 2^-54 (the function rounds to x there:
// -0 and subnormals kept).
mlir::Value tinyIsItself64(const F64Ops& d, mlir::Value x, mlir::Value y) {
  return d.select(d.cmp(mlir::arith::CmpFPredicate::OLT, d.abs(x), d.c(0x1p-54)), x, y);
}

// e^x - 1 for f64: twice halfExpm1Pair's sum, rounded once (within 0.9
// ulp: t's own errors). Above ln(DBL_MAX) the doubling overflows to +inf; a NaN stays a
// NaN.
struct Expm1F64 {
  static constexpr llvm::StringLiteral kName = "expm1";
  static mlir::Value build(const F64Ops& d, mlir::Value x) {
    auto [hi, lo] = halfExpm1Pair(d, x);
    return tinyIsItself64(d, x, d.mul(d.add(hi, lo), d.c(2.0)));
  }
};

// tanh(x) for f64 as XLA:CPU's (its intrinsic, EmitFastTanhF64 without
// FMA's clamp, its products and sums contracted to FMAs): Eigen's 19/18
// rational of x clamped to +-17.714 (x p(x^2) / q(x^2), Horner), +-1 from
// |x| = 20 on; within 6 ulp of tanh, and XLA:CPU's bits (a NaN stays a
// NaN). A correctly rounded form (e^(2|x|) - 1 as an unrounded pair, its
// quotient corrected once: within 0.75 ulp) took ~70 ops an element and
// ran 2.6x XLA:CPU's time through xla_gpu.jax.jit over f64[1024,1024].
struct Tanh64 {
  static mlir::Value build(const F64Ops& d, mlir::Value a) {
    using P = mlir::arith::CmpFPredicate;
    constexpr double kClamp = 17.714196154005176;
    mlir::Value x = d.clamp(a, -kClamp, kClamp);
    mlir::Value x2 = d.mul(x, x);
    mlir::Value p = d.mul(
        x, d.horner(x2, {2.6158007860482230e-23, 7.6534862268749319e-19, 3.1309488231386680e-15,
                         4.2303918148209176e-12, 2.4618379131293676e-09, 6.8644367682497074e-07,
                         9.3839087674268880e-05, 5.9809711724441161e-03, 1.5184719640284322e-01,
                         1.0}));
    mlir::Value q = d.horner(x2, {6.463747022670968018e-21, 5.782506856739003571e-17,
                                  1.293019623712687916e-13, 1.123643448069621992e-10,
                                  4.492975677839633985e-08, 8.785185266237658698e-06,
                                  8.295161192716231542e-04, 3.437448108450402717e-02,
                                  4.851805297361760360e-01, 1.0});
    mlir::Value one = d.f32.rewriter.create<mlir::math::CopySignOp>(d.f32.loc, d.c(1.0), a);
    return d.select(d.cmp(P::OGE, d.abs(a), d.c(20.0)), one, d.div(p, q));
  }
};

// log(1 + f) + e ln2 for f64 as fdlibm's log computes it, f in
// [sqrt(1/2) - 1, sqrt(2) - 1): s = f / (2 + f), log(1 + f) = f - f^2/2 +
// s (f^2/2 + R(s^2)) with fdlibm's degree-7 R (Lg1..Lg7), e ln2 in two
// parts (within 1 ulp), plus a small `extra` (log1p's correction; else
// none) where e ln2's low part is added.
mlir::Value logOfReduced64(const F64Ops& d, mlir::Value f, mlir::Value e,
                           mlir::Value extra = nullptr) {
  mlir::Value s = d.div(f, d.add(f, d.c(2.0)));
  mlir::Value z = d.mul(s, s);
  mlir::Value r = d.mul(z, d.horner(z, {1.479819860511658591e-01, 1.531383769920937332e-01,
                                        1.818357216161805012e-01, 2.222219843214978396e-01,
                                        2.857142874366239149e-01, 3.999999999940941908e-01,
                                        6.666666666666735130e-01}));
  mlir::Value hfsq = d.mul(d.mul(f, f), d.c(0.5));
  mlir::Value low = d.mul(e, d.c(1.90821492927058770002e-10));
  if (extra) low = d.add(low, extra);
  low = d.fma(s, d.add(hfsq, r), low);
  return d.fma(e, d.c(6.93147180369123816490e-01), d.sub(f, d.sub(hfsq, low)));
}

// A positive x as m 2^e with m in [sqrt(1/2), sqrt(2)), e an f64 (x's
// bits; a subnormal scaled by 2^54 first).
std::pair<mlir::Value, mlir::Value> logReduction64(const F64Ops& d, mlir::Value x) {
  using P = mlir::arith::CmpFPredicate;
  mlir::Value subnormal = d.cmp(P::OLT, x, d.c(0x1p-1022));
  auto [m, e] = d.split(d.select(subnormal, d.mul(x, d.c(0x1p54)), x));
  mlir::Value ef = d.sub(d.f32.rewriter.create<mlir::arith::SIToFPOp>(d.f32.loc, d.type, e),
                         d.select(subnormal, d.c(54.0), d.c(0.0)));
  mlir::Value big = d.cmp(P::OGT, m, d.c(1.41421356237309505));
  return {d.select(big, d.mul(m, d.c(0.5)), m), d.select(big, d.add(ef, d.c(1.0)), ef)};
}

// log(x) for f64 (fdlibm's form, above). x < 0 and NaN give NaN, 0 gives
// -inf, +inf gives +inf.
struct Log64 {
  static constexpr llvm::StringLiteral kName = "log";
  static mlir::Value build(const F64Ops& d, mlir::Value x) {
    using P = mlir::arith::CmpFPredicate;
    auto [m, e] = logReduction64(d, x);
    mlir::Value y = logOfReduced64(d, d.sub(m, d.c(1.0)), e);
    y = d.select(d.cmp(P::OEQ, x, d.c(0.0)), d.c(-kInfinity), y);
    y = d.select(d.cmp(P::OEQ, x, d.c(kInfinity)), x, y);
    return d.select(d.cmp(P::OGE, x, d.c(0.0)), y, d.c(std::numeric_limits<double>::quiet_NaN()));
  }
};

// log(1 + x) for f64: u = 1 + x reduced as Log64 reduces it. Where u's
// exponent is 0 (x in about [-0.29, 0.41]) f is x itself, exact; elsewhere
// f = m - 1 and u's rounding error (Fast2Sum) over u is added with ln2's
// low part (1.08 -> 0.80 ulp near x = 0.42 than added last). -1 gives
// -inf, +inf +inf, below -1 and NaN NaN, |x| < 2^-54 x itself.
struct Log1pF64 {
  static constexpr llvm::StringLiteral kName = "log1p";
  static mlir::Value build(const F64Ops& d, mlir::Value x) {
    using P = mlir::arith::CmpFPredicate;
    mlir::Value one = d.c(1.0);
    mlir::Value u = d.add(x, one);
    mlir::Value big = d.cmp(P::OGT, d.abs(x), one);
    mlir::Value c = d.sub(d.select(big, one, x), d.sub(u, d.select(big, x, one)));
    auto [m, e] = logReduction64(d, u);
    mlir::Value unscaled = d.cmp(P::OEQ, e, d.c(0.0));
    mlir::Value f = d.select(unscaled, x, d.sub(m, one));
    mlir::Value r = logOfReduced64(d, f, e, d.select(unscaled, d.c(0.0), d.div(c, u)));
    r = d.select(d.cmp(P::OEQ, x, d.c(kInfinity)), x, r);
    r = d.select(d.cmp(P::OEQ, x, d.c(-1.0)), d.c(-kInfinity), r);
    r = d.select(d.cmp(P::OLT, x, d.c(-1.0)), d.c(std::numeric_limits<double>::quiet_NaN()), r);
    return tinyIsItself64(d, x, r);
  }
};

// sin, cos and tan of f64 x on the host, for |x| below kCodyWaiteBound64:
// fdlibm's reduction x = n pi/2 + r (its medium path, pi/2 in 33-bit parts
// P1, P2, P3 and the rest P3t, each n Pi exact for |n| < 2^20), every part
// subtracted (no test of how many bits cancelled): x - n P1 exact, then
// TwoSum with n P2, the rest added to its error; r = hi + lo. Then
// fdlibm's kernels on [-pi/4, pi/4] (FreeBSD's forms: S1..S6, C1..C6,
// T0..T12, the tail lo corrected to first order), picked and signed by n.
// Within 1 ulp; past the bound (and at inf) HostTrig64 calls libm's. They
// were libm calls everywhere (scalar loops): sin + cos of 1M f64 took 6.3
// ms, XLA:CPU's (libm too) the same.
constexpr double kCodyWaiteBound64 = 0x1p19;

struct Reduction64 {
  mlir::Value hi, lo;  // r
  mlir::Value n;       // f64, an integer
};
Reduction64 reduceAngle64(const F64Ops& d, mlir::Value x) {
  mlir::Value n = d.round(d.mul(x, d.c(6.36619772367581382433e-01)));
  mlir::Value minusN = d.sub(d.c(0.0), n);
  mlir::Value a = d.fma(minusN, d.c(1.57079632673412561417e+00), x);
  auto [s, err] = twoSum(d, a, d.mul(minusN, d.c(6.07710050630396597660e-11)));
  mlir::Value tail = d.fma(minusN, d.c(2.02226624871116645580e-21), err);
  tail = d.fma(minusN, d.c(8.47842766036889956997e-32), tail);
  mlir::Value hi = d.add(s, tail);
  return {hi, d.add(d.sub(s, hi), tail), n};
}

// i64 n & bit != 0, of Reduction64's n.
mlir::Value quadrantBit(const F64Ops& d, mlir::Value n, int64_t bit) {
  mlir::PatternRewriter& rewriter = d.f32.rewriter;
  mlir::Location loc = d.f32.loc;
  return rewriter.create<mlir::arith::CmpIOp>(
      loc, mlir::arith::CmpIPredicate::ne,
      rewriter.create<mlir::arith::AndIOp>(loc, n, d.ci(bit)), d.ci(0));
}

// sin (`sine`) or cos of x from its reduction: quadrant n's function of r
// (sin, cos, -sin, -cos for sin; cos, -sin, -cos, sin for cos).
mlir::Value sinCosOfReduced64(const F64Ops& d, const Reduction64& a, bool sine) {
  mlir::PatternRewriter& rewriter = d.f32.rewriter;
  mlir::Location loc = d.f32.loc;
  mlir::Value hi = a.hi, lo = a.lo;
  mlir::Value z = d.mul(hi, hi);
  mlir::Value w = d.mul(z, z);
  mlir::Value sr = d.add(d.horner(z, {2.75573137070700676789e-06, -1.98412698298579493134e-04,
                                      8.33333333332248946124e-03}),
                         d.mul(d.mul(z, w), d.horner(z, {1.58969099521155010221e-10,
                                                        -2.50507602534068634195e-08})));
  mlir::Value v = d.mul(z, hi);
  mlir::Value sin = d.sub(
      hi, d.sub(d.sub(d.mul(z, d.sub(d.mul(d.c(0.5), lo), d.mul(v, sr))), lo),
                d.mul(v, d.c(-1.66666666666666324348e-01))));
  mlir::Value cr = d.add(
      d.mul(z, d.horner(z, {2.48015872894767294178e-05, -1.38888888888741095749e-03,
                            4.16666666666666019037e-02})),
      d.mul(d.mul(w, w), d.horner(z, {-1.13596475577881948265e-11, 2.08757232129817482790e-09,
                                      -2.75573143513906633035e-07})));
  mlir::Value hz = d.mul(d.c(0.5), z);
  mlir::Value one = d.c(1.0);
  mlir::Value cw = d.sub(one, hz);
  mlir::Value cos =
      d.add(cw, d.add(d.sub(d.sub(one, cw), hz), d.sub(d.mul(z, cr), d.mul(hi, lo))));
  mlir::Value q = d.toInteger(a.n);
  if (!sine) q = rewriter.create<mlir::arith::AddIOp>(loc, q, d.ci(1));
  mlir::Value y = d.select(quadrantBit(d, q, 1), cos, sin);
  return d.select(quadrantBit(d, q, 2), rewriter.create<mlir::arith::NegFOp>(loc, y), y);
}

// tan of x from its reduction as fdlibm's __kernel_tan, both of its
// branches computed and the lane's picked: tan(r) for an even n, -1/tan(r)
// for an odd one (the reciprocal corrected with high-word parts); from
// |r| = 0.6744 on through pi/4 - r, tan(pi/4 - y) = 1 - 2 (tan y - tan^2
// y / (1 + tan y)).
mlir::Value tanOfReduced64(const F64Ops& d, const Reduction64& a) {
  mlir::PatternRewriter& rewriter = d.f32.rewriter;
  mlir::Location loc = d.f32.loc;
  using P = mlir::arith::CmpFPredicate;
  mlir::Value zero = d.c(0.0);
  mlir::Value one = d.c(1.0);
  auto negate = [&](mlir::Value v) { return rewriter.create<mlir::arith::NegFOp>(loc, v); };
  auto highPart = [&](mlir::Value v) {  // v with its low 32 bits cleared
    return rewriter.create<mlir::arith::BitcastOp>(
        loc, d.type,
        rewriter.create<mlir::arith::AndIOp>(
            loc, rewriter.create<mlir::arith::BitcastOp>(loc, d.integerType(), v),
            d.ci(static_cast<int64_t>(0xffffffff00000000ULL))));
  };
  mlir::Value odd = quadrantBit(d, d.toInteger(a.n), 1);
  mlir::Value negative = d.cmp(P::OLT, a.hi, zero);
  mlir::Value big = d.cmp(P::OGE, d.abs(a.hi), d.c(0.6744));
  mlir::Value towardQuarter =
      d.add(d.sub(d.c(7.85398163397448278999e-01), d.abs(a.hi)),
            d.sub(d.c(3.06161699786838301793e-17), d.select(negative, negate(a.lo), a.lo)));
  mlir::Value x = d.select(big, towardQuarter, a.hi);
  mlir::Value y = d.select(big, zero, a.lo);
  mlir::Value z = d.mul(x, x);
  mlir::Value w = d.mul(z, z);
  mlir::Value r = d.horner(w, {-1.85586374855275456654e-05, 7.81794442939557092300e-05,
                               5.88041240820264096874e-04, 3.59207910759131235356e-03,
                               2.18694882948595424599e-02, 1.33333333333201242699e-01});
  mlir::Value v = d.mul(z, d.horner(w, {2.59073051863633712884e-05, 7.14072491382608190305e-05,
                                        2.46463134818469906812e-04, 1.45620945432529025516e-03,
                                        8.86323982359930005737e-03,
                                        5.39682539762260521377e-02}));
  mlir::Value s = d.mul(z, x);
  r = d.add(d.add(y, d.mul(z, d.add(d.mul(s, d.add(r, v)), y))),
            d.mul(s, d.c(3.33333333333334091986e-01)));
  mlir::Value sum = d.add(x, r);
  // From 0.6744 on: sign (v - 2 (x - (w^2 / (w + v) - r))), v = -1 for odd n.
  mlir::Value sign = d.select(odd, d.c(-1.0), one);
  mlir::Value far = d.sub(
      sign, d.mul(d.c(2.0), d.sub(x, d.sub(d.div(d.mul(sum, sum), d.add(sum, sign)), r))));
  far = d.select(negative, negate(far), far);
  // Below it, odd n: -1 / (x + r) with the reciprocal's high part
  // corrected once.
  mlir::Value sumHigh = highPart(sum);
  mlir::Value sumLow = d.sub(r, d.sub(sumHigh, x));
  mlir::Value reciprocal = d.div(d.c(-1.0), sum);
  mlir::Value t = highPart(reciprocal);
  mlir::Value near = d.select(
      odd, d.add(t, d.mul(reciprocal, d.add(d.fma(t, sumHigh, one), d.mul(t, sumLow)))), sum);
  return d.select(big, far, near);
}

// The function HostTrig64 calls past kCodyWaiteBound64: libm's (its exact
// reduction), `xla_gpu_host_<name>_f64`.
std::string hostTrigName64(llvm::StringRef name) {
  return ("xla_gpu_host_" + name + "_f64").str();
}

// The host's scalar f64 sin, cos and tan (`Function`'s kName): reduceAngle64
// below kCodyWaiteBound64 in magnitude, and past it (or at inf) a call of
// libm's through `xla_gpu_host_<name>_f64` (addHostTrigFunctions), which
// the loop vectorizer calls through a masked vector variant as HostTrig's.
// sin and tan of |x| < 2^-27 are x (-0 and subnormals kept).
template <typename Op, typename Function>
struct HostTrig64 : public mlir::OpRewritePattern<Op> {
  using mlir::OpRewritePattern<Op>::OpRewritePattern;
  mlir::LogicalResult matchAndRewrite(Op op, mlir::PatternRewriter& rewriter) const override {
    if (!op.getType().isF64()) return rewriter.notifyMatchFailure(op, "only a scalar f64");
    std::string name = hostTrigName64(Function::kName);
    auto parent = op->template getParentOfType<mlir::func::FuncOp>();
    if (parent && parent.getName() == name) {
      return rewriter.notifyMatchFailure(op, "libm's own call");
    }
    auto module = op->template getParentOfType<mlir::ModuleOp>();
    auto exact = module.template lookupSymbol<mlir::func::FuncOp>(name);
    if (!exact) return rewriter.notifyMatchFailure(op, "no exact function");
    F32Builder builder{rewriter, op.getLoc(), op.getType(), /*host=*/true};
    F64Ops d(builder);
    mlir::Value x = op.getOperand();
    Reduction64 reduced = reduceAngle64(d, x);
    constexpr bool kTan = std::is_same_v<Function, Tan>;
    constexpr bool kSin = std::is_same_v<Function, Sin>;
    mlir::Value fast = kTan ? tanOfReduced64(d, reduced) : sinCosOfReduced64(d, reduced, kSin);
    if (kSin || kTan) {
      fast = d.select(d.cmp(mlir::arith::CmpFPredicate::OLT, d.abs(x), d.c(0x1p-27)), x, fast);
    }
    // NaN takes the short way (unordered: not OGE), inf the exact one.
    mlir::Value huge =
        d.cmp(mlir::arith::CmpFPredicate::OGE, d.abs(x), d.c(kCodyWaiteBound64));
    replaceByBranch(rewriter, op, huge, exact, fast);
    return mlir::success();
  }
};

// atan2(y, x) for f64: theta = atan(n / m) in [0, pi/4] of n, m the
// smaller and larger of |y|, |x|, then C + s theta with (C, s) = (0, 1),
// (pi/2, -1), (pi, -1), (pi/2, 1) as |y| > |x| and x's sign say, signed as
// y. theta is fdlibm's atan: n / m below 7/16, else atan(1/2) or atan(1)
// (atanhi + atanlo) plus the atan of u = (2n - m) / (2m + n) or (n - m) /
// (n + m) (numerators exact by Sterbenz), with fdlibm's degree-11 odd
// polynomial (aT). The quotient is kept as the pair u + uLow (its
// remainder, an FMA, over the divisor's TwoSum) and C + s atanhi by
// TwoSum, so that nothing rounds twice (within 0.74 ulp). C99's special
// cases: a NaN gives NaN; both zero give 0 or pi by x's sign bit, both
// infinite pi/4 or 3pi/4 (n = m = 1 there), one infinite 0, pi/2 or pi
// (n = 0, m = 1), signed as y.
struct Atan2F64 {
  static constexpr llvm::StringLiteral kName = "atan2";
  static mlir::Value build(const F64Ops& d, mlir::Value y, mlir::Value x) {
    mlir::PatternRewriter& rewriter = d.f32.rewriter;
    mlir::Location loc = d.f32.loc;
    using P = mlir::arith::CmpFPredicate;
    mlir::Value zero = d.c(0.0);
    mlir::Value one = d.c(1.0);
    mlir::Value a = d.abs(y);
    mlir::Value b = d.abs(x);
    mlir::Value swap = d.cmp(P::OGT, a, b);
    mlir::Value n = d.select(swap, b, a);
    mlir::Value m = d.select(swap, a, b);
    // An infinite m: theta is 0 (n / m = 0), or pi/4 where n is infinite
    // too; both zero: theta is 0.
    mlir::Value infinite = d.cmp(P::OEQ, m, d.c(kInfinity));
    mlir::Value bothInf = d.cmp(P::OEQ, n, d.c(kInfinity));
    n = d.select(infinite, d.select(bothInf, one, zero), n);
    m = d.select(rewriter.create<mlir::arith::OrIOp>(loc, infinite, d.cmp(P::OEQ, m, zero)), one,
                 m);
    // 2m must not overflow: both scaled by 1/4 from 2^1020 on (n / m >= 7/16
    // wherever 2m is used, so n stays normal).
    mlir::Value large = d.cmp(P::OGE, m, d.c(0x1p1020));
    n = d.select(large, d.mul(n, d.c(0.25)), n);
    m = d.select(large, d.mul(m, d.c(0.25)), m);
    mlir::Value t = d.div(n, m);
    mlir::Value small = d.cmp(P::OLT, t, d.c(0.4375));
    mlir::Value half = d.cmp(P::OLT, t, d.c(0.6875));
    // The numerator and the divisor's two terms of each interval.
    mlir::Value numerator =
        d.select(small, n, d.sub(d.select(half, d.add(n, n), n), m));
    mlir::Value first = d.select(small, m, d.select(half, d.add(m, m), m));
    mlir::Value second = d.select(small, zero, n);
    auto [divisor, divisorLow] = twoSum(d, first, second);
    mlir::Value u = d.div(numerator, divisor);
    mlir::Value remainder = d.fma(d.sub(zero, u), divisorLow,
                                  d.fma(d.sub(zero, u), divisor, numerator));
    mlir::Value uLow = d.div(remainder, divisor);
    mlir::Value atanHi = d.select(small, zero, d.select(half, d.c(4.63647609000806093515e-01),
                                                        d.c(7.85398163397448278999e-01)));
    mlir::Value atanLo = d.select(small, zero, d.select(half, d.c(2.26987774529616870924e-17),
                                                        d.c(3.06161699786838301793e-17)));
    mlir::Value z = d.mul(u, u);
    mlir::Value w = d.mul(z, z);
    mlir::Value s1 = d.mul(z, d.horner(w, {1.62858201153657823623e-02, 4.97687799461593236017e-02,
                                           6.66107313738753120669e-02, 9.09088713343650656196e-02,
                                           1.42857142725034663711e-01,
                                           3.33333333333329318027e-01}));
    mlir::Value s2 = d.mul(w, d.horner(w, {-3.65315727442169155270e-02, -5.83357013379057348645e-02,
                                           -7.69187620504482999495e-02, -1.11111104054623557880e-01,
                                           -1.99999999998764832476e-01}));
    // theta = atanHi + tail.
    mlir::Value tail = d.sub(u, d.sub(d.sub(d.mul(u, d.add(s1, s2)), uLow), atanLo));
    // C + s theta, C = cHi + cLo.
    mlir::Value negativeX = rewriter.create<mlir::arith::CmpIOp>(
        loc, mlir::arith::CmpIPredicate::slt,
        rewriter.create<mlir::arith::BitcastOp>(loc, d.integerType(), x), d.ci(0));
    mlir::Value flip = rewriter.create<mlir::arith::XOrIOp>(loc, swap, negativeX);
    mlir::Value halfPi = d.c(1.57079632679489655800e+00);
    mlir::Value cHi = d.select(swap, halfPi, d.select(negativeX, d.c(3.14159265358979311600e+00),
                                                      zero));
    mlir::Value cLo = d.select(swap, d.c(6.12323399573676603587e-17),
                               d.select(negativeX, d.c(1.22464679914735317720e-16), zero));
    mlir::Value signedHi = d.select(flip, d.sub(zero, atanHi), atanHi);
    mlir::Value signedTail = d.select(flip, d.sub(zero, tail), tail);
    auto [head, headErr] = twoSum(d, cHi, signedHi);
    mlir::Value r = d.add(head, d.add(d.add(headErr, cLo), signedTail));
    r = rewriter.create<mlir::math::CopySignOp>(loc, r, y);
    // A NaN (which an infinite m would have replaced) stays a NaN.
    return d.select(d.cmp(P::UNO, y, x), d.add(y, x), r);
  }
};

// cbrt(x) for f64 as FreeBSD's: a first guess to 5 bits off the bits (the
// high word's magnitude over 3 plus a bias; subnormals scaled by 2^54
// first), a polynomial step to 23 bits (P0..P4), t rounded away from 0 to
// 23 bits, and one Newton step t + t (x / t^2 - t) / (2t + x / t^2) (within
// 0.667 ulp). Zeros, infinities and NaN are themselves.
struct CbrtF64 {
  static constexpr llvm::StringLiteral kName = "cbrt";
  static mlir::Value build(const F64Ops& d, mlir::Value x) {
    mlir::PatternRewriter& rewriter = d.f32.rewriter;
    mlir::Location loc = d.f32.loc;
    using P = mlir::arith::CmpFPredicate;
    auto bitsOf = [&](mlir::Value v) {
      return rewriter.create<mlir::arith::BitcastOp>(loc, d.integerType(), v).getResult();
    };
    auto fromBits = [&](mlir::Value v) {
      return rewriter.create<mlir::arith::BitcastOp>(loc, d.type, v).getResult();
    };
    mlir::Value subnormal = d.cmp(P::OLT, d.abs(x), d.c(0x1p-1022));
    mlir::Value scaled = d.select(subnormal, d.mul(x, d.c(0x1p54)), x);
    mlir::Value high = rewriter.create<mlir::arith::AndIOp>(
        loc, rewriter.create<mlir::arith::ShRUIOp>(loc, bitsOf(scaled), d.ci(32)),
        d.ci(0x7fffffff));
    mlir::Value guess = rewriter.create<mlir::arith::AddIOp>(
        loc, rewriter.create<mlir::arith::DivUIOp>(loc, high, d.ci(3)),
        rewriter.create<mlir::arith::SelectOp>(loc, subnormal, d.ci(696219795), d.ci(715094163)));
    mlir::Value sign = rewriter.create<mlir::arith::AndIOp>(
        loc, bitsOf(x), d.ci(std::numeric_limits<int64_t>::min()));
    mlir::Value t = fromBits(rewriter.create<mlir::arith::OrIOp>(
        loc, sign, rewriter.create<mlir::arith::ShLIOp>(loc, guess, d.ci(32))));
    mlir::Value r = d.mul(d.mul(t, t), d.div(t, x));
    mlir::Value p = d.add(d.horner(r, {1.621429720105354466140, -1.88497979543377169875,
                                       1.87595182427177009643}),
                          d.mul(d.mul(d.mul(r, r), r),
                                d.horner(r, {0.145996192886612446982,
                                             -0.758397934778766047437})));
    t = d.mul(t, p);
    // Rounded away from 0 to 23 bits, so that t^2 is exact.
    t = fromBits(rewriter.create<mlir::arith::AndIOp>(
        loc, rewriter.create<mlir::arith::AddIOp>(loc, bitsOf(t), d.ci(0x80000000)),
        d.ci(static_cast<int64_t>(0xffffffffc0000000ULL))));
    mlir::Value q = d.div(x, d.mul(t, t));
    mlir::Value step = d.div(d.sub(q, t), d.add(d.add(t, t), q));
    mlir::Value y = d.add(t, d.mul(t, step));
    // A subnormal x whose scaling made 0 is read as 0 (the host flushes
    // subnormal inputs: XLA:CPU runs with DAZ set), and is one too: its
    // guess's divisions by x had made NaN.
    mlir::Value flushed = rewriter.create<mlir::arith::AndIOp>(
        loc, subnormal, d.cmp(P::OEQ, scaled, d.c(0.0)));
    mlir::Value special = rewriter.create<mlir::arith::OrIOp>(
        loc, rewriter.create<mlir::arith::OrIOp>(loc, d.cmp(P::OEQ, x, d.c(0.0)), flushed),
        d.cmp(P::UEQ, d.abs(x), d.c(kInfinity)));
    return d.select(special, d.add(x, x), y);
  }
};

// pow(x, y) for f64: e^(y log|x|) with log|x| and y log|x| kept as
// unrounded pairs, so that t = y log|x| is known to ~2^-100 of itself
// (t near 709 needs 2^-62 of an absolute error for 1 ulp of e^t). log|x| =
// e ln2 + 2 atanh(s), s = f / (2 + f) as Log64 reduces |x|: s and s^3 as
// pairs (FMA remainders), 2 atanh(s) = 2s + s^3 (2/3 + s^2 R(s^2)) with R's
// Taylor coefficients 2/(2k+1) to k = 14 (to k = 10, 2^-62 of an absolute
// error: 2.3 ulp at t = -345), the sums by TwoSum. Then Exp64
// of the pair (its low part joins the reduction's). The special cases are
// C99's, as Pow (f32) takes them: y = +-0, x = 1 and x = -1 to +-inf give
// 1; x's sign where y is an odd integer; a negative finite x to a finite
// non-integer y is NaN; zeros, infinities and NaN through log|x| = -inf,
// inf, NaN.
struct PowF64 {
  static constexpr llvm::StringLiteral kName = "pow";
  static mlir::Value build(const F64Ops& d, mlir::Value x, mlir::Value y) {
    mlir::PatternRewriter& rewriter = d.f32.rewriter;
    mlir::Location loc = d.f32.loc;
    using P = mlir::arith::CmpFPredicate;
    mlir::Value zero = d.c(0.0);
    mlir::Value one = d.c(1.0);
    mlir::Value inf = d.c(kInfinity);
    auto negate = [&](mlir::Value v) { return d.sub(zero, v); };
    mlir::Value ax = d.abs(x);
    auto [m, e] = logReduction64(d, ax);
    mlir::Value f = d.sub(m, one);
    auto [divisor, divisorLow] = twoSum(d, d.c(2.0), f);
    mlir::Value s = d.div(f, divisor);
    mlir::Value sLow =
        d.div(d.sub(d.fma(negate(s), divisor, f), d.mul(s, divisorLow)), divisor);
    mlir::Value z = d.mul(s, s);
    mlir::Value zLow = d.fma(s, s, negate(z));
    mlir::Value s3 = d.mul(z, s);
    // (s + sLow)^3 = s^3 + 3 s^2 sLow + ...
    mlir::Value s3Low = d.add(d.add(d.fma(z, s, negate(s3)), d.mul(zLow, s)),
                              d.mul(d.mul(z, sLow), d.c(3.0)));
    llvm::SmallVector<double> series;
    for (int k = 29; k >= 5; k -= 2) series.push_back(2.0 / k);
    auto [c, cErr] = twoSum(d, d.c(0.6666666666666666), d.mul(z, d.horner(z, series)));
    mlir::Value cLow = d.add(cErr, d.c(3.700743415417188e-17));
    mlir::Value p = d.mul(s3, c);
    mlir::Value pLow =
        d.add(d.fma(s3, c, negate(p)), d.add(d.mul(s3, cLow), d.mul(s3Low, c)));
    auto [s1, e1] = twoSum(d, d.mul(e, d.c(6.93147180369123816490e-01)), d.add(s, s));
    auto [s2, e2] = twoSum(d, s1, p);
    mlir::Value low = d.add(d.add(e1, e2),
                            d.add(d.fma(e, d.c(1.90821492927058770002e-10), d.add(sLow, sLow)),
                                  pLow));
    mlir::Value lHi = d.add(s2, low);
    mlir::Value lLow = d.add(d.sub(s2, lHi), low);
    // log|x| of 0 is -inf, of inf and NaN themselves.
    mlir::Value zeroX = d.cmp(P::OEQ, ax, zero);
    mlir::Value notFinite = d.cmp(P::UGE, ax, inf);
    lHi = d.select(zeroX, d.c(-kInfinity), d.select(notFinite, ax, lHi));
    // t = y log|x| as tHi + tLow; tLow 0 where exp64 clamps tHi (past
    // [-746, 710], where tLow, up to |tHi| 2^-52, is no small term: it
    // had joined the clamped reduction, and pow(65520, 1e38) was -inf) and
    // where tHi is not finite.
    mlir::Value tHi = d.mul(y, lHi);
    mlir::Value tLow = d.add(d.fma(y, lHi, negate(tHi)), d.mul(y, lLow));
    tLow = d.select(d.cmp(P::OLT, d.abs(tHi), d.c(746.0)), tLow, zero);
    mlir::Value r = Exp64::exp64(d, tHi, tLow);
    return powSpecialCases(d.f32, x, y, r);
  }
};

// erf(x) for f64 as fdlibm computes it, every interval of |x| = a computed
// and the lane's picked (a vector cannot branch): below 0.84375 a + a P/Q
// of a^2 (pp, qq), below 1.25 erx + P/Q of a - 1 (pa, qa), below 6 1 -
// e^(-z^2 - 0.5625) e^((z - a)(z + a) + R/S) / a with z = a's high word and
// R/S of 1/a^2 (ra, sa below 1/0.35, else rb, sb: the lane's coefficients
// picked, one evaluation), from 6 on 1; signed as x (within 1 ulp). A NaN
// stays a NaN; erf of +-inf is +-1.
struct ErfF64 {
  static constexpr llvm::StringLiteral kName = "erf";
  static mlir::Value build(const F64Ops& d, mlir::Value x) {
    mlir::PatternRewriter& rewriter = d.f32.rewriter;
    mlir::Location loc = d.f32.loc;
    using P = mlir::arith::CmpFPredicate;
    mlir::Value one = d.c(1.0);
    mlir::Value a = d.abs(x);
    mlir::Value z2 = d.mul(a, a);
    mlir::Value small = d.add(
        a, d.mul(a, d.div(d.horner(z2, {-2.37630166566501626084e-05, -5.77027029648944159157e-03,
                                        -2.84817495755985104766e-02, -3.25042107247001499370e-01,
                                        1.28379167095512558561e-01}),
                          d.horner(z2, {-3.96022827877536812320e-06, 1.32494738004321644526e-04,
                                        5.08130628187576562776e-03, 6.50222499887672944485e-02,
                                        3.97917223959155352819e-01, 1.0}))));
    mlir::Value s = d.sub(a, one);
    mlir::Value middle = d.add(
        d.c(8.45062911510467529297e-01),
        d.div(d.horner(s, {-2.16637559486879084300e-03, 3.54783043256182359371e-02,
                           -1.10894694282396677476e-01, 3.18346619901161753674e-01,
                           -3.72207876035701323847e-01, 4.14856118683748331666e-01,
                           -2.36211856075265944077e-03}),
              d.horner(s, {1.19844998467991074170e-02, 1.36370839120290507362e-02,
                           1.26171219808761642112e-01, 7.18286544141962662868e-02,
                           5.40397917702171048937e-01, 1.06420880400844228286e-01, 1.0})));
    // From 1.25 on (a clamped at 6, from where erf rounds to 1).
    mlir::Value six = d.c(6.0);
    mlir::Value b = d.select(d.cmp(P::OLT, six, a), six, a);
    mlir::Value w = d.div(one, d.mul(b, b));
    mlir::Value near = d.cmp(P::OLT, b, d.c(1.0 / 0.35));
    auto pick = [&](double u, double v) { return d.select(near, d.c(u), d.c(v)); };
    auto hornerOf = [&](llvm::ArrayRef<mlir::Value> k) {
      mlir::Value acc = k.front();
      for (mlir::Value c : k.drop_front()) acc = d.fma(acc, w, c);
      return acc;
    };
    mlir::Value r = hornerOf({pick(-9.81432934416914548592e+00, 0.0),
                              pick(-8.12874355063065934246e+01, -4.83519191608651397019e+02),
                              pick(-1.84605092906711035994e+02, -1.02509513161107724954e+03),
                              pick(-1.62396669462573470355e+02, -6.37566443368389627722e+02),
                              pick(-6.23753324503260060396e+01, -1.60636384855821916062e+02),
                              pick(-1.05586262253232909814e+01, -1.77579549177547519889e+01),
                              pick(-6.93858572707181764372e-01, -7.99283237680523006574e-01),
                              pick(-9.86494403484714822705e-03, -9.86494292470009928597e-03)});
    mlir::Value q = hornerOf({pick(-6.04244152148580987438e-02, 0.0),
                              pick(6.57024977031928170135e+00, -2.24409524465858183362e+01),
                              pick(1.08635005541779435134e+02, 4.74528541206955367215e+02),
                              pick(4.29008140027567833386e+02, 2.55305040643316442583e+03),
                              pick(6.45387271733267880336e+02, 3.19985821950859553908e+03),
                              pick(4.34565877475229228821e+02, 1.53672958608443695994e+03),
                              pick(1.37657754143519042600e+02, 3.25792512996573918826e+02),
                              pick(1.96512716674392571292e+01, 3.03380607434824582924e+01),
                              one});
    mlir::Value high = rewriter.create<mlir::arith::BitcastOp>(
        loc, d.type,
        rewriter.create<mlir::arith::AndIOp>(
            loc, rewriter.create<mlir::arith::BitcastOp>(loc, d.integerType(), b),
            d.ci(static_cast<int64_t>(0xffffffff00000000ULL))));
    mlir::Value e = d.mul(
        Exp64::exp64(d, d.sub(d.mul(d.sub(d.c(0.0), high), high), d.c(0.5625))),
        Exp64::exp64(d, d.add(d.mul(d.sub(high, b), d.add(high, b)), d.div(r, q))));
    mlir::Value large = d.sub(one, d.div(e, b));
    mlir::Value y = d.select(
        d.cmp(P::OLT, a, d.c(0.84375)), small,
        d.select(d.cmp(P::OLT, a, d.c(1.25)), middle,
                 d.select(d.cmp(P::OLT, a, six), large, one)));
    y = rewriter.create<mlir::math::CopySignOp>(loc, y, x);
    return d.select(d.cmp(P::UNO, x, x), x, y);
  }
};

// pow(x, c) of a constant c (a splat too) of 1/2, 2, -1 or 1, f32 or f64,
// as LLVM folds its pow intrinsic of such a c (what XLA:CPU emits), before
// Pow and PowF64 compute it whole: |sqrt(x)| but +inf at -inf (pow's -0
// and -inf), x * x, 1 / x, x. x ** 0.5 over f64[2048,1024] took 2.97 ms
// through PowF64 where XLA:CPU's sqrt takes 0.61.
struct PowByConstant : public mlir::OpRewritePattern<mlir::math::PowFOp> {
  using mlir::OpRewritePattern<mlir::math::PowFOp>::OpRewritePattern;
  // The exponent of `op` where it is a constant PowByConstant takes.
  static std::optional<double> exponent(mlir::math::PowFOp op) {
    llvm::APFloat c(0.0);
    if (!mlir::matchPattern(op.getRhs(), mlir::m_ConstantFloat(&c))) return std::nullopt;
    bool lost = false;
    c.convert(llvm::APFloat::IEEEdouble(), llvm::APFloat::rmNearestTiesToEven, &lost);
    double v = c.convertToDouble();
    if (v == 0.5 || v == 2.0 || v == -1.0 || v == 1.0) return v;
    return std::nullopt;
  }
  mlir::LogicalResult matchAndRewrite(mlir::math::PowFOp op,
                                      mlir::PatternRewriter& rewriter) const override {
    std::optional<double> c = exponent(op);
    if (!c) return rewriter.notifyMatchFailure(op, "no constant exponent it takes");
    double v = *c;
    mlir::Location loc = op.getLoc();
    mlir::Value x = op.getLhs();
    F32Builder b{rewriter, loc, op.getType(), /*host=*/true};
    auto constant = [&](double value) {
      return b.splat(rewriter.getFloatAttr(mlir::getElementTypeOrSelf(op.getType()), value));
    };
    mlir::Value r;
    if (v == 0.5) {
      r = rewriter.create<mlir::math::AbsFOp>(loc, rewriter.create<mlir::math::SqrtOp>(loc, x));
      r = b.select(b.cmp(mlir::arith::CmpFPredicate::OEQ, x, constant(-kInfinity)),
                   constant(kInfinity), r);
    } else if (v == 2.0) {
      r = rewriter.create<mlir::arith::MulFOp>(loc, x, x);
    } else if (v == -1.0) {
      r = rewriter.create<mlir::arith::DivFOp>(loc, constant(1.0), x);
    } else {
      r = x;
    }
    rewriter.replaceOp(op, r);
    return mlir::success();
  }
};

// An f64 op replaced by `Approximation::build(F64Ops, operands...)` (the
// host; a unary or a binary op): a vector, or with `Scalars` a scalar too.
template <typename Op, typename Approximation, bool Scalars = false>
struct ApproximateF64 : public mlir::OpRewritePattern<Op> {
  using mlir::OpRewritePattern<Op>::OpRewritePattern;
  mlir::LogicalResult matchAndRewrite(Op op, mlir::PatternRewriter& rewriter) const override {
    // Without `Scalars`, a scalar is a call of its function with vector
    // variants by now (addF64Functions), where it is not libm's own op in
    // that function.
    if ((!Scalars && !llvm::isa<mlir::VectorType>(op.getType())) ||
        !mlir::getElementTypeOrSelf(op.getType()).isF64()) {
      return rewriter.notifyMatchFailure(op, Scalars ? "only f64" : "only a vector of f64");
    }
    F32Builder builder{rewriter, op.getLoc(), op.getType(), /*host=*/true};
    if constexpr (Op::template hasTrait<mlir::OpTrait::OneOperand>()) {
      rewriter.replaceOp(op, Approximation::build(F64Ops(builder), op.getOperand()));
    } else {
      rewriter.replaceOp(op, Approximation::build(F64Ops(builder), op.getLhs(), op.getRhs()));
    }
    return mlir::success();
  }
  bool ldexp;
};

// LLVM's x86 backend (LLVM 22) asserts ("Unexpected illegal type!" in
// LegalizeDAG) on a reversed vector of bf16 -- what the loop vectorizer
// makes of a thread loop that reads bf16 backwards (reverse, transpose).
// On the host, bf16 memory is read and written as i16 (a free bitcast);
// arithmetic on bf16 is integer code or f32 already (arith-expand).
void accessBf16AsI16(mlir::ModuleOp module) {
  auto asInteger = [](mlir::Type t) -> mlir::Type {
    auto i16 = mlir::IntegerType::get(t.getContext(), 16);
    if (t.isBF16()) return i16;
    auto vector = llvm::dyn_cast<mlir::VectorType>(t);
    if (vector && vector.getElementType().isBF16()) return vector.clone(i16);
    return {};
  };
  module.walk([&](mlir::LLVM::LoadOp load) {
    mlir::Type integer = asInteger(load.getType());
    if (!integer) return;
    mlir::OpBuilder b(load);
    mlir::Operation* copy = b.clone(*load);
    copy->getResult(0).setType(integer);
    mlir::Value value =
        b.create<mlir::LLVM::BitcastOp>(load.getLoc(), load.getType(), copy->getResult(0));
    load.getResult().replaceAllUsesWith(value);
    load.erase();
  });
  module.walk([&](mlir::LLVM::StoreOp store) {
    mlir::Type integer = asInteger(store.getValue().getType());
    if (!integer) return;
    mlir::OpBuilder b(store);
    store.getValueMutable().assign(
        b.create<mlir::LLVM::BitcastOp>(store.getLoc(), integer, store.getValue()));
  });
}

// The private function `name`: (type, ...) -> type, of Op's operands,
// that `build` defines (of its arguments), added once where an `Op` of
// `ops` (those the pass approximates) is a scalar of `type`.
// hostFunctionAttributes marks it for LLVM once it is an llvm.func.
template <typename Op>
void addHostFunction(
    mlir::ModuleOp module, llvm::ArrayRef<mlir::Operation*> ops, const std::string& name,
    mlir::Type type,
    llvm::function_ref<mlir::Value(mlir::PatternRewriter&, mlir::ValueRange)> build) {
  Op used;
  for (mlir::Operation* op : ops) {
    auto candidate = llvm::dyn_cast<Op>(op);
    if (candidate && candidate.getType() == type) used = candidate;
  }
  if (!used || module.lookupSymbol(name)) return;
  mlir::PatternRewriter rewriter(module.getContext());
  mlir::Location loc = module.getLoc();
  rewriter.setInsertionPointToEnd(module.getBody());
  llvm::SmallVector<mlir::Type> inputs(used->getNumOperands(), type);
  auto fn =
      rewriter.create<mlir::func::FuncOp>(loc, name, rewriter.getFunctionType(inputs, {type}));
  fn.setPrivate();
  rewriter.setInsertionPointToStart(fn.addEntryBlock());
  rewriter.create<mlir::func::ReturnOp>(loc, build(rewriter, fn.getArguments()));
}

// For each of sin, cos, tan that a scalar f32 op computes, the function
// with the exact reduction HostTrig calls, `xla_gpu_host_<name>_f32(f32)
// -> f32`; for each that a scalar f64 op computes, the one HostTrig64
// calls, `xla_gpu_host_<name>_f64(f64) -> f64`: libm's (the op itself,
// which MathToLLVM or MathToLibm makes a call).
template <typename Op, typename Function>
void addHostTrigFunctions(mlir::ModuleOp module, llvm::ArrayRef<mlir::Operation*> ops) {
  mlir::Builder b(module.getContext());
  addHostFunction<Op>(module, ops, hostTrigName(Function::kName), b.getF32Type(),
                      [](mlir::PatternRewriter& rewriter, mlir::ValueRange args) {
                        mlir::Value x = args[0];
                        F32Builder f32{rewriter, x.getLoc(), x.getType(), /*host=*/true};
                        return ExactTrig<Function>::build(f32, x);
                      });
  addHostFunction<Op>(module, ops, hostTrigName64(Function::kName), b.getF64Type(),
                      [](mlir::PatternRewriter& rewriter, mlir::ValueRange args) {
                        return rewriter.create<Op>(args[0].getLoc(), args).getResult();
                      });
}

// Scalar f64 functions with vector variants: a scalar f64 exp, expm1,
// log, log1p, atan2, cbrt, pow or erf becomes a call of
// `xla_gpu_f64_<name>`, which is libm's (the op itself, which MathToLLVM or
// MathToLibm makes a call), with a variant `xla_gpu_f64_<name>_v<lanes>`
// on vectors of the host's width (-xla-gpu-lower-to-llvm's
// f64-vector-lanes: 8 with AVX-512, 4 with AVX2; each variant costs LLVM's
// O3 its body: with both, pow + erf compiled in 42 ms instead of 31) that
// computes the approximation above. The loop
// vectorizer calls the variant of its width (the scalar function names
// them: f64VariantAttributes); a loop it leaves scalar calls libm, which is
// 2.5-6.6x faster than the approximations run a lane at a time (a
// middle-dimension sum of f64[512,512,3] computed with pow: 2.2 ms with
// libm's pow, 14.6 with the approximation inlined and left scalar; exp
// 0.70 -> 2.0 ms, erf 3.8 -> 12.1).
std::string f64FunctionName(llvm::StringRef name) { return ("xla_gpu_f64_" + name).str(); }

template <typename Op, typename Approximation>
void addF64Function(mlir::ModuleOp module, llvm::ArrayRef<mlir::Operation*> ops,
                    llvm::StringRef name, unsigned lanes,
                    llvm::SmallVectorImpl<std::string>& added,
                    llvm::DenseSet<mlir::Operation*>& replaced) {
  llvm::SmallVector<Op> scalars;
  for (mlir::Operation* op : ops) {
    if (replaced.contains(op)) continue;  // erased by an earlier call
    auto f = llvm::dyn_cast<Op>(op);
    if (!f || !f.getType().isF64()) continue;
    if constexpr (std::is_same_v<Op, mlir::math::PowFOp>) {
      if (PowByConstant::exponent(f)) continue;
    }
    scalars.push_back(f);
  }
  if (scalars.empty()) return;
  std::string scalarName = f64FunctionName(name);
  mlir::PatternRewriter rewriter(module.getContext());
  mlir::Location loc = module.getLoc();
  mlir::Type f64 = rewriter.getF64Type();
  constexpr unsigned kArity = Op::template hasTrait<mlir::OpTrait::OneOperand>() ? 1 : 2;
  auto define = [&](const std::string& fnName, mlir::Type type, auto body) {
    rewriter.setInsertionPointToEnd(module.getBody());
    llvm::SmallVector<mlir::Type> inputs(kArity, type);
    auto fn = rewriter.create<mlir::func::FuncOp>(loc, fnName,
                                                  rewriter.getFunctionType(inputs, {type}));
    fn.setPrivate();
    rewriter.setInsertionPointToStart(fn.addEntryBlock());
    rewriter.create<mlir::func::ReturnOp>(loc, body(fn.getArguments(), type));
    return fn;
  };
  auto scalar = module.lookupSymbol<mlir::func::FuncOp>(scalarName);
  if (!scalar) {
    scalar = define(scalarName, f64, [&](mlir::ValueRange args, mlir::Type) {
      return rewriter.create<Op>(loc, args).getResult();
    });
    {
      define(scalarName + "_v" + std::to_string(lanes), mlir::VectorType::get({lanes}, f64),
             [&](mlir::ValueRange args, mlir::Type type) {
               F32Builder builder{rewriter, loc, type, /*host=*/true};
               if constexpr (kArity == 1) {
                 return Approximation::build(F64Ops(builder), args[0]);
               } else {
                 return Approximation::build(F64Ops(builder), args[0], args[1]);
               }
             });
    }
    added.push_back(scalarName);
  }
  for (Op op : scalars) {
    replaced.insert(op);
    rewriter.setInsertionPoint(op);
    rewriter.replaceOpWithNewOp<mlir::func::CallOp>(op, scalar, op->getOperands());
  }
}

// One of the f64 functions with vector variants: its op and its
// approximation (whose kName names its functions).
template <typename OpT, typename ApproximationT>
struct F64Function {
  using Op = OpT;
  using Approximation = ApproximationT;
};

// The f64 functions with vector variants, in the order their functions are
// added: a scalar op becomes a call of its function (addF64Function), a
// vector op the approximation in place (ApproximateF64).
template <typename... Functions>
struct F64Functions {
  static void addFunctions(mlir::ModuleOp module, llvm::ArrayRef<mlir::Operation*> ops,
                           unsigned lanes, llvm::SmallVectorImpl<std::string>& added,
                           llvm::DenseSet<mlir::Operation*>& replaced) {
    (addF64Function<typename Functions::Op, typename Functions::Approximation>(
         module, ops, Functions::Approximation::kName, lanes, added, replaced),
     ...);
  }
  static void addPatterns(mlir::RewritePatternSet& patterns) {
    patterns.add<ApproximateF64<typename Functions::Op, typename Functions::Approximation>...>(
        patterns.getContext());
  }
};

using HostF64Functions = F64Functions<
    F64Function<mlir::math::ExpOp, Exp64>, F64Function<mlir::math::ExpM1Op, Expm1F64>,
    F64Function<mlir::math::LogOp, Log64>, F64Function<mlir::math::Log1pOp, Log1pF64>,
    F64Function<mlir::math::Atan2Op, Atan2F64>,
    F64Function<mlir::math::CbrtOp, CbrtF64>, F64Function<mlir::math::PowFOp, PowF64>,
    F64Function<mlir::math::ErfOp, ErfF64>>;

// `fn` known to touch no memory, to return and not to unwind: what lets the
// loop vectorizer call it (or a vector variant of it) in a lane loop.
void markPure(mlir::LLVM::LLVMFuncOp fn) {
  auto none = mlir::LLVM::ModRefInfo::NoModRef;
  fn.setMemoryEffectsAttr(mlir::LLVM::MemoryEffectsAttr::get(fn.getContext(), none, none, none,
                                                             none, none, none));
  fn.setNoUnwind(true);
  fn.setWillReturn(true);
}

// A scalar function whose calls the loop vectorizer replaces by its vector
// variants': internal, or weak_odr and hidden where it has more than one
// argument. An internal function's constant argument (pow(x, 2.5),
// fmod(x, 2 pi)) is propagated into it and dropped from its signature
// (IPSCCP), which then no longer matches its variants' (a vector variant
// takes each argument): the loop stayed scalar, f64 pow by 2.5 of 1M
// elements 5.3 ms (libm's), jnp.mod(x, 2 pi) of 4M floats 2.6 ms.
void setVariantsFunctionLinkage(mlir::LLVM::LLVMFuncOp fn) {
  if (fn.getNumArguments() <= 1) {
    fn.setLinkage(mlir::LLVM::Linkage::Internal);
    return;
  }
  fn.setLinkage(mlir::LLVM::Linkage::WeakODR);
  fn.setVisibility_(mlir::LLVM::Visibility::Hidden);
}

// After the LLVM conversion: each function of addF64Function is internal
// (weak_odr where it has two arguments: setVariantsFunctionLinkage),
// never inlined (the vectorizer sees its call), known to touch no memory
// and to return, and names its variants (LLVM's vector function ABI:
// `_ZGV_LLVM_N<lanes>v[v]_<name>(<name>_v<lanes>)`); the variants are
// weak_odr and hidden, so that nothing drops them before the vectorizer
// calls them and each part of a kernel compiled in parts may hold them,
// and marked "xla-gpu-f64-variant": HostJit.cpp inlines their calls after
// the vectorizer and drops them.
void f64VariantAttributes(mlir::ModuleOp module, llvm::ArrayRef<std::string> names,
                          unsigned lanes) {
  mlir::MLIRContext* ctx = module.getContext();
  for (const std::string& name : names) {
    auto fn = module.lookupSymbol<mlir::LLVM::LLVMFuncOp>(name);
    if (!fn) continue;
    std::string variant = name + "_v" + std::to_string(lanes);
    if (auto v = module.lookupSymbol<mlir::LLVM::LLVMFuncOp>(variant)) {
      markPure(v);
      v.setLinkage(mlir::LLVM::Linkage::WeakODR);
      v.setVisibility_(mlir::LLVM::Visibility::Hidden);
      v.setPassthroughAttr(
          mlir::ArrayAttr::get(ctx, {mlir::StringAttr::get(ctx, "xla-gpu-f64-variant")}));
    }
    std::string mappings = "_ZGV_LLVM_N" + std::to_string(lanes) +
                           std::string(fn.getNumArguments(), 'v') + "_" + name + "(" + variant +
                           ")";
    markPure(fn);
    setVariantsFunctionLinkage(fn);
    fn.setNoInline(true);
    fn.setPassthroughAttr(mlir::ArrayAttr::get(
        ctx, {mlir::ArrayAttr::get(ctx, {mlir::StringAttr::get(ctx, "vector-function-abi-variant"),
                                         mlir::StringAttr::get(ctx, mappings)})}));
  }
}

// After the LLVM conversion: the functions addHostTrigFunctions defined,
// and HostFmod's libm functions, are internal (fmod's weak_odr:
// setVariantsFunctionLinkage), never inlined (the vectorizer would
// if-convert an inlined exact reduction, running it for every lane) and
// not optimized (they are cold: the bench's sin + cos compiled in 54 ms,
// 61 with them optimized, 51 before they existed), but known to touch no
// memory and to return (what lets the vectorizer call them), and they
// carry "xla-gpu-vector-variants": HostJit.cpp gives the loop vectorizer
// masked vector variants of them, which it calls where a lane needs one.
void hostFunctionAttributes(mlir::ModuleOp module) {
  mlir::MLIRContext* ctx = module.getContext();
  for (const std::string& name :
       {hostTrigName(Sin::kName), hostTrigName(Cos::kName), hostTrigName(Tan::kName),
        hostTrigName64(Sin::kName), hostTrigName64(Cos::kName), hostTrigName64(Tan::kName),
        hostFmodName(mlir::Float32Type::get(ctx)),
        hostFmodName(mlir::Float64Type::get(ctx))}) {
    auto fn = module.lookupSymbol<mlir::LLVM::LLVMFuncOp>(name);
    if (!fn) continue;
    markPure(fn);
    setVariantsFunctionLinkage(fn);
    fn.setNoInline(true);
    fn.setOptimizeNone(true);
    fn.setPassthroughAttr(
        mlir::ArrayAttr::get(ctx, {mlir::StringAttr::get(ctx, "xla-gpu-vector-variants")}));
  }
}

class LowerToLlvmPass : public impl::LowerToLlvmPassBase<LowerToLlvmPass> {
 public:
  using LowerToLlvmPassBase::LowerToLlvmPassBase;

  // The pass's pattern sets, gathered and frozen once per pass manager
  // (MLIR initializes a pass manager's passes on its first run; the
  // compile contexts keep theirs parsed from kernel to kernel): gathered
  // at every run, they cost ~0.4 ms a kernel (measured over the bench).
  mlir::LogicalResult initialize(mlir::MLIRContext* ctx) override {
    {
      mlir::RewritePatternSet patterns(ctx);
      mlir::populateSCFToControlFlowConversionPatterns(patterns);
      scfToCf_ = std::move(patterns);
    }
    {
      mlir::RewritePatternSet patterns(ctx);
      mlir::populateComplexToStandardConversionPatterns(patterns);
      complexToStandard_ = std::move(patterns);
    }
    bool cpu = target == "cpu";
    if (cpu) {
      mlir::RewritePatternSet approximations(ctx);
      approximations.add<HostTrig<mlir::math::SinOp, Sin>, HostTrig<mlir::math::CosOp, Cos>,
                         HostTrig<mlir::math::TanOp, Tan>, HostTrig64<mlir::math::SinOp, Sin>,
                         HostTrig64<mlir::math::CosOp, Cos>, HostTrig64<mlir::math::TanOp, Tan>,
                         PowByConstant, HostFmod>(ctx, /*benefit=*/2);
      // f64 tanh, a scalar or a vector, in place as f32's is (no function
      // with vector variants): its bits then do not depend on whether the
      // loop vectorizer took the element's lane (libm's tanh in a loop's
      // remainder would have given other bits than XLA:CPU's).
      approximations.add<ApproximateF64<mlir::math::TanhOp, Tanh64, /*Scalars=*/true>>(
          ctx, /*benefit=*/2);
      approximations.add<ApproximateF32<mlir::math::TanhOp, Tanh, /*Host=*/true>,
                         ApproximateF32<mlir::math::LogOp, Log, /*Host=*/true>,
                         ApproximateF32<mlir::math::ErfOp, Erf, /*Host=*/true>,
                         ApproximateF32<mlir::math::ExpM1Op, Expm1, /*Host=*/true>,
                         ApproximateF32<mlir::math::Log1pOp, Log1p, /*Host=*/true>,
                         ApproximateF32<mlir::math::SinOp, ExactTrig<Sin>, /*Host=*/true>,
                         ApproximateF32<mlir::math::CosOp, ExactTrig<Cos>, /*Host=*/true>,
                         ApproximateF32<mlir::math::TanOp, ExactTrig<Tan>, /*Host=*/true>,
                         ApproximateF32<mlir::math::PowFOp, Pow, /*Host=*/true>,
                         ApproximateF32<mlir::math::Atan2Op, Atan2, /*Host=*/true>,
                         ApproximateF32<mlir::math::CbrtOp, Cbrt, /*Host=*/true>>(ctx);
      approximations.add<ApproximateF32<mlir::math::ExpOp, Exp, /*Host=*/true>>(ctx,
                                                                                ldexpScaling);
      HostF64Functions::addPatterns(approximations);
      approximations_ = std::move(approximations);
      mlir::RewritePatternSet libm(ctx);
      mlir::populateMathToLibmConversionPatterns(libm);
      libm_ = std::move(libm);
    }
    mlir::LowerToLLVMOptions options(ctx);
    // (A bad width fails the run, which says so.)
    options.overrideIndexBitwidth(indexBitwidth == 32 ? 32 : 64);
    converter_ = std::make_shared<mlir::LLVMTypeConverter>(ctx, options);
    mlir::RewritePatternSet patterns(ctx);
    if (!cpu) {
      // libdevice (__nv_tanhf, ...) before the generic math lowering: the
      // benefit decides which pattern wins for ops both can lower.
      mlir::populateLibDeviceConversionPatterns(*converter_, patterns, /*benefit=*/10);
      mlir::populateGpuToNVVMConversionPatterns(*converter_, patterns);
    }
    mlir::populateFuncToLLVMConversionPatterns(*converter_, patterns);
    // Signed floor/ceil divisions (index maps of possibly negative values:
    // a pad's shifted index) have no LLVM op: expanded, as XLA's pass does.
    mlir::arith::populateCeilFloorDivExpandOpsPatterns(patterns);
    mlir::arith::populateArithToLLVMConversionPatterns(*converter_, patterns);
    mlir::populateComplexToLLVMConversionPatterns(*converter_, patterns);
    mlir::populateMathToLLVMConversionPatterns(*converter_, patterns);
    mlir::populateVectorToLLVMConversionPatterns(*converter_, patterns);
    mlir::cf::populateControlFlowToLLVMConversionPatterns(*converter_, patterns);
    mlir::index::populateIndexToLLVMConversionPatterns(*converter_, patterns);
    toLlvm_ = std::move(patterns);
    return mlir::success();
  }

  void runOnOperation() override {
    // 1. scf -> cf, so that everything left is straight-line or branches.
    // 2. One conversion to LLVM + NVVM: func, arith, math (libdevice calls
    //    first, LLVM intrinsics for the rest), vector, cf, index, gpu ids.
    // 3. Public functions become kernels.
    mlir::ModuleOp module = getOperation();
    mlir::MLIRContext* ctx = &getContext();
    {
      mlir::ConversionTarget target(*ctx);
      target.addIllegalOp<mlir::scf::ForOp, mlir::scf::IfOp, mlir::scf::WhileOp,
                          mlir::scf::ExecuteRegionOp, mlir::scf::IndexSwitchOp>();
      target.markUnknownOpDynamicallyLegal([](mlir::Operation*) { return true; });
      if (failed(mlir::applyPartialConversion(module, target, scfToCf_))) {
        return signalPassFailure();
      }
    }
    if (target != "gpu" && target != "cpu") {
      module.emitError() << "target must be gpu or cpu, got " << target;
      return signalPassFailure();
    }
    if (indexBitwidth != 32 && indexBitwidth != 64) {
      module.emitError() << "index-bitwidth must be 32 or 64, got "
                         << static_cast<unsigned>(indexBitwidth);
      return signalPassFailure();
    }
    bool cpu = target == "cpu";
    // Complex arithmetic becomes arith/math on the parts; create/re/im
    // stay for the LLVM conversion (a struct of two floats). A module with
    // no complex op skips the conversion (a walk of every op: 55 -> 50 ms).
    auto findComplex = [](mlir::Operation* op) {
      return llvm::isa_and_nonnull<mlir::complex::ComplexDialect>(op->getDialect())
                 ? mlir::WalkResult::interrupt()
                 : mlir::WalkResult::advance();
    };
    if (module.walk(findComplex).wasInterrupted()) {
      mlir::ConversionTarget complexTarget(*ctx);
      complexTarget.addIllegalDialect<mlir::complex::ComplexDialect>();
      complexTarget.addLegalOp<mlir::complex::CreateOp, mlir::complex::ReOp,
                               mlir::complex::ImOp, mlir::complex::ConstantOp>();
      complexTarget.markUnknownOpDynamicallyLegal([](mlir::Operation*) { return true; });
      if (failed(mlir::applyPartialConversion(module, complexTarget, complexToStandard_))) {
        return signalPassFailure();
      }
    }
    // The f64 functions with vector variants (addF64Function).
    llvm::SmallVector<std::string> f64Functions;
    if (cpu) {
      // Rewritten op by op, not by a greedy walk of the whole module, which
      // also visits and folds every other op: over the bench kernels the
      // pass took 75 ms with it, 55 without (LLVM folds what it folded).
      llvm::SmallVector<mlir::Operation*> approximated;
      module.walk([&](mlir::Operation* op) {
        if (llvm::isa<mlir::math::TanhOp, mlir::math::ExpOp, mlir::math::LogOp,
                      mlir::math::ErfOp, mlir::math::ExpM1Op, mlir::math::Log1pOp,
                      mlir::math::SinOp, mlir::math::CosOp, mlir::math::TanOp,
                      mlir::math::PowFOp, mlir::math::Atan2Op, mlir::math::CbrtOp,
                      mlir::arith::RemFOp>(op)) {
          approximated.push_back(op);
        }
      });
      addHostTrigFunctions<mlir::math::SinOp, Sin>(module, approximated);
      addHostTrigFunctions<mlir::math::CosOp, Cos>(module, approximated);
      addHostTrigFunctions<mlir::math::TanOp, Tan>(module, approximated);
      for (mlir::Type type : {mlir::Type(mlir::Float32Type::get(ctx)),
                              mlir::Type(mlir::Float64Type::get(ctx))}) {
        addHostFunction<mlir::arith::RemFOp>(
            module, approximated, hostFmodName(type), type,
            [](mlir::PatternRewriter& rewriter, mlir::ValueRange args) {
              return rewriter.create<mlir::arith::RemFOp>(args[0].getLoc(), args[0], args[1])
                  .getResult();
            });
      }
      llvm::DenseSet<mlir::Operation*> replaced;
      HostF64Functions::addFunctions(module, approximated, f64VectorLanes, f64Functions,
                                     replaced);
      // The ops those calls replaced (erased: compared, not read).
      llvm::erase_if(approximated, [&](mlir::Operation* op) { return replaced.contains(op); });
      if (!approximated.empty() &&
          failed(mlir::applyOpPatternsGreedily(approximated, approximations_))) {
        return signalPassFailure();
      }
      // Math LLVM has no intrinsic for (f64 erf, cbrt, atan2...) or only a
      // naive one (MathToLLVM's expm1 is exp(x) - 1, log1p is log(1 + x),
      // both wrong near 0; f32's are approximated above) becomes calls to
      // libm. The rest stays intrinsics
      // LLVM can vectorize (floor, sqrt...).
      llvm::SmallVector<mlir::Operation*> libmOps;
      module.walk([&](mlir::Operation* op) {
        if (llvm::isa<mlir::math::ErfOp, mlir::math::CbrtOp, mlir::math::ExpM1Op,
                      mlir::math::Log1pOp, mlir::math::TanOp, mlir::math::Atan2Op,
                      mlir::math::AtanOp, mlir::math::AcosOp, mlir::math::AsinOp,
                      mlir::math::SinhOp, mlir::math::CoshOp, mlir::math::AtanhOp,
                      mlir::math::AcoshOp, mlir::math::AsinhOp>(op)) {
          libmOps.push_back(op);
        }
      });
      if (!libmOps.empty() && failed(mlir::applyOpPatternsGreedily(libmOps, libm_))) {
        return signalPassFailure();
      }
    }
    llvm::SmallVector<std::string> kernels;
    module.walk([&](mlir::func::FuncOp f) {
      if (!f.isPublic() || f.isExternal()) return;
      kernels.push_back(f.getName().str());
      if (!cpu) return;
      // Host entry points' buffers do not alias (merge-pointers passed
      // shared slices once), which is what lets LLVM vectorize the thread
      // loops. (No C-interface copy: the JIT calls the packed wrapper
      // HostJit.cpp adds after optimization.)
      for (unsigned i = 0; i < f.getNumArguments(); ++i) {
        if (llvm::isa<mlir::LLVM::LLVMPointerType>(f.getArgument(i).getType())) {
          f.setArgAttr(i, mlir::LLVM::LLVMDialect::getNoAliasAttrName(),
                       mlir::UnitAttr::get(ctx));
        }
      }
    });
    mlir::LLVMConversionTarget legality(*ctx);
    if (!cpu) mlir::configureGpuToNVVMConversionLegality(legality);
    legality.addLegalOp<mlir::ModuleOp>();
    if (failed(mlir::applyFullConversion(module, legality, toLlvm_))) {
      return signalPassFailure();
    }
    if (cpu) {
      hostFunctionAttributes(module);
      f64VariantAttributes(module, f64Functions, f64VectorLanes);
      accessBf16AsI16(module);
      return;
    }
    for (const std::string& name : kernels) {
      if (auto f = module.lookupSymbol<mlir::LLVM::LLVMFuncOp>(name)) {
        f->setAttr(mlir::NVVM::NVVMDialect::getKernelFuncAttrName(),
                   mlir::UnitAttr::get(ctx));
      }
    }
  }

 private:
  mlir::FrozenRewritePatternSet scfToCf_, complexToStandard_, approximations_, libm_, toLlvm_;
  // The conversion patterns' type converter (they hold a reference to it).
  std::shared_ptr<mlir::LLVMTypeConverter> converter_;
};

}  // namespace
}  // namespace xla::gpu
