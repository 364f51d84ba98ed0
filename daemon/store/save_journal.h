// SaveJournal: memq's own redo log for saves that are acknowledged before their SQLite transaction commits (a
// store that batches saves, see StoreOptions::saveBatch). It is a file beside the database,
// `<database>-saves`, owned by the one process that owns the database.
//
// Layout: a 16-byte header ("memqsj1\n", then the batch number as a little-endian uint64), then one record per
// save: its length (uint32 LE), a checksum of its bytes (FNV-1a 64, LE) and the bytes (the save as JSON). Each
// record is appended with one write(2) before the save is acknowledged, so a killed process leaves every
// acknowledged save in the file (the kernel holds the bytes; like SQLite's synchronous=NORMAL, only a power loss can
// take the last ones). Each record carries its sequence number (in its JSON, see save_record.h); the database records
// the last one it committed, and at open the records above it are replayed. After a commit the file is emptied if
// it holds nothing newer (saves applied in the background keep being appended while a batch commits). The header's
// batch number is the first sequence number the emptied file was started for.
//
// A record cut short, or whose checksum does not match, ends the records read: it was being appended when the
// process died, so its save was never acknowledged.
//
// Thread-safety: not thread-safe; the owning SavePipeline serialises every call (under its mutex_ once its applier
// thread runs).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "protocol/status.h"

namespace memq {

class SaveJournal {
 public:
  struct Contents {
    uint64_t batch = 0;                // 0: an empty (or new) file
    std::vector<std::string> records;  // in the order they were appended
    bool tornTail = false;             // bytes after the last whole record were dropped
  };

  // Opens (creating, mode 0600) the journal at `path` without changing its contents, and locks it (flock) for this
  // process: Conflict when another process holds it. A symlink at the path, or a file that is not memqd's user's or
  // that others may write, is refused (ScopeUnavailable) and left as it is.
  static Result<std::unique_ptr<SaveJournal>> open(const std::string& path);
  ~SaveJournal();
  SaveJournal(const SaveJournal&) = delete;
  SaveJournal& operator=(const SaveJournal&) = delete;

  const std::string& path() const { return path_; }
  // The identity of the file open (st_dev, st_ino at open), to tell whether the file at path() is still it.
  uint64_t device() const { return device_; }
  uint64_t inode() const { return inode_; }

  // What the file holds. A header that is not memq's gives an error naming the file: it is not silently discarded.
  Result<Contents> read() const;
  // Appends one record. On failure the file is cut back to where it was, so no partial record precedes later ones.
  Status append(const std::string& record);
  // Empties the file and starts batch `batch` (> 0).
  Status reset(uint64_t batch);
  // Bytes in the file: what append() started from, for truncateTo().
  uint64_t size() const { return size_; }
  // Drops the records appended after `size` (a save that was written to the journal but then failed).
  Status truncateTo(uint64_t size);

 private:
  SaveJournal(std::string path, int fd, uint64_t size, uint64_t device, uint64_t inode)
      : path_(std::move(path)), fd_(fd), size_(size), device_(device), inode_(inode) {}
  Status ioError(const std::string& what, int err) const;

  std::string path_;
  int fd_ = -1;
  uint64_t size_ = 0;
  uint64_t device_ = 0;
  uint64_t inode_ = 0;
};

}  // namespace memq
