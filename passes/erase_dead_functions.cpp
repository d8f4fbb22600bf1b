//===- erase_dead_functions.cpp - -xla-erase-dead-functions ---------------===//

#include "dialects/xla_gpu/XlaGpuDialect.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/SymbolTable.h"
#include "passes/Passes.h"

namespace xla::gpu {

#define GEN_PASS_DEF_ERASEDEADFUNCTIONSPASS
#include "passes/Passes.h.inc"

namespace {

class EraseDeadFunctionsPass
    : public impl::EraseDeadFunctionsPassBase<EraseDeadFunctionsPass> {
 public:
  void runOnOperation() override {
    mlir::ModuleOp module = getOperation();
    // Erasing one function can make others dead (a chain of subgraph calls):
    // repeat until nothing changes.
    bool changed = true;
    while (changed) {
      changed = false;
      llvm::SmallVector<mlir::func::FuncOp> dead;
      for (auto func : module.getOps<mlir::func::FuncOp>()) {
        if (func.isPrivate() &&
            mlir::SymbolTable::symbolKnownUseEmpty(func, module)) {
          dead.push_back(func);
        }
      }
      for (auto func : dead) func.erase();
      changed = !dead.empty();
    }
  }
};

}  // namespace
}  // namespace xla::gpu
