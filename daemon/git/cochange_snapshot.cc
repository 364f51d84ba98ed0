// Neighbour table construction and lookup; see cochange_snapshot.h.
#include "daemon/git/cochange_snapshot.h"

#include <algorithm>
#include <cmath>

namespace memq {

std::shared_ptr<const CoChangeSnapshot> CoChangeSnapshot::empty(std::string head) {
  auto snap = std::make_shared<CoChangeSnapshot>();
  snap->head_ = std::move(head);
  return snap;
}

std::shared_ptr<const CoChangeSnapshot> CoChangeSnapshot::build(
    const CoChangeCounts& counts, const std::string& repoPrefix, int minCount,
    const std::function<bool(const std::string&)>& keep) {
  auto snap = std::make_shared<CoChangeSnapshot>();
  snap->head_ = counts.head;
  const std::string prefix = repoPrefix.empty() ? "" : repoPrefix + "/";

  // Per file id: its index in the snapshot, or -1 (outside the root, gone at HEAD), or -2 (not decided yet).
  // Deciding lazily means `keep` runs only for files that take part in some strong-enough pair.
  std::vector<int64_t> local(counts.idCount(), -2);
  auto localId = [&](uint32_t id) -> int64_t {
    int64_t& slot = local[id];
    if (slot != -2) return slot;
    slot = -1;
    const std::string& repoPath = counts.path(id);
    if (repoPath.size() <= prefix.size() || repoPath.compare(0, prefix.size(), prefix) != 0) return slot;
    if (keep && !keep(repoPath)) return slot;
    slot = static_cast<int64_t>(snap->paths_.size());
    snap->paths_.push_back(repoPath.substr(prefix.size()));
    snap->adjacency_.emplace_back();
    return slot;
  };

  for (const auto& [key, count] : counts.pairs()) {
    if (count < minCount) continue;
    const uint32_t a = CoChangeCounts::pairFirst(key);
    const uint32_t b = CoChangeCounts::pairSecond(key);
    const int64_t la = localId(a);
    if (la < 0) continue;
    const int64_t lb = localId(b);
    if (lb < 0) continue;
    const double denom = std::sqrt(static_cast<double>(counts.changes(a)) * counts.changes(b));
    // count <= min(changes) always holds, so strength is in (0, 1]; the clamp guards a corrupted cache.
    const double strength = denom > 0 ? std::min(1.0, count / denom) : 0.0;
    snap->adjacency_[la].push_back({static_cast<uint32_t>(lb), count, strength});
    snap->adjacency_[lb].push_back({static_cast<uint32_t>(la), count, strength});
    ++snap->pairCount_;
  }

  snap->index_.reserve(snap->paths_.size());
  for (uint32_t i = 0; i < snap->paths_.size(); ++i) snap->index_.emplace(snap->paths_[i], i);
  const auto& paths = snap->paths_;
  for (auto& edges : snap->adjacency_) {
    std::sort(edges.begin(), edges.end(), [&paths](const Edge& x, const Edge& y) {
      if (x.strength != y.strength) return x.strength > y.strength;
      if (x.count != y.count) return x.count > y.count;
      return paths[x.partner] < paths[y.partner];
    });
  }
  return snap;
}

std::vector<CoChangeNeighbor> CoChangeSnapshot::neighbors(const std::string& path, size_t limit) const {
  std::vector<CoChangeNeighbor> out;
  auto it = index_.find(path);
  if (it == index_.end()) return out;
  const auto& edges = adjacency_[it->second];
  const size_t n = std::min(limit, edges.size());
  out.reserve(n);
  for (size_t i = 0; i < n; ++i) out.push_back({paths_[edges[i].partner], edges[i].count, edges[i].strength});
  return out;
}

}  // namespace memq
