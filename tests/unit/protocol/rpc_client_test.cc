// RpcClient against a scripted in-test server on a temporary Unix socket: connect failures (the CLI's exit 3), the
// reply/notification split, error objects → Status, timeouts and closed connections, and the waits that end awake
// (replies before, inside and after the awake end; a slow reply slept through). The real daemon is exercised by the
// integration tests.
#include "client/rpc_client.h"

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <functional>
#include <string>
#include <thread>
#include <vector>

namespace memq {
namespace {

using nlohmann::json;
using namespace std::chrono_literals;

std::string makeTempDir() {
  std::string pattern = (std::filesystem::temp_directory_path() / "memq-proto-XXXXXX").string();
  char* dir = ::mkdtemp(pattern.data());
  EXPECT_NE(dir, nullptr);
  return pattern;
}

int boundSocket(const std::string& path) {
  int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  std::memcpy(address.sun_path, path.data(), path.size());
  EXPECT_EQ(::bind(fd, reinterpret_cast<const sockaddr*>(&address), sizeof(address)), 0) << std::strerror(errno);
  return fd;
}

std::string readLine(int fd) {
  std::string line;
  char c;
  while (::recv(fd, &c, 1, 0) == 1) {
    if (c == '\n') return line;
    line.push_back(c);
  }
  return line;
}

std::string replyTo(const std::string& request, const json& result) {
  return json{{"jsonrpc", "2.0"}, {"id", json::parse(request)["id"]}, {"result", result}}.dump() + "\n";
}

double threadCpuMillis() {
  timespec t{};
  ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) * 1e3 + static_cast<double>(t.tv_nsec) / 1e6;
}

void writeAll(int fd, const std::string& bytes) {
  ASSERT_EQ(::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL), static_cast<ssize_t>(bytes.size()));
}

// Listens on a temporary socket and runs a script against the first connection on its own thread.
class ScriptedServer {
 public:
  ScriptedServer() : dir_(makeTempDir()), path_(dir_ + "/memqd.sock"), listenFd_(boundSocket(path_)) {
    ::listen(listenFd_, 4);
  }
  ~ScriptedServer() {
    if (thread_.joinable()) thread_.join();
    ::close(listenFd_);
    std::filesystem::remove_all(dir_);
  }
  void serve(std::function<void(int)> script) {
    thread_ = std::thread([this, script = std::move(script)] {
      int fd = ::accept(listenFd_, nullptr, nullptr);
      if (fd < 0) return;
      script(fd);
      ::close(fd);
    });
  }
  void join() { thread_.join(); }
  const std::string& path() const { return path_; }

 private:
  std::string dir_;
  std::string path_;
  int listenFd_;
  std::thread thread_;
};

TEST(RpcClient, MissingSocketIsAFastConnectError) {
  std::string dir = makeTempDir();
  std::string path = dir + "/no-such.sock";
  auto start = std::chrono::steady_clock::now();
  Result<RpcClient> client = RpcClient::connect(path, 5s);
  auto elapsed = std::chrono::steady_clock::now() - start;
  std::filesystem::remove_all(dir);
  ASSERT_FALSE(client.isOk());
  EXPECT_LT(elapsed, 1s);
  EXPECT_TRUE(isConnectError(client.status()));
  EXPECT_TRUE(isTransportError(client.status()));
  EXPECT_EQ(client.status().code(), ErrorCode::kInternalError);
  EXPECT_EQ(client.status().message().rfind("cannot connect to memqd at " + path + ": ", 0), 0u)
      << client.status().message();
}

TEST(RpcClient, SocketWithoutListenerIsAConnectError) {
  std::string dir = makeTempDir();
  std::string path = dir + "/stale.sock";
  int fd = boundSocket(path);  // bound, never listening: a stale socket file
  Result<RpcClient> client = RpcClient::connect(path, 1s);
  ::close(fd);
  std::filesystem::remove_all(dir);
  ASSERT_FALSE(client.isOk());
  EXPECT_TRUE(isConnectError(client.status()));
}

TEST(RpcClient, OverlongPathIsAConnectError) {
  Result<RpcClient> client = RpcClient::connect("/tmp/" + std::string(200, 'x'), 1s);
  ASSERT_FALSE(client.isOk());
  EXPECT_TRUE(isConnectError(client.status()));
  EXPECT_FALSE(isConnectError(Status(ErrorCode::kNotFound, "x")));
  EXPECT_FALSE(isConnectError(Status::internal("x")));
}

TEST(RpcClient, CallReturnsTheResultAndQueuesNotifications) {
  ScriptedServer server;
  std::vector<std::string> received;
  server.serve([&](int fd) {
    received.push_back(readLine(fd));
    writeAll(fd, R"({"jsonrpc":"2.0","method":"memory/changed","params":{"id":"a","action":"create"}})" "\n");
    writeAll(fd, R"({"jsonrpc":"2.0","id":77,"result":"late reply to an abandoned call"})" "\n");
    writeAll(fd, R"({"jsonrpc":"2.0","id":1,"result":{"n":5}})" "\n");
    received.push_back(readLine(fd));
    writeAll(fd, R"({"jsonrpc":"2.0","id":2,"error":{"code":-32001,"message":"no memory abcd","data":{"id":"abcd"}}})"
                 "\n");
    received.push_back(readLine(fd));
  });
  Result<RpcClient> client = RpcClient::connect(server.path(), 1s);
  ASSERT_TRUE(client.isOk()) << client.status().toString();

  Result<json> stats = client->call("stats", json{{"a", 1}}, 5s);
  ASSERT_TRUE(stats.isOk()) << stats.status().toString();
  EXPECT_EQ(*stats, json({{"n", 5}}));

  Result<json> missing = client->call("memory/get", json{{"id", "abcd"}}, 5s);
  ASSERT_FALSE(missing.isOk());
  EXPECT_EQ(missing.status().code(), ErrorCode::kNotFound);
  EXPECT_EQ(missing.status().message(), "no memory abcd");
  EXPECT_EQ(missing.status().data(), json({{"id", "abcd"}}));
  EXPECT_FALSE(isTransportError(missing.status()));

  ASSERT_TRUE(client->notify("hints/turn", nullptr).isOk());
  server.join();

  Result<json> notification = client->readMessage(1s);
  ASSERT_TRUE(notification.isOk());
  EXPECT_EQ(notification->at("method"), "memory/changed");

  ASSERT_EQ(received.size(), 3u);
  EXPECT_EQ(json::parse(received[0]), json::parse(R"({"jsonrpc":"2.0","id":1,"method":"stats","params":{"a":1}})"));
  EXPECT_EQ(json::parse(received[1])["id"], 2);
  EXPECT_EQ(json::parse(received[2]), json::parse(R"({"jsonrpc":"2.0","method":"hints/turn"})"));
  EXPECT_EQ(client->lastId(), 2);
}

TEST(RpcClient, ErrorWithNullIdEndsTheWait) {
  ScriptedServer server;
  server.serve([&](int fd) {
    readLine(fd);
    writeAll(fd, R"({"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"invalid JSON"}})" "\n");
  });
  Result<RpcClient> client = RpcClient::connect(server.path(), 1s);
  ASSERT_TRUE(client.isOk());
  Result<json> reply = client->call("stats", nullptr, 5s);
  ASSERT_FALSE(reply.isOk());
  EXPECT_EQ(reply.status().code(), ErrorCode::kParseError);
}

TEST(RpcClient, TimeoutAndClosedConnectionAreTransportErrors) {
  ScriptedServer server;
  server.serve([&](int fd) {
    readLine(fd);  // never answers the first call
    readLine(fd);  // then hangs up on the second
  });
  Result<RpcClient> client = RpcClient::connect(server.path(), 1s);
  ASSERT_TRUE(client.isOk());
  auto start = std::chrono::steady_clock::now();
  Result<json> slow = client->call("stats", nullptr, 100ms);
  EXPECT_LT(std::chrono::steady_clock::now() - start, 2s);
  ASSERT_FALSE(slow.isOk());
  EXPECT_TRUE(isTransportError(slow.status()));
  EXPECT_FALSE(isConnectError(slow.status()));
  EXPECT_EQ(slow.status().data()["transport"], "timeout");

  Result<json> closed = client->call("stats", nullptr, 5s);
  ASSERT_FALSE(closed.isOk());
  EXPECT_EQ(closed.status().data()["transport"], "closed");
}

TEST(RpcClient, RawBytesAndLines) {
  ScriptedServer server;
  std::string got;
  server.serve([&](int fd) {
    got = readLine(fd);
    writeAll(fd, "first line\r\nsecond\n");
  });
  Result<RpcClient> client = RpcClient::connect(server.path(), 1s);
  ASSERT_TRUE(client.isOk());
  ASSERT_TRUE(client->sendRaw(std::string("{\"broken\xFF\n")).isOk());
  Result<std::string> first = client->readRawLine(1s);
  ASSERT_TRUE(first.isOk()) << first.status().toString();
  EXPECT_EQ(*first, "first line");
  EXPECT_EQ(*client->readRawLine(1s), "second");
  server.join();
  EXPECT_EQ(got, "{\"broken\xFF");
}

TEST(RpcClient, MoveTransfersTheConnection) {
  ScriptedServer server;
  server.serve([&](int fd) {
    readLine(fd);
    writeAll(fd, R"({"jsonrpc":"2.0","id":1,"result":true})" "\n");
  });
  Result<RpcClient> connected = RpcClient::connect(server.path(), 1s);
  ASSERT_TRUE(connected.isOk());
  RpcClient client = std::move(connected).value();
  EXPECT_FALSE(connected->isOpen());
  EXPECT_TRUE(client.isOpen());
  Result<json> reply = client.call("daemon/status", nullptr, 5s);
  ASSERT_TRUE(reply.isOk()) << reply.status().toString();
  EXPECT_EQ(*reply, true);
}

// Recalls answered after about a millisecond teach the client to wait for the next one asleep for 0.7 ms and then
// awake, reading without sleeping, until about 1.5 ms. Replies that come before, inside and after that awake end, in
// one piece or two, behind a notification, or a connection closed inside it: each call still gets its own reply.
TEST(RpcClient, RepliesAreReadWhetherTheyComeBeforeInsideOrAfterTheAwakeEndOfAWait) {
  ScriptedServer server;
  constexpr int kTeaching = 6;
  server.serve([&](int fd) {
    for (int i = 0; i < kTeaching; ++i) {
      std::string request = readLine(fd);
      std::this_thread::sleep_for(1ms);
      writeAll(fd, replyTo(request, i));
    }
    writeAll(fd, replyTo(readLine(fd), "at once"));
    std::string request = readLine(fd);
    std::this_thread::sleep_for(1100us);
    writeAll(fd, replyTo(request, "inside"));
    request = readLine(fd);
    std::string reply = replyTo(request, "in two pieces");
    std::this_thread::sleep_for(900us);
    writeAll(fd, reply.substr(0, 10));
    std::this_thread::sleep_for(300us);
    writeAll(fd, reply.substr(10));
    request = readLine(fd);
    std::this_thread::sleep_for(900us);
    writeAll(fd, R"({"jsonrpc":"2.0","method":"memory/changed","params":{"id":"a","action":"create"}})" "\n");
    std::this_thread::sleep_for(5ms);
    writeAll(fd, replyTo(request, "after a notification"));
    request = readLine(fd);
    std::this_thread::sleep_for(20ms);
    writeAll(fd, replyTo(request, "late"));
    readLine(fd);
    std::this_thread::sleep_for(1ms);  // then hangs up inside the awake end
  });
  Result<RpcClient> client = RpcClient::connect(server.path(), 1s);
  ASSERT_TRUE(client.isOk());
  for (int i = 0; i < kTeaching; ++i) {
    Result<json> reply = client->call("memory/recall", json{{"query", "x"}}, 5s);
    ASSERT_TRUE(reply.isOk()) << reply.status().toString();
    EXPECT_EQ(*reply, i);
  }
  ASSERT_TRUE(client->expectedReplyMicros("memory/recall").has_value());
  for (const char* expected : {"at once", "inside", "in two pieces", "after a notification", "late"}) {
    Result<json> reply = client->call("memory/recall", json{{"query", "x"}}, 5s);
    ASSERT_TRUE(reply.isOk()) << expected << ": " << reply.status().toString();
    EXPECT_EQ(*reply, expected);
  }
  Result<json> hungUp = client->call("memory/recall", json{{"query", "x"}}, 5s);
  ASSERT_FALSE(hungUp.isOk());
  EXPECT_EQ(hungUp.status().data()["transport"], "closed");
  Result<json> notification = client->readMessage(1s);
  ASSERT_TRUE(notification.isOk());
  EXPECT_EQ(notification->at("method"), "memory/changed");
}

// Waking early and reading awake costs the client a bounded slice of CPU: a reply that comes long after the expected
// time is slept for, not polled for. And only the reads an agent waits on are timed: a save's wait always sleeps.
TEST(RpcClient, AWaitForAReplyFarSlowerThanExpectedSleeps) {
  ScriptedServer server;
  server.serve([&](int fd) {
    for (int i = 0; i < 6; ++i) {
      std::string request = readLine(fd);
      std::this_thread::sleep_for(2ms);
      writeAll(fd, replyTo(request, true));
    }
    std::string request = readLine(fd);
    std::this_thread::sleep_for(300ms);
    writeAll(fd, replyTo(request, "slow"));
    writeAll(fd, replyTo(readLine(fd), "saved"));
  });
  Result<RpcClient> client = RpcClient::connect(server.path(), 1s);
  ASSERT_TRUE(client.isOk());
  for (int i = 0; i < 6; ++i) ASSERT_TRUE(client->call("memory/search", json::object(), 5s).isOk());
  std::optional<double> expected = client->expectedReplyMicros("memory/search");
  ASSERT_TRUE(expected.has_value());
  EXPECT_GE(*expected, 1500);
  EXPECT_LE(*expected, 50000);

  const double cpuBefore = threadCpuMillis();
  Result<json> slow = client->call("memory/search", json::object(), 5s);
  const double cpuMillis = threadCpuMillis() - cpuBefore;
  ASSERT_TRUE(slow.isOk()) << slow.status().toString();
  EXPECT_EQ(*slow, "slow");
  // Awake for at most a few hundred microseconds of the 300 ms, asleep for the rest.
  EXPECT_LT(cpuMillis, 30.0);

  ASSERT_TRUE(client->call("memory/save", json::object(), 5s).isOk());
  EXPECT_FALSE(client->expectedReplyMicros("memory/save").has_value());
}

}  // namespace
}  // namespace memq
