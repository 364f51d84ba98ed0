// The persistent helper threads of vector scans (see scan_helper.h).
#include "daemon/embed/scan_helper.h"

#include <pthread.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <system_error>

#include "daemon/util/cpu_relax.h"

namespace memq {

bool ScanHelpers::Job::takeBackOrWait() {
  int state = kQueued;
  if (state_.compare_exchange_strong(state, kTakenBack, std::memory_order_acq_rel)) return true;
  if (state == kTakenBack) return true;
  // A helper has started it: wait for kDone, whose release store publishes the job's writes. Awake at first: the
  // owner asks once its own share is done, so the helper is at most about a chunk behind, and an owner that slept
  // would leave its core to halt and be woken through the hypervisor on a virtual machine.
  const auto spinUntil = std::chrono::steady_clock::now() + kAwakeWait;
  while (state == kRunning && std::chrono::steady_clock::now() < spinUntil) {
    cpuRelax();
    state = state_.load(std::memory_order_acquire);
  }
  while (state == kRunning) {
    state_.wait(kRunning, std::memory_order_acquire);
    state = state_.load(std::memory_order_acquire);
  }
  return false;
}

ScanHelpers& ScanHelpers::instance() {
  // The cores the process may run on (taskset, a cgroup's cpuset), not the machine's: hardware_concurrency counts
  // every online core.
  static ScanHelpers helpers([] {
    cpu_set_t allowed;
    if (::sched_getaffinity(::getpid(), sizeof allowed, &allowed) != 0) {
      return helpersFor(std::thread::hardware_concurrency());
    }
    return helpersFor(static_cast<size_t>(CPU_COUNT(&allowed)));
  }());
  return helpers;
}

ScanHelpers::ScanHelpers(size_t threads) {
  // The main thread's cores, not the calling thread's: a caller pinned to one core would otherwise leave the helpers
  // nowhere else to go.
  if (::sched_getaffinity(::getpid(), sizeof allowed_, &allowed_) != 0) CPU_ZERO(&allowed_);
  for (size_t i = 0; i < threads; ++i) {
    try {
      threads_.emplace_back([this] { run(); });
    } catch (const std::system_error&) {
      break;  // fewer helpers (or none: submit() then refuses every job)
    }
    ::pthread_setname_np(threads_.back().native_handle(), "memq-scan");
  }
}

ScanHelpers::~ScanHelpers() {
  {
    MutexLock lock(mutex_);
    stopping_ = true;
  }
  wake_.notifyAll();
  for (auto& t : threads_) t.join();
}

bool ScanHelpers::submit(const std::shared_ptr<Job>& job) {
  if (threads_.empty()) {
    job->takeBackOrWait();
    return false;
  }
  {
    MutexLock lock(mutex_);
    keepOffCpu(::sched_getcpu());
    queue_.push_back(job);
  }
  wake_.notifyOne();
  return true;
}

void ScanHelpers::keepOffCpu(int cpu) {
  if (cpu < 0 || cpu == avoidedCpu_ || cpu >= CPU_SETSIZE || !CPU_ISSET(cpu, &allowed_) || CPU_COUNT(&allowed_) < 2) {
    return;
  }
  cpu_set_t others = allowed_;
  CPU_CLR(cpu, &others);
  for (auto& t : threads_) {
    // A refusal (a cpuset changed under the process) leaves that helper where the kernel puts it.
    ::pthread_setaffinity_np(t.native_handle(), sizeof others, &others);
  }
  avoidedCpu_ = cpu;
}

void ScanHelpers::run() {
  for (;;) {
    std::shared_ptr<Job> job;
    {
      MutexLock lock(mutex_);
      while (!stopping_ && queue_.empty()) wake_.wait(mutex_);
      if (queue_.empty()) return;  // stopping, and nothing left that an owner may be waiting for
      job = std::move(queue_.front());
      queue_.pop_front();
    }
    int expected = Job::kQueued;
    if (!job->state_.compare_exchange_strong(expected, Job::kRunning, std::memory_order_acq_rel)) continue;
    job->work_();
    job->state_.store(Job::kDone, std::memory_order_release);
    job->state_.notify_all();
  }
}

}  // namespace memq
