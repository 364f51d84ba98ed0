// Recall lanes, scoring and selection; see recall_engine.h.
#include "daemon/recall/recall_engine.h"

#include <SQLiteCpp/Database.h>
#include <SQLiteCpp/Statement.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <future>
#include <unordered_map>
#include <unordered_set>

#include "daemon/embed/hashbag.h"
#include "daemon/recall/fts_query.h"
#include "daemon/util/clock.h"
#include "daemon/util/utf8.h"

namespace memq {

namespace {

bool blankChar(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v'; }

// One scope's candidates in the order the lanes first named them (ranking's tie order), each with its signals,
// found by pk through an open-addressing index: a recall names a few hundred, and a hash node per candidate cost
// more than some of the lanes.
class CandidateTable {
 public:
  explicit CandidateTable(size_t expected) {
    order_.reserve(expected);
    signals_.reserve(expected);
    size_t capacity = 16;
    while (capacity < expected * 2) capacity *= 2;
    slots_.assign(capacity, 0);
  }
  // The candidate's signals, added (empty) when the pk is new. Valid until the next add.
  Signals& at(int64_t pk) {
    uint32_t& slot = slotOf(pk);
    if (slot != 0) return signals_[slot - 1];
    order_.push_back(pk);
    signals_.emplace_back();
    slot = static_cast<uint32_t>(order_.size());
    if (order_.size() * 2 > slots_.size()) grow();
    return signals_.back();
  }
  // The candidate's signals, or null when no lane named it.
  const Signals* find(int64_t pk) const {
    const uint32_t slot = slots_[probe(pk)];
    return slot == 0 ? nullptr : &signals_[slot - 1];
  }
  const std::vector<int64_t>& order() const { return order_; }
  // Parallel to order().
  std::vector<Signals>& signals() { return signals_; }

 private:
  size_t probe(int64_t pk) const {
    const size_t mask = slots_.size() - 1;
    size_t i = static_cast<size_t>((static_cast<uint64_t>(pk) * 0x9E3779B97F4A7C15ull) >> 32) & mask;
    while (slots_[i] != 0 && order_[slots_[i] - 1] != pk) i = (i + 1) & mask;
    return i;
  }
  uint32_t& slotOf(int64_t pk) { return slots_[probe(pk)]; }
  void grow() {
    slots_.assign(slots_.size() * 2, 0);
    for (size_t i = 0; i < order_.size(); ++i) slots_[probe(order_[i])] = static_cast<uint32_t>(i + 1);
  }
  std::vector<int64_t> order_;
  std::vector<Signals> signals_;
  std::vector<uint32_t> slots_;  // 1 + an index into order_, 0 for an empty slot; a power of two in size
};

// Sets `slot` to the expression's bm25 (with the whole lane's statistics) for each candidate that matches it. A
// candidate whose `known` figure is set already has it (the unicode lane scored it for this very expression, with
// the same statistics and arithmetic): only the others are asked for, the unicode lane's own hits being a large
// share of the candidates and reading each one's tokens the costliest part of the rescore.
Status rescore(RecallSource& store, const std::string& matchExpression, CandidateTable& table,
               std::optional<double> Signals::*slot, std::optional<double> Signals::*known = nullptr) {
  std::vector<Signals>& signals = table.signals();
  std::vector<int64_t> asked;
  std::vector<size_t> askedAt;  // each asked pk's index in the table
  asked.reserve(signals.size());
  askedAt.reserve(signals.size());
  for (size_t i = 0; i < signals.size(); ++i) {
    if (known != nullptr && signals[i].*known) {
      signals[i].*slot = signals[i].*known;
      continue;
    }
    asked.push_back(table.order()[i]);
    askedAt.push_back(i);
  }
  if (asked.empty()) return Status::ok();
  auto bm25 = store.textBm25(matchExpression, asked);
  if (!bm25) return bm25.status();
  for (size_t j = 0; j < asked.size(); ++j) {
    if ((*bm25)[j]) signals[askedAt[j]].*slot = *(*bm25)[j];
  }
  return Status::ok();
}

}  // namespace

std::string querySubject(const std::string& query) {
  std::vector<std::string> lines;
  size_t i = 0;
  while (i <= query.size() && lines.size() < 2) {
    size_t j = query.find('\n', i);
    if (j == std::string::npos) j = query.size();
    size_t b = i, e = j;
    while (b < e && blankChar(query[b])) ++b;
    while (e > b && blankChar(query[e - 1])) --e;
    if (e > b) lines.push_back(query.substr(b, e - b));
    i = j + 1;
  }
  return lines.size() >= 2 ? lines.front() : "";
}

PreparedQuery prepareQuery(const RecallRequest& request, const Embedder& embedder, RepoSignals* repo) {
  PreparedQuery q;
  if (!request.query.empty()) {
    FtsQueryOptions opts;
    if (request.ranker == Ranker::kReference) {
      opts.dropStopWords = false;
      opts.dropSingleChars = false;
      opts.dedupe = false;
      opts.trimToWord = false;
      opts.maxTokens = kMaxReferenceQueryTokens;
    }
    q.unicodeMatch = unicodeMatch(request.query, opts);
    q.trigramMatch = trigramMatch(request.query, opts.maxTokens);
    q.bigramMatch = trigramBigramMatch(request.query, opts.maxTokens);
    if (request.ranker == Ranker::kDefault) {
      std::string subject = querySubject(request.query);
      if (!subject.empty()) q.subjectMatch = unicodeMatch(subject, opts);
      if (q.subjectMatch == q.unicodeMatch) q.subjectMatch.clear();
    }
    if (request.useSemantic) {
      // The query is embedded like a memory with only a summary (hashbag.h, memoryEmbedSource), so it is tripled too.
      q.vector = embedder.embed(memoryEmbedSource(request.query, "", {}));
    }
  }
  if (repo != nullptr && request.useFileSignals && !request.files.empty()) {
    q.renamed = repo->renamedFrom(request.files);
    // The strongest neighbours overall, at most kCochangePerFile per queried file, kCochangeTotal in all.
    std::unordered_set<std::string> seen(request.files.begin(), request.files.end());
    struct Tagged {
      CoChangeNeighbor n;
      size_t source;
    };
    std::vector<Tagged> all;
    for (size_t i = 0; i < request.files.size() && i < 64; ++i) {
      for (auto& n : repo->cochangeNeighbors(request.files[i], 8)) all.push_back({std::move(n), i});
    }
    std::stable_sort(all.begin(), all.end(), [](const Tagged& a, const Tagged& b) {
      return a.n.strength != b.n.strength ? a.n.strength > b.n.strength : a.n.count > b.n.count;
    });
    std::unordered_map<size_t, size_t> perSource;
    for (auto& t : all) {
      if (q.cochange.size() >= kCochangeTotal) break;
      if (perSource[t.source] >= kCochangePerFile || !seen.insert(t.n.path).second) continue;
      ++perSource[t.source];
      q.cochange.push_back(std::move(t.n));
    }
  }
  return q;
}

Result<std::vector<Candidate>> gatherCandidates(RecallSource& store, const RecallRequest& request,
                                                const PreparedQuery& query, RepoSignals* repo,
                                                RecallTimings* timings) {
  using TimingClock = std::chrono::steady_clock;
  auto mark = TimingClock::now();
  // Adds the time since the previous lap to `slot` (only when timings were asked for).
  auto lap = [&](double RecallTimings::*slot) {
    if (timings == nullptr) return;
    auto t = TimingClock::now();
    timings->*slot += std::chrono::duration<double, std::milli>(t - mark).count();
    mark = t;
  };
  // Every lane reads the scope's rows: a scope without any (an empty global scope) has no candidates.
  if (store.holdsNoRows()) return std::vector<Candidate>{};
  const bool isDefault = request.ranker == Ranker::kDefault;
  const int ftsLimit = isDefault ? kDefaultFtsCandidateLimit : kFtsCandidateLimit;
  const int fileLimit = isDefault ? kDefaultFileCandidateLimit : kFileCandidateLimit;
  CandidateTable table(static_cast<size_t>(2 * ftsLimit + fileLimit + kSemanticTopK));

  // The semantic lane reads nothing the other lanes touch, so it is begun first and scanned beside them: on two
  // cores a recall waits for the longer of the two instead of their sum.
  const bool semantic = request.useSemantic && !query.vector.empty();
  std::future<std::vector<VectorIndex::Hit>> nearest;
  if (semantic) nearest = store.beginNearestActive(query.vector, kSemanticTopK, kSemanticMinCosine);

  if (!query.unicodeMatch.empty() || !query.trigramMatch.empty()) {
    auto unicode = store.searchFts(FtsLane::kUnicode, query.unicodeMatch, ftsLimit);
    if (!unicode) return unicode.status();
    const std::vector<FtsHit>& u = *unicode;
    lap(&RecallTimings::unicodeMs);
    // The trigram lane finds what word matching cannot (partial words, identifiers inside longer tokens), but it
    // scores every row sharing a trigram with the query, the costliest step of recall. The reference ranker always
    // runs it; the default ranker only when the unicode lane came up short of its candidate limit
    // (docs/ranking.md records that this leaves the benchmark figures as they were).
    Result<std::vector<FtsHit>> t = std::vector<FtsHit>{};
    if (!isDefault || u.size() < static_cast<size_t>(ftsLimit)) {
      t = store.searchFts(FtsLane::kTrigram, query.trigramMatch, ftsLimit);
      if (!t) return t.status();
      if (timings != nullptr) ++timings->trigramRuns;
    }
    if (u.empty() && t->empty() && !query.bigramMatch.empty()) {
      t = store.searchFts(FtsLane::kTrigram, query.bigramMatch, ftsLimit);
      if (!t) return t.status();
    }
    lap(&RecallTimings::trigramMs);
    for (const auto& h : u) {
      auto& s = table.at(h.pk);
      if (!s.ftsUnicode) {
        s.ftsUnicode = h.rank;
        s.bm25Unicode = h.bm25;
      }
    }
    for (const auto& h : *t) {
      auto& s = table.at(h.pk);
      if (!s.ftsTrigram) {
        s.ftsTrigram = h.rank;
        s.bm25Trigram = h.bm25;
      }
    }
    lap(&RecallTimings::unicodeMs);
  }
  if (request.useFileSignals && !request.files.empty()) {
    // A memory on a path a queried file had before a rename is about that file.
    std::vector<std::string> paths = request.files;
    for (const auto& r : query.renamed) paths.insert(paths.end(), r.earlier.begin(), r.earlier.end());
    auto direct = store.findByPaths(paths, fileLimit);
    if (!direct) return direct.status();
    int fileRank = 0;
    for (const auto& h : *direct) {
      auto& s = table.at(h.pk);
      s.fileAffinity = true;
      s.matchedFiles = h.matchedFiles;
      s.fileRank = ++fileRank;
    }
    std::vector<std::string> neighbourPaths;
    for (const auto& n : query.cochange) neighbourPaths.push_back(n.path);
    auto neighbourHits = store.findByEachPath(neighbourPaths, kFileCandidateLimit);
    if (!neighbourHits) return neighbourHits.status();
    for (size_t i = 0; i < query.cochange.size(); ++i) {
      for (const auto& h : (*neighbourHits)[i]) {
        // Only the direct hits above have file affinity: a direct hit is not a neighbour's too.
        if (const Signals* known = table.find(h.pk); known != nullptr && known->fileAffinity) continue;
        auto& s = table.at(h.pk);
        s.cochangeAffinity = true;
        s.cochangeStrength = std::max(s.cochangeStrength, query.cochange[i].strength);
      }
    }
  }
  lap(&RecallTimings::filesMs);
  if (semantic) {
    // Added after the other lanes, as before it ran beside them: a candidate's place in `order` (ranking's tie
    // order) does not depend on which lane finished first.
    auto hits = nearest.get();
    int rank = 0;
    for (const auto& h : hits) {
      auto& s = table.at(h.key);
      s.semantic = h.score;
      s.semanticRank = ++rank;
    }
  }
  lap(&RecallTimings::semanticMs);
  if (isDefault && !query.unicodeMatch.empty()) {
    // Text relevance for every candidate, whichever lane found it (a file or co-change candidate outside the FTS
    // top-N still gets its bm25): the default ranker orders affinity candidates by it.
    if (auto rescored = rescore(store, query.unicodeMatch, table, &Signals::textBm25, &Signals::bm25Unicode);
        !rescored) {
      return rescored;
    }
    if (!query.subjectMatch.empty()) {
      // A failed subject evaluation leaves the signal unset: it degrades ranking, never the request.
      (void)rescore(store, query.subjectMatch, table, &Signals::subjectBm25);
    } else {
      for (auto& s : table.signals()) s.subjectBm25 = s.textBm25;
    }
    lap(&RecallTimings::rescoreMs);
  }

  const int64_t nowMs =
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
          .count();
  const std::vector<int64_t>& order = table.order();
  std::vector<Candidate> out;
  out.reserve(order.size());
  std::unordered_map<std::string, int> blastCache;
  // Builds one candidate from what ranking reads of its row (both sources below give the same figures).
  // `used`: the last use, in milliseconds since the epoch (negative when unreadable: age 0).
  auto add = [&](int64_t pk, const Signals& found, int64_t useCount, bool pinned, int64_t used, size_t cost,
                 const auto& paths, const auto& pathOf) {
    Signals s = found;
    s.useCount = useCount;
    s.pinned = pinned;
    s.ageDays = used < 0 ? 0 : std::max(0.0, static_cast<double>(nowMs - used) / 86400000.0);
    if (repo != nullptr) {
      for (const auto& f : paths) {
        const std::string& path = pathOf(f);
        auto it = blastCache.find(path);
        int r = it != blastCache.end() ? it->second : (blastCache[path] = repo->blastRadius(path));
        s.blastRadius = std::max(s.blastRadius, r);
      }
    }
    out.push_back({pk, store.scope(), s, cost});
  };
  if (auto rows = store.mirroredRows(order)) {
    for (size_t i = 0; i < order.size(); ++i) {
      const auto* row = (*rows)[i];
      if (row == nullptr || !row->active) continue;  // defensive: every lane already reads active rows only
      // The row's key already holds the timestamp's digits: read the string only when it has another shape.
      const int64_t used =
          row->lastUsedKey >= 0 ? isoUtcDigitsToMillis(row->lastUsedKey) : parseIsoUtcMillis(row->lastUsedAt);
      add(order[i], table.signals()[i], row->useCount, row->pinned, used, row->textCost, row->paths,
          [](const std::string& p) -> const std::string& { return p; });
    }
  } else {
    // No mirror (no unicode61 tokenizer, or its rebuild failed): the rows themselves.
    auto memories = store.loadMany(order);
    if (!memories) return memories.status();
    for (const auto& m : *memories) {
      if (m.state != MemoryState::kActive) continue;
      const Signals* found = table.find(m.pk);
      if (found == nullptr) continue;  // defensive: loadMany returns only the pks asked for
      add(m.pk, *found, m.useCount, m.pinned, parseIsoUtcMillis(m.lastUsedAt),
          utf16Length(m.summary) + utf16Length(m.details), m.files,
          [](const FileRef& f) -> const std::string& { return f.path; });
    }
  }
  lap(&RecallTimings::loadMs);
  return out;
}

std::vector<RecallHit> rankAndSelect(std::vector<Candidate> candidates, const RecallRequest& request) {
  RankContext ctx;
  ctx.queriedFiles = request.files.size();
  for (const auto& c : candidates) {
    if (c.signals.bm25Unicode) ctx.bestBm25Unicode = std::min(ctx.bestBm25Unicode, *c.signals.bm25Unicode);
    if (c.signals.bm25Trigram) ctx.bestBm25Trigram = std::min(ctx.bestBm25Trigram, *c.signals.bm25Trigram);
    const auto& s = c.signals;
    if (s.textBm25) ctx.bestTextBm25 = std::min(ctx.bestTextBm25, *s.textBm25);
    if (s.subjectBm25) ctx.bestSubjectBm25 = std::min(ctx.bestSubjectBm25, *s.subjectBm25);
    if (s.cochangeAffinity && !s.fileAffinity) ctx.maxCochange = std::max(ctx.maxCochange, s.cochangeStrength);
    ctx.bestLinesOwned = std::max(ctx.bestLinesOwned, s.linesOwned);
    ctx.bestLinesOriginated = std::max(ctx.bestLinesOriginated, s.linesOriginated);
    ctx.bestLinesPrior = std::max(ctx.bestLinesPrior, s.linesPrior);
  }
  // Scores only: building every candidate's named terms cost more than scoring them; the hits get theirs below.
  struct Scored {
    double score;
    size_t index;  // into candidates
  };
  std::vector<Scored> scored;
  scored.reserve(candidates.size());
  for (size_t i = 0; i < candidates.size(); ++i) {
    const auto& s = candidates[i].signals;
    double score = request.ranker == Ranker::kReference ? referenceScore(s, false).score : defaultScore(s, ctx, false).score;
    scored.push_back({score, i});
  }
  // Stable: ties keep scope order (project first) and lane order, as the reference does.
  std::stable_sort(scored.begin(), scored.end(), [](const Scored& a, const Scored& b) { return a.score > b.score; });
  const double threshold = request.threshold.value_or(defaultThreshold(request.ranker));
  std::vector<RecallHit> out;
  size_t budget = request.maxChars;
  for (const auto& sc : scored) {
    if (out.size() >= request.limit) break;
    if (sc.score <= 0 || sc.score < threshold) break;  // sorted: nothing after this passes either
    auto& c = candidates[sc.index];
    if (c.cost > budget) continue;  // skip, not stop: a smaller memory further down may still fit
    budget -= c.cost;
    RecallHit h;
    h.memory.pk = c.pk;
    h.memory.scope = std::move(c.scope);
    h.signals = c.signals;
    h.score = sc.score;
    // Relative to the best hit returned (the first: sorted), not to a better candidate the budget left out.
    const double top = out.empty() ? h.score : out.front().score;
    h.normalizedScore = top > 0 ? std::min(1.0, h.score / top) : 0;
    if (request.explain) {
      h.breakdown = request.ranker == Ranker::kReference ? referenceScore(h.signals) : defaultScore(h.signals, ctx);
    }
    out.push_back(std::move(h));
  }
  return out;
}

Status loadHitRows(RecallSource& store, std::vector<RecallHit>& hits) {
  std::vector<int64_t> pks;
  for (const auto& h : hits) {
    if (h.memory.scope == store.scope()) pks.push_back(h.memory.pk);
  }
  if (pks.empty()) return Status::ok();
  auto rows = store.loadMany(pks);
  if (!rows) return rows.status();
  std::unordered_map<int64_t, Memory*> byPk;
  for (auto& m : *rows) byPk[m.pk] = &m;
  // Rows of this scope that are gone or no longer active were changed after ranking (the scope's lock was
  // released in between): dropping them returns fewer hits, never a hidden, superseded or rejected memory.
  std::erase_if(hits, [&](RecallHit& h) {
    if (h.memory.scope != store.scope()) return false;
    auto it = byPk.find(h.memory.pk);
    if (it == byPk.end() || it->second->state != MemoryState::kActive) return true;
    h.memory = std::move(*it->second);
    return false;
  });
  return Status::ok();
}

std::string_view anchoredLinesStateName(AnchoredLinesState state) {
  switch (state) {
    case AnchoredLinesState::kUnchanged: return "unchanged";
    case AnchoredLinesState::kMoved: return "moved";
    case AnchoredLinesState::kRewritten: return "rewritten";
    case AnchoredLinesState::kDeleted: return "deleted";
  }
  return "unchanged";
}

const std::optional<std::string>& CurrentBlobIds::of(const std::string& path) {
  auto it = ids_.find(path);
  if (it == ids_.end()) it = ids_.emplace(path, repo_.currentBlobId(path)).first;
  return it->second;
}

void annotateStaleness(RecallHit& h, CurrentBlobIds& current, const std::vector<RenamedPath>& renamed) {
  // The file `path` became, when the query named it: the nearest renamed file that had `path`.
  auto becameOf = [&](const std::string& path) -> const std::string* {
    for (const auto& r : renamed) {
      if (std::find(r.earlier.begin(), r.earlier.end(), path) != r.earlier.end()) return &r.path;
    }
    return nullptr;
  };
  h.changedFiles.clear();
  h.missingFiles.clear();
  for (const auto& f : h.memory.files) {
    if (!f.blobId) continue;
    const std::optional<std::string>& now = current.of(f.path);
    if (!now) {
      // Renamed rather than gone when its anchored lines were carried into the file it became.
      auto renamed = std::find_if(h.anchoredLines.begin(), h.anchoredLines.end(),
                                  [&](const auto& a) { return a.renamedFrom == f.path; });
      if (renamed == h.anchoredLines.end()) {
        const std::string* became = becameOf(f.path);
        const std::optional<std::string> becameNow = became ? current.of(*became) : std::nullopt;
        if (!becameNow) {
          h.missingFiles.push_back(f.path);
        } else if (*becameNow != *f.blobId) {
          h.changedFiles.push_back(f.path);
        }
      } else if (renamed->state != AnchoredLinesState::kUnchanged && renamed->state != AnchoredLinesState::kMoved) {
        h.changedFiles.push_back(f.path);
      }
    } else if (*now != *f.blobId) {
      // A file whose anchored lines survived unchanged or only moved: the memory's subject is still there.
      const bool linesHeld = std::any_of(h.anchoredLines.begin(), h.anchoredLines.end(), [&](const auto& a) {
        return a.path == f.path &&
               (a.state == AnchoredLinesState::kUnchanged || a.state == AnchoredLinesState::kMoved);
      });
      if (!linesHeld) h.changedFiles.push_back(f.path);
    }
  }
  h.stale = !h.changedFiles.empty() || !h.missingFiles.empty();
}

nlohmann::json recallHitToJson(const RecallHit& hit, bool explain) {
  nlohmann::json j = memoryToJson(hit.memory);
  j["score"] = hit.score;
  j["normalized_score"] = hit.normalizedScore;
  nlohmann::json fired = nlohmann::json::array();
  hit.signals.forEachFiredLane([&](const char* lane) { fired.push_back(lane); });
  j["signals"] = fired;
  j["stale"] = hit.stale;
  if (!hit.changedFiles.empty()) j["changed_files"] = hit.changedFiles;
  if (!hit.missingFiles.empty()) j["missing_files"] = hit.missingFiles;
  if (!hit.anchoredLines.empty()) {
    nlohmann::json lines = nlohmann::json::array();
    for (const auto& a : hit.anchoredLines) {
      nlohmann::json entry = {
          {"path", a.path}, {"state", anchoredLinesStateName(a.state)}, {"lines", lineRangesToJson(a.lines)}};
      if (!a.renamedFrom.empty()) entry["renamed_from"] = a.renamedFrom;
      lines.push_back(std::move(entry));
    }
    j["anchored_lines"] = std::move(lines);
  }
  if (explain) j["explain"] = {{"signals", hit.signals.toJson()}, {"terms", hit.breakdown.terms}};
  return j;
}

}  // namespace memq
