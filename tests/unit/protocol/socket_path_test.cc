// The socket location rule of docs/protocol.md "Transport".
#include "protocol/socket_path.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <optional>
#include <string>

namespace memq {
namespace {

TEST(SocketPath, MemqSocketWins) {
  EXPECT_EQ(socketPathFor("/x/y.sock", "/run/user/1000", 1000), "/x/y.sock");
}

TEST(SocketPath, XdgRuntimeDirIsNext) {
  EXPECT_EQ(socketPathFor(nullptr, "/run/user/1000", 1000), "/run/user/1000/memq/memqd.sock");
  EXPECT_EQ(socketPathFor("", "/run/user/1000/", 1000), "/run/user/1000/memq/memqd.sock");
}

TEST(SocketPath, TmpWithUidIsTheFallback) {
  EXPECT_EQ(socketPathFor(nullptr, nullptr, 1000), "/tmp/memq-1000/memqd.sock");
  EXPECT_EQ(socketPathFor("", "", 0), "/tmp/memq-0/memqd.sock");
}

// Restores an environment variable when the test ends.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = ::getenv(name)) old_ = old;
    if (value) ::setenv(name, value, 1); else ::unsetenv(name);
  }
  ~ScopedEnv() {
    if (old_) ::setenv(name_, old_->c_str(), 1); else ::unsetenv(name_);
  }

 private:
  const char* name_;
  std::optional<std::string> old_;
};

TEST(SocketPath, DefaultReadsTheEnvironment) {
  {
    ScopedEnv socket("MEMQ_SOCKET", "/tmp/custom.sock");
    EXPECT_EQ(defaultSocketPath(), "/tmp/custom.sock");
  }
  ScopedEnv socket("MEMQ_SOCKET", nullptr);
  {
    ScopedEnv runtime("XDG_RUNTIME_DIR", "/run/user/42");
    EXPECT_EQ(defaultSocketPath(), "/run/user/42/memq/memqd.sock");
  }
  ScopedEnv runtime("XDG_RUNTIME_DIR", nullptr);
  EXPECT_EQ(defaultSocketPath(), "/tmp/memq-" + std::to_string(::getuid()) + "/memqd.sock");
}

// The suite's own guard (tests/CMakeLists.txt): under ctest every test has a home of its own, so the default socket
// and data directory of a daemon a test starts without naming them are the sandbox's, never the user's.
TEST(TestEnvironment, TestsRunInAHomeOfTheirOwnWithoutTheCallersSocketOrDataDirectory) {
  if (std::getenv("MEMQ_TEST_SANDBOX") == nullptr) GTEST_SKIP() << "not run by ctest (MEMQ_TEST_SANDBOX is unset)";
  const char* sandbox = std::getenv("MEMQ_TEST_HOME");
  ASSERT_NE(sandbox, nullptr) << "ctest ran this test without its env(1) executor (tests/CMakeLists.txt)";
  const std::string home = sandbox;
  auto env = [](const char* name) { return std::string(std::getenv(name) ? std::getenv(name) : "(unset)"); };
  EXPECT_EQ(env("HOME"), home);
  EXPECT_EQ(env("XDG_DATA_HOME"), home + "/data");
  EXPECT_EQ(env("XDG_CONFIG_HOME"), home + "/config");
  EXPECT_EQ(env("MEMQ_SOCKET"), "(unset)");
  EXPECT_EQ(env("MEMQ_DATA_DIR"), "(unset)");
  EXPECT_EQ(defaultSocketPath(), home + "/run/memq/memqd.sock");
}

}  // namespace
}  // namespace memq
