// A real memqd for integration tests: a temp data dir, a temp socket, the built binary started in the foreground,
// and helpers to talk to it over the socket (RpcClient) or through the memq binary.
#pragma once

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "client/rpc_client.h"

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
  auto slurp = [](const std::string& p) {
    std::string s;
    if (FILE* f = std::fopen(p.c_str(), "r")) {
      char buf[4096];
      size_t n;
      while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) s.append(buf, n);
      std::fclose(f);
    }
    return s;
  };
  r.out = slurp(outPath);
  r.err = slurp(errPath);
  fs::remove(outPath);
  fs::remove(errPath);
  fs::remove(inPath);
  return r;
}

class Memqd {
 public:
  explicit Memqd(fs::path dir, std::vector<std::string> extraArgs = {}) : dir_(std::move(dir)) {
    socket_ = (dir_ / "memqd.sock").string();
    dataDir_ = (dir_ / "data").string();
    logFile_ = (dir_ / "memqd.log").string();
    extra_ = std::move(extraArgs);
  }
  ~Memqd() { stop(); }

  bool start() {
    pid_ = ::fork();
    if (pid_ == 0) {
      std::string bin = binDir() + "/memqd";
      std::vector<std::string> args = {bin, "--foreground", "--socket", socket_, "--data-dir", dataDir_,
                                       "--log-file", logFile_};
      for (const auto& a : extra_) args.push_back(a);
      std::vector<char*> argv;
      for (auto& a : args) argv.push_back(a.data());
      argv.push_back(nullptr);
      ::execv(bin.c_str(), argv.data());
      std::_Exit(127);
    }
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (std::chrono::steady_clock::now() < deadline) {
      auto c = RpcClient::connect(socket_, std::chrono::milliseconds(200));
      if (c) return true;
      int status = 0;
      if (::waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = -1;
        return false;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return false;
  }

  // SIGTERM and wait; returns the exit status (or -1).
  int stop() {
    if (pid_ <= 0) return -1;
    ::kill(pid_, SIGTERM);
    return waitExit();
  }
  void kill9() {
    if (pid_ <= 0) return;
    ::kill(pid_, SIGKILL);
    waitExit();
  }
  int waitExit(std::chrono::seconds timeout = std::chrono::seconds(15)) {
    auto deadline = std::chrono::steady_clock::now() + timeout;
    int status = 0;
    while (std::chrono::steady_clock::now() < deadline) {
      pid_t r = ::waitpid(pid_, &status, WNOHANG);
      if (r == pid_) {
        pid_ = -1;
        return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, &status, 0);
    pid_ = -1;
    return -1;
  }
  bool running() {
    if (pid_ <= 0) return false;
    int status = 0;
    return ::waitpid(pid_, &status, WNOHANG) == 0;
  }

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
  std::string log() const {
    std::string s;
    if (FILE* f = std::fopen(logFile_.c_str(), "r")) {
      char buf[4096];
      size_t n;
      while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) s.append(buf, n);
      std::fclose(f);
    }
    return s;
  }

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
  fs::path dir_;
  std::string socket_;
  std::string dataDir_;
  std::string logFile_;
  std::vector<std::string> extra_;
  pid_t pid_ = -1;
  std::string session_;
};

}  // namespace memq::testing
