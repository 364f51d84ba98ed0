// DirectoryWatch: whether any entry of a set of directories was created, removed or moved since the watch began, or
// one of the directories itself was removed or moved (inotify). Exact where a directory's times are not: the kernel
// queues the event within the system call that changes the directory, so a change made before a later changed() is
// always seen by it, however soon after the watch began.
// Used by RenameMap to keep the work tree's deleted files between lookups without a stat per directory.
// Thread-safety: none; its owner serialises calls.
#pragma once

#include <memory>
#include <string>
#include <vector>

namespace memq {

class DirectoryWatch {
 public:
  // At most this many directories are watched: each is a kernel watch, counted against the user's limit
  // (fs.inotify.max_user_watches) that editors and other tools share.
  static constexpr size_t kMaxDirectories = 4096;

  // A watch over `directories` (absolute paths). A directory that is not there (or not a directory) is left out:
  // its creation shows in a watched parent. Null when inotify is unavailable, a watch cannot be added (the user's
  // limit), or there are more than kMaxDirectories.
  static std::unique_ptr<DirectoryWatch> open(const std::vector<std::string>& directories);
  ~DirectoryWatch();
  DirectoryWatch(const DirectoryWatch&) = delete;
  DirectoryWatch& operator=(const DirectoryWatch&) = delete;

  // True once anything happened in a watched directory since open() (including the kernel's queue overflowing),
  // and from then on.
  bool changed();

 private:
  explicit DirectoryWatch(int fd) : fd_(fd) {}

  int fd_;
  bool changed_ = false;
};

}  // namespace memq
