//===- XlaGpuOps.cpp - verifiers, syntax, folders of the xla_gpu ops ------===//

#include <cstdint>
#include <optional>

#include "dialects/xla_gpu/XlaGpuDialect.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallBitVector.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/IR/PatternMatch.h"

namespace xla::gpu {

using llvm::SmallVector;
using mlir::failure;
using mlir::LogicalResult;
using mlir::success;
using mlir::Value;

//===----------------------------------------------------------------------===//
// Shared helpers
//===----------------------------------------------------------------------===//

// custom<IndexingMapRef>: the full `#xla_gpu.indexing_map<...>` (or its
// alias), never the dialect-stripped form.
static mlir::ParseResult parseIndexingMapRef(mlir::OpAsmParser& parser,
                                             IndexingMapAttr& map) {
  return parser.parseAttribute(map);
}

static void printIndexingMapRef(mlir::OpAsmPrinter& printer, mlir::Operation*,
                                IndexingMapAttr map) {
  printer.printAttribute(map);
}

// Checks that `symbol` names a func.func with the given signature.
static LogicalResult verifyCallee(mlir::Operation* op,
                                  mlir::SymbolTableCollection& symbolTable,
                                  mlir::FlatSymbolRefAttr symbol,
                                  mlir::TypeRange inputs,
                                  mlir::TypeRange results,
                                  llvm::StringRef role) {
  auto func = symbolTable.lookupNearestSymbolFrom<mlir::func::FuncOp>(op, symbol);
  if (!func) {
    return op->emitOpError() << "'" << symbol.getValue()
                             << "' does not reference a valid function";
  }
  mlir::FunctionType type = func.getFunctionType();
  if (mlir::TypeRange(type.getInputs()) != inputs ||
      mlir::TypeRange(type.getResults()) != results) {
    return op->emitOpError()
           << role << " '" << symbol.getValue() << "' has type " << type
           << ", expected "
           << mlir::FunctionType::get(op->getContext(), inputs, results);
  }
  return success();
}

static std::optional<int64_t> getConstantIndex(Value v) {
  llvm::APInt value;
  if (mlir::matchPattern(v, mlir::m_ConstantInt(&value))) {
    return value.getSExtValue();
  }
  return std::nullopt;
}

//===----------------------------------------------------------------------===//
// AllocateSharedOp
//===----------------------------------------------------------------------===//

void AllocateSharedOp::getAsmResultNames(
    llvm::function_ref<void(Value, llvm::StringRef)> setNameFn) {
  setNameFn(getResult(), "shmem");
}

//===----------------------------------------------------------------------===//
// AtomicRMWOp
//===----------------------------------------------------------------------===//

void AtomicRMWOp::getAsmResultNames(
    llvm::function_ref<void(Value, llvm::StringRef)> setNameFn) {
  setNameFn(getResult(), "atomic_rmw");
}

// The yield ending `block`, or null (an empty block, or one whose last op
// is something else: getTerminator() would assert on it).
static YieldOp endingYield(mlir::Block* block) {
  if (!block || block->empty()) return nullptr;
  return llvm::dyn_cast<YieldOp>(block->back());
}

LogicalResult AtomicRMWOp::verify() {
  auto type = llvm::cast<mlir::RankedTensorType>(getInput().getType());
  if (static_cast<int64_t>(getIndices().size()) != type.getRank()) {
    return emitOpError() << "expected " << type.getRank()
                         << " indices for a tensor of rank " << type.getRank()
                         << ", got " << getIndices().size();
  }
  mlir::Block* body = getBody();
  if (body->getNumArguments() != 1 ||
      body->getArgument(0).getType() != type.getElementType()) {
    return emitOpError() << "expected the region to take one argument of the "
                            "element type "
                         << type.getElementType();
  }
  YieldOp yield = endingYield(body);
  if (!yield || yield.getResult().size() != 1 ||
      yield.getResult()[0].getType() != type.getElementType()) {
    return emitOpError() << "expected the region to yield one value of the "
                            "element type "
                         << type.getElementType();
  }
  return success();
}

mlir::OpFoldResult AtomicRMWOp::fold(FoldAdaptor) {
  // Yielding the current value unchanged writes nothing.
  YieldOp yield = endingYield(getBody());
  if (yield && yield.getResult().size() == 1 &&
      yield.getResult()[0] == getBody()->getArgument(0)) {
    return getInput();
  }
  return {};
}

//===----------------------------------------------------------------------===//
// PureCallOp
//===----------------------------------------------------------------------===//

void PureCallOp::getAsmResultNames(
    llvm::function_ref<void(Value, llvm::StringRef)> setNameFn) {
  for (Value result : getResults()) setNameFn(result, "pure_call");
}

LogicalResult PureCallOp::verifySymbolUses(
    mlir::SymbolTableCollection& symbolTable) {
  return verifyCallee(*this, symbolTable, getCalleeAttr(),
                      getOperands().getTypes(), getResultTypes(), "callee");
}

//===----------------------------------------------------------------------===//
// ShuffleReduceOp
//===----------------------------------------------------------------------===//

LogicalResult ShuffleReduceOp::verify() {
  int64_t distance = getMaxDistance();
  if (!llvm::isPowerOf2_64(distance) || distance > 16) {
    return emitOpError() << "max_distance must be a power of two no larger "
                            "than 16 (half a warp), got "
                         << distance;
  }
  if (getOperands().empty()) return emitOpError() << "expected operands";
  return success();
}

LogicalResult ShuffleReduceOp::verifySymbolUses(
    mlir::SymbolTableCollection& symbolTable) {
  SmallVector<mlir::Type> inputs(getOperands().getTypes());
  inputs.append(inputs);
  return verifyCallee(*this, symbolTable, getCombinerAttr(), inputs,
                      getOperands().getTypes(), "combiner");
}

//===----------------------------------------------------------------------===//
// ReduceOp
//===----------------------------------------------------------------------===//

// (%in0, %in1) inits(%i0, %i1) dimensions=[0, 2] combiner=@add {attrs}
//   : tensor<...>, tensor<...> to tensor<...>, tensor<...>
mlir::ParseResult ReduceOp::parse(mlir::OpAsmParser& parser,
                                  mlir::OperationState& result) {
  SmallVector<mlir::OpAsmParser::UnresolvedOperand> inputs, inits;
  SmallVector<mlir::Type> inputTypes, resultTypes;
  mlir::DenseI64ArrayAttr dimensions;
  mlir::FlatSymbolRefAttr combiner;
  llvm::SMLoc loc = parser.getCurrentLocation();
  if (parser.parseOperandList(inputs, mlir::AsmParser::Delimiter::Paren) ||
      parser.parseKeyword("inits") ||
      parser.parseOperandList(inits, mlir::AsmParser::Delimiter::Paren) ||
      parser.parseKeyword("dimensions") || parser.parseEqual() ||
      parser.parseCustomAttributeWithFallback(dimensions) ||
      parser.parseKeyword("combiner") || parser.parseEqual() ||
      parser.parseAttribute(combiner) ||
      parser.parseOptionalAttrDict(result.attributes) ||
      parser.parseColonTypeList(inputTypes) || parser.parseKeyword("to") ||
      parser.parseTypeList(resultTypes)) {
    return failure();
  }
  if (inputs.size() != inputTypes.size()) {
    return parser.emitError(loc) << "expected " << inputs.size()
                                 << " input types, got " << inputTypes.size();
  }
  SmallVector<mlir::Type> initTypes;
  for (mlir::Type t : inputTypes) {
    auto shaped = llvm::dyn_cast<mlir::ShapedType>(t);
    if (!shaped) return parser.emitError(loc) << "expected tensor inputs, got " << t;
    initTypes.push_back(shaped.getElementType());
  }
  if (inits.size() != initTypes.size()) {
    return parser.emitError(loc) << "expected one init per input";
  }
  result.addAttribute("dimensions", dimensions);
  result.addAttribute("combiner", combiner);
  result.addTypes(resultTypes);
  return mlir::failure(
      parser.resolveOperands(inputs, inputTypes, loc, result.operands) ||
      parser.resolveOperands(inits, initTypes, loc, result.operands));
}

void ReduceOp::print(mlir::OpAsmPrinter& p) {
  // As XLA prints it: `xla_gpu.reduce(%in) inits(%init) ...`.
  p << "(" << getInputs() << ") inits(" << getInits() << ") dimensions=";
  p.printStrippedAttrOrType(getDimensionsAttr());
  p << " combiner=" << getCombinerAttr();
  p.printOptionalAttrDict((*this)->getAttrs(), {"dimensions", "combiner"});
  p << " : " << getInputs().getTypes() << " to " << getResultTypes();
}

LogicalResult ReduceOp::verify() {
  if (getInputs().empty()) return emitOpError() << "expected at least one input";
  auto first = llvm::cast<mlir::RankedTensorType>(getInputs()[0].getType());
  llvm::ArrayRef<int64_t> dims = getDimensions();
  llvm::SmallBitVector reduced(first.getRank());
  for (auto [i, d] : llvm::enumerate(dims)) {
    if (d < 0 || d >= first.getRank()) {
      return emitOpError() << "reduction dimension " << d
                           << " is out of range for rank " << first.getRank();
    }
    if (i > 0 && dims[i - 1] >= d) {
      return emitOpError() << "dimensions must be strictly increasing";
    }
    reduced.set(d);
  }
  SmallVector<int64_t> resultShape;
  for (int64_t i = 0; i < first.getRank(); ++i) {
    if (!reduced.test(i)) resultShape.push_back(first.getDimSize(i));
  }
  if (getResults().size() != getInputs().size()) {
    return emitOpError() << "expected " << getInputs().size() << " results, got "
                         << getResults().size();
  }
  for (auto [input, init, result] :
       llvm::zip(getInputs(), getInits(), getResults())) {
    auto inType = llvm::cast<mlir::RankedTensorType>(input.getType());
    if (inType.getShape() != first.getShape()) {
      return emitOpError() << "all inputs must have the same shape";
    }
    auto resType = llvm::cast<mlir::RankedTensorType>(result.getType());
    if (resType.getShape() != llvm::ArrayRef(resultShape) ||
        resType.getElementType() != inType.getElementType()) {
      return emitOpError() << "result type " << resType
                           << " does not match input " << inType
                           << " reduced along [" << dims << "]";
    }
    if (init.getType() != inType.getElementType()) {
      return emitOpError() << "init type " << init.getType()
                           << " does not match element type "
                           << inType.getElementType();
    }
  }
  return success();
}

LogicalResult ReduceOp::verifySymbolUses(
    mlir::SymbolTableCollection& symbolTable) {
  SmallVector<mlir::Type> inputs(getInits().getTypes());
  inputs.append(SmallVector<mlir::Type>(getInits().getTypes()));
  return verifyCallee(*this, symbolTable, getCombinerAttr(), inputs,
                      getInits().getTypes(), "combiner");
}

//===----------------------------------------------------------------------===//
// ApplyIndexingOp
//===----------------------------------------------------------------------===//

void ApplyIndexingOp::build(mlir::OpBuilder& builder,
                            mlir::OperationState& result,
                            mlir::ValueRange dims, mlir::ValueRange symbols,
                            IndexingMapAttr map) {
  result.addOperands(dims);
  result.addOperands(symbols);
  result.addAttribute("indexing_map_attr", map);
  result.addTypes(SmallVector<mlir::Type>(map.getIndexingMap().getNumResults(),
                                          builder.getIndexType()));
}

// #map(%d0, %d1)[%s0] {attrs}
mlir::ParseResult ApplyIndexingOp::parse(mlir::OpAsmParser& parser,
                                         mlir::OperationState& result) {
  mlir::Builder& b = parser.getBuilder();
  IndexingMapAttr map;
  llvm::SMLoc loc = parser.getCurrentLocation();
  SmallVector<mlir::OpAsmParser::UnresolvedOperand> dims, symbols;
  if (parser.parseAttribute(map, "indexing_map_attr", result.attributes) ||
      parser.parseOperandList(dims, mlir::AsmParser::Delimiter::OptionalParen) ||
      parser.parseOperandList(symbols,
                              mlir::AsmParser::Delimiter::OptionalSquare) ||
      parser.parseOptionalAttrDict(result.attributes)) {
    return failure();
  }
  const IndexingMap& m = map.getIndexingMap();
  // As XLA: the ( ) and [ ] groups are concatenated; only their total must
  // match the map's dimensions and symbols.
  if (dims.size() + symbols.size() != m.getNumDims() + m.getNumSymbols()) {
    return parser.emitError(loc)
           << "the indexing map takes " << m.getNumDims() << " dimensions and "
           << m.getNumSymbols() << " symbols (" << m.getNumDims() + m.getNumSymbols()
           << " operands), got " << dims.size() + symbols.size();
  }
  if (parser.resolveOperands(dims, b.getIndexType(), result.operands) ||
      parser.resolveOperands(symbols, b.getIndexType(), result.operands)) {
    return failure();
  }
  result.addTypes(SmallVector<mlir::Type>(m.getNumResults(), b.getIndexType()));
  return success();
}

void ApplyIndexingOp::print(mlir::OpAsmPrinter& p) {
  const IndexingMap& map = getIndexingMap();
  p << ' ';
  p.printAttribute(getIndexingMapAttr());
  auto operands = getOperands();
  if (map.getNumDims() > 0) {
    p << '(' << operands.take_front(map.getNumDims()) << ')';
  }
  if (map.getNumSymbols() > 0) {
    p << '[' << operands.drop_front(map.getNumDims()) << ']';
  }
  p.printOptionalAttrDict((*this)->getAttrs(), {"indexing_map_attr"});
}

LogicalResult ApplyIndexingOp::verify() {
  const IndexingMap& map = getIndexingMap();
  if (getNumOperands() != map.getNumDims() + map.getNumSymbols()) {
    return emitOpError() << "the indexing map takes "
                         << map.getNumDims() + map.getNumSymbols()
                         << " operands, got " << getNumOperands();
  }
  if (getNumResults() != map.getNumResults()) {
    return emitOpError() << "the indexing map has " << map.getNumResults()
                         << " results, the op " << getNumResults();
  }
  // XLA's rule: the op computes the results at any point; a domain cut by
  // constraints is for the loops and checks around it.
  if (!map.getConstraints().empty()) {
    return emitOpError() << "apply indexing op cannot have any constraints (the map has "
                         << map.getConstraints().size() << ")";
  }
  return success();
}

// Substitutes the constant operands into the map.
static mlir::AffineMap substituteConstants(ApplyIndexingOp op,
                                           llvm::ArrayRef<mlir::Attribute> operands,
                                           bool& anyConstant) {
  const IndexingMap& map = op.getIndexingMap();
  mlir::MLIRContext* ctx = op.getContext();
  SmallVector<mlir::AffineExpr> dims, symbols;
  anyConstant = false;
  for (auto [i, attr] : llvm::enumerate(operands)) {
    mlir::AffineExpr replacement;
    if (auto c = llvm::dyn_cast_if_present<mlir::IntegerAttr>(attr)) {
      replacement = mlir::getAffineConstantExpr(c.getInt(), ctx);
      anyConstant = true;
    } else if (i < map.getNumDims()) {
      replacement = mlir::getAffineDimExpr(i, ctx);
    } else {
      replacement = mlir::getAffineSymbolExpr(i - map.getNumDims(), ctx);
    }
    (i < map.getNumDims() ? dims : symbols).push_back(replacement);
  }
  return map.getAffineMap().replaceDimsAndSymbols(
      dims, symbols, map.getNumDims(), map.getNumSymbols());
}

LogicalResult ApplyIndexingOp::fold(FoldAdaptor adaptor,
                                    llvm::SmallVectorImpl<mlir::OpFoldResult>& results) {
  bool anyConstant;
  mlir::AffineMap substituted =
      substituteConstants(*this, adaptor.getOperands(), anyConstant);
  const IndexingMap& map = getIndexingMap();
  bool changed = false;
  for (auto [i, expr] : llvm::enumerate(substituted.getResults())) {
    if (auto c = llvm::dyn_cast<mlir::AffineConstantExpr>(expr)) {
      results.push_back(mlir::IntegerAttr::get(
          mlir::IndexType::get(getContext()), c.getValue()));
      changed = true;
    } else if (auto d = llvm::dyn_cast<mlir::AffineDimExpr>(expr)) {
      results.push_back(getOperand(d.getPosition()));
      changed = true;
    } else if (auto s = llvm::dyn_cast<mlir::AffineSymbolExpr>(expr)) {
      results.push_back(getOperand(map.getNumDims() + s.getPosition()));
      changed = true;
    } else {
      results.push_back(getResult(i));
    }
  }
  // Folding must replace every result or none; a partial fold is done by the
  // canonicalization pattern below.
  bool all = llvm::all_of(llvm::enumerate(results), [&](auto it) {
    auto v = llvm::dyn_cast_if_present<Value>(it.value());
    return !v || v != getResult(it.index());
  });
  if (!changed || !all) {
    results.clear();
    return failure();
  }
  return success();
}

namespace {

// apply_indexing #map(%c4, %x) -> apply_indexing #map'(%x): constant operands
// move into the map, and unused operands are dropped.
struct FoldApplyIndexingOperands
    : public mlir::OpRewritePattern<ApplyIndexingOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(ApplyIndexingOp op,
                                mlir::PatternRewriter& rewriter) const override {
    const IndexingMap& map = op.getIndexingMap();
    // Constraints would need the same substitution; maps from loops carry
    // them, maps from apply_indexing as emitted have none.
    if (!map.getConstraints().empty()) {
      return rewriter.notifyMatchFailure(op, "map has constraints");
    }
    SmallVector<mlir::Attribute> constants;
    for (Value v : op.getOperands()) {
      std::optional<int64_t> c = getConstantIndex(v);
      constants.push_back(c ? rewriter.getIndexAttr(*c) : mlir::Attribute());
    }
    bool anyConstant;
    mlir::AffineMap substituted = substituteConstants(op, constants, anyConstant);
    llvm::SmallBitVector used(op.getNumOperands());
    for (mlir::AffineExpr e : substituted.getResults()) {
      e.walk([&](mlir::AffineExpr sub) {
        if (auto d = llvm::dyn_cast<mlir::AffineDimExpr>(sub)) used.set(d.getPosition());
        if (auto s = llvm::dyn_cast<mlir::AffineSymbolExpr>(sub)) {
          used.set(map.getNumDims() + s.getPosition());
        }
      });
    }
    if (used.all()) return rewriter.notifyMatchFailure(op, "nothing to fold");
    // Renumber the variables that stay.
    SmallVector<mlir::AffineExpr> dimRepl, symRepl;
    SmallVector<IndexingVar> dims, range, runtime;
    SmallVector<Value> dimOperands, symOperands;
    for (unsigned i = 0; i < op.getNumOperands(); ++i) {
      bool isDim = i < map.getNumDims();
      if (!used.test(i)) {
        (isDim ? dimRepl : symRepl).push_back(rewriter.getAffineConstantExpr(0));
        continue;
      }
      if (isDim) {
        dimRepl.push_back(rewriter.getAffineDimExpr(dims.size()));
        dims.push_back(map.getDimVars()[i]);
        dimOperands.push_back(op.getOperand(i));
        continue;
      }
      unsigned s = i - map.getNumDims();
      symOperands.push_back(op.getOperand(i));
      if (s < map.getNumRangeVars()) {
        range.push_back(map.getRangeVars()[s]);
      } else {
        runtime.push_back(map.getRuntimeVars()[s - map.getNumRangeVars()]);
      }
      symRepl.push_back(rewriter.getAffineSymbolExpr(symOperands.size() - 1));
    }
    // Runtime variables must stay after the range ones; symRepl is in operand
    // order, which already has range vars first.
    mlir::AffineMap newMap = substituted.replaceDimsAndSymbols(
        dimRepl, symRepl, dims.size(), range.size() + runtime.size());
    IndexingMap newIndexing(newMap, dims, range, runtime);
    auto attr = IndexingMapAttr::get(op.getContext(), newIndexing);
    rewriter.replaceOpWithNewOp<ApplyIndexingOp>(op, dimOperands, symOperands,
                                                 attr);
    return success();
  }
};

// apply_indexing #m(%a)  with %a = apply_indexing #p(%x)[%y]
//   -> apply_indexing #m'(%x)[%y]
// The producer's result expression replaces the variable; its operands join
// the consumer's (dims as dims, symbols as symbols), shared values once.
struct FoldApplyIndexingChains : public mlir::OpRewritePattern<ApplyIndexingOp> {
  using OpRewritePattern::OpRewritePattern;

  mlir::LogicalResult matchAndRewrite(ApplyIndexingOp op,
                                      mlir::PatternRewriter& rewriter) const override {
    const IndexingMap& map = op.getIndexingMap();
    if (!map.getConstraints().empty() || map.getNumRuntimeVars() != 0) {
      return rewriter.notifyMatchFailure(op, "only plain maps are folded");
    }
    auto producerOf = [&](Value v) -> ApplyIndexingOp {
      auto p = v.getDefiningOp<ApplyIndexingOp>();
      if (!p) return nullptr;
      const IndexingMap& pm = p.getIndexingMap();
      if (!pm.getConstraints().empty() || pm.getNumRuntimeVars() != 0) return nullptr;
      return p;
    };
    if (llvm::none_of(op.getOperands(), [&](Value v) { return producerOf(v); })) {
      return rewriter.notifyMatchFailure(op, "no operand comes from apply_indexing");
    }
    mlir::MLIRContext* ctx = op.getContext();
    SmallVector<Value> dimOperands, symOperands;
    SmallVector<IndexingVar> dims, syms;
    auto addVar = [&](Value v, const IndexingVar& var, bool isDim) -> mlir::AffineExpr {
      auto& operands = isDim ? dimOperands : symOperands;
      auto& vars = isDim ? dims : syms;
      for (auto [i, existing] : llvm::enumerate(operands)) {
        if (existing == v) {
          vars[i].bounds.lower = std::max(vars[i].bounds.lower, var.bounds.lower);
          vars[i].bounds.upper = std::min(vars[i].bounds.upper, var.bounds.upper);
          return isDim ? rewriter.getAffineDimExpr(i) : rewriter.getAffineSymbolExpr(i);
        }
      }
      operands.push_back(v);
      vars.push_back({"", var.bounds});
      return isDim ? rewriter.getAffineDimExpr(operands.size() - 1)
                   : rewriter.getAffineSymbolExpr(operands.size() - 1);
    };
    // The expression that replaces each of the consumer's variables.
    SmallVector<mlir::AffineExpr> repl(op.getNumOperands());
    for (auto [i, v] : llvm::enumerate(op.getOperands())) {
      bool isDim = i < map.getNumDims();
      const IndexingVar& var = isDim ? map.getDimVars()[i]
                                     : map.getRangeVars()[i - map.getNumDims()];
      if (auto p = producerOf(v)) {
        const IndexingMap& pm = p.getIndexingMap();
        SmallVector<mlir::AffineExpr> pd, ps;
        for (unsigned k = 0; k < pm.getNumDims(); ++k) {
          pd.push_back(addVar(p.getOperand(k), pm.getDimVars()[k], /*isDim=*/true));
        }
        for (unsigned k = 0; k < pm.getNumSymbols(); ++k) {
          ps.push_back(addVar(p.getOperand(pm.getNumDims() + k), pm.getRangeVars()[k],
                              /*isDim=*/false));
        }
        unsigned r = llvm::cast<mlir::OpResult>(v).getResultNumber();
        repl[i] = pm.getAffineMap().getResult(r).replaceDimsAndSymbols(pd, ps);
      } else {
        repl[i] = addVar(v, var, isDim);
      }
    }
    SmallVector<mlir::AffineExpr> dimRepl(repl.begin(), repl.begin() + map.getNumDims());
    SmallVector<mlir::AffineExpr> symRepl(repl.begin() + map.getNumDims(), repl.end());
    SmallVector<mlir::AffineExpr> results;
    for (mlir::AffineExpr e : map.getAffineMap().getResults()) {
      results.push_back(e.replaceDimsAndSymbols(dimRepl, symRepl));
    }
    auto affine = mlir::AffineMap::get(dims.size(), syms.size(), results, ctx);
    IndexingMap folded = IndexingMap(affine, dims, syms, {}).simplify();
    rewriter.replaceOpWithNewOp<ApplyIndexingOp>(op, dimOperands, symOperands,
                                                 IndexingMapAttr::get(ctx, folded));
    return mlir::success();
  }
};

// XLA's SimplifyIndexingMap: the map simplified by its variables' ranges
// (`d0 mod 16` with d0 in [0, 9] is d0; the fold then takes it).
struct SimplifyApplyIndexingMap : public mlir::OpRewritePattern<ApplyIndexingOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(ApplyIndexingOp op,
                                mlir::PatternRewriter& rewriter) const override {
    const IndexingMap& map = op.getIndexingMap();
    IndexingMap simplified = map.simplify();
    if (simplified == map || simplified.isKnownEmpty()) {
      return rewriter.notifyMatchFailure(op, "already simplified");
    }
    rewriter.modifyOpInPlace(op, [&] {
      op.setIndexingMapAttrAttr(IndexingMapAttr::get(op.getContext(), simplified));
    });
    return success();
  }
};

// XLA's FoldApplyIndexingResults, and unused results dropped: results that
// are a constant or one of the operands are replaced by it; the op keeps
// the other results that have uses.
struct FoldApplyIndexingResults : public mlir::OpRewritePattern<ApplyIndexingOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(ApplyIndexingOp op,
                                mlir::PatternRewriter& rewriter) const override {
    if (op->use_empty()) return rewriter.notifyMatchFailure(op, "dead: left to DCE");
    const IndexingMap& map = op.getIndexingMap();
    SmallVector<Value> replacements(op.getNumResults());
    SmallVector<mlir::AffineExpr> kept;
    SmallVector<unsigned> keptIndices;
    for (auto [i, expr] : llvm::enumerate(map.getAffineMap().getResults())) {
      if (op.getResult(i).use_empty()) continue;
      if (auto c = llvm::dyn_cast<mlir::AffineConstantExpr>(expr)) {
        replacements[i] =
            rewriter.create<mlir::arith::ConstantIndexOp>(op.getLoc(), c.getValue());
      } else if (auto d = llvm::dyn_cast<mlir::AffineDimExpr>(expr)) {
        replacements[i] = op.getOperand(d.getPosition());
      } else if (auto sym = llvm::dyn_cast<mlir::AffineSymbolExpr>(expr)) {
        replacements[i] = op.getOperand(map.getNumDims() + sym.getPosition());
      } else {
        kept.push_back(expr);
        keptIndices.push_back(i);
      }
    }
    if (kept.size() == op.getNumResults()) {
      return rewriter.notifyMatchFailure(op, "every result is an expression in use");
    }
    if (!kept.empty()) {
      IndexingMap narrowed = map.withResults(kept);
      mlir::ValueRange operands = op.getOperands();
      auto newOp = rewriter.create<ApplyIndexingOp>(
          op.getLoc(), operands.take_front(map.getNumDims()),
          operands.drop_front(map.getNumDims()), IndexingMapAttr::get(op.getContext(), narrowed));
      for (auto [k, i] : llvm::enumerate(keptIndices)) replacements[i] = newOp.getResult(k);
    }
    // Results without uses keep a placeholder nobody reads.
    for (auto [i, v] : llvm::enumerate(replacements)) {
      if (!v) replacements[i] = rewriter.create<mlir::arith::ConstantIndexOp>(op.getLoc(), 0);
    }
    rewriter.replaceOp(op, replacements);
    return success();
  }
};

// XLA's MoveSymbolsToDims: an apply_indexing has no use for the
// difference between dimensions and symbols; all become dimensions (the
// operands stay in order), which lets more maps fold and CSE together.
struct MoveSymbolsToDims : public mlir::OpRewritePattern<ApplyIndexingOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(ApplyIndexingOp op,
                                mlir::PatternRewriter& rewriter) const override {
    const IndexingMap& map = op.getIndexingMap();
    if (map.getNumSymbols() == 0) return rewriter.notifyMatchFailure(op, "no symbols");
    IndexingMap dims = map.convertSymbolsToDims();
    mlir::ValueRange operands = op.getOperands();
    rewriter.replaceOpWithNewOp<ApplyIndexingOp>(op, operands, mlir::ValueRange{},
                                                 IndexingMapAttr::get(op.getContext(), dims));
    return success();
  }
};

}  // namespace

void ApplyIndexingOp::getCanonicalizationPatterns(
    mlir::RewritePatternSet& results, mlir::MLIRContext* context) {
  results.add<FoldApplyIndexingOperands, FoldApplyIndexingChains, SimplifyApplyIndexingMap,
              FoldApplyIndexingResults, MoveSymbolsToDims>(context);
}

//===----------------------------------------------------------------------===//
// LoopOp
//===----------------------------------------------------------------------===//

void LoopOp::build(mlir::OpBuilder& builder, mlir::OperationState& result,
                   IndexingMapAttr indexingMap, mlir::ValueRange dims,
                   mlir::ValueRange inits) {
  const IndexingMap& map = indexingMap.getIndexingMap();
  result.addOperands(dims);
  result.addOperands(inits);
  result.addAttribute("indexing_map_attr", indexingMap);
  result.addAttribute(
      LoopOp::getOperandSegmentSizesAttrName(result.name),
      builder.getDenseI32ArrayAttr({static_cast<int32_t>(dims.size()),
                                    static_cast<int32_t>(inits.size())}));
  result.addTypes(inits.getTypes());
  mlir::Region* region = result.addRegion();
  mlir::Block* body = new mlir::Block();
  region->push_back(body);
  for (unsigned i = 0; i < map.getNumRangeVars() + map.getNumResults(); ++i) {
    body->addArgument(builder.getIndexType(), result.location);
  }
  for (Value init : inits) body->addArgument(init.getType(), result.location);
}

mlir::Block::BlockArgListType LoopOp::getInductionVars() {
  return getBody()->getArguments().take_front(
      getIndexingMap().getNumRangeVars());
}

mlir::Block::BlockArgListType LoopOp::getIndexingMapResults() {
  const IndexingMap& map = getIndexingMap();
  return getBody()->getArguments().slice(map.getNumRangeVars(),
                                         map.getNumResults());
}

mlir::Block::BlockArgListType LoopOp::getRegionIterArgs() {
  const IndexingMap& map = getIndexingMap();
  return getBody()->getArguments().drop_front(map.getNumRangeVars() +
                                              map.getNumResults());
}

// (%d0, %d1)[%s0, %s1] -> (%r0, %r1) in #map iter_args(%a = %init) -> (T) {
//   ...
// } {attrs}
mlir::ParseResult LoopOp::parse(mlir::OpAsmParser& parser,
                                mlir::OperationState& result) {
  mlir::Builder& b = parser.getBuilder();
  SmallVector<mlir::OpAsmParser::UnresolvedOperand> dims;
  SmallVector<mlir::OpAsmParser::Argument> regionArgs, mapResults, iterArgs;
  llvm::SMLoc loc = parser.getCurrentLocation();
  if (parser.parseOperandList(dims, mlir::AsmParser::Delimiter::Paren) ||
      parser.parseArgumentList(regionArgs,
                               mlir::AsmParser::Delimiter::OptionalSquare) ||
      parser.parseArrow() ||
      parser.parseArgumentList(mapResults, mlir::AsmParser::Delimiter::Paren) ||
      parser.parseKeyword("in")) {
    return failure();
  }
  IndexingMapAttr map;
  llvm::SMLoc mapLoc = parser.getCurrentLocation();
  if (parser.parseAttribute(map, "indexing_map_attr", result.attributes)) {
    return failure();
  }
  const IndexingMap& m = map.getIndexingMap();
  if (dims.size() != m.getNumDims()) {
    return parser.emitError(loc) << "the indexing map has " << m.getNumDims()
                                 << " dimensions, got " << dims.size()
                                 << " operands";
  }
  if (regionArgs.size() != m.getNumRangeVars()) {
    return parser.emitError(loc) << "the indexing map has " << m.getNumRangeVars()
                                 << " range variables, got " << regionArgs.size()
                                 << " induction variables";
  }
  if (mapResults.size() != m.getNumResults()) {
    return parser.emitError(loc) << "the indexing map has " << m.getNumResults()
                                 << " results, got " << mapResults.size()
                                 << " names for them";
  }
  if (m.getNumRuntimeVars() != 0) {
    return parser.emitError(mapLoc)
           << "the indexing map of a loop cannot have runtime variables";
  }
  if (parser.resolveOperands(dims, b.getIndexType(), result.operands)) {
    return failure();
  }
  SmallVector<mlir::OpAsmParser::UnresolvedOperand> inits;
  SmallVector<mlir::Type> resultTypes;
  if (succeeded(parser.parseOptionalKeyword("iter_args"))) {
    if (parser.parseAssignmentList(iterArgs, inits) || parser.parseArrow() ||
        parser.parseLParen()) {
      return failure();
    }
    if (failed(parser.parseOptionalRParen()) &&
        (parser.parseTypeList(resultTypes) || parser.parseRParen())) {
      return failure();
    }
  }
  if (resultTypes.size() != inits.size()) {
    return parser.emitError(loc) << "expected " << inits.size()
                                 << " result types, got " << resultTypes.size();
  }
  if (parser.resolveOperands(inits, resultTypes, loc, result.operands)) {
    return failure();
  }
  for (auto [arg, type] : llvm::zip(iterArgs, resultTypes)) arg.type = type;
  for (auto& arg : regionArgs) arg.type = b.getIndexType();
  for (auto& arg : mapResults) arg.type = b.getIndexType();
  SmallVector<mlir::OpAsmParser::Argument> allArgs(regionArgs);
  allArgs.append(mapResults);
  allArgs.append(iterArgs);
  mlir::Region* body = result.addRegion();
  if (parser.parseRegion(*body, allArgs)) return failure();
  if (parser.parseOptionalAttrDict(result.attributes)) return failure();
  result.addTypes(resultTypes);
  result.addAttribute(
      LoopOp::getOperandSegmentSizesAttrName(result.name),
      b.getDenseI32ArrayAttr({static_cast<int32_t>(dims.size()),
                              static_cast<int32_t>(inits.size())}));
  return success();
}

void LoopOp::print(mlir::OpAsmPrinter& p) {
  p << " (" << getDims() << ")";
  if (!getInductionVars().empty()) p << '[' << getInductionVars() << ']';
  p << " -> (" << getIndexingMapResults() << ") in ";
  p.printAttribute(getIndexingMapAttr());
  if (!getInits().empty()) {
    p << " iter_args(";
    llvm::interleaveComma(llvm::zip(getRegionIterArgs(), getInits()), p,
                          [&](auto it) {
                            p << std::get<0>(it) << " = " << std::get<1>(it);
                          });
    p << ") -> (" << getInits().getTypes() << ")";
  }
  p << ' ';
  p.printRegion(getRegion(), /*printEntryBlockArgs=*/false,
                /*printBlockTerminators=*/true);
  p.printOptionalAttrDict((*this)->getAttrs(),
                          {"indexing_map_attr", getOperandSegmentSizesAttrName()});
}

LogicalResult LoopOp::verifyRegions() {
  const IndexingMap& map = getIndexingMap();
  if (getDims().size() != map.getNumDims()) {
    return emitOpError() << "the indexing map has " << map.getNumDims()
                         << " dimensions, got " << getDims().size()
                         << " operands";
  }
  if (map.getNumRuntimeVars() != 0) {
    return emitOpError() << "the indexing map of a loop cannot have runtime "
                            "variables";
  }
  mlir::Block* body = getBody();
  unsigned expectedArgs =
      map.getNumRangeVars() + map.getNumResults() + getInits().size();
  if (body->getNumArguments() != expectedArgs) {
    return emitOpError() << "expected " << expectedArgs
                         << " block arguments (range variables, map results, "
                            "iter_args), got "
                         << body->getNumArguments();
  }
  for (Value arg : body->getArguments().take_front(map.getNumRangeVars() +
                                                   map.getNumResults())) {
    if (!arg.getType().isIndex()) {
      return emitOpError() << "induction variables and map results must be "
                              "index, got "
                           << arg.getType();
    }
  }
  for (auto [arg, init, res] :
       llvm::zip(getRegionIterArgs(), getInits(), getResults())) {
    if (arg.getType() != init.getType() || res.getType() != init.getType()) {
      return emitOpError() << "iter_arg, init and result types must match, got "
                           << arg.getType() << ", " << init.getType() << ", "
                           << res.getType();
    }
  }
  if (getNumResults() != getInits().size()) {
    return emitOpError() << "expected one result per init";
  }
  YieldOp yield = endingYield(body);
  if (!yield) return emitOpError() << "expected the body to end with xla_gpu.yield";
  if (yield.getResult().getTypes() != getResultTypes()) {
    return yield.emitOpError() << "yields " << yield.getResult().getTypes()
                               << " but the loop returns " << getResultTypes();
  }
  return success();
}

//===----------------------------------------------------------------------===//
// PredicatedInsertOp / PredicatedExtractOp
//===----------------------------------------------------------------------===//

template <typename OpT>
static LogicalResult verifyIndexCount(OpT op, mlir::Type tensorType) {
  auto type = llvm::cast<mlir::RankedTensorType>(tensorType);
  if (static_cast<int64_t>(op.getIndices().size()) != type.getRank()) {
    return op.emitOpError() << "expected " << type.getRank()
                            << " indices for a tensor of rank "
                            << type.getRank() << ", got "
                            << op.getIndices().size();
  }
  return success();
}

LogicalResult CopyTileOp::verify() {
  // The op's shape: one offset and one size per dimension of each side, the
  // boxes inside their tensors where the offsets are constants. (That both
  // boxes hold the same elements of one type is for the lowering to check
  // and decline with its reason.)
  auto check = [&](llvm::StringRef side, mlir::RankedTensorType type, mlir::ValueRange offsets,
                   llvm::ArrayRef<int64_t> sizes) -> LogicalResult {
    if (static_cast<int64_t>(offsets.size()) != type.getRank() ||
        static_cast<int64_t>(sizes.size()) != type.getRank()) {
      return emitOpError() << "needs one " << side << " offset and size per dimension of "
                           << type << ", got " << offsets.size() << " and " << sizes.size();
    }
    for (auto [i, size] : llvm::enumerate(sizes)) {
      if (size < 1 || size > type.getDimSize(i)) {
        return emitOpError() << side << " size " << size << " of dimension " << i
                             << " is not in [1, " << type.getDimSize(i) << "]";
      }
      llvm::APInt c;
      if (mlir::matchPattern(offsets[i], mlir::m_ConstantInt(&c)) &&
          (c.getSExtValue() < 0 || c.getSExtValue() + size > type.getDimSize(i))) {
        return emitOpError() << side << " box [" << c.getSExtValue() << ", "
                             << c.getSExtValue() + size << ") of dimension " << i
                             << " is outside [0, " << type.getDimSize(i) << ")";
      }
    }
    return mlir::success();
  };
  if (getNumThreads() < 1) return emitOpError() << "needs at least one thread";
  if (auto swizzle = getSwizzle()) {
    if (swizzle->size() != 3 || llvm::any_of(*swizzle, [](int64_t v) { return v < 0; })) {
      return emitOpError() << "swizzle is [B, M, S], three counts of bits";
    }
  }
  if (failed(check("source", llvm::cast<mlir::RankedTensorType>(getSource().getType()),
                   getSourceOffsets(), getSourceSizes()))) {
    return mlir::failure();
  }
  return check("dest", llvm::cast<mlir::RankedTensorType>(getDest().getType()), getDestOffsets(),
               getDestSizes());
}

LogicalResult PredicatedInsertOp::verify() {
  return verifyIndexCount(*this, getDest().getType());
}

LogicalResult PredicatedExtractOp::verify() {
  return verifyIndexCount(*this, getSrc().getType());
}

namespace {

// A constant condition makes the predicate moot.
struct FoldPredicatedInsert : public mlir::OpRewritePattern<PredicatedInsertOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(PredicatedInsertOp op,
                                mlir::PatternRewriter& rewriter) const override {
    llvm::APInt cond;
    if (!mlir::matchPattern(op.getCondition(), mlir::m_ConstantInt(&cond))) {
      return rewriter.notifyMatchFailure(op, "condition is not constant");
    }
    if (cond.isZero()) {
      rewriter.replaceOp(op, op.getDest());
    } else {
      rewriter.replaceOpWithNewOp<mlir::tensor::InsertOp>(
          op, op.getValue(), op.getDest(), op.getIndices());
    }
    return success();
  }
};

struct FoldPredicatedExtract
    : public mlir::OpRewritePattern<PredicatedExtractOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(PredicatedExtractOp op,
                                mlir::PatternRewriter& rewriter) const override {
    llvm::APInt cond;
    if (!mlir::matchPattern(op.getCondition(), mlir::m_ConstantInt(&cond))) {
      return rewriter.notifyMatchFailure(op, "condition is not constant");
    }
    if (cond.isZero()) {
      rewriter.replaceOp(op, op.getFallback());
    } else {
      rewriter.replaceOpWithNewOp<mlir::tensor::ExtractOp>(op, op.getSrc(),
                                                           op.getIndices());
    }
    return success();
  }
};

}  // namespace

void PredicatedInsertOp::getCanonicalizationPatterns(
    mlir::RewritePatternSet& results, mlir::MLIRContext* context) {
  results.add<FoldPredicatedInsert>(context);
}

void PredicatedExtractOp::getCanonicalizationPatterns(
    mlir::RewritePatternSet& results, mlir::MLIRContext* context) {
  results.add<FoldPredicatedExtract>(context);
}

//===----------------------------------------------------------------------===//
// MaterializeOp / InsertOp
//===----------------------------------------------------------------------===//

// The constraints of `map` that mention each variable: dimensions first,
// then symbols (XLA's GetConstraintsForVariables), in canonical order.
struct VariableConstraints {
  SmallVector<SmallVector<IndexingMap::Constraint>> dims;
  SmallVector<SmallVector<IndexingMap::Constraint>> symbols;
};

static VariableConstraints constraintsByVariable(const IndexingMap& map) {
  VariableConstraints result;
  result.dims.resize(map.getNumDims());
  result.symbols.resize(map.getNumSymbols());
  for (const IndexingMap::Constraint& constraint : map.getConstraints()) {
    for (unsigned d = 0; d < map.getNumDims(); ++d) {
      if (constraint.first.isFunctionOfDim(d)) result.dims[d].push_back(constraint);
    }
    for (unsigned s = 0; s < map.getNumSymbols(); ++s) {
      if (constraint.first.isFunctionOfSymbol(s)) result.symbols[s].push_back(constraint);
    }
  }
  return result;
}

// The materialize's map (thread and block id -> the callee's indices) and
// the indexed vector's (thread and block id -> the element's indices) run
// over the same elements: the thread dimension (d0) has the same bounds and
// constraints in both, the range variables (the element's position in the
// vector) the same bounds and constraints; the vector's map does not depend
// on the block id (d1), whose constraints are the same in both. XLA's
// checks.
LogicalResult MaterializeOp::verify() {
  const IndexingMap& in = getMap().getIndexingMap();
  const IndexingMap& out =
      llvm::cast<IndexedVectorType>(getResult().getType()).getIndexingMapAttr().getIndexingMap();
  if (getIndices().size() != in.getNumDims()) {
    return emitOpError() << "the indexing map takes " << in.getNumDims()
                         << " dimensions, got " << getIndices().size()
                         << " indices";
  }
  if (in.getNumDims() == 0 || out.getNumDims() == 0) {
    return emitOpError() << "must have a thread id dimension (d0) in both indexing maps";
  }
  if (in.getDimVars()[0].bounds != out.getDimVars()[0].bounds) {
    return emitOpError() << "the thread id dimension (d0) must have the same bounds in "
                            "both indexing maps";
  }
  VariableConstraints inConstraints = constraintsByVariable(in);
  VariableConstraints outConstraints = constraintsByVariable(out);
  if (inConstraints.dims[0] != outConstraints.dims[0]) {
    return emitOpError() << "the constraints on the thread id dimension (d0) must be "
                            "the same in both indexing maps";
  }
  if (in.getNumRangeVars() != out.getNumRangeVars()) {
    return emitOpError() << "the indexing maps must have the same number of range "
                            "variables, got "
                         << in.getNumRangeVars() << " and " << out.getNumRangeVars();
  }
  for (unsigned i = 0; i < in.getNumRangeVars(); ++i) {
    if (in.getRangeVars()[i].bounds != out.getRangeVars()[i].bounds) {
      return emitOpError() << "range variable s" << i
                           << " must have the same bounds in both indexing maps";
    }
  }
  if (inConstraints.symbols != outConstraints.symbols) {
    return emitOpError() << "the constraints on the range variables must be the same in "
                            "both indexing maps";
  }
  if (out.getNumDims() > 1) {
    for (mlir::AffineExpr expr : out.getAffineMap().getResults()) {
      if (expr.isFunctionOfDim(1)) {
        return emitOpError() << "the indexed vector's map must not depend on the block id "
                                "dimension (d1)";
      }
    }
  }
  auto blockConstraints = [](const IndexingMap& map, const VariableConstraints& c) {
    return map.getNumDims() > 1 ? c.dims[1] : SmallVector<IndexingMap::Constraint>{};
  };
  if (blockConstraints(in, inConstraints) != blockConstraints(out, outConstraints)) {
    return emitOpError() << "the constraints on the block id dimension (d1) must be the "
                            "same in both indexing maps";
  }
  return success();
}

// The callee computes one element from the inputs and the element's
// indices (the map's results).
LogicalResult MaterializeOp::verifySymbolUses(
    mlir::SymbolTableCollection& symbolTable) {
  SmallVector<mlir::Type> inputs(getInput().getTypes());
  inputs.append(getMap().getIndexingMap().getNumResults(),
                mlir::IndexType::get(getContext()));
  auto vec = llvm::cast<IndexedVectorType>(getResult().getType());
  return verifyCallee(*this, symbolTable, getCalleeAttr(), inputs,
                      mlir::TypeRange{vec.getElementType()}, "callee");
}

// The insert's map takes the indexed vector's map's results (the element's
// indices) to the destination's indices; the vector's map takes `indices`.
LogicalResult InsertOp::verify() {
  const IndexingMap& map = getMap().getIndexingMap();
  auto vec = llvm::cast<IndexedVectorType>(getSource().getType());
  const IndexingMap& source = vec.getIndexingMapAttr().getIndexingMap();
  if (map.getNumSymbols() != 0) {
    return emitOpError() << "the indexing map must not have symbols, got "
                         << map.getNumSymbols();
  }
  if (source.getNumResults() != map.getNumDims()) {
    return emitOpError() << "the indexing map takes " << map.getNumDims()
                         << " dimensions, but the source's map has "
                         << source.getNumResults() << " results";
  }
  if (getIndices().size() != source.getNumDims()) {
    return emitOpError() << "the source's indexing map takes " << source.getNumDims()
                         << " dimensions, got " << getIndices().size() << " indices";
  }
  auto dest = llvm::cast<mlir::RankedTensorType>(getDest().getType());
  if (map.getNumResults() != static_cast<unsigned>(dest.getRank())) {
    return emitOpError() << "the indexing map has " << map.getNumResults()
                         << " results but the destination has rank "
                         << dest.getRank();
  }
  if (vec.getElementType() != dest.getElementType()) {
    return emitOpError() << "element types differ: " << vec.getElementType()
                         << " vs " << dest.getElementType();
  }
  return success();
}

}  // namespace xla::gpu

#define GET_OP_CLASSES
#include "dialects/xla_gpu/XlaGpuOps.cpp.inc"
