// GitRepoSignals: the libgit2 implementation of RepoSignals for one project (docs/design.md §8): co-change neighbours
// (CoChangeBuilder → CoChangeCounts, cached in the project database by CoChangeCache, served from an immutable
// CoChangeSnapshot), blast radius (ImportScanner → DependencyGraph per HEAD tree), blob ids for staleness, and the
// renames a path came through (RenameMap).
//
// Freshness: nothing is computed at construction. The first co-change lookup refreshes (from the database cache
// when it matches, else by walking history); later lookups re-read HEAD when a request starts (observeHeadNow) and
// otherwise at most once per headCheckInterval, and refresh only when it moved. The dependency graph is built on the
// first blast-radius lookup for a HEAD tree. A rebuild reads HEAD live, then observes HEAD again, so the lookups after
// it accept the view it built even when a commit landed after their request's observation.
// Failures never throw: an unborn HEAD, a shallow or corrupt history, a missing database or a directory outside
// git all give empty signals (radius 0, no neighbours) and a log line; refresh() reports the reason.
//
// Thread-safety: every public method may be called from any thread. libgit2 objects are not thread-safe, so the
// class holds two repository handles: one for refreshes and graph builds (refreshMu_), one for the cheap
// per-call work, HEAD checks and blob ids (quickMu_), so staleness checks never wait behind a history walk.
// Snapshots are immutable and swapped under snapMu_; a lookup that finds another thread refreshing answers from
// the previous snapshot instead of blocking (only the very first lookup, with no snapshot yet, waits).
// Lock order: refreshMu_ → quickMu_ → snapMu_.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "daemon/git/cochange_builder.h"
#include "daemon/git/cochange_cache.h"
#include "daemon/git/cochange_counts.h"
#include "daemon/git/cochange_snapshot.h"
#include "daemon/git/copy_sources.h"
#include "daemon/git/dependency_graph.h"
#include "daemon/git/head_reader.h"
#include "daemon/git/libgit2.h"
#include "daemon/git/rename_map.h"
#include "daemon/git/repo_location.h"
#include "daemon/recall/repo_signals.h"
#include "daemon/util/file_stamp.h"
#include "daemon/util/thread_annotations.h"
#include "protocol/status.h"

namespace memq {

struct GitSignalsOptions {
  CoChangeOptions cochange;
  // How stale a lookup's view of HEAD may be: a HEAD check costs a ref read, so at most one per interval.
  std::chrono::milliseconds headCheckInterval{1000};
  // Blobs larger than this are not scanned for imports (generated code, bundles, data).
  size_t maxSourceBytes = 1 << 20;
};

// RepoRefreshInfo plus what only this implementation knows.
struct RefreshStats : RepoRefreshInfo {
  int evictedCommits = 0;  // commits that left the window (re-diffed to subtract them)
  int readCommits = 0;     // commits the history walks read, of either side of a move (CoChangeUpdate::readCommits)
  Status status;           // not ok when the signals are empty because of a problem (no repo, no commits)
};

class GitRepoSignals final : public RepoSignals {
 public:
  explicit GitRepoSignals(ProjectLocation location, GitSignalsOptions options = {});
  ~GitRepoSignals() override;
  GitRepoSignals(const GitRepoSignals&) = delete;
  GitRepoSignals& operator=(const GitRepoSignals&) = delete;

  // Brings the co-change graph to the current HEAD now (incremental when possible) and persists it.
  // walkedCommits counts the non-merge commits newly walked and diffed; pairs those served (inside the root).
  // The renames followed back from HEAD are brought up to it too (RenameMap::refresh).
  RepoRefreshInfo refresh() override;
  RefreshStats refreshDetailed();

  // RepoSignals. Paths are project-root-relative, POSIX; a path that is absolute or escapes the root gets the
  // empty answer.
  std::vector<CoChangeNeighbor> cochangeNeighbors(const std::string& path, size_t limit) override;
  int blastRadius(const std::string& path) override;
  // Work tree first, else HEAD (so a sparse checkout still resolves); nullopt when neither has the file.
  std::optional<std::string> currentBlobId(const std::string& path) override;

  // Renames followed back from each path, committed or not (RenameMap).
  std::vector<RenamedPath> renamedFrom(const std::vector<std::string>& paths) override;
  void followRenames() override;

  // The object database's blobs (line anchors' versions). An id that is not 40 hex digits is no blob.
  bool hasBlob(const std::string& blobId) override;
  std::optional<std::string> blobContent(const std::string& blobId) override;

  // The tracked files (root-relative, sorted) whose imports resolve to `path`, at HEAD.
  std::vector<std::string> dependents(const std::string& path) override;
  // The blast radius squashed into [0, 1] against this repository's 95th percentile (DependencyGraph::damped).
  double blastDamped(int radius);

  // Blob id (40-hex) of `path` in the HEAD tree; nullopt when absent or not a file.
  std::optional<std::string> blobIdAtHead(const std::string& path) override;
  // Blob id the file on disk would get if added now (git's filters applied when in a repository); nullopt when
  // there is no regular file or symlink at that path.
  std::optional<std::string> workTreeBlobId(const std::string& path);

  // The HEAD commit (40-hex) as last observed (at the request's start, or at most headCheckInterval ago); "" when
  // unborn or outside git.
  std::string head() override;
  void observeHeadNow() override;

  const ProjectLocation& location() const { return location_; }

  // How many co-change snapshots (one per refresh, explicit or by a lookup) and dependency graphs were built so far:
  // for tests and diagnostics, to see that lookups reuse the published view instead of rebuilding it.
  int snapshotBuilds() const { return snapshotBuilds_.load(std::memory_order_relaxed); }
  int dependencyGraphBuilds() const { return dependencyGraphBuilds_.load(std::memory_order_relaxed); }

 private:
  struct HeadView {
    std::string commit;  // "" when unborn / unreadable
    std::string tree;
  };

  HeadView observeHead(bool force) EXCLUDES(quickMu_);
  std::shared_ptr<const CoChangeSnapshot> freshCochange();
  std::shared_ptr<const DependencyGraph> freshDependencies();
  RefreshStats refreshLocked() REQUIRES(refreshMu_);
  // After a rebuild: brings the lookups' view of HEAD up to (at least) the HEAD the rebuild read.
  void observeBuiltHeadLocked() REQUIRES(refreshMu_) EXCLUDES(quickMu_, snapMu_);
  std::shared_ptr<const DependencyGraph> buildDependenciesLocked(std::string& treeOut) REQUIRES(refreshMu_);
  void publishCochange(std::shared_ptr<const CoChangeSnapshot> snap) EXCLUDES(snapMu_);

  const ProjectLocation location_;
  const GitSignalsOptions options_;
  Status openStatus_;  // why the repository could not be opened (signals then stay empty)

  Mutex refreshMu_;
  RepositoryPtr walkRepo_ PT_GUARDED_BY(refreshMu_);  // the repository is used under refreshMu_
  CoChangeCounts counts_ GUARDED_BY(refreshMu_);
  std::unique_ptr<CoChangeCache> cache_ GUARDED_BY(refreshMu_);
  bool cacheLoaded_ GUARDED_BY(refreshMu_) = false;
  // Imports per blob id, kept between dependency-graph builds so a new HEAD re-reads only the changed blobs.
  std::unordered_map<std::string, std::vector<ImportRef>> importsByBlob_ GUARDED_BY(refreshMu_);
  std::string lastEmptyReason_ GUARDED_BY(refreshMu_);  // so an unborn HEAD is logged once, not per refresh
  // Written under refreshMu_, read from any thread without it (snapshotBuilds, dependencyGraphBuilds).
  std::atomic<int> snapshotBuilds_{0};
  std::atomic<int> dependencyGraphBuilds_{0};

  Mutex quickMu_;
  RepositoryPtr quickRepo_ PT_GUARDED_BY(quickMu_);  // the repository is used under quickMu_
  HeadReader headReader_ GUARDED_BY(quickMu_);  // HEAD's commit, resolved again only when its files changed
  HeadView head_ GUARDED_BY(quickMu_);
  TreePtr headTree_ GUARDED_BY(quickMu_);
  std::chrono::steady_clock::time_point headCheckedAt_ GUARDED_BY(quickMu_){};
  bool headChecked_ GUARDED_BY(quickMu_) = false;
  // Work-tree blob ids by full path, with the stamp of the file they were hashed from: a save naming a file that has
  // not changed since costs one lstat instead of a read and a hash. A file hashed moments after a change (its stamp
  // not settled) keeps its bytes instead, so that reading it again costs a comparison rather than a hash while its
  // bytes are the same (every hit on a file just edited asks). Bounded: past kMaxWorkTreeIds entries or
  // kMaxUnsettledBytes of bytes kept it starts over.
  struct WorkTreeId {
    FileStamp stamp;
    std::string id;
    std::string unsettledBytes;  // the file's bytes when its stamp had not settled; empty once it had
    bool settled = false;
  };
  static constexpr size_t kMaxWorkTreeIds = 8192;
  static constexpr size_t kMaxUnsettledBytes = size_t{64} << 20;
  std::unordered_map<std::string, WorkTreeId> workTreeIds_ GUARDED_BY(quickMu_);
  size_t unsettledBytes_ GUARDED_BY(quickMu_) = 0;

  std::unique_ptr<RenameMap> renames_;  // null outside git; thread-safe on its own
  // A queried file that HEAD lacks and no rename explains may still be a copy (or a move that left the original in
  // place, or a file brought over from elsewhere) of a file HEAD has: CopySources finds that file by similarity.
  static constexpr int64_t kMaxCopySourceBytes = int64_t{2} << 20;
  std::optional<std::string> copySourceOf(const std::string& path);
  std::unique_ptr<CopySources> copies_;  // null outside git; thread-safe on its own

  Mutex snapMu_;
  std::shared_ptr<const CoChangeSnapshot> cochange_ GUARDED_BY(snapMu_);
  std::shared_ptr<const DependencyGraph> deps_ GUARDED_BY(snapMu_);
  std::string depsTree_ GUARDED_BY(snapMu_);
};

}  // namespace memq
