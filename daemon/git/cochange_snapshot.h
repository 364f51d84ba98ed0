// CoChangeSnapshot: the read side of the co-change graph. An immutable neighbour table over project-root-relative
// paths, built from CoChangeCounts after each refresh, so a lookup is a hash probe plus a copy of the first k
// entries of an already sorted list (sub-microsecond to a few microseconds), never a query.
// Thread-safety: immutable once built; shared between threads through std::shared_ptr<const CoChangeSnapshot>.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "daemon/git/cochange_counts.h"
#include "daemon/recall/repo_signals.h"

namespace memq {

class CoChangeSnapshot {
 public:
  // Keeps pairs with count >= minCount whose two paths are both inside the project root (repoPrefix "" = the
  // whole repository) and both accepted by `keep` (given the repository-relative path; used to drop files
  // that no longer exist at HEAD). strength = count / sqrt(changes(a) * changes(b)).
  static std::shared_ptr<const CoChangeSnapshot> build(const CoChangeCounts& counts, const std::string& repoPrefix,
                                                       int minCount,
                                                       const std::function<bool(const std::string&)>& keep);
  static std::shared_ptr<const CoChangeSnapshot> empty(std::string head = "");

  // Best first: strength descending, then count descending, then path ascending. `path` is root-relative.
  std::vector<CoChangeNeighbor> neighbors(const std::string& path, size_t limit) const;

  const std::string& head() const { return head_; }
  size_t pairCount() const { return pairCount_; }

 private:
  struct Edge {
    uint32_t partner;
    int count;
    double strength;
  };
  std::string head_;
  size_t pairCount_ = 0;
  std::vector<std::string> paths_;  // root-relative
  std::unordered_map<std::string, uint32_t> index_;
  std::vector<std::vector<Edge>> adjacency_;
};

}  // namespace memq
