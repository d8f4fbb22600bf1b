//===- HostLaunch.cpp - the CPU runtime's launch of a grid over the cores -===//
//
// CpuKernel's launch: the grid in chunks (HostLaunch.h) run by the calling
// thread and the workers of this process-wide pool. The pool was a Python
// ThreadPoolExecutor before: each launch handed closures to Python threads,
// which needed the GIL to start them and to report back, and the hand-off
// cost 0.1-0.2 ms a launch on the 2-core benchmark machine (the transpose
// of f16[8,200,96]: 0.24 ms on one thread, 0.35 ms on two). Here the caller
// makes one call (ctypes lets go of the GIL) and the workers wait on a
// condition variable.
//
//===----------------------------------------------------------------------===//

#include "dialects/xla_gpu/HostLaunch.h"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace {

using xla_gpu::ChunkedLaunch;
using xla_gpu::PackedArgs;
using xla_gpu::PackedKernelFn;

// Worker threads started on the first launch that asks for them, one
// fewer than the cores (the caller is the other). Never destroyed: the
// threads wait until the process exits.
class Pool {
 public:
  static Pool& get() {
    static Pool* pool = new Pool(std::max(1u, std::thread::hardware_concurrency()) - 1);
    return *pool;
  }

  int64_t numWorkers() const { return static_cast<int64_t>(threads_.size()); }

  // Hands `launch` to up to `helpers` workers; they take its chunks as
  // they wake.
  void post(const std::shared_ptr<ChunkedLaunch>& launch, int64_t helpers) {
    {
      std::lock_guard<std::mutex> hold(mutex_);
      current_ = launch;
      wanted_ = helpers;
      ++generation_;
      posted_.store(generation_, std::memory_order_release);
    }
    if (helpers >= numWorkers()) {
      wake_.notify_all();
    } else {
      for (int64_t i = 0; i < helpers; ++i) wake_.notify_one();
    }
  }

  // Launches share the workers one at a time; a launch that finds them
  // busy (another host thread's) runs on its caller alone.
  std::mutex& launching() { return launching_; }

 private:
  explicit Pool(unsigned workers) {
    for (unsigned i = 0; i < workers; ++i) threads_.emplace_back([this] { work(); });
    for (std::thread& t : threads_) t.detach();
  }

  void work() {
    uint64_t seen = 0;
    for (;;) {
      std::shared_ptr<ChunkedLaunch> launch;
      xla_gpu::spinUntil([&] { return posted_.load(std::memory_order_acquire) != seen; });
      {
        std::unique_lock<std::mutex> hold(mutex_);
        wake_.wait(hold, [&] { return generation_ != seen && wanted_ > 0; });
        seen = generation_;
        --wanted_;
        launch = current_;
      }
      launch->runChunks();
    }
  }

  std::mutex launching_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::shared_ptr<ChunkedLaunch> current_;
  uint64_t generation_ = 0;
  std::atomic<uint64_t> posted_{0};  // generation_, read without the lock
  int64_t wanted_ = 0;
  std::vector<std::thread> threads_;
};

}  // namespace

extern "C" {

// Declared in HostLaunch.h. Called without the GIL (ctypes).
void xlaGpuHostLaunch(void* fn, const int64_t* values, int64_t count, int64_t numBlocks,
                      int64_t numChunks, int64_t threads) {
  auto kernel = reinterpret_cast<PackedKernelFn>(fn);
  numChunks = numChunks <= 0 ? xla_gpu::defaultChunks(numBlocks, threads)
                             : std::max<int64_t>(1, std::min(numChunks, numBlocks));
  int64_t helpers = std::min(threads, numChunks) - 1;
  std::unique_lock<std::mutex> workers;
  if (helpers > 0) {
    workers = std::unique_lock<std::mutex>(Pool::get().launching(), std::try_to_lock);
    helpers = workers.owns_lock() ? std::min(helpers, Pool::get().numWorkers()) : 0;
  }
  if (helpers <= 0) {
    PackedArgs(values, static_cast<size_t>(count)).run(kernel, 0, numBlocks);
    return;
  }
  auto launch = std::make_shared<ChunkedLaunch>(
      kernel, std::vector<int64_t>(values, values + count), numBlocks, numChunks);
  Pool::get().post(launch, helpers);
  launch->runChunks();
  launch->wait();
}

}  // extern "C"
