// RecallMirror: the in-memory copy of one scope's rows that recall reads instead of SQLite — the vector indexes
// (the default model's vectors of the active rows, and of the rejected rows for similar_rejected warnings), the
// unicode text index (text_index.h), every row's MirroredRow (state, last use, use count, pin, text length, file
// refs), the rows' anchored refs (docs/anchors.md: lines and version; the content of a version memq keeps is read
// when a carry first needs it and cached by blob id, which names one content) and the path map (file path → rows,
// in the file lane's order). It loads them from the committed rows,
// refreshes one row after a write, and knows when it is stale: a refresh or a reload that failed, or a commit by
// another connection (PRAGMA data_version) that changed rows (StoreSql::othersChanges; a commit of the co-change
// cache's, or of another process's use counts, changes none). Use figures read from the database get the store's
// pending usage added (pending_usage.h), so the mirror always holds the uses recall recorded, written or not.
//
// Errors: load() returns a Status; every other method either never throws (a failure marks the mirror stale, and
// the next ready() rebuilds it) or says that it throws.
//
// Thread-safety: not thread-safe; only the store's owner thread uses it (the background applier never touches it,
// memory_store.h invariant 7).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "daemon/embed/embedder.h"
#include "daemon/embed/vector_index.h"
#include "daemon/model/memory.h"
#include "daemon/recall/recall_source.h"
#include "daemon/store/pending_usage.h"
#include "daemon/store/store_types.h"
#include "daemon/store/text_index.h"

namespace memq {

class StoreSql;

class RecallMirror {
 public:
  RecallMirror(StoreSql& sql, const Embedder& embedder, std::string path, const PendingUsage& pendingUsage);

  VectorIndex& active() { return *active_; }
  const VectorIndex& active() const { return *active_; }
  VectorIndex& rejected() { return *rejected_; }
  // The text index, or null when SQLite offers no unicode61 tokenizer (SQL answers instead).
  TextIndex* text() { return text_.get(); }

  // Loads everything from the committed rows. Rows without a vector for the current model (older rows, imports) are
  // embedded and stored now, once.
  Status load();
  // Rebuilds the vector indexes and the rest from the committed rows; marks them stale when that fails. While a scan
  // is in flight (ScanInFlight) it only marks them stale: the next reloadIfStale after the scan rebuilds them.
  void reload();
  // reload() when an earlier one failed (or, following another writer, it committed); a StorageError if it fails
  // again.
  Status reloadIfStale();
  bool vectorsStale() const { return vectorsStale_; }
  // Another process writes the database and this store only reads it (SavePipeline::writesElsewhere): a commit of
  // that process's (PRAGMA data_version) then rebuilds the vector indexes too, at the next reloadIfStale, since only
  // the writer's own writes keep them current.
  void followAnotherWriter(bool follow) { followsAnotherWriter_ = follow; }
  // While one lives, a scan of the active index runs on a helper thread: reloadIfStale rebuilds nothing (the index
  // must outlive the scan). Owner's thread only, as every other call.
  class ScanInFlight {
   public:
    explicit ScanInFlight(RecallMirror& mirror) : mirror_(&mirror) { ++mirror_->scansInFlight_; }
    ScanInFlight(ScanInFlight&& other) noexcept : mirror_(std::exchange(other.mirror_, nullptr)) {}
    ScanInFlight(const ScanInFlight&) = delete;
    ScanInFlight& operator=(const ScanInFlight&) = delete;
    ScanInFlight& operator=(ScanInFlight&&) = delete;
    ~ScanInFlight() {
      if (mirror_ != nullptr) --mirror_->scansInFlight_;
    }

   private:
    RecallMirror* mirror_;
  };
  bool scanInFlight() const { return scansInFlight_ > 0; }
  // The text and row figures need a rebuild before they are read (set when an evaluation was cut short).
  void markStale() { rowsStale_ = true; }
  bool rowsStale() const { return rowsStale_; }
  // How many times the rows were read whole (loadRows): at open, and after whatever made them stale.
  uint64_t rowLoads() const { return rowLoads_; }
  // True when the rows can answer: a text index exists and is current (rebuilt here if it was not). Never throws.
  bool ready();
  // Between these, ready() asks SQLite whether another connection committed only once, at its first call: the
  // requests a caller serves under one lock (a recall's lanes, its hits' rows) read one snapshot, and a commit by
  // another connection meanwhile is seen by the next pass. The mirror's own writes refresh it either way.
  void beginReadPass() {
    readPass_ = true;
    passVerified_ = false;
  }
  void endReadPass() { readPass_ = false; }

  // After a committed write: re-reads row `pk` (or drops it when the row is gone). Its text is re-tokenised only
  // when `textChanged`.
  void refreshRow(int64_t pk, bool textChanged = true);
  // refreshRow for a row a save just created, from what was written instead of reading the row back: a new row is
  // active, unused and unpinned, last used when made, with its file refs in path order. `written` are the refs as
  // the save wrote them: an anchor whose content came with its ref is in a version memq keeps.
  void addCreatedRow(int64_t pk, const Memory& created, const std::vector<FileRef>& written);
  bool hasRow(int64_t pk) const { return rows_.count(pk) != 0; }
  // How many rows (in any state) the mirror holds. ready() first.
  size_t rowCount() const { return rows_.size(); }
  // use_count + 1 and last use `at` for each pk (a pk listed twice counts twice), as markUsed wrote them.
  void markUsed(const std::vector<int64_t>& pks, const std::string& at);

  // Active rows attached to any of `paths`, with how many of them, newest use first, then highest pk. ready() first.
  std::vector<FileHit> pathHits(const std::vector<std::string>& paths, int limit) const;
  // The row figures of each pk (null for a row that is gone). ready() first.
  std::vector<const MirroredRow*> rows(const std::vector<int64_t>& pks) const;
  // The anchored refs of the active rows among `pks` on any of `paths`, by path (in `paths`' order) then pk, each
  // with its version's content when memq keeps it. ready() first. Throws on SQLite errors (reading a kept version).
  std::vector<AnchoredRef> anchoredRefsOn(const std::vector<std::string>& paths, const std::vector<int64_t>& pks);

 private:
  // (Re)builds the text index, the row figures and the path map from every row. Throws on SQLite errors.
  void loadRows();
  // Sets a row's last use, keeping each of its paths' lists in order.
  void setLastUsed(MirroredRow& row, const std::string& at);
  // Takes a row and its paths out of the path map.
  void dropRow(int64_t pk);
  void insertRow(int64_t pk, MirroredRow row);
  // Whether another connection changed rows since `version` (PRAGMA data_version) and `others`
  // (StoreSql::othersChanges) were read together; when it committed without changing any, `version` becomes the
  // current one. Throws on SQLite errors.
  bool rowsChangedElsewhere(int64_t& version, const std::optional<int64_t>& others);
  // Records the anchored refs of a row just inserted (insertRow; dropRow took out any it had).
  void addAnchors(int64_t pk, std::vector<MirroredFileRef> files);
  // The content of a version memq keeps, from the cache or the database. Throws on SQLite errors.
  std::shared_ptr<const std::string> keptContent(const std::string& blob);

  StoreSql& sql_;
  const PendingUsage& pendingUsage_;
  const Embedder& embedder_;
  std::string path_;  // the database file, for error messages
  std::unique_ptr<VectorIndex> active_;
  std::unique_ptr<VectorIndex> rejected_;
  std::unique_ptr<TextIndex> text_;
  std::unordered_map<int64_t, MirroredRow> rows_;  // every row (nodes never move: pathRows_ points into them)
  // file path -> rows attached to it, in the file lane's order (newest last use first, then highest pk)
  std::unordered_map<std::string, std::vector<const MirroredRow*>> pathRows_;
  struct PathAnchor {
    int64_t pk = 0;
    const MirroredRow* row = nullptr;  // its row (rows_' nodes never move), for its state
    FileAnchor anchor;                 // keptContent always null here: keptContent() reads it
    bool kept = false;                 // memq keeps the version (else the repository has it)
  };
  // file path -> the anchored refs on it, by pk. Kept by path because recall asks for the refs on the queried
  // files: a walk of one short contiguous list instead of a lookup per candidate.
  std::unordered_map<std::string, std::vector<PathAnchor>> anchorsByPath_;
  // Kept versions' contents by blob id, never stale (a blob id names one content); emptied past kKeptCacheBytes.
  std::unordered_map<std::string, std::shared_ptr<const std::string>> keptCache_;
  size_t keptCacheBytes_ = 0;
  bool readPass_ = false;      // beginReadPass was called, endReadPass not yet
  bool passVerified_ = false;  // the pass has compared data_version
  bool rowsStale_ = false;     // a refresh failed: rebuilt before the next search
  bool vectorsStale_ = false;  // a reload failed: retried before the next write or search
  int64_t dataVersion_ = 0;    // PRAGMA data_version when the rows were last known current
  bool followsAnotherWriter_ = false;
  // PRAGMA data_version read before the vector indexes were loaded: a commit during the load shows as a change.
  int64_t vectorsVersion_ = 0;
  // StoreSql::othersChanges read with vectorsVersion_ and with dataVersion_: another connection's commit that left
  // it as it was changed no row, and the indexes or rows are kept (the version adopted).
  std::optional<int64_t> vectorsOthers_;
  std::optional<int64_t> rowsOthers_;
  size_t scansInFlight_ = 0;  // ScanInFlight guards alive
  uint64_t rowLoads_ = 0;
};

}  // namespace memq
