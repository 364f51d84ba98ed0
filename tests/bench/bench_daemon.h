// A memqd child process for the benchmark programs that talk to a real daemon over its socket (memq_bench_daemon,
// memq_bench_team --recall): started in the foreground with a temp socket and data dir, SIGTERMed and reaped on
// destruction; and what a benchmark reads about it from /proc (CPU seconds used, resident memory).
#pragma once

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "client/rpc_client.h"

namespace memq::bench {

class Daemon {
 public:
  // `extraArgs` follow memqd's own (a setting under study, such as --hot-poll-us 0).
  Daemon(std::string bin, std::filesystem::path dir, std::string logLevel, std::vector<std::string> extraArgs = {})
      : bin_(std::move(bin)), dir_(std::move(dir)), logLevel_(std::move(logLevel)), extraArgs_(std::move(extraArgs)) {}
  ~Daemon() { stop(); }
  Daemon(const Daemon&) = delete;
  Daemon& operator=(const Daemon&) = delete;

  // Forks memqd and waits (up to 10 s) until its socket answers; false when it exited or never answered.
  bool start() {
    socket_ = (dir_ / "memqd.sock").string();
    pid_ = ::fork();
    if (pid_ == 0) {
      std::vector<std::string> args = {bin_, "--foreground", "--socket", socket_, "--data-dir", dataDir().string(),
                                       "--log-file", (dir_ / "memqd.log").string(), "--log-level", logLevel_};
      args.insert(args.end(), extraArgs_.begin(), extraArgs_.end());
      std::vector<char*> argv;
      for (auto& a : args) argv.push_back(a.data());
      argv.push_back(nullptr);
      ::execv(bin_.c_str(), argv.data());
      std::_Exit(127);
    }
    for (int i = 0; i < 500; ++i) {
      if (memq::RpcClient::connect(socket_, std::chrono::milliseconds(100))) return true;
      int status = 0;
      if (::waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = -1;
        return false;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return false;
  }
  void stop() {
    if (pid_ <= 0) return;
    ::kill(pid_, SIGTERM);
    int status = 0;
    ::waitpid(pid_, &status, 0);
    pid_ = -1;
  }
  const std::string& socket() const { return socket_; }
  std::filesystem::path dataDir() const { return dir_ / "data"; }
  pid_t pid() const { return pid_; }

 private:
  std::string bin_;
  std::filesystem::path dir_;
  std::string logLevel_;
  std::vector<std::string> extraArgs_;
  std::string socket_;
  pid_t pid_ = -1;
};

// CPU seconds (user + system) a process has used so far, from /proc/<pid>/stat.
inline double processCpuSeconds(pid_t pid) {
  FILE* f = std::fopen(("/proc/" + std::to_string(pid) + "/stat").c_str(), "r");
  if (!f) return 0;
  char buf[4096];
  size_t len = std::fread(buf, 1, sizeof buf - 1, f);
  std::fclose(f);
  buf[len] = '\0';
  const char* p = std::strrchr(buf, ')');  // the command name may hold spaces
  if (!p) return 0;
  unsigned long utime = 0, stime = 0;
  // Fields after ")": state ppid pgrp session tty_nr tpgid flags minflt cminflt majflt cmajflt utime stime.
  if (std::sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", &utime, &stime) != 2) return 0;
  return static_cast<double>(utime + stime) / static_cast<double>(::sysconf(_SC_CLK_TCK));
}

// A process's resident memory (VmRSS) in MiB, 0 when it cannot be read.
inline double processRssMiB(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("VmRSS:", 0) == 0) return std::strtod(line.c_str() + 6, nullptr) / 1024.0;
  }
  return 0;
}

}  // namespace memq::bench
