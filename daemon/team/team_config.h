// Where a project keeps the conninfo of its team scope (docs/team.md, "Setting one up"): in git, the repository's
// own config (key memq.team, in the common git dir, so every worktree of the clone shares it and it is never
// committed); outside git, the file .memq/team in the project root. Also the checks a conninfo must pass before it
// is stored: no password (the passfile, PGPASSFILE or the PG* environment hold secrets), and a connect timeout
// added for memqd's own connections so that an unreachable server never hangs a request.
// Thread-safety: pure functions of the file system.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "daemon/git/repo_location.h"
#include "protocol/status.h"

namespace memq {

// The file the project's team conninfo lives in: <common git dir>/config, or <root>/.memq/team outside git.
std::string teamConfigPath(const ProjectLocation& location);
// The configured conninfo, nullopt when the project has none.
Result<std::optional<std::string>> readTeamConninfo(const ProjectLocation& location);
// Stores `conninfo` (nullopt: removes the setting).
Status writeTeamConninfo(const ProjectLocation& location, const std::optional<std::string>& conninfo);

// InvalidParams (field `field`) for a conninfo libpq cannot parse, one with a NUL byte, or one that names a
// password (as password=... or sslpassword=..., or in a URI's user:password@).
Status checkTeamConninfo(const std::string& conninfo, const std::string& field = "conninfo");
// Whether a libpq conninfo keyword holds a secret memq never stores or shows: password, and sslpassword (the client
// key's passphrase).
inline bool isTeamSecretKeyword(const char* keyword) {
  return std::string_view(keyword) == "password" || std::string_view(keyword) == "sslpassword";
}
// `conninfo` as key='value' pairs with connect_timeout set (to `seconds`) and TCP keepalives and tcp_user_timeout
// set (a silent server noticed in about 30 s), each unless it names its own.
std::string withTimeouts(const std::string& conninfo, int seconds);

}  // namespace memq
