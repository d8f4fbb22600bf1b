// The "CUDA" handler: launches one of our kernels' PTX on XLA's stream.
//
// The project needs no CUDA to build: the driver API is reached through
// dlopen("libcuda.so.1") on first use. The PTX is loaded once per CUDA
// context (a cache keyed by context and kernel hash) and launched with the
// call's launch dimensions; its parameters are one pointer a distinct
// buffer (aliased parameters left out), as our lowering emits them.
//
// Everything short of the launch -- attributes, the buffers against the
// signature, a clear error when there is no driver -- runs before the
// driver is touched, so it is tested on machines without a GPU.

#ifndef XLA_GPU_FFI_CUDA_HANDLER_H_
#define XLA_GPU_FFI_CUDA_HANDLER_H_

#include <string_view>

#include "ffi/kernel_call.h"

namespace xla_gpu::ffi {

// CUDA's stream type, declared here so that no CUDA header is needed.
using CUstream = struct CUstream_st*;

xffi::Error CudaKernelCall(CUstream stream, xffi::RemainingArgs args,
                           xffi::RemainingRets rets, std::string_view kernel_hash,
                           std::string_view kernel, std::string_view entry,
                           LaunchDims launch, int64_t shared_memory_bytes,
                           Signature signature, Target target);

}  // namespace xla_gpu::ffi

#endif  // XLA_GPU_FFI_CUDA_HANDLER_H_
