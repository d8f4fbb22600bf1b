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

class IndexingMapSimplifier;

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

  /// The same variables with the same bounds and the same constraints (the
  /// results may differ); names are ignored.
  bool hasSameDomain(const IndexingMap& other) const;
  /// Semantic equality: map, ranges and constraints; names are ignored.
  bool operator==(const IndexingMap& other) const;
  bool operator!=(const IndexingMap& other) const { return !(*this == other); }
  /// Equality including the variable names (what the attribute is uniqued on).
  bool isIdenticalTo(const IndexingMap& other) const;

  /// Prints `expr` with this map's variable names.
  std::string printExpr(mlir::AffineExpr expr) const;

  //===--------------------------------------------------------------------===//
  // Algebra (IndexingMapAlgebra.cpp)
  //===--------------------------------------------------------------------===//

  /// Range-aware simplification of the results and constraints: constraints
  /// implied by the ranges are dropped, single-variable constraints tighten
  /// the variable's range, floordiv/mod are split by what the ranges allow.
  /// Never changes what the map computes on its domain; idempotent.
  IndexingMap simplify() const;

  /// `first` then `second`: the map from `first`'s domain to `second`'s
  /// results. Its symbols are first's range vars, second's range vars, then
  /// first's and second's runtime vars; second's dimension ranges become
  /// constraints on first's results.
  static IndexingMap compose(const IndexingMap& first,
                             const IndexingMap& second);

  /// The map with `expr in interval` added (intersected with a constraint
  /// on the same expression). Fails when `expr` uses a variable the map
  /// does not have or the interval is empty.
  mlir::FailureOr<IndexingMap> withConstraint(mlir::AffineExpr expr,
                                              Interval interval) const;
  /// The map with dimension `dim`'s range replaced by `bounds`.
  mlir::FailureOr<IndexingMap> withDimBounds(unsigned dim, Interval bounds) const;
  /// The map of `results` over the same domain and constraints.
  IndexingMap withResults(llvm::ArrayRef<mlir::AffineExpr> results) const;
  /// The map of result `result` alone (same domain and constraints).
  mlir::FailureOr<IndexingMap> getSubMap(unsigned result) const;
  /// The map whose dimensions are this map's dimensions, then its range
  /// and runtime variables (XLA's ConvertSymbolsToDimensions).
  IndexingMap convertSymbolsToDims() const;

  /// Drops range/runtime variables that no result or constraint uses.
  IndexingMap removeUnusedSymbols() const;
  /// Drops dimensions that no result or constraint uses.
  IndexingMap removeUnusedDimensions() const;

  /// True when no point satisfies the ranges and constraints, as far as the
  /// ranges can tell (an empty range, or a constraint that cannot hold).
  bool isKnownEmpty() const;

  /// XLA's known-empty form of this map (ResetToKnownEmpty): the same
  /// variables, each in [0, -1], no constraints, every result 0. The one
  /// form with an empty range that verify() accepts: simplification and
  /// composition return it when a range or constraint they narrow empties.
  IndexingMap knownEmpty() const;
  bool isCanonicalKnownEmpty() const;
  /// A variable or constraint whose interval is empty (lower > upper).
  bool hasEmptyRange() const;

  /// The interval `expr` takes over the domain (a bound, not exact).
  Interval getRange(mlir::AffineExpr expr) const;

  /// Evaluates the results at dims and symbols (range then runtime).
  llvm::SmallVector<int64_t> evaluate(llvm::ArrayRef<int64_t> dims,
                                      llvm::ArrayRef<int64_t> symbols) const;
  /// Whether the point lies in the ranges and satisfies the constraints.
  bool contains(llvm::ArrayRef<int64_t> dims,
                llvm::ArrayRef<int64_t> symbols) const;

  /// Whether the map is a bijection from its domain (every point in the
  /// ranges that satisfies the constraints) onto the index space of `shape`.
  /// Fails (with a message) when the domain is too large to enumerate or the
  /// map has runtime variables; otherwise `reason` says why it is not.
  mlir::FailureOr<bool> isBijection(llvm::ArrayRef<int64_t> shape,
                                    std::string& reason) const;

 private:
  void sortConstraints();
  friend class IndexingMapSimplifier;

  mlir::AffineMap map_;
  llvm::SmallVector<IndexingVar> dims_;
  llvm::SmallVector<IndexingVar> range_;
  llvm::SmallVector<IndexingVar> runtime_;
  llvm::SmallVector<Constraint> constraints_;
};

llvm::hash_code hash_value(const IndexingMap& map);

/// Evaluates `expr` with MLIR's semantics (floordiv rounds down, mod is
/// non-negative).
int64_t evaluateAffineExpr(mlir::AffineExpr expr, llvm::ArrayRef<int64_t> dims,
                           llvm::ArrayRef<int64_t> symbols);

/// Default variable names, as XLA prints them.
std::string getDefaultVarName(VarKind kind, unsigned index);

}  // namespace xla::gpu

#endif  // XLA_GPU_DIALECTS_XLA_GPU_INDEXINGMAP_H
