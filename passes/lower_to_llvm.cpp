//===- lower_to_llvm.cpp - -xla-gpu-lower-to-llvm --------------------------===//

#include "mlir/Conversion/ArithToLLVM/ArithToLLVM.h"
#include "mlir/Conversion/ControlFlowToLLVM/ControlFlowToLLVM.h"
#include "mlir/Conversion/FuncToLLVM/ConvertFuncToLLVM.h"
#include "mlir/Conversion/GPUToNVVM/GPUToNVVMPass.h"
#include "mlir/Conversion/IndexToLLVM/IndexToLLVM.h"
#include "mlir/Conversion/LLVMCommon/ConversionTarget.h"
#include "mlir/Conversion/LLVMCommon/TypeConverter.h"
#include "mlir/Conversion/MathToLLVM/MathToLLVM.h"
#include "mlir/Conversion/SCFToControlFlow/SCFToControlFlow.h"
#include "mlir/Conversion/VectorToLLVM/ConvertVectorToLLVM.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlowOps.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Transforms/DialectConversion.h"
#include "passes/Passes.h"

namespace xla::gpu {

#define GEN_PASS_DEF_LOWERTOLLVMPASS
#include "passes/Passes.h.inc"

namespace {

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
    bool cpu = target == "cpu";
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
