// Copy and rename sources of files HEAD does not have; see copy_sources.h.
#include "daemon/git/copy_sources.h"

#include <git2/sys/hashsig.h>

#include <algorithm>

namespace memq {

namespace {

constexpr size_t kMaxAnswers = 4096;
// Git's signature options for text: runs of whitespace count as one, so re-indenting does not hide a copy.
constexpr git_hashsig_option_t kSignatureOptions = GIT_HASHSIG_SMART_WHITESPACE;

std::string extensionOf(const std::string& path) {
  const size_t slash = path.rfind('/');
  const size_t dot = path.rfind('.');
  if (dot == std::string::npos || (slash != std::string::npos && dot < slash)) return "";
  return path.substr(dot + 1);
}

// Whether sizes `a` and `b` could still be kMinSimilarity alike: git prunes pairs the same way before scoring.
bool sizesCompatible(uint64_t a, uint64_t b) {
  const uint64_t small = std::min(a, b), large = std::max(a, b);
  return large == 0 || small * 100 >= large * static_cast<uint64_t>(CopySources::kMinSimilarity);
}

using HashsigPtr = GitPtr<git_hashsig, git_hashsig_free>;

HashsigPtr signatureOfContent(const char* data, size_t size) {
  git_hashsig* sig = nullptr;
  if (git_hashsig_create(&sig, data, size, kSignatureOptions) != 0) return nullptr;  // too small or no lines
  return HashsigPtr(sig);
}

}  // namespace

struct CopySources::Signature {
  HashsigPtr sig;  // null: nothing to score
};

CopySources::CopySources(RepositoryPtr repository, size_t maxSignatures)
    : repository_(std::move(repository)), maxSignatures_(maxSignatures) {
  ensureLibgit2();
}

CopySources::~CopySources() = default;

bool CopySources::refreshTree(const std::string& headTree) {
  git_oid id;
  if (!repository_ || headTree.size() != GIT_OID_HEXSZ || git_oid_fromstr(&id, headTree.c_str()) != 0) return false;
  if (haveTree_ && git_oid_equal(&id, &tree_)) return true;
  git_tree* rawTree = nullptr;
  if (git_tree_lookup(&rawTree, repository_.get(), &id) != 0) {
    haveTree_ = false;
    byExtension_.clear();
    inTree_.clear();
    return false;
  }
  TreePtr tree(rawTree);
  git_oid_cpy(&tree_, &id);
  haveTree_ = true;
  byExtension_.clear();
  inTree_.clear();
  answers_.clear();
  struct Walk {
    git_odb* odb;
    std::vector<TreeFile> files;
  };
  git_odb* odb = nullptr;
  if (git_repository_odb(&odb, repository_.get()) != 0) return false;
  Walk walk{odb, {}};
  git_tree_walk(
      tree.get(), GIT_TREEWALK_PRE,
      [](const char* root, const git_tree_entry* entry, void* payload) -> int {
        auto* w = static_cast<Walk*>(payload);
        if (git_tree_entry_type(entry) != GIT_OBJECT_BLOB) return 0;
        if (git_tree_entry_filemode(entry) == GIT_FILEMODE_LINK) return 0;
        TreeFile f;
        f.path = std::string(root) + git_tree_entry_name(entry);
        git_oid_cpy(&f.blob, git_tree_entry_id(entry));
        size_t size = 0;
        git_object_t type{};
        if (git_odb_read_header(&size, &type, w->odb, &f.blob) == 0) f.size = size;
        w->files.push_back(std::move(f));
        return 0;
      },
      &walk);
  // The signatures of blobs the new tree still has stay (most of them, after a commit); the others go, so that
  // the bound holds signatures worth keeping.
  std::unordered_map<std::string, std::unique_ptr<Signature>> kept;
  for (TreeFile& f : walk.files) {
    inTree_[f.path] = true;
    if (signatures_.empty()) {
      // Nothing to keep (the first tree): no blob id spelled out per file.
    } else if (auto it = signatures_.find(oidHex(f.blob)); it != signatures_.end()) {
      kept.insert(signatures_.extract(it));
    }
    byExtension_[extensionOf(f.path)].push_back(std::move(f));
  }
  signatures_ = std::move(kept);
  git_odb_free(odb);
  return true;
}

const CopySources::Signature* CopySources::signatureOf(const git_oid& blobId) {
  const std::string key = oidHex(blobId);
  auto it = signatures_.find(key);
  if (it != signatures_.end()) return it->second.get();
  ++signaturesComputed_;
  auto sig = std::make_unique<Signature>();
  git_blob* blob = nullptr;
  if (git_blob_lookup(&blob, repository_.get(), &blobId) == 0) {
    BlobPtr owned(blob);
    if (!git_blob_is_binary(blob)) {
      sig->sig = signatureOfContent(static_cast<const char*>(git_blob_rawcontent(blob)),
                                    static_cast<size_t>(git_blob_rawsize(blob)));
    }
  }
  if (signatures_.size() >= maxSignatures_) {
    // Full: computed for this scan and not kept. Clearing the cache instead would have every scan of more
    // candidates than the bound compute all of them again; this way the next scan computes only those past it.
    overflow_ = std::move(sig);
    return overflow_.get();
  }
  return signatures_.emplace(key, std::move(sig)).first->second.get();
}

size_t CopySources::signaturesComputed() {
  MutexLock lock(mu_);
  return signaturesComputed_;
}

bool CopySources::headHas(const std::string& headTree, const std::string& path) {
  MutexLock lock(mu_);
  return refreshTree(headTree) && inTree_.count(path) != 0;
}

std::optional<std::string> CopySources::sourceOf(const std::string& headTree, const std::string& path,
                                                 const std::string& content, const std::string& blobId) {
  MutexLock lock(mu_);
  if (!refreshTree(headTree) || inTree_.count(path) != 0) return std::nullopt;
  const std::string key = path + "\n" + blobId;
  if (auto it = answers_.find(key); it != answers_.end()) return it->second;
  std::optional<std::string> best;
  HashsigPtr mine = signatureOfContent(content.data(), content.size());
  if (mine) {
    int bestScore = kMinSimilarity - 1;
    auto candidates = byExtension_.find(extensionOf(path));
    if (candidates != byExtension_.end()) {
      for (const TreeFile& f : candidates->second) {
        if (!sizesCompatible(f.size, content.size())) continue;
        const Signature* theirs = signatureOf(f.blob);
        if (theirs == nullptr || !theirs->sig) continue;
        const int score = git_hashsig_compare(mine.get(), theirs->sig.get());
        // Ties go to the first in tree order, so the answer does not depend on the cache.
        if (score > bestScore) {
          bestScore = score;
          best = f.path;
        }
      }
    }
  }
  if (answers_.size() >= kMaxAnswers) answers_.clear();
  answers_.emplace(key, best);
  return best;
}

}  // namespace memq
