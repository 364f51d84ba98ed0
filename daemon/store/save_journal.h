// SaveJournal: memq's own redo log for saves that are acknowledged before their SQLite transaction commits (a
// store that batches saves, see StoreOptions::saveBatch). It is a file beside the database,
// `<database>-saves`, owned by the one process that owns the database.
//
// Layout: a 16-byte header ("memqsj1\n", then a sequence number N as a little-endian uint64: every record numbered
// below N is committed), then one record per save: its length (uint32 LE), a checksum of its bytes (FNV-1a 64, LE)
// and the bytes (the save as JSON). Each record is written with one pwrite(2) at the end of the records before the
// save is acknowledged, so a killed process leaves every acknowledged save in the file (the kernel holds the bytes;
// like SQLite's synchronous=NORMAL, only a power loss can take the last ones). Each record carries its sequence
// number (in its JSON, see save_record.h); the database records the last one it committed, and at open the records
// above it, and not below the header's N, are replayed. After a commit the file is emptied (N: the next number) if
// it holds nothing newer (saves applied in the background keep being appended while a batch commits), else N is
// rewritten in place: so a database created again at the path (its applied number back to 0) is never given the
// saves the deleted one had committed.
//
// A record cut short, or whose checksum does not match, ends the records read: it was being appended when the
// process died, so its save was never acknowledged. Its bytes are cut before anything is appended (recover()), or a
// record appended after them would be unreadable too.
//
// Not O_APPEND: the header is rewritten in place, and a record is written where the records end (size()), so bytes
// a failed write left that could not be cut are overwritten, never followed.
//
// Thread-safety: not thread-safe; the owning SavePipeline serialises every call (under its mutex_ once its applier
// thread runs).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "daemon/store/save_record.h"
#include "protocol/status.h"

namespace memq {

class SaveJournal {
 public:
  // The largest record: a valid save's (kMaxSaveRecordBytes); anything longer is damage.
  static constexpr uint32_t kMaxRecordBytes = static_cast<uint32_t>(kMaxSaveRecordBytes);

  struct Contents {
    uint64_t committedBelow = 0;       // the header's N (0: an empty, or new, file)
    std::vector<std::string> records;  // in the order they were appended, up to the first that is not whole
    bool tornTail = false;             // bytes follow the last whole record (a torn append, or damage)
    uint64_t wholeBytes = 0;           // where the last whole record (or the header) ends
    // Whole records found after the first bad one: damage inside the file, not a torn append. They are not among
    // `records` (what follows damage is not trusted), and recover() cuts them with it.
    size_t recordsAfterDamage = 0;
    std::string damagedCopy;  // recover(): where the file as found was kept when records followed damage
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
  // read(), then the bytes after the last whole record cut from the file (Contents says how many, and whether whole
  // records were among them), so that the next record follows a whole one. Before the first append of an owner.
  // When whole records follow damage, the file as found is first copied to `<path>.damaged-<unix time>`.
  Result<Contents> recover();
  // Appends one record (at most kMaxRecordBytes). On failure the file is cut back to where it was; if even that
  // fails, the next record is written over what the failed one left, so no partial record precedes later ones.
  Status append(const std::string& record);
  // Empties the file and starts it with `committedBelow` (> 0) in the header.
  Status reset(uint64_t committedBelow);
  // Rewrites the header's number: every record numbered below `committedBelow` is committed. A file shorter than
  // a header (new, or emptied) is left as it is: it holds no record.
  Status markCommittedBelow(uint64_t committedBelow);
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
