// ScanHelpers: the threads that help recall's vector scans (VectorIndex::beginTopK), started once and kept for the
// life of the process. A thread started and ended for every scan cost the recall's own thread a clone(2) and the
// ending thread an madvise(2) of its stack: together about as much CPU as the scan it helped with at 10k rows.
//
// A job is claimed exactly once: by a helper, which runs it, or by its owner, which cancels it before any helper
// has started it (the owner then does the work itself). So an owner never waits for a helper that is busy with
// another job: it waits only for a job a helper has already started.
//
// Thread-safety: submit() may be called from any thread; a Job's cancel() and wait() by its owner only.
#pragma once

#include <atomic>
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
    // True when no helper started the job and none ever will (the owner does its work); false when one has started
    // it: wait() then returns once it is done.
    bool cancel();
    // Returns once a helper that started the job has finished it. At once for a job that was cancelled or never
    // submitted.
    void wait();

   private:
    friend class ScanHelpers;
    enum State : int { kQueued, kRunning, kDone, kCancelled };
    std::function<void()> work_;
    std::atomic<int> state_{kQueued};
  };

  // The process's helpers: one thread per core beyond the first (at least one, at most four), started at the first
  // call. They sleep until a job comes.
  static ScanHelpers& instance();

  // Hands `job` to a helper. False, and the job cancelled, when no helper thread could be started: the owner does
  // the work itself.
  bool submit(const std::shared_ptr<Job>& job);

  ~ScanHelpers();
  ScanHelpers(const ScanHelpers&) = delete;
  ScanHelpers& operator=(const ScanHelpers&) = delete;

 private:
  explicit ScanHelpers(size_t threads);
  void run();

  Mutex mutex_;
  CondVar wake_;
  std::deque<std::shared_ptr<Job>> queue_ GUARDED_BY(mutex_);
  bool stopping_ GUARDED_BY(mutex_) = false;
  std::vector<std::thread> threads_;  // set in the constructor, read-only after
};

}  // namespace memq
