// The line signals of a recall; see recall_lines.h.
#include "daemon/service/recall_lines.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <optional>
#include <unordered_map>
#include <utility>

#include "daemon/anchors/line_signals.h"
#include "daemon/service/file_anchors.h"

namespace memq {

WorkTreeVersions::WorkTreeVersions(std::string workTree, std::string repoPrefix,
                                   const std::vector<RenamedPath>& renamed)
    : workTree_(std::move(workTree)), repoPrefix_(std::move(repoPrefix)) {
  for (const auto& r : renamed) {
    for (const auto& e : r.earlier) {
      auto& into = renamedTo_[e];
      if (std::find(into.begin(), into.end(), r.path) == into.end()) into.push_back(r.path);
    }
    renamedFrom_[r.path] = r.earlier;
  }
}

const FileVersion* WorkTreeVersions::at(const std::string& path) {
  auto it = versions_.find(path);
  if (it == versions_.end()) {
    auto file = readWorkTreeVersion(workTree_, path, "files");
    it = versions_.emplace(path, file ? std::optional<FileVersion>(FileVersion::kept((*file)->content, (*file)->blobId))
                                      : std::nullopt).first;
  }
  return it->second ? &*it->second : nullptr;
}

std::vector<std::string> WorkTreeVersions::carriedInto(const std::string& path) const {
  // The ref's own path first and always: reading it as another file would take a copy's original's anchors (still
  // about the file there) away from it, so the lines a query names in it would find nothing. A renamed file's old
  // path is no file any more (RenameMap follows no path that is one), and at() then skips it.
  std::vector<std::string> out{path};
  if (auto it = renamedTo_.find(path); it != renamedTo_.end()) {
    for (const auto& p : it->second) {
      if (p != path) out.push_back(p);
    }
  }
  return out;
}

std::string WorkTreeVersions::repoPath(const std::string& path) const {
  return repoPrefix_.empty() ? path : repoPrefix_ + "/" + path;
}

std::vector<std::string> WorkTreeVersions::withEarlierPaths(const std::vector<std::string>& paths) const {
  std::vector<std::string> out = paths;
  for (const auto& p : paths) {
    auto it = renamedFrom_.find(p);
    if (it == renamedFrom_.end()) continue;
    for (const auto& e : it->second) {
      if (std::find(out.begin(), out.end(), e) == out.end()) out.push_back(e);
    }
  }
  return out;
}

namespace {

// HEAD's blob of each path asked for (relative to the repository's top), looked up once per pass, in the HEAD the
// pass read first.
class HeadBlobs {
 public:
  explicit HeadBlobs(LineCarrier& carrier) : carrier_(carrier) {}
  const std::optional<std::string>& of(const std::string& path) {
    auto it = blobs_.find(path);
    if (it == blobs_.end()) {
      if (!headRead_) {
        head_ = carrier_.headCommit();
        headRead_ = true;
      }
      it = blobs_.emplace(path, head_ ? carrier_.blobAtCommit(path, *head_) : std::nullopt).first;
    }
    return it->second;
  }

 private:
  LineCarrier& carrier_;
  bool headRead_ = false;
  std::optional<git_oid> head_;
  std::unordered_map<std::string, std::optional<std::string>> blobs_;
};

// HEAD's version of `path` for carrying `ref` into it (carryToWorkTree), or none when `path` is not the ref's own
// path but a file it was renamed or copied to, which is then carried into by the one diff from the anchor's version.
// Through HEAD's version of the new path, an edit committed with the rename and undone in the work tree would read
// as a rewrite of lines that are as they were. Re-basing holds diffs into HEAD's version of a ref's own path only, so
// no held diff would have served that chain's first step.
std::optional<std::string> headVersionToCarryThrough(HeadBlobs& heads, const WorkTreeVersions& workTree,
                                                     const AnchoredRef& ref, const std::string& path) {
  if (path != ref.path) return std::nullopt;
  return heads.of(workTree.repoPath(path));
}

// `ref`'s lines carried to `to`, or nullopt when they cannot be (a version the repository no longer has, a file
// binary now): no signal, no error. Through HEAD's version of the file when it is neither end (`atHead`, unset for a
// file the ref's path was renamed or copied to) and the anchor's version is one the repository has: the step from
// the anchor to HEAD is the one re-basing holds (anchor_rebase.h), the step from HEAD to the work tree is one diff for
// every anchor on the file. A version memq keeps was saved on uncommitted lines, which HEAD may never have had:
// through HEAD they would read as deleted, so it is carried by the one diff.
std::optional<CarriedLines> carryToWorkTree(LineCarrier& carrier, const AnchoredRef& ref, const FileVersion& to,
                                            const std::optional<std::string>& atHead) {
  const FileVersion from = ref.anchor.keptContent ? FileVersion::kept(ref.anchor.keptContent, ref.anchor.blob)
                                                  : FileVersion::blob(ref.anchor.blob);
  const bool viaHead = !ref.anchor.keptContent && from.id() != to.id() && atHead && *atHead != from.id() &&
                       *atHead != to.id();
  Result<CarriedLines> carried = viaHead
                                     ? carrier.carryAlong(ref.anchor.lines, {from, FileVersion::blob(*atHead), to})
                                     : carrier.carry(ref.anchor.lines, from, to);
  // HEAD's version may be one that cannot be carried through (binary there): then the one diff.
  if (!carried && viaHead) carried = carrier.carry(ref.anchor.lines, from, to);
  if (!carried) {
    spdlog::debug("anchor of memory {} on {} not carried: {}", ref.pk, ref.path, carried.status().message());
    return std::nullopt;
  }
  return std::move(*carried);
}

}  // namespace

Status addLineSignals(RecallSource& source, LineCarrier& carrier, WorkTreeVersions& workTree,
                      const std::vector<PathLines>& queryLines, std::vector<Candidate>& candidates) {
  std::vector<QueryLines> query;
  std::vector<std::string> paths;
  for (const auto& q : queryLines) {
    if (q.lines.empty()) continue;
    query.push_back({q.path, normalizeRanges(q.lines)});
    paths.push_back(q.path);
  }
  if (query.empty() || candidates.empty()) return Status::ok();
  std::vector<int64_t> pks;
  for (const auto& c : candidates) pks.push_back(c.pk);
  auto refs = source.anchoredRefsOn(workTree.withEarlierPaths(paths), pks);
  if (!refs) return refs.status();
  if (refs->empty()) return Status::ok();

  std::unordered_map<int64_t, size_t> indexOf;  // candidate pk → its LineCandidate
  for (size_t i = 0; i < candidates.size(); ++i) indexOf.emplace(candidates[i].pk, i);
  std::vector<LineCandidate> lineCandidates(candidates.size());
  for (size_t i = 0; i < candidates.size(); ++i) {
    // The newest anchor owns a line: pks grow with every row written, so a later save's anchor is the newer one.
    lineCandidates[i].anchoredAt = candidates[i].pk;
  }

  HeadBlobs heads(carrier);
  for (auto& ref : *refs) {
    auto at = indexOf.find(ref.pk);
    if (at == indexOf.end()) continue;  // not a candidate of this recall
    for (const std::string& path : workTree.carriedInto(ref.path)) {
      const FileVersion* to = workTree.at(path);
      if (to == nullptr) continue;  // gone (or not a file): its anchors give no signal there
      auto carried = carryToWorkTree(carrier, ref, *to, headVersionToCarryThrough(heads, workTree, ref, path));
      if (!carried) continue;
      if (carried->lines.empty()) continue;  // every anchored line was deleted
      lineCandidates[at->second].anchors.push_back({path, std::move(carried->lines), std::move(carried->unchanged)});
    }
  }
  const std::vector<LineSignals> signals = computeLineSignals(query, lineCandidates);
  for (size_t i = 0; i < candidates.size(); ++i) {
    Signals& s = candidates[i].signals;
    s.lineOverlap = signals[i].overlap;
    s.linesOwned = signals[i].owned;
    s.linesOriginated = signals[i].originated;
    s.linesPrior = signals[i].prior;
    s.lineDistance = signals[i].distance;
  }
  return Status::ok();
}

Status annotateAnchoredLines(RecallSource& source, LineCarrier& carrier, WorkTreeVersions& workTree,
                             const std::string& scope, std::vector<RecallHit>& hits) {
  std::vector<std::string> paths;
  std::vector<int64_t> pks;
  for (const auto& h : hits) {
    if (h.memory.scope != scope) continue;
    pks.push_back(h.memory.pk);
    for (const auto& f : h.memory.files) {
      if (f.anchor && std::find(paths.begin(), paths.end(), f.path) == paths.end()) paths.push_back(f.path);
    }
  }
  if (paths.empty()) return Status::ok();
  // The kept content of the versions the repository lacks comes with the refs (the hits' own refs carry none).
  auto refs = source.anchoredRefsOn(paths, pks);  // the hits' own paths: a renamed one is among them as it was
  if (!refs) return refs.status();
  HeadBlobs heads(carrier);
  for (auto& h : hits) {
    if (h.memory.scope != scope) continue;
    h.anchoredLines.clear();
    for (const auto& ref : *refs) {
      if (ref.pk != h.memory.pk) continue;
      for (const std::string& path : workTree.carriedInto(ref.path)) {
        const FileVersion* to = workTree.at(path);
        if (to == nullptr) continue;  // gone: missing_files says so (the file it was renamed to, if queried, is next)
        auto carried =
            carryToWorkTree(carrier, ref, *to, headVersionToCarryThrough(heads, workTree, ref, path));
        if (!carried) continue;
        AnchoredLinesNow now{path, AnchoredLinesState::kUnchanged, carried->lines, {}};
        if (now.path != ref.path) now.renamedFrom = ref.path;
        if (carried->lines.empty()) {
          now.state = AnchoredLinesState::kDeleted;
        } else if (carried->counts.rewritten > 0 || carried->counts.deleted > 0) {
          now.state = AnchoredLinesState::kRewritten;
        } else if (carried->lines != ref.anchor.lines) {
          now.state = AnchoredLinesState::kMoved;
        }
        h.anchoredLines.push_back(std::move(now));
      }
    }
  }
  return Status::ok();
}

}  // namespace memq
