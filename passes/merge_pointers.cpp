//===- merge_pointers.cpp - -xla-gpu-merge-pointers -----------------------===//
//
// XLA's ABI passes each buffer slice once. Arguments with the same
// `xla.slice_index` are one buffer:
//
//   1. In every function, the later arguments of a slice are replaced by
//      the first and removed; in a private function, every call drops the
//      same operands (a function used other than by calls is left).
//   2. The arguments left with a slice index are distinct buffers: they get
//      `llvm.noalias`, which LLVM and ptxas use (non-coherent loads,
//      reordering). The slice index stays (the CPU runtime reads it).
//
//===----------------------------------------------------------------------===//

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/CallInterfaces.h"
#include "passes/Passes.h"

namespace xla::gpu {

#define GEN_PASS_DEF_MERGEPOINTERSPASS
#include "passes/Passes.h.inc"

namespace {

constexpr llvm::StringLiteral kNoAlias = "llvm.noalias";

// The calls of `f` in `module`, or nothing when `f` is used otherwise.
std::optional<llvm::SmallVector<mlir::CallOpInterface>> callsOf(mlir::func::FuncOp f,
                                                                mlir::ModuleOp module) {
  llvm::SmallVector<mlir::CallOpInterface> calls;
  std::optional<mlir::SymbolTable::UseRange> uses = mlir::SymbolTable::getSymbolUses(f, module);
  if (!uses) return std::nullopt;
  for (const mlir::SymbolTable::SymbolUse& use : *uses) {
    auto call = llvm::dyn_cast<mlir::CallOpInterface>(use.getUser());
    if (!call) return std::nullopt;
    calls.push_back(call);
  }
  return calls;
}

class MergePointersPass : public impl::MergePointersPassBase<MergePointersPass> {
 public:
  void runOnOperation() override {
    mlir::ModuleOp module = getOperation();
    for (auto f : llvm::make_early_inc_range(module.getOps<mlir::func::FuncOp>())) {
      if (f.isExternal()) continue;
      // 1. Which arguments repeat a slice.
      llvm::DenseMap<mlir::Attribute, unsigned> first;
      llvm::BitVector erase(f.getNumArguments());
      for (unsigned i = 0; i < f.getNumArguments(); ++i) {
        mlir::Attribute index = f.getArgAttr(i, kSliceIndex);
        if (!index) continue;
        auto [it, inserted] = first.try_emplace(index, i);
        if (inserted) continue;
        if (f.getArgument(it->second).getType() != f.getArgument(i).getType()) {
          f.emitError() << "arguments " << it->second << " and " << i
                        << " share a buffer slice but have different types";
          return signalPassFailure();
        }
        erase.set(i);
      }
      if (erase.any()) {
        // An entry function has no callers here; a private one must have
        // only calls, which drop the same operands.
        std::optional<llvm::SmallVector<mlir::CallOpInterface>> calls;
        if (!f.isPublic()) {
          calls = callsOf(f, module);
          if (!calls) continue;
        }
        for (unsigned i : erase.set_bits()) {
          mlir::Attribute index = f.getArgAttr(i, kSliceIndex);
          f.getArgument(i).replaceAllUsesWith(f.getArgument(first.lookup(index)));
        }
        if (calls) {
          for (mlir::CallOpInterface call : *calls) {
            llvm::SmallVector<mlir::Value> operands;
            for (auto [i, v] : llvm::enumerate(call.getArgOperands())) {
              if (!erase.test(i)) operands.push_back(v);
            }
            call.getArgOperandsMutable().assign(operands);
          }
        }
        if (failed(f.eraseArguments(erase))) return signalPassFailure();
      }
      // 2.
      for (unsigned i = 0; i < f.getNumArguments(); ++i) {
        if (f.getArgAttr(i, kSliceIndex) &&
            llvm::isa<mlir::LLVM::LLVMPointerType>(f.getArgument(i).getType())) {
          f.setArgAttr(i, kNoAlias, mlir::UnitAttr::get(&getContext()));
        }
      }
    }
  }
};

}  // namespace
}  // namespace xla::gpu
