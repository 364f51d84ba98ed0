// HeadReader: HEAD's commit, resolved through libgit2 only when a file it was resolved from may have changed. libgit2
// opens and reads HEAD and the branch's ref on every resolution (about 10 µs); a recall naming files asks for HEAD
// in several places. The reader keeps the last answer with the stamps (FileStamp) of HEAD, the branch's loose ref
// and packed-refs, and answers from it while all three are unchanged and had settled when stamped (a change within
// one tick of the file system's clock could leave a stamp as it was: FileStamp::settledAt). A detached HEAD needs
// only HEAD's stamp; a HEAD naming anything but a branch (refs/heads/...) pointing straight at a commit is resolved
// every time.
// Thread-safety: none; its owner serialises calls (with the repository handle's own mutex).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>

#include "daemon/git/libgit2.h"
#include "daemon/util/file_stamp.h"

namespace memq {

class HeadReader {
 public:
  explicit HeadReader(int64_t settleNs = FileStamp::kSettleNs) : settleNs_(settleNs) {}

  // HEAD's commit in `repository` (always the same repository for one reader); nullopt when HEAD is unborn or
  // cannot be read.
  std::optional<git_oid> read(git_repository* repository);
  // How many times HEAD was resolved through libgit2 (tests).
  size_t resolutions() const { return resolutions_; }

 private:
  const int64_t settleNs_;
  std::optional<git_oid> head_;
  PathStamps stamps_;  // what head_ was resolved from; empty: resolve again
  size_t resolutions_ = 0;
};

}  // namespace memq
