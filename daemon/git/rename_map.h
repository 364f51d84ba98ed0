// RenameMap: which earlier paths became a path, from the repository (docs/anchors.md, "Renames"). Git's rename
// detection (libgit2's git_diff_find_similar, git's default 50% similarity) over HEAD's first-parent history, at
// most `maxCommits` commits back, plus HEAD's tree against the index and work tree for renames not committed yet
// (`git mv` staged, or a file moved on disk and not added). Line anchors and file refs written on the old path are
// then found, and carried, by a query naming the new one.
//
// The history part is kept per HEAD: when HEAD moves along its first parents only the new commits are diffed, by
// the next lookup when they are a few, else by refresh() (the daemon's housekeeping), which walks on a repository
// handle of its own so lookups do not wait; until then lookups answer from the renames known. A move elsewhere
// (reset, rebase, checkout) is walked again by refresh(); only the very first lookup walks the whole window itself.
// The uncommitted part is read only for a queried path that HEAD's tree does not have (a rename's target is new
// there): first the files HEAD has and the index or work tree lacks (a stat per tracked file, as `git status`
// without untracked files), and only when there are some, rename detection between those and the queried paths.
// Those files are kept with what they were read against: HEAD's tree, the index file, and every directory of HEAD's
// tree (removing or moving a file changes its directory). The directories are watched (DirectoryWatch, inotify),
// or where a watch cannot be had their times are kept; a later lookup reads the files again when the watch saw a
// change or a directory's time changed, or when the index changed; a time that had changed shortly before it was
// stamped proves nothing (RenameOptions::settle: a second change in the same clock tick would not show). The
// renames found among them for a set of queried paths are kept the same way, with the stamps of the queried files
// (an edit in place leaves its directory's times alone) and of the ignore files that decide whether each is
// untracked or ignored (an ignored file is no rename's target: .gitignore in each of its directories, the
// repository's info/exclude, the user's excludes file as configured when the map was opened), for the last few
// sets asked about.
// Paths are project-root relative (ProjectLocation::repoPrefix maps them to the repository's); a rename from
// outside the root is not followed.
// Thread-safety: a RenameMap may be used from any thread; its repository and state are used under one mutex.
// RenameEdges is immutable once built.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "daemon/git/commit_tree.h"
#include "daemon/git/directory_watch.h"
#include "daemon/git/head_reader.h"
#include "daemon/git/libgit2.h"
#include "daemon/git/repo_location.h"
#include "daemon/recall/repo_signals.h"
#include "daemon/util/file_stamp.h"
#include "daemon/util/thread_annotations.h"
#include "protocol/status.h"

namespace memq {

// Renames as edges old path → new path, the newest added first.
class RenameEdges {
 public:
  void add(const std::string& from, const std::string& to);
  bool empty() const { return earlier_.empty(); }
  // The direct earlier paths of `path`, newest rename first.
  const std::vector<std::string>* earlierOf(const std::string& path) const;

 private:
  std::unordered_map<std::string, std::vector<std::string>> earlier_;  // new path → the paths renamed to it
};

// The paths that became `path` through the edges of `layers` (the newest layer first), followed back
// transitively, nearest first (a→b→c gives b, a for c), without `path` itself and at most `limit` of them. A path
// for which `follow` (when given) says false is neither returned nor followed further.
std::vector<std::string> earlierPaths(const std::string& path, const std::vector<const RenameEdges*>& layers,
                                      size_t limit, const std::function<bool(const std::string&)>& follow = {});

struct RenameOptions {
  int maxCommits = 1000;        // first-parent commits read back from HEAD
  uint16_t similarity = 50;     // percent, as git's default rename threshold
  // As git's diff.renameLimit: a diff whose removed × added files exceed renameLimit² looks for exact renames only
  // (the same blob id); otherwise each added file is compared by content with at most renameLimit removed ones.
  size_t renameLimit = 1000;
  size_t maxEarlierPaths = 8;   // per queried path
  // How long a directory (or the index) must have been left alone before an unchanged stamp of it is trusted: two
  // changes within one tick of the file system's clock leave the same time (ext4 ticks in milliseconds, FAT in 2 s).
  std::chrono::nanoseconds settle{FileStamp::kSettleNs};
  // Watch the work tree's directories rather than stat each at every lookup (false: always the stamps; tests).
  bool watchDirectories = true;
};

class RenameMap {
 public:
  // Null when `location` is not in git or the repository cannot be opened (then nothing is ever renamed).
  static std::unique_ptr<RenameMap> open(const ProjectLocation& location, RenameOptions options = {});

  // For each of `paths` that has earlier ones, the paths whose files became it (RenamedPath, nearest first). An
  // earlier path that is a file in the work tree now is left out (and not followed further): an anchor written on
  // it is about the file there.
  std::vector<RenamedPath> renamedFrom(const std::vector<std::string>& paths);
  // Brings the history part up to HEAD now, off the request path (so a later lookup finds it done). Returns the
  // commits diffed.
  int refresh();
  // How many times the work tree has been diffed for its deleted files, and how many times renames were looked for
  // among them (tests).
  size_t workTreeReads();
  size_t renameSearches();
  // How many history walks lookups made themselves (tests).
  size_t lookupWalks();

 private:
  using Edges = std::vector<std::pair<std::string, std::string>>;
  // The renames of the first-parent commits from `head` back to `known` (excluded) or `limit` commits.
  struct Walk {
    git_oid head{};
    std::vector<Edges> commits;  // newest first
    bool metKnown = false;       // reached `known`: what is behind it is the state already held
    bool complete = false;       // met `known`, the start of history, or maxCommits: the window is whole
  };
  // Commits a lookup walks itself when HEAD moved forward; a longer move is refresh()'s.
  static constexpr size_t kRequestWalk = 64;

  RenameMap(ProjectLocation location, RepositoryPtr repository, RepositoryPtr walkRepository, RenameOptions options,
            std::vector<std::string> ignoreFilesOutsideTree);
  // HEAD's commit through `repository` (refresh()'s handle; lookups read it through headReader_).
  static std::optional<git_oid> readHead(git_repository* repository);
  Walk walkHistory(git_repository* repository, const git_oid& head, const std::optional<git_oid>& known,
                   size_t limit);
  // Renames in one commit against its first parent, as root-relative edges.
  void commitRenames(git_repository* repository, git_commit* commit, Edges& out);
  void applyLocked(Walk walk) REQUIRES(mutex_);
  // Brings the history to `head` when that is cheap (see kRequestWalk) or nothing is known yet.
  void followHeadLocked(const std::optional<git_oid>& head) REQUIRES(mutex_);
  // Renames not committed whose targets are among `targets` (root-relative paths HEAD's tree lacks).
  RenameEdges uncommittedLocked(git_tree* headTree, const std::vector<std::string>& targets) REQUIRES(mutex_);

  // The stamps of the ignore files whose rules apply to `targets` (root-relative): each one's directories'
  // .gitignore from the repository's top down, then ignoreFilesOutsideTree_.
  PathStamps ignoreFileStamps(const std::vector<std::string>& targets) const;
  // The files HEAD's tree has and the index or work tree lacks (repository paths), and what they were read against.
  struct DeletedFiles {
    git_oid headTree{};
    std::optional<FileStamp> index;
    std::vector<std::string> directories;  // absolute
    PathStamps directoryStamps;             // taken before the read when there is no watch
    std::unique_ptr<DirectoryWatch> watch;  // begun before the read; null: the stamps tell
    bool settled = false;  // every stamp older than options_.settle: equal stamps then mean nothing changed
    std::vector<std::string> paths;
  };
  // The renames found among one read of the deleted files for one set of queried paths, and the stamps before the
  // search of the queried files and of the ignore files that rule on them. Kept only when every stamp had settled.
  struct RenameAnswer {
    size_t deletedRead = 0;  // workTreeReads_ after the read of the deleted files it searched
    PathStamps targets;      // absolute paths
    PathStamps ignoreFiles;  // absolute paths
    Edges edges;
  };
  static constexpr size_t kKeptAnswers = 8;
  // The deleted files now: deleted_'s when nothing it was read against changed, else read again (a diff).
  const std::vector<std::string>& deletedFilesLocked(git_tree* headTree) REQUIRES(mutex_);
  // The directories of `headTree` under the root (the root's own included), absolute.
  std::vector<std::string> treeDirectories(git_tree* headTree) const;
  // `repoPath` relative to the root, or nullopt when it is outside it.
  std::optional<std::string> rootRelative(const char* repoPath) const;
  std::string repoPath(const std::string& rootRelative) const;
  bool fileInWorkTree(const std::string& rootRelative) const;
  void collectRenames(git_diff* diff, bool untracked, Edges& out) const;

  const ProjectLocation location_;
  const RenameOptions options_;
  // The repository's info/exclude and the user's excludes file (core.excludesFile, else git's default), absolute.
  const std::vector<std::string> ignoreFilesOutsideTree_;
  // Lock order: walkMutex_ → mutex_. Lookups take mutex_ only; refresh() walks under walkMutex_ alone.
  Mutex walkMutex_;
  Mutex mutex_;
  RepositoryPtr repository_ PT_GUARDED_BY(mutex_);          // lookups: HEAD, short walks, the work tree
  RepositoryPtr walkRepository_ PT_GUARDED_BY(walkMutex_);  // refresh()'s long walks
  HeadReader headReader_ GUARDED_BY(mutex_);
  CommitTree headTree_ GUARDED_BY(mutex_);  // the tree of the HEAD last looked up
  bool walked_ GUARDED_BY(mutex_) = false;
  git_oid head_ GUARDED_BY(mutex_){};
  // The renames of each first-parent commit read, newest first; at most maxCommits entries.
  std::deque<Edges> perCommit_ GUARDED_BY(mutex_);
  RenameEdges history_ GUARDED_BY(mutex_);
  std::optional<DeletedFiles> deleted_ GUARDED_BY(mutex_);
  size_t workTreeReads_ GUARDED_BY(mutex_) = 0;
  size_t lookupWalks_ GUARDED_BY(mutex_) = 0;
  // A HEAD too far ahead for a lookup's own walk: lookups leave it to refresh() instead of walking again each time.
  std::optional<git_oid> tooFarHead_ GUARDED_BY(mutex_);
  std::deque<RenameAnswer> answers_ GUARDED_BY(mutex_);  // newest first, at most kKeptAnswers
  size_t renameSearches_ GUARDED_BY(mutex_) = 0;
};

}  // namespace memq
