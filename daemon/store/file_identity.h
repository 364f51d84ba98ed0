// FileIdentity: which file a path names (device and inode), so a store can tell that the file it opened is still
// the one at its path.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace memq {

// Which file a path named when it was opened: a file removed, replaced or moved since (a project deleted and
// cloned again at the same path) has another identity at the path, or none.
struct FileIdentity {
  uint64_t device = 0;
  uint64_t inode = 0;
  bool operator==(const FileIdentity&) const = default;
};

// The identity of what is at `path` now, without following a symlink; nullopt when nothing is there (or it cannot
// be stat'ed).
std::optional<FileIdentity> fileIdentityAt(const std::string& path);

}  // namespace memq
