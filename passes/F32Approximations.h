//===- F32Approximations.h - f32 math as arithmetic ------------*- C++ -*-===//
//
// f32 functions as polynomial arithmetic (which vectorizes, unlike a libm
// call), shared by -xla-gpu-expand-float-ops (XLA:GPU's forms) and
// -xla-gpu-lower-to-llvm (XLA:CPU's, on the host).
//
//===----------------------------------------------------------------------===//

#ifndef XLA_GPU_PASSES_F32APPROXIMATIONS_H_
#define XLA_GPU_PASSES_F32APPROXIMATIONS_H_

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/PatternMatch.h"

namespace xla::gpu {

// The f32 arithmetic the approximations below emit, in the shape of the op
// they replace (a scalar, or a vector of f32): constants splatted to it,
// its i32 twin for bit manipulation, FMAs, Horner polynomials, compares and
// selects.
struct F32Builder {
  mlir::PatternRewriter& rewriter;
  mlir::Location loc;
  mlir::Type type;
  // For the host (x86): clamps as compares and selects (see clamp).
  bool host = false;
  // The host scales by a power of two with llvm.ldexp (AVX-512's VSCALEF:
  // one instruction that rounds into the subnormals once).
  bool ldexp = false;

  // Only f32 is approximated (expand-float-ops widened the narrower types).
  static bool applies(mlir::Operation* op) {
    return mlir::getElementTypeOrSelf(op->getResult(0).getType()).isF32();
  }
  mlir::Value splat(mlir::TypedAttr attr) const {
    if (auto vt = llvm::dyn_cast<mlir::VectorType>(type)) {
      attr = mlir::DenseElementsAttr::get(vt.clone(attr.getType()), attr);
    }
    return rewriter.create<mlir::arith::ConstantOp>(loc, attr);
  }
  mlir::Value c(double v) const {
    return splat(rewriter.getF32FloatAttr(static_cast<float>(v)));
  }
  mlir::Value ci(int32_t v) const { return splat(rewriter.getI32IntegerAttr(v)); }
  mlir::Type i32() const {
    if (auto vt = llvm::dyn_cast<mlir::VectorType>(type)) return vt.clone(rewriter.getI32Type());
    return rewriter.getI32Type();
  }
  mlir::Value fma(mlir::Value a, mlir::Value b, mlir::Value d) const {
    return rewriter.create<mlir::math::FmaOp>(loc, a, b, d);
  }
  // ((k0 x + k1) x + k2) ... with one FMA a coefficient.
  mlir::Value horner(mlir::Value x, llvm::ArrayRef<double> coefficients) const {
    mlir::Value acc = c(coefficients.front());
    for (double k : coefficients.drop_front()) acc = fma(acc, x, c(k));
    return acc;
  }
  mlir::Value cmp(mlir::arith::CmpFPredicate p, mlir::Value a, mlir::Value b) const {
    return rewriter.create<mlir::arith::CmpFOp>(loc, p, a, b);
  }
  mlir::Value select(mlir::Value cond, mlir::Value a, mlir::Value b) const {
    return rewriter.create<mlir::arith::SelectOp>(loc, cond, a, b);
  }
  // x clamped to [lo, hi] (a NaN stays a NaN). On the GPU minimumf and
  // maximumf are an instruction each (min.NaN, max.NaN). On x86, which
  // has no such instruction, each is a sequence (it also orders -0 below
  // +0) that slows instruction selection: there x > hi ? hi : x is one
  // MINPS (hi < x ? hi : x), and the same for lo.
  mlir::Value clamp(mlir::Value x, double lo, double hi) const { return clamp(x, c(lo), c(hi)); }
  // The same with bounds of x's type (an f64 one too).
  mlir::Value clamp(mlir::Value x, mlir::Value low, mlir::Value high) const {
    if (!host) {
      return rewriter.create<mlir::arith::MaximumFOp>(
          loc, rewriter.create<mlir::arith::MinimumFOp>(loc, x, high), low);
    }
    mlir::Value below = select(cmp(mlir::arith::CmpFPredicate::OLT, high, x), high, x);
    return select(cmp(mlir::arith::CmpFPredicate::OLT, below, low), low, below);
  }
};

// An f32 op replaced by `Approximation::build(f32, operands...)` (each
// below; a unary or a binary op), for the host or the GPU.
template <typename Op, typename Approximation, bool Host = false>
struct ApproximateF32 : public mlir::OpRewritePattern<Op> {
  explicit ApproximateF32(mlir::MLIRContext* ctx, bool ldexp = false)
      : mlir::OpRewritePattern<Op>(ctx), ldexp(ldexp) {}
  mlir::LogicalResult matchAndRewrite(Op op, mlir::PatternRewriter& rewriter) const override {
    if (!F32Builder::applies(op)) return rewriter.notifyMatchFailure(op, "only f32");
    F32Builder f32{rewriter, op.getLoc(), op.getType(), Host, ldexp};
    if constexpr (Op::template hasTrait<mlir::OpTrait::OneOperand>()) {
      rewriter.replaceOp(op, Approximation::build(f32, op.getOperand()));
    } else {
      rewriter.replaceOp(op, Approximation::build(f32, op.getLhs(), op.getRhs()));
    }
    return mlir::success();
  }
  // F32Builder's ldexp (the host's -xla-gpu-lower-to-llvm ldexp-scaling).
  bool ldexp;
};

// tanh(x) as Eigen's rational approximation: x * P(x^2) / Q(x^2) on x
// clamped to +-`clamp` (where the ratio reaches 1), and x itself below
// 4e-4. Eigen (and upstream MLIR, which XLA:GPU uses, and XLA:CPU's
// intrinsic) clamps at 7.99881172180175781 when FMAs evaluate it (as
// here), at 7.90531110763549805 without.
inline mlir::Value tanhRational(const F32Builder& f32, mlir::Value a, double clamp) {
  mlir::PatternRewriter& rewriter = f32.rewriter;
  mlir::Location loc = f32.loc;
  mlir::Value x = f32.clamp(a, -clamp, clamp);
  mlir::Value x2 = rewriter.create<mlir::arith::MulFOp>(loc, x, x);
  mlir::Value p = f32.horner(x2, {-2.76076847742355e-16, 2.00018790482477e-13,
                                  -8.60467152213735e-11, 5.12229709037114e-08,
                                  1.48572235717979e-05, 6.37261928875436e-04,
                                  4.89352455891786e-03});
  p = rewriter.create<mlir::arith::MulFOp>(loc, x, p);
  mlir::Value q = f32.horner(x2, {1.19825839466702e-06, 1.18534705686654e-04,
                                  2.26843463243900e-03, 4.89352518554385e-03});
  mlir::Value ratio = rewriter.create<mlir::arith::DivFOp>(loc, p, q);
  mlir::Value tiny = f32.cmp(mlir::arith::CmpFPredicate::OLT,
                             rewriter.create<mlir::math::AbsFOp>(loc, a), f32.c(0.0004));
  return f32.select(tiny, x, ratio);
}

// x * P(x^2) / Q(x^2): Eigen's rational interpolant of erf (9/12-degree,
// FMA Horner), which XLA:GPU evaluates on x clamped to +-3.7439 and XLA:CPU
// on x below 3.8325 in magnitude (copysign(1, x) from there).
inline mlir::Value erfRational(const F32Builder& f32, mlir::Value x) {
  mlir::PatternRewriter& rewriter = f32.rewriter;
  mlir::Location loc = f32.loc;
  mlir::Value x2 = rewriter.create<mlir::arith::MulFOp>(loc, x, x);
  mlir::Value p = f32.horner(x2, {0.00022905065861350646, 0.0034082910107109506,
                                  0.050955695062380861, 0.18520832239976145, 1.128379143519084});
  mlir::Value q = f32.horner(x2, {-1.1791602954361697e-7, 0.000023547966471313185,
                                  0.0010179625278914885, 0.014070470171167667,
                                  0.11098505178285362, 0.49746925110067538, 1.0});
  return rewriter.create<mlir::arith::DivFOp>(
      loc, rewriter.create<mlir::arith::MulFOp>(loc, x, p), q);
}

}  // namespace xla::gpu

#endif  // XLA_GPU_PASSES_F32APPROXIMATIONS_H_
