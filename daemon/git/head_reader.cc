// HEAD's commit, kept while the files it was resolved from are unchanged; see head_reader.h.
#include "daemon/git/head_reader.h"

#include <string>
#include <utility>

namespace memq {

std::optional<git_oid> HeadReader::read(git_repository* repository) {
  if (!stamps_.empty() && stamps_.unchanged()) return head_;
  stamps_.clear();
  ++resolutions_;
  // The files HEAD resolves through, stamped before it is read: a change made while it is read shows next time.
  const std::string gitDir = git_repository_path(repository);          // ends with '/'
  const std::string commonDir = git_repository_commondir(repository);  // ends with '/'
  const int64_t stampedAt = FileStamp::nowNs();
  PathStamps before;
  before.add(gitDir + "HEAD");
  head_.reset();
  git_reference* raw = nullptr;
  if (git_reference_lookup(&raw, repository, "HEAD") < 0) return head_;
  ReferencePtr head(raw);
  if (git_reference_type(head.get()) == GIT_REFERENCE_DIRECT) {
    head_ = *git_reference_target(head.get());  // detached
  } else {
    const std::string branch = git_reference_symbolic_target(head.get());
    // The branch's stamps are taken after HEAD's was read, but before the branch is read.
    before.add(commonDir + branch);
    before.add(commonDir + "packed-refs");
    git_reference* rawBranch = nullptr;
    if (git_reference_lookup(&rawBranch, repository, branch.c_str()) < 0) return head_;  // unborn
    ReferencePtr resolved(rawBranch);
    if (git_reference_type(resolved.get()) != GIT_REFERENCE_DIRECT) {
      git_oid oid;
      if (git_reference_name_to_id(&oid, repository, "HEAD") == 0) head_ = oid;
      return head_;  // a symbolic branch: resolved every time
    }
    head_ = *git_reference_target(resolved.get());
    // A ref outside refs/heads may live in this work tree's own git dir, not the common one: not kept.
    if (branch.rfind("refs/heads/", 0) != 0) return head_;
  }
  if (before.settledAt(stampedAt, settleNs_)) stamps_ = std::move(before);
  return head_;
}

}  // namespace memq
