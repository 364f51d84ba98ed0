// Listener: the daemon's Unix socket — path rules, the safety of its directories (missing ones created 0700, existing
// ones never chmodded, refused when another user could replace the socket), the socket born 0600, stale-socket
// replacement, refusal of a live daemon's socket and of anything else at the path (a file, a symlink), systemd
// socket activation (LISTEN_FDS), and the peer uid check. Plain POSIX; Asio adopts the descriptor it returns.
// Thread-safety: free functions, called once at startup (and per accepted connection for the peer check).
#pragma once

#include <sys/types.h>

#include <string>

#include "protocol/status.h"

namespace memq {

struct ListeningSocket {
  int fd = -1;
  std::string path;
  bool fromSystemd = false;
  // `<path>.lock`, held (flock) from before the stale-socket check until the socket is removed: two memqds started
  // at once cannot both find no live socket, and the second unlink the first one's. -1 under socket activation.
  int lockFd = -1;
};

// Binds `path` (creating its missing directories 0700), or adopts the socket systemd passed (LISTEN_FDS/LISTEN_PID).
// A live daemon on `path` → error naming it (with its pid when the pid file says); a stale socket → replaced; a
// regular file, a symlink or anything else that is not a socket → error, left as it is; an unsafe directory (owned by
// another user than memqd's or root, or writable by group/others without the sticky bit, on the way to the socket)
// → error naming it. Another memqd starting on `path` at the same moment (it holds the lock) → error naming it too.
Result<ListeningSocket> openListeningSocket(const std::string& path);

// `<socket>.lock`: the file openListeningSocket locks.
std::string socketLockPathFor(const std::string& socketPath);

// True when another process accepts connections on `path`.
bool socketIsLive(const std::string& path);

// SO_PEERCRED: the peer's uid. -1 on failure.
long peerUid(int fd);
// The policy: only the daemon's own user may connect. Separate from peerUid so it can be tested with any uid.
bool peerAllowed(long peer, uid_t self, std::string* why);

std::string pidFilePathFor(const std::string& socketPath);

}  // namespace memq
