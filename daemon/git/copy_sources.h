// Where a file that HEAD does not have came from: the file of HEAD's tree its content is most like, scored with git's
// own similarity signature (libgit2's hashsig, what `git diff -C --find-copies-harder` scores copies with). A file
// copied or moved and edited but not yet committed (`git mv a.c b.c`, then an edit; a file brought over from another
// branch) is then found to be `a.c`'s successor, so the memories and anchors on `a.c` reach a query on `b.c`.
// Thread-safety: thread-safe; the repository and the caches are used under one mutex.
#pragma once

#include <cstddef>
#include <cstdint>
#include <list>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "daemon/git/libgit2.h"
#include "daemon/util/thread_annotations.h"

struct git_hashsig;

namespace memq {

class CopySources {
 public:
  // At least this alike (0–100, git's score) to count as the file's source: git's default for renames (-M50%).
  static constexpr int kMinSimilarity = 50;

  // Signatures of HEAD's blobs kept between lookups (each a few KiB): past this many, a signature is computed for
  // the scan that needs it and not kept.
  static constexpr size_t kMaxSignatures = 16384;

  // `repository` may be null (a project outside git): nothing has a source then. `maxSignatures`: kMaxSignatures,
  // or a smaller bound for a test.
  explicit CopySources(RepositoryPtr repository, size_t maxSignatures = kMaxSignatures);
  ~CopySources();
  CopySources(const CopySources&) = delete;
  CopySources& operator=(const CopySources&) = delete;

  // `headTree` is HEAD's tree id (40 hex) as the caller last saw it: the caller's own HEAD check decides when the
  // tree is read again, so a lookup costs no revision parsing.
  // The HEAD path `content` (the file at `path` in the work tree, git blob id `blobId`) most likely came from, or
  // nullopt: when HEAD has `path` itself, when nothing is kMinSimilarity alike, or for content too small to score.
  // Candidates are HEAD's files with the same extension whose size is within the similarity threshold, as git
  // prunes rename pairs. Answers are cached per (HEAD tree, path, blob id); signatures per blob.
  std::optional<std::string> sourceOf(const std::string& headTree, const std::string& path, const std::string& content,
                                      const std::string& blobId);
  // Whether HEAD's tree has `path` (false outside git or without HEAD): only a path it lacks can have a source, so a
  // caller asks this before reading the file.
  bool headHas(const std::string& headTree, const std::string& path);
  // How many signatures of HEAD's blobs were computed so far (each reads a blob): for tests and diagnostics.
  size_t signaturesComputed() EXCLUDES(mu_);

 private:
  struct Signature;  // a hashsig, or none for content too small or binary
  struct TreeFile {
    std::string path;
    git_oid blob;
    uint64_t size = 0;
  };

  // `headTree` as a list of files, read when it is not the tree read last; false when it cannot be read.
  bool refreshTree(const std::string& headTree) REQUIRES(mu_);
  const Signature* signatureOf(const git_oid& blob) REQUIRES(mu_);

  Mutex mu_;
  RepositoryPtr repository_ GUARDED_BY(mu_);
  git_oid tree_ GUARDED_BY(mu_){};
  bool haveTree_ GUARDED_BY(mu_) = false;
  std::unordered_map<std::string, std::vector<TreeFile>> byExtension_ GUARDED_BY(mu_);
  std::unordered_map<std::string, bool> inTree_ GUARDED_BY(mu_);
  // By blob id; only blobs of the tree read last (the others go when it changes), at most maxSignatures_ of them.
  std::unordered_map<std::string, std::unique_ptr<Signature>> signatures_ GUARDED_BY(mu_);
  std::unique_ptr<Signature> overflow_ GUARDED_BY(mu_);  // the last one computed past the bound, in use by its scan
  const size_t maxSignatures_;
  size_t signaturesComputed_ GUARDED_BY(mu_) = 0;
  std::unordered_map<std::string, std::optional<std::string>> answers_ GUARDED_BY(mu_);    // path \n blob id
};

}  // namespace memq
