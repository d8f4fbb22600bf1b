// The "cpu" handler: runs one of our CPU-target kernels inside an XLA:CPU
// program.
//
// A CPU-target kernel is the GPU kernel with its grid turned into loops
// (-xla-gpu-lower-kernel-to-cpu), JIT-compiled in this process by MLIR's
// ExecutionEngine. Its packed entry `void(void**)` takes one pointer a
// distinct buffer (parameters that alias an earlier one are left out), then
// the first and one-past-last block to run.
//
// The call holds no pointer: the kernel is found by its content hash in a
// process-wide registry. Python registers a kernel when it compiles one
// (XlaGpuFfiRegisterCpuKernel); a hash the registry does not know -- a
// program deserialized in another process -- is compiled on first use from
// the `kernel` attribute through the compiler Python installs
// (XlaGpuFfiSetCpuCompiler).
//
// Two stages. When XLA instantiates the program (once a custom-call
// instruction), the handler
//   1. decodes and checks the attributes (kernel_call.h);
//   2. finds (or compiles) the kernel and checks that the call's signature
//      has the byte layout the compiled kernel was built for; the kernel and
//      a copy of the signature are kept in the instruction's state.
// Each call then (binding no attribute: XLA decodes none, by name, per
// call -- 0.3 us of the 4.6 a call of a kernel on f32[8] took):
//   3. verifies every buffer against the signature (buffer patterns): a
//      wrong call is an error, never an out-of-bounds access;
//   4. copies an in-place result's operand into it when XLA gave them
//      different buffers;
//   5. spreads the blocks over the calling thread and XLA's intra-op
//      thread pool (as many threads as the pool has in all), and returns
//      when every chunk ran -- or runs them on the calling thread alone,
//      where the instruction's first calls ran faster that way
//      (WorkerChoice).

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "dialects/xla_gpu/HostLaunch.h"
#include "ffi/kernel_call.h"
#include "ffi/worker_choice.h"
#include "xla/ffi/api/ffi.h"

namespace xla_gpu::ffi {
namespace {

using xffi::Error;
using ::xla_gpu::ChunkedLaunch;

using KernelFn = ::xla_gpu::PackedKernelFn;
// Compiles `text` and registers it under `hash`; 0 on success, else writes a
// message into `error` (at most `error_capacity` bytes, NUL-terminated).
using CompileFn = int (*)(const char* hash, int64_t hash_len, const char* text,
                          int64_t text_len, char* error, int64_t error_capacity);

// What the compiled kernel was built for: enough to check a call's
// signature against it.
struct CpuKernelEntry {
  KernelFn fn;
  std::vector<int64_t> ranks;
  std::vector<int64_t> dims;
  std::vector<int64_t> element_bits;
  std::vector<int64_t> aliases;
  int64_t num_results;
  int64_t num_blocks;
  int64_t threads_per_block;
};

class Registry {
 public:
  static Registry& Get() {
    static Registry* registry = new Registry();  // never destroyed: kernels
    return *registry;                             // outlive static teardown
  }

  std::shared_ptr<const CpuKernelEntry> Find(std::string_view hash) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = kernels_.find(std::string(hash));
    return it == kernels_.end() ? nullptr : it->second;
  }

  void Add(std::string hash, std::shared_ptr<const CpuKernelEntry> entry) {
    std::lock_guard<std::mutex> lock(mu_);
    kernels_[std::move(hash)] = std::move(entry);
  }

  int64_t Size() {
    std::lock_guard<std::mutex> lock(mu_);
    return static_cast<int64_t>(kernels_.size());
  }

  std::atomic<CompileFn> compiler{nullptr};

 private:
  std::mutex mu_;
  std::unordered_map<std::string, std::shared_ptr<const CpuKernelEntry>> kernels_;
};

xffi::ErrorOr<std::shared_ptr<const CpuKernelEntry>> FindOrCompile(
    std::string_view hash, std::string_view text) {
  Registry& registry = Registry::Get();
  if (auto entry = registry.Find(hash)) return entry;
  CompileFn compile = registry.compiler.load();
  if (compile == nullptr) {
    return xffi::Unexpected(Error(xffi::ErrorCode::kFailedPrecondition,
        "kernel " + ShortHash(hash) + " is not compiled in this process and no "
        "compiler is installed (import xla_gpu.jax first)"));
  }
  std::string message(1024, '\0');
  if (compile(hash.data(), static_cast<int64_t>(hash.size()), text.data(),
              static_cast<int64_t>(text.size()), message.data(),
              static_cast<int64_t>(message.size())) != 0) {
    message.resize(std::strlen(message.c_str()));
    return xffi::Unexpected(Error::InvalidArgument(
        "kernel " + ShortHash(hash) + " does not compile: " + message));
  }
  if (auto entry = registry.Find(hash)) return entry;
  return xffi::Unexpected(Error::Internal(
      "kernel " + ShortHash(hash) + ": the compiler registered no kernel of that hash"));
}

// Step 2: the call's typed signature has the compiled kernel's layout.
Error CheckAgainstCompiled(std::string_view hash, const Signature& sig,
                           const LaunchDims& launch, const CpuKernelEntry& k) {
  bool same = sig.num_results == k.num_results &&
              sig.ranks.size() == k.ranks.size() &&
              std::equal(k.ranks.begin(), k.ranks.end(), sig.ranks.begin()) &&
              sig.dims.size() == k.dims.size() &&
              std::equal(k.dims.begin(), k.dims.end(), sig.dims.begin()) &&
              std::equal(k.aliases.begin(), k.aliases.end(), sig.aliases.begin());
  for (size_t i = 0; same && i < k.element_bits.size(); ++i) {
    same = ElementBits(static_cast<xffi::DataType>(sig.dtypes[i])) == k.element_bits[i];
  }
  if (!same) {
    return Error::InvalidArgument("signature: does not describe the parameters "
                                  "kernel " + ShortHash(hash) + " was compiled for");
  }
  if (NumBlocks(launch) != k.num_blocks ||
      NumThreadsPerBlock(launch) != k.threads_per_block) {
    return Error::InvalidArgument(
        "launch: " + std::to_string(NumBlocks(launch)) + " blocks of " +
        std::to_string(NumThreadsPerBlock(launch)) + " threads, but kernel " +
        ShortHash(hash) + " was compiled for " + std::to_string(k.num_blocks) +
        " blocks of " + std::to_string(k.threads_per_block));
  }
  return Error::Success();
}

// The state of one custom-call instruction, made once when XLA
// instantiates the program (steps 1-2), so that a call does only steps 3-5.
struct CpuCallState {
  static xffi::TypeId id;
  std::shared_ptr<const CpuKernelEntry> kernel;
  OwnedSignature signature;
  WorkerChoice workers;
};
xffi::TypeId CpuCallState::id = {};

// Steps 1-2.
xffi::ErrorOr<std::unique_ptr<CpuCallState>> CpuKernelInstantiate(
    std::string_view kernel_hash, std::string_view kernel, LaunchDims launch,
    Signature signature, Target target) {
  if (Error e = CheckTarget(target, Target::kCpu, "cpu", kernel_hash); e.failure()) {
    return xffi::Unexpected(std::move(e));
  }
  if (Error e = CheckAttributes(signature, launch); e.failure()) {
    return xffi::Unexpected(std::move(e));
  }
  auto entry = FindOrCompile(kernel_hash, kernel);
  if (entry.has_error()) return xffi::Unexpected(std::move(entry.error()));
  if (Error e = CheckAgainstCompiled(kernel_hash, signature, launch, **entry); e.failure()) {
    return xffi::Unexpected(std::move(e));
  }
  auto state = std::make_unique<CpuCallState>();
  state->kernel = std::move(*entry);
  state->signature = OwnedSignature(signature);
  return state;
}

// Steps 3-5, against the state's signature.
Error CpuKernelExecute(CpuCallState* state, xffi::ThreadPool pool,
                       xffi::RemainingArgs args, xffi::RemainingRets rets) {
  if (state == nullptr || state->kernel == nullptr) {
    return Error::Internal("a kernel call without its instantiated state");
  }
  const CpuKernelEntry& k = *state->kernel;
  const Signature signature = state->signature.view();
  // 3.
  const size_t num_params = signature.dtypes.size();
  ParamArray<KernelBuffer> buffers(num_params);
  if (Error e = CheckBuffers(signature, args, rets, buffers.span()); e.failure()) return e;
  // 4.
  ParamArray<void*> slots(num_params);
  auto num_slots = PointerSlots(
      signature, buffers.view(),
      [](void* dst, const void* src, size_t n) { std::memcpy(dst, src, n); }, slots.span());
  if (num_slots.has_error()) return num_slots.error();
  // 5. Chunks of blocks, taken by whoever is free (HostLaunch.h), on the
  // threads WorkerChoice picks. A kernel of one block asks the pool
  // nothing. At most as many threads as the pool has, the calling thread
  // one of them (XLA's pool has a thread a core, as CpuKernel's pool and
  // its caller do): one more than the cores ran programs of several
  // kernels slower and less alike from one instance to the next, a thread
  // put off the cores holding a chunk the others wait for (A/B in one
  // process, 2 cores, two instances a side, `xj.jit` against `jax.jit`:
  // a softmax 0.58-0.71 against 0.75-1.24, a layer norm 0.58-0.67 against
  // 0.88-1.59, a cross-entropy 0.67-0.71 against 0.82-1.12; of eight
  // programs only an elementwise GELU ran slower, once, 0.66 against 0.45).
  const int64_t most =
      k.num_blocks == 1 ? 1 : std::min<int64_t>(k.num_blocks, pool.num_threads());
  auto [workers, probe] = state->workers.Next(most);
  const auto start = probe >= 0 ? std::chrono::steady_clock::now()
                                : std::chrono::steady_clock::time_point();
  if (workers == 1) {  // no pool, no shared state: a small kernel's call
    ::xla_gpu::PackedArgs(slots.data(), *num_slots).run(k.fn, 0, k.num_blocks);
  } else {
    std::vector<int64_t> values;
    for (size_t i = 0; i < *num_slots; ++i) {
      values.push_back(reinterpret_cast<intptr_t>(slots[i]));
    }
    auto work = std::make_shared<ChunkedLaunch>(
        k.fn, std::move(values), k.num_blocks, ::xla_gpu::defaultChunks(k.num_blocks, workers));
    for (int64_t w = 1; w < workers; ++w) {
      pool.Schedule([work] { work->runChunks(); });
    }
    work->runChunks();
    work->wait();
  }
  if (probe >= 0) {
    const auto nanos = std::chrono::duration_cast<std::chrono::nanoseconds>(
        std::chrono::steady_clock::now() - start);
    state->workers.Record(probe, nanos.count(), most);
  }
  return Error::Success();
}

}  // namespace
}  // namespace xla_gpu::ffi

XLA_FFI_DEFINE_HANDLER_SYMBOL(
    XlaGpuCpuKernelInstantiate, ::xla_gpu::ffi::CpuKernelInstantiate,
    ::xla::ffi::Ffi::BindInstantiate()
        .Attr<std::string_view>("kernel_hash")
        .Attr<std::string_view>("kernel")
        .Attr<::xla_gpu::ffi::LaunchDims>("launch")
        .Attr<::xla_gpu::ffi::Signature>("signature")
        .Attr<::xla_gpu::ffi::Target>("target"));

XLA_FFI_DEFINE_HANDLER_SYMBOL(
    XlaGpuCpuKernelExecute, ::xla_gpu::ffi::CpuKernelExecute,
    ::xla::ffi::Ffi::Bind()
        .Ctx<::xla::ffi::State<::xla_gpu::ffi::CpuCallState>>()
        .Ctx<::xla::ffi::ThreadPool>()
        .RemainingArgs()
        .RemainingRets());

extern "C" {

// Registers a compiled CPU kernel under `hash` (called by Python after it
// JIT-compiled one). Per parameter: rank, dims (concatenated), element bits,
// alias (-1 or an earlier input). Returns 0, or 1 when the counts are
// inconsistent.
__attribute__((visibility("default"))) int XlaGpuFfiRegisterCpuKernel(
    const char* hash, int64_t hash_len, void* fn, int64_t num_params,
    const int64_t* ranks, const int64_t* dims, const int64_t* element_bits,
    const int64_t* aliases, int64_t num_results, int64_t num_blocks,
    int64_t threads_per_block) {
  using ::xla_gpu::ffi::CpuKernelEntry;
  if (fn == nullptr || num_params < 0 || num_results < 0 || num_results > num_params ||
      num_blocks < 1 || threads_per_block < 1) {
    return 1;
  }
  auto entry = std::make_shared<CpuKernelEntry>();
  entry->fn = reinterpret_cast<::xla_gpu::ffi::KernelFn>(fn);
  entry->ranks.assign(ranks, ranks + num_params);
  int64_t total = 0;
  for (int64_t r : entry->ranks) {
    if (r < 0) return 1;
    total += r;
  }
  entry->dims.assign(dims, dims + total);
  entry->element_bits.assign(element_bits, element_bits + num_params);
  entry->aliases.assign(aliases, aliases + num_params);
  entry->num_results = num_results;
  entry->num_blocks = num_blocks;
  entry->threads_per_block = threads_per_block;
  ::xla_gpu::ffi::Registry::Get().Add(std::string(hash, hash_len), std::move(entry));
  return 0;
}

__attribute__((visibility("default"))) void XlaGpuFfiSetCpuCompiler(
    ::xla_gpu::ffi::CompileFn compiler) {
  ::xla_gpu::ffi::Registry::Get().compiler.store(compiler);
}

__attribute__((visibility("default"))) int64_t XlaGpuFfiNumCpuKernels() {
  return ::xla_gpu::ffi::Registry::Get().Size();
}

// The call state's type, for jax.ffi.register_ffi_type: its id (XLA fills
// it in at registration) and how XLA deletes a state.
__attribute__((visibility("default"))) XLA_FFI_TypeId* XlaGpuCpuCallStateTypeId() {
  return &::xla_gpu::ffi::CpuCallState::id;
}

__attribute__((visibility("default"))) const XLA_FFI_TypeInfo* XlaGpuCpuCallStateTypeInfo() {
  static const XLA_FFI_TypeInfo info =
      ::xla::ffi::MakeTypeInfo<::xla_gpu::ffi::CpuCallState>();
  return &info;
}

}  // extern "C"
