// A real memqd for integration tests: a temp data dir, a temp socket, the built binary started in the foreground,
// and helpers to talk to it over the socket (RpcClient) or through the memq binary; MemqdTest, the fixture that
// gives a test a temp dir, a project path and such a daemon; and the files, shell and git helpers those tests share.
#pragma once

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "client/rpc_client.h"
#include "protocol/method_schemas.h"
#include "protocol/schema_validator.h"

namespace memq::testing {

namespace fs = std::filesystem;

inline std::string binDir() {
  const char* d = std::getenv("MEMQ_BIN_DIR");
  return d ? d : "build/bin";
}

inline fs::path makeTempDir(const std::string& tag) {
  // Short: socket paths must fit in sun_path (108 bytes).
  fs::path dir = fs::path("/tmp") / ("mq-" + tag + "-" + std::to_string(::getpid()) + "-" +
                                     std::to_string(std::random_device{}() % 100000));
  fs::create_directories(dir);
  return dir;
}

// A string quoted for /bin/sh: single quotes, with embedded ones escaped.
// A Unix socket bound at `path` and listening, its connections in the kernel's backlog until accepted: a stand-in for
// a daemon that hangs, or that answers as a test scripts it. -1 when it cannot be made.
inline int listeningUnixSocket(const std::string& path) {
  const int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
  if (fd < 0) return -1;
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::snprintf(addr.sun_path, sizeof addr.sun_path, "%s", path.c_str());
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 || ::listen(fd, 64) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

inline std::string shellQuote(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

// Writes `text` to `p`, creating its parent directories.
inline void writeTextFile(const fs::path& p, const std::string& text) {
  fs::create_directories(p.parent_path());
  std::ofstream(p) << text;
}

// The number that one field of a /proc status file starts with (VmRSS, voluntary_ctxt_switches, ...); -1 when
// absent.
inline long procStatusField(const fs::path& statusFile, const std::string& field) {
  std::ifstream in(statusFile);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(field + ":", 0) == 0) return std::stol(line.substr(field.size() + 1));
  }
  return -1;
}

// One field of /proc/<pid>/status in KiB (VmRSS, RssAnon, ...); -1 when absent.
inline long procStatusKib(pid_t pid, const std::string& field) {
  return procStatusField("/proc/" + std::to_string(pid) + "/status", field);
}

// Every byte of `p`, or "" when it cannot be read.
inline std::string readTextFile(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream bytes;
  bytes << in.rdbuf();
  return bytes.str();
}

// git in `root` with a fixed identity and no signing, so commits work on any machine; fails the test on error.
inline void runGit(const fs::path& root, const std::string& args) {
  std::string cmd = "git -C " + shellQuote(root.string()) +
                    " -c user.name=memq-test -c user.email=test@memq -c commit.gpgsign=false " + args +
                    " >/dev/null 2>&1";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
}

// An empty repository at `root` (created if missing) whose first branch is main.
inline void initGitRepo(const fs::path& root) {
  fs::create_directories(root);
  std::string cmd = "git -c init.defaultBranch=main init -q " + shellQuote(root.string());
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
}

// Commits everything in the work tree of `root`.
inline void commitAll(const fs::path& root, const std::string& message) {
  runGit(root, "add -A");
  runGit(root, "commit -q -m " + shellQuote(message));
}

struct CommandResult {
  int exitCode = -1;
  std::string out;
  std::string err;
};

// Runs a shell command line, capturing stdout and stderr.
inline CommandResult runCommand(const std::string& cmd, const std::string& input = "") {
  static int counter = 0;
  fs::path tmp = fs::temp_directory_path() / ("memq-cmd-" + std::to_string(::getpid()) + "-" + std::to_string(++counter));
  std::string outPath = tmp.string() + ".out", errPath = tmp.string() + ".err", inPath = tmp.string() + ".in";
  {
    FILE* f = std::fopen(inPath.c_str(), "w");
    std::fwrite(input.data(), 1, input.size(), f);
    std::fclose(f);
  }
  std::string full = "(" + cmd + ") <" + inPath + " >" + outPath + " 2>" + errPath;
  int rc = std::system(full.c_str());
  CommandResult r;
  r.exitCode = WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
  r.out = readTextFile(outPath);
  r.err = readTextFile(errPath);
  fs::remove(outPath);
  fs::remove(errPath);
  fs::remove(inPath);
  return r;
}

// How a test starts memqd: the socket (default: memqd.sock in the test's dir), extra flags, something done in the
// child before exec (a lowered descriptor limit, an inherited listening socket), whether it runs --foreground, and
// whether its stderr goes to a file the test reads (stderrText) instead of the test's own.
struct MemqdLaunch {
  std::string socket;
  std::vector<std::string> extraArgs;
  std::function<void()> inChild;
  bool foreground = true;
  bool captureStderr = false;
};

// A memqd the test owns: data dir, log and (optionally) stderr in the test's dir; stopped (SIGTERM, then SIGKILL)
// when it leaves scope.
class Memqd {
 public:
  explicit Memqd(fs::path dir, std::vector<std::string> extraArgs = {}) : Memqd(std::move(dir), MemqdLaunch{}) {
    launch_.extraArgs = std::move(extraArgs);
  }
  Memqd(fs::path dir, MemqdLaunch launch) : dir_(std::move(dir)), launch_(std::move(launch)) {
    socket_ = launch_.socket.empty() ? (dir_ / "memqd.sock").string() : launch_.socket;
    dataDir_ = (dir_ / "data").string();
    logFile_ = (dir_ / "memqd.log").string();
  }
  ~Memqd() { stop(); }
  Memqd(const Memqd&) = delete;
  Memqd& operator=(const Memqd&) = delete;

  // Forks and execs memqd without waiting for it.
  void spawn() {
    const std::string errPath = stderrPath();
    pid_ = ::fork();
    if (pid_ == 0) {
      if (launch_.inChild) launch_.inChild();
      if (launch_.captureStderr) {
        int err = ::open(errPath.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
        if (err >= 0) ::dup2(err, 2);
      }
      std::string bin = binDir() + "/memqd";
      std::vector<std::string> args = {bin, "--socket", socket_, "--data-dir", dataDir_, "--log-file", logFile_};
      if (launch_.foreground) args.push_back("--foreground");
      for (const auto& a : launch_.extraArgs) args.push_back(a);
      std::vector<char*> argv;
      for (auto& a : args) argv.push_back(a.data());
      argv.push_back(nullptr);
      ::execv(bin.c_str(), argv.data());
      std::_Exit(127);
    }
  }

  // Spawns memqd; true once it accepts on its socket, false when it exited first (exitCode() says how) or did not
  // answer within 15 s.
  bool start() {
    spawn();
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(15);
    while (std::chrono::steady_clock::now() < deadline) {
      if (reaped()) return false;
      if (RpcClient::connect(socket_, std::chrono::milliseconds(200))) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return false;
  }

  // SIGTERM and wait up to 15 s (then SIGKILL); returns the exit status (or -1 when it had to be killed).
  int stop() {
    if (pid_ <= 0) return exitCode_;
    ::kill(pid_, SIGTERM);
    int code = waitExit(std::chrono::seconds(15));
    if (code == -1) kill9();
    return code;
  }
  void kill9() {
    if (pid_ <= 0) return;
    ::kill(pid_, SIGKILL);
    int status = 0;
    ::waitpid(pid_, &status, 0);
    pid_ = -1;
  }
  // Waits for it to exit on its own: its exit code (128 + signal when a signal ended it), or -1 when it is still
  // running after `timeout`.
  int waitExit(std::chrono::milliseconds timeout = std::chrono::seconds(15)) {
    if (pid_ <= 0) return exitCode_;
    auto deadline = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < deadline) {
      if (reaped()) return exitCode_;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return -1;
  }
  bool running() { return pid_ > 0 && !reaped(); }
  // The exit code of a memqd that exited (-1 while it runs or before it started).
  int exitCode() const { return exitCode_; }

  RpcClient connect() {
    auto c = RpcClient::connect(socket_, std::chrono::seconds(5));
    EXPECT_TRUE(c.isOk()) << c.status().toString();
    return std::move(*c);
  }
  // A connection that called initialize for `projectRoot`.
  RpcClient client(const std::string& projectRoot, const std::string& name = "test", nlohmann::json extra = {}) {
    RpcClient c = connect();
    nlohmann::json params = {{"client_name", name}};
    if (!projectRoot.empty()) params["project_root"] = projectRoot;
    if (extra.is_object()) params.update(extra);
    auto r = c.call("initialize", params);
    EXPECT_TRUE(r.isOk()) << r.status().toString();
    if (r) session_ = (*r)["session"].get<std::string>();
    return c;
  }
  std::string log() const { return readTextFile(logFile_); }
  const std::string& logPath() const { return logFile_; }
  // What memqd wrote on stderr (MemqdLaunch::captureStderr).
  std::string stderrText() const { return readTextFile(stderrPath()); }

  // Runs the memq binary against this daemon.
  CommandResult memq(const std::string& args, const std::string& cwd = "", const std::string& input = "") const {
    std::string cmd = (cwd.empty() ? "" : "cd '" + cwd + "' && ") + "MEMQ_SOCKET='" + socket_ + "' MEMQ_DATA_DIR='" +
                      dataDir_ + "' '" + binDir() + "/memq' " + args;
    return runCommand(cmd, input);
  }

  const std::string& socket() const { return socket_; }
  const std::string& dataDir() const { return dataDir_; }
  const std::string& lastSession() const { return session_; }
  pid_t pid() const { return pid_; }

 private:
  std::string stderrPath() const { return (dir_ / "memqd.stderr").string(); }
  // Reaps the child if it has exited, recording its exit code.
  bool reaped() {
    int status = 0;
    if (pid_ <= 0) return true;
    if (::waitpid(pid_, &status, WNOHANG) != pid_) return false;
    pid_ = -1;
    exitCode_ = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    return true;
  }

  fs::path dir_;
  MemqdLaunch launch_;
  std::string socket_;
  std::string dataDir_;
  std::string logFile_;
  pid_t pid_ = -1;
  int exitCode_ = -1;
  std::string session_;
};

// Stops, when it leaves scope, the memqd whose pid file is `pidFile`: one that memq started detached (autostart),
// which no Memqd owns. Even a failed ASSERT leaves no daemon running after the test.
struct AutostartedMemqdReaper {
  fs::path pidFile;
  ~AutostartedMemqdReaper() {
    std::ifstream in(pidFile);
    long pid = 0;
    if (!(in >> pid) || pid <= 0 || ::kill(static_cast<pid_t>(pid), SIGTERM) != 0) return;
    for (int i = 0; i < 500 && ::kill(static_cast<pid_t>(pid), 0) == 0; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }
};

// A test with its own temp dir (dir_), a project path inside it (project_, left for the test to fill) and a real
// memqd on that dir (daemon_), stopped and the dir removed after the test. A suite's SetUp calls makeWorkDir, fills
// the project its own way, then startDaemon; a suite whose tests need different daemon flags calls them per test.
class MemqdTest : public ::testing::Test {
 protected:
  void TearDown() override {
    daemon_.reset();
    if (!dir_.empty()) fs::remove_all(dir_);
  }

  // A fresh temp dir whose name carries `tag`; project_ is its "proj" subdirectory, not yet created.
  void makeWorkDir(const std::string& tag) {
    dir_ = makeTempDir(tag);
    project_ = (dir_ / "proj").string();
  }
  // memqd on dir_ with `extraArgs`; a daemon that does not come up fails the test with its log.
  void startDaemon(std::vector<std::string> extraArgs = {}) {
    daemon_ = std::make_unique<Memqd>(dir_, std::move(extraArgs));
    ASSERT_TRUE(daemon_->start()) << daemon_->log();
  }
  // memory/save in the project over a new connection; the new memory's id, or "" (and a failure) when refused.
  std::string save(const nlohmann::json& params) {
    RpcClient c = daemon_->client(project_);
    auto r = c.call("memory/save", params);
    EXPECT_TRUE(r.isOk()) << r.status().toString();
    return r ? (*r)["id"].get<std::string>() : "";
  }

  fs::path dir_;
  std::string project_;
  std::unique_ptr<Memqd> daemon_;
};

// `result` is what the method's result schema (schema/methods/) allows.
inline void expectMatchesResultSchema(const std::string& method, const nlohmann::json& result) {
  const MethodSchema* schema = findMethodSchema(method);
  ASSERT_NE(schema, nullptr) << method;
  Status st = validateParams(schema->result, result);
  EXPECT_TRUE(st.isOk()) << method << ": " << st.message() << "\n" << result.dump();
}

}  // namespace memq::testing
