// Unit tests of ffi/worker_choice.h: the threads a "cpu" custom call runs
// on, from its probe calls' times -- the first call untimed on the pool,
// kProbeCalls on one thread then kProbeCalls on the pool, the decision,
// and the probe again of an instruction its times left on one thread.
// Prints one line a failed check and exits 1 if any failed.

#include <cstdint>
#include <cstdio>

#include "ffi/tests/checks.h"
#include "ffi/worker_choice.h"

using ::xla_gpu::ffi::WorkerChoice;

namespace {

constexpr int64_t kMost = 2;
constexpr int64_t kProbes = 2 * WorkerChoice::kProbeCalls;

// Runs the probe calls (probe `first` on), one thread's taking `one` ns,
// the pool's `many`; checks their numbers and threads.
void Probe(WorkerChoice& choice, int64_t one, int64_t many, int64_t first = 1) {
  for (int64_t i = first; i <= kProbes; ++i) {
    auto [workers, probe] = choice.Next(kMost);
    CHECK_TRUE(probe == i);
    CHECK_TRUE(workers == (i <= WorkerChoice::kProbeCalls ? 1 : kMost));
    choice.Record(probe, i <= WorkerChoice::kProbeCalls ? one : many, kMost);
  }
}

// `calls` calls, each on `workers` threads, none a probe.
void Decided(WorkerChoice& choice, int64_t calls, int64_t workers) {
  for (int64_t i = 0; i < calls; ++i) {
    auto [w, probe] = choice.Next(kMost);
    CHECK_TRUE(w == workers && probe == -1);
  }
}

void TestFirstCallUntimedThenProbes() {
  WorkerChoice choice;
  auto [workers, probe] = choice.Next(kMost);
  CHECK_TRUE(workers == kMost && probe == -1);
  Probe(choice, 100'000, 60'000);  // the pool faster
  Decided(choice, 4 * WorkerChoice::kReprobeCalls, kMost);
}

void TestOneThreadByItsTimesIsProbedAgain() {
  WorkerChoice choice;
  choice.Next(kMost);
  Probe(choice, 100'000, 200'000);  // a spell without the other core
  Decided(choice, WorkerChoice::kReprobeCalls, 1);
  Probe(choice, 100'000, 60'000);  // again, the first call timed too
  Decided(choice, 4 * WorkerChoice::kReprobeCalls, kMost);
}

void TestTheWaitDoubles() {
  WorkerChoice choice;
  choice.Next(kMost);
  Probe(choice, 100'000, 200'000);
  Decided(choice, WorkerChoice::kReprobeCalls, 1);
  Probe(choice, 100'000, 200'000);
  Decided(choice, 2 * WorkerChoice::kReprobeCalls, 1);
  Probe(choice, 100'000, 200'000);
  Decided(choice, 4 * WorkerChoice::kReprobeCalls, 1);
  auto [workers, probe] = choice.Next(kMost);
  CHECK_TRUE(workers == 1 && probe == 1);
  choice.Record(probe, 100'000, kMost);
}

void TestUnderTheFloorStaysOnOneThread() {
  WorkerChoice choice;
  choice.Next(kMost);
  Probe(choice, WorkerChoice::kMinNanosForWorkers / 2, WorkerChoice::kMinNanosForWorkers / 4);
  Decided(choice, 8 * WorkerChoice::kReprobeCalls, 1);
}

}  // namespace

int main() {
  TestFirstCallUntimedThenProbes();
  TestOneThreadByItsTimesIsProbedAgain();
  TestTheWaitDoubles();
  TestUnderTheFloorStaysOnOneThread();
  return ::xla_gpu::ffi::testing::Report();
}
