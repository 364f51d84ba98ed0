// Review clusters; see clustering.h.
#include "daemon/service/clustering.h"

#include <algorithm>
#include <map>
#include <string>
#include <unordered_map>

namespace memq {

Result<std::vector<ReviewCluster>> findReviewClusters(Scope& scope, double minWeight) {
  auto edges = scope.db->store().similarEdges(minWeight);
  if (!edges) return edges.status();
  // Union-find over strong similar edges: each component is one cluster to review. Iterative, with union by size:
  // one memory similar to thousands of others must not make a chain as deep as they are many (a recursive find
  // would then run out of stack).
  std::unordered_map<std::string, std::string> parent;
  std::unordered_map<std::string, size_t> size;
  auto find = [&](const std::string& x) -> std::string {
    std::string root = x;
    for (auto it = parent.find(root); it != parent.end() && it->second != root; it = parent.find(root)) {
      root = it->second;
    }
    if (!parent.count(root)) {
      parent[root] = root;
      size[root] = 1;
    }
    for (std::string at = x; at != root;) {  // path compression
      std::string next = parent[at];
      parent[at] = root;
      at = std::move(next);
    }
    return root;
  };
  for (const auto& [a, b, w] : *edges) {
    std::string ra = find(a), rb = find(b);
    if (ra == rb) continue;
    if (size[ra] > size[rb]) std::swap(ra, rb);
    parent[ra] = rb;
    size[rb] += size[ra];
  }
  std::map<std::string, std::vector<std::string>> groups;
  for (const auto& [id, p] : parent) groups[find(id)].push_back(id);
  std::unordered_map<std::string, double> maxWeight;
  for (const auto& [a, b, w] : *edges) {
    auto& m = maxWeight[find(a)];
    m = std::max(m, w);
  }
  // Clusters in the order of their first id, each one's ids in order: an answer that does not depend on which member
  // the union made the root.
  std::vector<std::pair<std::vector<std::string>, std::string>> byFirstId;
  for (auto& [rootId, ids] : groups) {
    if (ids.size() < 2) continue;
    std::sort(ids.begin(), ids.end());
    byFirstId.emplace_back(std::move(ids), rootId);
  }
  std::sort(byFirstId.begin(), byFirstId.end());
  std::vector<ReviewCluster> clusters;
  for (const auto& [ids, rootId] : byFirstId) {
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
