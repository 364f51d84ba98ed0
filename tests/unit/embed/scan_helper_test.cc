// ScanHelpers: every job is claimed once, by a helper or by its owner, and an owner never waits for a job no helper
// has started.
#include "daemon/embed/scan_helper.h"

#include <gtest/gtest.h>

#include <algorithm>
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

TEST(ScanHelpersTest, ASubmittedJobRunsOnAnotherThreadAndWaitReturnsOnceItIsDone) {
  std::atomic<bool> started{false};
  std::atomic<bool> release{false};
  std::thread::id ranOn;
  bool finished = false;
  auto job = std::make_shared<ScanHelpers::Job>([&] {
    ranOn = std::this_thread::get_id();
    started = true;
    while (!release.load()) std::this_thread::yield();
    finished = true;
  });
  ASSERT_TRUE(ScanHelpers::instance().submit(job));
  ASSERT_TRUE(eventually(started));
  EXPECT_FALSE(job->cancel()) << "a started job cannot be cancelled";
  release = true;
  job->wait();
  EXPECT_TRUE(finished);  // wait() returned after the job's work, and its writes are visible
  EXPECT_NE(ranOn, std::this_thread::get_id());
}

TEST(ScanHelpersTest, AJobCancelledBeforeAnyHelperStartedItNeverRuns) {
  // Every helper is kept busy, so the job below waits in the queue until it is cancelled.
  std::atomic<bool> release{false};
  std::atomic<int> busy{0};
  std::vector<std::shared_ptr<ScanHelpers::Job>> blockers;
  std::atomic<bool> allBusy{false};
  const unsigned helpers = std::clamp(std::thread::hardware_concurrency(), 2u, 5u) - 1;
  for (unsigned i = 0; i < helpers; ++i) {
    blockers.push_back(std::make_shared<ScanHelpers::Job>([&] {
      if (++busy == static_cast<int>(helpers)) allBusy = true;
      while (!release.load()) std::this_thread::yield();
    }));
    ASSERT_TRUE(ScanHelpers::instance().submit(blockers.back()));
  }
  ASSERT_TRUE(eventually(allBusy));

  std::atomic<bool> ran{false};
  auto job = std::make_shared<ScanHelpers::Job>([&] { ran = true; });
  ASSERT_TRUE(ScanHelpers::instance().submit(job));
  EXPECT_TRUE(job->cancel());
  EXPECT_TRUE(job->cancel()) << "cancelling twice still says it never ran";
  job->wait();  // returns at once: nothing to wait for

  release = true;
  for (auto& b : blockers) {
    EXPECT_FALSE(b->cancel());
    b->wait();
  }
  // The helpers have moved past the cancelled job by now: a job submitted after it runs.
  std::atomic<bool> later{false};
  auto after = std::make_shared<ScanHelpers::Job>([&] { later = true; });
  ASSERT_TRUE(ScanHelpers::instance().submit(after));
  ASSERT_TRUE(eventually(later));
  after->wait();
  EXPECT_FALSE(ran.load());
}

}  // namespace
}  // namespace memq
