//===- vectorize_loads_stores.cpp - -xla-gpu-vectorize-loads-stores -------===//

#include <functional>
#include <string>

#include "dialects/xla_gpu/XlaGpuDialect.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/AffineExpr.h"
#include "mlir/IR/Matchers.h"
#include "passes/Passes.h"

namespace xla::gpu {

#define GEN_PASS_DEF_VECTORIZELOADSSTORESPASS
#include "passes/Passes.h.inc"

namespace {

using llvm::SmallVector;
using mlir::Value;

// Widths a single load or store can have (seed 004: 128, 64, 32, 16, 8 bits).
bool isSupportedVectorBits(int64_t bits) {
  return bits == 8 || bits == 16 || bits == 32 || bits == 64 || bits == 128;
}

struct Access {
  ApplyIndexingOp index;   // computes the element index
  unsigned ivOperand;      // which operand of `index` is the induction variable
};

class VectorizeLoadsStoresPass
    : public impl::VectorizeLoadsStoresPassBase<VectorizeLoadsStoresPass> {
 public:
  using VectorizeLoadsStoresPassBase::VectorizeLoadsStoresPassBase;

  void runOnOperation() override {
    // 1. Find scf.for loops from 0 to N (constant) step 1.
    // 2. In each, check every 1-d tensor.extract/insert directly in its body:
    //    index = base + iv, base aligned to N, a supported vector width.
    // 3. Rewrite the extracts into one transfer_read before the loop, and the
    //    inserts into a vector iteration argument written after the loop.
    SmallVector<mlir::scf::ForOp> loops;
    getOperation().walk([&](mlir::scf::ForOp loop) { loops.push_back(loop); });
    for (mlir::scf::ForOp loop : loops) {
      vectorizeLoop(loop);
      // The cache's keys are this loop's ops. Kept, a new op at a freed
      // op's address found the freed op's base index: a pass manager kept
      // parsed (pipelines.compile_context) ran this pass on other IR with
      // the last run's cache (verifier errors and crashes, 1 run in ~10).
      baseCache.clear();
    }
  }

 private:
  void decline(mlir::Operation* op, const llvm::Twine& why) {
    if (remarks) op->emitRemark() << "not vectorized: " << why;
  }

  // Checks that `index` is base + iv with base aligned to `n` and the
  // operands of base defined outside the loop.
  std::optional<Access> analyze(mlir::scf::ForOp loop, Value index, int64_t n,
                                mlir::Operation* user) {
    auto apply = index.getDefiningOp<ApplyIndexingOp>();
    if (!apply || apply->getNumResults() != 1) {
      decline(user, "the index is not computed by an xla_gpu.apply_indexing");
      return std::nullopt;
    }
    const IndexingMap& map = apply.getIndexingMap();
    std::optional<unsigned> ivOperand;
    for (auto [i, v] : llvm::enumerate(apply.getOperands())) {
      if (v == loop.getInductionVar()) {
        ivOperand = i;
      } else if (!loop.isDefinedOutsideOfLoop(v)) {
        decline(user, "the index depends on values computed inside the loop");
        return std::nullopt;
      }
    }
    if (!ivOperand) {
      decline(user, "the index does not depend on the loop's induction variable");
      return std::nullopt;
    }
    mlir::MLIRContext* ctx = loop.getContext();
    unsigned nd = map.getNumDims(), ns = map.getNumSymbols();
    mlir::AffineExpr iv = *ivOperand < nd
                              ? mlir::getAffineDimExpr(*ivOperand, ctx)
                              : mlir::getAffineSymbolExpr(*ivOperand - nd, ctx);
    mlir::AffineExpr zero = mlir::getAffineConstantExpr(0, ctx);
    // Whether `e` is a multiple of n on the whole domain.
    auto isMultiple = [&](mlir::AffineExpr e) {
      IndexingMap rem(mlir::AffineMap::get(nd, ns, e % n, ctx),
                      llvm::to_vector(map.getDimVars()), llvm::to_vector(map.getRangeVars()),
                      llvm::to_vector(map.getRuntimeVars()));
      auto c = llvm::dyn_cast<mlir::AffineConstantExpr>(rem.simplify().getAffineMap().getResult(0));
      return c && c.getValue() == 0;
    };
    // XLA's rewrite before the test: (X + iv) mod m with X a multiple of n
    // and m of n is (X mod m) + iv (X mod m is a multiple of n below m, so
    // adding iv < n does not wrap), e.g. (d0 * 4 + iv) mod 64 is
    // (d0 mod 16) * 4 + iv.
    std::function<mlir::AffineExpr(mlir::AffineExpr)> distributeMod =
        [&](mlir::AffineExpr e) -> mlir::AffineExpr {
      auto bin = llvm::dyn_cast<mlir::AffineBinaryOpExpr>(e);
      if (!bin) return e;
      mlir::AffineExpr lhs = distributeMod(bin.getLHS());
      mlir::AffineExpr rhs = distributeMod(bin.getRHS());
      auto m = llvm::dyn_cast<mlir::AffineConstantExpr>(rhs);
      if (e.getKind() == mlir::AffineExprKind::Mod && m && m.getValue() % n == 0) {
        mlir::AffineExpr rest = lhs.replace(iv, zero);
        if (mlir::simplifyAffineExpr(lhs - rest, nd, ns) == iv && isMultiple(rest)) {
          return rest % m + iv;
        }
      }
      return mlir::getAffineBinaryOpExpr(e.getKind(), lhs, rhs);
    };
    mlir::AffineExpr expr = distributeMod(map.getAffineMap().getResult(0));
    mlir::AffineExpr base = expr.replace(iv, zero);
    // Contiguous: expr - base is exactly iv.
    mlir::AffineExpr diff = mlir::simplifyAffineExpr(expr - base, nd, ns);
    if (diff != iv) {
      decline(user, "the index is not contiguous in the induction variable");
      return std::nullopt;
    }
    // Aligned: base mod n is 0 on the whole domain.
    if (!isMultiple(base)) {
      decline(user, "the base index is not a multiple of the vector size " +
                        llvm::Twine(n));
      return std::nullopt;
    }
    return Access{apply, *ivOperand};
  }

  // The index at iv = 0, computed before the loop (once per index op, so a
  // load and a store of the same element share it).
  Value baseIndex(mlir::OpBuilder& b, mlir::scf::ForOp loop, Access access) {
    if (Value cached = baseCache.lookup(access.index.getOperation())) return cached;
    SmallVector<Value> operands(access.index.getOperands());
    operands[access.ivOperand] = loop.getLowerBound();
    const IndexingMap& map = access.index.getIndexingMap();
    Value base = b.create<ApplyIndexingOp>(
                      access.index.getLoc(),
                      llvm::ArrayRef<Value>(operands).take_front(map.getNumDims()),
                      llvm::ArrayRef<Value>(operands).drop_front(map.getNumDims()),
                      access.index.getIndexingMapAttr())
                     .getResult(0);
    baseCache[access.index.getOperation()] = base;
    return base;
  }

  // Each index op's base index in the loop being vectorized.
  llvm::DenseMap<mlir::Operation*, Value> baseCache;

  void vectorizeLoop(mlir::scf::ForOp loop) {
    auto lb = mlir::getConstantIntValue(loop.getLowerBound());
    auto ub = mlir::getConstantIntValue(loop.getUpperBound());
    auto step = mlir::getConstantIntValue(loop.getStep());
    if (!lb || !ub || !step || *lb != 0 || *step != 1 || *ub <= 1) return;
    int64_t n = *ub;
    mlir::Block* body = loop.getBody();
    auto yield = llvm::cast<mlir::scf::YieldOp>(body->getTerminator());
    mlir::OpBuilder b(loop);

    // Loads.
    for (auto extract : llvm::to_vector(body->getOps<mlir::tensor::ExtractOp>())) {
      auto type = extract.getTensor().getType();
      if (!type.getElementType().isIntOrFloat() || type.getElementTypeBitWidth() < 8) {
        decline(extract, "the elements are not integers or floats of a byte or more");
        continue;
      }
      int64_t bits = n * type.getElementTypeBitWidth();
      if (type.getRank() != 1) {
        decline(extract, "the tensor is not flat (run -xla-gpu-flatten-tensors first)");
        continue;
      }
      if (!isSupportedVectorBits(bits)) {
        decline(extract, "a vector of " + llvm::Twine(n) + " elements would be " +
                             llvm::Twine(bits) + " bits, not 8, 16, 32, 64 or 128");
        continue;
      }
      if (!loop.isDefinedOutsideOfLoop(extract.getTensor())) {
        decline(extract, "the tensor is not defined outside the loop");
        continue;
      }
      auto access = analyze(loop, extract.getIndices()[0], n, extract);
      if (!access) continue;
      b.setInsertionPoint(loop);
      Value base = baseIndex(b, loop, *access);
      auto vecType = mlir::VectorType::get({n}, type.getElementType());
      Value pad = b.create<mlir::arith::ConstantOp>(
          extract.getLoc(), b.getZeroAttr(type.getElementType()));
      Value vec = b.create<mlir::vector::TransferReadOp>(
          extract.getLoc(), vecType, extract.getTensor(), mlir::ValueRange{base}, pad,
          llvm::ArrayRef<bool>{true});
      b.setInsertionPoint(extract);
      Value element = b.create<mlir::vector::ExtractOp>(
          extract.getLoc(), vec, mlir::ArrayRef<mlir::OpFoldResult>{loop.getInductionVar()});
      extract.replaceAllUsesWith(element);
      extract.erase();
    }

    // Stores: tensor.insert into an iteration argument, yielded as is.
    for (auto insert : llvm::to_vector(body->getOps<mlir::tensor::InsertOp>())) {
      auto type = insert.getDest().getType();
      if (!type.getElementType().isIntOrFloat() || type.getElementTypeBitWidth() < 8) {
        decline(insert, "the elements are not integers or floats of a byte or more");
        continue;
      }
      int64_t bits = n * type.getElementTypeBitWidth();
      auto iterArg = llvm::dyn_cast<mlir::BlockArgument>(insert.getDest());
      if (type.getRank() != 1 || !iterArg || iterArg.getOwner() != body ||
          iterArg.getArgNumber() == 0 || !insert->hasOneUse() ||
          *insert->getUsers().begin() != yield.getOperation() ||
          yield.getOperand(iterArg.getArgNumber() - 1) != insert.getResult() ||
          !iterArg.hasOneUse()) {
        decline(insert, "the insert is not into an iteration argument that the loop "
                        "yields right away");
        continue;
      }
      if (!isSupportedVectorBits(bits)) {
        decline(insert, "a vector of " + llvm::Twine(n) + " elements would be " +
                            llvm::Twine(bits) + " bits, not 8, 16, 32, 64 or 128");
        continue;
      }
      auto access = analyze(loop, insert.getIndices()[0], n, insert);
      if (!access) continue;
      unsigned resultIndex = iterArg.getArgNumber() - 1;
      auto vecType = mlir::VectorType::get({n}, type.getElementType());
      b.setInsertionPoint(loop);
      Value base = baseIndex(b, loop, *access);
      Value zero = b.create<mlir::arith::ConstantOp>(
          insert.getLoc(), mlir::DenseElementsAttr::get(
                               vecType, b.getZeroAttr(type.getElementType())));
      // A new loop with one more iteration argument: the vector.
      SmallVector<Value> inits(loop.getInitArgs());
      inits.push_back(zero);
      auto newLoop = b.create<mlir::scf::ForOp>(loop.getLoc(), loop.getLowerBound(),
                                                loop.getUpperBound(), loop.getStep(), inits);
      mlir::Block* newBody = newLoop.getBody();
      newBody->getOperations().splice(newBody->begin(), body->getOperations());
      for (auto [oldArg, newArg] : llvm::zip(body->getArguments(),
                                             newBody->getArguments().drop_back())) {
        oldArg.replaceAllUsesWith(newArg);
      }
      Value vecArg = newBody->getArguments().back();
      b.setInsertionPoint(insert);
      Value updated = b.create<mlir::vector::InsertOp>(
          insert.getLoc(), insert.getScalar(), vecArg,
          mlir::ArrayRef<mlir::OpFoldResult>{newLoop.getInductionVar()});
      auto newYield = llvm::cast<mlir::scf::YieldOp>(newBody->getTerminator());
      SmallVector<Value> yielded(newYield.getOperands());
      yielded[resultIndex] = newBody->getArgument(iterArg.getArgNumber());
      yielded.push_back(updated);
      b.setInsertionPoint(newYield);
      b.create<mlir::scf::YieldOp>(newYield.getLoc(), yielded);
      newYield.erase();
      insert.erase();
      b.setInsertionPointAfter(newLoop);
      Value written = b.create<mlir::vector::TransferWriteOp>(
                           loop.getLoc(), newLoop.getResults().back(),
                           newLoop.getResult(resultIndex), mlir::ValueRange{base},
                           llvm::ArrayRef<bool>{true})
                          .getResult();
      for (unsigned i = 0; i < loop.getNumResults(); ++i) {
        loop.getResult(i).replaceAllUsesWith(i == resultIndex ? written
                                                              : newLoop.getResult(i));
      }
      loop.erase();
      loop = newLoop;
      body = newBody;
      yield = llvm::cast<mlir::scf::YieldOp>(body->getTerminator());
    }
  }
};

}  // namespace
}  // namespace xla::gpu
