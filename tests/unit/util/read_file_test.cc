// readAllAndClose: a file read whole from where it stands, reading stopped past the limit (and the excess shown), a
// failed read refused, and the descriptor closed either way.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <fstream>
#include <string>

#include "daemon/util/read_file.h"

namespace memq {
namespace {

class ReadFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/memq-read-file-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  int openWith(const std::string& content) {
    const std::string path = dir_ + "/f";
    std::ofstream(path, std::ios::binary) << content;
    return ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  }

  std::string dir_;
};

TEST_F(ReadFileTest, ReadsTheWholeFileAndClosesIt) {
  const std::string content(200000, 'x');  // more than one read's buffer
  const int fd = openWith(content);
  ASSERT_GE(fd, 0);
  auto read = readAllAndClose(fd, content.size(), content.size());
  ASSERT_TRUE(read.has_value());
  EXPECT_EQ(*read, content);
  EXPECT_EQ(::fcntl(fd, F_GETFD), -1);  // closed
  EXPECT_EQ(readAllAndClose(openWith(""), 10), std::string());
}

TEST_F(ReadFileTest, StopsPastTheLimitWithMoreThanTheLimitRead) {
  const int fd = openWith(std::string(200000, 'y'));
  ASSERT_GE(fd, 0);
  auto read = readAllAndClose(fd, 1000);
  ASSERT_TRUE(read.has_value());
  EXPECT_GT(read->size(), 1000u);  // too large, and the caller can say by how much at least
  EXPECT_LE(read->size(), 1000u + 65536u);  // stopped, not read to the end
  EXPECT_EQ(::fcntl(fd, F_GETFD), -1);
}

TEST_F(ReadFileTest, AFailedReadIsRefused) {
  const int fd = ::open(dir_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);  // read(2) on a directory fails
  ASSERT_GE(fd, 0);
  const bool read = readAllAndClose(fd, 1000).has_value();
  const int error = errno;
  EXPECT_FALSE(read);
  EXPECT_EQ(error, EISDIR);
  EXPECT_EQ(::fcntl(fd, F_GETFD), -1);
}

}  // namespace
}  // namespace memq
