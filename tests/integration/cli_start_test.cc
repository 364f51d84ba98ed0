// The memq command line on a cold start and as git users expect it: concurrent first calls with no memqd running
// all succeed against the one daemon the first of them started; `status` reports without starting one; per-command
// help, `--opt=value` for every option, `--json` after the command, usage lines naming every argument, the exit
// code of a refused save, the pager and colour rules.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <set>

#include "memqd_fixture.h"

namespace memq::testing {
namespace {

using json = nlohmann::json;

// The pids of running processes whose command line holds `needle` (read from /proc).
std::set<long> processesWith(const std::string& needle) {
  std::set<long> out;
  for (const auto& entry : fs::directory_iterator("/proc")) {
    const std::string name = entry.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::string cmdline = readTextFile(entry.path() / "cmdline");
    std::replace(cmdline.begin(), cmdline.end(), '\0', ' ');
    if (cmdline.find(needle) != std::string::npos && cmdline.find("memqd") != std::string::npos) {
      out.insert(std::stol(name));
    }
  }
  return out;
}

// No daemon: memq (with memqd beside it) starts one on a socket of the test's own, which the test stops.
class ColdStartTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = makeTempDir("cold");
    fs::create_directories(dir_ / "proj");
    socket_ = (dir_ / "run/memqd.sock").string();
  }
  void TearDown() override {
    // Every memqd on this socket goes, whichever started it.
    for (long pid : processesWith(socket_)) ::kill(static_cast<pid_t>(pid), SIGTERM);
    for (int i = 0; i < 300 && !processesWith(socket_).empty(); ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    fs::remove_all(dir_);
  }
  std::string env() const {
    return "cd " + shellQuote((dir_ / "proj").string()) + " && MEMQ_SOCKET=" + shellQuote(socket_) +
           " MEMQ_DATA_DIR=" + shellQuote((dir_ / "data").string()) + " ";
  }
  std::string memq() const { return shellQuote(binDir() + "/memq"); }
  fs::path dir_;
  std::string socket_;
};

TEST_F(ColdStartTest, SixteenConcurrentFirstCallsAllSucceedAgainstOneDaemon) {
  const fs::path out = dir_ / "out";
  fs::create_directories(out);
  // Sixteen `memq list` started at once, none finding a daemon: each writes its exit code, stdout and stderr.
  std::string script = "export MEMQ_SOCKET=" + shellQuote(socket_) + " MEMQ_DATA_DIR=" +
                       shellQuote((dir_ / "data").string()) + "; cd " + shellQuote((dir_ / "proj").string()) +
                       "; for i in $(seq 1 16); do (" + memq() + " --json list >" +
                       shellQuote(out.string()) + "/$i.out 2>" + shellQuote(out.string()) + "/$i.err; echo $? >" +
                       shellQuote(out.string()) + "/$i.rc) & done; wait";
  CommandResult r = runCommand(script);
  ASSERT_EQ(r.exitCode, 0) << r.err;
  for (int i = 1; i <= 16; ++i) {
    const std::string n = std::to_string(i);
    const std::string rc = readTextFile(out / (n + ".rc"));
    EXPECT_EQ(rc, "0\n") << "call " << n << " exited " << rc << ": " << readTextFile(out / (n + ".err"));
    json j = json::parse(readTextFile(out / (n + ".out")), nullptr, false);
    EXPECT_TRUE(j.is_object() && j["total"] == 0) << "call " << n << ": " << readTextFile(out / (n + ".out"));
  }
  // One daemon serves them all: the losers connected to the winner rather than starting their own.
  EXPECT_EQ(processesWith(socket_).size(), 1u);
}

TEST_F(ColdStartTest, StatusReportsThatNoDaemonRunsAndDoesNotStartOne) {
  CommandResult r = runCommand(env() + memq() + " --socket " + shellQuote(socket_) + " status");
  EXPECT_EQ(r.exitCode, 3) << r.out << r.err;
  EXPECT_TRUE(r.out.empty()) << r.out;
  EXPECT_NE(r.err.find("memqd is not running on " + socket_), std::string::npos) << r.err;
  CommandResult j = runCommand(env() + memq() + " --json status");
  EXPECT_EQ(j.exitCode, 3) << j.out << j.err;
  EXPECT_TRUE(json::parse(j.err, nullptr, false).is_object()) << j.err;
  EXPECT_FALSE(fs::exists(socket_)) << "status started a daemon";
  EXPECT_TRUE(processesWith(socket_).empty()) << "status started a daemon";
  EXPECT_FALSE(fs::exists(dir_ / "data"));

  // Once something started it, status reports it.
  ASSERT_EQ(runCommand(env() + memq() + " daemon start").exitCode, 0);
  CommandResult up = runCommand(env() + memq() + " --json status");
  EXPECT_EQ(up.exitCode, 0) << up.err;
  EXPECT_EQ(json::parse(up.out, nullptr, false)["socket"], socket_) << up.out;
}

// ---- a command line like git's ------------------------------------------------------------------------------------

class CliConventionsTest : public MemqdTest {
 protected:
  void SetUp() override {
    makeWorkDir("conv");
    fs::create_directories(project_);
    startDaemon();
  }
  CommandResult run(const std::string& args) {
    return daemon_->memq(args, project_);
  }
  // memq ARGS on a terminal (a pty from script(1)), with `env` before it; the terminal's output, \r removed.
  CommandResult onTerminal(const std::string& args, const std::string& env) {
    std::string cmd = "cd " + shellQuote(project_) + " && " + env + " MEMQ_SOCKET=" + shellQuote(daemon_->socket()) +
                      " MEMQ_DATA_DIR=" + shellQuote(daemon_->dataDir()) + " script -qec " +
                      shellQuote(shellQuote(binDir() + "/memq") + " " + args) + " /dev/null";
    CommandResult r = runCommand(cmd);
    r.out.erase(std::remove(r.out.begin(), r.out.end(), '\r'), r.out.end());
    return r;
  }
};

TEST_F(CliConventionsTest, EveryCommandHasHelpByFlagAndByHelpCommand) {
  for (const char* command : {"save", "get", "update", "list", "search", "recall", "hide", "restore", "pin", "unpin",
                              "supersede", "reject", "unreject", "purge", "attach", "detach", "hint", "cochange",
                              "blast", "refresh", "review", "audit", "export", "import", "stats", "status", "daemon",
                              "mcp", "hook", "bench"}) {
    CommandResult flag = run(std::string(command) + " --help");
    EXPECT_EQ(flag.exitCode, 0) << command << ": " << flag.err;
    EXPECT_EQ(flag.out.rfind(std::string("usage: memq ") + command, 0), 0u) << command << ": " << flag.out;
    CommandResult help = run(std::string("help ") + command);
    EXPECT_EQ(help.exitCode, 0) << command << ": " << help.err;
    EXPECT_EQ(help.out, flag.out) << command;
    EXPECT_EQ(run(std::string(command) + " -h").out, flag.out) << command;
  }
  EXPECT_NE(run("supersede --help").out.find("usage: memq supersede OLD_ID --by NEW_ID"), std::string::npos);
  EXPECT_NE(run("save --help").out.find("Exits 4"), std::string::npos);
  CommandResult unknown = run("help frobnicate");
  EXPECT_EQ(unknown.exitCode, 2);
  EXPECT_NE(unknown.err.find("unknown command 'frobnicate'"), std::string::npos) << unknown.err;
  // A --help after `--` is an argument, not a request for help.
  CommandResult literal = run("--json save -- --help");
  EXPECT_EQ(literal.exitCode, 0) << literal.err;
  EXPECT_EQ(json::parse(literal.out, nullptr, false)["status"], "created") << literal.out;
}

TEST_F(CliConventionsTest, EveryOptionTakesEqualsValueAndJsonMayFollowTheCommand) {
  CommandResult global = run("--scope=global --json save 'Scoped with an equals sign'");
  ASSERT_EQ(global.exitCode, 0) << global.err;
  EXPECT_EQ(json::parse(global.out, nullptr, false)["scope"], "global") << global.out;
  CommandResult socket = daemon_->memq("--socket=" + daemon_->socket() + " --project=" + project_ + " --json list", dir_.string());
  ASSERT_EQ(socket.exitCode, 0) << socket.err;
  EXPECT_EQ(json::parse(socket.out, nullptr, false)["total"], 1) << socket.out;
  // --json after the command, and after its options.
  CommandResult after = run("list --limit=5 --json");
  ASSERT_EQ(after.exitCode, 0) << after.err;
  EXPECT_EQ(json::parse(after.out, nullptr, false)["total"], 1) << after.out;
  CommandResult saved = run("save 'JSON after the command' --category=pref --json");
  ASSERT_EQ(saved.exitCode, 0) << saved.err;
  EXPECT_EQ(json::parse(saved.out, nullptr, false)["status"], "created") << saved.out;
  EXPECT_EQ(run("--json=yes list").exitCode, 2);
  EXPECT_EQ(run("list --color=sometimes").exitCode, 2);
}

TEST_F(CliConventionsTest, UsageErrorsNameEveryArgument) {
  CommandResult r = run("supersede abcd");
  EXPECT_EQ(r.exitCode, 2);
  EXPECT_NE(r.err.find("usage: memq supersede OLD_ID --by NEW_ID"), std::string::npos) << r.err;
  CommandResult reject = run("reject abcd");
  EXPECT_EQ(reject.exitCode, 2);
  EXPECT_NE(reject.err.find("memq reject ID --reason R"), std::string::npos) << reject.err;
  CommandResult attach = run("attach abcd");
  EXPECT_NE(attach.err.find("memq attach ID PATH[:LINES]..."), std::string::npos) << attach.err;
  CommandResult search = run("search");
  EXPECT_NE(search.err.find("[--ranker default|reference] [--explain]"), std::string::npos) << search.err;
}

TEST_F(CliConventionsTest, ASaveOfRejectedTextExitsFourAndJsonStillPrintsTheResult) {
  CommandResult first = run("--json save 'Tabs are better than spaces'");
  ASSERT_EQ(first.exitCode, 0) << first.err;
  const std::string id = json::parse(first.out)["id"];
  ASSERT_EQ(run("reject " + id + " --reason wrong").exitCode, 0);
  CommandResult human = run("save 'Tabs are better than spaces'");
  EXPECT_EQ(human.exitCode, 4) << human.out << human.err;
  EXPECT_NE(human.out.find("refused"), std::string::npos) << human.out;
  CommandResult j = run("--json save 'Tabs are better than spaces'");
  EXPECT_EQ(j.exitCode, 4) << j.err;
  EXPECT_EQ(json::parse(j.out, nullptr, false)["status"], "rejected") << j.out;
  EXPECT_EQ(json::parse(run("--json list").out)["total"], 0);  // nothing was saved
}

TEST_F(CliConventionsTest, ListsGoThroughThePagerOnATerminalOnly) {
  if (runCommand("command -v script").exitCode != 0) GTEST_SKIP() << "script(1) is needed for a terminal";
  ASSERT_EQ(run("save 'A memory to page through'").exitCode, 0);
  const std::string pager = "PAGER=" + shellQuote("sed s/^/PAGED:/") + " TERM=xterm";
  CommandResult paged = onTerminal("list", pager);
  EXPECT_EQ(paged.exitCode, 0) << paged.out << paged.err;
  EXPECT_NE(paged.out.find("PAGED:"), std::string::npos) << paged.out;
  EXPECT_NE(paged.out.find("A memory to page through"), std::string::npos) << paged.out;
  CommandResult noPager = onTerminal("list --no-pager", pager);
  EXPECT_EQ(noPager.out.find("PAGED:"), std::string::npos) << noPager.out;
  EXPECT_NE(noPager.out.find("A memory to page through"), std::string::npos) << noPager.out;
  CommandResult global = onTerminal("--no-pager list", pager);
  EXPECT_EQ(global.out.find("PAGED:"), std::string::npos) << global.out;
  CommandResult catPager = onTerminal("list", "PAGER=cat TERM=xterm");
  EXPECT_NE(catPager.out.find("A memory to page through"), std::string::npos) << catPager.out;
  // Not a terminal: no pager.
  CommandResult piped = daemon_->memq("list", project_);
  EXPECT_EQ(piped.out.find("PAGED:"), std::string::npos);
}

TEST_F(CliConventionsTest, ColourFollowsColorAndTerm) {
  if (runCommand("command -v script").exitCode != 0) GTEST_SKIP() << "script(1) is needed for a terminal";
  ASSERT_EQ(run("save 'A colourful memory'").exitCode, 0);
  const std::string esc = "\033[";
  EXPECT_NE(onTerminal("list --no-pager", "TERM=xterm").out.find(esc), std::string::npos) << "auto on a terminal";
  EXPECT_EQ(onTerminal("list --no-pager", "TERM=dumb").out.find(esc), std::string::npos) << "TERM=dumb";
  EXPECT_EQ(onTerminal("list --no-pager --color=never", "TERM=xterm").out.find(esc), std::string::npos);
  EXPECT_EQ(onTerminal("--color never list --no-pager", "TERM=xterm").out.find(esc), std::string::npos);
  EXPECT_EQ(onTerminal("list --no-pager", "TERM=xterm NO_COLOR=1").out.find(esc), std::string::npos);
  EXPECT_NE(run("list --color=always").out.find(esc), std::string::npos) << "always, even into a pipe";
  EXPECT_NE(run("--color list").out.find(esc), std::string::npos) << "--color alone is always";
  EXPECT_EQ(run("list").out.find(esc), std::string::npos) << "auto into a pipe";
}

// ---- shell completion --------------------------------------------------------------------------------------------

class CompletionTest : public CliConventionsTest {
 protected:
  std::string completions() const {
    const char* src = std::getenv("MEMQ_SOURCE_DIR");
    return (fs::path(src && *src ? src : MEMQ_TEST_SOURCE_DIR) / "packaging/completions").string();
  }
  std::string env() const {
    return "cd " + shellQuote(project_) + " && PATH=" + shellQuote(binDir()) + ":$PATH MEMQ_SOCKET=" +
           shellQuote(daemon_->socket()) + " MEMQ_DATA_DIR=" + shellQuote(daemon_->dataDir()) + " ";
  }
};

TEST_F(CompletionTest, BashCompletesSubcommandsAndTheOptionsOfEachCommand) {
  auto complete = [&](const std::string& words, int cword) {
    return runCommand(env() + "bash -c " +
                      shellQuote("source " + completions() + "/memq.bash; COMP_WORDS=(" + words + "); COMP_CWORD=" +
                                 std::to_string(cword) + "; _memq; printf '%s\\n' \"${COMPREPLY[@]}\"")).out;
  };
  EXPECT_EQ(complete("memq team ''", 2), "connect\nstatus\ndisconnect\n");
  EXPECT_EQ(complete("memq review ''", 2), "clusters\nstale\ndead\n");
  EXPECT_EQ(complete("memq save x --no-a", 3), "--no-anchor\n");
  EXPECT_EQ(complete("memq --t", 1), "--tab\n");
  EXPECT_EQ(complete("memq bench retrieval --du", 3), "--dump\n");
}

TEST_F(CompletionTest, IdsCompleteFromTheRunningDaemonAndNeverStartOne) {
  CommandResult saved = run("--json save 'Completion finds this memory'");
  ASSERT_EQ(saved.exitCode, 0) << saved.err;
  const std::string prefix = json::parse(saved.out)["id"].get<std::string>().substr(0, 8);

  CommandResult ids = run("__complete-ids");
  EXPECT_EQ(ids.exitCode, 0) << ids.err;
  EXPECT_EQ(ids.out, prefix + "\tCompletion finds this memory\n");

  const std::string bash = env() + "bash -c " +
                           shellQuote("source " + completions() + "/memq.bash; COMP_WORDS=(memq pin ''); COMP_CWORD=2; "
                                      "_memq; printf '%s\\n' \"${COMPREPLY[@]}\"");
  CommandResult b = runCommand(bash);
  EXPECT_EQ(b.out, prefix + "\n") << b.err;
  const std::string bashBy = env() + "bash -c " +
                             shellQuote("source " + completions() + "/memq.bash; COMP_WORDS=(memq supersede abcd --by ''); "
                                        "COMP_CWORD=4; _memq; printf '%s\\n' \"${COMPREPLY[@]}\"");
  EXPECT_EQ(runCommand(bashBy).out, prefix + "\n");

  if (runCommand("command -v fish").exitCode == 0) {
    CommandResult f = runCommand(env() + "fish -c " +
                                 shellQuote("source " + completions() + "/memq.fish; complete -C 'memq pin '"));
    EXPECT_NE(f.out.find(prefix + "\tCompletion finds this memory"), std::string::npos) << f.out << f.err;
  }

  // With no daemon: nothing, exit 0, and none started.
  ASSERT_EQ(daemon_->stop(), 0);
  CommandResult none = run("__complete-ids");
  EXPECT_EQ(none.exitCode, 0);
  EXPECT_TRUE(none.out.empty() && none.err.empty()) << none.out << none.err;
  EXPECT_FALSE(RpcClient::connect(daemon_->socket(), std::chrono::milliseconds(200)).isOk()) << "completion started memqd";
}

}  // namespace
}  // namespace memq::testing
