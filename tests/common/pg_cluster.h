// PgCluster: a throwaway PostgreSQL 15 server for tests — initdb and pg_ctl (Debian's /usr/lib/postgresql/15/bin)
// in a temporary directory, listening only on a Unix socket in that directory (no TCP), fsync off unless asked.
// When the test runs as root the server runs as `nobody` (PostgreSQL refuses to run as root), with the directory
// given to it.
// The destructor stops it (immediate) and removes the directory; kill() stops it mid-test.
// The bootstrap superuser is `memq_admin`. Login roles are trusted over the socket (test-only authentication),
// except those made by createPasswordRole, which must give their password.
// Thread-safety: one thread drives a cluster; connections to it may be used from any thread.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace memq::test {

inline constexpr const char* kPgBinDir = "/usr/lib/postgresql/15/bin";
// The group whose members authenticate with a password (pg_hba.conf's `+group`).
inline constexpr const char* kPasswordGroup = "memq_password_login";

// What a statement run by runSql did: ok, or the server's SQLSTATE and message.
struct SqlOutcome {
  bool ok = false;
  std::string sqlstate;
  std::string message;
  std::vector<std::vector<std::optional<std::string>>> rows;  // the result's rows, as text
};

// Runs one SQL statement (parameterless; the tests' own SQL) on a new connection to `conninfo`.
SqlOutcome runSql(const std::string& conninfo, const std::string& sql);

class PgCluster {
 public:
  PgCluster() = default;
  ~PgCluster();
  PgCluster(const PgCluster&) = delete;
  PgCluster& operator=(const PgCluster&) = delete;

  // initdb and start. An empty string when the server is up, else what went wrong (missing binaries: run
  // `make deps`). `durable`: fsync, synchronous commit and full page writes on, as a real server has them (for
  // benchmarks); off by default, which tests do not need.
  std::string start(bool durable = false);
  // Stops the server at once (pg_ctl stop -m immediate): connections break as if it crashed.
  void kill();
  // Starts a server stopped by kill() again on the same data (its databases and roles kept). Empty on success.
  std::string restart();

  const std::string& dir() const { return dir_; }
  // A conninfo for `user` (the superuser by default) and `dbname`.
  std::string conninfo(const std::string& dbname = "postgres", const std::string& user = "memq_admin") const;

  // As the superuser: CREATE DATABASE `name` (owned by `owner` when given). Empty on success, else the error.
  std::string createDatabase(const std::string& name, const std::string& owner = "");
  // As the superuser: a login role `name`, made a member of each of `groups` (e.g. memq_team_writer), with extra
  // attributes such as "CREATEROLE". Empty on success, else the error.
  std::string createRole(const std::string& name, const std::vector<std::string>& groups = {},
                         const std::string& attributes = "");
  // createRole for a role that must log in with `password` (scram-sha-256).
  std::string createPasswordRole(const std::string& name, const std::string& password,
                                 const std::vector<std::string>& groups = {});

 private:
  std::string runPgBinary(const std::vector<std::string>& argv);

  std::string dir_;
  bool running_ = false;
};

}  // namespace memq::test
