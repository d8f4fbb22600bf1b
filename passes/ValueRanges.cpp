//===- ValueRanges.cpp - integer ranges of index values -------------------===//

#include "passes/ValueRanges.h"

#include <algorithm>

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Matchers.h"

namespace xla::gpu {

namespace {

// Deep chains of arithmetic are rare in emitted code; bounding the recursion
// keeps a pathological input from overflowing the stack.
constexpr int kMaxDepth = 32;

std::optional<Interval> rangeOf(mlir::Value v, int depth);

std::optional<Interval> binary(mlir::Operation* op, int depth,
                               Interval (*fn)(Interval, Interval)) {
  auto a = rangeOf(op->getOperand(0), depth + 1);
  auto b = rangeOf(op->getOperand(1), depth + 1);
  if (!a || !b) return std::nullopt;
  return fn(*a, *b);
}

bool fits(__int128 v) {
  return v >= std::numeric_limits<int64_t>::min() && v <= std::numeric_limits<int64_t>::max();
}

std::optional<Interval> rangeOf(mlir::Value v, int depth) {
  if (depth > kMaxDepth) return std::nullopt;
  llvm::APInt c;
  if (mlir::matchPattern(v, mlir::m_ConstantInt(&c))) {
    int64_t x = c.getBitWidth() == 1 ? c.getZExtValue() : c.getSExtValue();
    return Interval{x, x};
  }
  if (auto arg = llvm::dyn_cast<mlir::BlockArgument>(v)) {
    auto forOp = llvm::dyn_cast<mlir::scf::ForOp>(arg.getOwner()->getParentOp());
    if (forOp && arg == forOp.getInductionVar()) {
      auto lb = rangeOf(forOp.getLowerBound(), depth + 1);
      auto ub = rangeOf(forOp.getUpperBound(), depth + 1);
      if (lb && ub && ub->upper > lb->lower) return Interval{lb->lower, ub->upper - 1};
    }
    return std::nullopt;
  }
  mlir::Operation* op = v.getDefiningOp();
  if (auto range = op->getAttrOfType<mlir::ArrayAttr>("xla.range");
      range && range.size() == 2) {
    auto lo = llvm::dyn_cast<mlir::IntegerAttr>(range[0]);
    auto hi = llvm::dyn_cast<mlir::IntegerAttr>(range[1]);
    // An empty range ([5, 2]) says nothing usable.
    if (lo && hi && lo.getInt() <= hi.getInt()) return Interval{lo.getInt(), hi.getInt()};
  }
  if (auto apply = llvm::dyn_cast<ApplyIndexingOp>(op)) {
    IndexingMap map = narrowToOperandRanges(apply.getIndexingMap(), apply.getOperands());
    unsigned i = llvm::cast<mlir::OpResult>(v).getResultNumber();
    return map.getRange(map.getAffineMap().getResult(i));
  }
  if (llvm::isa<mlir::arith::IndexCastOp, mlir::arith::IndexCastUIOp, mlir::arith::ExtSIOp>(op)) {
    return rangeOf(op->getOperand(0), depth + 1);
  }
  if (llvm::isa<mlir::arith::AddIOp>(op)) {
    return binary(op, depth, [](Interval a, Interval b) {
      __int128 lo = (__int128)a.lower + b.lower, hi = (__int128)a.upper + b.upper;
      if (!fits(lo) || !fits(hi)) return Interval{std::numeric_limits<int64_t>::min(),
                                                  std::numeric_limits<int64_t>::max()};
      return Interval{(int64_t)lo, (int64_t)hi};
    });
  }
  if (llvm::isa<mlir::arith::SubIOp>(op)) {
    return binary(op, depth, [](Interval a, Interval b) {
      __int128 lo = (__int128)a.lower - b.upper, hi = (__int128)a.upper - b.lower;
      if (!fits(lo) || !fits(hi)) return Interval{std::numeric_limits<int64_t>::min(),
                                                  std::numeric_limits<int64_t>::max()};
      return Interval{(int64_t)lo, (int64_t)hi};
    });
  }
  if (llvm::isa<mlir::arith::MulIOp>(op)) {
    return binary(op, depth, [](Interval a, Interval b) {
      __int128 p[] = {(__int128)a.lower * b.lower, (__int128)a.lower * b.upper,
                      (__int128)a.upper * b.lower, (__int128)a.upper * b.upper};
      __int128 lo = *std::min_element(p, p + 4), hi = *std::max_element(p, p + 4);
      if (!fits(lo) || !fits(hi)) return Interval{std::numeric_limits<int64_t>::min(),
                                                  std::numeric_limits<int64_t>::max()};
      return Interval{(int64_t)lo, (int64_t)hi};
    });
  }
  return std::nullopt;
}

}  // namespace

std::optional<Interval> getValueRange(mlir::Value value) { return rangeOf(value, 0); }

IndexingMap narrowToOperandRanges(const IndexingMap& map, mlir::ValueRange operands) {
  llvm::SmallVector<IndexingVar> dims(map.getDimVars()), range(map.getRangeVars()),
      runtime(map.getRuntimeVars());
  auto narrow = [](IndexingVar& var, std::optional<Interval> r) {
    if (!r) return;
    var.bounds.lower = std::max(var.bounds.lower, r->lower);
    var.bounds.upper = std::min(var.bounds.upper, r->upper);
  };
  for (auto [i, v] : llvm::enumerate(operands)) {
    std::optional<Interval> r = getValueRange(v);
    if (i < dims.size()) {
      narrow(dims[i], r);
    } else if (i - dims.size() < range.size()) {
      narrow(range[i - dims.size()], r);
    } else if (i - dims.size() - range.size() < runtime.size()) {
      narrow(runtime[i - dims.size() - range.size()], r);
    }
  }
  // An empty intersection means the IR is inconsistent with the declared
  // ranges; keep the declared ones rather than reason from nothing.
  for (auto* vars : {&dims, &range, &runtime}) {
    for (auto [i, var] : llvm::enumerate(*vars)) {
      if (var.bounds.lower > var.bounds.upper) return map;
    }
  }
  return IndexingMap(map.getAffineMap(), dims, range, runtime,
                     llvm::to_vector(map.getConstraints()));
}

}  // namespace xla::gpu
