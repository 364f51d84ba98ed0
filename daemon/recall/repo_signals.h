// RepoSignals: what recall needs from the repository, behind an interface so recall works (with those lanes
// empty) where there is no git, and so tests can use a fake. daemon/git implements it with libgit2.
// Thread-safety: implementations must be safe to call from several threads at once.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace memq {

struct CoChangeNeighbor {
  std::string path;   // relative to the project root, POSIX separators
  int count = 0;      // commits (within the window) that changed both files
  double strength = 0;  // normalised: count / sqrt(changes(a) * changes(b)), in (0, 1]
};

// Per referenced file: is it unchanged, changed (stale), or gone (dead) since the memory recorded its blob id?
enum class FileFreshness { kUnknown, kFresh, kChanged, kMissing };

struct RepoRefreshInfo {
  int walkedCommits = 0;  // commits read by this refresh (0 when HEAD had not moved)
  int totalCommits = 0;   // commits the co-change counts now cover
  int pairs = 0;          // co-change pairs kept (count >= 2)
  std::string head;       // HEAD the signals describe ("" without history)
  double elapsedMs = 0;
  bool rebuilt = false;   // HEAD moved somewhere that is not a descendant: counts rebuilt from scratch
};

// A path and the earlier paths whose files became it by renames, nearest first (docs/anchors.md, "Renames").
struct RenamedPath {
  std::string path;
  std::vector<std::string> earlier;
};

class RepoSignals {
 public:
  virtual ~RepoSignals() = default;
  // Brings the co-change counts up to HEAD (incrementally when HEAD moved forward).
  virtual RepoRefreshInfo refresh() { return {}; }
  virtual std::string head() { return ""; }
  // Looks at HEAD now, for the lookups that follow: a request that reads these signals calls it once at its start,
  // so a commit or checkout made just before the request counts in it. The lookups themselves, many to a request,
  // may answer from the view of HEAD taken then.
  virtual void observeHeadNow() {}
  // Tracked files that depend on `path` (for repo/blast_radius).
  virtual std::vector<std::string> dependents(const std::string& path) { return {}; }
  // Strongest co-change partners of `path` (project-root relative), best first, at most `limit`.
  virtual std::vector<CoChangeNeighbor> cochangeNeighbors(const std::string& path, size_t limit) = 0;
  // Number of tracked files that depend on `path` through include/import statements (0 when unknown).
  virtual int blastRadius(const std::string& path) = 0;
  // Blob id (40-hex) of `path` as it is in the work tree; nullopt when the file is gone (a dead ref).
  virtual std::optional<std::string> currentBlobId(const std::string& path) = 0;
  // Blob id (40-hex) of `path` (project-root relative) in HEAD's tree; nullopt when absent, or without a repository.
  virtual std::optional<std::string> blobIdAtHead(const std::string& /*path*/) { return std::nullopt; }
  // Whether the repository's object database holds the blob `blobId` (40 lowercase hex).
  virtual bool hasBlob(const std::string& blobId) { return blobContent(blobId).has_value(); }
  // For each of `paths` (project-root relative) renamed from earlier paths, committed or not, those paths; paths
  // that were never renamed are left out.
  virtual std::vector<RenamedPath> renamedFrom(const std::vector<std::string>& /*paths*/) { return {}; }
  // Brings what renamedFrom knows of history up to HEAD, so that lookups find it done; for background work.
  virtual void followRenames() {}
  // The bytes of the blob `blobId` from the object database; nullopt when it has no such blob.
  virtual std::optional<std::string> blobContent(const std::string& /*blobId*/) { return std::nullopt; }
};

}  // namespace memq
