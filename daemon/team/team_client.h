// TeamClient: one libpq connection to the team scope's PostgreSQL server (schema/team/, docs/team.md): migrating
// it, saving and changing state through its SECURITY DEFINER functions, reading its audit journal, and waiting for
// its `memq_team` notifications. The server enforces the correction model and records who did what; this client
// validates input as a local save does (so bad input gets the same codes and never reaches the server) and turns
// libpq's errors into a memq Status, once, here:
//   permission denied (SQLSTATE 42501)           -> Forbidden
//   a login the server refuses (a wrong or missing password, no pg_hba.conf entry, a role without LOGIN or without
//   CONNECT on the database: SQLSTATE class 28, 42501)
//                                                -> Forbidden, data {"scope": "team", "reason": "login_refused"}
//   a server older than PostgreSQL 13            -> StorageError, data {"scope": "team", "reason": "server_too_old"}
//   the connection is lost or cannot be made     -> ScopeUnavailable, data {"scope": "team", "reason": ...}
//   no such memory / forbidden by the model      -> NotFound / Conflict (data.field names the parameter)
//   a parameter the server refuses               -> InvalidParams (data.field)
//   anything else the server reports             -> StorageError with the server's message
// Every statement is parameterised (PQexecParams); no user data is ever spliced into SQL.
// Thread-safety: not thread-safe; one thread uses a client at a time. A listener needs a client of its own.
#pragma once

#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "daemon/model/memory_input.h"
#include "daemon/model/save_status.h"
#include "protocol/status.h"

struct pg_conn;

namespace memq {

// The row of memq_team.memories.
struct TeamMemory {
  std::string id;
  std::string summary;
  std::string details;
  std::optional<std::string> category;
  nlohmann::json topics = nlohmann::json::array();
  nlohmann::json files = nlohmann::json::array();  // as the protocol writes them: a path, or {path, lines, blob}
  std::string contentHash;
  std::string state;  // active | hidden | superseded | rejected
  std::optional<std::string> supersededBy;
  std::optional<std::string> stateReason;
  std::string createdAt;  // ISO-8601 UTC with milliseconds
  std::string updatedAt;
  std::string createdBy;  // the role that saved it
};

// The row of memq_team.tombstones: a rejected content hash, which outlives its memory's row.
struct TeamTombstone {
  std::string contentHash;
  std::string memoryId;
  std::string reason;
  std::string rejectedBy;  // the role that rejected it
  std::string rejectedAt;  // ISO-8601 UTC with milliseconds
};

// One journal row, with the memory's row as it is now (nullopt if there is none).
struct TeamEvent {
  int64_t seq = 0;
  std::string at;
  std::string actor;  // the authenticated role that made the change
  std::string action;
  std::string memoryId;
  nlohmann::json detail = nlohmann::json::object();
  std::optional<TeamMemory> memory;
  // A purge row's: the tombstone the server kept for the purged memory (it was rejected). The memory is gone, so
  // this is how a replica that never held the row (it caught up after the purge) gets the tombstone.
  std::optional<TeamTombstone> tombstone;
};

// What a save did (docs/design.md §2): kCreated and kDeduped name the active memory; kExistsHidden and
// kExistsSuperseded the memory holding the content (supersededBy its replacement); kRejected the rejected memory,
// with the rejection's reason.
struct TeamSaveResult {
  SaveStatus status = SaveStatus::kCreated;
  std::string id;
  std::optional<std::string> supersededBy;
  std::optional<std::string> reason;
  std::optional<int64_t> seq;  // the journal row the save wrote (create, blocked_save); none for the others
  std::vector<std::string> warnings;  // a field that was truncated, as a local save reports it
};

class TeamClient {
 public:
  // Connects with a libpq conninfo (key=value or a postgresql:// URI; it may name a passfile, or leave everything
  // to the PG* environment). ScopeUnavailable when the server cannot be reached, or answers that it cannot take a
  // connection now (starting up, shutting down, too many clients); Forbidden (reason login_refused) when it refuses
  // the login; StorageError (reason server_too_old) for a server older than PostgreSQL 13. Messages show the
  // conninfo without its password.
  static Result<std::unique_ptr<TeamClient>> connect(const std::string& conninfo);
  ~TeamClient();
  TeamClient(const TeamClient&) = delete;
  TeamClient& operator=(const TeamClient&) = delete;

  // The conninfo without any password: what logs and error messages show.
  const std::string& displayConninfo() const { return display_; }

  // Applies schema/team/'s migrations above the recorded version (up to `maxVersion`, -1: all), in one
  // transaction; a server recorded at a newer version is refused with StorageError. Needs a role that may create
  // the schema memq_team and, the first time, the group roles (CREATEROLE).
  Status migrate(int maxVersion = -1);
  // The version recorded on the server (0 before the first migration).
  Result<int> schemaVersion();
  // The role the server authenticated this connection as (session_user).
  Result<std::string> role();

  // Saves a memory: validated and normalised as a local save is (normalizeSave against `projectRoot`; a file's
  // lines must be valid ranges and its blob 40 lowercase hex), then handed to memq_save.
  Result<TeamSaveResult> save(const SaveInput& input, std::string_view projectRoot);
  // A state change through memq_set_state: `action` is hide, restore, supersede (`supersededBy` names the active
  // replacement), reject (`reason` required) or unreject. Returns the journal row written, nullopt when nothing
  // changed (hiding a hidden memory).
  Result<std::optional<int64_t>> setState(std::string_view id, std::string_view action,
                                          const std::optional<std::string>& reason,
                                          const std::optional<std::string>& supersededBy = std::nullopt);
  // Deletes a memory for good through memq_purge (members of memq_team_maintainer only; its tombstone stays).
  // Returns the journal row written. NotFound, Forbidden, or Conflict while another memory is superseded by it.
  Result<int64_t> purge(std::string_view id);
  // The memory with this full id, nullopt if none.
  Result<std::optional<TeamMemory>> get(std::string_view id);
  // Journal rows with seq > `afterSeq`, ascending, at most `limit`, each with its memory as it is now (and a purge
  // row with the tombstone the server kept). Rows are numbered in commit order, so calling again with the last seq
  // returned yields each row exactly once.
  Result<std::vector<TeamEvent>> eventsSince(int64_t afterSeq, int limit);

  // The time (as TeamEvent::at) of the journal row `seq`; "" when there is none.
  Result<std::string> journalRowAt(int64_t seq);

  // Whether the connection is still up, by what the server has already sent (a server that restarted closed it):
  // reads what is waiting without blocking, so it costs no round trip.
  bool stillConnected();

  // LISTEN memq_team: each committed change then notifies this connection with its journal seq.
  Status listen();
  // Waits up to `timeout` for a notification; its seq, or nullopt when none came in time.
  Result<std::optional<int64_t>> waitForNotification(std::chrono::milliseconds timeout);

 private:
  TeamClient(pg_conn* conn, std::string display) : conn_(conn), display_(std::move(display)) {}

  pg_conn* conn_;
  std::string display_;
};

// `conninfo` with any password removed (and other values kept), for logs and messages.
std::string conninfoWithoutPassword(const std::string& conninfo);

// A team save's file entries as the server will hold them (paths normalised, lines well formed, a blob 40 lowercase
// hex digits): ok, or the error naming files[i]. Checked before a save is sent or queued, so an offline save is
// refused as an online one is.
Status checkTeamSaveFiles(const std::vector<FileEntry>& files, std::string_view projectRoot);

}  // namespace memq
