//===- lower_kernel_to_cpu.cpp - -xla-gpu-lower-kernel-to-cpu -------------===//
//
// GPU semantics on one CPU thread per call: every thread of a block runs a
// phase before any thread runs the next, so a barrier is the boundary of two
// loops over the threads, and values crossing it live in per-thread arrays.
//
//===----------------------------------------------------------------------===//

#include <array>
#include <functional>
#include <numeric>
#include <optional>
#include <type_traits>

#include "dialects/xla_gpu/XlaGpuDialect.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Complex/IR/Complex.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/FunctionCallUtils.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "llvm/ADT/APInt.h"
#include "llvm/ADT/BitVector.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Interfaces/DataLayoutInterfaces.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "mlir/Transforms/LoopInvariantCodeMotionUtils.h"
#include "passes/Passes.h"
#include "passes/ValueRanges.h"

namespace xla::gpu {

#define GEN_PASS_DEF_LOWERKERNELTOCPUPASS
#include "passes/Passes.h.inc"

namespace {

using llvm::SmallVector;
using mlir::Value;

// `element`, or a vector of it shaped as `shaped` is.
mlir::Type shapedLike(mlir::Type shaped, mlir::Type element) {
  if (auto vt = llvm::dyn_cast<mlir::VectorType>(shaped)) return vt.clone(element);
  return element;
}

// An i32 constant `v`, splat if `i32` is a vector type.
Value i32Constant(mlir::PatternRewriter& rewriter, mlir::Location loc, mlir::Type i32,
                  int32_t v) {
  mlir::TypedAttr attr = rewriter.getI32IntegerAttr(v);
  if (auto vt = llvm::dyn_cast<mlir::VectorType>(i32)) {
    attr = mlir::DenseElementsAttr::get(vt, attr);
  }
  return rewriter.create<mlir::arith::ConstantOp>(loc, attr);
}

// f64 -> f16 and f64 -> bf16 have no x86 instruction: LLVM calls
// compiler-rt's __truncdfhf2/__truncdfbf2, which the JIT finds only if some
// library of the process happens to export them. In IR instead: f64 -> f32
// rounded to odd, then f32 -> the narrow type (an instruction, or integer
// code from arith-expand for bf16). Rounding to odd keeps the sticky bit, and
// f32 carries more than two bits beyond f16's or bf16's significand, so the
// second rounding is the correctly rounded one (Boldo & Melquiond).
struct TruncF64ThroughF32 : public mlir::OpRewritePattern<mlir::arith::TruncFOp> {
  using OpRewritePattern::OpRewritePattern;
  mlir::LogicalResult matchAndRewrite(mlir::arith::TruncFOp op,
                                      mlir::PatternRewriter& rewriter) const override {
    mlir::Type from = mlir::getElementTypeOrSelf(op.getIn().getType());
    mlir::Type to = mlir::getElementTypeOrSelf(op.getType());
    if (!from.isF64() || !(to.isF16() || to.isBF16())) {
      return rewriter.notifyMatchFailure(op, "not f64 -> f16/bf16");
    }
    mlir::Location loc = op.getLoc();
    mlir::Type f32 = shapedLike(op.getType(), rewriter.getF32Type());
    mlir::Type i32 = shapedLike(op.getType(), rewriter.getI32Type());
    auto i32Const = [&](int32_t v) { return i32Constant(rewriter, loc, i32, v); };
    Value x = op.getIn();
    Value nearest = rewriter.create<mlir::arith::TruncFOp>(loc, f32, x);
    Value back = rewriter.create<mlir::arith::ExtFOp>(loc, x.getType(), nearest);
    // Ordered: a NaN is exact (and keeps its payload).
    Value inexact = rewriter.create<mlir::arith::CmpFOp>(loc, mlir::arith::CmpFPredicate::ONE,
                                                         back, x);
    Value bits = rewriter.create<mlir::arith::BitcastOp>(loc, i32, nearest);
    Value one = i32Const(1);
    Value even = rewriter.create<mlir::arith::CmpIOp>(
        loc, mlir::arith::CmpIPredicate::eq,
        rewriter.create<mlir::arith::AndIOp>(loc, bits, one), i32Const(0));
    // Rounded away from zero: one step back towards it (the magnitude is in
    // the low 31 bits), else one step on; either lands on an odd pattern.
    Value away = rewriter.create<mlir::arith::CmpFOp>(
        loc, mlir::arith::CmpFPredicate::OGT, rewriter.create<mlir::math::AbsFOp>(loc, back),
        rewriter.create<mlir::math::AbsFOp>(loc, x));
    Value step = rewriter.create<mlir::arith::SelectOp>(loc, away, i32Const(-1), one);
    Value fix = rewriter.create<mlir::arith::AndIOp>(loc, inexact, even);
    Value odd = rewriter.create<mlir::arith::SelectOp>(
        loc, fix, rewriter.create<mlir::arith::AddIOp>(loc, bits, step), bits);
    Value f = rewriter.create<mlir::arith::BitcastOp>(loc, f32, odd);
    rewriter.replaceOpWithNewOp<mlir::arith::TruncFOp>(op, op.getType(), f);
    return mlir::success();
  }
};

// An integer -> bf16 conversion has no x86 instruction without AVX512-BF16:
// LLVM converts to f32 and calls compiler-rt's __truncsfbf2 for the rest,
// which no library of the process may export (libgcc has it from GCC 13
// on: a Zen 2/3 host with Debian's GCC 12 could not load such a kernel).
// Through f32 in IR instead, rounded to bf16 in integer code as
// arith-expand rounds an f32 -> bf16 truncf (to nearest even, by a bias
// that carries into the exponent; an integer is never NaN). Not as a
// truncf: the canonicalizer folds truncf(sitofp) back into one sitofp
// where f32 holds the integer exactly (i1 to i16). The same two roundings
// as LLVM's promotion to f32 (and XLA:CPU's); exact up to 24 bits.
template <typename Op>
struct IntToBF16ThroughF32 : public mlir::OpRewritePattern<Op> {
  using mlir::OpRewritePattern<Op>::OpRewritePattern;
  mlir::LogicalResult matchAndRewrite(Op op, mlir::PatternRewriter& rewriter) const override {
    if (!mlir::getElementTypeOrSelf(op.getType()).isBF16()) {
      return rewriter.notifyMatchFailure(op, "not to bf16");
    }
    mlir::Location loc = op.getLoc();
    auto like = [&](mlir::Type element) { return shapedLike(op.getType(), element); };
    mlir::Type i32 = like(rewriter.getI32Type());
    auto i32Const = [&](int32_t v) { return i32Constant(rewriter, loc, i32, v); };
    Value wide = rewriter.create<Op>(loc, like(rewriter.getF32Type()), op.getIn());
    Value bits = rewriter.create<mlir::arith::BitcastOp>(loc, i32, wide);
    Value sixteen = i32Const(16);
    Value kept = rewriter.create<mlir::arith::AndIOp>(
        loc, rewriter.create<mlir::arith::ShRUIOp>(loc, bits, sixteen), i32Const(1));
    Value bias = rewriter.create<mlir::arith::AddIOp>(loc, kept, i32Const(0x7fff));
    Value rounded = rewriter.create<mlir::arith::ShRUIOp>(
        loc, rewriter.create<mlir::arith::AddIOp>(loc, bits, bias), sixteen);
    Value half = rewriter.create<mlir::arith::TruncIOp>(loc, like(rewriter.getI16Type()), rounded);
    rewriter.replaceOpWithNewOp<mlir::arith::BitcastOp>(op, op.getType(), half);
    return mlir::success();
  }
};

// x86 has no vector integer division: LLVM divides integer elements one
// at a time (idiv). Through floats instead, which vectorizes (vdivps,
// vdivpd): i8 and i16 through f32, i32 through f64. With p the float's
// significand bits (24, 53) and |a| < 2^(p - 8) (16-bit a in f32, 32-bit
// a in f64), the float quotient is exact when it is an integer, and
// otherwise at least 1 / |b| from the next integer away from zero while
// its error is below |a / b| 2^-p < 2^-8 / |b| -- so truncating it is the
// integer quotient (it never rounds past the integer toward zero, which is
// a float). The remainder is a - b * q. (Division by zero and the minimum
// by -1 are undefined in arith as in LLVM; the emitters guard them with
// selects before the division.) An i32 division by a constant stays: LLVM
// makes it a multiply and shifts, which vectorize. An s32[4096,1024]
// divide (a varying divisor) took 3.8 ms with idiv, 0.7 through f64.
template <typename Op>
struct IntDivisionThroughFloat : public mlir::OpRewritePattern<Op> {
  using mlir::OpRewritePattern<Op>::OpRewritePattern;
  mlir::LogicalResult matchAndRewrite(Op op, mlir::PatternRewriter& rewriter) const override {
    auto integer = llvm::dyn_cast<mlir::IntegerType>(mlir::getElementTypeOrSelf(op.getType()));
    if (!integer || (integer.getWidth() != 8 && integer.getWidth() != 16 &&
                     integer.getWidth() != 32)) {
      return rewriter.notifyMatchFailure(op, "not i8, i16 or i32");
    }
    Value a = op.getLhs(), b = op.getRhs();
    bool wide = integer.getWidth() == 32;
    if (wide && mlir::matchPattern(b, mlir::m_Constant())) {
      return rewriter.notifyMatchFailure(op, "an i32 division by a constant");
    }
    constexpr bool isSigned = std::is_same_v<Op, mlir::arith::DivSIOp> ||
                              std::is_same_v<Op, mlir::arith::RemSIOp>;
    constexpr bool isRemainder = std::is_same_v<Op, mlir::arith::RemSIOp> ||
                                 std::is_same_v<Op, mlir::arith::RemUIOp>;
    mlir::Location loc = op.getLoc();
    mlir::Type floatType = wide ? rewriter.getF64Type() : rewriter.getF32Type();
    if (auto vector = llvm::dyn_cast<mlir::VectorType>(op.getType())) {
      floatType = vector.clone(floatType);
    }
    auto toFloat = [&](Value v) -> Value {
      if (isSigned) return rewriter.create<mlir::arith::SIToFPOp>(loc, floatType, v);
      return rewriter.create<mlir::arith::UIToFPOp>(loc, floatType, v);
    };
    Value fa = toFloat(a);
    Value fb = toFloat(b);
    Value quotient = rewriter.create<mlir::arith::DivFOp>(loc, fa, fb);
    Value q;
    if (isSigned) {
      q = rewriter.create<mlir::arith::FPToSIOp>(loc, op.getType(), quotient);
    } else {
      q = rewriter.create<mlir::arith::FPToUIOp>(loc, op.getType(), quotient);
    }
    if (isRemainder) {
      q = rewriter.create<mlir::arith::SubIOp>(loc, a, rewriter.create<mlir::arith::MulIOp>(loc, b, q));
    }
    rewriter.replaceOp(op, q);
    return mlir::success();
  }
};

// The launch grid, (x, y, z) for threads of a block and blocks. The CPU
// loops run over linear ids (x fastest, as CUDA numbers the threads of a
// warp); each id is recovered from them.
struct Grid {
  std::array<int64_t, 3> threads = {1, 1, 1};
  std::array<int64_t, 3> blocks = {1, 1, 1};
  // The order the blocks run in (`xla.block_order`, see findGrid): the
  // linear block id is the row-major index into a grid of `tiles`, and the
  // CPU runs that grid row-major with its dimensions taken in `order`
  // (outermost first). Empty: in id order.
  SmallVector<int64_t> tiles, order;
  int64_t numThreads() const { return threads[0] * threads[1] * threads[2]; }
  int64_t numBlocks() const { return blocks[0] * blocks[1] * blocks[2]; }

  // The linear id of the block that runs `visit`-th.
  int64_t blockAt(int64_t visit) const {
    if (order.empty()) return visit;
    int64_t id = 0;
    for (int64_t d = static_cast<int64_t>(order.size()) - 1; d >= 0; --d) {
      id += visit % tiles[order[d]] * strideOf(order[d]);
      visit /= tiles[order[d]];
    }
    return id;
  }
  // The row-major stride of tile dimension d in the block id.
  int64_t strideOf(int64_t d) const {
    int64_t stride = 1;
    for (int64_t i = d + 1; i < static_cast<int64_t>(tiles.size()); ++i) stride *= tiles[i];
    return stride;
  }
};

// The x, y or z id (dimension d) within a linear id over `counts`.
int64_t idAt(int64_t linear, const std::array<int64_t, 3>& counts, int d) {
  int64_t below = 1;
  for (int i = 0; i < d; ++i) below *= counts[i];
  return (linear / below) % counts[d];
}

// As a GPU: at most kMaxThreadsPerBlock (Passes.h) threads per block; grid
// dimensions below 2^31.
constexpr int64_t kMaxGridDim = int64_t{1} << 31;
// The storage a call of the lowered kernel needs (see KernelLowering::run).
constexpr uint64_t kMaxStackStorageBytes = uint64_t{1} << 20;
constexpr uint64_t kMaxStorageBytes = uint64_t{1} << 30;
// A result argument's attribute: the bytes of it each block writes and
// reads back, at [block * bytes, (block + 1) * bytes), and nothing else
// reads (a row program's side value). The CPU target keeps them per block
// in its storage instead of the argument's memory.
constexpr llvm::StringLiteral kBlockLocalAttr = "xla.block_local_bytes";
// Blocks run phase by phase in batches of at most kMaxBatch, whose slots and
// shared memory stay within kBatchStorageBytes (a core's L2 holds them) for
// an accumulation, kBatchL1Bytes (half a core's L1) otherwise: a batch of
// 16 transpose+add f32[1024,1024] tiles (4 KiB each) had read its tiles
// back from the L2; in batches of 3, 0.85-0.87x the time (A/B in one
// process, bits the same; the f32[2048,4096] one, out of the L3, 1.03-1.05x
// slower, the other transposes the same).
constexpr int64_t kMaxBatch = 16;
// Blocks whose accumulations read this far from their neighbours' run
// unbatched (see blocksFarApart).
constexpr int64_t kFarBlockBytes = 4096;
// Vectors of at most this many elements are spilled one array per element.
constexpr int64_t kMaxComponents = 16;
constexpr uint64_t kBatchStorageBytes = uint64_t{512} << 10;
constexpr uint64_t kBatchL1Bytes = uint64_t{16} << 10;
// An interchanged accumulation whose carried values' slots (all threads of
// a batch) reach this size -- past half a core's L1 -- runs kStepsPerVisit
// steps each time a thread's slots are loaded (emitInterchanged).
constexpr uint64_t kStepsPerVisitSlotBytes = uint64_t{16} << 10;
constexpr int64_t kStepsPerVisit = 8;
// The side of the squares a transposing copy moves through registers
// (emitTransposingCopy: AVX's 8 x 8 of 32-bit elements).
constexpr int64_t kTransposeTile = 8;
// A transposing write (emitTransposingWrite) moves squares of one 512-bit
// vector a side, of tiles whose rows span at most two vectors (a square's
// part of a row is picked from both) and that make at most
// kMaxWriteSquares squares (each square's shuffles are emitted whole).
constexpr int64_t kWriteVectorBits = 512;
constexpr int64_t kMaxWriteSquares = 4;
// A permuting copy (emitPermutingCopy) moves rows of one or two 512-bit
// vectors, at most kMaxPermutedRows of them (each row's shuffles are
// emitted whole).
constexpr int64_t kMaxPermutedRows = 128;
// Lane loops of at most this many lanes a warp, in a loop over warps, are
// unrolled (emitThreadLoops).
constexpr int64_t kMaxUnrolledLanes = 4;
// Marks unrollAtLanePeriod's loops of steps while the kernel is lowered.
// LLVM vectorizes them kPeriodStepsWidth steps a vector: an interleave
// group of u copies a step is u vectors' shuffles, which at 16 steps
// (AVX-512's f32 width) took LLVM longer to generate and ran no faster. At
// 8: an NHWC image's normalization per channel (u8 in, 3 lanes a step)
// 0.11-0.13 -> 0.09-0.11 ms a kernel call, compiled in 15.7 ms instead of
// 18.3; its flip along W and a nearest upsampling (6 lanes a step) the
// same run time, compiled 1-3 ms faster. A loop that only permutes
// narrower elements (narrowPermutationBytes) takes as many more steps a
// vector, the bytes of 8 steps of 32-bit ones: 8 steps of a u8 flip's 3
// bytes were 24-byte vectors (A/B in one process: a u8 flip along W of
// [16,224,224,3] 0.040-0.041 -> 0.029-0.031 ms a kernel call, a u8 pad
// of H and W 0.033 -> 0.029-0.030, a bf16 flip 0.057-0.059 ->
// 0.052-0.054, bits the same).
constexpr llvm::StringLiteral kPeriodSteps = "xla.period_steps";
constexpr int64_t kPeriodStepsWidth = 8;
// The shortest lane loop periodOf picks for its divisors: a warp.
constexpr int64_t kMinPeriod = 32;
// A warp's shuffle tree computes the values it shuffles at the lanes that
// keep its result (see run()) where they read at most this many loads a
// lane; a value of more is computed by every lane first, in a lane loop
// of its own. A bf16 row max's thread reads 8 elements (its loop of two
// vectors of 4 unrolled): lane 0 of each warp loading all 32 lanes' 8,
// scalar, ran 11 ms on one thread over bf16[16384,256] (the f32 one,
// whose thread loop stays a loop, 1.4 ms).
constexpr int64_t kMaxLoadsAtLanes = 2;
// Marks the lane loops while the kernel is lowered (see foldsTail).
constexpr llvm::StringLiteral kLaneLoop = "xla.lane_loop";

// The interleave count of the lane loop of an interchanged loop's step that
// writes long-latency arithmetic (emitInterchanged).
constexpr int64_t kWriteStepInterleave = 2;
// And of one that accumulates long-latency arithmetic (emitInterchanged).
constexpr int64_t kAccumulationInterleave = 4;

// How the result of `op` moves, given how its operands move (`operand`):
// sums, differences, products with a constant and casts of moving values
// move accordingly; anything of values that do not move does not move;
// anything else (a division, a remainder, a select of moving values) is
// unknown (nullopt).
std::optional<int64_t> strideThrough(mlir::Operation* op,
                                     llvm::function_ref<std::optional<int64_t>(Value)> operand) {
  std::optional<int64_t> stride;
  if (llvm::isa<mlir::arith::AddIOp, mlir::arith::SubIOp>(op)) {
    auto a = operand(op->getOperand(0)), b = operand(op->getOperand(1));
    if (a && b) stride = llvm::isa<mlir::arith::AddIOp>(op) ? *a + *b : *a - *b;
  } else if (llvm::isa<mlir::arith::MulIOp>(op)) {
    for (int i = 0; i < 2 && !stride; ++i) {
      auto k = mlir::getConstantIntValue(op->getOperand(1 - i));
      auto a = operand(op->getOperand(i));
      int64_t product;
      if (k && a && !__builtin_mul_overflow(*a, *k, &product)) stride = product;
    }
  } else if (llvm::isa<mlir::arith::IndexCastOp, mlir::arith::IndexCastUIOp,
                       mlir::arith::ExtSIOp, mlir::arith::ExtUIOp>(op)) {
    stride = operand(op->getOperand(0));
  }
  if (!stride && op->getNumRegions() == 0 &&
      llvm::all_of(op->getOperands(), [&](Value x) {
        auto s = operand(x);
        return s && *s == 0;
      })) {
    stride = 0;
  }
  return stride;
}

// Index `v` as a sum of values times constants plus a constant: through
// addi, subi and muli by a constant (up to `depth` ops deep); any other
// value a term of its own.
struct LinearForm {
  llvm::SmallDenseMap<Value, int64_t, 4> terms;
  int64_t constant = 0;
  bool sameTerms(const LinearForm& other) const {
    if (terms.size() != other.terms.size()) return false;
    return llvm::all_of(terms, [&](auto& t) {
      auto it = other.terms.find(t.first);
      return it != other.terms.end() && it->second == t.second;
    });
  }
};

void addLinearForm(Value v, int64_t times, LinearForm& form, int depth = 12) {
  if (auto c = mlir::getConstantIntValue(v)) {
    form.constant += times * *c;
    return;
  }
  mlir::Operation* def = v.getDefiningOp();
  if (depth > 0 && llvm::isa_and_nonnull<mlir::arith::AddIOp, mlir::arith::SubIOp>(def)) {
    addLinearForm(def->getOperand(0), times, form, depth - 1);
    addLinearForm(def->getOperand(1), llvm::isa<mlir::arith::SubIOp>(def) ? -times : times,
                  form, depth - 1);
    return;
  }
  if (depth > 0 && llvm::isa_and_nonnull<mlir::arith::MulIOp>(def)) {
    for (int i = 0; i < 2; ++i) {
      if (auto c = mlir::getConstantIntValue(def->getOperand(1 - i))) {
        addLinearForm(def->getOperand(i), times * *c, form, depth - 1);
        return;
      }
    }
  }
  if ((form.terms[v] += times) == 0) form.terms.erase(v);
}

// How `v` moves as `iv` steps by one: by a constant, or unknown (nullopt).
// Values from outside `loop` and the induction variables of loops inside it
// do not move; the rest as strideThrough says.
std::optional<int64_t> strideIn(mlir::scf::ForOp loop, Value v,
                                llvm::DenseMap<Value, std::optional<int64_t>>& memo) {
  if (v == loop.getInductionVar()) return 1;
  if (!loop.getRegion().isAncestor(v.getParentRegion())) return 0;
  if (auto it = memo.find(v); it != memo.end()) return it->second;
  std::optional<int64_t> stride;
  if (auto arg = llvm::dyn_cast<mlir::BlockArgument>(v)) {
    auto inner = llvm::dyn_cast<mlir::scf::ForOp>(arg.getOwner()->getParentOp());
    if (inner && inner != loop && arg == inner.getInductionVar()) stride = 0;
  } else {
    stride = strideThrough(v.getDefiningOp(), [&](Value x) { return strideIn(loop, x, memo); });
  }
  memo[v] = stride;
  return stride;
}

// The bytes of the widest element a loop of period steps moves, where it
// only loads and stores elements narrower than 32 bits, each loaded one
// stored once: every access `getelementptr base[i]` (base from before the
// loop) whose index i moves by as many elements a step, loads and stores
// alike (a flip, a crop, a pad of bytes: a permutation of each step's
// elements). 0 otherwise: a nearest upsampling's loads move half as far
// as its stores (each element stored twice), and ran 9 % slower at twice
// the steps a vector.
int64_t narrowPermutationBytes(mlir::scf::ForOp loop) {
  llvm::DenseMap<Value, std::optional<int64_t>> memo;
  std::optional<int64_t> distance;
  int64_t widest = 0;
  bool fits = true;
  auto access = [&](Value addr, mlir::Type type) {
    if (auto vector = llvm::dyn_cast<mlir::VectorType>(type)) type = vector.getElementType();
    if (!type.isIntOrFloat() || type.getIntOrFloatBitWidth() >= 32) {
      fits = false;
      return;
    }
    // The elements the address moves a step, through a chain of
    // getelementptrs of one index each over `type`'s elements, down to a
    // base from before the loop.
    int64_t m = 0;
    while (loop.getRegion().isAncestor(addr.getParentRegion())) {
      auto gep = addr.getDefiningOp<mlir::LLVM::GEPOp>();
      if (!gep || gep.getRawConstantIndices().size() != 1 || gep.getElemType() != type) {
        fits = false;
        return;
      }
      // A constant index (no dynamic one) does not move.
      if (!gep.getDynamicIndices().empty()) {
        std::optional<int64_t> step = strideIn(loop, gep.getDynamicIndices()[0], memo);
        if (!step) {
          fits = false;
          return;
        }
        m += *step;
      }
      addr = gep.getBase();
    }
    if (m == 0 || (distance && std::abs(m) != *distance)) {
      fits = false;
      return;
    }
    distance = std::abs(m);
    widest = std::max<int64_t>(widest, (type.getIntOrFloatBitWidth() + 7) / 8);
  };
  bool loads = false, stores = false;
  loop.getBody()->walk([&](mlir::Operation* op) {
    // A loop inside (a window's): its loads are not each stored once.
    if (llvm::isa<mlir::LoopLikeOpInterface>(op)) fits = false;
    if (auto load = llvm::dyn_cast<mlir::LLVM::LoadOp>(op)) {
      access(load.getAddr(), load.getType());
      loads = true;
    } else if (auto store = llvm::dyn_cast<mlir::LLVM::StoreOp>(op)) {
      access(store.getAddr(), store.getValue().getType());
      stores = true;
    }
  });
  return fits && loads && stores ? widest : 0;
}

// How `v` moves as the thread id (x: a block of one dimension) steps by
// one: the kernel's arguments, loops' induction variables and the other ids
// do not move; the rest as strideThrough says.
std::optional<int64_t> strideAlongThreads(Value v,
                                          llvm::DenseMap<Value, std::optional<int64_t>>& memo) {
  if (auto id = v.getDefiningOp<mlir::gpu::ThreadIdOp>()) {
    return id.getDimension() == mlir::gpu::Dimension::x ? 1 : 0;
  }
  if (auto arg = llvm::dyn_cast<mlir::BlockArgument>(v)) {
    auto loop = llvm::dyn_cast<mlir::scf::ForOp>(arg.getOwner()->getParentOp());
    bool fixed = arg.getOwner()->isEntryBlock() &&
                 (llvm::isa<mlir::func::FuncOp>(arg.getOwner()->getParentOp()) ||
                  (loop && arg == loop.getInductionVar()));
    return fixed ? std::optional<int64_t>(0) : std::nullopt;
  }
  if (auto it = memo.find(v); it != memo.end()) return it->second;
  std::optional<int64_t> stride =
      strideThrough(v.getDefiningOp(), [&](Value x) { return strideAlongThreads(x, memo); });
  memo[v] = stride;
  return stride;
}

// Whether every memory access in `loop` is to an element the same for all
// iterations or the next one each iteration: scalar loads and stores
// through `getelementptr base[i]` of their own type, base fixed and i
// stepping by 0 or 1, and no other side effect.
bool accessesContiguously(mlir::scf::ForOp loop) {
  llvm::DenseMap<Value, std::optional<int64_t>> memo;
  auto contiguous = [&](Value address, mlir::Type accessed) {
    if (llvm::isa<mlir::VectorType, mlir::LLVM::LLVMArrayType, mlir::LLVM::LLVMStructType>(
            accessed)) {
      return false;
    }
    auto fixed = [&](Value x) {
      auto s = strideIn(loop, x, memo);
      return s && *s == 0;
    };
    auto gep = address.getDefiningOp<mlir::LLVM::GEPOp>();
    if (!gep) return fixed(address);
    if (gep.getElemType() != accessed || !fixed(gep.getBase())) return false;
    auto indices = gep.getDynamicIndices();
    if (indices.size() != 1 || gep.getRawConstantIndices().size() != 1) return false;
    auto s = strideIn(loop, indices.front(), memo);
    return s && (*s == 0 || *s == 1);
  };
  mlir::WalkResult result = loop.getBody()->walk([&](mlir::Operation* op) {
    bool ok = true;
    if (auto load = llvm::dyn_cast<mlir::LLVM::LoadOp>(op)) {
      ok = contiguous(load.getAddr(), load.getType());
    } else if (auto store = llvm::dyn_cast<mlir::LLVM::StoreOp>(op)) {
      ok = contiguous(store.getAddr(), store.getValue().getType());
    } else if (!op->hasTrait<mlir::OpTrait::HasRecursiveMemoryEffects>()) {
      ok = mlir::isMemoryEffectFree(op);
    }
    return ok ? mlir::WalkResult::advance() : mlir::WalkResult::interrupt();
  });
  return !result.wasInterrupted();
}

// Whether lane loop `loop` only copies elements, reading some with a
// stride at least twice its number of loads: its body loads, stores what
// it loaded as it is, and computes nothing but addresses (integer
// arithmetic). Such a loop stays scalar (scalarLoop). Its strided loads
// are no interleave group LLVM could load whole, or one mostly of gaps
// (k loads of stride k are the elements of a thread's vector; 3 of stride
// 4, an RGBA image's RGB, a whole group with one gap: vectorized, a slice
// of u8[16,224,224,4] to [..., :3] ran 244 -> 33-43 us a kernel call,
// XLA:CPU's whole program 50-80), and with gathers off (HostJit.cpp) LLVM
// vectorized them into a scalar load and a lane insert each, for little
// at run time and ~2 ms of O3 and code generation a loop: a slice's
// column (the cumsum's two slice fusions, stride 16 and 32; 1.9 -> 1.1 KB
// objects) and the column sum's reads of the transposed tile. LLVM's time
// on them: column sum 31.8 -> 27.5 ms, cumsum 67.7 -> 62.0 (O3 and code
// generation, best of 3); run times the same (A/B in one process, both
// orders, bits the same); no other bench kernel changes.
bool isStridedCopy(mlir::scf::ForOp loop) {
  llvm::DenseMap<Value, std::optional<int64_t>> memo;
  int64_t loads = 0, widest = 0;
  for (mlir::Operation& op : loop.getBody()->without_terminator()) {
    if (auto load = llvm::dyn_cast<mlir::LLVM::LoadOp>(op)) {
      if (!llvm::all_of(load->getUsers(), [&](mlir::Operation* user) {
            auto store = llvm::dyn_cast<mlir::LLVM::StoreOp>(user);
            return store && store.getValue() == load.getResult();
          })) {
        return false;
      }
      auto gep = load.getAddr().getDefiningOp<mlir::LLVM::GEPOp>();
      if (!gep || gep.getDynamicIndices().size() != 1) return false;
      auto stride = strideIn(loop, gep.getDynamicIndices().front(), memo);
      ++loads;
      widest = std::max(widest, stride ? std::abs(*stride) : INT64_MAX);
    } else if (!llvm::isa<mlir::LLVM::StoreOp, mlir::LLVM::GEPOp>(op) &&
               !(op.getNumRegions() == 0 && mlir::isPure(&op) &&
                 llvm::all_of(op.getResultTypes(),
                              [](mlir::Type t) { return t.isIntOrIndex(); }))) {
      return false;
    }
  }
  return loads > 0 && widest >= 2 * loads;
}

// A load or store that is neither volatile nor atomic.
template <typename Access>
bool isPlain(Access access) {
  return !access.getVolatile_() && access.getOrdering() == mlir::LLVM::AtomicOrdering::not_atomic;
}

// A plain load of what nothing in the kernel writes (an input:
// -xla-gpu-lower-tensors marks its loads invariant).
bool isInputLoad(mlir::Operation* op) {
  auto load = llvm::dyn_cast<mlir::LLVM::LoadOp>(op);
  return load && load.getInvariant() && isPlain(load);
}

// A division or a transcendental (a polynomial of a dozen dependent steps
// once expanded) anywhere in `op`.
bool hasLongLatencyArithmetic(mlir::Operation* op) {
  return op
      ->walk([](mlir::Operation* inner) {
        mlir::Dialect* dialect = inner->getDialect();  // null: unregistered
        return (dialect && llvm::isa<mlir::math::MathDialect>(dialect)) ||
                       llvm::isa<mlir::arith::DivFOp, mlir::arith::RemFOp>(inner)
                   ? mlir::WalkResult::interrupt()
                   : mlir::WalkResult::advance();
      })
      .wasInterrupted();
}

// The pointer `addr` is an offset of (through getelementptr).
Value baseOf(Value addr) {
  while (auto gep = addr.getDefiningOp<mlir::LLVM::GEPOp>()) addr = gep.getBase();
  return addr;
}

// Whether `base` is one of the kernel's buffers (an argument of `f`).
bool isKernelBuffer(mlir::func::FuncOp f, Value base) {
  auto arg = llvm::dyn_cast<mlir::BlockArgument>(base);
  return arg && arg.getOwner() == &f.getBody().front();
}

// At most this many stores of a loop's body are sunk (sinkStores): each
// keeps its value in a register until the end of the body.
constexpr int64_t kMaxSunkStores = 8;

// The stores to the kernel's buffers in `body` (a loop's), each moved down
// past the arithmetic and the loads after it that cannot read what it
// writes: an input's (invariant) or a per-call buffer's (slots, shared
// tiles). A transpose's tile rows are written 4 rows apart, each step
// reading an operand at the element it writes (transpose+add): a load 4
// rows below a store still in the store buffer matched it in the low 12
// address bits wherever the operand and the output lay a multiple of 4 KiB
// apart, and waited for it ("4K aliasing"). With the body's loads first,
// f32[1024,1024] on one thread: 2.35 -> 2.14 ms with the buffers so
// placed, 2.21 -> 2.26 otherwise (LLVM IR of the kernel reordered by hand,
// one process). XLA:CPU copies a tile's operand rows out before it
// writes any.
void sinkStores(mlir::func::FuncOp f, mlir::Block* body) {
  SmallVector<mlir::LLVM::StoreOp> stores;
  for (mlir::Operation& op : body->without_terminator()) {
    auto store = llvm::dyn_cast<mlir::LLVM::StoreOp>(op);
    if (store && isPlain(store) && isKernelBuffer(f, baseOf(store.getAddr()))) {
      stores.push_back(store);
    }
  }
  if (stores.size() < 2 || stores.size() > kMaxSunkStores) return;
  auto passable = [&](mlir::Operation* op) {
    if (op->getNumRegions() > 0) return false;
    if (auto load = llvm::dyn_cast<mlir::LLVM::LoadOp>(op)) {
      Value base = baseOf(load.getAddr());
      return isPlain(load) &&
             (load.getInvariant() ||
              llvm::isa_and_present<mlir::LLVM::AllocaOp, mlir::LLVM::CallOp>(base.getDefiningOp()));
    }
    return mlir::isMemoryEffectFree(op);
  };
  // A body that reads back what it writes (sub-byte elements: a byte's two
  // nibbles stored one after the other) is left as it is: LLVM forwards
  // those stores to their loads, and a store moved away from its load
  // vectorized into a store a byte (packed s4 add 1.04x slower).
  for (mlir::Operation& op : body->without_terminator()) {
    if (llvm::isa<mlir::LLVM::LoadOp>(op) && !passable(&op)) return;
  }
  // From the last: each store stops at the first op it cannot pass (the
  // next store at the latest), so the stores keep their order.
  for (mlir::LLVM::StoreOp store : llvm::reverse(stores)) {
    mlir::Operation* to = store->getNextNode();
    while (!to->hasTrait<mlir::OpTrait::IsTerminator>() && passable(to)) to = to->getNextNode();
    if (to != store->getNextNode()) store->moveBefore(to);
  }
}

// The lanes a lane loop's vectorized pieces are made a multiple of
// (overlapTails): a 512-bit vector of 32-bit elements, two of 256 bits.
constexpr int64_t kTailLanes = 16;

std::optional<llvm::APInt> foldInteger(mlir::Operation* op, llvm::ArrayRef<llvm::APInt> a,
                                       unsigned width);

// Index `v` as a constant: an arith.constant, or a binary arith op
// (foldInteger's) of such -- the minima and maxima of sums splitAtGuards
// makes a piece's bounds of.
std::optional<int64_t> foldedConstant(Value v, int depth = 0) {
  if (auto c = mlir::getConstantIntValue(v)) return c;
  mlir::Operation* op = v.getDefiningOp();
  if (!op || op->getNumOperands() != 2 || !v.getType().isIndex() || depth > 8) {
    return std::nullopt;
  }
  SmallVector<llvm::APInt, 2> operands;
  for (Value x : op->getOperands()) {
    auto c = foldedConstant(x, depth + 1);
    if (!c) return std::nullopt;
    operands.push_back(llvm::APInt(64, *c, /*isSigned=*/true));
  }
  auto folded = foldInteger(op, operands, 64);
  if (!folded) return std::nullopt;
  return folded->getSExtValue();
}

// The constant c of `v` = `lane` + c or `lane` - c (or `lane` itself).
std::optional<int64_t> offsetFromLane(Value v, Value lane) {
  if (v == lane) return 0;
  if (auto add = v.getDefiningOp<mlir::arith::AddIOp>()) {
    for (int i = 0; i < 2; ++i) {
      auto c = mlir::getConstantIntValue(add->getOperand(1 - i));
      if (add->getOperand(i) == lane && c) return c;
    }
  }
  if (auto sub = v.getDefiningOp<mlir::arith::SubIOp>()) {
    auto c = mlir::getConstantIntValue(sub.getRhs());
    if (sub.getLhs() == lane && c) return -*c;
  }
  return std::nullopt;
}

// The parities of the lane that `body` computes for `lane`, with their
// constants c: remainders by 2 of x = lane + c, as remui(x, 2) or as
// x - floordivsi(x, 2) * 2 (an index map's (d - 1) mod 2).
SmallVector<std::pair<mlir::Operation*, int64_t>> laneParities(mlir::Block* body, Value lane) {
  SmallVector<std::pair<mlir::Operation*, int64_t>> found;
  auto two = [](Value v) { return mlir::getConstantIntValue(v) == 2; };
  body->walk([&](mlir::Operation* op) {
    if (auto rem = llvm::dyn_cast<mlir::arith::RemUIOp>(op)) {
      auto c = offsetFromLane(rem.getLhs(), lane);
      if (c && two(rem.getRhs())) found.push_back({op, *c});
    } else if (auto sub = llvm::dyn_cast<mlir::arith::SubIOp>(op)) {
      auto mul = sub.getRhs().getDefiningOp<mlir::arith::MulIOp>();
      auto div = mul ? mul.getLhs().getDefiningOp<mlir::arith::FloorDivSIOp>() : nullptr;
      auto c = offsetFromLane(sub.getLhs(), lane);
      if (c && div && two(mul.getRhs()) && div.getLhs() == sub.getLhs() && two(div.getRhs())) {
        found.push_back({op, *c});
      }
    }
  });
  return found;
}

// A lane loop that computes the lane's parity (a pad's interior padding:
// every other element is the padding, or another pad's; an interleave
// of two arrays) runs two lanes a step, each with its parity a constant,
// so that each lane's guards fold and it computes only its own branch;
// the last lane of an odd count runs on its own after. Where the loop's
// first lane is not a constant (a guard's bound: a row's first element
// the padding in every other block), the pairs start at the first even
// lane, an odd first lane running on its own before them. LLVM vectorizes
// each branch over every other lane; the loop of one lane a step ran both
// branches on every lane (masked): a RoPE gradient's interleaving pads
// computed both pads' sin and cos for every element (10.2 ms over
// f32[8,16,256,64], XLA:CPU's branches 4.6).
bool unrollAtLaneParity(mlir::scf::ForOp loop) {
  auto step = mlir::getConstantIntValue(loop.getStep());
  if (!step || *step != 1 || loop.getNumRegionIterArgs() != 0 ||
      laneParities(loop.getBody(), loop.getInductionVar()).empty()) {
    return false;
  }
  mlir::Location loc = loop.getLoc();
  mlir::OpBuilder b(loop);
  auto index = [&](mlir::OpBuilder& at, int64_t v) -> Value {
    return at.create<mlir::arith::ConstantIndexOp>(loc, v);
  };
  Value lower = loop.getLowerBound(), upper = loop.getUpperBound();
  std::optional<int64_t> lo = foldedConstant(lower);
  if (!lo) {
    // The first even lane, (lower + 1) floordiv 2 * 2; the lane before
    // it, where the loop starts there, in a copy of the loop.
    Value even = b.create<mlir::arith::MulIOp>(
        loc, b.create<mlir::arith::FloorDivSIOp>(
                 loc, b.create<mlir::arith::AddIOp>(loc, lower, index(b, 1)), index(b, 2)),
        index(b, 2));
    Value firstEnd = b.create<mlir::arith::MinSIOp>(loc, even, upper);
    auto first = llvm::cast<mlir::scf::ForOp>(b.clone(*loop));
    first.getUpperBoundMutable().assign(firstEnd);
    lower = even;
    lo = 0;
  }
  // The end of the whole pairs: lower + (upper - lower) / 2 * 2 (no pair
  // where upper <= lower + 1).
  Value count = b.create<mlir::arith::SubIOp>(loc, upper, lower);
  Value pairs = b.create<mlir::arith::MaxSIOp>(
      loc, index(b, 0), b.create<mlir::arith::DivSIOp>(loc, count, index(b, 2)));
  Value end = b.create<mlir::arith::AddIOp>(
      loc, lower, b.create<mlir::arith::MulIOp>(loc, pairs, index(b, 2)));
  auto twice = b.create<mlir::scf::ForOp>(loc, lower, end, index(b, 2));
  twice->setAttrs(loop->getAttrs());
  mlir::OpBuilder tb = mlir::OpBuilder::atBlockBegin(twice.getBody());
  SmallVector<Value> lanes;
  for (int64_t i = 0; i < 2; ++i) {
    lanes.push_back(i == 0 ? twice.getInductionVar()
                           : tb.create<mlir::arith::AddIOp>(loc, twice.getInductionVar(),
                                                            index(tb, 1)).getResult());
    mlir::IRMapping mapping;
    mapping.map(loop.getInductionVar(), lanes.back());
    for (mlir::Operation& op : loop.getBody()->without_terminator()) tb.clone(op, mapping);
  }
  // Each copy's parities: constants, its lanes being lower + 2k + i (a
  // parity of lanes[i] + c, wherever it is computed, is (lo + i + c) mod 2).
  for (int64_t i = 0; i < 2; ++i) {
    for (auto [op, c] : laneParities(twice.getBody(), lanes[i])) {
      mlir::OpBuilder at(op);
      int64_t parity = ((*lo + i + c) % 2 + 2) % 2;
      op->getResult(0).replaceAllUsesWith(index(at, parity));
      op->erase();
    }
  }
  // The last lane of an odd count: the loop itself, from the pairs' end.
  loop.getLowerBoundMutable().assign(end);
  return true;
}

// The most lanes a lane loop runs a step to make the lane's remainders by
// a constant loop invariants (unrollAtLanePeriod): an NHWC image's
// channels (3), rows of 5 to 8 columns (a reverse of f32[1048576,7]'s
// rows 3.15 -> 0.95 ms a kernel call, a scale of each column 2.87 ->
// 1.55; compile 11 -> 16-23 ms).
constexpr int64_t kMaxLanePeriod = 8;
// Up to 16 lanes a step where the copies of the loop's body stay within
// kMaxLanePeriodOps ops (a pixel unshuffle's rows of 12 = 2 x 2 x 3, each
// lane a load and a store: 59.7 -> 15.9 us a kernel call over
// f32[8,64,64,3]).
constexpr int64_t kMaxSmallBodyLanePeriod = 16;
constexpr int64_t kMaxLanePeriodOps = 512;

// A division by a constant m <= kMaxSmallBodyLanePeriod of x = lane + c +
// the sum of `terms` (values from outside the loop, each added or
// subtracted: a block's first element, a row's remainder), c a constant:
// its remainder, remui(x, m) or x - floordivsi(x, m) * m (an index map's
// mod), or its quotient, divui(x, m) or floordivsi(x, m).
struct LaneDivision {
  mlir::Operation* op;
  SmallVector<std::pair<Value, bool>> terms;  // (term, subtracted), sorted
  int64_t c;
  int64_t m;
  bool floor;  // floordivsi (else unsigned: x is known nonnegative)
  bool quotient;
};

// Quotients of quotients by constants in `loop`'s body, (x / a) / b, as
// x / (a b) where a b is a period unrollAtLanePeriod may take: a nearest
// upsampling of NHWC pixels of 3 channels by 2 reads pixel (e / 3) / 2,
// whose division by 2 was left in the steps of 3 lanes (0.24 -> 0.08 ms a
// kernel call over f32[16,224,224,3] as x / 6, 6 lanes a step).
void foldNestedQuotients(mlir::scf::ForOp loop) {
  SmallVector<std::pair<mlir::arith::DivUIOp, int64_t>> nested;
  loop.getBody()->walk([&](mlir::arith::DivUIOp div) {
    auto inner = div.getLhs().getDefiningOp<mlir::arith::DivUIOp>();
    auto a = inner ? mlir::getConstantIntValue(inner.getRhs()) : std::nullopt;
    auto b = mlir::getConstantIntValue(div.getRhs());
    if (a && b && *a > 0 && *b > 0 && *a <= kMaxSmallBodyLanePeriod &&
        *b <= kMaxSmallBodyLanePeriod && *a * *b <= kMaxSmallBodyLanePeriod) {
      nested.push_back({div, *a * *b});
    }
  });
  for (auto [div, divisor] : nested) {
    mlir::OpBuilder at(div);
    auto inner = div.getLhs().getDefiningOp<mlir::arith::DivUIOp>();
    div.getResult().replaceAllUsesWith(
        at.create<mlir::arith::DivUIOp>(
              div.getLoc(), inner.getLhs(),
              at.create<mlir::arith::ConstantIndexOp>(div.getLoc(), divisor))
            .getResult());
    div.erase();
    if (inner->use_empty()) inner.erase();
  }
}

SmallVector<LaneDivision> laneDivisions(mlir::scf::ForOp loop) {
  Value lane = loop.getInductionVar();
  // x's terms and constant, where x is the lane plus and minus such.
  std::function<bool(Value, bool, LaneDivision&)> split = [&](Value x, bool minus,
                                                            LaneDivision& d) {
    if (x == lane) return !minus;
    auto term = [&](Value w, bool subtracted) {
      if (auto c = mlir::getConstantIntValue(w)) {
        d.c += subtracted ? -*c : *c;
      } else if (loop.isDefinedOutsideOfLoop(w)) {
        d.terms.push_back({w, subtracted});
      } else {
        return false;
      }
      return true;
    };
    if (auto add = x.getDefiningOp<mlir::arith::AddIOp>()) {
      for (int i = 0; i < 2; ++i) {
        LaneDivision attempt = d;
        if (term(add->getOperand(1 - i), minus) && split(add->getOperand(i), minus, d)) {
          return true;
        }
        d = attempt;
      }
    }
    if (auto sub = x.getDefiningOp<mlir::arith::SubIOp>()) {
      return term(sub.getRhs(), !minus) && split(sub.getLhs(), minus, d);
    }
    return false;
  };
  auto modulus = [](Value v) -> std::optional<int64_t> {
    auto m = mlir::getConstantIntValue(v);
    return m && *m >= 2 && *m <= kMaxSmallBodyLanePeriod ? m : std::nullopt;
  };
  SmallVector<LaneDivision> found;
  auto add = [&](mlir::Operation* op, Value x, Value m, bool floor, bool quotient) {
    LaneDivision d{op, {}, 0, 0, floor, quotient};
    auto divisor = modulus(m);
    if (!divisor || !split(x, /*minus=*/false, d)) return;
    d.m = *divisor;
    llvm::sort(d.terms, [](auto a, auto b) {
      return std::make_pair(a.first.getAsOpaquePointer(), a.second) <
             std::make_pair(b.first.getAsOpaquePointer(), b.second);
    });
    found.push_back(std::move(d));
  };
  loop.getBody()->walk([&](mlir::Operation* op) {
    if (auto rem = llvm::dyn_cast<mlir::arith::RemUIOp>(op)) {
      add(op, rem.getLhs(), rem.getRhs(), /*floor=*/false, /*quotient=*/false);
    } else if (auto div = llvm::dyn_cast<mlir::arith::DivUIOp>(op)) {
      add(op, div.getLhs(), div.getRhs(), /*floor=*/false, /*quotient=*/true);
    } else if (auto div = llvm::dyn_cast<mlir::arith::FloorDivSIOp>(op)) {
      add(op, div.getLhs(), div.getRhs(), /*floor=*/true, /*quotient=*/true);
    } else if (auto sub = llvm::dyn_cast<mlir::arith::SubIOp>(op)) {
      auto mul = sub.getRhs().getDefiningOp<mlir::arith::MulIOp>();
      auto div = mul ? mul.getLhs().getDefiningOp<mlir::arith::FloorDivSIOp>() : nullptr;
      if (div && div.getLhs() == sub.getLhs() && mlir::getConstantIntValue(div.getRhs()) ==
                                                     mlir::getConstantIntValue(mul.getRhs())) {
        add(op, sub.getLhs(), div.getRhs(), /*floor=*/true, /*quotient=*/false);
      }
    }
  });
  return found;
}

// A lane loop that computes remainders of the lane by small constants
// (laneDivisions: an NHWC image's channel, the lane mod 3, the lane its
// block's first element plus the thread; a parity of the lane plus a
// constant is unrollAtLaneParity's) runs u lanes a step, u the least common
// multiple of the moduli, its steps from lanes whose x u divides (x as the
// first remainder's): each copy's remainders are constants, so its guards
// fold and it computes only its own branch, and its quotients step with
// the loop, q + k u / m at step k -- an address 3 (x / 3) + 2 - x mod 3 (a
// reverse of the channels) is affine in k, the copies' addresses a
// constant apart. LLVM vectorizes the steps (interleaved accesses); the
// loop of one lane a step ran both branches on every lane (masked): a RoPE
// gradient's interleaving pads computed both pads' sin and cos for every
// element (10.2 ms over f32[8,16,256,64], XLA:CPU's branches 4.6), or
// divided every lane and gathered the channel's scale, scalar (an image's
// normalization per channel over u8[16,224,224,3]: 0.87 ms a kernel call,
// jax.jit 0.12; a reverse of its channels 0.47). Where the first x is not
// a constant (a block's first element in it, or the loop's first lane a
// guard's bound), the lanes before the first x that u divides run on their
// own, in a copy of the loop; the lanes of the last part after the steps,
// in the loop itself. Divisions of an x of other terms (a row's remainder
// where x has the block's first element) are loop invariants and steps
// too, computed before the loop from the first step's x. Quotients alone
// (a row of 3 read by each of its elements at 3 (e / 3) + i: x / |x| over
// f32[1048576,3] 2.71 -> 0.23 ms a kernel call) take the first quotient's
// x and u their moduli's least common multiple.
// Returns the loops of fewer than u lanes it made (the lanes before the
// steps, where there are, and after them), for the caller to leave scalar;
// `steps`, where given, is set to the loop of the steps.
SmallVector<mlir::scf::ForOp, 2> unrollAtLanePeriod(mlir::scf::ForOp loop,
                                                    mlir::scf::ForOp* steps = nullptr) {
  auto step = mlir::getConstantIntValue(loop.getStep());
  if (!step || *step != 1 || loop.getNumRegionIterArgs() != 0) return {};
  foldNestedQuotients(loop);
  SmallVector<LaneDivision> divisions = laneDivisions(loop);
  if (divisions.empty()) return {};
  // The first remainder, else the first quotient (a row's sum of squares
  // of 3 over [N,3] read by each of its elements, at 3 (e / 3) + i).
  auto firstRemainder = llvm::find_if(divisions, [](auto& d) { return !d.quotient; });
  bool quotientsOnly = firstRemainder == divisions.end();
  // A copy: erase_if below moves the elements.
  const LaneDivision reference = quotientsOnly ? divisions.front() : *firstRemainder;
  SmallVector<mlir::scf::ForOp, 2> fewLanes;
  int64_t bodyOps = 0;
  loop.getBody()->walk([&](mlir::Operation*) { ++bodyOps; });
  auto allowed = [&](int64_t period) {
    return period <= kMaxLanePeriod ||
           (period <= kMaxSmallBodyLanePeriod && period * bodyOps <= kMaxLanePeriodOps);
  };
  // Remainders' moduli first, then quotients' (a tile of 3 channels
  // into 6 reads 3 (e / 6) + e mod 3: 6 lanes a step).
  int64_t u = 1;
  for (bool quotients : {false, true}) {
    for (const LaneDivision& d : divisions) {
      if (d.quotient == quotients && allowed(std::lcm(u, d.m))) u = std::lcm(u, d.m);
    }
  }
  if (u == 1) return {};
  llvm::erase_if(divisions, [&](const LaneDivision& d) { return u % d.m != 0; });
  // Whether d's x is congruent to the first remainder's mod u: the same
  // terms but for remainders of them by multiples of u (the row's element
  // e mod 672 that splitAtQuotientStep's cut makes an offset plus the
  // lane, where e mod 3 is the block's first element plus the lane).
  auto modU = [&](Value t) {
    while (auto rem = t.getDefiningOp<mlir::arith::RemUIOp>()) {
      auto multiple = mlir::getConstantIntValue(rem.getRhs());
      if (!multiple || *multiple % u != 0) break;
      t = rem.getLhs();
    }
    return t;
  };
  auto known = [&](const LaneDivision& d) {
    if (d.terms.size() != reference.terms.size()) return false;
    SmallVector<std::pair<Value, bool>> rest(reference.terms);
    for (auto [term, subtracted] : d.terms) {
      auto it = llvm::find_if(rest, [&, term = term, subtracted = subtracted](auto& r) {
        return r.second == subtracted && modU(r.first) == modU(term);
      });
      if (it == rest.end()) return false;
      rest.erase(it);
    }
    return true;
  };
  mlir::Location loc = loop.getLoc();
  mlir::OpBuilder b(loop);
  auto index = [&](int64_t v) -> Value { return b.create<mlir::arith::ConstantIndexOp>(loc, v); };
  auto floorMod = [](int64_t x, int64_t m) { return (x % m + m) % m; };
  auto floorDiv = [&](int64_t x, int64_t m) { return (x - floorMod(x, m)) / m; };
  // x plus and minus `terms`.
  auto plusTerms = [&](Value x, llvm::ArrayRef<std::pair<Value, bool>> terms) {
    for (auto [term, subtracted] : terms) {
      x = subtracted ? b.createOrFold<mlir::arith::SubIOp>(loc, x, term)
                     : b.createOrFold<mlir::arith::AddIOp>(loc, x, term);
    }
    return x;
  };
  Value lower = loop.getLowerBound(), upper = loop.getUpperBound();
  // s = lower + the first remainder's terms: its x at the first lane but
  // for c.
  Value s = plusTerms(lower, reference.terms);
  // S, the steps' first x but for c, and S mod u.
  Value first = lower;
  Value start = s;
  int64_t startMod = 0;
  if (std::optional<int64_t> constant = foldedConstant(s)) {
    startMod = floorMod(*constant, u);
  } else {
    // S = (s + u - 1) floordiv u * u, from lane lower + S - s; the lanes
    // before it, where the loop starts there, in a copy of the loop.
    start = b.create<mlir::arith::MulIOp>(
        loc, b.create<mlir::arith::FloorDivSIOp>(
                 loc, b.create<mlir::arith::AddIOp>(loc, s, index(u - 1)), index(u)),
        index(u));
    first = b.create<mlir::arith::AddIOp>(loc, lower,
                                          b.create<mlir::arith::SubIOp>(loc, start, s));
    Value firstEnd = b.create<mlir::arith::MinSIOp>(loc, first, upper);
    auto before = llvm::cast<mlir::scf::ForOp>(b.clone(*loop));
    before.getUpperBoundMutable().assign(firstEnd);
    fewLanes.push_back(before);
  }
  // The whole steps: (upper - first) / u of them (none where upper <
  // first + u), ending at `end`.
  Value stepCount = b.create<mlir::arith::MaxSIOp>(
      loc, index(0),
      b.create<mlir::arith::DivSIOp>(loc, b.create<mlir::arith::SubIOp>(loc, upper, first),
                                     index(u)));
  Value end = b.create<mlir::arith::AddIOp>(
      loc, first, b.create<mlir::arith::MulIOp>(loc, stepCount, index(u)));
  // Copy j's division d at the first step, where its x has the first
  // remainder's terms: x = (S - S mod u) + u k + (S mod u + j + c), the
  // first two terms m divides, the remainder a constant. Else d's own x at
  // lane first + j, divided before the loop.
  // d's x at the steps' first lane but for c, first + its terms (S for
  // the first remainder's terms).
  auto firstX = [&](const LaneDivision& d) -> Value {
    return d.terms == reference.terms ? start : plusTerms(first, d.terms);
  };
  // (x - S mod u) / m at the first step, one value for each terms and m
  // (LLVM relates the copies' addresses only through the same values).
  SmallVector<std::tuple<SmallVector<std::pair<Value, bool>>, int64_t, Value>> alignedQuotients;
  auto alignedQuotient = [&](const LaneDivision& d) -> Value {
    for (auto& [terms, m, value] : alignedQuotients) {
      if (terms == d.terms && m == d.m) return value;
    }
    Value value = b.createOrFold<mlir::arith::DivSIOp>(
        loc, b.createOrFold<mlir::arith::SubIOp>(loc, firstX(d), index(startMod)), index(d.m));
    alignedQuotients.push_back({d.terms, d.m, value});
    return value;
  };
  SmallVector<SmallVector<Value>> atFirstStep(u);
  for (int64_t j = 0; j < u; ++j) {
    for (const LaneDivision& d : divisions) {
      if (known(d)) {
        int64_t rest = startMod + j + d.c;
        atFirstStep[j].push_back(
            d.quotient ? b.createOrFold<mlir::arith::AddIOp>(loc, alignedQuotient(d),
                                                             index(floorDiv(rest, d.m)))
                       : index(floorMod(rest, d.m)));
        continue;
      }
      Value x = plusTerms(b.createOrFold<mlir::arith::AddIOp>(loc, first, index(j + d.c)),
                          d.terms);
      Value q = d.floor ? b.createOrFold<mlir::arith::FloorDivSIOp>(loc, x, index(d.m))
                        : b.createOrFold<mlir::arith::DivUIOp>(loc, x, index(d.m));
      atFirstStep[j].push_back(
          d.quotient ? q
                     : b.createOrFold<mlir::arith::SubIOp>(
                           loc, x, b.createOrFold<mlir::arith::MulIOp>(loc, q, index(d.m))));
    }
  }
  // The steps: k from 0, lane first + u k + j in copy j.
  auto steady = b.create<mlir::scf::ForOp>(loc, index(0), stepCount, index(1));
  steady->setAttrs(loop->getAttrs());
  if (steps) *steps = steady;
  mlir::OpBuilder sb = mlir::OpBuilder::atBlockBegin(steady.getBody());
  auto noWrap = mlir::arith::IntegerOverflowFlags::nsw | mlir::arith::IntegerOverflowFlags::nuw;
  auto nsw = mlir::arith::IntegerOverflowFlags::nsw;
  Value k = steady.getInductionVar();
  auto constant = [&](mlir::OpBuilder& at, int64_t v) -> Value {
    return at.create<mlir::arith::ConstantIndexOp>(loc, v);
  };
  Value firstLane = sb.create<mlir::arith::AddIOp>(
      loc, first, sb.create<mlir::arith::MulIOp>(loc, k, constant(sb, u), noWrap), nsw);
  for (int64_t j = 0; j < u; ++j) {
    Value lane = j == 0 ? firstLane
                        : sb.create<mlir::arith::AddIOp>(loc, firstLane, constant(sb, j), nsw)
                              .getResult();
    mlir::IRMapping mapping;
    mapping.map(loop.getInductionVar(), lane);
    for (mlir::Operation& op : loop.getBody()->without_terminator()) sb.clone(op, mapping);
    for (auto [d, value] : llvm::zip(divisions, atFirstStep[j])) {
      mlir::Operation* copy = mapping.lookup(d.op);
      if (d.quotient) {
        mlir::OpBuilder at(copy);
        value = at.create<mlir::arith::AddIOp>(
            loc, value, at.create<mlir::arith::MulIOp>(loc, k, constant(at, u / d.m), noWrap),
            nsw);
      }
      copy->getResult(0).replaceAllUsesWith(value);
      copy->erase();
    }
  }
  // The lanes of the last part: the loop itself, from the steps' end.
  loop.getLowerBoundMutable().assign(end);
  fewLanes.push_back(loop);
  return fewLanes;
}

// Whether lane loop `loop` may run again at any of its lanes, and in any
// order with `others`, leaving memory as one run in order would: it
// writes only slots of its own lane (stores into stack arrays at an index
// that steps by one with the lane), which no load of it or of `others`
// reads, and has no other effect.
bool rerunnable(mlir::scf::ForOp loop, llvm::ArrayRef<mlir::scf::ForOp> others) {
  llvm::SmallPtrSet<mlir::Operation*, 4> written;
  llvm::DenseMap<Value, std::optional<int64_t>> memo;
  mlir::WalkResult result = loop.getBody()->walk([&](mlir::Operation* op) {
    if (auto store = llvm::dyn_cast<mlir::LLVM::StoreOp>(op)) {
      auto gep = store.getAddr().getDefiningOp<mlir::LLVM::GEPOp>();
      auto slots = gep ? gep.getBase().getDefiningOp<mlir::LLVM::AllocaOp>() : nullptr;
      if (!slots || gep.getDynamicIndices().size() != 1 ||
          strideIn(loop, gep.getDynamicIndices().front(), memo) != 1) {
        return mlir::WalkResult::interrupt();
      }
      written.insert(slots);
      return mlir::WalkResult::advance();
    }
    if (llvm::isa<mlir::LLVM::LoadOp>(op) ||
        op->hasTrait<mlir::OpTrait::HasRecursiveMemoryEffects>() || mlir::isMemoryEffectFree(op)) {
      return mlir::WalkResult::advance();
    }
    return mlir::WalkResult::interrupt();
  });
  if (result.wasInterrupted()) return false;
  auto readsWritten = [&](mlir::scf::ForOp reader) {
    return reader.getBody()
        ->walk([&](mlir::LLVM::LoadOp load) {
          return written.contains(baseOf(load.getAddr()).getDefiningOp())
                     ? mlir::WalkResult::interrupt()
                     : mlir::WalkResult::advance();
        })
        .wasInterrupted();
  };
  if (readsWritten(loop)) return false;
  return llvm::none_of(others, readsWritten);
}

// Whether lane loop `s`, run at lanes of lane loop `a`, reads only what
// `a` reads at them: the two are the same code (splitAtGuards' pieces of
// one loop) but for constant conditions of their scf.if ops, and where
// those differ, the region `s` takes reads no memory. A piece past a
// row's end skips the last step's loads, which the piece before it runs.
bool readsNoMoreThan(mlir::scf::ForOp s, mlir::scf::ForOp a) {
  SmallVector<mlir::Operation*> mine, theirs;
  s.getBody()->walk<mlir::WalkOrder::PreOrder>([&](mlir::Operation* op) { mine.push_back(op); });
  a.getBody()->walk<mlir::WalkOrder::PreOrder>([&](mlir::Operation* op) { theirs.push_back(op); });
  if (mine.size() != theirs.size()) return false;
  auto reads = [](mlir::Region& region) {
    return region.walk([](mlir::LLVM::LoadOp) { return mlir::WalkResult::interrupt(); })
        .wasInterrupted();
  };
  for (auto [x, y] : llvm::zip(mine, theirs)) {
    if (x->getName() != y->getName()) return false;
    auto ifX = llvm::dyn_cast<mlir::scf::IfOp>(x);
    if (!ifX) continue;
    auto cx = mlir::getConstantIntValue(ifX.getCondition());
    auto cy = mlir::getConstantIntValue(llvm::cast<mlir::scf::IfOp>(y).getCondition());
    if (cx.has_value() != cy.has_value()) return false;
    if (cx && *cx != *cy && reads(*cx ? ifX.getThenRegion() : ifX.getElseRegion())) return false;
  }
  return true;
}

// Lane loops of constant bounds (a warp's, or the pieces splitAtGuards
// cuts where a row's last step ends) made of pieces of a multiple of
// kTailLanes lanes, so that LLVM vectorizes every lane: a loop of more
// lanes than that runs its last kTailLanes again (the lanes its first
// piece leaves and some before them), and one of fewer that follows a
// loop over the lanes before it starts kTailLanes before its end, ahead
// of that loop, which then writes the lanes they share over. Only loops
// that may run so (rerunnable), and a loop that starts early only where it
// reads at those lanes no more than the loop before it (readsNoMoreThan:
// no load past a row's end). Otherwise LLVM's vector loop leaves the
// lanes past its last whole vector to a scalar loop: a row of 1000 bf16
// elements, 4 a load, 64 threads a row, ends in a loop of 58 lanes (7
// vectors of 8 and 2 lanes) and one of 6, and those 8 lanes took a third
// of a row max's time.
void overlapTails(mlir::func::FuncOp f) {
  SmallVector<mlir::scf::ForOp> loops;
  f.walk([&](mlir::scf::ForOp loop) {
    if (loop->hasAttr(kLaneLoop)) loops.push_back(loop);
  });
  auto range = [](mlir::scf::ForOp loop) -> std::optional<std::pair<int64_t, int64_t>> {
    auto lo = foldedConstant(loop.getLowerBound()), hi = foldedConstant(loop.getUpperBound());
    if (!lo || !hi || mlir::getConstantIntValue(loop.getStep()) != 1 || *hi <= *lo) {
      return std::nullopt;
    }
    return std::make_pair(*lo, *hi);
  };
  auto constant = [](mlir::scf::ForOp loop, int64_t value) -> Value {
    mlir::OpBuilder b(loop);
    return b.create<mlir::arith::ConstantIndexOp>(loop.getLoc(), value);
  };
  for (mlir::scf::ForOp loop : loops) {
    auto lanes = range(loop);
    if (!lanes) continue;
    auto [lo, hi] = *lanes;
    if (hi - lo < kTailLanes) {
      auto before = llvm::dyn_cast_or_null<mlir::scf::ForOp>(loop->getPrevNode());
      auto ahead = before && before->hasAttr(kLaneLoop) ? range(before) : std::nullopt;
      if (!ahead || ahead->second != lo || hi - kTailLanes < ahead->first ||
          !rerunnable(loop, {before}) || !rerunnable(before, {loop}) ||
          !readsNoMoreThan(loop, before)) {
        continue;
      }
      loop->moveBefore(before);
      loop.getLowerBoundMutable().assign(constant(loop, hi - kTailLanes));
      loop.getUpperBoundMutable().assign(constant(loop, hi));
      continue;
    }
    int64_t rest = (hi - lo) % kTailLanes;
    if (rest == 0 || !rerunnable(loop, {})) continue;
    mlir::OpBuilder b(loop->getContext());
    b.setInsertionPointAfter(loop);
    auto tail = llvm::cast<mlir::scf::ForOp>(b.clone(*loop));
    loop.getLowerBoundMutable().assign(constant(loop, lo));
    loop.getUpperBoundMutable().assign(constant(loop, hi - rest));
    tail.getLowerBoundMutable().assign(constant(tail, hi - kTailLanes));
    tail.getUpperBoundMutable().assign(constant(tail, hi));
  }
}

// Whether LLVM is to fold the tail of lane loop `loop` into its vector
// loop (`llvm.loop.vectorize.predicate.enable`: the last iteration masked)
// instead of following the vector loop with a vectorized epilogue and a
// scalar remainder. A block's lanes are cut into short pieces of unknown
// length (a concatenate's operands, a window's pads, a partial tile's
// edge), each of which LLVM otherwise vectorized three times over: half
// the x86 code generation of the concatenate, and the remainders ran
// element by element. Only loops whose accesses are all contiguous
// (accessesContiguously): a masked strided access is a masked gather or
// scatter, which LLVM splits into a branch per lane (the seed transpose's
// tile writes ran 2.7x slower). Only the pieces cut from a thread shape's
// lane loop (bounds not constant here): a whole one (a warp's 32 lanes, a
// block's threads) has a known length, mostly a multiple of the vector,
// where LLVM ignores the hint (the transposes' 32-lane loops compiled to
// the same objects with it). Lane loops that run every step of an
// interchanged accumulation with long-latency arithmetic are left out
// where they are made (emitInterchanged): softmax's exp + sum ran 1.23x
// slower with its exp masked every step.
// A/B in one process, bits the same; 4 of the 27 bench kernels change:
// two of the cumsum's six fusions (its run 0.69-0.70x), the concatenate 0.94-
// 0.96x, the seed transpose 0.93x; LLVM's O3 and code generation of the
// concatenate took 34 ms instead of 48, the cumsum's 65 instead of 73.
bool foldsTail(mlir::scf::ForOp loop) {
  if (mlir::getConstantIntValue(loop.getLowerBound()) &&
      mlir::getConstantIntValue(loop.getUpperBound())) {
    return false;
  }
  return accessesContiguously(loop);
}

bool isCut(mlir::Operation* op) { return llvm::isa<mlir::gpu::BarrierOp, mlir::gpu::ShuffleOp>(op); }

// Ops recomputed in every phase instead of kept per thread.
bool isRecomputed(mlir::Operation* op) {
  return llvm::isa<mlir::gpu::ThreadIdOp, mlir::gpu::BlockIdOp, mlir::LLVM::AddressOfOp>(op) ||
         (op->getNumOperands() == 0 && op->getNumRegions() == 0 && mlir::isPure(op));
}

mlir::FailureOr<Grid> findGrid(mlir::func::FuncOp f) {
  Grid grid;
  mlir::LogicalResult result = mlir::success();
  auto rangeOf = [&](mlir::Operation* op, int64_t& size) {
    auto range = op->getAttrOfType<mlir::ArrayAttr>("xla.range");
    if (!range || range.size() != 2 || !llvm::isa<mlir::IntegerAttr>(range[0]) ||
        !llvm::isa<mlir::IntegerAttr>(range[1])) {
      result = op->emitOpError() << "needs an xla.range attribute for the CPU target to "
                                    "know the size of the grid";
      return;
    }
    int64_t lo = llvm::cast<mlir::IntegerAttr>(range[0]).getInt();
    int64_t hi = llvm::cast<mlir::IntegerAttr>(range[1]).getInt();
    if (lo != 0 || hi < 0 || hi >= kMaxGridDim) {
      result = op->emitOpError() << "has xla.range [" << lo << ", " << hi
                                 << "]; the CPU target needs [0, n - 1] with n <= "
                                 << kMaxGridDim;
      return;
    }
    size = std::max(size, hi + 1);
  };
  f.walk([&](mlir::Operation* op) {
    if (auto t = llvm::dyn_cast<mlir::gpu::ThreadIdOp>(op)) {
      rangeOf(op, grid.threads[static_cast<int>(t.getDimension())]);
    } else if (auto b = llvm::dyn_cast<mlir::gpu::BlockIdOp>(op)) {
      rangeOf(op, grid.blocks[static_cast<int>(b.getDimension())]);
    } else if (isCut(op) && op->getBlock() != &f.getBody().front()) {
      result = op->emitOpError() << "inside control flow is not supported by the CPU "
                                    "target (barriers and shuffles must be at the top "
                                    "level of the kernel)";
    } else if (llvm::isa<mlir::gpu::BlockDimOp, mlir::gpu::GridDimOp>(op)) {
      result = op->emitOpError() << "is not supported by the CPU target";
    }
  });
  if (mlir::failed(result)) return mlir::failure();
  // The launch grid as the emitter recorded it: an id that nothing uses is
  // gone by now, but its threads still run.
  if (auto launch = f->getAttrOfType<mlir::DictionaryAttr>("xla.launch_dims")) {
    auto blocks = launch.getAs<mlir::DenseI64ArrayAttr>("block_counts");
    auto threads = launch.getAs<mlir::DenseI64ArrayAttr>("thread_counts_per_block");
    if (!blocks || !threads || blocks.size() != 3 || threads.size() != 3 ||
        llvm::any_of(blocks.asArrayRef(), [](int64_t n) { return n < 1 || n > kMaxGridDim; }) ||
        llvm::any_of(threads.asArrayRef(),
                     [](int64_t n) { return n < 1 || n > kMaxGridDim; })) {
      return f.emitOpError() << "has a malformed xla.launch_dims (expected block_counts "
                                "and thread_counts_per_block, three counts in [1, "
                             << kMaxGridDim << "] each)";
    }
    for (int i = 0; i < 3; ++i) {
      grid.blocks[i] = std::max(grid.blocks[i], blocks[i]);
      grid.threads[i] = std::max(grid.threads[i], threads[i]);
    }
  }
  // A GPU's block, or one whose threads -xla-gpu-fold-loops-into-threads
  // made K each (a GPU's block of K elements a thread).
  int64_t maxThreads = kMaxThreadsPerBlock;
  if (auto k = f->getAttrOfType<mlir::IntegerAttr>("xla.elements_per_thread")) {
    maxThreads = std::clamp<int64_t>(kMaxThreadsPerBlock * k.getInt(), kMaxThreadsPerBlock,
                                     kMaxFoldedThreadsPerBlock);
  }
  if (grid.numThreads() > maxThreads) {
    return f.emitOpError() << "has " << grid.numThreads() << " threads per block; at most "
                           << maxThreads << " (as on a GPU"
                           << (maxThreads > kMaxThreadsPerBlock ? ", its threads folded)" : ")");
  }
  // The block order an emitter asks the CPU for (a GPU's blocks have
  // none): a transpose's tiles in groups along the input's rows, so that
  // the rows of the input and of the output both advance a few tiles at a
  // time (TransposeEmitter.block_order).
  if (mlir::Attribute attr = f->getAttr("xla.block_order")) {
    auto dict = llvm::dyn_cast<mlir::DictionaryAttr>(attr);
    auto tiles = dict ? dict.getAs<mlir::DenseI64ArrayAttr>("tiles") : nullptr;
    auto order = dict ? dict.getAs<mlir::DenseI64ArrayAttr>("order") : nullptr;
    int64_t product = 1;
    bool valid = tiles && order && tiles.size() == order.size() && grid.blocks[1] == 1 &&
                 grid.blocks[2] == 1;
    SmallVector<bool> seen(valid ? tiles.size() : 0, false);
    int64_t rank = valid ? static_cast<int64_t>(tiles.size()) : 0;
    for (int64_t i = 0; valid && i < rank; ++i) {
      valid = tiles[i] >= 1 && tiles[i] <= grid.blocks[0] && order[i] >= 0 && order[i] < rank &&
              !seen[order[i]];
      if (valid) {
        seen[order[i]] = true;
        valid = product <= grid.blocks[0] / tiles[i];
        product *= tiles[i];
      }
    }
    if (!valid || product != grid.blocks[0]) {
      return f.emitOpError() << "has a malformed xla.block_order (expected tiles, counts "
                                "whose product is the "
                             << grid.blocks[0]
                             << " x blocks of a grid with one y and z block, and order, a "
                                "permutation of their dimensions)";
    }
    grid.tiles.assign(tiles.asArrayRef().begin(), tiles.asArrayRef().end());
    grid.order.assign(order.asArrayRef().begin(), order.asArrayRef().end());
  }
  return grid;
}

// The threads of a block a phase's loop runs: tid = w * period + l for w in
// [w0, w1) and l in [l0, l1) -- one interval when w1 - w0 == 1.
struct ThreadShape {
  int64_t period = 1, w0 = 0, w1 = 0, l0 = 0, l1 = 0;
  int64_t count() const { return (w1 - w0) * (l1 - l0); }
};

// The cheapest shape holding every thread of `set` (of `n`): the interval
// from its first to its last thread, or warps x lanes for a power-of-two
// period (the lanes [0, k) of every warp that a shuffle-down tree demands).
ThreadShape shapeOf(const llvm::BitVector& set, int64_t n) {
  ThreadShape best;
  if (set.none()) return best;
  int64_t lo = set.find_first(), hi = set.find_last();
  best = {n, 0, 1, lo, hi + 1};
  for (int64_t period = 2; period < n; period *= 2) {
    int64_t l0 = period, l1 = 0;
    for (int t : set.set_bits()) {
      l0 = std::min<int64_t>(l0, t % period);
      l1 = std::max<int64_t>(l1, t % period + 1);
    }
    ThreadShape shape{period, lo / period, hi / period + 1, l0, l1};
    if ((shape.w1 - 1) * period + l1 > n) continue;  // past the block's last thread
    if (shape.count() < best.count()) best = shape;
  }
  return best;
}

// Whether `op` or an op in its regions may write memory (or do something
// else a thread that skips it would miss). Calls are judged by their callee.
bool writesMemory(mlir::Operation* op, mlir::ModuleOp module,
                  llvm::DenseMap<mlir::Operation*, bool>& callees) {
  bool writes = false;
  op->walk([&](mlir::Operation* inner) {
    if (writes) return mlir::WalkResult::interrupt();
    if (auto call = llvm::dyn_cast<mlir::func::CallOp>(inner)) {
      auto callee = module.lookupSymbol<mlir::func::FuncOp>(call.getCallee());
      if (!callee || callee.isExternal()) {
        writes = true;
      } else if (auto it = callees.find(callee); it != callees.end()) {
        writes = it->second;
      } else {
        callees[callee] = true;  // a recursive call: assume the worst
        bool calleeWrites = writesMemory(callee, module, callees);
        callees[callee] = calleeWrites;
        writes = calleeWrites;
      }
      return mlir::WalkResult::advance();
    }
    if (llvm::isa<mlir::func::FuncOp>(inner)) return mlir::WalkResult::advance();
    if (auto effects = llvm::dyn_cast<mlir::MemoryEffectOpInterface>(inner)) {
      SmallVector<mlir::MemoryEffects::EffectInstance> list;
      effects.getEffects(list);
      writes = llvm::any_of(list, [](const mlir::MemoryEffects::EffectInstance& e) {
        return !llvm::isa<mlir::MemoryEffects::Read>(e.getEffect());
      });
    } else if (!inner->hasTrait<mlir::OpTrait::HasRecursiveMemoryEffects>()) {
      writes = true;
    }
    return mlir::WalkResult::advance();
  });
  return writes;
}

// `op` on integer operands `a` (of the result's `width` bits, or i1 for a
// select's condition), when it is one of the arith ops index maps and
// guards are made of; std::nullopt for any other op or an undefined result
// (division by zero, a shift past the width).
std::optional<llvm::APInt> foldInteger(mlir::Operation* op, llvm::ArrayRef<llvm::APInt> a,
                                       unsigned width) {
  namespace arith = mlir::arith;
  if (auto cmp = llvm::dyn_cast<arith::CmpIOp>(op)) {
    if (a.size() != 2 || a[0].getBitWidth() != a[1].getBitWidth()) return std::nullopt;
    return llvm::APInt(1, arith::applyCmpPredicate(cmp.getPredicate(), a[0], a[1]));
  }
  if (llvm::isa<arith::SelectOp>(op)) {
    if (a.size() != 3 || a[0].getBitWidth() != 1) return std::nullopt;
    return a[0].isOne() ? a[1] : a[2];
  }
  if (a.size() == 1) {
    if (llvm::isa<arith::IndexCastOp, arith::ExtSIOp>(op)) return a[0].sextOrTrunc(width);
    if (llvm::isa<arith::IndexCastUIOp, arith::ExtUIOp, arith::TruncIOp>(op)) {
      return a[0].zextOrTrunc(width);
    }
    return std::nullopt;
  }
  if (a.size() != 2 || a[0].getBitWidth() != width || a[1].getBitWidth() != width) {
    return std::nullopt;
  }
  const llvm::APInt &x = a[0], &y = a[1];
  bool overflows = x.isMinSignedValue() && y.isAllOnes();
  if (llvm::isa<arith::AddIOp>(op)) return x + y;
  if (llvm::isa<arith::SubIOp>(op)) return x - y;
  if (llvm::isa<arith::MulIOp>(op)) return x * y;
  if (llvm::isa<arith::AndIOp>(op)) return x & y;
  if (llvm::isa<arith::OrIOp>(op)) return x | y;
  if (llvm::isa<arith::XOrIOp>(op)) return x ^ y;
  if (llvm::isa<arith::MaxSIOp>(op)) return llvm::APIntOps::smax(x, y);
  if (llvm::isa<arith::MinSIOp>(op)) return llvm::APIntOps::smin(x, y);
  if (llvm::isa<arith::MaxUIOp>(op)) return llvm::APIntOps::umax(x, y);
  if (llvm::isa<arith::MinUIOp>(op)) return llvm::APIntOps::umin(x, y);
  if (llvm::isa<arith::ShLIOp, arith::ShRUIOp, arith::ShRSIOp>(op)) {
    if (y.uge(width)) return std::nullopt;
    if (llvm::isa<arith::ShLIOp>(op)) return x.shl(y);
    return llvm::isa<arith::ShRUIOp>(op) ? x.lshr(y) : x.ashr(y);
  }
  if (y.isZero()) return std::nullopt;
  if (llvm::isa<arith::DivUIOp>(op)) return x.udiv(y);
  if (llvm::isa<arith::RemUIOp>(op)) return x.urem(y);
  if (overflows) return std::nullopt;
  if (llvm::isa<arith::DivSIOp>(op)) return x.sdiv(y);
  if (llvm::isa<arith::RemSIOp>(op)) return x.srem(y);
  if (llvm::isa<arith::FloorDivSIOp>(op)) {
    return llvm::APIntOps::RoundingSDiv(x, y, llvm::APInt::Rounding::DOWN);
  }
  if (llvm::isa<arith::CeilDivSIOp>(op)) {
    return llvm::APIntOps::RoundingSDiv(x, y, llvm::APInt::Rounding::UP);
  }
  return std::nullopt;
}

// A per-thread loop with constant bounds runs interchanged with the
// threads: each iteration is a loop over the threads, which LLVM
// vectorizes (neighbouring threads read neighbouring elements), where a
// loop over the threads around each thread's whole walk is scalar and
// strided. Threads do not communicate within a phase, so any interleaving
// of their steps is one a GPU may run. Such loops are
//  - accumulations (carrying values: a reduction's walk), which
//    xla-gpu-optimize-loops keeps whole for the CPU target;
//  - loops of two or more steps that only write memory (the rows of a
//    transpose's tile a thread copies, too long for optimize-loops to
//    unroll). In one lane loop around all the steps, LLVM unrolled them
//    and analysed every copy's accesses: the f16 021 transpose's 16
//    stores at (lane + warp + 2 * step) mod 32 (its swizzle) took 30 of
//    O3's 57 ms and vectorized nothing. In a step's lane loop the
//    rotation is invariant, and the loop is cut where it wraps
//    (splitAtQuotientStep): O3 28 ms, the same run time (A/B in one
//    process, bits the same).
bool isInterchangeable(mlir::Operation* op) {
  auto loop = llvm::dyn_cast_or_null<mlir::scf::ForOp>(op);
  if (!loop) return false;
  auto lower = mlir::getConstantIntValue(loop.getLowerBound());
  auto upper = mlir::getConstantIntValue(loop.getUpperBound());
  auto step = mlir::getConstantIntValue(loop.getStep());
  if (!lower || !upper || !step || *step <= 0) return false;
  return loop.getNumRegionIterArgs() > 0 || *upper - *lower > *step;
}

// The longest run of its own a thread reads in an accumulation that
// stays whole in its lane loop (readsItsOwnRun).
constexpr int64_t kMaxOwnRun = 32;

// Whether accumulation `loop` (see isInterchangeable) reads, at each
// thread, a run of elements of its own, one after the other, the threads'
// runs back to back: every load of one of `f`'s buffers in it steps by one
// with the loop and by the loop's trip count (at most kMaxOwnRun) with the
// thread id (x, of a block of one dimension) -- the loop emitter's sum of
// a row of 12, a thread a row. Such a loop stays whole in its lane loop.
// Interchanged, each step's lane loop read one element of each run, a
// run's length apart, an element a load (no interleave group: the run's
// other elements are other steps'), and kept the sums in memory: a row sum
// over f32[65536,12] took 0.33 ms, jax.jit's 0.33, where f32[65535,12]
// (whose guard on the last block kept the loop whole) took 0.17.
bool readsItsOwnRun(mlir::func::FuncOp f, mlir::scf::ForOp loop) {
  auto lower = mlir::getConstantIntValue(loop.getLowerBound());
  auto upper = mlir::getConstantIntValue(loop.getUpperBound());
  auto step = mlir::getConstantIntValue(loop.getStep());
  if (loop.getNumResults() == 0 || !lower || !upper || step != 1) return false;
  int64_t trips = *upper - *lower;
  if (trips < 2 || trips > kMaxOwnRun) return false;
  llvm::DenseMap<Value, std::optional<int64_t>> alongLoop, alongThreads;
  bool reads = false;
  mlir::WalkResult result = loop.getBody()->walk([&](mlir::LLVM::LoadOp load) {
    if (!isKernelBuffer(f, baseOf(load.getAddr()))) return mlir::WalkResult::advance();
    auto gep = load.getAddr().getDefiningOp<mlir::LLVM::GEPOp>();
    if (!gep || !isKernelBuffer(f, gep.getBase()) || gep.getDynamicIndices().size() != 1 ||
        gep.getRawConstantIndices().size() != 1) {
      return mlir::WalkResult::interrupt();
    }
    Value index = gep.getDynamicIndices().front();
    if (strideIn(loop, index, alongLoop) != 1 ||
        strideAlongThreads(index, alongThreads) != trips) {
      return mlir::WalkResult::interrupt();
    }
    reads = true;
    return mlir::WalkResult::advance();
  });
  return reads && !result.wasInterrupted();
}

// The most ops a value an accumulation carries may pass through from one
// step to the next (its add) while the loop stays whole in its lane loop
// (readsItsOwnRun): with more, each thread's steps are one chain of their
// latency, which interchanged the threads' chains overlap. XLA:CPU's
// bf16 row sum over [8,12,256,256] (a softmax's gradient through
// xla_gpu.jax.jit): reduce-windows of 1x32 whose add rounds to bf16 each
// step (add, truncf, extf: 3 ops) ran 35.1 ms a kernel call whole on one
// thread, 2.7 interchanged (17.6 -> 1.2 on two; bits the same); the
// gradient 11.7 -> 7.0 ms (jax.jit 7.1-9.3). Plain f32 or s32 adds (1 op)
// stay whole: windows of 32, 16, 12 and 8 ran the same, each interchanged
// 1.6-6x slower.
constexpr int64_t kMaxWholeChainOps = 2;

// The most ops on a path from one of `loop`'s carried values to what it
// yields for the next step (ops with regions count once).
int64_t carriedChainOps(mlir::scf::ForOp loop) {
  llvm::DenseMap<Value, int64_t> depth;
  for (Value arg : loop.getRegionIterArgs()) depth[arg] = 0;
  int64_t longest = 0;
  for (mlir::Operation& op : loop.getBody()->without_terminator()) {
    std::optional<int64_t> from;
    op.walk([&](mlir::Operation* inner) {
      for (Value operand : inner->getOperands()) {
        auto it = depth.find(operand);
        if (it != depth.end()) from = std::max(from.value_or(0), it->second);
      }
    });
    if (!from) continue;
    for (Value result : op.getResults()) depth[result] = *from + 1;
  }
  for (Value yielded : loop.getBody()->getTerminator()->getOperands()) {
    auto it = depth.find(yielded);
    if (it != depth.end()) longest = std::max(longest, it->second);
  }
  return longest;
}

// Whether `a` and `b` are the same value: the same SSA value, or the same
// result of equivalent pure ops without regions on the same values (two
// copies of one index computation, made each where a step or a vector
// element needed it), up to `depth` ops deep.
bool sameValue(Value a, Value b, int depth = 4) {
  if (a == b) return true;
  auto x = llvm::dyn_cast<mlir::OpResult>(a);
  auto y = llvm::dyn_cast<mlir::OpResult>(b);
  if (!x || !y || depth == 0 || x.getResultNumber() != y.getResultNumber() ||
      x.getOwner()->getNumRegions() != 0 || !mlir::isPure(x.getOwner())) {
    return false;
  }
  return mlir::OperationEquivalence::isEquivalentTo(
      x.getOwner(), y.getOwner(),
      [&](Value u, Value v) { return mlir::success(sameValue(u, v, depth - 1)); },
      /*markEquivalent=*/nullptr, mlir::OperationEquivalence::IgnoreLocations);
}

// The fewest steps of the inner loop of a nest that coalesceThreadLoopNests
// makes one loop: XLA's vectors (2 or 4 elements a thread) stay inner
// loops, which LLVM unrolls into the lane loop's body.
constexpr int64_t kMinCoalescedSteps = 8;

// Whether `inner`, the inner loop of a thread's walk, reads the kernel's
// buffers along a row of its own: every load of one that moves with it
// steps by one element a step, at least one does, and none of them steps
// by one from thread to thread (there the threads make the row).
bool walksItsOwnRow(mlir::func::FuncOp f, mlir::scf::ForOp inner) {
  llvm::DenseMap<Value, std::optional<int64_t>> alongLoop, alongThreads;
  bool along = false;
  mlir::WalkResult result = inner.getBody()->walk([&](mlir::LLVM::LoadOp load) {
    auto gep = load.getAddr().getDefiningOp<mlir::LLVM::GEPOp>();
    if (!gep || !isKernelBuffer(f, gep.getBase())) return mlir::WalkResult::advance();
    if (gep.getDynamicIndices().size() != 1 || gep.getRawConstantIndices().size() != 1) {
      return mlir::WalkResult::interrupt();
    }
    Value index = gep.getDynamicIndices().front();
    std::optional<int64_t> step = strideIn(inner, index, alongLoop);
    if (step && *step == 0) return mlir::WalkResult::advance();
    std::optional<int64_t> across = strideAlongThreads(index, alongThreads);
    if (step != 1 || (across && (*across == 1 || *across == -1))) {
      return mlir::WalkResult::interrupt();
    }
    along = true;
    return mlir::WalkResult::advance();
  });
  return along && !result.wasInterrupted();
}

// A thread's walk of two nested loops with constant bounds, the inner one
// all the outer does (the loop emitter's thread of a column reduction over
// two reduced dimensions, [N, H, W, C] -> [N, C]), as one loop of both
// steps (as MLIR's coalesceLoops makes it: the inner step the remainder of
// the step by the inner count, the outer its quotient): then interchanged
// with the threads as one loop is, each step a lane loop. Interchange
// takes the outer loop only: the inner one stayed inside each lane, a
// scalar walk down the lane's column -- a group norm's first part over
// [8,32,32,8,16] took 0.43 ms, where one loop of 1024 steps takes 0.05.
// Not where the inner loop walks each thread's own row (walksItsOwnRow):
// there it stays inside each lane, reading along the row (LLVM vectorizes
// it where the reduction may be reordered: a max, an integer sum, an or),
// where as one loop every lane of a step read an element a row apart, a
// gather: a max over dimensions 1 and 3 of f32[16,64,32,64] 0.92 -> 0.16
// ms, XLA:CPU's 32 x 32 windows of jnp.isnan(x).any() over [2048,2048]
// 1.66 -> 0.31 ms; the f32 sum over those dimensions, a scalar walk in
// each lane, 0.97 -> 0.36 ms.
void coalesceThreadLoopNests(mlir::func::FuncOp f) {
  auto bounds = [](mlir::scf::ForOp loop) -> std::optional<std::array<int64_t, 3>> {
    auto lower = mlir::getConstantIntValue(loop.getLowerBound());
    auto upper = mlir::getConstantIntValue(loop.getUpperBound());
    auto step = mlir::getConstantIntValue(loop.getStep());
    if (!lower || !upper || !step || *step <= 0 || *upper <= *lower) return std::nullopt;
    return std::array<int64_t, 3>{*lower, (*upper - *lower + *step - 1) / *step, *step};
  };
  auto nestOf = [&](mlir::scf::ForOp outer) -> mlir::scf::ForOp {
    mlir::Block* body = outer.getBody();
    if (body->getOperations().size() != 2 || !bounds(outer)) return nullptr;
    auto inner = llvm::dyn_cast<mlir::scf::ForOp>(body->front());
    if (!inner) return nullptr;
    auto in = bounds(inner);
    if (!in || (*in)[1] < kMinCoalescedSteps || walksItsOwnRow(f, inner)) return nullptr;
    if (inner.getInitArgs() != mlir::ValueRange(outer.getRegionIterArgs()) ||
        body->getTerminator()->getOperands() != inner.getResults()) {
      return nullptr;
    }
    // The inner body reads the outer's carried values through its own only.
    for (Value carried : outer.getRegionIterArgs()) {
      for (mlir::OpOperand& use : carried.getUses()) {
        if (use.getOwner() != inner) return nullptr;
      }
    }
    return inner;
  };
  SmallVector<mlir::Block*> blocks = {&f.getBody().front()};
  for (mlir::Operation& op : f.getBody().front()) {
    if (auto guard = llvm::dyn_cast<mlir::scf::IfOp>(op)) blocks.push_back(guard.thenBlock());
  }
  for (mlir::Block* block : blocks) {
    for (mlir::Operation& op : llvm::make_early_inc_range(*block)) {
      auto outer = llvm::dyn_cast<mlir::scf::ForOp>(op);
      while (outer) {
        mlir::scf::ForOp inner = nestOf(outer);
        if (!inner) break;
        auto [lo, trips, step] = *bounds(outer);
        auto [innerLo, innerTrips, innerStep] = *bounds(inner);
        mlir::Location loc = outer.getLoc();
        mlir::OpBuilder b(outer);
        auto index = [&](mlir::OpBuilder& at, int64_t v) -> Value {
          return at.create<mlir::arith::ConstantIndexOp>(loc, v);
        };
        auto merged = b.create<mlir::scf::ForOp>(
            loc, index(b, 0), index(b, trips * innerTrips), index(b, 1), outer.getInitArgs(),
            [&](mlir::OpBuilder& lb, mlir::Location, Value k, mlir::ValueRange carried) {
              Value count = index(lb, innerTrips);
              auto at = [&](Value i, int64_t first, int64_t stride) -> Value {
                Value scaled = lb.create<mlir::arith::MulIOp>(loc, i, index(lb, stride));
                return lb.create<mlir::arith::AddIOp>(loc, scaled, index(lb, first));
              };
              mlir::IRMapping mapping;
              mapping.map(outer.getInductionVar(),
                          at(lb.create<mlir::arith::DivUIOp>(loc, k, count), lo, step));
              mapping.map(inner.getInductionVar(),
                          at(lb.create<mlir::arith::RemUIOp>(loc, k, count), innerLo, innerStep));
              mapping.map(inner.getRegionIterArgs(), carried);
              for (mlir::Operation& inside : inner.getBody()->getOperations()) {
                lb.clone(inside, mapping);
              }
            });
        merged->setAttrs(outer->getAttrs());
        outer.replaceAllUsesWith(merged.getResults());
        outer.erase();
        outer = merged;  // a deeper nest goes on
      }
    }
  }
}

// Whether `op` may run where its guard would have skipped it: a pure op,
// or a load of a kernel buffer's first element (the scalar a reduction
// starts from), which every kernel buffer has.
bool runsUnguarded(mlir::func::FuncOp f, mlir::Operation* op) {
  if (auto load = llvm::dyn_cast<mlir::LLVM::LoadOp>(op)) {
    auto arg = llvm::dyn_cast<mlir::BlockArgument>(load.getAddr());
    return load.getInvariant() && arg && arg.getOwner() == &f.getBody().front();
  }
  return mlir::isPure(op) && op->getNumRegions() == 0;
}

// Whether `op` may run again at each step of a loop of its guard: a pure
// op, or a load of an input (invariant: nothing in the kernel writes it).
bool recomputable(mlir::Operation* op) {
  if (auto load = llvm::dyn_cast<mlir::LLVM::LoadOp>(op)) return load.getInvariant();
  return mlir::isPure(op) && op->getNumRegions() == 0;
}

// A guard without results around an accumulation, what it reads before
// the loop, and the stores of its results after --
//
//   scf.if %in_bounds { %m = load %mean[%col]
//                       %r = scf.for ... iter_args(%a = %init) {... %m ...}
//                       store %r, %out[%col] }
//
// (the loop emitter's thread a column of a column reduction, the last
// block partial) -- becomes a guard with the loop's results, which
// sinkGuardsIntoThreadLoops sinks into the loop, and a guard of the
// stores after it:
//
//   %r = scf.if %in_bounds { %l = scf.for ... {%m = load ...; ...}
//                            scf.yield %l } else { scf.yield %init }
//   scf.if %in_bounds { store %r, %out[%col] }
//
// What the loop reads before is read again at each step (pure ops, loads
// of inputs); its starting values are read before the guard (pure ops, a
// buffer's first element). Before, such a guard kept each thread's whole
// walk down its column in a loop over the threads, scalar: a variance
// over the columns of f32[700,300] (300 columns, blocks of 128 threads)
// took 0.20 ms where its mean's sum took 0.07.
void splitGuardAtThreadLoop(mlir::func::FuncOp f, mlir::scf::IfOp guard) {
  if (guard.getNumResults() != 0 ||
      (guard.elseBlock() && !guard.elseBlock()->without_terminator().empty())) {
    return;
  }
  mlir::Block* then = guard.thenBlock();
  mlir::scf::ForOp loop;
  for (mlir::Operation& op : then->without_terminator()) {
    if (auto candidate = llvm::dyn_cast<mlir::scf::ForOp>(op)) {
      if (loop) return;  // one loop only
      loop = candidate;
    }
  }
  if (!loop || loop.getNumResults() == 0 || !isInterchangeable(loop)) return;
  // What comes before the loop: recomputable; the starting values, or
  // what they are computed from, may also run unguarded.
  llvm::SetVector<mlir::Operation*> hoisted;
  std::function<bool(Value)> hoist = [&](Value v) -> bool {
    mlir::Operation* def = v.getDefiningOp();
    if (!def || !guard->isAncestor(def)) return true;  // from outside the guard
    if (!runsUnguarded(f, def)) return false;
    for (Value operand : def->getOperands()) {
      if (!hoist(operand)) return false;
    }
    hoisted.insert(def);
    return true;
  };
  for (mlir::Operation* op = &then->front(); op != loop; op = op->getNextNode()) {
    if (!recomputable(op)) return;
  }
  for (Value init : loop.getInitArgs()) {
    if (!hoist(init)) return;
  }
  // The loop body's and the stores' uses of what came before are clones.
  auto before = [&](mlir::Operation* op) {
    return op->getBlock() == then && op->isBeforeInBlock(loop);
  };
  auto cloneBefore = [&](mlir::OpBuilder& at, mlir::Operation* user, mlir::IRMapping& mapping) {
    // The ops before the loop that `user` (and what it holds) reads,
    // cloned at `at` in their order.
    llvm::SetVector<mlir::Operation*> needed;
    std::function<void(Value)> need = [&](Value v) {
      mlir::Operation* def = v.getDefiningOp();
      if (!def || !before(def) || needed.contains(def) || mapping.contains(v)) return;
      for (Value operand : def->getOperands()) need(operand);
      needed.insert(def);
    };
    user->walk([&](mlir::Operation* inner) {
      for (Value operand : inner->getOperands()) need(operand);
    });
    for (mlir::Operation* op : needed) {
      if (!mapping.contains(op->getResult(0))) at.clone(*op, mapping);
    }
  };
  mlir::OpBuilder b(guard);
  mlir::IRMapping outside;
  for (mlir::Operation* op : hoisted) b.clone(*op, outside);
  mlir::Location loc = guard.getLoc();
  auto inits = llvm::map_to_vector(loop.getInitArgs(),
                                   [&](Value v) { return outside.lookupOrDefault(v); });
  auto results = b.create<mlir::scf::IfOp>(
      loc, guard.getCondition(),
      [&](mlir::OpBuilder& tb, mlir::Location) {
        auto copy = tb.create<mlir::scf::ForOp>(
            loop.getLoc(), loop.getLowerBound(), loop.getUpperBound(), loop.getStep(), inits,
            [&](mlir::OpBuilder& lb, mlir::Location, Value iv, mlir::ValueRange carried) {
              mlir::IRMapping inner = outside;
              inner.map(loop.getInductionVar(), iv);
              inner.map(loop.getRegionIterArgs(), carried);
              for (mlir::Operation& op : loop.getBody()->getOperations()) {
                cloneBefore(lb, &op, inner);
                lb.clone(op, inner);
              }
            });
        copy->setAttrs(loop->getAttrs());
        tb.create<mlir::scf::YieldOp>(loc, copy.getResults());
      },
      [&](mlir::OpBuilder& eb, mlir::Location) { eb.create<mlir::scf::YieldOp>(loc, inits); });
  auto stores = b.create<mlir::scf::IfOp>(loc, guard.getCondition(), /*withElseRegion=*/false);
  mlir::OpBuilder sb = mlir::OpBuilder::atBlockTerminator(stores.thenBlock());
  mlir::IRMapping after = outside;
  for (auto [old, now] : llvm::zip(loop.getResults(), results.getResults())) after.map(old, now);
  for (mlir::Operation* op = loop->getNextNode(); op != then->getTerminator();
       op = op->getNextNode()) {
    cloneBefore(sb, op, after);
    sb.clone(*op, after);
  }
  guard.erase();
}

// A per-thread accumulation behind a guard of the thread -- a partial
// tile's threads past the edge skip their whole walk:
//
//   %r = scf.if %in_bounds { %l = scf.for ... iter_args(%a = %init) {...}
//                            scf.yield %l } else { scf.yield %init }
//
// becomes the loop with the guard inside, the same for every thread:
//
//   %r = scf.for ... iter_args(%a = %init) {
//     %n = scf.if %in_bounds { ...; scf.yield %next } else { scf.yield %a }
//     scf.yield %n }
//
// so that it runs interchanged with the threads (isInterchangeable) like an
// unguarded one, and the lane loop of each step is cut where the guard
// flips (splitAtGuards). Without it such a kernel walked each thread's
// rows one thread at a time (a column sum with a partial tile, f32[4096,
// 1040]: 10x the time of f32[4096,1024]). The same for a guarded loop that
// only writes (no results: a transpose's rows of exp, which
// xla-gpu-optimize-loops keeps a loop for the CPU target).
void sinkGuardsIntoThreadLoops(mlir::func::FuncOp f) {
  mlir::Block& body = f.getBody().front();
  // First a guard of what a walk reads before it and stores after it splits
  // into one of the walk's results and one of the stores.
  for (mlir::Operation& op : llvm::make_early_inc_range(body.without_terminator())) {
    if (auto guard = llvm::dyn_cast<mlir::scf::IfOp>(op)) splitGuardAtThreadLoop(f, guard);
  }
  for (mlir::Operation& op : llvm::make_early_inc_range(body.without_terminator())) {
    auto guard = llvm::dyn_cast<mlir::scf::IfOp>(op);
    if (!guard) continue;
    mlir::Block* then = guard.thenBlock();
    auto loop = llvm::dyn_cast<mlir::scf::ForOp>(then->front());
    if (!loop || then->getOperations().size() != 2 || !isInterchangeable(loop)) continue;
    if (guard.getNumResults() == 0) {
      // A loop that only writes (memory, after -xla-gpu-lower-tensors):
      // nothing to pass on where the guard fails.
      if (loop.getNumResults() != 0 ||
          (guard.elseBlock() && guard.elseBlock()->getOperations().size() != 1)) {
        continue;
      }
    } else if (!guard.elseBlock() || guard.thenYield().getOperands() != loop.getResults() ||
               guard.elseYield().getOperands() != loop.getInitArgs()) {
      continue;
    }
    mlir::OpBuilder b(guard);
    auto sunk = b.create<mlir::scf::ForOp>(
        loop.getLoc(), loop.getLowerBound(), loop.getUpperBound(), loop.getStep(),
        loop.getInitArgs(),
        [&](mlir::OpBuilder& lb, mlir::Location loc, Value iv, mlir::ValueRange carried) {
          auto step = lb.create<mlir::scf::IfOp>(
              guard.getLoc(), guard.getCondition(),
              [&](mlir::OpBuilder& tb, mlir::Location) {
                mlir::IRMapping mapping;
                mapping.map(loop.getInductionVar(), iv);
                mapping.map(loop.getRegionIterArgs(), carried);
                for (mlir::Operation& inner : loop.getBody()->without_terminator()) {
                  tb.clone(inner, mapping);
                }
                SmallVector<Value> next;
                for (Value v : loop.getBody()->getTerminator()->getOperands()) {
                  next.push_back(mapping.lookupOrDefault(v));
                }
                tb.create<mlir::scf::YieldOp>(loc, next);
              },
              [&](mlir::OpBuilder& eb, mlir::Location) {
                eb.create<mlir::scf::YieldOp>(loc, carried);
              });
          lb.create<mlir::scf::YieldOp>(loc, step.getResults());
        });
    guard.replaceAllUsesWith(sunk.getResults());
    guard.erase();
  }
}

class KernelLowering {
 public:
  KernelLowering(mlir::func::FuncOp f, Grid grid, bool transposingWrites)
      : f_(f), grid_(grid), transposingWrites_(transposingWrites) {
    // A kernel whose threads each ran K elements, now K threads
    // (-xla-gpu-fold-loops-into-threads): its lane loop interleaves K
    // vector iterations, the K independent chains a thread had, where the
    // body has long-latency arithmetic (a division, a transcendental's
    // polynomial) that LLVM's cost model runs one chain at a time. The
    // GELUs: bf16 8.5 -> 6.0 ms, erf 0.72 -> 0.61 ms; the conversions and
    // integer ops, memory-bound, ran slower with it (f8 1.06 -> 1.23 ms).
    // HostJit cuts the count of a long body (kInterleavedInstructions: the
    // bf16 GELU runs 2, its compile's cost). A kernel not folded with such
    // arithmetic interleaves 2, where LLVM chose 1 for its compute-bound
    // lane loops (A/B in one process, one thread, bits the same: atan2
    // 0.76x, power 0.79x, sin + cos 0.89x, the softmax exp+sum 0.89x, the
    // seed transpose and the softmax steps 0.97x; compile +1-5 ms each).
    auto elements = f->getAttrOfType<mlir::IntegerAttr>("xla.elements_per_thread");
    if (!elements) {
      if (hasLongLatencyArithmetic(f)) laneInterleave_ = 2;
      return;
    }
    // At most 8: the loop emitter unrolls by 4 at most (packed sub-byte
    // types, unrolled further, are not folded); a hand-written attribute
    // asks LLVM for no more than that.
    if (hasLongLatencyArithmetic(f)) laneInterleave_ = std::clamp<int64_t>(elements.getInt(), 0, 8);
  }

  mlir::LogicalResult run() {
    // 1. Phases: top-level ops between cuts. A shuffle's result is
    //    computed where it is used (shuffleAt): the shuffled value at the
    //    source lane, from its per-thread slots when an earlier phase
    //    computed it, else computed there too. A shuffle is a cut when its
    //    phase cannot compute its value at another lane.
    mlir::Block& body = f_.getBody().front();
    auto ret = llvm::dyn_cast<mlir::func::ReturnOp>(body.getTerminator());
    if (!ret || ret.getNumOperands() != 0) {
      return f_.emitOpError() << "a kernel for the CPU target must return nothing (run "
                                 "-xla-gpu-lower-tensors first)";
    }
    SmallVector<SmallVector<mlir::Operation*>> phases(1);
    // Whether `v` can be computed at any lane of the current phase: it
    // comes from an earlier phase (its slots, or recomputed), or is a
    // shuffle's or a pure op's result on such values (cloned per lane).
    llvm::DenseMap<Value, bool> atAnyLane;
    std::function<bool(Value)> computableAtLanes = [&](Value v) -> bool {
      if (auto arg = llvm::dyn_cast<mlir::BlockArgument>(v)) return arg.getOwner() == &body;
      mlir::Operation* def = v.getDefiningOp();
      auto placed = phaseOf_.find(def);
      if (placed == phaseOf_.end()) return false;
      if (placed->second + 1 != phases.size()) return true;
      if (llvm::isa<mlir::gpu::ShuffleOp>(def)) return true;
      if (auto it = atAnyLane.find(v); it != atAnyLane.end()) return it->second;
      bool computable = isLaneEvaluable(def) && llvm::all_of(def->getOperands(), computableAtLanes);
      atAnyLane[v] = computable;
      return computable;
    };
    // Whether `shuffle` is a level of a tree over a warp or more: its
    // offset is half a warp or more, or its value comes from such a level
    // in this phase. A narrower tree (several rows a warp: the multi-row
    // max's rows of 8 lanes) keeps a phase per level, each running the
    // lanes the next reads: computed whole by lane 0 of each row, it ran
    // 1.2x slower (0.052 against 0.044 ms, A/B in one process, bits the
    // same), the rows' strided loads in one loop over them.
    // The loads a lane computing `v` makes, shuffles aside (their values
    // are the tree's own), each once: the current phase's loads, and a
    // load from its slots (or of its input) for each value of an earlier
    // phase but constants and integers (recomputed, see step 2). The
    // earlier values count: the max and the exp + sum of a softmax over
    // rows of 256, merged into one kernel, share their loads of x (cse),
    // and the exp + sum's tree, counted 1 load, made lane 0 of each warp
    // compute all 32 lanes' 8 exps, vectorized across the rows: 4x the
    // time of the two kernels.
    auto loadsAtLanes = [&](Value v) {
      int64_t loads = 0;
      llvm::SmallVector<Value> work = {v};
      llvm::DenseSet<mlir::Operation*> seen;
      while (!work.empty()) {
        mlir::Operation* def = work.pop_back_val().getDefiningOp();
        if (!def || llvm::isa<mlir::gpu::ShuffleOp>(def) || !seen.insert(def).second) continue;
        if (phaseOf_.lookup(def) + 1 != phases.size()) {
          loads += !def->hasTrait<mlir::OpTrait::ConstantLike>() &&
                   !llvm::all_of(def->getResultTypes(), [](mlir::Type t) {
                     return t.isIntOrIndex() || llvm::isa<mlir::LLVM::LLVMPointerType>(t);
                   });
          continue;
        }
        loads += evaluableLoads_.contains(def);
        llvm::append_range(work, def->getOperands());
      }
      return loads;
    };
    llvm::DenseSet<mlir::Operation*> wide;
    auto treeOfAWarp = [&](mlir::gpu::ShuffleOp shuffle) {
      bool result = 2 * *mlir::getConstantIntValue(shuffle.getOffset()) >= kMinPeriod;
      llvm::SmallVector<Value> work = {shuffle.getValue()};
      llvm::DenseSet<Value> seen;
      while (!result && !work.empty()) {
        Value v = work.pop_back_val();
        mlir::Operation* def = v.getDefiningOp();
        if (!def || !seen.insert(v).second || phaseOf_.lookup(def) + 1 != phases.size()) continue;
        if (wide.contains(def)) result = true;
        if (isLaneEvaluable(def)) llvm::append_range(work, def->getOperands());
      }
      if (result) wide.insert(shuffle);
      return result;
    };
    // Whether the current phase may have written memory so far, and
    // whether it holds a shuffle.
    bool phaseWrites = false, phaseShuffles = false;
    auto module = f_->getParentOfType<mlir::ModuleOp>();
    auto newPhase = [&](SmallVector<mlir::Operation*> ops = {}) {
      phases.push_back(std::move(ops));
      atAnyLane.clear();
      phaseWrites = phaseShuffles = false;
      for (mlir::Operation* op : phases.back()) {
        phaseOf_[op] = phases.size() - 1;
        phaseWrites |= writesMemory(op, module, callees_);
      }
    };
    for (mlir::Operation& op : body.without_terminator()) {
      if (llvm::isa<mlir::gpu::BarrierOp>(op)) {
        newPhase();
        continue;
      }
      if (auto shuffle = llvm::dyn_cast<mlir::gpu::ShuffleOp>(op)) {
        if (mlir::failed(checkShuffle(shuffle))) return mlir::failure();
        // A shuffle of a tree over a warp, of a value each lane of this
        // phase can compute, stays in the phase: the lanes that use its
        // result compute the source lane's value too (a warp's whole
        // shuffle tree in one loop over the lanes that keep its result,
        // lane 0 of each warp, instead of a loop per level). Else (or for
        // a narrower tree, see treeOfAWarp) the value is computed for every lane
        // first (a load after a store) and the shuffle starts the next
        // phase; when this phase holds a shuffle tree already, the ops
        // from the value's first such dependency on go to a phase of
        // their own (any cut is a schedule a GPU may run), so that the
        // tree's phase still runs only the lanes that keep its result.
        if (!treeOfAWarp(shuffle) || !computableAtLanes(shuffle.getValue()) ||
            loadsAtLanes(shuffle.getValue()) > kMaxLoadsAtLanes) {
          if (phaseShuffles) {
            SmallVector<mlir::Operation*>& current = phases.back();
            size_t from = current.size();
            llvm::SmallPtrSet<mlir::Operation*, 16> seen;
            std::function<void(Value)> visit = [&](Value v) {
              mlir::Operation* def = v.getDefiningOp();
              if (!def || phaseOf_.lookup(def) + 1 != phases.size() || !seen.insert(def).second) {
                return;
              }
              if (!isLaneEvaluable(def) && !llvm::isa<mlir::gpu::ShuffleOp>(def)) {
                from = std::min<size_t>(from, llvm::find(current, def) - current.begin());
              }
              for (Value operand : def->getOperands()) visit(operand);
            };
            visit(shuffle.getValue());
            if (from > 0 && from < current.size()) {
              SmallVector<mlir::Operation*> moved(current.begin() + from, current.end());
              current.truncate(from);
              newPhase(std::move(moved));
            }
          }
          newPhase();
        }
        hasShuffles_ = phaseShuffles = true;
        phaseOf_[&op] = phases.size() - 1;
        continue;
      }
      if (isInterchangeable(&op) &&
          !(grid_.threads[1] * grid_.threads[2] == 1 &&
            readsItsOwnRun(f_, llvm::cast<mlir::scf::ForOp>(op)) &&
            carriedChainOps(llvm::cast<mlir::scf::ForOp>(op)) <= kMaxWholeChainOps)) {
        // A loop every thread of a group runs alike is run once a group,
        // whole (see uniformGroupOf); any other, interchanged.
        if (int64_t group = uniformGroupOf(llvm::cast<mlir::scf::ForOp>(op)); group > 0) {
          uniformGroups_[&op] = group;
        } else {
          interchanged_.insert(&op);
        }
        newPhase({&op});
        newPhase();
        continue;
      }
      // A load no store of its phase precedes reads at any lane what that
      // lane's thread reads (a store of another thread to the same place
      // would race).
      if (auto load = llvm::dyn_cast<mlir::LLVM::LoadOp>(op);
          load && !phaseWrites && isPlain(load)) {
        evaluableLoads_.insert(&op);
      }
      phaseWrites |= writesMemory(&op, module, callees_);
      phases.back().push_back(&op);
      phaseOf_[&op] = phases.size() - 1;
    }
    // 2. What a later phase recomputes instead of reloading: ids, constants,
    //    and the integer and pointer arithmetic on them (index maps of the
    //    thread and block ids, the shared tiles' addresses); every other
    //    value used in a later phase than the one defining it is spilled.
    for (mlir::Operation& op : body.without_terminator()) {
      if (isRecomputed(&op)) {
        recomputed_.insert(&op);
        continue;
      }
      bool fromRecomputed = llvm::all_of(op.getOperands(), [&](Value v) {
        if (auto arg = llvm::dyn_cast<mlir::BlockArgument>(v)) return arg.getOwner() == &body;
        return recomputed_.contains(v.getDefiningOp());
      });
      // A load of what nothing in the kernel writes (isInputLoad) reads the
      // same in every phase: loaded again where a later phase uses it, not
      // copied into slots first.
      if (isInputLoad(&op) && fromRecomputed) {
        recomputed_.insert(&op);
        continue;
      }
      if (op.getNumRegions() != 0 || !mlir::isPure(&op) || llvm::isa<mlir::gpu::ShuffleOp>(op)) {
        continue;
      }
      bool cheap = llvm::all_of(op.getResultTypes(), [](mlir::Type t) {
        return t.isIntOrIndex() || llvm::isa<mlir::LLVM::LLVMPointerType>(t);
      });
      if (cheap && fromRecomputed) recomputed_.insert(&op);
    }
    for (mlir::Operation& op : body.without_terminator()) {
      if (recomputed_.contains(&op) || llvm::isa<mlir::gpu::BarrierOp, mlir::gpu::ShuffleOp>(op)) {
        continue;
      }
      for (Value result : op.getResults()) {
        for (mlir::OpOperand& use : result.getUses()) {
          mlir::Operation* top = body.findAncestorOpInBlock(*use.getOwner());
          if (top && phaseOf_.lookup(top) != phaseOf_.lookup(&op)) {
            spilled_.insert(result);
            break;
          }
        }
      }
    }
    // A shuffle's result used in another phase than its value's reads the
    // value's slots there (shuffleAt); through shuffles of shuffles.
    std::function<void(Value, unsigned)> neededIn = [&](Value v, unsigned phase) {
      mlir::Operation* def = v.getDefiningOp();
      if (!def || def->getBlock() != &body || recomputed_.contains(def)) return;
      if (auto shuffle = llvm::dyn_cast<mlir::gpu::ShuffleOp>(def)) {
        return neededIn(shuffle.getValue(), phase);
      }
      if (phaseOf_.lookup(def) != phase) spilled_.insert(v);
    };
    for (auto shuffle : body.getOps<mlir::gpu::ShuffleOp>()) {
      for (mlir::Operation* user : shuffle->getUsers()) {
        mlir::Operation* top = body.findAncestorOpInBlock(*user);
        if (top && !llvm::isa<mlir::gpu::ShuffleOp>(top)) {
          neededIn(shuffle.getValue(), phaseOf_.lookup(top));
        }
      }
    }
    // An interchanged loop keeps its carried values in its results' slots.
    for (mlir::Operation* loop : interchanged_) {
      for (Value r : loop->getResults()) spilled_.insert(r);
    }
    // 3. The threads each phase runs, the last phase first: those for which
    //    it may write memory (all of them, or those an enclosing scf.if on
    //    the thread ids lets through) and those whose values a later phase
    //    reads (a shuffle reads its source lanes). Every other thread would
    //    compute values no one sees -- after a warp's shuffle tree only lane
    //    0's result is stored, so each round needs half the lanes of the one
    //    before. The values a phase reads from earlier phases are demanded
    //    for every thread it runs, so none reads a slot never written.
    int64_t n = grid_.numThreads();
    llvm::DenseMap<Value, llvm::BitVector> demanded;
    // What phase `p` computes at other lanes than its own (a shuffle's
    // source lanes), and the lanes.
    llvm::DenseMap<Value, llvm::BitVector> evaluated;
    std::function<void(Value, const llvm::BitVector&, unsigned)> demand =
        [&](Value v, const llvm::BitVector& threads, unsigned p) {
          mlir::Operation* def = v.getDefiningOp();
          if (auto shuffle = llvm::dyn_cast_or_null<mlir::gpu::ShuffleOp>(def)) {
            demand(shuffle.getValue(), shuffleSources(shuffle, threads), p);
          } else if (def && def->getBlock() == &body && phaseOf_.lookup(def) == p &&
                     isLaneEvaluable(def)) {
            llvm::BitVector& done = evaluated.try_emplace(v, n).first->second;
            llvm::BitVector more = threads;
            more.reset(done);
            if (more.none()) return;
            done |= more;
            for (Value operand : def->getOperands()) demand(operand, more, p);
          } else if (spilled_.contains(v) && (!def || phaseOf_.lookup(def) != p)) {
            demanded.try_emplace(v, n).first->second |= threads;
          }
        };
    SmallVector<ThreadShape> shapes(phases.size());
    for (int64_t p = static_cast<int64_t>(phases.size()) - 1; p >= 0; --p) {
      if (phases[p].empty()) continue;
      llvm::BitVector threads(n);
      for (mlir::Operation* op : phases[p]) {
        for (Value r : op->getResults()) {
          if (auto it = demanded.find(r); it != demanded.end()) threads |= it->second;
        }
        if (writesMemory(op, module, callees_)) {
          threads |= threadsThatMayWrite(op, module);
        }
      }
      auto uniform = uniformGroups_.find(phases[p].front());
      if (phases[p].size() == 1 && uniform != uniformGroups_.end()) {
        shapes[p] = leadersOf(threads, uniform->second);
      } else {
        shapes[p] = inPeriods(shapeOf(threads, n), periodOf(phases[p]));
      }
      llvm::BitVector ran = bitsOf(shapes[p]);
      evaluated.clear();
      for (mlir::Operation* op : phases[p]) {
        op->walk([&](mlir::Operation* inner) {
          for (Value v : inner->getOperands()) demand(v, ran, p);
        });
      }
    }
    // Results a block writes and reads back only at its own elements, the
    // blocks one after the other (kBlockLocalAttr): per block in the
    // storage, not in memory.
    SmallVector<std::pair<unsigned, int64_t>> blockLocal;
    for (unsigned i = 0; i < f_.getNumArguments(); ++i) {
      mlir::Attribute attr = f_.getArgAttr(i, kBlockLocalAttr);
      if (!attr) continue;
      auto bytes = llvm::dyn_cast<mlir::IntegerAttr>(attr);
      if (!bytes || bytes.getInt() <= 0 ||
          !llvm::isa<mlir::LLVM::LLVMPointerType>(f_.getArgument(i).getType())) {
        return f_.emitOpError() << "argument " << i << ": " << kBlockLocalAttr
                                << " must be a positive integer on a pointer argument";
      }
      blockLocal.push_back({i, bytes.getInt()});
    }
    // 4. The new body: allocations, the loop over blocks, one loop (nest)
    //    over the threads per phase.
    mlir::MLIRContext* ctx = f_.getContext();
    mlir::Location loc = f_.getLoc();
    auto* newBody = new mlir::Block();
    f_.getBody().push_back(newBody);
    newBody_ = newBody;
    SmallVector<mlir::Location> locs(body.getNumArguments(), loc);
    newBody->addArguments(body.getArgumentTypes(), locs);
    Value first = newBody->addArgument(mlir::IndexType::get(ctx), loc);
    Value last = newBody->addArgument(mlir::IndexType::get(ctx), loc);
    mlir::OpBuilder b = mlir::OpBuilder::atBlockBegin(newBody);
    for (auto [oldArg, newArg] : llvm::zip(body.getArguments(), newBody->getArguments())) {
      argMap_.map(oldArg, newArg);
    }
    auto ptrType = mlir::LLVM::LLVMPointerType::get(ctx);
    Value one64 = b.create<mlir::LLVM::ConstantOp>(loc, b.getI64Type(), 1);
    Value threads64 = b.create<mlir::LLVM::ConstantOp>(loc, b.getI64Type(), grid_.numThreads());
    // Per-thread values and shared memory: on the stack while they fit in
    // a fraction of a thread's stack (8 MiB on Linux), else on the heap, one
    // allocation per call freed at its end; past kMaxStorageBytes the
    // kernel is refused here, before it can run.
    SmallVector<mlir::LLVM::GlobalOp> shared;
    for (auto global : module.getOps<mlir::LLVM::GlobalOp>()) {
      if (global.getAddrSpace() == 3) shared.push_back(global);
    }
    mlir::DataLayout layout = mlir::DataLayout::closest(f_);
    auto bytesOf = [&](mlir::Type t, int64_t n) -> uint64_t {
      return llvm::alignTo(layout.getTypeSize(t).getFixedValue() * uint64_t(n), 16);
    };
    // A spilled value's slots for one block.
    auto slotBytes = [&](Value v) {
      return bytesOf(storageType(v.getType()), slotsOf(v) * componentsOf(v.getType()));
    };
    uint64_t storage = 0;
    for (Value v : spilled_) storage += slotBytes(v);
    for (auto global : shared) storage += bytesOf(global.getType(), 1);
    for (auto [arg, bytes] : blockLocal) storage += bytesOf(b.getI8Type(), bytes);
    if (storage > kMaxStorageBytes) {
      return f_.emitOpError() << "needs " << storage << " bytes of per-thread and shared "
                              << "storage on the CPU target, more than " << kMaxStorageBytes;
    }
    // Blocks in batches: each phase runs for a batch of neighbouring blocks
    // before the next phase (blocks are independent, so any interleaving
    // is one a GPU may run), each block with its own slots and shared
    // memory. Neighbouring blocks read neighbouring columns (a column
    // reduction, a transpose's tiles): a batch reads whole rows where one
    // block reads a strip of each. A kernel of one phase gains nothing.
    // Of the reductions (shuffles), only those whose accumulation reads
    // across the blocks (readsAcrossBlocks): a row reduction's block reads
    // its rows whole already, and the batch's slots crowd the L1.
    int64_t numPhases = llvm::count_if(phases, [](const auto& phase) { return !phase.empty(); });
    int64_t numBlocks = grid_.numBlocks();
    bool accumulates = llvm::any_of(interchanged_, [](mlir::Operation* loop) {
      return loop->getNumResults() > 0;
    });
    bool mayBatch = numPhases > 1 || accumulates;
    // The interchanged loops that read across the blocks
    // (readsAcrossBlocks), where that decides: a kernel with shuffles, or
    // an accumulation (a batch's streams, below).
    SmallVector<mlir::scf::ForOp> across;
    if (mayBatch && (hasShuffles_ || accumulates)) {
      for (mlir::Operation* loop : interchanged_) {
        auto forOp = llvm::cast<mlir::scf::ForOp>(loop);
        if (readsAcrossBlocks(forOp)) across.push_back(forOp);
      }
    }
    // An accumulation of blocks far apart (blocksFarApart) runs a block at
    // a time, each block's stream whole.
    auto farApart = [&] {
      return accumulates && llvm::all_of(interchanged_, [&](mlir::Operation* loop) {
               return blocksFarApart(llvm::cast<mlir::scf::ForOp>(loop));
             });
    };
    if (mayBatch && (!across.empty() || (!hasShuffles_ && !farApart()))) {
      // An accumulation's batch shares its partial sums' visits (see
      // emitInterchanged) within a core's L2; any other batch's shared
      // tiles and slots stay in the L1 between the phase that writes them
      // and the one that reads them back, two blocks at least.
      uint64_t budget = accumulates ? kBatchStorageBytes : kBatchL1Bytes;
      int64_t most = std::min(kMaxBatch, numBlocks);
      batch_ = std::clamp<int64_t>(budget / std::max<uint64_t>(storage, 1),
                                   std::min<int64_t>(accumulates ? 1 : 2, most), most);
      // A loop's accumulation read across its blocks (no shuffles) batches
      // the blocks of two streams at most (blocksAlongStream).
      if (!hasShuffles_) {
        for (mlir::scf::ForOp loop : across) {
          if (loop->getNumResults() > 0) batch_ = std::min(batch_, 2 * blocksAlongStream(loop));
        }
      }
    }
    storage *= batch_;
    for (mlir::Operation* loop : interchanged_) {
      uint64_t bytes = 0;
      for (Value r : loop->getResults()) bytes += slotBytes(r);
      carriedBytes_[loop] = bytes * batch_;
    }
    Value heap;
    mlir::LLVM::LLVMFuncOp freeFn;
    if (storage > kMaxStackStorageBytes) {
      auto mallocFn = mlir::LLVM::lookupOrCreateMallocFn(b, module, b.getI64Type());
      auto freeFnOr = mlir::LLVM::lookupOrCreateFreeFn(b, module);
      if (mlir::failed(mallocFn) || mlir::failed(freeFnOr)) {
        return f_.emitOpError() << "cannot declare malloc/free for its storage";
      }
      freeFn = *freeFnOr;
      Value size = b.create<mlir::LLVM::ConstantOp>(loc, b.getI64Type(), storage);
      heap = b.create<mlir::LLVM::CallOp>(loc, *mallocFn, mlir::ValueRange{size}).getResult();
      // Out of memory: stop here rather than write through null.
      Value null = b.create<mlir::LLVM::ZeroOp>(loc, ptrType);
      Value failed = b.create<mlir::LLVM::ICmpOp>(loc, mlir::LLVM::ICmpPredicate::eq, heap, null);
      auto ifOp = b.create<mlir::scf::IfOp>(loc, failed, /*withElseRegion=*/false);
      mlir::OpBuilder::atBlockBegin(ifOp.thenBlock()).create<mlir::LLVM::Trap>(loc);
    }
    uint64_t offset = 0;
    auto slot = [&](mlir::Type t, int64_t n, Value count) -> Value {
      if (!heap) return b.create<mlir::LLVM::AllocaOp>(loc, ptrType, t, count, /*alignment=*/16);
      Value at = heap;
      if (offset > 0) {
        Value off = b.create<mlir::LLVM::ConstantOp>(loc, b.getI64Type(), offset);
        at = b.create<mlir::LLVM::GEPOp>(loc, ptrType, b.getI8Type(), heap, mlir::ValueRange{off});
      }
      offset += bytesOf(t, n);
      return at;
    };
    auto count = [&](int64_t n) -> Value {
      if (n == grid_.numThreads()) return threads64;
      if (n == 1) return one64;
      return b.create<mlir::LLVM::ConstantOp>(loc, b.getI64Type(), n);
    };
    for (Value v : spilled_) {
      int64_t slots = slotsOf(v) * batch_ * componentsOf(v.getType());
      spillSlots_[v] = slot(storageType(v.getType()), slots, count(slots));
    }
    for (auto global : shared) {
      sharedSlots_[global.getSymName()] = slot(global.getType(), batch_, count(batch_));
      sharedTypes_[global.getSymName()] = global.getType();
    }
    SmallVector<Value> blockLocalSlots;
    for (auto [arg, bytes] : blockLocal) {
      blockLocalSlots.push_back(slot(b.getI8Type(), bytes * batch_, count(bytes * batch_)));
    }
    auto blockLoop = b.create<mlir::scf::ForOp>(
        loc, first, last, b.create<mlir::arith::ConstantIndexOp>(loc, batch_));
    blockLoop->setAttr("loop_annotation", noUnroll(ctx));
    b.setInsertionPointToStart(blockLoop.getBody());
    batchFirst_ = blockLoop.getInductionVar();
    batchLast_ = last;
    // Each block-local result's address, moved so that the batch's first
    // block's elements fall on its slot (a GEP without inbounds: the moved
    // address is no object's).
    SmallVector<Value> blockLocalBases;
    for (auto [local, slotPtr] : llvm::zip(blockLocal, blockLocalSlots)) {
      Value first64 = b.create<mlir::arith::IndexCastOp>(loc, b.getI64Type(), batchFirst_);
      Value back = b.create<mlir::LLVM::MulOp>(
          loc, first64, b.create<mlir::LLVM::ConstantOp>(loc, b.getI64Type(), -local.second));
      blockLocalBases.push_back(b.create<mlir::LLVM::GEPOp>(loc, ptrType, b.getI8Type(), slotPtr,
                                                            mlir::ValueRange{back}));
    }
    // A phase matchDirectWrite emitted with the one before it.
    std::optional<size_t> fused;
    for (auto [p, phase, shape] : llvm::enumerate(phases, shapes)) {
      if (phase.empty() || shape.count() == 0 || fused == p) continue;
      curPhase_ = p;
      // A phase of copies into shared memory, evaluated once for the
      // matchers of that direction.
      std::optional<PhaseCopies> intoShared = copiesOf(phase, shape, /*toShared=*/true);
      if (auto direct = intoShared ? matchDirectWrite(p, *intoShared, phases, shapes)
                                   : std::nullopt) {
        if (mlir::failed(emitTransposingWrite(b, phases[direct->second], direct->first))) {
          return mlir::failure();
        }
        fused = direct->second;
        continue;
      }
      if (auto copy = intoShared ? matchPermutingCopy(*intoShared) : std::nullopt) {
        if (mlir::failed(emitPermutingCopy(b, phase, *copy))) return mlir::failure();
        continue;
      }
      std::optional<PhaseCopies> fromShared =
          transposingWrites_ ? copiesOf(phase, shape, /*toShared=*/false) : std::nullopt;
      if (auto write = fromShared ? matchTransposingWrite(*fromShared) : std::nullopt) {
        if (mlir::failed(emitTransposingWrite(b, phase, *write))) return mlir::failure();
        continue;
      }
      if (interchanged_.contains(phase.front())) {
        if (mlir::failed(emitInterchanged(b, llvm::cast<mlir::scf::ForOp>(phase.front()), shape))) {
          return mlir::failure();
        }
        continue;
      }
      if (auto copy = intoShared ? matchTransposingCopy(*intoShared) : std::nullopt) {
        if (mlir::failed(emitTransposingCopy(b, phase, *copy))) return mlir::failure();
        continue;
      }
      mlir::OpBuilder tb(ctx);
      Value tid = emitThreadLoops(b, shape, tb);
      mlir::IRMapping mapping;
      for (mlir::Operation* op : phase) {
        if (mlir::failed(emitOp(tb, op, mapping, tid, bid_))) return mlir::failure();
      }
      simplifyLaneLoop(/*parts=*/true);
    }
    for (auto [local, base] : llvm::zip(blockLocal, blockLocalBases)) {
      Value arg = newBody->getArgument(local.first);
      arg.replaceUsesWithIf(base, [&](mlir::OpOperand& use) {
        return blockLoop->isProperAncestor(use.getOwner());
      });
      // Its element addresses: offsets from the moved address, no longer
      // in bounds of an object where they start.
      SmallVector<Value> work{base};
      while (!work.empty()) {
        Value from = work.pop_back_val();
        for (mlir::Operation* user : from.getUsers()) {
          auto gep = llvm::dyn_cast<mlir::LLVM::GEPOp>(user);
          if (!gep || gep.getBase() != from) continue;
          gep.setNoWrapFlags(mlir::LLVM::GEPNoWrapFlags::none);
          work.push_back(gep.getResult());
        }
      }
    }
    b.setInsertionPointToEnd(newBody);
    if (heap) b.create<mlir::LLVM::CallOp>(loc, freeFn, mlir::ValueRange{heap});
    b.create<mlir::func::ReturnOp>(loc);
    // 5. Swap in the new body and signature.
    body.dropAllDefinedValueUses();
    for (mlir::Operation& op : llvm::make_early_inc_range(llvm::reverse(body))) {
      op.dropAllUses();
      op.erase();
    }
    body.erase();
    f_.setType(mlir::FunctionType::get(ctx, newBody->getArgumentTypes(), {}));
    SmallVector<mlir::scf::ForOp> laneLoops;
    f_.walk([&](mlir::scf::ForOp loop) {
      if (loop->hasAttr(kLaneLoop)) laneLoops.push_back(loop);
    });
    for (mlir::scf::ForOp loop : laneLoops) {
      versionInvariantGuards(loop);
      // A parity of the lane plus a constant: two lanes a step (the
      // RoPE gradient's pads: as unrollAtLanePeriod's steps, 2.2 -> 6.1
      // ms). Else divisions by up to 16 (unrollAtLanePeriod); its loops
      // of fewer than the period's lanes scalar (vectorized with
      // epilogues, a flip along W's kernel compiled in 27 ms, 22 so).
      if (unrollAtLaneParity(loop)) continue;
      mlir::scf::ForOp steps;
      for (mlir::scf::ForOp few : unrollAtLanePeriod(loop, &steps)) {
        few->removeAttr(kLaneLoop);
        few->setAttr("loop_annotation", scalarLoop(few.getContext()));
      }
      if (!steps) continue;
      steps->setAttr(kPeriodSteps, mlir::UnitAttr::get(steps.getContext()));
      // Guards of the steps (a concatenate's operand in the first steps of
      // its block's row: the step's quotient 1 or less) cut them, into
      // copies marked alike.
      splitAtGuards(steps);
    }
    f_.walk([&](mlir::scf::ForOp loop) {
      if (loop->hasAttr(kLaneLoop)) splitStridedAddresses(loop);
    });
    overlapTails(f_);
    f_.walk([&](mlir::scf::ForOp loop) { sinkStores(f_, loop.getBody()); });
    f_.walk([&](mlir::scf::ForOp loop) {
      if (!loop->removeAttr(kLaneLoop)) return;
      // A lane loop without long-latency arithmetic in a kernel with some
      // (a concatenate's copied operand beside its exp): LLVM's count. And
      // one of fewer trips than a warp: asked for 2 chains, LLVM fit both
      // in its trips, 8 lanes a row of 16 as 2 vectors of 4 (xmm); at its
      // own count, one of 8 (ymm): softmax(x).max(-1) over f32[65536,16]
      // through xla_gpu.jax.jit 3.5 -> 1.1 ms (jax.jit 0.7-1.3).
      auto lb = mlir::getConstantIntValue(loop.getLowerBound());
      auto ub = mlir::getConstantIntValue(loop.getUpperBound());
      bool shorterThanAWarp = lb && ub && *ub - *lb < kMinPeriod;
      int64_t interleave =
          laneInterleave_ && hasLongLatencyArithmetic(loop) && !shorterThanAWarp ? laneInterleave_ : 0;
      bool periodSteps = loop->removeAttr(kPeriodSteps) != nullptr;
      if (isStridedCopy(loop)) {
        loop->setAttr("loop_annotation", scalarLoop(ctx));
      } else if (periodSteps) {
        int64_t bytes = narrowPermutationBytes(loop);
        int64_t width = bytes ? kPeriodStepsWidth * 4 / bytes : kPeriodStepsWidth;
        loop->setAttr("loop_annotation", vectorWidth(ctx, width, interleave));
      } else if (grid_.numThreads() <= kMaxFoldedTailLanes && foldsTail(loop)) {
        loop->setAttr("loop_annotation", noUnroll(ctx, interleave, /*foldTail=*/true));
      } else if (interleave != laneInterleave_) {
        loop->setAttr("loop_annotation", noUnroll(ctx, interleave));
      }
    });
    return mlir::success();
  }

 private:
  // The most threads a block may have for foldsTail's masked vector loop:
  // each iteration of it pays the mask, so it pays off on short pieces (a
  // concatenate's operand in a block of 128) and not on long ones. The
  // loop emitter's blocks of 128 threads of 4 elements (512 lanes here)
  // cut at its rows of 998 (x[:, :-2] +
  // 2 * x[:, 1:-1] + x[:, 2:] over f32[4096,1000]) ran 0.75-0.86 ms a
  // call masked, 0.34-0.38 ms with LLVM's epilogue (XLA:CPU 0.37-0.58);
  // no kernel of `make bench` has more than 128 threads and a cut lane
  // loop (their objects the same either way).
  static constexpr int64_t kMaxFoldedTailLanes = 128;

  // `llvm.loop.unroll.disable` for the loops over the blocks (or batches of
  // them), a batch's blocks, warps and lanes, and for the steps of an
  // interchanged accumulation (emitInterchanged).
  // LLVM would otherwise unroll a short lane loop (32 lanes of a small
  // body) completely before its loop vectorizer runs, and then analyse the
  // loop around it with 32 copies of every access: on the softmax step (a
  // 32-element max inlined per element) LoopVectorize and
  // LoopLoadElimination spent 150 of 200 ms there, and vectorized nothing.
  // Left whole, the lane loop is what LLVM vectorizes across the threads
  // (O3 of that kernel: 200 -> 33 ms). Unrolled, a loop over 32 warps gave
  // LLVM 32 lane loops to vectorize one by one: O3 of the column sum
  // 100 -> 37 ms, the row sum 68 -> 34, softmax's exp + sum 128 -> 45;
  // unrolled, the 12 steps of the row max f32[8192,12] were 12 lane loops
  // (O3 71 -> 47 ms); LLVM unrolled a batch's loop over blocks 4 or 8
  // times after vectorizing it (the softmax step's object 4.2 -> 2.8 KB,
  // code generation 22 -> 11 ms), and the loop over blocks 4 times, each
  // copy unswitched on a kernel's exclusive-launch test (LLVM's time on the
  // scatter-add 49 -> 33 ms, the KV-cache update 36 -> 12, the packed s4
  // add 41 -> 20). Run times the same (the benchmarks, A/B in one process).
  // With `interleave`, also `llvm.loop.interleave.count` (see
  // laneInterleave_); with `foldTail`, `llvm.loop.vectorize.predicate.enable`
  // (a lane loop's, see foldsTail).
  static mlir::LLVM::LoopAnnotationAttr noUnroll(mlir::MLIRContext* ctx, int64_t interleave = 0,
                                                 bool foldTail = false) {
    mlir::LLVM::LoopVectorizeAttr masked;
    if (foldTail) {
      masked = mlir::LLVM::LoopVectorizeAttr::get(
          ctx, {}, /*predicateEnable=*/mlir::BoolAttr::get(ctx, true), {}, {}, {}, {}, {});
    }
    return notUnrolled(ctx, masked, interleave);
  }

  // A loop over periods that runs one lane of each (lane 0 computing a
  // shuffle tree whole, see run()): not unrolled, and vectorized 4 periods
  // at a time, or not at all. Vectorized across the periods, a tree's
  // loads are a stride-k interleave group: LLVM's default width cost the
  // multi-row max f32[8192,16] (8 lanes a row of 16, a period of 8: 1024
  // rows a launch, the kernel's whole work) 56-67 ms to compile against
  // 28 ms scalar, which ran 0.080 ms against 0.029 (XLA:CPU 0.05-0.11);
  // 4 at a time: 30 ms and 0.035 ms. A tree a warp (a period of 32: a
  // row or column reduction's few warps) gains nothing at run time and
  // compiled slower: 4 at a time, row sum 34 -> 40 ms, softmax's exp + sum
  // 48 -> 67 ms (A/B in one process, bits the same).
  static mlir::LLVM::LoopAnnotationAttr oneLanePerPeriod(mlir::MLIRContext* ctx, bool vectorize) {
    if (!vectorize) return scalarLoop(ctx);
    return notUnrolled(ctx, mlir::LLVM::LoopVectorizeAttr::get(
                                ctx, {}, {}, {},
                                mlir::IntegerAttr::get(mlir::IntegerType::get(ctx, 32), 4), {},
                                {}, {}));
  }

  // A lane loop's load of element m * lane + b (m from 2 to kMaxSplitStride,
  // b invariant: a strided slice's column, a pad of one) addressed as the
  // piece's first element, before the loop, plus m * (lane - lower bound),
  // an offset that neither wraps nor is negative (`nusw nuw`: the address
  // of any lane, loaded or not, is the buffer's plus less than 2^40; the
  // first address is not claimed in bounds, a guarded first lane may load
  // nothing): LLVM's loop vectorizer then loads the lanes as whole vectors
  // and a shuffle (an interleave group). Addressed as one index whose
  // terms subtract, InstCombine's reassociation dropped the GEP's inbounds,
  // the vectorizer found that the address "may wrap" and loaded each lane
  // on its own (a pad of a reversed strided slice, f32[515,257]: a kernel
  // call 21.6 -> 12-18 us).
  static constexpr int64_t kMaxSplitStride = 8;

  void splitStridedAddresses(mlir::scf::ForOp loop) {
    auto step = mlir::getConstantIntValue(loop.getStep());
    if (!step || *step != 1) return;
    Value iv = loop.getInductionVar();
    auto inside = [&](Value v) { return loop.getRegion().isAncestor(v.getParentRegion()); };
    // Whether index `v` subtracts a term (a negative constant, a
    // subtraction), inside the loop or before it: only there did LLVM drop
    // the GEP's inbounds (a row reduction's m * lane + k, all added, kept
    // it, and its lanes loaded as vectors already; split, its row max ran
    // up to 1.2x slower). Before it: the pad of a reversed strided slice's
    // row, -512 times the block's, was split only where the kernel was
    // compiled in parts (its row's loop a function of its own, the row an
    // argument); compiled whole (the cores busy with other kernels) each
    // vector's lanes were loaded one by one (19 -> 10 us a kernel call).
    std::function<bool(Value, int)> subtracts = [&](Value v, int depth) -> bool {
      if (auto k = mlir::getConstantIntValue(v)) return *k < 0;
      if (depth == 0) return false;
      mlir::Operation* def = v.getDefiningOp();
      if (!def || !llvm::isa<mlir::arith::AddIOp, mlir::arith::SubIOp, mlir::arith::MulIOp>(def)) {
        return false;
      }
      if (llvm::isa<mlir::arith::SubIOp>(def)) return true;
      return llvm::any_of(def->getOperands(), [&](Value x) { return subtracts(x, depth - 1); });
    };
    // How each index moves with the lane (strideIn).
    llvm::DenseMap<Value, std::optional<int64_t>> strides;
    // The first addresses made: loads of one stride whose indices differ
    // by a constant share one, at that distance (a reverse of 3 channels
    // unrolled 3 lanes a step: LLVM loads the 3 as one interleave group,
    // where it found 3 pointers it could not relate and left the loop
    // scalar).
    struct First {
      LinearForm index;
      int64_t m;
      Value base;
      mlir::Type element;
      Value ptr;
    };
    SmallVector<First> firsts;
    SmallVector<mlir::LLVM::LoadOp> loads;
    loop.getBody()->walk([&](mlir::LLVM::LoadOp load) { loads.push_back(load); });
    for (mlir::LLVM::LoadOp load : loads) {
      auto gep = load.getAddr().getDefiningOp<mlir::LLVM::GEPOp>();
      if (!gep || gep.getNoWrapFlags() != mlir::LLVM::GEPNoWrapFlags::inbounds ||
          inside(gep.getBase()) || gep.getDynamicIndices().size() != 1 ||
          gep.getRawConstantIndices().size() != 1) {
        continue;
      }
      auto cast = gep.getDynamicIndices()[0].getDefiningOp<mlir::arith::IndexCastUIOp>();
      if (!cast) continue;
      Value index = cast.getIn();
      auto m = strideIn(loop, index, strides);
      if (!m || std::abs(*m) < 2 || std::abs(*m) > kMaxSplitStride || !subtracts(index, 8)) {
        continue;
      }
      // The index at the loop's lower bound, computed before the loop: its
      // ops cloned, the lane replaced by the bound; none where it reads a
      // value made inside the loop by no op (a loop's induction variable
      // within the lane's) or by one that may not run there (a load; the
      // clones left are canonicalize's).
      mlir::OpBuilder before(loop);
      mlir::IRMapping at;
      at.map(iv, loop.getLowerBound());
      std::function<Value(Value)> start = [&](Value v) -> Value {
        if (at.contains(v) || !inside(v)) return at.lookupOrDefault(v);
        mlir::Operation* def = v.getDefiningOp();
        if (!def || def->getNumRegions() > 0 || !mlir::isMemoryEffectFree(def) ||
            !mlir::isSpeculatable(def)) {
          return {};
        }
        for (Value operand : def->getOperands()) {
          if (!start(operand)) return {};
        }
        return before.clone(*def, at)->getResult(0);
      };
      mlir::Location loc = gep.getLoc();
      auto i64 = before.getI64Type();
      LinearForm form;
      addLinearForm(index, 1, form);
      const First* shared = llvm::find_if(firsts, [&](const First& other) {
        return other.m == *m && other.base == gep.getBase() &&
               other.element == gep.getElemType() && other.index.sameTerms(form);
      });
      Value firstPtr;
      if (shared != firsts.end()) {
        // Made in the loop (LLVM hoists it): an address made before it
        // became an argument of its own where the kernel's phases are
        // split into functions, unrelated to the others.
        mlir::OpBuilder at(gep);
        firstPtr = at.create<mlir::LLVM::GEPOp>(
            loc, gep.getType(), gep.getElemType(), shared->ptr,
            llvm::ArrayRef<mlir::LLVM::GEPArg>{form.constant - shared->index.constant},
            mlir::LLVM::GEPNoWrapFlags::none);
      } else {
        Value first = start(index);
        if (!first) continue;
        firstPtr = before.create<mlir::LLVM::GEPOp>(
            loc, gep.getType(), gep.getElemType(), gep.getBase(),
            mlir::ValueRange{before.create<mlir::arith::IndexCastOp>(loc, i64, first)},
            mlir::LLVM::GEPNoWrapFlags::none);
        firsts.push_back({form, *m, gep.getBase(), gep.getElemType(), firstPtr});
      }
      mlir::OpBuilder b(gep);
      auto noWrap = mlir::arith::IntegerOverflowFlags::nsw | mlir::arith::IntegerOverflowFlags::nuw;
      Value lane = b.create<mlir::arith::SubIOp>(loc, iv, loop.getLowerBound(), noWrap);
      // Backwards (a flip along W of an NHWC image's pixels, 3 channels
      // each: -3 a lane step) the offset is negative, and does not wrap as
      // a signed value only (`nusw`).
      const bool forward = *m > 0;
      Value offset = b.create<mlir::arith::MulIOp>(
          loc, lane, b.create<mlir::arith::ConstantIndexOp>(loc, *m),
          forward ? noWrap : mlir::arith::IntegerOverflowFlags::nsw);
      Value offset64 = forward ? b.create<mlir::arith::IndexCastUIOp>(loc, i64, offset).getResult()
                               : b.create<mlir::arith::IndexCastOp>(loc, i64, offset).getResult();
      Value address = b.create<mlir::LLVM::GEPOp>(
          loc, gep.getType(), gep.getElemType(), firstPtr, mlir::ValueRange{offset64},
          forward ? mlir::LLVM::GEPNoWrapFlags::nusw | mlir::LLVM::GEPNoWrapFlags::nuw
                  : mlir::LLVM::GEPNoWrapFlags::nusw);
      load.getAddrMutable().assign(address);
      if (gep->use_empty()) gep->erase();
    }
  }

  // A lane loop whose body is steps each behind a guard the same for every
  // lane (a tile's row bound in a transpose's write phase) runs twice over
  // in two versions: where every guard holds (all but the edge tiles) a
  // copy without them, else the loop as it was, left scalar. LLVM had
  // predicated each step inside the vectorized loop (the seed transpose's
  // 8 row guards) or vectorized none of it (the f16 021 transpose's two:
  // its write phase ran scalar, 40 % of the kernel's time). A/B in one
  // process, one thread, bits the same: the seed transpose 0.81-0.85x, its
  // compile 124 -> 118 ms; the f16 021 transpose 0.88-0.90x, 157 -> 137
  // ms (best of 5); no other bench kernel changed. Only where every step
  // with an effect is behind such a guard: a step outside them would run
  // scalar in the edge tiles' version.
  void versionInvariantGuards(mlir::scf::ForOp loop) {
    auto asGuard = [](mlir::Operation& op) -> mlir::scf::IfOp {
      auto guard = llvm::dyn_cast<mlir::scf::IfOp>(op);
      return guard && guard.getNumResults() == 0 && guard.getElseRegion().empty() ? guard
                                                                                  : nullptr;
    };
    // A guard's condition may be computed in the loop (`and %row_ok,
    // %true`): pure arithmetic of values from outside, which goes before
    // the loop once the loop is versioned (`move`).
    std::function<bool(Value, int, bool)> invariant = [&](Value v, int depth, bool move) {
      if (loop.isDefinedOutsideOfLoop(v)) return true;
      mlir::Operation* def = v.getDefiningOp();
      if (!def || depth == 0 || def->getBlock() != loop.getBody() ||
          def->getNumRegions() > 0 || !mlir::isPure(def) ||
          !llvm::all_of(def->getOperands(),
                        [&](Value x) { return invariant(x, depth - 1, move); })) {
        return false;
      }
      if (move) def->moveBefore(loop);
      return true;
    };
    constexpr int kDepth = 4;
    SmallVector<Value> conditions;
    for (mlir::Operation& op : loop.getBody()->without_terminator()) {
      if (auto guard = asGuard(op)) {
        if (!invariant(guard.getCondition(), kDepth, /*move=*/false)) return;
        conditions.push_back(guard.getCondition());
      } else if (op.getNumRegions() > 0 || !mlir::isMemoryEffectFree(&op)) {
        return;
      }
    }
    if (conditions.empty()) return;
    for (Value c : conditions) invariant(c, kDepth, /*move=*/true);
    mlir::Location loc = loop.getLoc();
    mlir::OpBuilder b(loop);
    Value all = conditions.front();
    for (Value c : llvm::drop_begin(conditions)) {
      all = b.create<mlir::arith::AndIOp>(loc, all, c);
    }
    auto version = b.create<mlir::scf::IfOp>(loc, all, /*withElseRegion=*/true);
    mlir::OpBuilder fb = version.getThenBodyBuilder();
    auto fast = llvm::cast<mlir::scf::ForOp>(fb.clone(*loop.getOperation()));
    for (mlir::Operation& op : llvm::make_early_inc_range(fast.getBody()->without_terminator())) {
      auto guard = asGuard(op);
      if (!guard) continue;
      for (mlir::Operation& inner :
           llvm::make_early_inc_range(guard.thenBlock()->without_terminator())) {
        inner.moveBefore(guard);
      }
      guard.erase();
    }
    loop->moveBefore(version.elseBlock()->getTerminator());
    loop->removeAttr(kLaneLoop);
    loop->setAttr("loop_annotation", scalarLoop(loop.getContext()));
  }

  // A loop LLVM is to leave scalar and rolled (a strided copy's lane loop,
  // isStridedCopy; a period loop not to vectorize, oneLanePerPeriod).
  static mlir::LLVM::LoopAnnotationAttr scalarLoop(mlir::MLIRContext* ctx) {
    return notUnrolled(ctx, mlir::LLVM::LoopVectorizeAttr::get(
                                ctx, /*disable=*/mlir::BoolAttr::get(ctx, true), {}, {}, {}, {},
                                {}, {}));
  }

  // `llvm.loop.unroll.disable` with the vectorizer's hint `vectorize` (null:
  // none) and, above 1, `llvm.loop.interleave.count` (the builders above).
  static mlir::LLVM::LoopAnnotationAttr notUnrolled(mlir::MLIRContext* ctx,
                                                    mlir::LLVM::LoopVectorizeAttr vectorize,
                                                    int64_t interleave = 0) {
    auto unroll = mlir::LLVM::LoopUnrollAttr::get(ctx, /*disable=*/mlir::BoolAttr::get(ctx, true),
                                                  {}, {}, {}, {}, {}, {});
    mlir::LLVM::LoopInterleaveAttr chains;
    if (interleave > 1) {
      chains = mlir::LLVM::LoopInterleaveAttr::get(
          ctx, mlir::IntegerAttr::get(mlir::IntegerType::get(ctx, 32), interleave));
    }
    return mlir::LLVM::LoopAnnotationAttr::get(ctx, {}, vectorize, chains, unroll, {}, {}, {}, {},
                                               {}, {}, {}, {}, {}, {}, {});
  }

  // A loop LLVM is to vectorize `width` iterations a vector (`interleave`
  // vectors at once, or LLVM's count), not to unroll.
  static mlir::LLVM::LoopAnnotationAttr vectorWidth(mlir::MLIRContext* ctx, int64_t width,
                                                    int64_t interleave = 0) {
    auto vectorize = mlir::LLVM::LoopVectorizeAttr::get(
        ctx, {}, {}, {}, mlir::IntegerAttr::get(mlir::IntegerType::get(ctx, 32), width), {}, {},
        {});
    return notUnrolled(ctx, vectorize, interleave);
  }

  // A short loop LLVM is to unroll completely (emitInterchanged's visits).
  static mlir::LLVM::LoopAnnotationAttr fullUnroll(mlir::MLIRContext* ctx) {
    auto unroll = mlir::LLVM::LoopUnrollAttr::get(
        ctx, {}, {}, {}, /*full=*/mlir::BoolAttr::get(ctx, true), {}, {}, {});
    return mlir::LLVM::LoopAnnotationAttr::get(ctx, {}, {}, {}, unroll, {}, {}, {}, {}, {}, {},
                                               {}, {}, {}, {}, {});
  }

  // The loop, or the loop over warps around the loop over their lanes, that
  // runs the threads of `shape` (of each block of the batch); `inner` is
  // set inside, at the thread id (base + lane, which lanes_ keeps for
  // splitDivision).
  Value emitThreadLoops(mlir::OpBuilder& b, const ThreadShape& shape, mlir::OpBuilder& inner,
                        bool warpsOutside = false) {
    mlir::Location loc = b.getUnknownLoc();
    mlir::OpBuilder* at = &b;
    // The blocks of the batch (see run()), each block's threads inside --
    // or, `warpsOutside`, each warp's lanes of every block of the batch.
    mlir::OpBuilder blockBuilder(b.getContext()), warpBuilder(b.getContext());
    Value base = indexConstant(shape.w0 * shape.period);
    // A few lanes of many warps (a narrow shuffle tree's levels: the
    // multi-row max's rows of 8 lanes keep 4, then 2): the lane loop is
    // unrolled, straight code in the loop over the warps, which stays
    // scalar (LLVM's SLP vectorizer takes the lanes' neighbouring accesses
    // together). A loop of 4 or 2 lanes a warp ran each level as a short
    // loop: f32[8192,16] 0.208 -> 0.088 ms (A/B in one process, bits the
    // same), its compile 44 -> 47 ms; no other bench kernel changes. The
    // warps vectorized 4 at a time instead ran as fast and compiled in 68 ms
    // (their strided interleave groups).
    int64_t numLanes = shape.l1 - shape.l0;
    bool unrolledLanes = numLanes > 1 && numLanes <= kMaxUnrolledLanes && shape.w1 - shape.w0 > 1;
    auto emitWarps = [&] {
      if (shape.w1 - shape.w0 == 1) return;
      auto warps = at->create<mlir::scf::ForOp>(loc, base, indexConstant(shape.w1 * shape.period),
                                                indexConstant(shape.period));
      warps->setAttr("loop_annotation",
                     numLanes == 1 ? oneLanePerPeriod(b.getContext(),
                                                      /*vectorize=*/shape.period < kMinPeriod)
                     : unrolledLanes ? scalarLoop(b.getContext())
                                     : noUnroll(b.getContext()));
      warpBuilder.setInsertionPoint(warps.getBody()->getTerminator());
      at = &warpBuilder;
      base = warps.getInductionVar();
    };
    if (warpsOutside) emitWarps();
    bid_ = batchFirst_;
    blockInBatch_ = {};
    if (batch_ > 1) {
      Value end = at->create<mlir::arith::MinSIOp>(
          loc, at->create<mlir::arith::AddIOp>(loc, batchFirst_, indexConstant(batch_)),
          batchLast_);
      auto blocks = at->create<mlir::scf::ForOp>(loc, batchFirst_, end, indexConstant(1));
      blocks->setAttr("loop_annotation", noUnroll(b.getContext()));
      blockBuilder.setInsertionPoint(blocks.getBody()->getTerminator());
      at = &blockBuilder;
      bid_ = blocks.getInductionVar();
      blockInBatch_ = blockBuilder.create<mlir::arith::SubIOp>(loc, bid_, batchFirst_);
    }
    if (!warpsOutside) emitWarps();
    auto lanes = at->create<mlir::scf::ForOp>(loc, indexConstant(shape.l0), indexConstant(shape.l1),
                                              indexConstant(1));
    if (unrolledLanes) {
      lanes->setAttr("loop_annotation", fullUnroll(b.getContext()));
    } else {
      lanes->setAttr("loop_annotation", noUnroll(b.getContext(), laneInterleave_));
      lanes->setAttr(kLaneLoop, b.getUnitAttr());
    }
    inner.setInsertionPoint(lanes.getBody()->getTerminator());
    // One lane a warp (lane 0 keeps a shuffle tree's result): a constant,
    // which the lane's arithmetic folds with.
    Value lane = lanes.getInductionVar();
    if (shape.l1 - shape.l0 == 1) lane = indexConstant(shape.l0);
    Value tid = lane;
    if (shape.w1 - shape.w0 > 1 || shape.w0 > 0) {
      tid = inner.create<mlir::arith::AddIOp>(loc, base, lane);
    }
    lanes_ = {tid, base, lane, shape.period, lanes, shape};
    laneValues_.clear();
    return tid;
  }

  // The thread id of the loop being emitted divided by (or modulo) `d`,
  // split into its base (invariant in the loop over the lanes) and its
  // lane, so that LLVM sees addresses affine in the lane; std::nullopt
  // when the period and d do not divide one another.
  // With `lane` (a lane plus a constant: a shuffle's source lane), the
  // same of base + lane, when d divides the period.
  std::optional<Value> splitDivision(mlir::OpBuilder& b, int64_t d, bool div, Value lane = {}) {
    int64_t p = lanes_.period;
    if (d <= 0 || p <= 0 || (p % d != 0 && d % p != 0)) return std::nullopt;
    if (lane && p % d != 0) return std::nullopt;
    if (!lane) lane = lanes_.lane;
    mlir::Location loc = lanes_.tid.getLoc();
    auto op = [&](bool quotient, Value v) -> Value {
      Value divisor = indexConstant(d);
      if (quotient) return b.createOrFold<mlir::arith::DivUIOp>(loc, v, divisor);
      return b.createOrFold<mlir::arith::RemUIOp>(loc, v, divisor);
    };
    if (p % d == 0) {
      // base is a multiple of d: the remainder is the lane's.
      if (!div) return d == p && lane == lanes_.lane ? lane : op(false, lane);
      if (d == p && lane == lanes_.lane) return op(true, lanes_.base);
      return b.create<mlir::arith::AddIOp>(loc, op(true, lanes_.base), op(true, lane))
          .getResult();
    }
    // base % d + lane < d: the lane adds to the remainder alone.
    if (div) return op(true, lanes_.base);
    return b.create<mlir::arith::AddIOp>(loc, op(false, lanes_.base), lanes_.lane).getResult();
  }

  // The period the threads of `phase` run in when it runs them all: the x
  // extent of a grid with y or z threads, else what every constant from a
  // warp up that the phase divides the thread id by is a multiple of (a
  // warp, a row of a tile) if that is a warp or more, else the largest
  // constant: splitDivision then makes each such quotient and remainder
  // affine in the lane. (With the largest, a packed transpose's tid / 64
  // left tid / 32 and tid mod 32 as divisions in a loop of 64 lanes.) 0
  // for none, and where the largest is kMaxLanePeriod or less: one loop
  // over the lanes then runs them a period a step (unrollAtLanePeriod),
  // where warps of so few lanes would be unrolled (kMaxUnrolledLanes) in
  // a loop over the warps LLVM leaves scalar, or be lane loops of a few
  // steps (a concatenate's block a row of 224 pixels of 3 channels, tid
  // / 3 and tid mod 3: 0.25 -> 0.12 ms a kernel call, its guards cut in
  // the steps; a nearest upsampling's block a row of 224 pixels of 3
  // channels, read at tid / 6, each warp of 6 lanes two steps of 3: A/B
  // in one process, f32[16,112,112,3] 0.107 -> 0.067 ms a kernel call,
  // u8 0.174 -> 0.020, u8[8,100,100,4] (tid / 8) 0.023 -> 0.012).
  int64_t periodOf(llvm::ArrayRef<mlir::Operation*> phase) {
    int64_t n = grid_.numThreads();
    if (grid_.threads[1] * grid_.threads[2] > 1) return grid_.threads[0];
    int64_t wide = 0, largest = 0;
    llvm::DenseSet<mlir::Operation*> seen;
    std::function<void(mlir::Operation*)> visit = [&](mlir::Operation* op) {
      if (!seen.insert(op).second) return;
      if (llvm::isa<mlir::arith::DivUIOp, mlir::arith::RemUIOp>(op)) {
        auto id = op->getOperand(0).getDefiningOp<mlir::gpu::ThreadIdOp>();
        auto d = mlir::getConstantIntValue(op->getOperand(1));
        if (id && id.getDimension() == mlir::gpu::Dimension::x && d && *d > 1 && *d < n &&
            n % *d == 0) {
          if (*d >= kMinPeriod) wide = std::gcd(wide, *d);
          largest = std::max(largest, *d);
        }
      }
      // Through the ops a phase recomputes (index maps of the ids); a
      // value computed once a group is read at tid / group (reload).
      for (Value v : op->getOperands()) {
        mlir::Operation* def = v.getDefiningOp();
        if (!def) continue;
        if (recomputed_.contains(def)) visit(def);
        if (int64_t g = uniformGroups_.lookup(def); g > 1 && g < n && n % g == 0) {
          if (g >= kMinPeriod) wide = std::gcd(wide, g);
          largest = std::max(largest, g);
        }
      }
    };
    for (mlir::Operation* op : phase) op->walk([&](mlir::Operation* inner) { visit(inner); });
    if (wide >= kMinPeriod) return wide;
    return largest > kMaxLanePeriod ? largest : 0;
  }

  // `shape`, an interval of whole periods, as warps of `period` lanes.
  static ThreadShape inPeriods(ThreadShape shape, int64_t period) {
    if (period <= 0 || shape.w1 - shape.w0 != 1 || shape.period <= period) return shape;
    int64_t lo = shape.w0 * shape.period + shape.l0, hi = shape.w0 * shape.period + shape.l1;
    if (lo % period != 0 || hi % period != 0 || hi - lo <= period) return shape;
    return {period, lo / period, hi / period, 0, period};
  }

  llvm::BitVector bitsOf(const ThreadShape& shape) const {
    llvm::BitVector bits(grid_.numThreads());
    for (int64_t w = shape.w0; w < shape.w1; ++w) {
      bits.set(w * shape.period + shape.l0, w * shape.period + shape.l1);
    }
    return bits;
  }

  // The lanes the threads `ran` of a shuffle read (as shuffleAt does).
  llvm::BitVector shuffleSources(mlir::gpu::ShuffleOp shuffle, const llvm::BitVector& ran) const {
    int64_t n = grid_.numThreads();
    // Constants in range: checkShuffle refused the others.
    int64_t offset = *mlir::getConstantIntValue(shuffle.getOffset());
    int64_t width = *mlir::getConstantIntValue(shuffle.getWidth());
    llvm::BitVector sources(n);
    for (int t : ran.set_bits()) {
      bool valid = t % width + offset < width && t + offset < n;
      sources.set(valid ? t + offset : t);
    }
    return sources;
  }

  // The threads for which the top-level `op`, which writes memory, may do
  // so: those whose ids let an scf.if reach its writing branch, when the
  // condition is a function of the thread ids and constants; else all.
  llvm::BitVector threadsThatMayWrite(mlir::Operation* op, mlir::ModuleOp module) {
    int64_t n = grid_.numThreads();
    auto ifOp = llvm::dyn_cast<mlir::scf::IfOp>(op);
    if (!ifOp) return llvm::BitVector(n, true);
    auto regionWrites = [&](mlir::Region& region) {
      return llvm::any_of(region.getOps(), [&](mlir::Operation& inner) {
        return writesMemory(&inner, module, callees_);
      });
    };
    bool thenWrites = regionWrites(ifOp.getThenRegion());
    bool elseWrites = regionWrites(ifOp.getElseRegion());
    // The threads at which `cond` holds; std::nullopt where the thread ids
    // and constants do not decide it.
    auto holdsAt = [&](Value cond) -> std::optional<llvm::BitVector> {
      std::optional<Tape> tape = Tape::build(*this, {cond}, {}, Value(), nullptr);
      if (!tape) return std::nullopt;
      llvm::BitVector holds(n);
      for (int64_t t = 0; t < n; ++t) {
        if (!tape->start(grid_.threads, t, {})) return std::nullopt;
        if (tape->root(0).isOne()) holds.set(t);
      }
      return holds;
    };
    if (std::optional<llvm::BitVector> holds = holdsAt(ifOp.getCondition())) {
      llvm::BitVector threads(n);
      for (int64_t t = 0; t < n; ++t) {
        if ((*holds)[t] ? thenWrites : elseWrites) threads.set(t);
      }
      return threads;
    }
    // Only the then-branch writes, under a conjunction of which some terms
    // the thread ids decide and some they do not (the block ids: a row
    // reduction's store at lane 0 of each warp whose row is in bounds,
    // where the rows are no multiple of a block's): a thread one of the
    // former turns away never writes. Without this the tree of each warp
    // over rows of 48 ran at all 32 lanes, selecting at each level whether
    // the source lane was past the block (LLVM vectorized none of it):
    // f32[21845,48]'s row sum took 2.4x the time of f32[21848,48]'s.
    llvm::BitVector threads(n, true);
    if (!thenWrites || elseWrites) return threads;
    SmallVector<Value> work = {ifOp.getCondition()};
    while (!work.empty()) {
      Value v = work.pop_back_val();
      if (auto both = v.getDefiningOp<mlir::arith::AndIOp>()) {
        work.append({both.getLhs(), both.getRhs()});
      } else if (std::optional<llvm::BitVector> holds = holdsAt(v)) {
        threads &= *holds;
      }
    }
    return threads;
  }

  // Whether `addr` points into shared memory: a GEP of the shared global,
  // address-cast to the generic space.
  static bool isSharedAddress(Value addr) {
    addr = baseOf(addr);
    auto cast = addr.getDefiningOp<mlir::LLVM::AddrSpaceCastOp>();
    if (cast) addr = cast.getArg();
    return llvm::cast<mlir::LLVM::LLVMPointerType>(addr.getType()).getAddressSpace() == 3;
  }

  // The kernel's block ids and their values at block `bid`, appended to
  // a Tape's seeds.
  void addBlockIdsAt(int64_t bid, SmallVector<Value>& seeds, SmallVector<llvm::APInt>& values) {
    f_.walk([&](mlir::gpu::BlockIdOp id) {
      seeds.push_back(id.getResult());
      values.push_back(llvm::APInt(
          mlir::IndexType::kInternalStorageBitWidth,
          idAt(grid_.blockAt(bid), grid_.blocks, static_cast<int>(id.getDimension()))));
    });
  }

  // The element offsets of the loads and stores of global memory in the
  // interchanged `loop` (see isInterchangeable) at thread `t` of block
  // `bid`, step `iv`, in order; std::nullopt where the ids and the step do
  // not decide one. (A block's shared memory is its own: where it reads and
  // writes there says nothing of where its neighbour does.)
  std::optional<SmallVector<llvm::APInt>> globalOffsetsAt(
      mlir::scf::ForOp loop, int64_t bid, int64_t t, int64_t iv,
      SmallVector<int64_t>* elementBytes = nullptr) {
    SmallVector<Value> roots;
    bool decided = true;
    loop.getBody()->walk([&](mlir::Operation* op) {
      Value addr;
      if (auto load = llvm::dyn_cast<mlir::LLVM::LoadOp>(op)) addr = load.getAddr();
      if (auto store = llvm::dyn_cast<mlir::LLVM::StoreOp>(op)) addr = store.getAddr();
      if (!addr || isSharedAddress(addr)) return mlir::WalkResult::advance();
      auto gep = addr.getDefiningOp<mlir::LLVM::GEPOp>();
      if (!gep || gep.getDynamicIndices().size() != 1 ||
          (elementBytes && !gep.getElemType().isIntOrFloat())) {
        decided = false;
        return mlir::WalkResult::interrupt();
      }
      roots.push_back(gep.getDynamicIndices()[0]);
      if (elementBytes) {
        elementBytes->push_back(std::max(1u, gep.getElemType().getIntOrFloatBitWidth() / 8));
      }
      return mlir::WalkResult::advance();
    });
    if (!decided) return std::nullopt;
    SmallVector<Value> seeds = {loop.getInductionVar()};
    SmallVector<llvm::APInt> values = {llvm::APInt(mlir::IndexType::kInternalStorageBitWidth, iv)};
    addBlockIdsAt(bid, seeds, values);
    std::optional<Tape> tape = Tape::build(*this, roots, seeds, Value(), loop);
    if (!tape || !tape->start(grid_.threads, t, values)) return std::nullopt;
    SmallVector<llvm::APInt> offsets;
    for (size_t i = 0; i < roots.size(); ++i) offsets.push_back(tape->root(i).sextOrTrunc(64));
    return offsets;
  }

  // Whether every access of global memory in the interchanged `loop` at
  // thread 0 of block 0 is at least kFarBlockBytes from its neighbouring
  // block's: a batch of such blocks (see run()) walks up to kMaxBatch
  // streams that far apart side by side, a step of each block at a time.
  // Sums over the middle dimension as loops (a block a slab of the rows it
  // sums), A/B in one process at 64 MiB without batches: f32[1024,256,64]
  // 1.88 -> 1.43 ms, [1024,128,128] 1.67 -> 1.08, [4096,256,16] 1.99 ->
  // 0.87 (XLA:CPU 1.23, 1.11, 1.08); within the cache, f32[64,256,64]
  // 0.038 -> 0.035; the cumsum's reduce-windows the same.
  bool blocksFarApart(mlir::scf::ForOp loop) {
    int64_t lb = *mlir::getConstantIntValue(loop.getLowerBound());
    if (grid_.numBlocks() < 2) return false;
    SmallVector<int64_t> bytes;
    auto here = globalOffsetsAt(loop, 0, 0, lb, &bytes), neighbour = globalOffsetsAt(loop, 1, 0, lb);
    if (!here || !neighbour || here->empty()) return false;
    for (auto [h, n, size] : llvm::zip(*here, *neighbour, bytes)) {
      llvm::APInt apart = (n - h).abs();
      if (apart.ult(kFarBlockBytes / size)) return false;
    }
    return true;
  }

  // How many blocks from block 0 on (up to kMaxBatch) read in the
  // interchanged `loop` nearer block 0's accesses than its next step does
  // (thread 0, the first step): the blocks along one stream, a column
  // reduction's strips of the same rows. A batch past them walks the next
  // rows' streams beside the first, a step of each at a time: a sum over
  // the middle dimension of f32[256,256,256] as a loop (two blocks a row
  // of 256 columns, the next two 256 KiB on) ran 1.40-1.51 ms in batches
  // of 16 (8 streams), 1.00 in batches of 4 (2 streams), 1.16-1.27 in
  // batches of 2 (XLA:CPU 1.14-1.18; A/B in one process, 64 MiB); the
  // split column sum f32[16384,1024]'s first part 0.95-1.05 in batches of
  // 16 (2 streams of 8 blocks), 1.08-1.20 in batches of 8.
  int64_t blocksAlongStream(mlir::scf::ForOp loop) {
    int64_t lb = *mlir::getConstantIntValue(loop.getLowerBound());
    int64_t step = *mlir::getConstantIntValue(loop.getStep());
    if (lb + step >= *mlir::getConstantIntValue(loop.getUpperBound())) return kMaxBatch;
    auto here = globalOffsetsAt(loop, 0, 0, lb), next = globalOffsetsAt(loop, 0, 0, lb + step);
    if (!here || !next) return kMaxBatch;
    int64_t k = 1;
    for (int64_t most = std::min(kMaxBatch, grid_.numBlocks()); k < most; ++k) {
      auto there = globalOffsetsAt(loop, k, 0, lb);
      if (!there) break;
      bool along = true;
      for (auto [h, n, t] : llvm::zip(*here, *next, *there)) along &= (t - h).abs().ult((n - h).abs());
      if (!along) break;
    }
    return k;
  }

  // Whether every access of global memory in the interchanged `loop` at
  // thread `t` of block 0 is nearer its neighbouring block's (thread `t`)
  // than its own at `other` (thread, step; by default the same thread's
  // next step): a column reduction's block reads a strip of 64 columns of
  // 32 rows a step, its neighbour the next strip, so batched blocks (see
  // run()) read whole rows. A row reduction's step reads on along its row,
  // and batched, its slots only crowd the L1 (measured: row sum
  // f32[1024,4096] 1.8x slower, column sum f32[4096,1024] 0.86x).
  bool readsAcrossBlocks(mlir::scf::ForOp loop, int64_t t = 0,
                         std::optional<std::pair<int64_t, int64_t>> other = std::nullopt) {
    int64_t lb = *mlir::getConstantIntValue(loop.getLowerBound());
    int64_t step = *mlir::getConstantIntValue(loop.getStep());
    if (lb + step >= *mlir::getConstantIntValue(loop.getUpperBound())) return false;
    if (grid_.numBlocks() < 2) return false;
    auto [otherThread, otherStep] = other.value_or(std::pair{t, lb + step});
    auto here = globalOffsetsAt(loop, 0, t, lb), neighbour = globalOffsetsAt(loop, 1, t, lb),
         there = globalOffsetsAt(loop, 0, otherThread, otherStep);
    if (!here || !neighbour || !there || here->empty()) return false;
    for (auto [h, b, o] : llvm::zip(*here, *neighbour, *there)) {
      if ((b - h).abs().uge((o - h).abs())) return false;
    }
    return true;
  }

  // How the integer `v` of the kernel's body depends on the ids: bit 0 on
  // the block's, bit 1 on the thread's; std::nullopt where an op other than
  // a sum, a difference or a cast takes both (the thread's part of `v` may
  // then differ from block to block), or `v` depends on anything but ids
  // and constants.
  std::optional<unsigned> idDependence(Value v, llvm::DenseMap<Value, unsigned>& memo,
                                       mlir::Operation* alsoIn = nullptr) {
    if (auto it = memo.find(v); it != memo.end()) return it->second;
    mlir::Operation* def = v.getDefiningOp();
    if (!def ||
        (def->getBlock() != &f_.getBody().front() && !(alsoIn && alsoIn->isProperAncestor(def))) ||
        def->getNumRegions() != 0 || !mlir::isPure(def)) {
      return std::nullopt;
    }
    unsigned deps = 0;
    if (llvm::isa<mlir::gpu::BlockIdOp>(def)) {
      deps = 1;
    } else if (llvm::isa<mlir::gpu::ThreadIdOp>(def)) {
      deps = 2;
    } else {
      for (Value operand : def->getOperands()) {
        std::optional<unsigned> d = idDependence(operand, memo, alsoIn);
        if (!d) return std::nullopt;
        deps |= *d;
      }
      if (deps == 3 && !llvm::isa<mlir::arith::AddIOp, mlir::arith::SubIOp, mlir::arith::IndexCastOp,
                                  mlir::arith::IndexCastUIOp>(def)) {
        return std::nullopt;
      }
    }
    memo[v] = deps;
    return deps;
  }

  // The ops of `phase`, or of the body of its `loop` (but the terminator).
  static SmallVector<mlir::Operation*> opsOf(llvm::ArrayRef<mlir::Operation*> phase,
                                             mlir::scf::ForOp loop) {
    if (!loop) return SmallVector<mlir::Operation*>(phase.begin(), phase.end());
    SmallVector<mlir::Operation*> ops;
    for (mlir::Operation& op : loop.getBody()->without_terminator()) ops.push_back(&op);
    return ops;
  }

  // The copies of a phase run by every thread that does nothing but copy
  // between global and shared memory, `toShared` or from it: each store's
  // value a load of the phase used once (neither volatile nor atomic),
  // both through one-index GEPs of one element type of a width in
  // `widths`, from one base to one base, beside memory-free index
  // arithmetic in which the block's part and the thread's only add
  // (idDependence) and the shared index has no block's part -- so that
  // each copy's elements, evaluated at block 0 (`from` and `to`, thread
  // by thread), are every block's. std::nullopt for any other phase. The
  // phase may also be one interchanged loop of such copies (no carried
  // values), its induction variable a constant of each step: `from` and
  // `to` then thread by thread, step by step. Elements of 16 or 32 bits.
  struct PhaseCopies {
    SmallVector<std::pair<mlir::LLVM::GEPOp, mlir::LLVM::GEPOp>> geps;  // (src, dst)
    mlir::Type element;
    SmallVector<int64_t> from, to;
    mlir::scf::ForOp loop;  // the phase's loop over steps, or null
  };

  std::optional<PhaseCopies> copiesOf(llvm::ArrayRef<mlir::Operation*> phase,
                                      const ThreadShape& shape, bool toShared) {
    int64_t n = grid_.numThreads();
    if (shape.count() != n) return std::nullopt;
    PhaseCopies copies;
    if (phase.size() == 1 && interchanged_.contains(phase.front())) {
      copies.loop = llvm::cast<mlir::scf::ForOp>(phase.front());
      if (copies.loop.getNumResults() != 0) return std::nullopt;
    }
    SmallVector<mlir::Operation*> ops = opsOf(phase, copies.loop);
    int64_t loads = 0;
    Value srcBase, dstBase;
    for (mlir::Operation* op : ops) {
      for (Value r : op->getResults()) {
        if (spilled_.contains(r)) return std::nullopt;
      }
      if (llvm::isa<mlir::LLVM::LoadOp>(op)) {
        ++loads;
        continue;
      }
      auto store = llvm::dyn_cast<mlir::LLVM::StoreOp>(op);
      if (!store) {
        if (op->getNumRegions() != 0 || !mlir::isMemoryEffectFree(op)) return std::nullopt;
        continue;
      }
      auto load = store.getValue().getDefiningOp<mlir::LLVM::LoadOp>();
      if (!load || !load->hasOneUse() || load->getBlock() != store->getBlock() ||
          (!copies.loop && phaseOf_.lookup(load) != curPhase_) || !isPlain(load) ||
          !isPlain(store)) {
        return std::nullopt;
      }
      auto src = load.getAddr().getDefiningOp<mlir::LLVM::GEPOp>();
      auto dst = store.getAddr().getDefiningOp<mlir::LLVM::GEPOp>();
      mlir::Type t = load.getType();
      if (!src || !dst || src.getIndices().size() != 1 || dst.getIndices().size() != 1 ||
          src.getDynamicIndices().size() != 1 || dst.getDynamicIndices().size() != 1 ||
          src.getElemType() != t || dst.getElemType() != t || !t.isIntOrFloat() ||
          (t.getIntOrFloatBitWidth() != 16 && t.getIntOrFloatBitWidth() != 32) ||
          (copies.element && copies.element != t) ||
          isSharedAddress(src.getResult()) == toShared ||
          isSharedAddress(dst.getResult()) != toShared || (srcBase && srcBase != src.getBase()) ||
          (dstBase && dstBase != dst.getBase())) {
        return std::nullopt;
      }
      copies.element = t;
      srcBase = src.getBase();
      dstBase = dst.getBase();
      copies.geps.push_back({src, dst});
    }
    if (copies.geps.empty() || loads != static_cast<int64_t>(copies.geps.size())) {
      return std::nullopt;
    }
    llvm::DenseMap<Value, unsigned> memo;
    SmallVector<int64_t> ivs = {0};
    if (copies.loop) {
      memo[copies.loop.getInductionVar()] = 0;
      ivs.clear();
      int64_t lb = *mlir::getConstantIntValue(copies.loop.getLowerBound());
      int64_t ub = *mlir::getConstantIntValue(copies.loop.getUpperBound());
      int64_t step = *mlir::getConstantIntValue(copies.loop.getStep());
      for (int64_t iv = lb; iv < ub; iv += step) ivs.push_back(iv);
    }
    for (auto [src, dst] : copies.geps) {
      auto s = idDependence(src.getDynamicIndices()[0], memo, copies.loop);
      auto d = idDependence(dst.getDynamicIndices()[0], memo, copies.loop);
      if (!s || !d || ((toShared ? *d : *s) & 1)) return std::nullopt;
    }
    // Every copy's source and destination offsets at each thread and
    // step of block 0.
    SmallVector<Value> roots, seeds;
    SmallVector<llvm::APInt> seedValues;
    for (auto [src, dst] : copies.geps) {
      roots.append({src.getDynamicIndices()[0], dst.getDynamicIndices()[0]});
    }
    addBlockIdsAt(0, seeds, seedValues);
    Value iv = copies.loop ? copies.loop.getInductionVar() : Value();
    if (iv) {
      seeds.push_back(iv);
      seedValues.push_back(llvm::APInt(mlir::IndexType::kInternalStorageBitWidth, ivs.front()));
    }
    std::optional<Tape> tape = Tape::build(*this, roots, seeds, iv, copies.loop);
    if (!tape) return std::nullopt;
    for (int64_t t = 0; t < n; ++t) {
      if (!tape->start(grid_.threads, t, seedValues)) return std::nullopt;
      for (int64_t step : ivs) {
        if (iv && !tape->step(grid_.threads, t,
                              llvm::APInt(mlir::IndexType::kInternalStorageBitWidth, step))) {
          return std::nullopt;
        }
        for (size_t c = 0; c < copies.geps.size(); ++c) {
          copies.from.push_back(tape->root(2 * c).getSExtValue());
          copies.to.push_back(tape->root(2 * c + 1).getSExtValue());
        }
      }
    }
    return copies;
  }

  // A phase that copies a tile of 32-bit elements from global memory into
  // shared memory transposed (a transpose's first phase: element (r, c) of
  // the tile from src[r * srcRowStride + c] to dst[c * dstColStride + r]),
  // in rows and columns of multiples of 8; see matchTransposingCopy.
  struct TransposingCopy {
    mlir::LLVM::GEPOp src, dst;  // one copy's addresses: thread 0's of them
    int64_t srcShift, dstShift;  // element (0, 0) from there, in elements
    int64_t rows, cols, srcRowStride, dstColStride;
    mlir::Type element;
  };

  // Whether `phase` is a transposing copy: 32-bit copies from global into
  // shared memory (copiesOf) that make a tile's transpose. Each
  // lane storing a column of the tile (33 elements apart, the padding
  // against bank conflicts), LLVM wrote it element by element: half the
  // time of the transpose + add f32[1024,1024].
  std::optional<TransposingCopy> matchTransposingCopy(const PhaseCopies& copies) {
    if (copies.loop || copies.element.getIntOrFloatBitWidth() != 32) return std::nullopt;
    const SmallVector<int64_t>& from = copies.from;
    const SmallVector<int64_t>& to = copies.to;
    // Element (0, 0) is the first of the tile; a column's next element (in
    // the tile) is its row's next in the source, a row's next its column's.
    size_t origin = std::min_element(to.begin(), to.end()) - to.begin();
    TransposingCopy copy{copies.geps.front().first, copies.geps.front().second,
                         from[origin] - from.front(), to[origin] - to.front(), 0, 0, 0, 0,
                         copies.element};
    for (size_t e = 0; e < to.size(); ++e) {
      if (from[e] - from[origin] == 1) copy.dstColStride = to[e] - to[origin];
      if (to[e] - to[origin] == 1) copy.srcRowStride = from[e] - from[origin];
    }
    if (copy.dstColStride < 2 || copy.srcRowStride < 2) return std::nullopt;
    llvm::DenseSet<int64_t> seen;
    for (size_t e = 0; e < to.size(); ++e) {
      int64_t offset = to[e] - to[origin];
      int64_t r = offset % copy.dstColStride, c = offset / copy.dstColStride;
      if (from[e] - from[origin] != r * copy.srcRowStride + c || !seen.insert(offset).second) {
        return std::nullopt;
      }
      copy.rows = std::max(copy.rows, r + 1);
      copy.cols = std::max(copy.cols, c + 1);
    }
    if (copy.rows * copy.cols != static_cast<int64_t>(to.size()) || copy.rows % kTransposeTile ||
        copy.cols % kTransposeTile) {
      return std::nullopt;
    }
    return copy;
  }

  // `copy` (matchTransposingCopy) for the blocks of the batch, in squares
  // of kTransposeTile x kTransposeTile elements: kTransposeTile vector
  // loads of its rows, the square transposed in registers (unpacks,
  // shuffles and 128-bit permutes: 24 shuffles), kTransposeTile vector
  // stores of its columns. The loop over the squares' rows runs outside
  // the batch's blocks (reading neighbouring blocks' rows on where the one
  // before stopped, see emitInterchanged): transpose + add f32[1024,1024]
  // 0.73x the time of the copy element by element, 0.79x with the blocks
  // outside (A/B in one process, bits the same).
  mlir::LogicalResult emitTransposingCopy(mlir::OpBuilder& b, llvm::ArrayRef<mlir::Operation*> phase,
                                          TransposingCopy copy) {
    mlir::Location loc = copy.src.getLoc();
    auto loopOver = [&](mlir::OpBuilder& builder, int64_t n) {
      auto loop = builder.create<mlir::scf::ForOp>(loc, indexConstant(0), indexConstant(n),
                                                   indexConstant(kTransposeTile));
      loop->setAttr("loop_annotation", scalarLoop(b.getContext()));
      return loop;
    };
    auto rows = loopOver(b, copy.rows);
    mlir::OpBuilder rb(rows.getBody()->getTerminator());
    // In each block of the batch, thread 0's addresses of its first copy.
    mlir::OpBuilder tb(b.getContext());
    Value tid = emitThreadLoops(rb, ThreadShape{1, 0, 1, 0, 1}, tb);
    mlir::IRMapping mapping;
    for (mlir::Operation* op : phase) {
      if (llvm::isa<mlir::LLVM::LoadOp, mlir::LLVM::StoreOp>(op)) continue;
      if (mlir::failed(emitOp(tb, op, mapping, tid, bid_))) return mlir::failure();
    }
    auto ptrType = mlir::LLVM::LLVMPointerType::get(b.getContext());
    auto at = [&](mlir::OpBuilder& builder, Value base, Value offset) -> Value {
      Value i = builder.create<mlir::arith::IndexCastOp>(loc, builder.getI64Type(), offset);
      return builder.create<mlir::LLVM::GEPOp>(loc, ptrType, copy.element, base,
                                               mlir::ValueRange{i});
    };
    Value src = at(tb, mapping.lookup(copy.src.getResult()), indexConstant(copy.srcShift));
    Value dst = at(tb, mapping.lookup(copy.dst.getResult()), indexConstant(copy.dstShift));
    auto cols = loopOver(tb, copy.cols);
    mlir::OpBuilder cb(cols.getBody()->getTerminator());
    Value r0 = rows.getInductionVar(), c0 = cols.getInductionVar();
    auto vectorType = mlir::VectorType::get({kTransposeTile}, copy.element);
    // Row j of the square: src + (r0 + j) * srcRowStride + c0.
    SmallVector<Value> v;
    for (int64_t j = 0; j < kTransposeTile; ++j) {
      Value row = j ? cb.create<mlir::arith::AddIOp>(loc, r0, indexConstant(j)) : r0;
      Value offset = cb.create<mlir::arith::AddIOp>(
          loc, cb.create<mlir::arith::MulIOp>(loc, row, indexConstant(copy.srcRowStride)), c0);
      v.push_back(cb.create<mlir::LLVM::LoadOp>(loc, vectorType, at(cb, src, offset),
                                                /*alignment=*/4));
    }
    // Elements [0, 8) of a and b shuffled by `mask` (< 8 from a, else b).
    auto shuffle = [&](Value a, Value c, llvm::ArrayRef<int32_t> mask) -> Value {
      return cb.create<mlir::LLVM::ShuffleVectorOp>(loc, a, c, mask);
    };
    // Pairs of rows interleaved (unpacklo/hi), then pairs of pairs
    // (shufps), then the 128-bit halves (vperm2f128): v[j][i] -> w[i][j].
    SmallVector<Value> t(kTransposeTile), u(kTransposeTile), w(kTransposeTile);
    for (int j = 0; j < kTransposeTile; j += 2) {
      t[j] = shuffle(v[j], v[j + 1], {0, 8, 1, 9, 4, 12, 5, 13});
      t[j + 1] = shuffle(v[j], v[j + 1], {2, 10, 3, 11, 6, 14, 7, 15});
    }
    for (int j = 0; j < kTransposeTile; j += 4) {
      for (int k = 0; k < 2; ++k) {
        u[j + 2 * k] = shuffle(t[j + k], t[j + k + 2], {0, 1, 8, 9, 4, 5, 12, 13});
        u[j + 2 * k + 1] = shuffle(t[j + k], t[j + k + 2], {2, 3, 10, 11, 6, 7, 14, 15});
      }
    }
    for (int i = 0; i < 4; ++i) {
      w[i] = shuffle(u[i], u[i + 4], {0, 1, 2, 3, 8, 9, 10, 11});
      w[i + 4] = shuffle(u[i], u[i + 4], {4, 5, 6, 7, 12, 13, 14, 15});
    }
    // Column i of the square: dst + (c0 + i) * dstColStride + r0.
    for (int64_t i = 0; i < kTransposeTile; ++i) {
      Value col = i ? cb.create<mlir::arith::AddIOp>(loc, c0, indexConstant(i)) : c0;
      Value offset = cb.create<mlir::arith::AddIOp>(
          loc, cb.create<mlir::arith::MulIOp>(loc, col, indexConstant(copy.dstColStride)), r0);
      cb.create<mlir::LLVM::StoreOp>(loc, w[i], at(cb, dst, offset), /*alignment=*/4);
    }
    return mlir::success();
  }

  // The elements a phase's copies write (`to`), by offset from the least:
  // the copy writing each (`at`), and the first run of adjoining ones;
  // std::nullopt where two copies write one element.
  struct Written {
    llvm::DenseMap<int64_t, size_t> at;
    int64_t size = 0, run = 0;

    // The stride of the rows of `cols` elements the written elements make
    // (a multiple of `cols` dividing them and their first run): `cols`
    // where the rows adjoin, else the least offset past the first row.
    std::optional<int64_t> rowStride(int64_t cols) const {
      if (cols > run || run % cols || size % cols) return std::nullopt;
      if (run > cols || size == cols) return cols;
      int64_t stride = std::numeric_limits<int64_t>::max();
      for (auto& [d, e] : at) {
        if (d >= cols) stride = std::min(stride, d);
      }
      return stride;
    }
  };

  static std::optional<Written> writtenBy(llvm::ArrayRef<int64_t> to) {
    Written written;
    int64_t least = *llvm::min_element(to);
    for (auto [e, d] : llvm::enumerate(to)) {
      if (!written.at.try_emplace(d - least, e).second) return std::nullopt;
    }
    written.size = static_cast<int64_t>(to.size());
    while (written.at.contains(written.run)) ++written.run;
    return written;
  }

  // Whether each of `lines` lines of `len` elements (element k of line l
  // written at offset `offsetOf(l, k)` of `written`) takes a permutation
  // of the `len` elements of a source row, line l of row l, from fromMin +
  // l * stride: the stride (where line 1 reads its least element) and each
  // line's permutation (table[l][k], the element of its row), or
  // std::nullopt.
  struct RowPermutations {
    int64_t stride = 0;
    SmallVector<SmallVector<int64_t>> table;
  };

  static std::optional<RowPermutations> rowPermutations(
      int64_t lines, int64_t len, llvm::function_ref<int64_t(int64_t, int64_t)> offsetOf,
      const Written& written, llvm::ArrayRef<int64_t> from, int64_t fromMin) {
    RowPermutations rows;
    auto readAt = [&](int64_t l, int64_t k) -> std::optional<int64_t> {
      auto e = written.at.find(offsetOf(l, k));
      if (e == written.at.end()) return std::nullopt;
      return from[e->second] - fromMin;
    };
    if (lines > 1) {
      rows.stride = std::numeric_limits<int64_t>::max();
      for (int64_t k = 0; k < len; ++k) {
        std::optional<int64_t> read = readAt(1, k);
        if (!read) return std::nullopt;
        rows.stride = std::min(rows.stride, *read);
      }
      if (rows.stride < len) return std::nullopt;
    }
    rows.table.assign(lines, SmallVector<int64_t>(len, -1));
    for (int64_t l = 0; l < lines; ++l) {
      llvm::BitVector seen(len);
      for (int64_t k = 0; k < len; ++k) {
        std::optional<int64_t> read = readAt(l, k);
        if (!read) return std::nullopt;
        int64_t q = *read - l * rows.stride;
        if (q < 0 || q >= len || seen.test(q)) return std::nullopt;
        seen.set(q);
        rows.table[l][k] = q;
      }
    }
    return rows;
  }

  // What emitTransposingWrite and emitPermutingCopy share: the loop over
  // the batch's blocks (one thread each), in it thread 0's addresses of
  // the phase's first copy (at a loop's first step) moved to the rows'
  // first elements, and vectors of 512 bits of the element's width picked
  // from rows of one or two such vectors.
  struct RegisterCopy {
    mlir::OpBuilder b;  // inside the loop over the batch's blocks
    mlir::Location loc;
    mlir::Type element, vectorType;
    int64_t side;  // elements a vector
    unsigned alignment;
    Value src, dst;

    // The element `offset` elements from `base`.
    Value at(Value base, int64_t offset) {
      Value i = b.create<mlir::LLVM::ConstantOp>(loc, b.getI64Type(), offset);
      return b.create<mlir::LLVM::GEPOp>(loc, mlir::LLVM::LLVMPointerType::get(b.getContext()),
                                         element, base, mlir::ValueRange{i});
    }
    Value load(Value base, int64_t offset) {
      return b.create<mlir::LLVM::LoadOp>(loc, vectorType, at(base, offset), alignment);
    }
    void store(Value v, Value base, int64_t offset) {
      b.create<mlir::LLVM::StoreOp>(loc, v, at(base, offset), alignment);
    }
    // Elements `part` of the source row at `rowStart` (`rowLength`
    // elements, at most two vectors) as one vector: one load where they
    // run on in order, else a shuffle of the row's vectors, which `halves`
    // keeps once loaded.
    Value pick(int64_t rowStart, int64_t rowLength, llvm::ArrayRef<int64_t> part,
               std::array<Value, 2>& halves) {
      bool inOrder = llvm::all_of(llvm::enumerate(part), [&](auto e) {
        return e.value() == part.front() + static_cast<int64_t>(e.index());
      });
      if (inOrder) return load(src, rowStart + part.front());
      for (int64_t h = 0; h * side < rowLength; ++h) {
        if (!halves[h]) halves[h] = load(src, rowStart + h * side);
      }
      SmallVector<int32_t> mask(part.begin(), part.end());
      return b.create<mlir::LLVM::ShuffleVectorOp>(loc, halves[0],
                                                   rowLength > side ? halves[1] : halves[0], mask);
    }
  };

  // A phase (or the body of its loop over steps, at the first step) whose
  // index arithmetic gives a register copy's addresses.
  struct AddressPhase {
    llvm::ArrayRef<mlir::Operation*> ops;
    mlir::scf::ForOp loop;
  };

  // `srcPhase`, where given, is the phase whose index arithmetic gives
  // `src` (a copy fused across two phases, see matchDirectWrite); else
  // `phase` gives both addresses.
  mlir::FailureOr<RegisterCopy> beginRegisterCopy(mlir::OpBuilder& b,
                                                  llvm::ArrayRef<mlir::Operation*> phase,
                                                  mlir::scf::ForOp loop, mlir::LLVM::GEPOp src,
                                                  mlir::LLVM::GEPOp dst, int64_t srcShift,
                                                  int64_t dstShift, mlir::Type element,
                                                  std::optional<AddressPhase> srcPhase = {}) {
    mlir::OpBuilder tb(b.getContext());
    Value tid = emitThreadLoops(b, ThreadShape{1, 0, 1, 0, 1}, tb);
    mlir::IRMapping mapping;
    SmallVector<AddressPhase, 2> addressPhases = {{phase, loop}};
    if (srcPhase) addressPhases.insert(addressPhases.begin(), *srcPhase);
    for (auto [ops, at] : addressPhases) {
      if (at) {
        mapping.map(at.getInductionVar(),
                    indexConstant(*mlir::getConstantIntValue(at.getLowerBound())));
      }
      for (mlir::Operation* op : opsOf(ops, at)) {
        if (llvm::isa<mlir::LLVM::LoadOp, mlir::LLVM::StoreOp>(op)) continue;
        if (mlir::failed(emitOp(tb, op, mapping, tid, bid_))) return mlir::failure();
      }
    }
    int64_t bits = element.getIntOrFloatBitWidth();
    // The elements are copied as integers of their width.
    RegisterCopy copy{tb, src.getLoc(), element,
                      mlir::VectorType::get({kWriteVectorBits / bits}, tb.getIntegerType(bits)),
                      kWriteVectorBits / bits, static_cast<unsigned>(bits / 8), {}, {}};
    copy.src = copy.at(mapping.lookup(src.getResult()), srcShift);
    copy.dst = copy.at(mapping.lookup(dst.getResult()), dstShift);
    return copy;
  }

  // A phase that writes a shared tile to global memory transposed (a
  // transpose's second phase): output element (r, c) of a block's `rows` x
  // `cols` elements (rows `dstRowStride` apart) from the tile's row c,
  // element perm[c][r] (rows `srcRowStride` apart) -- a permutation of each
  // row, such as the swizzle's rotation of the packed 16-bit transpose.
  struct TransposingWrite {
    mlir::LLVM::GEPOp src, dst;  // one copy's addresses: thread 0's of them
    int64_t srcShift, dstShift;  // the tile's and the output's first element from there
    int64_t rows, cols, srcRowStride, dstRowStride;
    SmallVector<SmallVector<int64_t>> perm;  // [c][r]
    mlir::Type element;
    mlir::scf::ForOp loop;  // the phase's loop over steps, or null
    // Where `src` is not the tile but global memory the tile was copied
    // from (matchDirectWrite): the phase that copied it, whose addresses
    // `src` and `srcShift` are.
    std::optional<AddressPhase> srcPhase;
  };

  // Whether `phase` is a transposing write: 16- or 32-bit copies from
  // shared into global memory (copiesOf) that write the tile's rows to the
  // output's columns. On the CPU, each lane's copies read the tile's
  // columns an element at a time (no gathers): the bf16 021 transpose's
  // second phase, 64 scalar 16-bit loads and stores a lane, took half its
  // time.
  std::optional<TransposingWrite> matchTransposingWrite(const PhaseCopies& copies) {
    const SmallVector<int64_t>& from = copies.from;
    const SmallVector<int64_t>& to = copies.to;
    int64_t fromMin = *llvm::min_element(from), toMin = *llvm::min_element(to);
    TransposingWrite write{copies.geps.front().first, copies.geps.front().second,
                           fromMin - from.front(), toMin - to.front(), 0, 0, 0, 0, {},
                           copies.element, copies.loop};
    std::optional<Written> written = writtenBy(to);
    if (!written) return std::nullopt;
    int64_t side = kWriteVectorBits / copies.element.getIntOrFloatBitWidth();
    // The output's rows: runs of `cols` elements, `dstRowStride` apart --
    // the runs of contiguous elements, or, where the rows adjoin, as many
    // columns as there are rows of the tile (each a square's multiple).
    for (int64_t cols = side; cols <= written->run; cols += side) {
      std::optional<int64_t> stride = written->rowStride(cols);
      if (!stride) continue;
      write.cols = cols;
      write.rows = written->size / cols;
      write.dstRowStride = *stride;
      // In squares of `side` a side within emitTransposingWrite's bounds,
      // output column c from the tile's row c, permuted.
      if (write.rows % side || write.rows > 2 * side ||
          (write.rows / side) * (write.cols / side) > kMaxWriteSquares) {
        continue;
      }
      auto columns = rowPermutations(
          write.cols, write.rows, [&](int64_t c, int64_t r) { return r * write.dstRowStride + c; },
          *written, from, fromMin);
      if (!columns) continue;
      write.srcRowStride = columns->stride;
      write.perm = std::move(columns->table);
      return write;
    }
    return std::nullopt;
  }

  // The shared buffer (its global's name) `addr` points into, or "".
  static llvm::StringRef sharedGlobalOf(Value addr) {
    addr = baseOf(addr);
    if (auto cast = addr.getDefiningOp<mlir::LLVM::AddrSpaceCastOp>()) addr = cast.getArg();
    auto global = addr.getDefiningOp<mlir::LLVM::AddressOfOp>();
    return global ? global.getGlobalName() : llvm::StringRef();
  }

  // Whether `ops` are the only accesses to the shared buffer `name` (any
  // use of an address into it but address arithmetic) and the kernel
  // buffer `buffer` is only loaded from.
  bool onlyCopiesAccess(llvm::StringRef name, Value buffer,
                        const llvm::SmallPtrSetImpl<mlir::Operation*>& ops) {
    auto other = f_.walk([&](mlir::Operation* op) {
      if (ops.contains(op) ||
          llvm::isa<mlir::LLVM::GEPOp, mlir::LLVM::AddrSpaceCastOp, mlir::LLVM::AddressOfOp>(op)) {
        return mlir::WalkResult::advance();
      }
      bool tile = llvm::any_of(op->getOperands(), [&](Value v) {
        return llvm::isa<mlir::LLVM::LLVMPointerType>(v.getType()) && sharedGlobalOf(v) == name;
      });
      return tile ? mlir::WalkResult::interrupt() : mlir::WalkResult::advance();
    });
    if (other.wasInterrupted()) return false;
    SmallVector<Value> addresses = {buffer};
    while (!addresses.empty()) {
      Value addr = addresses.pop_back_val();
      for (mlir::Operation* user : addr.getUsers()) {
        if (auto gep = llvm::dyn_cast<mlir::LLVM::GEPOp>(user)) {
          addresses.push_back(gep.getResult());
        } else if (!llvm::isa<mlir::LLVM::LoadOp>(user)) {
          return false;
        }
      }
    }
    return true;
  }

  // Phase `p`'s copies of a read-only kernel buffer into a shared tile
  // (`into`) that only the next phase reads, and reads as a transposing
  // write (matchTransposingWrite): one transposing write from the buffer
  // itself, the tile's permutation composed into the write's (the packed
  // 16-bit transpose's swizzle rotates each row in, the write rotates it
  // back: from the buffer its rows are read in order, one load each).
  // The phase it replaces too, or std::nullopt.
  std::optional<std::pair<TransposingWrite, size_t>> matchDirectWrite(
      size_t p, const PhaseCopies& into,
      llvm::ArrayRef<SmallVector<mlir::Operation*>> phases, llvm::ArrayRef<ThreadShape> shapes) {
    if (!transposingWrites_) return std::nullopt;
    size_t q = p + 1;
    while (q < phases.size() && (phases[q].empty() || shapes[q].count() == 0)) ++q;
    if (q == phases.size()) return std::nullopt;
    auto [intoSrc, intoDst] = into.geps.front();
    llvm::StringRef tile = sharedGlobalOf(intoDst.getResult());
    Value buffer = baseOf(intoSrc.getResult());
    if (tile.empty() || !isKernelBuffer(f_, buffer)) return std::nullopt;
    size_t saved = curPhase_;
    curPhase_ = q;
    std::optional<PhaseCopies> from = copiesOf(phases[q], shapes[q], /*toShared=*/false);
    curPhase_ = saved;
    if (!from || from->element != into.element ||
        sharedGlobalOf(from->geps.front().first.getResult()) != tile) {
      return std::nullopt;
    }
    llvm::SmallPtrSet<mlir::Operation*, 32> copies;
    for (const PhaseCopies* c : {&into, static_cast<const PhaseCopies*>(&*from)}) {
      for (auto [src, dst] : c->geps) {
        for (mlir::LLVM::GEPOp gep : {src, dst}) {
          for (mlir::Operation* user : gep->getUsers()) copies.insert(user);
        }
      }
    }
    if (!onlyCopiesAccess(tile, buffer, copies)) return std::nullopt;
    // Tile element -> buffer element (block 0's), each written once.
    llvm::DenseMap<int64_t, int64_t> source;
    for (auto [f, t] : llvm::zip(into.from, into.to)) {
      if (!source.try_emplace(t, f).second) return std::nullopt;
    }
    PhaseCopies direct = *from;
    for (int64_t& f : direct.from) {
      auto s = source.find(f);
      if (s == source.end()) return std::nullopt;
      f = s->second;
    }
    std::optional<TransposingWrite> write = matchTransposingWrite(direct);
    if (!write) return std::nullopt;
    write->src = intoSrc;
    write->srcShift = *llvm::min_element(direct.from) - into.from.front();
    write->srcPhase = AddressPhase{phases[p], into.loop};
    return std::make_pair(std::move(*write), q);
  }

  // `write` (matchTransposingWrite) for each block of the batch, in squares
  // of 512-bit vectors a side: each tile row's part for the square in the
  // output's order (one vector load where the part runs on in order, else
  // a shuffle of the row's halves: its permutation), the square transposed
  // (log2 of its side rounds of interleaves of rows j and j + side/2), and
  // each of its rows stored whole. bf16 021 transpose bf16[16,256,512]:
  // 0.334 -> 0.214-0.238 ms, its compile the same (A/B, bits the same).
  mlir::LogicalResult emitTransposingWrite(mlir::OpBuilder& b,
                                           llvm::ArrayRef<mlir::Operation*> phase,
                                           TransposingWrite write) {
    auto begun = beginRegisterCopy(b, phase, write.loop, write.src, write.dst, write.srcShift,
                                   write.dstShift, write.element, write.srcPhase);
    if (mlir::failed(begun)) return mlir::failure();
    RegisterCopy& copy = *begun;
    mlir::Location loc = copy.loc;
    int64_t side = copy.side;
    // Each round the same interleaves of vectors j and j + side/2.
    SmallVector<int32_t> low, high;
    for (int64_t i = 0; i < side / 2; ++i) {
      low.append({static_cast<int32_t>(i), static_cast<int32_t>(side + i)});
      high.append({static_cast<int32_t>(side / 2 + i), static_cast<int32_t>(side + side / 2 + i)});
    }
    // The square of the rows `v` (v[j][i]: output element (r0 + i, c0 +
    // j)) transposed: its rows out. The rounds are a loop, its body a
    // basic block of `side` shuffles of the block's arguments. Emitted
    // whole, x86 instruction selection combined each shuffle with the trees
    // of shuffles under it (~0.2 ms a shuffle).
    auto transposed = [&](mlir::OpBuilder& at, llvm::ArrayRef<Value> v) {
      auto rounds = at.create<mlir::scf::ForOp>(
          loc, indexConstant(0), indexConstant(llvm::Log2_64(side)), indexConstant(1), v,
          [&](mlir::OpBuilder& lb, mlir::Location, Value, mlir::ValueRange u) {
            SmallVector<Value> next(side);
            for (int64_t j = 0; j < side / 2; ++j) {
              next[2 * j] = lb.create<mlir::LLVM::ShuffleVectorOp>(loc, u[j], u[j + side / 2], low);
              next[2 * j + 1] =
                  lb.create<mlir::LLVM::ShuffleVectorOp>(loc, u[j], u[j + side / 2], high);
            }
            lb.create<mlir::scf::YieldOp>(loc, next);
          });
      rounds->setAttr("loop_annotation", scalarLoop(b.getContext()));
      return rounds.getResults();
    };
    bool inOrder = llvm::all_of(write.perm, [](llvm::ArrayRef<int64_t> column) {
      return llvm::all_of(llvm::enumerate(column), [](auto e) {
        return e.value() == static_cast<int64_t>(e.index());
      });
    });
    if (inOrder) {
      // Every square's rows are loads at the square's corner (a direct
      // write's): the squares are a loop, one body for LLVM, not one a
      // square. The bf16 021 transpose's compile 48-53 -> 28-31 ms, its run
      // within the spread of A/Bs in either order.
      int64_t across = write.rows / side;
      auto squares = copy.b.create<mlir::scf::ForOp>(
          loc, indexConstant(0), indexConstant(across * (write.cols / side)), indexConstant(1));
      squares->setAttr("loop_annotation", noUnroll(b.getContext()));
      mlir::OpBuilder::InsertionGuard guard(copy.b);
      copy.b.setInsertionPoint(squares.getBody()->getTerminator());
      mlir::OpBuilder& sb = copy.b;
      Value square = squares.getInductionVar();
      auto times = [&](Value x, int64_t k) -> Value {
        return sb.create<mlir::arith::MulIOp>(loc, x, indexConstant(k));
      };
      Value r0 = times(sb.create<mlir::arith::RemUIOp>(loc, square, indexConstant(across)), side);
      Value c0 = times(sb.create<mlir::arith::DivUIOp>(loc, square, indexConstant(across)), side);
      auto corner = [&](Value base, Value major, int64_t stride, Value minor) -> Value {
        Value offset = sb.create<mlir::arith::IndexCastOp>(
            loc, sb.getI64Type(), sb.create<mlir::arith::AddIOp>(loc, times(major, stride), minor));
        return sb.create<mlir::LLVM::GEPOp>(loc, mlir::LLVM::LLVMPointerType::get(b.getContext()),
                                            copy.element, base, mlir::ValueRange{offset});
      };
      Value from = corner(copy.src, c0, write.srcRowStride, r0);
      Value to = corner(copy.dst, r0, write.dstRowStride, c0);
      SmallVector<Value> v;
      for (int64_t j = 0; j < side; ++j) v.push_back(copy.load(from, j * write.srcRowStride));
      for (auto [i, row] : llvm::enumerate(transposed(sb, v))) {
        copy.store(row, to, static_cast<int64_t>(i) * write.dstRowStride);
      }
      return mlir::success();
    }
    for (int64_t c0 = 0; c0 < write.cols; c0 += side) {
      // The vectors of each of the square's tile rows, once loaded.
      SmallVector<std::array<Value, 2>> halves(side);
      for (int64_t r0 = 0; r0 < write.rows; r0 += side) {
        SmallVector<Value> v;
        for (int64_t j = 0; j < side; ++j) {
          v.push_back(copy.pick((c0 + j) * write.srcRowStride, write.rows,
                                llvm::ArrayRef(write.perm[c0 + j]).slice(r0, side), halves[j]));
        }
        for (auto [i, row] : llvm::enumerate(transposed(copy.b, v))) {
          copy.store(row, copy.dst, (r0 + static_cast<int64_t>(i)) * write.dstRowStride + c0);
        }
      }
    }
    return mlir::success();
  }

  // A phase that copies rows from global memory into shared memory, each
  // row permuted (the packed 16-bit transpose's first phase: its swizzle
  // rotates each row of the tile): element p of the tile's row i (rows
  // `dstRowStride` apart) from element gather[i][p] of the source's row i
  // (rows `srcRowStride` apart), `cols` elements a row.
  struct PermutingCopy {
    mlir::LLVM::GEPOp src, dst;  // one copy's addresses: thread 0's of them
    int64_t srcShift, dstShift;  // the rows' first elements from there
    int64_t rows, cols, srcRowStride, dstRowStride;
    SmallVector<SmallVector<int64_t>> gather;  // [i][p]
    mlir::Type element;
    mlir::scf::ForOp loop;  // the phase's loop over steps, or null
  };

  // Whether `phase` is a permuting copy: 16- or 32-bit copies from global
  // into shared memory (copiesOf; a loop of them too) whose every row of
  // the tile takes a permutation of a row of the source. On the CPU the
  // packed 16-bit transpose's rotated rows were copied in two runs a row
  // (cut where the rotation wraps), each a vector loop and its scalar
  // remainder: after the transposing write, most of its time.
  std::optional<PermutingCopy> matchPermutingCopy(const PhaseCopies& copies) {
    const SmallVector<int64_t>& from = copies.from;
    const SmallVector<int64_t>& to = copies.to;
    int64_t fromMin = *llvm::min_element(from), toMin = *llvm::min_element(to);
    PermutingCopy copy{copies.geps.front().first, copies.geps.front().second,
                       fromMin - from.front(), toMin - to.front(), 0, 0, 0, 0, {},
                       copies.element, copies.loop};
    std::optional<Written> written = writtenBy(to);
    if (!written) return std::nullopt;
    int64_t side = kWriteVectorBits / copies.element.getIntOrFloatBitWidth();
    for (int64_t cols : {side, 2 * side}) {
      std::optional<int64_t> stride = written->rowStride(cols);
      if (!stride || written->size / cols > kMaxPermutedRows) continue;
      copy.cols = cols;
      copy.rows = written->size / cols;
      copy.dstRowStride = *stride;
      // Tile row i from source row i, permuted.
      auto rows = rowPermutations(
          copy.rows, copy.cols, [&](int64_t i, int64_t p) { return i * copy.dstRowStride + p; },
          *written, from, fromMin);
      if (!rows) continue;
      copy.srcRowStride = rows->stride;
      copy.gather = std::move(rows->table);
      return copy;
    }
    return std::nullopt;
  }

  // Where every row of `copy` is its source row rotated by a whole number
  // of 32-bit words (a swizzle's rotation of 16-bit pairs, or of 32-bit
  // elements), each row's rotation in words: tile element p from source
  // element (p + shift) mod cols.
  static std::optional<SmallVector<int64_t>> wordRotations(const PermutingCopy& copy) {
    int64_t bits = copy.element.getIntOrFloatBitWidth();
    if (bits > 32 || 32 % bits != 0) return std::nullopt;
    int64_t perWord = 32 / bits;
    if (copy.cols % perWord != 0 || copy.srcRowStride % perWord != 0 ||
        copy.dstRowStride % perWord != 0) {
      return std::nullopt;
    }
    SmallVector<int64_t> shifts;
    for (const SmallVector<int64_t>& row : copy.gather) {
      int64_t shift = row.front();
      if (shift % perWord != 0) return std::nullopt;
      for (auto [p, q] : llvm::enumerate(row)) {
        if (q != (static_cast<int64_t>(p) + shift) % copy.cols) return std::nullopt;
      }
      shifts.push_back(shift / perWord);
    }
    return shifts;
  }

  // `permuting`'s rows rotated by whole words (wordRotations) in loops
  // over rows of the same rotation modulo a vector's words (c): vector k
  // of a tile row is words c.. of the source row's vectors a + k and
  // a + k + 1 (mod the row's vectors, a the rotation's whole vectors),
  // one shuffle of two loads at addresses the row decides, the mask the
  // same for the loop's rows. The rows' indices and their `a`, by loop,
  // are a constant table. Unrolled, the bf16 021 transpose's 64 rows
  // were a block of ~700 instructions of 512-bit shuffles (~40 ms of x86
  // instruction selection); in loops, 16 bodies of 2 shuffles.
  void emitRotatingCopy(RegisterCopy& copy, const PermutingCopy& permuting,
                        llvm::ArrayRef<int64_t> shifts) {
    mlir::OpBuilder& b = copy.b;
    mlir::Location loc = copy.loc;
    mlir::MLIRContext* ctx = b.getContext();
    int64_t perWord = 32 / permuting.element.getIntOrFloatBitWidth();
    int64_t words = permuting.cols / perWord;
    int64_t lanes = std::min<int64_t>(kWriteVectorBits / 32, words);
    int64_t vectors = words / lanes;
    auto i32 = b.getI32Type();
    auto i64 = b.getI64Type();
    auto ptr = mlir::LLVM::LLVMPointerType::get(ctx);
    auto wordVector = mlir::VectorType::get({lanes}, i32);
    // The table: for each class c in turn, its rows' (index, a).
    SmallVector<int32_t> table;
    SmallVector<std::pair<int64_t, int64_t>> classes;  // c, its first entry
    for (int64_t c = 0; c < lanes; ++c) {
      int64_t first = static_cast<int64_t>(table.size()) / 2;
      for (auto [i, shift] : llvm::enumerate(shifts)) {
        if (shift % lanes != c) continue;
        table.push_back(static_cast<int32_t>(i));
        table.push_back(static_cast<int32_t>(shift / lanes));
      }
      if (static_cast<int64_t>(table.size()) / 2 > first) classes.push_back({c, first});
    }
    std::string name = addGlobal(
        b, f_, (f_.getName() + "_rotations").str(),
        mlir::LLVM::LLVMArrayType::get(i32, table.size()), /*isConstant=*/true,
        mlir::DenseIntElementsAttr::get(
            mlir::RankedTensorType::get({static_cast<int64_t>(table.size())}, i32),
            llvm::ArrayRef(table)));
    Value tableAddr = b.create<mlir::LLVM::AddressOfOp>(loc, ptr, name);
    auto wordAt = [&](mlir::OpBuilder& at, Value base, Value words) -> Value {
      return at.create<mlir::LLVM::GEPOp>(loc, ptr, i32, base, mlir::ValueRange{words});
    };
    for (auto [n, cls] : llvm::enumerate(classes)) {
      auto [c, first] = cls;
      int64_t last = n + 1 < classes.size() ? classes[n + 1].second
                                            : static_cast<int64_t>(table.size()) / 2;
      auto rows = b.create<mlir::scf::ForOp>(loc, indexConstant(first), indexConstant(last),
                                             indexConstant(1));
      rows->setAttr("loop_annotation", noUnroll(ctx));
      mlir::OpBuilder rb(rows.getBody()->getTerminator());
      auto constant = [&](int64_t v) -> Value {
        return rb.create<mlir::LLVM::ConstantOp>(loc, i64, v);
      };
      Value entry = rb.create<mlir::LLVM::MulOp>(
          loc, rb.create<mlir::arith::IndexCastOp>(loc, i64, rows.getInductionVar()),
          constant(2));
      auto tableAt = [&](Value at) -> Value {
        return rb.create<mlir::LLVM::ZExtOp>(
            loc, i64, rb.create<mlir::LLVM::LoadOp>(loc, i32, wordAt(rb, tableAddr, at), 4));
      };
      Value row = tableAt(entry);
      Value a = tableAt(rb.create<mlir::LLVM::AddOp>(loc, entry, constant(1)));
      Value src = wordAt(rb, copy.src,
                         rb.create<mlir::LLVM::MulOp>(loc, row,
                                                      constant(permuting.srcRowStride / perWord)));
      Value dst = wordAt(rb, copy.dst,
                         rb.create<mlir::LLVM::MulOp>(loc, row,
                                                      constant(permuting.dstRowStride / perWord)));
      // The source row's vectors from a on: m-th at words lanes * ((a + m) mod vectors).
      SmallVector<Value> v;
      for (int64_t m = 0; m < vectors; ++m) {
        Value at = rb.create<mlir::LLVM::MulOp>(
            loc,
            rb.create<mlir::LLVM::URemOp>(loc, rb.create<mlir::LLVM::AddOp>(loc, a, constant(m)),
                                          constant(vectors)),
            constant(lanes));
        v.push_back(rb.create<mlir::LLVM::LoadOp>(loc, wordVector, wordAt(rb, src, at),
                                                  copy.alignment));
      }
      SmallVector<int32_t> mask(lanes);
      for (int64_t j = 0; j < lanes; ++j) mask[j] = static_cast<int32_t>(c + j);
      for (int64_t k = 0; k < vectors; ++k) {
        Value out = c == 0 ? v[k]
                           : rb.create<mlir::LLVM::ShuffleVectorOp>(loc, v[k],
                                                                    v[(k + 1) % vectors], mask);
        rb.create<mlir::LLVM::StoreOp>(loc, out, wordAt(rb, dst, constant(k * lanes)),
                                       copy.alignment);
      }
    }
  }

  // `copy` (matchPermutingCopy) for each block of the batch: rows rotated
  // by whole words in a loop (emitRotatingCopy), else row by row, vector by
  // vector: one vector load where the row's part runs on in order, else a
  // shuffle of the source row's vectors by its permutation; each stored
  // whole. bf16 021 transpose bf16[16,256,512]: see README.
  mlir::LogicalResult emitPermutingCopy(mlir::OpBuilder& b, llvm::ArrayRef<mlir::Operation*> phase,
                                        PermutingCopy permuting) {
    auto begun = beginRegisterCopy(b, phase, permuting.loop, permuting.src, permuting.dst,
                                   permuting.srcShift, permuting.dstShift, permuting.element);
    if (mlir::failed(begun)) return mlir::failure();
    RegisterCopy& copy = *begun;
    if (auto shifts = wordRotations(permuting)) {
      emitRotatingCopy(copy, permuting, *shifts);
      return mlir::success();
    }
    for (int64_t i = 0; i < permuting.rows; ++i) {
      std::array<Value, 2> halves;
      for (int64_t p0 = 0; p0 < permuting.cols; p0 += copy.side) {
        Value v = copy.pick(i * permuting.srcRowStride, permuting.cols,
                            llvm::ArrayRef(permuting.gather[i]).slice(p0, copy.side), halves);
        copy.store(v, copy.dst, i * permuting.dstRowStride + p0);
      }
    }
    return mlir::success();
  }

  // Integer values of the kernel's body (or of ops inside `alsoIn`) that
  // thread ids, constants and given values ("seeds": block ids, a loop's
  // induction variable) decide through arith ops (foldInteger), laid out
  // once as a tape -- each value a slot, operands first -- so that
  // evaluating them at a thread and a step is a pass over arrays. copiesOf
  // evaluates every copy's addresses at every thread and step of a block:
  // by a recursion through a map per thread that had been ~95 % of the
  // pass on the bf16 021 transpose. The slots that depend on the
  // `stepping` seed are evaluated after the others, again at each step.
  class Tape {
   public:
    // std::nullopt where some root is not such a value (an op foldInteger
    // does not know, a value from outside, a chain deeper than kMaxDepth).
    static std::optional<Tape> build(KernelLowering& lowering, llvm::ArrayRef<Value> roots,
                                     llvm::ArrayRef<Value> seeds, Value stepping,
                                     mlir::Operation* alsoIn) {
      Tape tape;
      llvm::DenseMap<Value, int> slots;
      for (Value seed : seeds) {
        slots[seed] = static_cast<int>(tape.entries_.size());
        if (seed == stepping) tape.steppingSlot_ = slots[seed];
        tape.entries_.push_back({nullptr, {}, 0, seed == stepping});
      }
      std::function<std::optional<int>(Value, int)> add =
          [&](Value v, int depth) -> std::optional<int> {
        if (auto it = slots.find(v); it != slots.end()) return it->second;
        mlir::Operation* def = v.getDefiningOp();
        constexpr int kMaxDepth = 64;
        if (!def || depth > kMaxDepth || def->getNumResults() != 1 ||
            (def->getBlock() != &lowering.f_.getBody().front() &&
             !(alsoIn && alsoIn->isProperAncestor(def)))) {
          return std::nullopt;
        }
        unsigned width = 0;
        if (v.getType().isIndex()) width = mlir::IndexType::kInternalStorageBitWidth;
        if (auto integer = llvm::dyn_cast<mlir::IntegerType>(v.getType())) {
          width = integer.getWidth();
        }
        if (width == 0) return std::nullopt;
        Entry entry{def, {}, width, false};
        if (auto constant = llvm::dyn_cast<mlir::arith::ConstantOp>(def)) {
          auto attr = llvm::dyn_cast<mlir::IntegerAttr>(constant.getValue());
          if (!attr || attr.getValue().getBitWidth() != width) return std::nullopt;
        } else if (!llvm::isa<mlir::gpu::ThreadIdOp>(def)) {
          for (Value operand : def->getOperands()) {
            std::optional<int> slot = add(operand, depth + 1);
            if (!slot) return std::nullopt;
            entry.operands.push_back(*slot);
            entry.stepping |= tape.entries_[*slot].stepping;
          }
        }
        slots[v] = static_cast<int>(tape.entries_.size());
        tape.entries_.push_back(std::move(entry));
        return slots[v];
      };
      for (Value root : roots) {
        std::optional<int> slot = add(root, 0);
        if (!slot) return std::nullopt;
        tape.roots_.push_back(*slot);
      }
      for (auto [i, entry] : llvm::enumerate(tape.entries_)) {
        if (entry.op) (entry.stepping ? tape.steps_ : tape.fixed_).push_back(static_cast<int>(i));
      }
      tape.values_.resize(tape.entries_.size());
      return tape;
    }

    // Sets the seeds (in build's order) and evaluates the slots that do
    // not depend on the stepping one, at thread `t`; false where an op
    // does not fold (a division by zero).
    bool start(const std::array<int64_t, 3>& threads, int64_t t,
               llvm::ArrayRef<llvm::APInt> seeds) {
      for (auto [i, seed] : llvm::enumerate(seeds)) values_[i] = seed;
      return evaluate(fixed_, threads, t);
    }
    // Sets the stepping seed and evaluates what depends on it.
    bool step(const std::array<int64_t, 3>& threads, int64_t t, const llvm::APInt& value) {
      values_[steppingSlot_] = value;
      return evaluate(steps_, threads, t);
    }
    const llvm::APInt& root(size_t i) const { return values_[roots_[i]]; }

   private:
    struct Entry {
      mlir::Operation* op;  // null: a seed
      SmallVector<int, 3> operands;
      unsigned width;
      bool stepping;
    };

    bool evaluate(llvm::ArrayRef<int> order, const std::array<int64_t, 3>& threads, int64_t t) {
      SmallVector<llvm::APInt, 3> operands;
      for (int i : order) {
        const Entry& entry = entries_[i];
        if (auto id = llvm::dyn_cast<mlir::gpu::ThreadIdOp>(entry.op)) {
          values_[i] =
              llvm::APInt(entry.width, idAt(t, threads, static_cast<int>(id.getDimension())));
          continue;
        }
        if (auto constant = llvm::dyn_cast<mlir::arith::ConstantOp>(entry.op)) {
          values_[i] = llvm::cast<mlir::IntegerAttr>(constant.getValue()).getValue();
          continue;
        }
        operands.clear();
        for (int o : entry.operands) operands.push_back(values_[o]);
        std::optional<llvm::APInt> value = foldInteger(entry.op, operands, entry.width);
        if (!value || value->getBitWidth() != entry.width) return false;
        values_[i] = std::move(*value);
      }
      return true;
    }

    SmallVector<Entry> entries_;
    SmallVector<int> roots_, fixed_, steps_;
    SmallVector<llvm::APInt> values_;
    int steppingSlot_ = -1;
  };

  // The x, y or z id within a linear id over `counts` (x fastest); for the
  // thread id, simplifyLaneLoop splits the divisions afterwards.
  static Value idOf(mlir::OpBuilder& b, Value linear, const std::array<int64_t, 3>& counts,
                    mlir::gpu::Dimension dimension) {
    int d = static_cast<int>(dimension);
    mlir::Location loc = linear.getLoc();
    if (counts[d] == 1) return b.create<mlir::arith::ConstantIndexOp>(loc, 0);
    int64_t below = 1;
    for (int i = 0; i < d; ++i) below *= counts[i];
    Value id = linear;
    if (below > 1) {
      id = b.create<mlir::arith::DivUIOp>(loc, id,
                                          b.create<mlir::arith::ConstantIndexOp>(loc, below));
    }
    bool outermost = llvm::all_of(llvm::ArrayRef(counts).drop_front(d + 1),
                                  [](int64_t n) { return n == 1; });
    if (!outermost) {
      id = b.create<mlir::arith::RemUIOp>(loc, id,
                                          b.create<mlir::arith::ConstantIndexOp>(loc, counts[d]));
    }
    return id;
  }

  // The linear id of the block that runs `visit`-th (Grid::blockAt).
  Value blockAt(mlir::OpBuilder& b, Value visit) {
    if (grid_.order.empty()) return visit;
    mlir::Location loc = visit.getLoc();
    Value id;
    int64_t below = 1;
    for (int64_t d = static_cast<int64_t>(grid_.order.size()) - 1; d >= 0; --d) {
      int64_t dim = grid_.order[d], n = grid_.tiles[dim];
      if (n == 1) continue;
      Value at = visit;
      if (below > 1) at = b.create<mlir::arith::DivUIOp>(loc, at, indexConstant(below));
      if (below * n < grid_.blocks[0]) {
        at = b.create<mlir::arith::RemUIOp>(loc, at, indexConstant(n));
      }
      below *= n;
      int64_t stride = grid_.strideOf(dim);
      if (stride > 1) at = b.create<mlir::arith::MulIOp>(loc, at, indexConstant(stride));
      id = id ? b.create<mlir::arith::AddIOp>(loc, id, at).getResult() : at;
    }
    return id ? id : indexConstant(0);
  }

  // A small vector of integers or floats is kept as one array per element
  // (structure of arrays): a thread loop then reads and writes scalars,
  // which LLVM's loop vectorizer widens across the threads (it leaves
  // loops on vector-typed values alone).
  static int64_t componentsOf(mlir::Type t) {
    auto vector = llvm::dyn_cast<mlir::VectorType>(t);
    if (!vector || vector.getRank() != 1 || vector.isScalable() ||
        !(vector.getElementType().isIntOrFloat() && !vector.getElementType().isIndex()) ||
        vector.getNumElements() > kMaxComponents) {
      return 1;
    }
    return vector.getNumElements();
  }

  // Spilled values are stored as LLVM-compatible types (index as i64, a
  // complex value as an array of its two parts, a vector's elements apart).
  // How a thread's value is kept in its slots. A pred a byte (as
  // -xla-gpu-lower-tensors keeps pred memory): LLVM's loop vectorizer
  // leaves a lane loop of i1 loads and stores scalar (they are bits in a
  // vector), and a pred row reduction's lanes' values ran 5.5x XLA:CPU.
  static mlir::Type storageType(mlir::Type t) {
    if (auto complex = llvm::dyn_cast<mlir::ComplexType>(t)) {
      return mlir::LLVM::LLVMArrayType::get(complex.getElementType(), 2);
    }
    if (componentsOf(t) > 1) return storageType(llvm::cast<mlir::VectorType>(t).getElementType());
    if (t.isInteger(1)) return mlir::IntegerType::get(t.getContext(), 8);
    return t.isIndex() ? mlir::IntegerType::get(t.getContext(), 64) : t;
  }

  // `v` (an element of a thread's value) as its slot keeps it, and back.
  static Value toSlot(mlir::OpBuilder& b, Value v) {
    if (!v.getType().isInteger(1)) return v;
    return b.create<mlir::arith::ExtUIOp>(v.getLoc(), b.getI8Type(), v);
  }
  static Value fromSlot(mlir::OpBuilder& b, Value v, mlir::Type type) {
    if (!type.isInteger(1)) return v;
    return b.create<mlir::arith::TruncIOp>(v.getLoc(), type, v);
  }

  // Element `component` of `value` for thread `tid`: slots [component]
  // [block in the batch][thread].
  Value slotAt(mlir::OpBuilder& b, Value value, Value tid, int64_t component = 0) {
    mlir::Location loc = value.getLoc();
    auto index = [&](int64_t v) -> Value { return b.create<mlir::arith::ConstantIndexOp>(loc, v); };
    if (blockInBatch_) {
      // The block's slots within the batch's.
      tid = b.create<mlir::arith::AddIOp>(
          loc, b.create<mlir::arith::MulIOp>(loc, blockInBatch_, index(slotsOf(value))), tid);
    }
    if (component > 0) {
      tid = b.create<mlir::arith::AddIOp>(loc, tid, index(component * slotsOf(value) * batch_));
    }
    Value i = b.create<mlir::arith::IndexCastOp>(loc, b.getI64Type(), tid);
    return b.create<mlir::LLVM::GEPOp>(loc, mlir::LLVM::LLVMPointerType::get(b.getContext()),
                                       storageType(value.getType()), spillSlots_[value],
                                       mlir::ValueRange{i});
  }

  // The current block's copy of the shared buffer `name`.
  Value sharedAt(mlir::OpBuilder& b, llvm::StringRef name) {
    Value base = sharedSlots_[name];
    if (!blockInBatch_) return base;
    mlir::Location loc = base.getLoc();
    Value i = b.create<mlir::arith::IndexCastOp>(loc, b.getI64Type(), blockInBatch_);
    return b.create<mlir::LLVM::GEPOp>(loc, mlir::LLVM::LLVMPointerType::get(b.getContext()),
                                       sharedTypes_[name], base, mlir::ValueRange{i});
  }

  Value reload(mlir::OpBuilder& b, Value value, Value tid) {
    mlir::Location loc = value.getLoc();
    if (int64_t group = uniformGroups_.lookup(value.getDefiningOp())) {
      // Computed by the group's first thread only (see uniformGroupOf).
      if (group >= grid_.numThreads()) {
        tid = indexConstant(0);
      } else {
        Value g = indexConstant(group);
        tid = b.create<mlir::arith::MulIOp>(loc, b.create<mlir::arith::DivUIOp>(loc, tid, g), g);
      }
    }
    if (int64_t n = componentsOf(value.getType()); n > 1) {
      SmallVector<Value> elements;
      mlir::Type element = llvm::cast<mlir::VectorType>(value.getType()).getElementType();
      for (int64_t i = 0; i < n; ++i) {
        elements.push_back(fromSlot(b,
                                    b.create<mlir::LLVM::LoadOp>(loc, storageType(value.getType()),
                                                                 slotAt(b, value, tid, i)),
                                    element));
      }
      return b.create<mlir::vector::FromElementsOp>(
          loc, llvm::cast<mlir::VectorType>(value.getType()), elements);
    }
    Value loaded = fromSlot(b,
                            b.create<mlir::LLVM::LoadOp>(loc, storageType(value.getType()),
                                                         slotAt(b, value, tid)),
                            value.getType());
    if (value.getType().isIndex()) {
      loaded = b.create<mlir::arith::IndexCastOp>(loc, value.getType(), loaded);
    }
    if (auto complex = llvm::dyn_cast<mlir::ComplexType>(value.getType())) {
      Value re = b.create<mlir::LLVM::ExtractValueOp>(loc, loaded, llvm::ArrayRef<int64_t>{0});
      Value im = b.create<mlir::LLVM::ExtractValueOp>(loc, loaded, llvm::ArrayRef<int64_t>{1});
      loaded = b.create<mlir::complex::CreateOp>(loc, complex, re, im);
    }
    return loaded;
  }

  void spill(mlir::OpBuilder& b, Value original, Value computed, Value tid) {
    mlir::Location loc = original.getLoc();
    if (int64_t n = componentsOf(original.getType()); n > 1) {
      for (int64_t i = 0; i < n; ++i) {
        Value element = b.create<mlir::vector::ExtractOp>(loc, computed, llvm::ArrayRef<int64_t>{i});
        b.create<mlir::LLVM::StoreOp>(loc, toSlot(b, element), slotAt(b, original, tid, i));
      }
      return;
    }
    Value stored = computed;
    if (computed.getType().isIndex()) {
      stored = b.create<mlir::arith::IndexCastOp>(loc, b.getI64Type(), computed);
    }
    if (llvm::isa<mlir::ComplexType>(computed.getType())) {
      Value parts = b.create<mlir::LLVM::UndefOp>(loc, storageType(computed.getType()));
      parts = b.create<mlir::LLVM::InsertValueOp>(
          loc, parts, b.create<mlir::complex::ReOp>(loc, computed), llvm::ArrayRef<int64_t>{0});
      stored = b.create<mlir::LLVM::InsertValueOp>(
          loc, parts, b.create<mlir::complex::ImOp>(loc, computed), llvm::ArrayRef<int64_t>{1});
    }
    b.create<mlir::LLVM::StoreOp>(loc, toSlot(b, stored), slotAt(b, original, tid));
  }

  // Makes every value `op` (and its regions) uses available in `mapping`:
  // arguments, per-thread reloads, or recomputed constants and ids.
  // With `operandsOnly`, those of `op` itself, not of its regions.
  mlir::LogicalResult provideOperands(mlir::OpBuilder& b, mlir::Operation* op,
                                      mlir::IRMapping& mapping, Value tid, Value bid,
                                      bool operandsOnly = false) {
    mlir::LogicalResult result = mlir::success();
    op->walk([&](mlir::Operation* inner) {
      if (operandsOnly && inner != op) return;
      for (Value v : inner->getOperands()) {
        if (mapping.contains(v)) continue;
        if (argMap_.contains(v)) {
          mapping.map(v, argMap_.lookup(v));
          continue;
        }
        mlir::Operation* def = v.getDefiningOp();
        if (!def || def->getBlock() != &f_.getBody().front()) continue;  // local to `op`
        if (recomputed_.contains(def)) {
          if (mlir::failed(emitOp(b, def, mapping, tid, bid))) result = mlir::failure();
        } else if (auto shuffle = llvm::dyn_cast<mlir::gpu::ShuffleOp>(def)) {
          auto results = shuffleAt(b, shuffle, Lane{}, bid, mapping);
          if (mlir::failed(results)) {
            result = mlir::failure();
            continue;
          }
          mapping.map(shuffle.getShuffleResult(), results->first);
          mapping.map(shuffle.getValid(), results->second);
        } else if (spilled_.contains(v)) {
          mapping.map(v, reload(b, v, tid));
        }
      }
    });
    return result;
  }

  // The divisions in the thread loop just emitted, once its body is in
  // place: those of the thread id by constants (index maps, guards, nested
  // regions) split by the period, then the quotient-step cut.
  // A phase's loop (`parts`) is also split into its parts first
  // (splitIntoParts), each then cut at its own guards.
  void simplifyLaneLoop(bool parts = false) {
    splitLaneDivisions();
    mlir::scf::ForOp stepped = splitAtQuotientStep();
    for (mlir::scf::ForOp loop : {lanes_.loop, stepped}) {
      if (!loop) continue;
      if (!parts) {
        splitAtGuards(loop);
        continue;
      }
      for (mlir::scf::ForOp part : splitIntoParts(loop)) splitAtGuards(part);
    }
  }

  // A lane loop whose body stores in independent parts (a concatenate's
  // operands, each a store, most under a guard of the lane: the operand's
  // range) as one loop a part, in their order, so that each is cut at its
  // own guards only: cut at all of them together, a part was copied into
  // every piece its guard left it in (the concatenate's exp into 4 of
  // 6). Each lane runs its parts in order still; what changes is that a
  // lane's later part runs after every lane's earlier ones, as threads
  // without a barrier between may run on the GPU. Only parts that read
  // memory nothing writes while the kernel runs (invariant loads: the
  // kernel's inputs) and store without atomics or calls, under scf.if at
  // most; one guard of the lane at least, or there is nothing to gain.
  SmallVector<mlir::scf::ForOp> splitIntoParts(mlir::scf::ForOp loop) {
    SmallVector<mlir::scf::ForOp> parts = {loop};
    if (loop.getNumRegionIterArgs() != 0) return parts;
    mlir::Block* body = loop.getBody();
    auto inside = [&](Value v) { return loop.getRegion().isAncestor(v.getParentRegion()); };
    // Ops a part is free to repeat: no effects, or a load of an input.
    auto repeatable = [](mlir::Operation* op) {
      return isInputLoad(op) || (op->getNumRegions() == 0 && mlir::isMemoryEffectFree(op));
    };
    SmallVector<size_t> roots;  // positions in the body
    bool guarded = false;
    for (auto [position, op] : llvm::enumerate(body->without_terminator())) {
      if (repeatable(&op)) continue;
      auto ifOp = llvm::dyn_cast<mlir::scf::IfOp>(op);
      if (!(ifOp && ifOp.getNumResults() == 0) && !llvm::isa<mlir::LLVM::StoreOp>(op)) {
        return parts;
      }
      bool plain = !op.walk([&](mlir::Operation* inner) {
                       auto store = llvm::dyn_cast<mlir::LLVM::StoreOp>(inner);
                       bool ok = repeatable(inner) || (store && isPlain(store)) ||
                                 llvm::isa<mlir::scf::IfOp, mlir::scf::YieldOp>(inner);
                       return ok ? mlir::WalkResult::advance() : mlir::WalkResult::interrupt();
                     }).wasInterrupted();
      if (!plain) return parts;
      guarded |= ifOp && inside(ifOp.getCondition());
      roots.push_back(position);
    }
    if (roots.size() < 2 || !guarded) return parts;
    mlir::OpBuilder b(loop);
    b.setInsertionPointAfter(loop);
    for (size_t i = 1; i < roots.size(); ++i) {
      auto part = llvm::cast<mlir::scf::ForOp>(b.clone(*loop));
      b.setInsertionPointAfter(part);
      parts.push_back(part);
    }
    // Part i keeps root i and what it uses.
    for (size_t i = 0; i < roots.size(); ++i) {
      mlir::Block* partBody = parts[i].getBody();
      SmallVector<mlir::Operation*> others;
      for (auto [position, op] : llvm::enumerate(partBody->without_terminator())) {
        if (position != roots[i] && llvm::is_contained(roots, position)) others.push_back(&op);
      }
      for (mlir::Operation* op : others) op->erase();
      // Then what no longer has a use, last ops first.
      SmallVector<mlir::Operation*> ops;
      for (mlir::Operation& op : partBody->without_terminator()) ops.push_back(&op);
      for (mlir::Operation* op : llvm::reverse(ops)) {
        if (op->use_empty() && repeatable(op)) op->erase();
      }
    }
    return parts;
  }

  // A guard of splitAtGuards: true where m * lane + base is below `t` (or
  // from it on).
  struct Guard {
    mlir::arith::CmpIOp cmp;
    int64_t t;
    bool below;
  };

  // At most this many ops are made again for fissionAtGuard's second loop
  // (index arithmetic, a row's max loaded again).
  static constexpr int kMaxFissionSlice = 24;

  // A lane loop whose guards (of one cut) only pick the results of scf.if
  // ops of its body, each result stored (its one use) -- a thread's last
  // step along a row, which the lanes below the row's end take:
  //
  //   %acc = <the steps every lane takes>
  //   %r = scf.if %guard -> f32 { <the last step>; scf.yield %next }
  //        else { scf.yield %acc }
  //   llvm.store %r, %slot
  //
  // runs as two loops: the whole loop without the ifs (every lane stores
  // its %acc), then a loop over the guard's lanes alone that loads %acc
  // from where the first stored it, runs the if's then-region and stores
  // its result there. Each lane runs its steps in their order still.
  // splitAtGuards would copy the whole body per piece: over rows of 100
  // f32, a warp's 4 steps, the lanes below 4 ran 4 steps in one loop and
  // the others 3 in another -- 10 exps a row where this runs 7 (6 of
  // them 16 lanes wide). Only where the second loop's ops are few
  // (kMaxFissionSlice), effect-free, or plain loads of memory the loop
  // does not write; and nothing after the ifs loads what they store.
  bool fissionAtGuard(mlir::scf::ForOp loop, llvm::ArrayRef<Guard> guards, Value cut) {
    mlir::Block* body = loop.getBody();
    const bool below = guards.front().below;
    SmallVector<mlir::scf::IfOp> ifs;
    for (const Guard& g : guards) {
      if (g.below != below) return false;
      for (mlir::Operation* user : g.cmp->getUsers()) {
        auto ifOp = llvm::dyn_cast<mlir::scf::IfOp>(user);
        if (!ifOp || ifOp->getBlock() != body || ifOp.getNumResults() == 0 ||
            !ifOp.elseBlock()) {
          return false;
        }
        if (!llvm::is_contained(ifs, ifOp)) ifs.push_back(ifOp);
      }
    }
    llvm::sort(ifs, [](mlir::scf::IfOp a, mlir::scf::IfOp b) {
      return a->isBeforeInBlock(b);
    });
    // Only where the lanes' unguarded part computes (float arithmetic:
    // the earlier steps): where it only moves values (a guarded walk's
    // slot loaded and stored again), the pieces run nothing twice.
    bool computes = llvm::any_of(body->without_terminator(), [&](mlir::Operation& op) {
      if (llvm::isa<mlir::arith::ConstantOp>(op) ||
          !llvm::isa_and_nonnull<mlir::arith::ArithDialect, mlir::math::MathDialect>(
              op.getDialect())) {
        return false;
      }
      return llvm::any_of(op.getResultTypes(), [](mlir::Type t) {
        return mlir::isa<mlir::FloatType>(mlir::getElementTypeOrSelf(t));
      });
    });
    if (!computes) return false;
    // What the loop writes: the bases of its stores.
    llvm::SmallPtrSet<mlir::Value, 4> written;
    body->walk([&](mlir::LLVM::StoreOp store) { written.insert(baseOf(store.getAddr())); });
    // Each if: a then-region of effect-free ops, plain loads of what the
    // loop does not write and plain stores (a step's element written out),
    // an else yielding values from before it, each result stored once,
    // after it.
    SmallVector<SmallVector<mlir::LLVM::StoreOp>> stores;
    llvm::SmallPtrSet<mlir::Value, 4> stored;
    for (mlir::scf::IfOp ifOp : ifs) {
      bool plain = !ifOp.getThenRegion()
                        .walk([&](mlir::Operation* op) {
                          auto load = llvm::dyn_cast<mlir::LLVM::LoadOp>(op);
                          auto store = llvm::dyn_cast<mlir::LLVM::StoreOp>(op);
                          if (store && isPlain(store)) stored.insert(baseOf(store.getAddr()));
                          bool ok = (load && isPlain(load) &&
                                     !written.contains(baseOf(load.getAddr()))) ||
                                    (store && isPlain(store)) ||
                                    llvm::isa<mlir::scf::YieldOp>(op) ||
                                    (op->getNumRegions() == 0 && mlir::isMemoryEffectFree(op));
                          return ok ? mlir::WalkResult::advance() : mlir::WalkResult::interrupt();
                        })
                        .wasInterrupted();
      if (!plain) return false;
      auto& mine = stores.emplace_back();
      for (Value result : ifOp.getResults()) {
        if (!result.hasOneUse()) return false;
        auto store = llvm::dyn_cast<mlir::LLVM::StoreOp>(*result.getUsers().begin());
        if (!store || store->getBlock() != body || store.getValue() != result ||
            !isPlain(store)) {
          return false;
        }
        mine.push_back(store);
        stored.insert(baseOf(store.getAddr()));
      }
    }
    // Nothing after the first if reads what the ifs' results go to.
    for (mlir::Operation* op = ifs.front(); op; op = op->getNextNode()) {
      bool reads = op->walk([&](mlir::LLVM::LoadOp load) {
                       return stored.contains(baseOf(load.getAddr()))
                                  ? mlir::WalkResult::interrupt()
                                  : mlir::WalkResult::advance();
                     }).wasInterrupted();
      if (reads) return false;
    }
    // The second loop: over the guard's lanes, marked as `loop` is.
    mlir::OpBuilder b(loop);
    b.setInsertionPointAfter(loop);
    auto tail = b.create<mlir::scf::ForOp>(loop.getLoc(), below ? loop.getLowerBound() : cut,
                                           below ? cut : loop.getUpperBound(), loop.getStep());
    tail->setDiscardableAttrs(loop->getDiscardableAttrDictionary());
    mlir::OpBuilder tb = mlir::OpBuilder::atBlockTerminator(tail.getBody());
    mlir::IRMapping mapping;
    mapping.map(loop.getInductionVar(), tail.getInductionVar());
    int made = 0;
    std::function<bool(Value)> provide = [&](Value v) -> bool {
      if (mapping.contains(v)) return true;
      mlir::Operation* def = v.getDefiningOp();
      // Block arguments (the lane is mapped) and values from before the
      // loop are the same in both.
      if (!def || !loop->isAncestor(def)) return true;
      if (def->getBlock() != body || def->getNumRegions() != 0 || ++made > kMaxFissionSlice) {
        return false;
      }
      auto load = llvm::dyn_cast<mlir::LLVM::LoadOp>(def);
      if (load ? (!isPlain(load) || written.contains(baseOf(load.getAddr())))
               : !mlir::isMemoryEffectFree(def)) {
        return false;
      }
      for (Value operand : def->getOperands()) {
        if (!provide(operand)) return false;
      }
      tb.clone(*def, mapping);
      return true;
    };
    bool ok = true;
    for (auto [ifOp, mine] : llvm::zip(ifs, stores)) {
      mlir::Operation* elseYield = ifOp.elseBlock()->getTerminator();
      // The value each result would have had without the step: loaded
      // from where the first loop stores it.
      for (auto [store, kept] : llvm::zip(mine, elseYield->getOperands())) {
        if (!(ok = provide(store.getAddr()))) break;
        if (!mapping.contains(kept)) {
          auto reload = tb.create<mlir::LLVM::LoadOp>(store.getLoc(), kept.getType(),
                                                      mapping.lookup(store.getAddr()));
          mapping.map(kept, reload.getResult());
        }
      }
      if (!ok) break;
      ifOp.getThenRegion().walk([&](mlir::Operation* op) {
        for (Value v : op->getOperands()) {
          if (!ifOp->isAncestor(v.getParentBlock()->getParentOp())) ok = ok && provide(v);
        }
      });
      if (!ok) break;
      mlir::Operation* thenYield = ifOp.thenBlock()->getTerminator();
      for (mlir::Operation& op : ifOp.thenBlock()->without_terminator()) tb.clone(op, mapping);
      for (auto [store, next] : llvm::zip(mine, thenYield->getOperands())) {
        mlir::IRMapping at = mapping;
        at.map(store.getValue(), mapping.lookupOrDefault(next));
        tb.clone(*store, at);
      }
    }
    if (!ok) {
      tail.erase();
      return false;
    }
    // The first loop: every lane without the steps.
    for (mlir::scf::IfOp ifOp : ifs) {
      ifOp.replaceAllUsesWith(ifOp.elseBlock()->getTerminator()->getOperands());
      ifOp.erase();
    }
    for (Guard g : guards) {
      if (g.cmp->use_empty()) g.cmp.erase();
    }
    return true;
  }

  // Comparisons of the lane with constant bounds (a concatenate's operand
  // ranges, a pad's edges, a partial tile's end): in a lane loop,
  // `lane + offset <cmp> K`, the offset invariant, is true on one side of a
  // lane known before the loop. The loop is cut at those lanes (those of
  // one offset, ordered by K), and in each piece each such comparison is a
  // constant: the branches leave the loop body, which LLVM then
  // vectorizes. At most kMaxGuardCuts cuts (the body is copied per piece).
  static constexpr int kMaxGuardCuts = 3;
  // Guards of another offset than the first one's (a pad's column beside
  // the kernel's last element: (block * 128 + lane) <= 132354 and
  // (r0 + lane) + 1 >= 3) cut each piece again, at most this many rounds:
  // one round left the pad's guard in its loop, whose conditional load
  // kept it scalar (a pad of a reversed strided slice, f32[515,257]: 3x
  // XLA:CPU's time).
  static constexpr int kMaxGuardRounds = 2;

  void splitAtGuards(mlir::scf::ForOp loop, int round = 1) {
    auto step = mlir::getConstantIntValue(loop.getStep());
    if (!step || *step != 1 || loop.getNumRegionIterArgs() != 0) return;
    Value iv = loop.getInductionVar();
    auto inside = [&](Value v) { return loop.getRegion().isAncestor(v.getParentRegion()); };
    // Constants of index arithmetic far from overflow in what follows.
    auto small = [](std::optional<int64_t> k) { return k && std::abs(*k) < (int64_t{1} << 40); };
    // v = m * iv + base + c: base a sum of invariant terms (or none: a
    // partial tile's end, block * threads + step + lane, has two), c and
    // m > 0 constants (m: the lanes' stride, e.g. a thread's two columns).
    struct Affine {
      SmallVector<Value, 2> base;
      int64_t c = 0;
      int64_t m = 1;
    };
    std::function<std::optional<Affine>(Value, int)> match =
        [&](Value v, int depth) -> std::optional<Affine> {
      if (v == iv) return Affine{};
      if (depth == 0) return std::nullopt;
      if (auto add = v.getDefiningOp<mlir::arith::AddIOp>()) {
        for (int i = 0; i < 2; ++i) {
          Value other = add->getOperand(1 - i);
          auto k = mlir::getConstantIntValue(other);
          if (k && !small(k)) continue;
          if (!k && inside(other)) continue;
          auto a = match(add->getOperand(i), depth - 1);
          if (!a) continue;
          if (k) return Affine{a->base, a->c + *k, a->m};
          a->base.push_back(other);
          return a;
        }
        return std::nullopt;
      }
      if (auto mul = v.getDefiningOp<mlir::arith::MulIOp>()) {
        for (int i = 0; i < 2; ++i) {
          auto k = mlir::getConstantIntValue(mul->getOperand(1 - i));
          if (!small(k) || *k <= 0) continue;
          auto a = match(mul->getOperand(i), depth - 1);
          int64_t c, m;
          if (a && a->base.empty() && !__builtin_mul_overflow(a->c, *k, &c) &&
              !__builtin_mul_overflow(a->m, *k, &m) && small(c) && small(m)) {
            return Affine{{}, c, m};
          }
        }
        return std::nullopt;
      }
      if (auto sub = v.getDefiningOp<mlir::arith::SubIOp>()) {
        auto k = mlir::getConstantIntValue(sub.getRhs());
        auto a = small(k) ? match(sub.getLhs(), depth - 1) : std::nullopt;
        if (a) return Affine{a->base, a->c - *k, a->m};
      }
      return std::nullopt;
    };
    SmallVector<Guard> guards;
    SmallVector<Value, 2> base;
    // The same sum of terms, in any order.
    auto sameSum = [](llvm::ArrayRef<Value> x, llvm::ArrayRef<Value> y) {
      return x.size() == y.size() && llvm::all_of(x, [&](Value term) {
               return llvm::count(x, term) == llvm::count(y, term);
             });
    };
    int64_t stride = 1;
    bool chosen = false;
    bool otherOffsets = false;
    loop.getBody()->walk([&](mlir::arith::CmpIOp cmp) {
      if (!cmp.getLhs().getType().isIndex()) return;
      auto pred = cmp.getPredicate();
      Value x = cmp.getLhs();
      auto k = mlir::getConstantIntValue(cmp.getRhs());
      using P = mlir::arith::CmpIPredicate;
      if (!k) {  // K <cmp> x  <=>  x <swapped cmp> K
        k = mlir::getConstantIntValue(cmp.getLhs());
        x = cmp.getRhs();
        switch (pred) {
          case P::slt: pred = P::sgt; break;
          case P::sle: pred = P::sge; break;
          case P::sgt: pred = P::slt; break;
          case P::sge: pred = P::sle; break;
          default: return;
        }
      }
      if (!small(k)) return;
      auto a = match(x, 6);
      if (!a) return;
      if (!chosen) {
        base = a->base;
        stride = a->m;
        chosen = true;
      }
      if (!sameSum(a->base, base) || a->m != stride) {
        otherOffsets = true;
        return;
      }
      switch (pred) {
        case P::slt: guards.push_back({cmp, *k - a->c, true}); break;
        case P::sle: guards.push_back({cmp, *k - a->c + 1, true}); break;
        case P::sgt: guards.push_back({cmp, *k - a->c + 1, false}); break;
        case P::sge: guards.push_back({cmp, *k - a->c, false}); break;
        default: break;
      }
    });
    if (guards.empty()) return;
    // m * iv + base with base a multiple of m is below t exactly when it
    // is below t rounded up to a multiple of m: guards that differ only
    // below m (a thread's two columns, 2 * lane and 2 * lane + 1) cut at
    // one lane, and the loop is copied once fewer.
    std::function<bool(Value, int)> multipleOfStride = [&](Value v, int depth) -> bool {
      if (!v) return true;
      if (auto k = mlir::getConstantIntValue(v)) return *k % stride == 0;
      if (depth == 0) return false;
      if (auto mul = v.getDefiningOp<mlir::arith::MulIOp>()) {
        return multipleOfStride(mul.getLhs(), depth - 1) ||
               multipleOfStride(mul.getRhs(), depth - 1);
      }
      if (auto add = v.getDefiningOp<mlir::arith::AddIOp>()) {
        return multipleOfStride(add.getLhs(), depth - 1) &&
               multipleOfStride(add.getRhs(), depth - 1);
      }
      return false;
    };
    if (stride != 1 &&
        llvm::all_of(base, [&](Value term) { return multipleOfStride(term, 4); })) {
      for (Guard& g : guards) g.t = llvm::divideCeilSigned(g.t, stride) * stride;
    }
    SmallVector<int64_t> cuts;
    for (const Guard& g : guards) cuts.push_back(g.t);
    llvm::sort(cuts);
    cuts.erase(std::unique(cuts.begin(), cuts.end()), cuts.end());
    if (static_cast<int>(cuts.size()) > kMaxGuardCuts) return;
    mlir::Location loc = loop.getLoc();
    mlir::OpBuilder b(loop);
    // The cut lanes, ceil((t - base) / m), clamped into the loop's range
    // (ascending: one base, one m).
    SmallVector<Value> bounds = {loop.getLowerBound()};
    for (int64_t t : cuts) {
      Value at = b.create<mlir::arith::ConstantIndexOp>(loc, t);
      for (Value term : base) at = b.create<mlir::arith::SubIOp>(loc, at, term);
      if (stride != 1) {
        at = b.create<mlir::arith::CeilDivSIOp>(
            loc, at, b.create<mlir::arith::ConstantIndexOp>(loc, stride));
      }
      at = b.create<mlir::arith::MinSIOp>(loc, loop.getUpperBound(), at);
      bounds.push_back(b.create<mlir::arith::MaxSIOp>(loc, bounds.back(), at));
    }
    bounds.push_back(loop.getUpperBound());
    if (cuts.size() == 1 && fissionAtGuard(loop, guards, bounds[1])) return;
    SmallVector<std::pair<mlir::scf::ForOp, mlir::IRMapping>> pieces;
    b.setInsertionPointAfter(loop);
    for (size_t p = 1; p <= cuts.size(); ++p) {
      mlir::IRMapping copies;
      auto piece = llvm::cast<mlir::scf::ForOp>(b.clone(*loop, copies));
      piece.getLowerBoundMutable().assign(bounds[p]);
      piece.getUpperBoundMutable().assign(bounds[p + 1]);
      pieces.push_back({piece, std::move(copies)});
      b.setInsertionPointAfter(piece);
    }
    loop.getUpperBoundMutable().assign(bounds[1]);
    auto fold = [&](mlir::arith::CmpIOp cmp, bool value) {
      mlir::OpBuilder at(cmp);
      cmp.getResult().replaceAllUsesWith(
          at.create<mlir::arith::ConstantIntOp>(cmp.getLoc(), value, 1).getResult());
      cmp.erase();
    };
    for (Guard& g : guards) {
      size_t rank = llvm::find(cuts, g.t) - cuts.begin();
      // Piece p runs the lanes between cut p - 1 and cut p: below cut
      // `rank` exactly when p <= rank.
      for (size_t p = 1; p <= cuts.size(); ++p) {
        auto copy = llvm::cast<mlir::arith::CmpIOp>(
            pieces[p - 1].second.lookup(g.cmp.getOperation()));
        fold(copy, (p <= rank) == g.below);
      }
      fold(g.cmp, g.below);
    }
    if (otherOffsets && round < kMaxGuardRounds) {
      splitAtGuards(loop, round + 1);
      for (auto& piece : pieces) splitAtGuards(piece.first, round + 1);
    }
  }

  void splitLaneDivisions() {
    SmallVector<mlir::Operation*> divisions;
    // The constant c >= 0 of `v` = tid + c (a shuffle's source lane).
    auto pastTid = [&](Value v) -> std::optional<int64_t> {
      auto c = offsetFromLane(v, lanes_.tid);
      return c && *c >= 0 ? c : std::nullopt;
    };
    lanes_.loop.getBody()->walk([&](mlir::Operation* op) {
      if (llvm::isa<mlir::arith::DivUIOp, mlir::arith::RemUIOp>(op) &&
          pastTid(op->getOperand(0)) && mlir::getConstantIntValue(op->getOperand(1))) {
        divisions.push_back(op);
      }
    });
    for (mlir::Operation* op : divisions) {
      mlir::OpBuilder b(op);
      Value lane;
      if (int64_t c = *pastTid(op->getOperand(0)); c > 0) {
        lane = b.createOrFold<mlir::arith::AddIOp>(op->getLoc(), lanes_.lane, indexConstant(c));
      }
      std::optional<Value> split = splitDivision(b, *mlir::getConstantIntValue(op->getOperand(1)),
                                                 llvm::isa<mlir::arith::DivUIOp>(op), lane);
      if (!split) continue;
      op->getResult(0).replaceAllUsesWith(*split);
      op->erase();
    }
  }

  // The fewest lanes of a row that splitAtQuotientStep cuts a lane loop
  // into segments of, where the rows are shorter than the loop; and where
  // the lane loop runs inside a loop of steps (in the block's loop), whose
  // every step would divide each lane again: a sum over dimensions 0 and 2
  // of f32[8,16,32,24], a thread an output over 256 steps, its lanes rows
  // of 24, ran 66 us a call with the divisions, 18 us in segments. Where
  // each lane divides once, segments of 17-31 lanes ran as fast or slower
  // (an exp times a row's value over f32[8192,17]: 16.6 -> 19.2 us).
  static constexpr int64_t kMinSegmentLanes = 32;
  static constexpr int64_t kMinSegmentLanesInSteps = 16;

  // Divisions of an invariant plus the thread id by a constant d no lane
  // reaches (the loop emitter's (bl * 128 + th) / columns): as the lanes run,
  // the quotient steps up once, at a lane known before the loop. The lane
  // loop is cut there in two, in each of which quotient and remainder are
  // affine in the lane -- contiguous accesses, where one loop has a
  // division per element and gathers. Where d is less than the lanes (but
  // kMinSegmentLanes at least) the quotient may step several times: the
  // lanes run in a loop over their rows' segments, each a loop over one
  // row's lanes (a pad of rows of 258 over blocks of 512: 1.10 -> 0.36
  // ms). Divisions of the same by multiples of d (the index's higher
  // dimensions) step only where d's does: in each piece they are constants
  // too (a pad over f32[8,56,56,64], its rows of 3648 elements and its
  // batch of 207936, kept a division by 207936 an element: 0.68 -> 0.26
  // ms; a bf16 max pool's 4.4 -> 1.3 ms).
  // Returns the second loop (none when there is no such division, or when
  // the pieces are a loop's two iterations or segments).
  mlir::scf::ForOp splitAtQuotientStep() {
    mlir::scf::ForOp lanes = lanes_.loop;
    // The block's part of the index (the ids' arithmetic each phase
    // recomputes) out of the loop first.
    mlir::moveLoopInvariantCode(llvm::cast<mlir::LoopLikeOpInterface>(lanes.getOperation()));
    auto lo = mlir::getConstantIntValue(lanes.getLowerBound());
    auto hi = mlir::getConstantIntValue(lanes.getUpperBound());
    if (!lo || !hi || *lo < 0) return {};
    auto inside = [&](Value v) { return lanes.getRegion().isAncestor(v.getParentRegion()); };
    // The invariant index arithmetic under the loop's guards (a swizzle's
    // (lane + warp + 2 * step) mod 32 in a tile's scf.if) out too, where
    // it can be computed before the loop: ops without effects that are
    // safe to speculate, operands from outside.
    for (bool moved = true; moved;) {
      SmallVector<mlir::Operation*> invariant;
      lanes.getBody()->walk([&](mlir::Operation* op) {
        if (op->getParentOp() != lanes && op->getNumRegions() == 0 && op->getNumResults() == 1 &&
            mlir::isMemoryEffectFree(op) && mlir::isSpeculatable(op) &&
            !llvm::any_of(op->getOperands(), inside)) {
          invariant.push_back(op);
        }
      });
      for (mlir::Operation* op : invariant) op->moveBefore(lanes);
      moved = !invariant.empty();
    }
    // x = offset + tid or offset + lane (tid = base + lane), the offset a
    // sum of values invariant in the loop: its terms, and whether the base
    // is in x too.
    struct Offset {
      SmallVector<Value> terms;
      bool viaTid = false;
    };
    std::function<bool(Value, Offset&)> collect = [&](Value v, Offset& offset) -> bool {
      if (v == lanes_.tid || v == lanes_.lane) {
        offset.viaTid = v == lanes_.tid;
        return true;
      }
      auto add = v.getDefiningOp<mlir::arith::AddIOp>();
      if (!add || !inside(v)) return false;
      for (int i = 0; i < 2; ++i) {
        Value other = add->getOperand(1 - i);
        if (inside(other) || !collect(add->getOperand(i), offset)) continue;
        // Sums of invariants as their terms, so that two ways of adding
        // the same terms compare equal (sameTerms).
        std::function<void(Value)> addTerm = [&](Value t) {
          if (auto sum = t.getDefiningOp<mlir::arith::AddIOp>()) {
            addTerm(sum.getLhs());
            addTerm(sum.getRhs());
          } else {
            offset.terms.push_back(t);
          }
        };
        addTerm(other);
        return true;
      }
      return false;
    };
    auto offsetOf = [&](Value x) -> std::optional<Offset> {
      Offset offset;
      if (!collect(x, offset) || offset.terms.empty()) return std::nullopt;
      return offset;
    };
    // The divisions of one offset (the same terms, however the sums
    // associate: a vector's elements each have their own) by one divisor.
    auto sameTerms = [](const Offset& a, const Offset& b) {
      if (a.viaTid != b.viaTid || a.terms.size() != b.terms.size()) return false;
      SmallVector<Value> rest(b.terms);
      for (Value t : a.terms) {
        auto it = llvm::find_if(rest, [&](Value r) { return sameValue(t, r); });
        if (it == rest.end()) return false;
        rest.erase(it);
      }
      return true;
    };
    // Loops around the lane loop: the block's, then steps.
    int64_t enclosing = 0;
    for (mlir::Operation* p = lanes->getParentOp(); p; p = p->getParentOp()) {
      enclosing += llvm::isa<mlir::scf::ForOp>(p);
    }
    const int64_t leastSegment = enclosing >= 2 ? kMinSegmentLanesInSteps : kMinSegmentLanes;
    // (x / a) mod b of an offset x, a too small a divisor to cut at and
    // a b not, as (x mod a b) / a (for any x): a flip along W of an NHWC
    // image's (e / 3) mod 224 reads e mod 672 (the cut below makes it
    // affine in the lane), its quotient by 3 for the lane loop to step
    // (unrollAtLanePeriod): f32[16,224,224,3] 0.47 -> 0.16 ms a kernel call.
    const int64_t least = std::min(*hi - 1, leastSegment);
    SmallVector<mlir::arith::RemUIOp> nested;
    lanes.getBody()->walk([&](mlir::arith::RemUIOp rem) {
      auto div = rem.getLhs().getDefiningOp<mlir::arith::DivUIOp>();
      auto a = div ? mlir::getConstantIntValue(div.getRhs()) : std::nullopt;
      auto m = mlir::getConstantIntValue(rem.getRhs());
      if (a && m && *a <= kMaxSmallBodyLanePeriod && *a < least && *a * *m >= least &&
          offsetOf(div.getLhs())) {
        nested.push_back(rem);
      }
    });
    for (mlir::arith::RemUIOp rem : nested) {
      auto div = rem.getLhs().getDefiningOp<mlir::arith::DivUIOp>();
      mlir::OpBuilder at(rem);
      Value row = at.create<mlir::arith::RemUIOp>(
          rem.getLoc(), div.getLhs(),
          at.create<mlir::arith::ConstantIndexOp>(
              rem.getLoc(), *mlir::getConstantIntValue(div.getRhs()) *
                                *mlir::getConstantIntValue(rem.getRhs())));
      rem.replaceAllUsesWith(
          at.create<mlir::arith::DivUIOp>(rem.getLoc(), row, div.getRhs()).getResult());
      rem.erase();
    }
    std::optional<Offset> offset;
    int64_t d = 0;
    // Each division of the offset with its divisor's multiple of d.
    SmallVector<std::pair<mlir::Operation*, int64_t>> divisions;
    SmallVector<std::pair<mlir::Operation*, int64_t>> candidates;
    lanes.getBody()->walk([&](mlir::Operation* op) {
      if (!llvm::isa<mlir::arith::DivUIOp, mlir::arith::RemUIOp>(op)) return;
      // At most one step over the lanes: r0 + lane < 2 d for every
      // remainder r0 < d of the start and lane < hi, i.e. d >= hi - 1 (the
      // loop emitter's rows of 127 over blocks of 128 threads: a scalar
      // loop of a division an element before); more steps, rows of
      // kMinSegmentLanes at least, as segments.
      auto divisor = mlir::getConstantIntValue(op->getOperand(1));
      if (!divisor || *divisor < least) return;
      std::optional<Offset> own = offsetOf(op->getOperand(0));
      if (!own) return;
      if (!offset) offset = own;
      if (sameTerms(*offset, *own)) candidates.push_back({op, *divisor});
    });
    // d the least divisor; a division by a multiple m * d of it is as
    // constant between its steps (the loop emitter's index of a higher
    // dimension: a pad's batch over its rows), quotient q floordiv m and
    // remainder (q mod m) * d + the remainder by d, q the quotient by d.
    for (auto [op, divisor] : candidates) d = d == 0 ? divisor : std::min(d, divisor);
    for (auto [op, divisor] : candidates) {
      if (divisor % d == 0) divisions.push_back({op, divisor / d});
    }
    if (divisions.empty()) return {};
    mlir::Location loc = lanes.getLoc();
    mlir::OpBuilder b(lanes);
    auto index = [&](int64_t v) -> Value { return b.create<mlir::arith::ConstantIndexOp>(loc, v); };
    // x = start + lane.
    Value start = offset->terms.front();
    for (Value term : llvm::drop_begin(offset->terms)) {
      start = b.create<mlir::arith::AddIOp>(loc, start, term);
    }
    if (offset->viaTid && lanes_.tid != lanes_.lane) {
      start = b.create<mlir::arith::AddIOp>(loc, start, lanes_.base);
    }
    // start + lane must not wrap: where start may be negative (lane - 2
    // past a concatenate's first two columns) start / d and start % d are
    // a wrapped value's, not x's -- the remainders by 33 came out 16 off
    // for lanes >= 2 (2^64 mod 33 is 16; random programs, stop 74).
    // (Ops made here that nothing uses are left to canonicalize.)
    const bool negativeTerm = llvm::any_of(offset->terms, [](Value t) {
      auto c = mlir::getConstantIntValue(t);
      return c && *c < 0;
    });
    if (std::optional<Interval> range = getValueRange(start);
        range ? range->lower < 0 : negativeTerm) {
      return {};
    }
    Value divisor = index(d);
    Value q0 = b.create<mlir::arith::DivUIOp>(loc, start, divisor);
    Value r0 = b.create<mlir::arith::RemUIOp>(loc, start, divisor);
    // Several steps among the lanes (rows shorter than the block): a
    // segment a row.
    bool steps = d < *hi - 1;
    bool segmented = steps || hasLongLatencyArithmetic(lanes);
    Value q1 = segmented ? Value() : b.create<mlir::arith::AddIOp>(loc, q0, index(1));
    Value lower = lanes.getLowerBound(), upper = lanes.getUpperBound();
    Value cut = steps ? Value()
                      : b.create<mlir::arith::MaxSIOp>(
                            loc, lower,
                            b.create<mlir::arith::MinSIOp>(
                                loc, upper, b.create<mlir::arith::SubIOp>(loc, divisor, r0)));
    // In a loop over `lane`: the quotient by d is `q`, the remainder
    // `r + lane`, less the divisor past the step (`stepped`); by m * d,
    // q floordiv m and (q mod m) * d + that remainder.
    auto replace = [&](std::pair<mlir::Operation*, int64_t> division, Value lane, Value q,
                       Value r, bool stepped) {
      auto [op, m] = division;
      mlir::OpBuilder at(op);
      Value result = q;
      Value multiple = m > 1 ? at.create<mlir::arith::ConstantIndexOp>(loc, m) : Value();
      if (llvm::isa<mlir::arith::RemUIOp>(op)) {
        result = at.create<mlir::arith::AddIOp>(loc, r, lane);
        if (stepped) result = at.create<mlir::arith::SubIOp>(loc, result, divisor);
        if (m > 1) {
          Value digit = at.create<mlir::arith::RemUIOp>(loc, q, multiple);
          result = at.create<mlir::arith::AddIOp>(
              loc, at.create<mlir::arith::MulIOp>(loc, digit, divisor), result);
        }
      } else if (m > 1) {
        result = at.create<mlir::arith::DivUIOp>(loc, q, multiple);
      }
      op->getResult(0).replaceAllUsesWith(result);
      op->erase();
    };
    if (segmented) {
      // A body of long-latency arithmetic (the concatenate's exp) runs in
      // a loop over the two pieces, segment k in [0, 2): lanes from
      // k ? cut : lower to k ? upper : cut, the quotient q0 + k. Its
      // arithmetic, vectorized with an epilogue, is there once, not a copy
      // a piece: the concatenate f32[1024,{100,200,28}]'s LLVM time 86 ->
      // 57 ms, its run time the same (1.01x, A/B in one process, bits the
      // same). Not for a body of copies (the 021 transposes' rotated rows
      // of 16 lanes on average): there the two loops' constant bounds are
      // worth more than the copy (f16 021 1.18-1.28x slower as segments).
      // With several steps, segments k from the first lane's quotient
      // step to the last's, lanes from max(lower, k * d - r0) to
      // min(upper, (k + 1) * d - r0).
      Value first = index(0), last = index(2);
      if (steps) {
        first = b.create<mlir::arith::DivUIOp>(
            loc, b.create<mlir::arith::AddIOp>(loc, r0, lower), divisor);
        last = b.create<mlir::arith::DivUIOp>(
            loc,
            b.create<mlir::arith::AddIOp>(loc, b.create<mlir::arith::AddIOp>(loc, r0, upper),
                                          index(d - 1)),
            divisor);
      }
      auto segments = b.create<mlir::scf::ForOp>(loc, first, last, index(1));
      segments->setAttr("loop_annotation", noUnroll(b.getContext()));
      Value k = segments.getInductionVar();
      mlir::OpBuilder sb = mlir::OpBuilder::atBlockBegin(segments.getBody());
      auto kTimes = [&](Value v) { return sb.create<mlir::arith::MulIOp>(loc, k, v); };
      Value segLower, segUpper;
      if (steps) {
        Value start = sb.create<mlir::arith::SubIOp>(loc, kTimes(divisor), r0);
        segLower = sb.create<mlir::arith::MaxSIOp>(loc, lower, start);
        segUpper = sb.create<mlir::arith::MinSIOp>(
            loc, upper, sb.create<mlir::arith::AddIOp>(loc, start, divisor));
      } else {
        Value before = sb.create<mlir::arith::SubIOp>(loc, cut, lower);
        Value after = sb.create<mlir::arith::SubIOp>(loc, upper, cut);
        segLower = sb.create<mlir::arith::AddIOp>(loc, lower, kTimes(before));
        segUpper = sb.create<mlir::arith::AddIOp>(loc, cut, kTimes(after));
      }
      Value q = sb.create<mlir::arith::AddIOp>(loc, q0, k);
      Value back = sb.create<mlir::arith::SubIOp>(loc, r0, kTimes(divisor));
      lanes->moveBefore(segments.getBody()->getTerminator());
      lanes.getLowerBoundMutable().assign(segLower);
      lanes.getUpperBoundMutable().assign(segUpper);
      for (auto division : divisions) {
        replace(division, lanes.getInductionVar(), q, back, /*stepped=*/false);
      }
      return {};
    }
    b.setInsertionPointAfter(lanes);
    mlir::IRMapping copies;
    auto second = llvm::cast<mlir::scf::ForOp>(b.clone(*lanes, copies));
    lanes.getUpperBoundMutable().assign(cut);
    second.getLowerBoundMutable().assign(cut);
    for (auto [op, m] : divisions) {
      replace({copies.lookup(op), m}, second.getInductionVar(), q1, r0, /*stepped=*/true);
      replace({op, m}, lanes.getInductionVar(), q0, r0, /*stepped=*/false);
    }
    return second;
  }

  // The constant `v` of index type, made once at the top of the new body.
  Value indexConstant(int64_t v) {
    Value& c = indexConstants_[v];
    if (!c) {
      c = mlir::OpBuilder::atBlockBegin(newBody_).create<mlir::arith::ConstantIndexOp>(
          f_.getLoc(), v);
    }
    return c;
  }

  mlir::LogicalResult emitOp(mlir::OpBuilder& b, mlir::Operation* op, mlir::IRMapping& mapping,
                             Value tid, Value bid) {
    // A constant is made once, at the top of the new body, however many
    // phases and lanes use it (not a copy each: the canonicalizer after
    // this pass spent much of its time gathering the copies).
    if (op->hasTrait<mlir::OpTrait::ConstantLike>() && op->getNumResults() == 1 &&
        op->getNumRegions() == 0 && op->getNumOperands() == 0) {
      Value& hoisted = hoistedConstants_[op];
      if (!hoisted) hoisted = mlir::OpBuilder::atBlockBegin(newBody_).clone(*op)->getResult(0);
      mapping.map(op->getResult(0), hoisted);
      if (spilled_.contains(op->getResult(0))) spill(b, op->getResult(0), hoisted, tid);
      return mlir::success();
    }
    if (auto t = llvm::dyn_cast<mlir::gpu::ThreadIdOp>(op)) {
      mapping.map(t.getResult(), idOf(b, tid, grid_.threads, t.getDimension()));
      return mlir::success();
    }
    if (auto bl = llvm::dyn_cast<mlir::gpu::BlockIdOp>(op)) {
      mapping.map(bl.getResult(), idOf(b, blockAt(b, bid), grid_.blocks, bl.getDimension()));
      return mlir::success();
    }
    if (auto addr = llvm::dyn_cast<mlir::LLVM::AddressOfOp>(op)) {
      if (sharedSlots_.count(addr.getGlobalName())) {
        mapping.map(addr.getResult(), sharedAt(b, addr.getGlobalName()));
        return mlir::success();
      }
    }
    if (auto cast = llvm::dyn_cast<mlir::LLVM::AddrSpaceCastOp>(op)) {
      // Shared memory is ordinary memory here: no cast.
      if (auto addr = cast.getArg().getDefiningOp<mlir::LLVM::AddressOfOp>();
          addr && sharedSlots_.count(addr.getGlobalName())) {
        Value at = sharedAt(b, addr.getGlobalName());
        mapping.map(cast.getResult(), at);
        if (spilled_.contains(cast.getResult())) spill(b, cast.getResult(), at, tid);
        return mlir::success();
      }
    }
    if (mlir::failed(provideOperands(b, op, mapping, tid, bid))) return mlir::failure();
    mlir::Operation* clone = b.clone(*op, mapping);
    for (auto [original, copy] : llvm::zip(op->getResults(), clone->getResults())) {
      if (spilled_.contains(original)) spill(b, original, copy, tid);
    }
    return mlir::success();
  }

  // `loop` (see isInterchangeable) over the threads of `shape`: the carried
  // values (if any) start in its results' slots, every iteration reads and
  // writes them there, thread by thread.
  mlir::LogicalResult emitInterchanged(mlir::OpBuilder& b, mlir::scf::ForOp loop,
                                       const ThreadShape& shape) {
    mlir::OpBuilder tb(b.getContext());
    if (loop.getNumResults() > 0) {
      Value tid = emitThreadLoops(b, shape, tb);
      mlir::IRMapping init;
      if (mlir::failed(provideOperands(tb, loop, init, tid, bid_, /*operandsOnly=*/true))) {
        return mlir::failure();
      }
      for (auto [result, start] : llvm::zip(loop.getResults(), loop.getInitArgs())) {
        spill(tb, result, init.lookupOrDefault(start), tid);
      }
      simplifyLaneLoop();
    }
    auto bound = [&](Value v) -> Value {
      return b.create<mlir::arith::ConstantIndexOp>(loop.getLoc(), *mlir::getConstantIntValue(v));
    };
    // Steps a visit of the slots: where they reach past half the L1 (a
    // column reduction's 32 partial sums a column: 64 KiB a batch), their
    // loads and stores every step were much of the accumulation's memory
    // traffic; an inner loop of kStepsPerVisit steps, which LLVM unrolls
    // (the lane loop stays innermost), keeps the values in registers
    // meanwhile. Small slots stay one step a visit: a row sum's 8 steps
    // unrolled into its lane loop ran 1.1-1.4x slower.
    mlir::Location loc = loop.getLoc();
    int64_t lower = *mlir::getConstantIntValue(loop.getLowerBound());
    int64_t upper = *mlir::getConstantIntValue(loop.getUpperBound());
    int64_t stride = *mlir::getConstantIntValue(loop.getStep());
    int64_t trips = upper > lower ? (upper - lower + stride - 1) / stride : 0;
    int64_t factor = carriedBytes_.lookup(loop) >= kStepsPerVisitSlotBytes ? kStepsPerVisit : 1;
    while (factor > 1 && trips % factor != 0) factor /= 2;
    auto steps = b.create<mlir::scf::ForOp>(
        loc, bound(loop.getLowerBound()), bound(loop.getUpperBound()),
        b.create<mlir::arith::ConstantIndexOp>(loc, stride * factor));
    steps->setAttr("loop_annotation", noUnroll(b.getContext()));
    mlir::OpBuilder sb(steps.getBody()->getTerminator());
    // Where the neighbouring block of a batch accesses global memory nearer
    // than the next warp does (a column reduction: a warp reads 64 columns
    // of a row, the neighbouring block the next 64, the next warp the next
    // row), the warps run outside the batch's blocks, so that a step reads
    // its rows whole, one after the other -- not a strip of each of 8 rows
    // 4 KiB apart, block after block. Column sum f32[4096,1024] 0.58-0.82x
    // the time, the 021 transpose's tile reads 0.85x (A/B in one process,
    // bits the same). Not where the step writes shared memory: each step's
    // stores then spread over all the batch's tiles, past the L1 (the seed
    // transpose's tile writes ran 1.03-1.04x slower).
    int64_t first = shape.w0 * shape.period + shape.l0;
    bool writesShared = loop.getBody()
                            ->walk([](mlir::LLVM::StoreOp store) {
                              return isSharedAddress(store.getAddr())
                                         ? mlir::WalkResult::interrupt()
                                         : mlir::WalkResult::advance();
                            })
                            .wasInterrupted();
    bool warpsOutside = batch_ > 1 && shape.w1 - shape.w0 > 1 && !writesShared &&
                        readsAcrossBlocks(loop, first, {{first + shape.period, lower}});
    Value tid = emitThreadLoops(sb, shape, tb, warpsOutside);
    // Its lanes run every step: no folded tail for long-latency arithmetic
    // (see foldsTail). A step that only writes such arithmetic (a
    // transpose's row of exp into its tile, kept a loop by
    // xla-gpu-optimize-loops) interleaves two vector iterations, the
    // independent chains its steps unrolled had: the seed transpose 1.15x
    // faster than one at a time, as fast as unrolled.
    // A step that accumulates such arithmetic (the softmax's exp + sum)
    // interleaves four: its lane loop is short (a row's 64 lanes, then
    // the next row's), so the out-of-order core overlaps few iterations
    // of a chain a dozen FMAs deep. Softmax exp+sum bf16[512,777] 0.85-0.86x
    // the time of two (A/B in one process, one thread, bits the same),
    // compile +4.6 ms; four for every unfolded kernel's lane loops also
    // made the seed transpose 0.92x but cost +4-9 ms of compile where it
    // and the concatenate are over XLA's already, atan2 ran 1.02x slower.
    if (hasLongLatencyArithmetic(loop)) {
      lanes_.loop->removeAttr(kLaneLoop);
      if (loop.getNumResults() == 0 && laneInterleave_ == 0) {
        lanes_.loop->setAttr("loop_annotation",
                             noUnroll(b.getContext(), kWriteStepInterleave));
      } else if (loop.getNumResults() > 0) {
        lanes_.loop->setAttr("loop_annotation",
                             noUnroll(b.getContext(), kAccumulationInterleave));
      }
    }
    SmallVector<Value> carried;
    for (Value result : loop.getResults()) carried.push_back(reload(tb, result, tid));
    // One step of `loop` at `iv` from the carried `values`: what it yields.
    auto yield = llvm::cast<mlir::scf::YieldOp>(loop.getBody()->getTerminator());
    auto step = [&](mlir::OpBuilder& at, Value iv,
                    mlir::ValueRange values) -> mlir::FailureOr<SmallVector<Value>> {
      mlir::IRMapping mapping;
      mapping.map(loop.getInductionVar(), iv);
      mapping.map(loop.getRegionIterArgs(), values);
      for (mlir::Operation& op : loop.getBody()->without_terminator()) {
        if (mlir::failed(provideOperands(at, &op, mapping, tid, bid_))) return mlir::failure();
        at.clone(op, mapping);
      }
      if (mlir::failed(provideOperands(at, yield, mapping, tid, bid_))) return mlir::failure();
      return llvm::map_to_vector(yield.getOperands(),
                                 [&](Value v) { return mapping.lookupOrDefault(v); });
    };
    mlir::FailureOr<SmallVector<Value>> results;
    if (factor == 1) {
      results = step(tb, steps.getInductionVar(), carried);
    } else {
      auto index = [&](mlir::OpBuilder& at, int64_t v) -> Value {
        return at.create<mlir::arith::ConstantIndexOp>(loc, v);
      };
      auto visit = tb.create<mlir::scf::ForOp>(
          loc, index(tb, 0), index(tb, factor), index(tb, 1), carried,
          [&](mlir::OpBuilder& at, mlir::Location, Value j, mlir::ValueRange values) {
            Value iv = at.create<mlir::arith::AddIOp>(
                loc, steps.getInductionVar(),
                at.create<mlir::arith::MulIOp>(loc, j, index(at, stride)));
            results = step(at, iv, values);
            at.create<mlir::scf::YieldOp>(
                loc, mlir::succeeded(results) ? mlir::ValueRange(*results) : values);
          });
      visit->setAttr("loop_annotation", fullUnroll(b.getContext()));
      // What the steps share (the block's part of an index) into the lane
      // loop, where simplifyLaneLoop takes it further out.
      mlir::moveLoopInvariantCode(llvm::cast<mlir::LoopLikeOpInterface>(visit.getOperation()));
      if (mlir::succeeded(results)) results = SmallVector<Value>(visit.getResults());
    }
    if (mlir::failed(results)) return mlir::failure();
    for (auto [result, next] : llvm::zip(loop.getResults(), *results)) spill(tb, result, next, tid);
    simplifyLaneLoop();
    return mlir::success();
  }

  // The size of the aligned groups of threads of a block that all compute
  // the same values in accumulation `loop`, or 0: the loop writes no
  // memory, and what it reads from outside depends on the thread id only
  // through quotients tid / d by constants (the group: their gcd with each
  // other and the block's size; the whole block where there are none).
  // Such a loop runs once a group, by its first thread, whole (its carried
  // values in registers), and the group's other threads read that thread's
  // slot (reload). A softmax step `exp(x - max(x))` is one: the loop
  // emitter inlines the row's max into each element of the row (as XLA's
  // does), and interchanged, each of a row's threads kept its own copy of
  // the same max in its slot, loaded, maxed and stored back every step.
  // run-hlo, f32[R,C] (XLA:CPU 0.14-0.29 ms): C = 4 0.15 -> 0.11 ms, 8
  // 0.15 -> 0.10, 16 0.55 -> 0.10, 32 (R = 256) 0.142 -> 0.029, 64 1.78 ->
  // 0.16; bits the same.
  int64_t uniformGroupOf(mlir::scf::ForOp loop) {
    int64_t n = grid_.numThreads();
    if (loop.getNumResults() == 0 || grid_.threads[1] * grid_.threads[2] > 1) return 0;
    auto module = f_->getParentOfType<mlir::ModuleOp>();
    if (writesMemory(loop, module, callees_)) return 0;
    mlir::Block& body = f_.getBody().front();
    int64_t group = n;
    // tid / d: the same for each aligned group of gcd(d, n) threads.
    auto quotientOfTid = [&](mlir::Operation* op) {
      auto d = llvm::isa<mlir::arith::DivUIOp>(op) ? mlir::getConstantIntValue(op->getOperand(1))
                                                   : std::nullopt;
      if (!d || *d <= 0 || !op->getOperand(0).getDefiningOp<mlir::gpu::ThreadIdOp>()) return false;
      int64_t g = std::gcd(*d, n);
      group = std::gcd(group, g);
      return true;
    };
    // Of the gpu ops, only the block's and grid's are the same for all
    // threads (a thread id, a lane id or a shuffle is not).
    auto threadDependent = [](mlir::Operation* op) {
      return llvm::isa<mlir::gpu::GPUDialect>(op->getDialect()) &&
             !llvm::isa<mlir::gpu::BlockIdOp, mlir::gpu::BlockDimOp, mlir::gpu::GridDimOp>(op);
    };
    llvm::DenseMap<Value, bool> memo;
    std::function<bool(Value)> uniform = [&](Value v) -> bool {
      if (auto arg = llvm::dyn_cast<mlir::BlockArgument>(v)) return arg.getOwner() == &body;
      if (auto it = memo.find(v); it != memo.end()) return it->second;
      mlir::Operation* def = v.getDefiningOp();
      bool result = quotientOfTid(def) ||
                    (!threadDependent(def) && def->getNumRegions() == 0 && mlir::isPure(def) &&
                     llvm::all_of(def->getOperands(), uniform));
      memo[v] = result;
      return result;
    };
    bool ok = true;
    loop->walk([&](mlir::Operation* inner) {
      if (threadDependent(inner) || llvm::isa<mlir::func::CallOp>(inner)) {
        ok = false;
      } else if (!quotientOfTid(inner)) {
        for (Value v : inner->getOperands()) {
          if (!loop.getRegion().isAncestor(v.getParentRegion()) && !uniform(v)) ok = false;
        }
      }
      return ok ? mlir::WalkResult::advance() : mlir::WalkResult::interrupt();
    });
    return ok && group > 1 ? group : 0;
  }

  // The first thread of each group of `group` holding one of `threads`.
  static ThreadShape leadersOf(const llvm::BitVector& threads, int64_t group) {
    if (threads.none()) return {};
    return {group, threads.find_first() / group, threads.find_last() / group + 1, 0, 1};
  }

  // Ops a phase may compute at another lane than the thread's own (a
  // shuffle's source lane): pure ops without regions, and the loads no
  // store of their phase precedes.
  bool isLaneEvaluable(mlir::Operation* op) const {
    if (evaluableLoads_.contains(op)) return true;
    return op->getNumRegions() == 0 && op->getNumResults() > 0 && mlir::isPure(op) &&
           !llvm::isa<mlir::gpu::ShuffleOp>(op);
  }

  mlir::LogicalResult checkShuffle(mlir::gpu::ShuffleOp shuffle) {
    if (shuffle.getMode() != mlir::gpu::ShuffleMode::DOWN) {
      return shuffle.emitOpError() << "only shuffle down is supported by the CPU target";
    }
    auto offset = mlir::getConstantIntValue(shuffle.getOffset());
    auto width = mlir::getConstantIntValue(shuffle.getWidth());
    if (!offset || !width || *width <= 0 || *width > kMaxThreadsPerBlock || *offset < 0 ||
        *offset > kMaxThreadsPerBlock) {
      return shuffle.emitOpError() << "needs constant offset and width (in [0, "
                                   << kMaxThreadsPerBlock << "]) on the CPU target";
    }
    Value value = shuffle.getValue();
    // The shuffled value's slots reach `offset` past the last thread: a
    // lane past its segment loads there (a value it then does not select),
    // so that both loads of shuffleAt are contiguous across the threads.
    padding_[value] = std::max<int64_t>(padding_.lookup(value), *offset);
    return mlir::success();
  }

  // The per-thread slots of a spilled value: one a thread, and the padding
  // its shuffles read past the last one.
  int64_t slotsOf(Value v) const { return grid_.numThreads() + padding_.lookup(v); }

  // A thread of the loop being emitted as a shuffle reads it: the loop's
  // thread id plus a constant (`id` null), or a computed id.
  struct Lane {
    int64_t offset = 0;
    Value id;
  };

  Value idOfLane(mlir::OpBuilder& b, Lane lane) {
    if (lane.id) return lane.id;
    if (lane.offset == 0) return lanes_.tid;
    return b.create<mlir::arith::AddIOp>(lanes_.tid.getLoc(), lanes_.tid,
                                         indexConstant(lane.offset));
  }

  // Whether `shuffle` at `lane` reads another lane, for every thread of
  // the loop being emitted; std::nullopt when that differs between them.
  // The loop's threads' lanes within a segment of the shuffle's width
  // (tid mod width) lie in [lo, hi]: an interval of one segment, a period
  // of segments, or every k-th lane (a period dividing the width).
  std::optional<bool> readsAnotherLane(mlir::gpu::ShuffleOp shuffle, Lane lane) const {
    if (lane.id) return std::nullopt;
    int64_t width = *mlir::getConstantIntValue(shuffle.getWidth());
    int64_t offset = *mlir::getConstantIntValue(shuffle.getOffset());
    const ThreadShape& s = lanes_.shape;
    int64_t lo, hi;
    int64_t last = (s.w1 - 1) * s.period + s.l1 - 1;
    if (s.w1 - s.w0 == 1) {
      int64_t first = s.w0 * s.period + s.l0;
      if (first / width != last / width) return std::nullopt;
      lo = first % width;
      hi = last % width;
    } else if (s.period % width == 0) {
      if (s.l0 / width != (s.l1 - 1) / width) return std::nullopt;
      lo = s.l0 % width;
      hi = (s.l1 - 1) % width;
    } else if (width % s.period == 0) {
      lo = s.l0;
      hi = width - s.period + s.l1 - 1;
    } else {
      return std::nullopt;
    }
    // An offset is added only where it stayed in the segment.
    lo += lane.offset;
    hi += lane.offset;
    if (hi + offset < width && last + lane.offset + offset < grid_.numThreads()) return true;
    if (lo + offset >= width) return false;
    return std::nullopt;
  }

  // `v` at `lane` of the loop being emitted, `own` mapping the loop's own
  // thread's values: a block argument, a value every phase recomputes
  // (computed again there), one of an earlier phase (its slot), a shuffle
  // result (shuffleAt), or a pure op of this phase (cloned on its
  // operands at the lane).
  mlir::FailureOr<Value> atLane(mlir::OpBuilder& b, Value v, Lane lane, Value bid,
                                mlir::IRMapping& own) {
    if (!lane.id && lane.offset == 0) {
      if (Value mapped = own.lookupOrNull(v)) return mapped;
    }
    if (argMap_.contains(v)) return argMap_.lookup(v);
    auto key = std::make_tuple(v, lane.id, lane.offset, b.getInsertionBlock());
    if (auto it = laneValues_.find(key); it != laneValues_.end()) return it->second;
    mlir::Operation* def = v.getDefiningOp();
    if (!def || def->getBlock() != &f_.getBody().front()) {
      return f_.emitOpError() << "shuffles a value the CPU target cannot see per thread";
    }
    Value result;
    if (auto shuffle = llvm::dyn_cast<mlir::gpu::ShuffleOp>(def)) {
      auto results = shuffleAt(b, shuffle, lane, bid, own);
      if (mlir::failed(results)) return mlir::failure();
      result = v == shuffle.getShuffleResult() ? results->first : results->second;
    } else if (recomputed_.contains(def)) {
      mlir::IRMapping mapping;
      if (mlir::failed(emitOp(b, def, mapping, idOfLane(b, lane), bid))) return mlir::failure();
      result = mapping.lookup(v);
    } else if (phaseOf_.lookup(def) != curPhase_ && spilled_.contains(v)) {
      result = reload(b, v, idOfLane(b, lane));
    } else if (phaseOf_.lookup(def) == curPhase_ && isLaneEvaluable(def)) {
      mlir::IRMapping mapping;
      for (Value operand : def->getOperands()) {
        mlir::FailureOr<Value> at = atLane(b, operand, lane, bid, own);
        if (mlir::failed(at)) return mlir::failure();
        mapping.map(operand, *at);
      }
      mlir::Operation* clone = b.clone(*def, mapping);
      for (auto [original, copy] : llvm::zip(def->getResults(), clone->getResults())) {
        laneValues_[std::make_tuple(original, lane.id, lane.offset, b.getInsertionBlock())] = copy;
      }
      return mapping.lookup(v);
    } else {
      return def->emitOpError() << "is shuffled, and the CPU target cannot see it per thread";
    }
    laneValues_[key] = result;
    return result;
  }

  // The results of `shuffle` at `lane`: lane l of a segment of `width`
  // lanes reads lane l + offset of the same segment, or its own value when
  // that lane is past the segment or past the block's last thread (a
  // partial warp: no such lane) -- exactly `shfl.down`.
  mlir::FailureOr<std::pair<Value, Value>> shuffleAt(mlir::OpBuilder& b,
                                                     mlir::gpu::ShuffleOp shuffle, Lane lane,
                                                     Value bid, mlir::IRMapping& own) {
    mlir::Location loc = shuffle.getLoc();
    int64_t offset = *mlir::getConstantIntValue(shuffle.getOffset());
    int64_t width = *mlir::getConstantIntValue(shuffle.getWidth());
    Value value = shuffle.getValue();
    if (std::optional<bool> reads = readsAnotherLane(shuffle, lane)) {
      Lane source = lane;
      if (*reads) source.offset += offset;
      mlir::FailureOr<Value> moved = atLane(b, value, source, bid, own);
      if (mlir::failed(moved)) return mlir::failure();
      return std::make_pair(*moved,
                            b.create<mlir::arith::ConstantIntOp>(loc, *reads, 1).getResult());
    }
    Value tid = idOfLane(b, lane);
    Value cw = indexConstant(width);
    Value co = indexConstant(offset);
    Value inSegment = b.create<mlir::arith::AddIOp>(
        loc, b.create<mlir::arith::RemUIOp>(loc, tid, cw), co);
    Value other = b.create<mlir::arith::AddIOp>(loc, tid, co);
    Value valid = b.create<mlir::arith::AndIOp>(
        loc, b.create<mlir::arith::CmpIOp>(loc, mlir::arith::CmpIPredicate::ult, inSegment, cw),
        b.create<mlir::arith::CmpIOp>(
            loc, mlir::arith::CmpIPredicate::ult, other, indexConstant(grid_.numThreads())));
    mlir::Operation* def = value.getDefiningOp();
    Value moved;
    if (def && spilled_.contains(value) && phaseOf_.lookup(def) != curPhase_) {
      // Both loads are in the slots (see checkShuffle): two contiguous
      // vector loads and a blend once the thread loop is vectorized.
      moved = b.create<mlir::arith::SelectOp>(loc, valid, reload(b, value, other),
                                              reload(b, value, tid));
    } else {
      Value source = b.create<mlir::arith::SelectOp>(loc, valid, other, tid);
      mlir::FailureOr<Value> there = atLane(b, value, Lane{0, source}, bid, own);
      if (mlir::failed(there)) return mlir::failure();
      mlir::FailureOr<Value> here = atLane(b, value, lane, bid, own);
      if (mlir::failed(here)) return mlir::failure();
      moved = b.create<mlir::arith::SelectOp>(loc, valid, *there, *here);
    }
    return std::make_pair(moved, valid);
  }

  mlir::func::FuncOp f_;
  Grid grid_;
  // The pass's transposing-writes option (see matchTransposingWrite).
  bool transposingWrites_;
  llvm::DenseMap<mlir::Operation*, unsigned> phaseOf_;
  llvm::SetVector<Value> spilled_;
  llvm::DenseMap<Value, Value> spillSlots_;
  // The lane loops' interleave count (see the constructor); 0: LLVM's.
  int64_t laneInterleave_ = 0;
  // Ops every phase that uses them emits again (see run(), step 2).
  llvm::DenseSet<mlir::Operation*> recomputed_;
  llvm::StringMap<Value> sharedSlots_;
  llvm::StringMap<mlir::Type> sharedTypes_;
  // Blocks per batch (see run()); the batch's first block and the call's
  // last; the block being emitted and its place in the batch (null for
  // batches of one).
  int64_t batch_ = 1;
  Value batchFirst_, batchLast_, bid_, blockInBatch_;
  mlir::IRMapping argMap_;
  bool hasShuffles_ = false;  // whether a phase ends at a shuffle
  // The thread id of the loop being emitted: base + lane, base a multiple
  // of period and lane below it (see emitThreadLoops).
  struct Lanes {
    Value tid, base, lane;
    int64_t period = 0;
    mlir::scf::ForOp loop;
    ThreadShape shape;
  } lanes_;
  // The phase being emitted.
  unsigned curPhase_ = 0;
  // The new body, and the constants made at its top (indexConstant,
  // emitOp).
  mlir::Block* newBody_ = nullptr;
  llvm::DenseMap<int64_t, Value> indexConstants_;
  llvm::DenseMap<mlir::Operation*, Value> hoistedConstants_;
  // Top-level loads a phase may compute at other lanes (isLaneEvaluable).
  llvm::DenseSet<mlir::Operation*> evaluableLoads_;
  // Values computed at other lanes in the thread loop being emitted
  // (atLane): by value, lane (id, offset) and the block they were put in.
  llvm::DenseMap<std::tuple<Value, Value, int64_t, mlir::Block*>, Value> laneValues_;
  // Loops run as steps over all threads (see isInterchangeable), and the
  // bytes of their carried values' slots for a batch of blocks.
  llvm::SetVector<mlir::Operation*> interchanged_;
  // Accumulations run once a group of threads, and the group's size (see
  // uniformGroupOf).
  llvm::DenseMap<mlir::Operation*, int64_t> uniformGroups_;
  llvm::DenseMap<mlir::Operation*, uint64_t> carriedBytes_;
  // How far past the last thread a shuffle reads a value's slots.
  llvm::DenseMap<Value, int64_t> padding_;
  // Whether a callee writes memory (writesMemory's memo).
  llvm::DenseMap<mlir::Operation*, bool> callees_;
};

// The operations plainUpdate writes out (min/max and the rest stay atomic).
bool hasPlainUpdate(mlir::LLVM::AtomicBinOp kind) {
  using K = mlir::LLVM::AtomicBinOp;
  return llvm::is_contained({K::xchg, K::add, K::sub, K::_and, K::_or, K::_xor, K::fadd, K::fsub},
                            kind);
}

Value plainUpdate(mlir::OpBuilder& b, mlir::LLVM::AtomicRMWOp op, Value old) {
  mlir::Location loc = op.getLoc();
  Value x = op.getVal();
  using K = mlir::LLVM::AtomicBinOp;
  switch (op.getBinOp()) {
    case K::add: return b.create<mlir::LLVM::AddOp>(loc, old, x);
    case K::sub: return b.create<mlir::LLVM::SubOp>(loc, old, x);
    case K::_and: return b.create<mlir::LLVM::AndOp>(loc, old, x);
    case K::_or: return b.create<mlir::LLVM::OrOp>(loc, old, x);
    case K::_xor: return b.create<mlir::LLVM::XOrOp>(loc, old, x);
    case K::fadd: return b.create<mlir::LLVM::FAddOp>(loc, old, x);
    case K::fsub: return b.create<mlir::LLVM::FSubOp>(loc, old, x);
    default: return x;  // xchg
  }
}

// The kernel argument `address` points into (through getelementptrs), or
// null.
mlir::BlockArgument baseArgument(Value address) {
  auto arg = llvm::dyn_cast<mlir::BlockArgument>(baseOf(address));
  if (!arg || !llvm::isa<mlir::func::FuncOp>(arg.getOwner()->getParentOp())) return {};
  return arg;
}

// The ops from `op`'s outermost ancestor below `f`'s body down to `op`
// itself, if every ancestor between is an scf.for or an scf.if; else empty.
SmallVector<mlir::Operation*> nestOf(mlir::func::FuncOp f, mlir::Operation* op) {
  SmallVector<mlir::Operation*> chain = {op};
  for (mlir::Operation* parent = op->getParentOp(); parent != f.getOperation();
       parent = parent->getParentOp()) {
    if (!llvm::isa<mlir::scf::ForOp, mlir::scf::IfOp>(parent)) return {};
    chain.push_back(parent);
  }
  std::reverse(chain.begin(), chain.end());
  return chain;
}

// Whether, within `top`, nothing but `update`'s own ops (those of
// `update` and nested in it, and `alsoOwn`) reads or writes the kernel
// argument `base` points into, and every other op with memory effects is
// a load or store of another argument (one the kernel was given noalias).
bool updatesItsBufferAlone(mlir::Operation* top, mlir::Operation* update,
                           mlir::Operation* alsoOwn, mlir::BlockArgument base) {
  return !top->walk([&](mlir::Operation* op) {
               if (op == alsoOwn || update->isAncestor(op) || op->getNumRegions() != 0 ||
                   mlir::isMemoryEffectFree(op)) {
                 return mlir::WalkResult::advance();
               }
               Value address;
               if (auto load = llvm::dyn_cast<mlir::LLVM::LoadOp>(op)) {
                 address = load.getAddr();
               } else if (auto store = llvm::dyn_cast<mlir::LLVM::StoreOp>(op)) {
                 address = store.getAddr();
               } else {
                 return mlir::WalkResult::interrupt();
               }
               mlir::BlockArgument other = baseArgument(address);
               return other && other != base ? mlir::WalkResult::advance()
                                             : mlir::WalkResult::interrupt();
             })
              .wasInterrupted();
}

// An update whose runs of one address may be carried (carryRunsOfUpdates):
// an unused llvm.atomicrmw, or lower-tensors' compare-and-swap loop (an
// scf.while whose first value is `initialLoad`, a load of the address
// before it), marked kSortedUpdates.
struct RunUpdate {
  mlir::Operation* initialLoad = nullptr;
  Value ptr;
  mlir::Type valueType;  // a loop's: the bits compared and swapped
  unsigned align = 1;
  // The value after the update of `old`.
  std::function<Value(mlir::OpBuilder&, Value)> combine;
  // A loop's compare-and-swap (null for an atomicrmw).
  mlir::LLVM::AtomicCmpXchgOp cas;
};

// `op` as a RunUpdate, if it is one (its nest and buffer not checked).
std::optional<RunUpdate> runUpdate(mlir::Operation* op) {
  if (!op->hasAttr(kSortedUpdates)) return std::nullopt;
  if (auto rmw = llvm::dyn_cast<mlir::LLVM::AtomicRMWOp>(op)) {
    if (!rmw.getRes().use_empty()) return std::nullopt;
    RunUpdate u;
    u.ptr = rmw.getPtr();
    u.valueType = rmw.getVal().getType();
    u.align = rmw.getAlignment().value_or(1);
    u.combine = [rmw](mlir::OpBuilder& b, Value old) { return plainUpdate(b, rmw, old); };
    return u;
  }
  // lower-tensors' loop: before { new = f(old); cas(ptr, old, new); retry
  // with what it saw } after { yield }, its first `old` loaded just before.
  auto loop = llvm::dyn_cast<mlir::scf::WhileOp>(op);
  if (!loop || loop.getInits().size() != 1 || !loop.getResult(0).use_empty()) {
    return std::nullopt;
  }
  auto load = loop.getInits()[0].getDefiningOp<mlir::LLVM::LoadOp>();
  mlir::Block& before = loop.getBefore().front();
  mlir::LLVM::AtomicCmpXchgOp cas;
  for (mlir::Operation& inner : before) {
    if (auto found = llvm::dyn_cast<mlir::LLVM::AtomicCmpXchgOp>(inner)) {
      if (cas) return std::nullopt;
      cas = found;
    } else if (!mlir::isMemoryEffectFree(&inner)) {
      return std::nullopt;
    }
  }
  if (!load || load->getBlock() != loop->getBlock() || !load->hasOneUse() || !cas ||
      cas.getPtr() != load.getAddr() || cas.getCmp() != before.getArgument(0) ||
      !loop.isDefinedOutsideOfLoop(cas.getPtr())) {
    return std::nullopt;
  }
  RunUpdate u;
  u.initialLoad = load;
  u.ptr = cas.getPtr();
  u.valueType = cas.getCmp().getType();
  u.align = load.getAlignment().value_or(1);
  u.cas = cas;
  mlir::Operation* casOp = cas;
  Value newBits = cas.getVal();
  u.combine = [&before, casOp, newBits](mlir::OpBuilder& b, Value old) {
    mlir::IRMapping mapping;
    mapping.map(before.getArgument(0), old);
    for (mlir::Operation& inner : before) {
      if (&inner == casOp) break;
      b.clone(inner, mapping);
    }
    return mapping.lookupOrDefault(newBits);
  };
  return u;
}

// Every scf.if of `f` on a constant replaced by the region it takes
// (scf.if's canonicalization, on those alone).
void removeConstantBranches(mlir::func::FuncOp f) {
  SmallVector<mlir::Operation*> branches;
  f.walk([&](mlir::scf::IfOp branch) {
    if (mlir::getConstantIntValue(branch.getCondition())) branches.push_back(branch);
  });
  if (branches.empty()) return;
  mlir::RewritePatternSet patterns(f.getContext());
  mlir::scf::IfOp::getCanonicalizationPatterns(patterns, f.getContext());
  mlir::GreedyRewriteConfig config;
  config.setStrictness(mlir::GreedyRewriteStrictness::ExistingOps);
  (void)mlir::applyOpPatternsGreedily(branches, std::move(patterns), config);
}

// The exclusive launch's update `u` (the last of `chain`, the nest
// plainAtomicsWhenExclusive found it in) with the run of updates of one
// address carried in registers: the loops and branches of the nest carry
// the address last updated and its value; an update of the same address
// updates the value, one of another address stores the value and loads
// the new address's; after the nest the last value is stored. (A
// compare-and-swap loop's value is its bits, its update the loop's
// computation of the new bits.)
// The same updates in the same order (a sum's additions too), as plain
// loads, updates and stores run them, without a store and a load of the
// same address between two of them -- a sorted segment sum's updates of
// one segment had run one after the other through memory (store to load
// forwarding, then the add), a float sum of 1M updates into 1000 segments
// 3.0 ms, as XLA:CPU's (0.53 carried); a max's compare-and-swap loops 3.5
// -> 1.27 ms. Not exclusive, the update stays atomic and the carried
// address the function's slot.
void carryRunsOfUpdates(llvm::ArrayRef<mlir::Operation*> chain, const RunUpdate& u,
                        Value exclusive) {
  mlir::Operation* updateOp = chain.back();
  mlir::MLIRContext* ctx = updateOp->getContext();
  mlir::IRRewriter rewriter(ctx);
  mlir::Location loc = updateOp->getLoc();
  mlir::Type ptrType = mlir::LLVM::LLVMPointerType::get(ctx);
  mlir::Type valueType = u.valueType;
  unsigned align = u.align;
  using ICmp = mlir::LLVM::ICmpPredicate;
  // `chain[i]` carrying (at, value) in; what it carries out.
  std::function<std::pair<Value, Value>(size_t, Value, Value)> carry =
      [&](size_t i, Value at, Value value) -> std::pair<Value, Value> {
    mlir::Operation* op = chain[i];
    mlir::OpBuilder b(op);
    if (i + 1 == chain.size()) {
      Value ptr = u.ptr;
      auto update = b.create<mlir::scf::IfOp>(loc, mlir::TypeRange{ptrType, valueType},
                                              exclusive, /*withElseRegion=*/true);
      // A new run (the one branch): the last run's value stored, the new
      // address's loaded; then the update, in the plain update's order.
      mlir::OpBuilder t = update.getThenBodyBuilder();
      Value other = t.create<mlir::LLVM::ICmpOp>(loc, ICmp::ne, ptr, at);
      auto run = t.create<mlir::scf::IfOp>(loc, mlir::TypeRange{ptrType, valueType}, other,
                                           /*withElseRegion=*/true);
      mlir::OpBuilder n = run.getThenBodyBuilder();
      n.create<mlir::LLVM::StoreOp>(loc, value, at, align);
      Value old = n.create<mlir::LLVM::LoadOp>(loc, valueType, ptr, align);
      n.create<mlir::scf::YieldOp>(loc, mlir::ValueRange{ptr, old});
      mlir::OpBuilder r = run.getElseBodyBuilder();
      r.create<mlir::scf::YieldOp>(loc, mlir::ValueRange{at, value});
      t.create<mlir::scf::YieldOp>(
          loc, mlir::ValueRange{run.getResult(0), u.combine(t, run.getResult(1))});
      // Not exclusive: the atomic update as it was.
      mlir::OpBuilder e = update.getElseBodyBuilder();
      mlir::IRMapping original;
      if (u.initialLoad) e.clone(*u.initialLoad, original);
      e.clone(*updateOp, original);
      e.create<mlir::scf::YieldOp>(loc, mlir::ValueRange{at, value});
      updateOp->erase();
      if (u.initialLoad) u.initialLoad->erase();
      return {update.getResult(0), update.getResult(1)};
    }
    if (auto loop = llvm::dyn_cast<mlir::scf::ForOp>(op)) {
      rewriter.setInsertionPoint(loop);
      auto carried = llvm::cast<mlir::LoopLikeOpInterface>(loop.getOperation())
                         .replaceWithAdditionalYields(
                             rewriter, {at, value}, /*replaceInitOperandUsesInLoop=*/false,
                             [&](mlir::OpBuilder&, mlir::Location,
                                 llvm::ArrayRef<mlir::BlockArgument> args) {
                               auto [a, v] = carry(i + 1, args[0], args[1]);
                               return SmallVector<Value>{a, v};
                             });
      mlir::ResultRange results = *carried->getLoopResults();
      return {results[results.size() - 2], results[results.size() - 1]};
    }
    auto branch = llvm::cast<mlir::scf::IfOp>(op);
    SmallVector<mlir::Type> types(branch.getResultTypes());
    types.append({ptrType, valueType});
    auto carrying = b.create<mlir::scf::IfOp>(loc, types, branch.getCondition(),
                                              /*withElseRegion=*/false);
    carrying.getThenRegion().takeBody(branch.getThenRegion());
    if (branch.getElseRegion().empty()) {
      mlir::OpBuilder e(ctx);
      e.createBlock(&carrying.getElseRegion());
      e.create<mlir::scf::YieldOp>(loc);
    } else {
      carrying.getElseRegion().takeBody(branch.getElseRegion());
    }
    bool inThen = carrying.getThenRegion().isAncestor(chain[i + 1]->getParentRegion());
    for (mlir::Region* region : {&carrying.getThenRegion(), &carrying.getElseRegion()}) {
      auto yield = llvm::cast<mlir::scf::YieldOp>(region->front().getTerminator());
      std::pair<Value, Value> out = {at, value};
      if ((region == &carrying.getThenRegion()) == inThen) out = carry(i + 1, at, value);
      yield->insertOperands(yield->getNumOperands(), {out.first, out.second});
    }
    branch.replaceAllUsesWith(carrying.getResults().drop_back(2));
    branch.erase();
    return {carrying.getResult(types.size() - 2), carrying.getResult(types.size() - 1)};
  };
  // The address carried in: a slot of the function's own, so that a run's
  // end stores without a check (the first run's into the slot).
  mlir::Operation* top = chain.front();
  auto f = top->getParentOfType<mlir::func::FuncOp>();
  mlir::OpBuilder entry = mlir::OpBuilder::atBlockBegin(&f.getBody().front());
  Value slot = entry.create<mlir::LLVM::AllocaOp>(
      loc, ptrType, valueType,
      entry.create<mlir::LLVM::ConstantOp>(loc, entry.getI64Type(), entry.getI64IntegerAttr(1)),
      align);
  mlir::OpBuilder b(top);
  Value zero = b.create<mlir::LLVM::ZeroOp>(loc, valueType);
  mlir::Block* block = top->getBlock();
  mlir::Operation* next = top->getNextNode();
  auto [at, value] = carry(0, slot, zero);
  mlir::OpBuilder after(block, next ? mlir::Block::iterator(next) : block->end());
  after.create<mlir::LLVM::StoreOp>(loc, value, at, align);
}

// Atomics when no other host thread runs blocks of the launch. The runtime
// hands a launch to one host thread whole (blocks [0, n)) when it is small,
// and the blocks and threads then run one after another: every atomic
// update is then an ordinary load, update and store (any order of the
// updates is one a GPU may run, and this one has no interleaving at all).
// Each llvm.atomicrmw of a plain operation and each llvm.cmpxchg runs so
// under `scf.if exclusive` (the launch's block range is the whole grid),
// atomically otherwise: a locked compare-and-swap loop per update was most
// of a 500 x 16 scatter-add's time.
void plainAtomicsWhenExclusive(mlir::func::FuncOp f, int64_t numBlocks) {
  // Branches on a constant the lowering left (the lane loop's copy for a
  // partial last warp, under `scf.if true`) taken out first where runs may
  // be carried: the copy never run would be a second update of the buffer
  // in the nest.
  if (f.walk([](mlir::Operation* op) {
         return op->hasAttr(kSortedUpdates) ? mlir::WalkResult::interrupt()
                                            : mlir::WalkResult::advance();
       }).wasInterrupted()) {
    removeConstantBranches(f);
  }
  SmallVector<mlir::Operation*> atomics;
  f.walk([&](mlir::Operation* op) {
    if (auto rmw = llvm::dyn_cast<mlir::LLVM::AtomicRMWOp>(op)) {
      if (hasPlainUpdate(rmw.getBinOp())) atomics.push_back(op);
    } else if (llvm::isa<mlir::LLVM::AtomicCmpXchgOp>(op)) {
      atomics.push_back(op);
    }
  });
  if (atomics.empty()) return;
  mlir::Block& entry = f.getBody().front();
  unsigned n = entry.getNumArguments();
  mlir::OpBuilder b = mlir::OpBuilder::atBlockBegin(&entry);
  mlir::Location loc = f.getLoc();
  using P = mlir::arith::CmpIPredicate;
  // A grid of one block is exclusive whatever runs it (its one block on
  // one host thread): the atomic branches fold away, which LLVM would
  // otherwise unswitch, vectorize and compile twice over (the 500 x 16
  // scatter-add's O3 and code generation 13.4 -> 10.9 ms).
  Value exclusive =
      numBlocks == 1
          ? Value(b.create<mlir::arith::ConstantIntOp>(loc, b.getI1Type(), 1))
          : Value(b.create<mlir::arith::AndIOp>(
                loc,
                b.create<mlir::arith::CmpIOp>(loc, P::eq, entry.getArgument(n - 2),
                                              b.create<mlir::arith::ConstantIndexOp>(loc, 0)),
                b.create<mlir::arith::CmpIOp>(
                    loc, P::sge, entry.getArgument(n - 1),
                    b.create<mlir::arith::ConstantIndexOp>(loc, numBlocks))));
  // Updates whose runs are carried (carryRunsOfUpdates): an unused
  // atomicrmw or a compare-and-swap loop of a scatter's sorted indices
  // (kSortedUpdates, runUpdate), the one access of its buffer in its nest
  // of loops and branches. (Where the updates of one element do not come
  // in runs, the check for one cost a fifth more: 1M float updates of 1000
  // random segments 0.44 -> 0.54 ms.)
  llvm::DenseMap<mlir::Operation*, int> updatesIn;
  SmallVector<std::pair<SmallVector<mlir::Operation*>, RunUpdate>> runs;
  SmallVector<mlir::Operation*> updates(atomics);
  f.walk([&](mlir::scf::WhileOp loop) {
    if (loop->hasAttr(kSortedUpdates)) updates.push_back(loop);
  });
  for (mlir::Operation* op : updates) {
    SmallVector<mlir::Operation*> chain = nestOf(f, op);
    if (chain.size() < 2) continue;
    ++updatesIn[chain.front()];
    std::optional<RunUpdate> u = runUpdate(op);
    mlir::BlockArgument base;
    if (u && (base = baseArgument(u->ptr)) &&
        updatesItsBufferAlone(chain.front(), op, u->initialLoad, base)) {
      runs.push_back({std::move(chain), std::move(*u)});
    }
  }
  llvm::DenseSet<mlir::Operation*> carried;
  for (auto& [chain, u] : runs) {
    if (updatesIn[chain.front()] != 1) continue;
    carried.insert(chain.back());
    if (u.cas) carried.insert(u.cas);
    carryRunsOfUpdates(chain, u, exclusive);
  }
  for (mlir::Operation* op : atomics) {
    if (carried.contains(op)) continue;
    mlir::OpBuilder at(op);
    Value ptr = op->getOperand(0);
    mlir::Type type = op->getResult(0).getType();
    auto rmw = llvm::dyn_cast<mlir::LLVM::AtomicRMWOp>(op);
    auto cas = llvm::dyn_cast<mlir::LLVM::AtomicCmpXchgOp>(op);
    unsigned align = rmw ? rmw.getAlignment().value_or(1) : cas.getAlignment().value_or(1);
    auto branch = at.create<mlir::scf::IfOp>(op->getLoc(), mlir::TypeRange{type}, exclusive,
                                             /*withElseRegion=*/true);
    mlir::Location l = op->getLoc();
    mlir::OpBuilder t = branch.getThenBodyBuilder();
    mlir::Type valueType = rmw ? rmw.getVal().getType() : cas.getCmp().getType();
    Value old = t.create<mlir::LLVM::LoadOp>(l, valueType, ptr, align);
    Value result = old;
    if (rmw) {
      t.create<mlir::LLVM::StoreOp>(l, plainUpdate(t, rmw, old), ptr, align);
    } else {
      // Storing the old value back where it differs changes nothing.
      Value equal =
          t.create<mlir::LLVM::ICmpOp>(l, mlir::LLVM::ICmpPredicate::eq, old, cas.getCmp());
      t.create<mlir::LLVM::StoreOp>(l, t.create<mlir::LLVM::SelectOp>(l, equal, cas.getVal(), old),
                                    ptr, align);
      Value pair = t.create<mlir::LLVM::UndefOp>(l, type);
      pair = t.create<mlir::LLVM::InsertValueOp>(l, pair, old, 0);
      result = t.create<mlir::LLVM::InsertValueOp>(l, pair, equal, 1);
    }
    t.create<mlir::scf::YieldOp>(l, result);
    mlir::OpBuilder e = branch.getElseBodyBuilder();
    e.create<mlir::scf::YieldOp>(l, e.clone(*op)->getResult(0));
    op->getResult(0).replaceAllUsesWith(branch.getResult(0));
    op->erase();
  }
}

class LowerKernelToCpuPass : public impl::LowerKernelToCpuPassBase<LowerKernelToCpuPass> {
 public:
  using LowerKernelToCpuPassBase::LowerKernelToCpuPassBase;

  void runOnOperation() override {
    mlir::ModuleOp module = getOperation();
    for (auto f : llvm::to_vector(module.getOps<mlir::func::FuncOp>())) {
      if (!f.isPublic() || f.isExternal()) continue;
      mlir::FailureOr<Grid> grid = findGrid(f);
      if (mlir::failed(grid)) return signalPassFailure();
      coalesceThreadLoopNests(f);
      sinkGuardsIntoThreadLoops(f);
      if (mlir::failed(KernelLowering(f, *grid, transposingWrites).run())) return signalPassFailure();
      plainAtomicsWhenExclusive(f, grid->numBlocks());
    }
    SmallVector<mlir::Operation*> truncations;
    module.walk([&](mlir::Operation* op) {
      if (llvm::isa<mlir::arith::TruncFOp, mlir::arith::DivSIOp, mlir::arith::DivUIOp,
                    mlir::arith::RemSIOp, mlir::arith::RemUIOp, mlir::arith::SIToFPOp,
                    mlir::arith::UIToFPOp>(op)) {
        truncations.push_back(op);
      }
    });
    mlir::RewritePatternSet conversions(&getContext());
    conversions.add<TruncF64ThroughF32, IntDivisionThroughFloat<mlir::arith::DivSIOp>,
                    IntDivisionThroughFloat<mlir::arith::DivUIOp>,
                    IntDivisionThroughFloat<mlir::arith::RemSIOp>,
                    IntDivisionThroughFloat<mlir::arith::RemUIOp>,
                    IntToBF16ThroughF32<mlir::arith::SIToFPOp>,
                    IntToBF16ThroughF32<mlir::arith::UIToFPOp>>(&getContext());
    if (!truncations.empty() &&
        mlir::failed(mlir::applyOpPatternsGreedily(truncations, std::move(conversions)))) {
      return signalPassFailure();
    }
    // The shared-memory globals became per-call buffers.
    for (auto global : llvm::to_vector(module.getOps<mlir::LLVM::GlobalOp>())) {
      if (global.getAddrSpace() == 3 && global.getSymbolUses(module)->empty()) global.erase();
    }
  }
};

}  // namespace
}  // namespace xla::gpu
