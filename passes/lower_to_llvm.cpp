//===- lower_to_llvm.cpp - -xla-gpu-lower-to-llvm --------------------------===//

#include <limits>

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
#include "passes/Passes.h"

namespace xla::gpu {

#define GEN_PASS_DEF_LOWERTOLLVMPASS
#include "passes/Passes.h.inc"

namespace {

// The f32 arithmetic the approximations below emit, in the shape of the op
// they replace (a scalar, or a vector of f32): constants splatted to it,
// its i32 twin for bit manipulation, FMAs and Horner polynomials.
struct F32Builder {
  mlir::PatternRewriter& rewriter;
  mlir::Location loc;
  mlir::Type type;

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
};

// tanh(x) as Eigen's (and XLA:CPU's) rational approximation: x * P(x^2) /
// Q(x^2) on x clamped to +-7.9053, and x itself below 4e-4. Unlike a libm
// call it vectorizes; it is within a few ulp of tanhf.
struct ApproximateTanh : public mlir::OpRewritePattern<mlir::math::TanhOp> {
  using OpRewritePattern::OpRewritePattern;
  mlir::LogicalResult matchAndRewrite(mlir::math::TanhOp op,
                                      mlir::PatternRewriter& rewriter) const override {
    if (!F32Builder::applies(op)) return rewriter.notifyMatchFailure(op, "only f32");
    mlir::Location loc = op.getLoc();
    F32Builder f32{rewriter, loc, op.getType()};
    auto c = [&](double v) { return f32.c(v); };
    mlir::Value a = op.getOperand();
    mlir::Value x = rewriter.create<mlir::arith::MaximumFOp>(
        loc, rewriter.create<mlir::arith::MinimumFOp>(loc, a, c(7.90531110763549805)),
        c(-7.90531110763549805));
    mlir::Value x2 = rewriter.create<mlir::arith::MulFOp>(loc, x, x);
    mlir::Value p = f32.horner(x2, {-2.76076847742355e-16, 2.00018790482477e-13, -8.60467152213735e-11,
                            5.12229709037114e-08, 1.48572235717979e-05, 6.37261928875436e-04,
                            4.89352455891786e-03});
    p = rewriter.create<mlir::arith::MulFOp>(loc, x, p);
    mlir::Value q = f32.horner(x2, {1.19825839466702e-06, 1.18534705686654e-04, 2.26843463243900e-03,
                            4.89352518554385e-03});
    mlir::Value ratio = rewriter.create<mlir::arith::DivFOp>(loc, p, q);
    mlir::Value tiny = rewriter.create<mlir::arith::CmpFOp>(
        loc, mlir::arith::CmpFPredicate::OLT, rewriter.create<mlir::math::AbsFOp>(loc, a),
        c(0.0004));
    rewriter.replaceOpWithNewOp<mlir::arith::SelectOp>(op, tiny, x, ratio);
    return mlir::success();
  }
};

// exp(x) for f32 in arithmetic LLVM vectorizes (a libm call does not):
// Cody-Waite reduction x = n ln2 + r (|r| <= ln2 / 2, ln2 in two parts),
// Cephes' degree-6 polynomial for e^r (within 1 ulp of expf on [-ln2/2,
// ln2/2]), and 2^n applied as two exponent-field scalings so that results
// down to the smallest subnormal are reached. x above ln(FLT_MAX) is +inf,
// below -104 0 (as the rounding would give), a NaN stays a NaN.
struct ApproximateExp : public mlir::OpRewritePattern<mlir::math::ExpOp> {
  using OpRewritePattern::OpRewritePattern;
  mlir::LogicalResult matchAndRewrite(mlir::math::ExpOp op,
                                      mlir::PatternRewriter& rewriter) const override {
    if (!F32Builder::applies(op)) return rewriter.notifyMatchFailure(op, "only f32");
    mlir::Type type = op.getType();
    mlir::Location loc = op.getLoc();
    F32Builder f32{rewriter, loc, type};
    auto c = [&](double v) { return f32.c(v); };
    auto ci = [&](int32_t v) { return f32.ci(v); };
    auto fma = [&](mlir::Value a, mlir::Value b, mlir::Value d) { return f32.fma(a, b, d); };
    mlir::Type i32 = f32.i32();
    mlir::Value x = op.getOperand();
    // Clamped to where the result is finite and not flushed to 0 (NaN kept).
    mlir::Value clamped = rewriter.create<mlir::arith::MaximumFOp>(
        loc, rewriter.create<mlir::arith::MinimumFOp>(loc, x, c(88.72283935546875)),
        c(-104.0));
    mlir::Value n = rewriter.create<mlir::math::RoundEvenOp>(
        loc, rewriter.create<mlir::arith::MulFOp>(loc, clamped, c(1.44269504088896341)));
    mlir::Value r = fma(n, c(-0.693359375), clamped);
    r = fma(n, c(2.12194440e-4), r);
    mlir::Value p = f32.horner(r, {1.9875691500e-4, 1.3981999507e-3, 8.3334519073e-3,
                                   4.1665795894e-2, 1.6666665459e-1, 5.0000001201e-1});
    mlir::Value r2 = rewriter.create<mlir::arith::MulFOp>(loc, r, r);
    mlir::Value y = rewriter.create<mlir::arith::AddFOp>(
        loc, fma(p, r2, r), c(1.0));
    // y * 2^n as y * 2^(n/2) * 2^(n - n/2): each factor a normal float.
    mlir::Value ni = rewriter.create<mlir::arith::FPToSIOp>(loc, i32, n);
    mlir::Value half = rewriter.create<mlir::arith::ShRSIOp>(loc, ni, ci(1));
    mlir::Value rest = rewriter.create<mlir::arith::SubIOp>(loc, ni, half);
    auto pow2 = [&](mlir::Value e) -> mlir::Value {
      mlir::Value bits = rewriter.create<mlir::arith::ShLIOp>(
          loc, rewriter.create<mlir::arith::AddIOp>(loc, e, ci(127)), ci(23));
      return rewriter.create<mlir::arith::BitcastOp>(loc, type, bits);
    };
    mlir::Value scaled = rewriter.create<mlir::arith::MulFOp>(
        loc, rewriter.create<mlir::arith::MulFOp>(loc, y, pow2(half)), pow2(rest));
    mlir::Value overflow = rewriter.create<mlir::arith::CmpFOp>(
        loc, mlir::arith::CmpFPredicate::OGT, x, c(88.72283935546875));
    rewriter.replaceOpWithNewOp<mlir::arith::SelectOp>(
        op, overflow, c(std::numeric_limits<float>::infinity()), scaled);
    return mlir::success();
  }
};

// log(x) for f32 in arithmetic LLVM vectorizes: x = m 2^e with m in
// [sqrt(1/2), sqrt(2)) read off the bits (subnormals scaled by 2^23 first),
// log(m) = f - f^2/2 + f^3 P(f) with f = m - 1 (Cephes' degree-8 P), plus
// e ln2 in two parts. x < 0 and NaN give NaN, 0 gives -inf, +inf gives
// +inf.
struct ApproximateLog : public mlir::OpRewritePattern<mlir::math::LogOp> {
  using OpRewritePattern::OpRewritePattern;
  mlir::LogicalResult matchAndRewrite(mlir::math::LogOp op,
                                      mlir::PatternRewriter& rewriter) const override {
    if (!F32Builder::applies(op)) return rewriter.notifyMatchFailure(op, "only f32");
    mlir::Type type = op.getType();
    mlir::Location loc = op.getLoc();
    F32Builder f32{rewriter, loc, type};
    auto c = [&](double v) { return f32.c(v); };
    auto ci = [&](int32_t v) { return f32.ci(v); };
    auto fma = [&](mlir::Value a, mlir::Value b, mlir::Value d) { return f32.fma(a, b, d); };
    mlir::Type i32 = f32.i32();
    auto cmp = [&](mlir::arith::CmpFPredicate p, mlir::Value a, mlir::Value b) -> mlir::Value {
      return rewriter.create<mlir::arith::CmpFOp>(loc, p, a, b);
    };
    auto select = [&](mlir::Value cond, mlir::Value a, mlir::Value b) -> mlir::Value {
      return rewriter.create<mlir::arith::SelectOp>(loc, cond, a, b);
    };
    mlir::Value x = op.getOperand();
    // Subnormals: scaled into the normal range, the exponent corrected.
    mlir::Value subnormal = cmp(mlir::arith::CmpFPredicate::OLT, x, c(1.17549435e-38));
    mlir::Value normal = select(subnormal,
                                rewriter.create<mlir::arith::MulFOp>(loc, x, c(8388608.0)), x);
    mlir::Value bits = rewriter.create<mlir::arith::BitcastOp>(loc, i32, normal);
    mlir::Value e = rewriter.create<mlir::arith::SubIOp>(
        loc, rewriter.create<mlir::arith::ShRUIOp>(loc, bits, ci(23)),
        select(subnormal, ci(127 + 23), ci(127)));
    mlir::Value m = rewriter.create<mlir::arith::BitcastOp>(
        loc, type,
        rewriter.create<mlir::arith::OrIOp>(
            loc, rewriter.create<mlir::arith::AndIOp>(loc, bits, ci(0x7fffff)),
            ci(0x3f800000)));
    mlir::Value ef = rewriter.create<mlir::arith::SIToFPOp>(loc, type, e);
    // m in [sqrt(1/2), sqrt(2)).
    mlir::Value big = cmp(mlir::arith::CmpFPredicate::OGT, m, c(1.41421356237309505));
    m = select(big, rewriter.create<mlir::arith::MulFOp>(loc, m, c(0.5)), m);
    ef = select(big, rewriter.create<mlir::arith::AddFOp>(loc, ef, c(1.0)), ef);
    mlir::Value f = rewriter.create<mlir::arith::SubFOp>(loc, m, c(1.0));
    mlir::Value z = rewriter.create<mlir::arith::MulFOp>(loc, f, f);
    mlir::Value p = f32.horner(f, {7.0376836292e-2, -1.1514610310e-1, 1.1676998740e-1,
                                   -1.2420140846e-1, 1.4249322787e-1, -1.6668057665e-1,
                                   2.0000714765e-1, -2.4999993993e-1, 3.3333331174e-1});
    mlir::Value y = rewriter.create<mlir::arith::MulFOp>(
        loc, rewriter.create<mlir::arith::MulFOp>(loc, f, z), p);
    y = fma(ef, c(-2.12194440e-4), y);
    y = fma(z, c(-0.5), y);
    mlir::Value r = rewriter.create<mlir::arith::AddFOp>(loc, f, y);
    r = fma(ef, c(0.693359375), r);
    // The special values.
    r = select(cmp(mlir::arith::CmpFPredicate::OEQ, x, c(0.0)),
               c(-std::numeric_limits<float>::infinity()), r);
    r = select(cmp(mlir::arith::CmpFPredicate::OEQ, x, c(std::numeric_limits<float>::infinity())),
               x, r);
    // x < 0 or NaN: NaN.
    r = select(cmp(mlir::arith::CmpFPredicate::OGE, x, c(0.0)), r,
               c(std::numeric_limits<float>::quiet_NaN()));
    rewriter.replaceOp(op, r);
    return mlir::success();
  }
};

class LowerToLlvmPass : public impl::LowerToLlvmPassBase<LowerToLlvmPass> {
 public:
  using LowerToLlvmPassBase::LowerToLlvmPassBase;

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
      mlir::RewritePatternSet patterns(ctx);
      mlir::populateSCFToControlFlowConversionPatterns(patterns);
      if (failed(mlir::applyPartialConversion(module, target, std::move(patterns)))) {
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
    {
      // Complex arithmetic becomes arith/math on the parts; create/re/im
      // stay for the LLVM conversion (a struct of two floats).
      mlir::RewritePatternSet complexPatterns(ctx);
      mlir::populateComplexToStandardConversionPatterns(complexPatterns);
      mlir::ConversionTarget complexTarget(*ctx);
      complexTarget.addIllegalDialect<mlir::complex::ComplexDialect>();
      complexTarget.addLegalOp<mlir::complex::CreateOp, mlir::complex::ReOp,
                               mlir::complex::ImOp, mlir::complex::ConstantOp>();
      complexTarget.markUnknownOpDynamicallyLegal([](mlir::Operation*) { return true; });
      if (failed(mlir::applyPartialConversion(module, complexTarget,
                                              std::move(complexPatterns)))) {
        return signalPassFailure();
      }
    }
    if (cpu) {
      mlir::RewritePatternSet approximations(ctx);
      approximations.add<ApproximateTanh, ApproximateExp, ApproximateLog>(ctx);
      if (failed(mlir::applyPatternsGreedily(module, std::move(approximations)))) {
        return signalPassFailure();
      }
      // Math LLVM has no intrinsic for (erf, cbrt, atan2...) or only a
      // naive one (MathToLLVM's expm1 is exp(x) - 1, log1p is log(1 + x),
      // both wrong near 0) becomes calls to libm. The rest stays intrinsics
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
      mlir::RewritePatternSet libm(ctx);
      mlir::populateMathToLibmConversionPatterns(libm);
      if (!libmOps.empty() &&
          failed(mlir::applyOpPatternsGreedily(libmOps, std::move(libm)))) {
        return signalPassFailure();
      }
    }
    llvm::SmallVector<std::string> kernels;
    module.walk([&](mlir::func::FuncOp f) {
      if (!f.isPublic() || f.isExternal()) return;
      kernels.push_back(f.getName().str());
      if (!cpu) return;
      // Host entry points: callable through the C interface, and their
      // buffers do not alias (merge-pointers passed shared slices once),
      // which is what lets LLVM vectorize the thread loops.
      f->setAttr(mlir::LLVM::LLVMDialect::getEmitCWrapperAttrName(), mlir::UnitAttr::get(ctx));
      for (unsigned i = 0; i < f.getNumArguments(); ++i) {
        if (llvm::isa<mlir::LLVM::LLVMPointerType>(f.getArgument(i).getType())) {
          f.setArgAttr(i, mlir::LLVM::LLVMDialect::getNoAliasAttrName(),
                       mlir::UnitAttr::get(ctx));
        }
      }
    });
    mlir::LowerToLLVMOptions options(ctx);
    options.overrideIndexBitwidth(indexBitwidth);
    mlir::LLVMTypeConverter converter(ctx, options);
    mlir::RewritePatternSet patterns(ctx);
    if (!cpu) {
      // libdevice (__nv_tanhf, ...) before the generic math lowering: the
      // benefit decides which pattern wins for ops both can lower.
      mlir::populateLibDeviceConversionPatterns(converter, patterns, /*benefit=*/10);
      mlir::populateGpuToNVVMConversionPatterns(converter, patterns);
    }
    mlir::populateFuncToLLVMConversionPatterns(converter, patterns);
    mlir::arith::populateArithToLLVMConversionPatterns(converter, patterns);
    mlir::populateComplexToLLVMConversionPatterns(converter, patterns);
    mlir::populateMathToLLVMConversionPatterns(converter, patterns);
    mlir::populateVectorToLLVMConversionPatterns(converter, patterns);
    mlir::cf::populateControlFlowToLLVMConversionPatterns(converter, patterns);
    mlir::index::populateIndexToLLVMConversionPatterns(converter, patterns);
    mlir::LLVMConversionTarget legality(*ctx);
    if (!cpu) mlir::configureGpuToNVVMConversionLegality(legality);
    legality.addLegalOp<mlir::ModuleOp>();
    if (failed(mlir::applyFullConversion(module, legality, std::move(patterns)))) {
      return signalPassFailure();
    }
    if (cpu) return;
    for (const std::string& name : kernels) {
      if (auto f = module.lookupSymbol<mlir::LLVM::LLVMFuncOp>(name)) {
        f->setAttr(mlir::NVVM::NVVMDialect::getKernelFuncAttrName(),
                   mlir::UnitAttr::get(ctx));
      }
    }
  }
};

}  // namespace
}  // namespace xla::gpu
