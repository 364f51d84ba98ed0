// memqd's allocator settings and huge pages for its heap (see process_memory.h).
#include "daemon/server/process_memory.h"

#include <malloc.h>
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

// The kernel's transparent huge page mode allows a process to ask for them (madvise, which glibc does with
// glibc.malloc.hugetlb=1) or gives them unasked (always).
bool kernelOffersHugePages() {
  std::ifstream in("/sys/kernel/mm/transparent_hugepage/enabled");
  std::string mode;
  std::getline(in, mode);
  return mode.find("[always]") != std::string::npos || mode.find("[madvise]") != std::string::npos;
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
  const char* tunables = std::getenv("GLIBC_TUNABLES");
  // Already decided (by the user, or by this start's first image), or of no use.
  if (hugetlbSetting(tunables) || !kernelOffersHugePages()) return;
  const std::string before = tunables != nullptr ? tunables : "";
  const std::string with = (before.empty() ? "" : before + ":") + std::string(kHugetlbTunable) + "=1";
  // The binary's own path, not /proc/self/exe: the kernel names a process after the file it executes, and `pgrep
  // memqd` must still find it. A binary replaced since it started reads as "... (deleted)" and fails to execute.
  char self[4096];
  const ssize_t length = ::readlink("/proc/self/exe", self, sizeof(self) - 1);
  if (length <= 0) return;
  self[length] = '\0';
  if (::setenv("GLIBC_TUNABLES", with.c_str(), 1) != 0) return;
  ::execv(self, argv);
  // Not re-executed (no /proc, a binary replaced since): run as started, with the environment as it was.
  if (tunables != nullptr) {
    ::setenv("GLIBC_TUNABLES", before.c_str(), 1);
  } else {
    ::unsetenv("GLIBC_TUNABLES");
  }
}

bool heapUsesHugePages() {
  return hugetlbSetting(std::getenv("GLIBC_TUNABLES")) == "1" && kernelOffersHugePages();
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
