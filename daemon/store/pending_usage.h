// PendingUsage: the usage feedback (use_count + n, last_used_at) recorded by recall and not yet written to the
// database. Recall marks the memories it returned as used; writing that on the reply path cost a commit per recall,
// so the store keeps the increments here and writes them in one transaction later (MemoryStore::flushUsage: on the
// housekeeping tick, before any other write, before reads that sort or export by use, and at a clean close). Every
// read that answers use_count or last_used_at from the database adds what is pending here, so callers never see the
// lag. A crash loses at most the increments since the last flush: usage is telemetry, never journalled.
//
// Thread-safety: not thread-safe; used only by the store's owner thread (as RecallMirror is).
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "daemon/model/memory.h"

namespace memq {

class PendingUsage {
 public:
  struct Use {
    int64_t count = 0;
    std::string lastUsedAt;  // the latest use, ISO 8601 UTC (the store's clock)
  };

  // One use of each pk at `at` (a pk listed twice counts twice).
  void add(const std::vector<int64_t>& pks, const std::string& at) {
    for (int64_t pk : pks) {
      Use& use = uses_[pk];
      ++use.count;
      if (use.lastUsedAt < at) use.lastUsedAt = at;
    }
  }

  // What is pending for `pk`, or null.
  const Use* find(int64_t pk) const {
    auto it = uses_.find(pk);
    return it == uses_.end() ? nullptr : &it->second;
  }

  // The figures a database read gave for row `pk`, with what is pending added.
  void overlay(int64_t pk, int64_t& useCount, std::string& lastUsedAt) const {
    const Use* use = find(pk);
    if (use == nullptr) return;
    useCount += use->count;
    if (lastUsedAt < use->lastUsedAt) lastUsedAt = use->lastUsedAt;
  }
  void overlay(Memory& m) const { overlay(m.pk, m.useCount, m.lastUsedAt); }

  bool empty() const { return uses_.empty(); }
  size_t size() const { return uses_.size(); }
  const std::unordered_map<int64_t, Use>& uses() const { return uses_; }
  void clear() { uses_.clear(); }

 private:
  std::unordered_map<int64_t, Use> uses_;
};

}  // namespace memq
