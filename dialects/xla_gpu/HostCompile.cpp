//===- HostCompile.cpp - a kernel's compile, started and finished later ---===//
//
// A CPU kernel's compile after its parse -- the pass pipeline
// (xlaGpuRunParsedPassPipeline), then LLVM (xlaGpuCompileToHostObject) --
// on a thread of the library's, started by one call and finished by
// another. The JAX backend starts a kernel's compile when jax traces the
// call and finishes it when XLA instantiates the call, jax meanwhile
// lowering and compiling the program around it. A Python worker thread
// did this before; it had to take the GIL first, and the tracing thread,
// running Python, gave it up only after a switch interval (~5 ms of a
// ~22 ms compile of a small program).
//
//===----------------------------------------------------------------------===//

#include <algorithm>
#include <chrono>
#include <cstring>
#include <future>
#include <memory>
#include <string>

#include "dialects/xla_gpu/CAPI.h"
#include "llvm/Support/ThreadPool.h"
#include "llvm/Support/Threading.h"

namespace {

// What a compile gives: its object, or the pipeline's message, or the
// compile's.
struct HostCompileJob {
  std::shared_future<void> ended;
  void* object = nullptr;
  size_t size = 0;
  double seconds[3] = {0, 0, 0};
  char* pipelineError = nullptr;
  std::string error;
};

// As runtime/host_code.py's buffer for xlaGpuCompileToHostObject's message.
constexpr size_t kErrorCapacity = 8192;

// The compiling threads: as many as the host has cores, made as jobs come
// and kept (a thread keeps its LLVM target machine from one compile to the
// next: HostJit.cpp's hostMachine). Never destroyed: no thread is joined
// at exit (the Python side finishes its jobs before).
llvm::StdThreadPool& compilePool() {
  static llvm::StdThreadPool* pool = new llvm::StdThreadPool(llvm::hardware_concurrency());
  return *pool;
}

}  // namespace

extern "C" {

void* xlaGpuStartHostCompile(void* pipeline, MlirModule module, int verifyEach, int optLevel) {
  auto* job = new HostCompileJob();
  job->ended = compilePool().async([=] {
    job->pipelineError = xlaGpuRunParsedPassPipeline(pipeline, module, verifyEach);
    if (job->pipelineError != nullptr) return;
    char error[kErrorCapacity] = "";
    job->object = xlaGpuCompileToHostObject(module, optLevel, &job->size, job->seconds, error,
                                            sizeof(error));
    if (job->object == nullptr) job->error = error;
  });
  return job;
}

int xlaGpuHostCompileDone(void* job) {
  return static_cast<HostCompileJob*>(job)->ended.wait_for(std::chrono::seconds(0)) ==
         std::future_status::ready;
}

void* xlaGpuFinishHostCompile(void* job, size_t* size, double* seconds, char** pipelineError,
                              char* error, size_t capacity) {
  std::unique_ptr<HostCompileJob> owned(static_cast<HostCompileJob*>(job));
  owned->ended.wait();
  *size = owned->size;
  if (seconds != nullptr) std::memcpy(seconds, owned->seconds, sizeof(owned->seconds));
  *pipelineError = owned->pipelineError;
  if (capacity > 0) {
    size_t n = std::min(owned->error.size(), capacity - 1);
    std::memcpy(error, owned->error.data(), n);
    error[n] = '\0';
  }
  return owned->object;
}

}  // extern "C"
