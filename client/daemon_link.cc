// The CLI's daemon connection and autostart; see daemon_link.h.
#include "client/daemon_link.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>
#include <filesystem>
#include <thread>

#include "protocol/socket_path.h"

namespace memq::cli {

std::string memqdPath() {
  char buf[PATH_MAX];
  ssize_t n = ::readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n > 0) {
    buf[n] = '\0';
    auto candidate = std::filesystem::path(buf).parent_path() / "memqd";
    if (::access(candidate.c_str(), X_OK) == 0) return candidate.string();
  }
  return "memqd";
}

Status startDaemon(const std::string& socketPath, std::chrono::milliseconds timeout) {
  std::string bin = memqdPath();
  int errPipe[2];
  if (::pipe2(errPipe, O_CLOEXEC) != 0) return Status(ErrorCode::kInternalError, std::string("pipe: ") + std::strerror(errno));
  pid_t pid = ::fork();
  if (pid < 0) return Status(ErrorCode::kInternalError, std::string("fork: ") + std::strerror(errno));
  if (pid == 0) {
    // Only fd 2 may keep the pipe open (dup2 clears CLOEXEC on it), or the read below never sees end-of-file.
    ::dup2(errPipe[1], 2);
    int devnull = ::open("/dev/null", O_RDWR);
    if (devnull >= 0) {
      ::dup2(devnull, 0);
      ::dup2(devnull, 1);
    }
    std::string sock = socketPath;
    char* argv[] = {bin.data(), const_cast<char*>("--socket"), sock.data(), nullptr};
    ::execvp(bin.c_str(), argv);
    std::fprintf(stderr, "cannot run %s: %s", bin.c_str(), std::strerror(errno));
    std::_Exit(127);
  }
  ::close(errPipe[1]);
  // memqd forks itself into the background and its first process exits once it is listening (or failed).
  std::string err;
  char buf[512];
  ssize_t n;
  while ((n = ::read(errPipe[0], buf, sizeof buf)) > 0) err.append(buf, static_cast<size_t>(n));
  ::close(errPipe[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    while (!err.empty() && (err.back() == '\n' || err.back() == ' ')) err.pop_back();
    return Status(ErrorCode::kInternalError, "could not start memqd (" + bin + ")" + (err.empty() ? "" : ": " + err));
  }
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    auto c = RpcClient::connect(socketPath, std::chrono::milliseconds(200));
    if (c) return Status::ok();
    std::this_thread::sleep_for(std::chrono::milliseconds(25));
  }
  return Status(ErrorCode::kInternalError, "memqd started but " + socketPath + " did not answer within " +
                                               std::to_string(timeout.count() / 1000) + " s");
}

StartLock::StartLock(const std::string& socketPath, std::chrono::milliseconds timeout) {
  std::error_code ec;
  const auto dir = std::filesystem::path(socketPath).parent_path();
  if (!dir.empty() && !std::filesystem::exists(dir, ec)) {
    const mode_t old = ::umask(077);
    std::filesystem::create_directories(dir, ec);
    ::umask(old);
  }
  fd_ = ::open((socketPath + ".start-lock").c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (fd_ < 0) return;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
    if (errno != EWOULDBLOCK || std::chrono::steady_clock::now() >= deadline) {
      ::close(fd_);
      fd_ = -1;
      return;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

StartLock::~StartLock() {
  if (fd_ >= 0) ::close(fd_);  // closing releases the lock
}

Result<RpcClient> connectWithBackoff(const std::string& socketPath, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  auto pause = std::chrono::milliseconds(10);
  for (;;) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    auto c = RpcClient::connect(socketPath, std::clamp(left, std::chrono::milliseconds(1), std::chrono::milliseconds(500)));
    if (c || !isConnectError(c.status())) return c;
    left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left <= std::chrono::milliseconds(0)) return c;
    std::this_thread::sleep_for(std::min(pause, left));
    pause = std::min(pause * 2, std::chrono::milliseconds(200));
  }
}

Result<RpcClient> startOrJoin(const std::string& socketPath, const std::function<std::chrono::milliseconds()>& step,
                              bool* startedHere) {
  StartLock lock(socketPath, step());
  auto c = RpcClient::connect(socketPath, step());
  if (c || !isConnectError(c.status())) return c;
  Status started = startDaemon(socketPath, step());
  if (started) {
    if (startedHere) *startedHere = true;
    return RpcClient::connect(socketPath, step());
  }
  if (std::filesystem::exists(socketPath)) {
    // A memqd started some other way won the race: ours refused to start ("another memqd is already serving") or
    // the socket is bound but not yet listening. Connect to the winner.
    if (auto winner = connectWithBackoff(socketPath, step())) return winner;
  }
  return Status(ErrorCode::kInternalError, started.message(),
                nlohmann::json{{"transport", "connect"}, {"socket", socketPath}});
}

Result<DaemonLink> DaemonLink::open(const GlobalOptions& options, bool autostart, std::chrono::milliseconds timeout,
                                    std::optional<std::chrono::steady_clock::time_point> deadline) {
  // The time a step may take: `usual`, cut to what is left before the deadline (at least 1 ms).
  auto bounded = [&](std::chrono::milliseconds usual) {
    if (!deadline) return usual;
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(*deadline - std::chrono::steady_clock::now());
    return std::clamp(left, std::chrono::milliseconds(1), usual);
  };
  std::string socket = options.socket.empty() ? defaultSocketPath() : options.socket;
  auto c = RpcClient::connect(socket, bounded(timeout));
  if (!c && isConnectError(c.status()) && autostart) {
    // Clients that find no daemon at the same moment (two agent tabs, an MCP server and a hook) take turns: the
    // first starts memqd, the others find it answering once they hold the lock.
    c = startOrJoin(socket, [&] { return bounded(timeout); });
  }
  if (!c) return c.status();
  nlohmann::json init = {{"client_name", options.clientName}, {"client_version", "0.1.0"}, {"source", options.source}};
  if (!options.project.empty()) init["project_root"] = options.project;
  if (!options.tab.empty()) init["tab"] = options.tab;
  auto r = c->call("initialize", init, bounded(RpcClient::kDefaultCallTimeout));
  if (!r && !isTransportError(r.status()) && init.contains("tab")) {
    // A memqd older than `tab` refuses it as an unknown param: go on without shared hint state.
    const auto& data = r.status().data();
    if (data.is_object() && data.value("field", std::string()) == "tab") {
      init.erase("tab");
      r = c->call("initialize", init, bounded(RpcClient::kDefaultCallTimeout));
    }
  }
  if (!r) {
    // A daemon that did not answer (timeout, closed connection) will not answer a second try either.
    if (isTransportError(r.status())) return r.status();
    // A project that cannot be opened should not stop commands that do not need it (global scope, status).
    init.erase("project_root");
    r = c->call("initialize", init, bounded(RpcClient::kDefaultCallTimeout));
    if (!r) return r.status();
  }
  return DaemonLink(std::move(*c), options);
}

nlohmann::json DaemonLink::withContext(nlohmann::json params) const {
  if (!params.is_object()) params = nlohmann::json::object();
  if (!options_.project.empty() && !params.contains("project_root")) params["project_root"] = options_.project;
  if (options_.scope && !params.contains("scope")) params["scope"] = *options_.scope;
  return params;
}

Result<nlohmann::json> DaemonLink::call(const std::string& method, nlohmann::json params,
                                        std::chrono::milliseconds timeout) {
  return client_.call(method, withContext(std::move(params)), timeout);
}

Status DaemonLink::notify(const std::string& method, nlohmann::json params) {
  return client_.notify(method, withContext(std::move(params)));
}

}  // namespace memq::cli
