// The throwaway PostgreSQL server for tests; see pg_cluster.h.
#include "common/pg_cluster.h"

#include <fcntl.h>
#include <grp.h>
#include <libpq-fe.h>
#include <pwd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace memq::test {

namespace {

// PostgreSQL refuses to run as root; a root test hands the server to this user.
constexpr const char* kServerUser = "nobody";

std::string quoteIdent(const std::string& name) {
  std::string out = "\"";
  for (char c : name) {
    if (c == '"') out.push_back('"');
    out.push_back(c);
  }
  return out + "\"";
}

std::string tail(const std::string& path, size_t bytes = 2000) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  std::string text = ss.str();
  return text.size() > bytes ? text.substr(text.size() - bytes) : text;
}

}  // namespace

SqlOutcome runSql(const std::string& conninfo, const std::string& sql) {
  SqlOutcome out;
  PGconn* conn = PQconnectdb(conninfo.c_str());
  if (PQstatus(conn) != CONNECTION_OK) {
    out.message = PQerrorMessage(conn);
    PQfinish(conn);
    return out;
  }
  PQsetNoticeProcessor(conn, [](void*, const char*) {}, nullptr);
  PGresult* r = PQexec(conn, sql.c_str());
  const ExecStatusType st = PQresultStatus(r);
  out.ok = st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK;
  if (!out.ok) {
    const char* state = PQresultErrorField(r, PG_DIAG_SQLSTATE);
    out.sqlstate = state ? state : "";
    out.message = PQresultErrorMessage(r);
  }
  for (int i = 0; i < PQntuples(r); ++i) {
    std::vector<std::optional<std::string>> row;
    for (int j = 0; j < PQnfields(r); ++j) {
      row.push_back(PQgetisnull(r, i, j) ? std::nullopt : std::optional<std::string>(PQgetvalue(r, i, j)));
    }
    out.rows.push_back(std::move(row));
  }
  PQclear(r);
  PQfinish(conn);
  return out;
}

PgCluster::~PgCluster() {
  kill();
  if (!dir_.empty()) {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
}

std::string PgCluster::runPgBinary(const std::vector<std::string>& argv) {
  const std::string binary = std::string(kPgBinDir) + "/" + argv[0];
  const std::string log = dir_ + "/" + argv[0] + ".log";
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  const struct passwd* pw = ::geteuid() == 0 ? ::getpwnam(kServerUser) : nullptr;
  if (::geteuid() == 0 && !pw) return std::string("no user ") + kServerUser + " to run PostgreSQL as";
  const uid_t uid = pw ? pw->pw_uid : 0;
  const gid_t gid = pw ? pw->pw_gid : 0;
  const pid_t pid = ::fork();
  if (pid < 0) return std::string("fork: ") + std::strerror(errno);
  if (pid == 0) {
    // Only async-signal-safe calls between fork and exec.
    const int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
    if (fd >= 0) {
      ::dup2(fd, 1);
      ::dup2(fd, 2);
    }
    if (::chdir(dir_.c_str()) != 0) ::_exit(126);
    if (pw && (::setgroups(0, nullptr) != 0 || ::setgid(gid) != 0 || ::setuid(uid) != 0)) ::_exit(126);
    ::execv(binary.c_str(), args.data());
    ::_exit(127);
  }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return "";
  return argv[0] + " failed (status " + std::to_string(status) + "): " + tail(log);
}

std::string PgCluster::start(bool durable) {
  if (::access((std::string(kPgBinDir) + "/initdb").c_str(), X_OK) != 0 ||
      ::access((std::string(kPgBinDir) + "/pg_ctl").c_str(), X_OK) != 0) {
    return std::string("PostgreSQL 15 server binaries not found in ") + kPgBinDir +
           " (Debian package postgresql); run `make deps` (as root) to install them";
  }
  char tmpl[] = "/tmp/memq-pg-XXXXXX";
  if (!::mkdtemp(tmpl)) return std::string("mkdtemp: ") + std::strerror(errno);
  dir_ = tmpl;
  if (::geteuid() == 0) {
    const struct passwd* pw = ::getpwnam(kServerUser);
    if (!pw || ::chown(dir_.c_str(), pw->pw_uid, pw->pw_gid) != 0) return "cannot give " + dir_ + " to nobody";
  }
  const std::string data = dir_ + "/data";
  if (auto err = runPgBinary({"initdb", "-D", data, "-U", "memq_admin", "-A", "trust", "-E", "UTF8", "--no-locale",
                              "--no-sync", "--no-instructions"});
      !err.empty()) {
    return err;
  }
  {
    std::ofstream conf(data + "/postgresql.conf", std::ios::app);
    conf << "listen_addresses = ''\n"
         << "unix_socket_directories = '" << dir_ << "'\n"
         << "port = 5432\n"
         << (durable ? "fsync = on\nsynchronous_commit = on\nfull_page_writes = on\n"
                     : "fsync = off\nsynchronous_commit = off\nfull_page_writes = off\n")
         << "max_connections = 40\nshared_buffers = 16MB\n";
    if (!conf) return "cannot write " + data + "/postgresql.conf";
  }
  {
    // Members of kPasswordGroup log in with a password (scram-sha-256); every other role is trusted.
    std::ofstream hba(data + "/pg_hba.conf", std::ios::trunc);
    hba << "local all +" << kPasswordGroup << " scram-sha-256\nlocal all all trust\n";
    if (!hba) return "cannot write " + data + "/pg_hba.conf";
  }
  if (auto err = runPgBinary({"pg_ctl", "-D", data, "-l", dir_ + "/server.log", "-w", "-t", "60", "start"});
      !err.empty()) {
    return err + tail(dir_ + "/server.log");
  }
  running_ = true;
  SqlOutcome group = runSql(conninfo(), std::string("CREATE ROLE ") + kPasswordGroup + " NOLOGIN");
  return group.ok ? "" : group.message;
}

void PgCluster::kill() {
  if (!running_) return;
  runPgBinary({"pg_ctl", "-D", dir_ + "/data", "-m", "immediate", "-w", "stop"});
  running_ = false;
}

std::string PgCluster::restart() {
  if (running_) return "";
  if (auto err = runPgBinary({"pg_ctl", "-D", dir_ + "/data", "-l", dir_ + "/server.log", "-w", "-t", "60", "start"});
      !err.empty()) {
    return err + tail(dir_ + "/server.log");
  }
  running_ = true;
  return "";
}

std::string PgCluster::conninfo(const std::string& dbname, const std::string& user) const {
  return "host=" + dir_ + " port=5432 dbname=" + dbname + " user=" + user;
}

std::string PgCluster::createDatabase(const std::string& name, const std::string& owner) {
  std::string sql = "CREATE DATABASE " + quoteIdent(name);
  if (!owner.empty()) sql += " OWNER " + quoteIdent(owner);
  SqlOutcome r = runSql(conninfo(), sql);
  return r.ok ? "" : r.message;
}

std::string PgCluster::createPasswordRole(const std::string& name, const std::string& password,
                                          const std::vector<std::string>& groups) {
  std::string literal = "'";
  for (char c : password) {
    if (c == '\'') literal.push_back('\'');
    literal.push_back(c);
  }
  std::vector<std::string> all = groups;
  all.push_back(kPasswordGroup);
  return createRole(name, all, "PASSWORD " + literal + "'");
}

std::string PgCluster::createRole(const std::string& name, const std::vector<std::string>& groups,
                                  const std::string& attributes) {
  SqlOutcome r = runSql(conninfo(), "CREATE ROLE " + quoteIdent(name) + " LOGIN " + attributes);
  if (!r.ok) return r.message;
  for (const auto& g : groups) {
    r = runSql(conninfo(), "GRANT " + quoteIdent(g) + " TO " + quoteIdent(name));
    if (!r.ok) return r.message;
  }
  return "";
}

}  // namespace memq::test
