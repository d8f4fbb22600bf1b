//===- lower_tile_copies.cpp - -xla-gpu-lower-tile-copies -----------------===//
//
// Seed 004's global<->shared tile copy: xla_gpu.copy_tile becomes a loop of
// rounds, each thread moving one naturally aligned vector (at most 128
// bits) per round; what cannot be copied that way is copied element by
// element, and the remarks say why.
//
//===----------------------------------------------------------------------===//

#include <cstdint>
#include <numeric>
#include <optional>
#include <string>

#include "dialects/xla_gpu/XlaGpuDialect.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/Matchers.h"
#include "passes/Passes.h"

namespace xla::gpu {

#define GEN_PASS_DEF_LOWERTILECOPIESPASS
#include "passes/Passes.h.inc"

namespace {

using llvm::SmallVector;
using mlir::Value;

enum class Space { kGlobal, kShared, kOther };

const char* spaceName(Space s) {
  return s == Space::kGlobal ? "global" : s == Space::kShared ? "shared" : "local";
}

// Where a tensor value lives: a kernel argument is global memory, an
// allocate_shared tile (through barriers, copies and loop-carried values)
// shared memory; anything else (tensor.empty, constants) is not memory the
// threads share.
Space spaceOf(Value v) {
  while (true) {
    if (auto arg = llvm::dyn_cast<mlir::BlockArgument>(v)) {
      mlir::Operation* parent = arg.getOwner()->getParentOp();
      if (llvm::isa<mlir::func::FuncOp>(parent)) return Space::kGlobal;
      if (auto loop = llvm::dyn_cast<mlir::scf::ForOp>(parent)) {
        if (arg.getArgNumber() == 0) return Space::kOther;
        v = loop.getInitArgs()[arg.getArgNumber() - 1];
        continue;
      }
      return Space::kOther;
    }
    mlir::Operation* def = v.getDefiningOp();
    if (llvm::isa<AllocateSharedOp>(def)) return Space::kShared;
    if (auto sync = llvm::dyn_cast<SyncThreadsOp>(def)) {
      v = sync.getOperands()[llvm::cast<mlir::OpResult>(v).getResultNumber()];
    } else if (auto loop = llvm::dyn_cast<mlir::scf::ForOp>(def)) {
      v = loop.getInitArgs()[llvm::cast<mlir::OpResult>(v).getResultNumber()];
    } else if (auto loop = llvm::dyn_cast<LoopOp>(def)) {
      v = loop.getInits()[llvm::cast<mlir::OpResult>(v).getResultNumber()];
    } else if (auto copy = llvm::dyn_cast<CopyTileOp>(def)) {
      v = copy.getDest();
    } else if (auto insert = llvm::dyn_cast<mlir::tensor::InsertOp>(def)) {
      v = insert.getDest();
    } else if (auto write = llvm::dyn_cast<mlir::vector::TransferWriteOp>(def)) {
      v = write.getBase();
    } else {
      return Space::kOther;
    }
  }
}

// The largest power-of-two-free divisor known of an index value: a constant,
// or an apply_indexing result whose expression has a known divisor
// (e.g. `bl_x * 32`). 0 stands for the constant 0 (divisible by anything).
int64_t knownDivisor(Value v) {
  llvm::APInt c;
  if (mlir::matchPattern(v, mlir::m_ConstantInt(&c))) return std::abs(c.getSExtValue());
  if (auto apply = v.getDefiningOp<ApplyIndexingOp>()) {
    auto result = llvm::cast<mlir::OpResult>(v).getResultNumber();
    return apply.getIndexingMap().getAffineMap().getResult(result).getLargestKnownDivisor();
  }
  return 1;
}

// One side of a copy: its tensor and box.
struct Side {
  Value tensor;
  mlir::RankedTensorType type;
  mlir::ValueRange offsets;
  llvm::ArrayRef<int64_t> sizes;
  Space space;

  // Row-major element strides of the whole tensor.
  SmallVector<int64_t> strides() const {
    SmallVector<int64_t> s(type.getRank(), 1);
    for (int64_t i = type.getRank() - 2; i >= 0; --i) s[i] = s[i + 1] * type.getDimSize(i + 1);
    return s;
  }
  SmallVector<int64_t> nonUnitDims() const {
    SmallVector<int64_t> dims;
    for (auto [i, n] : llvm::enumerate(sizes)) {
      if (n != 1) dims.push_back(i);
    }
    return dims;
  }
  // gcd of the base offset's terms (offset_i * stride_i); 0 if it is 0.
  int64_t baseDivisor() const {
    int64_t g = 0;
    SmallVector<int64_t> s = strides();
    for (auto [off, stride] : llvm::zip(offsets, s)) g = std::gcd(g, knownDivisor(off) * stride);
    return g;
  }
};

struct Plan {
  int64_t vec = 1;     // elements per transfer
  int64_t outer = 1;   // rounds
};

class LowerTileCopiesPass : public impl::LowerTileCopiesPassBase<LowerTileCopiesPass> {
 public:
  using LowerTileCopiesPassBase::LowerTileCopiesPassBase;

  void runOnOperation() override {
    SmallVector<CopyTileOp> copies;
    getOperation().walk([&](CopyTileOp op) { copies.push_back(op); });
    for (CopyTileOp op : copies) {
      if (failed(lower(op))) return signalPassFailure();
    }
  }

 private:
  mlir::LogicalResult lower(CopyTileOp op) {
    Side src{op.getSource(), llvm::cast<mlir::RankedTensorType>(op.getSource().getType()),
             op.getSourceOffsets(), op.getSourceSizes(), spaceOf(op.getSource())};
    Side dst{op.getDest(), llvm::cast<mlir::RankedTensorType>(op.getDest().getType()),
             op.getDestOffsets(), op.getDestSizes(), spaceOf(op.getDest())};
    int64_t threads = op.getNumThreads();
    // 1. What every lowering needs: all threads, one element type, one box.
    if (std::optional<std::string> why = narrowedThreads(op, threads)) {
      return op.emitOpError() << "cannot be lowered: " << *why;
    }
    if (src.type.getElementType() != dst.type.getElementType()) {
      return op.emitOpError() << "cannot be lowered: the sides' element types differ ("
                              << src.type.getElementType() << " and "
                              << dst.type.getElementType() << ")";
    }
    SmallVector<int64_t> srcExtents, dstExtents;
    for (int64_t d : src.nonUnitDims()) srcExtents.push_back(src.sizes[d]);
    for (int64_t d : dst.nonUnitDims()) dstExtents.push_back(dst.sizes[d]);
    if (srcExtents != dstExtents) {
      return op.emitOpError() << "cannot be lowered: the boxes' non-unit extents differ ("
                              << llvm::make_range(srcExtents.begin(), srcExtents.end()) << " and "
                              << llvm::make_range(dstExtents.begin(), dstExtents.end()) << ")";
    }
    // 2.-3. The vectorized global<->shared copy, or why not.
    std::string why;
    std::optional<Plan> plan = choosePlan(op, src, dst, threads, why);
    if (!plan) {
      if (remarks) op->emitRemark() << "not a vectorized global-shared copy: " << why;
      emitElementwise(op, src, dst, threads);
      return mlir::success();
    }
    if (remarks) {
      int64_t bits = plan->vec * src.type.getElementTypeBitWidth();
      op->emitRemark() << "vectorized " << spaceName(src.space) << " -> "
                       << spaceName(dst.space) << " copy: vec " << plan->vec << " ("
                       << bits / 8 << " bytes), " << plan->outer << " rounds of " << threads
                       << " threads";
    }
    emitVectorized(op, src, dst, threads, *plan);
    return mlir::success();
  }

  // Why not every one of `threads` threads runs the copy, if so.
  std::optional<std::string> narrowedThreads(CopyTileOp op, int64_t threads) {
    for (mlir::Operation* p = op->getParentOp(); p && !llvm::isa<mlir::func::FuncOp>(p);
         p = p->getParentOp()) {
      if (llvm::isa<mlir::scf::IfOp, mlir::scf::IndexSwitchOp, mlir::scf::WhileOp>(p)) {
        return "its threads are narrowed by an enclosing " + p->getName().getStringRef().str();
      }
    }
    if (auto id = op.getThread().getDefiningOp<mlir::gpu::ThreadIdOp>()) {
      if (auto range = id->getAttrOfType<mlir::ArrayAttr>("xla.range")) {
        int64_t hi = llvm::cast<mlir::IntegerAttr>(range[1]).getInt();
        if (hi + 1 != threads) {
          return "the thread id spans " + std::to_string(hi + 1) + " threads, not the copy's " +
                 std::to_string(threads);
        }
      }
    }
    return std::nullopt;
  }

  std::optional<Plan> choosePlan(CopyTileOp op, const Side& src, const Side& dst,
                                 int64_t threads, std::string& why) {
    const Side& shared = src.space == Space::kShared ? src : dst;
    if (!((src.space == Space::kGlobal && dst.space == Space::kShared) ||
          (src.space == Space::kShared && dst.space == Space::kGlobal))) {
      why = std::string("the memory pair is ") + spaceName(src.space) + " -> " +
            spaceName(dst.space) + ", not global <-> shared";
      return std::nullopt;
    }
    int64_t total = 1;
    for (int64_t n : src.sizes) total *= n;
    if (total % threads != 0) {
      why = std::to_string(total) + " elements do not divide among " + std::to_string(threads) +
            " threads";
      return std::nullopt;
    }
    mlir::Type elt = src.type.getElementType();
    if (!elt.isIntOrFloat() || elt.getIntOrFloatBitWidth() < 8 ||
        (elt.isInteger() && !elt.isSignlessInteger())) {
      why = "elements of " + [&] {
        std::string s;
        llvm::raw_string_ostream os(s);
        os << elt;
        return s;
      }() + " do not form vectors";
      return std::nullopt;
    }
    int64_t bits = elt.getIntOrFloatBitWidth();
    int64_t swizzleChunk = INT64_MAX;
    if (auto swizzle = op.getSwizzle()) swizzleChunk = int64_t{1} << (*swizzle)[1];
    for (int64_t width : {128, 64, 32, 16, 8}) {
      if (width < bits || width % bits != 0) continue;
      int64_t vec = width / bits;
      if (vec > swizzleChunk) continue;
      if (vec == 1 || (aligned(src, vec) && aligned(dst, vec) && total % (threads * vec) == 0)) {
        return Plan{vec, total / (threads * vec)};
      }
    }
    why = "no vector width fits";
    (void)shared;
    return std::nullopt;
  }

  // A side admits vectors of `vec` elements: its minor non-unit dimension
  // is contiguous and divides by vec, every other non-unit stride and the
  // base offset are multiples of vec.
  static bool aligned(const Side& side, int64_t vec) {
    SmallVector<int64_t> dims = side.nonUnitDims();
    SmallVector<int64_t> strides = side.strides();
    if (dims.empty()) return false;
    int64_t minor = dims.back();
    if (strides[minor] != 1 || side.sizes[minor] % vec != 0) return false;
    for (int64_t d : llvm::ArrayRef<int64_t>(dims).drop_back()) {
      if (strides[d] % vec != 0) return false;
    }
    return side.baseDivisor() % vec == 0;
  }

  // The indices of box element `linear` (row-major over the non-unit
  // extents) on `side`: offset + position, one apply_indexing.
  static SmallVector<Value> boxIndices(mlir::OpBuilder& b, mlir::Location loc, const Side& side,
                                       Value linear, int64_t total) {
    mlir::MLIRContext* ctx = b.getContext();
    int64_t rank = side.type.getRank();
    // Dimensions: the linear position, then the offsets.
    SmallVector<IndexingVar> vars{{"", {0, total - 1}}};
    SmallVector<Value> operands{linear};
    SmallVector<mlir::AffineExpr> results;
    SmallVector<int64_t> dims = side.nonUnitDims();
    mlir::AffineExpr l = b.getAffineDimExpr(0);
    SmallVector<mlir::AffineExpr> position(rank, b.getAffineConstantExpr(0));
    int64_t stride = 1;
    for (int64_t k = dims.size() - 1; k >= 0; --k) {
      int64_t n = side.sizes[dims[k]];
      position[dims[k]] = k == 0 ? l.floorDiv(stride) : l.floorDiv(stride) % n;
      stride *= n;
    }
    for (int64_t i = 0; i < rank; ++i) {
      vars.push_back({"", {0, side.type.getDimSize(i) - side.sizes[i]}});
      operands.push_back(side.offsets[i]);
      results.push_back(b.getAffineDimExpr(i + 1) + position[i]);
    }
    IndexingMap map(mlir::AffineMap::get(vars.size(), 0, results, ctx), vars, {}, {});
    auto apply = b.create<ApplyIndexingOp>(loc, operands, mlir::ValueRange{},
                                           IndexingMapAttr::get(ctx, map.simplify()));
    return SmallVector<Value>(apply.getResults());
  }

  // The shared side's indices through the XOR swizzle, if any: the row-major
  // offset o becomes o ^ ((o >> S) & ((2^B - 1) << M)).
  static SmallVector<Value> swizzled(mlir::OpBuilder& b, mlir::Location loc, CopyTileOp op,
                                     const Side& side, SmallVector<Value> indices) {
    auto swizzle = op.getSwizzle();
    if (!swizzle || side.space != Space::kShared) return indices;
    auto c = [&](int64_t v) { return b.create<mlir::arith::ConstantIndexOp>(loc, v); };
    SmallVector<int64_t> strides = side.strides();
    Value offset = c(0);
    for (auto [index, stride] : llvm::zip(indices, strides)) {
      offset = b.create<mlir::arith::AddIOp>(
          loc, offset, b.create<mlir::arith::MulIOp>(loc, index, c(stride)));
    }
    int64_t bBits = (*swizzle)[0], mBits = (*swizzle)[1], sBits = (*swizzle)[2];
    Value shifted = b.create<mlir::arith::ShRUIOp>(loc, offset, c(sBits));
    Value mask = c(((int64_t{1} << bBits) - 1) << mBits);
    Value moved = b.create<mlir::arith::XOrIOp>(
        loc, offset, b.create<mlir::arith::AndIOp>(loc, shifted, mask));
    SmallVector<Value> out;
    for (auto [i, stride] : llvm::enumerate(strides)) {
      Value q = b.create<mlir::arith::DivUIOp>(loc, moved, c(stride));
      out.push_back(i == 0 ? q
                           : b.create<mlir::arith::RemUIOp>(loc, q, c(side.type.getDimSize(i)))
                                 .getResult());
    }
    return out;
  }

  // 4. scf.for over the rounds: thread t moves elements
  // [(f * threads + t) * vec, + vec) of the box.
  void emitVectorized(CopyTileOp op, const Side& src, const Side& dst, int64_t threads,
                      const Plan& plan) {
    mlir::OpBuilder b(op);
    mlir::Location loc = op.getLoc();
    mlir::MLIRContext* ctx = b.getContext();
    int64_t total = plan.outer * threads * plan.vec;
    auto c = [&](int64_t v) { return b.create<mlir::arith::ConstantIndexOp>(loc, v); };
    auto vecType = mlir::VectorType::get({plan.vec}, src.type.getElementType());
    auto loop = b.create<mlir::scf::ForOp>(loc, c(0), c(plan.outer), c(1),
                                           mlir::ValueRange{op.getDest()});
    b.setInsertionPointToStart(loop.getBody());
    // linear = (f * threads + t) * vec.
    mlir::AffineExpr f = b.getAffineDimExpr(0), t = b.getAffineDimExpr(1);
    IndexingMap linearMap(mlir::AffineMap::get(2, 0, (f * threads + t) * plan.vec, ctx),
                          {{"", {0, plan.outer - 1}}, {"", {0, threads - 1}}}, {}, {});
    Value linear = b.create<ApplyIndexingOp>(loc, mlir::ValueRange{loop.getInductionVar(),
                                                                   op.getThread()},
                                             mlir::ValueRange{},
                                             IndexingMapAttr::get(ctx, linearMap))
                       .getResult(0);
    auto srcIdx = swizzled(b, loc, op, src, boxIndices(b, loc, src, linear, total));
    auto dstIdx = swizzled(b, loc, op, dst, boxIndices(b, loc, dst, linear, total));
    llvm::SmallVector<bool> inBounds{true};
    Value pad = b.create<mlir::arith::ConstantOp>(loc, b.getZeroAttr(src.type.getElementType()));
    // The vector runs along the box's minor non-unit dimension (stride 1).
    auto minorMap = [&](const Side& side) {
      return mlir::AffineMap::get(side.type.getRank(), 0,
                                  b.getAffineDimExpr(side.nonUnitDims().back()), ctx);
    };
    Value v = b.create<mlir::vector::TransferReadOp>(loc, vecType, src.tensor, srcIdx,
                                                     std::optional<Value>(pad), minorMap(src),
                                                     llvm::ArrayRef<bool>(inBounds));
    Value written = b.create<mlir::vector::TransferWriteOp>(loc, v, loop.getRegionIterArgs()[0],
                                                            dstIdx, minorMap(dst),
                                                            llvm::ArrayRef<bool>(inBounds))
                        .getResult();
    b.create<mlir::scf::YieldOp>(loc, written);
    op.replaceAllUsesWith(loop.getResult(0));
    op.erase();
  }

  // The fallback: thread t copies elements t, t + threads, ... one by one.
  void emitElementwise(CopyTileOp op, const Side& src, const Side& dst, int64_t threads) {
    mlir::OpBuilder b(op);
    mlir::Location loc = op.getLoc();
    mlir::MLIRContext* ctx = b.getContext();
    int64_t total = 1;
    for (int64_t n : src.sizes) total *= n;
    int64_t rounds = (total + threads - 1) / threads;
    auto c = [&](int64_t v) { return b.create<mlir::arith::ConstantIndexOp>(loc, v); };
    auto loop = b.create<mlir::scf::ForOp>(loc, c(0), c(rounds), c(1),
                                           mlir::ValueRange{op.getDest()});
    b.setInsertionPointToStart(loop.getBody());
    mlir::AffineExpr f = b.getAffineDimExpr(0), t = b.getAffineDimExpr(1);
    IndexingMap linearMap(mlir::AffineMap::get(2, 0, f * threads + t, ctx),
                          {{"", {0, rounds - 1}}, {"", {0, threads - 1}}}, {}, {});
    Value linear = b.create<ApplyIndexingOp>(loc, mlir::ValueRange{loop.getInductionVar(),
                                                                   op.getThread()},
                                             mlir::ValueRange{},
                                             IndexingMapAttr::get(ctx, linearMap))
                       .getResult(0);
    Value acc = loop.getRegionIterArgs()[0];
    auto copyOne = [&](mlir::OpBuilder& ib) -> Value {
      Value at = linear;
      auto srcIdx = swizzled(ib, loc, op, src, boxIndices(ib, loc, src, at, total));
      auto dstIdx = swizzled(ib, loc, op, dst, boxIndices(ib, loc, dst, at, total));
      Value x = ib.create<mlir::tensor::ExtractOp>(loc, src.tensor, srcIdx);
      return ib.create<mlir::tensor::InsertOp>(loc, x, acc, dstIdx);
    };
    Value result;
    if (total % threads == 0) {
      result = copyOne(b);
    } else {
      Value inside = b.create<mlir::arith::CmpIOp>(loc, mlir::arith::CmpIPredicate::ult, linear,
                                                   c(total));
      auto ifOp = b.create<mlir::scf::IfOp>(loc, mlir::TypeRange{acc.getType()}, inside,
                                            /*withElseRegion=*/true);
      mlir::OpBuilder thenB = ifOp.getThenBodyBuilder();
      thenB.create<mlir::scf::YieldOp>(loc, copyOne(thenB));
      mlir::OpBuilder elseB = ifOp.getElseBodyBuilder();
      elseB.create<mlir::scf::YieldOp>(loc, acc);
      result = ifOp.getResult(0);
    }
    b.create<mlir::scf::YieldOp>(loc, result);
    op.replaceAllUsesWith(loop.getResult(0));
    op.erase();
  }
};

}  // namespace
}  // namespace xla::gpu
