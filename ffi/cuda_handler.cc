#include "ffi/cuda_handler.h"

#include <dlfcn.h>

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "xla/ffi/api/ffi.h"

namespace xla_gpu::ffi {
namespace {

using xffi::Error;

// The few driver API types and entry points the handler uses (cuda.h's
// declarations, restated so that the build needs no CUDA).
using CUresult = int;
using CUcontext = struct CUctx_st*;
using CUmodule = struct CUmod_st*;
using CUfunction = struct CUfunc_st*;
constexpr CUresult CUDA_SUCCESS = 0;
constexpr int CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8;
// Static shared memory above this needs the opt-in attribute.
constexpr int64_t kDefaultSharedMemoryLimit = 48 * 1024;

struct Driver {
  CUresult (*cuInit)(unsigned);
  CUresult (*cuStreamGetCtx)(CUstream, CUcontext*);
  CUresult (*cuCtxPushCurrent)(CUcontext);
  CUresult (*cuCtxPopCurrent)(CUcontext*);
  CUresult (*cuModuleLoadData)(CUmodule*, const void*);
  CUresult (*cuModuleGetFunction)(CUfunction*, CUmodule, const char*);
  CUresult (*cuFuncSetAttribute)(CUfunction, int, int);
  CUresult (*cuLaunchKernel)(CUfunction, unsigned, unsigned, unsigned, unsigned,
                             unsigned, unsigned, unsigned, CUstream, void**, void**);
  CUresult (*cuGetErrorString)(CUresult, const char**);
};

// The driver, loaded once; an error message when it cannot be.
const Driver* LoadDriver(std::string* error) {
  static std::string* load_error = nullptr;
  static const Driver* driver = [] () -> const Driver* {
    void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (lib == nullptr) {
      const char* why = dlerror();
      load_error = new std::string(
          std::string("the CUDA driver (libcuda.so.1) cannot be loaded: ") +
          (why ? why : "unknown reason"));
      return nullptr;
    }
    auto* d = new Driver();
    bool ok = true;
    auto bind = [&](auto& fn, const char* name) {
      fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(dlsym(lib, name));
      if (fn == nullptr && ok) {
        ok = false;
        load_error = new std::string(std::string("libcuda.so.1 has no ") + name);
      }
    };
    bind(d->cuInit, "cuInit");
    bind(d->cuStreamGetCtx, "cuStreamGetCtx");
    bind(d->cuCtxPushCurrent, "cuCtxPushCurrent_v2");
    bind(d->cuCtxPopCurrent, "cuCtxPopCurrent_v2");
    bind(d->cuModuleLoadData, "cuModuleLoadData");
    bind(d->cuModuleGetFunction, "cuModuleGetFunction");
    bind(d->cuFuncSetAttribute, "cuFuncSetAttribute");
    bind(d->cuLaunchKernel, "cuLaunchKernel");
    bind(d->cuGetErrorString, "cuGetErrorString");
    if (!ok) return nullptr;
    if (d->cuInit(0) != CUDA_SUCCESS) {
      load_error = new std::string("cuInit failed: no usable CUDA device");
      return nullptr;
    }
    return d;
  }();
  if (driver == nullptr && error != nullptr) *error = *load_error;
  return driver;
}

Error DriverError(const Driver& d, CUresult r, const std::string& what) {
  const char* text = nullptr;
  d.cuGetErrorString(r, &text);
  return Error::Internal(what + " failed: " + (text ? text : std::to_string(r)));
}

// (context, kernel hash) -> the loaded function. Modules stay loaded for
// the life of the process, as XLA's own kernels do.
std::mutex cache_mu;
std::map<std::pair<CUcontext, std::string>, CUfunction>* function_cache =
    new std::map<std::pair<CUcontext, std::string>, CUfunction>();

xffi::ErrorOr<CUfunction> LoadFunction(const Driver& d, CUstream stream,
                                       std::string_view hash, std::string_view ptx,
                                       std::string_view entry,
                                       int64_t shared_memory_bytes) {
  CUcontext ctx = nullptr;
  if (CUresult r = d.cuStreamGetCtx(stream, &ctx); r != CUDA_SUCCESS) {
    return xffi::Unexpected(DriverError(d, r, "cuStreamGetCtx"));
  }
  std::lock_guard<std::mutex> lock(cache_mu);
  auto key = std::make_pair(ctx, std::string(hash));
  if (auto it = function_cache->find(key); it != function_cache->end()) {
    return it->second;
  }
  if (CUresult r = d.cuCtxPushCurrent(ctx); r != CUDA_SUCCESS) {
    return xffi::Unexpected(DriverError(d, r, "cuCtxPushCurrent"));
  }
  // The driver wants NUL-terminated PTX.
  std::string text(ptx);
  CUmodule module = nullptr;
  CUfunction fn = nullptr;
  Error error = Error::Success();
  if (CUresult r = d.cuModuleLoadData(&module, text.c_str()); r != CUDA_SUCCESS) {
    error = DriverError(d, r, "cuModuleLoadData (kernel " + ShortHash(hash) + ")");
  } else if (CUresult r = d.cuModuleGetFunction(&fn, module, std::string(entry).c_str());
             r != CUDA_SUCCESS) {
    error = DriverError(d, r, "cuModuleGetFunction(" + std::string(entry) + ")");
  } else if (shared_memory_bytes > kDefaultSharedMemoryLimit) {
    if (CUresult r = d.cuFuncSetAttribute(fn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                          static_cast<int>(shared_memory_bytes));
        r != CUDA_SUCCESS) {
      error = DriverError(d, r, "cuFuncSetAttribute(max dynamic shared memory)");
    }
  }
  CUcontext popped;
  d.cuCtxPopCurrent(&popped);
  if (error.failure()) return xffi::Unexpected(std::move(error));
  (*function_cache)[key] = fn;
  return fn;
}

}  // namespace

Error CudaKernelCall(CUstream stream, xffi::RemainingArgs args, xffi::RemainingRets rets,
                     std::string_view kernel_hash, std::string_view kernel,
                     std::string_view entry, LaunchDims launch,
                     int64_t shared_memory_bytes, Signature signature, Target target) {
  if (Error e = CheckTarget(target, Target::kCuda, "CUDA", kernel_hash); e.failure()) return e;
  if (Error e = CheckAttributes(signature, launch); e.failure()) return e;
  if (shared_memory_bytes < 0) {
    return Error::InvalidArgument("shared_memory_bytes: must be >= 0");
  }
  if (entry.empty()) return Error::InvalidArgument("entry: the kernel's name is empty");
  const size_t num_params = signature.dtypes.size();
  ParamArray<KernelBuffer> buffers(num_params);
  if (Error e = CheckBuffers(signature, args, rets, buffers.span()); e.failure()) return e;
  // One pointer a distinct buffer; an in-place result is its operand's
  // buffer (XLA gives them one when the call declares the alias).
  ParamArray<void*> slots(num_params);
  auto num_slots = PointerSlots(signature, buffers.view(), nullptr, slots.span());
  if (num_slots.has_error()) return num_slots.error();

  std::string why;
  const Driver* d = LoadDriver(&why);
  if (d == nullptr) return Error(xffi::ErrorCode::kFailedPrecondition, why);
  auto fn = LoadFunction(*d, stream, kernel_hash, kernel, entry, shared_memory_bytes);
  if (fn.has_error()) return fn.error();

  ParamArray<void*> params(*num_slots);
  for (size_t i = 0; i < *num_slots; ++i) params[i] = &slots[i];
  const auto& b = launch.block_counts;
  const auto& t = launch.thread_counts_per_block;
  if (CUresult r = d->cuLaunchKernel(
          *fn, static_cast<unsigned>(b[0]), static_cast<unsigned>(b[1]),
          static_cast<unsigned>(b[2]), static_cast<unsigned>(t[0]),
          static_cast<unsigned>(t[1]), static_cast<unsigned>(t[2]),
          static_cast<unsigned>(shared_memory_bytes), stream, params.data(), nullptr);
      r != CUDA_SUCCESS) {
    return DriverError(*d, r, "cuLaunchKernel(" + std::string(entry) + ")");
  }
  return Error::Success();
}

}  // namespace xla_gpu::ffi

XLA_FFI_DEFINE_HANDLER_SYMBOL(
    XlaGpuCudaKernel, ::xla_gpu::ffi::CudaKernelCall,
    ::xla::ffi::Ffi::Bind()
        .Ctx<::xla::ffi::PlatformStream<::xla_gpu::ffi::CUstream>>()
        .RemainingArgs()
        .RemainingRets()
        .Attr<std::string_view>("kernel_hash")
        .Attr<std::string_view>("kernel")
        .Attr<std::string_view>("entry")
        .Attr<::xla_gpu::ffi::LaunchDims>("launch")
        .Attr<int64_t>("shared_memory_bytes")
        .Attr<::xla_gpu::ffi::Signature>("signature")
        .Attr<::xla_gpu::ffi::Target>("target"));
