// The dispatcher's bound on how much reply text one message gets (Dispatcher::kMaxReplyBytes), with a method table
// of its own: a call whose reply would pass it is answered with an error, and a batch stops running elements once
// its replies reach it, answering the rest Busy.
#include "daemon/server/dispatcher.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <random>
#include <string>

#include "daemon/embed/hashbag.h"
#include "protocol/error_code.h"

namespace memq {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

class DispatcherTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("memq-dispatcher-" + std::to_string(std::random_device{}()));
    fs::create_directories(dir_);
    ServiceOptions options;
    options.dataDir = dir_.string();
    options.embedder = &embedder_;
    service_ = std::make_unique<Service>(options);
    // test/text answers a JSON string of `bytes` bytes (its quotes included); test/count counts its calls.
    table_["test/text"] = MethodEntry::writingText([this](HandlerEnv&, const CallContext&, const json& params) {
      ++calls_;
      return Result<std::string>("\"" + std::string(params.at("bytes").get<size_t>() - 2, 'x') + "\"");
    });
    dispatcher_ = std::make_unique<Dispatcher>(*service_, ServerHooks{}, table_);
  }
  void TearDown() override {
    dispatcher_.reset();
    service_.reset();
    fs::remove_all(dir_);
  }

  static json call(int id, size_t bytes) {
    return {{"jsonrpc", "2.0"}, {"id", id}, {"method", "test/text"}, {"params", {{"bytes", bytes}}}};
  }

  fs::path dir_;
  HashbagEmbedder embedder_;
  std::unique_ptr<Service> service_;
  MethodTable table_;
  std::unique_ptr<Dispatcher> dispatcher_;
  ClientState client_;
  int calls_ = 0;
};

// `{"id":N,"jsonrpc":"2.0","result":` and `}` around the result, for a one-digit id.
constexpr size_t kEnvelopeBytes = 34;

TEST_F(DispatcherTest, AReplyOverTheBoundIsAnErrorNamingItsSizeAndOneAtTheBoundIsSent) {
  Dispatcher::MessageLog log;
  auto over =
      dispatcher_->handleMessage(client_, call(1, Dispatcher::kMaxReplyBytes - kEnvelopeBytes + 1).dump(), &log);
  ASSERT_TRUE(over.has_value());
  EXPECT_NE(log.line.find("refused: too long"), std::string::npos) << log.line;  // the request log says so too
  const json refused = json::parse(*over);
  EXPECT_EQ(refused["id"], 1);
  EXPECT_EQ(refused["error"]["code"], static_cast<int>(ErrorCode::kInvalidParams)) << refused.dump();
  EXPECT_EQ(refused["error"]["data"]["reply_bytes"], Dispatcher::kMaxReplyBytes + 1);
  EXPECT_NE(refused["error"]["message"].get<std::string>().find("ask for less"), std::string::npos);

  auto at = dispatcher_->handleMessage(client_, call(2, Dispatcher::kMaxReplyBytes - kEnvelopeBytes).dump());
  ASSERT_TRUE(at.has_value());
  EXPECT_EQ(at->size(), Dispatcher::kMaxReplyBytes);
  EXPECT_TRUE(json::parse(*at).contains("result"));
}

TEST_F(DispatcherTest, ABatchRunsElementsWhileTheirRepliesLeaveRoomAndAnswersTheRestBusy) {
  // Each reply a quarter of the bound: the batch stops running before the replies could pass it.
  json batch = json::array();
  for (int i = 1; i <= 10; ++i) batch.push_back(call(i, Dispatcher::kMaxReplyBytes / 4));
  batch.push_back({{"jsonrpc", "2.0"}, {"method", "test/text"}, {"params", {{"bytes", 8}}}});  // a notification
  auto reply = dispatcher_->handleMessage(client_, batch.dump());
  ASSERT_TRUE(reply.has_value());
  EXPECT_LE(reply->size(), Dispatcher::kMaxReplyBytes);
  const json replies = json::parse(*reply);
  ASSERT_EQ(replies.size(), 10u);  // nothing for the notification, run or not
  EXPECT_GE(calls_, 2);
  for (int i = 0; i < 10; ++i) {
    SCOPED_TRACE(i);
    EXPECT_EQ(replies[i]["id"], i + 1);
    if (i < calls_) {
      EXPECT_TRUE(replies[i].contains("result"));
    } else {
      EXPECT_EQ(replies[i]["error"]["code"], static_cast<int>(ErrorCode::kBusy));
      EXPECT_EQ(replies[i]["error"]["data"]["max_reply_bytes"], Dispatcher::kMaxReplyBytes);
    }
  }
}

TEST_F(DispatcherTest, ABatchElementWhoseReplyWouldNotFitRanAndSaysSo) {
  const size_t big = Dispatcher::kMaxReplyBytes - Dispatcher::kBatchErrorRoom - (1u << 20);
  json batch = json::array({call(1, 2u << 20), call(2, big), call(3, 16)});
  auto reply = dispatcher_->handleMessage(client_, batch.dump());
  ASSERT_TRUE(reply.has_value());
  EXPECT_LE(reply->size(), Dispatcher::kMaxReplyBytes);
  const json replies = json::parse(*reply);
  ASSERT_EQ(replies.size(), 3u);
  EXPECT_TRUE(replies[0].contains("result"));
  EXPECT_EQ(replies[1]["error"]["code"], static_cast<int>(ErrorCode::kInvalidParams)) << replies[1].dump();
  EXPECT_NE(replies[1]["error"]["message"].get<std::string>().find("the call ran"), std::string::npos);
  EXPECT_TRUE(replies[2].contains("result"));
  EXPECT_EQ(calls_, 3);
}

}  // namespace
}  // namespace memq
