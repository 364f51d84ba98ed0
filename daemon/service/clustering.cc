// Review clusters; see clustering.h.
#include "daemon/service/clustering.h"

#include <algorithm>
#include <functional>
#include <map>
#include <string>
#include <unordered_map>

namespace memq {

Result<std::vector<ReviewCluster>> findReviewClusters(Scope& scope, double minWeight) {
  auto edges = scope.db->store().similarEdges(minWeight);
  if (!edges) return edges.status();
  // Union-find over strong similar edges: each component is one cluster to review.
  std::unordered_map<std::string, std::string> parent;
  std::function<std::string(const std::string&)> find = [&](const std::string& x) -> std::string {
    auto it = parent.find(x);
    if (it == parent.end() || it->second == x) return parent[x] = x;
    return it->second = find(it->second);
  };
  for (const auto& [a, b, w] : *edges) parent[find(a)] = find(b);
  std::map<std::string, std::vector<std::string>> groups;
  for (const auto& [id, p] : parent) groups[find(id)].push_back(id);
  std::unordered_map<std::string, double> maxWeight;
  for (const auto& [a, b, w] : *edges) {
    auto& m = maxWeight[find(a)];
    m = std::max(m, w);
  }
  std::vector<ReviewCluster> clusters;
  for (auto& [rootId, ids] : groups) {
    if (ids.size() < 2) continue;
    std::sort(ids.begin(), ids.end());
    ReviewCluster cluster{scope.kind, maxWeight[rootId], {}};
    for (const auto& id : ids) {
      auto m = scope.db->store().get(id);
      if (m) cluster.memories.push_back(std::move(*m));
    }
    clusters.push_back(std::move(cluster));
  }
  return clusters;
}

}  // namespace memq
