// The team scope's outbox file (daemon/team/team_outbox.h) on a real file: records come back in order, and a torn
// line an earlier append left behind (a crash or a full disk mid-write, never acknowledged) costs no record after it.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

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

  fs::path dir_;
  std::string path_;
};

TEST_F(TeamOutboxTest, RecordsComeBackInOrderAndLeaveFromTheFront) {
  TeamOutbox outbox(path_);
  ASSERT_TRUE(outbox.append(record("first")).isOk());
  ASSERT_TRUE(outbox.append(record("second")).isOk());
  auto loaded = outbox.load();
  ASSERT_TRUE(loaded.isOk());
  ASSERT_EQ(loaded->size(), 2u);
  EXPECT_EQ((*loaded)[0].input.summary, "first");
  EXPECT_EQ((*loaded)[1].input.summary, "second");
  ASSERT_TRUE(outbox.remove((*loaded)[0]).isOk());
  loaded = outbox.load();
  ASSERT_TRUE(loaded.isOk());
  ASSERT_EQ(loaded->size(), 1u);
  EXPECT_EQ((*loaded)[0].input.summary, "second");
}

TEST_F(TeamOutboxTest, ARecordAppendedAfterATornLineIsKept) {
  TeamOutbox outbox(path_);
  ASSERT_TRUE(outbox.append(record("before the tear")).isOk());
  {
    std::ofstream torn(path_, std::ios::app);
    torn << R"({"project_root":"/p","input":{"summary":"never acknow)";  // no end, no newline
  }
  ASSERT_TRUE(outbox.append(record("acknowledged after the tear")).isOk());
  auto loaded = outbox.load();
  ASSERT_TRUE(loaded.isOk());
  ASSERT_EQ(loaded->size(), 2u) << "the record after the torn line was read as part of it";
  EXPECT_EQ((*loaded)[0].input.summary, "before the tear");
  EXPECT_EQ((*loaded)[1].input.summary, "acknowledged after the tear");
  // Sending the first removes exactly it; the acknowledged one stays.
  ASSERT_TRUE(outbox.remove((*loaded)[0]).isOk());
  loaded = outbox.load();
  ASSERT_TRUE(loaded.isOk());
  ASSERT_EQ(loaded->size(), 1u);
  EXPECT_EQ((*loaded)[0].input.summary, "acknowledged after the tear");
}

// Two drains of one outbox file (two memqds on one data dir): each removes the record it sent, never one the other
// appended meanwhile.
TEST_F(TeamOutboxTest, TwoDrainsOfOneFileRemoveOnlyWhatTheySent) {
  TeamOutbox a(path_);
  TeamOutbox b(path_);
  ASSERT_TRUE(a.append(record("queued first")).isOk());
  auto seenByA = a.load();
  auto seenByB = b.load();
  ASSERT_TRUE(seenByA.isOk() && seenByB.isOk());
  ASSERT_EQ(seenByA->size(), 1u);
  ASSERT_EQ(seenByB->size(), 1u);
  ASSERT_TRUE(a.remove((*seenByA)[0]).isOk());       // A sent it
  ASSERT_TRUE(b.append(record("queued while they drained")).isOk());
  ASSERT_TRUE(b.remove((*seenByB)[0]).isOk());       // B sent it too (the server dedups): it is gone already
  auto left = a.load();
  ASSERT_TRUE(left.isOk());
  ASSERT_EQ(left->size(), 1u) << "a record appended during the drains was removed unsent";
  EXPECT_EQ((*left)[0].input.summary, "queued while they drained");
}

}  // namespace
}  // namespace memq::test
