// libgit2 initialisation and error translation; see libgit2.h.
#include "daemon/git/libgit2.h"

namespace memq {

void ensureLibgit2() {
  // A function-local static: C++ guarantees one thread runs the initialiser and the others wait for it.
  static const bool kInit = [] {
    git_libgit2_init();
    // libgit2 caches trees only up to 4 KiB by default, so a directory of more than ~100 entries is inflated
    // again on every diff and path lookup. Trees are what the co-change walk and blob-id lookups read over and
    // over; the total cache stays bounded by libgit2's overall limit (256 MiB).
    git_libgit2_opts(GIT_OPT_SET_CACHE_OBJECT_LIMIT, GIT_OBJECT_TREE, static_cast<size_t>(1) << 20);
    return true;
  }();
  (void)kInit;
}

Status gitStatus(int rc, std::string_view what) {
  if (rc >= 0) return Status::ok();
  const git_error* err = git_error_last();
  std::string message(what);
  message += ": ";
  message += (err != nullptr && err->message != nullptr) ? err->message : "libgit2 error " + std::to_string(rc);
  if (rc == GIT_ENOTFOUND) return Status::notFound(message);
  return Status(ErrorCode::kGitError, message);
}

std::string oidHex(const git_oid& oid) {
  char buf[GIT_OID_HEXSZ + 1];
  git_oid_tostr(buf, sizeof buf, &oid);
  return std::string(buf);
}

}  // namespace memq
