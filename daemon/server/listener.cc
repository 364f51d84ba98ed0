// The listening socket; see listener.h.
#include "daemon/server/listener.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>


namespace memq {

namespace {

bool fillAddress(const std::string& path, sockaddr_un& addr) {
  std::memset(&addr, 0, sizeof addr);
  addr.sun_family = AF_UNIX;
  if (path.size() >= sizeof(addr.sun_path)) return false;
  std::memcpy(addr.sun_path, path.c_str(), path.size());
  return true;
}

Status errnoStatus(const std::string& what) {
  return Status(ErrorCode::kInternalError, what + ": " + std::strerror(errno));
}

std::string readPid(const std::string& socketPath) {
  std::ifstream in(pidFilePathFor(socketPath));
  std::string pid;
  in >> pid;
  return pid;
}

// What systemd passes for a ListenStream= unit: a listening AF_UNIX stream socket. Anything else on fd 3 (a file,
// a closed descriptor, a connected socket) means the environment is wrong, and serving it would fail obscurely.
bool isListeningUnixStream(int fd, std::string& why) {
  struct stat st{};
  if (::fstat(fd, &st) != 0) {
    why = std::string("it is not open (") + std::strerror(errno) + ")";
    return false;
  }
  if (!S_ISSOCK(st.st_mode)) {
    why = "it is not a socket";
    return false;
  }
  int type = 0, listening = 0;
  socklen_t len = sizeof type;
  sockaddr_storage addr{};
  socklen_t addrLen = sizeof addr;
  if (::getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &len) != 0 || type != SOCK_STREAM ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &addrLen) != 0 || addr.ss_family != AF_UNIX) {
    why = "it is not a Unix stream socket";
    return false;
  }
  len = sizeof listening;
  if (::getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &len) != 0 || !listening) {
    why = "it is not listening";
    return false;
  }
  return true;
}

std::string describeFileType(mode_t mode) {
  if (S_ISLNK(mode)) return "a symbolic link";
  if (S_ISREG(mode)) return "a regular file";
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISCHR(mode) || S_ISBLK(mode)) return "a device";
  return "not a socket";
}

// Creates each missing directory of `dir` with mode 0700 (the umask cannot widen it). A directory that exists is
// left exactly as it is: memqd changes the mode of nothing it did not create.
Status createMissingDirectories(const std::string& dir) {
  std::filesystem::path built;
  for (const auto& part : std::filesystem::path(dir)) {
    built /= part;
    struct stat st{};
    if (::stat(built.c_str(), &st) == 0) continue;
    if (::mkdir(built.c_str(), 0700) != 0 && errno != EEXIST) {
      return errnoStatus("cannot create the socket directory " + built.string());
    }
  }
  return Status::ok();
}

// Whether a directory (or a symbolic link on the way) lets someone other than memqd's user (or root) replace what
// it holds: owned by another user, or writable by group or others without the sticky bit (as /tmp has it).
std::string unsafeBecause(const struct stat& st, uid_t self) {
  if (st.st_uid != self && st.st_uid != 0) {
    return "belongs to uid " + std::to_string(st.st_uid) + ", neither memqd's uid " + std::to_string(self) +
           " nor root";
  }
  if (S_ISDIR(st.st_mode) && (st.st_mode & (S_IWGRP | S_IWOTH)) != 0 && (st.st_mode & S_ISVTX) == 0) {
    return "is writable by group or others without the sticky bit";
  }
  return "";
}

// The socket's directory and every directory above it, both as written (a symbolic link on the way must be
// memqd's or root's) and as resolved, must be safe: otherwise another user could swap the socket for their own.
Status checkSocketDirectory(const std::string& dir) {
  const uid_t self = ::geteuid();
  auto refuse = [&](const std::string& which, const std::string& why) {
    return Status(ErrorCode::kForbidden, "socket directory " + dir + ": " + which + " " + why +
                                             "; memqd does not change it: choose another --socket, or fix its "
                                             "owner or mode (chmod go-w, or chmod +t)");
  };
  std::error_code ec;
  const std::filesystem::path written = std::filesystem::absolute(dir, ec);
  if (ec) return Status(ErrorCode::kInternalError, "cannot resolve " + dir + ": " + ec.message());
  std::filesystem::path prefix;
  for (const auto& part : written) {
    prefix /= part;
    struct stat st{};
    if (::lstat(prefix.c_str(), &st) != 0) return errnoStatus("cannot inspect " + prefix.string());
    if (std::string why = unsafeBecause(st, self); !why.empty()) return refuse(prefix.string(), why);
  }
  const std::filesystem::path real = std::filesystem::canonical(dir, ec);
  if (ec) return Status(ErrorCode::kInternalError, "cannot resolve " + dir + ": " + ec.message());
  prefix.clear();
  for (const auto& part : real) {
    prefix /= part;
    struct stat st{};
    if (::stat(prefix.c_str(), &st) != 0) return errnoStatus("cannot inspect " + prefix.string());
    if (std::string why = unsafeBecause(st, self); !why.empty()) return refuse(prefix.string(), why);
  }
  struct stat st{};
  if (::stat(real.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    return Status(ErrorCode::kForbidden, "socket directory " + dir + " is not a directory");
  }
  return Status::ok();
}

// Opens and locks `<path>.lock` without following a symbolic link, and only a regular file of memqd's user: the
// socket's directory may be shared (/tmp), where another user could plant either.
Result<int> lockSocketPath(const std::string& path) {
  const std::string lockPath = socketLockPathFor(path);
  int fd = ::open(lockPath.c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) {
    return Status(ErrorCode::kForbidden,
                  "cannot open the lock file " + lockPath + ": " + std::strerror(errno) +
                      (errno == ELOOP ? " (it is a symbolic link; memqd does not follow it)" : ""));
  }
  struct stat st{};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != ::geteuid()) {
    ::close(fd);
    return Status(ErrorCode::kForbidden,
                  "the lock file " + lockPath + " is not a regular file of memqd's user; memqd leaves it alone");
  }
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    const int err = errno;
    ::close(fd);
    if (err == EWOULDBLOCK) {
      std::string pid = readPid(path);
      return Status(ErrorCode::kConflict, "another memqd" + (pid.empty() ? std::string() : " (pid " + pid + ")") +
                                              " is already serving or starting on " + path);
    }
    errno = err;
    return errnoStatus("cannot lock " + lockPath);
  }
  return fd;
}


// The stale-socket check, bind and listen, under the lock of lockSocketPath.
Result<ListeningSocket> bindUnderLock(const std::string& path, sockaddr_un addr) {
  struct stat st{};
  if (::lstat(path.c_str(), &st) == 0) {
    if (S_ISLNK(st.st_mode) || !S_ISSOCK(st.st_mode)) {
      return Status(ErrorCode::kForbidden, path + " exists and is " + describeFileType(st.st_mode) +
                                               ", not a socket; memqd does not replace it: remove it or choose "
                                               "another --socket");
    }
    if (socketIsLive(path)) {
      std::string pid = readPid(path);
      return Status(ErrorCode::kConflict, "another memqd" + (pid.empty() ? std::string() : " (pid " + pid + ")") +
                                              " is already serving " + path);
    }
    // Stale: a socket nobody accepts on, left by a memqd that was killed.
    if (::unlink(path.c_str()) != 0 && errno != ENOENT) return errnoStatus("cannot remove the stale socket " + path);
  } else if (errno != ENOENT) {
    return errnoStatus("cannot inspect " + path);
  }
  int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return errnoStatus("socket");
  mode_t old = ::umask(0177);  // the socket is born 0600: no window where others could connect
  int rc = ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
  ::umask(old);
  if (rc != 0) {
    Status s = errnoStatus("cannot bind " + path);
    ::close(fd);
    return s;
  }
  // No chmod after bind: chmod follows symlinks, and the umask already made the socket 0600.
  if (::listen(fd, 512) != 0) {
    Status s = errnoStatus("listen");
    ::close(fd);
    return s;
  }
  return ListeningSocket{fd, path, false};
}

}  // namespace

std::string pidFilePathFor(const std::string& socketPath) {
  return (std::filesystem::path(socketPath).parent_path() / "memqd.pid").string();
}

bool socketIsLive(const std::string& path) {
  sockaddr_un addr{};
  if (!fillAddress(path, addr)) return false;
  int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  bool live = ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
  ::close(fd);
  return live;
}

long peerUid(int fd) {
  ucred cred{};
  socklen_t len = sizeof cred;
  if (::getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0) return -1;
  return static_cast<long>(cred.uid);
}

bool peerAllowed(long peer, uid_t self, std::string* why) {
  if (peer == static_cast<long>(self)) return true;
  if (why) {
    *why = peer < 0 ? "the peer's credentials could not be read"
                    : "peer uid " + std::to_string(peer) + " is not the daemon's uid " + std::to_string(self);
  }
  return false;
}

Result<ListeningSocket> openListeningSocket(const std::string& path) {
  // systemd socket activation: fds start at 3 and LISTEN_PID names us.
  if (const char* fds = std::getenv("LISTEN_FDS")) {
    const char* pid = std::getenv("LISTEN_PID");
    if (pid && std::atol(pid) == static_cast<long>(::getpid()) && std::atoi(fds) >= 1) {
      ::unsetenv("LISTEN_FDS");
      ::unsetenv("LISTEN_PID");
      ::unsetenv("LISTEN_FDNAMES");
      std::string why;
      if (!isListeningUnixStream(3, why)) {
        return Status(ErrorCode::kInternalError,
                      std::string("LISTEN_FDS=") + fds + " names this process, but file descriptor 3 cannot be served: " +
                          why + "; expected the listening Unix socket passed by socket activation");
      }
      ::fcntl(3, F_SETFD, FD_CLOEXEC);
      return ListeningSocket{3, path, true};
    }
  }
  sockaddr_un addr{};
  if (!fillAddress(path, addr)) {
    return Status(ErrorCode::kInvalidParams, "socket path too long (" + std::to_string(path.size()) + " bytes): " + path);
  }
  const std::string dir = std::filesystem::path(path).parent_path().string();
  MEMQ_RETURN_IF_ERROR(createMissingDirectories(dir.empty() ? "." : dir));
  MEMQ_RETURN_IF_ERROR(checkSocketDirectory(dir.empty() ? "." : dir));
  auto lock = lockSocketPath(path);
  if (!lock) return lock.status();
  auto opened = bindUnderLock(path, addr);
  if (!opened) {
    ::close(*lock);
    return opened.status();
  }
  opened->lockFd = *lock;
  return opened;
}

std::string socketLockPathFor(const std::string& socketPath) { return socketPath + ".lock"; }


}  // namespace memq
