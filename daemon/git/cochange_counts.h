// CoChangeCounts: the raw co-change tallies of one window of history (per-file change counts and per-pair
// co-occurrence counts over repository-relative paths), plus the window itself, so that commits can be added
// and evicted one at a time. Pure data: no git, no SQLite.
// Thread-safety: none; GitRepoSignals owns one instance and touches it only under its refresh mutex.
#pragma once

#include <cstdint>
#include <deque>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

namespace memq {

// One non-merge commit of the window. seq grows with recency; counted = false when the commit was skipped
// (too many files, or its parent is missing in a shallow clone) and so contributes nothing.
struct WindowCommit {
  int64_t seq = 0;
  std::string commit;
  bool counted = false;
};

class CoChangeCounts {
 public:
  // A pair of file ids, smaller first, packed for hashing.
  static uint64_t pairKey(uint32_t a, uint32_t b) {
    if (a > b) std::swap(a, b);
    return (uint64_t{a} << 32) | b;
  }
  static uint32_t pairFirst(uint64_t key) { return static_cast<uint32_t>(key >> 32); }
  static uint32_t pairSecond(uint64_t key) { return static_cast<uint32_t>(key & 0xffffffffu); }

  // Adds (or with remove, takes back) one counted commit's distinct, already-filtered file list.
  void addCommit(const std::vector<std::string>& files) { apply(files, +1); }
  void removeCommit(const std::vector<std::string>& files) { apply(files, -1); }

  // Restoring from the cache: ids are kept as stored so later deltas address the same rows.
  void setFile(uint32_t id, const std::string& path, int changes);
  void setPair(uint32_t a, uint32_t b, int count);

  void clear();

  // Id slots may be empty (a path evicted to zero changes keeps its id, with changes 0).
  size_t idCount() const { return paths_.size(); }
  const std::string& path(uint32_t id) const { return paths_[id]; }
  int changes(uint32_t id) const { return changes_[id]; }
  const std::unordered_map<uint64_t, int>& pairs() const { return pairs_; }
  int pairCount(const std::string& a, const std::string& b) const;

  // What changed since the last clearDirty(), for writing only the delta back to the cache.
  const std::unordered_set<uint32_t>& dirtyFiles() const { return dirtyFiles_; }
  const std::unordered_set<uint64_t>& dirtyPairs() const { return dirtyPairs_; }
  void clearDirty();

  std::deque<WindowCommit> window;  // oldest first
  std::string head;                 // the commit the counts describe; "" when empty

 private:
  void apply(const std::vector<std::string>& files, int delta);
  uint32_t idFor(const std::string& path);

  std::vector<std::string> paths_;
  std::vector<int> changes_;
  std::unordered_map<std::string, uint32_t> ids_;
  std::unordered_map<uint64_t, int> pairs_;  // absent = 0
  std::unordered_set<uint32_t> dirtyFiles_;
  std::unordered_set<uint64_t> dirtyPairs_;
};

}  // namespace memq
