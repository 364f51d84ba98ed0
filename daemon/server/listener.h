// Listener: the daemon's Unix socket — path rules, a private directory (0700) and socket (0600), stale-socket
// replacement, refusal when a live daemon owns the path, systemd socket activation (LISTEN_FDS), and the peer uid
// check. Plain POSIX; Asio adopts the descriptor it returns.
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
};

// Binds `path` (creating its directory 0700), or adopts the socket systemd passed (LISTEN_FDS/LISTEN_PID).
// A live daemon on `path` → error naming it (with its pid when the pid file says); a stale file → replaced.
Result<ListeningSocket> openListeningSocket(const std::string& path);

// True when another process accepts connections on `path`.
bool socketIsLive(const std::string& path);

// SO_PEERCRED: the peer's uid. -1 on failure.
long peerUid(int fd);
// The policy: only the daemon's own user may connect. Separate from peerUid so it can be tested with any uid.
bool peerAllowed(long peer, uid_t self, std::string* why);

std::string pidFilePathFor(const std::string& socketPath);

}  // namespace memq
