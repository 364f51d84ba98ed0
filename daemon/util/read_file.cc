// Bounded whole-file reads; see read_file.h.
#include "daemon/util/read_file.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>

namespace memq {

std::optional<std::string> readAllAndClose(int fd, std::size_t limit, std::size_t sizeHint) {
  std::string bytes;
  bytes.reserve(std::min(sizeHint, limit) + 1);
  char buffer[65536];
  std::optional<std::string> out;
  for (;;) {
    const ssize_t n = ::read(fd, buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) break;  // out stays empty: the read failed
    bytes.append(buffer, static_cast<std::size_t>(n));
    if (n == 0 || bytes.size() > limit) {
      out = std::move(bytes);
      break;
    }
  }
  const int readError = errno;
  ::close(fd);
  errno = readError;  // a failed read's, for the caller's message
  return out;
}

}  // namespace memq
