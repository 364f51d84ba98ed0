// ScanHelpers: every job is claimed once, by a helper or by its owner; an owner waits only for a job a helper has
// started, and then until that job is done; a helper runs off the submitting thread's core.
#include "daemon/embed/scan_helper.h"

#include <gtest/gtest.h>
#include <pthread.h>
#include <sched.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <thread>
#include <vector>

namespace memq {
namespace {

using namespace std::chrono_literals;

// Spins until `flag` is set, for at most 10 s (a helper that never comes fails the test instead of hanging it).
bool eventually(const std::atomic<bool>& flag) {
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  while (!flag.load()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(100us);
  }
  return true;
}

// What the jobs below share with the test. Held by the jobs too, so a job a failed assertion leaves running never
// reads a test's freed locals; `release` is set when the test ends, whichever way, so no helper spins on.
struct Shared {
  std::atomic<bool> release{false};
  std::atomic<bool> started{false};
  std::atomic<bool> finished{false};
  std::atomic<std::thread::id> ranOn{};
  std::atomic<unsigned> busy{0};
};

struct ReleaseAtEnd {
  std::shared_ptr<Shared> shared;
  ~ReleaseAtEnd() { shared->release = true; }
};

TEST(ScanHelpersTest, AnOwnerWaitsForAStartedJobUntilItIsDoneAndItRanOnAHelper) {
  if (ScanHelpers::instance().threads() == 0) GTEST_SKIP() << "one core allowed: no helper is started";
  auto shared = std::make_shared<Shared>();
  ReleaseAtEnd releaseAtEnd{shared};
  auto job = std::make_shared<ScanHelpers::Job>([shared] {
    shared->ranOn = std::this_thread::get_id();
    shared->started = true;
    while (!shared->release.load()) std::this_thread::yield();
    shared->finished = true;
  });
  ASSERT_TRUE(ScanHelpers::instance().submit(job));
  ASSERT_TRUE(eventually(shared->started));
  // Released only later, from another thread: an owner that did not wait would see the job unfinished.
  std::thread releaser([shared] {
    std::this_thread::sleep_for(50ms);
    shared->release = true;
  });
  EXPECT_FALSE(job->takeBackOrWait()) << "a started job cannot be taken back";
  EXPECT_TRUE(shared->finished.load());
  EXPECT_NE(shared->ranOn.load(), std::this_thread::get_id());
  releaser.join();
}

TEST(ScanHelpersTest, AJobTakenBackBeforeAnyHelperStartedItNeverRuns) {
  const size_t helpers = ScanHelpers::instance().threads();
  if (helpers == 0) GTEST_SKIP() << "one core allowed: no helper is started";
  auto shared = std::make_shared<Shared>();
  ReleaseAtEnd releaseAtEnd{shared};
  // Every helper is kept busy, so the job below waits in the queue until it is taken back.
  auto blocker = [shared] {
    ++shared->busy;
    while (!shared->release.load()) std::this_thread::yield();
  };
  std::vector<std::shared_ptr<ScanHelpers::Job>> blockers;
  for (size_t i = 0; i < helpers; ++i) {
    blockers.push_back(std::make_shared<ScanHelpers::Job>(blocker));
    ASSERT_TRUE(ScanHelpers::instance().submit(blockers.back()));
  }
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  while (shared->busy.load() < helpers && std::chrono::steady_clock::now() < deadline) std::this_thread::yield();
  ASSERT_EQ(shared->busy.load(), helpers);

  auto ran = std::make_shared<std::atomic<bool>>(false);
  auto job = std::make_shared<ScanHelpers::Job>([ran] { *ran = true; });
  ASSERT_TRUE(ScanHelpers::instance().submit(job));
  EXPECT_TRUE(job->takeBackOrWait());
  EXPECT_TRUE(job->takeBackOrWait()) << "taking it back twice still says it never ran";

  // Queued after the taken-back job: once every helper is inside one of these at the same time, each has popped
  // and passed over everything queued before, so a helper that ran taken-back jobs would have set `ran` by now.
  shared->release = true;
  for (auto& b : blockers) EXPECT_FALSE(b->takeBackOrWait());
  auto gate = std::make_shared<Shared>();
  ReleaseAtEnd gateAtEnd{gate};
  std::vector<std::shared_ptr<ScanHelpers::Job>> barrier;
  for (size_t i = 0; i < helpers; ++i) {
    barrier.push_back(std::make_shared<ScanHelpers::Job>([gate] {
      ++gate->busy;
      while (!gate->release.load()) std::this_thread::yield();
    }));
    ASSERT_TRUE(ScanHelpers::instance().submit(barrier.back()));
  }
  const auto barrierDeadline = std::chrono::steady_clock::now() + 10s;
  while (gate->busy.load() < helpers && std::chrono::steady_clock::now() < barrierDeadline) std::this_thread::yield();
  ASSERT_EQ(gate->busy.load(), helpers);
  EXPECT_FALSE(ran->load());
  gate->release = true;
  for (auto& b : barrier) EXPECT_FALSE(b->takeBackOrWait());
}

TEST(ScanHelpersTest, AHelperRunsOffTheCoreOfTheThreadThatSubmittedItsJob) {
  cpu_set_t allowed;
  CPU_ZERO(&allowed);
  ASSERT_EQ(::sched_getaffinity(0, sizeof allowed, &allowed), 0);
  if (CPU_COUNT(&allowed) < 2) GTEST_SKIP() << "one core allowed: nowhere else for a helper to run";
  // From a thread pinned to each allowed core in turn, so the helpers must move every time (to and fro on two).
  for (int round = 0; round < 2; ++round) {
    for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
      if (!CPU_ISSET(cpu, &allowed)) continue;
      std::atomic<int> ranOnCpu{-1};
      std::atomic<bool> mayRunOnSubmitters{true};
      std::thread submitter([&] {
        cpu_set_t one;
        CPU_ZERO(&one);
        CPU_SET(cpu, &one);
        ASSERT_EQ(::pthread_setaffinity_np(::pthread_self(), sizeof one, &one), 0);
        ASSERT_EQ(::sched_getcpu(), cpu);
        auto job = std::make_shared<ScanHelpers::Job>([&] {
          cpu_set_t mine;
          CPU_ZERO(&mine);
          ::sched_getaffinity(0, sizeof mine, &mine);
          mayRunOnSubmitters = CPU_ISSET(cpu, &mine);
          ranOnCpu = ::sched_getcpu();
        });
        ASSERT_TRUE(ScanHelpers::instance().submit(job));
        // Waited for, not taken back: a job taken back ran nowhere.
        const auto deadline = std::chrono::steady_clock::now() + 10s;
        while (ranOnCpu.load() < 0 && std::chrono::steady_clock::now() < deadline) std::this_thread::sleep_for(100us);
        ASSERT_FALSE(job->takeBackOrWait()) << "no helper took the job";
      });
      submitter.join();
      EXPECT_FALSE(mayRunOnSubmitters.load()) << "a helper may still run on core " << cpu << ", the submitter's";
      EXPECT_NE(ranOnCpu.load(), cpu);
      EXPECT_GE(ranOnCpu.load(), 0);
    }
  }
}

}  // namespace
}  // namespace memq
