//===- permute_warp_lanes.cpp - -xla-gpu-permute-warp-lanes ---------------===//
//
// For the CPU target, where a warp's lanes are one vector's: a row
// reduction's thread reads v consecutive elements a step (XLA's vector, one
// wide load on a GPU), which across the lanes is an interleave group LLVM
// loads as v * lanes elements and takes apart with permutes. Where the
// lanes' partial results meet only in a full-warp shuffle_reduce whose
// combiner is exact in any order, the warp's (lane, vector element) pairs
// may be dealt out in another order: lane l's element j of a step is the
// warp's element j * 32 + l, a plain vector load across the lanes. Each
// warp reduces the same elements, so lane 0's result -- the one the
// kernel reads -- is the same bits.
//
//===----------------------------------------------------------------------===//

#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

#include "dialects/xla_gpu/XlaGpuDialect.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/SymbolTable.h"
#include "passes/Passes.h"

namespace xla::gpu {

#define GEN_PASS_DEF_PERMUTEWARPLANESPASS
#include "passes/Passes.h.inc"

namespace {

using mlir::Value;

// Whether `f` is a combiner `(a, b) -> op(a, b)` whose result is the same
// bits in any order of its operands and of its applications: a maximum or
// minimum (the NaN they give is canonical on the CPU target) or an integer
// sum, product or bitwise op.
bool isExactCombiner(mlir::func::FuncOp f) {
  if (!f || f.getNumArguments() != 2 || f.getNumResults() != 1 ||
      f.getBody().getBlocks().size() != 1) {
    return false;
  }
  mlir::Block& body = f.getBody().front();
  if (body.getOperations().size() != 2) return false;
  mlir::Operation& op = body.front();
  if (!llvm::isa<mlir::arith::MaximumFOp, mlir::arith::MinimumFOp, mlir::arith::MaxSIOp,
                 mlir::arith::MinSIOp, mlir::arith::MaxUIOp, mlir::arith::MinUIOp,
                 mlir::arith::AddIOp, mlir::arith::MulIOp, mlir::arith::AndIOp,
                 mlir::arith::OrIOp, mlir::arith::XOrIOp>(op)) {
    return false;
  }
  auto ret = llvm::dyn_cast<mlir::func::ReturnOp>(body.back());
  return ret && ret.getOperand(0) == op.getResult(0) &&
         op.getNumOperands() == 2 && op.getOperand(0) == body.getArgument(0) &&
         op.getOperand(1) == body.getArgument(1);
}

// Whether `v` depends on a thread id (anything not the same across a warp).
bool dependsOnThreads(Value v, int depth = 0) {
  mlir::Operation* def = v.getDefiningOp();
  if (!def) return false;  // a function argument
  if (llvm::isa<mlir::gpu::ThreadIdOp, mlir::gpu::LaneIdOp>(def)) return true;
  if (depth > 32 || def->getNumRegions() != 0) return true;
  return llvm::any_of(def->getOperands(),
                      [&](Value o) { return dependsOnThreads(o, depth + 1); });
}

// The value of `v` at thread `tid` (every other id 0: only where `v` does
// not depend on it), or nullopt where it is not computed from constants,
// the thread id and index maps by comparisons and logic.
std::optional<int64_t> valueAt(Value v, int64_t tid, int depth = 0) {
  mlir::Operation* def = v.getDefiningOp();
  if (!def || depth > 32) return std::nullopt;
  if (auto id = llvm::dyn_cast<mlir::gpu::ThreadIdOp>(def)) {
    if (id.getDimension() == mlir::gpu::Dimension::x) return tid;
    return std::nullopt;
  }
  if (auto c = llvm::dyn_cast<mlir::arith::ConstantOp>(def)) {
    if (auto i = llvm::dyn_cast<mlir::IntegerAttr>(c.getValue())) {
      return i.getType().isInteger(1) ? int64_t(i.getValue().getBoolValue()) : i.getInt();
    }
    return std::nullopt;
  }
  if (auto apply = llvm::dyn_cast<ApplyIndexingOp>(def)) {
    IndexingMap map = apply.getIndexingMap();
    if (map.getNumSymbols() != 0) return std::nullopt;
    unsigned result = llvm::cast<mlir::OpResult>(v).getResultNumber();
    mlir::AffineExpr expr = map.getAffineMap().getResult(result);
    llvm::SmallVector<int64_t> dims;
    for (auto [k, operand] : llvm::enumerate(apply.getOperands())) {
      std::optional<int64_t> d = expr.isFunctionOfDim(k) ? valueAt(operand, tid, depth + 1)
                                                         : std::optional<int64_t>(0);
      if (!d) return std::nullopt;
      dims.push_back(*d);
    }
    return evaluateAffineExpr(expr, dims, {});
  }
  auto operand = [&](unsigned k) { return valueAt(def->getOperand(k), tid, depth + 1); };
  if (auto cmp = llvm::dyn_cast<mlir::arith::CmpIOp>(def)) {
    auto a = operand(0), b = operand(1);
    if (!a || !b) return std::nullopt;
    switch (cmp.getPredicate()) {
      case mlir::arith::CmpIPredicate::eq: return int64_t(*a == *b);
      case mlir::arith::CmpIPredicate::ne: return int64_t(*a != *b);
      case mlir::arith::CmpIPredicate::slt:
      case mlir::arith::CmpIPredicate::ult: return int64_t(*a < *b);
      case mlir::arith::CmpIPredicate::sle:
      case mlir::arith::CmpIPredicate::ule: return int64_t(*a <= *b);
      case mlir::arith::CmpIPredicate::sgt:
      case mlir::arith::CmpIPredicate::ugt: return int64_t(*a > *b);
      case mlir::arith::CmpIPredicate::sge:
      case mlir::arith::CmpIPredicate::uge: return int64_t(*a >= *b);
    }
    return std::nullopt;
  }
  if (llvm::isa<mlir::arith::AndIOp, mlir::arith::OrIOp>(def)) {
    auto a = operand(0), b = operand(1);
    if (!a || !b) return std::nullopt;
    return llvm::isa<mlir::arith::AndIOp>(def) ? (*a & *b) : (*a | *b);
  }
  return std::nullopt;
}

// Whether only lane 0 of each warp (of `threads`) reads `v`, a
// shuffle_reduce's result: the other lanes' values are not the warp's
// reduction. Its reads: a predicated_insert whose condition holds at lane
// 0 alone, or a loop of the thread id whose map's domain holds lane 0
// alone (a constraint of the thread id alone).
bool readAtLaneZeroOnly(Value v, int64_t threads, int64_t warp) {
  for (mlir::OpOperand& use : v.getUses()) {
    mlir::Operation* user = use.getOwner();
    if (auto insert = llvm::dyn_cast<PredicatedInsertOp>(user)) {
      if (use.get() != insert.getValue()) return false;
      for (int64_t tid = 0; tid < threads; ++tid) {
        if (tid % warp == 0) continue;
        std::optional<int64_t> holds = valueAt(insert.getCondition(), tid);
        if (!holds || *holds) return false;
      }
      continue;
    }
    auto loop = user->getParentOfType<LoopOp>();
    if (!loop || loop->isAncestor(v.getDefiningOp()) || loop.getDims().empty() ||
        !llvm::isa_and_nonnull<mlir::gpu::ThreadIdOp>(loop.getDims()[0].getDefiningOp())) {
      return false;
    }
    IndexingMap map = loop.getIndexingMap();
    for (int64_t tid = 0; tid < threads; ++tid) {
      if (tid % warp == 0) continue;
      bool empty = false;
      for (const auto& [expr, interval] : map.getConstraints()) {
        bool threadOnly = true;
        for (unsigned d = 1; d < map.getNumDims(); ++d) threadOnly &= !expr.isFunctionOfDim(d);
        for (unsigned s = 0; s < map.getNumSymbols(); ++s) {
          threadOnly &= !expr.isFunctionOfSymbol(s);
        }
        if (!threadOnly) continue;
        llvm::SmallVector<int64_t> dims(map.getNumDims(), 0);
        dims[0] = tid;
        llvm::SmallVector<int64_t> symbols(map.getNumSymbols(), 0);
        empty |= !interval.contains(evaluateAffineExpr(expr, dims, symbols));
      }
      if (!empty) return false;
    }
  }
  return true;
}

// Whether the tensor `v` (a loop's carried value inside it) is only
// written, by tensor.insert, and yielded.
bool onlyWritten(Value v) {
  for (mlir::OpOperand& use : v.getUses()) {
    mlir::Operation* user = use.getOwner();
    if (auto insert = llvm::dyn_cast<mlir::tensor::InsertOp>(user)) {
      if (use.get() != insert.getDest() || !onlyWritten(insert.getResult())) return false;
      continue;
    }
    if (!llvm::isa<YieldOp>(user)) return false;
  }
  return true;
}

// The permuted map of `loop`, or nullopt where the loop is not one the
// pass may permute (see the file's comment).
std::optional<IndexingMap> permuted(LoopOp loop, mlir::SymbolTable& symbols, int64_t warp) {
  IndexingMap map = loop.getIndexingMap();
  if (map.getNumRangeVars() == 0 || map.getNumRuntimeVars() != 0 || loop.getDims().empty() ||
      !llvm::isa_and_nonnull<mlir::gpu::ThreadIdOp>(loop.getDims()[0].getDefiningOp())) {
    return std::nullopt;
  }
  auto tid = llvm::cast<mlir::gpu::ThreadIdOp>(loop.getDims()[0].getDefiningOp());
  Interval threads = map.getDimVars()[0].bounds;
  Interval vector = map.getRangeVars().back().bounds;
  int64_t k = vector.upper + 1;
  if (tid.getDimension() != mlir::gpu::Dimension::x || threads.lower != 0 ||
      (threads.upper + 1) % warp != 0 || vector.lower != 0 || k < 2 || warp % k != 0) {
    return std::nullopt;
  }
  // No constraint of the thread or the vector (a row's partial last step):
  // dealt out, it would be checked element by element (a masked f32 row
  // max over rows of 1000 ran 0.69 -> 0.85 ms).
  for (const auto& [expr, interval] : map.getConstraints()) {
    if (expr.isFunctionOfDim(0) || expr.isFunctionOfSymbol(map.getNumRangeVars() - 1)) {
      return std::nullopt;
    }
  }
  // The body reads the elements through the map's results alone.
  if (llvm::any_of(loop.getInductionVars(), [](Value s) { return !s.use_empty(); })) {
    return std::nullopt;
  }
  // Nor anything a thread has of its own from before the loop.
  bool threadDependent = false;
  loop.getBody()->walk([&](mlir::Operation* op) {
    for (Value operand : op->getOperands()) {
      threadDependent |= !loop.getRegion().isAncestor(operand.getParentRegion()) &&
                         dependsOnThreads(operand);
    }
  });
  if (threadDependent) return std::nullopt;
  auto yield = llvm::cast<YieldOp>(loop.getBody()->getTerminator());
  bool accumulates = false;
  for (auto [k, arg] : llvm::enumerate(loop.getRegionIterArgs())) {
    if (llvm::isa<mlir::RankedTensorType>(arg.getType())) {
      if (!onlyWritten(arg)) return std::nullopt;
      continue;
    }
    // Read by full-warp shuffle_reduces of one exact combiner...
    Value result = loop->getResult(k);
    std::optional<llvm::StringRef> name;
    for (mlir::Operation* user : result.getUsers()) {
      auto shuffle = llvm::dyn_cast<ShuffleReduceOp>(user);
      if (!shuffle || shuffle.getOperands().size() != 1 ||
          2 * static_cast<int64_t>(shuffle.getMaxDistance()) != warp ||
          (name && shuffle.getCombiner() != *name) ||
          !readAtLaneZeroOnly(shuffle.getResult(0), threads.upper + 1, warp)) {
        return std::nullopt;
      }
      name = shuffle.getCombiner();
    }
    if (!name) continue;  // read by nothing
    auto combiner = symbols.lookup<mlir::func::FuncOp>(*name);
    if (!isExactCombiner(combiner)) return std::nullopt;
    // ... and accumulated with it: a call of it, or its op inlined.
    mlir::Operation* update = yield.getOperand(k).getDefiningOp();
    mlir::Operation& op = combiner.getBody().front().front();
    auto call = llvm::dyn_cast_or_null<PureCallOp>(update);
    bool combines = call ? call.getCallee() == *name
                         : update && update->getName() == op.getName() &&
                               update->getAttrDictionary() == op.getAttrDictionary();
    if (!combines || update->getNumOperands() != 2 || update->getNumResults() != 1 ||
        !arg.hasOneUse() || !llvm::is_contained(update->getOperands(), arg)) {
      return std::nullopt;
    }
    accumulates = true;
  }
  if (!accumulates) return std::nullopt;
  // d0 -> (d0 floordiv w) * w + (s * w + d0 mod w) floordiv k and
  // s -> (s * w + d0 mod w) mod k, s the vector's range variable.
  mlir::MLIRContext* ctx = loop.getContext();
  mlir::AffineExpr d0 = mlir::getAffineDimExpr(0, ctx);
  unsigned last = map.getNumRangeVars() - 1;
  mlir::AffineExpr s = mlir::getAffineSymbolExpr(last, ctx);
  mlir::AffineExpr dealt = s * warp + d0 % warp;
  llvm::SmallVector<mlir::AffineExpr> dims, syms;
  for (unsigned d = 0; d < map.getNumDims(); ++d) dims.push_back(mlir::getAffineDimExpr(d, ctx));
  for (unsigned r = 0; r < map.getNumSymbols(); ++r) {
    syms.push_back(mlir::getAffineSymbolExpr(r, ctx));
  }
  dims[0] = d0.floorDiv(warp) * warp + dealt.floorDiv(k);
  syms[last] = dealt % k;
  auto substitute = [&](mlir::AffineExpr e) { return e.replaceDimsAndSymbols(dims, syms); };
  llvm::SmallVector<mlir::AffineExpr> results;
  for (mlir::AffineExpr e : map.getAffineMap().getResults()) results.push_back(substitute(e));
  llvm::SmallVector<IndexingMap::Constraint> constraints;
  for (const auto& [e, interval] : map.getConstraints()) {
    constraints.push_back({substitute(e), interval});
  }
  IndexingMap result(mlir::AffineMap::get(map.getNumDims(), map.getNumSymbols(), results, ctx),
                     llvm::SmallVector<IndexingVar>(map.getDimVars()),
                     llvm::SmallVector<IndexingVar>(map.getRangeVars()), {}, constraints);
  return result.simplify();
}

struct PermuteWarpLanesPass : public impl::PermuteWarpLanesPassBase<PermuteWarpLanesPass> {
  using PermuteWarpLanesPassBase::PermuteWarpLanesPassBase;

  void runOnOperation() override {
    mlir::ModuleOp module = getOperation();
    mlir::SymbolTable symbols(module);
    std::vector<std::pair<LoopOp, IndexingMap>> rewrites;
    module.walk([&](LoopOp loop) {
      if (std::optional<IndexingMap> map = permuted(loop, symbols, warp_size)) {
        rewrites.push_back({loop, *map});
      }
    });
    for (auto& [loop, map] : rewrites) {
      loop.setIndexingMapAttrAttr(IndexingMapAttr::get(&getContext(), map));
    }
  }
};

}  // namespace
}  // namespace xla::gpu
