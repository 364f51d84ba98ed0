// TeamOutbox: the team saves memqd accepted while the team server could not be reached (docs/team.md, "Offline"),
// one record per save in one file in memqd's data dir (team/<key>.outbox): appended and fsynced before the save is
// answered "queued", sent by the sync thread in order once the server is back, and removed only after the server
// answered. A crash between the server's commit and the removal sends the record again: harmless, since the server
// dedups by content hash (the replay answers `deduped`). A torn last line (a crash mid-append, never acknowledged)
// is ignored. A record leaves by what it is, not by its place, and each access to the file holds an flock on a lock
// file beside it (<key>.outbox.lock): two drains of one outbox (two memqds on one data dir) never remove a record
// the other appended.
// Thread-safety: thread-safe (one mutex around the file, and the flock across processes).
#pragma once

#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "daemon/model/memory_input.h"
#include "daemon/util/thread_annotations.h"
#include "protocol/status.h"

namespace memq {

struct OutboxRecord {
  std::string projectRoot;  // the root the save's file paths are relative to
  SaveInput input;          // scrubbed, as the service would have sent it
  std::string line;         // as load() read it from the file (what remove() takes out); empty on a new record
};

class TeamOutbox {
 public:
  explicit TeamOutbox(std::string path) : path_(std::move(path)) {}

  const std::string& path() const { return path_; }
  // Appends one record and fsyncs the file (and, the first time, its directory).
  Status append(const OutboxRecord& record);
  // The records in the order they were appended.
  Result<std::vector<OutboxRecord>> load();
  // Removes the first line that is `record`'s (as load() read it), wherever it now is; nothing when another drain
  // removed it already (written to a new file, fsynced, renamed over the old one).
  Status remove(const OutboxRecord& record);
  size_t size();

 private:
  Result<std::vector<std::string>> lines() REQUIRES(mutex_);

  std::string path_;
  Mutex mutex_;
};

}  // namespace memq
