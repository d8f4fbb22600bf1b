//===- HostLaunch.h - a CPU-target kernel's grid in chunks over threads ---===//
//
// A CPU-target kernel (-xla-gpu-lower-kernel-to-cpu) is compiled with a
// packed entry `void(void**)`: a pointer to each argument's value (one
// buffer address a distinct buffer), then the first and one-past-last block
// to run, all 64-bit. A launch cuts the grid into chunks that whoever is free
// takes -- the calling thread too, so a launch finishes even if no other
// thread ever starts, and waits only for chunks already running elsewhere.
// Header-only and without MLIR: the CPU runtime's launch (HostLaunch.cpp,
// its own pool) and the XLA FFI handler (ffi/cpu_handler.cc, XLA's pool)
// share it.
//
//===----------------------------------------------------------------------===//

#ifndef XLA_GPU_DIALECTS_XLA_GPU_HOSTLAUNCH_H_
#define XLA_GPU_DIALECTS_XLA_GPU_HOSTLAUNCH_H_

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <condition_variable>
#include <cstdint>
#include <cstdlib>
#include <mutex>
#include <utility>
#include <vector>

namespace xla_gpu {

using PackedKernelFn = void (*)(void**);

// `size` elements of scratch: held in the object itself up to kInline of
// them, so that a call of a small kernel allocates nothing; on the heap
// past that. Not copyable (PackedArgs points into one). The launch's
// packed arguments and the FFI handlers' per-parameter scratch
// (ffi/kernel_call.h's ParamArray) use it.
template <typename T, size_t kInline = 16>
class InlineArray {
 public:
  explicit InlineArray(size_t size) : size_(size) {
    if (size > kInline) heap_.resize(size);
  }
  InlineArray(const InlineArray&) = delete;
  InlineArray& operator=(const InlineArray&) = delete;

  T* data() { return size_ > kInline ? heap_.data() : inline_; }
  const T* data() const { return size_ > kInline ? heap_.data() : inline_; }
  size_t size() const { return size_; }
  T& operator[](size_t i) { return data()[i]; }
  const T& operator[](size_t i) const { return data()[i]; }

 private:
  size_t size_;
  T inline_[kInline];
  std::vector<T> heap_;
};

// The packed entry's arguments: the kernel's `count` values (integers, or
// pointers: a buffer's address) with the block range appended, inline up
// to InlineArray's 16, so that a launch on one thread allocates nothing (a
// small kernel's call through the FFI handler: +0.26-0.31 us over jax's
// own dispatch with its three allocations, +0.18-0.27 without). Not
// copyable: it points into itself.
class PackedArgs {
 public:
  template <typename T>
  PackedArgs(const T* values, size_t count) : values_(count + 2), pointers_(count + 2) {
    for (size_t i = 0; i < count; ++i) values_[i] = asValue(values[i]);
    for (size_t i = 0; i < values_.size(); ++i) pointers_[i] = &values_[i];
  }
  PackedArgs(const PackedArgs&) = delete;
  PackedArgs& operator=(const PackedArgs&) = delete;

  // Runs the blocks [lo, hi).
  void run(PackedKernelFn fn, int64_t lo, int64_t hi) {
    values_[values_.size() - 2] = lo;
    values_[values_.size() - 1] = hi;
    fn(pointers_.data());
  }

 private:
  static int64_t asValue(int64_t v) { return v; }
  static int64_t asValue(void* p) { return static_cast<int64_t>(reinterpret_cast<intptr_t>(p)); }

  InlineArray<int64_t> values_;
  InlineArray<void*> pointers_;
};

// How many chunks a launch of `numBlocks` blocks on `threads` threads
// cuts its grid into: up to 8 a thread, so that a thread that starts late
// (a worker takes ~0.01-0.1 ms to wake) finds its share taken by the ones
// running, but at least 8 blocks a chunk (a block's own cost is small: a
// column sum's 16 blocks in 16 chunks ran 1.25x slower than in 2) and at
// least one chunk a thread. Measured on 2 cores against one chunk a
// thread: a row sum 0.85 -> 0.74 of one thread's time, a softmax exp+sum
// 0.85 -> 0.64, the seed's transpose 0.71 -> 0.62, a concatenate 1.30 ->
// 0.83.
inline int64_t defaultChunks(int64_t numBlocks, int64_t threads) {
  constexpr int64_t kChunksPerThread = 8, kMinBlocksPerChunk = 8;
  if (threads <= 1) return 1;
  int64_t chunks =
      std::max(threads, std::min(threads * kChunksPerThread, numBlocks / kMinBlocksPerChunk));
  return std::max<int64_t>(1, std::min(chunks, numBlocks));
}

// How long a thread that would sleep -- a worker until the next launch,
// the caller until the chunks others run end -- first checks whether it
// still has to, as XLA:CPU's thread pool spins before it parks: a sleeping
// thread takes ~0.01-0.1 ms to wake, a small kernel's launch runs 0.02-0.5.
// 50 us, A/B in one process on 2 cores (medians of 300 calls, blocks
// taking turns): row sum f32[1024,4096] 0.74x, softmax exp+sum 0.70x,
// 021 transpose f16 0.62x, seed transpose 0.88x, KV-cache update 0.84x,
// the others (one thread, or long enough) 0.96-1.01x.
// $XLA_GPU_SPIN_US sets it, read once (0: no spinning).
inline std::chrono::nanoseconds spinLimit() {
  static const std::chrono::nanoseconds limit = [] {
    const char* us = std::getenv("XLA_GPU_SPIN_US");
    return std::chrono::nanoseconds(us ? std::atoll(us) * 1000 : 50'000);
  }();
  return limit;
}

// Whether `done()` became true within spinLimit(), asked in a loop.
template <typename Done>
bool spinUntil(Done done) {
  const auto limit = spinLimit();
  if (limit.count() <= 0) return done();
  const auto start = std::chrono::steady_clock::now();
  for (unsigned i = 1;; ++i) {
    if (done()) return true;
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    asm volatile("yield");
#endif
    if (i % 64 == 0 && std::chrono::steady_clock::now() - start > limit) return done();
  }
}

// One launch of `numChunks` chunks of [0, numBlocks); hold it in a
// shared_ptr that every thread taking chunks keeps.
class ChunkedLaunch {
 public:
  ChunkedLaunch(PackedKernelFn fn, std::vector<int64_t> values, int64_t numBlocks,
                int64_t numChunks)
      : fn_(fn), values_(std::move(values)), numBlocks_(numBlocks), numChunks_(numChunks) {}

  // Takes chunks until none is left.
  void runChunks() {
    PackedArgs args(values_.data(), values_.size());
    for (;;) {
      int64_t chunk = next_.fetch_add(1);
      if (chunk >= numChunks_) return;
      args.run(fn_, chunk * numBlocks_ / numChunks_, (chunk + 1) * numBlocks_ / numChunks_);
      if (done_.fetch_add(1) + 1 == numChunks_) {
        std::lock_guard<std::mutex> hold(mutex_);
        allDone_.notify_all();
      }
    }
  }

  // Returns when every chunk has run.
  void wait() {
    if (spinUntil([&] { return done_.load(std::memory_order_acquire) == numChunks_; })) return;
    std::unique_lock<std::mutex> hold(mutex_);
    allDone_.wait(hold, [&] { return done_.load() == numChunks_; });
  }

 private:
  PackedKernelFn fn_;
  std::vector<int64_t> values_;
  int64_t numBlocks_;
  int64_t numChunks_;
  std::atomic<int64_t> next_{0};
  std::atomic<int64_t> done_{0};
  std::mutex mutex_;
  std::condition_variable allDone_;
};

}  // namespace xla_gpu

extern "C" {
// The CPU runtime's launch (HostLaunch.cpp, in the plugin library): `fn`
// over the blocks [0, numBlocks) in `numChunks` chunks (0: defaultChunks)
// on up to `threads` threads, the caller among them; `values` are its
// `count` argument values before the block range. Returns when every chunk
// has run.
void xlaGpuHostLaunch(void* fn, const int64_t* values, int64_t count, int64_t numBlocks,
                      int64_t numChunks, int64_t threads);

// dst[0, bytes) = src[0, bytes) on up to `threads` threads of the pool,
// with streaming stores if `streaming` (HostCopy.cpp).
void xlaGpuHostCopy(void* dst, const void* src, size_t bytes, int streaming, int64_t threads);
}

#endif  // XLA_GPU_DIALECTS_XLA_GPU_HOSTLAUNCH_H_
