// The memory model's pure rules: input validation (errors name the field), truncation, topics, path normalisation.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include "daemon/model/file_path.h"
#include "daemon/model/memory_input.h"

namespace memq {
namespace {

std::string fieldOf(const Status& s) { return s.data().is_object() ? s.data().value("field", "") : ""; }

TEST(ModelTest, RefusesBadValuesNamingTheField) {
  struct Case {
    SaveInput input;
    std::string field;
  } cases[] = {
      {{.summary = ""}, "summary"},
      {{.summary = "   \n\t "}, "summary"},
      {{.summary = "ok", .category = std::string("opinion")}, "category"},
      {{.summary = "ok", .files = {"../etc/passwd"}}, "files[0]"},
      {{.summary = "ok", .files = {"src/a.c", "/etc/passwd"}}, "files[1]"},
      {{.summary = "bad \xff\xfe utf8"}, "summary"},
      {{.summary = "ok", .details = "bad \xc3"}, "details"},
      {{.summary = "ok", .topics = {"fine", "\xed\xa0\x80"}}, "topics[1]"},
      {{.summary = "ok", .source = "robot"}, "source"},
  };
  for (const auto& c : cases) {
    auto r = normalizeSave(c.input, "/work/project");
    ASSERT_FALSE(r.isOk()) << c.field;
    // A path outside the root is Forbidden rather than malformed (PROTOCOL.md); every refusal names its field.
    const bool outside = c.field.rfind("files[", 0) == 0;
    EXPECT_EQ(r.status().code(), outside ? ErrorCode::kForbidden : ErrorCode::kInvalidParams) << c.field;
    EXPECT_EQ(fieldOf(r.status()), c.field) << r.status().message();
  }
  SaveInput seventeen{.summary = "ok"};
  for (int i = 0; i < 17; ++i) seventeen.files.push_back("f" + std::to_string(i));
  auto r = normalizeSave(seventeen, "/work/project");
  ASSERT_FALSE(r.isOk());
  EXPECT_EQ(fieldOf(r.status()), "files");
}

TEST(ModelTest, TruncatesLongTextWithAWarningAndHashesWhatIsStored) {
  SaveInput in{.summary = std::string(250, 'a'), .details = std::string(2100, 'b')};
  auto r = normalizeSave(in, "");
  ASSERT_TRUE(r.isOk());
  EXPECT_EQ(r->summary.size(), 200u);
  EXPECT_EQ(r->summary.substr(197), "...");
  EXPECT_EQ(r->details.size(), 2000u);
  EXPECT_TRUE(r->truncated);
  EXPECT_EQ(r->warnings.size(), 2u);
}

TEST(ModelTest, TopicsAreTrimmedDedupedCaseInsensitivelyAndCapped) {
  SaveInput in{.summary = "ok", .topics = {" Auth ", "auth", "AUTH", "jwt", "", "a", "b", "c", "d", "e", "f", "g"}};
  auto r = normalizeSave(in, "");
  ASSERT_TRUE(r.isOk());
  EXPECT_EQ(r->topics, (std::vector<std::string>{"Auth", "jwt", "a", "b", "c", "d", "e", "f"}));
  EXPECT_EQ(r->warnings.size(), 1u);
}

TEST(ModelTest, PathsAreNormalisedToRootRelativePosix) {
  const std::string root = "/work/project";
  struct Case {
    std::string in, out;
  } ok[] = {{"./src/a.ts", "src/a.ts"},      {"src//b/../a.ts", "src/a.ts"}, {"src\\win\\x.c", "src/win/x.c"},
            {"/work/project/lib/x.py", "lib/x.py"}, {"a/./b/", "a/b"}};
  for (const auto& c : ok) {
    auto r = normalizeFilePath(c.in, root, "files[0]");
    ASSERT_TRUE(r.isOk()) << c.in << ": " << r.status().message();
    EXPECT_EQ(*r, c.out);
  }
  // Outside the root is Forbidden (PROTOCOL.md's error table); a malformed path is InvalidParams. Both name the field.
  for (const char* outside : {"../x", "a/../../x", "/work/projectx/a", "/etc/passwd", "/../x"}) {
    auto r = normalizeFilePath(outside, root, "files[0]");
    ASSERT_FALSE(r.isOk()) << outside;
    EXPECT_EQ(r.status().code(), ErrorCode::kForbidden) << outside;
    EXPECT_EQ(r.status().data()["field"], "files[0]") << outside;
  }
  for (const char* bad : {"", ".", "/work/project"}) {
    auto r = normalizeFilePath(bad, root, "files[0]");
    ASSERT_FALSE(r.isOk()) << bad;
    EXPECT_EQ(r.status().code(), ErrorCode::kInvalidParams) << bad;
  }
}

TEST(ModelTest, SymlinkOutOfTheRootIsRefused) {
  namespace fs = std::filesystem;
  fs::path dir = fs::temp_directory_path() / ("memq-model-" + std::to_string(::getpid()));
  fs::create_directories(dir / "root");
  fs::create_symlink("/etc", dir / "root" / "etc-link");
  auto r = normalizeFilePath("etc-link/passwd", (dir / "root").string(), "files[0]");
  EXPECT_FALSE(r.isOk());
  EXPECT_EQ(r.status().code(), ErrorCode::kForbidden);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace memq
