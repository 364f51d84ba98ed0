// gatherHintCandidates: what hints/for_tool considers showing — the readable scopes' active memories attached to the
// tool's files (with the line signals of the lines the tool is on), the `git` topic for diffs and commits, and strong
// text matches of the tool's query — before the hint engine's policy (daemon/hints/hint_engine.h) picks what is shown.
// Thread-safety: takes each scope's lock in turn; call it on a worker thread.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "daemon/hints/hint_engine.h"
#include "daemon/model/line_range.h"
#include "daemon/service/scope_registry.h"

namespace memq {

// Candidates from `scopes` in order, each memory once (the first way it was found wins). `files` are normalised;
// `lines` (normalised too, a subset of `files` with the lines the tool is on) give the project scope's memories
// attached to those files recall's line signals (recall_lines.h, addLineSignals: anchors of active rows only, carried
// to the work tree by the scope's carrier), which the hint policy orders by within a category.
Result<std::vector<HintCandidate>> gatherHintCandidates(const std::vector<std::shared_ptr<Scope>>& scopes,
                                                        const std::vector<std::string>& files,
                                                        const std::vector<PathLines>& lines, HintContext context,
                                                        const std::string& query);

}  // namespace memq
