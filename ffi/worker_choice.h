// WorkerChoice: the threads a custom-call instruction of the "cpu" handler
// (cpu_handler.cc, step 5) runs its kernel on, chosen by its own times.
// Its own header for its unit test (ffi/tests/worker_choice_test.cc).

#ifndef XLA_GPU_FFI_WORKER_CHOICE_H_
#define XLA_GPU_FFI_WORKER_CHOICE_H_

#include <atomic>
#include <cstdint>
#include <limits>
#include <utility>

namespace xla_gpu::ffi {

// Step 5's threads, chosen by an instruction's own times as CpuKernel
// chooses its (runtime/cpu.py: PROBE_CALLS, choose_workers): its first
// call runs on the pool, untimed (the workers waking, fresh output pages:
// the seed GELU's first two calls on two threads took 15-22 ms, its later
// ones 9.5), its next kProbeCalls run on the calling thread and the
// kProbeCalls after them on the pool, timed, and its later calls keep the
// pool unless one thread's fastest took under kMinNanosForWorkers or was
// 1.1x faster. The pool's probes come in a row: XLA's pool parks soon
// after its work, and alternated with the calling thread's, each of a
// small kernel's probes on the pool paid a parked thread's wake-up
// (through xj.jit, three processes a side, a call of a pad of a reversed
// strided slice 13-30 -> 13-14 us, the concatenate 55-113 -> 53-56, the
// sum over dimensions 0 and 2 18-34 -> 18). The bytes a
// kernel moves do not tell: a column reduction XLA makes a loop fusion
// (f32[16384,1024], each worker reading half of each 4 KiB row) ran
// 4.5 ms on one thread, 6.9 on two. Calls may run at once on several
// threads: the counts and bests are atomic, and the call of the last
// probe decides (the others run on the pool meanwhile).
//
// One instruction of the process probes at a time; the others run on the
// pool, untimed, until it has decided. A kernel's time depends on where
// the kernel before it left the data: a program's kernels probing in
// lockstep ran one thread each together, so a softmax's last kernel (a
// multiply in place over the exp before it) took 21 us on one thread
// there, after an exp on the same core, and 110 us once it kept one
// thread beside the exp on the pool (the pool: 40-50 us). An instruction
// waiting kProbeWaits calls of its own while the prober made no call
// takes its turn (a program no longer run).
class WorkerChoice {
 public:
  static constexpr int64_t kProbeCalls = 3;
  static constexpr int64_t kProbeWaits = 16;
  // XLA's pool is awake between the kernels of one program: its kernels
  // of 0.08 ms (a layer norm's five over f32[1024,1024], a softmax's)
  // ran faster on it, and a floor of 0.1 ms kept them on one thread --
  // in one process the layer norm took 0.38-0.50 ms with a floor of
  // 0.02 or none against 0.49-0.71 with 0.1, the softmax 0.47-0.72
  // against 0.52-1.34. A floor of 0.02 ms kept kernels of 0.01-0.02 ms
  // on one thread that ran faster on the pool too: through xj.jit
  // (medians of three processes a side, whole calls) a pad of a reversed
  // strided slice 21 -> 14 us, a layer norm over f32[128,512] 22 -> 12,
  // a row max over f32[8192,12] 15 -> 11, a GELU over f32[64,1024] 19 ->
  // 13, a concatenate 97 -> 68; under 5 us a launch is too short to share
  // (a scatter-add of 2 us: 61 us on two threads).
  static constexpr int64_t kMinNanosForWorkers = 5'000;
  // An instruction its times left on one thread (not the floor) probes
  // again after kReprobeCalls calls, then twice as many each time it stays
  // there, as CpuKernel does (runtime/cpu.py, REPROBE_CALLS): probes that
  // fell in a spell without the other core (these VMs have such spells)
  // would otherwise keep it on one thread for good.
  static constexpr int64_t kReprobeCalls = 8;

  ~WorkerChoice() { Release(); }

  // The threads this call runs on, and its probe's number (-1: none):
  // 1 to 2 * kProbeCalls, the first kProbeCalls on one thread.
  std::pair<int64_t, int64_t> Next(int64_t most) {
    int64_t decided = workers_.load(std::memory_order_acquire);
    if (decided != 0) {
      if (reprobe_in_.load(std::memory_order_relaxed) > 0 &&
          reprobe_in_.fetch_sub(1, std::memory_order_relaxed) == 1) {
        Reopen();
      }
      return {decided, -1};
    }
    if (most == 1) {
      workers_.store(1, std::memory_order_release);
      return {1, -1};
    }
    if (!TakeTurn()) return {most, -1};
    prober_calls_.fetch_add(1, std::memory_order_relaxed);
    int64_t call = calls_.fetch_add(1, std::memory_order_relaxed);
    // The first call, untimed; or others still probing.
    if (call == 0 || call > 2 * kProbeCalls) return {most, -1};
    return {call <= kProbeCalls ? 1 : most, call};
  }

  // Records probe `probe`'s time; the last one decides.
  void Record(int64_t probe, int64_t nanos, int64_t most) {
    std::atomic<int64_t>& best = probe <= kProbeCalls ? best_one_ : best_many_;
    int64_t seen = best.load(std::memory_order_relaxed);
    while (nanos < seen && !best.compare_exchange_weak(seen, nanos)) {
    }
    if (probe == 2 * kProbeCalls) {
      // Calls at once on several threads may end the last probe (the
      // pool's) before any of one thread's: with no time of one thread,
      // the pool is kept (the default). (CpuKernel decides once both
      // sides have all their times.)
      int64_t one = best_one_.load(), many = best_many_.load();
      bool timed = one != std::numeric_limits<int64_t>::max();
      bool alone = timed && (one < kMinNanosForWorkers || one + one / 10 < many);  // 1.1x
      if (alone && one >= kMinNanosForWorkers) {
        int64_t wait = reprobe_wait_.load(std::memory_order_relaxed);
        reprobe_wait_.store(2 * wait, std::memory_order_relaxed);
        reprobe_in_.store(wait, std::memory_order_relaxed);
      }
      workers_.store(alone ? 1 : most, std::memory_order_release);
      Release();
    }
  }

 private:
  // Whether this instruction probes now: it holds the turn, or takes it
  // (free, or its holder made no call in this one's last kProbeWaits).
  bool TakeTurn() {
    WorkerChoice* holder = prober_.load(std::memory_order_acquire);
    if (holder == this) return true;
    int64_t progress = prober_calls_.load(std::memory_order_relaxed);
    if (holder != nullptr) {
      if (progress != seen_progress_.exchange(progress, std::memory_order_relaxed)) {
        waits_.store(0, std::memory_order_relaxed);
        return false;
      }
      if (waits_.fetch_add(1, std::memory_order_relaxed) + 1 < kProbeWaits) return false;
    }
    waits_.store(0, std::memory_order_relaxed);
    return prober_.compare_exchange_strong(holder, this, std::memory_order_acq_rel);
  }

  // Undecided again, its probes from the start (the first of them timed:
  // the workers are awake, the pages written).
  void Reopen() {
    best_one_.store(std::numeric_limits<int64_t>::max(), std::memory_order_relaxed);
    best_many_.store(std::numeric_limits<int64_t>::max(), std::memory_order_relaxed);
    calls_.store(1, std::memory_order_relaxed);
    workers_.store(0, std::memory_order_release);
  }

  void Release() {
    WorkerChoice* self = this;
    prober_.compare_exchange_strong(self, nullptr, std::memory_order_acq_rel);
  }

  // The instruction probing now, and how many calls probers have made.
  static inline std::atomic<WorkerChoice*> prober_{nullptr};
  static inline std::atomic<int64_t> prober_calls_{0};

  std::atomic<int64_t> calls_{0};
  std::atomic<int64_t> best_one_{std::numeric_limits<int64_t>::max()};
  std::atomic<int64_t> best_many_{std::numeric_limits<int64_t>::max()};
  std::atomic<int64_t> workers_{0};  // 0: not decided
  std::atomic<int64_t> reprobe_in_{0};  // calls until Reopen (0: none planned)
  std::atomic<int64_t> reprobe_wait_{kReprobeCalls};
  std::atomic<int64_t> seen_progress_{-1};
  std::atomic<int64_t> waits_{0};
};

}  // namespace xla_gpu::ffi

#endif  // XLA_GPU_FFI_WORKER_CHOICE_H_
