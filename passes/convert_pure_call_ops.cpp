//===- convert_pure_call_ops.cpp - -xla-gpu-convert-pure-call-ops ---------===//

#include "dialects/xla_gpu/XlaGpuDialect.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "passes/Passes.h"

namespace xla::gpu {

#define GEN_PASS_DEF_CONVERTPURECALLOPSPASS
#include "passes/Passes.h.inc"

namespace {

class ConvertPureCallOpsPass
    : public impl::ConvertPureCallOpsPassBase<ConvertPureCallOpsPass> {
 public:
  void runOnOperation() override {
    llvm::SmallVector<PureCallOp> calls;
    getOperation().walk([&](PureCallOp call) { calls.push_back(call); });
    for (PureCallOp call : calls) {
      mlir::OpBuilder b(call);
      auto replacement = b.create<mlir::func::CallOp>(
          call.getLoc(), call.getCalleeAttr(), call.getResultTypes(), call.getOperands());
      call->replaceAllUsesWith(replacement.getResults());
      call.erase();
    }
  }
};

}  // namespace
}  // namespace xla::gpu
