//===- lower_to_llvm.cpp - -xla-gpu-lower-to-llvm --------------------------===//

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

// tanh(x) as Eigen's (and XLA:CPU's) rational approximation: x * P(x^2) /
// Q(x^2) on x clamped to +-7.9053, and x itself below 4e-4. Unlike a libm
// call it vectorizes; it is within a few ulp of tanhf.
struct ApproximateTanh : public mlir::OpRewritePattern<mlir::math::TanhOp> {
  using OpRewritePattern::OpRewritePattern;
  mlir::LogicalResult matchAndRewrite(mlir::math::TanhOp op,
                                      mlir::PatternRewriter& rewriter) const override {
    mlir::Type type = op.getType();
    if (!mlir::getElementTypeOrSelf(type).isF32()) {
      return rewriter.notifyMatchFailure(op, "only f32 (expand-float-ops widened the rest)");
    }
    mlir::Location loc = op.getLoc();
    auto c = [&](double v) -> mlir::Value {
      mlir::TypedAttr attr = rewriter.getF32FloatAttr(static_cast<float>(v));
      if (auto vt = llvm::dyn_cast<mlir::VectorType>(type)) {
        attr = mlir::DenseElementsAttr::get(vt, attr);
      }
      return rewriter.create<mlir::arith::ConstantOp>(loc, attr);
    };
    mlir::Value a = op.getOperand();
    mlir::Value x = rewriter.create<mlir::arith::MaximumFOp>(
        loc, rewriter.create<mlir::arith::MinimumFOp>(loc, a, c(7.90531110763549805)),
        c(-7.90531110763549805));
    mlir::Value x2 = rewriter.create<mlir::arith::MulFOp>(loc, x, x);
    auto horner = [&](llvm::ArrayRef<double> coefficients) {
      mlir::Value acc = c(coefficients.front());
      for (double k : coefficients.drop_front()) {
        acc = rewriter.create<mlir::math::FmaOp>(loc, x2, acc, c(k));
      }
      return acc;
    };
    mlir::Value p = horner({-2.76076847742355e-16, 2.00018790482477e-13, -8.60467152213735e-11,
                            5.12229709037114e-08, 1.48572235717979e-05, 6.37261928875436e-04,
                            4.89352455891786e-03});
    p = rewriter.create<mlir::arith::MulFOp>(loc, x, p);
    mlir::Value q = horner({1.19825839466702e-06, 1.18534705686654e-04, 2.26843463243900e-03,
                            4.89352518554385e-03});
    mlir::Value ratio = rewriter.create<mlir::arith::DivFOp>(loc, p, q);
    mlir::Value tiny = rewriter.create<mlir::arith::CmpFOp>(
        loc, mlir::arith::CmpFPredicate::OLT, rewriter.create<mlir::math::AbsFOp>(loc, a),
        c(0.0004));
    rewriter.replaceOpWithNewOp<mlir::arith::SelectOp>(op, tiny, x, ratio);
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
      approximations.add<ApproximateTanh>(ctx);
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
