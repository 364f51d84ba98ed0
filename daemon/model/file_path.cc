// File path normalisation; see file_path.h.
#include "daemon/model/file_path.h"

#include <climits>
#include <cstdlib>
#include <filesystem>
#include <vector>

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

// PROTOCOL.md's error table: a path outside the project root is Forbidden, not malformed; data.field still names it.
Status outsideRoot(const std::string& field, const std::string& message) {
  return Status(ErrorCode::kForbidden, message, nlohmann::json{{"field", field}});
}

std::string realPathOr(const std::string& p) {
  char buf[PATH_MAX];
  if (::realpath(p.c_str(), buf) != nullptr) return buf;
  return p;
}

}  // namespace

Result<std::string> normalizeFilePath(std::string_view rawPath, std::string_view projectRoot, const std::string& field) {
  std::string path(rawPath);
  if (path.empty()) return Status::invalidField(field, field + " is empty");
  if (path.find('\0') != std::string::npos) return Status::invalidField(field, field + " contains a NUL byte");
  for (char& c : path) {
    if (c == '\\') c = '/';
  }
  std::string root(projectRoot);
  while (root.size() > 1 && root.back() == '/') root.pop_back();

  std::string relative;
  if (path.front() == '/') {
    std::string absolute;
    if (!lexicallyNormalize(path, absolute)) {
      return outsideRoot(field, "path '" + std::string(rawPath) + "' is outside the project root");
    }
    absolute = "/" + absolute;
    if (root.empty() || !isInside(absolute, root)) {
      return outsideRoot(field, "path '" + std::string(rawPath) + "' is outside the project root");
    }
    relative = absolute.size() == root.size() ? "" : absolute.substr(root == "/" ? 1 : root.size() + 1);
  } else {
    relative = path;
  }
  std::string normalized;
  if (!lexicallyNormalize(relative, normalized)) {
    return outsideRoot(field, "path '" + std::string(rawPath) + "' escapes the project root");
  }
  if (normalized.empty()) {
    return Status::invalidField(field, "path '" + std::string(rawPath) + "' names the project root, not a file");
  }
  // A symlink inside the root may still point outside it; only checked when the file exists.
  if (!root.empty()) {
    std::error_code ec;
    std::string onDisk = root + "/" + normalized;
    if (std::filesystem::symlink_status(onDisk, ec).type() != std::filesystem::file_type::not_found && !ec) {
      std::string realRoot = realPathOr(root);
      std::string realFile = realPathOr(onDisk);
      if (!isInside(realFile, realRoot)) {
        return outsideRoot(field, "path '" + std::string(rawPath) + "' resolves outside the project root");
      }
    }
  }
  return normalized;
}

}  // namespace memq
