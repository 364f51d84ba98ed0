// Project and repository discovery; see repo_location.h.
#include "daemon/git/repo_location.h"

#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <system_error>

#include "daemon/git/libgit2.h"

namespace memq {
namespace {

namespace fs = std::filesystem;

// Canonical form without a trailing slash; libgit2 returns directories with one, and we compare paths textually.
std::string canonicalDir(const std::string& path) {
  std::error_code ec;
  fs::path p = fs::canonical(path, ec);
  if (ec) p = fs::path(path).lexically_normal();
  std::string s = p.generic_string();
  while (s.size() > 1 && s.back() == '/') s.pop_back();
  return s;
}

// How to allow a directory owned by someone else: the setting git (and libgit2) reads for a repository.
std::string howToAllow(const std::string& dir) {
  return "if you trust it, allow it as git does: git config --global --add safe.directory " + dir;
}

// Whether git's safe.directory (global and system configuration, read by libgit2 as for a repository) lists `dir`:
// its path, or "*"; an empty value clears the entries before it.
bool safeDirectoryAllows(const std::string& dir) {
  git_config* config = nullptr;
  if (git_config_open_default(&config) < 0) return false;
  struct Search {
    const std::string& dir;
    bool allowed = false;
  } search{dir};
  git_config_get_multivar_foreach(
      config, "safe.directory", nullptr,
      [](const git_config_entry* entry, void* payload) {
        auto& s = *static_cast<Search*>(payload);
        std::string value = entry->value != nullptr ? entry->value : "";
        while (value.size() > 1 && value.back() == '/') value.pop_back();
        if (value.empty()) {
          s.allowed = false;
        } else if (value == "*" || value == s.dir) {
          s.allowed = true;
        }
        return 0;
      },
      &search);
  git_config_free(config);
  return search.allowed;
}

// A directory owned by another user is refused, as git refuses such a repository: that user could read the
// memories, or swap the files memqd writes. `allowDir` is what safe.directory must list to allow it.
Status ownedOrAllowed(const std::string& path, const std::string& allowDir, const std::string& what) {
  struct stat st{};
  if (::stat(path.c_str(), &st) != 0 || st.st_uid == ::geteuid() || safeDirectoryAllows(allowDir)) {
    return Status::ok();
  }
  return Status(ErrorCode::kForbidden, what + " " + allowDir + " is owned by uid " + std::to_string(st.st_uid) +
                                           ", not by memqd's user (uid " + std::to_string(::geteuid()) +
                                           "); memq keeps no memories where another user controls the files; " +
                                           howToAllow(allowDir));
}

// A project outside git keeps its database in <root>/.memq.
Result<ProjectLocation> outsideGit(const std::string& root) {
  MEMQ_RETURN_IF_ERROR(ownedOrAllowed(root, root, "project directory"));
  ProjectLocation loc;
  loc.root = root;
  loc.dbPath = root + "/.memq/memory.db";
  return loc;
}

}  // namespace

Result<ProjectLocation> locateProject(const std::string& dir, bool exactRoot) {
  ensureLibgit2();
  std::error_code ec;
  if (dir.empty() || !fs::is_directory(dir, ec)) {
    return Status::notFound("project directory does not exist: " + dir);
  }
  const std::string canon = canonicalDir(dir);

  git_buf found = GIT_BUF_INIT;
  int rc = git_repository_discover(&found, canon.c_str(), /*across_fs=*/0, /*ceiling_dirs=*/nullptr);
  if (rc == GIT_ENOTFOUND) return outsideGit(canon);
  if (rc < 0) return gitStatus(rc, "discovering the repository of " + canon);
  std::string gitPath(found.ptr, found.size);
  git_buf_dispose(&found);

  git_repository* raw = nullptr;
  // Checked here too, not only by libgit2: the refusal then says how to allow the repository (libgit2 1.5 reports
  // a missing safe.directory as a configuration error instead).
  const std::string canonGit = canonicalDir(gitPath);
  const std::string workTree =
      canonGit.size() > 5 && canonGit.ends_with("/.git") ? canonGit.substr(0, canonGit.size() - 5) : canonGit;
  MEMQ_RETURN_IF_ERROR(ownedOrAllowed(canonGit, workTree, "repository"));
  rc = git_repository_open(&raw, gitPath.c_str());
  if (rc < 0) return gitStatus(rc, "opening repository " + gitPath);
  RepositoryPtr repo(raw);

  const char* workdir = git_repository_workdir(repo.get());
  if (workdir == nullptr) {
    // A bare repository has no work tree to hold project files; treat the directory as a plain one.
    spdlog::info("memq: {} is inside a bare repository; treating it as outside git", canon);
    return outsideGit(canon);
  }
  ProjectLocation loc;
  loc.inGit = true;
  loc.gitWorkTreeTop = canonicalDir(workdir);
  loc.gitDir = canonicalDir(git_repository_path(repo.get()));
  loc.gitCommonDir = canonicalDir(git_repository_commondir(repo.get()));
  loc.dbPath = loc.gitCommonDir + "/memq/memory.db";

  const std::string& top = loc.gitWorkTreeTop;
  auto isUnder = [](const std::string& path, const std::string& base) {
    return path == base || (path.size() > base.size() && path.compare(0, base.size(), base) == 0 &&
                            (base == "/" || path[base.size()] == '/'));
  };
  if (exactRoot && canon != top && isUnder(canon, top) && !isUnder(canon, loc.gitDir) &&
      !isUnder(canon, loc.gitCommonDir)) {
    loc.root = canon;
    loc.repoPrefix = canon.substr(top == "/" ? 1 : top.size() + 1);
  } else {
    // Either the caller wants the work tree top, or dir sits somewhere odd (inside the git dir itself);
    // the work tree top is the only root whose paths mean something to git.
    loc.root = top;
  }
  return loc;
}

}  // namespace memq
