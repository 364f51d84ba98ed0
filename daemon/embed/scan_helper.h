// ScanHelpers: the threads that help recall's vector scans (VectorIndex::beginTopK), started once and kept for the
// life of the process. A thread started and ended for every scan cost the recall's own thread a clone(2) and the
// ending thread an madvise(2) of its stack: together about as much CPU as the scan it helped with at 10k rows.
//
// A job is claimed exactly once: by a helper, which runs it, or by its owner, which takes it back before any helper
// has started it (the owner then does the work itself). So an owner never waits for a helper that is busy with
// another job: it waits only for a job a helper has already started.
//
// A helper never shares the submitting thread's core when another is allowed: submit() keeps the helpers off the core
// it runs on (their CPU affinity; a system call only when that core changes). Left to itself, a kernel that packs
// wake-ups onto busy virtual CPUs, so that an idle one can stay halted, woke the helper on the submitter's core, where
// it preempted the submitter and the two halves of a recall ran one after the other (docs/performance.md).
//
// Thread-safety: submit() may be called from any thread; a Job's takeBackOrWait() by its owner only.
#pragma once

#include <sched.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <deque>
#include <functional>
#include <memory>
#include <thread>
#include <vector>

#include "daemon/util/thread_annotations.h"

namespace memq {

class ScanHelpers {
 public:
  class Job {
   public:
    explicit Job(std::function<void()> work) : work_(std::move(work)) {}
    // Ends the owner's wait for the job: true when no helper had started it, and none ever will (the owner does its
    // work); false once a helper that had started it has finished it (its writes are visible then). After either,
    // nothing the job's work reads is touched by a helper again, so the owner may free it.
    bool takeBackOrWait();
    // How long takeBackOrWait waits awake for a started job before it sleeps.
    static constexpr std::chrono::microseconds kAwakeWait{100};

   private:
    friend class ScanHelpers;
    enum State : int { kQueued, kRunning, kDone, kTakenBack };
    std::function<void()> work_;
    std::atomic<int> state_{kQueued};
  };

  // The process's helpers: helpersFor the cores the process may run on, started at the first call and kept (a
  // thread that could not be started then is not tried again). They sleep until a job comes.
  static ScanHelpers& instance();
  // How many helpers a process allowed to run on `allowedCpus` cores gets: one per core beyond the first, at most
  // four; none on one core, where a helper could only take turns with the thread it helps.
  static size_t helpersFor(size_t allowedCpus) { return allowedCpus < 2 ? 0 : std::min<size_t>(allowedCpus, 5) - 1; }

  // Hands `job` to a helper. False, and the job taken back, when no helper thread could be started: the owner does
  // the work itself.
  bool submit(const std::shared_ptr<Job>& job);
  // How many helper threads run.
  size_t threads() const { return threads_.size(); }

  ~ScanHelpers();
  ScanHelpers(const ScanHelpers&) = delete;
  ScanHelpers& operator=(const ScanHelpers&) = delete;

 private:
  explicit ScanHelpers(size_t threads);
  void run();
  // Moves the helpers off `cpu` (the submitter's) when they may run there and another allowed core exists.
  void keepOffCpu(int cpu) REQUIRES(mutex_);

  Mutex mutex_;
  cpu_set_t allowed_{};  // the cores the main thread may run on when the helpers started (none: unknown)
  int avoidedCpu_ GUARDED_BY(mutex_) = -1;  // the core the helpers are kept off, -1 for none
  CondVar wake_;
  std::deque<std::shared_ptr<Job>> queue_ GUARDED_BY(mutex_);
  bool stopping_ GUARDED_BY(mutex_) = false;
  std::vector<std::thread> threads_;  // set in the constructor, read-only after
};

}  // namespace memq
