// libpq execution and error translation for the team client; see pg_exec.h.
#include "daemon/team/pg_exec.h"

#include <cstring>

namespace memq {

namespace {

// SQLSTATEs memq_team's functions raise (schema/team/0001_team_core.sql).
constexpr std::string_view kNoSuchMemory = "MQ001";
constexpr std::string_view kModelForbids = "MQ002";
constexpr std::string_view kBadParameter = "MQ003";
constexpr std::string_view kAppendOnly = "MQ004";
constexpr std::string_view kInsufficientPrivilege = "42501";

std::string field(const PGresult* r, int code) {
  const char* v = r ? PQresultErrorField(r, code) : nullptr;
  return v ? v : "";
}

// The connection is gone: libpq says so, or the error is libpq's own (no SQLSTATE: "server closed the connection
// unexpectedly" comes before libpq marks the connection bad), class 08 (connection exception), or the server
// shutting down or crashing under the session (57P01..57P03).
bool connectionGone(PGconn* conn, std::string_view sqlstate) {
  if (PQstatus(conn) == CONNECTION_BAD || PQsocket(conn) < 0 || sqlstate.empty()) return true;
  return sqlstate.starts_with("08") || sqlstate == "57P01" || sqlstate == "57P02" || sqlstate == "57P03";
}

nlohmann::json fieldData(const std::string& column) {
  return column.empty() ? nlohmann::json(nullptr) : nlohmann::json{{"field", column}};
}

// libpq's messages end with a newline.
std::string trimmed(std::string text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
  return text;
}

}  // namespace

Status teamConnectionLost(const std::string& what, const std::string& detail) {
  return Status(ErrorCode::kScopeUnavailable, "team server connection lost (" + what + "): " + detail,
                nlohmann::json{{"scope", "team"}, {"reason", "connection_lost"}});
}

Status pgStatus(PGconn* conn, const PGresult* result, const std::string& what) {
  const std::string sqlstate = field(result, PG_DIAG_SQLSTATE);
  std::string message = field(result, PG_DIAG_MESSAGE_PRIMARY);
  if (message.empty()) message = trimmed(result ? PQresultErrorMessage(result) : PQerrorMessage(conn));
  if (message.empty()) message = trimmed(PQerrorMessage(conn));
  if (connectionGone(conn, sqlstate)) return teamConnectionLost(what, message);
  const std::string column = field(result, PG_DIAG_COLUMN_NAME);
  if (sqlstate == kInsufficientPrivilege || sqlstate == kAppendOnly) {
    return Status(ErrorCode::kForbidden, "team server refused " + what + ": " + message, fieldData(column));
  }
  if (sqlstate == kNoSuchMemory) return Status(ErrorCode::kNotFound, message, fieldData(column));
  if (sqlstate == kModelForbids) return Status(ErrorCode::kConflict, message, fieldData(column));
  if (sqlstate == kBadParameter) return Status(ErrorCode::kInvalidParams, message, fieldData(column));
  return Status(ErrorCode::kStorageError, "team server (" + what + "): " + message +
                                              (sqlstate.empty() ? "" : " [SQLSTATE " + sqlstate + "]"));
}

Result<PgResult> pgExec(PGconn* conn, std::string_view sql, const std::vector<PgParam>& params,
                        const std::string& what) {
  std::vector<const char*> values;
  values.reserve(params.size());
  for (const auto& p : params) values.push_back(p ? p->c_str() : nullptr);
  const std::string statement(sql);
  PgResult r(PQexecParams(conn, statement.c_str(), static_cast<int>(values.size()), nullptr, values.data(), nullptr,
                          nullptr, 0));
  const ExecStatusType st = r ? PQresultStatus(r.get()) : PGRES_FATAL_ERROR;
  if (st == PGRES_TUPLES_OK || st == PGRES_COMMAND_OK) return r;
  return pgStatus(conn, r.get(), what);
}

Status pgExecScript(PGconn* conn, std::string_view sql, const std::string& what) {
  const std::string script(sql);
  PgResult r(PQexec(conn, script.c_str()));
  const ExecStatusType st = r ? PQresultStatus(r.get()) : PGRES_FATAL_ERROR;
  if (st == PGRES_TUPLES_OK || st == PGRES_COMMAND_OK) return Status::ok();
  return pgStatus(conn, r.get(), what);
}

std::optional<std::string> pgCell(const PGresult* r, int row, int col) {
  if (PQgetisnull(r, row, col)) return std::nullopt;
  return std::string(PQgetvalue(r, row, col), static_cast<size_t>(PQgetlength(r, row, col)));
}

std::string pgText(const PGresult* r, int row, int col) { return pgCell(r, row, col).value_or(""); }

}  // namespace memq
