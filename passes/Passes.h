//===- Passes.h - the passes of xla_gpu -------------------------*- C++ -*-===//

#ifndef XLA_GPU_PASSES_PASSES_H
#define XLA_GPU_PASSES_PASSES_H

#include <cstdint>
#include <memory>
#include <string>

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Complex/IR/Complex.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Pass/Pass.h"

namespace xla::gpu {

#define GEN_PASS_DECL
#include "passes/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "passes/Passes.h.inc"

/// A GPU's limit on the threads of a block, which the CPU target keeps too
/// (-xla-gpu-lower-kernel-to-cpu checks it).
inline constexpr int64_t kMaxThreadsPerBlock = 1024;

/// The CPU target's limit on a block's threads once
/// -xla-gpu-fold-loops-into-threads made each of a GPU block's threads K
/// (xla.elements_per_thread): the loop emitter's 4 elements a thread of
/// 1024 threads (a row of 4096 a block).
inline constexpr int64_t kMaxFoldedThreadsPerBlock = 4 * kMaxThreadsPerBlock;

/// The argument attribute naming an argument's buffer slice (XLA's ABI):
/// arguments of one slice are one buffer (-xla-gpu-propagate-slice-indices
/// sets it, -xla-gpu-lower-tensors and -xla-gpu-merge-pointers read it).
inline constexpr llvm::StringLiteral kSliceIndex = "xla.slice_index";

/// The mark of an atomic update whose scatter's indices are sorted: its
/// updates of one element come in runs (the scatter emitter sets it on
/// xla_gpu.atomic_rmw, -xla-gpu-lower-tensors keeps it on the
/// llvm.atomicrmw, -xla-gpu-lower-kernel-to-cpu carries the runs).
inline constexpr llvm::StringLiteral kSortedUpdates = "xla.indices_are_sorted";

/// Adds a private global to the module of `op` (16-byte aligned), named
/// `prefix` and the first number free there, at the module's start; the
/// insertion point of `b` is kept. Returns the name. (-xla-gpu-lower-tensors:
/// array constants and shared memory; -xla-gpu-lower-kernel-to-cpu: a
/// rotating copy's table.)
inline std::string addGlobal(mlir::OpBuilder& b, mlir::Operation* op, llvm::StringRef prefix,
                             mlir::Type type, bool isConstant, mlir::Attribute value,
                             unsigned addrSpace = 0) {
  auto module = op->getParentOfType<mlir::ModuleOp>();
  std::string name;
  for (int i = 0;; ++i) {
    name = (prefix + llvm::Twine(i)).str();
    if (!mlir::SymbolTable::lookupSymbolIn(module, name)) break;
  }
  mlir::OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(module.getBody());
  b.create<mlir::LLVM::GlobalOp>(op->getLoc(), type, isConstant, mlir::LLVM::Linkage::Private,
                                 name, value, /*alignment=*/16, addrSpace);
  return name;
}

/// XLA's test pipelines, by their flags: `xla-gpu-test-optimize` (see
/// test_pipelines.cpp).
void registerXlaGpuTestPipelines();

}  // namespace xla::gpu

#endif  // XLA_GPU_PASSES_PASSES_H
