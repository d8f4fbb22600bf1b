// Unit tests of the CUDA handler short of a launch: the call frame's
// buffers and attributes are built here as XLA builds them, and every check
// the handler makes before it touches the driver is exercised. The last
// case is a well-formed call: on a machine without a GPU it must end in a
// clear error about the driver (never a crash); with `--expect-driver` (a
// GPU machine) that case is skipped, since the stream and buffers here are
// not device memory.

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "ffi/cuda_handler.h"
#include "ffi/tests/checks.h"

namespace xffi = ::xla::ffi;
using xla_gpu::ffi::CudaKernelCall;
using xla_gpu::ffi::LaunchDims;
using xla_gpu::ffi::Signature;
using xla_gpu::ffi::Target;

namespace {

using ::xla_gpu::ffi::testing::checks;
using ::xla_gpu::ffi::testing::failures;

void ExpectError(const xffi::Error& e, const std::string& text, int line) {
  ++checks;
  if (e.success() || e.message().find(text) == std::string::npos) {
    ++failures;
    std::printf("FAIL line %d: expected an error containing \"%s\", got %s\n", line,
                text.c_str(), e.success() ? "success" : e.message().c_str());
  }
}
#define EXPECT_ERROR(call, text) ExpectError((call), (text), __LINE__)

// The buffers of one call: f32[4, 8] in, f32[4, 8] out.
struct Frame {
  explicit Frame(std::vector<std::vector<int64_t>> arg_dims,
                 std::vector<std::vector<int64_t>> ret_dims,
                 XLA_FFI_DataType dtype = XLA_FFI_DataType_F32)
      : dims(std::move(arg_dims)) {
    for (auto& d : ret_dims) dims.push_back(std::move(d));
    num_args = dims.size() - ret_dims.size();
    buffers.resize(dims.size());
    for (size_t i = 0; i < dims.size(); ++i) {
      XLA_FFI_Buffer& b = buffers[i];
      b.struct_size = sizeof(XLA_FFI_Buffer);
      b.extension_start = nullptr;
      b.dtype = dtype;
      b.data = storage + i;
      b.rank = static_cast<int64_t>(dims[i].size());
      b.dims = dims[i].data();
    }
    for (size_t i = 0; i < num_args; ++i) {
      arg_types.push_back(XLA_FFI_ArgType_BUFFER);
      arg_ptrs.push_back(&buffers[i]);
    }
    for (size_t i = num_args; i < dims.size(); ++i) {
      ret_types.push_back(XLA_FFI_RetType_BUFFER);
      ret_ptrs.push_back(&buffers[i]);
    }
    args = {sizeof(XLA_FFI_Args), nullptr, static_cast<int64_t>(num_args),
            arg_types.data(), arg_ptrs.data()};
    rets = {sizeof(XLA_FFI_Rets), nullptr, static_cast<int64_t>(ret_ptrs.size()),
            ret_types.data(), ret_ptrs.data()};
  }
  xffi::RemainingArgs remaining_args() const { return xffi::RemainingArgs(&args, 0); }
  xffi::RemainingRets remaining_rets() const { return xffi::RemainingRets(&rets, 0); }

  std::vector<std::vector<int64_t>> dims;
  size_t num_args;
  std::vector<XLA_FFI_Buffer> buffers;
  std::vector<XLA_FFI_ArgType> arg_types;
  std::vector<void*> arg_ptrs;
  std::vector<XLA_FFI_RetType> ret_types;
  std::vector<void*> ret_ptrs;
  XLA_FFI_Args args;
  XLA_FFI_Rets rets;
  float storage[8] = {};
};

// The signature attribute of a kernel f32[4, 8] -> f32[4, 8].
struct Sig {
  std::vector<int32_t> dtypes = {XLA_FFI_DataType_F32, XLA_FFI_DataType_F32};
  std::vector<int64_t> ranks = {2, 2};
  std::vector<int64_t> dims = {4, 8, 4, 8};
  std::vector<int64_t> aliases = {-1, -1};
  int64_t num_results = 1;
  Signature view() const {
    return {{dtypes.data(), dtypes.size()}, {ranks.data(), ranks.size()},
            {dims.data(), dims.size()}, {aliases.data(), aliases.size()}, num_results};
  }
};

const int64_t kBlocks[] = {4, 1, 1};
const int64_t kThreads[] = {32, 1, 1};
const int64_t kBadThreads[] = {32, 0, 1};
const LaunchDims kLaunch{{kBlocks, 3}, {kThreads, 3}};

xffi::Error Call(const Frame& f, const Sig& sig, LaunchDims launch = kLaunch,
                 Target target = Target::kCuda, std::string_view entry = "fusion") {
  return CudaKernelCall(nullptr, f.remaining_args(), f.remaining_rets(), "0123456789abcdef",
                        ".version 8.0", entry, launch, 0, sig.view(), target);
}

}  // namespace

int main(int argc, char** argv) {
  const bool expect_driver = argc > 1 && std::strcmp(argv[1], "--expect-driver") == 0;
  Sig sig;
  Frame good({{4, 8}}, {{4, 8}});

  // The target enum: a CPU kernel given to the CUDA handler.
  EXPECT_ERROR(Call(good, sig, kLaunch, Target::kCpu),
               "target: kernel 0123456789ab was compiled for cpu, this is the CUDA handler");
  // Attribute consistency.
  Sig short_ranks = sig;
  short_ranks.ranks = {2};
  EXPECT_ERROR(Call(good, short_ranks), "signature: dtypes, ranks and aliases must have one entry");
  Sig bad_dims = sig;
  bad_dims.dims = {4, 8, 4};
  EXPECT_ERROR(Call(good, bad_dims), "signature: the ranks add up to 4 dimensions but dims has 3");
  Sig bad_alias = sig;
  bad_alias.aliases = {-1, 1};
  EXPECT_ERROR(Call(good, bad_alias), "signature: aliases[1] = 1, but a parameter may alias only");
  EXPECT_ERROR(Call(good, sig, LaunchDims{{kBlocks, 3}, {kBadThreads, 3}}),
               "launch: thread_counts_per_block must be three counts >= 1");
  EXPECT_ERROR(Call(good, sig, LaunchDims{{kBlocks, 2}, {kThreads, 3}}),
               "launch: block_counts must be three counts >= 1");
  EXPECT_ERROR(Call(good, sig, kLaunch, Target::kCuda, ""), "entry: the kernel's name is empty");
  // Buffers against the signature: count, dtype, rank, dims.
  Frame extra({{4, 8}, {4, 8}}, {{4, 8}});
  EXPECT_ERROR(Call(extra, sig), "the kernel takes 1 arguments and 1 results, the call has 2 and 1");
  Frame wrong_dtype({{4, 8}}, {{4, 8}}, XLA_FFI_DataType_S32);
  EXPECT_ERROR(Call(wrong_dtype, sig), "argument 0: expected dtype F32 but got S32[4,8]");
  Frame wrong_rank({{32}}, {{4, 8}});
  EXPECT_ERROR(Call(wrong_rank, sig), "argument 0: expected rank 2 but got F32[32]");
  Frame small_result({{4, 8}}, {{4, 7}});
  EXPECT_ERROR(Call(small_result, sig), "result 0: dimension 1 must be 8 but is 7 in F32[4,7]");
  // An in-place result must get its operand's buffer (the frame's buffers
  // are distinct: XLA was not told of the alias).
  Sig in_place = sig;
  in_place.aliases = {-1, 0};
  EXPECT_ERROR(Call(good, in_place),
               "result 0 must share its buffer with argument 0 (declare the alias");
  if (!expect_driver) {
    // A well-formed call gets as far as the driver.
    ExpectError(Call(good, sig), "the CUDA driver (libcuda.so.1) cannot be loaded", __LINE__);
    Frame shared({{4, 8}}, {{4, 8}});
    shared.buffers[1].data = shared.buffers[0].data;
    ExpectError(Call(shared, in_place), "the CUDA driver (libcuda.so.1) cannot be loaded",
                __LINE__);
  }
  return ::xla_gpu::ffi::testing::Report();
}
