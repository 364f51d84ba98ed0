// PathFilter: the ignore list that keeps lockfiles and generated files out of the co-change graph (docs/design.md §8:
// lockfiles pair with everything and drown the real partners).
// Thread-safety: immutable after construction; safe to share between threads.
#pragma once

#include <string>
#include <vector>

namespace memq {

// The default ignore globs. Pattern rules (see PathFilter):
//   "dir/"        a directory of that name at any depth: everything under it is ignored;
//   "a/*.x"       contains a '/': matched against the whole repository-relative path (fnmatch, FNM_PATHNAME);
//   "*.lock"      no '/': matched against the file's base name, at any depth.
//   "a/b/"        a directory path: everything below it.
const std::vector<std::string>& defaultIgnoreGlobs();

class PathFilter {
 public:
  explicit PathFilter(std::vector<std::string> globs);

  // True when `path` (repository-relative, '/' separators) matches one of the globs.
  bool ignored(const std::string& path) const;

  // The globs joined into one stable string, so a cache built with other globs is recognised as stale.
  std::string fingerprint() const;

 private:
  std::vector<std::string> dirNames_;       // from "dir/" patterns, without the slash
  std::vector<std::string> pathPatterns_;   // patterns containing '/'
  std::vector<std::string> exactNames_;     // basename patterns without wildcards
  std::vector<std::string> nameSuffixes_;   // "*literal" basename patterns, kept as the literal
  std::vector<std::string> namePatterns_;   // other basename patterns (fnmatch)
  std::vector<std::string> globs_;          // as given, for the fingerprint
};

}  // namespace memq
