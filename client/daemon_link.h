// DaemonLink: the CLI's connection to memqd — finds the socket, starts the daemon when none answers (the memqd next
// to the memq binary, else on PATH), waits up to 5 s for it (or for the memqd another client started at the same
// moment), and sends every request with the CLI's project and scope. Connection failures are reported so the CLI
// can exit 3.
#pragma once

#include <chrono>
#include <functional>
#include <optional>
#include <string>

#include "client/rpc_client.h"

namespace memq::cli {

struct GlobalOptions {
  bool json = false;
  std::string socket;       // "" = default path
  std::string project;      // absolute project directory ("" = none)
  std::optional<std::string> scope;
  std::string clientName = "memq-cli";
  std::string source = "user";
  std::string tab;          // initialize's `tab` ("" = none): hooks name the agent session they serve
};

// Where memqd lives: next to this executable, else the name for a PATH lookup.
std::string memqdPath();

// Starts memqd detached on `socketPath` and waits for it to answer; error text on failure.
Status startDaemon(const std::string& socketPath, std::chrono::milliseconds timeout = std::chrono::seconds(5));

// An exclusive flock on SOCKET.start-lock (in the socket's private directory, created 0700 as memqd would), held
// while one client checks for a daemon and starts it: every client that starts memqd (autostart, `memq daemon start`)
// takes it, so that two never start one at the same moment. Waiting for it is bounded; without it (the directory
// cannot be made, the wait ran out) the client goes on unlocked and the backoff connect covers the race.
class StartLock {
 public:
  StartLock(const std::string& socketPath, std::chrono::milliseconds timeout);
  ~StartLock();  // releases the lock
  StartLock(const StartLock&) = delete;
  StartLock& operator=(const StartLock&) = delete;

 private:
  int fd_ = -1;
};

// Connects to `socketPath`, retrying while nobody listens yet (10 ms, doubling to 200 ms between tries) until
// `timeout` has passed: the client that lost the race to start memqd waits here for the one that won.
Result<RpcClient> connectWithBackoff(const std::string& socketPath, std::chrono::milliseconds timeout);

// For a client that found no memqd on `socketPath`: takes turns with the others that found none (StartLock), looks
// again, and starts memqd if still none answers; a memqd started some other way that won the race (another memq
// version, a script) is connected to. `step` gives each step's time. *startedHere says whether this call started it.
Result<RpcClient> startOrJoin(const std::string& socketPath, const std::function<std::chrono::milliseconds()>& step,
                              bool* startedHere = nullptr);

class DaemonLink {
 public:
  // Connects (starting the daemon when `autostart` and nobody answers) and sends initialize. `timeout` bounds the
  // connection and the daemon's start; initialize gets the usual call timeout. With a `deadline`, every step (connect,
  // start, initialize) ends by then: hooks use it so that a daemon that accepts but never answers costs no more.
  static Result<DaemonLink> open(const GlobalOptions& options, bool autostart = true,
                                 std::chrono::milliseconds timeout = std::chrono::seconds(5),
                                 std::optional<std::chrono::steady_clock::time_point> deadline = std::nullopt);
  // Calls `method`, adding project_root and scope from the options unless params already hold them.
  Result<nlohmann::json> call(const std::string& method, nlohmann::json params,
                              std::chrono::milliseconds timeout = RpcClient::kDefaultCallTimeout);
  // The same as a notification: no reply, no wait. memqd handles a connection's messages one at a time, in order,
  // so a call that follows sees its effect.
  Status notify(const std::string& method, nlohmann::json params);
  RpcClient& rpc() { return client_; }

 private:
  DaemonLink(RpcClient client, GlobalOptions options) : client_(std::move(client)), options_(std::move(options)) {}
  // params with project_root and scope from the options, unless they hold them already.
  nlohmann::json withContext(nlohmann::json params) const;
  RpcClient client_;
  GlobalOptions options_;
};

}  // namespace memq::cli
