//===- XlaGpuDialect.cpp - dialect registration, asm and inliner hooks ----===//

#include "dialects/xla_gpu/XlaGpuDialect.h"

#include "llvm/ADT/DenseSet.h"
#include "mlir/Dialect/Func/Extensions/InlinerExtension.h"
#include "mlir/IR/DialectImplementation.h"
#include "mlir/Transforms/InliningUtils.h"

#include "dialects/xla_gpu/XlaGpuDialect.cpp.inc"

namespace xla::gpu {
namespace {

// Prints indexing maps as `#indexing_map`, `#indexing_map1`, ... aliases at
// the top of the module, as XLA does: the maps are long and often repeated.
struct XlaGpuOpAsmDialectInterface : public mlir::OpAsmDialectInterface {
  using OpAsmDialectInterface::OpAsmDialectInterface;
  AliasResult getAlias(mlir::Attribute attr,
                       llvm::raw_ostream& os) const final {
    if (llvm::isa<IndexingMapAttr>(attr)) {
      os << "indexing_map";
      return AliasResult::FinalAlias;
    }
    return AliasResult::NoAlias;
  }
};

// XLA's rule for inlining the subgraph functions of a partitioned fusion.
struct XlaGpuInlinerInterface : public mlir::DialectInlinerInterface {
  using DialectInlinerInterface::DialectInlinerInterface;

  // `wouldBeCloned` is false when the callee has this one caller (it is moved,
  // not copied): inline. A callee with several callers stays a function --
  // that is what the partitioner created it for -- unless it is tiny, or the
  // caller already calls what the callee calls (then the copies are likely
  // to CSE away).
  bool isLegalToInline(mlir::Operation* call, mlir::Operation* callable,
                       bool wouldBeCloned) const final {
    if (!wouldBeCloned) return true;
    auto func = llvm::dyn_cast<mlir::func::FuncOp>(callable);
    if (!func || func.isExternal()) return false;
    mlir::Region* body = func.getCallableRegion();
    llvm::SmallDenseSet<llvm::StringRef> calleeCalls;
    for (auto inner : body->getOps<PureCallOp>()) {
      calleeCalls.insert(inner.getCallee());
    }
    for (auto sibling : call->getParentRegion()->getOps<PureCallOp>()) {
      if (calleeCalls.contains(sibling.getCallee())) return true;
    }
    // Small enough that a copy costs less than a call: chosen empirically in
    // XLA (kMaxOperationsToInline).
    constexpr int kMaxOperationsToInline = 8;
    int numOps = 0;
    body->front().walk([&](mlir::Operation*) { ++numOps; });
    return numOps <= kMaxOperationsToInline;
  }

  // Any region may receive xla_gpu ops, and xla_gpu regions may receive any
  // inlined body (the loop body is where the emitters' calls live).
  bool isLegalToInline(mlir::Region*, mlir::Region*, bool,
                       mlir::IRMapping&) const final {
    return true;
  }
  bool isLegalToInline(mlir::Operation*, mlir::Region*, bool,
                       mlir::IRMapping&) const final {
    return true;
  }
};

}  // namespace

void XlaGpuDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "dialects/xla_gpu/XlaGpuOps.cpp.inc"
      >();
  registerAttributes();
  registerTypes();
  addInterfaces<XlaGpuOpAsmDialectInterface, XlaGpuInlinerInterface>();
}

mlir::Operation* XlaGpuDialect::materializeConstant(mlir::OpBuilder& builder,
                                                   mlir::Attribute value,
                                                   mlir::Type type,
                                                   mlir::Location loc) {
  return mlir::arith::ConstantOp::materialize(builder, value, type, loc);
}

void registerXlaGpuDialect(mlir::DialectRegistry& registry) {
  registry.insert<XlaGpuDialect, mlir::arith::ArithDialect,
                  mlir::func::FuncDialect,
                  mlir::tensor::TensorDialect>();
  // pure_call callees are func.func: their bodies inline through func's hooks.
  mlir::func::registerInlinerExtension(registry);
}

}  // namespace xla::gpu
