// RecallMirror: loading the mirror from the committed rows, refreshing it after writes, and answering the file lane
// from the path map. See recall_mirror.h.
#include "daemon/store/recall_mirror.h"

#include <algorithm>
#include <unordered_set>

#include "daemon/embed/hashbag.h"
#include "daemon/model/memory_input.h"
#include "daemon/store/database.h"
#include "daemon/store/store_sql.h"
#include "daemon/util/clock.h"
#include "daemon/util/utf8.h"

namespace memq {

namespace {

// The file lane's order: newest last use first (as SQLite compares TEXT: bytewise), then highest pk.
bool usedMoreRecently(const MirroredRow* a, const MirroredRow* b) {
  if (a->lastUsedKey >= 0 && b->lastUsedKey >= 0) {
    if (a->lastUsedKey != b->lastUsedKey) return a->lastUsedKey > b->lastUsedKey;
  } else if (int c = a->lastUsedAt.compare(b->lastUsedAt); c != 0) {
    return c > 0;
  }
  return a->pk > b->pk;
}

void insertByLastUse(std::vector<const MirroredRow*>& rows, const MirroredRow* row) {
  rows.insert(std::upper_bound(rows.begin(), rows.end(), row, usedMoreRecently), row);
}

}  // namespace

RecallMirror::RecallMirror(StoreSql& sql, const Embedder& embedder, std::string path,
                           const PendingUsage& pendingUsage)
    : sql_(sql),
      pendingUsage_(pendingUsage),
      embedder_(embedder),
      path_(std::move(path)),
      active_(std::make_unique<VectorIndex>(embedder.dim())),
      rejected_(std::make_unique<VectorIndex>(embedder.dim())) {}

Status RecallMirror::load() {
  const std::string model(embedder_.model());
  try {
    vectorsVersion_ = sql_.dataVersion();
    vectorsOthers_ = sql_.othersChanges();
    std::vector<std::pair<int64_t, std::vector<float>>> missing;
    sql_.forEachVectorRow(model, embedder_.dim(),
                          [&](int64_t pk, bool rejected, const float* vector, const std::string& summary,
                              const std::string& details, const std::vector<std::string>& topics) {
                            VectorIndex& index = rejected ? *rejected_ : *active_;
                            if (vector != nullptr) {
                              index.upsert(pk, std::span<const float>(vector, embedder_.dim()));
                              return;
                            }
                            auto v = embedder_.embed(memoryEmbedSource(summary, details, topics));
                            index.upsert(pk, v);
                            missing.emplace_back(pk, std::move(v));
                          });
    if (!missing.empty()) {
      StoreSql::WriteTransaction tx(sql_);
      for (const auto& [pk, v] : missing) sql_.storeEmbedding(pk, model, v);
      tx.commit();
    }
  } catch (const std::exception& e) {
    return storageError(e, "loading vectors of " + path_);
  }
  try {
    text_ = TextIndex::create(sql_.handle());
    if (text_) loadRows();
  } catch (const std::exception& e) {
    return storageError(e, "loading the text index of " + path_);
  }
  return Status::ok();
}

void RecallMirror::reload() {
  if (scansInFlight_ > 0) {  // the helper reads active_: replaced once the scan is over
    vectorsStale_ = true;
    rowsStale_ = true;
    return;
  }
  active_ = std::make_unique<VectorIndex>(embedder_.dim());
  rejected_ = std::make_unique<VectorIndex>(embedder_.dim());
  rowsStale_ = true;
  // If the reload fails too (the error that failed the batch may persist), it is tried again before the next write
  // and the next search, so the vector indexes never stay empty.
  vectorsStale_ = !load().isOk();
}

Status RecallMirror::reloadIfStale() {
  if (scansInFlight_ > 0) {
    // The index is being scanned: rebuilt at the next call after the scan.
    return vectorsStale_ ? Status(ErrorCode::kStorageError, "the in-memory indexes of " + path_ + " are stale")
                         : Status::ok();
  }
  if (!vectorsStale_ && followsAnotherWriter_ && (!readPass_ || !passVerified_)) {
    try {
      // A commit that changed no row (a co-change cache's, a use count's) leaves the indexes as they are.
      vectorsStale_ = rowsChangedElsewhere(vectorsVersion_, vectorsOthers_);
      // ready() need not ask again in this pass when nothing moved since the rows were loaded either.
      passVerified_ = readPass_ && !vectorsStale_ && vectorsVersion_ == dataVersion_;
    } catch (const std::exception&) {
      vectorsStale_ = true;
    }
  }
  if (!vectorsStale_) return Status::ok();
  reload();
  if (vectorsStale_) return Status(ErrorCode::kStorageError, "cannot reload the in-memory indexes of " + path_);
  return Status::ok();
}

void RecallMirror::loadRows() {
  ++rowLoads_;
  rowsStale_ = true;  // until the load completes
  text_->clear();
  rows_.clear();
  pathRows_.clear();
  anchorsByPath_.clear();
  // Read before the rows: a commit by another connection in between then shows as a change, never as none.
  dataVersion_ = sql_.dataVersion();
  rowsOthers_ = sql_.othersChanges();
  sql_.forEachMirrorRow([&](int64_t pk, std::string_view summary, std::string_view details,
                            std::string_view topicsText, bool active, std::string lastUsedAt, int64_t useCount,
                            bool pinned) {
    text_->upsert(pk, summary, details, topicsText, active);
    pendingUsage_.overlay(pk, useCount, lastUsedAt);
    auto& row = rows_[pk] = {active, std::move(lastUsedAt), {}, useCount, pinned,
                             utf16Length(summary) + utf16Length(details)};
    row.pk = pk;
    row.lastUsedKey = isoUtcDigits(row.lastUsedAt);
  });
  sql_.forEachFileRef([&](int64_t pk, MirroredFileRef file) {
    auto it = rows_.find(pk);
    if (it == rows_.end()) return;
    pathRows_[file.ref.path].push_back(&it->second);
    it->second.paths.push_back(file.ref.path);
    if (file.ref.anchor) {
      anchorsByPath_[file.ref.path].push_back({pk, &it->second, std::move(*file.ref.anchor), file.kept});
    }
  });
  for (auto& [path, rows] : pathRows_) std::sort(rows.begin(), rows.end(), usedMoreRecently);
  for (auto& [path, anchors] : anchorsByPath_) {
    std::sort(anchors.begin(), anchors.end(), [](const auto& a, const auto& b) { return a.pk < b.pk; });
  }
  rowsStale_ = false;
}

void RecallMirror::dropRow(int64_t pk) {
  auto it = rows_.find(pk);
  if (it == rows_.end()) return;
  for (const auto& path : it->second.paths) {
    auto& rows = pathRows_[path];
    rows.erase(std::remove(rows.begin(), rows.end(), &it->second), rows.end());
    if (rows.empty()) pathRows_.erase(path);
    if (auto anchored = anchorsByPath_.find(path); anchored != anchorsByPath_.end()) {
      auto& anchors = anchored->second;
      auto at = std::lower_bound(anchors.begin(), anchors.end(), pk,
                                 [](const PathAnchor& a, int64_t p) { return a.pk < p; });
      if (at != anchors.end() && at->pk == pk) anchors.erase(at);
      if (anchors.empty()) anchorsByPath_.erase(anchored);
    }
  }
  rows_.erase(it);
}

void RecallMirror::insertRow(int64_t pk, MirroredRow meta) {
  meta.pk = pk;
  meta.lastUsedKey = isoUtcDigits(meta.lastUsedAt);
  auto& row = rows_[pk] = std::move(meta);
  for (const auto& path : row.paths) insertByLastUse(pathRows_[path], &row);
}

void RecallMirror::refreshRow(int64_t pk, bool textChanged) {
  if (!text_ || rowsStale_) return;
  try {
    // Drop the row's old file refs, then read it back as committed.
    dropRow(pk);
    auto data = sql_.mirrorRow(pk);
    if (!data) {
      text_->remove(pk);
      return;
    }
    if (textChanged || !text_->contains(pk)) {
      text_->upsert(pk, data->summary, data->details, data->topicsText, data->active);
    } else {
      text_->setActive(pk, data->active);
    }
    pendingUsage_.overlay(pk, data->useCount, data->lastUsedAt);
    std::vector<std::string> paths;
    for (const auto& f : data->files) paths.push_back(f.ref.path);
    insertRow(pk, {data->active, std::move(data->lastUsedAt), std::move(paths), data->useCount, data->pinned,
                   utf16Length(data->summary) + utf16Length(data->details)});
    addAnchors(pk, std::move(data->files));
  } catch (const std::exception&) {
    rowsStale_ = true;  // the write itself committed; the mirror is rebuilt before it is read again
  }
}

void RecallMirror::addCreatedRow(int64_t pk, const Memory& created, const std::vector<FileRef>& written) {
  if (!text_ || rowsStale_) return;
  if (rows_.count(pk) != 0) {
    refreshRow(pk);
    return;
  }
  try {
    text_->upsert(pk, created.summary, created.details, topicsText(created.topics), true);
    MirroredRow meta{true, created.lastUsedAt, {}, 0, false,
                     utf16Length(created.summary) + utf16Length(created.details)};
    std::unordered_set<std::string_view> keptBlobs;  // versions whose content came with the save
    for (const auto& f : written) {
      if (f.anchor && f.anchor->keptContent) keptBlobs.insert(f.anchor->blob);
    }
    std::vector<MirroredFileRef> files;
    for (const auto& f : created.files) {
      meta.paths.push_back(f.path);
      files.push_back({f, f.anchor && keptBlobs.count(f.anchor->blob) != 0});
    }
    insertRow(pk, std::move(meta));
    addAnchors(pk, std::move(files));
  } catch (const std::exception&) {
    rowsStale_ = true;
  }
}

bool RecallMirror::ready() {
  if (!text_) return false;
  try {
    if (!reloadIfStale().isOk()) {
      rowsStale_ = true;
      return false;
    }
    // data_version moves only when another connection commits (this one's writes refresh the mirror themselves);
    // the rows are read again only when that connection changed some (the co-change cache's commits change none).
    // In a read pass it is compared once: the pass reads one snapshot.
    if (rowsStale_ || ((!readPass_ || !passVerified_) && rowsChangedElsewhere(dataVersion_, rowsOthers_))) loadRows();
    passVerified_ = readPass_;
    return true;
  } catch (const std::exception&) {
    rowsStale_ = true;
    return false;
  }
}

bool RecallMirror::rowsChangedElsewhere(int64_t& version, const std::optional<int64_t>& others) {
  const int64_t now = sql_.dataVersion();
  if (now == version) return false;
  const std::optional<int64_t> othersNow = sql_.othersChanges();
  // Not counted (a database older than 0011): any commit may have changed rows.
  if (!othersNow || !others || *othersNow != *others) return true;
  version = now;
  return false;
}

void RecallMirror::addAnchors(int64_t pk, std::vector<MirroredFileRef> files) {
  const MirroredRow* row = &rows_.at(pk);
  for (auto& f : files) {
    if (!f.ref.anchor) continue;
    f.ref.anchor->keptContent = nullptr;  // read on demand (keptContent), not held per ref
    auto& anchors = anchorsByPath_[f.ref.path];
    auto at = std::lower_bound(anchors.begin(), anchors.end(), pk,
                               [](const PathAnchor& a, int64_t p) { return a.pk < p; });
    anchors.insert(at, {pk, row, std::move(*f.ref.anchor), f.kept});  // a new row's pk is the highest: at the end
  }
}

std::shared_ptr<const std::string> RecallMirror::keptContent(const std::string& blob) {
  // A kept version is at most a few MiB; a handful of files' versions fit, and a recall touches few files.
  constexpr size_t kKeptCacheBytes = 32u << 20;
  if (auto it = keptCache_.find(blob); it != keptCache_.end()) return it->second;
  auto content = sql_.keptVersion(blob);
  if (!content) return nullptr;  // released since the ref was read: the carry then fails and gives no signal
  if (keptCacheBytes_ + content->size() > kKeptCacheBytes) {
    keptCache_.clear();
    keptCacheBytes_ = 0;
  }
  keptCacheBytes_ += content->size();
  keptCache_.emplace(blob, content);
  return content;
}

void RecallMirror::setLastUsed(MirroredRow& row, const std::string& at) {
  // Out of each of its paths' lists (found by binary search while the row still has its old key), then back in.
  for (const auto& path : row.paths) {
    auto& rows = pathRows_[path];
    auto it = std::lower_bound(rows.begin(), rows.end(), &row, usedMoreRecently);
    if (it != rows.end() && *it == &row) rows.erase(it);
  }
  row.lastUsedAt = at;
  row.lastUsedKey = isoUtcDigits(at);
  for (const auto& path : row.paths) insertByLastUse(pathRows_[path], &row);
}

void RecallMirror::markUsed(const std::vector<int64_t>& pks, const std::string& at) {
  // The file lane orders by last use and recall ranks by use count: both taken without re-reading the rows.
  for (int64_t pk : pks) {
    if (auto it = rows_.find(pk); it != rows_.end()) {
      setLastUsed(it->second, at);
      ++it->second.useCount;
    }
  }
}

std::vector<FileHit> RecallMirror::pathHits(const std::vector<std::string>& paths, int limit) const {
  // Each path's rows are kept newest first, so the answer is a merge of the queried paths' lists that stops after
  // `limit` distinct active rows, whatever the lists' lengths. A row attached to several queried paths is listed at
  // its first appearance. The lists' order is total (last use, then pk), so the merge yields a row's appearances one
  // after the other, and a row appears once in the list of each of its paths: the length of that run is how many
  // queried paths the row is attached to, with no set of the rows listed and no path compared.
  std::vector<std::string_view> queried;
  struct Cursor {
    const std::vector<const MirroredRow*>* rows;
    size_t next;
  };
  std::vector<Cursor> cursors;
  for (const auto& p : paths) {
    if (std::find(queried.begin(), queried.end(), std::string_view(p)) != queried.end()) continue;
    queried.push_back(p);
    if (auto it = pathRows_.find(p); it != pathRows_.end() && !it->second.empty()) cursors.push_back({&it->second, 0});
  }
  auto older = [](const Cursor& a, const Cursor& b) {  // heap order: the cursor at the newest row on top
    return usedMoreRecently((*b.rows)[b.next], (*a.rows)[a.next]);
  };
  std::make_heap(cursors.begin(), cursors.end(), older);
  // The newest row not taken yet, its cursor moved past it.
  auto take = [&]() {
    std::pop_heap(cursors.begin(), cursors.end(), older);
    Cursor& cursor = cursors.back();
    const MirroredRow* row = (*cursor.rows)[cursor.next++];
    if (cursor.next < cursor.rows->size()) {
      std::push_heap(cursors.begin(), cursors.end(), older);
    } else {
      cursors.pop_back();
    }
    return row;
  };
  std::vector<FileHit> out;
  while (!cursors.empty() && out.size() < static_cast<size_t>(limit)) {
    const MirroredRow* row = take();
    int matched = 1;  // how many of the queried paths the row is attached to: its appearances
    while (!cursors.empty() && (*cursors.front().rows)[cursors.front().next] == row) {
      take();
      ++matched;
    }
    if (row->active) out.push_back({row->pk, matched});
  }
  return out;
}

std::vector<const MirroredRow*> RecallMirror::rows(const std::vector<int64_t>& pks) const {
  std::vector<const MirroredRow*> out;
  out.reserve(pks.size());
  for (int64_t pk : pks) {
    auto it = rows_.find(pk);
    out.push_back(it == rows_.end() ? nullptr : &it->second);
  }
  return out;
}

std::vector<AnchoredRef> RecallMirror::anchoredRefsOn(const std::vector<std::string>& paths,
                                                      const std::vector<int64_t>& pks) {
  const std::unordered_set<int64_t> wanted(pks.begin(), pks.end());
  std::unordered_set<std::string_view> done;
  std::vector<AnchoredRef> out;
  for (const auto& path : paths) {
    if (!done.insert(path).second) continue;
    auto anchored = anchorsByPath_.find(path);
    if (anchored == anchorsByPath_.end()) continue;
    for (const PathAnchor& a : anchored->second) {  // by pk
      if (!a.row->active || wanted.count(a.pk) == 0) continue;
      out.push_back({a.pk, path, a.anchor});
      if (a.kept) out.back().anchor.keptContent = keptContent(a.anchor.blob);
    }
  }
  return out;
}

}  // namespace memq
