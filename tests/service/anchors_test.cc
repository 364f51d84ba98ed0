// Anchored file refs through the Service, with a real git repository and real SQLite: what a save, an update and an
// attach store for {path, lines, blob?} entries, the versions memq keeps (once per content, gone with their last
// ref), every bad input refused naming its field with nothing stored, and an export carried to another data dir and
// repository by import.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <future>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "../unit/git/git_fixture.h"
#include "daemon/embed/hashbag.h"
#include "tests/service/git_service.h"
#include "daemon/anchors/line_carrier.h"
#include "daemon/git/git_repo_signals.h"
#include "daemon/model/memory_input.h"
#include "daemon/service/anchor_rebase.h"
#include "daemon/service/file_anchors.h"
#include "daemon/service/service.h"

namespace memq {
namespace {

namespace fs = std::filesystem;
using memq::testing::GitRepo;
using memq::testing::GitServiceTest;
using memq::testing::TempDir;
using memq::testing::makeGitService;
using memq::testing::numberedLines;
using memq::testing::trimmed;

class AnchorsTest : public GitServiceTest {
 protected:
  AnchorsTest() : GitServiceTest("anchors-test") {}

  void SetUp() override {
    GitServiceTest::SetUp();
    repo_->commit({{"src/a.c", numberedLines(10)}, {"src/b.c", numberedLines(200, "b")}}, "start");
    root_ = repo_->dir();
    startService();
    connect(client_);
  }

  std::unique_ptr<Service> makeService(const std::string& dataDir) { return makeGitService(dataDir, embedder_); }

  // `client` initialized on `service` for the project at `root`: another project, or another data dir's Service.
  static void connectElsewhere(Service& service, ClientState& client, const std::string& root) {
    InitializeRequest request;
    request.clientName = "anchors-test";
    request.projectRoot = root;
    ASSERT_TRUE(service.initialize(client, request).isOk());
  }

  using GitServiceTest::ctx;
  CallContext ctx() { return ctx(client_); }

  Result<SaveResult> save(const std::string& summary, std::vector<FileEntry> files) {
    SaveInput in;
    in.summary = summary;
    in.files = std::move(files);
    return service_->save(ctx(), in);
  }

  std::string blobAtHead(const std::string& path) { return trimmed(repo_->git("rev-parse HEAD:" + path)); }

  int64_t keptVersions() {
    auto s = service_->stats(ctx(), {});
    EXPECT_TRUE(s.isOk());
    for (const auto& scope : s->scopes) {
      if (scope.scope == ScopeKind::kProject) return scope.counters.value("kept_versions", int64_t{-1});
    }
    return -1;
  }

  int64_t memories() {
    ListFilter all;
    all.state = std::nullopt;
    auto l = service_->list(ctx(), all);
    EXPECT_TRUE(l.isOk());
    return l->total;
  }

  static std::string fieldOf(const Status& status) {
    const auto& data = status.data();
    return data.is_object() && data.contains("field") ? data["field"].get<std::string>() : "";
  }

  static const FileRef* refOf(const Memory& m, const std::string& path) {
    for (const auto& f : m.files) {
      if (f.path == path) return &f;
    }
    return nullptr;
  }

  std::string root_;
  ClientState client_;
};

TEST_F(AnchorsTest, AnAnchorToACommittedFileNamesItsBlobAndKeepsNothing) {
  auto r = save("parse errors start here", {FileEntry("src/a.c", LineRanges{{5, 5}, {2, 3}, {4, 4}}), "src/b.c"});
  ASSERT_TRUE(r.isOk()) << r.status().toString();
  auto got = service_->get(ctx(), {r->id});
  ASSERT_TRUE(got.isOk());
  const FileRef* a = refOf(got->memory, "src/a.c");
  ASSERT_NE(a, nullptr);
  ASSERT_TRUE(a->anchor.has_value());
  EXPECT_EQ(a->anchor->lines, (LineRanges{{2, 5}}));  // normalised: sorted, adjacent ranges merged
  EXPECT_EQ(a->anchor->blob, blobAtHead("src/a.c"));
  EXPECT_EQ(a->blobId, blobAtHead("src/a.c"));  // the staleness blob id as before
  EXPECT_EQ(a->anchor->keptContent, nullptr);
  const FileRef* b = refOf(got->memory, "src/b.c");
  ASSERT_NE(b, nullptr);
  EXPECT_FALSE(b->anchor.has_value());  // a plain ref stays plain
  EXPECT_EQ(keptVersions(), 0);
}

// memory/update with files records them at the versions they have now, whatever order they come in; the same files
// in another order, at the same versions, are no change.
TEST_F(AnchorsTest, UpdatingFilesRecordsTheirVersionsNowInAnyOrder) {
  auto r = save("about both files", {"src/a.c", "src/b.c"});
  ASSERT_TRUE(r.isOk()) << r.status().toString();
  const std::string old = blobAtHead("src/a.c");
  repo_->commit({{"src/a.c", numberedLines(11)}}, "a grows");
  ASSERT_NE(blobAtHead("src/a.c"), old);
  UpdateRequest same;
  same.id = r->id;
  same.files = std::vector<FileEntry>{"src/a.c", "src/b.c"};  // the order they are read back in
  auto updated = service_->update(ctx(), same);
  ASSERT_TRUE(updated.isOk()) << updated.status().toString();
  const FileRef* a = refOf(updated->memory, "src/a.c");
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(a->blobId, blobAtHead("src/a.c")) << "the ref still names the version it went stale from";
  auto updateEvents = [&] {
    AuditFilter filter;
    filter.memoryId = r->id;
    auto page = service_->auditList(ctx(), filter);
    EXPECT_TRUE(page.isOk()) << page.status().toString();
    return page ? std::count_if(page->events.begin(), page->events.end(),
                                [](const AuditEntry& e) { return e.event.action == "update"; })
                : -1;
  };
  EXPECT_EQ(updateEvents(), 1);
  UpdateRequest reversed = same;
  reversed.files = std::vector<FileEntry>{"src/b.c", "src/a.c"};
  auto again = service_->update(ctx(), reversed);
  ASSERT_TRUE(again.isOk()) << again.status().toString();
  EXPECT_EQ(updateEvents(), 1) << "the same files in another order, at the same versions, were recorded as a change";
}

TEST_F(AnchorsTest, ABlobNamedIsTheVersionTheLinesAreIn) {
  const std::string old = blobAtHead("src/a.c");
  repo_->commit({{"src/a.c", numberedLines(3)}}, "shorter");
  // Line 8 is past the end of the file now, but not of the version named.
  auto r = save("about the old version", {FileEntry("src/a.c", LineRanges{{8, 9}}, old)});
  ASSERT_TRUE(r.isOk()) << r.status().toString();
  auto got = service_->get(ctx(), {r->id});
  ASSERT_TRUE(got.isOk());
  EXPECT_EQ(got->memory.files[0].anchor->blob, old);
  EXPECT_EQ(keptVersions(), 0);
  // The same lines without the blob refer to the file as it is now, which has 3 lines.
  auto now = save("about the new version", {FileEntry("src/a.c", LineRanges{{8, 9}})});
  ASSERT_FALSE(now.isOk());
  EXPECT_EQ(fieldOf(now.status()), "files[0].lines[0]");
}

TEST_F(AnchorsTest, AnUncommittedVersionIsKeptOnceAndGoesWithTheLastRefNeedingIt) {
  repo_->write("src/a.c", numberedLines(12, "edited"));
  auto first = save("first about the edit", {FileEntry("src/a.c", LineRanges{{1, 2}})});
  auto second = save("second about the edit", {FileEntry("src/a.c", LineRanges{{11, 12}})});
  ASSERT_TRUE(first.isOk() && second.isOk());
  EXPECT_EQ(keptVersions(), 1);  // one copy for the two anchors
  auto got = service_->get(ctx(), {first->id});
  ASSERT_TRUE(got.isOk());
  EXPECT_EQ(got->memory.files[0].anchor->blob, trimmed(repo_->git("hash-object src/a.c")));
  ASSERT_TRUE(service_->purge(ctx(), {first->id, true}).isOk());
  EXPECT_EQ(keptVersions(), 1);  // the second still needs it
  ASSERT_TRUE(service_->purge(ctx(), {second->id, true}).isOk());
  EXPECT_EQ(keptVersions(), 0);
}

// A staged version is in the object database but in no commit: once edited again and collected (`git gc`), it is
// gone, and an anchor in it could never be carried. memq keeps it as it keeps an uncommitted one.
TEST_F(AnchorsTest, AStagedVersionIsKeptAsAnUncommittedOneIsAndOutlivesGitGc) {
  repo_->write("src/a.c", numberedLines(12, "staged"));
  repo_->git("add src/a.c");
  auto r = save("about the staged lines", {FileEntry("src/a.c", LineRanges{{11, 12}})});
  ASSERT_TRUE(r.isOk()) << r.status().toString();
  EXPECT_EQ(keptVersions(), 1) << "a version HEAD does not hold is kept";
  // Edited again and committed, the staged blob unreachable and pruned: the anchor is still carried.
  repo_->commit({{"src/a.c", numberedLines(2, "top") + numberedLines(12, "staged") + "tail\n"}}, "later");
  repo_->git("reflog expire --expire-unreachable=now --all");
  repo_->git("gc -q --prune=now");
  RecallRequest request;
  request.query = "about the staged lines";
  request.files = {"src/a.c"};
  request.lines = {{"src/a.c", LineRanges{{13, 14}}}};
  request.threshold = 0;
  auto hits = service_->recall(ctx(), RecallParams{request, /*markUsed=*/false});
  ASSERT_TRUE(hits.isOk()) << hits.status().toString();
  bool carried = false;
  for (const auto& h : hits->hits) {
    if (h.memory.id != r->id) continue;
    ASSERT_EQ(h.anchoredLines.size(), 1u);
    EXPECT_EQ(h.anchoredLines[0].state, AnchoredLinesState::kMoved);
    EXPECT_EQ(h.anchoredLines[0].lines, (LineRanges{{13, 14}}));
    carried = true;
  }
  EXPECT_TRUE(carried) << "the anchor in the pruned version was not carried";
}

// Whether a kept version holds a credential is asked by every save, import and export page that meets it; a blob id
// names its content, so each version is read and scanned once.
TEST(CredentialInKeptVersionTest, EachBlobIsReadAndScannedOnce) {
  const std::string leaking = "DB_PASSWORD=" + std::string("Wq7#vL2!") + "mZ9pK4xR\n";
  const std::string blob = std::string(39, 'c') + "1";
  const std::string clean = std::string(39, 'c') + "2";
  int reads = 0;
  auto reading = [&](const std::string& text) {
    return [&reads, text]() {
      ++reads;
      return std::make_shared<const std::string>(text);
    };
  };
  EXPECT_EQ(credentialInKeptVersion(blob, reading(leaking)), std::optional<std::string>("password"));
  EXPECT_EQ(credentialInKeptVersion(blob, reading(leaking)), std::optional<std::string>("password"));
  EXPECT_EQ(credentialInKeptVersion(clean, reading("int port = 8080;\n")), std::nullopt);
  EXPECT_EQ(credentialInKeptVersion(clean, reading("int port = 8080;\n")), std::nullopt);
  EXPECT_EQ(reads, 2) << "a blob was read again";
  // Nothing kept (a loader that finds no content) is not remembered.
  const std::string missing = std::string(39, 'c') + "3";
  EXPECT_EQ(credentialInKeptVersion(missing, [] { return std::shared_ptr<const std::string>(); }), std::nullopt);
  EXPECT_EQ(credentialInKeptVersion(missing, reading(leaking)), std::optional<std::string>("password"));
}

TEST_F(AnchorsTest, DetachUpdateAndReanchoringReleaseKeptVersions) {
  repo_->write("src/a.c", numberedLines(12, "edited"));
  auto m = save("anchored in an edit", {FileEntry("src/a.c", LineRanges{{3, 4}})});
  ASSERT_TRUE(m.isOk());
  EXPECT_EQ(keptVersions(), 1);
  ASSERT_TRUE(service_->detach(ctx(), FilesChange{m->id, {"src/a.c"}}).isOk());
  EXPECT_EQ(keptVersions(), 0);

  ASSERT_TRUE(service_->attach(ctx(), FilesChange{m->id, {FileEntry("src/a.c", LineRanges{{5, 6}})}}).isOk());
  EXPECT_EQ(keptVersions(), 1);
  UpdateRequest plain;
  plain.id = m->id;
  plain.files = std::vector<FileEntry>{"src/a.c"};
  auto updated = service_->update(ctx(), plain);
  ASSERT_TRUE(updated.isOk()) << updated.status().toString();
  EXPECT_FALSE(updated->memory.files[0].anchor.has_value());
  EXPECT_EQ(keptVersions(), 0);

  // attach re-anchors a path the memory has: once in the edit, then (committed) in the repository's blob.
  ASSERT_TRUE(service_->attach(ctx(), FilesChange{m->id, {FileEntry("src/a.c", LineRanges{{7, 7}})}}).isOk());
  EXPECT_EQ(keptVersions(), 1);
  repo_->git("commit -qam edit");
  auto moved = service_->attach(ctx(), FilesChange{m->id, {FileEntry("src/a.c", LineRanges{{8, 8}})}});
  ASSERT_TRUE(moved.isOk()) << moved.status().toString();
  EXPECT_EQ(moved->files[0].anchor->lines, (LineRanges{{8, 8}}));
  // Committing put the same content in the repository: the same blob id, so the kept copy stays with the ref.
  EXPECT_EQ(moved->files[0].anchor->blob, blobAtHead("src/a.c"));
  auto other = service_->attach(ctx(), FilesChange{m->id, {FileEntry("src/b.c", LineRanges{{1, 1}})}});
  ASSERT_TRUE(other.isOk());
  ASSERT_TRUE(service_->purge(ctx(), {m->id, true}).isOk());
  EXPECT_EQ(keptVersions(), 0);
}

TEST_F(AnchorsTest, EveryBadEntryIsRefusedNamingItsFieldAndNothingIsStored) {
  repo_->write("bin.dat", std::string("\0\1\2\3binary", 10));
  repo_->write("other/dirty.c", numberedLines(4));
  fs::create_directories(tmp_.path() + "/outside");
  LineRanges tooMany;
  for (uint32_t i = 0; i < 65; ++i) tooMany.push_back({1 + 3 * i, 1 + 3 * i});
  struct Case {
    const char* what;
    std::vector<FileEntry> files;
    std::string field;
    ErrorCode code = ErrorCode::kInvalidParams;
  };
  const std::vector<Case> cases = {
      {"line 0", {"src/b.c", FileEntry("src/a.c", LineRanges{{0, 2}})}, "files[1].lines[0]"},
      {"first after last", {FileEntry("src/a.c", LineRanges{{1, 1}, {6, 4}})}, "files[0].lines[1]"},
      {"past the end", {FileEntry("src/a.c", LineRanges{{9, 11}})}, "files[0].lines[0]"},
      {"65 ranges", {FileEntry("src/b.c", tooMany)}, "files[0].lines"},
      {"a binary file", {FileEntry("bin.dat", LineRanges{{1, 1}})}, "files[0].lines"},
      {"not a blob id", {FileEntry("src/a.c", LineRanges{{1, 1}}, std::string("HEAD"))}, "files[0].blob"},
      {"an unknown blob", {FileEntry("src/a.c", LineRanges{{1, 1}}, std::string(40, 'a'))}, "files[0].blob"},
      {"a missing file", {FileEntry("src/gone.c", LineRanges{{1, 1}})}, "files[0]"},
      {"a directory", {FileEntry("src", LineRanges{{1, 1}})}, "files[0]"},
      {"outside the project", {FileEntry("../outside/x.c", LineRanges{{1, 1}})}, "files[0]", ErrorCode::kForbidden},
      {"one good, one bad", {FileEntry("other/dirty.c", LineRanges{{1, 1}}), FileEntry("src/a.c", LineRanges{{0, 0}})},
       "files[1].lines[0]"},
      {"one path in two versions",
       {FileEntry("src/a.c", LineRanges{{1, 1}}, blobAtHead("src/b.c")), FileEntry("src/a.c", LineRanges{{2, 2}})},
       "files[1]"},
  };
  auto existing = save("already here", {FileEntry("src/a.c", LineRanges{{1, 1}})});
  ASSERT_TRUE(existing.isOk());
  const int64_t before = memories();
  for (const auto& c : cases) {
    SCOPED_TRACE(c.what);
    auto r = save(std::string("refused: ") + c.what, c.files);
    ASSERT_FALSE(r.isOk());
    EXPECT_EQ(r.status().code(), c.code) << r.status().toString();
    EXPECT_EQ(fieldOf(r.status()), c.field) << r.status().toString();
    // InvalidParams names the field in its message too; Forbidden says which path, as for any file.
    if (c.code == ErrorCode::kInvalidParams) {
      EXPECT_NE(r.status().message().find(c.field), std::string::npos) << r.status().message();
    }
    // The same entries refused by update and attach, leaving the memory as it was.
    UpdateRequest up;
    up.id = existing->id;
    up.files = c.files;
    auto u = service_->update(ctx(), up);
    ASSERT_FALSE(u.isOk());
    EXPECT_EQ(fieldOf(u.status()), c.field);
    auto a = service_->attach(ctx(), FilesChange{existing->id, c.files});
    ASSERT_FALSE(a.isOk());
    EXPECT_EQ(fieldOf(a.status()), c.field);
  }
  EXPECT_EQ(memories(), before);
  EXPECT_EQ(keptVersions(), 0);  // other/dirty.c was valid, but its request was refused
  auto still = service_->get(ctx(), {existing->id});
  ASSERT_TRUE(still.isOk());
  ASSERT_EQ(still->memory.files.size(), 1u);
  EXPECT_EQ(still->memory.files[0].anchor->lines, (LineRanges{{1, 1}}));
}

TEST_F(AnchorsTest, EntriesOfOnePathMergeTheirLines) {
  auto r = save("two entries, one file", {FileEntry("src/b.c", LineRanges{{1, 2}}), "src/b.c",
                                          FileEntry("src/b.c", LineRanges{{3, 4}, {10, 10}})});
  ASSERT_TRUE(r.isOk()) << r.status().toString();
  ASSERT_EQ(r->memory->files.size(), 1u);
  EXPECT_EQ(r->memory->files[0].anchor->lines, (LineRanges{{1, 4}, {10, 10}}));
}

TEST_F(AnchorsTest, AProjectOutsideGitKeepsEveryAnchoredVersion) {
  TempDir plain;
  memq::testing::writeFile(plain.path() + "/notes.txt", numberedLines(5));
  ClientState other;
  connectElsewhere(*service_, other, plain.path());
  auto c = service_->context(other, {});
  ASSERT_TRUE(c.isOk());
  SaveInput in;
  in.summary = "outside git";
  in.files = {FileEntry("notes.txt", LineRanges{{2, 3}})};
  auto r = service_->save(*c, in);
  ASSERT_TRUE(r.isOk()) << r.status().toString();
  ASSERT_TRUE(r->memory->files[0].anchor.has_value());
  in.summary = "outside git, with a blob";
  in.files = {FileEntry("notes.txt", LineRanges{{2, 3}}, r->memory->files[0].anchor->blob)};
  auto withBlob = service_->save(*c, in);
  ASSERT_FALSE(withBlob.isOk());  // no repository to hold a blob
  EXPECT_EQ(fieldOf(withBlob.status()), "files[0].blob");
}

TEST_F(AnchorsTest, TheGlobalScopeRefusesAnchors) {
  CommonParams global;
  global.scope = ScopeKind::kGlobal;
  auto c = service_->context(client_, global);
  ASSERT_TRUE(c.isOk());
  SaveInput in;
  in.summary = "global with lines";
  in.files = {FileEntry("src/a.c", LineRanges{{1, 1}})};
  auto r = service_->save(*c, in);
  ASSERT_FALSE(r.isOk());
  EXPECT_EQ(fieldOf(r.status()), "files[0].lines");
}

TEST_F(AnchorsTest, ExportAndImportCarryAnchorsAndKeptContentToAnotherRepository) {
  repo_->write("src/a.c", numberedLines(12, "edited"));
  auto dirty = save("anchored in an edit", {FileEntry("src/a.c", LineRanges{{11, 12}})});
  auto committed = save("anchored in a commit", {FileEntry("src/b.c", LineRanges{{100, 120}}), "src/a.c"});
  ASSERT_TRUE(dirty.isOk() && committed.isOk());
  auto page = service_->exportJsonl(ctx(), ExportRequest{});
  ASSERT_TRUE(page.isOk()) << page.status().toString();

  // Another machine: its own data dir and a clone that has the commits but not the uncommitted edit.
  TempDir elsewhere;
  GitRepo clone(elsewhere.path() + "/clone", false);
  memq::testing::run("git clone -q " + memq::testing::shellQuote(root_) + " " +
                     memq::testing::shellQuote(clone.dir()));
  auto second = makeService(elsewhere.path() + "/data");
  ClientState client;
  connectElsewhere(*second, client, clone.dir());
  auto c = second->context(client, {});
  ASSERT_TRUE(c.isOk());
  auto imported = second->importJsonl(*c, ImportRequest{page->jsonl, false});
  ASSERT_TRUE(imported.isOk()) << imported.status().toString();
  EXPECT_EQ(imported->created, 2u);

  auto a = second->get(*c, {dirty->id});
  ASSERT_TRUE(a.isOk());
  ASSERT_TRUE(a->memory.files[0].anchor.has_value());
  EXPECT_EQ(a->memory.files[0].anchor->lines, (LineRanges{{11, 12}}));
  EXPECT_EQ(a->memory.files[0].anchor->blob, dirty->memory->files[0].anchor->blob);
  auto b = second->get(*c, {committed->id});
  ASSERT_TRUE(b.isOk());
  const FileRef* anchored = refOf(b->memory, "src/b.c");
  ASSERT_NE(anchored, nullptr);
  EXPECT_EQ(anchored->anchor->lines, (LineRanges{{100, 120}}));
  EXPECT_FALSE(refOf(b->memory, "src/a.c")->anchor.has_value());
  auto stats = second->stats(*c, {});
  ASSERT_TRUE(stats.isOk());
  for (const auto& s : stats->scopes) {
    if (s.scope == ScopeKind::kProject) {
      EXPECT_EQ(s.counters.value("kept_versions", -1), 1);
    }
  }
  // Exported again, the lines are the same bytes: the kept content came through intact.
  auto again = second->exportJsonl(*c, ExportRequest{});
  ASSERT_TRUE(again.isOk());
  EXPECT_EQ(again->jsonl, page->jsonl);
}


// --- recall with lines: the anchors carried to the work tree and ranked by (recall_lines.h) ---

class RecallLinesTest : public AnchorsTest {
 protected:
  // Two memories of one busy file, equally relevant by their text, anchored far apart in src/b.c.
  void SetUp() override {
    AnchorsTest::SetUp();
    auto early = save("parser state machine resets here", {FileEntry("src/b.c", LineRanges{{20, 30}})});
    ASSERT_TRUE(early.isOk()) << early.status().toString();
    early_ = early->id;
    auto late = save("parser state machine resets there", {FileEntry("src/b.c", LineRanges{{150, 160}})});
    ASSERT_TRUE(late.isOk()) << late.status().toString();
    late_ = late->id;
  }

  // The ids recall returns for the query with lines `lines` of src/b.c, best first.
  std::vector<std::string> recallOn(const LineRanges& lines, RecallHits* out = nullptr) {
    RecallRequest request;
    request.query = "parser state machine resets";
    request.files = {"src/b.c"};
    request.lines = {{"src/b.c", lines}};
    request.limit = 5;
    request.threshold = 0;
    request.explain = true;
    auto hits = service_->recall(ctx(), RecallParams{request, /*markUsed=*/false});
    EXPECT_TRUE(hits.isOk()) << hits.status().toString();
    std::vector<std::string> ids;
    if (!hits.isOk()) return ids;
    for (const auto& h : hits->hits) ids.push_back(h.memory.id);
    if (out != nullptr) *out = *hits;
    return ids;
  }

  static bool holds(const std::vector<std::string>& ids, const std::string& id) {
    return std::find(ids.begin(), ids.end(), id) != ids.end();
  }

  std::string early_, late_;
};

TEST_F(RecallLinesTest, TheMemoryAnchoredOnTheQueriedLinesComesFirst) {
  RecallHits hits;
  auto onLate = recallOn({{152, 155}}, &hits);
  ASSERT_EQ(onLate.size(), 2u);
  EXPECT_EQ(onLate[0], late_);
  EXPECT_GT(hits.hits[0].breakdown.terms.value("lines_owned", 0.0), 0.0) << hits.hits[0].breakdown.terms.dump();
  EXPECT_EQ(hits.hits[0].signals.lineOverlap, 4u);
  auto onEarly = recallOn({{22, 25}});
  ASSERT_EQ(onEarly.size(), 2u);
  EXPECT_EQ(onEarly[0], early_);
  // Nearer wins when neither covers the lines.
  EXPECT_EQ(recallOn({{35, 36}})[0], early_);
  EXPECT_EQ(recallOn({{140, 141}})[0], late_);
}

TEST_F(RecallLinesTest, AnchorsAreCarriedThroughAnUncommittedEditAboveThem) {
  // Fifty lines inserted at the top of the work-tree file: the late anchor is now at 200-210.
  repo_->write("src/b.c", numberedLines(50, "new") + numberedLines(200, "b"));
  EXPECT_EQ(recallOn({{202, 205}})[0], late_);
  EXPECT_EQ(recallOn({{72, 75}})[0], early_);
  // Lines 152-155 of the edited file are the old 102-105, which neither anchor holds; early's 20-30 are now 70-80.
  RecallHits hits;
  recallOn({{152, 155}}, &hits);
  for (const auto& h : hits.hits) EXPECT_EQ(h.signals.lineOverlap, 0u) << h.memory.id;
}

TEST_F(RecallLinesTest, ARewrittenRangeStillOwnsItsNewLinesAndADeletedOneNothing) {
  // The late anchor's lines replaced by new text (rewritten), the early anchor's lines deleted.
  std::string edited;
  for (int i = 1; i <= 200; ++i) {
    if (i >= 20 && i <= 30) continue;                                     // deleted
    edited += (i >= 150 && i <= 160 ? "rewritten " : "b ") + std::to_string(i) + "\n";  // rewritten in place
  }
  repo_->write("src/b.c", edited);
  RecallHits hits;
  auto ids = recallOn({{141, 143}}, &hits);  // the rewritten lines, 11 lines higher now
  ASSERT_FALSE(ids.empty());
  EXPECT_EQ(ids[0], late_);
  for (const auto& h : hits.hits) {
    if (h.memory.id == early_) {
      EXPECT_FALSE(h.signals.lineDistance.has_value()) << "a deleted anchor has no lines";
    }
  }
}

TEST_F(RecallLinesTest, ADirtyAnchorCarriesAfterTheEditIsCommittedAndAfterItIsThrownAway) {
  // Ten lines inserted at the top, uncommitted; a memory anchored to lines 15-18 of that version (memq keeps it).
  repo_->write("src/b.c", numberedLines(10, "dirty") + numberedLines(200, "b"));
  auto dirty = save("parser state machine resets in the dirty copy", {FileEntry("src/b.c", LineRanges{{15, 18}})});
  ASSERT_TRUE(dirty.isOk()) << dirty.status().toString();
  EXPECT_EQ(recallOn({{15, 18}})[0], dirty->id);
  repo_->git("commit -qam dirty");  // committed: the same lines, now a blob of the repository
  EXPECT_EQ(recallOn({{15, 18}})[0], dirty->id);
  repo_->git("reset -q --hard HEAD~1");  // thrown away: its lines are 5-8 of the file as it was
  EXPECT_EQ(recallOn({{5, 8}})[0], dirty->id);
  EXPECT_EQ(recallOn({{22, 25}})[0], early_);
}

// Anchored on lines HEAD never had (the uncommitted edit itself, as a tab's working set anchors a save): they are the
// memory's lines as they stand, and after a further edit where that edit moved them, never deleted by a detour
// through HEAD's version of the file.
TEST_F(RecallLinesTest, AnAnchorOnUncommittedLinesHoldsThemBeforeAndAfterAnotherEdit) {
  repo_->write("src/b.c", numberedLines(10, "dirty") + numberedLines(200, "b"));
  auto dirty = save("parser state machine resets in the new lines", {FileEntry("src/b.c", LineRanges{{3, 6}})});
  ASSERT_TRUE(dirty.isOk()) << dirty.status().toString();
  for (const auto& [edit, lines] : std::vector<std::pair<std::string, LineRange>>{
           {"", {3, 6}}, {numberedLines(5, "later"), {8, 11}}}) {
    SCOPED_TRACE(lines.first);
    if (!edit.empty()) repo_->write("src/b.c", edit + numberedLines(10, "dirty") + numberedLines(200, "b"));
    RecallHits hits;
    auto ids = recallOn({lines}, &hits);
    ASSERT_FALSE(ids.empty());
    EXPECT_EQ(ids[0], dirty->id);
    EXPECT_EQ(hits.hits[0].signals.lineOverlap, 4u);
    ASSERT_EQ(hits.hits[0].anchoredLines.size(), 1u);
    EXPECT_EQ(hits.hits[0].anchoredLines[0].lines, (LineRanges{lines}));
    EXPECT_NE(hits.hits[0].anchoredLines[0].state, AnchoredLinesState::kDeleted);
    EXPECT_NE(hits.hits[0].anchoredLines[0].state, AnchoredLinesState::kRewritten);
  }
}

TEST_F(RecallLinesTest, AnchorsAreCarriedUpThroughLinesDeletedAboveThem) {
  // The first 100 lines cut (early's 20-30 with them): late's 150-160 are now 50-60, and say so as moved.
  std::string cut;
  for (int i = 101; i <= 200; ++i) cut += "b " + std::to_string(i) + "\n";
  repo_->write("src/b.c", cut);
  RecallHits hits;
  auto ids = recallOn({{52, 55}}, &hits);
  ASSERT_FALSE(ids.empty());
  EXPECT_EQ(ids[0], late_);
  EXPECT_EQ(hits.hits[0].signals.lineOverlap, 4u);
  ASSERT_EQ(hits.hits[0].anchoredLines.size(), 1u);
  EXPECT_EQ(hits.hits[0].anchoredLines[0].state, AnchoredLinesState::kMoved);
  EXPECT_EQ(hits.hits[0].anchoredLines[0].lines, (LineRanges{{50, 60}}));
}

TEST_F(RecallLinesTest, ADirtyAnchorCarriesAfterTheEditIsAmendedIntoTheCommit) {
  // The anchor is saved against an uncommitted version (kept by memq); the edit then goes into the last commit by
  // --amend, so the commit the anchor's version was based on is no longer in HEAD's history at all.
  repo_->write("src/b.c", numberedLines(10, "dirty") + numberedLines(200, "b"));
  auto dirty = save("parser state machine resets in the amended copy", {FileEntry("src/b.c", LineRanges{{15, 18}})});
  ASSERT_TRUE(dirty.isOk()) << dirty.status().toString();
  repo_->git("commit -q -a --amend -m amended");
  EXPECT_EQ(trimmed(repo_->git("rev-list --count HEAD")), "1");
  // An edit after the amend: five lines inserted at the top of the work tree.
  repo_->write("src/b.c", numberedLines(5, "later") + numberedLines(10, "dirty") + numberedLines(200, "b"));
  RecallHits hits;
  auto ids = recallOn({{20, 23}}, &hits);
  ASSERT_FALSE(ids.empty());
  EXPECT_EQ(ids[0], dirty->id);
  for (const auto& h : hits.hits) {
    if (h.memory.id != dirty->id) continue;
    ASSERT_EQ(h.anchoredLines.size(), 1u);
    EXPECT_EQ(h.anchoredLines[0].state, AnchoredLinesState::kMoved);
    EXPECT_EQ(h.anchoredLines[0].lines, (LineRanges{{20, 23}}));
  }
}

TEST_F(RecallLinesTest, AFileThatBecameBinaryIsIgnoredWithoutAnError) {
  repo_->write("src/b.c", std::string("\0\1\2 no longer text\n", 19) + numberedLines(200, "b"));
  RecallHits hits;
  auto ids = recallOn({{150, 160}}, &hits);  // the recall itself succeeds (recallOn expects ok)
  EXPECT_EQ(ids.size(), 2u);  // both still found by their file and text
  for (const auto& h : hits.hits) {
    EXPECT_EQ(h.signals.lineOverlap, 0u) << h.memory.id;
    EXPECT_FALSE(h.signals.lineDistance.has_value()) << h.memory.id;
    EXPECT_TRUE(h.anchoredLines.empty()) << h.memory.id;  // nothing to say by lines
    EXPECT_TRUE(h.stale) << h.memory.id;                  // the blob id changed: staleness by blob decides
  }
}

TEST_F(RecallLinesTest, StalenessSaysWhetherTheAnchoredLinesWereMovedRewrittenOrDeleted) {
  auto stateOf = [&](const RecallHits& hits, const std::string& id) -> std::string {
    for (const auto& h : hits.hits) {
      if (h.memory.id != id) continue;
      if (h.anchoredLines.size() != 1) return "none";
      return std::string(anchoredLinesStateName(h.anchoredLines[0].state)) + (h.stale ? " stale" : " fresh");
    }
    return "absent";
  };
  RecallHits hits;
  recallOn({{1, 1}}, &hits);
  EXPECT_EQ(stateOf(hits, early_), "unchanged fresh");
  // Lines changed below both anchors: the file changed, the anchored lines did not.
  std::string below = numberedLines(200, "b") + "appended\n";
  repo_->write("src/b.c", below);
  recallOn({{1, 1}}, &hits);
  EXPECT_EQ(stateOf(hits, early_), "unchanged fresh");
  // Ten lines inserted above: both moved, neither stale.
  repo_->write("src/b.c", numberedLines(10, "new") + numberedLines(200, "b"));
  recallOn({{1, 1}}, &hits);
  EXPECT_EQ(stateOf(hits, late_), "moved fresh");
  for (const auto& h : hits.hits) {
    if (h.memory.id == late_) {
      EXPECT_EQ(h.anchoredLines[0].lines, (LineRanges{{160, 170}}));
    }
  }
  // Early's lines deleted, late's rewritten: both stale, the file named in changed_files.
  std::string edited;
  for (int i = 1; i <= 200; ++i) {
    if (i >= 20 && i <= 30) continue;
    edited += (i >= 150 && i <= 160 ? "rewritten " : "b ") + std::to_string(i) + "\n";
  }
  repo_->write("src/b.c", edited);
  recallOn({{1, 1}}, &hits);
  EXPECT_EQ(stateOf(hits, early_), "deleted stale");
  EXPECT_EQ(stateOf(hits, late_), "rewritten stale");
  for (const auto& h : hits.hits) EXPECT_EQ(h.changedFiles, std::vector<std::string>{"src/b.c"}) << h.memory.id;
}

// Lines anchored in an older version named by its blob, rewritten since: the memory is stale, as when the lines
// were anchored in the file as it was then, although the file has not changed since the save.
TEST_F(RecallLinesTest, LinesAnchoredInAnOlderBlobAndRewrittenSinceMakeTheMemoryStale) {
  const std::string before = blobAtHead("src/b.c");
  std::string rewritten;
  for (int i = 1; i <= 200; ++i) rewritten += (i >= 40 && i <= 45 ? "rewritten " : "b ") + std::to_string(i) + "\n";
  repo_->commit({{"src/b.c", rewritten}}, "rewrite lines 40-45");
  auto older = save("parser state machine resets in the old lines", {FileEntry("src/b.c", LineRanges{{40, 45}}, before)});
  ASSERT_TRUE(older.isOk()) << older.status().toString();
  auto got = service_->get(ctx(), {older->id});
  ASSERT_TRUE(got.isOk());
  EXPECT_EQ(got->memory.files[0].blobId, before) << "the ref names the version its lines are in";
  RecallHits hits;
  recallOn({{1, 1}}, &hits);
  bool found = false;
  for (const auto& h : hits.hits) {
    if (h.memory.id != older->id) continue;
    found = true;
    ASSERT_EQ(h.anchoredLines.size(), 1u);
    EXPECT_EQ(h.anchoredLines[0].state, AnchoredLinesState::kRewritten);
    EXPECT_TRUE(h.stale);
    EXPECT_EQ(h.changedFiles, std::vector<std::string>{"src/b.c"});
  }
  EXPECT_TRUE(found) << "the memory was not recalled";
}

TEST_F(RecallLinesTest, HiddenSupersededAndRejectedMemoriesAreNeverSurfacedByTheirAnchors) {
  // Controls, so that a recall answering nothing fails: each memory is recalled by its lines while it is active, and
  // once it is put away an active memory of the same file and text is still recalled by the same call.
  ASSERT_TRUE(holds(recallOn({{150, 160}}), late_));
  ASSERT_TRUE(service_->hide(ctx(), {late_, std::nullopt}).isOk());
  auto hidden = recallOn({{150, 160}});
  EXPECT_FALSE(holds(hidden, late_));
  EXPECT_TRUE(holds(hidden, early_));
  ASSERT_TRUE(service_->restore(ctx(), {late_, std::nullopt}).isOk());
  ASSERT_TRUE(holds(recallOn({{150, 160}}), late_)) << "restored, it is recalled again";
  ASSERT_TRUE(service_->reject(ctx(), {late_, std::string("wrong")}).isOk());
  auto rejected = recallOn({{150, 160}});
  EXPECT_FALSE(holds(rejected, late_));
  EXPECT_TRUE(holds(rejected, early_));
  ASSERT_TRUE(holds(recallOn({{20, 30}}), early_));
  auto replacement = save("the parser resets on every token", {FileEntry("src/b.c", LineRanges{{21, 22}})});
  ASSERT_TRUE(replacement.isOk());
  ASSERT_TRUE(service_->supersede(ctx(), {early_, replacement->id}).isOk());
  auto superseded = recallOn({{20, 30}});
  EXPECT_FALSE(holds(superseded, early_));
  EXPECT_TRUE(holds(superseded, replacement->id)) << "its replacement, anchored inside those lines, is recalled";
}

// --- renames: anchors on a path a file had before `git mv` found and carried by a query on the path it has now ---

class RecallRenamesTest : public AnchorsTest {
 protected:
  void SetUp() override {
    AnchorsTest::SetUp();
    repo_->commit({{"src/parser.c", numberedLines(120, "parse")}}, "parser");
    auto early = save("how the parser starts", {FileEntry("src/parser.c", LineRanges{{20, 30}})});
    ASSERT_TRUE(early.isOk()) << early.status().toString();
    early_ = early->id;
    auto late = save("how the parser ends", {FileEntry("src/parser.c", LineRanges{{90, 100}})});
    ASSERT_TRUE(late.isOk()) << late.status().toString();
    late_ = late->id;
  }

  // A recall by file and lines alone (no text): only the file lane can find a memory, so a memory on the old path
  // is found only if the rename is followed.
  RecallHits recallOn(const std::string& path, const LineRanges& lines) {
    RecallRequest request;
    request.files = {path};
    request.lines = {{path, lines}};
    request.limit = 5;
    request.threshold = 0;
    request.explain = true;
    auto hits = service_->recall(ctx(), RecallParams{request, /*markUsed=*/false});
    EXPECT_TRUE(hits.isOk()) << hits.status().toString();
    return hits.isOk() ? *hits : RecallHits{};
  }

  static const RecallHit* hitOf(const RecallHits& hits, const std::string& id) {
    for (const auto& h : hits.hits) {
      if (h.memory.id == id) return &h;
    }
    return nullptr;
  }

  // The index of `hit`'s anchored_lines entry for `path`, or their count when there is none.
  static size_t entryFor(const RecallHit& hit, const std::string& path) {
    size_t i = 0;
    while (i < hit.anchoredLines.size() && hit.anchoredLines[i].path != path) ++i;
    return i;
  }

  // The late memory is first, found by its file, its lines overlapping `overlap`, carried into `path` as `state`.
  // `entries`: its anchored_lines entries in all (a copy's original, still there, keeps an entry of its own).
  void expectLateFollowed(const RecallHits& hits, const std::string& path, uint64_t overlap,
                          AnchoredLinesState state, const LineRanges& now, size_t entries = 1) {
    ASSERT_FALSE(hits.hits.empty());
    const RecallHit& first = hits.hits[0];
    EXPECT_EQ(first.memory.id, late_);
    EXPECT_TRUE(first.signals.fileAffinity);
    EXPECT_EQ(first.signals.lineOverlap, overlap);
    ASSERT_EQ(first.anchoredLines.size(), entries);
    const size_t i = entryFor(first, path);
    ASSERT_LT(i, first.anchoredLines.size()) << path;
    EXPECT_EQ(first.anchoredLines[i].renamedFrom, "src/parser.c");
    EXPECT_EQ(first.anchoredLines[i].state, state);
    EXPECT_EQ(first.anchoredLines[i].lines, now);
    EXPECT_TRUE(first.missingFiles.empty());
    EXPECT_FALSE(first.stale);
    auto json = recallHitToJson(first, false);
    EXPECT_EQ(json["anchored_lines"][i].value("renamed_from", ""), "src/parser.c") << json.dump();
  }

  std::string early_, late_;
};

TEST_F(RecallRenamesTest, ACommittedRenameIsFollowed) {
  repo_->git("mv src/parser.c src/lexer.c");
  repo_->git("commit -qm rename");
  RecallHits hits = recallOn("src/lexer.c", {{92, 95}});
  expectLateFollowed(hits, "src/lexer.c", 4, AnchoredLinesState::kUnchanged, {{90, 100}});
  ASSERT_NE(hitOf(hits, early_), nullptr);  // found by its file too, ranked below
  EXPECT_EQ(hitOf(hits, early_)->signals.lineOverlap, 0u);
}

TEST_F(RecallRenamesTest, AStagedRenameIsFollowed) {
  repo_->git("mv src/parser.c src/lexer.c");
  expectLateFollowed(recallOn("src/lexer.c", {{92, 95}}), "src/lexer.c", 4, AnchoredLinesState::kUnchanged,
                     {{90, 100}});
}

TEST_F(RecallRenamesTest, ARenameOnDiskWithAnEditIsFollowedAndCarried) {
  // Moved without git, five lines inserted at the top, and early's lines rewritten.
  std::string edited = numberedLines(5, "new");
  for (int i = 1; i <= 120; ++i) edited += (i >= 20 && i <= 30 ? "rewritten " : "parse ") + std::to_string(i) + "\n";
  fs::remove(root_ + "/src/parser.c");
  repo_->write("src/lexer.c", edited);
  RecallHits hits = recallOn("src/lexer.c", {{97, 100}});
  expectLateFollowed(hits, "src/lexer.c", 4, AnchoredLinesState::kMoved, {{95, 105}});
  const RecallHit* early = hitOf(hits, early_);
  ASSERT_NE(early, nullptr);
  ASSERT_EQ(early->anchoredLines.size(), 1u);
  EXPECT_EQ(early->anchoredLines[0].state, AnchoredLinesState::kRewritten);
  EXPECT_TRUE(early->stale);
  EXPECT_EQ(early->changedFiles, std::vector<std::string>{"src/parser.c"});  // the ref as the memory names it
  EXPECT_TRUE(early->missingFiles.empty());
}

// Carried into the file it was renamed to by one diff, from the anchor's version of the old path to the work tree:
// not through HEAD's version of the new path, where an edit committed with the rename and undone in the work tree
// would read as a rewrite of lines that are as they were.
TEST_F(RecallRenamesTest, ARenamedAnchorIsCarriedByOneDiffNotThroughHeadsVersionOfTheNewPath) {
  const auto parserWith = [](int line, const std::string& tag) {
    std::string out;
    for (int i = 1; i <= 120; ++i) out += (i == line ? tag : std::string("parse")) + " " + std::to_string(i) + "\n";
    return out;
  };
  repo_->git("mv src/parser.c src/lexer.c");
  repo_->commit({{"src/lexer.c", parserWith(95, "edited")}}, "rename, with line 95 of the late memory's edited");
  // In the work tree line 95 is as it was again, and line 110, below the anchors, is changed instead.
  repo_->write("src/lexer.c", parserWith(110, "changed"));
  expectLateFollowed(recallOn("src/lexer.c", {{92, 95}}), "src/lexer.c", 4, AnchoredLinesState::kUnchanged,
                     {{90, 100}});
}

TEST_F(RecallRenamesTest, AChainOfRenamesIsFollowed) {
  repo_->git("mv src/parser.c src/lexer.c");
  repo_->git("commit -qm one");
  repo_->git("mv src/lexer.c src/scanner.c");
  repo_->git("commit -qm two");
  fs::create_directories(root_ + "/lib");
  repo_->git("mv src/scanner.c lib/scan.c");  // and a third, staged
  expectLateFollowed(recallOn("lib/scan.c", {{92, 95}}), "lib/scan.c", 4, AnchoredLinesState::kUnchanged,
                     {{90, 100}});
}

TEST_F(RecallRenamesTest, HiddenAndRejectedMemoriesOnTheOldPathNeverSurfaceThroughTheNewOne) {
  repo_->git("mv src/parser.c src/lexer.c");
  repo_->git("commit -qm rename");
  ASSERT_EQ(recallOn("src/lexer.c", {{20, 100}}).hits.size(), 2u);  // both found while active
  ASSERT_TRUE(service_->hide(ctx(), {late_, std::nullopt}).isOk());
  ASSERT_TRUE(service_->reject(ctx(), {early_, std::string("wrong")}).isOk());
  RecallHits hits = recallOn("src/lexer.c", {{20, 100}});
  EXPECT_EQ(hitOf(hits, late_), nullptr);
  EXPECT_EQ(hitOf(hits, early_), nullptr);
  EXPECT_TRUE(hits.hits.empty());
}

TEST_F(RecallRenamesTest, APlainRefOnARenamedFileIsComparedWithTheFileItBecame) {
  auto plain = save("notes on the parser as a whole", {"src/parser.c"});
  ASSERT_TRUE(plain.isOk()) << plain.status().toString();
  repo_->git("mv src/parser.c src/lexer.c");
  repo_->git("commit -qm rename");
  RecallHits hits = recallOn("src/lexer.c", {{1, 2}});
  const RecallHit* hit = hitOf(hits, plain->id);
  ASSERT_NE(hit, nullptr);
  EXPECT_TRUE(hit->missingFiles.empty());  // renamed, not gone
  EXPECT_TRUE(hit->changedFiles.empty());  // and the content is the one it named
  EXPECT_FALSE(hit->stale);
  repo_->write("src/lexer.c", numberedLines(121, "parse"));
  hits = recallOn("src/lexer.c", {{1, 2}});
  hit = hitOf(hits, plain->id);
  ASSERT_NE(hit, nullptr);
  EXPECT_TRUE(hit->missingFiles.empty());
  EXPECT_EQ(hit->changedFiles, std::vector<std::string>{"src/parser.c"});
  EXPECT_TRUE(hit->stale);
}

TEST_F(RecallRenamesTest, ACopyNotYetCommittedIsTracedToTheFileItCameFrom) {
  // src/parser.c stays; an untracked copy of it, edited (three lines on top), is what the query is on.
  repo_->write("src/parser_legacy.c", numberedLines(3, "legacy") + numberedLines(120, "parse"));
  RecallHits hits = recallOn("src/parser_legacy.c", {{95, 98}});
  expectLateFollowed(hits, "src/parser_legacy.c", 4, AnchoredLinesState::kMoved, {{93, 103}}, /*entries=*/2);
  // The original is still there: the ref is carried into it too, as itself.
  ASSERT_FALSE(hits.hits.empty());
  const size_t original = entryFor(hits.hits[0], "src/parser.c");
  ASSERT_LT(original, hits.hits[0].anchoredLines.size());
  EXPECT_EQ(hits.hits[0].anchoredLines[original].renamedFrom, "");
  EXPECT_EQ(hits.hits[0].anchoredLines[original].state, AnchoredLinesState::kUnchanged);
  EXPECT_EQ(hits.hits[0].anchoredLines[original].lines, (LineRanges{{90, 100}}));
}

// A copy's original once lost its anchors to the copy: with both files queried, the lines named in the original
// found nothing, and its anchored lines were reported on the copy only, so an edit of the original elsewhere made
// the memory stale.
TEST_F(RecallRenamesTest, TheOriginalOfACopyKeepsItsOwnAnchors) {
  repo_->write("src/parser_copy.c", numberedLines(120, "parse"));
  // The original edited below the anchors: its blob is not the one the memories name, its anchored lines are.
  repo_->write("src/parser.c", numberedLines(120, "parse") + "appended\n");
  RecallRequest request;
  request.files = {"src/parser.c", "src/parser_copy.c"};
  request.lines = {{"src/parser.c", LineRanges{{92, 95}}}};
  request.limit = 5;
  request.threshold = 0;
  request.explain = true;
  auto hits = service_->recall(ctx(), RecallParams{request, /*markUsed=*/false});
  ASSERT_TRUE(hits.isOk()) << hits.status().toString();
  ASSERT_FALSE(hits->hits.empty());
  const RecallHit& first = hits->hits[0];
  EXPECT_EQ(first.memory.id, late_);
  EXPECT_EQ(first.signals.lineOverlap, 4u);
  const size_t own = entryFor(first, "src/parser.c");
  ASSERT_LT(own, first.anchoredLines.size());
  EXPECT_EQ(first.anchoredLines[own].renamedFrom, "");
  EXPECT_EQ(first.anchoredLines[own].state, AnchoredLinesState::kUnchanged);
  EXPECT_EQ(first.anchoredLines[own].lines, (LineRanges{{90, 100}}));
  // The copy gets the lines too, as the copy of src/parser.c.
  const size_t copy = entryFor(first, "src/parser_copy.c");
  ASSERT_LT(copy, first.anchoredLines.size());
  EXPECT_EQ(first.anchoredLines[copy].renamedFrom, "src/parser.c");
  EXPECT_EQ(first.anchoredLines[copy].lines, (LineRanges{{90, 100}}));
  EXPECT_TRUE(first.changedFiles.empty());
  EXPECT_TRUE(first.missingFiles.empty());
  EXPECT_FALSE(first.stale);
  auto json = recallHitToJson(first, false);
  EXPECT_EQ(json["anchored_lines"][own]["path"], "src/parser.c") << json.dump();
  EXPECT_FALSE(json["anchored_lines"][own].contains("renamed_from")) << json.dump();
}

TEST_F(RecallRenamesTest, ACopyOfARenamedFileFollowsTheRenameToo) {
  // The memories are on src/parser.c, committed renamed to src/lexer.c; the untracked copy of lexer.c finds them.
  repo_->git("mv src/parser.c src/lexer.c");
  repo_->git("commit -qm rename");
  repo_->write("src/lexer_copy.c", numberedLines(120, "parse"));
  RecallHits hits = recallOn("src/lexer_copy.c", {{92, 95}});
  ASSERT_FALSE(hits.hits.empty());
  EXPECT_EQ(hits.hits[0].memory.id, late_);
  EXPECT_EQ(hits.hits[0].signals.lineOverlap, 4u);
}

TEST_F(RecallRenamesTest, ANewFileLikeNothingHeadHasFindsNothingThroughCopies) {
  repo_->write("src/fresh.c", numberedLines(120, "fresh"));
  EXPECT_TRUE(recallOn("src/fresh.c", {{92, 95}}).hits.empty());
}

TEST_F(RecallRenamesTest, HiddenAndRejectedMemoriesOnTheOriginalNeverSurfaceThroughACopy) {
  repo_->write("src/parser_legacy.c", numberedLines(120, "parse"));
  ASSERT_EQ(recallOn("src/parser_legacy.c", {{20, 100}}).hits.size(), 2u);
  ASSERT_TRUE(service_->hide(ctx(), {late_, std::nullopt}).isOk());
  ASSERT_TRUE(service_->reject(ctx(), {early_, std::string("wrong")}).isOk());
  EXPECT_TRUE(recallOn("src/parser_legacy.c", {{20, 100}}).hits.empty());
}

// --- anchors re-based to HEAD (anchor_rebase.h): the anchor→HEAD diffs held, one diff per file at recall ---

class AnchorRebaseTest : public RecallLinesTest {
 protected:
  std::shared_ptr<Scope> scope() {
    auto s = service_->scopes().project(root_);
    EXPECT_TRUE(s.isOk()) << s.status().toString();
    return s.isOk() ? *s : nullptr;
  }
};

TEST_F(AnchorRebaseTest, AfterHeadMovesARecallDiffsOnlyHeadAgainstTheWorkTree) {
  // HEAD moves: ten lines inserted at the top of src/b.c and committed; both anchors are in the old version.
  repo_->commit({{"src/b.c", numberedLines(10, "head") + numberedLines(200, "b")}}, "head moves");
  auto s = scope();
  ASSERT_NE(s, nullptr);
  AnchorRebase first = rebaseAnchorsToHead(*s);
  EXPECT_TRUE(first.ran);
  EXPECT_EQ(first.head, repo_->rev("HEAD"));
  EXPECT_EQ(first.anchors, 2u);
  EXPECT_EQ(first.pinned, 1u);  // both anchors are in one version: one diff to HEAD's
  EXPECT_EQ(first.computed, 1u);
  EXPECT_FALSE(rebaseAnchorsToHead(*s).ran);  // HEAD has not moved since
  // An uncommitted edit: five more lines at the top. The recall's only new diff is HEAD's file → the work tree.
  repo_->write("src/b.c", numberedLines(5, "dirty") + numberedLines(10, "head") + numberedLines(200, "b"));
  const uint64_t misses = s->carrier->cacheStats().misses;
  RecallHits hits;
  auto ids = recallOn({{167, 170}}, &hits);  // late's 150-160 are 165-175 now
  ASSERT_FALSE(ids.empty());
  EXPECT_EQ(ids[0], late_);
  EXPECT_EQ(hits.hits[0].anchoredLines[0].lines, (LineRanges{{165, 175}}));
  EXPECT_EQ(hits.hits[0].anchoredLines[0].state, AnchoredLinesState::kMoved);
  EXPECT_EQ(s->carrier->cacheStats().misses, misses + 1);
}

TEST_F(AnchorRebaseTest, EachMoveOfHeadReBasesAgainAndTheLinesAgreeWithOneDiff) {
  auto s = scope();
  ASSERT_NE(s, nullptr);
  EXPECT_TRUE(rebaseAnchorsToHead(*s).ran);
  EXPECT_EQ(s->carrier->pinnedCount(), 0u);  // every anchor is in HEAD's version already
  std::string rewritten;
  for (int i = 1; i <= 200; ++i) rewritten += (i >= 150 && i <= 152 ? "rewritten " : "b ") + std::to_string(i) + "\n";
  repo_->commit({{"src/b.c", "top\n" + rewritten}}, "rewrite three lines of late's");
  AnchorRebase second = rebaseAnchorsToHead(*s);
  EXPECT_TRUE(second.ran);
  EXPECT_EQ(second.pinned, 1u);
  RecallHits hits;
  recallOn({{1, 1}}, &hits);
  for (const auto& h : hits.hits) {
    ASSERT_EQ(h.anchoredLines.size(), 1u) << h.memory.id;
    if (h.memory.id == late_) {
      EXPECT_EQ(h.anchoredLines[0].state, AnchoredLinesState::kRewritten);
      EXPECT_EQ(h.anchoredLines[0].lines, (LineRanges{{151, 161}}));
    } else {
      EXPECT_EQ(h.anchoredLines[0].state, AnchoredLinesState::kMoved);
      EXPECT_EQ(h.anchoredLines[0].lines, (LineRanges{{21, 31}}));
    }
  }
}

TEST_F(AnchorRebaseTest, AReBaseAskedWhileAnotherRunsReturnsAtOnceAndEachPairIsDiffedOnce) {
  auto onA = save("lexer tables are sized here", {FileEntry("src/a.c", LineRanges{{2, 4}})});
  ASSERT_TRUE(onA.isOk()) << onA.status().toString();
  // HEAD moves both files: two distinct pairs to diff (src/a.c's version and src/b.c's, each to HEAD's).
  repo_->commit({{"src/a.c", "top\n" + numberedLines(10)},
                 {"src/b.c", numberedLines(10, "head") + numberedLines(200, "b")}},
                "head moves");
  auto s = scope();
  ASSERT_NE(s, nullptr);
  // The scope's carrier again, with a hook holding the first diff computed until the second re-base has been asked,
  // so that the two overlap whatever the threads' timing. Every diff computed is counted. The hook's state is shared
  // with the carrier, which the scope keeps past this test's body.
  struct Overlap {
    std::atomic<int> diffsComputed{0};
    std::atomic<bool> holdNextDiff{true};
    std::promise<void> firstHeld;
    std::promise<void> secondAsked;
  };
  const auto overlap = std::make_shared<Overlap>();
  std::future<void> firstHeld = overlap->firstHeld.get_future();
  const std::shared_future<void> secondAsked = overlap->secondAsked.get_future().share();
  LineCarrier::Options options;
  options.beforeComputingDiff = [overlap, secondAsked](const FileVersion&, const FileVersion&) {
    ++overlap->diffsComputed;
    if (overlap->holdNextDiff.exchange(false)) {
      overlap->firstHeld.set_value();
      secondAsked.wait();
    }
  };
  auto carrier = LineCarrier::open(root_, options);
  ASSERT_TRUE(carrier.isOk()) << carrier.status().toString();
  s->carrier = std::move(carrier.value());

  AnchorRebase first;
  std::thread running([&] {
    first = rebaseAnchorsToHead(*s);
    // It diffed nothing (the expectations below say so): the test goes on all the same.
    if (overlap->holdNextDiff.exchange(false)) overlap->firstHeld.set_value();
  });
  firstHeld.wait();
  const AnchorRebase second = rebaseAnchorsToHead(*s);
  overlap->secondAsked.set_value();
  running.join();

  EXPECT_TRUE(second.alreadyRunning);
  EXPECT_FALSE(second.ran);
  EXPECT_EQ(second.computed, 0u);
  EXPECT_FALSE(first.alreadyRunning);
  EXPECT_TRUE(first.ran);
  EXPECT_EQ(first.anchors, 3u);
  EXPECT_EQ(first.pinned, 2u);
  EXPECT_EQ(first.computed, 2u);
  EXPECT_EQ(overlap->diffsComputed.load(), 2);  // each distinct pair once, by the re-base that ran
  // The claim went with the first: a re-base asked now runs, and computes nothing it holds already.
  const AnchorRebase third = rebaseAnchorsToHead(*s, /*force=*/true);
  EXPECT_FALSE(third.alreadyRunning);
  EXPECT_TRUE(third.ran);
  EXPECT_EQ(third.computed, 0u);
  EXPECT_EQ(overlap->diffsComputed.load(), 2);
}

TEST_F(AnchorRebaseTest, AHeadVersionLargerThanTheLargestAnchoredFileIsNotDiffed) {
  // HEAD's src/b.c grows past the bound, in two long lines (a diff of it, were one run, would be quick).
  const std::string half(kMaxAnchoredFileBytes / 2, 'x');
  repo_->commit({{"src/b.c", half + "\n" + half + "\n"}}, "b.c past the bound");
  auto s = scope();
  ASSERT_NE(s, nullptr);
  const AnchorRebase rebase = rebaseAnchorsToHead(*s);
  EXPECT_TRUE(rebase.ran);
  EXPECT_EQ(rebase.anchors, 2u);
  EXPECT_EQ(rebase.computed, 0u);  // refused, as a version that became binary is: nothing to carry through
  EXPECT_EQ(rebase.pinned, 0u);
  EXPECT_EQ(s->carrier->pinnedTag(), rebase.head);  // and not tried again until HEAD moves
}

TEST_F(AnchorRebaseTest, AnchorsInVersionsMemqKeepsAreNeitherReadNorReBased) {
  // An anchor on uncommitted lines of src/a.c (a version memq keeps); the work tree is then put back as committed,
  // and HEAD moves src/b.c.
  repo_->write("src/a.c", numberedLines(12, "edited"));
  auto kept = save("lexer tables are sized in the edit", {FileEntry("src/a.c", LineRanges{{11, 12}})});
  ASSERT_TRUE(kept.isOk()) << kept.status().toString();
  repo_->write("src/a.c", numberedLines(10));
  repo_->commit({{"src/b.c", numberedLines(10, "head") + numberedLines(200, "b")}}, "head moves");
  auto s = scope();
  ASSERT_NE(s, nullptr);
  const AnchorRebase rebase = rebaseAnchorsToHead(*s);
  EXPECT_TRUE(rebase.ran);
  EXPECT_EQ(rebase.anchors, 2u);  // src/b.c's two; the kept version's anchor is not read
  EXPECT_EQ(rebase.pinned, 1u);
}

}  // namespace
}  // namespace memq
