// Docs drift: the daemon's method table (memq::methodTable()), the method schemas (memq::methodSchemas()) and the
// method pages under docs/methods must agree, so a method cannot be added, renamed or given a new param on one
// side only; and every test the docs name (reliability.md's rows) must exist. The checker itself is shown to catch
// drift with a fake method table and fake pages.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <string>

#include "daemon/server/dispatcher.h"
#include "protocol/method_schemas.h"
#include "unit/docs/docs_drift.h"

namespace memq::docs {
namespace {

namespace fs = std::filesystem;

fs::path sourceDir() {
  if (const char* dir = std::getenv("MEMQ_SOURCE_DIR"); dir && *dir) return dir;
  return MEMQ_DOCS_TEST_SOURCE_DIR;  // running the binary by hand, outside ctest
}

std::set<std::string> tableNames() {
  std::set<std::string> names;
  for (const auto& [name, entry] : methodTable()) names.insert(name);
  return names;
}

std::map<std::string, std::set<std::string>> schemaParams() {
  std::map<std::string, std::set<std::string>> out;
  for (const auto& schema : methodSchemas()) {
    std::set<std::string>& params = out[std::string(schema.method)];
    if (auto it = schema.params.find("properties"); it != schema.params.end() && it->is_object()) {
      for (const auto& [name, sub] : it->items()) params.insert(name);
    }
  }
  return out;
}

std::string joined(const std::vector<std::string>& lines) {
  std::string out;
  for (const auto& l : lines) out += "  " + l + "\n";
  return out;
}

bool mentions(const std::vector<std::string>& problems, const std::string& needle) {
  for (const auto& p : problems) {
    if (p.find(needle) != std::string::npos) return true;
  }
  return false;
}

// A scratch docs/methods folder for the checker's own tests.
class ScratchDocs : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("memq-docs-test-" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  void page(const std::string& name, const std::string& text) { std::ofstream(dir_ / name) << text; }
  fs::path dir_;
};

TEST(DocsDrift, MethodTableEqualsSchemaFiles) {
  std::set<std::string> schemas;
  for (const auto& [name, params] : schemaParams()) schemas.insert(name);
  EXPECT_EQ(tableNames(), schemas);
  EXPECT_EQ(schemas.size(), 35u);
}

TEST(DocsDrift, EveryMethodHasAPageNamingEveryParam) {
  const fs::path dir = sourceDir() / "docs" / "methods";
  ASSERT_TRUE(fs::is_directory(dir)) << dir;
  auto problems = checkDocsDrift(tableNames(), schemaParams(), dir);
  EXPECT_TRUE(problems.empty()) << "docs drift:\n" << joined(problems)
                                << "(docs/tools/gen_method_docs.py regenerates the param tables)";
}

TEST(DocsDrift, PageNamesReplaceSlashes) {
  EXPECT_EQ(docPageName("memory/save"), "memory.save.md");
  EXPECT_EQ(docPageName("repo/blast_radius"), "repo.blast_radius.md");
  EXPECT_EQ(docPageName("export"), "export.md");
}

TEST_F(ScratchDocs, ReportsATableMethodWithoutSchemaOrPage) {
  // The real table and schemas against the real pages, plus one method only the (fake) table knows.
  std::set<std::string> table = tableNames();
  table.insert("memory/frobnicate");
  auto problems = checkDocsDrift(table, schemaParams(), sourceDir() / "docs" / "methods");
  EXPECT_TRUE(mentions(problems, "method memory/frobnicate is in the daemon's method table but has no schema"))
      << joined(problems);
  EXPECT_TRUE(mentions(problems, "method memory/frobnicate has no doc page (docs/methods/memory.frobnicate.md)"))
      << joined(problems);
  EXPECT_EQ(problems.size(), 2u) << joined(problems);
}

TEST_F(ScratchDocs, ReportsASchemaWithoutHandler) {
  page("memory.get.md", "`id`");
  auto problems = checkDocsDrift({}, {{"memory/get", {"id"}}}, dir_);
  ASSERT_EQ(problems.size(), 1u) << joined(problems);
  EXPECT_TRUE(mentions(problems, "memory/get has a schema but no handler")) << joined(problems);
}

TEST_F(ScratchDocs, ReportsAParamThePageDoesNotName) {
  page("memory.save.md", "# memory/save\n| `summary` | string |\nthe details go here\n");
  auto problems = checkDocsDrift({"memory/save"}, {{"memory/save", {"summary", "details"}}}, dir_);
  ASSERT_EQ(problems.size(), 1u) << joined(problems);
  EXPECT_TRUE(mentions(problems, "does not mention param `details` of memory/save")) << joined(problems);
}

TEST_F(ScratchDocs, ReportsAPageOfNoMethod) {
  page("memory.get.md", "`id`");
  page("memory.old.md", "gone");
  auto problems = checkDocsDrift({"memory/get"}, {{"memory/get", {"id"}}}, dir_);
  ASSERT_EQ(problems.size(), 1u) << joined(problems);
  EXPECT_TRUE(mentions(problems, "docs/methods/memory.old.md documents no method")) << joined(problems);
}

// Every test the docs name as covering a guarantee exists: a test renamed or deleted leaves no row naming nothing.
TEST(DocsDrift, EveryTestTheDocsNameIsDefined) {
  const auto problems = checkNamedTests(sourceDir() / "docs", sourceDir() / "tests");
  EXPECT_TRUE(problems.empty()) << joined(problems);
}

TEST_F(ScratchDocs, ReportsATestTheDocsNameThatNoTestDefines) {
  fs::create_directories(dir_ / "docs");
  fs::create_directories(dir_ / "tests");
  page("docs/reliability.md",
       "| a row | `StoreTest.Kept`, `StoreTest.Gone`, `Suite.Param`, `memory.save`, `a.b`, `StoreTest.Gone` |\n");
  page("tests/store_test.cc",
       "TEST_F(StoreTest, Kept) {}\nTEST_P(Suite,\n       Param) {}\nTYPED_TEST(StoreTest, Gone) {}\n");
  const auto problems = checkNamedTests(dir_ / "docs", dir_ / "tests");
  ASSERT_EQ(problems.size(), 1u) << joined(problems);
  EXPECT_EQ(problems[0], "reliability.md names test StoreTest.Gone, which no test defines");
}

TEST_F(ScratchDocs, CleanWhenEverythingAgrees) {
  page("memory.get.md", "| `id` | string |");
  page("stats.md", "no params besides the common ones");
  EXPECT_TRUE(checkDocsDrift({"memory/get", "stats"}, {{"memory/get", {"id"}}, {"stats", {}}}, dir_).empty());
}

}  // namespace
}  // namespace memq::docs
