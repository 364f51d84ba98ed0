// The libpq layer under TeamClient: an owning PGresult, parameterised execution, and the one translation of libpq
// and server errors into a memq Status (the table in team_client.h). Nothing here builds SQL from values: every
// value travels as a parameter.
// Thread-safety: as the PGconn given; one thread at a time.
#pragma once

#include <libpq-fe.h>

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "protocol/status.h"

namespace memq {

struct PgResultDeleter {
  void operator()(PGresult* r) const { PQclear(r); }
};
using PgResult = std::unique_ptr<PGresult, PgResultDeleter>;

// A statement parameter: a text value, or SQL NULL.
using PgParam = std::optional<std::string>;

// Runs `sql` with `params` ($1, $2, ... as text) and returns its result when the server reports success (rows or a
// command), else the Status of pgStatus. `what` names the operation in messages ("save", "migrate").
Result<PgResult> pgExec(PGconn* conn, std::string_view sql, const std::vector<PgParam>& params,
                        const std::string& what);
// Runs a parameterless script (several statements) by the simple protocol: only for SQL compiled into memq.
Status pgExecScript(PGconn* conn, std::string_view sql, const std::string& what);

// The Status of a failed statement (`result` may be null) or of a connection that broke.
Status pgStatus(PGconn* conn, const PGresult* result, const std::string& what);
// ScopeUnavailable for a team server that cannot be reached: data {"scope": "team", "reason": "connection_lost"}.
Status teamConnectionLost(const std::string& what, const std::string& detail);

// A cell as text; nullopt for SQL NULL.
std::optional<std::string> pgCell(const PGresult* r, int row, int col);
// A cell that is never NULL (an empty string if it is).
std::string pgText(const PGresult* r, int row, int col);

}  // namespace memq
