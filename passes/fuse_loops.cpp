//===- fuse_loops.cpp - -xla-gpu-fuse-loops -------------------------------===//
//
// XLA's loop fuser. An emitter that reads a tile into registers and then
// writes it somewhere else emits two `xla_gpu.loop`s over the same domain:
// the first builds a vector (`vector.insert %v, %iter[%s0, %s1]`), the
// second reads it back element by element (`vector.extract %vec[%s0, %s1]`).
// When every iteration of the second loop reads exactly the element the
// same iteration of the first one wrote, the two are one loop: the value
// goes straight from the insert to the extract and the vector need not
// live in registers across the loops.
//
//   1. For each `vector.extract` in an `xla_gpu.loop` (the extract loop)
//      from a result of another `xla_gpu.loop` in the same block (the
//      insert loop): the insert loop builds that result with one
//      `vector.insert` into its iteration argument, yielded.
//   2. The loops are fusible when they run over the same dimension values
//      and the same domain (dimension and range-variable bounds, the same
//      constraints, no runtime variables), the insert and the extract use
//      the same position (the same induction variables, or the same
//      constants), that position tells the iterations apart (every range
//      variable with more than one value is in it: the element an
//      iteration reads is the one it wrote, not a later iteration's), the
//      vector is used in the extract loop only by such extracts, and
//      nothing between the loops uses the insert loop's results.
//   3. The fused loop, where the extract loop was, has the insert map's
//      results followed by the extract map's, the insert loop's
//      iteration arguments followed by the extract loop's; its body is the
//      insert loop's body followed by the extract loop's, each extract
//      reading the inserted vector of the same iteration.
//
// XLA checks the dimensions and positions too but its checks do not stop
// the fusion (a `continue` inside an inner loop); these do.
//
//===----------------------------------------------------------------------===//

#include "dialects/xla_gpu/XlaGpuDialect.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/PatternMatch.h"
#include "passes/Passes.h"

namespace xla::gpu {

#define GEN_PASS_DEF_FUSELOOPSPASS
#include "passes/Passes.h.inc"

namespace {

using mlir::Value;

bool haveSameDomain(const IndexingMap& a, const IndexingMap& b) {
  return a.getNumRuntimeVars() == 0 && b.getNumRuntimeVars() == 0 && a.hasSameDomain(b);
}

// The induction variable `v` is of `loop`, or -1.
int64_t inductionVarIndex(LoopOp loop, Value v) {
  auto arg = llvm::dyn_cast<mlir::BlockArgument>(v);
  if (!arg || arg.getOwner() != loop.getBody() ||
      arg.getArgNumber() >= loop.getIndexingMap().getNumRangeVars()) {
    return -1;
  }
  return arg.getArgNumber();
}

// Whether `extract` in `extractLoop` reads the element `insert` in
// `insertLoop` writes in the same iteration.
bool samePosition(mlir::vector::InsertOp insert, LoopOp insertLoop,
                  mlir::vector::ExtractOp extract, LoopOp extractLoop) {
  llvm::SmallVector<mlir::OpFoldResult> in = insert.getMixedPosition();
  llvm::SmallVector<mlir::OpFoldResult> ex = extract.getMixedPosition();
  if (in.size() != ex.size()) return false;
  for (auto [a, b] : llvm::zip(in, ex)) {
    auto va = llvm::dyn_cast<Value>(a);
    auto vb = llvm::dyn_cast<Value>(b);
    if (!va != !vb) return false;
    if (!va) {
      if (llvm::cast<mlir::Attribute>(a) != llvm::cast<mlir::Attribute>(b)) return false;
      continue;
    }
    int64_t index = inductionVarIndex(insertLoop, va);
    if (index < 0 || index != inductionVarIndex(extractLoop, vb)) return false;
  }
  return true;
}

// Whether the position of `insert` differs between any two iterations.
bool positionTellsIterationsApart(mlir::vector::InsertOp insert, LoopOp loop) {
  const IndexingMap map = loop.getIndexingMap();
  llvm::SmallBitVector used(map.getNumRangeVars());
  for (Value v : insert.getDynamicPosition()) {
    int64_t index = inductionVarIndex(loop, v);
    if (index < 0) return false;
    used.set(index);
  }
  for (unsigned i = 0; i < map.getNumRangeVars(); ++i) {
    if (!used[i] && !map.getRangeVars()[i].bounds.isPoint()) return false;
  }
  return true;
}

// The vector.insert that builds result `result` of `loop` (its iteration
// argument's only use, yielded at the same position), or null.
mlir::vector::InsertOp vectorBuilder(LoopOp loop, unsigned result) {
  Value iterArg = loop.getRegionIterArgs()[result];
  if (!iterArg.hasOneUse()) return nullptr;
  auto insert = llvm::dyn_cast<mlir::vector::InsertOp>(*iterArg.getUsers().begin());
  if (!insert || insert.getDest() != iterArg || insert->getParentOp() != loop) return nullptr;
  auto yield = llvm::cast<YieldOp>(loop.getBody()->getTerminator());
  if (yield->getOperand(result) != insert.getResult()) return nullptr;
  return insert;
}

struct Fusion {
  LoopOp insertLoop;
  LoopOp extractLoop;
  unsigned result;  // of the insert loop, the vector
  mlir::vector::InsertOp insert;
};

mlir::FailureOr<Fusion> fusionOf(mlir::vector::ExtractOp extract) {
  auto extractLoop = extract->getParentOfType<LoopOp>();
  auto vector = llvm::dyn_cast<mlir::OpResult>(extract.getSource());
  if (!extractLoop || !vector) return mlir::failure();
  auto insertLoop = llvm::dyn_cast<LoopOp>(vector.getOwner());
  if (!insertLoop || insertLoop->getBlock() != extractLoop->getBlock() ||
      !insertLoop->isBeforeInBlock(extractLoop)) {
    return mlir::failure();
  }
  Fusion fusion{insertLoop, extractLoop, vector.getResultNumber(),
                vectorBuilder(insertLoop, vector.getResultNumber())};
  if (!fusion.insert || !llvm::equal(insertLoop.getDims(), extractLoop.getDims()) ||
      !haveSameDomain(insertLoop.getIndexingMap(), extractLoop.getIndexingMap()) ||
      !positionTellsIterationsApart(fusion.insert, insertLoop)) {
    return mlir::failure();
  }
  // The insert loop's results: used after the extract loop, or in it only
  // by extracts of the vector at the inserted position.
  for (mlir::OpOperand& use : insertLoop->getUses()) {
    mlir::Operation* user = use.getOwner();
    if (!extractLoop->isAncestor(user)) {
      mlir::Operation* inBlock = extractLoop->getBlock()->findAncestorOpInBlock(*user);
      if (inBlock && inBlock->isBeforeInBlock(extractLoop)) return mlir::failure();
      continue;
    }
    auto reader = llvm::dyn_cast<mlir::vector::ExtractOp>(user);
    if (!reader || use.get() != vector ||
        !samePosition(fusion.insert, insertLoop, reader, extractLoop)) {
      return mlir::failure();
    }
  }
  return fusion;
}

void fuse(Fusion fusion) {
  LoopOp insertLoop = fusion.insertLoop, extractLoop = fusion.extractLoop;
  const IndexingMap insertMap = insertLoop.getIndexingMap();
  const IndexingMap extractMap = extractLoop.getIndexingMap();
  mlir::MLIRContext* ctx = insertLoop.getContext();

  // 3. The maps' results side by side over the (shared) domain.
  llvm::SmallVector<mlir::AffineExpr> results(insertMap.getAffineMap().getResults());
  llvm::append_range(results, extractMap.getAffineMap().getResults());
  IndexingMap map = insertMap.withResults(results);
  llvm::SmallVector<Value> inits(insertLoop.getInits());
  llvm::append_range(inits, extractLoop.getInits());

  mlir::IRRewriter rewriter(ctx);
  rewriter.setInsertionPoint(extractLoop);
  auto fused = rewriter.create<LoopOp>(extractLoop.getLoc(), IndexingMapAttr::get(ctx, map),
                                       insertLoop.getDims(), inits);
  mlir::Block* body = fused.getBody();
  // Body arguments: induction variables, insert map results, extract map
  // results, insert iteration arguments, extract iteration arguments.
  auto args = body->getArguments();
  unsigned numIvs = map.getNumRangeVars();
  unsigned numIn = insertMap.getNumResults(), numEx = extractMap.getNumResults();
  unsigned numInInits = insertLoop.getInits().size();
  llvm::SmallVector<Value> insertArgs(args.take_front(numIvs));
  llvm::SmallVector<Value> extractArgs(insertArgs);
  llvm::append_range(insertArgs, args.slice(numIvs, numIn));
  llvm::append_range(extractArgs, args.slice(numIvs + numIn, numEx));
  llvm::append_range(insertArgs, args.slice(numIvs + numIn + numEx, numInInits));
  llvm::append_range(extractArgs, args.drop_front(numIvs + numIn + numEx + numInInits));

  // Each extract reads the vector this iteration inserted into.
  Value vector = insertLoop->getResult(fusion.result);
  for (mlir::OpOperand& use : llvm::make_early_inc_range(vector.getUses())) {
    if (extractLoop->isAncestor(use.getOwner())) use.set(fusion.insert.getResult());
  }
  rewriter.mergeBlocks(insertLoop.getBody(), body, insertArgs);
  auto insertYield = llvm::cast<YieldOp>(body->getTerminator());
  rewriter.mergeBlocks(extractLoop.getBody(), body, extractArgs);
  auto extractYield = llvm::cast<YieldOp>(body->getTerminator());
  llvm::SmallVector<Value> yielded(insertYield.getOperands());
  llvm::append_range(yielded, extractYield.getOperands());
  rewriter.eraseOp(insertYield);
  rewriter.setInsertionPoint(extractYield);
  rewriter.replaceOpWithNewOp<YieldOp>(extractYield, yielded);

  rewriter.replaceOp(insertLoop, fused->getResults().take_front(numInInits));
  rewriter.replaceOp(extractLoop, fused->getResults().drop_front(numInInits));
}

class FuseLoopsPass : public impl::FuseLoopsPassBase<FuseLoopsPass> {
 public:
  void runOnOperation() override {
    llvm::SmallVector<mlir::vector::ExtractOp> extracts;
    getOperation().walk([&](mlir::vector::ExtractOp op) { extracts.push_back(op); });
    // Fusing moves the extracts into the fused loop (they stay valid), so
    // one walk sees every pair, also a loop fused again with a third.
    for (mlir::vector::ExtractOp extract : extracts) {
      mlir::FailureOr<Fusion> fusion = fusionOf(extract);
      if (succeeded(fusion)) fuse(*fusion);
    }
  }
};

}  // namespace
}  // namespace xla::gpu
