#include "ffi/kernel_call.h"

#include <algorithm>
#include <cstring>
#include <optional>
#include <string>

namespace xla_gpu::ffi {

namespace m = ::xla::ffi::match;
using xffi::AnyBuffer;
using xffi::DataType;
using xffi::Error;
using xffi::ErrorOr;
using xffi::Span;

namespace {

template <typename T>
bool SameSpan(Span<const T> a, Span<const T> b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin());
}

std::string ParamName(const Signature& sig, size_t i) {
  size_t num_inputs = sig.dtypes.size() - static_cast<size_t>(sig.num_results);
  return i < num_inputs ? "argument " + std::to_string(i)
                        : "result " + std::to_string(i - num_inputs);
}

}  // namespace

std::string ShortHash(std::string_view hash) { return std::string(hash.substr(0, 12)); }

Error CheckTarget(Target target, Target expected, std::string_view handler,
                  std::string_view hash) {
  if (target == expected) return Error::Success();
  return Error::InvalidArgument("target: kernel " + ShortHash(hash) + " was compiled for " +
                                TargetName(target) + ", this is the " + std::string(handler) +
                                " handler");
}

int64_t NumBlocks(const LaunchDims& launch) {
  int64_t n = 1;
  for (int64_t c : launch.block_counts) n *= c;
  return n;
}

int64_t NumThreadsPerBlock(const LaunchDims& launch) {
  int64_t n = 1;
  for (int64_t c : launch.thread_counts_per_block) n *= c;
  return n;
}

int64_t ElementBits(DataType dtype) {
  switch (dtype) {
    case DataType::S1:
    case DataType::U1:
      return 1;
    case DataType::S2:
    case DataType::U2:
      return 2;
    case DataType::S4:
    case DataType::U4:
      return 4;
    default:
      return 8 * static_cast<int64_t>(xffi::ByteWidth(dtype));
  }
}

size_t PackedBytes(DataType dtype, int64_t count) {
  return static_cast<size_t>((count * ElementBits(dtype) + 7) / 8);
}

Error CheckAttributes(const Signature& sig, const LaunchDims& launch) {
  const size_t n = sig.dtypes.size();
  if (sig.ranks.size() != n || sig.aliases.size() != n) {
    return Error::InvalidArgument(
        "signature: dtypes, ranks and aliases must have one entry a kernel "
        "parameter, got " + std::to_string(n) + ", " +
        std::to_string(sig.ranks.size()) + " and " +
        std::to_string(sig.aliases.size()));
  }
  if (sig.num_results < 0 || static_cast<size_t>(sig.num_results) > n) {
    return Error::InvalidArgument("signature: num_results " +
                                  std::to_string(sig.num_results) +
                                  " is not in [0, " + std::to_string(n) + "]");
  }
  int64_t total_rank = 0;
  for (int64_t r : sig.ranks) {
    if (r < 0) return Error::InvalidArgument("signature: a negative rank");
    total_rank += r;
  }
  if (static_cast<size_t>(total_rank) != sig.dims.size()) {
    return Error::InvalidArgument(
        "signature: the ranks add up to " + std::to_string(total_rank) +
        " dimensions but dims has " + std::to_string(sig.dims.size()));
  }
  const int64_t num_inputs = static_cast<int64_t>(n) - sig.num_results;
  for (size_t i = 0; i < n; ++i) {
    int64_t a = sig.aliases[i];
    if (a == -1) continue;
    if (a < 0 || a >= std::min<int64_t>(num_inputs, static_cast<int64_t>(i))) {
      return Error::InvalidArgument(
          "signature: aliases[" + std::to_string(i) + "] = " + std::to_string(a) +
          ", but a parameter may alias only an earlier input");
    }
  }
  for (const auto& [name, counts] :
       {std::pair{"block_counts", launch.block_counts},
        std::pair{"thread_counts_per_block", launch.thread_counts_per_block}}) {
    if (counts.size() != 3 ||
        std::any_of(counts.begin(), counts.end(), [](int64_t c) { return c < 1; })) {
      return Error::InvalidArgument(std::string("launch: ") + name +
                                    " must be three counts >= 1");
    }
  }
  return Error::Success();
}

bool SameSignature(const Signature& a, const Signature& b) {
  return SameSpan(a.dtypes, b.dtypes) && SameSpan(a.ranks, b.ranks) &&
         SameSpan(a.dims, b.dims) && SameSpan(a.aliases, b.aliases) &&
         a.num_results == b.num_results;
}

Error CheckBuffers(const Signature& sig, const xffi::RemainingArgs& args,
                   const xffi::RemainingRets& rets, Span<KernelBuffer> buffers) {
  const size_t n = sig.dtypes.size();
  const size_t num_results = static_cast<size_t>(sig.num_results);
  const size_t num_inputs = n - num_results;
  if (args.size() != num_inputs || rets.size() != num_results) {
    return Error::InvalidArgument(
        "the kernel takes " + std::to_string(num_inputs) + " arguments and " +
        std::to_string(num_results) + " results, the call has " +
        std::to_string(args.size()) + " and " + std::to_string(rets.size()));
  }
  if (buffers.size() != n) {
    return Error::Internal("CheckBuffers: room for " + std::to_string(buffers.size()) +
                           " buffers, the kernel has " + std::to_string(n));
  }
  size_t dim_offset = 0;
  for (size_t i = 0; i < n; ++i) {
    const auto rank = static_cast<size_t>(sig.ranks[i]);
    Span<const int64_t> dims(sig.dims.begin() + dim_offset, rank);
    dim_offset += rank;
    const auto dtype = static_cast<DataType>(sig.dtypes[i]);
    std::optional<AnyBuffer> buffer;
    std::string why;
    if (i < num_inputs) {
      ErrorOr<AnyBuffer> arg = args.get<AnyBuffer>(i);
      if (arg.has_value()) buffer = *arg; else why = arg.error().message();
    } else {
      ErrorOr<xffi::Result<AnyBuffer>> ret = rets.get<AnyBuffer>(i - num_inputs);
      if (ret.has_value()) buffer = **ret; else why = ret.error().message();
    }
    if (!buffer) {
      return Error::InvalidArgument(ParamName(sig, i) + ": not a buffer (" + why + ")");
    }
    // The pattern (and the buffer's name) only to say what is wrong: this
    // runs at every call.
    if (buffer->element_type() != dtype || !SameSpan(buffer->dimensions(), dims)) {
      auto pattern = m::Buffer().WithElementType(dtype).WithShape(dims);
      if (Error e = xffi::Verify(ParamName(sig, i), *buffer, pattern); e.failure()) return e;
    }
    int64_t count = 1;
    for (int64_t d : dims) count *= d;
    buffers[i] = {buffer->untyped_data(), PackedBytes(dtype, count)};
  }
  return Error::Success();
}

ErrorOr<size_t> PointerSlots(const Signature& sig, Span<const KernelBuffer> buffers,
                             CopyFn copy, Span<void*> slots) {
  if (slots.size() < buffers.size()) {
    return xffi::Unexpected(Error::Internal(
        "PointerSlots: room for " + std::to_string(slots.size()) + " slots, the kernel has " +
        std::to_string(buffers.size()) + " parameters"));
  }
  const size_t num_inputs = buffers.size() - static_cast<size_t>(sig.num_results);
  ParamArray<size_t> slot_of(buffers.size());
  size_t num_slots = 0;
  for (size_t i = 0; i < buffers.size(); ++i) {
    const int64_t a = sig.aliases[i];
    if (a < 0) {
      slot_of[i] = num_slots;
      slots[num_slots++] = buffers[i].data;
      continue;
    }
    slot_of[i] = slot_of[a];
    if (i < num_inputs) continue;  // two inputs of one buffer: read the first
    if (buffers[i].data != buffers[a].data) {
      if (copy == nullptr) {
        return xffi::Unexpected(Error::InvalidArgument(
            "result " + std::to_string(i - num_inputs) + " must share its buffer with "
            "argument " + std::to_string(a) + " (declare the alias: input_output_aliases)"));
      }
      copy(buffers[i].data, buffers[a].data, buffers[i].size_bytes);
    }
    slots[slot_of[i]] = buffers[i].data;
  }
  return num_slots;
}

}  // namespace xla_gpu::ffi
