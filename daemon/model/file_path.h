// File path normalisation: every stored path is project-root relative, POSIX, without `.`/`..`.
// Pure, except for the symlink checks, which read the file system.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "protocol/status.h"

namespace memq {

// The longest path accepted, in bytes: PATH_MAX less the NUL that ends a path handed to the kernel. A longer one
// cannot name a file (the kernel answers ENAMETOOLONG), so it is malformed input, not a file that is missing.
inline constexpr size_t kMaxPathBytes = 4095;

// Normalises `path` against `projectRoot` (absolute, or empty for the global scope).
// - `\` becomes `/`, `./` and duplicate separators go;
// - `..` is resolved as the kernel resolves it: where a directory that `..` climbs out of is a symlink (on disk,
//   under an existing root), the symlink is followed first, so `src/link/../x` names the file next to the link's
//   target; where the disk cannot say (a root that does not exist, the global scope, below a name that does not
//   exist) `..` is resolved lexically;
// - an absolute path inside the root becomes relative; one outside it is refused;
// - a path that, so resolved, climbs above the root is refused;
// - when the file exists under the root and is (or passes through) a symlink pointing outside the root, it is refused.
// Errors name `field` (e.g. "files[2]"): Forbidden for a path outside the root (the three refusals above),
// InvalidParams for one that is malformed (empty, longer than kMaxPathBytes, a NUL byte, the root itself, `..` after
// a symlink that does not resolve) or that holds a credential (data.kinds names it; the message never quotes such a
// path, and a path is refused rather than stored redacted, because a redacted path names another file).
// `rootOnDisk`, when given: where the root's real path is kept between calls for the same root (the paths of one
// request), so that the root is resolved on disk once rather than once for each path that exists.
Result<std::string> normalizeFilePath(std::string_view path, std::string_view projectRoot, const std::string& field,
                                      std::optional<std::string>* rootOnDisk = nullptr);

// Lexical normalisation only ("a/./b/../c" → "a/c"); returns false when the path climbs above its start.
bool lexicallyNormalize(std::string_view path, std::string& out);

}  // namespace memq
