// FileStamp and PathStamps: a file's stamp changes with its content, its replacement and its removal; stamps taken
// together tell a change of any one path, trust only what had settled, and compare by path alone when asked.
#include "daemon/util/file_stamp.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <string>

namespace memq {
namespace {

class FileStampTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/memq-file-stamp-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::string write(const std::string& name, const std::string& content) {
    const std::string path = dir_ + "/" + name;
    std::ofstream(path, std::ios::binary | std::ios::trunc) << content;
    return path;
  }

  std::string dir_;
};

TEST_F(FileStampTest, AStampFollowsTheFileAtItsPath) {
  const std::string path = write("a", "one");
  const auto first = FileStamp::ofPath(path);
  ASSERT_TRUE(first.has_value());
  EXPECT_EQ(FileStamp::ofPath(path), first);
  write("a", "three");  // another size
  EXPECT_NE(FileStamp::ofPath(path), first);
  std::filesystem::remove(path);
  EXPECT_FALSE(FileStamp::ofPath(path).has_value());
}

TEST_F(FileStampTest, AStampIsTrustedOnlyOnceTheFileWasLeftAloneLongEnough) {
  const auto stamp = FileStamp::ofPath(write("a", "one"));
  ASSERT_TRUE(stamp.has_value());
  const int64_t changed = std::max(stamp->modifiedNs, stamp->changedNs);
  EXPECT_FALSE(stamp->settledAt(changed + FileStamp::kSettleNs - 1));
  EXPECT_TRUE(stamp->settledAt(changed + FileStamp::kSettleNs));
  EXPECT_TRUE(stamp->settledAt(changed + 10, /*settleNs=*/10));
}

TEST_F(FileStampTest, PathStampsTellAChangeOfAnyOnePath) {
  const std::string a = write("a", "one");
  const std::string b = write("b", "two");
  const std::string absent = dir_ + "/absent";
  PathStamps stamps;
  stamps.add(a);
  stamps.add(absent);
  stamps.add(b);
  EXPECT_TRUE(stamps.unchanged());

  write("b", "changed");
  EXPECT_FALSE(stamps.unchanged()) << "a change of the last path";

  PathStamps again;
  again.add(a);
  again.add(absent);
  again.add(b);
  EXPECT_TRUE(again.unchanged());
  write("absent", "now here");
  EXPECT_FALSE(again.unchanged()) << "a path that had nothing now has a file";
}

TEST_F(FileStampTest, PathStampsSettleOnlyWhenEveryStampHas) {
  const std::string a = write("a", "one");
  PathStamps stamps;
  stamps.add(dir_ + "/absent");  // nothing there: needs no settling
  stamps.add(a);
  const auto stamp = FileStamp::ofPath(a);
  ASSERT_TRUE(stamp.has_value());
  const int64_t changed = std::max(stamp->modifiedNs, stamp->changedNs);
  EXPECT_FALSE(stamps.settledAt(changed + 9, /*settleNs=*/10));
  EXPECT_TRUE(stamps.settledAt(changed + 10, /*settleNs=*/10));
  EXPECT_TRUE(PathStamps{}.settledAt(0));
}

TEST_F(FileStampTest, PathStampsCompareByStampOrByPathAlone) {
  const std::string a = write("a", "one");
  const std::string b = write("b", "two");
  PathStamps before;
  before.add(a);
  before.add(b);
  write("a", "changed");
  PathStamps after;
  after.add(a);
  after.add(b);
  EXPECT_NE(before, after);
  EXPECT_TRUE(before.samePaths(after));

  PathStamps reordered;
  reordered.add(b);
  reordered.add(a);
  EXPECT_FALSE(after.samePaths(reordered));
  PathStamps shorter;
  shorter.add(a);
  EXPECT_FALSE(after.samePaths(shorter));
  EXPECT_FALSE(shorter.samePaths(after));

  PathStamps same;
  same.add(a);
  same.add(b);
  EXPECT_EQ(after, same);
}

}  // namespace
}  // namespace memq
