//===- CAPI.cpp - the C API of the xla_gpu plugin -------------------------===//

#include "dialects/xla_gpu/CAPI.h"
#include "dialects/xla_gpu/CAPIMessages.h"

#include <algorithm>
#include <cstring>
#include <mutex>
#include <string>

#include "dialects/xla_gpu/XlaGpuDialect.h"
#include "mlir/CAPI/AffineExpr.h"
#include "mlir/CAPI/AffineMap.h"
#include "mlir/CAPI/IR.h"
#include "mlir/CAPI/Registration.h"
#include "mlir/CAPI/Support.h"
#include "passes/Passes.h"

using xla::gpu::IndexingMap;
using xla::gpu::writeMessage;
using xla::gpu::IndexingMapAttr;
using xla::gpu::IndexingVar;
using xla::gpu::VarKind;

MLIR_DEFINE_CAPI_DIALECT_REGISTRATION(XlaGpu, xla_gpu, xla::gpu::XlaGpuDialect)

static IndexingMapAttr asIndexingMap(MlirAttribute attr) {
  return llvm::cast<IndexingMapAttr>(unwrap(attr));
}

extern "C" {

void xlaGpuRegisterDialects(MlirDialectRegistry registry) {
  xla::gpu::registerXlaGpuDialect(*unwrap(registry));
}

void xlaGpuRegisterPasses(void) {
  static std::once_flag once;
  std::call_once(once, [] {
    xla::gpu::registerXlaGpuPasses();
    xla::gpu::registerXlaGpuTestPipelines();
  });
}

MlirAttribute xlaGpuIndexingMapAttrParse(MlirContext context,
                                         MlirStringRef text, char* error,
                                         size_t errorCapacity,
                                         size_t* errorOffset) {
  mlir::MLIRContext* ctx = unwrap(context);
  ctx->getOrLoadDialect<xla::gpu::XlaGpuDialect>();
  std::optional<IndexingMap> map = IndexingMap::parse(
      unwrap(text), ctx, [&](size_t offset, const llvm::Twine& msg) {
        writeMessage(msg.str(), error, errorCapacity);
        if (errorOffset) *errorOffset = offset;
      });
  if (!map) return MlirAttribute{nullptr};
  std::string verifyError;
  if (failed(map->verify([&](const llvm::Twine& msg) { verifyError = msg.str(); }))) {
    writeMessage(verifyError, error, errorCapacity);
    if (errorOffset) *errorOffset = 0;
    return MlirAttribute{nullptr};
  }
  return wrap(IndexingMapAttr::get(ctx, *map));
}

MlirAttribute xlaGpuIndexingMapAttrGet(
    MlirAffineMap affineMap, intptr_t numRangeVars, const int64_t* bounds,
    const MlirStringRef* names, intptr_t numConstraints,
    const MlirAffineExpr* constraintExprs, const int64_t* constraintBounds,
    char* error, size_t errorCapacity) {
  mlir::AffineMap map = unwrap(affineMap);
  if (numRangeVars < 0 ||
      numRangeVars > static_cast<intptr_t>(map.getNumSymbols())) {
    writeMessage("the number of range variables must be between 0 and the "
               "number of symbols of the map (" +
                   std::to_string(map.getNumSymbols()) + ")",
               error, errorCapacity);
    return MlirAttribute{nullptr};
  }
  map.getContext()->getOrLoadDialect<xla::gpu::XlaGpuDialect>();
  llvm::SmallVector<IndexingVar> dims, range, runtime;
  unsigned total = map.getNumDims() + map.getNumSymbols();
  for (unsigned i = 0; i < total; ++i) {
    IndexingVar var{names ? unwrap(names[i]).str() : std::string(),
                    {bounds[2 * i], bounds[2 * i + 1]}};
    if (i < map.getNumDims()) {
      dims.push_back(var);
    } else if (i < map.getNumDims() + numRangeVars) {
      range.push_back(var);
    } else {
      runtime.push_back(var);
    }
  }
  llvm::SmallVector<IndexingMap::Constraint> constraints;
  for (intptr_t i = 0; i < numConstraints; ++i) {
    constraints.push_back({unwrap(constraintExprs[i]),
                           {constraintBounds[2 * i], constraintBounds[2 * i + 1]}});
  }
  IndexingMap result(map, dims, range, runtime, constraints);
  std::string verifyError;
  if (failed(result.verify([&](const llvm::Twine& msg) { verifyError = msg.str(); }))) {
    writeMessage(verifyError, error, errorCapacity);
    return MlirAttribute{nullptr};
  }
  return wrap(IndexingMapAttr::get(map.getContext(), result));
}

bool xlaGpuAttributeIsAIndexingMap(MlirAttribute attr) {
  return llvm::isa<IndexingMapAttr>(unwrap(attr));
}

MlirAffineMap xlaGpuIndexingMapAttrGetAffineMap(MlirAttribute attr) {
  return wrap(asIndexingMap(attr).getMap());
}

intptr_t xlaGpuIndexingMapAttrGetNumVars(MlirAttribute attr, int kind) {
  const IndexingMap& map = asIndexingMap(attr).getIndexingMap();
  switch (static_cast<VarKind>(kind)) {
    case VarKind::kDimension:
      return map.getNumDims();
    case VarKind::kRange:
      return map.getNumRangeVars();
    case VarKind::kRuntime:
      return map.getNumRuntimeVars();
  }
  return 0;
}

MlirStringRef xlaGpuIndexingMapAttrGetVar(MlirAttribute attr, int kind,
                                          intptr_t index, int64_t* lower,
                                          int64_t* upper) {
  const IndexingVar& var = asIndexingMap(attr).getIndexingMap().getVar(
      static_cast<VarKind>(kind), index);
  *lower = var.bounds.lower;
  *upper = var.bounds.upper;
  // The attribute's storage owns the string; it lives as long as the context.
  return mlirStringRefCreate(var.name.data(), var.name.size());
}

intptr_t xlaGpuIndexingMapAttrGetNumConstraints(MlirAttribute attr) {
  return asIndexingMap(attr).getIndexingMap().getConstraints().size();
}

MlirAffineExpr xlaGpuIndexingMapAttrGetConstraint(MlirAttribute attr,
                                                  intptr_t index,
                                                  int64_t* lower,
                                                  int64_t* upper) {
  const auto& [expr, interval] =
      asIndexingMap(attr).getIndexingMap().getConstraints()[index];
  *lower = interval.lower;
  *upper = interval.upper;
  return wrap(expr);
}

bool xlaGpuIndexingMapAttrEqual(MlirAttribute a, MlirAttribute b) {
  return asIndexingMap(a).getIndexingMap() == asIndexingMap(b).getIndexingMap();
}

// Maps the algebra produces; one whose domain emptied while it was built
// becomes the known-empty form (the attribute's invariants allow no other
// empty range).
static MlirAttribute wrapMap(const IndexingMap& map) {
  if (map.hasEmptyRange()) return wrap(IndexingMapAttr::get(map.getContext(), map.knownEmpty()));
  return wrap(IndexingMapAttr::get(map.getContext(), map));
}

MlirAttribute xlaGpuIndexingMapAttrSimplify(MlirAttribute attr) {
  return wrapMap(asIndexingMap(attr).getIndexingMap().simplify());
}

MlirAttribute xlaGpuIndexingMapAttrCompose(MlirAttribute first,
                                           MlirAttribute second) {
  return wrapMap(IndexingMap::compose(asIndexingMap(first).getIndexingMap(),
                                      asIndexingMap(second).getIndexingMap()));
}

static MlirAttribute wrapOrNull(mlir::FailureOr<IndexingMap> map) {
  if (mlir::failed(map)) return MlirAttribute{nullptr};
  return wrapMap(*map);
}

MlirAttribute xlaGpuIndexingMapAttrWithConstraint(MlirAttribute attr, MlirAffineExpr expr,
                                                  int64_t lower, int64_t upper) {
  return wrapOrNull(asIndexingMap(attr).getIndexingMap().withConstraint(
      unwrap(expr), xla::gpu::Interval{lower, upper}));
}

MlirAttribute xlaGpuIndexingMapAttrWithDimBounds(MlirAttribute attr, intptr_t dim,
                                                 int64_t lower, int64_t upper) {
  if (dim < 0) return MlirAttribute{nullptr};
  return wrapOrNull(asIndexingMap(attr).getIndexingMap().withDimBounds(
      static_cast<unsigned>(dim), xla::gpu::Interval{lower, upper}));
}

MlirAttribute xlaGpuIndexingMapAttrGetSubMap(MlirAttribute attr, intptr_t result) {
  if (result < 0) return MlirAttribute{nullptr};
  return wrapOrNull(
      asIndexingMap(attr).getIndexingMap().getSubMap(static_cast<unsigned>(result)));
}

MlirAttribute xlaGpuIndexingMapAttrConvertSymbolsToDims(MlirAttribute attr) {
  return wrapMap(asIndexingMap(attr).getIndexingMap().convertSymbolsToDims());
}

MlirAttribute xlaGpuIndexingMapAttrRemoveUnusedSymbols(MlirAttribute attr) {
  return wrapMap(asIndexingMap(attr).getIndexingMap().removeUnusedSymbols());
}

MlirAttribute xlaGpuIndexingMapAttrRemoveUnusedDimensions(MlirAttribute attr) {
  return wrapMap(asIndexingMap(attr).getIndexingMap().removeUnusedDimensions());
}

bool xlaGpuIndexingMapAttrIsKnownEmpty(MlirAttribute attr) {
  return asIndexingMap(attr).getIndexingMap().isKnownEmpty();
}

void xlaGpuIndexingMapAttrGetRange(MlirAttribute attr, MlirAffineExpr expr,
                                   int64_t* lower, int64_t* upper) {
  xla::gpu::Interval r = asIndexingMap(attr).getIndexingMap().getRange(unwrap(expr));
  *lower = r.lower;
  *upper = r.upper;
}

void xlaGpuIndexingMapAttrEvaluate(MlirAttribute attr, const int64_t* dims,
                                   const int64_t* symbols, int64_t* results) {
  const IndexingMap& map = asIndexingMap(attr).getIndexingMap();
  auto values = map.evaluate(llvm::ArrayRef(dims, map.getNumDims()),
                             llvm::ArrayRef(symbols, map.getNumSymbols()));
  std::copy(values.begin(), values.end(), results);
}

bool xlaGpuIndexingMapAttrContains(MlirAttribute attr, const int64_t* dims,
                                   const int64_t* symbols) {
  const IndexingMap& map = asIndexingMap(attr).getIndexingMap();
  return map.contains(llvm::ArrayRef(dims, map.getNumDims()),
                      llvm::ArrayRef(symbols, map.getNumSymbols()));
}

int xlaGpuIndexingMapAttrIsBijection(MlirAttribute attr, const int64_t* shape,
                                     intptr_t rank, char* reason,
                                     size_t reasonCapacity) {
  std::string why;
  mlir::FailureOr<bool> result = asIndexingMap(attr).getIndexingMap().isBijection(
      llvm::ArrayRef(shape, rank), why);
  writeMessage(why, reason, reasonCapacity);
  if (failed(result)) return -1;
  return *result ? 1 : 0;
}

}  // extern "C"
