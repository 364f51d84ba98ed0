// RpcClient: a blocking JSON-RPC 2.0 client for memqd over its Unix socket, NDJSON framing. Owns one connection, the
// request id counter, the notifications that arrive while a call waits for its reply, and how long the connection's
// recent replies took (the waits for the reads an agent waits on end awake, see call()). Used by the memq CLI (and
// its MCP bridge) and by integration tests (which also use the raw send/read calls to speak hostile bytes to the
// daemon).
//
// Transport failures (cannot connect, timeout, connection closed, I/O error) are InternalError statuses whose data
// carries {"transport": "connect" | "timeout" | "closed" | "io"}; isConnectError / isTransportError tell them apart
// from errors the daemon answered with, so the CLI can exit 3 rather than 1.
//
// Thread-safety: none. One RpcClient is used by one thread at a time; moving it transfers the connection.
#pragma once

#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "protocol/status.h"

namespace memq {

class RpcClient {
 public:
  static constexpr std::chrono::milliseconds kDefaultCallTimeout{30000};
  // Replies can be far larger than a request (export): the client's own bound on one incoming line.
  static constexpr std::size_t kMaxReplyBytes = std::size_t{256} << 20;

  // Connects to the Unix stream socket at socketPath, retrying while the daemon's accept backlog is full, for at most
  // timeout. A missing socket or no listener fails at once with isConnectError(status) true.
  static Result<RpcClient> connect(const std::string& socketPath, std::chrono::milliseconds timeout);

  RpcClient(RpcClient&& other) noexcept;
  RpcClient& operator=(RpcClient&& other) noexcept;
  RpcClient(const RpcClient&) = delete;
  RpcClient& operator=(const RpcClient&) = delete;
  ~RpcClient();

  // Sends a request with the next id and waits for its reply: the result, or the Status of the JSON-RPC error object
  // (code → ErrorCode, message, data). Notifications that arrive meanwhile are kept for readMessage(). params null →
  // the request carries no "params". An error reply with a null id (the daemon could not read our request) also ends
  // the wait, since this client has only one request in flight.
  // For memory/recall, memory/search and the hints methods, once the connection has seen a reply to the method that
  // took between 0.15 and 20 ms, the wait sleeps for 70% of the method's average reply time and then reads the socket
  // without sleeping until that time has passed by half of itself (at most 0.4 ms more), then sleeps again.
  Result<nlohmann::json> call(const std::string& method, nlohmann::json params,
                              std::chrono::milliseconds timeout = kDefaultCallTimeout);

  // Sends a notification (no id, no reply).
  Status notify(const std::string& method, nlohmann::json params);

  // The next incoming message as raw JSON: queued notifications first, then whatever the daemon sends next.
  Result<nlohmann::json> readMessage(std::chrono::milliseconds timeout);

  // Writes bytes exactly as given (no framing added), for tests of malformed input.
  Status sendRaw(std::string_view bytes);

  // The next line the daemon sent, without its "\n" (and without a trailing "\r"). Bypasses the notification queue.
  Result<std::string> readRawLine(std::chrono::milliseconds timeout);

  // Half-closes the sending side (shutdown(SHUT_WR)), so the daemon sees end-of-input while replies can still arrive.
  Status closeWrite();

  bool isOpen() const { return fd_ >= 0; }
  // How long, in microseconds, this connection's recent replies to `method` took (a moving average of the round
  // trips), or nullopt before the first. Kept for the methods whose replies the client waits for awake at the end
  // (see call()).
  std::optional<double> expectedReplyMicros(const std::string& method) const;
  // Whether those waits end awake (the default); off, every wait sleeps until the reply comes (memq_bench_daemon
  // compares the two).
  void setAwakeWaits(bool on) { awakeWaits_ = on; }
  const std::string& socketPath() const { return socketPath_; }
  std::int64_t lastId() const { return nextId_ - 1; }

 private:
  RpcClient(int fd, std::string socketPath);
  void close();
  Status writeAll(std::string_view bytes, std::chrono::steady_clock::time_point deadline);
  // Reads until readBuffer_ holds a whole line; returns its length without the '\n'. The line stays at the front of
  // the buffer until consumeLine().
  Result<std::size_t> awaitLine(std::chrono::steady_clock::time_point deadline);
  void consumeLine();  // drops the line awaitLine found, and its '\n'
  Result<std::string> readLine(std::chrono::steady_clock::time_point deadline);
  Result<nlohmann::json> readJson(std::chrono::steady_clock::time_point deadline);
  Status transportError(const std::string& kind, const std::string& message) const;
  // The wait for a reply, awake at its end: until sleepUntil asleep (the reply, if it comes, ends the sleep), then
  // reading the socket without sleeping until pollUntil.
  struct AwakeWait {
    std::chrono::steady_clock::time_point sleepUntil;
    std::chrono::steady_clock::time_point pollUntil;
  };
  // Runs `wait`; true once it has read bytes into readBuffer_, false when they must be waited for as usual (the
  // wait ran out, or the socket has an error or its end, which the usual read reports).
  bool readWithinAwakeWait(const AwakeWait& wait);
  void noteReplyTime(const std::string& method, double micros);

  int fd_ = -1;
  std::string socketPath_;
  std::int64_t nextId_ = 1;
  std::string readBuffer_;
  // Bytes of readBuffer_ already searched for '\n', so a huge reply is scanned once; once awaitLine has found a
  // line, the length of that line and its '\n'.
  std::size_t scanned_ = 0;
  std::deque<nlohmann::json> pending_;  // notifications (and stray replies) read while waiting for a reply
  std::map<std::string, double, std::less<>> replyMicros_;  // see expectedReplyMicros
  std::optional<AwakeWait> awakeWait_;  // for the current call's first wait only
  bool awakeWaits_ = true;
};

// True when the status says the daemon could not be reached at all (no socket, nobody listening, bad path).
bool isConnectError(const Status& status);
// True when the connect failed because no memqd serves the socket (no socket file, or nobody accepting on it), as
// opposed to one memq may not reach (permissions, a timeout).
bool isNobodyListening(const Status& status);
// True for any transport failure of RpcClient (connect, timeout, closed connection, I/O), as opposed to an error reply.
bool isTransportError(const Status& status);

}  // namespace memq
