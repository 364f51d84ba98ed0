// memqd's allocator settings and huge pages for its heap (see process_memory.h).
#include "daemon/server/process_memory.h"

#include <malloc.h>
#include <sys/auxv.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <optional>
#include <string>
#include <string_view>
#include <thread>

namespace memq {

namespace {

constexpr std::string_view kHugetlbTunable = "glibc.malloc.hugetlb";
// Set for the image memqd executes, and removed by it: whatever becomes of GLIBC_TUNABLES on the way (a secure
// process drops it), memqd executes itself at most once.
constexpr const char* kReexecutedMarker = "MEMQD_HEAP_REEXECUTED";

// The kernel's transparent huge page mode: "always", "madvise" or "never" (also when it cannot be read).
std::string kernelHugePageMode() {
  std::ifstream in("/sys/kernel/mm/transparent_hugepage/enabled");
  std::string line;
  std::getline(in, line);
  for (const char* mode : {"always", "madvise"}) {
    if (line.find(std::string("[") + mode + "]") != std::string::npos) return mode;
  }
  return "never";
}

// glibc's allocator is the process's, and knows glibc.malloc.hugetlb (glibc 2.35 and later).
constexpr bool glibcAllocatorHasHugetlb() {
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  return false;
#elif defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 35))
  return true;
#else
  return false;
#endif
}

// The value GLIBC_TUNABLES (`name=value` items separated by ':') gives glibc.malloc.hugetlb; nullopt when it does not
// name it.
std::optional<std::string> hugetlbSetting(const char* tunables) {
  if (tunables == nullptr) return std::nullopt;
  std::string_view rest(tunables);
  std::optional<std::string> value;
  while (!rest.empty()) {
    const size_t end = rest.find(':');
    const std::string_view item = rest.substr(0, end);
    if (item.size() > kHugetlbTunable.size() && item.substr(0, kHugetlbTunable.size()) == kHugetlbTunable &&
        item[kHugetlbTunable.size()] == '=') {
      value = std::string(item.substr(kHugetlbTunable.size() + 1));  // the last one wins, as in glibc
    }
    if (end == std::string_view::npos) break;
    rest.remove_prefix(end + 1);
  }
  return value;
}

}  // namespace

void reexecWithHugePageHeap(char** argv) {
  if (std::getenv(kReexecutedMarker) != nullptr) {
    ::unsetenv(kReexecutedMarker);  // not passed on to anything memqd starts
    return;
  }
  if (!glibcAllocatorHasHugetlb() || ::getauxval(AT_SECURE) != 0) return;
  const char* tunables = std::getenv("GLIBC_TUNABLES");
  if (hugetlbSetting(tunables) || kernelHugePageMode() != "madvise") return;  // the user decided, or nothing to ask
  const std::string before = tunables != nullptr ? tunables : "";
  const std::string with = (before.empty() ? "" : before + ":") + std::string(kHugetlbTunable) + "=1";
  // Executed by the path /proc/self/exe resolves to, not through the link itself: the kernel names a process after
  // the file name it executes, and `pgrep -x memqd` must still find it. A binary replaced since it started resolves
  // to "... (deleted)" and fails to execute.
  char self[4096];
  const ssize_t length = ::readlink("/proc/self/exe", self, sizeof(self));
  if (length <= 0 || static_cast<size_t>(length) >= sizeof(self)) return;  // none, or cut short
  self[length] = '\0';
  if (::setenv("GLIBC_TUNABLES", with.c_str(), 1) != 0 || ::setenv(kReexecutedMarker, "1", 1) != 0) return;
  ::execv(self, argv);
  // Not re-executed: run as started, with the environment as it was.
  ::unsetenv(kReexecutedMarker);
  if (tunables != nullptr) {
    ::setenv("GLIBC_TUNABLES", before.c_str(), 1);
  } else {
    ::unsetenv("GLIBC_TUNABLES");
  }
}

bool heapUsesHugePages() {
  static const bool huge = [] {
    const std::string mode = kernelHugePageMode();
    return mode == "always" || (mode == "madvise" && glibcAllocatorHasHugetlb() &&
                                hugetlbSetting(std::getenv("GLIBC_TUNABLES")) == "1");
  }();
  return huge;
}

void tuneAllocator() {
  // Each worker thread allocates from its own glibc arena. With the default, adaptive trim threshold, what a recall
  // frees at the top of its arena goes back to the kernel, and the next request faults the same pages in again
  // (sysmalloc and page faults were ~15% of memqd's samples under a recall load). Keeping up to 32 MiB free per
  // arena took ~1.5 ms of memqd CPU off each recall at 1k memories (memq_bench_daemon, docs/performance.md).
  ::mallopt(M_TRIM_THRESHOLD, 32 << 20);
  // And one arena per core instead of glibc's eight: every thread memqd starts (workers, the applier, a recall's scan
  // helper) would otherwise take an arena of its own, each keeping up to the threshold above free. No more threads
  // than cores run at once, so they seldom wait for each other's arena. memqd's peak RSS at 100k memories swings by
  // tens of MiB from run to run; with the limit its runs came out lower (docs/performance.md, host D).
  ::mallopt(M_ARENA_MAX, static_cast<int>(std::max(2u, std::thread::hardware_concurrency())));
}

}  // namespace memq
