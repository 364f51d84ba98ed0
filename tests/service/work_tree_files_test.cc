// readWorkTreeVersion's cache of work-tree files: a file that has settled and not changed is served without being
// read again; any change to it (even one of the same size given back its old modification time) is read; a file
// written moments ago is read every time (it could change again within its timestamp tick), its hash and counts
// reused only when its bytes are the last read's.
#include <gtest/gtest.h>
#include <fcntl.h>
#include <sys/stat.h>

#include <chrono>
#include <fstream>
#include <thread>

#include "daemon/service/file_anchors.h"
#include "daemon/util/file_stamp.h"
#include "tests/unit/git/git_fixture.h"

namespace memq {
namespace {

using memq::testing::TempDir;

void writeFile(const std::string& path, const std::string& content) { std::ofstream(path, std::ios::binary) << content; }

// Sets the file's modification time `secondsAgo` into the past, so it has settled.
void age(const std::string& path, int secondsAgo) {
  timespec times[2];
  clock_gettime(CLOCK_REALTIME, &times[0]);
  times[0].tv_sec -= secondsAgo;
  times[1] = times[0];
  ASSERT_EQ(utimensat(AT_FDCWD, path.c_str(), times, 0), 0);
}

TEST(WorkTreeFilesTest, AFileWrittenMomentsAgoIsReadEveryTime) {
  TempDir tmp;
  const std::string path = tmp.path() + "/a.c";
  writeFile(path, "one\ntwo\n");
  auto first = readWorkTreeVersion(tmp.path(), "a.c", "files");
  auto second = readWorkTreeVersion(tmp.path(), "a.c", "files");
  ASSERT_TRUE(first.isOk() && second.isOk());
  EXPECT_EQ(*(*first)->content, "one\ntwo\n");
  EXPECT_EQ((*first)->lines, 2u);
  EXPECT_EQ((*first)->blobId, gitBlobId("one\ntwo\n"));
  EXPECT_EQ(*first, *second);  // the same bytes read again: the first read's hash and counts, not computed again
  // Rewritten within the same moment, the same size, the modification time given back: read, so seen.
  struct stat before {};
  ASSERT_EQ(::stat(path.c_str(), &before), 0);
  writeFile(path, "ONE\nTWO\n");
  const timespec times[2] = {before.st_atim, before.st_mtim};
  ASSERT_EQ(utimensat(AT_FDCWD, path.c_str(), times, 0), 0);
  auto third = readWorkTreeVersion(tmp.path(), "a.c", "files");
  ASSERT_TRUE(third.isOk());
  EXPECT_EQ(*(*third)->content, "ONE\nTWO\n");
  EXPECT_EQ((*third)->blobId, gitBlobId("ONE\nTWO\n"));
  auto fourth = readWorkTreeVersion(tmp.path(), "a.c", "files");
  ASSERT_TRUE(fourth.isOk());
  EXPECT_EQ((*fourth)->blobId, gitBlobId("ONE\nTWO\n"));
}

TEST(WorkTreeFilesTest, AnEditOfTheSameSizeWithTheOldModificationTimeIsStillSeen) {
  TempDir tmp;
  const std::string path = tmp.path() + "/a.c";
  writeFile(path, "one\ntwo\n");
  age(path, 60);
  // The change time is the write's own, so the file has not settled by ctime yet: nothing is cached, and the edit
  // below is seen. The same holds when it has settled, because the edit moves ctime (the next test).
  auto before = readWorkTreeVersion(tmp.path(), "a.c", "files");
  ASSERT_TRUE(before.isOk());
  writeFile(path, "ONE\nTWO\n");
  age(path, 60);
  auto after = readWorkTreeVersion(tmp.path(), "a.c", "files");
  ASSERT_TRUE(after.isOk());
  EXPECT_EQ(*(*after)->content, "ONE\nTWO\n");
  EXPECT_EQ((*after)->blobId, gitBlobId("ONE\nTWO\n"));
}

TEST(WorkTreeFilesTest, ASettledFileIsServedFromTheCacheUntilItChanges) {
  TempDir tmp;
  const std::string path = tmp.path() + "/a.c";
  writeFile(path, "one\ntwo\nthree\n");
  age(path, 60);
  // Let ctime settle: it cannot be set, so wait it out (FileStamp::kSettleNs).
  std::this_thread::sleep_for(std::chrono::nanoseconds(FileStamp::kSettleNs) + std::chrono::milliseconds(100));
  auto first = readWorkTreeVersion(tmp.path(), "a.c", "files");
  auto again = readWorkTreeVersion(tmp.path(), "a.c", "files");
  ASSERT_TRUE(first.isOk() && again.isOk());
  EXPECT_EQ((*first)->content, (*again)->content);  // the same shared content: not read again
  writeFile(path, "ONE\nTWO\nTHREE\n");  // same size
  age(path, 60);                         // and the old modification time back
  auto edited = readWorkTreeVersion(tmp.path(), "a.c", "files");
  ASSERT_TRUE(edited.isOk());
  EXPECT_EQ(*(*edited)->content, "ONE\nTWO\nTHREE\n");
  EXPECT_EQ((*edited)->blobId, gitBlobId("ONE\nTWO\nTHREE\n"));
}

}  // namespace
}  // namespace memq
