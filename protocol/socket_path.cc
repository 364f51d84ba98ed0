// defaultSocketPath: the docs/protocol.md socket location rule (see socket_path.h).
#include "protocol/socket_path.h"

#include <unistd.h>

#include <cstdlib>

namespace memq {

std::string socketPathFor(const char* memqSocket, const char* xdgRuntimeDir, unsigned long uid) {
  if (memqSocket != nullptr && *memqSocket != '\0') return memqSocket;
  if (xdgRuntimeDir != nullptr && *xdgRuntimeDir != '\0') {
    std::string dir = xdgRuntimeDir;
    while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
    return dir + "/memq/memqd.sock";
  }
  return "/tmp/memq-" + std::to_string(uid) + "/memqd.sock";
}

std::string defaultSocketPath() {
  return socketPathFor(std::getenv("MEMQ_SOCKET"), std::getenv("XDG_RUNTIME_DIR"),
                       static_cast<unsigned long>(::getuid()));
}

}  // namespace memq
