// CoChangeBuilder: walks git history with libgit2 and turns commits into CoChangeCounts (docs/design.md §8).
//
// Decisions (each one documented here because recall quality depends on it):
//  - Window: the newest `window` NON-MERGE commits reachable from HEAD in commit-date order (like
//    `git log --no-merges -n <window>`). Skipped commits (below) still occupy a window slot, so the window is a
//    span of history, not a quota of useful commits.
//  - Each commit is diffed against its FIRST parent (a root commit against the empty tree). Rename detection is
//    off: it costs a content comparison per added/deleted pair, and a rename shows as the old and the new path
//    both changing, which is exactly what a co-change graph should see for that commit.
//  - The ignore globs are applied BEFORE the per-commit file cap: a commit of 3 source files and 40 vendored
//    files is a 3-file change, while a commit of 31 real files is a sweeping edit (reformat, rename, licence
//    header) whose pairs say nothing. Such a commit counts for nothing, not even per-file changes.
//  - Submodule pointer changes are not files and are dropped. A file that became a directory (or back) counts as
//    changed under both shapes. Mode-only changes (chmod +x) are not content changes and are not counted.
//  - Paths are repository-relative; project-root mapping happens later (CoChangeSnapshot), so one cache serves
//    every root inside the repository.
//  - Incremental: when the old head is an ancestor of the new one, only the commits between are walked and
//    added; commits that fall out of the window are evicted (re-diffed and subtracted) oldest first. When a merge
//    brings in side-branch commits that are older than the window's tail, they still enter at the front: the
//    window is "the last N commits to arrive", which may differ slightly from a fresh date-ordered walk. A
//    rebuild happens when HEAD moved anywhere else (rebase, reset, branch switch), when more than `window` new
//    commits arrived, or when an evicted commit can no longer be read.
//  - Shallow clones: libgit2 1.5 does not know grafts (its revwalk fails at the boundary), so history is walked
//    by our own date-ordered walk that ends a line of history at a missing parent; the boundary commit is kept
//    in the window as not counted, since diffing it against nothing would claim it changed every file.
//  - A commit landing during a walk changes nothing: the walk starts from the HEAD id read once at its start,
//    and the next refresh sees the newer HEAD and walks just that commit.
// Thread-safety: none. Uses a git_repository that the caller must not use from another thread meanwhile.
#pragma once

#include <git2.h>

#include <cstddef>
#include <string>
#include <vector>

#include "daemon/git/cochange_counts.h"
#include "daemon/git/path_filter.h"
#include "protocol/status.h"

namespace memq {

struct CoChangeOptions {
  size_t window = 2000;            // non-merge commits
  size_t maxFilesPerCommit = 30;   // after the ignore globs
  int minCount = 2;                // pairs seen fewer times are not neighbours (they are still counted)
  std::vector<std::string> ignoreGlobs = defaultIgnoreGlobs();

  // A stable text of everything above that changes the counts; a cache built under other settings is rebuilt.
  std::string fingerprint() const;
};

// What one refresh did.
struct CoChangeUpdate {
  bool rebuilt = false;
  size_t walkedCommits = 0;   // non-merge commits newly walked (and diffed) for this update
  size_t readCommits = 0;     // commits the history walks read (merges, and those of the old head's side, included)
  size_t evictedCommits = 0;  // commits that fell out of the window (re-diffed to subtract them)
  std::vector<WindowCommit> added;    // window entries added (for the cache delta)
  std::vector<int64_t> removedSeqs;   // window entries removed
};

class CoChangeBuilder {
 public:
  CoChangeBuilder(git_repository* repo, const CoChangeOptions& options);

  // Brings `counts` to `head`: nothing when already there, incremental when possible, else a rebuild.
  // counts.head is set to `head` on success. An unreadable history degrades to whatever could be read (logged).
  Result<CoChangeUpdate> update(CoChangeCounts& counts, const git_oid& head);

  // The filtered, de-duplicated file list of one commit against its first parent. Returns false (and leaves
  // `files` empty) when the commit cannot be diffed or touches too many files: it is then not counted.
  bool commitFiles(git_commit* commit, std::vector<std::string>& files);
  // Counts `newestFirst` (oldest first) into `counts`, appending them to its window from sequence number `seq`.
  void appendCommits(const std::vector<git_oid>& newestFirst, int64_t seq, CoChangeCounts& counts,
                     CoChangeUpdate& update);

 private:
  Result<CoChangeUpdate> rebuild(CoChangeCounts& counts, const git_oid& head);
  // Appends the paths (prefix + name) of files that differ between two trees (null = empty tree).
  bool diffTrees(const git_tree* a, const git_tree* b, std::string& prefix, std::vector<std::string>& out);
  bool descend(const git_tree_entry* a, const git_tree_entry* b, std::string& prefix, std::vector<std::string>& out);

  git_repository* repo_;
  const CoChangeOptions& options_;
  PathFilter filter_;
};

}  // namespace memq
