// Anchored file refs through the Service, with a real git repository and real SQLite: what a save, an update and an
// attach store for {path, lines, blob?} entries, the versions memq keeps (once per content, gone with their last
// ref), every bad input refused naming its field with nothing stored, and an export carried to another data dir and
// repository by import.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "../unit/git/git_fixture.h"
#include "daemon/embed/hashbag.h"
#include "daemon/git/git_repo_signals.h"
#include "daemon/service/service.h"

namespace memq {
namespace {

namespace fs = std::filesystem;
using memq::testing::GitRepo;
using memq::testing::TempDir;
using memq::testing::trimmed;

std::string numberedLines(int n, const std::string& tag = "line") {
  std::string out;
  for (int i = 1; i <= n; ++i) out += tag + " " + std::to_string(i) + "\n";
  return out;
}

class AnchorsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    repo_ = std::make_unique<GitRepo>(tmp_.path() + "/project");
    repo_->commit({{"src/a.c", numberedLines(10)}, {"src/b.c", numberedLines(200, "b")}}, "start");
    root_ = repo_->dir();
    service_ = makeService(tmp_.path() + "/data");
    connect(*service_, client_, root_);
  }

  std::unique_ptr<Service> makeService(const std::string& dataDir) {
    ServiceOptions options;
    options.dataDir = dataDir;
    options.embedder = &embedder_;
    options.saveBatch = 1;
    options.repoFactory = [](const ProjectLocation& loc) -> std::shared_ptr<RepoSignals> {
      return std::make_shared<GitRepoSignals>(loc);
    };
    return std::make_unique<Service>(options);
  }

  static void connect(Service& service, ClientState& client, const std::string& root) {
    InitializeRequest request;
    request.clientName = "anchors-test";
    request.projectRoot = root;
    ASSERT_TRUE(service.initialize(client, request).isOk());
  }

  CallContext ctx() {
    auto c = service_->context(client_, {});
    EXPECT_TRUE(c.isOk()) << c.status().toString();
    return c.isOk() ? *c : CallContext{};
  }

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

  TempDir tmp_;
  std::unique_ptr<GitRepo> repo_;
  std::string root_;
  HashbagEmbedder embedder_;
  std::unique_ptr<Service> service_;
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
  connect(*service_, other, plain.path());
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
  connect(*second, client, clone.dir());
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
    if (s.scope == ScopeKind::kProject) EXPECT_EQ(s.counters.value("kept_versions", -1), 1);
  }
  // Exported again, the lines are the same bytes: the kept content came through intact.
  auto again = second->exportJsonl(*c, ExportRequest{});
  ASSERT_TRUE(again.isOk());
  EXPECT_EQ(again->jsonl, page->jsonl);
}

}  // namespace
}  // namespace memq
