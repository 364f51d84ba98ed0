// TeamClient: connecting, saves, state changes, the journal and notifications; see team_client.h. The migrations
// are in team_migrations.cc, libpq execution and error translation in pg_exec.cc.
#include "daemon/team/team_client.h"

#include <libpq-fe.h>
#include <poll.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <unordered_set>

#include "daemon/anchors/line_ranges.h"
#include "daemon/team/team_config.h"
#include "daemon/model/file_path.h"
#include "daemon/model/memory.h"
#include "daemon/team/pg_exec.h"
#include "daemon/util/utf8.h"

namespace memq {

namespace {

// What conninfoWithoutPassword shows for a conninfo libpq cannot parse (never any of it: it may hold a password).
constexpr const char* kUnparsable = "(a conninfo libpq cannot parse)";

// The oldest server the schema runs on (gen_random_uuid is built in from 13).
constexpr int kMinServerVersion = 130000;

// The columns of a memory as TeamMemory reads them (readMemory), with times in ISO-8601 UTC.
constexpr const char* kMemoryColumns =
    "m.id, m.summary, m.details, m.category, m.topics::text, m.files::text, m.content_hash, m.state, "
    "m.superseded_by, m.state_reason, "
    "to_char(m.created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"Z\"'), "
    "to_char(m.updated_at AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"Z\"'), m.created_by";

TeamMemory readMemory(const PGresult* r, int row, int col) {
  TeamMemory m;
  m.id = pgText(r, row, col);
  m.summary = pgText(r, row, col + 1);
  m.details = pgText(r, row, col + 2);
  m.category = pgCell(r, row, col + 3);
  m.topics = nlohmann::json::parse(pgText(r, row, col + 4), nullptr, false);
  m.files = nlohmann::json::parse(pgText(r, row, col + 5), nullptr, false);
  m.contentHash = pgText(r, row, col + 6);
  m.state = pgText(r, row, col + 7);
  m.supersededBy = pgCell(r, row, col + 8);
  m.stateReason = pgCell(r, row, col + 9);
  m.createdAt = pgText(r, row, col + 10);
  m.updatedAt = pgText(r, row, col + 11);
  m.createdBy = pgText(r, row, col + 12);
  return m;
}

std::optional<int64_t> parseSeq(std::string_view text) {
  int64_t v = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return v;
}

// A text parameter must reach the server whole: libpq passes C strings (a NUL would cut it short, and an id cut
// short could name another memory), and the server refuses what is not UTF-8.
Status checkTextParam(std::string_view text, const std::string& field) {
  if (!isValidUtf8(text)) return Status::invalidField(field, field + " is not valid UTF-8");
  if (text.find('\0') != std::string_view::npos) return Status::invalidField(field, field + " contains a NUL byte");
  return Status::ok();
}

bool isBlobId(const std::string& blob) {
  if (blob.size() != 40) return false;
  for (char c : blob) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

// One file entry as memq_team.memories.files holds it, normalised and validated (errors name files[i]...).
Result<nlohmann::json> fileJson(const FileEntry& entry, size_t i, std::string_view projectRoot) {
  const std::string field = "files[" + std::to_string(i) + "]";
  auto path = normalizeFilePath(entry.path, projectRoot, field);
  if (!path) return path.status();
  if (!entry.lines) {
    if (entry.blob) return Status::invalidField(field + ".blob", "a blob names the version of lines; give lines too");
    return nlohmann::json(*path);
  }
  MEMQ_RETURN_IF_ERROR(validateRanges(*entry.lines, field + ".lines"));
  nlohmann::json out = {{"path", *path}, {"lines", lineRangesToJson(normalizeRanges(*entry.lines))}};
  if (entry.blob) {
    if (!isBlobId(*entry.blob)) {
      return Status::invalidField(field + ".blob", field + ".blob must be 40 lowercase hex digits");
    }
    out["blob"] = *entry.blob;
  }
  return out;
}

// The files of a save, de-duplicated by path (the first entry of a path wins, as normalizeFiles keeps it).
Result<nlohmann::json> filesJson(const std::vector<FileEntry>& files, std::string_view projectRoot) {
  nlohmann::json out = nlohmann::json::array();
  std::unordered_set<std::string> seen;
  for (size_t i = 0; i < files.size(); ++i) {
    auto f = fileJson(files[i], i, projectRoot);
    if (!f) return f.status();
    const std::string path = f->is_string() ? f->get<std::string>() : (*f)["path"].get<std::string>();
    if (seen.insert(path).second) out.push_back(std::move(*f));
  }
  return out;
}

// libpq prints notices (CREATE ... IF NOT EXISTS skipping) to stderr by default; memq logs them at debug.
void logNotice(void*, const char* message) { spdlog::debug("team server: {}", message); }

// The value libpq holds for a connection's conninfo keyword ("" when unset).
std::string connectionOption(PGconn* conn, std::string_view keyword) {
  std::string value;
  if (PQconninfoOption* options = PQconninfo(conn)) {
    for (PQconninfoOption* o = options; o->keyword; ++o) {
      if (std::string_view(o->keyword) == keyword && o->val) value = o->val;
    }
    PQconninfoFree(options);
  }
  return value;
}

// connect_timeout as PQconnectdb applies it: at least 2 s, none (0) when unset, zero or negative.
int connectTimeoutSeconds(PGconn* conn) {
  const int seconds = std::atoi(connectionOption(conn, "connect_timeout").c_str());
  return seconds <= 0 ? 0 : std::max(seconds, 2);
}

// PQconnectdb, except that a login the server refuses says so with its SQLSTATE. libpq keeps no result of a failed
// connection, and writes a server's SQLSTATE into the error message only at PQERRORS_VERBOSE, which must be set
// before the server answers: so this runs PQconnectdb's loop itself (PQconnectStart, which has sent at most the
// startup packet and read nothing, then PQconnectPoll). connect_timeout, which libpq leaves to a caller of
// PQconnectPoll, bounds the attempt; when it runs out, PQconnectdb tries again (it gives each address its own
// timeout and moves on from a silent one, which a caller of PQconnectPoll cannot make it do; its refusals then carry
// no SQLSTATE). `waitFailure` says why when the waiting itself ended the attempt.
PGconn* connectWithSqlstates(const std::string& conninfo, std::string& waitFailure) {
  PGconn* conn = PQconnectStart(conninfo.c_str());
  if (!conn) return nullptr;
  PQsetErrorVerbosity(conn, PQERRORS_VERBOSE);
  if (PQstatus(conn) == CONNECTION_BAD) return conn;
  const int timeoutSeconds = connectTimeoutSeconds(conn);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeoutSeconds);
  PostgresPollingStatusType polled = PGRES_POLLING_WRITING;  // libpq's own loop waits for writing first
  while (polled == PGRES_POLLING_READING || polled == PGRES_POLLING_WRITING) {
    int waitMs = -1;
    if (timeoutSeconds > 0) {
      const auto left =
          std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now()).count();
      if (left <= 0) {
        // PQconnectdb gives each address its own connect_timeout and moves on from a silent one (a host name whose
        // IPv6 address drops packets, several hosts): that attempt is made in full, without the SQLSTATEs.
        PQfinish(conn);
        return PQconnectdb(conninfo.c_str());
      }
      waitMs = static_cast<int>(std::min<long long>(left, INT_MAX));
    }
    pollfd p{PQsocket(conn), static_cast<short>(polled == PGRES_POLLING_READING ? POLLIN : POLLOUT), 0};
    if (p.fd < 0) {
      waitFailure = "the connection has no socket";
      return conn;
    }
    const int rc = ::poll(&p, 1, waitMs);
    if (rc < 0 && errno != EINTR) {
      waitFailure = std::string("poll: ") + std::strerror(errno);
      return conn;
    }
    if (rc <= 0) continue;  // interrupted, or the deadline (checked above) came
    polled = PQconnectPoll(conn);
  }
  return conn;
}

// The last error from the server in a failed connection's message, read at PQERRORS_VERBOSE: libpq writes it as
// "<severity>:  <SQLSTATE>: <message>" (the severity in the server's language, the SQLSTATE never translated);
// libpq's own errors (no such socket, connection refused, timeout) carry no SQLSTATE.
struct ServerError {
  std::string sqlstate;
  std::string message;  // its first line, without the SQLSTATE
};
std::optional<ServerError> lastServerError(std::string_view text) {
  const auto isSqlstateChar = [](char c) { return (c >= '0' && c <= '9') || (c >= 'A' && c <= 'Z'); };
  std::optional<ServerError> found;
  for (size_t at = text.find(":  "); at != std::string_view::npos; at = text.find(":  ", at + 1)) {
    const size_t code = at + 3;
    if (code + 7 > text.size() || text.substr(code + 5, 2) != ": ") continue;
    const std::string_view sqlstate = text.substr(code, 5);
    if (!std::all_of(sqlstate.begin(), sqlstate.end(), isSqlstateChar)) continue;
    const size_t begin = code + 7;
    const size_t end = text.find('\n', begin);
    found = ServerError{std::string(sqlstate),
                        std::string(text.substr(begin, end == std::string_view::npos ? end : end - begin))};
  }
  return found;
}

// The SQLSTATEs with which a server refuses a login for good, whatever the moment: class 28 (invalid authorization:
// a wrong password, no pg_hba.conf entry, a role that does not exist or may not log in) and 42501 (no CONNECT on
// the database). Not one that says it cannot take a connection now (57P03 starting up or shutting down, 53300 too
// many clients): that server is as good as unreachable, and a save waits in the outbox for it.
bool refusesTheLogin(std::string_view sqlstate) { return sqlstate.starts_with("28") || sqlstate == "42501"; }

// Whether each address libpq tried (its message has a "connection to server … failed:" section per attempt) refused
// the login: a primary that cannot be reached followed by a standby that refuses is an outage, and its save is
// queued, not refused.
bool everyAttemptRefusedTheLogin(std::string_view text) {
  constexpr std::string_view kAttempt = "connection to server";
  std::vector<std::string_view> attempts;
  size_t at = text.find(kAttempt);
  if (at == std::string_view::npos) {
    attempts.push_back(text);
  } else {
    while (at != std::string_view::npos) {
      const size_t next = text.find(kAttempt, at + kAttempt.size());
      attempts.push_back(text.substr(at, next == std::string_view::npos ? std::string_view::npos : next - at));
      at = next;
    }
  }
  return std::all_of(attempts.begin(), attempts.end(), [](std::string_view attempt) {
    auto server = lastServerError(attempt);
    return server && refusesTheLogin(server->sqlstate);
  });
}

// The Status of a connection that did not come up: Forbidden for a login the server refused (a save is not
// queued for a server that answered no: docs/team.md), ScopeUnavailable for one that could not be reached.
Status connectFailure(PGconn* conn, const std::string& display, const std::string& waitFailure) {
  const nlohmann::json refused = {{"scope", "team"}, {"reason", "login_refused"}};
  if (PQconnectionNeedsPassword(conn)) {
    // libpq's own failure, after the server asked for a password: none was given.
    return Status(ErrorCode::kForbidden,
                  "the team server (" + display + ") refused the login: it asks for a password and none was found "
                  "(put it in a passfile: ~/.pgpass, passfile=PATH or PGPASSFILE)",
                  refused);
  }
  std::string message = PQerrorMessage(conn);
  while (!message.empty() && (message.back() == '\n' || message.back() == ' ')) message.pop_back();
  if (auto server = lastServerError(message)) {
    const std::string said = server->message + " [SQLSTATE " + server->sqlstate + "]";
    if (everyAttemptRefusedTheLogin(message)) {
      return Status(ErrorCode::kForbidden, "the team server (" + display + ") refused the login: " + said, refused);
    }
    message = said;  // without the LOCATION lines PQERRORS_VERBOSE adds
  }
  if (!waitFailure.empty()) message = message.empty() ? waitFailure : waitFailure + "; " + message;
  return Status(ErrorCode::kScopeUnavailable, "cannot connect to the team server (" + display + "): " + message,
                nlohmann::json{{"scope", "team"}, {"reason", "connect_failed"}});
}

}  // namespace

Status checkTeamSaveFiles(const std::vector<FileEntry>& files, std::string_view projectRoot) {
  return filesJson(files, projectRoot).status();
}

std::string conninfoWithoutPassword(const std::string& conninfo) {
  char* error = nullptr;
  PQconninfoOption* options = PQconninfoParse(conninfo.c_str(), &error);
  if (!options) {
    if (error) PQfreemem(error);
    return kUnparsable;
  }
  std::string out;
  for (PQconninfoOption* o = options; o->keyword; ++o) {
    if (!o->val || isTeamSecretKeyword(o->keyword)) continue;
    std::string value;
    for (const char* c = o->val; *c; ++c) {
      if (*c == '\'' || *c == '\\') value.push_back('\\');
      value.push_back(*c);
    }
    if (!out.empty()) out.push_back(' ');
    out += std::string(o->keyword) + "='" + value + "'";
  }
  PQconninfoFree(options);
  return out;
}

Result<std::unique_ptr<TeamClient>> TeamClient::connect(const std::string& conninfo) {
  const std::string display = conninfoWithoutPassword(conninfo);
  if (display == kUnparsable) {
    // Not handed to PQconnectdb: its message for a malformed URI quotes the part it choked on, password or not.
    return Status(ErrorCode::kScopeUnavailable, "cannot connect to the team server: " + display,
                  nlohmann::json{{"scope", "team"}, {"reason", "connect_failed"}});
  }
  std::string waitFailure;
  PGconn* conn = connectWithSqlstates(conninfo, waitFailure);
  if (!conn) return teamConnectionLost("connect to " + display, "out of memory");
  std::unique_ptr<TeamClient> client(new TeamClient(conn, display));
  if (PQstatus(conn) != CONNECTION_OK) return connectFailure(conn, display, waitFailure);
  // Statements' errors are read by field (pgStatus); their messages need no SQLSTATE or LOCATION lines.
  PQsetErrorVerbosity(conn, PQERRORS_DEFAULT);
  PQsetNoticeProcessor(conn, logNotice, nullptr);
  if (PQserverVersion(conn) < kMinServerVersion) {
    // The server answered, and will not do until it is upgraded: not queued for (docs/team.md).
    return Status(ErrorCode::kStorageError, "the team server (" + display + ") runs PostgreSQL " +
                                                std::to_string(PQserverVersion(conn)) + "; memq needs 13 or later",
                  nlohmann::json{{"scope", "team"}, {"reason", "server_too_old"}});
  }
  // No statement waits on the server for ever: a teammate's open transaction holding the journal's lock, or a server
  // too loaded to answer, fails the one call after 30 s (StorageError) instead of holding memqd's worker and the
  // team scope's requests behind it. A migration lifts the bound for its own transaction.
  if (auto bounded = pgExec(conn, "SET statement_timeout = '30s'", {}, "connect"); !bounded) return bounded.status();
  auto role = client->role();
  if (!role) return role.status();
  spdlog::info("team server: connected to {} as role {}", display, *role);
  return client;
}

TeamClient::~TeamClient() { PQfinish(conn_); }

bool TeamClient::stillConnected() {
  // A server that went away closed the socket, perhaps after a last error message: the hang-up shows in poll even
  // while that message is unread, which PQconsumeInput alone would read and call a live connection.
  pollfd p{PQsocket(conn_), static_cast<short>(POLLIN | POLLRDHUP), 0};
  if (p.fd < 0) return false;
  if (::poll(&p, 1, 0) > 0 && (p.revents & (POLLHUP | POLLRDHUP | POLLERR | POLLNVAL)) != 0) return false;
  return PQconsumeInput(conn_) == 1 && PQstatus(conn_) == CONNECTION_OK;
}

Result<std::string> TeamClient::role() {
  auto r = pgExec(conn_, "SELECT session_user", {}, "role");
  if (!r) return r.status();
  return pgText(r->get(), 0, 0);
}

Result<TeamSaveResult> TeamClient::save(const SaveInput& input, std::string_view projectRoot) {
  auto normalized = normalizeSave(input, projectRoot);
  if (!normalized) return normalized.status();
  auto files = filesJson(input.files, projectRoot);
  if (!files) return files.status();
  auto r = pgExec(conn_,
                  "SELECT status, id, superseded_by, reason, seq FROM memq_team.memq_save("
                  "$1::text, $2::text, $3::text, $4::jsonb, $5::jsonb, $6::text)",
                  {normalized->summary, normalized->details, normalized->category,
                   nlohmann::json(normalized->topics).dump(), files->dump(), normalized->contentHash},
                  "save");
  if (!r) return r.status();
  const PGresult* row = r->get();
  auto status = parseSaveStatus(pgText(row, 0, 0));
  if (!status) return Status::internal("team server answered save with status '" + pgText(row, 0, 0) + "'");
  TeamSaveResult out;
  out.status = *status;
  out.id = pgText(row, 0, 1);
  out.supersededBy = pgCell(row, 0, 2);
  out.reason = pgCell(row, 0, 3);
  if (auto seq = pgCell(row, 0, 4)) out.seq = parseSeq(*seq);
  out.warnings = std::move(normalized->warnings);
  return out;
}

Result<std::optional<int64_t>> TeamClient::setState(std::string_view id, std::string_view action,
                                                    const std::optional<std::string>& reason,
                                                    const std::optional<std::string>& supersededBy) {
  MEMQ_RETURN_IF_ERROR(checkTextParam(id, "id"));
  MEMQ_RETURN_IF_ERROR(checkTextParam(action, "action"));
  if (reason) MEMQ_RETURN_IF_ERROR(checkTextParam(*reason, "reason"));
  if (supersededBy) MEMQ_RETURN_IF_ERROR(checkTextParam(*supersededBy, "by"));
  auto r = pgExec(conn_, "SELECT memq_team.memq_set_state($1::text, $2::text, $3::text, $4::text)",
                  {std::string(id), std::string(action), reason, supersededBy}, std::string(action));
  if (!r) return r.status();
  auto seq = pgCell(r->get(), 0, 0);
  return seq ? parseSeq(*seq) : std::optional<int64_t>();
}

Result<int64_t> TeamClient::purge(std::string_view id) {
  MEMQ_RETURN_IF_ERROR(checkTextParam(id, "id"));
  auto r = pgExec(conn_, "SELECT memq_team.memq_purge($1::text)", {std::string(id)}, "purge");
  if (!r) return r.status();
  auto seq = pgCell(r->get(), 0, 0);
  auto parsed = seq ? parseSeq(*seq) : std::optional<int64_t>();
  if (!parsed) return Status::internal("purge: the server returned no journal seq");
  return *parsed;
}

Result<std::optional<TeamMemory>> TeamClient::get(std::string_view id) {
  MEMQ_RETURN_IF_ERROR(checkTextParam(id, "id"));
  auto r = pgExec(conn_, std::string("SELECT ") + kMemoryColumns + " FROM memq_team.memories m WHERE m.id = $1",
                  {std::string(id)}, "get");
  if (!r) return r.status();
  if (PQntuples(r->get()) == 0) return std::optional<TeamMemory>();
  return std::optional<TeamMemory>(readMemory(r->get(), 0, 0));
}

Result<std::vector<TeamEvent>> TeamClient::eventsSince(int64_t afterSeq, int limit) {
  if (limit < 1) return Status::invalidField("limit", "limit must be at least 1");
  // A journal row brings its memory as it is now; a purged memory is gone, and with it the rows that made it
  // rejected, so a purge row brings the tombstone the server kept (its content hash is in the row's detail). A
  // replica that caught up only after the purge still holds the tombstone, and the rejected text stays refused
  // wherever its tombstones go (export, import). The tombstone's memory_id is the purged memory's: no other memory
  // can hold that content hash while the tombstone stands.
  auto r = pgExec(conn_,
                  std::string("SELECT a.seq, to_char(a.at AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"Z\"'), "
                              "a.actor, a.action, a.memory_id, a.detail::text, ") +
                      kMemoryColumns +
                      ", t.content_hash, t.memory_id, t.reason, t.rejected_by, "
                      "to_char(t.rejected_at AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"Z\"')"
                      " FROM memq_team.audit a LEFT JOIN memq_team.memories m ON m.id = a.memory_id"
                      " LEFT JOIN memq_team.tombstones t ON a.action = 'purge'"
                      " AND t.content_hash = a.detail->>'content_hash' AND t.memory_id = a.memory_id"
                      " WHERE a.seq > $1::bigint ORDER BY a.seq LIMIT $2::integer",
                  {std::to_string(afterSeq), std::to_string(limit)}, "events");
  if (!r) return r.status();
  const PGresult* res = r->get();
  constexpr int kTombstoneColumn = 6 + 13;  // after the row's 6 columns and the memory's 13 (kMemoryColumns)
  std::vector<TeamEvent> out;
  for (int i = 0; i < PQntuples(res); ++i) {
    TeamEvent e;
    e.seq = parseSeq(pgText(res, i, 0)).value_or(0);
    e.at = pgText(res, i, 1);
    e.actor = pgText(res, i, 2);
    e.action = pgText(res, i, 3);
    e.memoryId = pgText(res, i, 4);
    e.detail = nlohmann::json::parse(pgText(res, i, 5), nullptr, false);
    if (!PQgetisnull(res, i, 6)) e.memory = readMemory(res, i, 6);
    if (!PQgetisnull(res, i, kTombstoneColumn)) {
      e.tombstone = TeamTombstone{pgText(res, i, kTombstoneColumn), pgText(res, i, kTombstoneColumn + 1),
                                  pgText(res, i, kTombstoneColumn + 2), pgText(res, i, kTombstoneColumn + 3),
                                  pgText(res, i, kTombstoneColumn + 4)};
    }
    out.push_back(std::move(e));
  }
  return out;
}

Result<std::string> TeamClient::journalRowAt(int64_t seq) {
  auto r = pgExec(conn_,
                  "SELECT to_char(a.at AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"Z\"') FROM memq_team.audit a "
                  "WHERE a.seq = $1::bigint",
                  {std::to_string(seq)}, "journal row");
  if (!r) return r.status();
  if (PQntuples(r->get()) == 0) return std::string();
  return pgText(r->get(), 0, 0);
}

Status TeamClient::listen() {
  auto r = pgExec(conn_, "LISTEN memq_team", {}, "listen");
  return r ? Status::ok() : r.status();
}

Result<std::optional<int64_t>> TeamClient::waitForNotification(std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (true) {
    if (PQconsumeInput(conn_) == 0) return pgStatus(conn_, nullptr, "wait for notifications");
    if (PGnotify* n = PQnotifies(conn_)) {
      const auto seq = parseSeq(n->extra ? n->extra : "");
      PQfreemem(n);
      if (seq) return std::optional<int64_t>(seq);
      continue;  // a notification on the channel that is not a seq: not memq_team's functions', skipped
    }
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline -
                                                                            std::chrono::steady_clock::now());
    if (left.count() <= 0) return std::optional<int64_t>();
    pollfd fd{PQsocket(conn_), POLLIN, 0};
    if (fd.fd < 0) return pgStatus(conn_, nullptr, "wait for notifications");
    const int rc = ::poll(&fd, 1, static_cast<int>(left.count()));
    if (rc < 0 && errno != EINTR) {
      return teamConnectionLost("wait for notifications", std::string("poll: ") + std::strerror(errno));
    }
  }
}

}  // namespace memq
