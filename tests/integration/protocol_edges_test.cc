// Edges of docs/protocol.md that no other test covers, each against a real memqd: a subscription's `scopes` filter,
// `memqd --max-message-bytes` (the documented error, then the connection and the daemon go on), and the daemon's
// silence on a connection until the client has sent a byte. Load shedding (`Busy` past 1024 queued messages) is in
// load_shedding_test.cc: the queue's bound (ServerOptions::maxQueuedJobs) has no memqd flag, and filling 1024 places
// in it from outside would be a race against the workers, not a test.
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <thread>

#include "memqd_fixture.h"
#include "protocol/error_code.h"
#include "raw_conn.h"

namespace memq::testing {
namespace {

using json = nlohmann::json;
using std::chrono::milliseconds;

// How long a test waits for something memqd must do (a notification delivered, a reply sent): a bound on liveness,
// generous enough for a loaded `ctest -j` under a sanitizer, never a measure of speed.
constexpr milliseconds kLivenessDeadline = std::chrono::seconds(30);

class ProtocolEdgesTest : public MemqdTest {
 protected:
  void SetUp() override {
    makeWorkDir("edge");
    fs::create_directories(project_);
  }

  // A save into `scope` over `c`; the new memory's id, or "" (and a failure) when refused.
  static std::string saveIn(RpcClient& c, const std::string& scope, const std::string& summary) {
    auto r = c.call("memory/save", {{"summary", summary}, {"scope", scope}});
    EXPECT_TRUE(r.isOk()) << scope << ": " << r.status().toString();
    return r ? (*r)["id"].get<std::string>() : "";
  }

  // The params of the next message on a subscribed connection, which must be a memory/changed notification; null
  // (and a failure) when none comes or something else does.
  static json nextChange(RpcClient& subscriber) {
    auto msg = subscriber.readMessage(kLivenessDeadline);
    if (!msg) {
      ADD_FAILURE() << "no notification: " << msg.status().toString();
      return json();
    }
    if (msg->value("method", "") != "memory/changed") {
      ADD_FAILURE() << "not a change notification: " << msg->dump();
      return json();
    }
    return (*msg)["params"];
  }
};

TEST_F(ProtocolEdgesTest, ASubscriptionWithScopesReceivesOnlyNotificationsOfThoseScopes) {
  ASSERT_NO_FATAL_FAILURE(startDaemon());
  RpcClient subscriber = daemon_->client(project_, "global listener");
  auto subscribed = subscriber.call("subscribe", {{"scopes", {"global"}}});
  ASSERT_TRUE(subscribed.isOk()) << subscribed.status().toString();
  RpcClient writer = daemon_->client(project_, "writer");
  // A project save, then a global one. A change's notification is queued on every subscriber before the reply to the
  // request that made it, and the global save is sent after the project save's reply: a project notification let
  // through would arrive before the global one.
  const std::string projectId = saveIn(writer, "project", "Project notes stay out of a global subscription");
  const std::string globalId = saveIn(writer, "global", "Global notes reach a global subscription");
  ASSERT_FALSE(projectId.empty() || globalId.empty());
  json first = nextChange(subscriber);
  ASSERT_FALSE(first.is_null());
  EXPECT_EQ(first.value("id", ""), globalId) << "the project save's notification came through: " << first.dump();
  EXPECT_EQ(first.value("scope", ""), "global") << first.dump();
  EXPECT_EQ(first.value("action", ""), "create") << first.dump();
  EXPECT_FALSE(first.contains("project_root")) << "a global change names no project: " << first.dump();
  // Nor does one come late: after another project save and another global one, the next notification is the latter.
  ASSERT_FALSE(saveIn(writer, "project", "A second project note the subscriber never hears of").empty());
  const std::string laterGlobalId = saveIn(writer, "global", "A second global note the subscriber hears of");
  json second = nextChange(subscriber);
  ASSERT_FALSE(second.is_null());
  EXPECT_EQ(second.value("id", ""), laterGlobalId) << second.dump();
  EXPECT_EQ(second.value("scope", ""), "global") << second.dump();
}

TEST_F(ProtocolEdgesTest, AMessageOverMaxMessageBytesIsRefusedWithANullIdAndTheConnectionAndDaemonGoOn) {
  constexpr size_t kLimit = 4096;
  ASSERT_NO_FATAL_FAILURE(startDaemon({"--max-message-bytes", std::to_string(kLimit)}));
  RpcClient c = daemon_->client(project_);
  auto saveRequest = [](int id, size_t summaryBytes) {
    return json{{"jsonrpc", "2.0"},
                {"id", id},
                {"method", "memory/save"},
                {"params", {{"summary", std::string(summaryBytes, 'x')}}}}
        .dump();
  };
  // Both far under the default limit (1 MiB): only the flag refuses the larger one.
  const std::string over = saveRequest(1, kLimit + 100);
  const std::string fits = saveRequest(2, kLimit - 200);
  ASSERT_GT(over.size(), kLimit);
  ASSERT_LT(fits.size(), kLimit);

  ASSERT_TRUE(c.sendRaw(over + "\n").isOk());
  auto line = c.readRawLine(kLivenessDeadline);
  ASSERT_TRUE(line.isOk()) << "no reply to the oversized message: " << line.status().toString();
  json refused = json::parse(*line, nullptr, false);
  ASSERT_TRUE(refused.is_object()) << *line;
  // Its id is not recovered from a message the daemon skipped unread: the documented null.
  ASSERT_TRUE(refused.contains("id")) << *line;
  EXPECT_TRUE(refused["id"].is_null()) << *line;
  ASSERT_TRUE(refused.contains("error")) << *line;
  EXPECT_EQ(refused["error"].value("code", 0), static_cast<int>(ErrorCode::kInvalidRequest)) << *line;
  // "message exceeds the limit of N bytes", or "message of M bytes exceeds ..." when its length was known at once.
  EXPECT_NE(refused["error"].value("message", "").find("exceeds the limit of " + std::to_string(kLimit) + " bytes"),
            std::string::npos)
      << *line;

  // The connection goes on: the next message, one that fits, is read and answered as usual.
  ASSERT_TRUE(c.sendRaw(fits + "\n").isOk());
  line = c.readRawLine(kLivenessDeadline);
  ASSERT_TRUE(line.isOk()) << "no reply after the refused message: " << line.status().toString();
  json answered = json::parse(*line, nullptr, false);
  ASSERT_TRUE(answered.is_object()) << *line;
  EXPECT_EQ(answered.value("id", 0), 2) << *line;
  ASSERT_TRUE(answered.contains("result")) << *line;
  EXPECT_EQ(answered["result"].value("status", ""), "created") << *line;
  // Nothing of the refused save was written: the one memory is the save that fit.
  auto listed = c.call("memory/list", json::object());
  ASSERT_TRUE(listed.isOk()) << listed.status().toString();
  EXPECT_EQ((*listed)["total"], 1) << listed->dump();
  EXPECT_TRUE(daemon_->running()) << daemon_->log();
}

TEST_F(ProtocolEdgesTest, UntilAConnectionHasSentAByteTheDaemonSendsNothingOnIt) {
  // Replies use the framing the client chose (NDJSON or Content-Length), which only its first byte says: anything
  // the daemon sent before it would be in a framing the client may not read.
  ASSERT_NO_FATAL_FAILURE(startDaemon());
  RpcClient watcher = daemon_->connect();
  // The connections memqd counts, once they are `expected` (its count, when they never are).
  auto connectionsOnce = [&](int expected) {
    int connections = -1;
    const auto deadline = std::chrono::steady_clock::now() + kLivenessDeadline;
    while (connections != expected && std::chrono::steady_clock::now() < deadline) {
      auto status = watcher.call("daemon/status", json::object());
      EXPECT_TRUE(status.isOk()) << status.status().toString();
      if (!status) return -1;
      connections = (*status)["connections"].get<int>();
      if (connections != expected) std::this_thread::sleep_for(milliseconds(5));
    }
    return connections;
  };
  // Wait until memqd has accepted the silent connection, so that whatever it would send on accepting one has been
  // sent by the time the client looks: first until the watcher is alone (the probes of startDaemon are gone), then
  // until the silent connection joins it.
  ASSERT_EQ(connectionsOnce(1), 1) << "memqd still counts connections that closed";
  RawConn silent(daemon_->socket());
  ASSERT_TRUE(silent.connected());
  ASSERT_EQ(connectionsOnce(2), 2) << "memqd never counted the silent connection";
  size_t received = 0;
  EXPECT_FALSE(silent.closedWithin(milliseconds(300), &received)) << "memqd closed a connection that sent nothing yet";
  EXPECT_EQ(received, 0u) << "memqd sent bytes before the client sent any";

  ASSERT_TRUE(silent.send(R"({"jsonrpc":"2.0","id":1,"method":"daemon/status"})"
                          "\n"));
  auto reply = silent.readJson(kLivenessDeadline);
  ASSERT_TRUE(reply.has_value()) << "no reply to the connection's first request";
  ASSERT_TRUE(reply->is_object());
  EXPECT_EQ(reply->value("id", 0), 1) << reply->dump();
  EXPECT_TRUE(reply->contains("result")) << reply->dump();
}

}  // namespace
}  // namespace memq::testing
