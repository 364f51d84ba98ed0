// SaveTarget: what the save pipeline (save_pipeline.h) asks of the store it feeds — the rows a save writes, what it
// changes in memory once they are written, and a rebuild of the in-memory indexes after a batch is lost — and the
// values that pass between them (SaveEffects, QueuedSave).
#pragma once

#include <cstdint>
#include <exception>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "daemon/embed/vector_index.h"
#include "daemon/store/save_record.h"
#include "daemon/store/store_types.h"
#include "protocol/status.h"

namespace memq {

// What a save changes in memory (vector index, mirror), applied once its rows are written.
struct SaveEffects {
  SaveOutcome outcome;
  std::optional<std::pair<int64_t, std::vector<float>>> activeVector;
  std::optional<int64_t> refreshPk;
};

// A save answered on the caller's thread, queued for the applier with what its rows need.
struct QueuedSave {
  SaveRecord record;
  int64_t pk = 0;
  std::vector<float> vec;
  std::vector<VectorIndex::Hit> neighbours;
};

// What the pipeline asks of the store it feeds.
class SaveTarget {
 public:
  virtual ~SaveTarget() = default;
  // The rows of one save, inside the open transaction. Throws on SQLite errors; changes nothing in memory.
  virtual SaveEffects applySave(const SaveRecord& record) = 0;
  // Applies a save's effects to the in-memory indexes, once its rows are written.
  virtual void publish(const SaveRecord& record, SaveEffects& effects) = 0;
  // A queued save's rows (on the applier thread). Throws on SQLite errors; changes nothing in memory.
  virtual void writeQueuedSave(const QueuedSave& save) = 0;
  // Rebuilds the in-memory indexes from the committed rows.
  virtual void reloadIndexes() = 0;
  // reloadIndexes() when an earlier one failed; not OK if it fails again.
  virtual Status reloadIndexesIfStale() = 0;
  // A scan of the in-memory vector index runs on a helper thread (a recall's semantic lane): nothing may change
  // the index until it ends, so a replay of the journal waits for the next call after it.
  virtual bool indexesInUse() const = 0;
  // OK while the database and the journal at their paths are the files opened.
  virtual Status checkFilesInPlace() const = 0;
  // The database at its path is the file opened (a batch never commits into another).
  virtual bool databaseInPlace() const = 0;
  // A StorageError naming the store's scope and file, from an exception or from a Status.
  virtual Status storageError(const std::exception& e, const std::string& context) const = 0;
  virtual Status storageError(const Status& cause, const std::string& context) const = 0;
};

}  // namespace memq
