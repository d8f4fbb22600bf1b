//===- expand_bf16_conversions.cpp - -xla-gpu-expand-bf16-conversions -----===//

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Transforms/Passes.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/IR/TypeUtilities.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "passes/Passes.h"

namespace xla::gpu {

#define GEN_PASS_DEF_EXPANDBF16CONVERSIONSPASS
#include "passes/Passes.h.inc"

namespace {

bool convertsBf16(mlir::Operation* op) {
  if (!mlir::isa<mlir::arith::ExtFOp, mlir::arith::TruncFOp>(op)) return false;
  return mlir::getElementTypeOrSelf(op->getOperand(0).getType()).isBF16() ||
         mlir::getElementTypeOrSelf(op->getResult(0).getType()).isBF16();
}

// Whether `attr` is an f32 constant (or a splat of one) that `narrow`
// (bf16 or f16) holds exactly: a ReLU's 0, a max's -inf.
bool isExactConstant(mlir::Attribute attr, mlir::FloatType narrow) {
  auto splat = mlir::dyn_cast<mlir::SplatElementsAttr>(attr);
  auto value = mlir::dyn_cast<mlir::FloatAttr>(splat ? splat.getSplatValue<mlir::Attribute>()
                                                      : attr);
  if (!value || !value.getType().isF32()) return false;
  llvm::APFloat f = value.getValue();
  bool loses = false;
  llvm::APFloat::opStatus status =
      f.convert(narrow.getFloatSemantics(), llvm::APFloat::rmNearestTiesToEven, &loses);
  return status == llvm::APFloat::opOK && !loses;
}

// What isExactIn decided, per narrow type; `query` holds the values
// decided in the current outermost call.
struct ExactMemo {
  llvm::DenseMap<mlir::Value, bool> known;
  llvm::SmallVector<mlir::Value> query;
  void clear() {
    known.clear();
    query.clear();
  }
};

bool isExactIn(mlir::Value v, mlir::FloatType narrow, ExactMemo& memo, int depth = 0);

// The uses of stack slot `alloca`: GEPs of it (and of those), loads from
// them and stores into them. False where anything else uses it (its
// address stored, passed on).
struct SlotAccesses {
  llvm::SmallVector<mlir::LLVM::GEPOp> geps;
  llvm::SmallVector<mlir::LLVM::LoadOp> loads;
  llvm::SmallVector<mlir::LLVM::StoreOp> stores;
};
bool slotAccesses(mlir::LLVM::AllocaOp alloca, SlotAccesses& accesses) {
  llvm::SmallVector<mlir::Value> addresses = {alloca.getResult()};
  while (!addresses.empty()) {
    mlir::Value address = addresses.pop_back_val();
    for (mlir::Operation* user : address.getUsers()) {
      if (auto gep = mlir::dyn_cast<mlir::LLVM::GEPOp>(user)) {
        if (gep.getBase() != address) return false;
        accesses.geps.push_back(gep);
        addresses.push_back(gep.getResult());
      } else if (auto store = mlir::dyn_cast<mlir::LLVM::StoreOp>(user)) {
        if (store.getAddr() != address) return false;
        accesses.stores.push_back(store);
      } else if (auto load = mlir::dyn_cast<mlir::LLVM::LoadOp>(user)) {
        accesses.loads.push_back(load);
      } else {
        return false;
      }
    }
  }
  return true;
}

// Whether every value stored into the stack slot `alloca` (at any offset)
// is exact in `narrow`, and nothing but loads and such stores use it: a
// lane's own value that -xla-gpu-lower-kernel-to-cpu keeps in f32 for its
// warp's shuffle tree.
bool onlyExactStored(mlir::LLVM::AllocaOp alloca, mlir::FloatType narrow, ExactMemo& memo,
                     int depth) {
  SlotAccesses accesses;
  return slotAccesses(alloca, accesses) &&
         llvm::all_of(accesses.stores, [&](mlir::LLVM::StoreOp store) {
           return isExactIn(store.getValue(), narrow, memo, depth + 1);
         });
}

// Whether f32 value `v` is a `narrow` value (bf16 or f16: what extf of one
// makes) at every element: a constant `narrow` holds, a maximum, minimum,
// select, negation or absolute value of such values, which picks one of
// them (or a NaN, which the last truncf makes a NaN either way), and a
// load from a stack slot only such values are stored into. `memo` is
// `narrow`'s. A value is taken as exact while it is decided: a slot's
// store may read the slot (an accumulator: its first value exact, each
// next one the max of the last and exact values, is exact at every step).
// Each step of the decision is a conjunction, so an outermost call that
// found the value exact found every value it took so; one that did not
// forgets the values it found exact, which may have rested on it.
bool isExactIn(mlir::Value v, mlir::FloatType narrow, ExactMemo& memo, int depth) {
  if (auto it = memo.known.find(v); it != memo.known.end()) return it->second;
  memo.known[v] = true;
  memo.query.push_back(v);
  mlir::Operation* def = v.getDefiningOp();
  bool exact = false;
  if (def == nullptr || depth > 64 || !mlir::getElementTypeOrSelf(v.getType()).isF32()) {
    exact = false;
  } else if (auto constant = mlir::dyn_cast<mlir::arith::ConstantOp>(def)) {
    exact = isExactConstant(constant.getValue(), narrow);
  } else if (mlir::isa<mlir::arith::ExtFOp>(def)) {
    exact = mlir::getElementTypeOrSelf(def->getOperand(0).getType()) == narrow;
  } else if (mlir::isa<mlir::arith::MaximumFOp, mlir::arith::MinimumFOp, mlir::arith::MaxNumFOp,
                       mlir::arith::MinNumFOp, mlir::arith::NegFOp, mlir::math::AbsFOp>(def)) {
    exact = llvm::all_of(def->getOperands(), [&](mlir::Value o) {
      return isExactIn(o, narrow, memo, depth + 1);
    });
  } else if (auto select = mlir::dyn_cast<mlir::arith::SelectOp>(def)) {
    exact = isExactIn(select.getTrueValue(), narrow, memo, depth + 1) &&
            isExactIn(select.getFalseValue(), narrow, memo, depth + 1);
  } else if (auto load = mlir::dyn_cast<mlir::LLVM::LoadOp>(def)) {
    mlir::Value base = load.getAddr();
    while (auto gep = base.getDefiningOp<mlir::LLVM::GEPOp>()) base = gep.getBase();
    auto alloca = base.getDefiningOp<mlir::LLVM::AllocaOp>();
    exact = alloca && onlyExactStored(alloca, narrow, memo, depth);
  }
  memo.known[v] = exact;
  if (depth == 0) {
    if (!exact) {
      for (mlir::Value decided : memo.query) {
        if (memo.known.lookup(decided)) memo.known.erase(decided);
      }
    }
    memo.query.clear();
  }
  return exact;
}

// extf(truncf(x)) is x where x is exact in the narrow type (isExactIn): a
// bf16 or f16 max's chain of ops in f32 (each step rounded back and
// widened again, as the emitters write a narrow reducer) then needs no
// rounding at all, nor do its warps' shuffle trees (a lane's own value
// read back from its slot). A bf16 row max over [16384,256] rounded each
// element and each level of its trees, 1.59 -> 0.71 ms on one thread
// (XLA:CPU 0.17-0.23 on two). For f16 the trees were the point: LLVM's
// InstCombine folds fptrunc(max(fpext a, fpext b)) to an f16 max, which x86
// without AVX512-FP16 runs a lane at a time. Only a NaN's payload may
// differ: the round trip made every NaN quiet, and the last truncf does.
void foldExactRoundTrips(mlir::func::FuncOp f) {
  ExactMemo bf16Memo, f16Memo;
  llvm::SmallVector<mlir::arith::ExtFOp> folded;
  f.walk([&](mlir::arith::ExtFOp ext) {
    auto trunc = ext.getIn().getDefiningOp<mlir::arith::TruncFOp>();
    if (!trunc || trunc.getIn().getType() != ext.getType()) return;
    auto narrow = mlir::dyn_cast<mlir::FloatType>(mlir::getElementTypeOrSelf(trunc.getType()));
    if (!narrow || !(narrow.isBF16() || narrow.isF16()) ||
        !isExactIn(trunc.getIn(), narrow, narrow.isBF16() ? bf16Memo : f16Memo)) {
      return;
    }
    ext.replaceAllUsesWith(trunc.getIn());
    folded.push_back(ext);
  });
  for (mlir::arith::ExtFOp ext : folded) ext.erase();
}

// `type` with its elements of type `scalar` f32: a slot's element or an
// array of them; null for any other type.
mlir::Type widenedSlotType(mlir::Type type, mlir::Type scalar) {
  if (type == scalar) return mlir::Float32Type::get(type.getContext());
  if (auto array = mlir::dyn_cast<mlir::LLVM::LLVMArrayType>(type)) {
    if (mlir::Type element = widenedSlotType(array.getElementType(), scalar)) {
      return mlir::LLVM::LLVMArrayType::get(element, array.getNumElements());
    }
  }
  return nullptr;
}

// The bf16 or f16 value that i32 `v` holds as a warp's shuffle buffer
// does (-xla-gpu-lower-kernel-to-cpu: extui(bitcast(x to i16) to i32)),
// or null.
mlir::Value shuffledValue(mlir::Value v) {
  auto ext = v.getDefiningOp<mlir::arith::ExtUIOp>();
  auto cast = ext ? ext.getIn().getDefiningOp<mlir::arith::BitcastOp>() : nullptr;
  if (!ext || !ext.getType().isInteger(32) || !cast || !cast.getType().isInteger(16)) return {};
  auto narrow = mlir::dyn_cast<mlir::FloatType>(cast.getIn().getType());
  return narrow && (narrow.isBF16() || narrow.isF16()) ? cast.getIn() : mlir::Value();
}

// Stack slots of bf16 or f16 values kept in f32 where that is the same
// value: every value stored is exact in the narrow type (a truncf of an
// exact f32 value, isExactIn, or a narrow constant, or one loaded from the
// slot) and every value loaded is only widened (extf to f32) or stored
// back. The stores then take the f32 value and the loads replace their
// extfs. Such slots are a reducer's accumulators and its warps' results
// that -xla-gpu-lower-kernel-to-cpu keeps across barriers (and the shared
// tile they go through): an f16 row max over [4096,1024] kept each lane's
// accumulator in f16, converted at every step, and its warps' trees read
// f16 values that LLVM's SLP vectorizer left scalar (InstCombine had made
// their maxima f16 ones again). So are the i32 slots of a warp's shuffle
// buffer that hold such values' bits (extui(bitcast) stored, extf(bitcast(
// trunci)) loaded): a lane's f16 result converted to f16 for it
// (vcvtps2ph) and back in the tree. As in foldExactRoundTrips only a
// NaN's payload may differ.
void widenExactSlots(mlir::func::FuncOp f) {
  ExactMemo bf16Memo, f16Memo;
  llvm::SmallVector<mlir::LLVM::AllocaOp> allocas;
  f.walk([&](mlir::LLVM::AllocaOp alloca) { allocas.push_back(alloca); });
  mlir::Type f32 = mlir::Float32Type::get(f.getContext());
  for (mlir::LLVM::AllocaOp alloca : allocas) {
    mlir::Type element = alloca.getElemType();
    auto array = mlir::dyn_cast<mlir::LLVM::LLVMArrayType>(element);
    mlir::Type scalar = array ? array.getElementType() : element;
    // i32: a shuffle buffer, whose narrow type its stores tell.
    const bool shuffled = scalar.isInteger(32);
    if (!shuffled && !(scalar.isBF16() || scalar.isF16())) continue;
    SlotAccesses accesses;
    if (!slotAccesses(alloca, accesses) ||
        !llvm::all_of(accesses.geps, [&](mlir::LLVM::GEPOp gep) {
          return widenedSlotType(gep.getElemType(), scalar) != nullptr;
        }) ||
        !llvm::all_of(accesses.loads,
                      [&](mlir::LLVM::LoadOp load) { return load.getType() == scalar; })) {
      continue;
    }
    auto& geps = accesses.geps;
    auto& loads = accesses.loads;
    auto& stores = accesses.stores;
    bool widenable = true;
    // A value loaded may also be stored again into the slot (a thread past
    // a row's end keeps its accumulator: loaded and stored back as it is).
    auto fromSlot = [&](mlir::Value v) {
      auto load = v.getDefiningOp<mlir::LLVM::LoadOp>();
      return load && llvm::is_contained(loads, load);
    };
    // The narrow value each store holds (null: stored back from the slot).
    llvm::SmallVector<mlir::Value> narrowStored;
    mlir::FloatType narrow = shuffled ? nullptr : mlir::cast<mlir::FloatType>(scalar);
    for (mlir::LLVM::StoreOp store : stores) {
      mlir::Value v = store.getValue();
      if (fromSlot(v)) {
        narrowStored.push_back({});
        continue;
      }
      if (shuffled) v = shuffledValue(v);
      if (!v || (narrow && v.getType() != narrow)) {
        widenable = false;
        break;
      }
      narrow = mlir::cast<mlir::FloatType>(v.getType());
      auto trunc = v.getDefiningOp<mlir::arith::TruncFOp>();
      widenable = trunc ? trunc.getIn().getType().isF32() &&
                              isExactIn(trunc.getIn(), narrow,
                                        narrow.isBF16() ? bf16Memo : f16Memo)
                        : v.getDefiningOp<mlir::arith::ConstantOp>() != nullptr;
      if (!widenable) break;
      narrowStored.push_back(v);
    }
    if (!widenable || !narrow) continue;
    // The extfs to f32 that each load's value reaches (through trunci and
    // bitcast for a shuffle buffer), and the ops between.
    llvm::SmallVector<mlir::Operation*> extensions, between;
    auto reaches = [&](mlir::Operation* op, auto& self) -> bool {
      for (mlir::OpOperand& use : op->getResult(0).getUses()) {
        mlir::Operation* user = use.getOwner();
        auto store = mlir::dyn_cast<mlir::LLVM::StoreOp>(user);
        if (store && use.getOperandNumber() == 0 && llvm::is_contained(stores, store) &&
            mlir::isa<mlir::LLVM::LoadOp>(op)) {
          continue;
        }
        auto ext = mlir::dyn_cast<mlir::arith::ExtFOp>(user);
        if (ext && ext.getIn().getType() == narrow && ext.getType().isF32()) {
          extensions.push_back(ext);
          continue;
        }
        bool step = shuffled && ((mlir::isa<mlir::arith::TruncIOp>(user) &&
                                  user->getResult(0).getType().isInteger(16)) ||
                                 (mlir::isa<mlir::arith::BitcastOp>(user) &&
                                  user->getResult(0).getType() == narrow));
        if (!step || !self(user, self)) return false;
        between.push_back(user);
      }
      return true;
    };
    widenable = llvm::all_of(loads, [&](mlir::LLVM::LoadOp load) {
      return reaches(load.getOperation(), reaches);
    });
    if (!widenable) continue;
    alloca.setElemType(widenedSlotType(element, scalar));
    for (mlir::LLVM::GEPOp gep : geps) gep.setElemType(widenedSlotType(gep.getElemType(), scalar));
    for (auto [store, v] : llvm::zip(stores, narrowStored)) {
      if (!v) continue;  // f32 with its load
      mlir::Value wide;
      if (auto trunc = v.getDefiningOp<mlir::arith::TruncFOp>()) {
        wide = trunc.getIn();
      } else {
        mlir::OpBuilder b(store);
        wide = b.create<mlir::arith::ExtFOp>(store.getLoc(), f32, v);
      }
      mlir::Value old = store.getValue();
      store.getValueMutable().assign(wide);
      // What made the old value, where nothing else uses it.
      for (mlir::Operation* def = old.getDefiningOp(); def && def->use_empty();) {
        mlir::Value in = def->getNumOperands() == 1 ? def->getOperand(0) : mlir::Value();
        def->erase();
        def = in ? in.getDefiningOp() : nullptr;
        if (def && !mlir::isa<mlir::arith::BitcastOp, mlir::arith::TruncFOp>(def)) break;
      }
    }
    for (mlir::LLVM::LoadOp load : loads) load.getResult().setType(f32);
    for (mlir::Operation* ext : extensions) {
      mlir::Value loaded = ext->getOperand(0);
      while (!mlir::isa<mlir::LLVM::LoadOp>(loaded.getDefiningOp())) {
        loaded = loaded.getDefiningOp()->getOperand(0);
      }
      ext->getResult(0).replaceAllUsesWith(loaded);
      ext->erase();
    }
    // Outermost last: each one's users are gone by then.
    for (mlir::Operation* op : between) op->erase();
    // The values stored and loaded changed: what was decided of them may not
    // hold.
    bf16Memo.clear();
    f16Memo.clear();
  }
}

// truncf to bf16 of a bf16-exact value (what is left after
// foldExactRoundTrips: a bf16 max's result) keeps the high half of its
// bits, a NaN made the quiet NaN 0x7fc0 as the rounding makes it: no
// rounding's and and two adds.
void truncateExactValues(mlir::func::FuncOp f) {
  ExactMemo memo;
  llvm::SmallVector<mlir::arith::TruncFOp> exact;
  f.walk([&](mlir::arith::TruncFOp trunc) {
    if (mlir::getElementTypeOrSelf(trunc.getType()).isBF16() &&
        mlir::getElementTypeOrSelf(trunc.getIn().getType()).isF32() &&
        isExactIn(trunc.getIn(), mlir::cast<mlir::FloatType>(
                                     mlir::getElementTypeOrSelf(trunc.getType())),
                  memo)) {
      exact.push_back(trunc);
    }
  });
  for (mlir::arith::TruncFOp trunc : exact) {
    mlir::OpBuilder b(trunc);
    mlir::Location loc = trunc.getLoc();
    mlir::Type f32 = trunc.getIn().getType();
    auto like = [&](mlir::Type element) {
      auto shaped = mlir::dyn_cast<mlir::ShapedType>(f32);
      return shaped ? shaped.clone(element) : element;
    };
    mlir::Type i32 = like(b.getI32Type()), i16 = like(b.getI16Type());
    auto constant = [&](mlir::Type type, int64_t value) -> mlir::Value {
      auto element = mlir::cast<mlir::IntegerType>(mlir::getElementTypeOrSelf(type));
      mlir::TypedAttr attr = b.getIntegerAttr(element, value);
      if (auto shaped = mlir::dyn_cast<mlir::ShapedType>(type)) {
        attr = mlir::SplatElementsAttr::get(shaped, attr);
      }
      return b.create<mlir::arith::ConstantOp>(loc, attr);
    };
    mlir::Value bits = b.create<mlir::arith::BitcastOp>(loc, i32, trunc.getIn());
    mlir::Value high = b.create<mlir::arith::ShRUIOp>(loc, bits, constant(i32, 16));
    mlir::Value kept = b.create<mlir::arith::TruncIOp>(loc, i16, high);
    mlir::Value nan = b.create<mlir::arith::CmpFOp>(loc, mlir::arith::CmpFPredicate::UNO,
                                                    trunc.getIn(), trunc.getIn());
    mlir::Value picked = b.create<mlir::arith::SelectOp>(loc, nan, constant(i16, 0x7fc0), kept);
    mlir::Value result = b.create<mlir::arith::BitcastOp>(loc, trunc.getType(), picked);
    trunc.getResult().replaceAllUsesWith(result);
    trunc.erase();
  }
}

class ExpandBf16ConversionsPass
    : public impl::ExpandBf16ConversionsPassBase<ExpandBf16ConversionsPass> {
 public:
  void runOnOperation() override {
    // The patterns go to the conversions alone: a greedy rewrite of the
    // whole function would visit (and try to fold) every op, ~1 ms of a
    // column sum's lowering with no bf16 in it.
    widenExactSlots(getOperation());
    foldExactRoundTrips(getOperation());
    truncateExactValues(getOperation());
    llvm::SmallVector<mlir::Operation*> conversions;
    getOperation().walk([&](mlir::Operation* op) {
      if (convertsBf16(op)) conversions.push_back(op);
    });
    if (conversions.empty()) return;
    mlir::RewritePatternSet patterns(&getContext());
    mlir::arith::populateExpandBFloat16Patterns(patterns);
    mlir::GreedyRewriteConfig config;
    config.setStrictness(mlir::GreedyRewriteStrictness::ExistingOps);
    if (failed(mlir::applyOpPatternsGreedily(conversions, std::move(patterns), config))) {
      signalPassFailure();
    }
  }
};

}  // namespace
}  // namespace xla::gpu
