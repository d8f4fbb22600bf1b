//===- merge_pointers.cpp - -xla-gpu-merge-pointers -----------------------===//

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "passes/Passes.h"

namespace xla::gpu {

#define GEN_PASS_DEF_MERGEPOINTERSPASS
#include "passes/Passes.h.inc"

namespace {

constexpr llvm::StringLiteral kSliceIndex = "xla.slice_index";

class MergePointersPass : public impl::MergePointersPassBase<MergePointersPass> {
 public:
  void runOnOperation() override {
    for (auto f : getOperation().getOps<mlir::func::FuncOp>()) {
      // Entry functions only: nothing in the module calls them, so their
      // signature can change without touching call sites.
      if (!f.isPublic() || f.isExternal()) continue;
      llvm::DenseMap<mlir::Attribute, unsigned> first;
      llvm::BitVector erase(f.getNumArguments());
      for (unsigned i = 0; i < f.getNumArguments(); ++i) {
        mlir::Attribute index = f.getArgAttr(i, kSliceIndex);
        if (!index) continue;
        auto [it, inserted] = first.try_emplace(index, i);
        if (inserted) continue;
        mlir::Value keep = f.getArgument(it->second), drop = f.getArgument(i);
        if (keep.getType() != drop.getType()) {
          f.emitError() << "arguments " << it->second << " and " << i
                        << " share a buffer slice but have different types";
          return signalPassFailure();
        }
        drop.replaceAllUsesWith(keep);
        erase.set(i);
      }
      if (erase.any() && failed(f.eraseArguments(erase))) return signalPassFailure();
    }
  }
};

}  // namespace
}  // namespace xla::gpu
