// Where memqd's socket lives (docs/protocol.md "Transport"). Owned here because the daemon binds it and every client
// connects to it, so the two must compute it the same way. Pure string logic: no socket or file-system calls.
//
// Thread-safety: reads the environment; safe as long as nobody calls setenv concurrently.
#pragma once

#include <string>

namespace memq {

// $MEMQ_SOCKET, else $XDG_RUNTIME_DIR/memq/memqd.sock, else /tmp/memq-<uid>/memqd.sock. An empty variable counts as
// unset, as with most XDG consumers, so `MEMQ_SOCKET= memq …` falls back rather than connecting to "".
std::string defaultSocketPath();

// The same rule with its inputs explicit (null or empty = unset), for tests and for callers that override the
// environment.
std::string socketPathFor(const char* memqSocket, const char* xdgRuntimeDir, unsigned long uid);

}  // namespace memq
