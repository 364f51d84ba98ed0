// The line signals of a recall (docs/anchors.md, "In recall"): for a query that names lines of its files, each
// candidate's anchored refs on those files are carried from the version they were written in to the file as it is
// in the work tree now, and compared with the query's lines — overlap, nearness and ownership (line_signals.h) —
// into the candidate's Signals, which the default ranker weighs.
// Thread-safety: reads the work tree; the carrier is thread-safe; the source is used under its scope's lock; a
// WorkTreeVersions belongs to one recall.
#pragma once

#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "daemon/anchors/line_carrier.h"
#include "daemon/model/line_range.h"
#include "daemon/recall/recall_engine.h"
#include "daemon/recall/recall_source.h"
#include "protocol/status.h"

namespace memq {

// The queried and anchored files of one recall as they are in the work tree, each read (and hashed) once for both
// passes below.
class WorkTreeVersions {
 public:
  explicit WorkTreeVersions(std::string workTree) : workTree_(std::move(workTree)) {}
  // `path` as it is now, or null when it is not a readable file (gone, a directory, too large).
  const FileVersion* at(const std::string& path);

 private:
  std::string workTree_;
  std::unordered_map<std::string, std::optional<FileVersion>> versions_;
};

// Fills lineOverlap, linesOwned and lineDistance of the `candidates` that `source` (one project scope) found.
// `queryLines`: paths relative to `workTree`, each with the lines of the file as it is there (a path without lines
// is skipped). Only active rows' anchors are read, so a hidden, superseded or rejected memory is never lifted by
// them. An anchor that cannot be carried (its file gone or binary now, its version unknown to the repository and
// not kept) gives no signal: nothing here fails a recall, only a storage error reading the anchors does.
Status addLineSignals(RecallSource& source, LineCarrier& carrier, WorkTreeVersions& workTree,
                      const std::vector<PathLines>& queryLines, std::vector<Candidate>& candidates);

// For each hit of `scope` (the project scope `source` serves, its rows loaded) with anchored refs: carries them to
// the work-tree file and records what became of the lines (RecallHit::anchoredLines), which staleness then reads.
// A ref that cannot be carried (file gone, binary, version unknown) is left out: staleness by blob id decides.
Status annotateAnchoredLines(RecallSource& source, LineCarrier& carrier, WorkTreeVersions& workTree,
                             const std::string& scope, std::vector<RecallHit>& hits);

}  // namespace memq
