// What the Service tests on a real git repository share: numbered file contents, and a Service whose project scopes
// get the libgit2 repository signals (as memqd's) and whose saves commit one at a time.
#pragma once

#include <memory>
#include <string>

#include "daemon/embed/embedder.h"
#include "daemon/git/git_repo_signals.h"
#include "daemon/service/service.h"

namespace memq::testing {

// Lines "TAG 1\n" … "TAG n\n".
inline std::string numberedLines(int n, const std::string& tag = "line") {
  std::string out;
  for (int i = 1; i <= n; ++i) out += tag + " " + std::to_string(i) + "\n";
  return out;
}

// A Service on `dataDir` with git repository signals; `embedder` must outlive it.
inline std::unique_ptr<Service> makeGitService(const std::string& dataDir, const Embedder& embedder) {
  ServiceOptions options;
  options.dataDir = dataDir;
  options.embedder = &embedder;
  options.saveBatch = 1;
  options.repoFactory = [](const ProjectLocation& loc) -> std::shared_ptr<RepoSignals> {
    return std::make_shared<GitRepoSignals>(loc);
  };
  return std::make_unique<Service>(options);
}

}  // namespace memq::testing
