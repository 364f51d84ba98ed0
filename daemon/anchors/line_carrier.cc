// Carrying line ranges through line diffs; see line_carrier.h.
#include "daemon/anchors/line_carrier.h"

#include <algorithm>
#include <unordered_set>

#include "daemon/model/memory_input.h"

namespace memq {

namespace {

// Whether the hunk lies wholly above old line `line`, so that it only moves the line.
bool hunkAbove(const DiffHunk& h, uint32_t line) {
  if (h.oldLines == 0) return h.oldStart < line;  // an insertion after old line oldStart
  return h.oldStart + h.oldLines - 1 < line;
}

}  // namespace

std::vector<CarriedSegment> carrySegments(const LineRanges& normalized, const HunkList& hunks) {
  std::vector<CarriedSegment> out;
  size_t next = 0;     // first hunk not yet wholly above the current line
  int64_t shift = 0;   // lines added minus lines removed by the hunks above it
  for (const LineRange& range : normalized) {
    uint32_t line = range.first;
    while (line <= range.last) {
      while (next < hunks.size() && hunkAbove(hunks[next], line)) {
        shift += static_cast<int64_t>(hunks[next].newLines) - hunks[next].oldLines;
        ++next;
      }
      CarriedSegment seg;
      if (next < hunks.size() && hunks[next].oldLines > 0 && hunks[next].oldStart <= line) {
        const DiffHunk& h = hunks[next];
        seg.from = {line, std::min(range.last, h.oldStart + h.oldLines - 1)};
        if (h.newLines > 0) {
          seg.outcome = LineOutcome::kRewritten;
          seg.to = {h.newStart, h.newStart + h.newLines - 1};
        } else {
          seg.outcome = LineOutcome::kDeleted;
        }
      } else {
        // Untouched up to the next hunk: up to the line before a replacement, or up to and including the line an
        // insertion follows.
        uint32_t limit = range.last;
        if (next < hunks.size()) {
          const DiffHunk& h = hunks[next];
          limit = std::min(limit, h.oldLines > 0 ? h.oldStart - 1 : h.oldStart);
        }
        seg.from = {line, limit};
        seg.outcome = LineOutcome::kShifted;
        seg.to = {static_cast<uint32_t>(line + shift), static_cast<uint32_t>(limit + shift)};
      }
      out.push_back(seg);
      if (seg.from.last == UINT32_MAX) break;
      line = seg.from.last + 1;
    }
  }
  return out;
}

namespace {

// Original anchor lines `origin` and what they have become so far. A shifted piece's image is one range of the same
// length (line i of origin is line i of the image); a rewritten piece's image is whatever its hunks became.
struct Piece {
  LineRange origin;
  LineOutcome outcome = LineOutcome::kShifted;
  LineRanges image;
};

}  // namespace

CarriedLines carryThroughHunks(const LineRanges& lines, const std::vector<const HunkList*>& steps) {
  std::vector<Piece> pieces;
  for (const LineRange& r : lines) pieces.push_back({r, LineOutcome::kShifted, {r}});
  for (const HunkList* step : steps) {
    if (step->empty()) continue;
    std::vector<Piece> next;
    for (Piece& piece : pieces) {
      if (piece.outcome == LineOutcome::kDeleted) {
        next.push_back(std::move(piece));
        continue;
      }
      const std::vector<CarriedSegment> segments = carrySegments(piece.image, *step);
      if (piece.outcome == LineOutcome::kShifted) {
        // One-to-one so far: each segment's old lines are origin lines at the same offset.
        const uint32_t offset = piece.origin.first;
        const uint32_t imageFirst = piece.image.front().first;
        for (const CarriedSegment& s : segments) {
          Piece p{{offset + (s.from.first - imageFirst), offset + (s.from.last - imageFirst)}, s.outcome, {}};
          if (s.outcome != LineOutcome::kDeleted) p.image.push_back(s.to);
          next.push_back(std::move(p));
        }
      } else {
        LineRanges image;
        for (const CarriedSegment& s : segments) {
          if (s.outcome != LineOutcome::kDeleted) image.push_back(s.to);
        }
        piece.image = normalizeRanges(std::move(image));
        if (piece.image.empty()) piece.outcome = LineOutcome::kDeleted;
        next.push_back(std::move(piece));
      }
    }
    pieces = std::move(next);
  }
  CarriedLines out;
  LineRanges all;
  LineRanges unchanged;
  for (const Piece& p : pieces) {
    all.insert(all.end(), p.image.begin(), p.image.end());
    if (p.outcome == LineOutcome::kShifted) unchanged.insert(unchanged.end(), p.image.begin(), p.image.end());
    const uint64_t n = p.origin.size();
    switch (p.outcome) {
      case LineOutcome::kShifted: out.counts.shifted += n; break;
      case LineOutcome::kRewritten: out.counts.rewritten += n; break;
      case LineOutcome::kDeleted: out.counts.deleted += n; break;
    }
  }
  out.lines = normalizeRanges(std::move(all));
  out.unchanged = normalizeRanges(std::move(unchanged));
  return out;
}

FileVersion FileVersion::blob(std::string blobId) {
  FileVersion v;
  std::transform(blobId.begin(), blobId.end(), blobId.begin(), [](unsigned char c) { return std::tolower(c); });
  v.id_ = std::move(blobId);
  return v;
}

FileVersion FileVersion::buffer(std::string content) {
  ensureLibgit2();
  FileVersion v;
  git_oid oid;
  // The id git would give this content, so the cache and the identity check treat it like its blob.
  if (git_odb_hash(&oid, content.data(), content.size(), GIT_OBJECT_BLOB) == 0) v.id_ = oidHex(oid);
  v.content_ = std::make_shared<const std::string>(std::move(content));
  return v;
}

FileVersion FileVersion::kept(std::shared_ptr<const std::string> content, std::string blobId) {
  FileVersion v = blob(std::move(blobId));
  v.content_ = std::move(content);
  return v;
}

LineCarrier::LineCarrier(RepositoryPtr repository, Options options)
    : repository_(std::move(repository)), options_(options) {
  ensureLibgit2();
}

Result<std::unique_ptr<LineCarrier>> LineCarrier::open(const std::string& path, Options options) {
  ensureLibgit2();
  git_repository* raw = nullptr;
  const int rc = git_repository_open_ext(&raw, path.c_str(), GIT_REPOSITORY_OPEN_NO_SEARCH, nullptr);
  MEMQ_RETURN_IF_ERROR(gitStatus(rc, "open repository " + path));
  return std::make_unique<LineCarrier>(RepositoryPtr(raw), options);
}

namespace {

// One version's bytes: a buffer's own, or a looked-up blob's (valid while `blob` lives).
struct Content {
  BlobPtr blob;
  std::string_view bytes;
};

// A version larger than the largest file whose lines are anchored is refused as a binary one is: no anchor can be
// in it, and diffing it (a generated file of tens of MiB) would hold the repository lock, which every carry of the
// scope needs, for as long as the diff runs.
Status refuseTooLarge(size_t bytes, const FileVersion& version) {
  if (bytes <= kMaxAnchoredFileBytes) return Status::ok();
  return Status::invalidField("version", "version " + version.id() + " is " + std::to_string(bytes) +
                                             " bytes, more than the " + std::to_string(kMaxAnchoredFileBytes >> 20) +
                                             " MiB of the largest file anchored; its lines are not carried");
}

// The size of blob `oid` from its object header, without inflating it; nullopt when the header cannot be read
// (git_blob_lookup then reports why).
std::optional<size_t> blobSize(git_repository* repository, const git_oid& oid) {
  git_odb* raw = nullptr;
  if (git_repository_odb(&raw, repository) != 0) return std::nullopt;
  GitPtr<git_odb, git_odb_free> odb(raw);
  size_t size = 0;
  git_object_t type = GIT_OBJECT_INVALID;
  if (git_odb_read_header(&size, &type, odb.get(), &oid) != 0) return std::nullopt;
  return size;
}

Status loadContent(git_repository* repository, const FileVersion& version, Content& out) {
  if (version.isBuffer()) {
    MEMQ_RETURN_IF_ERROR(refuseTooLarge(version.content()->size(), version));
    out.bytes = *version.content();
    return Status::ok();
  }
  if (repository == nullptr) {
    return Status::invalidField("version", "blob " + version.id() + " named, but no repository to read it from");
  }
  git_oid oid;
  if (version.id().size() != GIT_OID_HEXSZ || git_oid_fromstr(&oid, version.id().c_str()) != 0) {
    return Status::invalidField("version", "'" + version.id() + "' is not a 40-hex-digit blob id");
  }
  if (const std::optional<size_t> size = blobSize(repository, oid)) {
    MEMQ_RETURN_IF_ERROR(refuseTooLarge(*size, version));
  }
  git_blob* raw = nullptr;
  MEMQ_RETURN_IF_ERROR(gitStatus(git_blob_lookup(&raw, repository, &oid), "read blob " + version.id()));
  out.blob.reset(raw);
  out.bytes = std::string_view(static_cast<const char*>(git_blob_rawcontent(raw)),
                               static_cast<size_t>(git_blob_rawsize(raw)));
  return refuseTooLarge(out.bytes.size(), version);
}

Status refuseBinary(const Content& c, const FileVersion& version) {
  if (!isBinaryContent(c.bytes)) return Status::ok();
  return Status::invalidField("version", "version " + version.id() + " is binary; it has no lines to carry");
}

// `bytes` with its line ends made alike, into `out` when that changes anything; the view to diff. A line's end is
// not part of its content: each CR right before an LF is removed, so a file converted between CRLF and LF keeps its
// lines, and a last line without an LF gets one, so a line appended after it does not make it read as rewritten
// (git's "\ No newline at end of file"). The line count is the same either way (countLines).
std::string_view withLineEndsAlike(std::string_view bytes, std::string& out) {
  const bool crlf = bytes.find("\r\n") != std::string_view::npos;
  const bool openLastLine = !bytes.empty() && bytes.back() != '\n';
  if (!crlf && !openLastLine) return bytes;
  out.reserve(bytes.size() + 1);
  for (size_t i = 0; i < bytes.size(); ++i) {
    if (bytes[i] == '\r' && i + 1 < bytes.size() && bytes[i + 1] == '\n') continue;
    out.push_back(bytes[i]);
  }
  if (openLastLine) out.push_back('\n');
  return out;
}

int collectHunk(const git_diff_delta*, const git_diff_hunk* hunk, void* payload) {
  static_cast<HunkList*>(payload)->push_back({static_cast<uint32_t>(hunk->old_start),
                                              static_cast<uint32_t>(hunk->old_lines),
                                              static_cast<uint32_t>(hunk->new_start),
                                              static_cast<uint32_t>(hunk->new_lines)});
  return 0;
}

}  // namespace

Result<LineCarrier::DiffPtr> LineCarrier::computeDiff(const FileVersion& from, const FileVersion& to) {
  if (options_.beforeComputingDiff) options_.beforeComputingDiff(from, to);
  // Blob lookups go through the repository, which one thread at a time may use; buffers alone need no lock.
  std::unique_lock<Mutex> lock(repositoryMutex_, std::defer_lock);
  if (!from.isBuffer() || !to.isBuffer()) lock.lock();
  Content a;
  MEMQ_RETURN_IF_ERROR(loadContent(repository_.get(), from, a));
  MEMQ_RETURN_IF_ERROR(refuseBinary(a, from));
  auto result = std::make_shared<VersionDiff>();
  result->fromLines = countLines(a.bytes);
  if (from.id() == to.id()) {
    result->toLines = result->fromLines;
    return DiffPtr(std::move(result));
  }
  Content b;
  MEMQ_RETURN_IF_ERROR(loadContent(repository_.get(), to, b));
  MEMQ_RETURN_IF_ERROR(refuseBinary(b, to));
  result->toLines = countLines(b.bytes);

  git_diff_options opts;
  git_diff_options_init(&opts, GIT_DIFF_OPTIONS_VERSION);
  opts.context_lines = 0;
  opts.interhunk_lines = 0;
  // Binary content was refused above; forcing text keeps libgit2 from second-guessing that on its own heuristic.
  opts.flags |= GIT_DIFF_FORCE_TEXT;
  if (options_.algorithm == DiffAlgorithm::kMinimal) opts.flags |= GIT_DIFF_MINIMAL;
  if (options_.algorithm == DiffAlgorithm::kPatience) opts.flags |= GIT_DIFF_PATIENCE;
  if (options_.indentHeuristic) opts.flags |= GIT_DIFF_INDENT_HEURISTIC;
  std::string aCopy, bCopy;
  const std::string_view aText = withLineEndsAlike(a.bytes, aCopy);
  const std::string_view bText = withLineEndsAlike(b.bytes, bCopy);
  const int rc = git_diff_buffers(aText.data(), aText.size(), nullptr, bText.data(), bText.size(), nullptr, &opts,
                                  nullptr, nullptr, collectHunk, nullptr, &result->hunks);
  MEMQ_RETURN_IF_ERROR(gitStatus(rc, "diff " + from.id() + " to " + to.id()));
  // The list is held as long as the cache keeps it: without the room its growth left (up to as much again), so the
  // byte bounds hold more diffs.
  result->hunks.shrink_to_fit();
  return DiffPtr(std::move(result));
}

LineCarrier::DiffPtr LineCarrier::cached(const std::string& key) {
  MutexLock lock(cacheMutex_);
  if (auto p = pinned_.find(key); p != pinned_.end()) {
    ++hits_;
    return p->second;
  }
  auto it = index_.find(key);
  if (it == index_.end()) {
    ++misses_;
    return nullptr;
  }
  ++hits_;
  lru_.splice(lru_.begin(), lru_, it->second);
  return it->second->diff;
}

void LineCarrier::remember(const std::string& key, DiffPtr diff) {
  const size_t bytes = diff->heldBytes();
  MutexLock lock(cacheMutex_);
  // A diff larger than the whole bound would evict every other entry and then pass the bound itself: its caller has
  // it, the cache does not.
  if (options_.cacheEntries == 0 || bytes > options_.cacheBytes) return;
  auto it = index_.find(key);
  if (it != index_.end()) {
    // Another thread computed the same pair meanwhile; both answers are equal, keep the first.
    lru_.splice(lru_.begin(), lru_, it->second);
    return;
  }
  lru_.push_front({key, std::move(diff), bytes});
  index_.emplace(key, lru_.begin());
  lruBytes_ += bytes;
  // The entry just added fits both bounds alone, so it is never the one evicted.
  while (lru_.size() > options_.cacheEntries || lruBytes_ > options_.cacheBytes) {
    lruBytes_ -= lru_.back().bytes;
    index_.erase(lru_.back().key);
    lru_.pop_back();
  }
}

Result<std::shared_ptr<const VersionDiff>> LineCarrier::diff(const FileVersion& from, const FileVersion& to) {
  const std::string key = from.id() + ">" + to.id();
  if (DiffPtr hit = cached(key)) return hit;
  Result<DiffPtr> computed = computeDiff(from, to);
  if (!computed) return computed.status();
  remember(key, *computed);
  return *computed;
}

Result<CarriedLines> LineCarrier::carry(const LineRanges& lines, const FileVersion& from, const FileVersion& to) {
  return carryAlong(lines, {from, to});
}

Result<CarriedLines> LineCarrier::carryAlong(const LineRanges& lines, const std::vector<FileVersion>& versions) {
  if (versions.empty()) return Status::invalidField("versions", "versions: no version to carry from");
  // Carrying takes any set of lines the old version has (an empty set carries to an empty set); the bounds on what
  // an anchor may hold are the saver's to apply (validateRanges).
  MEMQ_RETURN_IF_ERROR(validateLineNumbers(lines, "lines"));
  std::vector<DiffPtr> diffs;
  if (versions.size() == 1) {
    Result<DiffPtr> self = diff(versions[0], versions[0]);
    if (!self) return self.status();
    diffs.push_back(*self);
  }
  for (size_t i = 0; i + 1 < versions.size(); ++i) {
    Result<DiffPtr> d = diff(versions[i], versions[i + 1]);
    if (!d) return d.status();
    diffs.push_back(*d);
  }
  MEMQ_RETURN_IF_ERROR(validateLineNumbers(lines, "lines", diffs.front()->fromLines));
  std::vector<const HunkList*> steps;
  for (const DiffPtr& d : diffs) steps.push_back(&d->hunks);
  return carryThroughHunks(normalizeRanges(lines), steps);
}

LineCarrier::CacheStats LineCarrier::cacheStats() const {
  MutexLock lock(cacheMutex_);
  return {hits_, misses_, lru_.size(), lruBytes_, pinnedBytes_};
}

void LineCarrier::clearCache() {
  MutexLock lock(cacheMutex_);
  lru_.clear();
  index_.clear();
  lruBytes_ = 0;
  pinned_.clear();
  pinnedBytes_ = 0;
  pinnedTag_.clear();
}

std::string LineCarrier::head() {
  const std::optional<git_oid> oid = headCommit();
  return oid ? oidHex(*oid) : "";
}

std::optional<std::string> LineCarrier::blobAtHead(const std::string& path) {
  const std::optional<git_oid> head = headCommit();
  return head ? blobAtCommit(path, *head) : std::nullopt;
}

std::optional<git_oid> LineCarrier::headCommit() {
  if (!repository_) return std::nullopt;
  MutexLock lock(repositoryMutex_);
  return headReader_.read(repository_.get());
}

std::optional<std::string> LineCarrier::blobAtCommit(const std::string& path, const git_oid& oid) {
  if (!repository_) return std::nullopt;
  MutexLock lock(repositoryMutex_);
  git_tree* tree = headTree_.of(repository_.get(), oid);
  if (tree == nullptr) return std::nullopt;
  git_tree_entry* raw = nullptr;
  if (git_tree_entry_bypath(&raw, tree, path.c_str()) < 0) return std::nullopt;
  TreeEntryPtr entry(raw);
  if (git_tree_entry_type(entry.get()) != GIT_OBJECT_BLOB) return std::nullopt;
  return oidHex(*git_tree_entry_id(entry.get()));
}

size_t LineCarrier::pin(const std::vector<std::pair<FileVersion, FileVersion>>& pairs, const std::string& tag) {
  std::unordered_map<std::string, DiffPtr> next;
  size_t nextBytes = 0;
  // Every pair met so far, held or left out: a pair that comes again (anchors of one version) is not diffed again.
  std::unordered_set<std::string> seen;
  size_t computed = 0;
  for (const auto& [from, to] : pairs) {
    const std::string key = from.id() + ">" + to.id();
    if (!seen.insert(key).second) continue;
    DiffPtr held;
    {
      MutexLock lock(cacheMutex_);
      if (auto p = pinned_.find(key); p != pinned_.end()) held = p->second;
      if (auto it = index_.find(key); !held && it != index_.end()) held = it->second->diff;
    }
    bool computedHere = false;
    if (!held) {
      // Computed without the cache lock, so carries for recall go on meanwhile (they share the repository lock).
      Result<DiffPtr> d = computeDiff(from, to);
      if (!d) continue;
      held = *d;
      computedHere = true;
    }
    // Past the bound the pair is left out: its anchors are carried through HEAD all the same, their first step
    // diffed when a carry needs it.
    const size_t bytes = held->heldBytes();
    if (bytes > options_.pinnedBytes - nextBytes) continue;
    nextBytes += bytes;
    if (computedHere) ++computed;
    next.emplace(key, std::move(held));
  }
  MutexLock lock(cacheMutex_);
  pinned_ = std::move(next);
  pinnedBytes_ = nextBytes;
  pinnedTag_ = tag;
  return computed;
}

std::string LineCarrier::pinnedTag() const {
  MutexLock lock(cacheMutex_);
  return pinnedTag_;
}

LineCarrier::PinningClaim LineCarrier::claimPinning() {
  const bool claimedAlready = pinningClaimed_.exchange(true, std::memory_order_acquire);
  return PinningClaim(claimedAlready ? nullptr : &pinningClaimed_);
}

size_t LineCarrier::pinnedCount() const {
  MutexLock lock(cacheMutex_);
  return pinned_.size();
}

}  // namespace memq
