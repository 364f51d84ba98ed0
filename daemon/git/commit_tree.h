// CommitTree: the tree of one commit, kept until a different commit is asked for, so that the many lookups of one
// HEAD do not each look up its commit and tree again.
// Thread-safety: none; its owner serialises calls (with the repository handle's own mutex).
#pragma once

#include "daemon/git/libgit2.h"

namespace memq {

class CommitTree {
 public:
  // The tree of `commit` in `repository` (always the same repository for one CommitTree); null when it cannot be
  // read. Valid until the next call.
  git_tree* of(git_repository* repository, const git_oid& commit) {
    if (tree_ && git_oid_equal(&commit, &commit_)) return tree_.get();
    tree_.reset();
    git_commit* rawCommit = nullptr;
    if (git_commit_lookup(&rawCommit, repository, &commit) < 0) return nullptr;
    CommitPtr owned(rawCommit);
    git_tree* rawTree = nullptr;
    if (git_commit_tree(&rawTree, owned.get()) < 0) return nullptr;
    tree_.reset(rawTree);
    commit_ = commit;
    return tree_.get();
  }

 private:
  git_oid commit_{};
  TreePtr tree_;
};

}  // namespace memq
