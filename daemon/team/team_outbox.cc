// The team scope's outbox file; see team_outbox.h.
#include "daemon/team/team_outbox.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "daemon/util/durable_file.h"

namespace memq {

namespace {

using json = nlohmann::json;

json recordJson(const OutboxRecord& r) {
  json files = json::array();
  for (const auto& f : r.input.files) {
    json e = {{"path", f.path}};
    if (f.lines) {
      json lines = json::array();
      for (const auto& l : *f.lines) lines.push_back({l.first, l.last});
      e["lines"] = std::move(lines);
    }
    if (f.blob) e["blob"] = *f.blob;
    files.push_back(std::move(e));
  }
  json in = {{"summary", r.input.summary}, {"details", r.input.details}, {"topics", r.input.topics},
             {"files", std::move(files)}, {"source", r.input.source}};
  if (r.input.category) in["category"] = *r.input.category;
  return {{"project_root", r.projectRoot}, {"input", std::move(in)}};
}

std::optional<OutboxRecord> parseRecord(const std::string& line) {
  json j = json::parse(line, nullptr, false);
  if (!j.is_object() || !j.contains("input")) return std::nullopt;
  try {
    OutboxRecord r;
    r.projectRoot = j.value("project_root", "");
    const json& in = j["input"];
    r.input.summary = in.value("summary", "");
    r.input.details = in.value("details", "");
    if (in.contains("category") && in["category"].is_string()) r.input.category = in["category"].get<std::string>();
    r.input.topics = in.value("topics", std::vector<std::string>{});
    r.input.source = in.value("source", "agent");
    for (const auto& f : in.value("files", json::array())) {
      FileEntry e(f.value("path", ""));
      if (f.contains("lines")) {
        LineRanges lines;
        for (const auto& l : f["lines"]) lines.push_back({l[0].get<uint32_t>(), l[1].get<uint32_t>()});
        e.lines = std::move(lines);
      }
      if (f.contains("blob")) e.blob = f["blob"].get<std::string>();
      r.input.files.push_back(std::move(e));
    }
    return r;
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

// An exclusive flock on `path`.lock for the life of the object: the outbox file's changes across processes.
class FileLock {
 public:
  // The outbox's directory exists: append() makes it before it locks, and the others find a file in it.
  explicit FileLock(const std::string& path) {
    fd_ = ::open((path + ".lock").c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (fd_ >= 0) {
      while (::flock(fd_, LOCK_EX) != 0 && errno == EINTR) {
      }
    }
  }
  ~FileLock() {
    if (fd_ >= 0) ::close(fd_);  // releases the lock
  }
  FileLock(const FileLock&) = delete;
  FileLock& operator=(const FileLock&) = delete;

 private:
  int fd_ = -1;
};

}  // namespace

Status TeamOutbox::append(const OutboxRecord& record) {
  MutexLock lock(mutex_);
  const std::string dir = std::filesystem::path(path_).parent_path().string();
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  FileLock fileLock(path_);
  const bool existed = std::filesystem::exists(path_, ec);
  const int fd = ::open(path_.c_str(), O_RDWR | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
  if (fd < 0) return Status(ErrorCode::kStorageError, "cannot open " + path_ + ": " + std::strerror(errno));
  // A torn last line (a crash or a full disk in an earlier append, never acknowledged) is ended first, so that this
  // record starts a line of its own instead of being read as part of the torn one and skipped with it.
  const off_t size = ::lseek(fd, 0, SEEK_END);
  char last = '\n';
  if (size > 0 && ::pread(fd, &last, 1, size - 1) != 1) last = '\n';
  std::string text = recordJson(record).dump() + "\n";
  if (last != '\n') text.insert(text.begin(), '\n');
  Status st = writeAllAndSync(fd, text, path_);
  // A failed write leaves no part of this record behind: a later append would otherwise end it as a line of its own.
  if (!st && size >= 0 && ::ftruncate(fd, size) == 0) ::fsync(fd);
  ::close(fd);
  if (!st) return st;
  if (!existed) return fsyncPath(dir, O_RDONLY | O_DIRECTORY);  // the new file's name is durable too
  return Status::ok();
}

Result<std::vector<std::string>> TeamOutbox::lines() {
  std::vector<std::string> out;
  std::ifstream in(path_);
  if (!in) return out;
  std::string line;
  while (std::getline(in, line)) {
    if (parseRecord(line)) out.push_back(line);  // a torn last line was never acknowledged
  }
  return out;
}

Result<std::vector<OutboxRecord>> TeamOutbox::load() {
  MutexLock lock(mutex_);
  // The sync thread looks every 250 ms: with no outbox there is nothing to lock (and no lock file is made).
  std::error_code ec;
  if (!std::filesystem::exists(path_, ec)) return std::vector<OutboxRecord>{};
  FileLock fileLock(path_);
  auto ls = lines();
  if (!ls) return ls.status();
  std::vector<OutboxRecord> out;
  for (const auto& l : *ls) {
    out.push_back(*parseRecord(l));
    out.back().line = l;
  }
  return out;
}

size_t TeamOutbox::size() {
  MutexLock lock(mutex_);
  auto ls = lines();
  return ls ? ls->size() : 0;
}

Status TeamOutbox::remove(const OutboxRecord& record) {
  MutexLock lock(mutex_);
  FileLock fileLock(path_);
  auto ls = lines();
  if (!ls) return ls.status();
  auto it = std::find(ls->begin(), ls->end(), record.line);
  if (record.line.empty() || it == ls->end()) return Status::ok();  // gone already
  ls->erase(it);
  std::string rest;
  for (const auto& l : *ls) rest += l + "\n";
  return replaceFileDurably(path_, rest);
}

}  // namespace memq
