// The wire names of ScopeKind; see scope_kind.h.
#include "daemon/model/scope_kind.h"

namespace memq {

const char* toString(ScopeKind kind) {
  switch (kind) {
    case ScopeKind::kProject: return "project";
    case ScopeKind::kGlobal: return "global";
    case ScopeKind::kTeam: return "team";
  }
  return "project";
}

std::optional<ScopeKind> parseScopeKind(std::string_view text) {
  if (text == "project") return ScopeKind::kProject;
  if (text == "global") return ScopeKind::kGlobal;
  if (text == "team") return ScopeKind::kTeam;
  return std::nullopt;
}

}  // namespace memq
