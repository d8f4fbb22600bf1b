//===- ValueRanges.h - integer ranges of index values -------------*- C++ -*-===//
//
// What the simplification passes know about an index value: `xla.range` on
// thread/block ids, constants, constant loop bounds, and indexing maps
// applied to values with known ranges.
//
//===----------------------------------------------------------------------===//

#ifndef XLA_GPU_PASSES_VALUERANGES_H
#define XLA_GPU_PASSES_VALUERANGES_H

#include <optional>

#include "dialects/xla_gpu/XlaGpuDialect.h"
#include "mlir/IR/Value.h"

namespace xla::gpu {

/// The inclusive range of an integer/index value, if it can be bounded.
std::optional<Interval> getValueRange(mlir::Value value);

/// `map` with every variable's range narrowed to the range of its operand.
IndexingMap narrowToOperandRanges(const IndexingMap& map, mlir::ValueRange operands);

}  // namespace xla::gpu

#endif  // XLA_GPU_PASSES_VALUERANGES_H
