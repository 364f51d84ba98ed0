// Staleness by lines in review/stale; see review_lines.h.
#include "daemon/service/review_lines.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <optional>
#include <string_view>
#include <utility>

#include "daemon/anchors/line_ranges.h"
#include "daemon/util/utf8.h"

namespace memq {

namespace {

// One line for a reply: at most kExcerptLineCodePoints code points (then "…"), ill-formed bytes as U+FFFD, no CR.
std::string excerptLine(std::string_view line) {
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  std::string out;
  size_t pos = 0, n = 0;
  while (pos < line.size()) {
    if (n == kExcerptLineCodePoints) return out + "…";
    appendUtf8(out, decodeUtf8At(line, pos));
    ++n;
  }
  return out;
}

// The saved version of `ref`: the content memq keeps, or the blob of the repository.
FileVersion versionThen(const AnchoredRef& ref) {
  if (ref.anchor.keptContent) return FileVersion::kept(ref.anchor.keptContent, ref.anchor.blob);
  return FileVersion::blob(ref.anchor.blob);
}

// What a rewrite or a deletion touched of `ref`'s lines: the saved lines it replaced or removed, and the work-tree
// lines that replaced them. The state and the lines now are annotateAnchoredLines'; this only picks, from the same
// diff (the carrier's cache has it), which lines' text to show.
void addExcerpts(LineCarrier& carrier, RepoSignals& repo, const AnchoredRef& ref, const FileVersion& now,
                 StaleAnchoredLines& out) {
  const FileVersion then = versionThen(ref);
  auto diff = carrier.diff(then, now);
  if (!diff) {
    spdlog::debug("no excerpt of memory {} on {}: {}", ref.pk, ref.path, diff.status().message());
    return;
  }
  LineRanges touchedThen, touchedNow;
  for (const auto& s : carrySegments(ref.anchor.lines, (*diff)->hunks)) {
    if (s.outcome == LineOutcome::kShifted) continue;
    touchedThen.push_back(s.from);
    if (s.outcome == LineOutcome::kRewritten) touchedNow.push_back(s.to);
  }
  std::optional<std::string> blob;
  const std::string* contentThen = then.content();
  if (contentThen == nullptr) {
    blob = repo.blobContent(ref.anchor.blob);
    if (blob) contentThen = &*blob;
  }
  if (contentThen != nullptr) out.textThen = linesExcerpt(*contentThen, normalizeRanges(std::move(touchedThen)));
  if (now.content() != nullptr) out.textNow = linesExcerpt(*now.content(), normalizeRanges(std::move(touchedNow)));
}

// The anchored lines of `hit` as the reply gives them: then (from its refs), now (annotateAnchoredLines).
std::vector<StaleAnchoredLines> thenAndNow(const RecallHit& hit) {
  std::vector<StaleAnchoredLines> out;
  for (const auto& now : hit.anchoredLines) {
    StaleAnchoredLines entry{now, {}, {}, {}, {}};
    for (const auto& f : hit.memory.files) {
      if (f.path == now.path && f.anchor) {
        entry.linesThen = f.anchor->lines;
        entry.blobThen = f.anchor->blob;
      }
    }
    out.push_back(std::move(entry));
  }
  return out;
}

bool touched(const StaleAnchoredLines& a) {
  return a.now.state == AnchoredLinesState::kRewritten || a.now.state == AnchoredLinesState::kDeleted;
}

// Excerpts for the rewritten and deleted lines of `stale`; the kept content of versions the repository lacks comes
// with the anchored refs (a memory's loaded refs carry none).
Status addAllExcerpts(RecallSource& source, LineCarrier& carrier, RepoSignals& repo, WorkTreeVersions& workTree,
                      std::vector<StaleMemory>& stale) {
  std::vector<std::string> paths;
  std::vector<int64_t> pks;
  for (const auto& m : stale) {
    for (const auto& a : m.anchoredLines) {
      if (!touched(a)) continue;
      if (pks.empty() || pks.back() != m.memory.pk) pks.push_back(m.memory.pk);
      if (std::find(paths.begin(), paths.end(), a.now.path) == paths.end()) paths.push_back(a.now.path);
    }
  }
  if (paths.empty()) return Status::ok();
  auto refs = source.anchoredRefsOn(paths, pks);
  if (!refs) return refs.status();
  for (auto& m : stale) {
    for (auto& a : m.anchoredLines) {
      if (!touched(a)) continue;
      const FileVersion* now = workTree.at(a.now.path);
      if (now == nullptr) continue;
      for (const auto& ref : *refs) {
        if (ref.pk == m.memory.pk && ref.path == a.now.path) addExcerpts(carrier, repo, ref, *now, a);
      }
    }
  }
  return Status::ok();
}

bool hasAnchor(const Memory& m) {
  return std::any_of(m.files.begin(), m.files.end(), [](const FileRef& f) { return f.anchor.has_value(); });
}

}  // namespace

LinesExcerpt linesExcerpt(const std::string& content, const LineRanges& ranges) {
  LinesExcerpt out;
  uint32_t line = 1;
  size_t start = 0;
  auto range = ranges.begin();
  while (range != ranges.end() && start < content.size()) {
    size_t end = content.find('\n', start);
    if (end == std::string::npos) end = content.size();
    while (range != ranges.end() && range->last < line) ++range;
    if (range != ranges.end() && range->contains(line)) {
      if (out.text.size() < kExcerptLines) {
        out.text.push_back(excerptLine(std::string_view(content).substr(start, end - start)));
      } else {
        ++out.more;
      }
    }
    start = end + 1;
    ++line;
  }
  return out;
}

Result<std::vector<StaleMemory>> staleMemories(RecallSource& source, LineCarrier* carrier, RepoSignals& repo,
                                               WorkTreeVersions& workTree, const std::string& scope,
                                               std::vector<Memory> memories) {
  // By blob ids first: a memory none of whose files changed is not read further.
  std::vector<RecallHit> changed;
  CurrentBlobIds current(repo);
  for (auto& m : memories) {
    RecallHit h;
    h.memory = std::move(m);
    annotateStaleness(h, current);
    if (!h.changedFiles.empty()) changed.push_back(std::move(h));
  }
  const bool anyAnchor =
      std::any_of(changed.begin(), changed.end(), [](const RecallHit& h) { return hasAnchor(h.memory); });
  if (carrier != nullptr && anyAnchor) {
    MEMQ_RETURN_IF_ERROR(annotateAnchoredLines(source, *carrier, workTree, scope, changed));
    for (auto& h : changed) annotateStaleness(h, current);  // the rule recall applies: held lines are not a change
  }
  std::vector<StaleMemory> stale;
  for (auto& h : changed) {
    if (h.changedFiles.empty()) continue;
    std::vector<StaleAnchoredLines> lines = thenAndNow(h);
    stale.push_back({std::move(h.memory), std::move(h.changedFiles), std::move(lines)});
  }
  if (carrier != nullptr) MEMQ_RETURN_IF_ERROR(addAllExcerpts(source, *carrier, repo, workTree, stale));
  return stale;
}

}  // namespace memq
