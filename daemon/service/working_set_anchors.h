// How the service uses a tab's working set (working_set.h, docs/agents.md "The working set"): hints/for_tool
// records the lines its tool read or edited; a recall or hint that names a file without lines gets the tab's lines
// for it; a save without anchors is anchored to the lines the tab edited last, when they still fit the file.
// Thread-safety: the working set locks itself; the anchoring reads the work tree and the repository
// (file_anchors.h), before the scope's lock is taken.
#pragma once

#include <string>
#include <vector>

#include "daemon/hints/hint_engine.h"
#include "daemon/model/line_range.h"
#include "daemon/model/memory.h"
#include "daemon/service/file_anchors.h"
#include "daemon/service/working_set.h"

namespace memq {

// Records `lines` (a hints/for_tool request's, paths relative to `root`) as read for a read tool and as edited for
// an edit or write; other tools (diff, commit, shell) record nothing.
void noteToolLines(WorkingSet& workingSet, const std::string& root, HintContext context,
                   const std::vector<PathLines>& lines);

// Adds to `lines` the tab's lines (WorkingSet::linesFor) of each of `files` that `lines` has none for.
void fillFromWorkingSet(const WorkingSet& workingSet, const std::string& root, const std::vector<std::string>& files,
                        std::vector<PathLines>& lines);

// What anchorToWorkingSet did: the refs it anchored (to show the user) and why it left others plain.
struct WorkingSetAnchors {
  std::vector<PathLines> anchored;
  std::vector<std::string> warnings;
};

// A save's anchors from the working set, after the lines the save named were anchored (anchorFileRefs): each ref of
// `refs` without an anchor gets the lines the tab edited in that file; a save that names no files (`files` and
// `refs` empty) gets the file edited last with its edited lines, added to both. The lines are validated against the
// file as it is now (anchorFileRefs): lines that no longer fit leave the ref plain (or, for a save that named no
// files, add nothing) with a warning, rather than refusing the save. Nothing happens outside a project.
WorkingSetAnchors anchorToWorkingSet(const WorkingSet& workingSet, const AnchorSource& source,
                                     std::vector<std::string>& files, std::vector<FileRef>& refs);

}  // namespace memq
