// RawConn: a bare Unix-socket connection to memqd for tests that send bytes no honest client sends. It sends any
// bytes, reads NDJSON lines or Content-Length messages, and notices when the daemon closes its end.
#pragma once

#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace memq::testing {

class RawConn {
 public:
  using Clock = std::chrono::steady_clock;
  using milliseconds = std::chrono::milliseconds;

  explicit RawConn(const std::string& socketPath) {
    fd_ = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::snprintf(addr.sun_path, sizeof addr.sun_path, "%s", socketPath.c_str());
    if (fd_ >= 0 && ::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) closeNow();
  }
  ~RawConn() { closeNow(); }
  RawConn(const RawConn&) = delete;
  RawConn& operator=(const RawConn&) = delete;

  bool connected() const { return fd_ >= 0; }
  void closeNow() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }

  // False once the daemon closed its end (EPIPE / ECONNRESET).
  bool send(std::string_view bytes) {
    while (!bytes.empty()) {
      ssize_t n = ::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL);
      if (n < 0) {
        if (errno == EINTR) continue;
        return false;
      }
      if (n == 0) return false;
      bytes.remove_prefix(static_cast<size_t>(n));
    }
    return true;
  }

  std::optional<std::string> readLine(milliseconds timeout = milliseconds(10000)) {
    auto deadline = Clock::now() + timeout;
    for (;;) {
      if (size_t nl = buffer_.find('\n'); nl != std::string::npos) {
        std::string line = buffer_.substr(0, nl);
        buffer_.erase(0, nl + 1);
        return line;
      }
      if (!fill(deadline)) return std::nullopt;
    }
  }

  // The next NDJSON line, parsed (a discarded value when it is not JSON).
  std::optional<nlohmann::json> readJson(milliseconds timeout = milliseconds(10000)) {
    auto line = readLine(timeout);
    if (!line) return std::nullopt;
    return nlohmann::json::parse(*line, nullptr, false);
  }

  // The next Content-Length framed message, parsed.
  std::optional<nlohmann::json> readLspMessage(milliseconds timeout = milliseconds(10000)) {
    auto deadline = Clock::now() + timeout;
    for (;;) {
      if (size_t end = buffer_.find("\r\n\r\n"); end != std::string::npos) {
        size_t length = std::stoul(buffer_.substr(buffer_.find(':') + 1, end));
        if (buffer_.size() >= end + 4 + length) {
          std::string body = buffer_.substr(end + 4, length);
          buffer_.erase(0, end + 4 + length);
          return nlohmann::json::parse(body, nullptr, false);
        }
      }
      if (!fill(deadline)) return std::nullopt;
    }
  }

  // True when bytes arrive within `timeout`, none of them read: a reply has begun.
  bool readableWithin(milliseconds timeout) {
    if (!buffer_.empty()) return true;
    if (fd_ < 0) return false;
    pollfd p{fd_, POLLIN, 0};
    return ::poll(&p, 1, static_cast<int>(timeout.count())) > 0;
  }

  // True when the daemon closes the connection within `timeout`. What it sent first is read and discarded;
  // *received counts those bytes (with any left unread before the call).
  bool closedWithin(milliseconds timeout, size_t* received = nullptr) {
    auto deadline = Clock::now() + timeout;
    size_t total = 0;
    for (;;) {
      total += buffer_.size();
      buffer_.clear();
      if (closed_ || !fill(deadline)) break;
    }
    total += buffer_.size();
    buffer_.clear();
    if (received) *received = total;
    return closed_;
  }

 private:
  // Reads more bytes into the buffer; false on timeout or close (closed_ tells which).
  bool fill(Clock::time_point deadline) {
    if (closed_ || fd_ < 0) return false;
    auto left = std::chrono::duration_cast<milliseconds>(deadline - Clock::now()).count();
    if (left <= 0) return false;
    pollfd p{fd_, POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(left)) <= 0) return false;
    char buf[65536];
    ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
    if (n <= 0) {
      closed_ = true;
      return false;
    }
    buffer_.append(buf, static_cast<size_t>(n));
    return true;
  }

  int fd_ = -1;
  bool closed_ = false;
  std::string buffer_;
};

}  // namespace memq::testing
