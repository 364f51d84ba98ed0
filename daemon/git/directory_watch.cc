// The inotify watch of a set of directories; see directory_watch.h.
#include "daemon/git/directory_watch.h"

#include <linux/magic.h>
#include <sys/inotify.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <fstream>

namespace memq {
namespace {

// File systems whose every change is made through this kernel, so inotify sees them all. Not NFS, CIFS, 9p (WSL's
// /mnt), virtiofs or FUSE (sshfs): there another machine's changes raise no event.
bool localFileSystem(const std::string& path) {
  struct statfs fs {};
  if (statfs(path.c_str(), &fs) != 0) return false;
  constexpr unsigned long kXfs = 0x58465342, kF2fs = 0xF2F52010, kZfs = 0x2FC12FC1;
  switch (static_cast<unsigned long>(fs.f_type)) {
    case EXT4_SUPER_MAGIC:  // ext2 and ext3 too
    case BTRFS_SUPER_MAGIC:
    case TMPFS_MAGIC:
    case OVERLAYFS_SUPER_MAGIC:
    case kXfs:
    case kF2fs:
    case kZfs:
      return true;
    default:
      return false;
  }
}

// An entry created, removed or moved in or out, and the directory itself removed or moved; not writes to files.
constexpr uint32_t kMask =
    IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO | IN_DELETE_SELF | IN_MOVE_SELF | IN_ONLYDIR | IN_DONT_FOLLOW;

// The directories every watch of this process holds: the budget is the process's, not one watch's, so that many
// projects open at once cannot take the user's inotify watches from editors and build tools between them.
std::atomic<size_t> gDirectoriesWatched{0};

bool reserveDirectories(size_t n) {
  const size_t budget = DirectoryWatch::directoryBudget();
  size_t now = gDirectoriesWatched.load();
  do {
    if (now + n > budget) return false;
  } while (!gDirectoriesWatched.compare_exchange_weak(now, now + n));
  return true;
}

}  // namespace

size_t DirectoryWatch::directoriesWatched() { return gDirectoriesWatched.load(); }

size_t DirectoryWatch::directoryBudget() {
  size_t limit = 8192;  // the kernels' default before it grew with memory
  std::ifstream in("/proc/sys/fs/inotify/max_user_watches");
  if (!(in >> limit)) limit = 8192;
  return std::min(kMaxDirectories, limit / 8);
}

std::unique_ptr<DirectoryWatch> DirectoryWatch::open(const std::vector<std::string>& directories) {
  if (directories.empty() || !localFileSystem(directories.front()) || !reserveDirectories(directories.size())) {
    return nullptr;
  }
  const int fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
  if (fd < 0) {  // EMFILE: the user's instances (fs.inotify.max_user_instances) are taken
    gDirectoriesWatched -= directories.size();
    return nullptr;
  }
  std::unique_ptr<DirectoryWatch> watch(new DirectoryWatch(fd, directories.size()));
  if (!watch->watchAll(directories)) return nullptr;
  return watch;
}

bool DirectoryWatch::watchAll(const std::vector<std::string>& directories) {
  for (size_t i = 0; i < directories.size(); ++i) {
    if (inotify_add_watch(fd_, directories[i].c_str(), kMask) >= 0) continue;
    // Not there now: its creation shows in its parent, which is watched; but nothing shows the top's.
    if (i > 0 && (errno == ENOENT || errno == ENOTDIR)) continue;
    return false;  // ENOSPC (the user's limit), ENOMEM, EACCES: the caller falls back to stamps
  }
  return true;
}

DirectoryWatch::~DirectoryWatch() {
  ::close(fd_);
  gDirectoriesWatched -= reserved_;
}

DirectoryWatch::Queue DirectoryWatch::takeEvents() {
  // Any event at all is a change (IN_Q_OVERFLOW and IN_IGNORED included); what it was does not matter.
  alignas(struct inotify_event) char buffer[4096];
  const ssize_t n = ::read(fd_, buffer, sizeof buffer);
  if (n > 0) return Queue::kEvents;
  return n == -1 && errno == EAGAIN ? Queue::kEmpty : Queue::kFailed;
}

bool DirectoryWatch::changed() {
  // An event, or a read that failed: nothing can be trusted.
  if (!changed_ && takeEvents() != Queue::kEmpty) changed_ = true;
  return changed_;
}

bool DirectoryWatch::rearm(const std::vector<std::string>& directories) {
  // Drop what is queued first: an event from here on is a change after the caller's next read.
  Queue queue;
  while ((queue = takeEvents()) == Queue::kEvents) {
  }
  if (queue == Queue::kFailed) return false;
  if (directories.size() > reserved_) {
    if (!reserveDirectories(directories.size() - reserved_)) return false;
  } else {
    gDirectoriesWatched -= reserved_ - directories.size();
  }
  reserved_ = directories.size();
  changed_ = false;
  // Adding a watch on a directory watched already only renews it; a directory made (or replaced) since is new.
  return watchAll(directories);
}

}  // namespace memq
