// The inotify watch of a set of directories; see directory_watch.h.
#include "daemon/git/directory_watch.h"

#include <sys/inotify.h>
#include <unistd.h>

#include <cerrno>

namespace memq {

std::unique_ptr<DirectoryWatch> DirectoryWatch::open(const std::vector<std::string>& directories) {
  if (directories.size() > kMaxDirectories) return nullptr;
  const int fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
  if (fd < 0) return nullptr;
  std::unique_ptr<DirectoryWatch> watch(new DirectoryWatch(fd));
  // An entry created, removed or moved in or out, and the directory itself removed or moved; not writes to files.
  constexpr uint32_t kMask = IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO | IN_DELETE_SELF | IN_MOVE_SELF |
                             IN_ONLYDIR | IN_DONT_FOLLOW;
  for (const std::string& directory : directories) {
    if (inotify_add_watch(fd, directory.c_str(), kMask) >= 0) continue;
    if (errno == ENOENT || errno == ENOTDIR) continue;  // not there now: its parent sees it come
    return nullptr;  // ENOSPC (the user's limit), ENOMEM, EACCES: the caller falls back to stamps
  }
  return watch;
}

DirectoryWatch::~DirectoryWatch() { ::close(fd_); }

bool DirectoryWatch::changed() {
  if (changed_) return true;
  // Any event at all is a change (IN_Q_OVERFLOW and IN_IGNORED included); what it was does not matter.
  alignas(struct inotify_event) char buffer[4096];
  const ssize_t n = ::read(fd_, buffer, sizeof buffer);
  if (n != -1 || errno != EAGAIN) changed_ = true;  // an event, or a read that failed: nothing can be trusted
  return changed_;
}

}  // namespace memq
