// Writing small files so that a crash leaves either the old content or the new, never a torn or empty file, and the
// change survives a power loss once the call returns: the save outbox, the team settings memqd keeps beside a replica.
// Thread-safety: each call owns its descriptors; two writers of one path must be serialized by the caller.
#pragma once

#include <string>
#include <string_view>

#include "protocol/status.h"

namespace memq {

// fsync of the file or directory at `path`, opened with `flags` (O_RDONLY | O_DIRECTORY for a directory).
Status fsyncPath(const std::string& path, int flags);

// Writes all of `text` to `fd` (retrying short writes and EINTR), then fsyncs it. `path` names the file in errors.
Status writeAllAndSync(int fd, std::string_view text, const std::string& path);

// Replaces the file at `path` with `text`: written to a new temporary beside it (`path`.tmp.XXXXXX, created with
// O_EXCL, mode 0600) and fsynced, renamed over `path`, and the directory fsynced, so that the new name is durable
// too. A symlink at `path` is replaced, never written through.
Status replaceFileDurably(const std::string& path, std::string_view text);

}  // namespace memq
