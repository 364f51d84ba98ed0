// Staleness by lines in review/stale (docs/anchors.md, "In review"): a memory's anchored refs carried to the work
// tree exactly as recall carries its hits' (recall_lines.h, annotateAnchoredLines), so that a file whose anchored
// lines are unchanged or only moved does not make the memory stale; and, for each anchored ref of a stale memory,
// its lines then (as saved) and now, with the text a rewrite or a deletion touched, briefly.
// Thread-safety: reads the work tree and the repository; the source is used under its scope's lock.
#pragma once

#include <string>
#include <vector>

#include "daemon/anchors/line_carrier.h"
#include "daemon/recall/recall_source.h"
#include "daemon/recall/repo_signals.h"
#include "daemon/service/recall_lines.h"
#include "daemon/service/service_types.h"

namespace memq {

// An excerpt shows this many lines at most, each cut to this many code points.
inline constexpr size_t kExcerptLines = 3;
inline constexpr size_t kExcerptLineCodePoints = 120;

// Lines `ranges` (normalised) of `content`, at most kExcerptLines of them; ill-formed UTF-8 reads as U+FFFD, so the
// text can go into a reply. Lines past the end of `content` are not there to show.
LinesExcerpt linesExcerpt(const std::string& content, const LineRanges& ranges);

// The stale memories among `memories` (rows of the project scope named `scope` that `source` serves, files loaded):
// those with a file whose blob changed, unless that file's anchored lines are unchanged or only moved in the work
// tree. `carrier` null (no carrier for the scope): blob ids alone decide, as before anchors.
Result<std::vector<StaleMemory>> staleMemories(RecallSource& source, LineCarrier* carrier, RepoSignals& repo,
                                               WorkTreeVersions& workTree, const std::string& scope,
                                               std::vector<Memory> memories);

}  // namespace memq
