//===- HostCopy.cpp - the CPU runtime's copy of an aliased operand --------===//
//
// An output that aliases an operand starts as a copy of it when the two
// buffers differ (XLA copies the operand then too); the kernel writes only
// what it updates (a KV-cache token, a scatter's rows). For a buffer well
// past the caches the copy is the whole launch, and a plain copy moves a
// third more bytes than it needs: each destination line is read before it
// is written (read for ownership). Streaming stores write the lines without
// reading them: 16 MiB in ~0.75 ms here instead of ~1.3 ms for
// numpy.copyto (measured on one core of the 2-core benchmark machine).
//
//===----------------------------------------------------------------------===//

#include <cstddef>
#include <cstdint>
#include <cstring>

#if defined(__x86_64__) || defined(_M_X64)
#include <emmintrin.h>
#define XLA_GPU_STREAMING_STORES 1
#endif

extern "C" {

// dst[0, bytes) = src[0, bytes); the buffers do not overlap. Called without
// the GIL (ctypes), on several threads for disjoint ranges.
void xlaGpuCopyStreaming(void* dst, const void* src, size_t bytes) {
#ifdef XLA_GPU_STREAMING_STORES
  auto* d = static_cast<char*>(dst);
  const auto* s = static_cast<const char*>(src);
  // Up to the destination's first 16-byte boundary, plainly.
  size_t head = (16 - (reinterpret_cast<uintptr_t>(d) & 15)) & 15;
  if (head > bytes) head = bytes;
  std::memcpy(d, s, head);
  d += head;
  s += head;
  bytes -= head;
  size_t i = 0;
  for (; i + 64 <= bytes; i += 64) {  // a cache line a step
    __m128i a = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + i));
    __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + i + 16));
    __m128i c = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + i + 32));
    __m128i e = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + i + 48));
    _mm_stream_si128(reinterpret_cast<__m128i*>(d + i), a);
    _mm_stream_si128(reinterpret_cast<__m128i*>(d + i + 16), b);
    _mm_stream_si128(reinterpret_cast<__m128i*>(d + i + 32), c);
    _mm_stream_si128(reinterpret_cast<__m128i*>(d + i + 48), e);
  }
  std::memcpy(d + i, s + i, bytes - i);
  // Streaming stores are weakly ordered: visible before the kernel runs.
  _mm_sfence();
#else
  std::memcpy(dst, src, bytes);
#endif
}

}  // extern "C"
