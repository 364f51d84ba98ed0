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
// `renamed`: the queried files that came from other paths (PreparedQuery::renamed: renamed, or copied from a file
// that is still there); a ref on one of those paths is carried into each queried file that came from it, and into
// its own file as well when there is one: a copy's original keeps its anchors, and a path the query names is read
// as itself.
class WorkTreeVersions {
 public:
  // `workTree`: the project root; `repoPrefix`: the root's path below the repository's top ("" at the top), for
  // looking the files up in HEAD's tree.
  WorkTreeVersions(std::string workTree, std::string repoPrefix, const std::vector<RenamedPath>& renamed = {});
  // `path` as it is now, or null when it is not a readable file (gone, a directory, too large).
  const FileVersion* at(const std::string& path);
  // The files a ref on `path` is carried into: `path` itself first (at() tells whether it is still a file), then the
  // queried files that came from it.
  std::vector<std::string> carriedInto(const std::string& path) const;
  // `paths` and every earlier path of those that were renamed.
  std::vector<std::string> withEarlierPaths(const std::vector<std::string>& paths) const;
  // `path` (root-relative) as the repository names it: relative to its top.
  std::string repoPath(const std::string& path) const;

 private:
  std::string workTree_;
  std::string repoPrefix_;
  std::unordered_map<std::string, std::vector<std::string>> renamedTo_;    // earlier path → queried paths
  std::unordered_map<std::string, std::vector<std::string>> renamedFrom_;  // queried path → earlier paths
  std::unordered_map<std::string, std::optional<FileVersion>> versions_;
};

// Fills lineOverlap, linesOwned, linesOriginated, linesPrior and lineDistance of the `candidates` that `source` (one
// project scope) found. Anchors on a queried file's earlier paths (workTree's renames and copies) count as anchors on
// the queried file, and on their own file too while it is there.
// `queryLines`: paths relative to `workTree`, each with the lines of the file as it is there (a path without lines
// is skipped). Only active rows' anchors are read, so a hidden, superseded or rejected memory is never lifted by
// them. An anchor that cannot be carried (its file gone or binary now, its version unknown to the repository and
// not kept) gives no signal: nothing here fails a recall, only a storage error reading the anchors does.
Status addLineSignals(RecallSource& source, LineCarrier& carrier, WorkTreeVersions& workTree,
                      const std::vector<PathLines>& queryLines, std::vector<Candidate>& candidates);

// For each hit of `scope` (the project scope `source` serves, its rows loaded) with anchored refs: carries them to
// the work-tree file and records what became of the lines (RecallHit::anchoredLines), which staleness then reads.
// A ref on a path that a queried file had before a rename is carried into that file (AnchoredLinesNow::renamedFrom);
// a ref on a file the query's file was copied from is carried into both, an entry each.
// A ref that cannot be carried (file gone, binary, version unknown) is left out: staleness by blob id decides.
Status annotateAnchoredLines(RecallSource& source, LineCarrier& carrier, WorkTreeVersions& workTree,
                             const std::string& scope, std::vector<RecallHit>& hits);

}  // namespace memq
