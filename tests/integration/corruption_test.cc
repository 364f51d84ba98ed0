// Corrupt project databases under a running memqd: garbage over the header, garbage over interior pages, a file cut
// short. Requests for such a project answer StorageError naming the scope and its file; the global scope and healthy
// projects keep working in the same daemon; the daemon stays up; the corrupt file is left byte for byte as it was.
#include <SQLiteCpp/SQLiteCpp.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <random>

#include "memqd_fixture.h"

namespace memq::testing {
namespace {

using json = nlohmann::json;

std::string readBytes(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

void writeBytesAt(const fs::path& p, size_t offset, const std::string& bytes) {
  std::fstream f(p, std::ios::binary | std::ios::in | std::ios::out);
  f.seekp(static_cast<std::streamoff>(offset));
  f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

std::string garbage(size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::string s(n, '\0');
  for (auto& c : s) c = static_cast<char>(rng() & 0xff);
  return s;
}

// A string member of an error's data, "" when there is no such member.
std::string dataField(const Status& st, const std::string& key) {
  return st.data().is_object() && st.data().contains(key) && st.data()[key].is_string() ? st.data()[key].get<std::string>()
                                                                                          : "";
}

class CorruptionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = makeTempDir("corrupt");
    for (const char* name : {"header", "pages", "truncated", "fts", "trigram", "healthy"}) {
      fs::create_directories(dir_ / name / "src");
      writeTextFile(dir_ / name / "src" / "main.c", "int main(void) { return 0; }\n");
    }
    daemon_ = std::make_unique<Memqd>(dir_);
    ASSERT_TRUE(daemon_->start()) << daemon_->log();
  }
  void TearDown() override {
    daemon_.reset();
    fs::remove_all(dir_);
  }

  std::string root(const std::string& name) const { return (dir_ / name).string(); }
  fs::path dbOf(const std::string& name) const { return dir_ / name / ".memq" / "memory.db"; }

  // Saves `n` notes with details into a project (or the global scope when project is empty); returns their ids.
  std::vector<std::string> fill(RpcClient& c, const std::string& project, int n) {
    std::vector<std::string> ids;
    for (int i = 0; i < n; ++i) {
      json p = {{"summary", "note " + std::to_string(i) + " of " + (project.empty() ? "global" : project)},
                {"details", std::string(1500, static_cast<char>('a' + i % 26))},
                {"files", project.empty() ? json::array() : json::array({"src/main.c"})}};
      if (project.empty()) {
        p["scope"] = "global";
      } else {
        p["project_root"] = project;
      }
      auto r = c.call("memory/save", p);
      EXPECT_TRUE(r.isOk()) << r.status().toString();
      if (r) ids.push_back((*r)["id"]);
    }
    return ids;
  }

  fs::path dir_;
  std::unique_ptr<Memqd> daemon_;
};

TEST_F(CorruptionTest, ACorruptProjectAnswersStorageErrorWhileOtherScopesKeepWorking) {
  std::map<std::string, std::vector<std::string>> ids;
  {
    auto c = daemon_->client("");
    for (const char* name : {"header", "pages", "truncated", "fts", "trigram", "healthy"}) {
      ids[name] = fill(c, root(name), 60);
    }
    ids["global"] = fill(c, "", 5);
  }
  ASSERT_EQ(daemon_->stop(), 0);
  for (const char* name : {"header", "pages", "truncated", "fts", "trigram"}) {
    // A clean stop copies the WAL back, so the damage below is all SQLite will see.
    fs::path wal = dbOf(name).string() + "-wal";
    ASSERT_TRUE(!fs::exists(wal) || fs::file_size(wal) == 0) << wal;
    ASSERT_GT(fs::file_size(dbOf(name)), 16u * 4096) << name;
  }
  writeBytesAt(dbOf("header"), 0, garbage(8192, 1));
  const size_t size = fs::file_size(dbOf("pages"));
  writeBytesAt(dbOf("pages"), 4096, garbage(size - 2 * 4096, 2));  // every page but the first and the last
  fs::resize_file(dbOf("truncated"), (fs::file_size(dbOf("truncated")) / 2) & ~size_t{4095});
  // Damage SQLite finds only when a request reads it: the root page of a full-text index (the unicode lane's in
  // "fts", the trigram lane's in "trigram"), the rest intact.
  for (auto [name, table] : {std::pair{"fts", "memories_fts_data"}, std::pair{"trigram", "memories_fts_tri_data"}}) {
    int ftsRoot = 0, pageSize = 0;
    {
      SQLite::Database db(dbOf(name).string(), SQLite::OPEN_READONLY);
      ftsRoot = db.execAndGet(std::string("SELECT rootpage FROM sqlite_schema WHERE name = '") + table + "'").getInt();
      pageSize = db.execAndGet("PRAGMA page_size").getInt();
    }
    ASSERT_GT(ftsRoot, 1) << name;
    writeBytesAt(dbOf(name), static_cast<size_t>(ftsRoot - 1) * pageSize, garbage(pageSize, 3));
  }
  std::map<std::string, std::string> damaged;
  for (const char* name : {"header", "pages", "truncated", "fts", "trigram"}) damaged[name] = readBytes(dbOf(name));

  ASSERT_TRUE(daemon_->start()) << daemon_->log();
  auto c = daemon_->client("");
  for (int round = 0; round < 2; ++round) {  // the second round: nothing was "repaired" by the first
    for (const char* name : {"header", "pages", "truncated"}) {
      const std::string project = root(name);
      const std::vector<std::pair<std::string, json>> requests = {
          {"memory/save", {{"summary", "written into a corrupt file"}}},
          {"memory/list", json::object()},
          {"memory/get", {{"id", ids[name][3]}}},
          {"memory/recall", {{"query", "note 3"}, {"files", {"src/main.c"}}}},
          {"memory/search", {{"query", "note"}}},
          {"memory/hide", {{"id", ids[name][4]}}},
          {"stats", json::object()},
      };
      for (auto [method, params] : requests) {
        params["project_root"] = project;
        auto r = c.call(method, params);
        ASSERT_FALSE(r.isOk()) << name << " " << method << " answered " << r->dump().substr(0, 200);
        EXPECT_EQ(r.status().code(), ErrorCode::kStorageError) << name << " " << method << ": " << r.status().toString();
        EXPECT_EQ(dataField(r.status(), "scope"), "project") << name << " " << method << ": " << r.status().data();
        EXPECT_EQ(dataField(r.status(), "path"), dbOf(name).string()) << name << " " << method;
        if (round == 0 && method == "memory/save") std::printf("%s: %s\n", name, r.status().message().c_str());
      }
    }
    // A write that reaches the damaged index fails the same way; the intact rest of that file is still served.
    {
      auto r = c.call("memory/save", {{"summary", "indexed into a corrupt index"}, {"project_root", root("fts")}});
      ASSERT_FALSE(r.isOk()) << "fts memory/save answered " << r->dump().substr(0, 200);
      EXPECT_EQ(r.status().code(), ErrorCode::kStorageError) << r.status().toString();
      EXPECT_EQ(dataField(r.status(), "scope"), "project") << r.status().data();
      EXPECT_EQ(dataField(r.status(), "path"), dbOf("fts").string());
      if (round == 0) std::printf("fts: %s\n", r.status().message().c_str());
    }
    auto intact = c.call("memory/get", {{"id", ids["fts"][5]}, {"project_root", root("fts")}});
    EXPECT_TRUE(intact.isOk()) << intact.status().toString();
    // Recall and search never read the unicode lane's index: that lane is kept in memory, built from the rows
    // (intact here), so they still answer, and correctly. (mark_used off: a usage write to the intact row pages
    // would succeed and change the file, which the end of this test checks is byte for byte as damaged.)
    for (const char* method : {"memory/recall", "memory/search"}) {
      json p = {{"query", "note"}, {"project_root", root("fts")}, {"scope", "project"}};
      if (std::string(method) == "memory/recall") p["mark_used"] = false;
      auto r = c.call(method, p);
      ASSERT_TRUE(r.isOk()) << method << ": " << r.status().toString();
      ASSERT_FALSE((*r)["memories"].empty()) << method << ": " << r->dump().substr(0, 300);
      for (const auto& m : (*r)["memories"]) {
        EXPECT_NE(std::find(ids["fts"].begin(), ids["fts"].end(), m["id"].get<std::string>()), ids["fts"].end());
      }
    }
    // The trigram lane is read from its index: a recall that queries it (the reference ranker always does) and a
    // save that indexes into it answer StorageError naming the file.
    for (const auto& [method, params] : std::vector<std::pair<std::string, json>>{
             {"memory/recall", {{"query", "note 5"}, {"ranker", "reference"}}},
             {"memory/save", {{"summary", "indexed into a corrupt trigram index"}}}}) {
      json p = params;
      p["project_root"] = root("trigram");
      auto r = c.call(method, p);
      ASSERT_FALSE(r.isOk()) << "trigram " << method << " answered " << r->dump().substr(0, 200);
      EXPECT_EQ(r.status().code(), ErrorCode::kStorageError) << method << ": " << r.status().toString();
      EXPECT_EQ(dataField(r.status(), "scope"), "project") << method << ": " << r.status().data();
      EXPECT_EQ(dataField(r.status(), "path"), dbOf("trigram").string()) << method;
      if (round == 0) std::printf("trigram %s: %s\n", method.c_str(), r.status().message().c_str());
    }

    // The healthy project and the global scope, in the same daemon and on the same connection.
    auto got = c.call("memory/get", {{"id", ids["healthy"][7]}, {"project_root", root("healthy")}});
    ASSERT_TRUE(got.isOk()) << got.status().toString();
    EXPECT_EQ((*got)["summary"], "note 7 of " + root("healthy"));
    auto saved = c.call("memory/save", {{"summary", "healthy still takes saves " + std::to_string(round)},
                                        {"project_root", root("healthy")}});
    ASSERT_TRUE(saved.isOk()) << saved.status().toString();
    auto recalled = c.call("memory/recall", {{"query", "healthy still takes saves"}, {"project_root", root("healthy")}});
    ASSERT_TRUE(recalled.isOk()) << recalled.status().toString();
    auto list = c.call("memory/list", {{"project_root", root("healthy")}, {"scope", "project"}, {"limit", 1}});
    ASSERT_TRUE(list.isOk()) << list.status().toString();
    EXPECT_EQ((*list)["total"], 61 + round);
    auto global = c.call("memory/get", {{"id", ids["global"][2]}, {"scope", "global"}});
    ASSERT_TRUE(global.isOk()) << global.status().toString();
    auto globalSave = c.call("memory/save", {{"summary", "global still takes saves " + std::to_string(round)},
                                             {"scope", "global"}});
    ASSERT_TRUE(globalSave.isOk()) << globalSave.status().toString();
    EXPECT_TRUE(daemon_->running());
  }
  // Never overwritten or silently "repaired", by the requests or by a clean stop.
  ASSERT_EQ(daemon_->stop(), 0);
  for (const char* name : {"header", "pages", "truncated", "fts", "trigram"}) {
    EXPECT_TRUE(readBytes(dbOf(name)) == damaged[name]) << name << " was changed";
  }
}

}  // namespace
}  // namespace memq::testing
