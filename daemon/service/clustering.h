// Review clusters (review/clusters): the memories of one scope that similar edges of at least a weight join into one
// connected group — candidates to merge or supersede. A union-find over the store's similar edges.
// Thread-safety: the caller holds the scope's lock.
#pragma once

#include <vector>

#include "daemon/service/scope_registry.h"
#include "daemon/service/service_types.h"

namespace memq {

// Every group of two or more memories of `scope` joined by edges of weight >= minWeight, in the order of their
// root ids; each group's memories in id order.
Result<std::vector<ReviewCluster>> findReviewClusters(Scope& scope, double minWeight) REQUIRES(scope.db->mutex);

}  // namespace memq
