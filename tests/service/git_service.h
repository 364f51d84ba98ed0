// What the Service tests on a real git repository share: numbered file contents, a Service whose project scopes get
// the libgit2 repository signals (as memqd's) and whose saves commit one at a time, and the fixture that holds the
// repository, that Service and the calls a test makes to it as a client.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <utility>

#include "daemon/embed/embedder.h"
#include "daemon/embed/hashbag.h"
#include "daemon/git/git_repo_signals.h"
#include "daemon/service/service.h"
#include "tests/unit/git/git_fixture.h"

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

// The repository at tmp/project, made empty by SetUp (a test's SetUp commits to it, then calls startService), and
// the Service on tmp/data that connect() and ctx() call as a client named `clientName`.
class GitServiceTest : public ::testing::Test {
 protected:
  explicit GitServiceTest(std::string clientName) : clientName_(std::move(clientName)) {}

  void SetUp() override { repo_ = std::make_unique<GitRepo>(tmp_.path() + "/project"); }

  void startService() { service_ = makeGitService(tmp_.path() + "/data", embedder_); }

  // Initializes `client` for the repository's project, as the agent tab `tab` ("": none).
  void connect(ClientState& client, const std::string& tab = "") {
    InitializeRequest request;
    request.clientName = clientName_;
    request.projectRoot = repo_->dir();
    request.tab = tab;
    ASSERT_TRUE(service_->initialize(client, request).isOk());
  }

  CallContext ctx(ClientState& client) {
    auto c = service_->context(client, {});
    EXPECT_TRUE(c.isOk()) << c.status().toString();
    return c.isOk() ? *c : CallContext{};
  }

  TempDir tmp_;
  std::unique_ptr<GitRepo> repo_;
  HashbagEmbedder embedder_;
  std::unique_ptr<Service> service_;

 private:
  const std::string clientName_;
};

}  // namespace memq::testing
