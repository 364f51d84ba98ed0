// DirectoryWatch: whether any entry of a set of directories was created, removed or moved since the watch was
// (re)armed, or one of the directories itself was removed or moved (inotify). Exact where a directory's times are
// not: the kernel queues the event within the system call that changes the directory, so a change made before a
// later changed() is always seen by it, however soon after the watch was armed. Only on file systems whose changes
// all go through this kernel (ext4, xfs, btrfs, tmpfs, overlay, f2fs, zfs): over NFS, 9p, virtiofs or FUSE another
// machine's changes raise no event.
// Used by RenameMap to keep the work tree's deleted files between lookups without a stat per directory.
// Thread-safety: none; its owner serialises calls.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

namespace memq {

class DirectoryWatch {
 public:
  // At most this many directories are watched by all the watches of the process together, and at most an eighth of
  // the user's limit (fs.inotify.max_user_watches), which editors and other tools share.
  static constexpr size_t kMaxDirectories = 4096;
  static size_t directoryBudget();
  // The directories the process's watches hold now.
  static size_t directoriesWatched();

  // A watch over `directories` (absolute paths, the first the top of the tree, which must be there). A directory
  // below it that is not there (or not a directory) is left out: its creation shows in a watched parent. Null when
  // the top is missing or not on a local file system, inotify is unavailable, a watch cannot be added (the user's
  // limit), or the process's watches would then hold more directories than directoryBudget().
  static std::unique_ptr<DirectoryWatch> open(const std::vector<std::string>& directories);
  ~DirectoryWatch();
  DirectoryWatch(const DirectoryWatch&) = delete;
  DirectoryWatch& operator=(const DirectoryWatch&) = delete;

  // True once anything happened in a watched directory since the watch was armed (including the kernel's queue
  // overflowing), and from then on.
  bool changed();
  // Arms the watch again over the same directories without a new inotify instance (closing one waits for the
  // kernel): the events so far are dropped and the directories watched again (one made since is added, one
  // replaced is watched anew). False when that fails; then the watch must not be used.
  bool rearm(const std::vector<std::string>& directories);

 private:
  enum class Queue { kEmpty, kEvents, kFailed };

  DirectoryWatch(int fd, size_t reserved) : fd_(fd), reserved_(reserved) {}
  bool watchAll(const std::vector<std::string>& directories);
  // Takes what is queued, up to a buffer's worth.
  Queue takeEvents();

  int fd_;
  size_t reserved_;  // of the process's budget (directoryBudget), given back when the watch goes
  bool changed_ = false;
};

}  // namespace memq
