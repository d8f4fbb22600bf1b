//===- optimize_loops.cpp - -xla-gpu-optimize-loops -----------------------===//

#include <functional>

#include "dialects/xla_gpu/XlaGpuDialect.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/SCF/Utils/Utils.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/Matchers.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "passes/Passes.h"

namespace xla::gpu {

#define GEN_PASS_DEF_OPTIMIZELOOPSPASS
#include "passes/Passes.h.inc"

namespace {

using llvm::SmallVector;
using mlir::Value;

// A load the loop can software-pipeline: a tensor.extract, or (XLA's
// PipelineLoad on transfers) an unmasked vector.transfer_read with an
// invariant padding value.
struct PipelinedLoad {
  mlir::Operation* op = nullptr;
  Value source;
  mlir::ValueRange indices;
};

std::optional<PipelinedLoad> asLoad(mlir::Operation* op, mlir::scf::ForOp loop) {
  if (auto extract = llvm::dyn_cast<mlir::tensor::ExtractOp>(op)) {
    return PipelinedLoad{op, extract.getTensor(), extract.getIndices()};
  }
  if (auto read = llvm::dyn_cast<mlir::vector::TransferReadOp>(op)) {
    if (read.getMask() || !loop.isDefinedOutsideOfLoop(read.getPadding())) return std::nullopt;
    return PipelinedLoad{op, read.getBase(), read.getIndices()};
  }
  return std::nullopt;
}

// The ops of `loop`'s body that compute the load's indices, in order, if
// they use nothing but the induction variable and values from outside.
std::optional<SmallVector<mlir::Operation*>> indexSlice(mlir::scf::ForOp loop,
                                                        const PipelinedLoad& extract) {
  SmallVector<mlir::Operation*> slice;
  llvm::SmallPtrSet<mlir::Operation*, 8> inSlice;
  std::function<bool(Value)> visit = [&](Value v) -> bool {
    if (v == loop.getInductionVar() || loop.isDefinedOutsideOfLoop(v)) return true;
    mlir::Operation* def = v.getDefiningOp();
    if (!def || def->getBlock() != loop.getBody() || !mlir::isPure(def) ||
        def->getNumRegions() != 0) {
      return false;
    }
    if (inSlice.contains(def)) return true;
    for (Value operand : def->getOperands()) {
      if (!visit(operand)) return false;
    }
    inSlice.insert(def);
    slice.push_back(def);
    return true;
  };
  if (!loop.isDefinedOutsideOfLoop(extract.source)) return std::nullopt;
  for (Value index : extract.indices) {
    if (!visit(index)) return std::nullopt;
  }
  return slice;
}

// The load at induction variable `iv`, if `iv < ub`, else `fallback`.
Value guardedLoad(mlir::OpBuilder& b, mlir::Location loc, mlir::scf::ForOp loop,
                  mlir::Operation* extract, llvm::ArrayRef<mlir::Operation*> slice,
                  Value iv, Value fallback) {
  Value inRange = b.create<mlir::arith::CmpIOp>(loc, mlir::arith::CmpIPredicate::slt, iv,
                                                loop.getUpperBound());
  auto ifOp = b.create<mlir::scf::IfOp>(
      loc, inRange,
      [&](mlir::OpBuilder& tb, mlir::Location l) {
        mlir::IRMapping mapping;
        mapping.map(loop.getInductionVar(), iv);
        for (mlir::Operation* op : slice) tb.clone(*op, mapping);
        mlir::Operation* load = tb.clone(*extract, mapping);
        tb.create<mlir::scf::YieldOp>(l, load->getResult(0));
      },
      [&](mlir::OpBuilder& eb, mlir::Location l) {
        eb.create<mlir::scf::YieldOp>(l, fallback);
      });
  return ifOp.getResult(0);
}

// 1. Find the first load of the body (tensor.extract or vector.transfer_read)
//    from a loop-invariant tensor with indices computed from the induction
//    variable and invariants only.
// 2. Load it for the lower bound before the loop (guarded: the loop may not
//    run), and carry it as a new iteration argument.
// 3. In the body, use the carried value; at the end, load the next
//    iteration's element (guarded by the upper bound) and yield it.
bool pipelineFirstLoad(mlir::scf::ForOp& loop) {
  mlir::Operation* extract = nullptr;
  std::optional<SmallVector<mlir::Operation*>> slice;
  for (mlir::Operation& candidate : loop.getBody()->getOperations()) {
    std::optional<PipelinedLoad> load = asLoad(&candidate, loop);
    if (!load) continue;
    slice = indexSlice(loop, *load);
    if (slice) {
      extract = &candidate;
      break;
    }
  }
  if (!extract) return false;
  mlir::Location loc = extract->getLoc();
  mlir::OpBuilder b(loop);
  auto zeroAttr = llvm::dyn_cast_or_null<mlir::TypedAttr>(
      b.getZeroAttr(extract->getResult(0).getType()));
  if (!zeroAttr) return false;
  Value zero = b.create<mlir::arith::ConstantOp>(loc, zeroAttr);
  Value first = guardedLoad(b, loc, loop, extract, *slice, loop.getLowerBound(), zero);
  SmallVector<Value> inits(loop.getInitArgs());
  inits.push_back(first);
  auto newLoop = b.create<mlir::scf::ForOp>(loop.getLoc(), loop.getLowerBound(),
                                            loop.getUpperBound(), loop.getStep(), inits);
  mlir::Block* body = newLoop.getBody();
  body->getOperations().splice(body->begin(), loop.getBody()->getOperations());
  for (auto [oldArg, newArg] :
       llvm::zip(loop.getBody()->getArguments(), body->getArguments().drop_back())) {
    oldArg.replaceAllUsesWith(newArg);
  }
  Value current = body->getArguments().back();
  auto yield = llvm::cast<mlir::scf::YieldOp>(body->getTerminator());
  b.setInsertionPoint(yield);
  Value next = b.create<mlir::arith::AddIOp>(loc, newLoop.getInductionVar(), newLoop.getStep());
  Value prefetched = guardedLoad(b, loc, newLoop, extract, *slice, next, current);
  SmallVector<Value> yielded(yield.getOperands());
  yielded.push_back(prefetched);
  b.create<mlir::scf::YieldOp>(yield.getLoc(), yielded);
  yield.erase();
  extract->getResult(0).replaceAllUsesWith(current);
  extract->erase();
  loop.replaceAllUsesWith(newLoop.getResults().drop_back());
  loop.erase();
  loop = newLoop;
  return true;
}

// A transcendental float math op (exp, log, tanh, ...): one that expands
// to many instructions (abs, ceil, copysign, floor, fma, round, rsqrt,
// sqrt, trunc are cheap).
bool isTranscendental(mlir::Operation* op) {
  return llvm::isa<mlir::math::MathDialect>(op->getDialect()) && op->getNumResults() > 0 &&
         !op->getResultTypes().front().isIntOrIndex() &&
         !llvm::isa<mlir::math::AbsFOp, mlir::math::CeilOp, mlir::math::CopySignOp,
                    mlir::math::FloorOp, mlir::math::FmaOp, mlir::math::RoundEvenOp,
                    mlir::math::RoundOp, mlir::math::RsqrtOp, mlir::math::SqrtOp,
                    mlir::math::TruncOp>(op);
}

// XLA's estimate of a loop body's size for partial unrolling: a call or a
// loop counts as the whole budget, a transcendental as 20, a vector op once
// per element.
int64_t estimatedSize(mlir::Block* body, int64_t budget) {
  int64_t size = 0;
  body->walk([&](mlir::Operation* op) {
    if (llvm::isa<mlir::func::CallOp, PureCallOp, mlir::scf::ForOp>(op)) {
      size += budget;
      return;
    }
    int64_t opSize = 1;
    if (isTranscendental(op)) opSize = 20;
    if (op->getNumResults() > 0) {
      if (auto vec = llvm::dyn_cast<mlir::VectorType>(op->getResultTypes().front())) {
        opSize *= vec.getNumElements();
      }
    }
    size += opSize;
  });
  return size;
}

// unroll-top-level-accumulations=false keeps loops of at least this many
// iterations.
constexpr int64_t kMinAccumulationTrips = 4;
// ... but for a loop of at most this many whose reads move at most
// kMaxUnrolledStepBytes a step (a thread's vector: a bf16 row of 128 on 32
// lanes, 4 each; a row of 256 f32 on 32 lanes of 2, 64 apart a step),
// which is unrolled: the lanes' elements of all steps are then one
// interleaved load, where run a step at a time each step loaded what it
// used a part of (bf16 exp-sum over [8192,128] 1.33 -> 0.48 ms on one
// thread, the f32 row max over [16384,256] 1.12 -> 0.54; A/B in one
// process, bits the same; no bench kernel changed). A column reduction's
// 4 steps down its rows (32 rows apart) stay a loop: unrolled, the tree
// split of a column sum over f32[16384,1024] ran 6.6 -> 14.7 ms. Since
// stop 59 loops of 8 near steps too: a thread's 8 bytes of an s8, u8 or
// pred row (1 byte a step), run a step at a time, made LLVM vectorize
// each step's lanes as a gather of every 8th byte with a scalar remainder
// of 64 lanes (s8 row max over [8192,256] 0.40 -> 0.043 ms, pred row and
// 0.17 -> 0.025, f64 row max 0.34 -> 0.16; XLA:CPU 0.07-0.25). The row sum
// f32[1024,4096]'s 8 steps move 2 KiB each: they stay a loop (unrolled:
// 0.45 -> 0.97 ms).
constexpr int64_t kMaxUnrolledVectorTrips = 8;
// unroll-nested-short-loops unrolls loops of at most this many iterations.
constexpr int64_t kMaxNestedShortTrips = 4;
constexpr int64_t kMaxUnrolledStepBytes = 256;

// Whether every tensor `loop` reads it reads at most
// kMaxUnrolledStepBytes further each iteration (of a step of 1): at one
// flat index (-xla-gpu-flatten-tensors ran) that is the induction variable
// itself, or an apply_indexing of it and of values the loop does not
// change whose result moves by a constant multiple of it (index(iv) -
// index(0) simplifies to c * iv, as vectorize_loads_stores tests for c =
// 1).
bool readsNearbyEachStep(mlir::scf::ForOp loop) {
  mlir::Value iv = loop.getInductionVar();
  // Whether `v` is the same at every iteration: defined outside the loop,
  // or computed in it from such values alone (an unrolled inner loop's
  // copies of its induction variable: 0 + 1 * 1).
  std::function<bool(mlir::Value)> invariant = [&](mlir::Value v) {
    if (loop.isDefinedOutsideOfLoop(v)) return true;
    mlir::Operation* def = v.getDefiningOp();
    return def != nullptr && def->getNumRegions() == 0 && mlir::isPure(def) &&
           llvm::all_of(def->getOperands(), invariant);
  };
  // How far the index of `apply` moves an iteration, in elements.
  auto stepOf = [&](ApplyIndexingOp apply) -> std::optional<int64_t> {
    mlir::AffineMap map = apply.getIndexingMap().getAffineMap();
    unsigned nd = map.getNumDims(), ns = map.getNumSymbols();
    mlir::MLIRContext* ctx = loop.getContext();
    std::optional<mlir::AffineExpr> ivExpr;
    for (auto [i, operand] : llvm::enumerate(apply.getOperands())) {
      if (operand == iv) {
        ivExpr = i < nd ? mlir::getAffineDimExpr(i, ctx) : mlir::getAffineSymbolExpr(i - nd, ctx);
      } else if (!invariant(operand)) {
        return std::nullopt;
      }
    }
    if (!ivExpr) return 0;
    mlir::AffineExpr expr = map.getResult(0);
    mlir::AffineExpr diff = mlir::simplifyAffineExpr(
        expr - expr.replace(*ivExpr, mlir::getAffineConstantExpr(0, ctx)), nd, ns);
    if (diff == *ivExpr) return 1;
    auto mul = llvm::dyn_cast<mlir::AffineBinaryOpExpr>(diff);
    auto c = mul ? llvm::dyn_cast<mlir::AffineConstantExpr>(mul.getRHS()) : nullptr;
    if (!c || mul.getKind() != mlir::AffineExprKind::Mul || mul.getLHS() != *ivExpr) {
      return std::nullopt;
    }
    return c.getValue();
  };
  bool any = false;
  mlir::WalkResult walked = loop.getBody()->walk([&](mlir::tensor::ExtractOp extract) {
    if (extract.getIndices().size() != 1) return mlir::WalkResult::interrupt();
    mlir::Value index = extract.getIndices()[0];
    mlir::Type element = extract.getTensor().getType().getElementType();
    if (!element.isIntOrFloat()) return mlir::WalkResult::interrupt();  // complex
    const int64_t bytes = std::max<int64_t>(1, element.getIntOrFloatBitWidth() / 8);
    std::optional<int64_t> step;
    if (index == iv) {
      step = 1;
    } else if (auto apply = index.getDefiningOp<ApplyIndexingOp>()) {
      step = stepOf(apply);
    } else if (invariant(index)) {
      step = 0;
    }
    if (!step || *step < 0 || *step * bytes > kMaxUnrolledStepBytes) {
      return mlir::WalkResult::interrupt();
    }
    any |= *step > 0;
    return mlir::WalkResult::advance();
  });
  return any && !walked.wasInterrupted();
}

// Whether `loop` is a thread's loop at the top level of its function, or the
// whole of a top-level guard's then-branch (a partial tile's threads past
// the edge skip it): -xla-gpu-lower-kernel-to-cpu sinks such a guard into
// the loop and runs the loop interchanged with the threads.
bool isThreadLevel(mlir::scf::ForOp loop) {
  mlir::Operation* parent = loop->getParentOp();
  if (auto guard = llvm::dyn_cast<mlir::scf::IfOp>(parent)) {
    if (loop->getBlock() != guard.thenBlock() ||
        loop->getBlock()->getOperations().size() != 2) {
      return false;
    }
    parent = guard->getParentOp();
  }
  return llvm::isa<mlir::func::FuncOp>(parent);
}

class OptimizeLoopsPass : public impl::OptimizeLoopsPassBase<OptimizeLoopsPass> {
 public:
  using OptimizeLoopsPassBase::OptimizeLoopsPassBase;

  void runOnOperation() override {
    // Innermost loops first (post-order), so an outer loop sees its inner
    // loops already unrolled when it counts its body.
    llvm::SmallVector<mlir::scf::ForOp> loops;
    getOperation().walk([&](mlir::scf::ForOp loop) { loops.push_back(loop); });
    for (mlir::scf::ForOp loop : loops) {
      auto lb = mlir::getConstantIntValue(loop.getLowerBound());
      auto ub = mlir::getConstantIntValue(loop.getUpperBound());
      auto step = mlir::getConstantIntValue(loop.getStep());
      bool unrollable = false;
      int64_t trips = 0;
      if (lb && ub && step && *step > 0) {
        trips = *ub > *lb ? (*ub - *lb + *step - 1) / *step : 0;
        int64_t ops = 0;
        loop.getBody()->walk([&](mlir::Operation*) { ++ops; });
        // Unrolling trades code size for fewer branches and more scheduling
        // freedom; past a few hundred ops the instruction cache loses.
        unrollable = trips <= maxTripCount && ops * trips <= maxUnrolledOps;
      }
      // A thread's accumulation over a few elements (a vector's two) is
      // cheaper unrolled on any target.
      bool accumulates = llvm::any_of(loop.getInitArgs().getTypes(), [](mlir::Type t) {
        return !llvm::isa<mlir::RankedTensorType>(t);
      });
      // Such a loop at the top level stays whole for the CPU target, which
      // runs it interchanged with the threads: neither unrolling applies.
      bool keptForInterchange = !unrollTopLevelAccumulations && accumulates &&
                                trips >= kMinAccumulationTrips &&
                                llvm::isa<mlir::func::FuncOp>(loop->getParentOp()) &&
                                !(trips <= kMaxUnrolledVectorTrips && step && *step == 1 &&
                                  readsNearbyEachStep(loop));
      // So does a thread's loop that writes transcendentals (a transpose's
      // rows of exp into its shared tile): interchanged, each step is a loop
      // over the threads with one copy of the math, which LLVM vectorizes
      // once (main loop, epilogue, remainder) instead of once for each step
      // unrolled. The seed transpose: LLVM 57 -> 40 ms, its run the same.
      if (!unrollTopLevelMathLoops && !accumulates && trips >= 2 && isThreadLevel(loop) &&
          loop.getBody()
              ->walk([](mlir::Operation* op) {
                return isTranscendental(op) ? mlir::WalkResult::interrupt()
                                            : mlir::WalkResult::advance();
              })
              .wasInterrupted()) {
        keptForInterchange = true;
      }
      if (keptForInterchange) unrollable = false;
      // On the CPU target every loop below the top level runs inside the
      // lane loop over a block's threads (-xla-gpu-lower-kernel-to-cpu):
      // left a loop, it is the innermost, which LLVM vectorizes instead of
      // the lanes. A short one goes whatever its size: XLA's vector of 2
      // around jax.random's hash and two logs in a categorical's argmax
      // (a row reduction's steps of 2 elements) ran its lanes scalar and
      // its 2 elements as a vector, 57.7 -> 4.7 ms on one thread, its
      // compile 95 -> 83 ms (bits the same; no bench kernel changed).
      if (unrollNestedShortLoops && !keptForInterchange && trips >= 2 &&
          trips <= kMaxNestedShortTrips && !llvm::isa<mlir::func::FuncOp>(loop->getParentOp())) {
        unrollable = true;
      }
      if (unrollable) {
        if (mlir::failed(mlir::loopUnrollFull(loop))) {
          loop.emitError("xla-gpu-optimize-loops: could not unroll the loop");
          return signalPassFailure();
        }
        continue;
      }
      // XLA's partial unrolling of a loop from 0 by 1 too long to unroll:
      // by the largest factor that divides the trip count and keeps the
      // unrolled body within max-unrolled-ops.
      if (partialUnroll && lb == 0 && step == 1 && trips > 1 && !keptForInterchange) {
        int64_t size = estimatedSize(loop.getBody(), maxUnrolledOps);
        int64_t factor = std::min(trips, maxUnrolledOps / std::max<int64_t>(size, 1));
        while (factor > 1 && trips % factor != 0) --factor;
        if (factor > 1) {
          if (mlir::failed(mlir::loopUnrollByFactor(loop, factor))) {
            loop.emitError("xla-gpu-optimize-loops: could not unroll the loop by ") << factor;
            return signalPassFailure();
          }
          continue;
        }
      }
      if (pipelineLoads) pipelineFirstLoad(loop);
    }
  }
};

}  // namespace
}  // namespace xla::gpu
