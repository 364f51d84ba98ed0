// TeamClient::migrate and schemaVersion: the migration runner's PostgreSQL side (schema/migration_runner.h) over
// schema/team/'s embedded migrations. The version is recorded in memq_team.schema_version.
#include <libpq-fe.h>

#include <charconv>

#include "daemon/team/pg_exec.h"
#include "daemon/team/team_client.h"
#include "embedded_migrations.h"
#include "migration_runner.h"

namespace memq {

namespace {

// The lock two clients migrating one database at once queue on (transaction-scoped: COMMIT or ROLLBACK frees it).
constexpr const char* kMigrationLock = "SELECT pg_advisory_xact_lock(7236311813291876914)";

Result<int> recordedVersion(PGconn* conn) {
  auto exists = pgExec(conn, "SELECT to_regclass('memq_team.schema_version') IS NOT NULL", {}, "migrate");
  if (!exists) return exists.status();
  if (pgText(exists->get(), 0, 0) != "t") return 0;
  auto r = pgExec(conn, "SELECT COALESCE(MAX(version), 0) FROM memq_team.schema_version", {}, "migrate");
  if (!r) return r.status();
  const std::string text = pgText(r->get(), 0, 0);
  int version = 0;
  std::from_chars(text.data(), text.data() + text.size(), version);
  return version;
}

class PgMigrationBackend final : public MigrationBackend {
 public:
  explicit PgMigrationBackend(PGconn* conn) : conn_(conn) {}

  Result<int> recordedVersion() override { return memq::recordedVersion(conn_); }
  Status begin() override {
    MEMQ_RETURN_IF_ERROR(pgExecScript(conn_, "BEGIN", "migrate"));
    open_ = true;
    // A migration may rewrite a large table: not bounded by the connection's statement_timeout.
    MEMQ_RETURN_IF_ERROR(pgExecScript(conn_, "SET LOCAL statement_timeout = 0", "migrate"));
    MEMQ_RETURN_IF_ERROR(pgExecScript(conn_, kMigrationLock, "migrate"));
    return pgExecScript(conn_,
                        "CREATE SCHEMA IF NOT EXISTS memq_team;"
                        "CREATE TABLE IF NOT EXISTS memq_team.schema_version ("
                        "  version integer PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())",
                        "migrate");
  }
  Status apply(const Migration& m) override {
    MEMQ_RETURN_IF_ERROR(pgExecScript(conn_, m.sql, "migration " + std::string(m.name)));
    auto r = pgExec(conn_, "INSERT INTO memq_team.schema_version (version) VALUES ($1::integer)",
                    {std::to_string(m.version)}, "migrate");
    return r ? Status::ok() : r.status();
  }
  Status commit() override {
    Status st = pgExecScript(conn_, "COMMIT", "migrate");
    if (st) open_ = false;
    return st;
  }
  void rollback() override {
    if (open_) PgResult(PQexec(conn_, "ROLLBACK"));
    open_ = false;
  }

 private:
  PGconn* conn_;
  bool open_ = false;
};

}  // namespace

Status TeamClient::migrate(int maxVersion) {
  PgMigrationBackend backend(conn_);
  return runMigrations(backend, embeddedTeamMigrations(), maxVersion, "team database " + display_);
}

Result<int> TeamClient::schemaVersion() { return recordedVersion(conn_); }

}  // namespace memq
