// Fuzz target for daemon/model/file_path: arbitrary bytes as a `files[]` entry, normalised against several project
// roots (the file-system root, a real directory holding symlinks that point in and out of it, a directory that does
// not exist, and the global scope's empty root). Properties: an accepted path is a clean relative path that stays
// inside the root (lexically, and on disk when it exists), and normalising it again changes nothing; where the kernel
// can resolve the input under a real root, the accepted path names the same file (`..` after a symlink included);
// a path longer than kMaxPathBytes is refused as malformed.
#include <unistd.h>

#include <climits>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "daemon/model/file_path.h"
#include "tests/fuzz/fuzz_check.h"

namespace {

namespace fs = std::filesystem;

std::string realRoot;  // the real directory with symlinks, made once per process

void makeRealRoot() {
  std::string pattern = (fs::temp_directory_path() / "memq-fuzz-root-XXXXXX").string();
  MEMQ_FUZZ_CHECK(::mkdtemp(pattern.data()) != nullptr, "a temporary root can be made");
  realRoot = pattern;
  fs::create_directories(realRoot + "/src/sub");
  fs::create_directories(realRoot + "-sibling");  // shares the root's name as a prefix: outside, but close
  for (const char* file : {"/src/main.cc", "/src/sub/a.h", "/README.md", "-sibling/x"}) {
    std::FILE* f = std::fopen((realRoot + file).c_str(), "w");
    if (f) std::fclose(f);
  }
  fs::create_symlink("/etc", realRoot + "/out");
  fs::create_symlink(realRoot + "-sibling", realRoot + "/sibling");
  fs::create_symlink("src", realRoot + "/in");
  fs::create_symlink("../..", realRoot + "/src/up");
  fs::create_symlink("sub", realRoot + "/src/down");       // `src/down/../main.cc` is src/main.cc, lexically too
  fs::create_symlink("../src/sub", realRoot + "/deep");    // `deep/../main.cc` is src/main.cc, not main.cc
  fs::create_symlink("nowhere", realRoot + "/dangling");
}

void removeRealRoot() {
  std::error_code ec;
  fs::remove_all(realRoot, ec);
  fs::remove_all(realRoot + "-sibling", ec);
}

bool isInsideRoot(const std::string& child, const std::string& root) {
  if (root == "/") return true;
  return child == root || (child.size() > root.size() && child.compare(0, root.size(), root) == 0 &&
                           child[root.size()] == '/');
}

std::string realPathOr(const std::string& path) {
  char buffer[PATH_MAX];
  return ::realpath(path.c_str(), buffer) ? std::string(buffer) : path;
}

void checkClean(const std::string& result) {
  MEMQ_FUZZ_CHECK(!result.empty(), "an accepted path names a file, not the root");
  MEMQ_FUZZ_CHECK(result.front() != '/', "an accepted path is relative");
  MEMQ_FUZZ_CHECK(result.find('\\') == std::string::npos, "an accepted path uses '/' only");
  MEMQ_FUZZ_CHECK(result.find('\0') == std::string::npos, "an accepted path holds no NUL");
  std::size_t start = 0;
  while (start <= result.size()) {
    std::size_t end = result.find('/', start);
    if (end == std::string::npos) end = result.size();
    std::string_view part(result.data() + start, end - start);
    MEMQ_FUZZ_CHECK(!part.empty() && part != "." && part != "..",
                    "an accepted path has no empty, '.' or '..' component, so it cannot climb out of the root");
    start = end + 1;
  }
}

void checkRoot(std::string_view input, const std::string& root) {
  memq::Result<std::string> result = memq::normalizeFilePath(input, root, "files[0]");
  if (input.size() > memq::kMaxPathBytes) {
    MEMQ_FUZZ_CHECK(!result.isOk() && result.status().code() == memq::ErrorCode::kInvalidParams,
                    "a path longer than kMaxPathBytes is refused as malformed");
  }
  if (!result.isOk()) {
    MEMQ_FUZZ_CHECK(result.status().code() == memq::ErrorCode::kInvalidParams ||
                        result.status().code() == memq::ErrorCode::kForbidden,
                    "a refused path is InvalidParams (malformed) or Forbidden (outside the root)");
    MEMQ_FUZZ_CHECK(result.status().data().value("field", "") == "files[0]", "the error names the field");
    return;
  }
  const std::string& path = *result;
  checkClean(path);
  if (root.empty() || root == "/") {
    // With no root, or the file-system root, every relative path stays inside.
  } else {
    std::string onDisk = root + "/" + path;
    std::error_code ec;
    if (fs::symlink_status(onDisk, ec).type() != fs::file_type::not_found && !ec) {
      MEMQ_FUZZ_CHECK(isInsideRoot(realPathOr(onDisk), realPathOr(root)),
                      "an accepted path that exists resolves inside the root (symlinks included)");
    }
  }

  // The kernel's view: where it resolves the input (a relative one, with no `\` that normalising would rewrite), the
  // accepted path resolves to the same file.
  if (!root.empty() && !input.empty() && input.front() != '/' && input.find('\\') == std::string_view::npos) {
    const std::string base = root == "/" ? "" : root;
    char asGiven[PATH_MAX];
    if (::realpath((base + "/" + std::string(input)).c_str(), asGiven) != nullptr) {
      MEMQ_FUZZ_CHECK(realPathOr(base + "/" + path) == asGiven,
                      "an accepted path names the file the kernel opens for the input (symlinks before `..` followed)");
    }
  }

  memq::Result<std::string> again = memq::normalizeFilePath(path, root, "files[0]");
  MEMQ_FUZZ_CHECK(again.isOk() && *again == path, "normalising an accepted path again changes nothing");
  if (!root.empty()) {
    std::string absolute = (root == "/" ? "" : root) + "/" + path;
    memq::Result<std::string> fromAbsolute = memq::normalizeFilePath(absolute, root, "files[0]");
    MEMQ_FUZZ_CHECK(fromAbsolute.isOk() && *fromAbsolute == path,
                    "the absolute form of an accepted path normalises to the same relative path");
  }
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  makeRealRoot();
  std::atexit(removeRealRoot);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view input(reinterpret_cast<const char*>(data), size);
  // Paths longer than the bound are refused before any system call; capping just past it keeps the boundary in
  // reach, realpath() meaningful and the run fast.
  if (input.size() > memq::kMaxPathBytes + 1) input = input.substr(0, memq::kMaxPathBytes + 1);
  for (const std::string& root : {std::string("/"), realRoot, std::string("/nonexistent/memq-fuzz/project"),
                                  std::string()}) {
    checkRoot(input, root);
  }

  std::string lexical;
  if (memq::lexicallyNormalize(input, lexical)) {
    std::string twice;
    MEMQ_FUZZ_CHECK(memq::lexicallyNormalize(lexical, twice) && twice == lexical, "lexicallyNormalize is idempotent");
  }
  return 0;
}
