// SaveJournal implementation; see save_journal.h for the file layout and what it guarantees.
#include "daemon/store/save_journal.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace memq {

namespace {

constexpr char kMagic[8] = {'m', 'e', 'm', 'q', 's', 'j', '1', '\n'};
constexpr size_t kHeaderSize = 16;
constexpr size_t kRecordHeaderSize = 12;  // uint32 length + uint64 checksum
// A save's record is a few KiB (summary ≤ 500 characters, details ≤ 4,000, 50 file refs); anything near this is
// damage, not a record.
constexpr uint32_t kMaxRecord = 16u << 20;

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

// Writes all of `data` at the end of the file (the descriptor is O_APPEND); retries short writes and EINTR.
int writeAll(int fd, const char* data, size_t n) {
  while (n > 0) {
    ssize_t w = ::write(fd, data, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      return errno;
    }
    data += w;
    n -= static_cast<size_t>(w);
  }
  return 0;
}

}  // namespace

Result<std::unique_ptr<SaveJournal>> SaveJournal::open(const std::string& path) {
  // O_NOFOLLOW: a symlink planted at the path is refused (ELOOP), never written through, and a dangling one never
  // creates its target.
  int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW, 0600);
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
  if ((st.st_mode & 077) != 0) ::fchmod(fd, 0600);
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
  // Shorter than a header: the file was being emptied or created when the process stopped; no record follows.
  if (bytes.size() < kHeaderSize) return out;
  if (std::memcmp(bytes.data(), kMagic, sizeof kMagic) != 0) {
    return Status::storage("the save journal " + path_ + " does not start with memq's header; move it aside to open " +
                           "the database without it");
  }
  out.batch = getLe(bytes.data() + 8, 8);
  size_t at = kHeaderSize;
  while (at < bytes.size()) {
    if (bytes.size() - at < kRecordHeaderSize) break;
    const auto length = static_cast<uint32_t>(getLe(bytes.data() + at, 4));
    const uint64_t sum = getLe(bytes.data() + at + 4, 8);
    if (length > kMaxRecord || bytes.size() - at - kRecordHeaderSize < length) break;
    const char* body = bytes.data() + at + kRecordHeaderSize;
    if (fnv1a64(body, length) != sum) break;
    out.records.emplace_back(body, length);
    at += kRecordHeaderSize + length;
  }
  out.tornTail = at < bytes.size();
  return out;
}

Status SaveJournal::append(const std::string& record) {
  if (record.size() > kMaxRecord) return Status::storage("a save journal record over 16 MiB");
  // One buffer, one write(2): a record is either wholly in the file or (cut short by a crash) detected by read().
  std::string buf(kRecordHeaderSize + record.size(), '\0');
  putLe(buf.data(), record.size(), 4);
  putLe(buf.data() + 4, fnv1a64(record.data(), record.size()), 8);
  std::memcpy(buf.data() + kRecordHeaderSize, record.data(), record.size());
  const uint64_t before = size_;
  if (int err = writeAll(fd_, buf.data(), buf.size()); err != 0) {
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

Status SaveJournal::reset(uint64_t batch) {
  MEMQ_RETURN_IF_ERROR(truncateTo(0));
  char header[kHeaderSize];
  std::memcpy(header, kMagic, sizeof kMagic);
  putLe(header + 8, batch, 8);
  if (int err = writeAll(fd_, header, sizeof header); err != 0) {
    (void)truncateTo(0);
    return ioError("write the header of", err);
  }
  size_ = kHeaderSize;
  return Status::ok();
}

}  // namespace memq
