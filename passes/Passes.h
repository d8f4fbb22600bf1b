//===- Passes.h - the passes of xla_gpu -------------------------*- C++ -*-===//

#ifndef XLA_GPU_PASSES_PASSES_H
#define XLA_GPU_PASSES_PASSES_H

#include <memory>

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

namespace xla::gpu {

#define GEN_PASS_DECL
#include "passes/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "passes/Passes.h.inc"

}  // namespace xla::gpu

#endif  // XLA_GPU_PASSES_PASSES_H
