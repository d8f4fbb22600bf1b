//===- expand_float_ops.cpp - -xla-gpu-expand-float-ops -------------------===//

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Transforms/Passes.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Transforms/DialectConversion.h"
#include "passes/Passes.h"

namespace xla::gpu {

#define GEN_PASS_DEF_EXPANDFLOATOPSPASS
#include "passes/Passes.h.inc"

namespace {

class ExpandFloatOpsPass : public impl::ExpandFloatOpsPassBase<ExpandFloatOpsPass> {
 public:
  void runOnOperation() override {
    // Upstream's float emulation extends the operands of an op on a narrow
    // type, runs the op in f32 and truncates the result: exactly XLA's
    // rounding after every op. Upstream applies it to arith; math ops (tanh,
    // exp, ...) need the same treatment, so they are made subject to it too.
    mlir::MLIRContext* ctx = &getContext();
    mlir::Builder b(ctx);
    llvm::SmallVector<mlir::Type> narrow = {
        b.getBF16Type(), b.getF16Type(), mlir::Float8E4M3FNType::get(ctx),
        mlir::Float8E5M2Type::get(ctx), mlir::Float8E4M3FNUZType::get(ctx),
        mlir::Float8E5M2FNUZType::get(ctx), mlir::Float8E4M3B11FNUZType::get(ctx)};
    mlir::TypeConverter converter;
    mlir::arith::populateEmulateUnsupportedFloatsConversions(converter, narrow,
                                                             b.getF32Type());
    mlir::ConversionTarget target(*ctx);
    mlir::arith::populateEmulateUnsupportedFloatsLegality(target, converter);
    target.addDynamicallyLegalDialect<mlir::math::MathDialect>(
        [&](mlir::Operation* op) -> std::optional<bool> { return converter.isLegal(op); });
    mlir::RewritePatternSet patterns(ctx);
    mlir::arith::populateEmulateUnsupportedFloatsPatterns(patterns, converter);
    if (failed(mlir::applyPartialConversion(getOperation(), target, std::move(patterns)))) {
      return signalPassFailure();
    }
    // Upstream marks the casts `contract`, which lets canonicalization fold
    // extf(truncf(x)) to x and keep whole chains in f32. XLA rounds after
    // every op: the casts must stay.
    getOperation().walk([&](mlir::arith::ExtFOp op) {
      op.setFastmathAttr(nullptr);
    });
    getOperation().walk([&](mlir::arith::TruncFOp op) {
      op.setFastmathAttr(nullptr);
    });
  }
};

}  // namespace
}  // namespace xla::gpu
