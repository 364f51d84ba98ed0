// Crash-safe replacement and durable writes of small files; see durable_file.h.
#include "daemon/util/durable_file.h"

#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "protocol/error_code.h"

namespace memq {

Status fsyncPath(const std::string& path, int flags) {
  const int fd = ::open(path.c_str(), flags | O_CLOEXEC);
  if (fd < 0) return Status(ErrorCode::kStorageError, "cannot open " + path + ": " + std::strerror(errno));
  const int rc = ::fsync(fd);
  const int err = errno;
  ::close(fd);
  if (rc != 0) return Status(ErrorCode::kStorageError, "cannot fsync " + path + ": " + std::strerror(err));
  return Status::ok();
}

Status writeAllAndSync(int fd, std::string_view text, const std::string& path) {
  size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Status(ErrorCode::kStorageError, "cannot write " + path + ": " + std::strerror(errno));
    done += static_cast<size_t>(n);
  }
  if (::fsync(fd) != 0) return Status(ErrorCode::kStorageError, "cannot fsync " + path + ": " + std::strerror(errno));
  return Status::ok();
}

Status replaceFileDurably(const std::string& path, std::string_view text) {
  // A name of its own, created here (mkstemp: O_EXCL, mode 0600): a file or a symlink already at a fixed name (a
  // `.memq` in a downloaded tree may hold one pointing anywhere) is never opened, truncated or written through.
  std::string tmp = path + ".tmp.XXXXXX";
  const int fd = ::mkostemp(tmp.data(), O_CLOEXEC);
  if (fd < 0) return Status(ErrorCode::kStorageError, "cannot create " + tmp + ": " + std::strerror(errno));
  Status st = writeAllAndSync(fd, text, tmp);
  ::close(fd);
  if (!st) {
    ::unlink(tmp.c_str());
    return st;
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    const int err = errno;
    ::unlink(tmp.c_str());
    return Status(ErrorCode::kStorageError, "cannot rename " + tmp + " to " + path + ": " + std::strerror(err));
  }
  const std::filesystem::path dir = std::filesystem::path(path).parent_path();
  return fsyncPath(dir.empty() ? std::string(".") : dir.string(), O_RDONLY | O_DIRECTORY);
}

}  // namespace memq
