// replaceFileDurably: the new content replaces the old whole, the file is the owner's alone whatever the umask, no
// temporary file stays behind, and a file it cannot write is a StorageError naming the path, with the old file left
// as it was.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
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
  EXPECT_FALSE(std::filesystem::exists(path + ".tmp"));
}

TEST_F(DurableFileTest, AFileItCannotWriteIsAStorageErrorNamingItAndTheOldFileStays) {
  // The temporary's name is taken by a directory, so the write fails even for root.
  const std::string path = dir_ + "/settings";
  std::ofstream(path) << "kept\n";
  std::filesystem::create_directory(path + ".tmp");
  const Status st = replaceFileDurably(path, "lost\n");
  ASSERT_FALSE(st.isOk());
  EXPECT_EQ(st.code(), ErrorCode::kStorageError);
  EXPECT_NE(st.message().find(path + ".tmp"), std::string::npos) << st.message();
  EXPECT_EQ(contentOf(path), "kept\n");
}

}  // namespace
}  // namespace memq
