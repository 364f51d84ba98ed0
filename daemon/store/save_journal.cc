// SaveJournal implementation; see save_journal.h for the file layout and what it guarantees.
#include "daemon/store/save_journal.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <optional>
#include <string_view>

namespace memq {

namespace {

constexpr char kMagic[8] = {'m', 'e', 'm', 'q', 's', 'j', '1', '\n'};
constexpr size_t kHeaderSize = 16;
constexpr size_t kRecordHeaderSize = 12;  // uint32 length + uint64 checksum
constexpr size_t kCommittedBelowOffset = 8;  // the header's number follows the magic
static_assert(kMaxSaveRecordBytes <= SaveJournal::kMaxRecordBytes, "a valid save's record must fit the journal");
static_assert(kMaxSaveRecordBytes <= UINT32_MAX, "a record's length is a uint32");

uint64_t fnv1a64(const char* data, size_t n) {
  uint64_t h = 1469598103934665603ull;
  for (size_t i = 0; i < n; ++i) {
    h ^= static_cast<unsigned char>(data[i]);
    h *= 1099511628211ull;
  }
  return h;
}

void putLe(char* out, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) out[i] = static_cast<char>((v >> (8 * i)) & 0xff);
}

uint64_t getLe(const char* in, int bytes) {
  uint64_t v = 0;
  for (int i = 0; i < bytes; ++i) v |= static_cast<uint64_t>(static_cast<unsigned char>(in[i])) << (8 * i);
  return v;
}

// Writes all of `data` at `offset`; retries short writes and EINTR.
int writeAllAt(int fd, const char* data, size_t n, uint64_t offset) {
  while (n > 0) {
    ssize_t w = ::pwrite(fd, data, n, static_cast<off_t>(offset));
    if (w < 0) {
      if (errno == EINTR) continue;
      return errno;
    }
    data += w;
    n -= static_cast<size_t>(w);
    offset += static_cast<uint64_t>(w);
  }
  return 0;
}

// The whole record starting at `at` in `bytes`, if one does (its length plausible and its checksum right).
std::optional<std::string_view> wholeRecordAt(const std::string& bytes, size_t at) {
  if (bytes.size() - at < kRecordHeaderSize) return std::nullopt;
  const auto length = static_cast<uint32_t>(getLe(bytes.data() + at, 4));
  if (length > SaveJournal::kMaxRecordBytes || bytes.size() - at - kRecordHeaderSize < length) return std::nullopt;
  const char* body = bytes.data() + at + kRecordHeaderSize;
  if (fnv1a64(body, length) != getLe(bytes.data() + at + 4, 8)) return std::nullopt;
  return std::string_view(body, length);
}

// How many whole records follow damage at `from`: each a save's JSON object, found by a scan for one whose
// checksum matches. A torn append leaves none (nothing is written after it); damage inside the file may.
size_t wholeRecordsAfter(const std::string& bytes, size_t from) {
  size_t found = 0;
  size_t at = from + 1;
  while (at + kRecordHeaderSize < bytes.size()) {
    const char* body = bytes.data() + at + kRecordHeaderSize;
    // Every record is a JSON object: most positions fail on this before any checksum is computed.
    if (*body == '{') {
      if (auto record = wholeRecordAt(bytes, at); record && !record->empty() && record->back() == '}') {
        ++found;
        at += kRecordHeaderSize + record->size();
        continue;
      }
    }
    ++at;
  }
  return found;
}

}  // namespace

Result<std::unique_ptr<SaveJournal>> SaveJournal::open(const std::string& path) {
  // O_NOFOLLOW: a symlink planted at the path is refused (ELOOP), never written through, and a dangling one never
  // creates its target. Not O_APPEND: see save_journal.h.
  int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0) {
    if (errno == ELOOP) {
      return Status(ErrorCode::kScopeUnavailable,
                    "refusing the save journal " + path + ": it is a symbolic link; memqd writes only its own file");
    }
    return Status::storage("cannot open the save journal " + path + ": " + std::strerror(errno));
  }
  struct stat st{};
  if (::fstat(fd, &st) != 0) {
    int err = errno;
    ::close(fd);
    return Status::storage("cannot stat the save journal " + path + ": " + std::strerror(err));
  }
  // Only memqd's own file, which no one else may write: another user's file planted here would receive the saves.
  std::string refusal;
  if (!S_ISREG(st.st_mode)) {
    refusal = "it is not a regular file";
  } else if (st.st_uid != ::geteuid()) {
    refusal = "it is owned by uid " + std::to_string(st.st_uid) + ", not by memqd's user (uid " +
              std::to_string(::geteuid()) + ")";
  } else if ((st.st_mode & 022) != 0) {
    refusal = "group or others may write it";
  }
  if (!refusal.empty()) {
    ::close(fd);
    return Status(ErrorCode::kScopeUnavailable, "refusing the save journal " + path + ": " + refusal);
  }
  // Only group's and others' bits go; the owner's stay as they were, so tightening never grants the owner a write.
  if ((st.st_mode & 077) != 0 && ::fchmod(fd, st.st_mode & 0700) != 0) {
    int err = errno;
    ::close(fd);
    return Status::storage("cannot chmod the save journal " + path + ": " + std::strerror(err));
  }
  // One owner at a time: a second process opening the same database must not replay (or empty) the saves of the
  // first one's open batch.
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    int err = errno;
    ::close(fd);
    if (err == EWOULDBLOCK) {
      return Status(ErrorCode::kConflict, "the save journal " + path + " is in use by another process");
    }
    return Status::storage("cannot lock the save journal " + path + ": " + std::strerror(err));
  }
  return std::unique_ptr<SaveJournal>(new SaveJournal(path, fd, static_cast<uint64_t>(st.st_size),
                                                      static_cast<uint64_t>(st.st_dev),
                                                      static_cast<uint64_t>(st.st_ino)));
}

SaveJournal::~SaveJournal() {
  if (fd_ >= 0) ::close(fd_);
}

Status SaveJournal::ioError(const std::string& what, int err) const {
  return Status::storage("cannot " + what + " the save journal " + path_ + ": " + std::strerror(err));
}

Result<SaveJournal::Contents> SaveJournal::read() const {
  Contents out;
  std::string bytes(size_, '\0');
  size_t done = 0;
  while (done < bytes.size()) {
    ssize_t r = ::pread(fd_, bytes.data() + done, bytes.size() - done, static_cast<off_t>(done));
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) return ioError("read", errno);
    if (r == 0) break;
    done += static_cast<size_t>(r);
  }
  bytes.resize(done);
  // Shorter than a header: the file was being emptied or created when the process stopped; no record follows, and
  // a reset writes the header before any record is appended.
  if (bytes.size() < kHeaderSize) {
    out.wholeBytes = bytes.size();
    return out;
  }
  if (std::memcmp(bytes.data(), kMagic, sizeof kMagic) != 0) {
    return Status::storage("the save journal " + path_ + " does not start with memq's header; move it aside to open " +
                           "the database without it");
  }
  out.committedBelow = getLe(bytes.data() + kCommittedBelowOffset, 8);
  size_t at = kHeaderSize;
  while (at < bytes.size()) {
    auto record = wholeRecordAt(bytes, at);
    if (!record) break;
    out.records.emplace_back(*record);
    at += kRecordHeaderSize + record->size();
  }
  out.wholeBytes = at;
  out.tornTail = at < bytes.size();
  if (out.tornTail) out.recordsAfterDamage = wholeRecordsAfter(bytes, at);
  return out;
}

Result<SaveJournal::Contents> SaveJournal::recover() {
  auto contents = read();
  if (!contents) return contents;
  if (contents->recordsAfterDamage > 0) {
    // Whole records after damage may be acknowledged saves: the file as found is kept beside it before they are cut,
    // so that they can still be recovered by hand. Refused if the copy cannot be made: nothing is cut then.
    const std::string copy = path_ + ".damaged-" + std::to_string(::time(nullptr));
    std::error_code ec;
    std::filesystem::copy_file(path_, copy, std::filesystem::copy_options::overwrite_existing, ec);
    if (ec) {
      return Status::storage("the save journal " + path_ + " is damaged, and a copy of it could not be kept at " + copy +
                             ": " + ec.message() + "; move it aside to open the database without it");
    }
    contents->damagedCopy = copy;
  }
  if (contents->tornTail) MEMQ_RETURN_IF_ERROR(truncateTo(contents->wholeBytes));
  return contents;
}

Status SaveJournal::append(const std::string& record) {
  if (record.size() > kMaxRecordBytes) {
    return Status::storage("a save journal record of " + std::to_string(record.size()) + " bytes, over the " +
                           std::to_string(kMaxRecordBytes) + " a save can need");
  }
  // One buffer, one write: a record is either wholly in the file or (cut short by a crash) detected by read().
  std::string buf(kRecordHeaderSize + record.size(), '\0');
  putLe(buf.data(), record.size(), 4);
  putLe(buf.data() + 4, fnv1a64(record.data(), record.size()), 8);
  std::memcpy(buf.data() + kRecordHeaderSize, record.data(), record.size());
  const uint64_t before = size_;
  if (int err = writeAllAt(fd_, buf.data(), buf.size(), before); err != 0) {
    // Cut back; should that fail too, size_ still says where the records end, and the next record overwrites these
    // bytes (whatever of them lies past it is a tail that read() stops at and recover() cuts).
    (void)truncateTo(before);
    return ioError("append to", err);
  }
  size_ = before + buf.size();
  return Status::ok();
}

Status SaveJournal::truncateTo(uint64_t size) {
  if (::ftruncate(fd_, static_cast<off_t>(size)) != 0) return ioError("truncate", errno);
  size_ = size;
  return Status::ok();
}

Status SaveJournal::reset(uint64_t committedBelow) {
  MEMQ_RETURN_IF_ERROR(truncateTo(0));
  char header[kHeaderSize];
  std::memcpy(header, kMagic, sizeof kMagic);
  putLe(header + kCommittedBelowOffset, committedBelow, 8);
  if (int err = writeAllAt(fd_, header, sizeof header, 0); err != 0) {
    (void)truncateTo(0);
    return ioError("write the header of", err);
  }
  size_ = kHeaderSize;
  return Status::ok();
}

Status SaveJournal::markCommittedBelow(uint64_t committedBelow) {
  if (size_ < kHeaderSize) return Status::ok();
  // Eight bytes in place, one write: a crash leaves the old number or the new one, and either is true (the records
  // below the old one are committed too).
  char number[8];
  putLe(number, committedBelow, 8);
  if (int err = writeAllAt(fd_, number, sizeof number, kCommittedBelowOffset); err != 0) {
    return ioError("write the header of", err);
  }
  return Status::ok();
}

}  // namespace memq
