//===- HostJit.cpp - host code for CPU-target kernels, in two steps -------===//
//
// What mlir::ExecutionEngine does in one call, split where a cache and
// threads want it split:
//
//   xlaGpuCompileToHostObject: LLVM-dialect module -> LLVM IR -> the O<n>
//     pipeline -> an ELF object for this host (with the packed `_mlir_<f>`
//     wrapper of every public function, the calling convention
//     ExecutionEngine::lookupPacked gives, added after the pipeline so
//     that O<n> optimizes each kernel once, not once more inlined in its
//     wrapper);
//   xlaGpuHostJitLoad: an object (just compiled, or read from a cache)
//     -> a JIT whose unresolved symbols come from the process.
//
// A kernel of several phases is compiled in parts on the host's cores
// (compileInParts below); its object is then an archive of the parts'
// objects, which xlaGpuHostJitLoad links whole.
//
// Both run without the Python GIL (ctypes releases it), so the kernels of
// one module compile on several threads, and errors come back as text
// instead of on stderr.
//
//===----------------------------------------------------------------------===//

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <shared_mutex>
#include <string>
#include <vector>

#include "dialects/xla_gpu/CAPI.h"
#include "dialects/xla_gpu/CAPIMessages.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/bit.h"
#include "llvm/Analysis/LoopInfo.h"
#include "llvm/Analysis/ScalarEvolution.h"
#include "llvm/Analysis/ScalarEvolutionExpressions.h"
#include "llvm/Analysis/ValueTracking.h"
#include "llvm/Analysis/VectorUtils.h"
#include "llvm/Bitcode/BitcodeReader.h"
#include "llvm/Bitcode/BitcodeWriter.h"
#include "llvm/ExecutionEngine/Orc/AbsoluteSymbols.h"
#include "llvm/ExecutionEngine/Orc/CompileUtils.h"
#include "llvm/ExecutionEngine/Orc/ExecutionUtils.h"
#include "llvm/ExecutionEngine/Orc/JITTargetMachineBuilder.h"
#include "llvm/ExecutionEngine/Orc/LLJIT.h"
#include "llvm/IR/DiagnosticHandler.h"
#include "llvm/IR/DiagnosticInfo.h"
#include "llvm/IR/Dominators.h"
#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/InstIterator.h"
#include "llvm/IR/IntrinsicsX86.h"
#include "llvm/IR/MDBuilder.h"
#include "llvm/IR/Module.h"
#include "llvm/IR/PassTimingInfo.h"
#include "llvm/IR/PatternMatch.h"
#include "llvm/Object/Archive.h"
#include "llvm/Object/ArchiveWriter.h"
#include "llvm/Passes/PassBuilder.h"
#include "llvm/Passes/StandardInstrumentations.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Support/ThreadPool.h"
#include "llvm/Support/Threading.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/TargetParser/Host.h"
#include "llvm/TargetParser/Triple.h"
#include "llvm/Transforms/Utils/BasicBlockUtils.h"
#include "llvm/Transforms/Utils/Cloning.h"
#include "llvm/Transforms/Utils/CodeExtractor.h"
#include "llvm/Transforms/Utils/Local.h"
#include "mlir-c/RegisterEverything.h"
#include "mlir/CAPI/IR.h"
#include "mlir/ExecutionEngine/ExecutionEngine.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Target/LLVMIR/Export.h"

namespace {

using xla::gpu::writeMessage;

// LLVM's diagnostics but errors are dropped: the loop vectorizer's "loop
// not vectorized" analysis, which it prints whatever the remark filters
// where a loop's vectorization was asked for (a warp's lane loop whose
// value is read after it: every row reduction of a few elements), went
// to the user's stderr from every tool and every xla_gpu.jax.jit compile.
// Errors keep LLVM's handling.
struct QuietDiagnostics : llvm::DiagnosticHandler {
  bool handleDiagnostics(const llvm::DiagnosticInfo& info) override {
    return info.getSeverity() != llvm::DS_Error;
  }
};

void quietDiagnostics(llvm::LLVMContext& context) {
  context.setDiagnosticHandler(std::make_unique<QuietDiagnostics>());
}

void initializeNativeTarget() {
  static std::once_flag once;
  std::call_once(once, [] {
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
  });
}

// `void _mlir_<name>(void **args)`: args[i] points at the i-th argument
// (and, for a function with a result, args[n] at where it goes) -- the
// interface of ExecutionEngine::lookupPacked, which the runtime calls.
void addPackedWrapper(llvm::Module& module, llvm::Function& fn) {
  llvm::LLVMContext& ctx = module.getContext();
  auto* ptr = llvm::PointerType::getUnqual(ctx);
  auto* type = llvm::FunctionType::get(llvm::Type::getVoidTy(ctx), {ptr}, false);
  auto* wrapper = llvm::Function::Create(type, llvm::GlobalValue::ExternalLinkage,
                                         "_mlir_" + fn.getName(), module);
  llvm::IRBuilder<> b(llvm::BasicBlock::Create(ctx, "entry", wrapper));
  llvm::Value* packed = wrapper->getArg(0);
  llvm::SmallVector<llvm::Value*> args;
  for (auto [i, arg] : llvm::enumerate(fn.args())) {
    llvm::Value* slot = b.CreateLoad(ptr, b.CreateConstGEP1_64(ptr, packed, i));
    args.push_back(b.CreateLoad(arg.getType(), slot));
  }
  llvm::Value* result = b.CreateCall(&fn, args);
  if (!fn.getReturnType()->isVoidTy()) {
    llvm::Value* slot = b.CreateLoad(ptr, b.CreateConstGEP1_64(ptr, packed, args.size()));
    b.CreateStore(result, slot);
  }
  b.CreateRetVoid();
}

// Seconds since the last lap into seconds[i] (when seconds is not null).
class Stopwatch {
 public:
  explicit Stopwatch(double* seconds) : seconds_(seconds) {}
  void lap(int i) { lapAt(i, std::chrono::steady_clock::now()); }
  // The same, the lap ending at `time`.
  void lapAt(int i, std::chrono::steady_clock::time_point time) {
    if (seconds_) seconds_[i] = std::chrono::duration<double>(time - last_).count();
    last_ = time;
  }

 private:
  double* seconds_;
  std::chrono::steady_clock::time_point last_ = std::chrono::steady_clock::now();
};

// LLVM's code generation options are process-wide command-line flags, read
// when a pass pipeline is built. Host code is generated without two passes
// that cost more than they gave on the benchmarks:
//  - loop strength reduction: up to two thirds of x86 code generation (0.2
//    of 0.3 s for a three-operand concatenate, 0.12 of 0.18 s for the f16
//    transpose), the kernels as fast or faster without it;
//  - the post-RA list scheduler, which the Zen scheduling models turn on:
//    37 % of code generation for the column sum (quadratic in the long
//    blocks of unrolled, vectorized lanes), while the out-of-order core
//    reorders those instructions itself.
// The NVPTX backend keeps the targets' defaults: device code generation
// (xlaGpuBeginDeviceCodegen) holds this mutex exclusively, host code
// generation shared.
std::shared_mutex& codegenFlagsMutex() {
  static std::shared_mutex mutex;
  return mutex;
}

llvm::cl::opt<bool>* findFlag(llvm::StringRef name) {
  auto& options = llvm::cl::getRegisteredOptions();
  auto it = options.find(name);
  return it == options.end() ? nullptr : static_cast<llvm::cl::opt<bool>*>(it->second);
}

// Host flags (LSR and post-RA scheduling off) or the targets' defaults.
// "post-RA-scheduler" is read only when given on a command line (a non-zero
// position); position 0 leaves the choice to the subtarget again.
void setHostCodegenFlags(bool host) {
  static std::mutex writing;
  static llvm::cl::opt<bool>* disableLsr = findFlag("disable-lsr");
  static llvm::cl::opt<bool>* postRaScheduler = findFlag("post-RA-scheduler");
  std::lock_guard<std::mutex> hold(writing);
  if (disableLsr && *disableLsr != host) disableLsr->setValue(host);
  if (postRaScheduler) {
    postRaScheduler->setValue(false);
    postRaScheduler->setPosition(host ? 1 : 0);
  }
}

// This host, as LLVM detects it, told to prefer no gathers and no
// scatters: its cost model counts them as fast on every AVX-512 CPU, but
// on Zen 4 they are microcoded (a few cycles an element), and the thread
// loops that index a shared tile across the lanes (a transpose's stride-33
// column, a short row's stride-12 reads) ran 1.4-2x faster as scalar
// accesses: A/B over the benchmarks, single thread, transpose+add 0.63x,
// seed transpose 0.73x, row max 0.49x, column sum 0.75x, none slower.
// And the small code model, position-independent, as a shared library's
// code: a JIT's default on x86-64 is the large model, where every constant
// pool load is a 64-bit address in a register first (8 movabsq in the
// softmax exp+sum's 45-instruction vector loop, 27 in its kernel). JITLink
// places an object's sections together, so 32-bit PC-relative offsets
// reach its constants, and calls out (libm's f64 functions) go through its
// stubs. A/B in one process over the bench's kernels, bits the same:
// transpose+add f32[1024,1024] 0.87x, expm1 + log1p 0.82x, scatter-add
// 0.74x, softmax exp+sum 0.95x, none slower beyond noise (0.98-1.03);
// code generation ~3 % faster.
// And a multiply whose result an add takes fused into one fma, as XLA:CPU's
// target options always allow ("it increases precision"): jax's erf GELU
// (erfc's polynomials) agrees with XLA:CPU bit for bit, where 12 % of its
// elements differed in the last bits, and ran 0.85x the time (A/B in one
// process, f32[1024,1024], one thread); no other bench kernel changed.
llvm::Expected<llvm::orc::JITTargetMachineBuilder> hostMachineBuilder() {
  auto builder = llvm::orc::JITTargetMachineBuilder::detectHost();
  if (builder) builder->getOptions().AllowFPOpFusion = llvm::FPOpFusion::Fast;
  if (builder && builder->getTargetTriple().isX86()) {
    builder->getFeatures().AddFeature("prefer-no-gather");
    builder->getFeatures().AddFeature("prefer-no-scatter");
    builder->setCodeModel(llvm::CodeModel::Small);
    builder->setRelocationModel(llvm::Reloc::PIC_);
  }
  return builder;
}

// A target machine for this host at `optLevel`, one per thread and level,
// kept between compiles: building one (and the X86 subtarget each function
// asks it for) cost ~0.6 ms a compile, 5 % of a small kernel's. A target
// machine is not shared between threads (its subtarget map has no lock).
llvm::Expected<llvm::TargetMachine*> hostMachine(int optLevel) {
  thread_local std::map<int, std::unique_ptr<llvm::TargetMachine>> machines;
  std::unique_ptr<llvm::TargetMachine>& machine = machines[optLevel];
  if (!machine) {
    auto builder = hostMachineBuilder();
    if (!builder) return builder.takeError();
    builder->setCodeGenOptLevel(static_cast<llvm::CodeGenOptLevel>(optLevel));
    auto created = builder->createTargetMachine();
    if (!created) return created.takeError();
    machine = std::move(*created);
  }
  return machine.get();
}

// One JIT for the process, an object a JITDylib in it: building an LLJIT
// (its session, linking layer and host detection) cost ~0.7 ms an object,
// more than linking a small kernel (loading one: 1.1 -> 0.4 ms). The session is thread-safe; linking
// runs on the thread that looks a symbol up, so what the session reports
// (the symbols not found) is kept per thread for that lookup to return.
thread_local std::string reportedOnThisThread;

// compiler-rt's f32 -> bf16 (__truncsfbf2), which x86 code generation calls
// without AVX512-BF16 wherever a bf16 value lives in a register: a phi, a
// call's result (it carries bf16 as f32 and truncates it back). No library
// of the process may export it (libgcc has it from GCC 13 on): a kernel
// with a bf16 phi did not load on a Zen 2/3 host. As XLA:CPU's runtime
// symbols do, the JIT gets our own. Round to nearest even; a NaN stays a
// NaN of its sign and high payload, quiet. (bf16 is returned as a half is:
// in the low 16 bits of xmm0 on x86-64, of v0 on AArch64.)
#if defined(__FLT16_MAX__)
_Float16 truncSfBf2(float x) {
  uint32_t bits = llvm::bit_cast<uint32_t>(x);
  uint32_t high = bits >> 16;
  uint16_t half = (bits & 0x7fffffffu) > 0x7f800000u
                      ? static_cast<uint16_t>(high | 0x40u)
                      : static_cast<uint16_t>((bits + 0x7fffu + (high & 1u)) >> 16);
  return llvm::bit_cast<_Float16>(half);
}
#endif

llvm::Error defineRuntimeHelpers(llvm::orc::LLJIT& jit) {
  llvm::orc::SymbolMap helpers;
#if defined(__FLT16_MAX__)
  helpers[jit.mangleAndIntern("__truncsfbf2")] = {
      llvm::orc::ExecutorAddr::fromPtr(&truncSfBf2),
      llvm::JITSymbolFlags::Exported | llvm::JITSymbolFlags::Callable};
#endif
  if (helpers.empty()) return llvm::Error::success();
  llvm::orc::JITDylibSP process = jit.getProcessSymbolsJITDylib();
  if (!process) return llvm::createStringError("the JIT links no process symbols");
  return process->define(llvm::orc::absoluteSymbols(std::move(helpers)));
}

llvm::Expected<llvm::orc::LLJIT&> sharedJit() {
  static std::once_flag once;
  static std::unique_ptr<llvm::orc::LLJIT> jit;
  static std::string error;
  std::call_once(once, [] {
    auto built = llvm::orc::LLJITBuilder().create();
    if (!built) {
      error = llvm::toString(built.takeError());
      return;
    }
    if (llvm::Error e = defineRuntimeHelpers(**built)) {
      error = llvm::toString(std::move(e));
      return;
    }
    jit = std::move(*built);
    jit->getExecutionSession().setErrorReporter(
        [](llvm::Error e) { reportedOnThisThread += llvm::toString(std::move(e)) + "\n"; });
  });
  if (!jit) return llvm::createStringError(error);
  return *jit;
}

// A loaded object: its dylib in the process's JIT.
struct HostJit {
  llvm::orc::LLJIT* jit;
  llvm::orc::JITDylib* dylib;
};

// With $XLA_GPU_TIME_LLVM_PASSES set, each compile prints the time of every
// pass of LLVM's pipeline and of code generation to stderr (a debugging
// aid: compile one kernel at a time; bench/compile_profile.py gives the
// stages' totals).
bool timeLlvmPasses() { return std::getenv("XLA_GPU_TIME_LLVM_PASSES") != nullptr; }

// With $XLA_GPU_DUMP_LLVM_IR set to a directory, each compile writes its
// module's LLVM IR there before O3 (<n>.ll) and after it (<n>.opt.ll), and
// its object (<n>.o: objdump -d reads it), n counting the process's
// compiles (a debugging aid, as XLA's --xla_dump_to).
// A kernel compiled in parts has each part's module in <n>.opt.ll, one
// after the other. The directory; "" where none is set.
llvm::StringRef llvmIrDumpDir() {
  const char* dir = std::getenv("XLA_GPU_DUMP_LLVM_IR");
  return dir != nullptr ? dir : "";
}

void dumpLlvmIr(llvm::StringRef dir, uint64_t n, llvm::StringRef suffix, llvm::StringRef text) {
  std::error_code ec;
  std::string path = (dir + "/" + llvm::Twine(n) + suffix).str();
  llvm::raw_fd_ostream out(path, ec);
  if (ec) {
    llvm::errs() << "XLA_GPU_DUMP_LLVM_IR: cannot write " << path << ": " << ec.message() << "\n";
    return;
  }
  out << text;
}

std::string printed(const llvm::Module& module) {
  std::string text;
  llvm::raw_string_ostream os(text);
  module.print(os, nullptr);
  return text;
}

// The interleave counts the lane loops ask for (-xla-gpu-lower-kernel-to-cpu:
// K chains of long-latency arithmetic at once), cut so that a loop's body
// times its count stays within kInterleavedInstructions instructions of IR
// as translated, but not below 2 for a body within that: x86 instruction
// selection takes ~20 us an instruction of a 16-lane vector block (known
// bits of every lane), the vectorizer and InstCombine the same order
// again, and a long body's chains keep the out-of-order core busy in
// twos. The bf16 GELU's lane loop -- 142 instructions, a rounding to bf16
// after every op -- interleaved 4 times took 29 ms of LLVM (O3 and code
// generation), its whole compile 40 ms against XLA:CPU's 33; twice, 19 ms
// (once: 1.33-1.50x slower, A/B in one process). The erf GELU (100) and
// the expm1 + log1p ran 0.96x twice as 4 times (A/B both ways, bits the
// same; AVX2 host), the erf GELU's compile 81 -> 67 ms, expm1's 56 -> 44;
// the f32 chain (58) keeps its 4.
constexpr unsigned kInterleavedInstructions = 256;

// The instructions `inst` stands for in a loop's body: 1, and for a call
// of a function with vector variants that HostJit inlines after the
// vectorizer ("xla-gpu-f64-variant": an f64 pow, erf...), the variant's
// instructions too -- the vectorizer's interleaved iterations each get a
// copy. pow + erf f64 over [1024,1024], their loop interleaved 4 times
// (each call one instruction), took 23 ms of code generation.
uint64_t bodyInstructions(const llvm::Instruction& inst) {
  auto* call = llvm::dyn_cast<llvm::CallInst>(&inst);
  const llvm::Function* callee = call ? call->getCalledFunction() : nullptr;
  if (!callee || !callee->hasFnAttribute("vector-function-abi-variant")) return 1;
  uint64_t size = 1;
  llvm::StringRef mappings =
      callee->getFnAttribute("vector-function-abi-variant").getValueAsString();
  llvm::SmallVector<llvm::StringRef> each;
  mappings.split(each, ',');
  for (llvm::StringRef mapping : each) {
    llvm::StringRef name = mapping.substr(mapping.find('(') + 1).rtrim(')');
    const llvm::Function* variant = callee->getParent()->getFunction(name);
    if (variant && variant->hasFnAttribute("xla-gpu-f64-variant")) {
      size += variant->getInstructionCount();
    }
  }
  return size;
}

void capInterleaveCounts(llvm::Module& module) {
  llvm::LLVMContext& ctx = module.getContext();
  for (llvm::Function& fn : module) {
    if (fn.isDeclaration()) continue;
    llvm::DominatorTree dominators(fn);
    llvm::LoopInfo loops(dominators);
    for (llvm::Loop* loop : loops.getLoopsInPreorder()) {
      llvm::MDNode* id = loop->getLoopID();
      if (!id) continue;
      for (unsigned i = 1; i < id->getNumOperands(); ++i) {
        auto* hint = llvm::dyn_cast<llvm::MDNode>(id->getOperand(i));
        auto* name = hint && hint->getNumOperands() == 2
                         ? llvm::dyn_cast<llvm::MDString>(hint->getOperand(0))
                         : nullptr;
        if (!name || name->getString() != "llvm.loop.interleave.count") continue;
        auto count = llvm::mdconst::dyn_extract<llvm::ConstantInt>(hint->getOperand(1));
        if (!count) break;
        uint64_t size = 0;
        for (llvm::BasicBlock* block : loop->blocks()) {
          for (const llvm::Instruction& inst : *block) size += bodyInstructions(inst);
        }
        uint64_t fits = kInterleavedInstructions / std::max<uint64_t>(1, size);
        uint64_t floor = size <= kInterleavedInstructions ? 2 : 1;
        uint64_t capped =
            std::min<uint64_t>(count->getZExtValue(), std::max(floor, llvm::bit_floor(fits)));
        if (capped == count->getZExtValue()) break;
        llvm::SmallVector<llvm::Metadata*> operands(id->op_begin(), id->op_end());
        operands[i] = llvm::MDNode::get(
            ctx, {name, llvm::ConstantAsMetadata::get(
                            llvm::ConstantInt::get(count->getType(), capped))});
        llvm::MDNode* replaced = llvm::MDNode::getDistinct(ctx, operands);
        replaced->replaceOperandWith(0, replaced);
        loop->setLoopID(replaced);
        break;
      }
    }
  }
}

// 16-bit floats that are only moved (a load whose every user stores it:
// a transpose's or a copy's phases) are moved as 16-bit integers. x86
// without AVX512-FP16 has no half or bfloat vector registers: instruction
// selection legalizes each vector of them, and the vectorizer's shuffles
// of the interleaved copies, lane by lane through f32, where the same
// moves as i16 are plain vector shuffles. The f16 021 transpose's code
// generation went 53 -> 34 ms and its run 0.92x (A/B in one process, bits
// the same; no other bench kernel changed): a load and a store of a half
// change no bits.
void moveHalfFloatsAsIntegers(llvm::Module& module) {
  // Found first, then rewritten: a rewrite erases stores, which may be the
  // instructions right after their load.
  llvm::SmallVector<llvm::LoadInst*> moves;
  for (llvm::Function& fn : module) {
    for (llvm::BasicBlock& block : fn) {
      for (llvm::Instruction& inst : block) {
        auto* load = llvm::dyn_cast<llvm::LoadInst>(&inst);
        if (!load || load->isVolatile() || load->isAtomic()) continue;
        llvm::Type* scalar = load->getType()->getScalarType();
        if (!scalar->isHalfTy() && !scalar->isBFloatTy()) continue;
        bool onlyStored = !load->use_empty() && llvm::all_of(load->uses(), [](llvm::Use& use) {
          auto* store = llvm::dyn_cast<llvm::StoreInst>(use.getUser());
          return store && use.getOperandNo() == 0 && !store->isVolatile() && !store->isAtomic();
        });
        if (onlyStored) moves.push_back(load);
      }
    }
  }
  for (llvm::LoadInst* load : moves) {
    llvm::Type* integer =
        load->getType()->getWithNewType(llvm::Type::getInt16Ty(module.getContext()));
    llvm::IRBuilder<> b(load);
    llvm::LoadInst* moved =
        b.CreateAlignedLoad(integer, load->getPointerOperand(), load->getAlign());
    moved->copyMetadata(*load);
    for (llvm::User* user : llvm::make_early_inc_range(load->users())) {
      auto* store = llvm::cast<llvm::StoreInst>(user);
      b.SetInsertPoint(store);
      llvm::StoreInst* written =
          b.CreateAlignedStore(moved, store->getPointerOperand(), store->getAlign());
      written->copyMetadata(*store);
      store->eraseFromParent();
    }
    load->eraseFromParent();
  }
}

// Masked vector variants of the functions -xla-gpu-lower-to-llvm marks
// "xla-gpu-vector-variants" (the exact trig reductions, which its kernels
// call for a huge argument only), for the loop vectorizer: before O3 each
// such function names `<name>_v<lanes>` for each width it may pick (LLVM's
// vector function ABI: `_ZGV_LLVM_M<lanes>v..._<name>(<variant>)`, masked,
// vector arguments), declared and marked "xla-gpu-masked-variant"; a width
// without one would scalarize the call behind a branch a lane.
constexpr unsigned kVariantLanes[] = {2, 4, 8, 16};
constexpr llvm::StringLiteral kVectorVariants = "xla-gpu-vector-variants";
constexpr llvm::StringLiteral kMaskedVariant = "xla-gpu-masked-variant";

bool isMaskedVariant(const llvm::Function& fn) {
  return fn.hasFnAttribute(kMaskedVariant);
}

void declareMaskedVariants(llvm::Module& module) {
  llvm::SmallVector<llvm::Function*> scalars;
  for (llvm::Function& fn : module) {
    if (fn.hasFnAttribute(kVectorVariants)) scalars.push_back(&fn);
  }
  for (llvm::Function* scalar : scalars) {
    llvm::FunctionType* type = scalar->getFunctionType();
    std::string mappings;
    for (unsigned lanes : kVariantLanes) {
      auto widen = [&](llvm::Type* t) { return llvm::FixedVectorType::get(t, lanes); };
      llvm::SmallVector<llvm::Type*> parameters;
      std::string name = (scalar->getName() + "_v" + llvm::Twine(lanes)).str();
      std::string mangled = "_ZGV_LLVM_M" + std::to_string(lanes);
      for (llvm::Type* parameter : type->params()) {
        parameters.push_back(widen(parameter));
        mangled += "v";
      }
      parameters.push_back(widen(llvm::Type::getInt1Ty(module.getContext())));
      auto* variant = llvm::Function::Create(
          llvm::FunctionType::get(widen(type->getReturnType()), parameters, false),
          llvm::GlobalValue::ExternalLinkage, name, module);
      variant->addFnAttr(kMaskedVariant);
      if (!mappings.empty()) mappings += ",";
      mappings += mangled + "_" + scalar->getName().str() + "(" + name + ")";
    }
    scalar->addFnAttr("vector-function-abi-variant", mappings);
  }
}

// After O3, each variant the vectorizer called is defined (the scalar
// function lane by lane, unoptimized: it is cold) and each call of it runs
// only where a lane of its mask is set, behind an unlikely branch (the
// vectorizer calls it every iteration and blends its result in by the
// mask); the declarations of the others are dropped.
void defineMaskedVariants(llvm::Module& module) {
  llvm::SmallVector<llvm::Function*> variants;
  for (llvm::Function& fn : module) {
    if (isMaskedVariant(fn)) variants.push_back(&fn);
  }
  llvm::LLVMContext& ctx = module.getContext();
  for (llvm::Function* variant : variants) {
    if (variant->use_empty()) {
      variant->eraseFromParent();
      continue;
    }
    llvm::StringRef name = variant->getName();
    llvm::Function* scalar = module.getFunction(name.substr(0, name.rfind("_v")));
    unsigned lanes = llvm::cast<llvm::FixedVectorType>(variant->getReturnType())->getNumElements();
    variant->setLinkage(llvm::GlobalValue::InternalLinkage);
    variant->addFnAttr(llvm::Attribute::NoInline);
    variant->addFnAttr(llvm::Attribute::OptimizeNone);
    llvm::IRBuilder<> b(llvm::BasicBlock::Create(ctx, "", variant));
    llvm::Value* result = llvm::PoisonValue::get(variant->getReturnType());
    for (unsigned lane = 0; lane < lanes; ++lane) {
      llvm::SmallVector<llvm::Value*> arguments;
      for (unsigned i = 0; i + 1 < variant->arg_size(); ++i) {
        arguments.push_back(b.CreateExtractElement(variant->getArg(i), lane));
      }
      result = b.CreateInsertElement(result, b.CreateCall(scalar, arguments), lane);
    }
    b.CreateRet(result);
    llvm::SmallVector<llvm::CallInst*> calls;
    for (llvm::User* user : variant->users()) {
      if (auto* call = llvm::dyn_cast<llvm::CallInst>(user)) calls.push_back(call);
    }
    for (llvm::CallInst* call : calls) {
      llvm::Value* mask = call->getArgOperand(call->arg_size() - 1);
      llvm::BasicBlock* head = call->getParent();
      b.SetInsertPoint(call);
      llvm::Value* any = b.CreateOrReduce(mask);
      llvm::Instruction* then = llvm::SplitBlockAndInsertIfThen(
          any, call, false, llvm::MDBuilder(ctx).createUnlikelyBranchWeights());
      llvm::BasicBlock* join = call->getParent();
      call->moveBefore(then->getIterator());
      b.SetInsertPoint(join, join->begin());
      llvm::PHINode* phi = b.CreatePHI(call->getType(), 2);
      call->replaceAllUsesWith(phi);
      phi->addIncoming(llvm::PoisonValue::get(call->getType()), head);
      phi->addIncoming(call, then->getParent());
    }
  }
  // A scalar function no code calls any more (a vectorized loop without a
  // scalar remainder, no variant defined) is not compiled.
  for (llvm::Function& fn : llvm::make_early_inc_range(module)) {
    if (fn.hasFnAttribute(kVectorVariants) && fn.use_empty() &&
        (fn.hasLocalLinkage() || fn.hasWeakODRLinkage())) {
      fn.eraseFromParent();
    }
  }
}

// Whether the host CPU has LLVM feature `name` ("avx512f"...), from its
// features read once.
bool hostHasFeature(llvm::StringRef name) {
  static const llvm::StringMap<bool> features = llvm::sys::getHostCPUFeatures();
  return features.lookup(name);
}

// The vector variants of -xla-gpu-lower-to-llvm's f64 functions (marked
// "xla-gpu-f64-variant"): the loop vectorizer calls them in place of the
// scalar function (libm's); once it has, each call is inlined (a call of
// a zmm function spills every vector register around it: f64 exp of 1M
// elements 0.34 ms through calls, 0.26 inlined -- 0.21 with the
// approximation in the loop from the start, which the vectorizer
// interleaved 2 where it interleaves a call 4) and the variants go.
struct InlineF64Variants : llvm::PassInfoMixin<InlineF64Variants> {
  llvm::PreservedAnalyses run(llvm::Module& module, llvm::ModuleAnalysisManager&) {
    llvm::SmallVector<llvm::Function*> variants;
    for (llvm::Function& fn : module) {
      if (fn.hasFnAttribute("xla-gpu-f64-variant")) variants.push_back(&fn);
    }
    if (variants.empty()) return llvm::PreservedAnalyses::all();
    for (llvm::Function* variant : variants) {
      llvm::SmallVector<llvm::CallBase*> calls;
      for (llvm::User* user : variant->users()) {
        if (auto* call = llvm::dyn_cast<llvm::CallBase>(user)) calls.push_back(call);
      }
      for (llvm::CallBase* call : calls) {
        llvm::InlineFunctionInfo info;
        (void)llvm::InlineFunction(*call, info);
      }
      if (variant->use_empty()) variant->eraseFromParent();
    }
    return llvm::PreservedAnalyses::none();
  }
};

// Scalar f16 maxima and minima widened to f32 (fpext, the f32 op, fptrunc:
// the same value, max and min being exact) right before LLVM's loop
// vectorizer, on a host without AVX512-FP16. The emitters compute f16 in
// f32 (-xla-gpu-expand-float-ops), but InstCombine folds fptrunc(max(fpext
// a, fpext b)) back to an f16 max, which x86 without FP16 arithmetic can
// only run a lane at a time through f32: the vectorizer then leaves the
// lane loop scalar. The f16 row max over [16384,256] ran 12.1 ms (XLA:CPU
// 0.17-0.25); widened, its lanes are vectors of F16C conversions and
// maxima: 0.80 ms (0.43 with its warps' trees in f32, see
// -xla-gpu-expand-bf16-conversions, and lowerMinMax's f16).
struct WidenHalfMinMax : llvm::PassInfoMixin<WidenHalfMinMax> {
  llvm::PreservedAnalyses run(llvm::Function& fn, llvm::FunctionAnalysisManager&) {
    llvm::SmallVector<llvm::IntrinsicInst*> calls;
    for (llvm::BasicBlock& block : fn) {
      for (llvm::Instruction& inst : block) {
        auto* call = llvm::dyn_cast<llvm::IntrinsicInst>(&inst);
        if (call && call->getType()->isHalfTy() &&
            (call->getIntrinsicID() == llvm::Intrinsic::maximum ||
             call->getIntrinsicID() == llvm::Intrinsic::minimum)) {
          calls.push_back(call);
        }
      }
    }
    for (llvm::IntrinsicInst* call : calls) {
      llvm::IRBuilder<> b(call);
      llvm::Type* f32 = b.getFloatTy();
      llvm::Value* wide = b.CreateBinaryIntrinsic(call->getIntrinsicID(),
                                                  b.CreateFPExt(call->getArgOperand(0), f32),
                                                  b.CreateFPExt(call->getArgOperand(1), f32));
      call->replaceAllUsesWith(b.CreateFPTrunc(wide, call->getType()));
      call->eraseFromParent();
    }
    return calls.empty() ? llvm::PreservedAnalyses::all() : llvm::PreservedAnalyses::none();
  }
};

bool hostHasHalfArithmetic() { return hostHasFeature("avx512fp16"); }

// f16 values' f32 values (of maxima and minima of f16 values, exact):
// where the tree's next op widens the one, it takes the other. Tracked
// through replaceAllUsesWith (a call lowered after).
using WideOfHalf = llvm::DenseMap<llvm::Value*, llvm::WeakTrackingVH>;

// A leaf of a max/min tree that is one of `stride` interleaved lanes of a
// wider vector: lane i of the leaf is f(wide[i * stride + offset]), f the
// identity, a bf16 value's f32 (zext to i32, shl 16, bitcast: what
// -xla-gpu-expand-bf16-conversions makes of an extf) or an f16 value's
// (fpext). The loop vectorizer makes these of a lane loop whose lanes each
// read `stride` contiguous elements (a thread's vector of a row).
struct StridedLeaf {
  enum Kind : unsigned { kSame, kBf16, kHalf };
  llvm::Value* wide;
  unsigned stride, offset;
  // kSame: lane i is wide[i * stride + offset]; kBf16: the f32 of a bf16
  // (wide holds its bits); kHalf: the f32 of an f16 (fpext).
  Kind kind;
};

std::optional<StridedLeaf> stridedLeaf(llvm::Value* leaf) {
  using namespace llvm::PatternMatch;
  llvm::Value* lanes = leaf;
  StridedLeaf::Kind kind = StridedLeaf::kSame;
  llvm::Value* narrow;
  if (match(leaf, m_BitCast(m_Shl(m_ZExt(m_Value(narrow)), m_SpecificInt(16)))) &&
      leaf->getType()->getScalarType()->isFloatTy() &&
      narrow->getType()->getScalarType()->isIntegerTy(16)) {
    lanes = narrow;
    kind = StridedLeaf::kBf16;
  } else if (match(leaf, m_FPExt(m_Value(narrow))) &&
             leaf->getType()->getScalarType()->isFloatTy() &&
             narrow->getType()->getScalarType()->isHalfTy()) {
    lanes = narrow;
    kind = StridedLeaf::kHalf;
  }
  auto* shuffle = llvm::dyn_cast<llvm::ShuffleVectorInst>(lanes);
  if (!shuffle || !llvm::isa<llvm::PoisonValue, llvm::UndefValue>(shuffle->getOperand(1))) {
    return std::nullopt;
  }
  auto* wideType = llvm::cast<llvm::FixedVectorType>(shuffle->getOperand(0)->getType());
  llvm::ArrayRef<int> mask = shuffle->getShuffleMask();
  unsigned n = mask.size(), total = wideType->getNumElements();
  if (n < 2 || total % n != 0) return std::nullopt;
  unsigned stride = total / n;
  if (stride < 2 || !llvm::isPowerOf2_32(stride) || mask[0] < 0 ||
      static_cast<unsigned>(mask[0]) >= stride) {
    return std::nullopt;
  }
  for (unsigned i = 0; i < n; ++i) {
    if (mask[i] != static_cast<int>(i * stride) + mask[0]) return std::nullopt;
  }
  llvm::Type* element = wideType->getElementType();
  if (kind == StridedLeaf::kSame && !element->isFloatTy() && !element->isDoubleTy() &&
      !element->isHalfTy()) {
    return std::nullopt;
  }
  return StridedLeaf{shuffle->getOperand(0), stride, static_cast<unsigned>(mask[0]), kind};
}

// `values` combined by `op` (maximum or minimum) as a balanced tree, its
// calls added to `out`.
llvm::Value* balancedTree(llvm::IRBuilder<>& b, llvm::Intrinsic::ID op,
                          llvm::SmallVector<llvm::Value*> values,
                          llvm::SmallVectorImpl<llvm::IntrinsicInst*>& out) {
  while (values.size() > 1) {
    llvm::SmallVector<llvm::Value*> level;
    for (size_t i = 0; i + 1 < values.size(); i += 2) {
      auto* pair =
          llvm::cast<llvm::IntrinsicInst>(b.CreateBinaryIntrinsic(op, values[i], values[i + 1]));
      out.push_back(pair);
      level.push_back(pair);
    }
    if (values.size() % 2 == 1) level.push_back(values.back());
    values = std::move(level);
  }
  return values.front();
}

// groupReduce on an AVX2 host (no AVX-512DQ) of f32 vectors of 2^k
// 256-bit registers, groups of 2 or 4 (a lane's vector of a row), at least
// one register a group: each halving picks the even and odd lanes of two
// registers within their 128-bit halves (what one VSHUFPS picks), the
// result's lanes put in order by one permute at the end. The global even
// and odd halvings took two shuffles a register each (VSHUFPS and
// VPERMPD); an f16 lane's 4 elements over 8 lanes 12 shuffles, now 10
// (LLVM makes the last permute of two): A/B in one process on a Zen 3
// host, bits the same, the f16 row max over [2048,2048] 0.78-0.79x, the
// other row maxima, the softmax steps and the xj.jit row programs
// 0.94-1.03x. Null where it does not apply. (Past two halvings the pairs
// the 128-bit halves hold are no longer adjacent: groups of 8 go the
// global way.)
llvm::Value* groupReduceInLanes(llvm::IRBuilder<>& b, llvm::Intrinsic::ID op, llvm::Value* v,
                                unsigned group,
                                llvm::SmallVectorImpl<llvm::IntrinsicInst*>& out) {
  constexpr unsigned kLanes = 8;  // f32 lanes of a 256-bit register
  auto* type = llvm::cast<llvm::FixedVectorType>(v->getType());
  const unsigned n = type->getNumElements();
  if (hostHasFeature("avx512dq") || !hostHasFeature("avx2") ||
      !type->getElementType()->isFloatTy() || (group != 2 && group != 4) || n % kLanes != 0 ||
      !llvm::isPowerOf2_32(n / kLanes) || n / kLanes < group) {
    return nullptr;
  }
  const unsigned size = group;
  llvm::SmallVector<llvm::Value*> registers;
  // The first element of `v` each lane of the registers (in order) covers.
  llvm::SmallVector<unsigned> first;
  for (unsigned r = 0; r < n / kLanes; ++r) {
    llvm::SmallVector<int> indices;
    for (unsigned i = 0; i < kLanes; ++i) indices.push_back(static_cast<int>(r * kLanes + i));
    registers.push_back(b.CreateShuffleVector(v, indices));
    first.append(indices.begin(), indices.end());
  }
  // Of two registers' 16 lanes, a VSHUFPS's: each 128-bit half's even (odd)
  // lanes of the first, then of the second.
  static constexpr int kEven[kLanes] = {0, 2, 8, 10, 4, 6, 12, 14};
  static constexpr int kOdd[kLanes] = {1, 3, 9, 11, 5, 7, 13, 15};
  for (; group > 1; group /= 2) {
    llvm::SmallVector<llvm::Value*> halved;
    llvm::SmallVector<unsigned> covered;
    for (unsigned r = 0; r < registers.size(); r += 2) {
      auto* pair = llvm::cast<llvm::IntrinsicInst>(b.CreateBinaryIntrinsic(
          op, b.CreateShuffleVector(registers[r], registers[r + 1], kEven),
          b.CreateShuffleVector(registers[r], registers[r + 1], kOdd)));
      out.push_back(pair);
      halved.push_back(pair);
      for (int lane : kEven) covered.push_back(first[r * kLanes + lane]);
    }
    registers = std::move(halved);
    first = std::move(covered);
  }
  llvm::Value* all = registers.size() == 1 ? registers.front()
                                           : llvm::concatenateVectors(b, registers);
  llvm::SmallVector<int> order(first.size());
  for (unsigned k = 0; k < first.size(); ++k) order[first[k] / size] = k;
  return b.CreateShuffleVector(all, order);
}

// The `op` (maximum or minimum) of adjacent groups of `group` lanes of `v`:
// lane i of the result is op(v[i * group], ..., v[i * group + group - 1]),
// in log2(group) halvings of even and odd lanes.
llvm::Value* groupReduce(llvm::IRBuilder<>& b, llvm::Intrinsic::ID op, llvm::Value* v,
                         unsigned group, llvm::SmallVectorImpl<llvm::IntrinsicInst*>& out) {
  if (llvm::Value* inLanes = groupReduceInLanes(b, op, v, group, out)) return inLanes;
  for (; group > 1; group /= 2) {
    unsigned n = llvm::cast<llvm::FixedVectorType>(v->getType())->getNumElements() / 2;
    llvm::SmallVector<int> even, odd;
    for (unsigned i = 0; i < n; ++i) {
      even.push_back(static_cast<int>(2 * i));
      odd.push_back(static_cast<int>(2 * i + 1));
    }
    v = b.CreateBinaryIntrinsic(op, b.CreateShuffleVector(v, even), b.CreateShuffleVector(v, odd));
    out.push_back(llvm::cast<llvm::IntrinsicInst>(v));
  }
  return v;
}

// The leaves of a max or min tree (`op`) with each wide vector whose
// every interleaved lane set is a leaf (stridedLeaf) replaced: the wide
// vectors of one stride are combined lane by lane first, then their
// adjacent lanes (groupReduce), where the vectorizer's code
// deinterleaved each wide vector into `stride` vectors by shuffles
// before any op. The value is the same: each lane of the result is still
// the op of the same elements, and max and min are exact, commutative and
// associative, NaN and zeros included (the NaN a NaN yields may be
// another operand's, as in balancedChains). A bf16 vector's even and odd
// elements are its i32 pairs' low and high halves (shl 16, and
// 0xffff0000): the first halving needs no shuffle. A bf16 lane's 8
// elements (a thread's two vectors of 4 of a row): 65 instructions a 16
// lanes -> 45 (4 vpermt2w, 8 vpmovzxwd and 8 shifts -> 4 shifts, 4 ands
// and 2 vpermt2ps); A/B in one process, bits the same: the bf16 row
// maxima over [16384,256], [4096,1024], [4096,1000], [2048,2048] and
// [1024,4096] 0.74-0.83x, f32 [16384,256] 0.93x, the rest of the bench
// and f32/f64 rows of other widths within noise. f16 wide vectors are
// widened whole (two vcvtph2ps a 32 elements, where deinterleaving took 4
// shifts and 4 vpmovqw before 4 narrow conversions) and merged in f32;
// where the tree is of f16 values (a host with AVX512-FP16 leaves them
// so), its leaf is the merged value narrowed, its f32 value in
// `wideOfHalf`. A/B in one process on an Intel host with AVX512-FP16,
// bits the same: the f16 row maxima over [16384,256], [4096,1024],
// [1024,4096], [4096,1000], [8192,64], [4096,96] 0.64-0.80x, [2048,2048]
// (its lanes' values in f32 stack slots: fpext leaves) 0.75x. (On a Zen 4
// host without it, before NaN lanes were found once a tree: 0.91-1.06x.)
// The leaves replaced go to `replaced`, to be deleted with the old tree
// where nothing else uses them (a side output may).
void mergeStridedLeaves(llvm::IRBuilder<>& b, llvm::Intrinsic::ID op,
                        llvm::SmallVectorImpl<llvm::Value*>& leaves,
                        llvm::SmallVectorImpl<llvm::IntrinsicInst*>& out,
                        llvm::SmallVectorImpl<llvm::WeakTrackingVH>& replaced,
                        WideOfHalf& wideOfHalf) {
  // Per wide vector: its leaves by offset.
  llvm::MapVector<llvm::Value*, llvm::SmallVector<llvm::Value*>> byWide;
  llvm::DenseMap<llvm::Value*, StridedLeaf> strided;
  for (llvm::Value* leaf : leaves) {
    std::optional<StridedLeaf> s = stridedLeaf(leaf);
    if (!s) continue;
    auto& slots = byWide[s->wide];
    if (slots.empty()) slots.assign(s->stride, nullptr);
    const StridedLeaf& first = strided.try_emplace(s->wide, *s).first->second;
    if (first.stride != s->stride || first.kind != s->kind || slots[s->offset]) {
      slots.assign(slots.size(), leaf);  // not one leaf an offset: kept as is
      continue;
    }
    slots[s->offset] = leaf;
  }
  // Complete wide vectors by (stride, kind, type), in the leaves' order:
  // each group is merged.
  llvm::MapVector<std::tuple<unsigned, unsigned, llvm::Type*>, llvm::SmallVector<llvm::Value*>>
      groups;
  llvm::SmallPtrSet<llvm::Value*, 16> merged;
  for (auto& [wide, slots] : byWide) {
    if (llvm::is_contained(slots, nullptr) ||
        llvm::SmallPtrSet<llvm::Value*, 16>(slots.begin(), slots.end()).size() != slots.size()) {
      continue;
    }
    const StridedLeaf& s = strided.find(wide)->second;
    groups[{s.stride, unsigned{s.kind}, wide->getType()}].push_back(wide);
    merged.insert(slots.begin(), slots.end());
  }
  if (groups.empty()) return;
  llvm::SmallVector<llvm::Value*> kept;
  for (llvm::Value* leaf : leaves) {
    if (merged.contains(leaf)) {
      replaced.push_back(leaf);
    } else {
      kept.push_back(leaf);
    }
  }
  for (auto& [key, wides] : groups) {
    auto [stride, kind, type] = key;
    unsigned group = stride;
    unsigned n = llvm::cast<llvm::FixedVectorType>(type)->getNumElements();
    llvm::Type* element = llvm::cast<llvm::FixedVectorType>(type)->getElementType();
    // f16 values merged in f32 (lowerMinMax computes f16 maxima so).
    const bool half = kind == StridedLeaf::kHalf || element->isHalfTy();
    llvm::SmallVector<llvm::Value*> values;
    for (llvm::Value* wide : wides) {
      if (half) {
        values.push_back(b.CreateFPExt(wide, llvm::FixedVectorType::get(b.getFloatTy(), n)));
        continue;
      }
      if (kind == StridedLeaf::kSame) {
        values.push_back(wide);
        continue;
      }
      auto* i32s = llvm::FixedVectorType::get(b.getInt32Ty(), n / 2);
      auto* f32s = llvm::FixedVectorType::get(b.getFloatTy(), n / 2);
      llvm::Value* pairs = b.CreateBitCast(wide, i32s);
      values.push_back(b.CreateBitCast(b.CreateShl(pairs, 16), f32s));
      values.push_back(b.CreateBitCast(b.CreateAnd(pairs, 0xffff0000u), f32s));
    }
    if (kind == StridedLeaf::kBf16) group /= 2;
    llvm::Value* merged =
        groupReduce(b, op, balancedTree(b, op, std::move(values), out), group, out);
    if (kind == StridedLeaf::kSame && half) {
      // A leaf of an f16 tree: its f32 value taken where the tree's ops are
      // lowered.
      llvm::Value* narrow = b.CreateFPTrunc(
          merged, llvm::FixedVectorType::get(element, n / stride));
      wideOfHalf[narrow] = merged;
      merged = narrow;
    }
    kept.push_back(merged);
  }
  leaves.assign(kept.begin(), kept.end());
}

// `calls` (vector maxima and minima), each chain of one kind whose links
// have no other use (a lane's max over its elements: max(max(max(a, b),
// c), d)) rebuilt as a balanced tree (max(max(a, b), max(c, d))): the
// same value, NaN and zeros included (each is exact, commutative and
// associative), in log2 of the steps' latency: the bf16 row max over
// [16384,256] (a lane's 8 elements) 0.92x, A/B in one process, bits the
// same. The calls after, those of the trees among them; `wideOfHalf` gets
// the f32 values of the f16 leaves mergeStridedLeaves makes.
llvm::SmallVector<llvm::IntrinsicInst*> balancedChains(
    llvm::ArrayRef<llvm::IntrinsicInst*> calls, WideOfHalf& wideOfHalf) {
  auto link = [](llvm::Value* v, llvm::IntrinsicInst* parent) -> llvm::IntrinsicInst* {
    auto* call = llvm::dyn_cast<llvm::IntrinsicInst>(v);
    return call && call->getIntrinsicID() == parent->getIntrinsicID() && call->hasOneUse() &&
                   call->getParent() == parent->getParent() && call->getType()->isVectorTy()
               ? call
               : nullptr;
  };
  llvm::SmallVector<llvm::IntrinsicInst*> out;
  llvm::SmallPtrSet<llvm::IntrinsicInst*, 16> erased;
  for (llvm::IntrinsicInst* root : calls) {
    if (erased.contains(root)) continue;
    // A root: no link of a longer chain.
    if (root->hasOneUse()) {
      auto* user = llvm::dyn_cast<llvm::IntrinsicInst>(root->user_back());
      if (user && link(root, user) == root) continue;
    }
    llvm::SmallVector<llvm::Value*> leaves;
    llvm::SmallVector<llvm::IntrinsicInst*> links;
    std::function<void(llvm::Value*)> gather = [&](llvm::Value* v) {
      llvm::IntrinsicInst* inner = link(v, root);
      if (!inner) {
        leaves.push_back(v);
        return;
      }
      links.push_back(inner);
      gather(inner->getArgOperand(0));
      gather(inner->getArgOperand(1));
    };
    gather(root->getArgOperand(0));
    gather(root->getArgOperand(1));
    if (leaves.size() < 3 || !root->getType()->isVectorTy()) {
      out.push_back(root);
      out.append(links.begin(), links.end());
      continue;
    }
    llvm::IRBuilder<> b(root);
    llvm::SmallVector<llvm::WeakTrackingVH> replaced;
    mergeStridedLeaves(b, root->getIntrinsicID(), leaves, out, replaced, wideOfHalf);
    root->replaceAllUsesWith(balancedTree(b, root->getIntrinsicID(), std::move(leaves), out));
    root->eraseFromParent();
    // Each link's one use was the link or root above it: top down.
    for (llvm::IntrinsicInst* inner : links) {
      erased.insert(inner);
      inner->eraseFromParent();
    }
    llvm::RecursivelyDeleteTriviallyDeadInstructionsPermissive(replaced);
  }
  return out;
}

// NaN-propagating vector maxima and minima (arith.maximumf/minimumf:
// llvm.maximum, llvm.minimum and their reductions) as AVX-512DQ's VRANGE
// where the host has it. x86 has no such instruction before AVX10.2, and
// LLVM's expansion orders the operands by sign (so that -0 < +0) and then
// blends NaNs back in: 6 instructions, 4 of them on an accumulator's
// chain. VRANGE (imm 5: the larger, 4: the smaller, with its own sign)
// orders -0 < +0 itself and only returns the other operand for a quiet
// NaN; a NaN lane's result is then a quiet NaN, selected by one unordered
// compare: 3 instructions, fewer a pair in a tree (its NaN lanes found once,
// see nanLanes below). Every pair of 18 special f32 and f64
// values and 2e7 random f32 pairs gave llvm.maximum's and llvm.minimum's
// results, bit for bit (a NaN for a NaN). A reduction (a row's max over
// the lanes' values) is first split in halves down to two elements, each
// step a maximum; vectors wider than a register (the vectorizer's 32
// lanes) go in 512-bit pieces. A/B in one process, bits the same: the bf16
// row max over [16384,256] 0.71x, the softmax steps 0.88-0.89x, the other
// bench kernels within their noise. Scalars and vectors under 128 bits
// (the last steps of a warp's tree, where LLVM's expansion is ~9
// instructions of moves through mask registers) go in a 128-bit
// register's first lanes: the row maxima 0.90-0.97x. Without AVX-512DQ
// (an AVX2 host), the same: reductions split, chains balanced, f16 ops
// computed in f32, a tree's NaN lanes found once, each op LLVM's own
// llvm.maximum or llvm.minimum in f32 or f64 -- marked nnan where its NaN
// lanes are found apart, so that its expansion skips their blend (two
// sign blends and vmaxps). Before, the f16 maxima InstCombine had folded
// back after the vectorizer stayed vectors of f16, which x86 without
// AVX512-FP16 computes an element at a time through f32: the f16 row max
// over [16384,256] ran 1.45 ms, 0.19 since (XLA:CPU 0.32). A/B in one
// process on a Zen 3 host, bits the same: the f16 row max over
// [2048,2048] 0.81x, bf16 [16384,256] 0.78x, the multi-row max 0.93x,
// the cumsum 0.87x, the rest of the bench within noise.
void lowerMinMax(llvm::Module& module) {
  if (!llvm::Triple(module.getTargetTriple()).isX86()) return;
  const bool rangeOps = hostHasFeature("avx512dq");
  const bool vl = hostHasFeature("avx512vl");
  llvm::SmallVector<llvm::IntrinsicInst*> reductions, pairs;
  for (llvm::Function& fn : module) {
    for (llvm::BasicBlock& block : fn) {
      for (llvm::Instruction& inst : block) {
        auto* call = llvm::dyn_cast<llvm::IntrinsicInst>(&inst);
        if (!call) continue;
        switch (call->getIntrinsicID()) {
          case llvm::Intrinsic::vector_reduce_fmaximum:
          case llvm::Intrinsic::vector_reduce_fminimum:
            reductions.push_back(call);
            break;
          case llvm::Intrinsic::maximum:
          case llvm::Intrinsic::minimum:
            pairs.push_back(call);
            break;
          default:
            break;
        }
      }
    }
  }
  for (llvm::IntrinsicInst* call : reductions) {
    bool max = call->getIntrinsicID() == llvm::Intrinsic::vector_reduce_fmaximum;
    llvm::Intrinsic::ID pair = max ? llvm::Intrinsic::maximum : llvm::Intrinsic::minimum;
    llvm::IRBuilder<> b(call);
    llvm::Value* v = call->getArgOperand(0);
    auto* type = llvm::cast<llvm::FixedVectorType>(v->getType());
    unsigned n = type->getNumElements();
    if (!llvm::isPowerOf2_32(n)) continue;
    while (n > 2) {
      n /= 2;
      llvm::SmallVector<int> lo, hi;
      for (unsigned i = 0; i < n; ++i) {
        lo.push_back(static_cast<int>(i));
        hi.push_back(static_cast<int>(i + n));
      }
      auto* half = b.CreateBinaryIntrinsic(pair, b.CreateShuffleVector(v, lo),
                                           b.CreateShuffleVector(v, hi));
      pairs.push_back(llvm::cast<llvm::IntrinsicInst>(half));
      v = half;
    }
    llvm::Value* result = b.CreateExtractElement(v, 0ul);
    if (n == 2) {
      result = b.CreateBinaryIntrinsic(pair, result, b.CreateExtractElement(v, 1ul));
      pairs.push_back(llvm::cast<llvm::IntrinsicInst>(result));
    }
    call->replaceAllUsesWith(result);
    call->eraseFromParent();
  }
  // Each f16 result's f32 value (a max of f16 values is one: the next op
  // takes it as it is, not through fptrunc and fpext again).
  WideOfHalf wideOfHalf;
  pairs = balancedChains(pairs, wideOfHalf);
  // How a call is lowered: the type it is computed in, its lanes, and the
  // register its pieces take -- 512-bit pieces where it fills them, else
  // one 128- or 256-bit register (AVX-512VL; scalars and vectors under 128
  // bits, a warp tree's last steps, in a 128-bit register's first lanes).
  // f16 ones in f32: the same value. Without AVX512-FP16 x86 computes
  // them so anyway (WidenHalfMinMax's, folded back by InstCombine); with it
  // there is VMAXPH but no VRANGEPH, and LLVM's expansion around VMAXPH ran
  // the f16 row max over [16384,256] 1.35x the time of this (A/B in one
  // process on an Intel host with AVX512-FP16, bits the same). None where
  // the call is not lowered (another type; under 512 bits without VL).
  struct Lowering {
    llvm::Type* element;
    unsigned count, chunk;
  };
  auto loweringOf = [&](llvm::IntrinsicInst* call) -> std::optional<Lowering> {
    llvm::Type* element = call->getType()->getScalarType();
    if (element->isHalfTy()) element = llvm::Type::getFloatTy(call->getContext());
    if (!element->isFloatTy() && !element->isDoubleTy()) return std::nullopt;
    auto* vector = llvm::dyn_cast<llvm::FixedVectorType>(call->getType());
    const unsigned count = vector ? vector->getNumElements() : 1;
    const unsigned total = count * element->getPrimitiveSizeInBits();
    const unsigned chunk = total <= 128 ? 128 : total <= 256 ? 256 : 512;
    if (rangeOps && chunk < 512 && !vl) return std::nullopt;
    return Lowering{element, count, chunk};
  };
  // The calls lowered, in program order: within a block, a tree's calls
  // before the call that takes them.
  llvm::SmallPtrSet<llvm::IntrinsicInst*, 32> lowered;
  for (llvm::IntrinsicInst* call : pairs) {
    if (loweringOf(call)) lowered.insert(call);
  }
  llvm::DenseMap<const llvm::Instruction*, unsigned> order;
  for (llvm::Function& fn : module) {
    for (llvm::Instruction& inst : llvm::instructions(fn)) order[&inst] = order.size();
  }
  llvm::erase_if(pairs, [&](llvm::IntrinsicInst* call) { return !lowered.contains(call); });
  llvm::sort(pairs, [&](llvm::IntrinsicInst* a, llvm::IntrinsicInst* b) {
    return order.lookup(a) < order.lookup(b);
  });
  // A call whose only use is a lowered call of its block (a link of a
  // max/min tree, a lane's chain) leaves its NaN lanes unfixed: its lanes
  // where some leaf below it is NaN (`nanLanes`, by its result) are made
  // NaN once, at the tree's root (VRANGE's result there is another
  // operand's, which the root's select replaces). A tree of n leaves:
  // n - 1 VRANGEs, n / 2 compares, their ors and one select, where each
  // VRANGE had its own compare, add and select. A/B in one process, bits
  // the same: the f16 row maxima over [2048,2048] and [16384,256]
  // 0.89-0.92x (before their leaves were merged, 0.99-1.0x after), bf16
  // 0.97-0.99x, f32 and the softmax steps within noise.
  llvm::DenseMap<llvm::Value*, llvm::Value*> nanLanes;
  auto inner = [&](llvm::IntrinsicInst* call) {
    if (!call->hasOneUse()) return false;
    auto* user = llvm::dyn_cast<llvm::IntrinsicInst>(call->user_back());
    return user && user->getParent() == call->getParent() && lowered.contains(user);
  };
  for (llvm::IntrinsicInst* call : pairs) {
    const Lowering lowering = *loweringOf(call);  // (plain names: the lambdas below take them)
    llvm::Type* const element = lowering.element;
    const unsigned count = lowering.count, chunk = lowering.chunk;
    const bool vector = call->getType()->isVectorTy();
    const bool half = call->getType()->getScalarType()->isHalfTy();
    const unsigned bits = element->getPrimitiveSizeInBits();
    static constexpr llvm::Intrinsic::ID kRange[2][3] = {
        {llvm::Intrinsic::x86_avx512_mask_range_ps_128,
         llvm::Intrinsic::x86_avx512_mask_range_ps_256,
         llvm::Intrinsic::x86_avx512_mask_range_ps_512},
        {llvm::Intrinsic::x86_avx512_mask_range_pd_128,
         llvm::Intrinsic::x86_avx512_mask_range_pd_256,
         llvm::Intrinsic::x86_avx512_mask_range_pd_512}};
    const unsigned lanes = chunk / bits;
    llvm::Intrinsic::ID range =
        kRange[element->isDoubleTy()][chunk == 128 ? 0 : chunk == 256 ? 1 : 2];
    bool max = call->getIntrinsicID() == llvm::Intrinsic::maximum;
    llvm::IRBuilder<> b(call);
    llvm::Value* a = call->getArgOperand(0);
    llvm::Value* c = call->getArgOperand(1);
    llvm::Value* nanA = nanLanes.lookup(a);
    llvm::Value* nanC = nanLanes.lookup(c);
    llvm::Type* wideType =
        vector ? static_cast<llvm::Type*>(llvm::FixedVectorType::get(element, count)) : element;
    if (half) {
      auto widened = [&](llvm::Value* v) {
        auto it = wideOfHalf.find(v);
        return it != wideOfHalf.end() ? static_cast<llvm::Value*>(it->second)
                                      : b.CreateFPExt(v, wideType);
      };
      a = widened(a);
      c = widened(c);
    }
    // Lanes [first, first + lanes) of `v`, poison past its end.
    auto piece = [&](llvm::Value* v, unsigned first) -> llvm::Value* {
      if (!vector) {
        return b.CreateInsertElement(
            llvm::PoisonValue::get(llvm::FixedVectorType::get(element, lanes)), v, uint64_t{0});
      }
      if (first == 0 && lanes == count) return v;
      llvm::SmallVector<int> indices;
      for (unsigned i = 0; i < lanes; ++i) {
        indices.push_back(first + i < count ? static_cast<int>(first + i) : llvm::PoisonMaskElem);
      }
      return b.CreateShuffleVector(v, indices);
    };
    const bool deferred = inner(call);
    // Without VRANGE: LLVM's own op in f32 or f64, told there are no NaNs
    // (nnan: no blend of them) where the NaN lanes are found apart.
    const bool own = !deferred && !nanA && !nanC;
    llvm::SmallVector<llvm::Value*> parts;
    if (!rangeOps) {
      llvm::FastMathFlags flags;
      if (!own) flags.setNoNaNs();
      parts.push_back(b.CreateBinaryIntrinsic(call->getIntrinsicID(), a, c, flags));
    }
    for (unsigned first = 0; rangeOps && first < count; first += lanes) {
      llvm::Value* x = piece(a, first);
      llvm::Value* y = piece(c, first);
      llvm::SmallVector<llvm::Value*> arguments = {
          x, y, b.getInt32(max ? 5 : 4), llvm::Constant::getNullValue(x->getType()),
          b.getIntN(std::max(8u, lanes), -1)};
      if (chunk == 512) arguments.push_back(b.getInt32(4));  // the current rounding
      parts.push_back(b.CreateIntrinsic(range, {}, arguments));
    }
    llvm::Value* result = parts.size() == 1 ? parts.front() : llvm::concatenateVectors(b, parts);
    if (rangeOps && !vector) {
      result = b.CreateExtractElement(result, uint64_t{0});
    } else if (rangeOps && count % lanes != 0) {
      llvm::SmallVector<int> indices;
      for (unsigned i = 0; i < count; ++i) indices.push_back(static_cast<int>(i));
      result = b.CreateShuffleVector(result, indices);
    }
    // The lanes where an operand is NaN, or a leaf below one (none where
    // LLVM's own op finds them).
    llvm::Value* nan = nullptr;
    if (rangeOps || !own) {
      if (!nanA && !nanC) {
        nan = b.CreateFCmpUNO(a, c);
      } else if (nanA && nanC) {
        nan = b.CreateOr(nanA, nanC);
      } else {
        llvm::Value* other = nanA ? c : a;
        nan = b.CreateOr(nanA ? nanA : nanC, b.CreateFCmpUNO(other, other));
      }
      if (!deferred) result = b.CreateSelect(nan, llvm::ConstantFP::getQNaN(wideType), result);
    }
    if (half) {
      llvm::Value* wide = result;
      result = b.CreateFPTrunc(wide, call->getType());
      wideOfHalf[result] = wide;
    }
    if (deferred) nanLanes[result] = nan;
    call->replaceAllUsesWith(result);
    lowered.erase(call);
    call->eraseFromParent();
  }
  // An f16 result widened again (a lane's value kept in f32 for its warp's
  // tree) is its f32 value: no vcvtps2ph and vcvtph2ps at the end of each
  // lane's chain. A/B in one process, bits the same: the f16 row maxima
  // over [16384,256], [8192,64] and [4096,96] 0.92-0.95x, the f16 row min
  // over [4096,512] 0.95x.
  for (auto& [narrow, wide] : wideOfHalf) {
    for (llvm::User* user : llvm::make_early_inc_range(narrow->users())) {
      auto* ext = llvm::dyn_cast<llvm::FPExtInst>(user);
      if (!ext || ext->getType() != wide->getType()) continue;
      ext->replaceAllUsesWith(wide);
      ext->eraseFromParent();
    }
  }
}

// Passes of LLVM's O3 pipeline that our kernels do not need: skipped one
// at a time, then all together, each left every one of the bench's 32
// kernels' objects byte-identical (our passes have folded, forwarded and
// cleaned up what they would; there are no calls, globals or coroutines
// to speak of). LoopLoadElimination alone took 8 of the 41 ms of O3 on
// the bf16 021 transpose (its dependence analysis over the 64 scalar
// copies of a lane loop). All skipped: O3 of the 32 kernels 364 -> 320 ms
// and 369 -> 321 ms (best of 3, two profiles).
constexpr llvm::StringLiteral kUnneededPasses[] = {
    "ADCEPass", "AlignmentFromAssumptionsPass", "BDCEPass", "CGProfilePass",
    "CalledValuePropagationPass", "ConstraintEliminationPass", "CoroEarlyPass", "DSEPass",
    "EliminateAvailableExternallyPass", "Float2IntPass", "GlobalDCEPass", "GlobalOptPass",
    "InferFunctionAttrsPass", "InjectTLIMappings", "LibCallsShrinkWrapPass",
    "LoopDistributePass", "LoopInstSimplifyPass", "LoopLoadEliminationPass", "LoopSinkPass",
    "MemCpyOptPass", "MergedLoadStoreMotionPass", "OpenMPOptPass", "SCCPPass",
    "SpeculativeExecutionPass", "TailCallElimPass", "WarnMissedTransformationsPass"};

// Whether this host has AVX-512 (its 512-bit vectors and native masked
// memory ops): two host choices below turn on it.
bool hostHasAvx512() { return hostHasFeature("avx512f"); }

// Vectors of f32 scaled by llvm.ldexp by an exponent converted from a
// rounded f32 (exp's 2^n, n = roundeven(x / ln2)) as AVX-512's VSCALEFPS
// of that f32 itself: x86 code generation lowers the ldexp to VSCALEFPS
// of the exponent converted back to f32, two conversions (vcvttps2dq,
// vcvtdq2ps) of ~24 instructions an exp. The same value: n is an integer
// (in i32's range, or the ldexp was poison).
void scaleByRoundedExponents(llvm::Module& module) {
  if (!hostHasAvx512() || !llvm::Triple(module.getTargetTriple()).isX86()) return;
  const bool vl = hostHasFeature("avx512vl");
  llvm::SmallVector<llvm::IntrinsicInst*> scalings;
  for (llvm::Function& fn : module) {
    for (llvm::Instruction& inst : llvm::instructions(fn)) {
      auto* call = llvm::dyn_cast<llvm::IntrinsicInst>(&inst);
      if (call && call->getIntrinsicID() == llvm::Intrinsic::ldexp) scalings.push_back(call);
    }
  }
  for (llvm::IntrinsicInst* call : scalings) {
    auto* type = llvm::dyn_cast<llvm::FixedVectorType>(call->getType());
    auto* toInt = llvm::dyn_cast<llvm::FPToSIInst>(call->getArgOperand(1));
    auto* rounded = toInt ? llvm::dyn_cast<llvm::IntrinsicInst>(toInt->getOperand(0)) : nullptr;
    if (!type || !type->getElementType()->isFloatTy() || !rounded ||
        rounded->getType() != type ||
        !llvm::is_contained({llvm::Intrinsic::roundeven, llvm::Intrinsic::rint,
                             llvm::Intrinsic::nearbyint, llvm::Intrinsic::floor,
                             llvm::Intrinsic::ceil, llvm::Intrinsic::trunc,
                             llvm::Intrinsic::round},
                            rounded->getIntrinsicID())) {
      continue;
    }
    unsigned lanes = type->getNumElements();
    llvm::Intrinsic::ID scalef = llvm::Intrinsic::not_intrinsic;
    if (lanes == 16) scalef = llvm::Intrinsic::x86_avx512_mask_scalef_ps_512;
    if (lanes == 8 && vl) scalef = llvm::Intrinsic::x86_avx512_mask_scalef_ps_256;
    if (lanes == 4 && vl) scalef = llvm::Intrinsic::x86_avx512_mask_scalef_ps_128;
    if (scalef == llvm::Intrinsic::not_intrinsic) continue;
    llvm::IRBuilder<> b(call);
    llvm::SmallVector<llvm::Value*> arguments = {call->getArgOperand(0), rounded,
                                                 llvm::PoisonValue::get(type),
                                                 b.getIntN(std::max(8u, lanes), -1)};
    if (lanes == 16) arguments.push_back(b.getInt32(4));  // the current rounding
    call->replaceAllUsesWith(b.CreateIntrinsic(scalef, {}, arguments));
    call->eraseFromParent();
    if (toInt->use_empty()) toInt->eraseFromParent();
  }
}

// No tail folding on a host without AVX-512: LLVM's loop vectorizer runs a
// short loop of unknown trip count (a lane loop cut at a guard: the
// cumsum's reduce-window lanes past its padding, a concatenate's operand
// edges) as masked vector loads and stores, and AVX2's masked store
// (vmaskmovps) is slow on the Zen 2/3 hosts we run on; a scalar epilogue
// instead. A/B in one process on such a host (one thread, bits the same):
// the cumsum 0.25x, the concatenate 0.39x, the seed transpose 0.89x, the
// bf16 021 transpose 1.07x, the other 24 bench cases 0.97-1.03x; a
// reduce-window alone 0.21x. AVX-512's masked stores are native: the
// default stays there (on a Zen 4 host, folding no tails ran the cumsum
// 1.42-1.47x and the concatenate 1.07-1.09x the time, the seed transpose
// 0.90-0.99x; the other bench objects were the same). LLVM's option is
// process-wide, set once before the first optimization (NVPTX folds no
// tail: it has no masked memory ops).
void setTailFoldingForHost() {
  static std::once_flag once;
  std::call_once(once, [] {
    if (hostHasAvx512() || !llvm::Triple(llvm::sys::getProcessTriple()).isX86()) return;
    auto& options = llvm::cl::getRegisteredOptions();
    auto style = options.find("force-tail-folding-style");
    if (style != options.end()) {
      style->second->addOccurrence(1, "force-tail-folding-style", "none");
    }
  });
}

// A kernel phase's pointer argument that points into the kernel's stack
// (extractPhases): a shared tile or accumulators, not a buffer.
constexpr llvm::StringLiteral kStackArgument = "xla-gpu-stack";

// Software prefetches, after O3, in the host's innermost loops that wait on
// memory: those that only read the kernel's buffers (function arguments:
// not the stack's shared tiles or accumulators, nor constant tables), one
// or two streams of them (loads whose address moves a constant step of at
// most kMaxPrefetchedStep bytes an iteration; the loads of a stream lie a
// constant apart, within a page), at least 2 bytes of stream an
// instruction, and a stream that goes on: 4 prefetch distances long
// within the loop, or continued by the enclosing loop's next iteration
// (a row sum's steps along its row). Each such stream gets a prefetch
// kPrefetchBytesAhead bytes ahead along its step, one for each cache line
// it moves an iteration. The row sum f32[1024,4096] (its 16 KiB rows, in
// 2 KiB steps of 32 iterations) ran 0.73-0.74x on two threads and one
// (A/B in one process, 400 runs each; 256 or 512 bytes ahead 1.05-1.16x
// slower than 1024, 2048 1.08-1.22x); the multi-row max 0.98-1.00x, no
// other bench kernel changed. Measured and left out: loops that also
// store (a copy: the slices + concat 1.02-1.06x slower), a column sum's
// eight short streams (1.14x slower on two threads), loops over data
// that is in cache (a reduce-window's overlapping windows: 1.11-1.16x).
// Those figures are an AVX2 host's (Zen, 8 MiB of L3). On a host with
// AVX-512 (Zen 4, 32 MiB of L3) the hardware's prefetchers keep up and
// ours only cost: the same kernels without them, A/B in one process on
// one thread and two, bits the same: the row sum 0.73-0.84x, row sums of
// 8 to 128 MiB (past its L3) 0.79-0.97x, the column sum f32[16384,1024]
// 0.87-0.88x on two threads, the others 0.96-1.02x; stop 43's AVX-512
// host gained nothing from prefetches written in C. So only hosts without
// AVX-512 get them (optimizeModule). A kernel's phases, once outlined
// (extractPhases), took their accumulators as arguments, which read as
// buffers written: no loop was prefetched until stop 91 marked them
// (kStackArgument). On a Zen 3 host (32 MiB of L3), A/B in one process,
// bits the same: the row sum over f32[16384,1024] (64 MiB) 0.88x, the
// column sum f32[4096,1024] 0.94x, the other reductions 0.96-1.04x.
constexpr int64_t kPrefetchBytesAhead = 1024;
constexpr int64_t kMaxPrefetchedStep = 256;
constexpr int64_t kCacheLineBytes = 64;
constexpr int64_t kPageBytes = 4096;

// `value` as a 64-bit integer, if it is a constant that fits.
std::optional<int64_t> constantOf(const llvm::SCEV* value) {
  auto* constant = llvm::dyn_cast<llvm::SCEVConstant>(value);
  if (!constant) return std::nullopt;
  return constant->getAPInt().trySExtValue();
}

void prefetchStreams(llvm::Function& fn, llvm::LoopInfo& loops, llvm::ScalarEvolution& se) {
  const llvm::DataLayout& layout = fn.getParent()->getDataLayout();
  auto inBuffer = [](llvm::Value* pointer) {
    auto* argument = llvm::dyn_cast<llvm::Argument>(llvm::getUnderlyingObject(pointer));
    return argument && !argument->getParent()->getAttributes().hasParamAttr(
                           argument->getArgNo(), kStackArgument);
  };
  struct Stream {
    const llvm::SCEV* address;  // of `first`
    llvm::LoadInst* first;
    int64_t step, lo, hi;  // bytes: the step, the loads' extent from `first`
  };
  for (llvm::Loop* loop : loops.getLoopsInPreorder()) {
    if (!loop->isInnermost()) continue;
    // Exactly this many iterations (0 where unknown).
    const int64_t trips = se.getSmallConstantTripCount(loop);
    if (trips == 0) continue;
    // A loop that writes memory other than the stack (accumulators, shared
    // tiles) is left to the hardware's prefetchers.
    int64_t instructions = 0;
    bool writes = false;
    for (llvm::BasicBlock* block : loop->blocks()) {
      instructions += block->size();
      for (llvm::Instruction& inst : *block) {
        auto* store = llvm::dyn_cast<llvm::StoreInst>(&inst);
        bool local = store && !inBuffer(store->getPointerOperand());
        writes |= inst.mayWriteToMemory() && !local;
      }
    }
    if (writes) continue;
    llvm::SmallVector<Stream> streams;
    for (llvm::BasicBlock* block : loop->blocks()) {
      for (llvm::Instruction& inst : *block) {
        auto* load = llvm::dyn_cast<llvm::LoadInst>(&inst);
        if (!load || load->isVolatile() || load->isAtomic()) continue;
        llvm::Value* pointer = load->getPointerOperand();
        if (!inBuffer(pointer)) continue;
        const llvm::SCEV* address = se.getSCEV(pointer);
        auto* rec = llvm::dyn_cast<llvm::SCEVAddRecExpr>(address);
        if (!rec || rec->getLoop() != loop || !rec->isAffine()) continue;
        std::optional<int64_t> step = constantOf(rec->getStepRecurrence(se));
        if (!step || *step == 0 || *step > kMaxPrefetchedStep || *step < -kMaxPrefetchedStep) {
          continue;
        }
        // A long stream, or one the enclosing loop goes on with: its next
        // iteration starts where this loop's last ended.
        const int64_t extent = trips * *step;
        bool longStream = std::abs(extent) >= 4 * kPrefetchBytesAhead;
        auto* outer = llvm::dyn_cast<llvm::SCEVAddRecExpr>(rec->getStart());
        bool continued = outer && outer->getLoop() == loop->getParentLoop() &&
                         outer->isAffine() &&
                         constantOf(outer->getStepRecurrence(se)) == extent;
        if (!longStream && !continued) continue;
        auto size = static_cast<int64_t>(layout.getTypeStoreSize(load->getType()));
        bool joined = false;
        for (Stream& stream : streams) {
          if (stream.step != *step) continue;
          std::optional<int64_t> offset = constantOf(se.getMinusSCEV(address, stream.address));
          if (!offset || *offset < -kPageBytes || *offset > kPageBytes) continue;
          stream.lo = std::min(stream.lo, *offset);
          stream.hi = std::max(stream.hi, *offset + size);
          joined = true;
          break;
        }
        if (!joined) streams.push_back({address, load, *step, 0, size});
      }
    }
    // Nor are loops that read more streams, or do more work a byte of them.
    int64_t streamed = 0;
    for (const Stream& stream : streams) streamed += std::abs(stream.step);
    if (streams.empty() || streams.size() > 2 || streamed < 2 * instructions) continue;
    for (const Stream& stream : streams) {
      int64_t magnitude = std::abs(stream.step);
      int64_t lines = std::max<int64_t>(1, (magnitude + kCacheLineBytes - 1) / kCacheLineBytes);
      llvm::IRBuilder<> b(stream.first);
      for (int64_t k = 0; k < lines; ++k) {
        int64_t offset = stream.step > 0
                             ? stream.lo + kPrefetchBytesAhead + k * kCacheLineBytes
                             : stream.hi - 1 - kPrefetchBytesAhead - k * kCacheLineBytes;
        llvm::Value* ahead =
            b.CreatePtrAdd(stream.first->getPointerOperand(), b.getInt64(offset));
        // read, keep in all cache levels, data
        b.CreateIntrinsic(llvm::Intrinsic::prefetch, {ahead->getType()},
                          {ahead, b.getInt32(0), b.getInt32(3), b.getInt32(1)});
      }
    }
  }
}

// LLVM's default O<level> pipeline with every loop and SLP transformation
// on (what mlir::makeOptimizingTransformer runs) less kUnneededPasses,
// then prefetchStreams where the host has no AVX-512, timed per pass with
// `timing`. `optLevel` is 0 to 3.
//
// On a host with AVX-512 the vectorizers may use its 512-bit registers
// ("prefer-vector-width"="512"). LLVM's tuning does for Zen 4 (where the
// host code was measured until stop 60) but not for Intel's AVX-512 cores
// (Skylake-SP to Sapphire Rapids prefer 256 bits, against the clock
// drop heavy 512-bit code cost the first of them): an Intel host with
// AVX512-FP16 (LLVM: rocketlake) ran 256-bit loops, half its FMA width.
// A/B in one process there, bits the same: the expm1/log1p 0.51x, s8
// integer ops, f32 -> f8 0.55x, transpose + add 0.60x, the softmax
// exp+sum 0.70x, the erf GELU 0.72x, the column sum f32[4096,1024] 0.74x,
// the f32 chain 0.78x, the softmax steps 0.84x, the f16 row max over
// [2048,2048] 0.87x, the seed transpose 0.92x; the rest of the bench
// 0.96-1.02x (the sin/cos, pow, atan2 and cbrt in f64 the same).
void optimizeModule(llvm::Module& module, int optLevel, llvm::TargetMachine* machine,
                    bool timing) {
  static const llvm::OptimizationLevel levels[] = {
      llvm::OptimizationLevel::O0, llvm::OptimizationLevel::O1, llvm::OptimizationLevel::O2,
      llvm::OptimizationLevel::O3};
  llvm::PipelineTuningOptions tuning;
  tuning.LoopUnrolling = true;
  tuning.LoopInterleaving = true;
  tuning.LoopVectorization = true;
  tuning.SLPVectorization = true;
  llvm::PassInstrumentationCallbacks callbacks;
  if (machine->getTargetTriple().isX86() && hostHasAvx512()) {
    for (llvm::Function& fn : module) {
      if (!fn.isDeclaration() && !fn.hasFnAttribute("prefer-vector-width")) {
        fn.addFnAttr("prefer-vector-width", "512");
      }
    }
  }
  llvm::TimePassesHandler timer(/*Enabled=*/true);
  if (timing) timer.registerCallbacks(callbacks);
  // optnone functions (-xla-gpu-lower-to-llvm's cold trig helpers) are
  // skipped as opt's OptNoneInstrumentation skips them.
  callbacks.registerShouldRunOptionalPassCallback([](llvm::StringRef name, llvm::Any ir) {
    const auto* fn = llvm::any_cast<const llvm::Function*>(&ir);
    if (fn && (*fn)->hasOptNone()) return false;
    return !llvm::is_contained(kUnneededPasses, name);
  });
  llvm::PassBuilder builder(machine, tuning, std::nullopt, &callbacks);
  if (machine->getTargetTriple().isX86() && !hostHasHalfArithmetic()) {
    builder.registerVectorizerStartEPCallback(
        [](llvm::FunctionPassManager& passes, llvm::OptimizationLevel) {
          passes.addPass(WidenHalfMinMax());
        });
  }
  builder.registerOptimizerLastEPCallback(
      [](llvm::ModulePassManager& passes, llvm::OptimizationLevel, llvm::ThinOrFullLTOPhase) {
        passes.addPass(InlineF64Variants());
      });
  llvm::LoopAnalysisManager loops;
  llvm::FunctionAnalysisManager functions;
  llvm::CGSCCAnalysisManager sccs;
  llvm::ModuleAnalysisManager modules;
  builder.registerModuleAnalyses(modules);
  builder.registerCGSCCAnalyses(sccs);
  builder.registerFunctionAnalyses(functions);
  builder.registerLoopAnalyses(loops);
  builder.crossRegisterProxies(loops, functions, sccs, modules);
  builder.buildPerModuleDefaultPipeline(levels[optLevel]).run(module, modules);
  if (optLevel > 0 && !hostHasAvx512()) {
    for (llvm::Function& fn : module) {
      if (fn.isDeclaration() || fn.hasOptNone()) continue;
      prefetchStreams(fn, functions.getResult<llvm::LoopAnalysis>(fn),
                      functions.getResult<llvm::ScalarEvolutionAnalysis>(fn));
    }
  }
  if (timing) timer.print();
}

// Optimizes `module` (O<optLevel>, then the masked variants the vectorizer
// called), adds the packed wrapper of each of `publics`, and generates its
// object. `optimizedIr`, when not null, gets the module as optimized;
// `optimized`, when O3 ended.
llvm::Expected<std::unique_ptr<llvm::MemoryBuffer>> optimizeAndGenerate(
    llvm::Module& module, int optLevel, llvm::TargetMachine* machine, bool timing,
    llvm::ArrayRef<std::string> publics, std::string* optimizedIr,
    std::chrono::steady_clock::time_point* optimized) {
  optimizeModule(module, optLevel, machine, timing);
  defineMaskedVariants(module);
  lowerMinMax(module);
  scaleByRoundedExponents(module);
  if (optimizedIr) *optimizedIr = printed(module);
  for (const std::string& name : publics) addPackedWrapper(module, *module.getFunction(name));
  *optimized = std::chrono::steady_clock::now();
  // Host code generation with the host flags (see codegenFlagsMutex);
  // device code generation waits meanwhile.
  std::shared_lock<std::shared_mutex> hostCodegen(codegenFlagsMutex());
  setHostCodegenFlags(true);
  llvm::orc::SimpleCompiler compile(*machine);
  if (timing) llvm::TimePassesIsEnabled = true;
  auto object = compile(module);
  if (timing) llvm::reportAndResetTimings();
  if (!object) {
    return llvm::createStringError("code generation failed: " +
                                   llvm::toString(object.takeError()));
  }
  return object;
}

// ---- A kernel's phases, compiled on several cores ----------------------
//
// -xla-gpu-lower-kernel-to-cpu makes a kernel of several phases (the code
// between two of its barriers) one loop over a chunk's blocks around a
// loop nest a phase. LLVM optimizes and compiles a module on one thread,
// and most of a reduction's or transpose's compile is there: the column
// sum f32[4096,1024]'s O3 and code generation took 34 ms of its 45, on one
// of the 2 cores, where XLA:CPU compiles on both. So where the host has
// cores to spare, each phase's loop nest becomes a function of its own
// (LLVM's CodeExtractor; the kernel calls it once a chunk of blocks), the
// functions are shared out into parts, and each part is optimized and
// compiled in an LLVM context of its own, the parts at once. The kernel's
// object is then an archive of the parts' objects.
//
// A part costs ~3-4 ms of its own (O3's and code generation's pipelines
// built and run on a module; measured on parts of one small loop), so a
// kernel is cut into at most as many parts as there are idle cores
// (partsForKernel), and at most kMaxParts. The two cores of the hosts we
// measure on ran two parts at once ~1.4x faster than one after the other.
constexpr int kMaxParts = 4;

// The hardware threads the process may run on (its CPU affinity).
int hostCores() {
  static const int cores = std::max(1u, llvm::hardware_concurrency().compute_thread_count());
  return cores;
}

// Helper threads for the parts, beside the compiling thread (which takes
// parts too, so that a compile never waits on a busy pool). Never
// destroyed: no thread is joined at exit.
llvm::StdThreadPool& partPool() {
  static llvm::StdThreadPool* pool =
      new llvm::StdThreadPool(llvm::hardware_concurrency(std::max(1, hostCores() - 1)));
  return *pool;
}

// A function's estimated compile cost, in instructions: its instructions
// and 64 a loop. Fitted on the bench kernels' 56 phases compiled one a
// module: 2 + 0.035 ms an instruction + 2.3 ms a loop (mean error 2 ms;
// a phase of exp()s or of bf16 conversions costs more than it says).
size_t estimatedCost(llvm::Function& fn) {
  llvm::DominatorTree dominators(fn);
  llvm::LoopInfo loops(dominators);
  return fn.getInstructionCount() + 64 * loops.getLoopsInPreorder().size();
}

// Each loop nest directly inside `kernel`'s only outer loop (its loop over
// a chunk's blocks), where there are two or more, becomes a function of its
// own, `<kernel>.phase<i>` in program order, called where the nest was:
// external (the other parts call it), hidden, never inlined. Its pointer
// arguments are noalias where each points into an object of its own that
// is an alloca or a noalias argument of the kernel (what its code could
// assume as part of the kernel), and kStackArgument where that is an
// alloca. Returns the functions, none where the kernel is not so made.
llvm::SmallVector<llvm::Function*> extractPhases(llvm::Function& kernel) {
  llvm::DominatorTree dominators(kernel);
  llvm::SmallVector<llvm::SmallVector<llvm::BasicBlock*>> nests;
  {
    llvm::LoopInfo loops(dominators);
    if (loops.getTopLevelLoops().size() != 1) return {};
    const llvm::Loop* grid = loops.getTopLevelLoops().front();
    if (grid->getSubLoops().size() < 2) return {};
    llvm::DenseMap<const llvm::BasicBlock*, unsigned> order;
    for (llvm::BasicBlock& block : kernel) order[&block] = order.size();
    llvm::SmallVector<const llvm::Loop*> phases(grid->getSubLoops().begin(),
                                               grid->getSubLoops().end());
    llvm::sort(phases, [&](const llvm::Loop* a, const llvm::Loop* b) {
      return order[a->getHeader()] < order[b->getHeader()];
    });
    for (const llvm::Loop* phase : phases) nests.emplace_back(phase->blocks());
  }
  llvm::SmallVector<llvm::Function*> extracted;
  for (llvm::ArrayRef<llvm::BasicBlock*> nest : nests) {
    llvm::CodeExtractor extractor(nest, &dominators, /*AggregateArgs=*/false, nullptr, nullptr,
                                  nullptr, /*AllowVarArgs=*/false, /*AllowAlloca=*/false,
                                  nullptr, "phase" + std::to_string(extracted.size()));
    if (!extractor.isEligible()) continue;
    llvm::Function* fn = extractor.extractCodeRegion(llvm::CodeExtractorAnalysisCache(kernel));
    if (fn == nullptr) continue;
    fn->setLinkage(llvm::GlobalValue::ExternalLinkage);
    fn->setVisibility(llvm::GlobalValue::HiddenVisibility);
    fn->addFnAttr(llvm::Attribute::NoInline);
    extracted.push_back(fn);
  }
  for (llvm::Function* fn : extracted) {
    auto* call = fn->hasOneUse() ? llvm::dyn_cast<llvm::CallInst>(fn->user_back()) : nullptr;
    llvm::SmallVector<const llvm::Value*> objects;
    bool distinct = call != nullptr;
    for (unsigned i = 0; distinct && i < fn->arg_size(); ++i) {
      if (!fn->getArg(i)->getType()->isPointerTy()) continue;
      const llvm::Value* object = llvm::getUnderlyingObject(call->getArgOperand(i));
      const auto* argument = llvm::dyn_cast<llvm::Argument>(object);
      bool own = llvm::isa<llvm::AllocaInst>(object) || (argument && argument->hasNoAliasAttr());
      distinct = own && !llvm::is_contained(objects, object);
      objects.push_back(object);
    }
    for (unsigned i = 0; call != nullptr && i < fn->arg_size(); ++i) {
      llvm::Value* operand = call->getArgOperand(i);
      if (operand->getType()->isPointerTy() &&
          llvm::isa<llvm::AllocaInst>(llvm::getUnderlyingObject(operand))) {
        fn->getArg(i)->addAttr(llvm::Attribute::get(fn->getContext(), kStackArgument));
      }
    }
    if (!distinct) continue;
    for (llvm::Argument& argument : fn->args()) {
      if (argument.getType()->isPointerTy()) argument.addAttr(llvm::Attribute::NoAlias);
    }
  }
  return extracted;
}

// `kernel` and its `phases` in up to `parts` groups of about the same
// estimated cost (the costliest first, each to the cheapest group so far);
// the kernel's group first.
std::vector<std::vector<llvm::Function*>> shareOut(llvm::Function& kernel,
                                                   llvm::ArrayRef<llvm::Function*> phases,
                                                   int parts) {
  std::vector<std::pair<size_t, llvm::Function*>> costs;
  for (llvm::Function* phase : phases) costs.emplace_back(estimatedCost(*phase), phase);
  llvm::stable_sort(costs, [](const auto& a, const auto& b) { return a.first > b.first; });
  std::vector<std::vector<llvm::Function*>> groups(parts);
  std::vector<size_t> loads(parts, 0);
  groups[0].push_back(&kernel);
  loads[0] = estimatedCost(kernel);
  for (const auto& [cost, phase] : costs) {
    size_t cheapest = std::min_element(loads.begin(), loads.end()) - loads.begin();
    groups[cheapest].push_back(phase);
    loads[cheapest] += cost;
  }
  llvm::erase_if(groups, [](const auto& group) { return group.empty(); });
  return groups;
}

// The part of `module` that defines `mine` (of the functions the parts
// share out, `shared`): those are declarations elsewhere; every other
// definition (the kernel's helpers, its constants) is in each part that
// uses it.
std::unique_ptr<llvm::Module> partOf(const llvm::Module& module,
                                     const std::set<const llvm::GlobalValue*>& shared,
                                     const std::set<const llvm::GlobalValue*>& mine) {
  llvm::ValueToValueMapTy values;
  std::unique_ptr<llvm::Module> part =
      llvm::CloneModule(module, values, [&](const llvm::GlobalValue* value) {
        return !shared.count(value) || mine.count(value);
      });
  for (bool erased = true; erased;) {
    erased = false;
    for (llvm::GlobalValue& value :
         llvm::make_early_inc_range(llvm::concat<llvm::GlobalValue>(part->functions(),
                                                                    part->globals()))) {
      if (value.hasLocalLinkage() && value.use_empty()) {
        value.eraseFromParent();
        erased = true;
      }
    }
  }
  return part;
}

// One part's compile: its module as bitcode (its own LLVM context on
// whichever thread takes it), and what came of it.
struct PartCompile {
  llvm::SmallVector<char, 0> bitcode;
  std::vector<std::string> publics;
  std::unique_ptr<llvm::MemoryBuffer> object;
  std::string error;
  std::string optimizedIr;
  std::chrono::steady_clock::time_point optimized;
};

// The parts of one kernel, taken one at a time by the compiling thread and
// the pool's helpers, whichever is free.
class PartCompiles {
 public:
  PartCompiles(std::vector<PartCompile> parts, int optLevel, bool timing, bool dumping)
      : parts_(std::move(parts)), optLevel_(optLevel), timing_(timing), dumping_(dumping) {}

  std::vector<PartCompile>& parts() { return parts_; }

  // Compiles parts until none is left.
  void run() {
    for (size_t k; (k = next_.fetch_add(1)) < parts_.size();) {
      compile(parts_[k]);
      std::lock_guard<std::mutex> lock(mutex_);
      if (++done_ == parts_.size()) finished_.notify_all();
    }
  }

  // Returns when every part is compiled.
  void wait() {
    std::unique_lock<std::mutex> lock(mutex_);
    finished_.wait(lock, [&] { return done_ == parts_.size(); });
  }

 private:
  void compile(PartCompile& part) {
    llvm::LLVMContext context;
    quietDiagnostics(context);
    auto module = llvm::parseBitcodeFile(
        llvm::MemoryBufferRef(llvm::StringRef(part.bitcode.data(), part.bitcode.size()), "part"),
        context);
    if (!module) {
      part.error = "a part does not read back: " + llvm::toString(module.takeError());
      return;
    }
    auto machine = hostMachine(optLevel_);
    if (!machine) {
      part.error = llvm::toString(machine.takeError());
      return;
    }
    auto object = optimizeAndGenerate(**module, optLevel_, *machine, timing_, part.publics,
                                      dumping_ ? &part.optimizedIr : nullptr, &part.optimized);
    if (!object) {
      part.error = llvm::toString(object.takeError());
      return;
    }
    part.object = std::move(*object);
  }

  std::vector<PartCompile> parts_;
  const int optLevel_;
  const bool timing_, dumping_;
  std::atomic<size_t> next_{0};
  std::mutex mutex_;
  std::condition_variable finished_;
  size_t done_ = 0;
};

// The host compiles running in the process (xlaGpuCompileToHostObject):
// compile_kernels compiles a module's kernels a core each, and a kernel is
// cut into parts only for the cores the others leave (the parts' own cost
// would otherwise slow the module's compile down).
std::atomic<int> compilesRunning{0};

struct RunningCompile {
  RunningCompile() { ++compilesRunning; }
  ~RunningCompile() { --compilesRunning; }
};

// How many parts a kernel (the only public function of its module) is
// compiled in: as many as there are idle cores with this compile's, at
// most kMaxParts ($XLA_GPU_COMPILE_PARTS: at most that many, whatever else
// runs); 1 (whole) where that is under 2.
int partsForKernel() {
  int most = std::min(hostCores() - compilesRunning.load() + 1, kMaxParts);
  if (const char* parts = std::getenv("XLA_GPU_COMPILE_PARTS")) most = std::atoi(parts);
  return std::max(most, 1);
}

// `module`'s object compiled in parts (`kernel`'s phases extracted and
// shared out), an archive of the parts' objects; or null where the kernel
// has fewer than two phases, the module then unchanged. With `timing`,
// the parts are compiled one after the other on this thread (LLVM's pass
// timers are process-wide). Sets `optimized` to when the last part's O3
// ended; `optimizedIr`, when not null, gets each part's optimized module.
llvm::Expected<std::unique_ptr<llvm::MemoryBuffer>> compileInParts(
    llvm::Module& module, llvm::Function& kernel, int parts, int optLevel, bool timing,
    std::string* optimizedIr, std::chrono::steady_clock::time_point* optimized) {
  llvm::SmallVector<llvm::Function*> phases = extractPhases(kernel);
  if (phases.empty()) return nullptr;
  std::vector<std::vector<llvm::Function*>> groups = shareOut(kernel, phases, parts);
  std::set<const llvm::GlobalValue*> shared(phases.begin(), phases.end());
  shared.insert(&kernel);
  std::vector<PartCompile> compiles(groups.size());
  for (size_t k = 0; k < groups.size(); ++k) {
    std::set<const llvm::GlobalValue*> mine(groups[k].begin(), groups[k].end());
    std::unique_ptr<llvm::Module> part = partOf(module, shared, mine);
    llvm::raw_svector_ostream out(compiles[k].bitcode);
    llvm::WriteBitcodeToFile(*part, out);
  }
  compiles[0].publics.push_back(kernel.getName().str());
  auto inFlight = std::make_shared<PartCompiles>(std::move(compiles), optLevel, timing,
                                                 optimizedIr != nullptr);
  if (!timing) {
    for (size_t k = 1; k < groups.size(); ++k) partPool().async([inFlight] { inFlight->run(); });
  }
  inFlight->run();
  inFlight->wait();
  std::vector<llvm::NewArchiveMember> members;
  std::vector<std::string> names;  // part<k>.o
  for (size_t k = 0; k < groups.size(); ++k) names.push_back("part" + std::to_string(k) + ".o");
  *optimized = std::chrono::steady_clock::time_point();
  for (auto [k, part] : llvm::enumerate(inFlight->parts())) {
    if (!part.error.empty()) return llvm::createStringError(part.error);
    *optimized = std::max(*optimized, part.optimized);
    if (optimizedIr) {
      *optimizedIr += "; part " + std::to_string(k) + " of " + std::to_string(groups.size()) +
                      "\n" + part.optimizedIr;
    }
    members.emplace_back(llvm::MemoryBufferRef(part.object->getBuffer(), names[k]));
  }
  return llvm::writeArchiveToBuffer(members, llvm::SymtabWritingMode::NoSymtab,
                                    llvm::object::Archive::K_GNU, /*Deterministic=*/true,
                                    /*Thin=*/false);
}

// Adds `bytes` to `dylib`: an object, or each object of an archive
// (compileInParts').
llvm::Error addObjects(llvm::orc::LLJIT& jit, llvm::orc::JITDylib& dylib, llvm::StringRef bytes) {
  if (!bytes.starts_with(llvm::object::ArchiveMagic)) {
    return jit.addObjectFile(dylib, llvm::MemoryBuffer::getMemBufferCopy(bytes, "xla_gpu_kernel"));
  }
  auto archive = llvm::object::Archive::create(llvm::MemoryBufferRef(bytes, "xla_gpu_kernel"));
  if (!archive) return archive.takeError();
  llvm::Error error = llvm::Error::success();
  for (const llvm::object::Archive::Child& child : (*archive)->children(error)) {
    auto member = child.getMemoryBufferRef();
    llvm::Error added =
        member ? jit.addObjectFile(dylib, llvm::MemoryBuffer::getMemBufferCopy(
                                              member->getBuffer(), "xla_gpu_kernel_part"))
               : member.takeError();
    if (added) {
      llvm::consumeError(std::move(error));
      return added;
    }
  }
  return error;
}

}  // namespace

extern "C" {

void* xlaGpuCompileToHostObject(MlirModule module, int optLevel, size_t* size,
                                double* seconds, char* error, size_t capacity) {
  if (optLevel < 0 || optLevel > 3) {
    writeMessage("invalid optimization level " + std::to_string(optLevel) + " (LLVM's are 0 to 3)",
                 error, capacity);
    return nullptr;
  }
  initializeNativeTarget();
  RunningCompile running;
  bool timing = timeLlvmPasses();
  Stopwatch clock(seconds);
  mlir::ModuleOp op = unwrap(module);
  mlirRegisterAllLLVMTranslations(wrap(op.getContext()));
  auto machine = hostMachine(optLevel);
  if (!machine) {
    writeMessage(llvm::toString(machine.takeError()), error, capacity);
    return nullptr;
  }
  llvm::LLVMContext context;
  quietDiagnostics(context);
  std::unique_ptr<llvm::Module> llvmModule = mlir::translateModuleToLLVMIR(op, context);
  if (!llvmModule) {
    writeMessage("the module does not translate to LLVM IR (is it all LLVM dialect?)", error,
                 capacity);
    return nullptr;
  }
  clock.lap(0);
  mlir::ExecutionEngine::setupTargetTripleAndDataLayout(llvmModule.get(), *machine);
  llvm::SmallVector<llvm::Function*> publics;
  for (llvm::Function& fn : *llvmModule) {
    if (!fn.isDeclaration() && fn.hasExternalLinkage()) publics.push_back(&fn);
  }
  capInterleaveCounts(*llvmModule);
  moveHalfFloatsAsIntegers(*llvmModule);
  declareMaskedVariants(*llvmModule);
  static std::atomic<uint64_t> compiles{0};
  const uint64_t n = compiles++;
  const llvm::StringRef dumpDir = llvmIrDumpDir();
  const bool dumping = !dumpDir.empty();
  if (dumping) dumpLlvmIr(dumpDir, n, ".ll", printed(*llvmModule));
  setTailFoldingForHost();
  std::string optimizedIr;
  std::chrono::steady_clock::time_point optimized;
  std::unique_ptr<llvm::MemoryBuffer> object;
  if (int parts = publics.size() == 1 ? partsForKernel() : 1; parts > 1) {
    auto inParts = compileInParts(*llvmModule, *publics.front(), parts, optLevel, timing,
                                  dumping ? &optimizedIr : nullptr, &optimized);
    if (!inParts) {
      writeMessage(llvm::toString(inParts.takeError()), error, capacity);
      return nullptr;
    }
    object = std::move(*inParts);
  }
  if (object == nullptr) {  // one part: the module as it is
    std::vector<std::string> publicNames;
    for (llvm::Function* fn : publics) publicNames.push_back(fn->getName().str());
    auto whole = optimizeAndGenerate(*llvmModule, optLevel, *machine, timing, publicNames,
                                     dumping ? &optimizedIr : nullptr, &optimized);
    if (!whole) {
      writeMessage(llvm::toString(whole.takeError()), error, capacity);
      return nullptr;
    }
    object = std::move(*whole);
  }
  if (dumping) {
    dumpLlvmIr(dumpDir, n, ".opt.ll", optimizedIr);
    dumpLlvmIr(dumpDir, n, ".o", object->getBuffer());
  }
  clock.lapAt(1, optimized);
  clock.lap(2);
  *size = object->getBufferSize();
  void* bytes = std::malloc(*size);
  std::memcpy(bytes, object->getBufferStart(), *size);
  return bytes;
}

void xlaGpuFreeBuffer(void* buffer) { std::free(buffer); }

void xlaGpuBeginDeviceCodegen(void) {
  codegenFlagsMutex().lock();
  setHostCodegenFlags(false);
}

void xlaGpuEndDeviceCodegen(void) { codegenFlagsMutex().unlock(); }

size_t xlaGpuHostTarget(char* description, size_t capacity) {
  initializeNativeTarget();
  auto builder = hostMachineBuilder();
  std::string text = builder ? builder->getTargetTriple().str() + " " + builder->getCPU() +
                                   " " + builder->getFeatures().getString()
                             : "unknown: " + llvm::toString(builder.takeError());
  writeMessage(text, description, capacity);
  return text.size();
}

void* xlaGpuHostJitLoad(const void* object, size_t size, char* error, size_t capacity) {
  initializeNativeTarget();
  auto jit = sharedJit();
  if (!jit) {
    writeMessage(llvm::toString(jit.takeError()), error, capacity);
    return nullptr;
  }
  // A unique name a dylib: the session holds them by name.
  static std::atomic<uint64_t> loaded{0};
  // Its link order: the process's symbols (LLJIT's default links).
  auto dylib = jit->createJITDylib("xla_gpu_kernel_" + std::to_string(loaded++));
  if (!dylib) {
    writeMessage(llvm::toString(dylib.takeError()), error, capacity);
    return nullptr;
  }
  if (llvm::Error e =
          addObjects(*jit, *dylib, llvm::StringRef(static_cast<const char*>(object), size))) {
    writeMessage("the object does not load: " + llvm::toString(std::move(e)), error, capacity);
    if (llvm::Error r = jit->getExecutionSession().removeJITDylib(*dylib)) {
      llvm::consumeError(std::move(r));
    }
    return nullptr;
  }
  return new HostJit{&*jit, &*dylib};
}

uint64_t xlaGpuHostJitLookup(void* handle, const char* name, char* error, size_t capacity) {
  auto* code = static_cast<HostJit*>(handle);
  reportedOnThisThread.clear();
  auto address = code->jit->lookup(*code->dylib, name);
  if (!address) {
    writeMessage(reportedOnThisThread + llvm::toString(address.takeError()), error, capacity);
    return 0;
  }
  return address->getValue();
}

void xlaGpuHostJitDestroy(void* handle) {
  auto* code = static_cast<HostJit*>(handle);
  if (llvm::Error e = code->jit->getExecutionSession().removeJITDylib(*code->dylib)) {
    llvm::consumeError(std::move(e));
  }
  delete code;
}

}  // extern "C"
