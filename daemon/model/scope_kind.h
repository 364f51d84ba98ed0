// ScopeKind: which of the two kinds of scope a memory lives in (docs/design.md §4): the project's database (one per
// repository) or the global one. The wire spells them "project" and "global".
// Thread-safety: pure functions.
#pragma once

#include <optional>
#include <string_view>

namespace memq {

enum class ScopeKind { kProject, kGlobal };

// "project" | "global".
const char* toString(ScopeKind kind);
// nullopt for anything but "project" or "global".
std::optional<ScopeKind> parseScopeKind(std::string_view text);

}  // namespace memq
