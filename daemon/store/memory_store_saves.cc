// MemoryStore's saves: what a save leads to (refused, reported, deduplicated or created: docs/design.md §2), the
// rows it writes, the hints and warnings it answers with, and what it changes in the mirror. How saves reach SQLite
// (batches, the journal, the background applier) is the SavePipeline's. See memory_store.h, invariants 1, 3 and 7.
#include <algorithm>
#include <future>
#include <unordered_map>
#include <unordered_set>

#include "daemon/embed/hashbag.h"
#include "daemon/store/memory_store.h"
#include "daemon/store/recall_mirror.h"
#include "daemon/store/save_pipeline.h"
#include "daemon/store/store_sql.h"
#include "daemon/util/trigrams.h"
#include "daemon/util/unicode.h"
#include "daemon/util/uuid.h"

namespace memq {

namespace {

constexpr double kEdgeThreshold = 0.4;     // the reference system's similar-edge threshold
constexpr size_t kMaxEdges = 8;
constexpr double kSimilarHintCosine = 0.55;  // the reference system's similar-hint threshold
constexpr double kSimilarHintTrigram = 0.6;
constexpr size_t kMaxSimilarHints = 3;
constexpr double kSimilarRejectedCosine = 0.85;  // docs/design.md §2
// From this many rows a save's neighbour scan is shared with a scan helper (VectorIndex::beginTopK). At 100k rows the
// scan is most of a save's answer and two threads halve it; at 10k they were no faster than one (the helper's
// wake-up costs about as much as the chunk it takes), and the other core is the applier's. Eight of the scan's chunks.
constexpr size_t kSharedNeighbourScanRows = 32'768;

// A save's files as its audit event records them: as replies write them (an anchored ref with its lines).
nlohmann::json filesJson(const std::vector<FileRef>& files) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& f : files) out.push_back(fileRefToJson(f));
  return out;
}

// The refs the file-ref writer keeps (the first of each path), in readFiles' order (ORDER BY path: SQLite's binary
// collation, which is std::string's byte order).
std::vector<FileRef> storedFileRefs(const std::vector<FileRef>& files) {
  std::vector<FileRef> out;
  std::unordered_set<std::string> seen;
  for (const auto& f : files) {
    if (!seen.insert(f.path).second) continue;
    out.push_back(f);
    if (out.back().anchor) out.back().anchor->keptContent = nullptr;  // reads never carry the bytes
  }
  std::stable_sort(out.begin(), out.end(), [](const FileRef& a, const FileRef& b) { return a.path < b.path; });
  return out;
}

}  // namespace

std::vector<float> MemoryStore::embedMemory(const std::string& summary, const std::string& details,
                                            const std::vector<std::string>& topics) const {
  return embedder().embed(memoryEmbedSource(summary, details, topics));
}

const VectorIndex& MemoryStore::activeIndex() const { return mirror_->active(); }

std::future<std::vector<VectorIndex::Hit>> MemoryStore::beginNearestActive(std::vector<float> query, size_t k,
                                                                          float minScore) {
  // A rebuild replaces the index, so one that is due happens now, before another thread reads it; until the scan
  // is over (its future got or dropped) the mirror rebuilds nothing (RecallMirror::ScanInFlight).
  (void)mirror_->reloadIfStale();
  // Begun on a helper thread now; the caller's get() scans what the helper has not reached and merges. The members
  // go in reverse order: the pending scan (which waits for its helper) before the guard.
  struct Scan {
    RecallMirror::ScanInFlight guard;
    std::unique_ptr<VectorIndex::PendingTopK> pending;
  };
  auto scan = std::make_shared<Scan>(Scan{RecallMirror::ScanInFlight(*mirror_),
                                          mirror_->active().beginTopK(std::move(query), k, minScore)});
  return std::async(std::launch::deferred, [scan] { return scan->pending->get(); });
}

Result<SaveOutcome> MemoryStore::save(const NormalizedSave& input, const std::vector<FileRef>& files,
                                      const Actor& actor) {
  if (retired_) return writable();
  if (saves_->writesElsewhere()) MEMQ_RETURN_IF_ERROR(claimWrites());
  SaveRecord record{input, files, actor, newUuidV4(), now()};
  // A save that starts soon after the previous one joins its batch; the first save after a pause commits on its
  // own (durable in SQLite, and any storage error reported, before it is acknowledged).
  const bool joinsStream = saves_->joinsStream(std::chrono::steady_clock::now());
  if (joinsStream && saves_->canAnswerInBackground()) {
    if (auto answered = saveInBackground(record)) {
      saves_->noteSaveEnd();
      return std::move(*answered);
    }
  }
  takeDatabase();
  try {
    return saves_->applyNow(record, joinsStream);
  } catch (const std::exception& e) {
    return storageError(e, "save");
  }
}

std::optional<Result<SaveOutcome>> MemoryStore::saveInBackground(SaveRecord& record) {
  // Whatever the answer would need to read from the connection takes the synchronous path.
  if (!mirror_->text() || mirror_->rowsStale() || mirror_->vectorsStale() || saves_->replayPending()) {
    return std::nullopt;
  }
  const NormalizedSave& input = record.input;
  if (!saves_->acceptsHandOff(input.contentHash)) return std::nullopt;
  SaveOutcome out;
  QueuedSave queued{record, 0, {}, {}};
  try {
    auto pk = saves_->nextHandOffPk();
    if (!pk || mirror_->hasRow(*pk)) return std::nullopt;
    queued.pk = *pk;
    // Rejected content (a tombstone) and content already stored are answered by the synchronous path. Both are
    // committed: a reject commits, and the rows of an open batch are checked by acceptsHandOff.
    StoreSql& view = saves_->committedView();
    if (view.hasTombstone(input.contentHash)) return std::nullopt;
    if (view.contentExists(input.contentHash)) return std::nullopt;
    queued.vec = embedMemory(input.summary, input.details, input.topics);
    queued.neighbours = similarNeighbours(queued.vec, std::nullopt);  // a new row: not in the index yet
    out.similar = similarHints(input.summary, queued.neighbours, queued.pk, /*committedView=*/true);
    out.warnings = input.warnings;
    if (auto warning = rejectedWarning(queued.vec, view)) out.warnings.push_back(std::move(*warning));
  } catch (const std::exception&) {
    return std::nullopt;  // the read-only connection could not answer: the synchronous path reports what fails
  }
  const int64_t pk = queued.pk;
  std::vector<float> vec = queued.vec;
  auto handed = saves_->handOff(std::move(queued));
  if (!handed) return Result<SaveOutcome>(storageError(handed.status(), "save"));  // not acknowledged
  if (!*handed) return std::nullopt;
  // Published now: the next save's neighbours and every read after takeDatabase() see it.
  mirror_->active().upsert(pk, vec);
  Memory created = createdMemory(record, pk);
  mirror_->addCreatedRow(pk, created, record.files);
  out.status = "created";
  out.id = record.id;
  out.memory = std::move(created);
  return Result<SaveOutcome>(std::move(out));
}

void MemoryStore::publish(const SaveRecord& record, SaveEffects& effects) {
  if (effects.activeVector) mirror_->active().upsert(effects.activeVector->first, effects.activeVector->second);
  if (effects.refreshPk) {
    if (effects.outcome.status == "created") {
      mirror_->addCreatedRow(*effects.refreshPk, *effects.outcome.memory, record.files);
    } else {
      mirror_->refreshRow(*effects.refreshPk);
    }
  }
  // A dedup answers with the row as it now is (use count, topics, files).
  if (effects.outcome.status == "deduped") {
    auto fresh = get(effects.outcome.id);
    if (fresh) effects.outcome.memory = std::move(*fresh);
  }
}

SaveEffects MemoryStore::applySave(const SaveRecord& record) {
  const NormalizedSave& input = record.input;
  const Actor& actor = record.actor;
  const std::string& at = record.at;
  SaveEffects effects;
  SaveOutcome& out = effects.outcome;
  out.warnings = input.warnings;
  // 1. Rejected content stays refused, even after its row was purged.
  if (auto tomb = sql_->tombstoneIdAndReason(input.contentHash)) {
    out.status = "rejected";
    out.id = tomb->first;
    out.reason = tomb->second;
    appendEvent(out.id, "blocked_save", actor,
                {{"status", "rejected"}, {"reason", *out.reason}, {"content_hash", input.contentHash}}, at);
    return effects;
  }
  // 2. Existing content: never change its state.
  if (auto existing = sql_->memoryByContentHash(input.contentHash)) {
    Memory m = std::move(*existing);
    out.id = m.id;
    if (input.truncated) {
      out.warnings.push_back("after truncation this text is identical to memory " + m.id);
    }
    if (m.state == MemoryState::kHidden || m.state == MemoryState::kSuperseded || m.state == MemoryState::kRejected) {
      out.status = m.state == MemoryState::kHidden       ? "exists_hidden"
                   : m.state == MemoryState::kSuperseded ? "exists_superseded"
                                                         : "rejected";
      if (m.state == MemoryState::kSuperseded) out.supersededBy = m.supersededBy;
      if (m.state == MemoryState::kRejected) out.reason = m.stateReason;
      appendEvent(m.id, "blocked_save", actor, {{"status", out.status}, {"content_hash", input.contentHash}}, at);
      sql_->readFiles(m);
      out.memory = std::move(m);
      return effects;
    }
    // Active: dedup. The row keeps its category: a save asking for another one is told so, not silently ignored.
    if (auto kept = categoryKeptWarning(input.category, m.id, m.category, "memory/update changes it")) {
      out.warnings.push_back(std::move(*kept));
    }
    nlohmann::json detail = {{"use_count", m.useCount + 1}};
    std::vector<std::string> topics = m.topics;
    if (input.mergeTopics) {
      std::unordered_set<std::string> have;
      // The same case folding as normalizeTopics, so "Ärger" and "ärger" are one topic here too.
      for (const auto& t : topics) have.insert(jsToLowerUtf8(t));
      for (const auto& t : input.topics) {
        if (have.insert(jsToLowerUtf8(t)).second && topics.size() < kMaxTopics) {
          topics.push_back(t);
          out.topicsMerged = true;
        }
      }
    }
    // New topics change the row's text, and the update trigger re-indexes it: a row created in this transaction
    // must be in the lanes first (its removal from them would otherwise remove what was never added).
    if (out.topicsMerged && saves_->pendingText(m.pk)) saves_->indexPendingText();
    sql_->recordDedup(m.pk, at, topics, out.topicsMerged);
    if (out.topicsMerged) detail["topics"] = {{"before", m.topics}, {"after", topics}};
    // New file refs are added, up to the row's bound; existing ones keep their recorded blob id.
    sql_->readFiles(m);
    const size_t room = m.files.size() >= kMaxFiles ? 0 : kMaxFiles - m.files.size();
    const std::vector<std::string> added = sql_->writeFileRefs(m.pk, record.files, room);
    if (!added.empty()) detail["files_added"] = added;
    // New paths past the bound are not written; the reply names them (memory/attach refuses the same refs outright,
    // and a save must not drop them unsaid).
    std::vector<std::string> leftOut;
    {
      std::unordered_set<std::string> held(added.begin(), added.end());
      for (const auto& f : m.files) held.insert(f.path);
      for (const auto& f : record.files) {
        if (held.insert(f.path).second) leftOut.push_back(f.path);
      }
    }
    if (!leftOut.empty()) {
      std::string paths;
      for (const auto& p : leftOut) paths += (paths.empty() ? "" : ", ") + p;
      out.warnings.push_back("files not attached: memory " + m.id + " holds at most " + std::to_string(kMaxFiles) +
                             " files (" + std::to_string(m.files.size() + added.size()) + " attached); left out: " +
                             paths);
    }
    out.filesAdded = added;
    appendEvent(m.id, "dedup", actor, detail, at);
    if (out.topicsMerged) {
      auto vec = embedMemory(m.summary, m.details, topics);
      sql_->storeEmbedding(m.pk, embedModel_, vec);
      effects.activeVector.emplace(m.pk, std::move(vec));
    }
    effects.refreshPk = m.pk;
    out.status = "deduped";
    return effects;
  }
  // 3. New memory.
  auto vec = embedMemory(input.summary, input.details, input.topics);
  const auto neighbours = similarNeighbours(vec, std::nullopt);
  const int64_t newPk = writeCreatedRows(record, std::nullopt, vec, neighbours);
  out.similar = similarHints(input.summary, neighbours, newPk);
  if (auto warning = rejectedWarning(vec, *sql_)) out.warnings.push_back(std::move(*warning));
  effects.activeVector.emplace(newPk, std::move(vec));
  effects.refreshPk = newPk;
  out.status = "created";
  out.id = record.id;
  out.memory = createdMemory(record, newPk);
  return effects;
}

void MemoryStore::writeQueuedSave(const QueuedSave& save) {
  writeCreatedRows(save.record, save.pk, save.vec, save.neighbours);
}

int64_t MemoryStore::writeCreatedRows(const SaveRecord& record, std::optional<int64_t> pk,
                                      const std::vector<float>& vec, const std::vector<VectorIndex::Hit>& neighbours) {
  const NormalizedSave& input = record.input;
  const Memory row = createdMemory(record, 0);
  const int64_t newPk = sql_->insertMemory({pk, &row});
  saves_->notePendingText(newPk);  // indexed into the FTS lanes at commit
  sql_->writeFileRefs(newPk, record.files);
  sql_->storeEmbedding(newPk, embedModel_, vec);
  sql_->writeSimilarEdges(newPk, neighbours, record.at);
  nlohmann::json detail = {{"summary", input.summary},     {"details", input.details},
                           {"category", input.category ? nlohmann::json(*input.category) : nlohmann::json()},
                           {"topics", input.topics},       {"files", filesJson(record.files)},
                           {"content_hash", input.contentHash}};
  appendEvent(record.id, "create", record.actor, detail, record.at);
  return newPk;
}

Memory MemoryStore::createdMemory(const SaveRecord& record, int64_t pk) const {
  // The record as get() would read it back, built from what was just written instead of re-reading it.
  const NormalizedSave& input = record.input;
  Memory m;
  m.pk = pk;
  m.id = record.id;
  m.scope = scope();
  m.category = input.category;
  m.summary = input.summary;
  m.details = input.details;
  m.topics = input.topics;
  m.source = input.source;
  m.sessionId = input.sessionId;
  m.createdAt = m.updatedAt = m.lastUsedAt = record.at;
  m.contentHash = input.contentHash;
  m.files = storedFileRefs(record.files);
  return m;
}

std::optional<std::string> MemoryStore::rejectedWarning(const std::vector<float>& vec, StoreSql& view) {
  // A paraphrase of rejected content is written, but the caller is warned.
  auto rejectedHits = mirror_->rejected().topK(vec, 1, static_cast<float>(kSimilarRejectedCosine));
  if (rejectedHits.empty()) return std::nullopt;
  auto r = view.idAndStateReason(rejectedHits[0].key);
  if (!r) return std::nullopt;
  return "similar_rejected: this is close (cosine " + std::to_string(rejectedHits[0].score).substr(0, 4) +
         ") to rejected memory " + r->first + " (reason: " + r->second + ")";
}

std::vector<VectorIndex::Hit> MemoryStore::similarNeighbours(const std::vector<float>& vec,
                                                             std::optional<int64_t> self) const {
  // One more than kept: `self` may be among them (a row re-linked after an update is in the index).
  const VectorIndex& index = mirror_->active();
  const auto threshold = static_cast<float>(kEdgeThreshold);
  auto hits = index.size() >= kSharedNeighbourScanRows ? index.beginTopK(vec, kMaxEdges + 1, threshold)->get()
                                                       : index.topK(vec, kMaxEdges + 1, threshold);
  std::vector<VectorIndex::Hit> kept;
  for (const auto& h : hits) {
    if (h.key != self && kept.size() < kMaxEdges) kept.push_back(h);
  }
  return kept;
}

std::vector<VectorIndex::Hit> MemoryStore::linkSimilar(int64_t pk, const std::vector<float>& vec,
                                                       const std::string& at) {
  auto kept = similarNeighbours(vec, pk);
  sql_->writeSimilarEdges(pk, kept, at);
  return kept;
}

void MemoryStore::linkInOrder(const std::vector<LinkStep>& steps) {
  // Row j's neighbours one at a time would be the index's rows as the page's earlier steps left them: those the page
  // has not touched yet (as the index holds them now), and its earlier rows that are active. The index is asked for
  // enough more than kMaxEdges + 1 (self) that dropping the rows the page touched still leaves the top kMaxEdges.
  std::unordered_set<int64_t> pagePks;
  std::unordered_map<int64_t, size_t> purgedAt;  // a purged row's step: earlier steps' edges to it went with it
  size_t touchedInIndex = 0;
  std::vector<std::vector<float>> queries;
  for (size_t j = 0; j < steps.size(); ++j) {
    const LinkStep& step = steps[j];
    if (pagePks.insert(step.pk).second && mirror_->active().contains(step.pk)) ++touchedInIndex;
    if (step.purged) purgedAt[step.pk] = j;
    if (step.active && !step.vec.empty()) queries.push_back(step.vec);
  }
  const auto fromIndex =
      mirror_->active().topKMany(queries, kMaxEdges + 1 + touchedInIndex, static_cast<float>(kEdgeThreshold));
  std::unordered_set<int64_t> seen;                                // rows of the steps before j
  std::unordered_map<int64_t, const std::vector<float>*> earlier;  // and of those, the active ones
  size_t query = 0;
  for (size_t j = 0; j < steps.size(); ++j) {
    const LinkStep& step = steps[j];
    seen.insert(step.pk);
    if (step.purged) {  // deleted in the page's first pass; a later new row may take its pk
      earlier.erase(step.pk);
      continue;
    }
    sql_->unlinkSimilar(step.pk);
    if (step.active && !step.vec.empty()) {
      std::vector<VectorIndex::Hit> hits;
      for (const auto& h : fromIndex[query]) {
        if (!seen.contains(h.key)) hits.push_back(h);  // not itself, nor a row an earlier step changed
      }
      ++query;
      for (const auto& [pk, vec] : earlier) {
        if (pk == step.pk) continue;
        const float score = cosine(step.vec, *vec);  // what the index's exact re-scoring gives
        if (score >= static_cast<float>(kEdgeThreshold)) hits.push_back({pk, score});
      }
      std::sort(hits.begin(), hits.end(), [](const VectorIndex::Hit& a, const VectorIndex::Hit& b) {
        return a.score != b.score ? a.score > b.score : a.key < b.key;  // topK's order
      });
      if (hits.size() > kMaxEdges) hits.resize(kMaxEdges);
      // An edge to a row a later step purges would have gone with it (and the row is no longer there to point at).
      std::erase_if(hits, [&](const VectorIndex::Hit& h) {
        auto it = purgedAt.find(h.key);
        return it != purgedAt.end() && it->second > j;
      });
      sql_->writeSimilarEdges(step.pk, hits, step.at);
    }
    if (step.active && !step.vec.empty()) {
      earlier[step.pk] = &step.vec;
    } else {
      earlier.erase(step.pk);
    }
  }
}

std::vector<SimilarHint> MemoryStore::similarHints(const std::string& summary,
                                                   const std::vector<VectorIndex::Hit>& neighbours, int64_t selfPk,
                                                   bool committedView) {
  StoreSql& view = committedView ? saves_->committedView() : *sql_;
  std::vector<SimilarHint> out;
  for (const auto& h : neighbours) {
    if (h.key == selfPk || h.score < kSimilarHintCosine) continue;
    if (out.size() >= kMaxSimilarHints) break;
    if (committedView) {
      // A neighbour of the batch not yet committed is known from memory (it is active: only saves happened since).
      if (auto row = saves_->uncommittedRow(h.key)) {
        out.push_back({row->first, h.score, row->second, "semantic"});
        continue;
      }
    }
    if (auto row = view.idAndSummary(h.key, /*activeOnly=*/true)) {
      out.push_back({row->first, h.score, row->second, "semantic"});
    }
  }
  if (!out.empty()) return out;
  // Fallback, as the reference system does: trigram duplicates by summary containment.
  if (summary.size() < 6) return out;
  std::string phrase;
  for (char c : summary) phrase.push_back(c == '"' ? ' ' : c);
  // Trigram candidates: any of the summary's words of ≥ 3 characters, OR-ed (bounded).
  std::string match;
  size_t terms = 0;
  size_t i = 0;
  while (i < phrase.size() && terms < 32) {
    while (i < phrase.size() && std::isspace(static_cast<unsigned char>(phrase[i]))) ++i;
    size_t j = i;
    while (j < phrase.size() && !std::isspace(static_cast<unsigned char>(phrase[j]))) ++j;
    if (j - i >= 3) {
      if (!match.empty()) match += " OR ";
      match += "\"" + phrase.substr(i, j - i) + "\"";
      ++terms;
    }
    i = j;
  }
  if (match.empty()) return out;
  try {
    // The 8 best active rows other than the new one, by bm25.
    std::vector<SimilarHint> candidates;
    for (const auto& hit : view.rankedActive(FtsLane::kTrigram, match, 8, selfPk)) {
      if (auto row = view.idAndSummary(hit.pk, /*activeOnly=*/false)) {
        double w = trigramContainment(summary, row->second);
        if (w >= kSimilarHintTrigram) candidates.push_back({row->first, w, row->second, "trigram"});
      }
    }
    std::stable_sort(candidates.begin(), candidates.end(),
                     [](const SimilarHint& a, const SimilarHint& b) { return a.weight > b.weight; });
    if (candidates.size() > kMaxSimilarHints) candidates.resize(kMaxSimilarHints);
    return candidates;
  } catch (const std::exception&) {
    // A hint is advisory: an FTS hiccup must not fail the save. But if SQLite rolled the batch's transaction back
    // (it may, on an I/O error), the rest of the save must not run outside it.
    if (!committedView && saves_->hasOpenBatch() && saves_->batchLost()) throw;
    return out;
  }
}

}  // namespace memq
