// Unit tests of ffi/buffer_patterns.h: every behaviour seed 003 describes
// for Match / Verify, on XLA_FFI_Buffers built here (what XLA hands a
// handler). Prints one line a failed check and exits 1 if any failed.

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "ffi/buffer_patterns.h"
#include "ffi/tests/checks.h"

namespace ffi = ::xla::ffi;
namespace m = ::xla::ffi::match;
using ffi::AnyBuffer;
using ffi::DataType;
using ffi::Error;
using ffi::ErrorOr;

namespace {

using ::xla_gpu::ffi::testing::checks;
using ::xla_gpu::ffi::testing::failures;

#define CHECK_ERROR_HAS(error, text)                                          \
  do {                                                                        \
    ++checks;                                                                 \
    const Error& e_ = (error);                                                \
    if (e_.success() || e_.message().find(text) == std::string::npos) {       \
      ++failures;                                                             \
      std::printf("FAIL %s:%d: expected an error containing \"%s\", got %s\n", \
                  __FILE__, __LINE__, text,                                   \
                  e_.success() ? "success" : e_.message().c_str());           \
    }                                                                         \
  } while (0)

// A buffer as XLA passes it: dtype, dims, a data pointer.
struct FakeBuffer {
  FakeBuffer(DataType dtype, std::vector<int64_t> dims)
      : dims(std::move(dims)) {
    raw.struct_size = sizeof(XLA_FFI_Buffer);
    raw.extension_start = nullptr;
    raw.dtype = static_cast<XLA_FFI_DataType>(dtype);
    raw.data = storage;
    raw.rank = static_cast<int64_t>(this->dims.size());
    raw.dims = this->dims.data();
  }
  FakeBuffer(const FakeBuffer&) = delete;
  AnyBuffer any() const { return AnyBuffer(&raw); }

  std::vector<int64_t> dims;
  XLA_FFI_Buffer raw;
  float storage[4] = {1, 2, 3, 4};
};

template <typename T>
Error ErrorOf(const ErrorOr<T>& r) {
  return r.has_error() ? r.error() : Error::Success();
}

void TestRefinesAnyBuffer() {
  FakeBuffer f32(DataType::F32, {3, 4});
  // The two spellings of one pattern.
  ErrorOr<ffi::BufferR2<DataType::F32>> a =
      ffi::Match("input", f32.any(), m::Buffer<DataType::F32, 2>());
  ErrorOr<ffi::BufferR2<DataType::F32>> b = ffi::Match(
      "input", f32.any(), m::Buffer().WithDType<DataType::F32>().WithRank<2>());
  CHECK_TRUE(a.has_value() && b.has_value());
  CHECK_TRUE(a->typed_data() == f32.storage && a->typed_data()[2] == 3.0f);
  CHECK_TRUE(a->dimensions().size() == 2 && a->dimensions()[1] == 4);
  // Wrong dtype / rank: the message names the buffer and the constraint.
  FakeBuffer s32(DataType::S32, {3, 4});
  auto wrong_dtype = ffi::Match("input", s32.any(), m::Buffer<DataType::F32, 2>());
  CHECK_ERROR_HAS(ErrorOf(wrong_dtype), "input: expected dtype F32 but got S32[3,4]");
  FakeBuffer r3(DataType::F32, {3, 4, 5});
  auto wrong_rank = ffi::Match("input", r3.any(), m::Buffer<DataType::F32, 2>());
  CHECK_ERROR_HAS(ErrorOf(wrong_rank), "input: expected rank 2 but got F32[3,4,5]");
  CHECK_TRUE(ErrorOf(wrong_rank).errc() == ffi::ErrorCode::kInvalidArgument);
}

void TestCapturesAndFixedDims() {
  FakeBuffer in(DataType::F32, {3, 4});
  int64_t rows = -1, cols = -1;
  auto typed = ffi::Match("input", in.any(),
                          m::Buffer<DataType::F32>().WithDims(&rows, &cols));
  CHECK_TRUE(typed.has_value());
  CHECK_TRUE(rows == 3 && cols == 4);
  // WithDims sets the rank: the result type is rank 2.
  static_assert(std::is_same_v<decltype(typed),
                               ErrorOr<ffi::BufferR2<DataType::F32>>>);
  // The output checked against the captured sizes, refined as a Result.
  FakeBuffer out(DataType::F32, {3, 4});
  ffi::Result<AnyBuffer> out_result(out.any());
  ErrorOr<ffi::Result<ffi::BufferR2<DataType::F32>>> typed_out = ffi::Match(
      "output", out_result, m::Buffer<DataType::F32>().WithDims(rows, cols));
  CHECK_TRUE(typed_out.has_value());
  CHECK_TRUE((*typed_out)->typed_data() == out.storage);
  FakeBuffer bad_out(DataType::F32, {3, 5});
  CHECK_ERROR_HAS(ffi::Verify("output", bad_out.any(),
                              m::Buffer<DataType::F32>().WithDims(rows, cols)),
                  "output: dimension 1 must be 4 but is 5 in F32[3,5]");
  // Mixed: a capture and a fixed size; m::Dim() is any size.
  int64_t n = -1;
  CHECK_TRUE(ffi::Verify("x", in.any(), m::Buffer().WithDims(&n, 4)).success());
  CHECK_TRUE(n == 3);
  CHECK_TRUE(ffi::Verify("x", in.any(), m::Buffer().WithDims(m::Dim(), m::Dim(4)))
                 .success());
  CHECK_ERROR_HAS(ffi::Verify("x", in.any(), m::Buffer().WithDims(m::Dim(), 16)),
                  "x: dimension 1 must be 16 but is 4");
  CHECK_ERROR_HAS(ffi::Verify("x", in.any(), m::Buffer().WithDims(m::Dim())),
                  "x: expected rank 1 but got F32[3,4]");
}

void TestCapturesWrittenOnlyOnSuccess() {
  FakeBuffer in(DataType::F32, {3, 4});
  int64_t rows = -1;
  // Dimension 0 would capture 3, but dimension 1 fails: rows stays -1.
  CHECK_ERROR_HAS(ffi::Verify("input", in.any(),
                              m::Buffer().WithDims(&rows, 16)),
                  "dimension 1 must be 16");
  CHECK_TRUE(rows == -1);
  // A failing dtype leaves it too.
  CHECK_TRUE(ffi::Verify("input", in.any(),
                         m::Buffer<DataType::S32>().WithDims(&rows, m::Dim()))
                 .failure());
  CHECK_TRUE(rows == -1);
}

void TestRepeatedCaptureMustAgree() {
  FakeBuffer square(DataType::F32, {5, 5});
  FakeBuffer oblong(DataType::F32, {5, 6});
  int64_t n = -1;
  auto ok = ffi::Match("matrix", square.any(),
                       m::Buffer<DataType::F32>().WithDims(&n, &n));
  CHECK_TRUE(ok.has_value() && n == 5);
  int64_t k = -1;
  auto bad = ffi::Match("matrix", oblong.any(),
                        m::Buffer<DataType::F32>().WithDims(&k, &k));
  CHECK_ERROR_HAS(ErrorOf(bad),
                  "matrix: dimension 1 is 6 but an earlier dimension of the same "
                  "capture is 5");
  CHECK_TRUE(k == -1);
}

void TestPositionalDims() {
  FakeBuffer act(DataType::F32, {1, 7, 9, 128});
  auto ok = ffi::Match("input", act.any(),
                       m::Buffer<DataType::F32, 4>().WithDim<0>(1).WithDim<3>(128));
  CHECK_TRUE(ok.has_value());
  FakeBuffer wrong(DataType::F32, {2, 7, 9, 128});
  CHECK_ERROR_HAS(ErrorOf(ffi::Match(
                      "input", wrong.any(),
                      m::Buffer<DataType::F32, 4>().WithDim<0>(1).WithDim<3>(128))),
                  "input: dimension 0 must be 1 but is 2");
  // WithDim(index, n) without a rank: any rank above index.
  CHECK_TRUE(ffi::Verify("input", act.any(), m::Buffer().WithDim(2, 9)).success());
  FakeBuffer vec(DataType::F32, {9});
  CHECK_ERROR_HAS(ffi::Verify("input", vec.any(), m::Buffer().WithDim(2, 9)),
                  "input: expected a dimension 2 but got F32[9]");
  // A positional capture.
  int64_t c = -1;
  CHECK_TRUE(ffi::Verify("input", act.any(), m::Buffer().WithDim(1, &c)).success());
  CHECK_TRUE(c == 7);
}

void TestShapeOfAndLike() {
  FakeBuffer keys(DataType::S32, {2, 3});
  FakeBuffer values(DataType::F32, {2, 3});
  FakeBuffer other(DataType::F32, {2, 4});
  FakeBuffer keys_out(DataType::S32, {2, 3});
  FakeBuffer keys_out_f32(DataType::F32, {2, 3});
  // WithShapeOf allows another dtype; Like does not.
  CHECK_TRUE(ffi::Verify("values", values.any(),
                         m::Buffer().WithShapeOf(keys.any())).success());
  CHECK_ERROR_HAS(ffi::Verify("values", other.any(),
                              m::Buffer().WithShapeOf(keys.any())),
                  "values: expected shape [2,3] but got F32[2,4]");
  ffi::Result<AnyBuffer> out(keys_out.any());
  CHECK_TRUE(ffi::Verify("keys output", out, m::Buffer().Like(keys.any())).success());
  CHECK_ERROR_HAS(ffi::Verify("keys output", keys_out_f32.any(),
                              m::Buffer().Like(keys.any())),
                  "keys output: expected dtype S32 but got F32[2,3]");
  // The pattern copies the reference's metadata when it is built.
  auto pattern = m::Buffer().WithShapeOf(keys.any());
  keys.dims[1] = 99;
  CHECK_TRUE(ffi::Verify("values", values.any(), pattern).success());
}

void TestSeveralDTypesAndRanks() {
  auto pattern = m::Buffer().WithDType<DataType::S32, DataType::S64>().WithRank<1, 2>();
  FakeBuffer s32(DataType::S32, {4});
  FakeBuffer s64(DataType::S64, {2, 2});
  FakeBuffer f32(DataType::F32, {4});
  FakeBuffer r3(DataType::S64, {1, 1, 4});
  CHECK_TRUE(ffi::Verify("indices", s32.any(), pattern).success());
  CHECK_TRUE(ffi::Verify("indices", s64.any(), pattern).success());
  CHECK_ERROR_HAS(ffi::Verify("indices", f32.any(), pattern),
                  "indices: expected dtype S32 or S64 but got F32[4]");
  CHECK_ERROR_HAS(ffi::Verify("indices", r3.any(), pattern),
                  "indices: expected rank 1 or 2 but got S64[1,1,4]");
  // Such a pattern still matches an already-typed buffer (its type is known).
  ffi::BufferR1<DataType::S32> typed(&s32.raw);
  ErrorOr<ffi::BufferR1<DataType::S32>> kept = ffi::Match("indices", typed, pattern);
  CHECK_TRUE(kept.has_value() &&
             kept->typed_data() == reinterpret_cast<int32_t*>(s32.storage));
}

void TestVerifyTypedBuffers() {
  FakeBuffer lhs(DataType::F32, {3, 4});
  FakeBuffer rhs(DataType::F32, {3, 4});
  FakeBuffer bad(DataType::F32, {4, 3});
  ffi::BufferR2<DataType::F32> l(&lhs.raw), r(&rhs.raw), b(&bad.raw);
  int64_t rows = 0, cols = 0;
  CHECK_TRUE(ffi::Verify("lhs", l, m::Buffer().WithDims(&rows, &cols)).success());
  CHECK_TRUE(ffi::Verify("rhs", r, m::Buffer().WithDims(rows, cols)).success());
  CHECK_ERROR_HAS(ffi::Verify("rhs", b, m::Buffer().WithDims(rows, cols)),
                  "rhs: dimension 0 must be 3 but is 4");
}

void TestRuntimeForms() {
  FakeBuffer in(DataType::BF16, {8, 16});
  const int64_t want[] = {8, 16};
  const int64_t other[] = {8, 17};
  auto pattern = m::Buffer().WithElementType(DataType::BF16);
  CHECK_TRUE(ffi::Verify("arg 0", in.any(),
                         pattern.WithShape(ffi::Span<const int64_t>(want, 2))).success());
  CHECK_ERROR_HAS(ffi::Verify("arg 0", in.any(),
                              pattern.WithShape(ffi::Span<const int64_t>(other, 2))),
                  "arg 0: dimension 1 must be 17 but is 16 in BF16[8,16]");
  CHECK_ERROR_HAS(ffi::Verify("arg 0", in.any(),
                              m::Buffer().WithElementType(DataType::F16)),
                  "arg 0: expected dtype F16 but got BF16[8,16]");
  CHECK_ERROR_HAS(ffi::Verify("arg 0", in.any(),
                              m::Buffer().WithShape(ffi::Span<const int64_t>(want, 1))),
                  "arg 0: expected rank 1 but got BF16[8,16]");
}

void TestScalars() {
  FakeBuffer scalar(DataType::F64, {});
  auto ok = ffi::Match("alpha", scalar.any(), m::Buffer<DataType::F64, 0>());
  CHECK_TRUE(ok.has_value());
  CHECK_TRUE(ffi::Verify("alpha", scalar.any(), m::Buffer().WithDims()).success());
  CHECK_ERROR_HAS(ffi::Verify("alpha", scalar.any(), m::Buffer().WithDim(0, 1)),
                  "alpha: expected a dimension 0 but got F64[]");
}

}  // namespace

int main() {
  TestRefinesAnyBuffer();
  TestCapturesAndFixedDims();
  TestCapturesWrittenOnlyOnSuccess();
  TestRepeatedCaptureMustAgree();
  TestPositionalDims();
  TestShapeOfAndLike();
  TestSeveralDTypesAndRanks();
  TestVerifyTypedBuffers();
  TestRuntimeForms();
  TestScalars();
  return ::xla_gpu::ffi::testing::Report();
}
