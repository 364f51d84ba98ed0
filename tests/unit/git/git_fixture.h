// Test helpers for daemon/git: throwaway directories and real repositories driven through the git command line,
// with fixed identities and strictly increasing commit dates so history order is deterministic.
// Thread-safety: a fixture belongs to one test.
#pragma once

#include <SQLiteCpp/Database.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <stdexcept>
#include <string>

#include "embedded_migrations.h"

namespace memq::testing {

namespace fs = std::filesystem;

inline std::string shellQuote(const std::string& s) {
  std::string out = "'";
  for (char c : s) {
    if (c == '\'') {
      out += "'\\''";
    } else {
      out += c;
    }
  }
  return out + "'";
}

// Runs a shell command, returning its stdout; throws (failing the test) on a non-zero exit.
inline std::string run(const std::string& cmd) {
  FILE* p = popen((cmd + " 2>&1").c_str(), "r");
  if (p == nullptr) throw std::runtime_error("popen failed: " + cmd);
  std::string out;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  const int rc = pclose(p);
  if (rc != 0) throw std::runtime_error("command failed (" + std::to_string(rc) + "): " + cmd + "\n" + out);
  return out;
}

inline std::string trimmed(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

class TempDir {
 public:
  TempDir() {
    std::string tmpl = (fs::temp_directory_path() / "memq-git-test-XXXXXX").string();
    if (mkdtemp(tmpl.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
    // Canonical, so it compares equal to what locateProject returns (/tmp may be a symlink).
    path_ = fs::canonical(tmpl).string();
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

inline void writeFile(const std::string& path, const std::string& content) {
  fs::create_directories(fs::path(path).parent_path());
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << content;
}

// A repository in `dir` (created with `git init` unless it already is one).
class GitRepo {
 public:
  explicit GitRepo(std::string dir, bool init = true) : dir_(std::move(dir)) {
    fs::create_directories(dir_);
    if (init) git("init -q -b main");
  }

  const std::string& dir() const { return dir_; }

  // git with a fixed identity, no signing, no user or system configuration, and the next commit date.
  std::string git(const std::string& args) {
    const long date = nextDate_++;
    const std::string env = "env -i PATH=\"$PATH\" HOME=" + shellQuote(dir_) +
                            " GIT_CONFIG_NOSYSTEM=1 GIT_AUTHOR_NAME=memq GIT_AUTHOR_EMAIL=memq@example.com"
                            " GIT_COMMITTER_NAME=memq GIT_COMMITTER_EMAIL=memq@example.com"
                            " GIT_AUTHOR_DATE='@" + std::to_string(date) + " +0000' GIT_COMMITTER_DATE='@" +
                            std::to_string(date) + " +0000' ";
    return run(env + "git -C " + shellQuote(dir_) + " -c commit.gpgsign=false -c protocol.file.allow=always " +
               args);
  }

  void write(const std::string& rel, const std::string& content) { writeFile(dir_ + "/" + rel, content); }
  void remove(const std::string& rel) { fs::remove(dir_ + "/" + rel); }

  // Writes every file (content defaults to a fresh marker so the file really changes) and commits them all.
  std::string commit(const std::map<std::string, std::string>& files, const std::string& message = "change") {
    for (const auto& [path, content] : files) write(path, content);
    git("add -A");
    git("commit -q --allow-empty -m " + shellQuote(message));
    return rev("HEAD");
  }
  // Touches each listed path with new content and commits.
  template <typename Paths>
  std::string touch(const Paths& paths, const std::string& message = "touch") {
    std::map<std::string, std::string> files;
    for (const std::string& p : paths) files[p] = "v" + std::to_string(++edits_) + " of " + p + "\n";
    return commit(files, message);
  }
  std::string touch(std::initializer_list<std::string> paths, const std::string& message = "touch") {
    return touch(std::vector<std::string>(paths), message);
  }

  std::string rev(const std::string& what) { return trimmed(git("rev-parse " + shellQuote(what))); }

 private:
  std::string dir_;
  long nextDate_ = 1700000000;
  int edits_ = 0;
};

// A fresh, fully migrated project database at `path` (what the store would create).
inline void createMigratedDatabase(const std::string& path) {
  fs::create_directories(fs::path(path).parent_path());
  SQLite::Database db(path, SQLite::OPEN_READWRITE | SQLite::OPEN_CREATE);
  for (const Migration& m : embeddedMigrations()) db.exec(std::string(m.sql));
}

}  // namespace memq::testing
