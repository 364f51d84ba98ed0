// Carrying line ranges from one version of a file to a later one: the pure step (ranges through the hunks of a
// 0-context line diff, each line shifted, rewritten or deleted), its composition along a chain of versions, and
// LineCarrier, which computes the hunks with libgit2 between versions held as blobs of a repository or as buffers,
// and keeps recent hunk lists in an LRU cache keyed by the (from, to) pair, and a pinned set of them (each anchor's
// version to HEAD's) that the LRU never evicts; both bounded by the bytes their hunk lists hold, the LRU by its
// count of entries too.
// Thread-safety: the free functions are pure. A LineCarrier may be shared by threads: the repository is used under
// one mutex (libgit2 objects must not be used by two threads at once), the cache under another; the pinned set is
// remade by one holder of its claim at a time (claimPinning).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <list>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "daemon/anchors/line_ranges.h"
#include "daemon/git/commit_tree.h"
#include "daemon/git/head_reader.h"
#include "daemon/git/libgit2.h"
#include "daemon/util/thread_annotations.h"
#include "protocol/status.h"

namespace memq {

// One hunk of a 0-context line diff, numbered as git prints it: old lines oldStart..oldStart+oldLines-1 became new
// lines newStart..newStart+newLines-1. A pure insertion has oldLines == 0 and oldStart the old line it follows (0: the
// top of the file); a pure deletion has newLines == 0 and newStart the new line the cut follows.
struct DiffHunk {
  uint32_t oldStart = 0;
  uint32_t oldLines = 0;
  uint32_t newStart = 0;
  uint32_t newLines = 0;
  friend bool operator==(const DiffHunk&, const DiffHunk&) = default;
};
using HunkList = std::vector<DiffHunk>;  // in file order, as the diff gives them

// The diff of two versions: its hunks and the length of each side (to validate lines against the old one).
struct VersionDiff {
  HunkList hunks;
  uint32_t fromLines = 0;
  uint32_t toLines = 0;

  // The memory this diff holds, as the carrier's bounds count it: the object and its hunk list's allocation.
  size_t heldBytes() const { return sizeof(VersionDiff) + hunks.capacity() * sizeof(DiffHunk); }
};

// The default bounds on the bytes of hunk lists a carrier holds (one carrier per open project scope), in its LRU and
// in its pinned set each. A typical change's list is a few hundred bytes, so thousands of them fit in a few MiB and
// the bound never bites; but the diff of a file of the largest anchored size (kMaxAnchoredFileBytes, 2 MiB) in which
// every other line changed is up to half a million hunks of 16 bytes, 8 MiB, and a count bound alone would let a few
// thousand of those take tens of GiB. 64 MiB still holds seven of those, so the diffs of a large file being worked
// on stay cached while it is edited, and keeps what one scope's carrier holds to 128 MiB.
inline constexpr size_t kHunkCacheBytes = size_t{64} << 20;
inline constexpr size_t kPinnedHunkBytes = size_t{64} << 20;

// What a diff did to an anchored line.
enum class LineOutcome {
  kShifted,    // untouched: the same line, moved by the lines inserted and deleted above it
  kRewritten,  // inside a hunk that replaced it: it maps to all of that hunk's new lines
  kDeleted,    // inside a hunk that removed it with nothing in its place
};

// A run of old lines with one outcome and where it went (`to` is unset for kDeleted).
struct CarriedSegment {
  LineRange from;
  LineOutcome outcome = LineOutcome::kShifted;
  LineRange to;
};

// The old lines of `normalized` through `hunks`, in order, one segment per run with a single outcome and target.
std::vector<CarriedSegment> carrySegments(const LineRanges& normalized, const HunkList& hunks);

// Lines of the original anchor per outcome. Along a chain, an original line counts as deleted when nothing of its
// image is left, rewritten when some step rewrote it (or what it had become) and its image survives, shifted when
// every step only moved it.
struct CarryCounts {
  uint64_t shifted = 0;
  uint64_t rewritten = 0;
  uint64_t deleted = 0;
  friend bool operator==(const CarryCounts&, const CarryCounts&) = default;
};

struct CarriedLines {
  LineRanges lines;  // normalised, in the last version
  // The part of `lines` that is anchored lines moved unchanged (every step shifted them): where the anchor is
  // known exactly, as opposed to a hunk's new lines that replaced it.
  LineRanges unchanged;
  CarryCounts counts;
};

// `lines` (normalised) through each hunk list in turn: the diffs of consecutive versions A→B, B→C, ...
CarriedLines carryThroughHunks(const LineRanges& lines, const std::vector<const HunkList*>& steps);

// A version of a file: a blob of the carrier's repository, or content held in memory (the work-tree file, or an
// uncommitted version kept elsewhere). Either way `id()` is the git blob id of the content, so a buffer equal to a
// committed blob is recognised as the same version.
class FileVersion {
 public:
  // `blobId` is 40 hex digits; whether the repository has it is checked when it is read.
  static FileVersion blob(std::string blobId);
  static FileVersion buffer(std::string content);
  // A buffer whose blob id is already known (a version memq keeps under its id, a work-tree file read and hashed
  // before): neither copied nor hashed.
  static FileVersion kept(std::shared_ptr<const std::string> content, std::string blobId);

  bool isBuffer() const { return content_ != nullptr; }
  const std::string& id() const { return id_; }
  // The content of a buffer version; nullptr for a blob version.
  const std::string* content() const { return content_.get(); }

 private:
  std::string id_;
  std::shared_ptr<const std::string> content_;
};

// Which line diff the carrier runs. One carrier uses one, so every cached hunk list agrees with every other.
enum class DiffAlgorithm { kMyers, kMinimal, kPatience };

class LineCarrier {
 public:
  struct Options {
    size_t cacheEntries = 4096;  // hunk lists kept; a list is a few hundred bytes for a typical change
    // The LRU's bound on the bytes its lists hold (VersionDiff::heldBytes): the least recently used go until both
    // bounds hold, and a diff larger than this alone is given to its caller without being cached.
    size_t cacheBytes = kHunkCacheBytes;
    // The pinned set's bound on bytes: pin() leaves out the pairs whose diffs would pass it.
    size_t pinnedBytes = kPinnedHunkBytes;
    DiffAlgorithm algorithm = DiffAlgorithm::kMyers;
    // Slide ambiguous hunks to indentation boundaries, as `git diff` does by default, so hunks agree with what a
    // user sees in git.
    bool indentHeuristic = true;
    // For tests, may be empty: called on the thread about to compute a diff (one neither the cache nor the pinned
    // set holds), before the repository lock is taken; a test blocks in it to hold that computation in progress.
    std::function<void(const FileVersion& from, const FileVersion& to)> beforeComputingDiff;
  };
  struct CacheStats {
    uint64_t hits = 0;
    uint64_t misses = 0;
    size_t entries = 0;      // in the LRU
    size_t bytes = 0;        // held by the LRU's entries (VersionDiff::heldBytes), at most Options::cacheBytes
    size_t pinnedBytes = 0;  // held by the pinned set, at most Options::pinnedBytes
  };

  // `repository` may be null: then only buffer versions can be read.
  LineCarrier(RepositoryPtr repository, Options options);
  explicit LineCarrier(RepositoryPtr repository) : LineCarrier(std::move(repository), Options{}) {}
  // Opens the repository at `path` (a work tree, or a bare repository's directory).
  static Result<std::unique_ptr<LineCarrier>> open(const std::string& path, Options options);

  // `lines` of `from` carried to `to`. Refused: a line 0, a backwards range or a line past the end of `from`
  // (validateLineNumbers, field "lines"), a version the repository does not have (NotFound), a binary version or
  // one larger than kMaxAnchoredFileBytes (field "version").
  Result<CarriedLines> carry(const LineRanges& lines, const FileVersion& from, const FileVersion& to);
  // `lines` of versions.front() carried through every version in turn to versions.back().
  Result<CarriedLines> carryAlong(const LineRanges& lines, const std::vector<FileVersion>& versions);

  // The diff from `from` to `to` (no hunks for the same content), from the cache when it has it.
  Result<std::shared_ptr<const VersionDiff>> diff(const FileVersion& from, const FileVersion& to);

  CacheStats cacheStats() const;
  void clearCache();

  // --- anchors re-based to HEAD (docs/anchors.md, "Re-basing to HEAD") ---
  // The HEAD commit (40 hex) now; "" without a repository or a commit.
  std::string head();
  // The blob id of `path` (relative to the repository's top) in HEAD's tree; nullopt without one.
  std::optional<std::string> blobAtHead(const std::string& path);
  // HEAD's commit as read now (HeadReader: resolved again only when its files changed), and the blob id of `path`
  // in that commit's tree: one read of HEAD for the many paths of one pass, which then all see the same HEAD.
  std::optional<git_oid> headCommit();
  std::optional<std::string> blobAtCommit(const std::string& path, const git_oid& oid);
  // Holds the diffs of `pairs` (an anchor's version → HEAD's version of its file) apart from the LRU, so that no
  // other carry evicts them, until the next call replaces the set; computes only those it does not hold already.
  // `tag` names the set (the HEAD it was made for; pinnedTag). Returns how many diffs it computed and holds. Left out:
  // a pair that cannot be diffed (binary, larger than kMaxAnchoredFileBytes, gone), and a pair whose diff would take
  // the set past Options::pinnedBytes (taken in order, so a smaller one later may still fit); a carry of a pair left
  // out diffs it then, and the LRU holds it as any other diff. While the new set is made the old one is held too, so
  // the two together hold at most twice the bound, and only for that time.
  size_t pin(const std::vector<std::pair<FileVersion, FileVersion>>& pairs, const std::string& tag);
  std::string pinnedTag() const;
  size_t pinnedCount() const;

  // The right to remake the pinned set (rebaseAnchorsToHead), held by one caller at a time, so that a re-base asked
  // while another runs can give up at once instead of reading every anchor and diffing every pair again. Given back
  // when destroyed; false when another caller holds it.
  class PinningClaim {
   public:
    PinningClaim(PinningClaim&& other) noexcept : held_(std::exchange(other.held_, nullptr)) {}
    PinningClaim(const PinningClaim&) = delete;
    PinningClaim& operator=(const PinningClaim&) = delete;
    PinningClaim& operator=(PinningClaim&&) = delete;
    ~PinningClaim() {
      if (held_ != nullptr) held_->store(false, std::memory_order_release);
    }
    explicit operator bool() const { return held_ != nullptr; }

   private:
    friend class LineCarrier;
    explicit PinningClaim(std::atomic<bool>* held) : held_(held) {}
    std::atomic<bool>* held_;
  };
  PinningClaim claimPinning();

 private:
  using DiffPtr = std::shared_ptr<const VersionDiff>;
  // Runs the diff (or, for one version, counts its lines) with the repository held.
  Result<DiffPtr> computeDiff(const FileVersion& from, const FileVersion& to);
  DiffPtr cached(const std::string& key);
  void remember(const std::string& key, DiffPtr diff);

  struct CachedDiff {
    std::string key;
    DiffPtr diff;
    size_t bytes = 0;  // diff->heldBytes(), counted into lruBytes_
  };

  // Held while the repository is read (blob lookups); only when a version is a blob, so the lock is taken
  // conditionally (std::unique_lock), which the analysis cannot follow: repository_ carries no annotation.
  Mutex repositoryMutex_;
  RepositoryPtr repository_;
  HeadReader headReader_ GUARDED_BY(repositoryMutex_);
  CommitTree headTree_ GUARDED_BY(repositoryMutex_);  // the tree of the HEAD last asked about
  const Options options_;

  mutable Mutex cacheMutex_;
  std::list<CachedDiff> lru_ GUARDED_BY(cacheMutex_);  // most recently used first
  std::unordered_map<std::string, std::list<CachedDiff>::iterator> index_ GUARDED_BY(cacheMutex_);
  size_t lruBytes_ GUARDED_BY(cacheMutex_) = 0;  // the sum of lru_'s bytes
  std::unordered_map<std::string, DiffPtr> pinned_ GUARDED_BY(cacheMutex_);
  size_t pinnedBytes_ GUARDED_BY(cacheMutex_) = 0;  // the sum of pinned_'s heldBytes()
  std::string pinnedTag_ GUARDED_BY(cacheMutex_);
  std::atomic<bool> pinningClaimed_{false};  // a PinningClaim is out
  uint64_t hits_ GUARDED_BY(cacheMutex_) = 0;
  uint64_t misses_ GUARDED_BY(cacheMutex_) = 0;
};

}  // namespace memq
