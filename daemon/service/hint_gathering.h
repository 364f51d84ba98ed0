// gatherHintCandidates: what hints/for_tool considers showing — the readable scopes' active memories attached to the
// tool's files, the `git` topic for diffs and commits, and strong text matches of the tool's query — before the hint
// engine's policy (daemon/hints/hint_engine.h) picks what is shown.
// Thread-safety: takes each scope's lock in turn; call it on a worker thread.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "daemon/hints/hint_engine.h"
#include "daemon/service/scope_registry.h"

namespace memq {

// Candidates from `scopes` in order, each memory once (the first way it was found wins). `files` are normalised.
Result<std::vector<HintCandidate>> gatherHintCandidates(const std::vector<std::shared_ptr<Scope>>& scopes,
                                                        const std::vector<std::string>& files, HintContext context,
                                                        const std::string& query);

}  // namespace memq
