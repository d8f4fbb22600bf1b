//===- IndexingMap.h - affine map + variable ranges + constraints -*- C++ -*-===//
//
// An IndexingMap is what XLA's indexing analysis produces and what the
// emitters consume: an affine map from
//   (dimensions)[range symbols]{runtime variables}
// to tensor indices, an inclusive interval for every variable, and
// constraints `expr in [lo, hi]` that restrict the domain further.
//
// In the affine map, range symbols come first and runtime variables after
// them: s0..s(R-1) are the range symbols, sR.. the runtime variables.
//
// This file holds the class, its text form (parse/print, XLA's syntax) and
// verification. Simplification and composition build on it.
//
//===----------------------------------------------------------------------===//

#ifndef XLA_GPU_DIALECTS_XLA_GPU_INDEXINGMAP_H
#define XLA_GPU_DIALECTS_XLA_GPU_INDEXINGMAP_H

#include <cstdint>
#include <optional>
#include <string>
#include <utility>

#include "llvm/ADT/Hashing.h"
#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/ADT/Twine.h"
#include "mlir/IR/AffineExpr.h"
#include "mlir/IR/AffineMap.h"
#include "mlir/Support/LLVM.h"

namespace xla::gpu {

/// An inclusive integer interval [lower, upper].
struct Interval {
  int64_t lower = 0;
  int64_t upper = 0;

  bool isPoint() const { return lower == upper; }
  bool contains(int64_t v) const { return lower <= v && v <= upper; }
  bool operator==(const Interval& o) const {
    return lower == o.lower && upper == o.upper;
  }
  bool operator!=(const Interval& o) const { return !(*this == o); }
};

/// One variable of the domain: its name (for printing) and its range.
struct IndexingVar {
  std::string name;
  Interval bounds;
};

enum class VarKind { kDimension, kRange, kRuntime };

class IndexingMap {
 public:
  using Constraint = std::pair<mlir::AffineExpr, Interval>;
  /// Reports a problem at a byte offset of the text being parsed.
  using ParseErrorFn = llvm::function_ref<void(size_t offset, const llvm::Twine&)>;
  using VerifyErrorFn = llvm::function_ref<void(const llvm::Twine&)>;

  IndexingMap() = default;
  /// `map` has dims.size() dimensions and range.size() + runtime.size()
  /// symbols. Variables without a name get XLA's defaults (d0, s0, rt0).
  IndexingMap(mlir::AffineMap map, llvm::SmallVector<IndexingVar> dims,
              llvm::SmallVector<IndexingVar> range,
              llvm::SmallVector<IndexingVar> runtime,
              llvm::SmallVector<Constraint> constraints = {});

  /// Parses XLA's text form:
  ///   (d0, d1)[s0]{rt0} -> (d0 + s0, d1), domain: d0 in [0, 127], ...,
  ///   d0 + s0 in [0, 130]
  /// Returns std::nullopt after calling `error` on the first problem.
  static std::optional<IndexingMap> parse(llvm::StringRef text,
                                          mlir::MLIRContext* context,
                                          ParseErrorFn error);

  /// The text form; parse(print()) gives back an identical map. Constraints
  /// come sorted by their text so that equal maps print the same.
  std::string toString() const;

  /// Checks ranges (lo <= hi), the number of ranges against the affine map,
  /// and that constraints use only existing variables.
  mlir::LogicalResult verify(VerifyErrorFn error) const;

  mlir::AffineMap getAffineMap() const { return map_; }
  mlir::MLIRContext* getContext() const { return map_.getContext(); }
  unsigned getNumDims() const { return dims_.size(); }
  unsigned getNumRangeVars() const { return range_.size(); }
  unsigned getNumRuntimeVars() const { return runtime_.size(); }
  unsigned getNumSymbols() const { return range_.size() + runtime_.size(); }
  unsigned getNumResults() const { return map_.getNumResults(); }
  llvm::ArrayRef<IndexingVar> getDimVars() const { return dims_; }
  llvm::ArrayRef<IndexingVar> getRangeVars() const { return range_; }
  llvm::ArrayRef<IndexingVar> getRuntimeVars() const { return runtime_; }
  /// Constraints in their canonical (printed) order.
  llvm::ArrayRef<Constraint> getConstraints() const { return constraints_; }
  /// The variable of kind `kind` at `index`, e.g. (kRange, 0) is s0.
  const IndexingVar& getVar(VarKind kind, unsigned index) const;

  /// Semantic equality: map, ranges and constraints; names are ignored.
  bool operator==(const IndexingMap& other) const;
  bool operator!=(const IndexingMap& other) const { return !(*this == other); }
  /// Equality including the variable names (what the attribute is uniqued on).
  bool isIdenticalTo(const IndexingMap& other) const;

  /// Prints `expr` with this map's variable names.
  std::string printExpr(mlir::AffineExpr expr) const;

 private:
  void sortConstraints();

  mlir::AffineMap map_;
  llvm::SmallVector<IndexingVar> dims_;
  llvm::SmallVector<IndexingVar> range_;
  llvm::SmallVector<IndexingVar> runtime_;
  llvm::SmallVector<Constraint> constraints_;
};

llvm::hash_code hash_value(const IndexingMap& map);

/// Default variable names, as XLA prints them.
std::string getDefaultVarName(VarKind kind, unsigned index);

}  // namespace xla::gpu

#endif  // XLA_GPU_DIALECTS_XLA_GPU_INDEXINGMAP_H
