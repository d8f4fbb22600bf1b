//===- propagate_slice_indices.cpp - -xla-gpu-propagate-slice-indices -----===//

#include "dialects/xla_gpu/XlaGpuDialect.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/SymbolTable.h"
#include "passes/Passes.h"

namespace xla::gpu {

#define GEN_PASS_DEF_PROPAGATESLICEINDICESPASS
#include "passes/Passes.h.inc"

namespace {

constexpr llvm::StringLiteral kInvariant = "xla.invariant";

class PropagateSliceIndicesPass
    : public impl::PropagateSliceIndicesPassBase<PropagateSliceIndicesPass> {
 public:
  void runOnOperation() override {
    // A worklist of functions whose parameters carry slice indices; each call
    // they make passes the index of an annotated argument on to the callee.
    mlir::ModuleOp module = getOperation();
    mlir::SymbolTable symbols(module);
    llvm::SmallVector<mlir::func::FuncOp> work;
    for (auto f : module.getOps<mlir::func::FuncOp>()) {
      if (f.isPublic()) work.push_back(f);
    }
    llvm::DenseSet<mlir::Operation*> visited;
    while (!work.empty()) {
      mlir::func::FuncOp f = work.pop_back_val();
      if (!visited.insert(f).second || f.isExternal()) continue;
      f.walk([&](mlir::CallOpInterface call) {
        auto ref = llvm::dyn_cast_if_present<mlir::SymbolRefAttr>(
            call.getCallableForCallee().dyn_cast<mlir::SymbolRefAttr>());
        if (!ref) return;
        auto callee = symbols.lookup<mlir::func::FuncOp>(ref.getRootReference());
        if (!callee) return;
        for (auto [i, operand] : llvm::enumerate(call.getArgOperands())) {
          auto arg = llvm::dyn_cast<mlir::BlockArgument>(operand);
          if (!arg || arg.getOwner() != &f.getBody().front()) continue;
          for (llvm::StringLiteral name : {kSliceIndex, kInvariant}) {
            if (auto attr = f.getArgAttr(arg.getArgNumber(), name)) {
              callee.setArgAttr(i, name, attr);
            }
          }
        }
        work.push_back(callee);
      });
    }
    // XLA's rule for what no call shows (a function whose calls were
    // inlined, or one called with values): the subgraph functions take the
    // entry's tensor arguments first, in its order, so a function's leading
    // tensor parameters get the entry's attributes by position.
    mlir::func::FuncOp entry;
    for (auto f : module.getOps<mlir::func::FuncOp>()) {
      if (f->hasAttr("xla.entry") || (!entry && f.isPublic() && !f.isExternal())) entry = f;
    }
    if (!entry) return;
    for (auto f : module.getOps<mlir::func::FuncOp>()) {
      if (f == entry || f.isExternal()) continue;
      unsigned n = std::min(f.getNumArguments(), entry.getNumArguments());
      for (unsigned i = 0; i < n; ++i) {
        if (!llvm::isa<mlir::RankedTensorType>(f.getArgument(i).getType()) ||
            f.getArgument(i).getType() != entry.getArgument(i).getType()) {
          break;
        }
        for (llvm::StringLiteral name : {kSliceIndex, kInvariant}) {
          auto attr = entry.getArgAttr(i, name);
          if (attr && !f.getArgAttr(i, name)) f.setArgAttr(i, name, attr);
        }
      }
    }
  }
};

}  // namespace
}  // namespace xla::gpu
