//===- IndexingMap.cpp - text form and verification of IndexingMap --------===//

#include "dialects/xla_gpu/IndexingMap.h"

#include <algorithm>
#include <cctype>
#include <limits>
#include <tuple>

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/raw_ostream.h"
#include "mlir/IR/AffineExpr.h"

namespace xla::gpu {

using llvm::SmallVector;
using llvm::StringRef;
using mlir::AffineExpr;
using mlir::AffineExprKind;

std::string getDefaultVarName(VarKind kind, unsigned index) {
  switch (kind) {
    case VarKind::kDimension:
      return "d" + std::to_string(index);
    case VarKind::kRange:
      return "s" + std::to_string(index);
    case VarKind::kRuntime:
      return "rt" + std::to_string(index);
  }
  return "?";
}

// Whether `name` is a default name of `kind` (d3, s0, rt1), for any index.
static bool isDefaultName(llvm::StringRef name, VarKind kind) {
  llvm::StringRef prefix = kind == VarKind::kDimension ? "d" : kind == VarKind::kRange ? "s" : "rt";
  if (!name.consume_front(prefix) || name.empty()) return false;
  return llvm::all_of(name, [](char c) { return c >= '0' && c <= '9'; });
}

// Unnamed variables, and those with a default name of another position
// (what is left after a variable before them was removed: d1 becomes d0),
// get the default name of their position, as in XLA; other names stay.
static void nameUnnamed(SmallVector<IndexingVar>& vars, VarKind kind) {
  for (auto [i, var] : llvm::enumerate(vars)) {
    if (var.name.empty() || isDefaultName(var.name, kind)) {
      var.name = getDefaultVarName(kind, i);
    }
  }
}

IndexingMap::IndexingMap(mlir::AffineMap map, SmallVector<IndexingVar> dims,
                         SmallVector<IndexingVar> range,
                         SmallVector<IndexingVar> runtime,
                         SmallVector<Constraint> constraints)
    : map_(map),
      dims_(std::move(dims)),
      range_(std::move(range)),
      runtime_(std::move(runtime)),
      constraints_(std::move(constraints)) {
  nameUnnamed(dims_, VarKind::kDimension);
  nameUnnamed(range_, VarKind::kRange);
  nameUnnamed(runtime_, VarKind::kRuntime);
  sortConstraints();
}

const IndexingVar& IndexingMap::getVar(VarKind kind, unsigned index) const {
  switch (kind) {
    case VarKind::kDimension:
      return dims_[index];
    case VarKind::kRange:
      return range_[index];
    case VarKind::kRuntime:
      return runtime_[index];
  }
  llvm_unreachable("unknown variable kind");
}

//===----------------------------------------------------------------------===//
// Printing
//===----------------------------------------------------------------------===//

namespace {

// Mirrors MLIR's own affine expression printer (so `d0 - d1`, `(d0 mod 8) *
// 512`, ...), with the map's variable names instead of d0/s0.
class ExprPrinter {
 public:
  explicit ExprPrinter(const IndexingMap& map) : map_(map) {}

  void print(AffineExpr expr, llvm::raw_ostream& os, bool strong = false) {
    switch (expr.getKind()) {
      case AffineExprKind::DimId: {
        unsigned pos = llvm::cast<mlir::AffineDimExpr>(expr).getPosition();
        os << varName(VarKind::kDimension, pos, map_.getNumDims());
        return;
      }
      case AffineExprKind::SymbolId: {
        unsigned pos = llvm::cast<mlir::AffineSymbolExpr>(expr).getPosition();
        if (pos < map_.getNumRangeVars()) {
          os << varName(VarKind::kRange, pos, map_.getNumRangeVars());
        } else {
          unsigned rt = pos - map_.getNumRangeVars();
          os << varName(VarKind::kRuntime, rt, map_.getNumRuntimeVars());
        }
        return;
      }
      case AffineExprKind::Constant:
        os << llvm::cast<mlir::AffineConstantExpr>(expr).getValue();
        return;
      case AffineExprKind::Add:
        printAdd(llvm::cast<mlir::AffineBinaryOpExpr>(expr), os, strong);
        return;
      default:
        break;
    }
    auto bin = llvm::cast<mlir::AffineBinaryOpExpr>(expr);
    AffineExpr lhs = bin.getLHS(), rhs = bin.getRHS();
    if (strong) os << '(';
    auto rhsConst = llvm::dyn_cast<mlir::AffineConstantExpr>(rhs);
    if (expr.getKind() == AffineExprKind::Mul && rhsConst &&
        rhsConst.getValue() == -1) {
      os << '-';
      print(lhs, os, /*strong=*/true);
    } else {
      print(lhs, os, /*strong=*/true);
      switch (expr.getKind()) {
        case AffineExprKind::Mul:
          os << " * ";
          break;
        case AffineExprKind::FloorDiv:
          os << " floordiv ";
          break;
        case AffineExprKind::CeilDiv:
          os << " ceildiv ";
          break;
        case AffineExprKind::Mod:
          os << " mod ";
          break;
        default:
          llvm_unreachable("not a binary expression");
      }
      print(rhs, os, /*strong=*/true);
    }
    if (strong) os << ')';
  }

 private:
  void printAdd(mlir::AffineBinaryOpExpr add, llvm::raw_ostream& os,
                bool strong) {
    AffineExpr lhs = add.getLHS(), rhs = add.getRHS();
    if (strong) os << '(';
    // `a + b * -c` prints as `a - b * c`, `a + -c` as `a - c`.
    if (auto mul = llvm::dyn_cast<mlir::AffineBinaryOpExpr>(rhs);
        mul && mul.getKind() == AffineExprKind::Mul) {
      if (auto c = llvm::dyn_cast<mlir::AffineConstantExpr>(mul.getRHS());
          c && c.getValue() < 0) {
        print(lhs, os);
        os << " - ";
        print(mul.getLHS(), os, /*strong=*/true);
        if (c.getValue() != -1) os << " * " << -c.getValue();
        if (strong) os << ')';
        return;
      }
    }
    if (auto c = llvm::dyn_cast<mlir::AffineConstantExpr>(rhs);
        c && c.getValue() < 0 &&
        c.getValue() != std::numeric_limits<int64_t>::min()) {
      print(lhs, os);
      os << " - " << -c.getValue();
    } else {
      print(lhs, os);
      os << " + ";
      print(rhs, os);
    }
    if (strong) os << ')';
  }

  std::string varName(VarKind kind, unsigned pos, unsigned count) {
    // An expression handed in from outside may use variables the map lacks;
    // print them with default names rather than fail.
    if (pos < count) return map_.getVar(kind, pos).name;
    return getDefaultVarName(kind, pos);
  }

  const IndexingMap& map_;
};

void printInterval(const Interval& interval, llvm::raw_ostream& os) {
  os << '[' << interval.lower << ", " << interval.upper << ']';
}

}  // namespace

std::string IndexingMap::printExpr(AffineExpr expr) const {
  std::string text;
  llvm::raw_string_ostream os(text);
  ExprPrinter(*this).print(expr, os);
  return text;
}

std::string IndexingMap::toString() const {
  std::string text;
  llvm::raw_string_ostream os(text);
  auto printNames = [&](llvm::ArrayRef<IndexingVar> vars) {
    llvm::interleaveComma(vars, os,
                          [&](const IndexingVar& v) { os << v.name; });
  };
  os << '(';
  printNames(dims_);
  os << ')';
  if (!range_.empty()) {
    os << '[';
    printNames(range_);
    os << ']';
  }
  if (!runtime_.empty()) {
    os << '{';
    printNames(runtime_);
    os << '}';
  }
  os << " -> (";
  ExprPrinter printer(*this);
  llvm::interleaveComma(map_.getResults(), os,
                        [&](AffineExpr e) { printer.print(e, os); });
  os << ')';
  bool first = true;
  auto startEntry = [&]() {
    os << (first ? ", domain: " : ", ");
    first = false;
  };
  for (llvm::ArrayRef<IndexingVar> vars : {llvm::ArrayRef(dims_),
                                           llvm::ArrayRef(range_),
                                           llvm::ArrayRef(runtime_)}) {
    for (const IndexingVar& var : vars) {
      startEntry();
      os << var.name << " in ";
      printInterval(var.bounds, os);
    }
  }
  for (const auto& [expr, interval] : constraints_) {
    startEntry();
    printer.print(expr, os);
    os << " in ";
    printInterval(interval, os);
  }
  return text;
}

void IndexingMap::sortConstraints() {
  // Sort by printed text: a stable order independent of how the constraints
  // were added, so that equal maps print and compare the same.
  SmallVector<std::tuple<std::string, Constraint>> keyed;
  for (const Constraint& c : constraints_) keyed.push_back({printExpr(c.first), c});
  llvm::stable_sort(keyed, [](const auto& a, const auto& b) {
    const auto& [ta, ca] = a;
    const auto& [tb, cb] = b;
    return std::tie(ta, ca.second.lower, ca.second.upper) <
           std::tie(tb, cb.second.lower, cb.second.upper);
  });
  for (auto [i, entry] : llvm::enumerate(keyed)) constraints_[i] = std::get<1>(entry);
}

//===----------------------------------------------------------------------===//
// Equality, hashing, verification
//===----------------------------------------------------------------------===//

static bool sameBounds(llvm::ArrayRef<IndexingVar> a,
                       llvm::ArrayRef<IndexingVar> b) {
  return a.size() == b.size() &&
         llvm::all_of(llvm::zip(a, b), [](auto pair) {
           return std::get<0>(pair).bounds == std::get<1>(pair).bounds;
         });
}

static bool sameNames(llvm::ArrayRef<IndexingVar> a,
                      llvm::ArrayRef<IndexingVar> b) {
  return a.size() == b.size() &&
         llvm::all_of(llvm::zip(a, b), [](auto pair) {
           return std::get<0>(pair).name == std::get<1>(pair).name;
         });
}

bool IndexingMap::hasSameDomain(const IndexingMap& other) const {
  if (!sameBounds(dims_, other.dims_) || !sameBounds(range_, other.range_) ||
      !sameBounds(runtime_, other.runtime_) ||
      constraints_.size() != other.constraints_.size()) {
    return false;
  }
  // Constraints are kept sorted, but by text, which depends on names: compare
  // as sets.
  return llvm::all_of(constraints_, [&](const Constraint& c) {
    return llvm::is_contained(other.constraints_, c);
  });
}

bool IndexingMap::operator==(const IndexingMap& other) const {
  return map_ == other.map_ && hasSameDomain(other);
}

bool IndexingMap::isIdenticalTo(const IndexingMap& other) const {
  return *this == other && sameNames(dims_, other.dims_) &&
         sameNames(range_, other.range_) &&
         sameNames(runtime_, other.runtime_) &&
         constraints_ == other.constraints_;
}

llvm::hash_code hash_value(const IndexingMap& map) {
  llvm::hash_code hash = llvm::hash_value(map.getAffineMap().getAsOpaquePointer());
  for (llvm::ArrayRef<IndexingVar> vars :
       {map.getDimVars(), map.getRangeVars(), map.getRuntimeVars()}) {
    for (const IndexingVar& var : vars) {
      hash = llvm::hash_combine(hash, var.bounds.lower, var.bounds.upper);
    }
  }
  // Order-independent, matching operator==.
  size_t constraints = 0;
  for (const auto& [expr, interval] : map.getConstraints()) {
    constraints += llvm::hash_combine(expr.getAsOpaquePointer(),
                                      interval.lower, interval.upper);
  }
  return llvm::hash_combine(hash, constraints);
}

mlir::LogicalResult IndexingMap::verify(VerifyErrorFn error) const {
  if (!map_) {
    error("indexing map has no affine map");
    return mlir::failure();
  }
  if (map_.getNumDims() != dims_.size()) {
    error("the affine map has " + llvm::Twine(map_.getNumDims()) +
          " dimensions but the domain has " + llvm::Twine(dims_.size()) +
          " dimension ranges");
    return mlir::failure();
  }
  if (map_.getNumSymbols() != getNumSymbols()) {
    error("the affine map has " + llvm::Twine(map_.getNumSymbols()) +
          " symbols but the domain has " + llvm::Twine(getNumSymbols()) +
          " symbol ranges (range and runtime variables)");
    return mlir::failure();
  }
  llvm::StringMap<bool> seen;
  for (llvm::ArrayRef<IndexingVar> vars : {llvm::ArrayRef(dims_),
                                           llvm::ArrayRef(range_),
                                           llvm::ArrayRef(runtime_)}) {
    for (const IndexingVar& var : vars) {
      if (!seen.insert({var.name, true}).second) {
        error("variable name '" + var.name + "' is used twice");
        return mlir::failure();
      }
      if (var.bounds.lower > var.bounds.upper && !isCanonicalKnownEmpty()) {
        error("lower bound " + llvm::Twine(var.bounds.lower) + " of '" +
              var.name + "' is greater than its upper bound " +
              llvm::Twine(var.bounds.upper));
        return mlir::failure();
      }
    }
  }
  for (const auto& [expr, interval] : constraints_) {
    bool outOfRange = false;
    expr.walk([&](AffineExpr e) {
      if (auto d = llvm::dyn_cast<mlir::AffineDimExpr>(e)) {
        outOfRange |= d.getPosition() >= getNumDims();
      } else if (auto s = llvm::dyn_cast<mlir::AffineSymbolExpr>(e)) {
        outOfRange |= s.getPosition() >= getNumSymbols();
      }
    });
    if (outOfRange) {
      error("constraint '" + printExpr(expr) + "' uses an unknown variable");
      return mlir::failure();
    }
    if (interval.lower > interval.upper) {
      error("constraint '" + printExpr(expr) + "' has lower bound " +
            llvm::Twine(interval.lower) + " greater than its upper bound " +
            llvm::Twine(interval.upper));
      return mlir::failure();
    }
  }
  return mlir::success();
}

//===----------------------------------------------------------------------===//
// Parsing
//===----------------------------------------------------------------------===//

namespace {

enum class Tok {
  kEnd, kIdent, kInt, kLParen, kRParen, kLSquare, kRSquare, kLBrace, kRBrace,
  kComma, kColon, kPlus, kMinus, kStar, kArrow, kError
};

struct Token {
  Tok kind = Tok::kEnd;
  StringRef text;
  size_t offset = 0;
};

class Lexer {
 public:
  explicit Lexer(StringRef text) : text_(text) {}

  Token next() {
    while (pos_ < text_.size() && std::isspace(static_cast<unsigned char>(text_[pos_]))) ++pos_;
    Token tok;
    tok.offset = pos_;
    if (pos_ >= text_.size()) return tok;
    char c = text_[pos_];
    auto single = [&](Tok kind) {
      tok.kind = kind;
      tok.text = text_.substr(pos_, 1);
      ++pos_;
      return tok;
    };
    if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
      size_t start = pos_;
      while (pos_ < text_.size() &&
             (std::isalnum(static_cast<unsigned char>(text_[pos_])) ||
              text_[pos_] == '_' || text_[pos_] == '.')) {
        ++pos_;
      }
      tok.kind = Tok::kIdent;
      tok.text = text_.slice(start, pos_);
      return tok;
    }
    if (std::isdigit(static_cast<unsigned char>(c))) {
      size_t start = pos_;
      while (pos_ < text_.size() && std::isdigit(static_cast<unsigned char>(text_[pos_]))) ++pos_;
      tok.kind = Tok::kInt;
      tok.text = text_.slice(start, pos_);
      return tok;
    }
    switch (c) {
      case '(': return single(Tok::kLParen);
      case ')': return single(Tok::kRParen);
      case '[': return single(Tok::kLSquare);
      case ']': return single(Tok::kRSquare);
      case '{': return single(Tok::kLBrace);
      case '}': return single(Tok::kRBrace);
      case ',': return single(Tok::kComma);
      case ':': return single(Tok::kColon);
      case '+': return single(Tok::kPlus);
      case '*': return single(Tok::kStar);
      case '-':
        if (pos_ + 1 < text_.size() && text_[pos_ + 1] == '>') {
          tok.kind = Tok::kArrow;
          tok.text = text_.substr(pos_, 2);
          pos_ += 2;
          return tok;
        }
        return single(Tok::kMinus);
      default:
        return single(Tok::kError);
    }
  }

 private:
  StringRef text_;
  size_t pos_ = 0;
};

// The token as a message quotes it: bytes outside printable ASCII as \XX,
// as MLIR prints strings (a diagnostic must be valid UTF-8: the Python
// bindings abort converting one that is not -- `[0,\99]` did, found by the
// fuzzer).
std::string describe(const Token& tok) {
  if (tok.kind == Tok::kEnd) return "end of indexing map";
  std::string quoted = "'";
  for (unsigned char c : tok.text) {
    if (c >= 0x20 && c < 0x7f) {
      quoted += static_cast<char>(c);
    } else {
      quoted += '\\';
      quoted += llvm::hexdigit(c >> 4);
      quoted += llvm::hexdigit(c & 0xf);
    }
  }
  return quoted + "'";
}

class Parser {
 public:
  Parser(StringRef text, mlir::MLIRContext* context,
         IndexingMap::ParseErrorFn error)
      : lexer_(text), context_(context), error_(error) {
    tok_ = lexer_.next();
  }

  std::optional<IndexingMap> parse();

 private:
  struct VarRef {
    VarKind kind;
    unsigned index;
  };

  bool fail(const Token& at, const llvm::Twine& message) {
    if (!failed_) error_(at.offset, message);
    failed_ = true;
    return false;
  }
  void consume() { tok_ = lexer_.next(); }
  AffineExpr parseNestedFactor();
  // Nesting deeper than any real indexing map (XLA's are a few levels).
  static constexpr int kMaxNesting = 256;
  int depth_ = 0;
  bool isKeyword(StringRef word) const {
    return tok_.kind == Tok::kIdent && tok_.text == word;
  }
  bool expect(Tok kind, StringRef spelling, StringRef context) {
    if (tok_.kind != kind) {
      return fail(tok_, "expected '" + spelling + "' " + context + ", found " +
                            describe(tok_));
    }
    consume();
    return true;
  }
  bool expectKeyword(StringRef word, StringRef context) {
    if (!isKeyword(word)) {
      return fail(tok_, "expected '" + word + "' " + context + ", found " +
                            describe(tok_));
    }
    consume();
    return true;
  }

  bool parseVarList(Tok close, StringRef closeSpelling, VarKind kind,
                    SmallVector<IndexingVar>& vars);
  bool parseInteger(int64_t& value, bool allowSign);
  bool parseInterval(Interval& interval);
  // `is_simplified: true|false`
  bool parseIsSimplified();
  // expr := term (('+'|'-') term)*
  AffineExpr parseExpr();
  // term := factor (('*'|'floordiv'|'ceildiv'|'mod') factor)*
  AffineExpr parseTerm();
  // factor := '-' factor | integer | variable | '(' expr ')'
  AffineExpr parseFactor();

  Lexer lexer_;
  Token tok_;
  mlir::MLIRContext* context_;
  IndexingMap::ParseErrorFn error_;
  bool failed_ = false;
  llvm::StringMap<VarRef> vars_;
  unsigned numRange_ = 0;
};

bool Parser::parseVarList(Tok close, StringRef closeSpelling, VarKind kind,
                          SmallVector<IndexingVar>& vars) {
  if (tok_.kind == close) {
    consume();
    return true;
  }
  while (true) {
    if (tok_.kind != Tok::kIdent) {
      return fail(tok_, "expected a variable name, found " + describe(tok_));
    }
    if (tok_.text == "in" || tok_.text == "mod" || tok_.text == "floordiv" ||
        tok_.text == "ceildiv" || tok_.text == "domain") {
      return fail(tok_, "'" + tok_.text + "' is a keyword and cannot name a variable");
    }
    if (!vars_.insert({tok_.text, VarRef{kind, (unsigned)vars.size()}}).second) {
      return fail(tok_, "variable '" + tok_.text + "' is declared twice");
    }
    vars.push_back(IndexingVar{tok_.text.str(), Interval{}});
    consume();
    if (tok_.kind == close) {
      consume();
      return true;
    }
    if (!expect(Tok::kComma, ",", ("or '" + closeSpelling + "' in the variable list").str())) {
      return false;
    }
  }
}

bool Parser::parseInteger(int64_t& value, bool allowSign) {
  Token start = tok_;
  bool negative = false;
  if (allowSign && tok_.kind == Tok::kMinus) {
    negative = true;
    consume();
  }
  if (tok_.kind != Tok::kInt) {
    return fail(tok_, "expected an integer, found " + describe(tok_));
  }
  // Accumulate as a negative number so that INT64_MIN is representable.
  int64_t result = 0;
  for (char c : tok_.text) {
    int digit = c - '0';
    if (result < (std::numeric_limits<int64_t>::min() + digit) / 10) {
      return fail(start, "integer " + tok_.text + " is out of the range of int64");
    }
    result = result * 10 - digit;
  }
  if (!negative) {
    if (result == std::numeric_limits<int64_t>::min()) {
      return fail(start, "integer " + tok_.text + " is out of the range of int64");
    }
    result = -result;
  }
  value = result;
  consume();
  return true;
}

bool Parser::parseInterval(Interval& interval) {
  return expect(Tok::kLSquare, "[", "to open the interval") &&
         parseInteger(interval.lower, /*allowSign=*/true) &&
         expect(Tok::kComma, ",", "between the interval's bounds") &&
         parseInteger(interval.upper, /*allowSign=*/true) &&
         expect(Tok::kRSquare, "]", "to close the interval");
}

bool Parser::parseIsSimplified() {
  consume();
  if (!expect(Tok::kColon, ":", "after 'is_simplified'")) return false;
  if (!isKeyword("true") && !isKeyword("false")) {
    return fail(tok_, "expected 'true' or 'false', found " + describe(tok_));
  }
  consume();
  return true;
}

AffineExpr Parser::parseExpr() {
  AffineExpr lhs = parseTerm();
  while (lhs && (tok_.kind == Tok::kPlus || tok_.kind == Tok::kMinus)) {
    bool minus = tok_.kind == Tok::kMinus;
    consume();
    AffineExpr rhs = parseTerm();
    if (!rhs) return nullptr;
    lhs = minus ? lhs - rhs : lhs + rhs;
  }
  return lhs;
}

AffineExpr Parser::parseTerm() {
  AffineExpr lhs = parseFactor();
  while (lhs) {
    Token op = tok_;
    AffineExprKind kind;
    if (tok_.kind == Tok::kStar) {
      kind = AffineExprKind::Mul;
    } else if (isKeyword("floordiv")) {
      kind = AffineExprKind::FloorDiv;
    } else if (isKeyword("ceildiv")) {
      kind = AffineExprKind::CeilDiv;
    } else if (isKeyword("mod")) {
      kind = AffineExprKind::Mod;
    } else {
      break;
    }
    consume();
    AffineExpr rhs = parseFactor();
    if (!rhs) return nullptr;
    auto rhsConst = llvm::dyn_cast<mlir::AffineConstantExpr>(rhs);
    if (kind == AffineExprKind::Mul) {
      // MLIR's rule: one side constant or symbolic (d0 * s0 is accepted).
      if (!rhs.isSymbolicOrConstant() && !lhs.isSymbolicOrConstant()) {
        fail(op, "non-affine expression: one side of '*' must be a constant or "
                 "a symbolic expression");
        return nullptr;
      }
      lhs = lhs * rhs;
      continue;
    }
    if (!rhsConst || rhsConst.getValue() <= 0) {
      fail(op, "expected a positive integer constant on the right of '" +
                   op.text + "'");
      return nullptr;
    }
    lhs = mlir::getAffineBinaryOpExpr(kind, lhs, rhs);
  }
  return lhs;
}

AffineExpr Parser::parseFactor() {
  // Nesting (parentheses, unary minus) recurses: a bound keeps a hostile
  // input from overflowing the stack.
  if (depth_ >= kMaxNesting) {
    fail(tok_, "the expression is nested deeper than " + llvm::Twine(kMaxNesting) + " levels");
    return nullptr;
  }
  ++depth_;
  AffineExpr result = parseNestedFactor();
  --depth_;
  return result;
}

AffineExpr Parser::parseNestedFactor() {
  switch (tok_.kind) {
    case Tok::kMinus: {
      consume();
      AffineExpr operand = parseFactor();
      return operand ? -operand : nullptr;
    }
    case Tok::kInt: {
      int64_t value;
      if (!parseInteger(value, /*allowSign=*/false)) return nullptr;
      return mlir::getAffineConstantExpr(value, context_);
    }
    case Tok::kLParen: {
      Token open = tok_;
      consume();
      AffineExpr inner = parseExpr();
      if (!inner) return nullptr;
      if (tok_.kind != Tok::kRParen) {
        fail(tok_, "expected ')' to close the '(' at offset " +
                       llvm::Twine(open.offset) + ", found " + describe(tok_));
        return nullptr;
      }
      consume();
      return inner;
    }
    case Tok::kIdent: {
      auto it = vars_.find(tok_.text);
      if (it == vars_.end() && tok_.text == "domain") {
        fail(tok_, "unbalanced parentheses: the result list is not closed "
                   "before 'domain'");
        return nullptr;
      }
      if (it == vars_.end()) {
        fail(tok_, "unknown variable '" + tok_.text + "'");
        return nullptr;
      }
      VarRef ref = it->second;
      consume();
      switch (ref.kind) {
        case VarKind::kDimension:
          return mlir::getAffineDimExpr(ref.index, context_);
        case VarKind::kRange:
          return mlir::getAffineSymbolExpr(ref.index, context_);
        case VarKind::kRuntime:
          return mlir::getAffineSymbolExpr(numRange_ + ref.index, context_);
      }
      return nullptr;
    }
    default:
      fail(tok_, "expected an affine expression, found " + describe(tok_));
      return nullptr;
  }
}

std::optional<IndexingMap> Parser::parse() {
  SmallVector<IndexingVar> dims, range, runtime;
  if (!expect(Tok::kLParen, "(", "to open the dimension list") ||
      !parseVarList(Tok::kRParen, ")", VarKind::kDimension, dims)) {
    return std::nullopt;
  }
  if (tok_.kind == Tok::kLSquare) {
    consume();
    if (!parseVarList(Tok::kRSquare, "]", VarKind::kRange, range)) return std::nullopt;
  }
  numRange_ = range.size();
  if (tok_.kind == Tok::kLBrace) {
    consume();
    if (!parseVarList(Tok::kRBrace, "}", VarKind::kRuntime, runtime)) return std::nullopt;
  }
  if (!expect(Tok::kArrow, "->", "after the variable lists") ||
      !expect(Tok::kLParen, "(", "to open the result list")) {
    return std::nullopt;
  }
  SmallVector<AffineExpr> results;
  if (tok_.kind == Tok::kRParen) {
    consume();
  } else {
    while (true) {
      AffineExpr e = parseExpr();
      if (!e) return std::nullopt;
      results.push_back(e);
      if (tok_.kind == Tok::kRParen) {
        consume();
        break;
      }
      if (!expect(Tok::kComma, ",", "or ')' in the result list")) return std::nullopt;
    }
  }

  // The domain: one entry per variable, in declaration order, then
  // constraints.
  SmallVector<IndexingVar*> order;
  for (auto* vars : {&dims, &range, &runtime}) {
    for (IndexingVar& v : *vars) order.push_back(&v);
  }
  SmallVector<IndexingMap::Constraint> constraints;
  bool sawDomain = false;
  size_t nextVar = 0;
  while (tok_.kind == Tok::kComma) {
    consume();
    // A trailing comma after the last domain entry (XLA accepts it).
    if (sawDomain && tok_.kind == Tok::kEnd) break;
    // Older XLA prints an `is_simplified: bool` flag (before or after the
    // domain); it carries no meaning here.
    if (isKeyword("is_simplified")) {
      if (!parseIsSimplified()) return std::nullopt;
      continue;
    }
    if (!sawDomain) {
      if (!expectKeyword("domain", "after the result list") ||
          !expect(Tok::kColon, ":", "after 'domain'")) {
        return std::nullopt;
      }
      sawDomain = true;
      if (tok_.kind == Tok::kEnd) break;
    }
    Token entryStart = tok_;
    if (nextVar < order.size()) {
      const std::string& name = order[nextVar]->name;
      if (tok_.kind != Tok::kIdent || tok_.text != name) {
        fail(tok_, "expected the domain entry of '" + name + "', found " +
                       describe(tok_));
        return std::nullopt;
      }
      consume();
      if (!expectKeyword("in", "after the variable name") ||
          !parseInterval(order[nextVar]->bounds)) {
        return std::nullopt;
      }
      // [0, -1] is the known-empty map's spelling; verify() accepts it only
      // there (every variable empty, results 0).
      const Interval& b = order[nextVar]->bounds;
      if (b.lower > b.upper && !(b.lower == 0 && b.upper == -1)) {
        fail(entryStart, "lower bound " + llvm::Twine(order[nextVar]->bounds.lower) +
                             " of '" + name + "' is greater than its upper bound " +
                             llvm::Twine(order[nextVar]->bounds.upper));
        return std::nullopt;
      }
      ++nextVar;
      continue;
    }
    AffineExpr expr = parseExpr();
    if (!expr) return std::nullopt;
    Interval interval;
    if (!expectKeyword("in", "after the constraint") || !parseInterval(interval)) {
      return std::nullopt;
    }
    if (interval.lower > interval.upper) {
      fail(entryStart, "constraint has lower bound " + llvm::Twine(interval.lower) +
                           " greater than its upper bound " +
                           llvm::Twine(interval.upper));
      return std::nullopt;
    }
    constraints.push_back({expr, interval});
  }
  if (tok_.kind != Tok::kEnd) {
    fail(tok_, "unexpected " + describe(tok_) + " after the indexing map");
    return std::nullopt;
  }
  if (nextVar < order.size()) {
    fail(tok_, "missing the domain entry of '" + order[nextVar]->name + "'");
    return std::nullopt;
  }
  auto map = mlir::AffineMap::get(dims.size(), range.size() + runtime.size(),
                                  results, context_);
  return IndexingMap(map, std::move(dims), std::move(range), std::move(runtime),
                     std::move(constraints));
}

}  // namespace

std::optional<IndexingMap> IndexingMap::parse(StringRef text,
                                              mlir::MLIRContext* context,
                                              ParseErrorFn error) {
  return Parser(text, context, error).parse();
}

}  // namespace xla::gpu
