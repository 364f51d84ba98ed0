// FileStamp: a file's identity as stat(2) reports it (device, inode, size, modification and change times), to tell
// that a file read before is unchanged without reading it again, the way git's index does. A file written twice
// within its file system's timestamp granularity could keep all five, so a stamp is only trusted once the file has
// not been written for kSettleNs before it was read (git calls the other case "racily clean" and re-reads it).
// PathStamps: several paths' stamps taken together, to tell later that none of them changed and whether they could be
// trusted when taken.
// Pure but for the lstat calls (FileStamp::ofPath, PathStamps::add and unchanged); safe from any thread, a PathStamps
// as safe as any value.
#pragma once

#include <sys/stat.h>
#include <time.h>

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace memq {

struct FileStamp {
  // Two seconds: coarser than any file system memq runs on (ext4, xfs, btrfs and tmpfs keep nanoseconds; FAT two
  // seconds).
  static constexpr int64_t kSettleNs = int64_t{2'000'000'000};

  uint64_t device = 0;
  uint64_t inode = 0;
  int64_t size = 0;
  int64_t modifiedNs = 0;
  int64_t changedNs = 0;

  static FileStamp of(const struct stat& st) {
    FileStamp s;
    s.device = static_cast<uint64_t>(st.st_dev);
    s.inode = static_cast<uint64_t>(st.st_ino);
    s.size = static_cast<int64_t>(st.st_size);
    s.modifiedNs = int64_t{st.st_mtim.tv_sec} * 1'000'000'000 + st.st_mtim.tv_nsec;
    s.changedNs = int64_t{st.st_ctim.tv_sec} * 1'000'000'000 + st.st_ctim.tv_nsec;
    return s;
  }

  // The stamp of what is at `path` itself (lstat: a symbolic link's own), or nullopt when nothing is there.
  static std::optional<FileStamp> ofPath(const std::string& path) {
    struct stat st {};
    if (lstat(path.c_str(), &st) != 0) return std::nullopt;
    return of(st);
  }

  // The wall clock now, in the stamps' unit.
  static int64_t nowNs() {
    timespec ts{};
    clock_gettime(CLOCK_REALTIME, &ts);
    return int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec;
  }

  // Whether what was read of the file at `readAtNs` can stand for it while its stamp stays the same.
  // `settleNs`: how long it must have been left alone (kSettleNs unless a caller's tests shorten it).
  bool settledAt(int64_t readAtNs, int64_t settleNs = kSettleNs) const {
    return readAtNs - std::max(modifiedNs, changedNs) >= settleNs;
  }

  friend bool operator==(const FileStamp&, const FileStamp&) = default;
};

class PathStamps {
 public:
  // A path and its stamp when added; none when nothing was there.
  using Entry = std::pair<std::string, std::optional<FileStamp>>;

  // Stamps `path` now.
  void add(std::string path) {
    std::optional<FileStamp> stamp = FileStamp::ofPath(path);
    entries_.emplace_back(std::move(path), stamp);
  }

  // Whether every path's stamp is still the one added (a path that had nothing still has nothing).
  bool unchanged() const {
    return std::all_of(entries_.begin(), entries_.end(),
                       [](const Entry& e) { return FileStamp::ofPath(e.first) == e.second; });
  }

  // Whether every stamp had settled at `readAtNs` (FileStamp::settledAt); a path that had nothing needs no settling.
  bool settledAt(int64_t readAtNs, int64_t settleNs = FileStamp::kSettleNs) const {
    return std::all_of(entries_.begin(), entries_.end(),
                       [&](const Entry& e) { return !e.second || e.second->settledAt(readAtNs, settleNs); });
  }

  // Whether `other` stamped the same paths in the same order, whatever their stamps.
  bool samePaths(const PathStamps& other) const {
    return std::equal(entries_.begin(), entries_.end(), other.entries_.begin(), other.entries_.end(),
                      [](const Entry& a, const Entry& b) { return a.first == b.first; });
  }

  bool empty() const { return entries_.empty(); }
  void clear() { entries_.clear(); }
  const std::vector<Entry>& entries() const { return entries_; }

  friend bool operator==(const PathStamps&, const PathStamps&) = default;

 private:
  std::vector<Entry> entries_;
};

}  // namespace memq
