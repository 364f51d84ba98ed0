// Re-basing line anchors to HEAD (docs/anchors.md, "Re-basing to HEAD"): when a project's HEAD moves, the diff of
// every active anchor's version to HEAD's version of its file is computed off the request path and pinned in the
// scope's LineCarrier, so that a recall carries each anchor through that held diff and one diff of HEAD's file to
// the work tree (shared by every anchor on the file) instead of one diff per anchor.
// Thread-safety: takes the scope database's lock only to read the anchors; the diffs are computed without it.
#pragma once

#include <cstddef>
#include <string>

#include "daemon/service/scope_registry.h"

namespace memq {

struct AnchorRebase {
  bool ran = false;      // HEAD had moved since the last re-base (or it was forced): the pinned set was made again
  std::string head;      // the HEAD the set is for ("" without a repository or a commit)
  size_t anchors = 0;    // active anchored refs read
  size_t pinned = 0;     // diffs held now (anchors whose version is HEAD's, or whose file HEAD lacks, need none)
  size_t computed = 0;   // of them, computed by this run (the rest were held already)
  double elapsedMs = 0;
};

// Re-bases the anchors of `scope` (a project scope with a repository) to HEAD if HEAD moved since the last time.
AnchorRebase rebaseAnchorsToHead(Scope& scope, bool force = false);

}  // namespace memq
