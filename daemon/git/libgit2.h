// The libgit2 boundary of daemon/git: process-wide library initialisation, RAII owners for the libgit2 objects
// this layer uses, and the ONE translation of libgit2 return codes into memq's Status (gitStatus).
// Thread-safety: ensureLibgit2() may be called from any thread. The handles follow libgit2's own rule: an object
// (and everything looked up through the same git_repository) must not be used from two threads at once; callers
// serialise with their own mutex.
#pragma once

#include <git2.h>

#include <memory>
#include <string>
#include <string_view>

#include "protocol/status.h"

namespace memq {

// Initialises libgit2 once per process (never shut down: the daemon uses it until exit). Every entry point of
// this layer calls it, so no caller has to remember to.
void ensureLibgit2();

// Translates a libgit2 return code into a Status, reading git_error_last() for the message. rc >= 0 is ok.
// GIT_ENOTFOUND becomes NotFound; everything else GitError. `what` says what was being attempted.
Status gitStatus(int rc, std::string_view what);

// 40-hex text of an object id.
std::string oidHex(const git_oid& oid);

namespace git_detail {
template <typename T, void (*Free)(T*)>
struct Deleter {
  void operator()(T* p) const {
    if (p != nullptr) Free(p);
  }
};
}  // namespace git_detail

template <typename T, void (*Free)(T*)>
using GitPtr = std::unique_ptr<T, git_detail::Deleter<T, Free>>;

using RepositoryPtr = GitPtr<git_repository, git_repository_free>;
using CommitPtr = GitPtr<git_commit, git_commit_free>;
using TreePtr = GitPtr<git_tree, git_tree_free>;
using TreeEntryPtr = GitPtr<git_tree_entry, git_tree_entry_free>;
using BlobPtr = GitPtr<git_blob, git_blob_free>;
using ReferencePtr = GitPtr<git_reference, git_reference_free>;

}  // namespace memq
