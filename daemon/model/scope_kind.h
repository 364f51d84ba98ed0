// ScopeKind: which kind of scope a memory lives in (docs/design.md §4): the project's database (one per repository),
// the global one, or the team's (a PostgreSQL server shared by everyone on the repository, read through a local
// replica; docs/team.md). The wire spells them "project", "global" and "team".
// Thread-safety: pure functions.
#pragma once

#include <optional>
#include <string_view>

namespace memq {

enum class ScopeKind { kProject, kGlobal, kTeam };

// "project" | "global" | "team".
const char* toString(ScopeKind kind);
// nullopt for anything but "project", "global" or "team".
std::optional<ScopeKind> parseScopeKind(std::string_view text);

}  // namespace memq
