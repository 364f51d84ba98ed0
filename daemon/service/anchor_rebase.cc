// Re-basing line anchors to HEAD; see anchor_rebase.h.
#include "daemon/service/anchor_rebase.h"

#include <spdlog/spdlog.h>

#include <chrono>
#include <utility>
#include <vector>

namespace memq {

AnchorRebase rebaseAnchorsToHead(Scope& scope, bool force) {
  AnchorRebase out;
  if (scope.kind != ScopeKind::kProject || !scope.carrier || !scope.db) return out;
  LineCarrier& carrier = *scope.carrier;
  // Held to the end: a second re-base would read the anchors and diff every pair this one is diffing, since the set
  // and its tag are stored only when this one is done, and both would hold workers that serve requests meanwhile.
  const LineCarrier::PinningClaim claim = carrier.claimPinning();
  if (!claim) {
    out.alreadyRunning = true;
    return out;
  }
  out.head = carrier.head();
  if (out.head.empty() || (!force && carrier.pinnedTag() == out.head)) return out;
  const auto start = std::chrono::steady_clock::now();
  Result<std::vector<AnchoredRef>> refs = std::vector<AnchoredRef>{};
  {
    CommittedLock lock(*scope.db);
    // Anchors in a version memq keeps are not re-based (a recall carries them by one diff, recall_lines.cc), so
    // neither they nor their content are read here.
    refs = scope.db->store().activeAnchoredRefsOutsideKeptVersions();
  }
  if (!refs) {
    spdlog::warn("memq: anchors of {} not re-based: {}", scope.location.root, refs.status().message());
    return out;
  }
  out.ran = true;
  out.anchors = refs->size();
  const std::string& prefix = scope.location.repoPrefix;
  std::vector<std::pair<FileVersion, FileVersion>> pairs;
  for (const AnchoredRef& ref : *refs) {
    auto atHead = carrier.blobAtHead(prefix.empty() ? ref.path : prefix + "/" + ref.path);
    if (!atHead || *atHead == ref.anchor.blob) continue;  // nothing to hold: the file is gone, or that version
    pairs.emplace_back(FileVersion::blob(ref.anchor.blob), FileVersion::blob(*atHead));
  }
  out.computed = carrier.pin(pairs, out.head);
  out.pinned = carrier.pinnedCount();
  out.elapsedMs = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  spdlog::debug("memq: {} anchors of {} re-based to {}: {} diffs held, {} computed in {:.1f} ms", out.anchors,
                scope.location.root, out.head, out.pinned, out.computed, out.elapsedMs);
  return out;
}

}  // namespace memq
