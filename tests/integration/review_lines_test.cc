// `memq review stale` against a real memqd and a real git repository: the interactive review, run on a
// pseudo-terminal as a user runs it, shows each stale memory's anchored lines then and now (`src/a.c:4-6 → 6-8
// (moved)`) and the text a rewrite touched; a memory whose anchored lines only moved is not in the queue; and
// `memq --json review stale` carries the reply's anchored_lines as they came.
#include <gtest/gtest.h>
#include <poll.h>
#include <pty.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <functional>
#include <string>
#include <vector>

#include "memqd_fixture.h"

namespace memq::testing {
namespace {

using json = nlohmann::json;

std::string numberedLines(int n, const std::string& tag) {
  std::string out;
  for (int i = 1; i <= n; ++i) out += tag + " " + std::to_string(i) + "\n";
  return out;
}

// What a user does at the terminal: once `waitFor` has been printed (at once when empty), `before` runs (when set)
// and `type` is typed.
struct TerminalStep {
  std::string waitFor;
  std::function<void()> before;
  std::string type;
};

// Runs the memq binary with `args` in `cwd` on a pseudo-terminal (memq review refuses without one), taking `steps`
// in order, and returns what it wrote there (CRs dropped). Killed after 20 s, so a prompt left waiting fails the test.
CommandResult memqOnTerminal(const Memqd& daemon, const std::vector<std::string>& args, const std::string& cwd,
                             std::vector<TerminalStep> steps) {
  const std::string bin = binDir() + "/memq";
  int master = -1;
  const pid_t pid = ::forkpty(&master, nullptr, nullptr, nullptr);
  if (pid == 0) {
    if (::chdir(cwd.c_str()) != 0) ::_exit(126);
    ::setenv("MEMQ_SOCKET", daemon.socket().c_str(), 1);
    ::setenv("MEMQ_DATA_DIR", daemon.dataDir().c_str(), 1);
    std::vector<char*> argv{const_cast<char*>(bin.c_str())};
    for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    ::execv(bin.c_str(), argv.data());
    ::_exit(127);
  }
  CommandResult r;
  if (pid < 0) return r;
  size_t nextStep = 0;
  size_t searchedFrom = 0;  // each step waits for text printed after the previous step's
  auto takeReadySteps = [&] {
    while (nextStep < steps.size()) {
      const TerminalStep& step = steps[nextStep];
      const size_t at = step.waitFor.empty() ? searchedFrom : r.out.find(step.waitFor, searchedFrom);
      if (at == std::string::npos) return;
      searchedFrom = at + step.waitFor.size();
      if (step.before) step.before();
      if (::write(master, step.type.data(), step.type.size()) != static_cast<ssize_t>(step.type.size())) {
        r.err += "short write";
      }
      ++nextStep;
    }
  };
  takeReadySteps();
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  char buf[4096];
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      ::kill(pid, SIGKILL);
      r.err += "timed out";
      break;
    }
    pollfd p{master, POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(left.count())) <= 0) continue;
    const ssize_t n = ::read(master, buf, sizeof buf);
    if (n <= 0) break;  // EIO once the child has exited and closed the terminal
    for (ssize_t i = 0; i < n; ++i) {
      if (buf[i] != '\r') r.out += buf[i];
    }
    takeReadySteps();
  }
  ::close(master);
  int status = 0;
  ::waitpid(pid, &status, 0);
  r.exitCode = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

CommandResult memqOnTerminal(const Memqd& daemon, const std::vector<std::string>& args, const std::string& cwd,
                             const std::string& input) {
  return memqOnTerminal(daemon, args, cwd, std::vector<TerminalStep>{{"", nullptr, input}});
}

class ReviewLinesIntegrationTest : public MemqdTest {
 protected:
  void SetUp() override {
    makeWorkDir("review-lines");
    initGitRepo(project_);
    writeTextFile(fs::path(project_) / "src/a.c", numberedLines(10, "a"));
    writeTextFile(fs::path(project_) / "src/b.c", numberedLines(200, "b"));
    commitAll(project_, "start");
    startDaemon();
  }

  std::string saveWithCli(const std::string& args) {
    CommandResult saved = daemon_->memq("--json save " + args, project_);
    EXPECT_EQ(saved.exitCode, 0) << saved.err;
    return saved.exitCode == 0 ? json::parse(saved.out)["id"].get<std::string>() : "";
  }
};

TEST_F(ReviewLinesIntegrationTest, ReviewStaleShowsTheAnchoredLinesThenAndNow) {
  const std::string both = saveWithCli("'the reader rewinds here' --file src/a.c:4-6 --file src/b.c:150-152");
  ASSERT_FALSE(saveWithCli("'the header is parsed last' --file src/a.c:9-10").empty());
  // Two lines inserted at the top of src/a.c: both anchors there only move. Line 151 of src/b.c is rewritten.
  writeTextFile(fs::path(project_) / "src/a.c", "top 1\ntop 2\n" + numberedLines(10, "a"));
  std::string b;
  for (int i = 1; i <= 200; ++i) b += (i == 151 ? "rewritten " : "b ") + std::to_string(i) + "\n";
  writeTextFile(fs::path(project_) / "src/b.c", b);

  CommandResult review =
      memqOnTerminal(*daemon_, {"--color", "never", "review", "stale"}, project_, "k\nk\nk\nq\n");
  ASSERT_EQ(review.exitCode, 0) << review.out << review.err;
  EXPECT_EQ(review.err, "");
  const std::string& out = review.out;
  EXPECT_NE(out.find("(1/1)"), std::string::npos) << "only the memory with rewritten lines is stale\n" << out;
  EXPECT_NE(out.find("the reader rewinds here"), std::string::npos) << out;
  EXPECT_EQ(out.find("the header is parsed last"), std::string::npos) << out;
  // Under "changes:", one line per anchored file, the text a rewrite touched below it.
  EXPECT_NE(out.find("\nchanges:      src/a.c:4-6 → 6-8 (moved)\n"), std::string::npos) << out;
  const std::string indent(14, ' ');
  EXPECT_NE(out.find("\n" + indent + "src/b.c:150-152 → 150-152 (rewritten)\n" + indent + "  - b 151\n" + indent +
                     "  + rewritten 151\n"),
            std::string::npos)
      << out;

  // --json lists the same item, with the reply's entry as it came.
  CommandResult listed = daemon_->memq("--json review stale", project_);
  ASSERT_EQ(listed.exitCode, 0) << listed.err;
  json items = json::parse(listed.out);
  ASSERT_EQ(items.size(), 1u) << items.dump(2);
  const json& m = items[0]["memory"];
  EXPECT_EQ(m["id"], both);
  EXPECT_EQ(m["changed_files"], json({"src/b.c"}));
  ASSERT_EQ(m["anchored_lines"].size(), 2u) << m.dump(2);
  for (const auto& a : m["anchored_lines"]) {
    if (a["path"] == "src/a.c") {
      EXPECT_EQ(a["state"], "moved");
      EXPECT_EQ(a["then"]["lines"], json({{4, 6}}));
      EXPECT_EQ(a["then"]["blob"].get<std::string>().size(), 40u);
      EXPECT_EQ(a["now"]["lines"], json({{6, 8}}));
    } else {
      EXPECT_EQ(a["state"], "rewritten");
      EXPECT_EQ(a["then"]["text"], json({"b 151"}));
      EXPECT_EQ(a["now"]["text"], json({"rewritten 151"}));
    }
  }
}

// memqd going away in the middle of a review ends it with exit 3 and the error, instead of asking about every item
// left with each answer failing the same way; nothing is applied.
TEST_F(ReviewLinesIntegrationTest, AReviewWhoseDaemonGoesAwayEndsWithExit3) {
  ASSERT_FALSE(saveWithCli("'the reader rewinds here' --file src/a.c:4-6").empty());
  ASSERT_FALSE(saveWithCli("'the header is parsed last' --file src/a.c:9-10").empty());
  writeTextFile(fs::path(project_) / "src/a.c", numberedLines(3, "a") + "changed 4\nchanged 5\nchanged 6\n" +
                                                    "a 7\na 8\nchanged 9\nchanged 10\n");
  const std::string prompt = "keep, hide, pin, reject";
  CommandResult review = memqOnTerminal(*daemon_, {"--color", "never", "review", "stale"}, project_,
                                        {{"(1/2)", nullptr, ""},
                                         {prompt, [&] { daemon_->kill9(); }, "h\n"},
                                         {prompt, nullptr, "k\n"}});
  EXPECT_EQ(review.exitCode, 3) << review.out << review.err;
  EXPECT_EQ(review.out.find("(2/2)"), std::string::npos) << "the review went on\n" << review.out;
  EXPECT_NE(review.out.find("memqd"), std::string::npos) << review.out;
  EXPECT_EQ(review.out.find("done"), std::string::npos) << review.out;
}

}  // namespace
}  // namespace memq::testing
