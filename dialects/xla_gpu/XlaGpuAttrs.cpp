//===- XlaGpuAttrs.cpp - attributes and types of xla_gpu ------------------===//

#include <string>

#include "dialects/xla_gpu/XlaGpuDialect.h"
#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Support/SMLoc.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"

#include "dialects/xla_gpu/XlaGpuEnums.cpp.inc"
#define GET_ATTRDEF_CLASSES
#include "dialects/xla_gpu/XlaGpuAttrs.cpp.inc"
#define GET_TYPEDEF_CLASSES
#include "dialects/xla_gpu/XlaGpuTypes.cpp.inc"

namespace xla::gpu {

void XlaGpuDialect::registerAttributes() {
  addAttributes<
#define GET_ATTRDEF_LIST
#include "dialects/xla_gpu/XlaGpuAttrs.cpp.inc"
      >();
}

void XlaGpuDialect::registerTypes() {
  addTypes<
#define GET_TYPEDEF_LIST
#include "dialects/xla_gpu/XlaGpuTypes.cpp.inc"
      >();
}

//===----------------------------------------------------------------------===//
// IndexingMapAttr
//===----------------------------------------------------------------------===//

// #xla_gpu.indexing_map<"part" "part" ...>: the parts are concatenated, and
// an error inside the map text points at its exact line and column.
namespace {

// One quoted string or adjacent ones, concatenated, as an indexing map; an
// error inside the map text points at its exact line and column.
IndexingMapAttr parseIndexingMapStrings(mlir::AsmParser& parser) {
  struct Part {
    llvm::SMLoc loc;  // of the opening quote
    size_t start;     // offset of the part in the concatenated text
  };
  llvm::SmallVector<Part> parts;
  std::string text;
  while (true) {
    llvm::SMLoc loc = parser.getCurrentLocation();
    std::string part;
    if (failed(parser.parseOptionalString(&part))) break;
    parts.push_back({loc, text.size()});
    text += part;
  }
  if (parts.empty()) {
    parser.emitError(parser.getCurrentLocation(),
                     "expected the indexing map as a quoted string");
    return {};
  }
  auto locOf = [&](size_t offset) {
    const Part* part = &parts.front();
    for (const Part& p : parts) {
      if (p.start <= offset) part = &p;
    }
    // Escapes inside the string would shift this; indexing maps have none.
    return llvm::SMLoc::getFromPointer(part->loc.getPointer() + 1 +
                                       (offset - part->start));
  };
  std::optional<IndexingMap> map = IndexingMap::parse(
      text, parser.getContext(), [&](size_t offset, const llvm::Twine& msg) {
        parser.emitError(locOf(offset), "invalid indexing map: ") << msg;
      });
  if (!map) return {};
  llvm::SMLoc start = parts.front().loc;
  return IndexingMapAttr::getChecked(
      [&] { return parser.emitError(start); }, parser.getContext(), *map);
}

}  // namespace

// #xla_gpu.indexing_map<"part" "part" ...>: the parts are concatenated.
mlir::Attribute IndexingMapAttr::parse(mlir::AsmParser& parser, mlir::Type) {
  if (parser.parseLess()) return {};
  IndexingMapAttr attr = parseIndexingMapStrings(parser);
  if (!attr || parser.parseGreater()) return {};
  return attr;
}

void IndexingMapAttr::print(mlir::AsmPrinter& printer) const {
  printer << "<\"" << getIndexingMap().toString() << "\">";
}

mlir::LogicalResult IndexingMapAttr::verify(
    llvm::function_ref<mlir::InFlightDiagnostic()> emitError,
    IndexingMap map) {
  return map.verify([&](const llvm::Twine& msg) {
    emitError() << "invalid indexing map: " << msg;
  });
}

//===----------------------------------------------------------------------===//
// LayoutAttr
//===----------------------------------------------------------------------===//

// #xla_gpu.layout<shmem, #xla_gpu.indexing_map<"...">>, or XLA's spelling
// #xla_gpu.layout<"shmem", "..."> (the memory space and the map as strings).
mlir::Attribute LayoutAttr::parse(mlir::AsmParser& parser, mlir::Type) {
  if (parser.parseLess()) return {};
  llvm::SMLoc spaceLoc = parser.getCurrentLocation();
  std::string space;
  if (failed(parser.parseKeywordOrString(&space))) return {};
  std::optional<MemorySpace> memorySpace = symbolizeMemorySpace(space);
  if (!memorySpace) {
    parser.emitError(spaceLoc, "expected the memory space 'registers' or 'shmem', got '")
        << space << "'";
    return {};
  }
  if (parser.parseComma()) return {};
  IndexingMapAttr map;
  // The current token starts there: a quote opens XLA's string form.
  if (parser.getCurrentLocation().getPointer()[0] == '"') {
    map = parseIndexingMapStrings(parser);
    if (!map) return {};
  } else if (parser.parseAttribute(map)) {
    return {};
  }
  if (parser.parseGreater()) return {};
  return LayoutAttr::get(parser.getContext(), *memorySpace, map);
}

void LayoutAttr::print(mlir::AsmPrinter& printer) const {
  printer << '<' << stringifyMemorySpace(getMemorySpace()) << ", "
          << getThreadLayout() << '>';
}

//===----------------------------------------------------------------------===//
// IndexedVectorType
//===----------------------------------------------------------------------===//

// !xla_gpu.indexed_vector<4x2xf32, #indexing_map>
mlir::Type IndexedVectorType::parse(mlir::AsmParser& parser) {
  llvm::SmallVector<int64_t> shape;
  mlir::Type elementType;
  IndexingMapAttr map;
  llvm::SMLoc loc = parser.getCurrentLocation();
  if (parser.parseLess() ||
      parser.parseDimensionList(shape, /*allowDynamic=*/false,
                                /*withTrailingX=*/true) ||
      parser.parseType(elementType) || parser.parseComma() ||
      parser.parseAttribute(map) || parser.parseGreater()) {
    return {};
  }
  return IndexedVectorType::getChecked([&] { return parser.emitError(loc); },
                                       parser.getContext(), shape,
                                       elementType, map);
}

void IndexedVectorType::print(mlir::AsmPrinter& printer) const {
  printer << '<';
  for (int64_t d : getShape()) printer << d << 'x';
  printer << getElementType() << ", " << getIndexingMapAttr() << '>';
}

mlir::LogicalResult IndexedVectorType::verify(
    llvm::function_ref<mlir::InFlightDiagnostic()> emitError,
    llvm::ArrayRef<int64_t> shape, mlir::Type elementType,
    IndexingMapAttr map) {
  for (int64_t d : shape) {
    if (d <= 0) return emitError() << "indexed_vector dimensions must be positive, got " << d;
  }
  if (!elementType.isIntOrIndexOrFloat() &&
      !llvm::isa<mlir::ComplexType>(elementType)) {
    return emitError() << "indexed_vector elements must be integers, floats "
                          "or complex numbers, got "
                       << elementType;
  }
  if (!map) return emitError() << "indexed_vector needs an indexing map";
  return mlir::success();
}

}  // namespace xla::gpu
