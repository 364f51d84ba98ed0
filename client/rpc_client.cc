// RpcClient: blocking NDJSON JSON-RPC over a Unix socket (see rpc_client.h).
#include "client/rpc_client.h"

#include <poll.h>
#include <sched.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <ctime>
#include <thread>
#include <utility>

#include "protocol/envelope.h"

namespace memq {
namespace {

using Clock = std::chrono::steady_clock;

// Replies echo stored data, which the daemon parsed with the 64-level limit; allow some room above it.
constexpr int kMaxReplyDepth = 256;

// The waits for a reply that end awake (see RpcClient::call): the reads an agent waits on. Not memory/save: while a
// save's reply is on its way, memqd's save applier wants the other core, and a client polling it slowed a stream of
// saves (docs/performance.md).
constexpr std::array<std::string_view, 4> kAwakeWaitMethods = {"memory/recall", "memory/search", "hints/for_tool",
                                                               "hints/turn"};
// Below this a reply comes about as soon as a timer could wake the thread; above the maximum, what a wake-up costs
// is too small a share of the wait to be worth polling for.
constexpr double kAwakeWaitMinMicros = 150;
constexpr double kAwakeWaitMaxMicros = 20000;
// Asleep for this share of the expected time, then awake until it has passed by kAwakeWaitSlackShare of itself (at
// most kAwakeWaitMaxPollMicros): a query's recall varies around the connection's average by about a third.
constexpr double kAwakeWaitSleepShare = 0.7;
constexpr double kAwakeWaitSlackShare = 0.5;
constexpr double kAwakeWaitMaxPollMicros = 400;
// A round trip enters the moving average with this weight, and at most at this multiple of the average so far (one
// reply behind a checkpoint does not make the next waits poll for long).
constexpr double kReplyAverageWeight = 0.25;
constexpr double kReplyOutlierBound = 4;

// `error`: the connect's errno, when it failed with one. No socket file (ENOENT) and a socket nobody accepts on
// (ECONNREFUSED) mean no memqd serves it; anything else (EACCES, a timeout) says nothing of whether one runs.
Status connectError(const std::string& socketPath, const std::string& reason, int error = 0) {
  return Status(ErrorCode::kInternalError, "cannot connect to memqd at " + socketPath + ": " + reason,
                nlohmann::json{{"transport", "connect"},
                               {"socket", socketPath},
                               {"nobody_listening", error == ENOENT || error == ECONNREFUSED}});
}

int millisUntil(Clock::time_point deadline) {
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
  if (left <= 0) return 0;
  return left > 60'000'000 ? 60'000'000 : static_cast<int>(left);
}

// Waits until fd is ready for events or the deadline passes. False on timeout; errno set on failure.
bool waitFor(int fd, short events, Clock::time_point deadline, bool& failed) {
  failed = false;
  for (;;) {
    pollfd pfd{fd, events, 0};
    int rc = ::poll(&pfd, 1, millisUntil(deadline));
    if (rc > 0) return true;
    if (rc == 0) return false;
    if (errno == EINTR) continue;
    failed = true;
    return false;
  }
}

}  // namespace

Result<RpcClient> RpcClient::connect(const std::string& socketPath, std::chrono::milliseconds timeout) {
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  if (socketPath.empty()) return connectError(socketPath, "the socket path is empty");
  if (socketPath.size() >= sizeof(address.sun_path)) {
    return connectError(socketPath, "the socket path is longer than " +
                                        std::to_string(sizeof(address.sun_path) - 1) + " bytes");
  }
  std::memcpy(address.sun_path, socketPath.data(), socketPath.size());

  int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) return connectError(socketPath, std::strerror(errno));
  RpcClient client(fd, socketPath);  // owns fd from here on, so every early return closes it

  Clock::time_point deadline = Clock::now() + timeout;
  for (;;) {
    if (::connect(fd, reinterpret_cast<const sockaddr*>(&address), sizeof(address)) == 0) return client;
    int error = errno;
    if (error == EINTR) continue;
    if (error == EAGAIN) {
      // A non-blocking Unix socket reports a full accept backlog as EAGAIN: the daemon is alive but busy. Retry.
      if (Clock::now() >= deadline) return connectError(socketPath, "timed out (the daemon's backlog is full)");
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
      continue;
    }
    if (error == EINPROGRESS) {
      bool failed = false;
      if (!waitFor(fd, POLLOUT, deadline, failed)) {
        return connectError(socketPath, failed ? std::strerror(errno) : "timed out");
      }
      int soError = 0;
      socklen_t length = sizeof(soError);
      if (::getsockopt(fd, SOL_SOCKET, SO_ERROR, &soError, &length) != 0) soError = errno;
      if (soError != 0) return connectError(socketPath, std::strerror(soError), soError);
      return client;
    }
    return connectError(socketPath, std::strerror(error), error);
  }
}

RpcClient::RpcClient(int fd, std::string socketPath) : fd_(fd), socketPath_(std::move(socketPath)) {}

RpcClient::RpcClient(RpcClient&& other) noexcept
    : fd_(std::exchange(other.fd_, -1)),
      socketPath_(std::move(other.socketPath_)),
      nextId_(other.nextId_),
      readBuffer_(std::move(other.readBuffer_)),
      scanned_(std::exchange(other.scanned_, 0)),
      pending_(std::move(other.pending_)),
      replyMicros_(std::move(other.replyMicros_)),
      awakeWaits_(other.awakeWaits_) {}

RpcClient& RpcClient::operator=(RpcClient&& other) noexcept {
  if (this != &other) {
    close();
    fd_ = std::exchange(other.fd_, -1);
    socketPath_ = std::move(other.socketPath_);
    nextId_ = other.nextId_;
    readBuffer_ = std::move(other.readBuffer_);
    scanned_ = std::exchange(other.scanned_, 0);
    pending_ = std::move(other.pending_);
    replyMicros_ = std::move(other.replyMicros_);
    awakeWait_.reset();
    awakeWaits_ = other.awakeWaits_;
  }
  return *this;
}

RpcClient::~RpcClient() { close(); }

void RpcClient::close() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

Status RpcClient::transportError(const std::string& kind, const std::string& message) const {
  return Status(ErrorCode::kInternalError, message, nlohmann::json{{"transport", kind}, {"socket", socketPath_}});
}

Status RpcClient::writeAll(std::string_view bytes, Clock::time_point deadline) {
  if (fd_ < 0) return transportError("closed", "not connected to memqd");
  while (!bytes.empty()) {
    ssize_t n = ::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL);
    if (n > 0) {
      bytes.remove_prefix(static_cast<std::size_t>(n));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      bool failed = false;
      if (waitFor(fd_, POLLOUT, deadline, failed)) continue;
      if (failed) return transportError("io", std::string("cannot write to memqd: ") + std::strerror(errno));
      return transportError("timeout", "timed out writing to memqd");
    }
    if (n < 0 && (errno == EPIPE || errno == ECONNRESET)) {
      return transportError("closed", "memqd closed the connection");
    }
    return transportError("io", std::string("cannot write to memqd: ") + std::strerror(errno));
  }
  return Status::ok();
}

bool RpcClient::readWithinAwakeWait(const AwakeWait& wait) {
  char chunk[65536];
  Clock::time_point now = Clock::now();
  // A timer fires up to the thread's timer slack late (50 µs by default): asleep for that much less.
  static thread_local const std::chrono::nanoseconds timerSlack(std::max(0, ::prctl(PR_GET_TIMERSLACK, 0, 0, 0, 0)));
  const Clock::time_point wakeAt = wait.sleepUntil - timerSlack;
  if (now < wakeAt) {
    const auto nanos = std::chrono::duration_cast<std::chrono::nanoseconds>(wakeAt - now).count();
    const timespec sleep{static_cast<time_t>(nanos / 1'000'000'000), static_cast<long>(nanos % 1'000'000'000)};
    pollfd pfd{fd_, POLLIN, 0};
    // Ready (or an error, or a signal): the usual wait and read take it from here.
    if (::ppoll(&pfd, 1, &sleep, nullptr) != 0) return false;
  }
  while (Clock::now() < wait.pollUntil) {
    const ssize_t n = ::recv(fd_, chunk, sizeof(chunk), MSG_DONTWAIT);
    if (n > 0) {
      readBuffer_.append(chunk, static_cast<std::size_t>(n));
      return true;
    }
    if (n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) return false;
    // Yield rather than pause: where memqd's thread shares this core (a kernel that packs threads onto few virtual
    // CPUs puts it here), a poll that kept the core would hold off the very reply it waits for, by up to a time
    // slice. With nothing else to run here the call returns at once.
    ::sched_yield();
  }
  return false;
}

Result<std::size_t> RpcClient::awaitLine(Clock::time_point deadline) {
  if (fd_ < 0) return transportError("closed", "not connected to memqd");
  for (;;) {
    std::size_t nl = readBuffer_.find('\n', scanned_);
    if (nl != std::string::npos) {
      scanned_ = nl + 1;
      return nl;
    }
    scanned_ = readBuffer_.size();
    if (readBuffer_.size() > kMaxReplyBytes) {
      return transportError("io", "memqd sent a line longer than " + std::to_string(kMaxReplyBytes) + " bytes");
    }
    if (awakeWait_) {
      const AwakeWait wait = *awakeWait_;
      awakeWait_.reset();
      if (readWithinAwakeWait(wait)) continue;
    }
    bool failed = false;
    if (!waitFor(fd_, POLLIN, deadline, failed)) {
      if (failed) return transportError("io", std::string("cannot read from memqd: ") + std::strerror(errno));
      return transportError("timeout", "timed out waiting for memqd");
    }
    char chunk[65536];
    ssize_t n = ::recv(fd_, chunk, sizeof(chunk), 0);
    if (n > 0) {
      readBuffer_.append(chunk, static_cast<std::size_t>(n));
    } else if (n == 0) {
      return transportError("closed", "memqd closed the connection");
    } else if (errno != EINTR && errno != EAGAIN && errno != EWOULDBLOCK) {
      if (errno == ECONNRESET) return transportError("closed", "memqd closed the connection");
      return transportError("io", std::string("cannot read from memqd: ") + std::strerror(errno));
    }
  }
}

void RpcClient::noteReplyTime(const std::string& method, double micros) {
  auto [it, first] = replyMicros_.emplace(method, micros);
  if (!first) it->second += kReplyAverageWeight * (std::min(micros, kReplyOutlierBound * it->second) - it->second);
}

std::optional<double> RpcClient::expectedReplyMicros(const std::string& method) const {
  auto it = replyMicros_.find(method);
  if (it == replyMicros_.end()) return std::nullopt;
  return it->second;
}

void RpcClient::consumeLine() {
  readBuffer_.erase(0, scanned_);
  scanned_ = 0;
}

Result<std::string> RpcClient::readLine(Clock::time_point deadline) {
  Result<std::size_t> length = awaitLine(deadline);
  if (!length) return length.status();
  std::string line = readBuffer_.substr(0, *length);
  consumeLine();
  if (!line.empty() && line.back() == '\r') line.pop_back();
  return line;
}

Result<nlohmann::json> RpcClient::readJson(Clock::time_point deadline) {
  for (;;) {
    Result<std::size_t> length = awaitLine(deadline);
    if (!length) return length.status();
    // Parsed where it lies in the read buffer: a reply of several KB is not copied out first.
    std::string_view line(readBuffer_.data(), *length);
    if (line.find_first_not_of(" \t\r") == std::string_view::npos) {
      consumeLine();
      continue;
    }
    Result<nlohmann::json> message = parseJson(line, kMaxReplyDepth);
    consumeLine();
    if (!message) return transportError("io", "memqd sent invalid JSON: " + message.status().message());
    return message;
  }
}

Result<nlohmann::json> RpcClient::call(const std::string& method, nlohmann::json params,
                                       std::chrono::milliseconds timeout) {
  Clock::time_point deadline = Clock::now() + timeout;
  std::int64_t id = nextId_++;
  MEMQ_RETURN_IF_ERROR(writeAll(serializeMessage(makeRequest(id, method, std::move(params))) + "\n", deadline));
  // Why the wait may end awake: a thread asleep until the reply comes is woken by the reply itself, and on a virtual
  // machine whose idle vCPU halts at once, that wake-up (an interrupt to a halted vCPU, through the hypervisor) adds
  // a tenth of a millisecond to the reply's path. Woken by a timer a little before the reply is due, the thread
  // takes that cost while memqd still works, and reads the reply the moment it lands; as Linux's hybrid polling of
  // block devices sleeps for part of a request's expected time and polls for the rest.
  const Clock::time_point sent = Clock::now();
  const bool awakeMethod =
      std::find(kAwakeWaitMethods.begin(), kAwakeWaitMethods.end(), method) != kAwakeWaitMethods.end();
  auto expected = replyMicros_.find(method);
  if (awakeWaits_ && awakeMethod && expected != replyMicros_.end() && expected->second >= kAwakeWaitMinMicros &&
      expected->second <= kAwakeWaitMaxMicros) {
    const double micros = expected->second;
    const double poll = std::min(kAwakeWaitMaxPollMicros, kAwakeWaitSlackShare * micros);
    awakeWait_ = AwakeWait{
        std::min(deadline, sent + std::chrono::microseconds(static_cast<int64_t>(kAwakeWaitSleepShare * micros))),
        std::min(deadline, sent + std::chrono::microseconds(static_cast<int64_t>(micros + poll)))};
  }
  for (;;) {
    Result<nlohmann::json> message = readJson(deadline);
    awakeWait_.reset();  // a message came: any later wait (for the reply after a notification) sleeps
    if (!message) return message.status();
    nlohmann::json& reply = *message;
    if (!reply.is_object()) continue;  // a batch reply: this client never sends batches
    auto idIt = reply.find("id");
    if (idIt == reply.end()) {
      pending_.push_back(std::move(reply));  // a notification (memory/changed …)
      continue;
    }
    bool ours = idIt->is_number_integer() && idIt->get<std::int64_t>() == id;
    auto errorIt = reply.find("error");
    if (ours || (idIt->is_null() && errorIt != reply.end())) {
      if (awakeMethod) noteReplyTime(method, std::chrono::duration<double, std::micro>(Clock::now() - sent).count());
      if (errorIt != reply.end()) return statusFromErrorObject(*errorIt);
      auto resultIt = reply.find("result");
      if (resultIt == reply.end()) return transportError("io", "memqd sent a reply without result or error");
      return std::move(*resultIt);
    }
    // A late reply to an earlier call that timed out: nobody waits for it any more.
  }
}

Status RpcClient::notify(const std::string& method, nlohmann::json params) {
  return writeAll(serializeMessage(makeNotification(method, std::move(params))) + "\n",
                  Clock::now() + kDefaultCallTimeout);
}

Result<nlohmann::json> RpcClient::readMessage(std::chrono::milliseconds timeout) {
  if (!pending_.empty()) {
    nlohmann::json message = std::move(pending_.front());
    pending_.pop_front();
    return message;
  }
  return readJson(Clock::now() + timeout);
}

Status RpcClient::sendRaw(std::string_view bytes) { return writeAll(bytes, Clock::now() + kDefaultCallTimeout); }

Result<std::string> RpcClient::readRawLine(std::chrono::milliseconds timeout) {
  return readLine(Clock::now() + timeout);
}

Status RpcClient::closeWrite() {
  if (fd_ < 0) return transportError("closed", "not connected to memqd");
  if (::shutdown(fd_, SHUT_WR) != 0) return transportError("io", std::string("shutdown: ") + std::strerror(errno));
  return Status::ok();
}

bool isTransportError(const Status& status) {
  return status.code() == ErrorCode::kInternalError && status.data().is_object() &&
         status.data().contains("transport");
}

bool isConnectError(const Status& status) {
  return isTransportError(status) && status.data()["transport"] == "connect";
}

bool isNobodyListening(const Status& status) {
  return isConnectError(status) && status.data().value("nobody_listening", false);
}

}  // namespace memq
