// replaceFileDurably: the new content replaces the old whole, the file is the owner's alone whatever the umask, no
// temporary file stays behind, no symlink is written through, and a path it cannot replace is a StorageError naming
// it, with what was there left as it was.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>

#include "daemon/util/durable_file.h"
#include "protocol/error_code.h"

namespace memq {
namespace {

std::string contentOf(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

class DurableFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/memq-durable-file-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string dir_;
};

TEST_F(DurableFileTest, ReplacesTheWholeFileWithOwnerOnlyModeAndLeavesNoTemporary) {
  const std::string path = dir_ + "/settings";
  std::ofstream(path) << "a much longer first content than the second\n";
  const mode_t old = ::umask(022);
  const Status st = replaceFileDurably(path, "second\n");
  ::umask(old);
  ASSERT_TRUE(st.isOk()) << st.toString();
  EXPECT_EQ(contentOf(path), "second\n");
  struct stat s {};
  ASSERT_EQ(::stat(path.c_str(), &s), 0);
  EXPECT_EQ(s.st_mode & 0777, 0600u);
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(dir_), std::filesystem::directory_iterator()), 1)
      << "a temporary stayed beside the file";
}

// A symlink left where a temporary of a fixed name would go (a `.memq` of a downloaded tree) is not written through,
// nor one at the path itself: the file it points to keeps its content.
TEST_F(DurableFileTest, NoSymlinkBesideOrAtThePathIsWrittenThrough) {
  const std::string victim = dir_ + "/victim";
  std::ofstream(victim) << "the user's file\n";
  const std::string path = dir_ + "/settings";
  std::filesystem::create_symlink(victim, path + ".tmp");
  std::filesystem::create_symlink(victim, path);
  const Status st = replaceFileDurably(path, "written\n");
  ASSERT_TRUE(st.isOk()) << st.toString();
  EXPECT_EQ(contentOf(victim), "the user's file\n");
  EXPECT_FALSE(std::filesystem::is_symlink(path)) << "the link at the path was written through, not replaced";
  EXPECT_EQ(contentOf(path), "written\n");
}

TEST_F(DurableFileTest, AFileItCannotWriteIsAStorageErrorNamingItAndTheOldFileStays) {
  // The path is a directory: the rename over it fails, even for root.
  const std::string path = dir_ + "/settings";
  std::filesystem::create_directories(path + "/inside");
  const Status st = replaceFileDurably(path, "lost\n");
  ASSERT_FALSE(st.isOk());
  EXPECT_EQ(st.code(), ErrorCode::kStorageError);
  EXPECT_NE(st.message().find(path), std::string::npos) << st.message();
  EXPECT_TRUE(std::filesystem::is_directory(path + "/inside"));
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(dir_), std::filesystem::directory_iterator()), 1)
      << "the temporary stayed behind";
}

}  // namespace
}  // namespace memq
