//===- XlaGpuDialect.h - the xla_gpu dialect --------------------*- C++ -*-===//
//
// Everything a user of the dialect includes: dialect, attributes, types, ops.
//
//===----------------------------------------------------------------------===//

#ifndef XLA_GPU_DIALECTS_XLA_GPU_XLAGPUDIALECT_H
#define XLA_GPU_DIALECTS_XLA_GPU_XLAGPUDIALECT_H

#include "dialects/xla_gpu/IndexingMap.h"
#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Attributes.h"
#include "mlir/IR/BuiltinTypeInterfaces.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/CallInterfaces.h"
#include "mlir/Interfaces/ControlFlowInterfaces.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "dialects/xla_gpu/XlaGpuDialect.h.inc"
#include "dialects/xla_gpu/XlaGpuEnums.h.inc"
#define GET_ATTRDEF_CLASSES
#include "dialects/xla_gpu/XlaGpuAttrs.h.inc"
#define GET_TYPEDEF_CLASSES
#include "dialects/xla_gpu/XlaGpuTypes.h.inc"
#define GET_OP_CLASSES
#include "dialects/xla_gpu/XlaGpuOps.h.inc"

namespace xla::gpu {

/// Registers the dialect and the extensions it relies on (the func inliner).
void registerXlaGpuDialect(mlir::DialectRegistry& registry);

}  // namespace xla::gpu

#endif  // XLA_GPU_DIALECTS_XLA_GPU_XLAGPUDIALECT_H
