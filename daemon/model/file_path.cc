// File path normalisation; see file_path.h.
#include "daemon/model/file_path.h"

#include <sys/stat.h>

#include <algorithm>
#include <climits>
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <vector>

#include "daemon/secrets/secret_scanner.h"
#include "daemon/util/split.h"

namespace memq {

bool lexicallyNormalize(std::string_view path, std::string& out) {
  std::vector<std::string_view> parts;
  size_t i = 0;
  while (i <= path.size()) {
    size_t j = path.find('/', i);
    if (j == std::string_view::npos) j = path.size();
    std::string_view part = path.substr(i, j - i);
    if (part.empty() || part == ".") {
      // skip
    } else if (part == "..") {
      if (parts.empty()) return false;
      parts.pop_back();
    } else {
      parts.push_back(part);
    }
    i = j + 1;
  }
  out.clear();
  for (size_t k = 0; k < parts.size(); ++k) {
    if (k) out.push_back('/');
    out.append(parts[k]);
  }
  return true;
}

namespace {

bool isInside(const std::string& child, const std::string& root) {
  if (root == "/") return true;
  return child == root || (child.size() > root.size() && child.compare(0, root.size(), root) == 0 &&
                           child[root.size()] == '/');
}

// The protocol's error table: a path outside the project root is Forbidden, not malformed; data.field still names it.
Status outsideRoot(const std::string& field, const std::string& message) {
  return Status(ErrorCode::kForbidden, message, nlohmann::json{{"field", field}});
}

std::optional<std::string> realPath(const std::string& p) {
  char buf[PATH_MAX];
  if (::realpath(p.c_str(), buf) != nullptr) return std::string(buf);
  return std::nullopt;
}

std::string realPathOr(const std::string& p) { return realPath(p).value_or(p); }

// A path holding a credential is refused without being quoted: stored redacted it would name another file, and the
// error (which reaches the log) must not carry it either.
Status credentialInPath(const std::string& field, std::string_view path) {
  std::vector<std::string> kinds;
  for (const auto& f : findSecrets(path)) {
    if (std::find(kinds.begin(), kinds.end(), f.kind) == kinds.end()) kinds.push_back(f.kind);
  }
  if (kinds.empty()) return Status::ok();
  std::string names;
  for (const auto& k : kinds) names += (names.empty() ? "" : ", ") + k;
  return Status(ErrorCode::kInvalidParams,
                "a credential was found in " + field + " (" + names +
                    "); a path is never stored redacted (it would name another file), so the request was refused",
                nlohmann::json{{"field", field}, {"kinds", kinds}});
}

// `path` (absolute, or relative to the existing directory `realRoot`) resolved as the kernel would: components in
// order, `..` taking the parent of what has been resolved so far, and every symlink that a later `..` climbs out of
// followed first. Components after the last `..` are left as they are (as the lexical form leaves them: the stored
// path names a symlinked file by its link, and the outside-the-root check follows it). Where a component does not
// exist, the rest is resolved lexically: no symlink can sit below a name that is not there. Returns the absolute
// result, or an error for a symlink that a `..` follows but that does not resolve (dangling, a loop).
Result<std::string> resolveLikeTheKernel(std::string_view path, const std::string& realRoot, const std::string& field,
                                         std::string_view rawPath) {
  const auto parts = splitOn(path, "/");
  size_t lastDotDot = 0;
  for (size_t k = 0; k < parts.size(); ++k) {
    if (parts[k] == "..") lastDotDot = k;
  }
  std::string cur = path.front() == '/' ? std::string() : (realRoot == "/" ? std::string() : realRoot);
  bool onDisk = true;
  for (size_t k = 0; k < parts.size(); ++k) {
    std::string_view part = parts[k];
    if (part.empty() || part == ".") continue;
    if (part == "..") {
      cur.erase(cur.empty() ? 0 : cur.rfind('/'));  // the parent; "/.." is "/"
      continue;
    }
    cur.push_back('/');
    cur.append(part);
    if (!onDisk || k > lastDotDot) continue;
    struct stat st {};
    if (::lstat(cur.c_str(), &st) != 0 || !(S_ISLNK(st.st_mode) || S_ISDIR(st.st_mode))) {
      onDisk = false;  // missing (or a file, which the kernel would not climb out of): lexical from here on
      continue;
    }
    if (!S_ISLNK(st.st_mode)) continue;
    auto target = realPath(cur);
    if (!target) {
      return Status::invalidField(field, "path '" + std::string(rawPath) +
                                             "' climbs with '..' out of a symlink that does not resolve");
    }
    cur = *target == "/" ? std::string() : *target;
  }
  return cur.empty() ? std::string("/") : cur;
}

// `absolute` (inside `base`) relative to it; "" for base itself.
std::string relativeTo(const std::string& absolute, const std::string& base) {
  if (absolute.size() == base.size()) return "";
  return absolute.substr(base == "/" ? 1 : base.size() + 1);
}

bool hasDotDot(std::string_view path) {
  const auto parts = splitOn(path, "/");
  return std::find(parts.begin(), parts.end(), std::string_view("..")) != parts.end();
}

}  // namespace

Result<std::string> normalizeFilePath(std::string_view rawPath, std::string_view projectRoot, const std::string& field,
                                      std::optional<std::string>* rootOnDisk) {
  if (rawPath.empty()) return Status::invalidField(field, field + " is empty");
  if (rawPath.size() > kMaxPathBytes) {
    return Status::invalidField(field, field + " is " + std::to_string(rawPath.size()) +
                                           " bytes long; a path has at most " + std::to_string(kMaxPathBytes) + " bytes");
  }
  if (rawPath.find('\0') != std::string_view::npos) return Status::invalidField(field, field + " contains a NUL byte");
  MEMQ_RETURN_IF_ERROR(credentialInPath(field, rawPath));
  std::string path(rawPath);
  for (char& c : path) {
    if (c == '\\') c = '/';
  }
  std::string root(projectRoot);
  while (root.size() > 1 && root.back() == '/') root.pop_back();
  // Under a root that exists, a path with `..` is resolved on disk (symlinks change where `..` leads).
  const std::optional<std::string> realRoot =
      !root.empty() && hasDotDot(path) ? realPath(root) : std::optional<std::string>();

  std::string relative;
  if (path.front() == '/') {
    std::string absolute;
    if (!lexicallyNormalize(path, absolute)) {
      return outsideRoot(field, "path '" + std::string(rawPath) + "' is outside the project root");
    }
    absolute = "/" + absolute;
    if (realRoot) {
      auto resolved = resolveLikeTheKernel(path, *realRoot, field, rawPath);
      if (!resolved) return resolved.status();
      absolute = *resolved;
      if (isInside(absolute, *realRoot)) {
        relative = relativeTo(absolute, *realRoot);
        absolute.clear();
      }
    }
    if (!absolute.empty()) {
      if (root.empty() || !isInside(absolute, root)) {
        return outsideRoot(field, "path '" + std::string(rawPath) + "' is outside the project root");
      }
      relative = relativeTo(absolute, root);
    }
  } else {
    relative = path;
  }
  std::string normalized;
  if (realRoot && path.front() != '/') {
    // Where the kernel's answer is known it is the only one: `link/../../src` may climb out of the text's depth and
    // still land inside the root, and `out/../x` may look inside and land outside.
    auto resolved = resolveLikeTheKernel(path, *realRoot, field, rawPath);
    if (!resolved) return resolved.status();
    if (!isInside(*resolved, *realRoot)) {
      return outsideRoot(field, "path '" + std::string(rawPath) + "' escapes the project root");
    }
    normalized = relativeTo(*resolved, *realRoot);
  } else if (!lexicallyNormalize(relative, normalized)) {
    return outsideRoot(field, "path '" + std::string(rawPath) + "' escapes the project root");
  }
  if (normalized.empty()) {
    return Status::invalidField(field, "path '" + std::string(rawPath) + "' names the project root, not a file");
  }
  // Normalising can join text into something the scan of the raw path did not see.
  MEMQ_RETURN_IF_ERROR(credentialInPath(field, normalized));
  // A symlink inside the root may still point outside it; only checked when the file exists.
  if (!root.empty()) {
    std::error_code ec;
    std::string onDisk = root + "/" + normalized;
    if (std::filesystem::symlink_status(onDisk, ec).type() != std::filesystem::file_type::not_found && !ec) {
      std::optional<std::string> resolvedHere;
      std::optional<std::string>& realRootPath = rootOnDisk != nullptr ? *rootOnDisk : resolvedHere;
      if (!realRootPath) realRootPath = realPathOr(root);
      std::string realFile = realPathOr(onDisk);
      if (!isInside(realFile, *realRootPath)) {
        return outsideRoot(field, "path '" + std::string(rawPath) + "' resolves outside the project root");
      }
    }
  }
  return normalized;
}

}  // namespace memq
