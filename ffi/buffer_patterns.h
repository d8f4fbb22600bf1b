// Buffer patterns for XLA FFI handlers: `Match` and `Verify` over the FFI's
// `AnyBuffer` (seed 003, "Corrispondenza e verifica dei buffer").
//
// jaxlib 0.10.2's `xla/ffi/api/ffi.h` has typed buffers but not the pattern
// API, so it is written here, header-only, over the public FFI types:
//
//   namespace m = ::xla::ffi::match;
//   int64_t rows, cols;
//   ErrorOr<BufferR2<F32>> in =
//       Match("input", any, m::Buffer<F32>().WithDims(&rows, &cols));
//   Error e = Verify("output", *out, m::Buffer<F32>().WithDims(rows, cols));
//
// How a pattern works:
//   1. A pattern is an immutable value. Its element types and ranks are
//      template parameters (`Buffer<F32, 2>`, `WithDType<S32, S64>()`,
//      `WithRank<1, 2>()`, `WithDims(a, b)` fixes the rank to 2), so that a
//      pattern with exactly one of each refines an `AnyBuffer` to
//      `Buffer<dtype, rank>` at compile time. Everything else -- dimension
//      patterns, positional constraints, another buffer's shape -- is runtime
//      state copied into the pattern when it is built.
//   2. Matching checks dtype, rank, the full shape, the positional
//      dimensions and the shape of a reference buffer, in that order, and
//      stops at the first failure with a message that names the buffer and
//      the constraint.
//   3. Dimension captures are collected on the side and written only when
//      the whole pattern matched; a capture pointer that appears twice must
//      see the same size both times.
//
// Runtime forms beyond the seed, for handlers whose signature is data (a
// kernel's parameter list): `WithElementType(DataType)` and
// `WithShape(Span<const int64_t>)`.

#ifndef XLA_GPU_FFI_BUFFER_PATTERNS_H_
#define XLA_GPU_FFI_BUFFER_PATTERNS_H_

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "xla/ffi/api/ffi.h"

namespace xla::ffi {

// XLA's name of an element type (PrimitiveType spelling), for messages.
inline const char* DataTypeName(DataType dtype) {
  switch (dtype) {
    case DataType::PRED: return "PRED";
    case DataType::S1: return "S1";
    case DataType::S2: return "S2";
    case DataType::S4: return "S4";
    case DataType::S8: return "S8";
    case DataType::S16: return "S16";
    case DataType::S32: return "S32";
    case DataType::S64: return "S64";
    case DataType::U1: return "U1";
    case DataType::U2: return "U2";
    case DataType::U4: return "U4";
    case DataType::U8: return "U8";
    case DataType::U16: return "U16";
    case DataType::U32: return "U32";
    case DataType::U64: return "U64";
    case DataType::F16: return "F16";
    case DataType::F32: return "F32";
    case DataType::F64: return "F64";
    case DataType::BF16: return "BF16";
    case DataType::C64: return "C64";
    case DataType::C128: return "C128";
    case DataType::TOKEN: return "TOKEN";
    case DataType::F8E5M2: return "F8E5M2";
    case DataType::F8E4M3: return "F8E4M3";
    case DataType::F8E4M3FN: return "F8E4M3FN";
    case DataType::F8E4M3B11FNUZ: return "F8E4M3B11FNUZ";
    case DataType::F8E5M2FNUZ: return "F8E5M2FNUZ";
    case DataType::F8E4M3FNUZ: return "F8E4M3FNUZ";
    case DataType::F8E3M4: return "F8E3M4";
    case DataType::F4E2M1FN: return "F4E2M1FN";
    case DataType::F8E8M0FNU: return "F8E8M0FNU";
    default: return "INVALID";
  }
}

namespace match {

// The size of one dimension: any, fixed, or captured into a variable.
class Dim {
 public:
  Dim() = default;
  template <typename T, std::enable_if_t<std::is_integral_v<T>, int> = 0>
  Dim(T size) : kind_(Kind::kFixed), size_(static_cast<int64_t>(size)) {}  // NOLINT
  Dim(int64_t* capture) : kind_(Kind::kCapture), capture_(capture) {}  // NOLINT

  bool is_any() const { return kind_ == Kind::kAny; }
  bool is_fixed() const { return kind_ == Kind::kFixed; }
  bool is_capture() const { return kind_ == Kind::kCapture; }
  int64_t size() const { return size_; }
  int64_t* capture() const { return capture_; }

 private:
  enum class Kind { kAny, kFixed, kCapture };
  Kind kind_ = Kind::kAny;
  int64_t size_ = 0;
  int64_t* capture_ = nullptr;
};

template <DataType... Ds>
struct DTypes {};
template <size_t... Rs>
struct Ranks {};

namespace internal {

template <DataType... Ds>
constexpr size_t CountOf(DTypes<Ds...>) { return sizeof...(Ds); }
template <size_t... Rs>
constexpr size_t CountOf(Ranks<Rs...>) { return sizeof...(Rs); }

template <DataType D, DataType... Ds>
constexpr DataType FirstOf(DTypes<D, Ds...>) { return D; }
template <size_t R, size_t... Rs>
constexpr size_t FirstOf(Ranks<R, Rs...>) { return R; }

template <size_t... Rs>
constexpr bool RankAllowed(Ranks<Rs...>, size_t rank) {
  return sizeof...(Rs) == 0 || ((rank == Rs) || ...);
}

template <DataType... Ds>
inline bool DTypeAllowed(DTypes<Ds...>, DataType dtype) {
  return sizeof...(Ds) == 0 || ((dtype == Ds) || ...);
}

template <DataType... Ds>
inline std::string DTypeList(DTypes<Ds...>) {
  std::string out;
  ((out += (out.empty() ? "" : " or "), out += DataTypeName(Ds)), ...);
  return out;
}

template <size_t... Rs>
inline std::string RankList(Ranks<Rs...>) {
  std::string out;
  ((out += (out.empty() ? "" : " or "), out += std::to_string(Rs)), ...);
  return out;
}

inline std::string ShapeString(Span<const int64_t> dims) {
  std::string out = "[";
  for (size_t i = 0; i < dims.size(); ++i) {
    out += (i ? "," : "") + std::to_string(dims[i]);
  }
  return out + "]";
}

// The FFI's buffer types hold one `const XLA_FFI_Buffer*` and do not expose
// it; refining an AnyBuffer to a Buffer<dtype, rank> needs it back.
template <typename B>
const XLA_FFI_Buffer* RawBuffer(const B& buffer) {
  static_assert(sizeof(B) == sizeof(const XLA_FFI_Buffer*) &&
                    std::is_trivially_copyable_v<B>,
                "an FFI buffer type is one XLA_FFI_Buffer pointer");
  const XLA_FFI_Buffer* raw;
  std::memcpy(&raw, &buffer, sizeof(raw));
  return raw;
}

// What Match and Verify accept: AnyBuffer, Buffer<dtype, rank>, and the
// Result<...> of either (a handler's output).
template <typename T>
struct BufferTraits {
  static constexpr bool kIsBuffer = false;
};
template <>
struct BufferTraits<AnyBuffer> {
  static constexpr bool kIsBuffer = true;
  static constexpr bool kTyped = false;
  static const AnyBuffer& Get(const AnyBuffer& b) { return b; }
};
template <DataType D, size_t R>
struct BufferTraits<Buffer<D, R>> {
  static constexpr bool kIsBuffer = true;
  static constexpr bool kTyped = true;
  static const Buffer<D, R>& Get(const Buffer<D, R>& b) { return b; }
};
template <typename T>
struct BufferTraits<Result<T>> : BufferTraits<T> {
  static const T& Get(Result<T>& r) { return *r; }
  static const T& Get(const Result<T>& r) { return *const_cast<Result<T>&>(r); }
};

}  // namespace internal

template <typename DTypeSet = DTypes<>, typename RankSet = Ranks<>>
class BufferPattern {
 public:
  BufferPattern() = default;

  // The element types the buffer may have (replaces any earlier set).
  template <DataType... Ds>
  BufferPattern<DTypes<Ds...>, RankSet> WithDType() const {
    static_assert(sizeof...(Ds) > 0, "WithDType needs at least one DataType");
    return Rebind<DTypes<Ds...>, RankSet>();
  }

  // The ranks the buffer may have (replaces any earlier set).
  template <size_t... Rs>
  BufferPattern<DTypeSet, Ranks<Rs...>> WithRank() const {
    static_assert(sizeof...(Rs) > 0, "WithRank needs at least one rank");
    return Rebind<DTypeSet, Ranks<Rs...>>();
  }

  // The full shape: one Dim (any, a size or a capture pointer) a dimension;
  // the rank becomes the number of them.
  template <typename... Ds>
  BufferPattern<DTypeSet, Ranks<sizeof...(Ds)>> WithDims(Ds... dims) const {
    static_assert(internal::RankAllowed(RankSet{}, sizeof...(Ds)),
                  "WithDims: the number of dimensions is not one of the "
                  "pattern's ranks");
    auto out = Rebind<DTypeSet, Ranks<sizeof...(Ds)>>();
    out.dims_ = std::vector<Dim>{Dim(dims)...};
    return out;
  }

  // One dimension by position, the others (and the rank) left free; the
  // buffer must have that dimension.
  template <size_t I>
  BufferPattern WithDim(Dim dim) const {
    if constexpr (internal::CountOf(RankSet{}) == 1) {
      static_assert(I < internal::FirstOf(RankSet{}),
                    "WithDim<I>: I is not below the pattern's rank");
    }
    return WithDim(I, dim);
  }
  BufferPattern WithDim(size_t index, Dim dim) const {
    BufferPattern out = *this;
    out.positional_.emplace_back(index, dim);
    return out;
  }

  // The runtime shape (not the dtype) of `buffer`, copied now.
  template <typename B>
  BufferPattern WithShapeOf(const B& buffer) const {
    const auto& b = internal::BufferTraits<B>::Get(buffer);
    BufferPattern out = *this;
    auto dims = b.dimensions();
    out.same_shape_ = std::vector<int64_t>(dims.begin(), dims.end());
    return out;
  }

  // The runtime shape and dtype of `buffer`, copied now.
  template <typename B>
  BufferPattern Like(const B& buffer) const {
    BufferPattern out = WithShapeOf(buffer);
    out.same_dtype_ = internal::BufferTraits<B>::Get(buffer).element_type();
    return out;
  }

  // Runtime forms: a dtype and a full shape known only as data.
  BufferPattern WithElementType(DataType dtype) const {
    BufferPattern out = *this;
    out.element_type_ = dtype;
    return out;
  }
  BufferPattern WithShape(Span<const int64_t> dims) const {
    BufferPattern out = *this;
    out.dims_ = std::vector<Dim>(dims.begin(), dims.end());
    return out;
  }

  // Checks `dtype` and `dims` against the pattern; on success writes the
  // captures and returns Success, else an error naming `name`.
  Error Check(std::string_view name, DataType dtype,
              Span<const int64_t> dims) const {
    auto fail = [&](const std::string& what) {
      return Error::InvalidArgument(std::string(name) + ": " + what);
    };
    // What the buffer is, for messages (built only on failure).
    auto got_text = [&] {
      return std::string(DataTypeName(dtype)) + internal::ShapeString(dims);
    };
    // 1. Element type.
    if (!internal::DTypeAllowed(DTypeSet{}, dtype)) {
      return fail("expected dtype " + internal::DTypeList(DTypeSet{}) +
                  " but got " + got_text());
    }
    for (const std::optional<DataType>& want : {element_type_, same_dtype_}) {
      if (want && *want != dtype) {
        return fail(std::string("expected dtype ") + DataTypeName(*want) +
                    " but got " + got_text());
      }
    }
    // 2. Rank.
    const size_t rank = dims.size();
    if (!internal::RankAllowed(RankSet{}, rank)) {
      return fail("expected rank " + internal::RankList(RankSet{}) +
                  " but got " + got_text());
    }
    if (dims_ && dims_->size() != rank) {
      return fail("expected rank " + std::to_string(dims_->size()) +
                  " but got " + got_text());
    }
    // 3.-4. Full shape, then positional dimensions; captures on the side.
    std::vector<std::pair<int64_t*, int64_t>> captured;
    auto check_dim = [&](size_t i, const Dim& d) -> std::optional<std::string> {
      const int64_t size = dims[i];
      if (d.is_fixed() && d.size() != size) {
        return "dimension " + std::to_string(i) + " must be " +
               std::to_string(d.size()) + " but is " + std::to_string(size) +
               " in " + got_text();
      }
      if (d.is_capture()) {
        for (const auto& [ptr, value] : captured) {
          if (ptr == d.capture() && value != size) {
            return "dimension " + std::to_string(i) + " is " +
                   std::to_string(size) + " but an earlier dimension of the "
                   "same capture is " + std::to_string(value) + " in " + got_text();
          }
        }
        captured.emplace_back(d.capture(), size);
      }
      return std::nullopt;
    };
    if (dims_) {
      for (size_t i = 0; i < rank; ++i) {
        if (auto message = check_dim(i, (*dims_)[i])) return fail(*message);
      }
    }
    for (const auto& [index, dim] : positional_) {
      if (index >= rank) {
        return fail("expected a dimension " + std::to_string(index) +
                    " but got " + got_text());
      }
      if (auto message = check_dim(index, dim)) return fail(*message);
    }
    // 5. The shape of the reference buffer.
    if (same_shape_) {
      Span<const int64_t> want(same_shape_->data(), same_shape_->size());
      bool equal = want.size() == rank;
      for (size_t i = 0; equal && i < rank; ++i) equal = want[i] == dims[i];
      if (!equal) {
        return fail("expected shape " + internal::ShapeString(want) +
                    " but got " + got_text());
      }
    }
    for (const auto& [ptr, value] : captured) *ptr = value;
    return Error::Success();
  }

  // Whether this pattern names exactly one dtype and one rank (so that it
  // can refine an AnyBuffer).
  static constexpr bool kExact = internal::CountOf(DTypeSet{}) == 1 &&
                                 internal::CountOf(RankSet{}) == 1;
  using DTypeSetT = DTypeSet;
  using RankSetT = RankSet;

 private:
  template <typename, typename>
  friend class BufferPattern;

  template <typename D, typename R>
  BufferPattern<D, R> Rebind() const {
    BufferPattern<D, R> out;
    out.dims_ = dims_;
    out.positional_ = positional_;
    out.same_shape_ = same_shape_;
    out.same_dtype_ = same_dtype_;
    out.element_type_ = element_type_;
    return out;
  }

  std::optional<std::vector<Dim>> dims_;
  std::vector<std::pair<size_t, Dim>> positional_;
  std::optional<std::vector<int64_t>> same_shape_;
  std::optional<DataType> same_dtype_;
  std::optional<DataType> element_type_;
};

// m::Buffer(), m::Buffer<F32>(), m::Buffer<F32, 2>().
inline BufferPattern<> Buffer() { return {}; }
template <DataType D>
BufferPattern<DTypes<D>> Buffer() { return {}; }
template <DataType D, size_t R>
BufferPattern<DTypes<D>, Ranks<R>> Buffer() { return {}; }

}  // namespace match

// Checks `buffer` (AnyBuffer, Buffer<dtype, rank> or a Result of either)
// against `pattern`; the buffer keeps its type.
template <typename B, typename D, typename R>
Error Verify(std::string_view name, const B& buffer,
             const match::BufferPattern<D, R>& pattern) {
  static_assert(match::internal::BufferTraits<B>::kIsBuffer,
                "Verify takes an FFI buffer (AnyBuffer, Buffer<dtype, rank>, "
                "or a Result of one)");
  const auto& b = match::internal::BufferTraits<B>::Get(buffer);
  return pattern.Check(name, b.element_type(), b.dimensions());
}

namespace match::internal {

template <typename B, typename Pattern>
struct MatchResult;
// An AnyBuffer is refined to the pattern's one dtype and rank.
template <typename D, typename R>
struct MatchResult<AnyBuffer, BufferPattern<D, R>> {
  static_assert(BufferPattern<D, R>::kExact,
                "Match refines an AnyBuffer only with a pattern of exactly one "
                "dtype and one rank; use Verify for the others");
  using Type = ::xla::ffi::Buffer<internal::FirstOf(D{}), internal::FirstOf(R{})>;
  static Type Make(const AnyBuffer& b) { return Type(RawBuffer(b)); }
};
// A typed buffer keeps its type.
template <DataType DT, size_t RK, typename D, typename R>
struct MatchResult<::xla::ffi::Buffer<DT, RK>, BufferPattern<D, R>> {
  using Type = ::xla::ffi::Buffer<DT, RK>;
  static Type Make(const Type& b) { return b; }
};
template <typename T, typename P>
struct MatchResult<Result<T>, P> {
  using Type = Result<typename MatchResult<T, P>::Type>;
  static Type Make(const T& b) { return Type(MatchResult<T, P>::Make(b)); }
};

}  // namespace match::internal

// Checks `buffer` against `pattern` and returns it with the most specific
// type the pattern proves: an AnyBuffer becomes Buffer<dtype, rank> (the
// pattern must name exactly one of each), a typed buffer keeps its type; a
// Result stays a Result.
template <typename B, typename D, typename R>
ErrorOr<typename match::internal::MatchResult<B, match::BufferPattern<D, R>>::Type>
Match(std::string_view name, const B& buffer,
      const match::BufferPattern<D, R>& pattern) {
  using Result_ = match::internal::MatchResult<B, match::BufferPattern<D, R>>;
  Error error = Verify(name, buffer, pattern);
  if (error.failure()) return Unexpected(std::move(error));
  return Result_::Make(match::internal::BufferTraits<B>::Get(buffer));
}

}  // namespace xla::ffi

#endif  // XLA_GPU_FFI_BUFFER_PATTERNS_H_
