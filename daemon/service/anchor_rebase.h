// Re-basing line anchors to HEAD (docs/anchors.md, "Re-basing to HEAD"): when a project's HEAD moves, the diff of
// every active anchor's version to HEAD's version of its file is computed off the request path and pinned in the
// scope's LineCarrier, so that a recall carries each anchor through that held diff and one diff of HEAD's file to
// the work tree (shared by every anchor on the file) instead of one diff per anchor.
// Thread-safety: one re-base of a scope runs at a time (it holds its carrier's PinningClaim); another asked meanwhile
// returns at once without running, so that re-bases scheduled while a long one runs never pile up on the workers.
// It takes the scope database's lock only to read the anchors; the diffs are computed without it.
#pragma once

#include <cstddef>
#include <string>

#include "daemon/service/scope_registry.h"

namespace memq {

struct AnchorRebase {
  // HEAD had moved since the last re-base (or it was forced): the pinned set was made again.
  bool ran = false;
  bool alreadyRunning = false;  // another re-base of the scope was running: this one did nothing
  std::string head;  // the HEAD the set is for ("" without a repository or a commit, or when alreadyRunning)
  // Active anchored refs read: those in a version memq does not keep (one it keeps is not re-based).
  size_t anchors = 0;
  size_t pinned = 0;    // diffs held now (anchors whose version is HEAD's, or whose file HEAD lacks, need none)
  size_t computed = 0;  // of them, computed by this run (the rest were held already)
  double elapsedMs = 0;
};

// Re-bases the anchors of `scope` (a project scope with a repository) to HEAD if HEAD moved since the last time,
// unless another re-base of it is running (then alreadyRunning, and nothing else is done).
AnchorRebase rebaseAnchorsToHead(Scope& scope, bool force = false);

}  // namespace memq
