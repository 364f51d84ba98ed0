// The team scope's outbox file (daemon/team/team_outbox.h) on a real file: records come back in order, and a torn
// line an earlier append left behind (a crash or a full disk mid-write, never acknowledged) costs no record after it.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "daemon/team/team_outbox.h"

namespace memq::test {
namespace {

namespace fs = std::filesystem;

class TeamOutboxTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("memq-outbox-" + std::to_string(::getpid()) + "-" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    path_ = (dir_ / "team" / "k.outbox").string();
  }
  void TearDown() override { fs::remove_all(dir_); }

  static OutboxRecord record(const std::string& summary) {
    OutboxRecord r;
    r.projectRoot = "/p";
    r.input.summary = summary;
    r.input.source = "agent";
    return r;
  }

  // The records as load() gives them (none when it fails, which fails the test).
  static std::vector<OutboxRecord> loaded(TeamOutbox& outbox) {
    auto records = outbox.load();
    EXPECT_TRUE(records.isOk()) << records.status().toString();
    return records ? *records : std::vector<OutboxRecord>{};
  }
  static std::vector<std::string> summaries(TeamOutbox& outbox) {
    std::vector<std::string> out;
    for (const auto& r : loaded(outbox)) out.push_back(r.input.summary);
    return out;
  }

  fs::path dir_;
  std::string path_;
};

TEST_F(TeamOutboxTest, RecordsComeBackInOrderAndLeaveFromTheFront) {
  TeamOutbox outbox(path_);
  ASSERT_TRUE(outbox.append(record("first")).isOk());
  ASSERT_TRUE(outbox.append(record("second")).isOk());
  EXPECT_EQ(summaries(outbox), (std::vector<std::string>{"first", "second"}));
  ASSERT_TRUE(outbox.remove(loaded(outbox).front()).isOk());
  EXPECT_EQ(summaries(outbox), (std::vector<std::string>{"second"}));
}

TEST_F(TeamOutboxTest, ARecordAppendedAfterATornLineIsKept) {
  TeamOutbox outbox(path_);
  ASSERT_TRUE(outbox.append(record("before the tear")).isOk());
  {
    std::ofstream torn(path_, std::ios::app);
    torn << R"({"project_root":"/p","input":{"summary":"never acknow)";  // no end, no newline
  }
  ASSERT_TRUE(outbox.append(record("acknowledged after the tear")).isOk());
  EXPECT_EQ(summaries(outbox), (std::vector<std::string>{"before the tear", "acknowledged after the tear"}))
      << "the record after the torn line was read as part of it";
  // Sending the first removes exactly it; the acknowledged one stays.
  ASSERT_TRUE(outbox.remove(loaded(outbox).front()).isOk());
  EXPECT_EQ(summaries(outbox), (std::vector<std::string>{"acknowledged after the tear"}));
}

// Two drains of one outbox file (two memqds on one data dir): each removes the record it sent, never one the other
// appended meanwhile.
TEST_F(TeamOutboxTest, TwoDrainsOfOneFileRemoveOnlyWhatTheySent) {
  TeamOutbox a(path_);
  TeamOutbox b(path_);
  ASSERT_TRUE(a.append(record("queued first")).isOk());
  const std::vector<OutboxRecord> seenByA = loaded(a);
  const std::vector<OutboxRecord> seenByB = loaded(b);
  ASSERT_EQ(seenByA.size(), 1u);
  ASSERT_EQ(seenByB.size(), 1u);
  ASSERT_TRUE(a.remove(seenByA[0]).isOk());  // A sent it
  ASSERT_TRUE(b.append(record("queued while they drained")).isOk());
  ASSERT_TRUE(b.remove(seenByB[0]).isOk());  // B sent it too (the server dedups): it is gone already
  EXPECT_EQ(summaries(a), (std::vector<std::string>{"queued while they drained"}))
      << "a record appended during the drains was removed unsent";
}

// The sync thread looks at the outbox every 250 ms: with nothing queued it reads nothing and leaves no file behind.
TEST_F(TeamOutboxTest, LookingAtAnOutboxThatIsNotThereMakesNoFile) {
  TeamOutbox outbox(path_);
  EXPECT_TRUE(loaded(outbox).empty());
  EXPECT_FALSE(fs::exists(path_ + ".lock"));
  EXPECT_FALSE(fs::exists(fs::path(path_).parent_path()));
}

}  // namespace
}  // namespace memq::test
