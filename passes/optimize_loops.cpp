//===- optimize_loops.cpp - -xla-gpu-optimize-loops -----------------------===//

#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/SCF/Utils/Utils.h"
#include "mlir/IR/Matchers.h"
#include "passes/Passes.h"

namespace xla::gpu {

#define GEN_PASS_DEF_OPTIMIZELOOPSPASS
#include "passes/Passes.h.inc"

namespace {

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
      if (!lb || !ub || !step || *step <= 0) continue;
      int64_t trips = *ub > *lb ? (*ub - *lb + *step - 1) / *step : 0;
      if (trips > maxTripCount) continue;
      int64_t ops = 0;
      loop.getBody()->walk([&](mlir::Operation*) { ++ops; });
      // Unrolling trades code size for fewer branches and more scheduling
      // freedom; past a few hundred ops the instruction cache loses.
      if (ops * trips > maxUnrolledOps) continue;
      if (mlir::failed(mlir::loopUnrollFull(loop))) {
        loop.emitError("xla-gpu-optimize-loops: could not unroll the loop");
        signalPassFailure();
        return;
      }
    }
  }
};

}  // namespace
}  // namespace xla::gpu
