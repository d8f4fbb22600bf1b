//===- ValueRanges.cpp - integer ranges of index values -------------------===//

#include "passes/ValueRanges.h"

#include <algorithm>

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Matchers.h"
#include "mlir/Interfaces/FunctionInterfaces.h"

namespace xla::gpu {

namespace {

// Deep chains of arithmetic are rare in emitted code; bounding the recursion
// keeps a pathological input from overflowing the stack.
constexpr int kMaxDepth = 32;

std::optional<Interval> rangeOf(mlir::Value v, int depth);

// An `xla.range = [lo, hi]`; an empty one ([5, 2]) says nothing usable.
std::optional<Interval> intervalOf(mlir::ArrayAttr range) {
  if (range.size() != 2) return std::nullopt;
  auto lo = llvm::dyn_cast<mlir::IntegerAttr>(range[0]);
  auto hi = llvm::dyn_cast<mlir::IntegerAttr>(range[1]);
  if (!lo || !hi || lo.getInt() > hi.getInt()) return std::nullopt;
  return Interval{lo.getInt(), hi.getInt()};
}

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
    // A function argument's `xla.range` (XLA's convention for values the
    // caller bounds).
    if (auto f = llvm::dyn_cast<mlir::FunctionOpInterface>(arg.getOwner()->getParentOp());
        f && arg.getOwner()->isEntryBlock()) {
      if (auto range = f.getArgAttrOfType<mlir::ArrayAttr>(arg.getArgNumber(), "xla.range")) {
        return intervalOf(range);
      }
      return std::nullopt;
    }
    // An xla_gpu.loop's induction variables and map results.
    if (auto loop = llvm::dyn_cast<LoopOp>(arg.getOwner()->getParentOp())) {
      const IndexingMap& map = loop.getIndexingMap();
      unsigned n = arg.getArgNumber();
      if (n < map.getNumRangeVars()) return map.getRangeVars()[n].bounds;
      n -= map.getNumRangeVars();
      if (n < map.getNumResults()) return map.getRange(map.getAffineMap().getResult(n));
      return std::nullopt;
    }
    auto forOp = llvm::dyn_cast<mlir::scf::ForOp>(arg.getOwner()->getParentOp());
    if (forOp && arg == forOp.getInductionVar()) {
      auto lb = rangeOf(forOp.getLowerBound(), depth + 1);
      auto ub = rangeOf(forOp.getUpperBound(), depth + 1);
      if (lb && ub && ub->upper > lb->lower) {
        // With a constant lower bound and step, the last value is the last
        // step below the upper bound (a loop unrolled by 16 steps by 16).
        llvm::APInt step;
        if (lb->isPoint() && mlir::matchPattern(forOp.getStep(), mlir::m_ConstantInt(&step)) &&
            step.isStrictlyPositive()) {
          int64_t s = step.getSExtValue();
          return Interval{lb->lower, lb->lower + (ub->upper - 1 - lb->lower) / s * s};
        }
        return Interval{lb->lower, ub->upper - 1};
      }
    }
    return std::nullopt;
  }
  mlir::Operation* op = v.getDefiningOp();
  if (auto range = op->getAttrOfType<mlir::ArrayAttr>("xla.range")) {
    if (std::optional<Interval> r = intervalOf(range)) return r;
  }
  if (auto apply = llvm::dyn_cast<ApplyIndexingOp>(op)) {
    IndexingMap map = narrowToOperandRanges(apply.getIndexingMap(), apply.getOperands());
    unsigned i = llvm::cast<mlir::OpResult>(v).getResultNumber();
    return map.getRange(map.getAffineMap().getResult(i));
  }
  if (llvm::isa<mlir::arith::IndexCastOp, mlir::arith::IndexCastUIOp, mlir::arith::ExtSIOp>(op)) {
    return rangeOf(op->getOperand(0), depth + 1);
  }
  // An i1 widened without its sign is 0 or 1; so are the bitwise and/or of
  // such values and a lane's shuffle of one (every lane's value is in it).
  if (auto ext = llvm::dyn_cast<mlir::arith::ExtUIOp>(op)) {
    if (ext.getIn().getType().isInteger(1)) return Interval{0, 1};
    auto r = rangeOf(ext.getIn(), depth + 1);
    if (r && r->lower >= 0) return r;
    return std::nullopt;
  }
  if (llvm::isa<mlir::arith::AndIOp, mlir::arith::OrIOp>(op)) {
    auto a = rangeOf(op->getOperand(0), depth + 1);
    auto b = rangeOf(op->getOperand(1), depth + 1);
    if (a && b && a->lower >= 0 && b->lower >= 0 && a->upper <= 1 && b->upper <= 1) {
      return Interval{0, 1};
    }
    return std::nullopt;
  }
  if (auto shuffle = llvm::dyn_cast<mlir::gpu::ShuffleOp>(op)) {
    if (v == shuffle.getShuffleResult()) return rangeOf(shuffle.getValue(), depth + 1);
    return std::nullopt;
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
  if (llvm::isa<mlir::arith::MinSIOp>(op)) {
    return binary(op, depth, [](Interval a, Interval b) {
      return Interval{std::min(a.lower, b.lower), std::min(a.upper, b.upper)};
    });
  }
  if (llvm::isa<mlir::arith::MaxSIOp>(op)) {
    return binary(op, depth, [](Interval a, Interval b) {
      return Interval{std::max(a.lower, b.lower), std::max(a.upper, b.upper)};
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
