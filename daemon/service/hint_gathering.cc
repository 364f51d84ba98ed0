// Hint candidates from the stores; see hint_gathering.h.
#include "daemon/service/hint_gathering.h"

#include <unordered_map>
#include <unordered_set>
#include <utility>

#include "daemon/recall/fts_query.h"
#include "daemon/service/recall_lines.h"

namespace memq {

namespace {

// How many memories attached to the tool's files, of the `git` topic, and of text matches each scope offers.
constexpr int kMaxFileMatches = 100;
constexpr int kMaxGitTopic = 20;
constexpr int kMaxTextMatches = 5;

// The line signals of `memories` (rows of the project scope whose `store` and `location` are given, attached
// to the tool's files) against the tool's `lines`, by pk: the very function recall ranks with, so hints and recall
// agree on which memory is about the lines. The caller holds the scope's lock.
Result<std::unordered_map<int64_t, Signals>> lineSignalsOf(MemoryStore& store, LineCarrier& carrier,
                                                           const ProjectLocation& location,
                                                           const std::vector<PathLines>& lines,
                                                           const std::vector<Memory>& memories) {
  std::vector<Candidate> candidates;
  for (const auto& m : memories) {
    if (m.state == MemoryState::kActive) candidates.push_back({m.pk, m.scope, {}, 0});
  }
  WorkTreeVersions workTree(location.root, location.repoPrefix);
  MEMQ_RETURN_IF_ERROR(addLineSignals(store, carrier, workTree, lines, candidates));
  std::unordered_map<int64_t, Signals> out;
  for (auto& c : candidates) out.emplace(c.pk, std::move(c.signals));
  return out;
}

}  // namespace

Result<std::vector<HintCandidate>> gatherHintCandidates(const std::vector<std::shared_ptr<Scope>>& scopes,
                                                        const std::vector<std::string>& files,
                                                        const std::vector<PathLines>& lines, HintContext context,
                                                        const std::string& query) {
  std::vector<HintCandidate> candidates;
  std::unordered_set<std::string> seen;
  auto add = [&](const Memory& m, bool direct, const Signals* byLines = nullptr) {
    if (m.state != MemoryState::kActive || !seen.insert(m.id).second) return;
    HintCandidate c;
    c.id = m.id;
    c.summary = m.summary;
    c.category = m.category;
    c.pinned = m.pinned;
    c.directFile = direct;
    if (byLines != nullptr) {
      c.lineOverlap = byLines->lineOverlap;
      c.linesOwned = byLines->linesOwned;
      c.linesOriginated = byLines->linesOriginated;
      c.lineDistance = byLines->lineDistance;
    }
    candidates.push_back(std::move(c));
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
      std::unordered_map<int64_t, Signals> byLines;
      if (scope->kind == ScopeKind::kProject && scope->carrier && !lines.empty()) {
        auto signals = lineSignalsOf(store, *scope->carrier, scope->location, lines, *ms);
        if (!signals) return signals.status();
        byLines = std::move(*signals);
      }
      for (const auto& m : *ms) {
        auto it = byLines.find(m.pk);
        add(m, true, it == byLines.end() ? nullptr : &it->second);
      }
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
