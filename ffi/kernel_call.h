// What the CPU and CUDA handlers share: the attributes of a call to one of
// our kernels and the check of its buffers against the kernel's signature.
//
// A call is self-contained (seed 003's attributes):
//   kernel_hash  the content hash of the kernel (the cache key)
//   kernel       the kernel's text: MLIR for the CPU target, PTX for CUDA
//   launch       {block_counts = array<i64: x, y, z>,
//                 thread_counts_per_block = array<i64: x, y, z>}  (a struct)
//   signature    {dtypes = array<i32>, ranks = array<i64>, dims = array<i64>,
//                 aliases = array<i64>, num_results = i64}  (a struct): one
//                 entry a kernel parameter, inputs then results; `dims` holds
//                 every parameter's dimensions one after the other;
//                 aliases[k] = the earlier input parameter k shares its
//                 buffer with (a result written in place), else -1
//   target       Target (an enum): which handler the kernel was compiled for

#ifndef XLA_GPU_FFI_KERNEL_CALL_H_
#define XLA_GPU_FFI_KERNEL_CALL_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "dialects/xla_gpu/HostLaunch.h"
#include "ffi/buffer_patterns.h"
#include "xla/ffi/api/ffi.h"

namespace xla_gpu::ffi {

namespace xffi = ::xla::ffi;

enum class Target : int32_t {
  kCpu = 0,
  kCuda = 1,
};

inline const char* TargetName(Target target) {
  switch (target) {
    case Target::kCpu: return "cpu";
    case Target::kCuda: return "cuda";
  }
  return "unknown";
}

struct LaunchDims {
  xffi::Span<const int64_t> block_counts;
  xffi::Span<const int64_t> thread_counts_per_block;
};

struct Signature {
  xffi::Span<const int32_t> dtypes;
  xffi::Span<const int64_t> ranks;
  xffi::Span<const int64_t> dims;
  xffi::Span<const int64_t> aliases;
  int64_t num_results;
};

// A signature held by the handler (the CPU registry's copy of what the
// compiled kernel takes).
struct OwnedSignature {
  std::vector<int32_t> dtypes;
  std::vector<int64_t> ranks;
  std::vector<int64_t> dims;
  std::vector<int64_t> aliases;
  int64_t num_results = 0;

  OwnedSignature() = default;
  explicit OwnedSignature(const Signature& sig)
      : dtypes(sig.dtypes.begin(), sig.dtypes.end()),
        ranks(sig.ranks.begin(), sig.ranks.end()),
        dims(sig.dims.begin(), sig.dims.end()),
        aliases(sig.aliases.begin(), sig.aliases.end()),
        num_results(sig.num_results) {}

  Signature view() const {
    return Signature{{dtypes.data(), dtypes.size()},
                     {ranks.data(), ranks.size()},
                     {dims.data(), dims.size()},
                     {aliases.data(), aliases.size()},
                     num_results};
  }
};

// One kernel parameter's buffer, checked.
struct KernelBuffer {
  void* data;
  size_t size_bytes;
};

// A call's scratch of one entry a kernel parameter, inline for kernels of
// up to 16 parameters (HostLaunch.h's InlineArray), so that a call
// allocates nothing there (three vectors a call had cost ~0.1 us of the
// custom call's dispatch); as FFI spans.
template <typename T>
class ParamArray : public ::xla_gpu::InlineArray<T> {
 public:
  using ::xla_gpu::InlineArray<T>::InlineArray;
  xffi::Span<T> span() { return {this->data(), this->size()}; }
  xffi::Span<const T> view() const { return {this->data(), this->size()}; }
};

// The first characters of a kernel's hash, for messages.
std::string ShortHash(std::string_view hash);

// That the kernel was compiled for the handler's target; `handler` names
// the handler in the message ("cpu", "CUDA").
xffi::Error CheckTarget(Target target, Target expected, std::string_view handler,
                        std::string_view hash);

// The attributes' own consistency: three counts that agree, dims that add
// up, launch dims of three counts >= 1, aliases to earlier inputs.
xffi::Error CheckAttributes(const Signature& sig, const LaunchDims& launch);

// Whether two signatures are the same.
bool SameSignature(const Signature& a, const Signature& b);

// The buffers of a call into `buffers` (one entry a parameter of `sig`), in
// kernel-parameter order (inputs, then results), each verified (Verify with
// the buffer patterns) against `sig`; an error names the argument or result
// and the failed constraint.
xffi::Error CheckBuffers(const Signature& sig, const xffi::RemainingArgs& args,
                         const xffi::RemainingRets& rets, xffi::Span<KernelBuffer> buffers);

// The kernel's pointer arguments into `slots` (room for one a parameter),
// returning how many: one a distinct buffer, in parameter order; an aliased
// parameter shares the earlier input's slot, which an in-place result takes
// over. Where XLA gave an in-place result a buffer of its own, `copy` (host
// memory: the CPU target) first moves the operand into it; without a `copy`
// that is an error (declare the alias).
using CopyFn = void (*)(void* dst, const void* src, size_t bytes);
xffi::ErrorOr<size_t> PointerSlots(const Signature& sig,
                                   xffi::Span<const KernelBuffer> buffers, CopyFn copy,
                                   xffi::Span<void*> slots);

// The bits of one element as XLA stores it (sub-byte types packed).
int64_t ElementBits(xffi::DataType dtype);

// The number of bytes of `count` elements of `dtype`, packed as XLA packs
// sub-byte types.
size_t PackedBytes(xffi::DataType dtype, int64_t count);

int64_t NumBlocks(const LaunchDims& launch);
int64_t NumThreadsPerBlock(const LaunchDims& launch);

}  // namespace xla_gpu::ffi

XLA_FFI_REGISTER_ENUM_ATTR_DECODING(::xla_gpu::ffi::Target);
XLA_FFI_REGISTER_STRUCT_ATTR_DECODING(
    ::xla_gpu::ffi::LaunchDims,
    ::xla::ffi::StructMember<::xla::ffi::Span<const int64_t>>("block_counts"),
    ::xla::ffi::StructMember<::xla::ffi::Span<const int64_t>>(
        "thread_counts_per_block"));
XLA_FFI_REGISTER_STRUCT_ATTR_DECODING(
    ::xla_gpu::ffi::Signature,
    ::xla::ffi::StructMember<::xla::ffi::Span<const int32_t>>("dtypes"),
    ::xla::ffi::StructMember<::xla::ffi::Span<const int64_t>>("ranks"),
    ::xla::ffi::StructMember<::xla::ffi::Span<const int64_t>>("dims"),
    ::xla::ffi::StructMember<::xla::ffi::Span<const int64_t>>("aliases"),
    ::xla::ffi::StructMember<int64_t>("num_results"));

#endif  // XLA_GPU_FFI_KERNEL_CALL_H_
