//===- lower_kernel_to_cpu.cpp - -xla-gpu-lower-kernel-to-cpu -------------===//
//
// GPU semantics on one CPU thread per call: every thread of a block runs a
// phase before any thread runs the next, so a barrier is the boundary of two
// loops over the threads, and values crossing it live in per-thread arrays.
//
//===----------------------------------------------------------------------===//

#include <array>

#include "dialects/xla_gpu/XlaGpuDialect.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Complex/IR/Complex.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/FunctionCallUtils.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/DataLayoutInterfaces.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "passes/Passes.h"

namespace xla::gpu {

#define GEN_PASS_DEF_LOWERKERNELTOCPUPASS
#include "passes/Passes.h.inc"

namespace {

using llvm::SmallVector;
using mlir::Value;

// f64 -> f16 and f64 -> bf16 have no x86 instruction: LLVM calls
// compiler-rt's __truncdfhf2/__truncdfbf2, which the JIT finds only if some
// library of the process happens to export them. In IR instead: f64 -> f32
// rounded to odd, then f32 -> the narrow type (an instruction, or integer
// code from arith-expand for bf16). Rounding to odd keeps the sticky bit, and
// f32 carries more than two bits beyond f16's or bf16's significand, so the
// second rounding is the correctly rounded one (Boldo & Melquiond).
struct TruncF64ThroughF32 : public mlir::OpRewritePattern<mlir::arith::TruncFOp> {
  using OpRewritePattern::OpRewritePattern;
  mlir::LogicalResult matchAndRewrite(mlir::arith::TruncFOp op,
                                      mlir::PatternRewriter& rewriter) const override {
    mlir::Type from = mlir::getElementTypeOrSelf(op.getIn().getType());
    mlir::Type to = mlir::getElementTypeOrSelf(op.getType());
    if (!from.isF64() || !(to.isF16() || to.isBF16())) {
      return rewriter.notifyMatchFailure(op, "not f64 -> f16/bf16");
    }
    mlir::Location loc = op.getLoc();
    auto like = [&](mlir::Type element) -> mlir::Type {
      if (auto vt = llvm::dyn_cast<mlir::VectorType>(op.getType())) return vt.clone(element);
      return element;
    };
    mlir::Type f32 = like(rewriter.getF32Type());
    mlir::Type i32 = like(rewriter.getI32Type());
    auto i32Const = [&](int32_t v) -> Value {
      mlir::TypedAttr attr = rewriter.getI32IntegerAttr(v);
      if (auto vt = llvm::dyn_cast<mlir::VectorType>(i32)) {
        attr = mlir::DenseElementsAttr::get(vt, attr);
      }
      return rewriter.create<mlir::arith::ConstantOp>(loc, attr);
    };
    Value x = op.getIn();
    Value nearest = rewriter.create<mlir::arith::TruncFOp>(loc, f32, x);
    Value back = rewriter.create<mlir::arith::ExtFOp>(loc, x.getType(), nearest);
    // Ordered: a NaN is exact (and keeps its payload).
    Value inexact = rewriter.create<mlir::arith::CmpFOp>(loc, mlir::arith::CmpFPredicate::ONE,
                                                         back, x);
    Value bits = rewriter.create<mlir::arith::BitcastOp>(loc, i32, nearest);
    Value one = i32Const(1);
    Value even = rewriter.create<mlir::arith::CmpIOp>(
        loc, mlir::arith::CmpIPredicate::eq,
        rewriter.create<mlir::arith::AndIOp>(loc, bits, one), i32Const(0));
    // Rounded away from zero: one step back towards it (the magnitude is in
    // the low 31 bits), else one step on; either lands on an odd pattern.
    Value away = rewriter.create<mlir::arith::CmpFOp>(
        loc, mlir::arith::CmpFPredicate::OGT, rewriter.create<mlir::math::AbsFOp>(loc, back),
        rewriter.create<mlir::math::AbsFOp>(loc, x));
    Value step = rewriter.create<mlir::arith::SelectOp>(loc, away, i32Const(-1), one);
    Value fix = rewriter.create<mlir::arith::AndIOp>(loc, inexact, even);
    Value odd = rewriter.create<mlir::arith::SelectOp>(
        loc, fix, rewriter.create<mlir::arith::AddIOp>(loc, bits, step), bits);
    Value f = rewriter.create<mlir::arith::BitcastOp>(loc, f32, odd);
    rewriter.replaceOpWithNewOp<mlir::arith::TruncFOp>(op, op.getType(), f);
    return mlir::success();
  }
};

// The launch grid, (x, y, z) for threads of a block and blocks. The CPU
// loops run over linear ids (x fastest, as CUDA numbers the threads of a
// warp); each id is recovered from them.
struct Grid {
  std::array<int64_t, 3> threads = {1, 1, 1};
  std::array<int64_t, 3> blocks = {1, 1, 1};
  int64_t numThreads() const { return threads[0] * threads[1] * threads[2]; }
};

// As a GPU: at most 1024 threads per block; grid dimensions below 2^31.
constexpr int64_t kMaxThreadsPerBlock = 1024;
constexpr int64_t kMaxGridDim = int64_t{1} << 31;
// The storage a call of the lowered kernel needs (see KernelLowering::run).
constexpr uint64_t kMaxStackStorageBytes = uint64_t{1} << 20;
constexpr uint64_t kMaxStorageBytes = uint64_t{1} << 30;

bool isCut(mlir::Operation* op) { return llvm::isa<mlir::gpu::BarrierOp, mlir::gpu::ShuffleOp>(op); }

// Ops recomputed in every phase instead of kept per thread.
bool isRecomputed(mlir::Operation* op) {
  return llvm::isa<mlir::gpu::ThreadIdOp, mlir::gpu::BlockIdOp, mlir::LLVM::AddressOfOp>(op) ||
         (op->getNumOperands() == 0 && op->getNumRegions() == 0 && mlir::isPure(op));
}

mlir::FailureOr<Grid> findGrid(mlir::func::FuncOp f) {
  Grid grid;
  mlir::LogicalResult result = mlir::success();
  auto rangeOf = [&](mlir::Operation* op, int64_t& size) {
    auto range = op->getAttrOfType<mlir::ArrayAttr>("xla.range");
    if (!range || range.size() != 2 || !llvm::isa<mlir::IntegerAttr>(range[0]) ||
        !llvm::isa<mlir::IntegerAttr>(range[1])) {
      result = op->emitOpError() << "needs an xla.range attribute for the CPU target to "
                                    "know the size of the grid";
      return;
    }
    int64_t lo = llvm::cast<mlir::IntegerAttr>(range[0]).getInt();
    int64_t hi = llvm::cast<mlir::IntegerAttr>(range[1]).getInt();
    if (lo != 0 || hi < 0 || hi >= kMaxGridDim) {
      result = op->emitOpError() << "has xla.range [" << lo << ", " << hi
                                 << "]; the CPU target needs [0, n - 1] with n <= "
                                 << kMaxGridDim;
      return;
    }
    size = std::max(size, hi + 1);
  };
  f.walk([&](mlir::Operation* op) {
    if (auto t = llvm::dyn_cast<mlir::gpu::ThreadIdOp>(op)) {
      rangeOf(op, grid.threads[static_cast<int>(t.getDimension())]);
    } else if (auto b = llvm::dyn_cast<mlir::gpu::BlockIdOp>(op)) {
      rangeOf(op, grid.blocks[static_cast<int>(b.getDimension())]);
    } else if (isCut(op) && op->getBlock() != &f.getBody().front()) {
      result = op->emitOpError() << "inside control flow is not supported by the CPU "
                                    "target (barriers and shuffles must be at the top "
                                    "level of the kernel)";
    } else if (llvm::isa<mlir::gpu::BlockDimOp, mlir::gpu::GridDimOp>(op)) {
      result = op->emitOpError() << "is not supported by the CPU target";
    }
  });
  if (mlir::failed(result)) return mlir::failure();
  // The launch grid as the emitter recorded it: an id that nothing uses is
  // gone by now, but its threads still run.
  if (auto launch = f->getAttrOfType<mlir::DictionaryAttr>("xla.launch_dims")) {
    auto blocks = launch.getAs<mlir::DenseI64ArrayAttr>("block_counts");
    auto threads = launch.getAs<mlir::DenseI64ArrayAttr>("thread_counts_per_block");
    if (!blocks || !threads || blocks.size() != 3 || threads.size() != 3 ||
        llvm::any_of(blocks.asArrayRef(), [](int64_t n) { return n < 1 || n > kMaxGridDim; }) ||
        llvm::any_of(threads.asArrayRef(),
                     [](int64_t n) { return n < 1 || n > kMaxGridDim; })) {
      return f.emitOpError() << "has a malformed xla.launch_dims (expected block_counts "
                                "and thread_counts_per_block, three counts in [1, "
                             << kMaxGridDim << "] each)";
    }
    for (int i = 0; i < 3; ++i) {
      grid.blocks[i] = std::max(grid.blocks[i], blocks[i]);
      grid.threads[i] = std::max(grid.threads[i], threads[i]);
    }
  }
  if (grid.numThreads() > kMaxThreadsPerBlock) {
    return f.emitOpError() << "has " << grid.numThreads() << " threads per block; at most "
                           << kMaxThreadsPerBlock << " (as on a GPU)";
  }
  return grid;
}

class KernelLowering {
 public:
  KernelLowering(mlir::func::FuncOp f, Grid grid) : f_(f), grid_(grid) {}

  mlir::LogicalResult run() {
    // 1. Phases: top-level ops between cuts; a shuffle is a phase of its own.
    mlir::Block& body = f_.getBody().front();
    auto ret = llvm::dyn_cast<mlir::func::ReturnOp>(body.getTerminator());
    if (!ret || ret.getNumOperands() != 0) {
      return f_.emitOpError() << "a kernel for the CPU target must return nothing (run "
                                 "-xla-gpu-lower-tensors first)";
    }
    SmallVector<SmallVector<mlir::Operation*>> phases(1);
    for (mlir::Operation& op : body.without_terminator()) {
      if (llvm::isa<mlir::gpu::BarrierOp>(op)) {
        phases.emplace_back();
        continue;
      }
      if (llvm::isa<mlir::gpu::ShuffleOp>(op)) {
        phases.push_back({&op});
        phases.emplace_back();
        continue;
      }
      phases.back().push_back(&op);
      phaseOf_[&op] = phases.size() - 1;
    }
    for (auto [i, phase] : llvm::enumerate(phases)) {
      for (mlir::Operation* op : phase) phaseOf_[op] = i;
    }
    // 2. What a later phase recomputes instead of reloading: ids, constants,
    //    and the integer and pointer arithmetic on them (index maps of the
    //    thread and block ids, the shared tiles' addresses); every other
    //    value used in a later phase than the one defining it is spilled.
    for (mlir::Operation& op : body.without_terminator()) {
      if (isRecomputed(&op)) {
        recomputed_.insert(&op);
        continue;
      }
      if (op.getNumRegions() != 0 || !mlir::isPure(&op) || llvm::isa<mlir::gpu::ShuffleOp>(op)) {
        continue;
      }
      bool cheap = llvm::all_of(op.getResultTypes(), [](mlir::Type t) {
        return t.isIntOrIndex() || llvm::isa<mlir::LLVM::LLVMPointerType>(t);
      });
      bool fromRecomputed = llvm::all_of(op.getOperands(), [&](Value v) {
        if (auto arg = llvm::dyn_cast<mlir::BlockArgument>(v)) return arg.getOwner() == &body;
        return recomputed_.contains(v.getDefiningOp());
      });
      if (cheap && fromRecomputed) recomputed_.insert(&op);
    }
    for (mlir::Operation& op : body.without_terminator()) {
      if (recomputed_.contains(&op) || llvm::isa<mlir::gpu::BarrierOp>(op)) continue;
      for (Value result : op.getResults()) {
        for (mlir::OpOperand& use : result.getUses()) {
          mlir::Operation* top = body.findAncestorOpInBlock(*use.getOwner());
          if (top && phaseOf_.lookup(top) != phaseOf_.lookup(&op)) {
            spilled_.insert(result);
            break;
          }
        }
      }
    }
    // 3. The new body: allocations, the loop over blocks, one loop over the
    //    threads per phase.
    mlir::MLIRContext* ctx = f_.getContext();
    mlir::Location loc = f_.getLoc();
    auto* newBody = new mlir::Block();
    f_.getBody().push_back(newBody);
    SmallVector<mlir::Location> locs(body.getNumArguments(), loc);
    newBody->addArguments(body.getArgumentTypes(), locs);
    Value first = newBody->addArgument(mlir::IndexType::get(ctx), loc);
    Value last = newBody->addArgument(mlir::IndexType::get(ctx), loc);
    mlir::OpBuilder b = mlir::OpBuilder::atBlockBegin(newBody);
    for (auto [oldArg, newArg] : llvm::zip(body.getArguments(), newBody->getArguments())) {
      argMap_.map(oldArg, newArg);
    }
    auto ptrType = mlir::LLVM::LLVMPointerType::get(ctx);
    Value one64 = b.create<mlir::LLVM::ConstantOp>(loc, b.getI64Type(), 1);
    Value threads64 = b.create<mlir::LLVM::ConstantOp>(loc, b.getI64Type(), grid_.numThreads());
    // Per-thread values and shared memory: on the stack while they fit in
    // a fraction of a thread's stack (8 MiB on Linux), else on the heap, one
    // allocation per call freed at its end; past kMaxStorageBytes the
    // kernel is refused here, before it can run.
    auto module = f_->getParentOfType<mlir::ModuleOp>();
    SmallVector<mlir::LLVM::GlobalOp> shared;
    for (auto global : module.getOps<mlir::LLVM::GlobalOp>()) {
      if (global.getAddrSpace() == 3) shared.push_back(global);
    }
    mlir::DataLayout layout = mlir::DataLayout::closest(f_);
    auto bytesOf = [&](mlir::Type t, int64_t n) -> uint64_t {
      return llvm::alignTo(layout.getTypeSize(t).getFixedValue() * uint64_t(n), 16);
    };
    uint64_t storage = 0;
    for (Value v : spilled_) storage += bytesOf(storageType(v.getType()), grid_.numThreads());
    for (auto global : shared) storage += bytesOf(global.getType(), 1);
    if (storage > kMaxStorageBytes) {
      return f_.emitOpError() << "needs " << storage << " bytes of per-thread and shared "
                              << "storage on the CPU target, more than " << kMaxStorageBytes;
    }
    Value heap;
    mlir::LLVM::LLVMFuncOp freeFn;
    if (storage > kMaxStackStorageBytes) {
      auto mallocFn = mlir::LLVM::lookupOrCreateMallocFn(b, module, b.getI64Type());
      auto freeFnOr = mlir::LLVM::lookupOrCreateFreeFn(b, module);
      if (mlir::failed(mallocFn) || mlir::failed(freeFnOr)) {
        return f_.emitOpError() << "cannot declare malloc/free for its storage";
      }
      freeFn = *freeFnOr;
      Value size = b.create<mlir::LLVM::ConstantOp>(loc, b.getI64Type(), storage);
      heap = b.create<mlir::LLVM::CallOp>(loc, *mallocFn, mlir::ValueRange{size}).getResult();
      // Out of memory: stop here rather than write through null.
      Value null = b.create<mlir::LLVM::ZeroOp>(loc, ptrType);
      Value failed = b.create<mlir::LLVM::ICmpOp>(loc, mlir::LLVM::ICmpPredicate::eq, heap, null);
      auto ifOp = b.create<mlir::scf::IfOp>(loc, failed, /*withElseRegion=*/false);
      mlir::OpBuilder::atBlockBegin(ifOp.thenBlock()).create<mlir::LLVM::Trap>(loc);
    }
    uint64_t offset = 0;
    auto slot = [&](mlir::Type t, int64_t n, Value count) -> Value {
      if (!heap) return b.create<mlir::LLVM::AllocaOp>(loc, ptrType, t, count, /*alignment=*/16);
      Value at = heap;
      if (offset > 0) {
        Value off = b.create<mlir::LLVM::ConstantOp>(loc, b.getI64Type(), offset);
        at = b.create<mlir::LLVM::GEPOp>(loc, ptrType, b.getI8Type(), heap, mlir::ValueRange{off});
      }
      offset += bytesOf(t, n);
      return at;
    };
    for (Value v : spilled_) {
      spillSlots_[v] = slot(storageType(v.getType()), grid_.numThreads(), threads64);
    }
    for (auto global : shared) {
      sharedSlots_[global.getSymName()] = slot(global.getType(), 1, one64);
    }
    Value c0 = b.create<mlir::arith::ConstantIndexOp>(loc, 0);
    Value c1 = b.create<mlir::arith::ConstantIndexOp>(loc, 1);
    Value nThreads = b.create<mlir::arith::ConstantIndexOp>(loc, grid_.numThreads());
    auto blockLoop = b.create<mlir::scf::ForOp>(loc, first, last, c1);
    b.setInsertionPointToStart(blockLoop.getBody());
    Value bid = blockLoop.getInductionVar();
    for (auto& phase : phases) {
      if (phase.empty()) continue;
      auto threadLoop = b.create<mlir::scf::ForOp>(loc, c0, nThreads, c1);
      mlir::OpBuilder tb = mlir::OpBuilder::atBlockBegin(threadLoop.getBody());
      tb.setInsertionPoint(threadLoop.getBody()->getTerminator());
      Value tid = threadLoop.getInductionVar();
      if (auto shuffle = llvm::dyn_cast<mlir::gpu::ShuffleOp>(phase.front())) {
        if (mlir::failed(emitShuffle(tb, shuffle, tid, bid))) return mlir::failure();
        continue;
      }
      mlir::IRMapping mapping;
      for (mlir::Operation* op : phase) {
        if (mlir::failed(emitOp(tb, op, mapping, tid, bid))) return mlir::failure();
      }
    }
    b.setInsertionPointToEnd(newBody);
    if (heap) b.create<mlir::LLVM::CallOp>(loc, freeFn, mlir::ValueRange{heap});
    b.create<mlir::func::ReturnOp>(loc);
    // 4. Swap in the new body and signature.
    body.dropAllDefinedValueUses();
    for (mlir::Operation& op : llvm::make_early_inc_range(llvm::reverse(body))) {
      op.dropAllUses();
      op.erase();
    }
    body.erase();
    f_.setType(mlir::FunctionType::get(ctx, newBody->getArgumentTypes(), {}));
    return mlir::success();
  }

 private:
  // The x, y or z id within a linear id over `counts` (x fastest).
  static Value idOf(mlir::OpBuilder& b, Value linear, const std::array<int64_t, 3>& counts,
                    mlir::gpu::Dimension dimension) {
    int d = static_cast<int>(dimension);
    mlir::Location loc = linear.getLoc();
    if (counts[d] == 1) return b.create<mlir::arith::ConstantIndexOp>(loc, 0);
    int64_t below = 1;
    for (int i = 0; i < d; ++i) below *= counts[i];
    Value id = linear;
    if (below > 1) {
      id = b.create<mlir::arith::DivUIOp>(loc, id,
                                          b.create<mlir::arith::ConstantIndexOp>(loc, below));
    }
    bool outermost = llvm::all_of(llvm::ArrayRef(counts).drop_front(d + 1),
                                  [](int64_t n) { return n == 1; });
    if (!outermost) {
      id = b.create<mlir::arith::RemUIOp>(loc, id,
                                          b.create<mlir::arith::ConstantIndexOp>(loc, counts[d]));
    }
    return id;
  }

  // Spilled values are stored as LLVM-compatible types (index as i64, a
  // complex value as an array of its two parts).
  static mlir::Type storageType(mlir::Type t) {
    if (auto complex = llvm::dyn_cast<mlir::ComplexType>(t)) {
      return mlir::LLVM::LLVMArrayType::get(complex.getElementType(), 2);
    }
    return t.isIndex() ? mlir::IntegerType::get(t.getContext(), 64) : t;
  }

  Value slotAt(mlir::OpBuilder& b, Value value, Value tid) {
    mlir::Location loc = value.getLoc();
    Value i = b.create<mlir::arith::IndexCastOp>(loc, b.getI64Type(), tid);
    return b.create<mlir::LLVM::GEPOp>(loc, mlir::LLVM::LLVMPointerType::get(b.getContext()),
                                       storageType(value.getType()), spillSlots_[value],
                                       mlir::ValueRange{i});
  }

  Value reload(mlir::OpBuilder& b, Value value, Value tid) {
    mlir::Location loc = value.getLoc();
    Value loaded = b.create<mlir::LLVM::LoadOp>(loc, storageType(value.getType()),
                                                slotAt(b, value, tid));
    if (value.getType().isIndex()) {
      loaded = b.create<mlir::arith::IndexCastOp>(loc, value.getType(), loaded);
    }
    if (auto complex = llvm::dyn_cast<mlir::ComplexType>(value.getType())) {
      Value re = b.create<mlir::LLVM::ExtractValueOp>(loc, loaded, llvm::ArrayRef<int64_t>{0});
      Value im = b.create<mlir::LLVM::ExtractValueOp>(loc, loaded, llvm::ArrayRef<int64_t>{1});
      loaded = b.create<mlir::complex::CreateOp>(loc, complex, re, im);
    }
    return loaded;
  }

  void spill(mlir::OpBuilder& b, Value original, Value computed, Value tid) {
    mlir::Location loc = original.getLoc();
    Value stored = computed;
    if (computed.getType().isIndex()) {
      stored = b.create<mlir::arith::IndexCastOp>(loc, b.getI64Type(), computed);
    }
    if (llvm::isa<mlir::ComplexType>(computed.getType())) {
      Value parts = b.create<mlir::LLVM::UndefOp>(loc, storageType(computed.getType()));
      parts = b.create<mlir::LLVM::InsertValueOp>(
          loc, parts, b.create<mlir::complex::ReOp>(loc, computed), llvm::ArrayRef<int64_t>{0});
      stored = b.create<mlir::LLVM::InsertValueOp>(
          loc, parts, b.create<mlir::complex::ImOp>(loc, computed), llvm::ArrayRef<int64_t>{1});
    }
    b.create<mlir::LLVM::StoreOp>(loc, stored, slotAt(b, original, tid));
  }

  // Makes every value `op` (and its regions) uses available in `mapping`:
  // arguments, per-thread reloads, or recomputed constants and ids.
  mlir::LogicalResult provideOperands(mlir::OpBuilder& b, mlir::Operation* op,
                                      mlir::IRMapping& mapping, Value tid, Value bid) {
    mlir::LogicalResult result = mlir::success();
    op->walk([&](mlir::Operation* inner) {
      for (Value v : inner->getOperands()) {
        if (mapping.contains(v)) continue;
        if (argMap_.contains(v)) {
          mapping.map(v, argMap_.lookup(v));
          continue;
        }
        mlir::Operation* def = v.getDefiningOp();
        if (!def || def->getBlock() != &f_.getBody().front()) continue;  // local to `op`
        if (recomputed_.contains(def)) {
          if (mlir::failed(emitOp(b, def, mapping, tid, bid))) result = mlir::failure();
        } else if (spilled_.contains(v)) {
          mapping.map(v, reload(b, v, tid));
        }
      }
    });
    return result;
  }

  mlir::LogicalResult emitOp(mlir::OpBuilder& b, mlir::Operation* op, mlir::IRMapping& mapping,
                             Value tid, Value bid) {
    if (auto t = llvm::dyn_cast<mlir::gpu::ThreadIdOp>(op)) {
      mapping.map(t.getResult(), idOf(b, tid, grid_.threads, t.getDimension()));
      return mlir::success();
    }
    if (auto bl = llvm::dyn_cast<mlir::gpu::BlockIdOp>(op)) {
      mapping.map(bl.getResult(), idOf(b, bid, grid_.blocks, bl.getDimension()));
      return mlir::success();
    }
    if (auto addr = llvm::dyn_cast<mlir::LLVM::AddressOfOp>(op)) {
      auto it = sharedSlots_.find(addr.getGlobalName());
      if (it != sharedSlots_.end()) {
        mapping.map(addr.getResult(), it->second);
        return mlir::success();
      }
    }
    if (auto cast = llvm::dyn_cast<mlir::LLVM::AddrSpaceCastOp>(op)) {
      // Shared memory is ordinary memory here: no cast.
      if (auto addr = cast.getArg().getDefiningOp<mlir::LLVM::AddressOfOp>();
          addr && sharedSlots_.count(addr.getGlobalName())) {
        mapping.map(cast.getResult(), sharedSlots_[addr.getGlobalName()]);
        if (spilled_.contains(cast.getResult())) {
          spill(b, cast.getResult(), sharedSlots_[addr.getGlobalName()], tid);
        }
        return mlir::success();
      }
    }
    if (mlir::failed(provideOperands(b, op, mapping, tid, bid))) return mlir::failure();
    mlir::Operation* clone = b.clone(*op, mapping);
    for (auto [original, copy] : llvm::zip(op->getResults(), clone->getResults())) {
      if (spilled_.contains(original)) spill(b, original, copy, tid);
    }
    return mlir::success();
  }

  // Lane l of a segment of `width` lanes reads lane l + offset of the same
  // segment, or its own value when that lane is past the segment or past
  // the block's last thread (a partial warp: no such lane, no read).
  mlir::LogicalResult emitShuffle(mlir::OpBuilder& b, mlir::gpu::ShuffleOp shuffle, Value tid,
                                  Value bid) {
    if (shuffle.getMode() != mlir::gpu::ShuffleMode::DOWN) {
      return shuffle.emitOpError() << "only shuffle down is supported by the CPU target";
    }
    auto offset = mlir::getConstantIntValue(shuffle.getOffset());
    auto width = mlir::getConstantIntValue(shuffle.getWidth());
    if (!offset || !width || *width <= 0) {
      return shuffle.emitOpError() << "needs constant offset and width on the CPU target";
    }
    mlir::Location loc = shuffle.getLoc();
    Value value = shuffle.getValue();
    mlir::Operation* def = value.getDefiningOp();
    // A value every phase recomputes (a constant: a reduction whose input
    // folded away; a thread id) is computed again for the source lane.
    bool recomputed = def && recomputed_.contains(def);
    if (!spilled_.contains(value) && !argMap_.contains(value) && !recomputed) {
      return shuffle.emitOpError() << "shuffles a value the CPU target cannot see per thread";
    }
    Value cw = b.create<mlir::arith::ConstantIndexOp>(loc, *width);
    Value co = b.create<mlir::arith::ConstantIndexOp>(loc, *offset);
    Value lane = b.create<mlir::arith::RemUIOp>(loc, tid, cw);
    Value target = b.create<mlir::arith::AddIOp>(loc, lane, co);
    Value other = b.create<mlir::arith::AddIOp>(loc, tid, co);
    Value valid = b.create<mlir::arith::AndIOp>(
        loc, b.create<mlir::arith::CmpIOp>(loc, mlir::arith::CmpIPredicate::ult, target, cw),
        b.create<mlir::arith::CmpIOp>(
            loc, mlir::arith::CmpIPredicate::ult, other,
            b.create<mlir::arith::ConstantIndexOp>(loc, grid_.numThreads())));
    Value src = b.create<mlir::arith::SelectOp>(loc, valid, other, tid);
    Value moved;
    if (argMap_.contains(value)) {
      moved = argMap_.lookup(value);
    } else if (recomputed) {
      mlir::IRMapping mapping;
      if (mlir::failed(emitOp(b, def, mapping, src, bid))) return mlir::failure();
      moved = mapping.lookup(value);
    } else {
      moved = reload(b, value, src);
    }
    if (spilled_.contains(shuffle.getShuffleResult())) {
      spill(b, shuffle.getShuffleResult(), moved, tid);
    }
    if (spilled_.contains(shuffle.getValid())) spill(b, shuffle.getValid(), valid, tid);
    return mlir::success();
  }

  mlir::func::FuncOp f_;
  Grid grid_;
  llvm::DenseMap<mlir::Operation*, unsigned> phaseOf_;
  llvm::SetVector<Value> spilled_;
  llvm::DenseMap<Value, Value> spillSlots_;
  // Ops every phase that uses them emits again (see run(), step 2).
  llvm::DenseSet<mlir::Operation*> recomputed_;
  llvm::StringMap<Value> sharedSlots_;
  mlir::IRMapping argMap_;
};

class LowerKernelToCpuPass : public impl::LowerKernelToCpuPassBase<LowerKernelToCpuPass> {
 public:
  void runOnOperation() override {
    mlir::ModuleOp module = getOperation();
    for (auto f : llvm::to_vector(module.getOps<mlir::func::FuncOp>())) {
      if (!f.isPublic() || f.isExternal()) continue;
      mlir::FailureOr<Grid> grid = findGrid(f);
      if (mlir::failed(grid)) return signalPassFailure();
      if (mlir::failed(KernelLowering(f, *grid).run())) return signalPassFailure();
    }
    SmallVector<mlir::Operation*> truncations;
    module.walk([&](mlir::arith::TruncFOp op) { truncations.push_back(op); });
    mlir::RewritePatternSet conversions(&getContext());
    conversions.add<TruncF64ThroughF32>(&getContext());
    if (!truncations.empty() &&
        mlir::failed(mlir::applyOpPatternsGreedily(truncations, std::move(conversions)))) {
      return signalPassFailure();
    }
    // The shared-memory globals became per-call buffers.
    for (auto global : llvm::to_vector(module.getOps<mlir::LLVM::GlobalOp>())) {
      if (global.getAddrSpace() == 3 && global.getSymbolUses(module)->empty()) global.erase();
    }
  }
};

}  // namespace
}  // namespace xla::gpu
