// The project's team conninfo in git config or .memq/team, and the checks on a conninfo; see team_config.h.
#include "daemon/team/team_config.h"

#include <git2.h>
#include <libpq-fe.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <utility>
#include <vector>

#include "daemon/git/libgit2.h"
#include "daemon/util/durable_file.h"

namespace memq {

namespace {

constexpr const char* kGitKey = "memq.team";

std::string gitErrorText() {
  const git_error* e = git_error_last();
  return e && e->message ? e->message : "unknown libgit2 error";
}

std::string quoteValue(const char* value) {
  std::string out = "'";
  for (const char* c = value; *c; ++c) {
    if (*c == '\'' || *c == '\\') out.push_back('\\');
    out.push_back(*c);
  }
  return out + "'";
}

// libpq's parse errors quote the piece of the conninfo they stopped at (`invalid percent-encoded token: "Hunter2%zz"`,
// `missing "=" after "secret"`), which may be a password: the reply and the log keep what went wrong, not the piece.
std::string withoutQuotedText(const std::string& message) {
  std::string out;
  bool quoted = false;
  for (char c : message) {
    if (c == '"') {
      out += quoted ? "\"" : "\"…";
      quoted = !quoted;
    } else if (!quoted) {
      out += c;
    }
  }
  if (quoted) out += '"';
  return out;
}

}  // namespace

std::string teamConfigPath(const ProjectLocation& location) {
  if (location.inGit) return location.gitCommonDir + "/config";
  return location.root + "/.memq/team";
}

Result<std::optional<std::string>> readTeamConninfo(const ProjectLocation& location) {
  const std::string path = teamConfigPath(location);
  if (!location.inGit) {
    std::ifstream in(path);
    if (!in) return std::optional<std::string>();
    std::string line;
    std::getline(in, line);
    if (line.empty()) return std::optional<std::string>();
    return std::optional<std::string>(line);
  }
  ensureLibgit2();
  git_config* config = nullptr;
  if (git_config_open_ondisk(&config, path.c_str()) != 0) {
    return Status(ErrorCode::kGitError, "cannot read " + path + ": " + gitErrorText());
  }
  git_buf buf = GIT_BUF_INIT;
  const int rc = git_config_get_string_buf(&buf, config, kGitKey);
  std::optional<std::string> out;
  if (rc == 0) out = std::string(buf.ptr, buf.size);
  git_buf_dispose(&buf);
  git_config_free(config);
  if (rc != 0 && rc != GIT_ENOTFOUND) {
    return Status(ErrorCode::kGitError, "cannot read " + std::string(kGitKey) + " in " + path + ": " + gitErrorText());
  }
  if (out && out->empty()) out.reset();
  return out;
}

Status writeTeamConninfo(const ProjectLocation& location, const std::optional<std::string>& conninfo) {
  const std::string path = teamConfigPath(location);
  if (!location.inGit) {
    std::error_code ec;
    if (!conninfo) {
      // Gone already is disconnected; a file that stays would keep the project connected.
      std::filesystem::remove(path, ec);
      if (ec && ec != std::errc::no_such_file_or_directory) {
        return Status(ErrorCode::kStorageError, "cannot remove " + path + ": " + ec.message());
      }
      return Status::ok();
    }
    std::filesystem::create_directories(std::filesystem::path(path).parent_path(), ec);
    return replaceFileDurably(path, *conninfo + "\n");
  }
  ensureLibgit2();
  git_config* config = nullptr;
  if (git_config_open_ondisk(&config, path.c_str()) != 0) {
    return Status(ErrorCode::kGitError, "cannot open " + path + ": " + gitErrorText());
  }
  int rc = conninfo ? git_config_set_string(config, kGitKey, conninfo->c_str()) : git_config_delete_entry(config, kGitKey);
  if (!conninfo && rc == GIT_ENOTFOUND) rc = 0;
  const std::string error = rc != 0 ? gitErrorText() : "";
  git_config_free(config);
  if (rc != 0) return Status(ErrorCode::kGitError, "cannot write " + std::string(kGitKey) + " in " + path + ": " + error);
  return Status::ok();
}

Status checkTeamConninfo(const std::string& conninfo, const std::string& field) {
  if (conninfo.find('\0') != std::string::npos) return Status::invalidField(field, field + " contains a NUL byte");
  if (conninfo.empty()) return Status::invalidField(field, field + " must not be empty");
  char* error = nullptr;
  PQconninfoOption* options = PQconninfoParse(conninfo.c_str(), &error);
  if (!options) {
    std::string message = error ? error : "cannot parse it";
    if (error) PQfreemem(error);
    while (!message.empty() && message.back() == '\n') message.pop_back();
    return Status::invalidField(field, field + " is not a libpq conninfo: " + withoutQuotedText(message));
  }
  bool hasPassword = false;
  for (PQconninfoOption* o = options; o->keyword; ++o) {
    if (isTeamSecretKeyword(o->keyword) && o->val && *o->val) hasPassword = true;
  }
  PQconninfoFree(options);
  if (hasPassword) {
    return Status::invalidField(field, field + " names a password (password or sslpassword); memq never stores "
                                               "one. Put it in a passfile (~/.pgpass, or passfile=PATH / "
                                               "PGPASSFILE) or the PG* environment of memqd, and connect without it");
  }
  return Status::ok();
}

std::string withTimeouts(const std::string& conninfo, int seconds) {
  char* error = nullptr;
  PQconninfoOption* options = PQconninfoParse(conninfo.c_str(), &error);
  if (!options) {
    if (error) PQfreemem(error);
    return conninfo;  // libpq reports the problem when it connects
  }
  // A server gone silent (a dropped route, a laptop's VPN) is noticed in about half a minute rather than TCP's
  // quarter of an hour: keepalives on an idle connection, and a bound on data sent and never acknowledged.
  // (libpq ignores them on a Unix socket.)
  std::vector<std::pair<const char*, std::string>> defaults = {{"connect_timeout", std::to_string(seconds)},
                                                                {"keepalives_idle", "15"},
                                                                {"keepalives_interval", "5"},
                                                                {"keepalives_count", "3"},
                                                                {"tcp_user_timeout", "30000"}};
  std::ostringstream out;
  for (PQconninfoOption* o = options; o->keyword; ++o) {
    if (!o->val) continue;
    std::erase_if(defaults, [&](const auto& d) { return std::strcmp(o->keyword, d.first) == 0; });
    out << o->keyword << "=" << quoteValue(o->val) << " ";
  }
  PQconninfoFree(options);
  for (const auto& [keyword, value] : defaults) out << keyword << "=" << value << " ";
  std::string text = out.str();
  if (!text.empty()) text.pop_back();
  return text;
}

}  // namespace memq
