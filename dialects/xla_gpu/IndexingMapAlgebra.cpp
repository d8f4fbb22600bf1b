//===- IndexingMapAlgebra.cpp - simplify, compose, evaluate IndexingMaps --===//
//
// The rewrites follow XLA's indexing_map.cc: an affine expression is
// simplified with the ranges of its variables in hand, so that
//   d0 floordiv 4096            with d0 in [0, 4095]   ->  0
//   (d0 * 4 + s0) mod 4         with s0 in [0, 3]      ->  s0
//   (d0 mod 8) * 512 + (d0 floordiv 8) * 4096          ->  d0 * 512
// Sums are flattened into (term, multiplier) pairs so that floordiv and mod
// can split off the terms a divisor divides, whatever the nesting.
//
//===----------------------------------------------------------------------===//

#include <algorithm>
#include <limits>
#include <numeric>

#include "dialects/xla_gpu/IndexingMap.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallBitVector.h"
#include "mlir/IR/AffineExpr.h"

namespace xla::gpu {

using llvm::SmallVector;
using mlir::AffineExpr;
using mlir::AffineExprKind;

namespace {

constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
constexpr int64_t kMin = std::numeric_limits<int64_t>::min();

int64_t satAdd(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_add_overflow(a, b, &r)) return b > 0 ? kMax : kMin;
  return r;
}

int64_t satMul(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_mul_overflow(a, b, &r)) return ((a < 0) != (b < 0)) ? kMin : kMax;
  return r;
}

int64_t floorDiv(int64_t a, int64_t b) {
  int64_t q = a / b;
  return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}

int64_t ceilDiv(int64_t a, int64_t b) { return -floorDiv(-a, b); }

int64_t positiveMod(int64_t a, int64_t b) {
  int64_t r = a % b;
  return r < 0 ? r + b : r;
}

std::optional<int64_t> constantOf(AffineExpr e) {
  if (auto c = llvm::dyn_cast<mlir::AffineConstantExpr>(e)) return c.getValue();
  return std::nullopt;
}

// A sum flattened into terms: sum(base_i * multiplier_i) + constant.
struct Sum {
  SmallVector<std::pair<AffineExpr, int64_t>> terms;
  int64_t constant = 0;

  void add(AffineExpr base, int64_t multiplier) {
    if (multiplier == 0) return;
    for (auto& [b, m] : terms) {
      if (b == base) {
        m = satAdd(m, multiplier);
        return;
      }
    }
    terms.push_back({base, multiplier});
  }

  void collect(AffineExpr e, int64_t multiplier) {
    if (auto c = constantOf(e)) {
      constant = satAdd(constant, satMul(*c, multiplier));
      return;
    }
    if (e.getKind() == AffineExprKind::Add) {
      auto bin = llvm::cast<mlir::AffineBinaryOpExpr>(e);
      collect(bin.getLHS(), multiplier);
      collect(bin.getRHS(), multiplier);
      return;
    }
    if (e.getKind() == AffineExprKind::Mul) {
      auto bin = llvm::cast<mlir::AffineBinaryOpExpr>(e);
      if (auto c = constantOf(bin.getRHS())) {
        collect(bin.getLHS(), satMul(multiplier, *c));
        return;
      }
      if (auto c = constantOf(bin.getLHS())) {
        collect(bin.getRHS(), satMul(multiplier, *c));
        return;
      }
    }
    add(e, multiplier);
  }

  static Sum of(AffineExpr e) {
    Sum s;
    s.collect(e, 1);
    return s;
  }

  AffineExpr build(mlir::MLIRContext* ctx) const {
    AffineExpr result;
    for (const auto& [base, m] : terms) {
      if (m == 0) continue;
      AffineExpr t = m == 1 ? base : base * m;
      result = result ? result + t : t;
    }
    if (!result) return mlir::getAffineConstantExpr(constant, ctx);
    return constant == 0 ? result : result + constant;
  }
};

}  // namespace

int64_t evaluateAffineExpr(AffineExpr expr, llvm::ArrayRef<int64_t> dims,
                           llvm::ArrayRef<int64_t> symbols) {
  switch (expr.getKind()) {
    case AffineExprKind::Constant:
      return llvm::cast<mlir::AffineConstantExpr>(expr).getValue();
    case AffineExprKind::DimId:
      return dims[llvm::cast<mlir::AffineDimExpr>(expr).getPosition()];
    case AffineExprKind::SymbolId:
      return symbols[llvm::cast<mlir::AffineSymbolExpr>(expr).getPosition()];
    default:
      break;
  }
  auto bin = llvm::cast<mlir::AffineBinaryOpExpr>(expr);
  int64_t l = evaluateAffineExpr(bin.getLHS(), dims, symbols);
  int64_t r = evaluateAffineExpr(bin.getRHS(), dims, symbols);
  switch (expr.getKind()) {
    case AffineExprKind::Add:
      return l + r;
    case AffineExprKind::Mul:
      return l * r;
    case AffineExprKind::FloorDiv:
      return r == 0 ? 0 : floorDiv(l, r);
    case AffineExprKind::CeilDiv:
      return r == 0 ? 0 : ceilDiv(l, r);
    case AffineExprKind::Mod:
      return r == 0 ? 0 : positiveMod(l, r);
    default:
      llvm_unreachable("unknown affine expression kind");
  }
}

//===----------------------------------------------------------------------===//
// Ranges
//===----------------------------------------------------------------------===//

static Interval rangeOf(AffineExpr expr,
                        llvm::function_ref<Interval(AffineExpr)> leaf) {
  switch (expr.getKind()) {
    case AffineExprKind::Constant: {
      int64_t c = llvm::cast<mlir::AffineConstantExpr>(expr).getValue();
      return {c, c};
    }
    case AffineExprKind::DimId:
    case AffineExprKind::SymbolId:
      return leaf(expr);
    default:
      break;
  }
  auto bin = llvm::cast<mlir::AffineBinaryOpExpr>(expr);
  Interval l = rangeOf(bin.getLHS(), leaf);
  Interval r = rangeOf(bin.getRHS(), leaf);
  switch (expr.getKind()) {
    case AffineExprKind::Add:
      return {satAdd(l.lower, r.lower), satAdd(l.upper, r.upper)};
    case AffineExprKind::Mul: {
      int64_t a = satMul(l.lower, r.lower), b = satMul(l.lower, r.upper);
      int64_t c = satMul(l.upper, r.lower), d = satMul(l.upper, r.upper);
      return {std::min({a, b, c, d}), std::max({a, b, c, d})};
    }
    case AffineExprKind::FloorDiv:
    case AffineExprKind::CeilDiv: {
      if (!r.isPoint() || r.lower <= 0) return {kMin, kMax};
      auto div = expr.getKind() == AffineExprKind::FloorDiv ? floorDiv : ceilDiv;
      return {div(l.lower, r.lower), div(l.upper, r.lower)};
    }
    case AffineExprKind::Mod: {
      if (!r.isPoint() || r.lower <= 0) return {0, kMax};
      int64_t c = r.lower;
      // Within one period the result is monotone.
      if (l.lower != kMin && l.upper != kMax &&
          floorDiv(l.lower, c) == floorDiv(l.upper, c)) {
        return {positiveMod(l.lower, c), positiveMod(l.upper, c)};
      }
      return {0, c - 1};
    }
    default:
      llvm_unreachable("unknown affine expression kind");
  }
}

Interval IndexingMap::getRange(AffineExpr expr) const {
  return rangeOf(expr, [&](AffineExpr leaf) -> Interval {
    if (auto d = llvm::dyn_cast<mlir::AffineDimExpr>(leaf)) {
      unsigned p = d.getPosition();
      return p < dims_.size() ? dims_[p].bounds : Interval{kMin, kMax};
    }
    unsigned p = llvm::cast<mlir::AffineSymbolExpr>(leaf).getPosition();
    if (p < range_.size()) return range_[p].bounds;
    p -= range_.size();
    return p < runtime_.size() ? runtime_[p].bounds : Interval{kMin, kMax};
  });
}

//===----------------------------------------------------------------------===//
// Simplification
//===----------------------------------------------------------------------===//

class IndexingMapSimplifier {
 public:
  explicit IndexingMapSimplifier(const IndexingMap& map) : map_(map) {}

  AffineExpr simplify(AffineExpr expr) {
    mlir::MLIRContext* ctx = expr.getContext();
    Interval range = map_.getRange(expr);
    // Anything whose range is one value is that value.
    if (range.isPoint() && range.lower != kMin && range.lower != kMax) {
      return mlir::getAffineConstantExpr(range.lower, ctx);
    }
    switch (expr.getKind()) {
      case AffineExprKind::Constant:
      case AffineExprKind::DimId:
      case AffineExprKind::SymbolId:
        return expr;
      case AffineExprKind::Add:
      case AffineExprKind::Mul:
        return simplifySum(expr);
      case AffineExprKind::FloorDiv:
        return simplifyFloorDiv(llvm::cast<mlir::AffineBinaryOpExpr>(expr));
      case AffineExprKind::Mod:
        return simplifyMod(llvm::cast<mlir::AffineBinaryOpExpr>(expr));
      case AffineExprKind::CeilDiv: {
        auto bin = llvm::cast<mlir::AffineBinaryOpExpr>(expr);
        return mlir::getAffineBinaryOpExpr(AffineExprKind::CeilDiv,
                                           simplify(bin.getLHS()),
                                           simplify(bin.getRHS()));
      }
    }
    return expr;
  }

 private:
  // Simplifies every term of a flattened sum, then merges mod/floordiv pairs.
  Sum simplifiedSum(AffineExpr expr) {
    Sum flat = Sum::of(expr);
    Sum out;
    out.constant = flat.constant;
    for (auto& [base, m] : flat.terms) {
      AffineExpr s = simplify(base);
      Sum inner = Sum::of(s);
      for (auto& [b, mult] : inner.terms) out.add(b, satMul(mult, m));
      out.constant = satAdd(out.constant, satMul(inner.constant, m));
    }
    mergeDigits(out);
    return out;
  }

  // x as y floordiv a, a >= 1: x itself (a = 1), y floordiv a, or a sum
  // S + z floordiv a, which is (S * a + z) floordiv a.
  std::pair<AffineExpr, int64_t> asFloorDiv(AffineExpr x) {
    if (x.getKind() == AffineExprKind::FloorDiv) {
      auto div = llvm::cast<mlir::AffineBinaryOpExpr>(x);
      if (auto a = constantOf(div.getRHS()); a && *a > 0) return {div.getLHS(), *a};
    }
    if (auto pulled = pullIntoFloorDiv(x)) return *pulled;
    return {x, 1};
  }

  // S + z floordiv a as (S * a + z, a), for the first term z floordiv a of
  // the sum with multiplier 1; none where there is no such term or S * a
  // could overflow.
  std::optional<std::pair<AffineExpr, int64_t>> pullIntoFloorDiv(AffineExpr x) {
    if (x.getKind() != AffineExprKind::Add) return std::nullopt;
    Sum sum = Sum::of(x);
    for (size_t t = 0; t < sum.terms.size(); ++t) {
      auto [base, m] = sum.terms[t];
      if (m != 1 || base.getKind() != AffineExprKind::FloorDiv) continue;
      auto div = llvm::cast<mlir::AffineBinaryOpExpr>(base);
      auto a = constantOf(div.getRHS());
      if (!a || *a <= 0) continue;
      Sum scaled;
      for (size_t u = 0; u < sum.terms.size(); ++u) {
        if (u != t) scaled.add(sum.terms[u].first, satMul(sum.terms[u].second, *a));
      }
      scaled.constant = satMul(sum.constant, *a);
      scaled.add(div.getLHS(), 1);
      AffineExpr y = scaled.build(x.getContext());
      Interval r = map_.getRange(y);
      if (r.lower == kMin || r.upper == kMax) return std::nullopt;
      return std::make_pair(y, *a);
    }
    return std::nullopt;
  }

  // Merges the digits of a mixed-radix number, q = y floordiv a:
  //   (q mod c) * k + (q floordiv c) * (c * k)             ->  q * k
  //   (q mod c) * k + ((q floordiv c) mod m) * (c * k)     ->  (q mod (c * m)) * k
  //   (q mod c) * k + ((q floordiv c + S) mod m) * (c * k) ->  ((q + S * c) mod (c * m)) * k
  // until no pair is left. All hold for every integer q (and sum S). The higher digit is
  // recognized in its simplified form, so a delinearized index
  //   (d0 floordiv 294) * 150528 + (((d0 * 128 + d1 floordiv 4) floordiv 168) mod 224) * 672
  //     + (((d0 * 512 + d1) floordiv 3) mod 224) * 3 + (d0 * 512 + d1) mod 3
  // folds back to d0 * 512 + d1.
  void mergeDigits(Sum& sum) {
    // Each merge takes two terms out; the cap bounds a pathological input.
    for (int merges = 0; merges < 64; ++merges) {
      bool changed = false;
      for (size_t i = 0; i < sum.terms.size() && !changed; ++i) {
        auto [low, k] = sum.terms[i];
        if (low.getKind() != AffineExprKind::Mod) continue;
        auto mod = llvm::cast<mlir::AffineBinaryOpExpr>(low);
        auto c = constantOf(mod.getRHS());
        if (!c || *c <= 0) continue;
        auto [y, a] = asFloorDiv(mod.getLHS());
        int64_t ac = satMul(a, *c);
        int64_t ck = satMul(*c, k);
        if (ac == kMax || ck == kMax || ck == kMin) continue;
        AffineExpr high = simplify(y.floorDiv(ac));
        if (constantOf(high)) continue;
        for (size_t j = 0; j < sum.terms.size(); ++j) {
          auto [other, m] = sum.terms[j];
          if (j == i || m != ck) continue;
          AffineExpr q = mod.getLHS();
          AffineExpr merged;
          if (other == high) {
            merged = q;
          } else if (other.getKind() == AffineExprKind::Mod) {
            auto otherMod = llvm::cast<mlir::AffineBinaryOpExpr>(other);
            auto radix = constantOf(otherMod.getRHS());
            if (!radix || *radix <= 0 || satMul(*c, *radix) == kMax) continue;
            std::optional<AffineExpr> number = withHigherTerms(q, high, otherMod.getLHS(), *c);
            if (!number) continue;
            merged = simplify(*number % satMul(*c, *radix));
          } else {
            continue;
          }
          sum.terms.erase(sum.terms.begin() + std::max(i, j));
          sum.terms.erase(sum.terms.begin() + std::min(i, j));
          Sum inner = Sum::of(merged);
          for (auto& [b, mult] : inner.terms) sum.add(b, satMul(mult, k));
          sum.constant = satAdd(sum.constant, satMul(inner.constant, k));
          changed = true;
          break;
        }
      }
      if (!changed) return;
    }
  }

  // The number whose digits mergeDigits merges, where the higher digit
  // reads `number` = high + S (S a sum of other terms, or none) and the
  // lower one q mod c, high = q floordiv c: q + S * c, whose floordiv c is
  // high + S and whose mod c is q mod c. The loop emitter's index folded
  // into threads, ((d1 * 128 + d0 floordiv 4) mod 502) * 4 + d0 mod 4
  // (d0 a thread of 4 elements), is (d1 * 512 + d0) mod 2008. None where
  // `high` is not a term of `number` or the sum could overflow.
  std::optional<AffineExpr> withHigherTerms(AffineExpr q, AffineExpr high, AffineExpr number,
                                            int64_t c) {
    if (number == high) return q;
    Sum rest = Sum::of(number);
    auto it = llvm::find_if(rest.terms, [&](const auto& t) { return t.first == high; });
    if (it == rest.terms.end() || it->second != 1) return std::nullopt;
    rest.terms.erase(it);
    Sum whole;
    for (const auto& [b, m] : rest.terms) whole.add(b, satMul(m, c));
    whole.constant = satMul(rest.constant, c);
    Sum low = Sum::of(q);
    for (const auto& [b, m] : low.terms) whole.add(b, m);
    whole.constant = satAdd(whole.constant, low.constant);
    AffineExpr result = whole.build(q.getContext());
    Interval r = map_.getRange(result);
    if (r.lower == kMin || r.upper == kMax) return std::nullopt;
    return result;
  }

  AffineExpr simplifySum(AffineExpr expr) {
    // A product of two non-constants stays as it is (not affine anyway).
    if (expr.getKind() == AffineExprKind::Mul) {
      auto bin = llvm::cast<mlir::AffineBinaryOpExpr>(expr);
      if (!constantOf(bin.getLHS()) && !constantOf(bin.getRHS())) {
        return simplify(bin.getLHS()) * simplify(bin.getRHS());
      }
    }
    return simplifiedSum(expr).build(expr.getContext());
  }

  struct FactorSplit {
    int64_t factor;  // g, a factor of the divisor
    Sum big;         // the terms g divides, divided by g
    Sum small;       // the other terms and the constant, in [0, g)
  };

  // A factor g of `divisor` (at most `maxFactor`) that divides some terms of
  // `sum`, such that the remaining terms and the constant stay in [0, g):
  // such a remainder cannot reach the next multiple of g. Largest g first.
  std::optional<FactorSplit> splitBySharedFactor(const Sum& sum, int64_t divisor,
                                                 int64_t maxFactor) {
    mlir::MLIRContext* ctx = map_.getContext();
    SmallVector<int64_t> candidates;
    for (const auto& [b, m] : sum.terms) {
      int64_t g = std::gcd(std::abs(m), divisor);
      if (g > 1 && g <= maxFactor) candidates.push_back(g);
    }
    llvm::sort(candidates, std::greater<int64_t>());
    for (int64_t g : candidates) {
      Sum big, small;
      for (const auto& [b, m] : sum.terms) {
        if (m % g == 0) {
          big.add(b, m / g);
        } else {
          small.add(b, m);
        }
      }
      small.constant = sum.constant;
      if (small.terms.empty() && maxFactor < divisor) continue;
      Interval r = map_.getRange(small.build(ctx));
      if (r.lower >= 0 && r.upper < g) return FactorSplit{g, big, small};
    }
    return std::nullopt;
  }

  // The gcd of the multipliers of the terms (and the constant).
  static int64_t gcdOf(const Sum& sum) {
    int64_t g = std::abs(sum.constant);
    for (const auto& [b, m] : sum.terms) g = std::gcd(g, std::abs(m));
    return g;
  }

  AffineExpr simplifyFloorDiv(mlir::AffineBinaryOpExpr div) {
    mlir::MLIRContext* ctx = div.getContext();
    AffineExpr lhs = simplify(div.getLHS());
    auto c = constantOf(simplify(div.getRHS()));
    if (!c || *c <= 0) return mlir::getAffineBinaryOpExpr(
        AffineExprKind::FloorDiv, lhs, simplify(div.getRHS()));
    if (*c == 1) return lhs;
    // (S + z floordiv a) floordiv c -> (S * a + z) floordiv (a * c): one
    // division, and the form the digits of a delinearized index share.
    if (auto pulled = pullIntoFloorDiv(lhs); pulled && satMul(pulled->second, *c) != kMax) {
      return simplify(pulled->first.floorDiv(satMul(pulled->second, *c)));
    }
    // (x floordiv a) floordiv c -> x floordiv (a * c)
    if (lhs.getKind() == AffineExprKind::FloorDiv) {
      auto inner = llvm::cast<mlir::AffineBinaryOpExpr>(lhs);
      if (auto a = constantOf(inner.getRHS()); a && *a > 0) {
        return simplify(inner.getLHS().floorDiv(satMul(*a, *c)));
      }
    }
    // Split off the terms that c divides: floor((c*q + r) / c) = q + floor(r/c).
    Sum sum = Sum::of(lhs);
    Sum quotient, rest;
    for (auto& [b, m] : sum.terms) {
      if (m % *c == 0) {
        quotient.add(b, m / *c);
      } else {
        rest.add(b, m);
      }
    }
    // A constant smaller than the divisor stays inside: (d0 - 1) floordiv 2
    // reads better than (d0 + 1) floordiv 2 - 1.
    if (std::abs(sum.constant) < *c) {
      rest.constant = sum.constant;
    } else {
      quotient.constant = floorDiv(sum.constant, *c);
      rest.constant = positiveMod(sum.constant, *c);
    }
    // floor((g*a + r) / (g*c')) = floor(a / c') for r in [0, g).
    int64_t divisor = *c;
    if (auto split = splitBySharedFactor(rest, divisor, /*maxFactor=*/divisor)) {
      rest = split->big;
      divisor /= split->factor;
    }
    AffineExpr restExpr = rest.build(ctx);
    AffineExpr restDiv;
    Interval restRange = map_.getRange(restExpr);
    if (restRange.lower >= 0 && restRange.upper < divisor) {
      restDiv = mlir::getAffineConstantExpr(0, ctx);
    } else if (divisor == 1) {
      restDiv = restExpr;
    } else {
      // Divide out a common factor: (g*a) floordiv (g*c') = a floordiv c'.
      int64_t g = std::gcd(gcdOf(rest), divisor);
      if (g > 1) {
        Sum reduced;
        for (auto& [b, m] : rest.terms) reduced.add(b, m / g);
        reduced.constant = rest.constant / g;
        restExpr = reduced.build(ctx);
        divisor /= g;
      }
      restDiv = divisor == 1 ? restExpr : restExpr.floorDiv(divisor);
    }
    return quotient.build(ctx) + restDiv;
  }

  AffineExpr simplifyMod(mlir::AffineBinaryOpExpr mod) {
    mlir::MLIRContext* ctx = mod.getContext();
    AffineExpr lhs = simplify(mod.getLHS());
    auto c = constantOf(simplify(mod.getRHS()));
    if (!c || *c <= 0) return mlir::getAffineBinaryOpExpr(
        AffineExprKind::Mod, lhs, simplify(mod.getRHS()));
    if (*c == 1) return mlir::getAffineConstantExpr(0, ctx);
    // (x mod a) mod c -> x mod c when c divides a.
    if (lhs.getKind() == AffineExprKind::Mod) {
      auto inner = llvm::cast<mlir::AffineBinaryOpExpr>(lhs);
      if (auto a = constantOf(inner.getRHS()); a && *a > 0 && *a % *c == 0) {
        lhs = inner.getLHS();
      }
    }
    // Terms that c divides do not change the result.
    Sum sum = Sum::of(lhs);
    Sum rest;
    for (auto& [b, m] : sum.terms) {
      if (m % *c != 0) rest.add(b, m);
    }
    rest.constant = std::abs(sum.constant) < *c ? sum.constant
                                                : positiveMod(sum.constant, *c);
    AffineExpr restExpr = rest.build(ctx);
    Interval r = map_.getRange(restExpr);
    if (r.lower >= 0 && r.upper < *c) return restExpr;
    // (g*a + r) mod (g*c') = g * (a mod c') + r for r in [0, g).
    if (auto split = splitBySharedFactor(rest, *c, /*maxFactor=*/*c - 1)) {
      int64_t g = split->factor;
      AffineExpr inner = split->big.build(ctx);
      Interval ri = map_.getRange(inner);
      AffineExpr innerMod = (ri.lower >= 0 && ri.upper < *c / g) ? inner : inner % (*c / g);
      return innerMod * g + split->small.build(ctx);
    }
    // (g*a) mod (g*c') = g * (a mod c').
    int64_t g = std::gcd(gcdOf(rest), *c);
    if (g > 1) {
      Sum reduced;
      for (auto& [b, m] : rest.terms) reduced.add(b, m / g);
      reduced.constant = rest.constant / g;
      AffineExpr inner = reduced.build(ctx);
      Interval ri = map_.getRange(inner);
      AffineExpr innerMod = (ri.lower >= 0 && ri.upper < *c / g)
                                ? inner
                                : inner % (*c / g);
      return innerMod * g;
    }
    return restExpr % *c;
  }

  const IndexingMap& map_;
};

IndexingMap IndexingMap::simplify() const {
  IndexingMap current = *this;
  // Each round may tighten ranges, which may enable more rewrites; a few
  // rounds reach the fixed point in practice, and the loop stops as soon as
  // nothing changes.
  constexpr int kMaxRounds = 8;
  for (int round = 0; round < kMaxRounds; ++round) {
    IndexingMap next = current;
    // 1. Constraints: simplify, tighten single-variable ranges, drop the
    //    implied ones.
    SmallVector<Constraint> kept;
    IndexingMapSimplifier simplifier(current);
    auto tighten = [&](AffineExpr var, Interval vb) {
      IndexingVar* target;
      if (auto d = llvm::dyn_cast<mlir::AffineDimExpr>(var)) {
        target = &next.dims_[d.getPosition()];
      } else {
        unsigned p = llvm::cast<mlir::AffineSymbolExpr>(var).getPosition();
        target = p < next.range_.size() ? &next.range_[p]
                                        : &next.runtime_[p - next.range_.size()];
      }
      target->bounds.lower = std::max(target->bounds.lower, vb.lower);
      target->bounds.upper = std::min(target->bounds.upper, vb.upper);
    };
    auto isVar = [](AffineExpr e) {
      return llvm::isa<mlir::AffineDimExpr>(e) || llvm::isa<mlir::AffineSymbolExpr>(e);
    };
    for (const auto& [expr, interval] : current.constraints_) {
      AffineExpr e = simplifier.simplify(expr);
      Sum sum = Sum::of(e);
      // k * v + rest in [k * a, k * b - 1] with rest in [0, k - 1] (an
      // unrolled or vectorized index: th * 4 + s) holds exactly when
      // v in [a, b - 1]: the constraint becomes v's range.
      bool folded = false;
      if (interval.lower != kMin && interval.upper != kMax) {
        for (size_t t = 0; t < sum.terms.size() && !folded; ++t) {
          auto [var, k] = sum.terms[t];
          if (!isVar(var) || k <= 1 || interval.lower % k != 0 ||
              (interval.upper + 1) % k != 0) {
            continue;
          }
          Sum rest = sum;
          rest.terms.erase(rest.terms.begin() + t);
          Interval r = current.getRange(rest.build(current.getContext()));
          if (r.lower < 0 || r.upper > k - 1) continue;
          tighten(var, {interval.lower / k, (interval.upper + 1) / k - 1});
          folded = true;
        }
      }
      if (folded) continue;
      // k * v + c in [lo, hi]  <=>  v in [ceil((lo-c)/k), floor((hi-c)/k)]
      if (sum.terms.size() == 1 &&
          (llvm::isa<mlir::AffineDimExpr>(sum.terms[0].first) ||
           llvm::isa<mlir::AffineSymbolExpr>(sum.terms[0].first)) &&
          interval.lower != kMin && interval.upper != kMax) {
        auto [var, k] = sum.terms[0];
        int64_t lo = satAdd(interval.lower, -sum.constant);
        int64_t hi = satAdd(interval.upper, -sum.constant);
        tighten(var, k > 0 ? Interval{ceilDiv(lo, k), floorDiv(hi, k)}
                           : Interval{ceilDiv(hi, k), floorDiv(lo, k)});
        continue;
      }
      Interval r = current.getRange(e);
      if (r.lower >= interval.lower && r.upper <= interval.upper) continue;
      // One constraint per expression (composition repeats them): the
      // intersection of their intervals.
      auto same = llvm::find_if(kept, [&](const Constraint& c) { return c.first == e; });
      if (same != kept.end()) {
        same->second.lower = std::max(same->second.lower, interval.lower);
        same->second.upper = std::min(same->second.upper, interval.upper);
        continue;
      }
      kept.push_back({e, interval});
    }
    next.constraints_ = kept;
    // 2. Results, with the ranges as they stand.
    IndexingMapSimplifier resultSimplifier(next);
    SmallVector<AffineExpr> results;
    for (AffineExpr e : current.map_.getResults()) {
      results.push_back(resultSimplifier.simplify(e));
    }
    next.map_ = mlir::AffineMap::get(current.map_.getNumDims(),
                                     current.map_.getNumSymbols(), results,
                                     current.getContext());
    next.sortConstraints();
    if (next.hasEmptyRange()) return next.knownEmpty();
    if (next.isIdenticalTo(current)) return next;
    current = std::move(next);
  }
  return current;
}

bool IndexingMap::hasEmptyRange() const {
  for (llvm::ArrayRef<IndexingVar> vars : {llvm::ArrayRef(dims_), llvm::ArrayRef(range_),
                                           llvm::ArrayRef(runtime_)}) {
    for (const IndexingVar& v : vars) {
      if (v.bounds.lower > v.bounds.upper) return true;
    }
  }
  return llvm::any_of(constraints_, [](const Constraint& c) {
    return c.second.lower > c.second.upper;
  });
}

IndexingMap IndexingMap::knownEmpty() const {
  IndexingMap empty = *this;
  for (llvm::MutableArrayRef<IndexingVar> vars : {llvm::MutableArrayRef(empty.dims_),
                                                  llvm::MutableArrayRef(empty.range_),
                                                  llvm::MutableArrayRef(empty.runtime_)}) {
    for (IndexingVar& v : vars) v.bounds = Interval{0, -1};
  }
  empty.constraints_.clear();
  SmallVector<AffineExpr> zeros(map_.getNumResults(),
                                mlir::getAffineConstantExpr(0, getContext()));
  empty.map_ = mlir::AffineMap::get(map_.getNumDims(), map_.getNumSymbols(), zeros,
                                    getContext());
  return empty;
}

bool IndexingMap::isCanonicalKnownEmpty() const {
  if (!constraints_.empty()) return false;
  for (AffineExpr e : map_.getResults()) {
    auto c = llvm::dyn_cast<mlir::AffineConstantExpr>(e);
    if (!c || c.getValue() != 0) return false;
  }
  for (llvm::ArrayRef<IndexingVar> vars : {llvm::ArrayRef(dims_), llvm::ArrayRef(range_),
                                           llvm::ArrayRef(runtime_)}) {
    for (const IndexingVar& v : vars) {
      if (v.bounds.lower != 0 || v.bounds.upper != -1) return false;
    }
  }
  return getNumDims() + getNumSymbols() > 0;
}

bool IndexingMap::isKnownEmpty() const {
  for (llvm::ArrayRef<IndexingVar> vars : {llvm::ArrayRef(dims_),
                                           llvm::ArrayRef(range_),
                                           llvm::ArrayRef(runtime_)}) {
    for (const IndexingVar& v : vars) {
      if (v.bounds.lower > v.bounds.upper) return true;
    }
  }
  for (const auto& [expr, interval] : constraints_) {
    Interval r = getRange(expr);
    if (r.upper < interval.lower || r.lower > interval.upper) return true;
  }
  return false;
}

//===----------------------------------------------------------------------===//
// Composition and variable removal
//===----------------------------------------------------------------------===//

IndexingMap IndexingMap::compose(const IndexingMap& first,
                                 const IndexingMap& second) {
  mlir::MLIRContext* ctx = first.getContext();
  unsigned fr = first.getNumRangeVars(), sr = second.getNumRangeVars();
  unsigned ft = first.getNumRuntimeVars();
  // Symbols of the result: first.range, second.range, first.rt, second.rt.
  auto sym = [&](unsigned i) { return mlir::getAffineSymbolExpr(i, ctx); };
  SmallVector<AffineExpr> firstSyms, secondSyms;
  for (unsigned i = 0; i < fr; ++i) firstSyms.push_back(sym(i));
  for (unsigned i = 0; i < ft; ++i) firstSyms.push_back(sym(fr + sr + i));
  for (unsigned i = 0; i < sr; ++i) secondSyms.push_back(sym(fr + i));
  for (unsigned i = 0; i < second.getNumRuntimeVars(); ++i) {
    secondSyms.push_back(sym(fr + sr + ft + i));
  }
  unsigned numSyms = first.getNumSymbols() + second.getNumSymbols();
  SmallVector<AffineExpr> firstDims;
  for (unsigned i = 0; i < first.getNumDims(); ++i) {
    firstDims.push_back(mlir::getAffineDimExpr(i, ctx));
  }
  // first's results, in the result's variables.
  SmallVector<AffineExpr> firstResults;
  for (AffineExpr e : first.getAffineMap().getResults()) {
    firstResults.push_back(e.replaceDimsAndSymbols(firstDims, firstSyms));
  }
  SmallVector<AffineExpr> results;
  for (AffineExpr e : second.getAffineMap().getResults()) {
    results.push_back(e.replaceDimsAndSymbols(firstResults, secondSyms));
  }
  SmallVector<Constraint> constraints;
  for (const auto& [e, interval] : first.getConstraints()) {
    constraints.push_back({e.replaceDimsAndSymbols(firstDims, firstSyms), interval});
  }
  for (const auto& [e, interval] : second.getConstraints()) {
    constraints.push_back({e.replaceDimsAndSymbols(firstResults, secondSyms), interval});
  }
  // first's results must lie in second's dimension ranges.
  for (auto [i, dim] : llvm::enumerate(second.getDimVars())) {
    if (i < firstResults.size()) constraints.push_back({firstResults[i], dim.bounds});
  }
  SmallVector<IndexingVar> dims(first.getDimVars());
  SmallVector<IndexingVar> range(first.getRangeVars());
  SmallVector<IndexingVar> runtime(first.getRuntimeVars());
  // Names must stay unique; the second map's symbols get default names.
  for (unsigned i = 0; i < sr; ++i) {
    range.push_back({"", second.getRangeVars()[i].bounds});
  }
  for (const IndexingVar& v : second.getRuntimeVars()) runtime.push_back({"", v.bounds});
  for (unsigned i = fr; i < range.size(); ++i) range[i].name.clear();
  for (unsigned i = ft; i < runtime.size(); ++i) runtime[i].name.clear();
  // Renaming the whole lists keeps the names unique (s0.., rt0..) when the
  // first map used default names too.
  bool defaultRange = llvm::all_of(llvm::enumerate(first.getRangeVars()), [](auto it) {
    return it.value().name == getDefaultVarName(VarKind::kRange, it.index());
  });
  bool defaultRuntime = llvm::all_of(llvm::enumerate(first.getRuntimeVars()), [](auto it) {
    return it.value().name == getDefaultVarName(VarKind::kRuntime, it.index());
  });
  if (!defaultRange) {
    for (unsigned i = fr; i < range.size(); ++i) range[i].name = "s_" + std::to_string(i);
  }
  if (!defaultRuntime) {
    for (unsigned i = ft; i < runtime.size(); ++i) runtime[i].name = "rt_" + std::to_string(i);
  }
  auto map = mlir::AffineMap::get(first.getNumDims(), numSyms, results, ctx);
  return IndexingMap(map, dims, range, runtime, constraints).simplify();
}

static IndexingMap removeUnused(const IndexingMap& map, bool dims, bool symbols) {
  mlir::MLIRContext* ctx = map.getContext();
  unsigned nd = map.getNumDims(), ns = map.getNumSymbols();
  llvm::SmallBitVector usedDims(nd), usedSyms(ns);
  auto mark = [&](AffineExpr e) {
    e.walk([&](AffineExpr sub) {
      if (auto d = llvm::dyn_cast<mlir::AffineDimExpr>(sub)) usedDims.set(d.getPosition());
      if (auto s = llvm::dyn_cast<mlir::AffineSymbolExpr>(sub)) usedSyms.set(s.getPosition());
    });
  };
  for (AffineExpr e : map.getAffineMap().getResults()) mark(e);
  for (const auto& [e, interval] : map.getConstraints()) mark(e);
  if (!dims) usedDims.set();
  if (!symbols) usedSyms.set();
  SmallVector<AffineExpr> dimRepl, symRepl;
  SmallVector<IndexingVar> newDims, newRange, newRuntime;
  for (unsigned i = 0; i < nd; ++i) {
    if (!usedDims.test(i)) {
      dimRepl.push_back(mlir::getAffineConstantExpr(0, ctx));
      continue;
    }
    dimRepl.push_back(mlir::getAffineDimExpr(newDims.size(), ctx));
    newDims.push_back(map.getDimVars()[i]);
  }
  // Range vars keep coming before runtime vars: count the kept range vars
  // first to number the runtime ones after them.
  unsigned keptRange = 0;
  for (unsigned i = 0; i < map.getNumRangeVars(); ++i) keptRange += usedSyms.test(i);
  for (unsigned i = 0; i < ns; ++i) {
    bool isRange = i < map.getNumRangeVars();
    if (!usedSyms.test(i)) {
      symRepl.push_back(mlir::getAffineConstantExpr(0, ctx));
      continue;
    }
    if (isRange) {
      symRepl.push_back(mlir::getAffineSymbolExpr(newRange.size(), ctx));
      newRange.push_back(map.getRangeVars()[i]);
    } else {
      symRepl.push_back(mlir::getAffineSymbolExpr(keptRange + newRuntime.size(), ctx));
      newRuntime.push_back(map.getRuntimeVars()[i - map.getNumRangeVars()]);
    }
  }
  SmallVector<AffineExpr> results;
  for (AffineExpr e : map.getAffineMap().getResults()) {
    results.push_back(e.replaceDimsAndSymbols(dimRepl, symRepl));
  }
  SmallVector<IndexingMap::Constraint> constraints;
  for (const auto& [e, interval] : map.getConstraints()) {
    constraints.push_back({e.replaceDimsAndSymbols(dimRepl, symRepl), interval});
  }
  auto affine = mlir::AffineMap::get(newDims.size(), newRange.size() + newRuntime.size(),
                                     results, ctx);
  return IndexingMap(affine, newDims, newRange, newRuntime, constraints);
}

mlir::FailureOr<IndexingMap> IndexingMap::withConstraint(AffineExpr expr,
                                                         Interval interval) const {
  if (interval.lower > interval.upper) return mlir::failure();
  bool valid = true;
  expr.walk([&](AffineExpr e) {
    if (auto d = llvm::dyn_cast<mlir::AffineDimExpr>(e)) {
      valid &= d.getPosition() < getNumDims();
    } else if (auto s = llvm::dyn_cast<mlir::AffineSymbolExpr>(e)) {
      valid &= s.getPosition() < getNumSymbols();
    }
  });
  if (!valid) return mlir::failure();
  IndexingMap result = *this;
  for (Constraint& c : result.constraints_) {
    if (c.first == expr) {
      c.second.lower = std::max(c.second.lower, interval.lower);
      c.second.upper = std::min(c.second.upper, interval.upper);
      return result;
    }
  }
  result.constraints_.push_back({expr, interval});
  result.sortConstraints();
  return result;
}

mlir::FailureOr<IndexingMap> IndexingMap::withDimBounds(unsigned dim, Interval bounds) const {
  if (dim >= getNumDims() || bounds.lower > bounds.upper) return mlir::failure();
  IndexingMap result = *this;
  result.dims_[dim].bounds = bounds;
  return result;
}

IndexingMap IndexingMap::withResults(llvm::ArrayRef<AffineExpr> results) const {
  IndexingMap copy = *this;
  copy.map_ = mlir::AffineMap::get(getNumDims(), getNumSymbols(), results, getContext());
  return copy;
}

mlir::FailureOr<IndexingMap> IndexingMap::getSubMap(unsigned result) const {
  if (result >= getNumResults()) return mlir::failure();
  return withResults(map_.getResult(result));
}

IndexingMap IndexingMap::convertSymbolsToDims() const {
  mlir::MLIRContext* ctx = getContext();
  unsigned nd = getNumDims();
  SmallVector<AffineExpr> symbolsAsDims;
  for (unsigned i = 0; i < getNumSymbols(); ++i) {
    symbolsAsDims.push_back(mlir::getAffineDimExpr(nd + i, ctx));
  }
  unsigned total = nd + getNumSymbols();
  auto convert = [&](AffineExpr e) { return e.replaceSymbols(symbolsAsDims); };
  SmallVector<AffineExpr> results;
  for (AffineExpr e : map_.getResults()) results.push_back(convert(e));
  SmallVector<IndexingVar> dims(dims_.begin(), dims_.end());
  // Symbols with their default names (s0, rt1) become dimensions with
  // theirs (d2, d3), as in XLA; names of their own stay.
  for (auto [kind, vars] : {std::pair{VarKind::kRange, &range_},
                            std::pair{VarKind::kRuntime, &runtime_}}) {
    for (auto [i, var] : llvm::enumerate(*vars)) {
      dims.push_back(var);
      if (var.name == getDefaultVarName(kind, i)) dims.back().name.clear();
    }
  }
  SmallVector<Constraint> constraints;
  for (const auto& [e, interval] : constraints_) constraints.push_back({convert(e), interval});
  return IndexingMap(mlir::AffineMap::get(total, 0, results, ctx), std::move(dims), {}, {},
                     std::move(constraints));
}

IndexingMap IndexingMap::removeUnusedSymbols() const {
  return removeUnused(*this, /*dims=*/false, /*symbols=*/true);
}

IndexingMap IndexingMap::removeUnusedDimensions() const {
  return removeUnused(*this, /*dims=*/true, /*symbols=*/false);
}

//===----------------------------------------------------------------------===//
// Evaluation
//===----------------------------------------------------------------------===//

SmallVector<int64_t> IndexingMap::evaluate(llvm::ArrayRef<int64_t> dims,
                                           llvm::ArrayRef<int64_t> symbols) const {
  SmallVector<int64_t> out;
  for (AffineExpr e : map_.getResults()) out.push_back(evaluateAffineExpr(e, dims, symbols));
  return out;
}

bool IndexingMap::contains(llvm::ArrayRef<int64_t> dims,
                           llvm::ArrayRef<int64_t> symbols) const {
  if (dims.size() != dims_.size() || symbols.size() != getNumSymbols()) return false;
  for (auto [v, var] : llvm::zip(dims, dims_)) {
    if (!var.bounds.contains(v)) return false;
  }
  for (auto [i, v] : llvm::enumerate(symbols)) {
    const IndexingVar& var = i < range_.size() ? range_[i] : runtime_[i - range_.size()];
    if (!var.bounds.contains(v)) return false;
  }
  for (const auto& [e, interval] : constraints_) {
    if (!interval.contains(evaluateAffineExpr(e, dims, symbols))) return false;
  }
  return true;
}

mlir::FailureOr<bool> IndexingMap::isBijection(llvm::ArrayRef<int64_t> shape,
                                               std::string& reason) const {
  // Enumerating costs one evaluation per point; past this the check is not a
  // test-time tool any more.
  constexpr int64_t kMaxPoints = int64_t{1} << 24;
  if (!runtime_.empty()) {
    reason = "the map has runtime variables";
    return mlir::failure();
  }
  if (shape.size() != getNumResults()) {
    reason = "the map has " + std::to_string(getNumResults()) +
             " results but the shape has rank " + std::to_string(shape.size());
    return false;
  }
  for (int64_t d : shape) {
    if (d < 0) {
      reason = "the shape has a negative dimension (" + std::to_string(d) + ")";
      return mlir::failure();
    }
  }
  SmallVector<const IndexingVar*> vars;
  for (const IndexingVar& v : dims_) vars.push_back(&v);
  for (const IndexingVar& v : range_) vars.push_back(&v);
  int64_t points = 1, elements = 1;
  for (const IndexingVar* v : vars) {
    if (v->bounds.lower > v->bounds.upper) {
      points = 0;
      break;
    }
    points = satMul(points, v->bounds.upper - v->bounds.lower + 1);
  }
  for (int64_t d : shape) elements = satMul(elements, d);
  if (points > kMaxPoints || elements > kMaxPoints) {
    reason = "the domain is too large to enumerate";
    return mlir::failure();
  }
  std::vector<uint8_t> hits(elements, 0);
  SmallVector<int64_t> point;
  for (const IndexingVar* v : vars) point.push_back(v->bounds.lower);
  unsigned nd = dims_.size();
  for (int64_t n = 0; n < points; ++n) {
    llvm::ArrayRef<int64_t> d(point.data(), nd);
    llvm::ArrayRef<int64_t> s(point.data() + nd, point.size() - nd);
    if (contains(d, s)) {
      SmallVector<int64_t> index = evaluate(d, s);
      int64_t linear = 0;
      for (auto [i, size] : llvm::zip(index, shape)) {
        if (i < 0 || i >= size) {
          reason = "a point of the domain maps outside the shape";
          return false;
        }
        linear = linear * size + i;
      }
      if (hits[linear]++) {
        reason = "two points of the domain map to the same element";
        return false;
      }
    }
    // Next point, last variable fastest.
    for (int i = static_cast<int>(point.size()) - 1; i >= 0; --i) {
      if (++point[i] <= vars[i]->bounds.upper) break;
      point[i] = vars[i]->bounds.lower;
    }
  }
  if (llvm::is_contained(hits, 0)) {
    reason = "some element of the shape is not reached";
    return false;
  }
  return true;
}

}  // namespace xla::gpu
