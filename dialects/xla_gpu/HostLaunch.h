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

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <utility>
#include <vector>

namespace xla_gpu {

using PackedKernelFn = void (*)(void**);

// The packed entry's arguments: the kernel's values with the block range
// appended.
class PackedArgs {
 public:
  explicit PackedArgs(std::vector<int64_t> values) : values_(std::move(values)) {
    values_.resize(values_.size() + 2);
    pointers_.reserve(values_.size());
    for (int64_t& v : values_) pointers_.push_back(&v);
  }

  // Runs the blocks [lo, hi).
  void run(PackedKernelFn fn, int64_t lo, int64_t hi) {
    values_[values_.size() - 2] = lo;
    values_.back() = hi;
    fn(pointers_.data());
  }

 private:
  std::vector<int64_t> values_;
  std::vector<void*> pointers_;
};

// One launch of `numChunks` chunks of [0, numBlocks); hold it in a
// shared_ptr that every thread taking chunks keeps.
class ChunkedLaunch {
 public:
  ChunkedLaunch(PackedKernelFn fn, std::vector<int64_t> values, int64_t numBlocks,
                int64_t numChunks)
      : fn_(fn), values_(std::move(values)), numBlocks_(numBlocks), numChunks_(numChunks) {}

  // Takes chunks until none is left.
  void runChunks() {
    PackedArgs args(values_);
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
// over the blocks [0, numBlocks) in `numChunks` chunks on up to `threads`
// threads, the caller among them; `values` are its `count` argument values
// before the block range. Returns when every chunk has run.
void xlaGpuHostLaunch(void* fn, const int64_t* values, int64_t count, int64_t numBlocks,
                      int64_t numChunks, int64_t threads);
}

#endif  // XLA_GPU_DIALECTS_XLA_GPU_HOSTLAUNCH_H_
