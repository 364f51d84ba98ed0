// The memory model's pure rules: input validation (errors name the field), truncation, topics, path normalisation.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

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
    // A path outside the root is Forbidden rather than malformed (docs/protocol.md); every refusal names its field.
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
  // Outside the root is Forbidden (docs/protocol.md's error table); a malformed path is InvalidParams. Both name the field.
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

TEST(ModelTest, PathsUnderARootReachedThroughASymlinkAreCheckedAgainstItsRealPathEachOfThem) {
  // The root is named through a symlink, so its real path differs from its name; it is resolved once for the
  // request's paths, and every existing path is still checked against it: those inside are kept, one that
  // escapes through a symlink is refused wherever it stands in the list.
  namespace fs = std::filesystem;
  fs::path dir = fs::temp_directory_path() / ("memq-model-roots-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir / "real-root" / "src");
  fs::create_directories(dir / "outside");
  std::ofstream(dir / "real-root" / "src" / "a.c") << "a";
  std::ofstream(dir / "real-root" / "b.c") << "b";
  std::ofstream(dir / "outside" / "secret.txt") << "s";
  fs::create_symlink(dir / "real-root", dir / "root-link");
  fs::create_symlink(dir / "outside", dir / "real-root" / "out");
  const std::string root = (dir / "root-link").string();

  auto kept = normalizeFiles({"src/a.c", "b.c", "missing.c"}, root);
  ASSERT_TRUE(kept.isOk()) << kept.status().message();
  EXPECT_EQ(*kept, (std::vector<std::string>{"src/a.c", "b.c", "missing.c"}));
  for (const std::vector<std::string>& files : {std::vector<std::string>{"src/a.c", "out/secret.txt"},
                                                std::vector<std::string>{"out/secret.txt", "b.c"},
                                                std::vector<std::string>{"b.c", "src/a.c", "out/secret.txt"}}) {
    auto refused = normalizeFiles(files, root);
    ASSERT_FALSE(refused.isOk());
    EXPECT_EQ(refused.status().code(), ErrorCode::kForbidden);
    const size_t escaping = static_cast<size_t>(std::find(files.begin(), files.end(), "out/secret.txt") - files.begin());
    EXPECT_EQ(fieldOf(refused.status()), "files[" + std::to_string(escaping) + "]");
  }
  fs::remove_all(dir);
}

TEST(ModelTest, APathLongerThanTheKernelTakesIsRefusedNamingTheField) {
  auto r = normalizeFiles({"src/a.c", "src/" + std::string(100 * 1024, 'x')}, "/work/project");
  ASSERT_FALSE(r.isOk());
  EXPECT_EQ(r.status().code(), ErrorCode::kInvalidParams);
  EXPECT_EQ(fieldOf(r.status()), "files[1]");
  EXPECT_LT(r.status().message().size(), 200u) << "the message must not quote the path";
  // The bound itself is accepted: PATH_MAX less the NUL that ends a path.
  std::string longest = "src/" + std::string(kMaxPathBytes - 4, 'y');
  ASSERT_EQ(longest.size(), kMaxPathBytes);
  auto atBound = normalizeFilePath(longest, "/work/project", "files[0]");
  ASSERT_TRUE(atBound.isOk()) << atBound.status().message();
  EXPECT_FALSE(normalizeFilePath(longest + "z", "/work/project", "files[0]").isOk());
}

TEST(ModelTest, APathHoldingACredentialIsRefusedWithoutQuotingIt) {
  const std::string key = std::string("AKIA") + "Q3EGRJ7N2XW5Z4MC";
  for (const std::string& path : {"keys/" + key + ".txt", "/work/project/" + key, "a/./b/../" + key}) {
    SCOPED_TRACE(path);
    auto r = normalizeFilePath(path, "/work/project", "files[3]");
    ASSERT_FALSE(r.isOk());
    EXPECT_EQ(r.status().code(), ErrorCode::kInvalidParams);
    EXPECT_EQ(fieldOf(r.status()), "files[3]");
    EXPECT_EQ(r.status().data()["kinds"], nlohmann::json::array({"aws_access_key"}));
    EXPECT_EQ(r.status().toString().find(key), std::string::npos) << r.status().toString();
  }
  // Ordinary paths that mention secrets by name are fine.
  for (const char* path : {"src/secrets/token_store.cc", "config/password_policy.md", "docs/api-key-rotation.md"}) {
    EXPECT_TRUE(normalizeFilePath(path, "/work/project", "files[0]").isOk()) << path;
  }
}

TEST(ModelTest, DotDotAfterASymlinkIsResolvedAsTheKernelResolvesIt) {
  namespace fs = std::filesystem;
  fs::path dir = fs::temp_directory_path() / ("memq-model-dotdot-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir / "root" / "a" / "b");
  fs::create_directories(dir / "outside");
  const std::string root = (dir / "root").string();
  fs::create_symlink("a/b", dir / "root" / "link");              // root/link -> root/a/b
  fs::create_symlink("../outside", dir / "root" / "out");        // root/out -> dir/outside
  fs::create_symlink("nowhere", dir / "root" / "dangling");
  fs::create_directories(dir / "root" / "src");
  fs::create_symlink("../a/b", dir / "root" / "src" / "link");  // root/src/link -> root/a/b

  struct Case {
    std::string in, out;
  } ok[] = {
      {"link/../x", "a/x"},                   // the kernel: root/a/b/.. is root/a
      {"src/link/../x", "a/x"},
      {"link/../../src/y.c", "src/y.c"},
      {"link/../b/../x", "a/x"},
      {root + "/src/link/../x", "a/x"},       // the absolute form alike
      {"link/f.txt", "link/f.txt"},          // no `..`: a symlinked file keeps the name it was given
      {"src/./link/", "src/link"},
      {"src/missing/../x", "src/x"},         // a name that does not exist cannot be a symlink: lexical
  };
  for (const auto& c : ok) {
    auto r = normalizeFilePath(c.in, root, "files[0]");
    ASSERT_TRUE(r.isOk()) << c.in << ": " << r.status().message();
    EXPECT_EQ(*r, c.out) << c.in;
    auto again = normalizeFilePath(*r, root, "files[0]");
    ASSERT_TRUE(again.isOk());
    EXPECT_EQ(*again, *r) << "normalising an accepted path again changes nothing";
  }
  // out/.. is dir/, outside the root, even though the text "out/../x" looks like root/x.
  auto outside = normalizeFilePath("out/../x", root, "files[0]");
  ASSERT_FALSE(outside.isOk());
  EXPECT_EQ(outside.status().code(), ErrorCode::kForbidden);
  EXPECT_EQ(fieldOf(outside.status()), "files[0]");
  // out/../root/x climbs back in: root/x, as the kernel sees it.
  auto backIn = normalizeFilePath("out/../root/x", root, "files[0]");
  ASSERT_TRUE(backIn.isOk()) << backIn.status().message();
  EXPECT_EQ(*backIn, "x");
  // `..` out of a symlink that resolves nowhere has no answer.
  auto dangling = normalizeFilePath("dangling/../x", root, "files[0]");
  ASSERT_FALSE(dangling.isOk());
  EXPECT_EQ(dangling.status().code(), ErrorCode::kInvalidParams);
  EXPECT_EQ(fieldOf(dangling.status()), "files[0]");
  fs::remove_all(dir);
}

TEST(ModelTest, AQueryNamesUpTo256FilesWhileAMemoryHolds16) {
  std::vector<std::string> files;
  for (int i = 0; i < 256; ++i) files.push_back("src/f" + std::to_string(i) + ".c");
  auto query = normalizeFiles(files, "/work/project", "files", kMaxQueryFiles);
  ASSERT_TRUE(query.isOk()) << query.status().message();
  EXPECT_EQ(query->size(), 256u);
  files.push_back("src/one-more.c");
  auto tooMany = normalizeFiles(files, "/work/project", "files", kMaxQueryFiles);
  ASSERT_FALSE(tooMany.isOk());
  EXPECT_EQ(fieldOf(tooMany.status()), "files");
  EXPECT_NE(tooMany.status().message().find("at most 256"), std::string::npos) << tooMany.status().message();
  files.resize(17);
  auto memory = normalizeFiles(files, "/work/project");
  ASSERT_FALSE(memory.isOk());
  EXPECT_NE(memory.status().message().find("at most 16 files may be attached"), std::string::npos);
}

}  // namespace
}  // namespace memq
