// Where a project lives: its root, the git repository around it, and the path of its database (docs/design.md §4).
// Owns nothing but the lookup; the result is a plain value.
// Thread-safety: locateProject is a pure function of the file system and may run on any thread.
#pragma once

#include <string>

#include "protocol/status.h"

namespace memq {

struct ProjectLocation {
  std::string root;            // absolute, canonical (symlinks resolved), no trailing slash
  bool inGit = false;          // false: no work tree contains root (or only a bare repository does)
  std::string gitWorkTreeTop;  // absolute top of the work tree containing root; "" outside git
  std::string gitDir;          // this work tree's own git dir (.git, or <common>/worktrees/<name> for a linked one)
  std::string gitCommonDir;    // the git dir shared by all worktrees of the repository; "" outside git
  std::string repoPrefix;      // root relative to gitWorkTreeTop, POSIX separators: "" or "sub/dir"
  std::string dbPath;          // <gitCommonDir>/memq/memory.db in git, <root>/.memq/memory.db outside
};

// Finds the project containing `dir` (which must exist).
// exactRoot = false: the root is the git work tree top containing dir (docs/design.md §4), else dir itself.
// exactRoot = true: the root stays dir even inside a work tree, so a client may open a subdirectory of a
//   repository as its project; repoPrefix then says where it sits, and repository paths are mapped through it.
// The database lives in the COMMON git dir either way, so all worktrees (and subdirectory roots) of one
// repository share it, `git status` never sees it, and it goes away with the repository.
// Errors: NotFound when dir does not exist or is not a directory; GitError when a repository is found but
// cannot be opened (corrupt, or refused by libgit2's ownership check); Forbidden for a project outside git whose
// root another user owns, unless git's safe.directory lists it (as for a repository). Both refusals say how to
// allow the directory.
Result<ProjectLocation> locateProject(const std::string& dir, bool exactRoot = false);

}  // namespace memq
