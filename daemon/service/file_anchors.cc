// Line anchors of the files a write names; see file_anchors.h.
#include "daemon/service/file_anchors.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <optional>
#include <unordered_map>
#include <utility>

#include "daemon/anchors/line_ranges.h"
#include "daemon/git/libgit2.h"
#include "daemon/model/file_path.h"
#include "daemon/secrets/secret_scanner.h"
#include "daemon/util/file_stamp.h"
#include "daemon/util/read_file.h"
#include "daemon/util/thread_annotations.h"

namespace memq {

namespace {

// The version an entry's lines are in, with its content.
struct Version {
  std::string blob;
  std::shared_ptr<const std::string> content;
  uint32_t lines = 0;
  bool binary = false;
  bool inRepository = false;
};

bool isBlobId(const std::string& text) {
  return text.size() == 40 &&
         std::all_of(text.begin(), text.end(), [](char c) { return std::isxdigit(static_cast<unsigned char>(c)); });
}

std::string lowercase(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

Status tooLarge(const std::string& field, const std::string& path, size_t bytes) {
  return Status::invalidField(field, field + ": " + path + " is " + std::to_string(bytes) +
                                         " bytes; lines are anchored in files of at most " +
                                         std::to_string(kMaxAnchoredFileBytes >> 20) + " MiB");
}


Result<Version> resolveVersion(const FileEntry& entry, const std::string& path, const std::string& field,
                               const AnchorSource& source) {
  Version v;
  if (entry.blob) {
    const std::string blobField = field + ".blob";
    if (!isBlobId(*entry.blob)) {
      return Status::invalidField(blobField, blobField + ": '" + *entry.blob +
                                                 "' is not a blob id (40 hexadecimal digits)");
    }
    v.blob = lowercase(*entry.blob);
    auto content = source.repo ? source.repo->blobContent(v.blob) : std::nullopt;
    if (!content) {
      return Status::invalidField(blobField, blobField + ": the repository has no blob " + v.blob +
                                                 (source.repo ? "" : " (the project is not in git)"));
    }
    if (content->size() > kMaxAnchoredFileBytes) return tooLarge(field, path + " at " + v.blob, content->size());
    v.lines = countLines(*content);
    v.binary = isBinaryContent(*content);
    v.content = std::make_shared<const std::string>(std::move(*content));
    v.inRepository = true;
    return v;
  }
  auto file = readWorkTreeVersion(source.root, path, field);
  if (!file) return file.status();
  v.content = (*file)->content;
  v.blob = (*file)->blobId;
  v.lines = (*file)->lines;
  v.binary = (*file)->binary;
  // In the repository for good only when HEAD holds it at this path. A blob the object database merely has (staged
  // and then edited again, or of a commit later amended or rebased away) is unreachable, and `git gc` prunes it:
  // the anchor could never be carried again. So such a version is kept like an uncommitted one.
  v.inRepository = source.repo != nullptr && source.repo->blobIdAtHead(path) == v.blob;
  return v;
}

}  // namespace

namespace {

// The open file at `path` under `root`, a regular file of at most kMaxAnchoredFileBytes, and its stat.
Result<int> openWorkTreeFile(const std::string& root, const std::string& path, const std::string& field,
                             struct stat& st) {
  const std::string full = root + "/" + path;
  // O_NONBLOCK: a FIFO at the path must not hang the worker in open(); fstat then refuses it as not a file.
  const int fd = ::open(full.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0 || ::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    if (fd >= 0) ::close(fd);
    return Status::invalidField(field, field + ": " + path +
                                           " is not a file in the work tree, so its lines cannot be read; name the "
                                           "version with blob to anchor lines of a committed file");
  }
  if (static_cast<uint64_t>(st.st_size) > kMaxAnchoredFileBytes) {
    ::close(fd);
    return tooLarge(field, path, static_cast<size_t>(st.st_size));
  }
  return fd;
}

// The whole of the file open as `fd` (stat'ed as `st`), closed after; refused as too large when it grew past the
// limit while read, or as unreadable. A file that shrank while read is taken as read.
Result<std::string> readAndClose(int fd, const struct stat& st, const std::string& field, const std::string& path) {
  std::optional<std::string> content = readAllAndClose(fd, kMaxAnchoredFileBytes, static_cast<size_t>(st.st_size));
  if (!content) {
    return Status::invalidField(field, field + ": " + path + " could not be read: " + std::strerror(errno));
  }
  if (content->size() > kMaxAnchoredFileBytes) return tooLarge(field, path, content->size());
  return std::move(*content);
}

// readWorkTreeVersion's cache: by full path, the file as last read and the stamp it had then. A file that had
// settled when read is served by its stamp alone; one read moments after a change is read again every time, and is
// hashed again only when its bytes differ from the last read's. Bounded by entries and bytes; past either it starts
// over (the files a session works on are few, and re-reading one is cheap).
class WorkTreeFileCache {
 public:
  static constexpr size_t kMaxEntries = 1024;
  static constexpr size_t kMaxBytes = size_t{64} << 20;

  // The file when it was read settled with this very stamp.
  std::shared_ptr<const WorkTreeFile> find(const std::string& full, const FileStamp& stamp) {
    MutexLock lock(mu_);
    auto it = files_.find(full);
    return it != files_.end() && it->second.settled && it->second.stamp == stamp ? it->second.file : nullptr;
  }
  // The file as last read, when its content was `content`.
  std::shared_ptr<const WorkTreeFile> withContent(const std::string& full, const std::string& content) {
    MutexLock lock(mu_);
    auto it = files_.find(full);
    return it != files_.end() && *it->second.file->content == content ? it->second.file : nullptr;
  }
  void remember(const std::string& full, const FileStamp& stamp, bool settled,
                std::shared_ptr<const WorkTreeFile> file) {
    MutexLock lock(mu_);
    if (files_.size() >= kMaxEntries || bytes_ + file->content->size() > kMaxBytes) {
      files_.clear();
      bytes_ = 0;
    }
    auto& slot = files_[full];
    if (slot.file) bytes_ -= slot.file->content->size();
    bytes_ += file->content->size();
    slot = {stamp, settled, std::move(file)};
  }

 private:
  struct Entry {
    FileStamp stamp;
    bool settled = false;
    std::shared_ptr<const WorkTreeFile> file;
  };
  Mutex mu_;
  std::unordered_map<std::string, Entry> files_ GUARDED_BY(mu_);
  size_t bytes_ GUARDED_BY(mu_) = 0;
};

WorkTreeFileCache& workTreeFileCache() {
  static WorkTreeFileCache cache;
  return cache;
}

}  // namespace

Result<std::string> readWorkTreeFile(const std::string& root, const std::string& path, const std::string& field) {
  struct stat st {};
  auto fd = openWorkTreeFile(root, path, field, st);
  if (!fd) return fd.status();
  return readAndClose(*fd, st, field, path);
}

Result<std::shared_ptr<const WorkTreeFile>> readWorkTreeVersion(const std::string& root, const std::string& path,
                                                                const std::string& field) {
  const std::string full = root + "/" + path;
  struct stat st {};
  // A file read before and unchanged since costs one stat: the cache holds only regular files of a size allowed.
  if (::stat(full.c_str(), &st) == 0 && S_ISREG(st.st_mode)) {
    if (auto known = workTreeFileCache().find(full, FileStamp::of(st))) return known;
  }
  auto fd = openWorkTreeFile(root, path, field, st);
  if (!fd) return fd.status();
  const FileStamp stamp = FileStamp::of(st);
  const int64_t readAt = FileStamp::nowNs();
  auto read = readAndClose(*fd, st, field, path);
  if (!read) return read.status();
  std::string content = std::move(*read);
  // Served by its stamp later only if it had settled before it was read: one written again within the same
  // timestamp tick would keep its stamp (FileStamp).
  const bool settled = stamp.settledAt(readAt) && static_cast<int64_t>(content.size()) == stamp.size;
  if (auto same = workTreeFileCache().withContent(full, content)) {
    // The bytes of the last read: its blob id and counts hold (a file just saved is named by every recall after).
    if (settled) workTreeFileCache().remember(full, stamp, settled, same);
    return same;
  }
  auto file = std::make_shared<WorkTreeFile>();
  file->blobId = gitBlobId(content);
  if (file->blobId.empty()) return Status::internal(field + ": could not hash " + path);
  file->lines = countLines(content);
  file->binary = isBinaryContent(content);
  file->content = std::make_shared<const std::string>(std::move(content));
  workTreeFileCache().remember(full, stamp, settled, file);
  return std::shared_ptr<const WorkTreeFile>(std::move(file));
}

std::string gitBlobId(const std::string& content) {
  ensureLibgit2();
  git_oid oid;
  if (git_odb_hash(&oid, content.data(), content.size(), GIT_OBJECT_BLOB) != 0) return "";
  return oidHex(oid);
}

bool isStoredBlobId(const std::string& text) {
  return text.size() == 40 && std::all_of(text.begin(), text.end(), [](char c) {
           return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
         });
}

namespace {

// credentialInKeptVersion's answers by blob id ("" for none); past its bound it starts over.
class CredentialVerdicts {
 public:
  static constexpr size_t kMaxEntries = 4096;

  std::optional<std::optional<std::string>> find(const std::string& blob) {
    MutexLock lock(mu_);
    auto it = kinds_.find(blob);
    if (it == kinds_.end()) return std::nullopt;
    return it->second.empty() ? std::optional<std::string>() : std::optional<std::string>(it->second);
  }
  void remember(const std::string& blob, const std::optional<std::string>& kind) {
    MutexLock lock(mu_);
    if (kinds_.size() >= kMaxEntries) kinds_.clear();
    kinds_[blob] = kind.value_or("");
  }

 private:
  Mutex mu_;
  std::unordered_map<std::string, std::string> kinds_ GUARDED_BY(mu_);
};

CredentialVerdicts& credentialVerdicts() {
  static CredentialVerdicts verdicts;
  return verdicts;
}

}  // namespace

std::optional<std::string> credentialInKeptVersion(const std::string& blob,
                                                   const std::function<std::shared_ptr<const std::string>()>& content) {
  if (auto known = credentialVerdicts().find(blob)) return *known;
  const std::shared_ptr<const std::string> bytes = content();
  if (!bytes) return std::nullopt;  // nothing kept: nothing to scan, and nothing remembered
  std::vector<SecretFinding> found = findSecrets(*bytes);
  std::optional<std::string> kind;
  if (!found.empty()) kind = std::move(found.front().kind);
  credentialVerdicts().remember(blob, kind);
  return kind;
}

Status anchorFileRefs(const std::vector<FileEntry>& entries, const std::string& field, const AnchorSource& source,
                      std::vector<FileRef>& refs, std::vector<std::string>* warnings) {
  for (size_t i = 0; i < entries.size(); ++i) {
    const FileEntry& entry = entries[i];
    if (!entry.lines) continue;
    const std::string entryField = field + "[" + std::to_string(i) + "]";
    if (source.root.empty()) {
      return Status::invalidField(entryField + ".lines", entryField +
                                                             ".lines: lines are anchored in a project's files; the "
                                                             "global scope has no work tree to read them from");
    }
    // The path as the plain list normalised it (the same refusals, Forbidden outside the project).
    auto path = normalizeFilePath(entry.path, source.root, entryField);
    if (!path) return path.status();
    auto ref = std::find_if(refs.begin(), refs.end(), [&](const FileRef& r) { return r.path == *path; });
    if (ref == refs.end()) return Status::internal(entryField + ": " + *path + " is not among the request's files");
    auto version = resolveVersion(entry, *path, entryField, source);
    if (!version) return version.status();
    MEMQ_RETURN_IF_ERROR(validateRangesInFile(*entry.lines, version->binary, version->lines, entryField + ".lines"));
    LineRanges lines = normalizeRanges(*entry.lines);
    if (ref->anchor) {
      // The same path named twice: one anchor, if both name one version.
      if (ref->anchor->blob != version->blob) {
        return Status::invalidField(entryField, entryField + ": " + *path +
                                                    " is named again with lines in another version; name each file "
                                                    "once");
      }
      lines.insert(lines.end(), ref->anchor->lines.begin(), ref->anchor->lines.end());
      MEMQ_RETURN_IF_ERROR(validateRanges(lines, entryField + ".lines"));
      ref->anchor->lines = normalizeRanges(std::move(lines));
      continue;
    }
    // The ref's blob id, which staleness compares with the file as it is, is the version the lines are in: an older
    // blob named, or the file as read here (which may differ from the blob id read for the plain list a moment
    // before, if the file was written in between). Compared with another version, the file would count as unchanged
    // while the anchored lines were rewritten since, and the lines' state would never be asked.
    ref->blobId = version->blob;
    FileAnchor anchor{std::move(lines), version->blob, nullptr};
    if (!version->inRepository) {
      const std::shared_ptr<const std::string>& content = version->content;
      if (std::optional<std::string> kind = credentialInKeptVersion(version->blob, [&] { return content; }); !kind) {
        anchor.keptContent = version->content;
      } else if (warnings != nullptr) {
        warnings->push_back(entryField + ": " + *path + " is not in the repository and holds a credential (" +
                            *kind + "), so memq keeps no copy of it: its lines are anchored, and are no longer " +
                            "carried once the file changes");
      }
    }
    ref->anchor = std::move(anchor);
  }
  return Status::ok();
}

}  // namespace memq
