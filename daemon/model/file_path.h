// File path normalisation (MEMQ.md §1): every stored path is project-root relative, POSIX, without `.`/`..`.
// Pure, except for the optional symlink check, which reads the file system.
#pragma once

#include <string>
#include <string_view>

#include "protocol/status.h"

namespace memq {

// Normalises `path` against `projectRoot` (absolute, or empty for the global scope).
// - `\` becomes `/`, `./` and duplicate separators go, `..` is resolved lexically;
// - an absolute path inside the root becomes relative; one outside it is refused;
// - a path that climbs above the root is refused;
// - when the file exists under the root and is (or passes through) a symlink pointing outside the root, it is refused.
// Errors name `field` (e.g. "files[2]") and the offending path: Forbidden for a path outside the root (the three
// refusals above), InvalidParams for one that is malformed (empty, NUL byte, the root itself).
Result<std::string> normalizeFilePath(std::string_view path, std::string_view projectRoot, const std::string& field);

// Lexical normalisation only ("a/./b/../c" → "a/c"); returns false when the path climbs above its start.
bool lexicallyNormalize(std::string_view path, std::string& out);

}  // namespace memq
