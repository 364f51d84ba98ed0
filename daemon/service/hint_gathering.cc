// Hint candidates from the stores; see hint_gathering.h.
#include "daemon/service/hint_gathering.h"

#include <unordered_set>

#include "daemon/recall/fts_query.h"

namespace memq {

namespace {

// How many memories attached to the tool's files, of the `git` topic, and of text matches each scope offers.
constexpr int kMaxFileMatches = 100;
constexpr int kMaxGitTopic = 20;
constexpr int kMaxTextMatches = 5;

}  // namespace

Result<std::vector<HintCandidate>> gatherHintCandidates(const std::vector<std::shared_ptr<Scope>>& scopes,
                                                        const std::vector<std::string>& files, HintContext context,
                                                        const std::string& query) {
  std::vector<HintCandidate> candidates;
  std::unordered_set<std::string> seen;
  auto add = [&](const Memory& m, bool direct) {
    if (m.state != MemoryState::kActive || !seen.insert(m.id).second) return;
    candidates.push_back({m.id, m.summary, m.category, m.pinned, direct});
  };
  for (const auto& scope : scopes) {
    CommittedLock lock(*scope->db);
    MemoryStore& store = scope->db->store();
    if (!files.empty()) {
      auto hits = store.findByPaths(files, kMaxFileMatches);
      if (!hits) return hits.status();
      std::vector<int64_t> pks;
      for (const auto& h : *hits) pks.push_back(h.pk);
      auto ms = store.loadMany(pks);
      if (!ms) return ms.status();
      for (const auto& m : *ms) add(m, true);
    }
    if (context == HintContext::kDiff || context == HintContext::kCommit) {
      ListFilter f;
      f.topic = "git";
      f.limit = kMaxGitTopic;
      auto l = store.list(f);
      if (l) {
        for (const auto& m : l->memories) add(m, false);
      }
    }
    if (!query.empty()) {
      // A relevance floor: only strong text matches become hints (bm25 within half of the best hit).
      auto hits = store.searchFts(FtsLane::kUnicode, unicodeMatch(query), kMaxTextMatches);
      if (!hits) return hits.status();
      double best = hits->empty() ? 0 : hits->front().bm25;
      std::vector<int64_t> pks;
      for (const auto& h : *hits) {
        if (best < 0 && h.bm25 <= 0.5 * best) pks.push_back(h.pk);
      }
      auto ms = store.loadMany(pks);
      if (!ms) return ms.status();
      for (const auto& m : *ms) add(m, false);
    }
  }
  return candidates;
}

}  // namespace memq
