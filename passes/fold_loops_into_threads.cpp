//===- fold_loops_into_threads.cpp - -xla-gpu-fold-loops-into-threads -----===//

#include "dialects/xla_gpu/XlaGpuDialect.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "passes/Passes.h"

namespace xla::gpu {

#define GEN_PASS_DEF_FOLDLOOPSINTOTHREADSPASS
#include "passes/Passes.h.inc"

namespace {

using mlir::Value;

// The ops a thread could tell its neighbours or the block's size by.
bool communicates(mlir::Operation* op) {
  if (llvm::isa<mlir::gpu::BarrierOp, mlir::gpu::ShuffleOp, mlir::gpu::BlockDimOp,
                mlir::gpu::GridDimOp, AllocateSharedOp, SyncThreadsOp, ShuffleReduceOp>(op)) {
    return true;
  }
  if (auto tid = llvm::dyn_cast<mlir::gpu::ThreadIdOp>(op)) {
    return tid.getDimension() != mlir::gpu::Dimension::x;
  }
  return false;
}

// Whether the tensor `v` (a carried value of the loop, or one made from
// it inside) is only written, by tensor.insert, and passed on: then the
// loop's iterations are independent, and so are the threads they become.
bool onlyWritten(Value v, mlir::scf::ForOp loop) {
  for (mlir::OpOperand& use : v.getUses()) {
    mlir::Operation* user = use.getOwner();
    if (auto insert = llvm::dyn_cast<mlir::tensor::InsertOp>(user)) {
      if (use.get() != insert.getDest()) return false;
      if (!onlyWritten(insert.getResult(), loop)) return false;
      continue;
    }
    if (auto yield = llvm::dyn_cast<mlir::scf::YieldOp>(user)) {
      mlir::Operation* parent = yield->getParentOp();
      if (parent == loop) continue;
      auto branch = llvm::dyn_cast<mlir::scf::IfOp>(parent);
      if (!branch || !onlyWritten(branch.getResult(use.getOperandNumber()), loop)) return false;
      continue;
    }
    return false;
  }
  return true;
}

// The kernel's one top-level element loop, if the kernel can be folded.
mlir::scf::ForOp foldableLoop(mlir::func::FuncOp f, int64_t& threads) {
  auto launch = f->getAttrOfType<mlir::DictionaryAttr>("xla.launch_dims");
  if (!launch || f.getBody().getBlocks().size() != 1) return {};
  auto counts = launch.getAs<mlir::DenseI64ArrayAttr>("thread_counts_per_block");
  if (!counts || counts.size() != 3 || counts[1] != 1 || counts[2] != 1) return {};
  threads = counts[0];
  if (f.walk([](mlir::Operation* op) {
         return communicates(op) ? mlir::WalkResult::interrupt() : mlir::WalkResult::advance();
       }).wasInterrupted()) {
    return {};
  }
  mlir::scf::ForOp loop;
  mlir::Block& body = f.getBody().front();
  for (mlir::Operation& op : body.without_terminator()) {
    if (auto candidate = llvm::dyn_cast<mlir::scf::ForOp>(op)) {
      if (loop) return {};  // two loops: their iterations are ordered
      loop = candidate;
      continue;
    }
    // Everything else is pure and flat (ids, constants, index maps).
    if (op.getNumRegions() != 0 || !mlir::isMemoryEffectFree(&op)) return {};
  }
  if (!loop) return {};
  auto lower = mlir::getConstantIntValue(loop.getLowerBound());
  auto upper = mlir::getConstantIntValue(loop.getUpperBound());
  auto step = mlir::getConstantIntValue(loop.getStep());
  if (!lower || !upper || !step || *lower != 0 || *step != 1 || *upper < 2 ||
      threads * *upper > kMaxFoldedThreadsPerBlock || loop.getNumRegionIterArgs() == 0) {
    return {};
  }
  // The carried values: tensors the kernel's arguments start, returned.
  auto ret = llvm::cast<mlir::func::ReturnOp>(body.getTerminator());
  for (auto [init, carried, result] :
       llvm::zip(loop.getInitArgs(), loop.getRegionIterArgs(), loop.getResults())) {
    auto argument = llvm::dyn_cast<mlir::BlockArgument>(init);
    auto tensor = llvm::dyn_cast<mlir::RankedTensorType>(init.getType());
    // Sub-byte elements: a thread writes whole bytes (the loop emitter
    // unrolls them for that); split over threads, each byte would be two
    // read-modify-writes, which LLVM does not vectorize (the s4 add ran
    // 1.95x slower).
    mlir::Type element = tensor ? tensor.getElementType() : mlir::Type();
    if (!tensor || (element.isIntOrFloat() && element.getIntOrFloatBitWidth() < 8 &&
                    !element.isInteger(1))) {
      return {};
    }
    if (!argument || argument.getOwner() != &body || !onlyWritten(carried, loop)) return {};
    // Read nowhere else: the loop's writes are the kernel's only access.
    if (!init.hasOneUse()) return {};
    for (mlir::Operation* user : result.getUsers()) {
      if (user != ret) return {};
    }
  }
  return loop;
}

class FoldLoopsIntoThreadsPass
    : public impl::FoldLoopsIntoThreadsPassBase<FoldLoopsIntoThreadsPass> {
 public:
  using FoldLoopsIntoThreadsPassBase::FoldLoopsIntoThreadsPassBase;

  void runOnOperation() override {
    mlir::func::FuncOp f = getOperation();
    int64_t threads = 0;
    mlir::scf::ForOp loop = foldableLoop(f, threads);
    if (!loop) return;
    int64_t k = *mlir::getConstantIntValue(loop.getUpperBound());
    int64_t folded = threads * k;
    mlir::MLIRContext* ctx = &getContext();
    mlir::Location loc = loop.getLoc();
    mlir::Block& body = f.getBody().front();
    mlir::OpBuilder b(ctx);
    b.setInsertionPointToStart(&body);
    mlir::Type index = b.getIndexType();
    auto tid = b.create<mlir::gpu::ThreadIdOp>(loc, index, mlir::gpu::Dimension::x);
    tid->setAttr("xla.range", b.getArrayAttr({b.getIndexAttr(0), b.getIndexAttr(folded - 1)}));
    // (d0) -> (d0 floordiv k) and (d0) -> (d0 mod k) on [0, folded - 1].
    auto part = [&](mlir::AffineExpr expr) -> Value {
      IndexingMap map(mlir::AffineMap::get(1, 0, expr, ctx), {{"", {0, folded - 1}}}, {}, {});
      return b.create<ApplyIndexingOp>(loc, mlir::ValueRange{tid.getResult()}, mlir::ValueRange{},
                                       IndexingMapAttr::get(ctx, map))
          .getResult(0);
    };
    mlir::AffineExpr d0 = b.getAffineDimExpr(0);
    Value thread = part(d0.floorDiv(k));
    Value element = part(d0 % k);
    llvm::SmallVector<mlir::gpu::ThreadIdOp> old;
    f.walk([&](mlir::gpu::ThreadIdOp op) {
      if (op != tid) old.push_back(op);
    });
    for (mlir::gpu::ThreadIdOp op : old) {
      op.getResult().replaceAllUsesWith(thread);
      op.erase();
    }
    // The body once, in place of the loop.
    mlir::IRMapping mapping;
    mapping.map(loop.getInductionVar(), element);
    mapping.map(loop.getRegionIterArgs(), loop.getInitArgs());
    b.setInsertionPoint(loop);
    for (mlir::Operation& op : loop.getBody()->without_terminator()) b.clone(op, mapping);
    for (auto [result, yielded] :
         llvm::zip(loop.getResults(), loop.getBody()->getTerminator()->getOperands())) {
      result.replaceAllUsesWith(mapping.lookupOrDefault(yielded));
    }
    loop.erase();
    auto launch = f->getAttrOfType<mlir::DictionaryAttr>("xla.launch_dims");
    mlir::NamedAttrList entries(launch);
    entries.set("thread_counts_per_block", b.getDenseI64ArrayAttr({folded, 1, 1}));
    f->setAttr("xla.launch_dims", entries.getDictionary(ctx));
    // For -xla-gpu-lower-kernel-to-cpu: K neighbouring threads were one.
    f->setAttr("xla.elements_per_thread", b.getI64IntegerAttr(k));
  }
};

}  // namespace
}  // namespace xla::gpu
