// export and import against a real memqd: a round trip of 50,000 memories (past the 16 MiB a connection may leave
// unread, and past the 1 MiB limit of one message) byte-identical through the memq binary; export pages and the
// cursor; every kind of bad line refused with its line number and nothing written; an id that exists with other
// content, a dangling superseded_by and a tombstone for an active memory's text refused; imported tombstones in the
// audit journal; state_reason and tombstone reasons through the secret scanner; an import in parts staged until its
// last request; SIGKILL before and during the commit leaves nothing or everything, and a re-run completes it; anchors
// in large kept versions outside git round trip through version lines; staged imports are bounded by the memory
// they hold, and one import past the bound alone is InvalidParams.
#include <SQLiteCpp/Database.h>
#include <SQLiteCpp/Statement.h>
#include <gtest/gtest.h>

#include <random>
#include <set>

#include "memqd_fixture.h"

namespace memq::testing {
namespace {

using json = nlohmann::json;

const std::string kAws = std::string("AKIA") + "Q3EGRJ7N2XW5Z4MC";  // a credential the scanner knows

// A fixed id for memory n, as memq would hand one out.
std::string idOf(size_t n) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "00000000-0000-4000-8000-%012zu", n);
  return buf;
}

// A memory line as a client might write it (not byte-for-byte an export line: the daemon fills in the rest).
json memoryLine(size_t n, const std::string& details = "") {
  return {{"type", "memory"},
          {"id", idOf(n)},
          {"summary", "note " + std::to_string(n) + " about the build"},
          {"details", details},
          {"created_at", "2026-01-01T00:00:00.000Z"},
          {"use_count", static_cast<int>(n % 5)}};
}

std::string jsonl(const std::vector<json>& lines) {
  std::string out;
  for (const auto& l : lines) out += l.dump() + "\n";
  return out;
}

// Words that make texts unlike each other (a corpus of near-duplicates makes every save a similar-edge search hit).
std::string words(std::mt19937& rng, size_t count) {
  static const char* kSyllables[] = {"ka", "lo", "mi", "re", "tu", "sa", "ne", "po", "vi", "da", "go", "ru",
                                     "ze", "fi", "xo", "bu", "he", "ja", "wy", "qe"};
  std::string out;
  for (size_t i = 0; i < count; ++i) {
    if (i) out += ' ';
    const size_t len = 2 + rng() % 3;
    for (size_t k = 0; k < len; ++k) out += kSyllables[rng() % 20];
  }
  return out;
}

// An export read page by page through its cursor, each page checked as every page must be: at most
// kExportPageBytes (4 MiB), whole lines. A cursor that runs past 100 pages is a failure (the export does not end).
struct ExportedPages {
  std::string joined;
  int pages = 0;
};
ExportedPages exportByPages(RpcClient& c, json params) {
  ExportedPages out;
  params["cursor"] = "";
  while (true) {
    auto r = c.call("export", params);
    if (!r.isOk()) {
      ADD_FAILURE() << r.status().toString();
      return out;
    }
    const std::string page = (*r)["jsonl"].get<std::string>();
    EXPECT_LE(page.size(), size_t{4} << 20);
    EXPECT_TRUE(page.empty() || page.back() == '\n');
    out.joined += page;
    ++out.pages;
    if (!r->contains("next_cursor")) return out;
    if (out.pages >= 100) {
      ADD_FAILURE() << "the export does not end";
      return out;
    }
    params["cursor"] = (*r)["next_cursor"];
  }
}

class ImportExportTest : public MemqdTest {
 protected:
  void SetUp() override {
    makeWorkDir("impexp");
    initGitRepo(project_);
    startDaemon();
  }

  // The total of memory/list in the project over every state.
  int64_t total(Memqd& daemon, const std::string& project) {
    RpcClient c = daemon.client(project);
    auto r = c.call("memory/list", {{"state", "all"}, {"limit", 1}});
    EXPECT_TRUE(r.isOk()) << r.status().toString();
    return r ? (*r)["total"].get<int64_t>() : -1;
  }
  int64_t total() { return total(*daemon_, project_); }

  // import over one connection; the error (or ok).
  Result<json> importText(const std::string& text, json extra = json::object()) {
    RpcClient c = daemon_->client(project_);
    json params = {{"jsonl", text}};
    params.update(extra);
    return c.call("import", params, std::chrono::minutes(10));
  }

  // The project's database file (a git project keeps it in .git/memq).
  std::string dbPath(const std::string& project) const { return project + "/.git/memq/memory.db"; }
};

// ---- the round trip -----------------------------------------------------------------------------------------

TEST_F(ImportExportTest, RoundTripOf50000MemoriesIsByteIdenticalThroughTheCli) {
  // 50,000 memories, one in five with 2,000 characters of details, some hidden, superseded and rejected, files with
  // and without blob ids, tombstones: well past the 16 MiB a reply may leave unread and the 1 MiB of one request.
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  // Under a sanitizer memqd runs several times slower: fewer memories, each with details, still past both bounds.
  constexpr size_t kMemories = 12000;
  constexpr size_t kDetailsEvery = 1;
#else
  constexpr size_t kMemories = 50000;
  constexpr size_t kDetailsEvery = 5;
#endif
  std::mt19937 rng(17);
  std::string file;
  for (size_t n = 0; n < kMemories; ++n) {
    json m = {{"type", "memory"},
              {"id", idOf(n)},
              {"summary", "note " + std::to_string(n) + " " + words(rng, 6)},
              {"details", n % kDetailsEvery == 0 ? words(rng, 600).substr(0, 2000) : ""},
              {"topics", {"t" + std::to_string(n % 13)}},
              {"source", n % 3 ? "agent" : "user"},
              {"created_at", "2026-0" + std::to_string(1 + n % 9) + "-1" + std::to_string(n % 10) + "T10:00:0" +
                                 std::to_string(n % 10) + ".123Z"},
              {"last_used_at", "2026-11-01T00:00:00.000Z"},
              {"use_count", static_cast<int>(n % 40)},
              {"pinned", n % 97 == 0}};
    if (n % 7 == 0) m["files"] = {"src/f" + std::to_string(n % 50) + ".c"};
    if (n % 11 == 0) m["files"] = {{{"path", "lib/g.c"}, {"blob_id", "0123456789abcdef0123456789abcdef01234567"}}};
    if (n % 101 == 1) m["state"] = "hidden", m["state_reason"] = "not now";
    if (n % 101 == 2) m["state"] = "superseded", m["superseded_by"] = idOf(n - 2);
    if (n % 101 == 3) m["state"] = "rejected", m["state_reason"] = "wrong";
    file += m.dump() + "\n";
  }
  for (int t = 0; t < 20; ++t) {
    std::string hash(64, '0');
    const std::string digits = std::to_string(1000 + t);
    hash.replace(64 - digits.size(), digits.size(), digits);
    file += json{{"type", "tombstone"}, {"content_hash", hash}, {"memory_id", ""}, {"reason", "purged " + digits},
                 {"actor", "user:memq-cli"}, {"at", "2026-10-0" + std::to_string(1 + t % 9) + "T00:00:00.000Z"}}
                .dump() +
            "\n";
  }
  ASSERT_GT(file.size(), size_t{22} << 20) << "the file must pass what one message may carry many times over";
  const fs::path source = dir_ / "generated.jsonl";
  writeTextFile(source, file);

  CommandResult imported = daemon_->memq("--json import " + shellQuote(source.string()), project_);
  ASSERT_EQ(imported.exitCode, 0) << imported.err;
  json counts = json::parse(imported.out);
  EXPECT_EQ(counts["created"], kMemories) << counts.dump();
  EXPECT_EQ(counts["tombstones"], 20) << counts.dump();
  size_t rejected = 0;
  for (size_t n = 0; n < kMemories; ++n) rejected += n % 101 == 3;

  CommandResult first = daemon_->memq("export --state all", project_);
  ASSERT_EQ(first.exitCode, 0) << first.err;
  EXPECT_GT(first.out.size(), size_t{16} << 20) << "the export must pass the 16 MiB bound on unread replies";
  // Every memory, the 20 tombstones of the file and the one each rejected memory brought.
  EXPECT_EQ(static_cast<size_t>(std::count(first.out.begin(), first.out.end(), '\n')), kMemories + 20 + rejected);

  // The pages a client gets: each at most kExportPageBytes (4 MiB), whole lines, together the export.
  {
    RpcClient c = daemon_->client(project_);
    const ExportedPages exported = exportByPages(c, {{"state", "all"}});
    EXPECT_GT(exported.pages, 4);
    EXPECT_EQ(exported.joined, first.out);
    // Without a cursor an export this large is refused, not cut short.
    auto whole = c.call("export", {{"state", "all"}});
    ASSERT_FALSE(whole.isOk());
    EXPECT_EQ(whole.status().code(), ErrorCode::kInvalidParams);
    EXPECT_EQ(whole.status().data()["field"], "cursor");
    auto bogus = c.call("export", {{"cursor", "not a cursor"}});
    ASSERT_FALSE(bogus.isOk());
    EXPECT_EQ(bogus.status().data()["field"], "cursor");
  }

  // Into an empty data dir and another project, then out again: the same bytes.
  const fs::path exported = dir_ / "first.jsonl";
  writeTextFile(exported, first.out);
  const fs::path dir2 = dir_ / "second";
  const std::string project2 = (dir2 / "proj").string();
  initGitRepo(project2);
  Memqd second(dir2);
  ASSERT_TRUE(second.start()) << second.log();
  CommandResult again = second.memq("--json import " + shellQuote(exported.string()), project2);
  ASSERT_EQ(again.exitCode, 0) << again.err;
  EXPECT_EQ(json::parse(again.out)["created"], kMemories) << again.out;
  CommandResult roundTrip = second.memq("export --state all", project2);
  ASSERT_EQ(roundTrip.exitCode, 0) << roundTrip.err;
  EXPECT_EQ(roundTrip.out.size(), first.out.size());
  EXPECT_TRUE(roundTrip.out == first.out) << "export → import → export is not byte-identical";
}

// Outside git memq keeps every version an anchor is in, and export writes each in version lines of at most 512 KiB of
// content, before the first memory of its page anchored in it. A memory anchored in a file of 700 KB (one line of
// 0.9 MiB before: more than the CLI sends in one request, so its import failed) and one anchored in seven files of
// 2 MiB as well (one line of 20 MiB before: more than an export page may carry, so the export could not pass it) go
// through `memq export` and `memq import` into a fresh data dir, anchors and kept content intact, and out again the
// same bytes.
TEST_F(ImportExportTest, AnchorsInLargeKeptVersionsRoundTripOutsideGit) {
  const fs::path plain = dir_ / "plain";  // no repository: every anchored version is kept
  auto text = [](size_t bytes, const std::string& tag) {
    std::string out;
    for (size_t n = 1; out.size() + 100 < bytes; ++n) out += tag + " line " + std::to_string(n) + " of a large file\n";
    return out;
  };
  constexpr int kHuge = 7;
  writeTextFile(plain / "big.txt", text(700 * 1000, "big"));
  for (int k = 0; k < kHuge; ++k) {
    writeTextFile(plain / ("huge" + std::to_string(k) + ".txt"), text(size_t{2} << 20, "huge" + std::to_string(k)));
  }
  RpcClient c = daemon_->client(plain.string());
  auto one = c.call("memory/save", {{"summary", "the parser table in big.txt"},
                                    {"files", {{{"path", "big.txt"}, {"lines", {{10, 20}}}}}}},
                    std::chrono::minutes(2));
  ASSERT_TRUE(one.isOk()) << one.status().toString();
  json hugeFiles = json::array();
  for (int k = 0; k < kHuge; ++k) {
    hugeFiles.push_back(json{{"path", "huge" + std::to_string(k) + ".txt"}, {"lines", {{1, 3}}}});
  }
  hugeFiles.push_back(json{{"path", "big.txt"}, {"lines", {{30, 31}}}});
  auto many = c.call("memory/save", {{"summary", "the generated tables, every one of them"}, {"files", hugeFiles}},
                     std::chrono::minutes(2));
  ASSERT_TRUE(many.isOk()) << many.status().toString();
  const std::vector<std::string> ids = {(*one)["id"].get<std::string>(), (*many)["id"].get<std::string>()};

  // The pages: at most 4 MiB each, every line within what the CLI sends in one request, the memory lines short.
  const ExportedPages paged = exportByPages(c, json::object());
  ASSERT_FALSE(::testing::Test::HasFailure());
  const std::string& joined = paged.joined;
  EXPECT_GE(paged.pages, 5);
  size_t versionLines = 0;
  size_t memoryLines = 0;
  std::istringstream in(joined);
  for (std::string line; std::getline(in, line);) {
    EXPECT_LE(json(line).dump().size(), size_t{768} << 10) << "a line longer than the CLI sends in one request";
    const json j = json::parse(line);
    if (j["type"] == "version") {
      ++versionLines;
      EXPECT_EQ(j["scope"], "project");
    } else {
      ASSERT_EQ(j["type"], "memory") << line.substr(0, 200);
      ++memoryLines;
      EXPECT_LT(line.size(), size_t{16} << 10);
      for (const auto& f : j["files"]) EXPECT_TRUE(f.value("kept", false)) << f.dump();
    }
  }
  EXPECT_EQ(memoryLines, 2u);
  EXPECT_GE(versionLines, static_cast<size_t>(2 + 4 * kHuge));  // big.txt in 2 parts, each 2 MiB file in 4

  CommandResult exported = daemon_->memq("export", plain.string());
  ASSERT_EQ(exported.exitCode, 0) << exported.err;
  EXPECT_TRUE(exported.out == joined) << "the CLI's export is not the pages";
  const fs::path file = dir_ / "anchored.jsonl";
  writeTextFile(file, exported.out);

  // Into a fresh data dir and another project outside git.
  const fs::path dir2 = dir_ / "second";
  const fs::path plain2 = dir2 / "plain";
  fs::create_directories(plain2);
  Memqd second(dir2);
  ASSERT_TRUE(second.start()) << second.log();
  CommandResult imported = second.memq("--json import " + shellQuote(file.string()), plain2.string());
  ASSERT_EQ(imported.exitCode, 0) << imported.err;
  EXPECT_EQ(json::parse(imported.out)["created"], 2) << imported.out;
  RpcClient c2 = second.client(plain2.string());
  for (const auto& id : ids) {
    auto before = c.call("memory/get", {{"id", id}});
    auto after = c2.call("memory/get", {{"id", id}});
    ASSERT_TRUE(before.isOk()) << before.status().toString();
    ASSERT_TRUE(after.isOk()) << after.status().toString();
    ASSERT_EQ((*after)["files"].size(), (*before)["files"].size());
    for (size_t i = 0; i < (*before)["files"].size(); ++i) {
      const json& was = (*before)["files"][i];
      const json& now = (*after)["files"][i];
      ASSERT_TRUE(now.is_object()) << now.dump();
      EXPECT_EQ(now["path"], was["path"]);
      EXPECT_EQ(now["lines"], was["lines"]);
      EXPECT_EQ(now["blob"], was["blob"]);
    }
  }
  auto stats = c2.call("stats", json::object());
  ASSERT_TRUE(stats.isOk()) << stats.status().toString();
  EXPECT_EQ((*stats)["scopes"]["project"]["kept_versions"], kHuge + 1);
  // Out again: the same bytes, every kept version's content with them.
  CommandResult again = second.memq("export", plain2.string());
  ASSERT_EQ(again.exitCode, 0) << again.err;
  EXPECT_EQ(again.out.size(), exported.out.size());
  EXPECT_TRUE(again.out == exported.out) << "export → import → export is not byte-identical";
}

// ---- what a line may not be ---------------------------------------------------------------------------------

TEST_F(ImportExportTest, BadLinesAreRefusedWithTheirLineAndFieldAndNothingIsWritten) {
  const std::string good = jsonl({memoryLine(1), memoryLine(2)});
  struct Case {
    json line;
    std::string field;
  };
  json base = memoryLine(3);
  auto with = [&](const char* key, json value) {
    json l = base;
    l[key] = std::move(value);
    return l;
  };
  const std::vector<Case> cases = {
      {with("id", ""), "id"},
      {with("id", "../../etc/passwd"), "id"},
      {with("id", "notes/today"), "id"},
      {with("id", ".hidden"), "id"},
      {with("id", "ABCDEF00-0000-4000-8000-000000000003"), "id"},
      {with("id", 42), "id"},
      {with("use_count", 1e300), "use_count"},
      {with("use_count", -1), "use_count"},
      {with("use_count", 2147483648LL), "use_count"},
      {with("use_count", 2.5), "use_count"},
      {with("use_count", "7"), "use_count"},
      {with("created_at", "yesterday"), "created_at"},
      {with("created_at", "2026-02-31T00:00:00.000Z"), "created_at"},
      {with("updated_at", "2026-01-01 00:00:00"), "updated_at"},
      {with("last_used_at", 1700000000), "last_used_at"},
      {with("content_hash", "not-a-hash"), "content_hash"},
      {with("content_hash", std::string(64, 'G')), "content_hash"},
      {with("superseded_by", "../x"), "superseded_by"},
      {with("superseded_by", idOf(3)), "superseded_by"},  // itself
      {with("pinned", "yes"), "pinned"},
      {with("state", "deleted"), "state"},
      {with("topics", "build"), "topics"},
      {with("type", "note"), "type"},
      {json{{"type", "tombstone"}, {"content_hash", "abc"}}, "content_hash"},
      {json{{"type", "tombstone"}, {"content_hash", std::string(64, 'a')}, {"at", "soon"}}, "at"},
      {json{{"type", "memory"}, {"id", idOf(3)}}, "summary"},
  };
  for (const auto& c : cases) {
    auto r = importText(good + c.line.dump() + "\n");
    ASSERT_FALSE(r.isOk()) << c.line.dump();
    EXPECT_EQ(r.status().code(), ErrorCode::kInvalidParams) << c.line.dump();
    EXPECT_EQ(r.status().data()["field"], "jsonl");
    EXPECT_EQ(r.status().data()["line"], 3) << c.line.dump();
    EXPECT_NE(r.status().message().find("jsonl[line 3]." + c.field), std::string::npos)
        << c.line.dump() << " → " << r.status().message();
    EXPECT_EQ(total(), 0) << "written despite " << c.line.dump();
  }
  // Not JSON at all.
  auto r = importText(good + "{oops\n");
  ASSERT_FALSE(r.isOk());
  EXPECT_NE(r.status().message().find("jsonl[line 3]"), std::string::npos) << r.status().message();
  EXPECT_EQ(total(), 0);
  // A whole number written as a float, and the largest count, are fine.
  json fine = memoryLine(4);
  fine["use_count"] = 7.0;
  json most = memoryLine(5);
  most["use_count"] = 2147483647;
  ASSERT_TRUE(importText(good + fine.dump() + "\n" + most.dump() + "\n").isOk());
  EXPECT_EQ(total(), 4);
}

TEST_F(ImportExportTest, AnIdThatExistsWithOtherContentIsRefusedAndARerunIsDeduped) {
  ASSERT_TRUE(importText(jsonl({memoryLine(1), memoryLine(2)})).isOk());
  // The same lines again: nothing new (a re-run after a partial import finishes it).
  auto rerun = importText(jsonl({memoryLine(1), memoryLine(2), memoryLine(3)}));
  ASSERT_TRUE(rerun.isOk()) << rerun.status().toString();
  EXPECT_EQ((*rerun)["created"], 1);
  EXPECT_EQ((*rerun)["deduped"], 2);
  // Memory 2's id with other text: refused by line, and nothing of the import is written.
  json changed = memoryLine(2);
  changed["summary"] = "someone else's note";
  auto r = importText(jsonl({memoryLine(4), changed}));
  ASSERT_FALSE(r.isOk());
  EXPECT_EQ(r.status().code(), ErrorCode::kInvalidParams);
  EXPECT_EQ(r.status().data()["line"], 2);
  EXPECT_NE(r.status().message().find("jsonl[line 2].id"), std::string::npos) << r.status().message();
  EXPECT_EQ(total(), 3);
  RpcClient c = daemon_->client(project_);
  auto kept = c.call("memory/get", {{"id", idOf(2)}});
  ASSERT_TRUE(kept.isOk());
  EXPECT_EQ((*kept)["summary"], memoryLine(2)["summary"]);
  // Two lines of one import with the same id and different text: the second is refused.
  json twin = memoryLine(9);
  twin["summary"] = "a different ninth note";
  r = importText(jsonl({memoryLine(9), twin}));
  ASSERT_FALSE(r.isOk());
  EXPECT_EQ(r.status().data()["line"], 2);
  EXPECT_EQ(total(), 3);
}

TEST_F(ImportExportTest, ADanglingSupersededByIsRefused) {
  json old = memoryLine(1);
  old["state"] = "superseded";
  old["superseded_by"] = idOf(2);
  // The replacement later in the file is fine (export writes creation order, so it often comes after).
  auto ok = importText(jsonl({old, memoryLine(2)}));
  ASSERT_TRUE(ok.isOk()) << ok.status().toString();
  EXPECT_EQ((*ok)["created"], 2);
  // One the scope already holds is fine too.
  json older = memoryLine(3);
  older["state"] = "superseded";
  older["superseded_by"] = idOf(2);
  ASSERT_TRUE(importText(jsonl({older})).isOk());
  // One nobody holds is refused, naming the line.
  json dangling = memoryLine(4);
  dangling["state"] = "superseded";
  dangling["superseded_by"] = idOf(99);
  auto r = importText(jsonl({memoryLine(5), dangling}));
  ASSERT_FALSE(r.isOk());
  EXPECT_EQ(r.status().data()["line"], 2);
  EXPECT_NE(r.status().message().find("jsonl[line 2].superseded_by"), std::string::npos) << r.status().message();
  EXPECT_EQ(total(), 3);
}

// ---- tombstones ---------------------------------------------------------------------------------------------

TEST_F(ImportExportTest, ATombstoneForAnActiveMemorysTextIsRefusedAndTheMemoryStaysAsItWas) {
  const std::string id = save({{"summary", "Use npm for this repository"}});
  RpcClient c = daemon_->client(project_);
  auto m = c.call("memory/get", {{"id", id}});
  ASSERT_TRUE(m.isOk());
  const std::string hash = (*m)["content_hash"];
  json tomb = {{"type", "tombstone"}, {"content_hash", hash}, {"memory_id", "elsewhere-1"}, {"reason", "we use pnpm"},
               {"actor", "user:memq-cli"}, {"at", "2026-11-29T14:33:25.704Z"}};
  auto r = importText(jsonl({memoryLine(1), tomb}));
  ASSERT_FALSE(r.isOk());
  EXPECT_EQ(r.status().code(), ErrorCode::kInvalidParams);
  EXPECT_EQ(r.status().data()["line"], 2);
  EXPECT_NE(r.status().message().find("jsonl[line 2].content_hash"), std::string::npos) << r.status().message();
  EXPECT_NE(r.status().message().find(id), std::string::npos) << "the message names the memory";
  // Nothing changed: the memory is active, no tombstone came in, the other line was not written.
  auto after = c.call("memory/get", {{"id", id}});
  ASSERT_TRUE(after.isOk());
  EXPECT_EQ((*after)["state"], "active");
  auto exported = c.call("export", {{"state", "rejected"}});
  ASSERT_TRUE(exported.isOk());
  EXPECT_EQ((*exported)["jsonl"], "");
  EXPECT_EQ(total(), 1);
  // Once that memory is rejected, the same tombstone is welcome.
  ASSERT_TRUE(c.call("memory/reject", {{"id", id}, {"reason", "we use pnpm"}}).isOk());
  EXPECT_TRUE(importText(jsonl({tomb})).isOk());
}

TEST_F(ImportExportTest, AnImportedTombstoneIsInTheAuditJournalAndBlocksItsText) {
  // The hash of "Tests run with mocha" as the scope would compute it: taken from a save in another project.
  const std::string other = (dir_ / "other").string();
  initGitRepo(other);
  RpcClient o = daemon_->client(other);
  auto saved = o.call("memory/save", {{"summary", "Tests run with mocha"}});
  ASSERT_TRUE(saved.isOk());
  auto got = o.call("memory/get", {{"id", (*saved)["id"]}});
  ASSERT_TRUE(got.isOk());
  const std::string hash = (*got)["content_hash"];
  json tomb = {{"type", "tombstone"}, {"content_hash", hash}, {"memory_id", "0f000000-0000-4000-8000-000000000001"},
               {"reason", "we use vitest"}, {"actor", "user:memq-cli"}, {"at", "2026-11-29T14:33:25.704Z"}};
  auto r = importText(jsonl({tomb}));
  ASSERT_TRUE(r.isOk()) << r.status().toString();
  EXPECT_EQ((*r)["tombstones"], 1);
  RpcClient c = daemon_->client(project_);
  auto audit = c.call("audit/list", {{"scope", "project"}});
  ASSERT_TRUE(audit.isOk());
  int seen = 0;
  for (const auto& e : (*audit)["events"]) {
    if (e["action"] == "import" && e["detail"].value("tombstone", false)) {
      ++seen;
      EXPECT_EQ(e["detail"]["content_hash"], hash);
      EXPECT_EQ(e["memory_id"], "0f000000-0000-4000-8000-000000000001");
    }
  }
  EXPECT_EQ(seen, 1) << audit->dump();
  auto blocked = c.call("memory/save", {{"summary", "Tests run with mocha"}});
  ASSERT_TRUE(blocked.isOk());
  EXPECT_EQ((*blocked)["status"], "rejected");
  // The same tombstone again writes nothing and no second event.
  auto twice = importText(jsonl({tomb}));
  ASSERT_TRUE(twice.isOk());
  EXPECT_EQ((*twice)["tombstones"], 0);
  audit = c.call("audit/list", {{"scope", "project"}});
  seen = 0;
  for (const auto& e : (*audit)["events"]) seen += e["action"] == "import" && e["detail"].value("tombstone", false);
  EXPECT_EQ(seen, 1);
}

// ---- secrets ------------------------------------------------------------------------------------------------

TEST_F(ImportExportTest, StateReasonsAndTombstoneReasonsGoThroughTheSecretScanner) {
  json hidden = memoryLine(1);
  hidden["state"] = "hidden";
  hidden["state_reason"] = "rotated " + kAws;
  json tomb = {{"type", "tombstone"}, {"content_hash", std::string(64, 'a')}, {"reason", "leaked " + kAws}};
  auto r = importText(jsonl({hidden, tomb}));
  ASSERT_TRUE(r.isOk()) << r.status().toString();
  RpcClient c = daemon_->client(project_);
  auto exported = c.call("export", {{"state", "all"}});
  ASSERT_TRUE(exported.isOk());
  const std::string text = (*exported)["jsonl"];
  EXPECT_EQ(text.find(kAws), std::string::npos) << text;
  EXPECT_NE(text.find("rotated "), std::string::npos) << text;
  EXPECT_NE(text.find("leaked "), std::string::npos) << text;
  daemon_->stop();
  for (const char* suffix : {"", "-wal"}) {
    EXPECT_EQ(readTextFile(dbPath(project_) + suffix).find(kAws), std::string::npos) << "in memory.db" << suffix;
  }
  EXPECT_EQ(daemon_->log().find(kAws), std::string::npos);
}

TEST_F(ImportExportTest, RefuseModeRefusesACredentialInAReasonNamingTheLine) {
  daemon_.reset();
  startDaemon({"--secrets=refuse"});
  json hidden = memoryLine(2);
  hidden["state"] = "hidden";
  hidden["state_reason"] = "rotated " + kAws;
  auto r = importText(jsonl({memoryLine(1), hidden}));
  ASSERT_FALSE(r.isOk());
  EXPECT_EQ(r.status().code(), ErrorCode::kInvalidParams);
  EXPECT_NE(r.status().message().find("jsonl[line 2].state_reason"), std::string::npos) << r.status().message();
  EXPECT_EQ(r.status().message().find(kAws), std::string::npos);
  // The error's data is a line error's, as import.md gives it, with the credential's kinds.
  EXPECT_EQ(r.status().data().value("field", ""), "jsonl") << r.status().data().dump();
  EXPECT_EQ(r.status().data().value("line", 0), 2) << r.status().data().dump();
  EXPECT_TRUE(r.status().data().contains("kinds")) << r.status().data().dump();
  json tomb = {{"type", "tombstone"}, {"content_hash", std::string(64, 'b')}, {"reason", "leaked " + kAws}};
  r = importText(jsonl({tomb}));
  ASSERT_FALSE(r.isOk());
  EXPECT_NE(r.status().message().find("jsonl[line 1].reason"), std::string::npos) << r.status().message();
  EXPECT_EQ(total(), 0);
}

// ---- an import in parts -------------------------------------------------------------------------------------

TEST_F(ImportExportTest, AnImportInPartsWritesNothingUntilItsLastRequest) {
  RpcClient c = daemon_->client(project_);
  auto part = c.call("import", {{"jsonl", jsonl({memoryLine(1), memoryLine(2)})}, {"more", true}});
  ASSERT_TRUE(part.isOk()) << part.status().toString();
  EXPECT_EQ((*part)["staged_lines"], 2);
  EXPECT_FALSE(part->contains("created"));
  EXPECT_EQ(total(), 0) << "staged lines are not written";
  part = c.call("import", {{"jsonl", jsonl({memoryLine(3)})}, {"more", true}});
  ASSERT_TRUE(part.isOk());
  EXPECT_EQ((*part)["staged_lines"], 3);
  auto done = c.call("import", {{"jsonl", jsonl({memoryLine(4)})}});
  ASSERT_TRUE(done.isOk()) << done.status().toString();
  EXPECT_EQ((*done)["created"], 4);
  EXPECT_EQ(total(), 4);

  // A bad line in a later part: its number counts from the first part, and nothing of any part is written.
  ASSERT_TRUE(c.call("import", {{"jsonl", jsonl({memoryLine(5), memoryLine(6)})}, {"more", true}}).isOk());
  json bad = memoryLine(7);
  bad["use_count"] = -3;
  auto failed = c.call("import", {{"jsonl", jsonl({memoryLine(8), bad})}});
  ASSERT_FALSE(failed.isOk());
  EXPECT_EQ(failed.status().data()["line"], 4);
  EXPECT_EQ(total(), 4);
  // The failure dropped what was staged: the next import starts afresh.
  auto fresh = c.call("import", {{"jsonl", jsonl({memoryLine(9)})}});
  ASSERT_TRUE(fresh.isOk());
  EXPECT_EQ((*fresh)["created"], 1);
  EXPECT_EQ(total(), 5);

  // A connection that closes with lines staged leaves nothing behind.
  {
    RpcClient gone = daemon_->client(project_);
    ASSERT_TRUE(gone.call("import", {{"jsonl", jsonl({memoryLine(10)})}, {"more", true}}).isOk());
  }
  RpcClient next = daemon_->client(project_);
  auto alone = next.call("import", {{"jsonl", jsonl({memoryLine(11)})}});
  ASSERT_TRUE(alone.isOk());
  EXPECT_EQ((*alone)["created"], 1);
  EXPECT_EQ(total(), 6);
  EXPECT_FALSE(next.call("memory/get", {{"id", idOf(10)}}).isOk());

  // The parts of one import write one scope: a part for another is refused, and the import dropped.
  ASSERT_TRUE(next.call("import", {{"jsonl", jsonl({memoryLine(12)})}, {"more", true}}).isOk());
  auto elsewhere = next.call("import", {{"jsonl", jsonl({memoryLine(13)})}, {"scope", "global"}});
  ASSERT_FALSE(elsewhere.isOk());
  EXPECT_EQ(elsewhere.status().data()["field"], "scope");
  EXPECT_EQ(total(), 6);

  // A part refused before its lines are read (a project_root that does not exist) leaves the staged lines: the
  // retry goes on with them.
  ASSERT_TRUE(next.call("import", {{"jsonl", jsonl({memoryLine(14)})}, {"more", true}}).isOk());
  auto typo = next.call("import", {{"jsonl", jsonl({memoryLine(15)})}, {"more", true}, {"project_root", "/no/such/root"}});
  ASSERT_FALSE(typo.isOk());
  EXPECT_EQ(typo.status().code(), ErrorCode::kScopeUnavailable) << typo.status().toString();
  auto retried = next.call("import", {{"jsonl", jsonl({memoryLine(15)})}});
  ASSERT_TRUE(retried.isOk()) << retried.status().toString();
  EXPECT_EQ((*retried)["created"], 2) << "the part staged before the refused one was lost";
  EXPECT_EQ((*retried)["staged_lines"], 2);
  EXPECT_EQ(total(), 8);
}

TEST_F(ImportExportTest, TheCliNamesTheLineOfTheFileWhenScopesAreSplit) {
  // Line 1 goes to the global scope, lines 2 and 3 to the project: the project's import sees line 3 as its line 2.
  json global = memoryLine(1);
  global["scope"] = "global";
  json project = memoryLine(2);
  project["scope"] = "project";
  json bad = memoryLine(3);
  bad["scope"] = "project";
  bad["created_at"] = "last tuesday";
  const fs::path file = dir_ / "split.jsonl";
  writeTextFile(file, jsonl({global, project, bad}));
  CommandResult r = daemon_->memq("import " + shellQuote(file.string()), project_);
  EXPECT_EQ(r.exitCode, 1) << r.out << r.err;
  EXPECT_NE(r.err.find("jsonl[line 2].created_at"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("line 3 of " + file.string()), std::string::npos) << r.err;
  // Each scope's import is one transaction: the project got nothing.
  RpcClient c = daemon_->client(project_);
  auto listed = c.call("memory/list", {{"scope", "project"}, {"state", "all"}});
  ASSERT_TRUE(listed.isOk());
  EXPECT_EQ((*listed)["total"], 0);
}

// A line of `memq --scope team export` names the team scope, which import never writes (docs/team.md): the CLI sends
// it there, not to the project, memqd refuses it, and nothing is imported, not even the project lines before it.
TEST_F(ImportExportTest, TheCliImportsNothingFromAFileWithALineForTheTeamScope) {
  json team = memoryLine(1);
  team["scope"] = "team";
  const fs::path one = dir_ / "team.jsonl";
  writeTextFile(one, jsonl({team}));
  CommandResult r = daemon_->memq("import " + shellQuote(one.string()), project_);
  EXPECT_EQ(r.exitCode, 1) << r.out << r.err;
  EXPECT_NE(r.err.find("memq: "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("line 1 of " + one.string() + " names scope team"), std::string::npos) << r.err;
  EXPECT_EQ(total(), 0) << "the team line went to the project scope";

  json project = memoryLine(2);
  project["scope"] = "project";
  const fs::path mixed = dir_ / "mixed.jsonl";
  writeTextFile(mixed, jsonl({project, team}));
  CommandResult m = daemon_->memq("import " + shellQuote(mixed.string()), project_);
  EXPECT_EQ(m.exitCode, 1) << m.out << m.err;
  EXPECT_NE(m.err.find("line 2 of " + mixed.string() + " names scope team"), std::string::npos) << m.err;
  EXPECT_EQ(total(), 0) << "the project's lines were written before the team's were refused";
}

TEST_F(ImportExportTest, TheCliSendsALargeFileInRequestsUnderTheMessageLimit) {
  // 3 MiB of lines: refused whole by the 1 MiB message limit before; now sent in parts and written at once.
  std::mt19937 rng(5);
  std::vector<json> lines;
  for (size_t n = 0; n < 1600; ++n) lines.push_back(memoryLine(n, words(rng, 600).substr(0, 1990)));
  const std::string text = jsonl(lines);
  ASSERT_GT(text.size(), size_t{3} << 20);
  const fs::path file = dir_ / "large.jsonl";
  writeTextFile(file, text);
  CommandResult r = daemon_->memq("--json import " + shellQuote(file.string()), project_);
  ASSERT_EQ(r.exitCode, 0) << r.err;
  EXPECT_EQ(json::parse(r.out)["created"], 1600);
  EXPECT_EQ(total(), 1600);
  EXPECT_EQ(daemon_->log().find("exceeds the limit"), std::string::npos);
  int imports = 0;
  std::istringstream log(daemon_->log());
  for (std::string line; std::getline(log, line);) imports += line.find(" import id=") != std::string::npos;
  EXPECT_GE(imports, 4) << "several requests";
}

// ---- crashes ------------------------------------------------------------------------------------------------

TEST_F(ImportExportTest, Sigkill9DuringAnImportLeavesNothingOrEverythingAndARerunCompletesIt) {
  constexpr size_t kLines = 6000;
  std::mt19937 rng(9);
  std::vector<json> lines;
  for (size_t n = 0; n < kLines; ++n) lines.push_back(memoryLine(n, n % 3 ? "" : words(rng, 200).substr(0, 800)));
  const std::string text = jsonl(lines);
  // In requests of whole lines well under the 1 MiB limit of one message.
  std::vector<std::string> parts;
  for (size_t start = 0; start < text.size();) {
    size_t end = std::min(text.size(), start + (size_t{256} << 10));
    end = text.find('\n', end == text.size() ? end - 1 : end) + 1;
    parts.push_back(text.substr(start, end - start));
    start = end;
  }
  ASSERT_GE(parts.size(), 4u);
  auto stageAllButLast = [&](RpcClient& c) {
    for (size_t i = 0; i + 1 < parts.size(); ++i) {
      auto part = c.call("import", {{"jsonl", parts[i]}, {"more", true}});
      ASSERT_TRUE(part.isOk()) << part.status().toString();
    }
  };
  auto integrityOk = [&] {
    SQLite::Database db(dbPath(project_), SQLite::OPEN_READONLY);
    return db.execAndGet("PRAGMA integrity_check").getString() == "ok";
  };

  // Killed with all but the last request staged: nothing was written.
  {
    RpcClient c = daemon_->client(project_);
    stageAllButLast(c);
    daemon_->kill9();
  }
  ASSERT_TRUE(daemon_->start()) << daemon_->log();
  EXPECT_EQ(total(), 0);

  // Killed after the last request was sent, at several points of the commit: all or nothing, never part.
  for (int delayMs : {30, 200, 800, 4000}) {
    {
      RpcClient c = daemon_->client(project_);
      stageAllButLast(c);
      ASSERT_TRUE(c.sendRaw(json{{"jsonrpc", "2.0"}, {"id", 99}, {"method", "import"},
                                 {"params", {{"jsonl", parts.back()}}}}
                                .dump() +
                            "\n")
                      .isOk());
      std::this_thread::sleep_for(std::chrono::milliseconds(delayMs));
      daemon_->kill9();
    }
    EXPECT_TRUE(integrityOk());
    ASSERT_TRUE(daemon_->start()) << daemon_->log();
    const int64_t n = total();
    EXPECT_TRUE(n == 0 || n == static_cast<int64_t>(kLines)) << "a partial import after a kill at " << delayMs
                                                             << " ms: " << n << " memories";
    if (n == static_cast<int64_t>(kLines)) break;
    if (::testing::Test::HasFailure()) break;
  }

  // The same import run again: exactly the file, whatever the kills left.
  const fs::path file = dir_ / "crash.jsonl";
  writeTextFile(file, text);
  CommandResult r = daemon_->memq("--json import " + shellQuote(file.string()), project_);
  ASSERT_EQ(r.exitCode, 0) << r.err;
  json counts = json::parse(r.out);
  EXPECT_EQ(counts["created"].get<size_t>() + counts["deduped"].get<size_t>(), kLines) << counts.dump();
  EXPECT_EQ(total(), static_cast<int64_t>(kLines));
  daemon_->stop();
  EXPECT_TRUE(integrityOk());
}

// Forty connections staging imports must not hold forty times what one may: past --max-staged-import-bytes over all
// connections, a part is refused with Busy and its import dropped (its bytes given back), while the others go on.
TEST_F(ImportExportTest, ImportsStagedOnAllConnectionsShareOneBound) {
  daemon_.reset();
  startDaemon({"--max-staged-import-bytes", "1048576"});
  const std::string details(1000, 'd');
  std::vector<json> first, second;
  // 400 memories of about 1.8 KiB each as memqd holds them (0.45 MiB of JSONL): one import fits in 1 MiB, two do not.
  for (size_t i = 1; i <= 400; ++i) first.push_back(memoryLine(i, details));
  for (size_t i = 401; i <= 800; ++i) second.push_back(memoryLine(i, details));
  RpcClient a = daemon_->client(project_);
  RpcClient b = daemon_->client(project_);
  ASSERT_TRUE(a.call("import", {{"jsonl", jsonl(first)}, {"more", true}}).isOk());
  auto refused = b.call("import", {{"jsonl", jsonl(second)}, {"more", true}});
  ASSERT_FALSE(refused.isOk());
  EXPECT_EQ(refused.status().code(), ErrorCode::kBusy) << refused.status().toString();
  EXPECT_EQ(refused.status().data()["field"], "jsonl");
  EXPECT_EQ(total(), 0);
  // The first import is untouched by the refusal and writes everything it staged.
  auto done = a.call("import", {{"jsonl", ""}});
  ASSERT_TRUE(done.isOk()) << done.status().toString();
  EXPECT_EQ((*done)["created"], 400);
  // Written, its bytes are given back: the second connection's import now fits.
  auto again = b.call("import", {{"jsonl", jsonl(second)}});
  ASSERT_TRUE(again.isOk()) << again.status().toString();
  EXPECT_EQ((*again)["created"], 400);
  EXPECT_EQ(total(), 800);
  // A connection that closes with lines staged gives its bytes back too.
  {
    RpcClient gone = daemon_->client(project_);
    std::vector<json> third;
    for (size_t i = 801; i <= 1200; ++i) third.push_back(memoryLine(i, details));
    ASSERT_TRUE(gone.call("import", {{"jsonl", jsonl(third)}, {"more", true}}).isOk());
  }
  std::vector<json> fourth;
  for (size_t i = 1201; i <= 1600; ++i) fourth.push_back(memoryLine(i, details));
  bool fitted = false;
  for (int attempt = 0; attempt < 100 && !fitted; ++attempt) {
    // The closed connection is forgotten by memqd's I/O thread, shortly after the close.
    RpcClient c = daemon_->client(project_);
    auto r = c.call("import", {{"jsonl", jsonl(fourth)}});
    if (r.isOk()) {
      fitted = true;
      EXPECT_EQ((*r)["created"], 400);
    } else {
      ASSERT_EQ(r.status().code(), ErrorCode::kBusy) << r.status().toString();
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  }
  EXPECT_TRUE(fitted) << "a closed connection's staged import still counts against the bound";
  EXPECT_EQ(total(), 1200);
}

// One import that alone would hold more than the bound is InvalidParams naming jsonl, not Busy: a retry could never
// fit it. A smaller --max-staged-import-bytes bounds one import too (by default both bounds are 512 MiB).
TEST_F(ImportExportTest, AnImportPastTheBoundAloneIsInvalidParamsNotBusy) {
  daemon_.reset();
  startDaemon({"--max-staged-import-bytes", "1048576"});
  const std::string details(1000, 'd');
  std::vector<json> first, second;
  for (size_t i = 1; i <= 400; ++i) first.push_back(memoryLine(i, details));  // about 0.7 MiB as held
  for (size_t i = 401; i <= 800; ++i) second.push_back(memoryLine(i, details));
  RpcClient c = daemon_->client(project_);
  ASSERT_TRUE(c.call("import", {{"jsonl", jsonl(first)}, {"more", true}}).isOk());
  auto refused = c.call("import", {{"jsonl", jsonl(second)}, {"more", true}});
  ASSERT_FALSE(refused.isOk()) << "an import of 800 memories staged within 1 MiB";
  EXPECT_EQ(refused.status().code(), ErrorCode::kInvalidParams) << refused.status().toString();
  EXPECT_EQ(refused.status().data()["field"], "jsonl") << refused.status().data().dump();
  EXPECT_EQ(total(), 0);
  // The import was dropped and what it held given back: one that fits is written whole.
  auto fits = c.call("import", {{"jsonl", jsonl(first)}});
  ASSERT_TRUE(fits.isOk()) << fits.status().toString();
  EXPECT_EQ((*fits)["created"], 400);
  EXPECT_EQ((*fits)["staged_lines"], 400);
}

// What an import stages is charged for the memory its lines take once read, not for their bytes of JSONL: 20,000
// memories in 0.5 MiB of short lines are refused under a bound of 1 MiB (as bytes they were 0.5 MiB, and a memqd
// could be made to hold tens of GiB of them within its 512 MiB).
TEST_F(ImportExportTest, StagedLinesAreChargedForTheMemoryTheyTakeNotForTheirBytes) {
  daemon_.reset();
  startDaemon({"--max-staged-import-bytes", "1048576"});
  std::string tiny;
  for (size_t n = 0; n < 20000; ++n) tiny += json{{"summary", "note " + std::to_string(n)}}.dump() + "\n";
  ASSERT_LT(tiny.size(), size_t{1} << 19);
  RpcClient c = daemon_->client(project_);
  auto refused = c.call("import", {{"jsonl", tiny}, {"more", true}});
  ASSERT_FALSE(refused.isOk()) << "20,000 memories staged as if they took " << tiny.size() << " bytes";
  EXPECT_EQ(refused.status().data()["field"], "jsonl") << refused.status().toString();
  EXPECT_EQ(total(), 0);
  // The first 500 of them fit.
  const size_t cut = tiny.find(json{{"summary", "note 500"}}.dump());
  ASSERT_NE(cut, std::string::npos);
  auto fits = c.call("import", {{"jsonl", tiny.substr(0, cut)}});
  ASSERT_TRUE(fits.isOk()) << fits.status().toString();
  EXPECT_EQ((*fits)["created"], 500);
}

}  // namespace
}  // namespace memq::testing
