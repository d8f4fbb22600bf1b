//===- lower_tensors.cpp - -xla-gpu-lower-tensors --------------------------===//
//
// XLA's ABI: every buffer is a plain pointer argument, results are written
// in place. Value-semantics tensors are therefore lowered to the pointer
// of the buffer they live in: an SSA chain of tensor.insert ops on a
// function argument becomes stores through that argument's pointer.
//
//===----------------------------------------------------------------------===//

#include <optional>

#include "dialects/xla_gpu/XlaGpuDialect.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Complex/IR/Complex.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Func/Transforms/FuncConversions.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/SCF/Transforms/Patterns.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Transforms/DialectConversion.h"
#include "mlir/IR/Matchers.h"
#include "mlir/Interfaces/DataLayoutInterfaces.h"
#include "llvm/ADT/BitVector.h"
#include "llvm/ADT/SmallPtrSet.h"
#include "passes/Passes.h"
#include "passes/ValueRanges.h"

namespace xla::gpu {

#define GEN_PASS_DEF_LOWERTENSORSPASS
#include "passes/Passes.h.inc"

namespace {

using llvm::SmallVector;
using mlir::Value;

// Shared memory is address space 3 on NVPTX.
constexpr unsigned kSharedMemorySpace = 3;

bool isTensor(mlir::Type t) { return llvm::isa<mlir::RankedTensorType>(t); }

// Function arguments that nothing writes: their loads are invariant.
llvm::DenseSet<Value> findReadOnlyArguments(mlir::ModuleOp module) {
  llvm::DenseSet<Value> written;
  auto markWritten = [&](Value v) {
    // Follow iteration arguments and yields back to where the tensor came
    // from: a write to a loop-carried tensor writes its init.
    llvm::SmallVector<Value> work = {v};
    while (!work.empty()) {
      Value cur = work.pop_back_val();
      if (!written.insert(cur).second) continue;
      if (auto arg = llvm::dyn_cast<mlir::BlockArgument>(cur)) {
        if (auto forOp = llvm::dyn_cast<mlir::scf::ForOp>(arg.getOwner()->getParentOp())) {
          if (arg.getArgNumber() > 0) work.push_back(forOp.getInitArgs()[arg.getArgNumber() - 1]);
        }
        continue;
      }
      mlir::Operation* def = cur.getDefiningOp();
      if (auto ins = llvm::dyn_cast<mlir::tensor::InsertOp>(def)) work.push_back(ins.getDest());
      if (auto tw = llvm::dyn_cast<mlir::vector::TransferWriteOp>(def)) work.push_back(tw.getBase());
      if (auto rmw = llvm::dyn_cast<AtomicRMWOp>(def)) work.push_back(rmw.getInput());
      if (auto forOp = llvm::dyn_cast<mlir::scf::ForOp>(def)) {
        work.push_back(forOp.getInitArgs()[llvm::cast<mlir::OpResult>(cur).getResultNumber()]);
      }
      if (auto ifOp = llvm::dyn_cast<mlir::scf::IfOp>(def)) {
        unsigned i = llvm::cast<mlir::OpResult>(cur).getResultNumber();
        work.push_back(ifOp.thenYield().getOperand(i));
        if (!ifOp.getElseRegion().empty()) work.push_back(ifOp.elseYield().getOperand(i));
      }
    }
  };
  module.walk([&](mlir::Operation* op) {
    if (auto ins = llvm::dyn_cast<mlir::tensor::InsertOp>(op)) markWritten(ins.getDest());
    if (auto tw = llvm::dyn_cast<mlir::vector::TransferWriteOp>(op)) markWritten(tw.getBase());
    if (auto rmw = llvm::dyn_cast<AtomicRMWOp>(op)) markWritten(rmw.getInput());
  });
  // An argument of the slice of a written one is written too: an output in
  // place of its operand (one `xla.slice_index`, the two arguments merged
  // by -xla-gpu-merge-pointers later). LLVM takes an invariant load's
  // memory as unchanged for the whole program, the GPU reads it through
  // the non-coherent cache: neither may see the kernel's own writes.
  auto sliceOf = [](Value arg) -> mlir::Attribute {
    auto block = llvm::cast<mlir::BlockArgument>(arg);
    auto f = llvm::cast<mlir::func::FuncOp>(block.getOwner()->getParentOp());
    return f.getArgAttr(block.getArgNumber(), kSliceIndex);
  };
  llvm::DenseSet<mlir::Attribute> writtenSlices;
  module.walk([&](mlir::func::FuncOp f) {
    if (f.isExternal()) return;
    for (Value arg : f.getArguments()) {
      if (mlir::Attribute slice = sliceOf(arg); slice && written.contains(arg)) {
        writtenSlices.insert(slice);
      }
    }
  });
  llvm::DenseSet<Value> readOnly;
  module.walk([&](mlir::func::FuncOp f) {
    if (f.isExternal()) return;
    for (Value arg : f.getArguments()) {
      mlir::Attribute slice = sliceOf(arg);
      if (isTensor(arg.getType()) && !written.contains(arg) &&
          !(slice && writtenSlices.contains(slice))) {
        readOnly.insert(arg);
      }
    }
  });
  return readOnly;
}

// The device the atomics are chosen for (the gpu_device_info option).
struct Device {
  enum Kind { kHost, kCuda, kRocm } kind = kHost;
  int major = 0;          // CUDA compute capability
  std::string gcnArch;    // ROCm, e.g. "gfx90a"
};

// What the pass knows of the module: the arguments nothing writes (their
// loads are invariant), the data layout's index width and the device.
struct Lowering {
  llvm::DenseSet<Value> readOnly;
  unsigned indexBits = 64;
  Device device;

  // The width of the element indices into `tensorType`: the data layout's,
  // or 64 bits when the tensor has more elements than that reaches.
  unsigned indexBitsFor(mlir::Type tensorType) const {
    auto type = llvm::dyn_cast<mlir::RankedTensorType>(tensorType);
    if (indexBits >= 64 || !type || !type.hasStaticShape()) return 64;
    return type.getNumElements() < (int64_t{1} << (indexBits - 1)) ? indexBits : 64;
  }
};

// The element `index` of `base` (an index of `bits` bits; a constant one
// goes into the GEP itself, as in XLA's lower-tensors).
Value gep(mlir::OpBuilder& b, mlir::Location loc, Value base, mlir::Type elementType,
          Value index, unsigned bits) {
  auto ptrType = mlir::LLVM::LLVMPointerType::get(b.getContext());
  llvm::APInt constant;
  if (mlir::matchPattern(index, mlir::m_ConstantInt(&constant)) &&
      constant.getSignificantBits() <= mlir::LLVM::kGEPConstantBitWidth) {
    return b.create<mlir::LLVM::GEPOp>(
        loc, ptrType, elementType, base,
        llvm::ArrayRef<mlir::LLVM::GEPArg>{static_cast<int32_t>(constant.getSExtValue())},
        mlir::LLVM::GEPNoWrapFlags::inbounds);
  }
  // Unsigned: a valid index is not negative.
  Value cast = b.create<mlir::arith::IndexCastUIOp>(loc, b.getIntegerType(bits), index);
  return b.create<mlir::LLVM::GEPOp>(loc, ptrType, elementType, base,
                                     mlir::ValueRange{cast},
                                     mlir::LLVM::GEPNoWrapFlags::inbounds);
}

// How a value is kept in memory: floats LLVM lacks (f8) as integers of
// their width; pred a byte an element (i8), as XLA stores pred -- LLVM
// would pack a vector of i1 into bits, and a scalar i1, which it loads
// from a byte, its loop vectorizer cannot widen: a loop of pred loads
// became a load and an insertelement an element (pred -> s32 over
// [1024,1024] 1.55 -> 0.064 ms on one thread).
bool isPred(mlir::Type type) { return mlir::getElementTypeOrSelf(type).isInteger(1); }

mlir::Type storageType(mlir::Type type) {
  if (isPred(type)) {
    auto i8 = mlir::IntegerType::get(type.getContext(), 8);
    auto vec = llvm::dyn_cast<mlir::VectorType>(type);
    return vec ? mlir::Type(vec.clone(i8)) : mlir::Type(i8);
  }
  if (auto vec = llvm::dyn_cast<mlir::VectorType>(type)) {
    return vec.clone(storageType(vec.getElementType()));
  }
  auto flt = llvm::dyn_cast<mlir::FloatType>(type);
  if (flt && !mlir::LLVM::isCompatibleType(flt)) {
    return mlir::IntegerType::get(type.getContext(), flt.getWidth());
  }
  return type;
}

Value toStorage(mlir::OpBuilder& b, mlir::Location loc, Value value) {
  mlir::Type storage = storageType(value.getType());
  if (storage == value.getType()) return value;
  if (isPred(value.getType())) return b.create<mlir::arith::ExtUIOp>(loc, storage, value);
  return b.create<mlir::arith::BitcastOp>(loc, storage, value);
}

Value fromStorage(mlir::OpBuilder& b, mlir::Location loc, mlir::Type type, Value value) {
  if (value.getType() == type) return value;
  if (isPred(type)) {
    // Any nonzero byte is true.
    Value zeros = b.create<mlir::arith::ConstantOp>(loc, b.getZeroAttr(value.getType()));
    return b.create<mlir::arith::CmpIOp>(loc, mlir::arith::CmpIPredicate::ne, value, zeros);
  }
  return b.create<mlir::arith::BitcastOp>(loc, type, value);
}

// Integers narrower than a byte (s4, u2...; not pred) are packed as XLA
// stores them: 8 / width elements a byte, the first in the low bits.
unsigned subByteWidth(mlir::Type type) {
  auto integer = llvm::dyn_cast<mlir::IntegerType>(type);
  if (!integer || integer.getWidth() == 1 || integer.getWidth() >= 8) return 0;
  return integer.getWidth();
}

struct PackedElement {
  Value byte;   // pointer to the byte holding the element
  Value shift;  // i8: where the element starts in it
};

// `v` / `d` without a division when `v` is a sum of multiples of `d`
// (constants, products with a constant multiple of d, their sums and
// differences); std::nullopt otherwise.
std::optional<Value> exactQuotient(mlir::OpBuilder& b, mlir::Location loc, Value v, int64_t d,
                                   int depth = 0) {
  if (depth > 16) return std::nullopt;
  if (auto c = mlir::getConstantIntValue(v)) {
    if (*c % d != 0) return std::nullopt;
    return b.create<mlir::arith::ConstantIndexOp>(loc, *c / d).getResult();
  }
  mlir::Operation* def = v.getDefiningOp();
  if (auto mul = llvm::dyn_cast_or_null<mlir::arith::MulIOp>(def)) {
    for (int i = 0; i < 2; ++i) {
      auto c = mlir::getConstantIntValue(mul->getOperand(i));
      if (c && *c % d == 0) {
        return b.create<mlir::arith::MulIOp>(
                    loc, mul->getOperand(1 - i),
                    b.create<mlir::arith::ConstantIndexOp>(loc, *c / d))
            .getResult();
      }
    }
    return std::nullopt;
  }
  if (llvm::isa_and_nonnull<mlir::arith::AddIOp, mlir::arith::SubIOp>(def)) {
    auto x = exactQuotient(b, loc, def->getOperand(0), d, depth + 1);
    auto y = x ? exactQuotient(b, loc, def->getOperand(1), d, depth + 1) : std::nullopt;
    if (!y) return std::nullopt;
    if (llvm::isa<mlir::arith::AddIOp>(def)) {
      return b.create<mlir::arith::AddIOp>(loc, *x, *y).getResult();
    }
    return b.create<mlir::arith::SubIOp>(loc, *x, *y).getResult();
  }
  return std::nullopt;
}

PackedElement packedElement(mlir::OpBuilder& b, mlir::Location loc, Value base, Value index,
                            unsigned width, unsigned bits) {
  int64_t perByteCount = 8 / width;
  Value perByte = b.create<mlir::arith::ConstantIndexOp>(loc, perByteCount);
  // index = a multiple of the elements a byte holds + a constant (an
  // unrolled thread's k-th element): the byte is the multiple's quotient
  // plus the constant's, the position in it a constant -- so a thread's
  // elements in one byte share its load and store (floor division: a
  // valid index is not negative).
  if (auto add = index.getDefiningOp<mlir::arith::AddIOp>()) {
    for (int i = 0; i < 2; ++i) {
      auto c = mlir::getConstantIntValue(add->getOperand(i));
      if (!c) continue;
      if (auto q = exactQuotient(b, loc, add->getOperand(1 - i), perByteCount)) {
        int64_t position = ((*c % perByteCount) + perByteCount) % perByteCount;
        int64_t carry = (*c - position) / perByteCount;
        Value byteIndex = *q;
        if (carry != 0) {
          byteIndex = b.create<mlir::arith::AddIOp>(
              loc, *q, b.create<mlir::arith::ConstantIndexOp>(loc, carry));
        }
        Value shift = b.create<mlir::arith::ConstantIntOp>(loc, b.getI8Type(), position * width);
        return {gep(b, loc, base, b.getI8Type(), byteIndex, bits), shift};
      }
    }
  }
  if (auto q = exactQuotient(b, loc, index, perByteCount)) {
    return {gep(b, loc, base, b.getI8Type(), *q, bits),
            b.create<mlir::arith::ConstantIntOp>(loc, b.getI8Type(), 0)};
  }
  Value byteIndex = b.create<mlir::arith::DivUIOp>(loc, index, perByte);
  Value position = b.create<mlir::arith::RemUIOp>(loc, index, perByte);
  Value bit = b.create<mlir::arith::MulIOp>(
      loc, position, b.create<mlir::arith::ConstantIndexOp>(loc, width));
  Value shift = b.create<mlir::arith::IndexCastOp>(loc, b.getI8Type(), bit);
  return {gep(b, loc, base, b.getI8Type(), byteIndex, bits), shift};
}

// A complex element in memory: the LLVM struct of its (re, im) parts, as
// XLA stores it (and as -xla-gpu-lower-to-llvm lowers the complex type).
mlir::Type complexStruct(mlir::ComplexType type) {
  mlir::Type part = type.getElementType();
  return mlir::LLVM::LLVMStructType::getLiteral(type.getContext(), {part, part});
}

Value singleIndex(mlir::Operation* op, mlir::ValueRange indices,
                  mlir::ConversionPatternRewriter& rewriter) {
  if (indices.size() != 1) {
    op->emitOpError() << "has " << indices.size()
                      << " indices; run -xla-gpu-flatten-tensors before lowering tensors";
    return nullptr;
  }
  return indices[0];
}

template <typename OpT>
struct TensorPattern : public mlir::OpConversionPattern<OpT> {
  TensorPattern(const mlir::TypeConverter& converter, mlir::MLIRContext* ctx,
                const Lowering& lowering)
      : mlir::OpConversionPattern<OpT>(converter, ctx), lowering(lowering) {}
  const Lowering& lowering;
};

struct LowerExtract : public TensorPattern<mlir::tensor::ExtractOp> {
  using TensorPattern::TensorPattern;
  mlir::LogicalResult matchAndRewrite(mlir::tensor::ExtractOp op, OpAdaptor adaptor,
                                      mlir::ConversionPatternRewriter& rewriter) const override {
    Value index = singleIndex(op, adaptor.getIndices(), rewriter);
    if (!index) return mlir::failure();
    bool invariant = lowering.readOnly.contains(op.getTensor());
    unsigned bits = lowering.indexBitsFor(op.getTensor().getType());
    if (auto complex = llvm::dyn_cast<mlir::ComplexType>(op.getType())) {
      // One load of the (re, im) struct.
      mlir::Location loc = op.getLoc();
      mlir::Type pair = complexStruct(complex);
      Value ptr = gep(rewriter, loc, adaptor.getTensor(), pair, index, bits);
      Value loaded = rewriter.create<mlir::LLVM::LoadOp>(loc, pair, ptr, /*alignment=*/0,
                                                         /*isVolatile=*/false,
                                                         /*isNonTemporal=*/false, invariant);
      rewriter.replaceOpWithNewOp<mlir::UnrealizedConversionCastOp>(op, complex, loaded);
      return mlir::success();
    }
    if (unsigned width = subByteWidth(op.getType())) {
      mlir::Location loc = op.getLoc();
      auto [ptr, shift] = packedElement(rewriter, loc, adaptor.getTensor(), index, width, bits);
      Value byte = rewriter.create<mlir::LLVM::LoadOp>(loc, rewriter.getI8Type(), ptr,
                                                       /*alignment=*/0, /*isVolatile=*/false,
                                                       /*isNonTemporal=*/false, invariant);
      Value shifted = rewriter.create<mlir::arith::ShRUIOp>(loc, byte, shift);
      rewriter.replaceOpWithNewOp<mlir::arith::TruncIOp>(op, op.getType(), shifted);
      return mlir::success();
    }
    mlir::Type elt = storageType(op.getType());
    Value ptr = gep(rewriter, op.getLoc(), adaptor.getTensor(), elt, index, bits);
    Value loaded = rewriter.create<mlir::LLVM::LoadOp>(op.getLoc(), elt, ptr, /*alignment=*/0,
                                                       /*isVolatile=*/false,
                                                       /*isNonTemporal=*/false, invariant);
    rewriter.replaceOp(op, fromStorage(rewriter, op.getLoc(), op.getType(), loaded));
    return mlir::success();
  }
};

struct LowerInsert : public TensorPattern<mlir::tensor::InsertOp> {
  using TensorPattern::TensorPattern;
  mlir::LogicalResult matchAndRewrite(mlir::tensor::InsertOp op, OpAdaptor adaptor,
                                      mlir::ConversionPatternRewriter& rewriter) const override {
    Value index = singleIndex(op, adaptor.getIndices(), rewriter);
    if (!index) return mlir::failure();
    unsigned bits = lowering.indexBitsFor(op.getDest().getType());
    if (auto complex = llvm::dyn_cast<mlir::ComplexType>(op.getScalar().getType())) {
      // One store of the (re, im) struct.
      mlir::Location loc = op.getLoc();
      mlir::Type pair = complexStruct(complex);
      Value value =
          rewriter.create<mlir::UnrealizedConversionCastOp>(loc, pair, adaptor.getScalar())
              .getResult(0);
      rewriter.create<mlir::LLVM::StoreOp>(
          loc, value, gep(rewriter, loc, adaptor.getDest(), pair, index, bits));
      rewriter.replaceOp(op, adaptor.getDest());
      return mlir::success();
    }
    if (unsigned width = subByteWidth(op.getScalar().getType())) {
      // Read, replace the element's bits, write back: the loop emitter has
      // one thread write every element of a byte, so no other writes it.
      mlir::Location loc = op.getLoc();
      auto i8 = rewriter.getI8Type();
      auto [ptr, shift] = packedElement(rewriter, loc, adaptor.getDest(), index, width, bits);
      Value byte = rewriter.create<mlir::LLVM::LoadOp>(loc, i8, ptr);
      Value ones = rewriter.create<mlir::arith::ConstantIntOp>(loc, (1 << width) - 1, 8);
      Value mask = rewriter.create<mlir::arith::ShLIOp>(loc, ones, shift);
      Value keep = rewriter.create<mlir::arith::AndIOp>(
          loc, byte, rewriter.create<mlir::arith::XOrIOp>(
                         loc, mask, rewriter.create<mlir::arith::ConstantIntOp>(loc, -1, 8)));
      Value bits = rewriter.create<mlir::arith::ShLIOp>(
          loc, rewriter.create<mlir::arith::ExtUIOp>(loc, i8, adaptor.getScalar()), shift);
      Value merged = rewriter.create<mlir::arith::OrIOp>(loc, keep, bits);
      rewriter.create<mlir::LLVM::StoreOp>(loc, merged, ptr);
      rewriter.replaceOp(op, adaptor.getDest());
      return mlir::success();
    }
    Value scalar = toStorage(rewriter, op.getLoc(), adaptor.getScalar());
    Value ptr = gep(rewriter, op.getLoc(), adaptor.getDest(), scalar.getType(), index, bits);
    rewriter.create<mlir::LLVM::StoreOp>(op.getLoc(), scalar, ptr);
    rewriter.replaceOp(op, adaptor.getDest());
    return mlir::success();
  }
};

// The flat index of a vector transfer on a tensor; null (no match) for one
// on a vector or on packed sub-byte integers, or with several indices.
template <typename OpT, typename AdaptorT>
Value transferIndex(OpT op, AdaptorT adaptor, mlir::ConversionPatternRewriter& rewriter) {
  if (!isTensor(op.getBase().getType())) return nullptr;
  if (subByteWidth(op.getVectorType().getElementType())) {
    (void)rewriter.notifyMatchFailure(op, "vectors of packed sub-byte integers");
    return nullptr;
  }
  return singleIndex(op, adaptor.getIndices(), rewriter);
}

struct LowerTransferRead : public TensorPattern<mlir::vector::TransferReadOp> {
  using TensorPattern::TensorPattern;
  mlir::LogicalResult matchAndRewrite(mlir::vector::TransferReadOp op, OpAdaptor adaptor,
                                      mlir::ConversionPatternRewriter& rewriter) const override {
    Value index = transferIndex(op, adaptor, rewriter);
    if (!index) return mlir::failure();
    auto vecType = llvm::cast<mlir::VectorType>(storageType(op.getVectorType()));
    Value ptr = gep(rewriter, op.getLoc(), adaptor.getBase(), vecType.getElementType(), index,
                    lowering.indexBitsFor(op.getBase().getType()));
    bool invariant = lowering.readOnly.contains(op.getBase());
    Value loaded = rewriter.create<mlir::LLVM::LoadOp>(op.getLoc(), vecType, ptr,
                                                       /*alignment=*/0, /*isVolatile=*/false,
                                                       /*isNonTemporal=*/false, invariant);
    rewriter.replaceOp(op, fromStorage(rewriter, op.getLoc(), op.getVectorType(), loaded));
    return mlir::success();
  }
};

struct LowerTransferWrite : public TensorPattern<mlir::vector::TransferWriteOp> {
  using TensorPattern::TensorPattern;
  mlir::LogicalResult matchAndRewrite(mlir::vector::TransferWriteOp op, OpAdaptor adaptor,
                                      mlir::ConversionPatternRewriter& rewriter) const override {
    Value index = transferIndex(op, adaptor, rewriter);
    if (!index) return mlir::failure();
    Value value = toStorage(rewriter, op.getLoc(), adaptor.getValueToStore());
    Value ptr = gep(rewriter, op.getLoc(), adaptor.getBase(),
                    llvm::cast<mlir::VectorType>(value.getType()).getElementType(), index,
                    lowering.indexBitsFor(op.getBase().getType()));
    rewriter.create<mlir::LLVM::StoreOp>(op.getLoc(), value, ptr);
    rewriter.replaceOp(op, adaptor.getBase());
    return mlir::success();
  }
};

// A constant array (an HLO array constant read at a computed index) becomes
// a private constant global; its value is the flattened attribute.
struct LowerTensorConstant : public mlir::OpConversionPattern<mlir::arith::ConstantOp> {
  using OpConversionPattern::OpConversionPattern;
  mlir::LogicalResult matchAndRewrite(mlir::arith::ConstantOp op, OpAdaptor,
                                      mlir::ConversionPatternRewriter& rewriter) const override {
    auto type = llvm::dyn_cast<mlir::RankedTensorType>(op.getType());
    auto dense = llvm::dyn_cast<mlir::DenseElementsAttr>(op.getValue());
    if (!type || !dense) return mlir::failure();
    mlir::Type elt = type.getElementType();
    if ((storageType(elt) != elt && !isPred(elt)) || !elt.isIntOrFloat()) {
      return rewriter.notifyMatchFailure(op, "constant arrays of this element type");
    }
    mlir::Attribute flat;
    mlir::Type arrayType;
    if (isPred(elt)) {
      // A byte an element, as the loads read it.
      llvm::SmallVector<int8_t> bytes;
      for (bool v : dense.getValues<bool>()) bytes.push_back(v ? 1 : 0);
      auto byteType = mlir::RankedTensorType::get({static_cast<int64_t>(bytes.size())},
                                                  rewriter.getI8Type());
      flat = mlir::DenseElementsAttr::get(byteType, llvm::ArrayRef<int8_t>(bytes));
      arrayType = mlir::LLVM::LLVMArrayType::get(rewriter.getI8Type(), bytes.size());
    } else if (unsigned width = subByteWidth(elt)) {
      // Packed as the loads read it.
      int64_t perByte = 8 / width;
      llvm::SmallVector<int8_t> bytes((type.getNumElements() + perByte - 1) / perByte, 0);
      int64_t i = 0;
      for (const llvm::APInt& v : dense.getValues<llvm::APInt>()) {
        uint64_t bits = v.getZExtValue() & ((1u << width) - 1);
        int8_t& byte = bytes[i / perByte];
        byte = static_cast<int8_t>(byte | bits << (i % perByte * width));
        ++i;
      }
      auto byteType = mlir::RankedTensorType::get({static_cast<int64_t>(bytes.size())},
                                                  rewriter.getI8Type());
      flat = mlir::DenseElementsAttr::get(byteType, llvm::ArrayRef<int8_t>(bytes));
      arrayType = mlir::LLVM::LLVMArrayType::get(rewriter.getI8Type(), bytes.size());
    } else {
      flat = dense.reshape(mlir::RankedTensorType::get({type.getNumElements()}, elt));
      arrayType = mlir::LLVM::LLVMArrayType::get(elt, type.getNumElements());
    }
    std::string name = addGlobal(rewriter, op, "constant_", arrayType, /*isConstant=*/true,
                                 flat, /*addrSpace=*/0);
    rewriter.replaceOpWithNewOp<mlir::LLVM::AddressOfOp>(
        op, mlir::LLVM::LLVMPointerType::get(getContext()), name);
    return mlir::success();
  }
};

struct LowerAllocateShared : public mlir::OpConversionPattern<AllocateSharedOp> {
  using OpConversionPattern::OpConversionPattern;
  mlir::LogicalResult matchAndRewrite(AllocateSharedOp op, OpAdaptor,
                                      mlir::ConversionPatternRewriter& rewriter) const override {
    auto type = llvm::cast<mlir::RankedTensorType>(op.getType());
    mlir::Type arrayType =
        mlir::LLVM::LLVMArrayType::get(storageType(type.getElementType()), type.getNumElements());
    if (unsigned width = subByteWidth(type.getElementType())) {
      arrayType = mlir::LLVM::LLVMArrayType::get(
          rewriter.getI8Type(), (type.getNumElements() * width + 7) / 8);
    }
    // A complex element is its (re, im) struct, as the accesses have it.
    if (auto complex = llvm::dyn_cast<mlir::ComplexType>(type.getElementType())) {
      arrayType = mlir::LLVM::LLVMArrayType::get(complexStruct(complex), type.getNumElements());
    }
    std::string name = addGlobal(rewriter, op, "shared_", arrayType, /*isConstant=*/false,
                                 mlir::Attribute(), kSharedMemorySpace);
    auto sharedPtr = mlir::LLVM::LLVMPointerType::get(getContext(), kSharedMemorySpace);
    Value addr = rewriter.create<mlir::LLVM::AddressOfOp>(op.getLoc(), sharedPtr, name);
    rewriter.replaceOpWithNewOp<mlir::LLVM::AddrSpaceCastOp>(
        op, mlir::LLVM::LLVMPointerType::get(getContext()), addr);
    return mlir::success();
  }
};

struct LowerSyncThreads : public mlir::OpConversionPattern<SyncThreadsOp> {
  using OpConversionPattern::OpConversionPattern;
  mlir::LogicalResult matchAndRewrite(SyncThreadsOp op, OpAdaptor adaptor,
                                      mlir::ConversionPatternRewriter& rewriter) const override {
    rewriter.create<mlir::gpu::BarrierOp>(op.getLoc());
    rewriter.replaceOp(op, adaptor.getOperands());
    return mlir::success();
  }
};

// Whether the device adds `type` floats atomically (PTX atom.add.f16 from
// sm_70, .bf16 from sm_90, .f64 from sm_60; ROCm's global fadd for f32, and
// for f16 from gfx90a). The host's LLVM has every atomicrmw fadd.
bool hasNativeFAdd(const Device& device, mlir::Type type) {
  switch (device.kind) {
    case Device::kHost:
      return true;
    case Device::kCuda:
      if (type.isF32()) return true;
      if (type.isF64()) return device.major >= 6;
      if (type.isF16()) return device.major >= 7;
      if (type.isBF16()) return device.major >= 9;
      return false;
    case Device::kRocm: {
      if (type.isF32()) return true;
      llvm::StringRef arch(device.gcnArch);
      bool fp16Atomics = arch.starts_with("gfx90a") || arch.starts_with("gfx94") ||
                         arch.starts_with("gfx95");
      return type.isF16() && fp16Atomics;
    }
  }
  return false;
}

// atomic_rmw: a native llvm.atomicrmw when the region is `current <op> x`
// with x defined outside and the device has it; otherwise a
// compare-and-swap loop.
struct LowerAtomicRMW : public TensorPattern<AtomicRMWOp> {
  using TensorPattern::TensorPattern;

  static std::optional<mlir::LLVM::AtomicBinOp> nativeKind(mlir::Operation* op) {
    using K = mlir::LLVM::AtomicBinOp;
    if (llvm::isa<mlir::arith::AddFOp>(op)) return K::fadd;
    if (llvm::isa<mlir::arith::AddIOp>(op)) return K::add;
    if (llvm::isa<mlir::arith::MaxSIOp>(op)) return K::max;
    if (llvm::isa<mlir::arith::MinSIOp>(op)) return K::min;
    if (llvm::isa<mlir::arith::MaxUIOp>(op)) return K::umax;
    if (llvm::isa<mlir::arith::MinUIOp>(op)) return K::umin;
    if (llvm::isa<mlir::arith::AndIOp>(op)) return K::_and;
    if (llvm::isa<mlir::arith::OrIOp>(op)) return K::_or;
    if (llvm::isa<mlir::arith::XOrIOp>(op)) return K::_xor;
    return std::nullopt;
  }

  mlir::LogicalResult matchAndRewrite(AtomicRMWOp op, OpAdaptor adaptor,
                                      mlir::ConversionPatternRewriter& rewriter) const override {
    Value index = singleIndex(op, adaptor.getIndices(), rewriter);
    if (!index) return mlir::failure();
    mlir::Location loc = op.getLoc();
    mlir::Block* body = op.getBody();
    Value current = body->getArgument(0);
    mlir::Type elt = current.getType();
    unsigned bits = lowering.indexBitsFor(op.getInput().getType());
    auto yield = llvm::cast<YieldOp>(body->getTerminator());
    Value updated = yield.getResult()[0];
    auto c = [&](int64_t v, unsigned bits) -> Value {
      return rewriter.create<mlir::arith::ConstantIntOp>(loc, v, bits);
    };
    // Packed sub-byte integers: a compare-and-swap of the 32-bit word
    // holding the element's byte, at the element's bits in it.
    if (unsigned width = subByteWidth(elt)) {
      auto [byte, shift] = packedElement(rewriter, loc, adaptor.getInput(), index, width, bits);
      auto [word, bit] = enclosingWord(rewriter, loc, byte);
      Value at = rewriter.create<mlir::arith::AddIOp>(
          loc, bit, rewriter.create<mlir::arith::ExtUIOp>(loc, rewriter.getI32Type(), shift));
      emitSubWordCasLoop(rewriter, op, word, at, width);
      rewriter.replaceOp(op, adaptor.getInput());
      return mlir::success();
    }
    // complex<f32>: one 64-bit compare-and-swap of the (re, im) pair.
    if (auto complex = llvm::dyn_cast<mlir::ComplexType>(elt)) {
      mlir::Type part = complex.getElementType();
      if (!part.isF32()) return rewriter.notifyMatchFailure(op, "refused before conversion");
      Value ptr = gep(rewriter, loc, adaptor.getInput(), complexStruct(complex), index, bits);
      auto i32 = rewriter.getI32Type(), i64 = rewriter.getI64Type();
      emitCasLoop(rewriter, op, ptr, i64,
                  [&](mlir::OpBuilder& b, Value old) -> Value {
                    auto half = [&](Value bits) {
                      return b.create<mlir::arith::BitcastOp>(
                          loc, part, b.create<mlir::arith::TruncIOp>(loc, i32, bits));
                    };
                    Value high = b.create<mlir::arith::ShRUIOp>(loc, old, c(32, 64));
                    return b.create<mlir::complex::CreateOp>(loc, complex, half(old), half(high));
                  },
                  [&](mlir::OpBuilder& b, Value, Value value) -> Value {
                    auto bits = [&](Value x) {
                      return b.create<mlir::arith::ExtUIOp>(
                          loc, i64, b.create<mlir::arith::BitcastOp>(loc, i32, x));
                    };
                    Value low = bits(b.create<mlir::complex::ReOp>(loc, value));
                    Value high = bits(b.create<mlir::complex::ImOp>(loc, value));
                    return b.create<mlir::arith::OrIOp>(
                        loc, low, b.create<mlir::arith::ShLIOp>(loc, high, c(32, 64)));
                  });
      rewriter.replaceOp(op, adaptor.getInput());
      return mlir::success();
    }
    Value ptr = gep(rewriter, loc, adaptor.getInput(), elt, index, bits);
    // Native: `updated = current <op> x`, the only op of the body, or a
    // narrow float add in the form expand-float-ops leaves it.
    std::optional<mlir::LLVM::AtomicBinOp> kind;
    Value other;
    if (mlir::Operation* def = updated.getDefiningOp();
        def && def->getBlock() == body && &body->front() == def &&
        def->getNextNode() == yield.getOperation() && def->getNumOperands() == 2) {
      other = def->getOperand(0) == current ? def->getOperand(1) : def->getOperand(0);
      bool usesCurrent = def->getOperand(0) == current || def->getOperand(1) == current;
      kind = nativeKind(def);
      if (kind == mlir::LLVM::AtomicBinOp::fadd && !hasNativeFAdd(lowering.device, elt)) {
        kind = std::nullopt;
      }
      // Integer atomics are 32- and 64-bit (as XLA's; narrower ones are a
      // word's compare-and-swap below).
      if (kind && kind != mlir::LLVM::AtomicBinOp::fadd && elt.getIntOrFloatBitWidth() < 32) {
        kind = std::nullopt;
      }
      if (!usesCurrent || other == current) kind = std::nullopt;
    } else if (lowering.device.kind != Device::kHost && hasNativeFAdd(lowering.device, elt)) {
      if (Value x = narrowAddOperand(op)) {
        kind = mlir::LLVM::AtomicBinOp::fadd;
        other = x;
      }
    }
    if (kind) {
      // ROCm: on the global address space, at agent scope (XLA's form).
      llvm::StringRef scope;
      if (lowering.device.kind == Device::kRocm) {
        ptr = rewriter.create<mlir::LLVM::AddrSpaceCastOp>(
            loc, mlir::LLVM::LLVMPointerType::get(getContext(), 1), ptr);
        scope = "agent";
      }
      auto native = rewriter.create<mlir::LLVM::AtomicRMWOp>(
          loc, *kind, ptr, other, mlir::LLVM::AtomicOrdering::monotonic, scope);
      // The scatter emitter's mark of sorted indices (runs of updates of
      // one element), for -xla-gpu-lower-kernel-to-cpu.
      if (mlir::Attribute sorted = op->getAttr(kSortedUpdates)) {
        native->setAttr(kSortedUpdates, sorted);
      }
      rewriter.replaceOp(op, adaptor.getInput());
      return mlir::success();
    }
    // Compare-and-swap loop on the bits of the value; an 8- or 16-bit one
    // on the 32-bit word that holds it (XLA's form: GPUs compare and swap
    // words).
    if (!elt.isIntOrFloat()) {
      return op.emitOpError() << "has no atomic update for " << elt
                              << " values (only integers, floats and complex<f32>)";
    }
    unsigned width = elt.getIntOrFloatBitWidth();
    if (width != 8 && width != 16 && width != 32 && width != 64) {
      return op.emitOpError() << "has no atomic update for " << width << "-bit values";
    }
    if (width < 32) {
      auto [word, bit] = enclosingWord(rewriter, loc, ptr);
      emitSubWordCasLoop(rewriter, op, word, bit, width);
      rewriter.replaceOp(op, adaptor.getInput());
      return mlir::success();
    }
    mlir::Type intType = rewriter.getIntegerType(width);
    emitCasLoop(rewriter, op, ptr, intType,
                [&](mlir::OpBuilder& b, Value old) -> Value {
                  return elt == intType ? old
                                        : b.create<mlir::arith::BitcastOp>(loc, elt, old)
                                              .getResult();
                },
                [&](mlir::OpBuilder& b, Value, Value value) -> Value {
                  return elt == intType ? value
                                        : b.create<mlir::arith::BitcastOp>(loc, intType, value)
                                              .getResult();
                });
    rewriter.replaceOp(op, adaptor.getInput());
    return mlir::success();
  }

  // `x` when the body of a bf16/f16 atomic is `truncf(extf(current) +
  // extf(x))` with x from outside: the add in f32 rounded once, as
  // expand-float-ops computes a narrow add -- exactly the narrow type's own
  // add, which the GPU has as an atomic. Null otherwise.
  static Value narrowAddOperand(AtomicRMWOp op) {
    mlir::Block* body = op.getBody();
    Value current = body->getArgument(0);
    mlir::Type elt = current.getType();
    if (!elt.isF16() && !elt.isBF16()) return nullptr;
    auto yield = llvm::cast<YieldOp>(body->getTerminator());
    auto trunc = yield.getResult()[0].getDefiningOp<mlir::arith::TruncFOp>();
    if (!trunc || trunc.getType() != elt) return nullptr;
    auto add = trunc.getIn().getDefiningOp<mlir::arith::AddFOp>();
    if (!add || !add.getType().isF32()) return nullptr;
    // Nothing else in the body (the extensions, the add, the rounding).
    if (llvm::range_size(body->without_terminator()) > 4) return nullptr;
    for (int i = 0; i < 2; ++i) {
      auto mine = add->getOperand(i).getDefiningOp<mlir::arith::ExtFOp>();
      auto theirs = add->getOperand(1 - i).getDefiningOp<mlir::arith::ExtFOp>();
      if (!mine || !theirs || mine.getIn() != current) continue;
      Value x = theirs.getIn();
      // (During the conversion a function's old arguments may sit in a
      // block of no region: they are outside too.)
      mlir::Operation* where = x.getDefiningOp();
      if (auto arg = llvm::dyn_cast<mlir::BlockArgument>(x)) where = arg.getOwner()->getParentOp();
      bool outside = !where || !op->isAncestor(where);
      if (x.getType() == elt && outside) return x;
    }
    return nullptr;
  }

  // The 32-bit word holding the byte at `ptr`, and the bit (i32) where
  // the byte starts in it (little-endian, as NVPTX and x86 are).
  static std::pair<Value, Value> enclosingWord(mlir::OpBuilder& b, mlir::Location loc,
                                               Value ptr) {
    auto i64 = b.getI64Type();
    auto c = [&](int64_t v) { return b.create<mlir::arith::ConstantIntOp>(loc, v, 64); };
    Value address = b.create<mlir::LLVM::PtrToIntOp>(loc, i64, ptr);
    Value offset = b.create<mlir::arith::AndIOp>(loc, address, c(3));
    Value back = b.create<mlir::arith::SubIOp>(loc, c(0), offset);
    Value word = b.create<mlir::LLVM::GEPOp>(loc, ptr.getType(), b.getI8Type(), ptr,
                                             mlir::ValueRange{back},
                                             mlir::LLVM::GEPNoWrapFlags::inbounds);
    Value bit = b.create<mlir::arith::TruncIOp>(
        loc, b.getI32Type(), b.create<mlir::arith::MulIOp>(loc, offset, c(8)));
    return {word, bit};
  }

  // A compare-and-swap loop on the 32-bit word at `word` for the `width`
  // bits of the element starting at bit `at` (i32) in it.
  static void emitSubWordCasLoop(mlir::ConversionPatternRewriter& rewriter, AtomicRMWOp op,
                                 Value word, Value at, unsigned width) {
    mlir::Location loc = op.getLoc();
    mlir::Type elt = op.getBody()->getArgument(0).getType();
    auto i32 = rewriter.getI32Type();
    mlir::Type bitsType = rewriter.getIntegerType(width);
    auto c = [&](int64_t v) { return rewriter.create<mlir::arith::ConstantIntOp>(loc, v, 32); };
    Value mask = rewriter.create<mlir::arith::ShLIOp>(loc, c((int64_t{1} << width) - 1), at);
    Value keep = rewriter.create<mlir::arith::XOrIOp>(loc, mask, c(-1));
    emitCasLoop(rewriter, op, word, i32,
                [&](mlir::OpBuilder& b, Value old) -> Value {
                  Value bits = b.create<mlir::arith::TruncIOp>(
                      loc, bitsType, b.create<mlir::arith::ShRUIOp>(loc, old, at));
                  return elt == bitsType ? bits
                                         : b.create<mlir::arith::BitcastOp>(loc, elt, bits)
                                               .getResult();
                },
                [&](mlir::OpBuilder& b, Value old, Value value) -> Value {
                  Value bits = elt == bitsType
                                   ? value
                                   : b.create<mlir::arith::BitcastOp>(loc, bitsType, value)
                                         .getResult();
                  Value placed = b.create<mlir::arith::ShLIOp>(
                      loc, b.create<mlir::arith::ExtUIOp>(loc, i32, bits), at);
                  return b.create<mlir::arith::OrIOp>(
                      loc, b.create<mlir::arith::AndIOp>(loc, old, keep),
                      b.create<mlir::arith::AndIOp>(loc, placed, mask));
                });
  }

  // A compare-and-swap loop on the `storage`-typed word at `ptr`: the
  // element's old value is `extract(word)`, the body of `op` computes the
  // new one, `insert(word, value)` puts it back into the word.
  static void emitCasLoop(
      mlir::ConversionPatternRewriter& rewriter, AtomicRMWOp op, Value ptr, mlir::Type storage,
      llvm::function_ref<Value(mlir::OpBuilder&, Value)> extract,
      llvm::function_ref<Value(mlir::OpBuilder&, Value, Value)> insert) {
    mlir::Location loc = op.getLoc();
    mlir::Block* body = op.getBody();
    Value current = body->getArgument(0);
    Value updated = llvm::cast<YieldOp>(body->getTerminator()).getResult()[0];
    Value initial = rewriter.create<mlir::LLVM::LoadOp>(loc, storage, ptr);
    auto loop = rewriter.create<mlir::scf::WhileOp>(loc, storage, initial);
    mlir::Block* before = rewriter.createBlock(&loop.getBefore(), {}, {storage}, {loc});
    Value oldBits = before->getArgument(0);
    mlir::IRMapping mapping;
    mapping.map(current, extract(rewriter, oldBits));
    for (mlir::Operation& inner : body->without_terminator()) rewriter.clone(inner, mapping);
    Value newBits = insert(rewriter, oldBits, mapping.lookupOrDefault(updated));
    auto cas = rewriter.create<mlir::LLVM::AtomicCmpXchgOp>(
        loc, ptr, oldBits, newBits, mlir::LLVM::AtomicOrdering::monotonic,
        mlir::LLVM::AtomicOrdering::monotonic);
    Value seen = rewriter.create<mlir::LLVM::ExtractValueOp>(loc, cas, 0);
    Value ok = rewriter.create<mlir::LLVM::ExtractValueOp>(loc, cas, 1);
    Value retry = rewriter.create<mlir::arith::XOrIOp>(
        loc, ok, rewriter.create<mlir::arith::ConstantIntOp>(loc, 1, 1));
    rewriter.create<mlir::scf::ConditionOp>(loc, retry, mlir::ValueRange{seen});
    mlir::Block* after = rewriter.createBlock(&loop.getAfter(), {}, {storage}, {loc});
    rewriter.create<mlir::scf::YieldOp>(loc, after->getArgument(0));
    rewriter.setInsertionPointAfter(loop);
    // The scatter emitter's mark of sorted indices, on the loop (see the
    // native atomic's).
    if (mlir::Attribute sorted = op->getAttr(kSortedUpdates)) loop->setAttr(kSortedUpdates, sorted);
  }
};

// func.return of an entry function: tensor results are written in place.
struct DropTensorResults : public mlir::OpConversionPattern<mlir::func::ReturnOp> {
  using OpConversionPattern::OpConversionPattern;
  mlir::LogicalResult matchAndRewrite(mlir::func::ReturnOp op, OpAdaptor adaptor,
                                      mlir::ConversionPatternRewriter& rewriter) const override {
    SmallVector<Value> kept;
    for (auto [orig, converted] : llvm::zip(op.getOperands(), adaptor.getOperands())) {
      if (!isTensor(orig.getType())) kept.push_back(converted);
    }
    rewriter.replaceOpWithNewOp<mlir::func::ReturnOp>(op, kept);
    return mlir::success();
  }
};

struct ConvertSignature : public mlir::OpConversionPattern<mlir::func::FuncOp> {
  using OpConversionPattern::OpConversionPattern;
  mlir::LogicalResult matchAndRewrite(mlir::func::FuncOp f, OpAdaptor,
                                      mlir::ConversionPatternRewriter& rewriter) const override {
    mlir::FunctionType type = f.getFunctionType();
    mlir::TypeConverter::SignatureConversion signature(type.getNumInputs());
    for (auto [i, t] : llvm::enumerate(type.getInputs())) {
      signature.addInputs(i, getTypeConverter()->convertType(t));
    }
    SmallVector<mlir::Type> results;
    for (mlir::Type t : type.getResults()) {
      if (!isTensor(t)) results.push_back(t);
    }
    if (!f.isExternal() &&
        failed(rewriter.convertRegionTypes(&f.getBody(), *getTypeConverter(), &signature))) {
      return mlir::failure();
    }
    rewriter.modifyOpInPlace(f, [&] {
      f.setType(mlir::FunctionType::get(getContext(), signature.getConvertedTypes(), results));
    });
    return mlir::success();
  }
};

// XLA's gpu_device_info text proto, the part that picks atomics:
// `cuda_compute_capability { major: N [minor: M] }` or
// `rocm_compute_capability { gcn_arch_name: "gfx..." }`; empty is the host.
mlir::FailureOr<Device> parseDeviceInfo(llvm::StringRef text, std::string& error) {
  Device device;
  text = text.trim();
  if (text.empty()) return device;
  auto field = [](llvm::StringRef body, llvm::StringRef name) -> std::optional<llvm::StringRef> {
    size_t at = body.find(name);
    if (at == llvm::StringRef::npos) return std::nullopt;
    llvm::StringRef rest = body.drop_front(at + name.size()).ltrim();
    if (!rest.consume_front(":")) return std::nullopt;
    rest = rest.ltrim();
    if (rest.consume_front("\"")) return rest.take_until([](char c) { return c == '"'; });
    return rest.take_while([](char c) { return llvm::isDigit(c); });
  };
  auto block = [&](llvm::StringRef name) -> std::optional<llvm::StringRef> {
    if (!text.starts_with(name)) return std::nullopt;
    llvm::StringRef rest = text.drop_front(name.size()).ltrim();
    if (!rest.consume_front("{") || !rest.consume_back("}")) return std::nullopt;
    return rest;
  };
  if (auto body = block("cuda_compute_capability")) {
    auto major = field(*body, "major");
    if (major && !major->empty() && !major->getAsInteger(10, device.major)) {
      device.kind = Device::kCuda;
      return device;
    }
  } else if (auto body = block("rocm_compute_capability")) {
    auto arch = field(*body, "gcn_arch_name");
    if (arch && !arch->empty()) {
      device.kind = Device::kRocm;
      device.gcnArch = arch->str();
      return device;
    }
  }
  error = ("gpu_device_info: expected 'cuda_compute_capability { major: N }' or "
           "'rocm_compute_capability { gcn_arch_name: \"gfx...\" }', got '" +
           text + "'").str();
  return mlir::failure();
}

// The region-holding op `op` without the results `drop` (and the operands
// of every region's yield that feed them); its regions move to the new op.
template <typename OpT>
OpT withoutResults(mlir::OpBuilder& b, OpT op, const llvm::BitVector& drop,
                   llvm::function_ref<OpT(mlir::TypeRange)> create) {
  SmallVector<mlir::Type> kept;
  for (auto [i, t] : llvm::enumerate(op->getResultTypes())) {
    if (!drop.test(i)) kept.push_back(t);
  }
  b.setInsertionPoint(op);
  OpT replacement = create(kept);
  for (auto [from, to] : llvm::zip(op->getRegions(), replacement->getRegions())) {
    to.getBlocks().clear();
    to.takeBody(from);
    for (mlir::Block& block : to) {
      if (auto yield = llvm::dyn_cast<mlir::scf::YieldOp>(block.getTerminator())) {
        yield->eraseOperands(drop);
      }
    }
  }
  replacement->setDiscardableAttrs(op->getDiscardableAttrDictionary());
  unsigned next = 0;
  for (auto [i, result] : llvm::enumerate(op->getResults())) {
    if (!drop.test(i)) result.replaceAllUsesWith(replacement->getResult(next++));
  }
  op->erase();
  return replacement;
}

mlir::scf::IfOp ifWithoutResults(mlir::OpBuilder& b, mlir::scf::IfOp op,
                                 const llvm::BitVector& drop) {
  mlir::scf::IfOp result =
      withoutResults<mlir::scf::IfOp>(b, op, drop, [&](mlir::TypeRange types) {
        return b.create<mlir::scf::IfOp>(op.getLoc(), types, op.getCondition(),
                                         /*withElseRegion=*/!op.getElseRegion().empty());
      });
  // An else left with nothing to do goes.
  mlir::Region& otherwise = result.getElseRegion();
  if (result.getNumResults() == 0 && !otherwise.empty() &&
      otherwise.front().without_terminator().empty()) {
    otherwise.front().erase();
  }
  return result;
}

mlir::scf::IndexSwitchOp switchWithoutResults(mlir::OpBuilder& b, mlir::scf::IndexSwitchOp op,
                                              const llvm::BitVector& drop) {
  return withoutResults<mlir::scf::IndexSwitchOp>(b, op, drop, [&](mlir::TypeRange types) {
    return b.create<mlir::scf::IndexSwitchOp>(op.getLoc(), types, op.getArg(), op.getCases(),
                                              op.getNumCases());
  });
}

// XLA's first step: results of an scf.index_switch nothing uses go.
void dropUnusedSwitchResults(mlir::ModuleOp module) {
  SmallVector<mlir::scf::IndexSwitchOp> switches;
  module.walk([&](mlir::scf::IndexSwitchOp op) { switches.push_back(op); });
  mlir::OpBuilder b(module.getContext());
  for (mlir::scf::IndexSwitchOp op : switches) {
    llvm::BitVector drop(op.getNumResults());
    for (auto [i, result] : llvm::enumerate(op.getResults())) {
      if (result.use_empty()) drop.set(i);
    }
    if (drop.any()) switchWithoutResults(b, op, drop);
  }
}

// A tensor became its buffer's pointer, the same on every path: loops no
// longer carry it and ifs and switches no longer return it (XLA's form).
// Innermost first, so that an outer loop's yield sees its own argument.
void dropCarriedPointers(mlir::ModuleOp module) {
  SmallVector<mlir::Operation*> ops;
  module.walk<mlir::WalkOrder::PostOrder>([&](mlir::Operation* op) {
    if (llvm::isa<mlir::scf::ForOp, mlir::scf::IfOp, mlir::scf::IndexSwitchOp>(op)) {
      ops.push_back(op);
    }
  });
  auto isPointer = [](Value v) { return llvm::isa<mlir::LLVM::LLVMPointerType>(v.getType()); };
  mlir::OpBuilder b(module.getContext());
  for (mlir::Operation* op : ops) {
    if (auto loop = llvm::dyn_cast<mlir::scf::ForOp>(op)) {
      // An iteration argument the body yields unchanged is its init.
      auto yield = llvm::cast<mlir::scf::YieldOp>(loop.getBody()->getTerminator());
      llvm::BitVector drop(loop.getNumRegionIterArgs());
      for (auto [i, arg] : llvm::enumerate(loop.getRegionIterArgs())) {
        if (!isPointer(arg) || yield.getOperand(i) != arg) continue;
        arg.replaceAllUsesWith(loop.getInitArgs()[i]);
        loop.getResult(i).replaceAllUsesWith(loop.getInitArgs()[i]);
        drop.set(i);
      }
      if (drop.none()) continue;
      SmallVector<Value> inits;
      for (auto [i, init] : llvm::enumerate(loop.getInitArgs())) {
        if (!drop.test(i)) inits.push_back(init);
      }
      b.setInsertionPoint(loop);
      auto replacement = b.create<mlir::scf::ForOp>(loop.getLoc(), loop.getLowerBound(),
                                                    loop.getUpperBound(), loop.getStep(), inits);
      replacement.setUnsignedCmp(loop.getUnsignedCmp());
      replacement->setDiscardableAttrs(loop->getDiscardableAttrDictionary());
      replacement.getRegion().getBlocks().clear();
      replacement.getRegion().takeBody(loop.getRegion());
      mlir::Block* body = replacement.getBody();
      body->getTerminator()->eraseOperands(drop);
      llvm::BitVector args(body->getNumArguments());
      for (unsigned i : drop.set_bits()) args.set(i + 1);
      body->eraseArguments(args);
      unsigned next = 0;
      for (auto [i, result] : llvm::enumerate(loop.getResults())) {
        if (!drop.test(i)) result.replaceAllUsesWith(replacement.getResult(next++));
      }
      loop.erase();
      continue;
    }
    // An if or a switch whose every region yields the same pointer (from
    // outside) returns that pointer.
    SmallVector<mlir::scf::YieldOp> yields;
    for (mlir::Region& region : op->getRegions()) {
      if (region.empty()) break;
      yields.push_back(llvm::cast<mlir::scf::YieldOp>(region.front().getTerminator()));
    }
    if (yields.size() != op->getNumRegions()) continue;
    llvm::BitVector drop(op->getNumResults());
    for (auto [i, result] : llvm::enumerate(op->getResults())) {
      Value first = yields.front().getOperand(i);
      bool same = llvm::all_of(yields, [&](mlir::scf::YieldOp y) {
        return y.getOperand(i) == first;
      });
      if (!isPointer(result) || !same || op->isAncestor(first.getParentRegion()->getParentOp())) {
        continue;
      }
      result.replaceAllUsesWith(first);
      drop.set(i);
    }
    if (drop.none()) continue;
    if (auto ifOp = llvm::dyn_cast<mlir::scf::IfOp>(op)) {
      ifWithoutResults(b, ifOp, drop);
    } else {
      switchWithoutResults(b, llvm::cast<mlir::scf::IndexSwitchOp>(op), drop);
    }
  }
}

// Whether `index` is computed from the induction variable of an scf.for
// whose bounds are not constants: a bound the loop lowering made of an
// indexing map's constraint (a padded window's last one over s32[1023],
// d0 * 32 + s0 <= 1022, is the loop's s0 < min(32, 1023 - d0 * 32)), which
// the index's range, d0's and s0's apart, cannot see.
bool fromComputedLoopBound(mlir::Value index) {
  llvm::SmallVector<mlir::Value> todo{index};
  llvm::SmallPtrSet<mlir::Operation*, 16> seen;
  while (!todo.empty()) {
    mlir::Value v = todo.pop_back_val();
    if (auto arg = llvm::dyn_cast<mlir::BlockArgument>(v)) {
      auto loop = llvm::dyn_cast<mlir::scf::ForOp>(arg.getOwner()->getParentOp());
      if (loop && arg == loop.getInductionVar() &&
          (!mlir::getConstantIntValue(loop.getLowerBound()) ||
           !mlir::getConstantIntValue(loop.getUpperBound()))) {
        return true;
      }
      continue;
    }
    mlir::Operation* def = v.getDefiningOp();
    if (def == nullptr || !seen.insert(def).second) continue;
    todo.append(def->operand_begin(), def->operand_end());
  }
  return false;
}

class LowerTensorsPass : public impl::LowerTensorsPassBase<LowerTensorsPass> {
 public:
  using LowerTensorsPassBase::LowerTensorsPassBase;
  void runOnOperation() override {
    // 1. Find the arguments nothing writes (their loads are invariant).
    // 2. Convert: tensor types become !llvm.ptr, accesses become
    //    gep + load/store, shared memory a global, barriers gpu.barrier.
    // 3. Every tensor op must be gone: what remains is reported by name.
    mlir::ModuleOp module = getOperation();
    mlir::MLIRContext* ctx = &getContext();
    // Atomics exist for integers, floats and complex<f32> (a 64-bit
    // compare-and-swap): anything else is an error at the op (complex<f64>
    // would need a 128-bit one).
    bool refused = false;
    module.walk([&](AtomicRMWOp op) {
      mlir::Type elt = op.getBody()->getArgument(0).getType();
      auto complex = llvm::dyn_cast<mlir::ComplexType>(elt);
      if (!elt.isIntOrFloat() && !(complex && complex.getElementType().isF32())) {
        op.emitOpError() << "has no atomic update for " << elt
                         << " values (only integers, floats and complex<f32>; a "
                            "128-bit compare-and-swap does not exist)";
        refused = true;
      }
    });
    // A transfer that may run past its tensor would be a full-width load or
    // store past the end: only transfers marked in bounds (what
    // -xla-gpu-vectorize-loads-stores makes) are lowered.
    auto checkInBounds = [&](mlir::VectorTransferOpInterface op) {
      if (!isTensor(op.getBase().getType())) return;
      for (bool inBounds : op.getInBoundsValues()) {
        if (inBounds) continue;
        op->emitOpError() << "may access past the end of its tensor; the CPU and GPU "
                             "lowering needs in_bounds = [true] (masked transfers are not "
                             "supported)";
        refused = true;
        return;
      }
    };
    module.walk([&](mlir::vector::TransferReadOp op) { checkInBounds(op); });
    module.walk([&](mlir::vector::TransferWriteOp op) { checkInBounds(op); });
    // An element access whose index is known to leave its dimension (e.g.
    // a thread id whose xla.range covers more elements than the tensor
    // holds) would read or write past the buffer. Accesses under an scf.if
    // are left alone: the condition may be the guard the range cannot see;
    // so are indices of a loop whose bounds are computed
    // (fromComputedLoopBound).
    auto checkIndices = [&](mlir::Operation* op, mlir::Type tensorType, mlir::ValueRange indices) {
      auto type = llvm::dyn_cast<mlir::RankedTensorType>(tensorType);
      if (!type || op->getParentOfType<mlir::scf::IfOp>()) return;
      for (auto [i, index] : llvm::enumerate(indices)) {
        int64_t size = type.getDimSize(i);
        std::optional<Interval> range = getValueRange(index);
        if (mlir::ShapedType::isDynamic(size) || !range) continue;
        if (range->lower >= 0 && range->upper < size) continue;
        if (fromComputedLoopBound(index)) continue;
        op->emitOpError() << "index " << i << " takes values in [" << range->lower << ", "
                          << range->upper << "], outside the dimension's [0, " << size - 1
                          << "]: the access would run past its tensor";
        refused = true;
        return;
      }
    };
    module.walk([&](mlir::tensor::ExtractOp op) {
      checkIndices(op, op.getTensor().getType(), op.getIndices());
    });
    module.walk([&](mlir::tensor::InsertOp op) {
      checkIndices(op, op.getDest().getType(), op.getIndices());
    });
    if (refused) return signalPassFailure();
    std::string error;
    mlir::FailureOr<Device> device = parseDeviceInfo(gpuDeviceInfo, error);
    if (failed(device)) {
      module.emitError() << error;
      return signalPassFailure();
    }
    dropUnusedSwitchResults(module);
    Lowering lowering;
    lowering.readOnly = findReadOnlyArguments(module);
    lowering.device = *device;
    lowering.indexBits =
        mlir::DataLayout(module).getTypeSizeInBits(mlir::IndexType::get(ctx));
    mlir::TypeConverter converter;
    converter.addConversion([](mlir::Type t) { return t; });
    converter.addConversion([ctx](mlir::RankedTensorType) -> mlir::Type {
      return mlir::LLVM::LLVMPointerType::get(ctx);
    });
    mlir::ConversionTarget target(*ctx);
    target.addLegalDialect<mlir::LLVM::LLVMDialect, mlir::arith::ArithDialect,
                           mlir::gpu::GPUDialect, mlir::vector::VectorDialect,
                           mlir::complex::ComplexDialect>();
    target.addIllegalOp<mlir::tensor::ExtractOp, mlir::tensor::InsertOp, AllocateSharedOp,
                        SyncThreadsOp, AtomicRMWOp>();
    target.addDynamicallyLegalOp<mlir::arith::ConstantOp>(
        [](mlir::arith::ConstantOp op) { return !isTensor(op.getType()); });
    target.addDynamicallyLegalOp<mlir::vector::TransferReadOp>(
        [](mlir::vector::TransferReadOp op) { return !isTensor(op.getBase().getType()); });
    target.addDynamicallyLegalOp<mlir::vector::TransferWriteOp>(
        [](mlir::vector::TransferWriteOp op) { return !isTensor(op.getBase().getType()); });
    target.addDynamicallyLegalOp<mlir::func::FuncOp>([&](mlir::func::FuncOp f) {
      return llvm::none_of(f.getFunctionType().getInputs(), isTensor) &&
             llvm::none_of(f.getFunctionType().getResults(), isTensor);
    });
    target.addDynamicallyLegalOp<mlir::func::ReturnOp>([](mlir::func::ReturnOp op) {
      return llvm::none_of(op.getOperandTypes(), isTensor);
    });
    target.markUnknownOpDynamicallyLegal([&](mlir::Operation* op) {
      // An op of no registered dialect is left as it is (its tensors too).
      return !op->isRegistered() || converter.isLegal(op);
    });
    mlir::RewritePatternSet patterns(ctx);
    patterns.add<ConvertSignature, DropTensorResults, LowerAllocateShared, LowerSyncThreads,
                 LowerTensorConstant>(converter, ctx);
    patterns.add<LowerExtract, LowerInsert, LowerTransferRead, LowerTransferWrite,
                 LowerAtomicRMW>(converter, ctx, lowering);
    mlir::populateCallOpTypeConversionPattern(patterns, converter);
    mlir::scf::populateSCFStructuralTypeConversions(converter, patterns);
    if (failed(mlir::applyPartialConversion(module, target, std::move(patterns)))) {
      return signalPassFailure();
    }
    dropCarriedPointers(module);
  }
};

}  // namespace
}  // namespace xla::gpu
