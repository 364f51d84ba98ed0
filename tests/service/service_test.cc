// Service driven directly, without a socket (daemon/service/service.h): a real temp data dir and real SQLite. The
// memory lifecycle (save, get, update, list, hide, restore, reject, supersede, purge), what recall never returns,
// export and import through the typed API, which scope a request reads and writes, errors that name their field,
// write_scope none, the secrets modes and the change events.
#include "daemon/service/service.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <SQLiteCpp/SQLiteCpp.h>

#include "daemon/embed/hashbag.h"

namespace memq {
namespace {

namespace fs = std::filesystem;

class ServiceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("memq-service-" + std::to_string(std::random_device{}()));
    fs::create_directories(dir_ / "data");
    fs::create_directories(dir_ / "project");
    root_ = fs::canonical(dir_ / "project").string();
    service_ = makeService(SecretsMode::kRedact);
    connect(client_);
  }
  void TearDown() override {
    service_.reset();
    fs::remove_all(dir_);
  }

  std::unique_ptr<Service> makeService(SecretsMode mode, const std::string& dataDir = "", int saveBatch = 1) {
    ServiceOptions options;
    options.dataDir = dataDir.empty() ? (dir_ / "data").string() : dataDir;
    options.embedder = &embedder_;
    options.secretsMode = mode;
    options.saveBatch = saveBatch;
    auto service = std::make_unique<Service>(options);
    service->setChangeListener([this](const ChangeEvent& e) {
      std::lock_guard lock(eventsMutex_);  // saves on several threads report at once
      events_.push_back(e);
    });
    return service;
  }

  // initialize on `client` with the project root, and whatever `tweak` sets.
  InitializeResult connect(ClientState& client, const std::function<void(InitializeRequest&)>& tweak = {},
                           Service* service = nullptr) {
    InitializeRequest request;
    request.clientName = "service-test";
    request.projectRoot = root_;
    if (tweak) tweak(request);
    auto result = (service ? *service : *service_).initialize(client, request);
    EXPECT_TRUE(result.isOk()) << result.status().toString();
    return result.isOk() ? *result : InitializeResult{};
  }

  CallContext ctx(const CommonParams& params = {}, ClientState* client = nullptr, Service* service = nullptr) {
    auto c = (service ? *service : *service_).context(client ? *client : client_, params);
    EXPECT_TRUE(c.isOk()) << c.status().toString();
    return c.isOk() ? *c : CallContext{};
  }

  static CommonParams inScope(ScopeKind kind) {
    CommonParams p;
    p.scope = kind;
    return p;
  }

  SaveResult save(const std::string& summary, const CommonParams& params = {}, const std::string& details = "") {
    SaveInput in;
    in.summary = summary;
    in.details = details;
    auto r = service_->save(ctx(params), in);
    EXPECT_TRUE(r.isOk()) << r.status().toString();
    return r.isOk() ? *r : SaveResult{};
  }

  std::vector<std::string> recalledIds(const std::string& query, const CommonParams& params = {}) {
    RecallParams request;
    request.query.query = query;
    request.query.limit = 10;
    auto r = service_->recall(ctx(params), request);
    EXPECT_TRUE(r.isOk()) << r.status().toString();
    std::vector<std::string> ids;
    if (r.isOk()) {
      for (const auto& h : r->hits) ids.push_back(h.memory.id);
    }
    return ids;
  }

  static bool holds(const std::vector<std::string>& ids, const std::string& id) {
    return std::find(ids.begin(), ids.end(), id) != ids.end();
  }

  static std::string fieldOf(const Status& status) {
    const auto& data = status.data();
    return data.is_object() && data.contains("field") && data["field"].is_string() ? data["field"].get<std::string>()
                                                                                    : "";
  }

  HashbagEmbedder embedder_;
  fs::path dir_;
  std::string root_;
  std::unique_ptr<Service> service_;
  ClientState client_;
  std::mutex eventsMutex_;
  std::vector<ChangeEvent> events_;
};

TEST_F(ServiceTest, InitializeReportsTheProjectAndASession) {
  ClientState other;
  auto result = connect(other);
  EXPECT_FALSE(result.session.empty());
  ASSERT_TRUE(result.project.has_value());
  EXPECT_EQ(result.project->root, root_);
  EXPECT_FALSE(result.project->inGit);
  EXPECT_EQ(result.embedderModel, std::string(embedder_.model()));
  EXPECT_NE(connect(client_).session, result.session) << "each connection has its own token";
}

// `request` is refused on `client` with `code` naming `field`, and the connection is as it was: its project, scopes
// and actor.
void expectInitializeRefusedChangingNothing(Service& service, ClientState& client, const InitializeRequest& request,
                                            ErrorCode code, const std::string& field) {
  auto before = service.context(client, CommonParams{});
  ASSERT_TRUE(before.isOk()) << before.status().toString();
  auto refused = service.initialize(client, request);
  ASSERT_FALSE(refused.isOk());
  EXPECT_EQ(refused.status().code(), code) << refused.status().toString();
  EXPECT_EQ(refused.status().data().value("field", ""), field) << refused.status().toString();
  auto after = service.context(client, CommonParams{});
  ASSERT_TRUE(after.isOk()) << after.status().toString();
  EXPECT_EQ(after->projectRoot, before->projectRoot);
  EXPECT_EQ(after->readScope, before->readScope);
  EXPECT_EQ(after->writeScope, before->writeScope);
  EXPECT_EQ(after->actor.toString(), before->actor.toString());
}

// An initialize that would move a connection elsewhere: another client name and project root, global reads only.
InitializeRequest initializeElsewhere(const std::string& clientName, const fs::path& projectRoot) {
  InitializeRequest request;
  request.clientName = clientName;
  request.projectRoot = projectRoot.string();
  request.readScope = ReadScope::kGlobal;
  return request;
}

TEST_F(ServiceTest, ARepeatedInitializeMayNarrowTheReadScopeButNeverWidenIt) {
  ClientState c;
  connect(c, [](InitializeRequest& r) { r.readScope = ReadScope::kProject; });
  InitializeRequest wider;
  wider.clientName = "someone-else";
  wider.readScope = ReadScope::kAll;
  wider.source = "user";
  expectInitializeRefusedChangingNothing(*service_, c, wider, ErrorCode::kScopeUnavailable, "read_scope");
  EXPECT_EQ(ctx({}, &c).readScope, ReadScope::kProject);
  connect(c, [](InitializeRequest& r) { r.readScope = ReadScope::kNone; });
  EXPECT_EQ(ctx({}, &c).readScope, ReadScope::kNone);
}

TEST_F(ServiceTest, AnInitializeNamingAParentNotConnectedLeavesTheConnectionAsItWas) {
  fs::create_directories(dir_ / "elsewhere");
  ClientState c;
  connect(c);
  InitializeRequest orphan = initializeElsewhere("orphan", dir_ / "elsewhere");
  orphan.writeScope = WriteScope::kNone;
  orphan.source = "user";
  orphan.parent = "no-such-session";
  expectInitializeRefusedChangingNothing(*service_, c, orphan, ErrorCode::kInvalidParams, "parent");
  EXPECT_EQ(ctx({}, &c).projectRoot, root_);
}

// A connection that closes while its initialize still runs on a worker: forget() comes first, the initialize ends
// after it. Its token must not stay registered, or a subagent naming it as parent would read freed state.
TEST_F(ServiceTest, AnInitializeThatEndsAfterItsConnectionClosedRegistersNoParentToken) {
  auto closing = std::make_unique<ClientState>();
  const std::string token = connect(*closing).session;
  ASSERT_FALSE(token.empty());
  service_->forget(*closing);
  EXPECT_EQ(connect(*closing).session, token);  // the repeated initialize, finishing after the close
  closing.reset();

  ClientState subagent;
  InitializeRequest child;
  child.clientName = "subagent";
  child.projectRoot = root_;
  child.parent = token;
  auto refused = service_->initialize(subagent, child);
  ASSERT_FALSE(refused.isOk());
  EXPECT_EQ(refused.status().code(), ErrorCode::kInvalidParams);
  EXPECT_NE(refused.status().message().find("is not connected"), std::string::npos) << refused.status().toString();
}

TEST_F(ServiceTest, AnInitializeNamingAProjectThatCannotBeOpenedLeavesTheConnectionAsItWas) {
  ClientState c;
  connect(c);
  InitializeRequest missing = initializeElsewhere("elsewhere", dir_ / "no-such-directory");
  missing.tab = "a-tab";
  expectInitializeRefusedChangingNothing(*service_, c, missing, ErrorCode::kScopeUnavailable, "project_root");
  EXPECT_EQ(ctx({}, &c).projectRoot, root_);
  // So initialising again without a project works, as the CLI does after such a refusal.
  InitializeRequest plain;
  plain.clientName = "again";
  ClientState fresh;
  ASSERT_FALSE(service_->initialize(fresh, missing).isOk());
  auto again = service_->initialize(fresh, plain);
  ASSERT_TRUE(again.isOk()) << again.status().toString();
  EXPECT_FALSE(again->project.has_value());
}

TEST_F(ServiceTest, SaveGetUpdateAndList) {
  auto saved = save("Use pnpm, never npm, in this repository", {}, "npm breaks the lockfile");
  EXPECT_EQ(saved.status, SaveStatus::kCreated);
  EXPECT_EQ(saved.scope, ScopeKind::kProject);
  ASSERT_TRUE(saved.memory.has_value());
  EXPECT_EQ(saved.memory->details, "npm breaks the lockfile");

  auto byId = service_->get(ctx(), MemoryRef{saved.id});
  ASSERT_TRUE(byId.isOk()) << byId.status().toString();
  EXPECT_EQ(byId->memory.summary, "Use pnpm, never npm, in this repository");
  EXPECT_TRUE(byId->warnings.empty());
  auto byPrefix = service_->get(ctx(), MemoryRef{saved.id.substr(0, 8)});
  ASSERT_TRUE(byPrefix.isOk()) << byPrefix.status().toString();
  EXPECT_EQ(byPrefix->memory.id, saved.id);

  UpdateRequest update;
  update.id = saved.id;
  update.summary = "Use pnpm 9, never npm";
  update.topics = std::vector<std::string>{"tooling"};
  auto updated = service_->update(ctx(), update);
  ASSERT_TRUE(updated.isOk()) << updated.status().toString();
  EXPECT_EQ(updated->memory.summary, "Use pnpm 9, never npm");
  EXPECT_EQ(updated->memory.topics, std::vector<std::string>{"tooling"});
  EXPECT_EQ(updated->memory.details, "npm breaks the lockfile") << "fields not named stay";

  save("Tests run with ctest -j2");
  auto listed = service_->list(ctx(), ListFilter{});
  ASSERT_TRUE(listed.isOk()) << listed.status().toString();
  EXPECT_EQ(listed->total, 2);
  EXPECT_EQ(listed->memories.size(), 2u);
  ListFilter byTopic;
  byTopic.topic = "tooling";
  auto filtered = service_->list(ctx(), byTopic);
  ASSERT_TRUE(filtered.isOk());
  ASSERT_EQ(filtered->memories.size(), 1u);
  EXPECT_EQ(filtered->memories[0].id, saved.id);
}

TEST_F(ServiceTest, TheSameTextIsDedupedIntoTheSameMemory) {
  auto first = save("The release branch is cut on Mondays");
  auto again = save("The release branch is cut on Mondays");
  EXPECT_EQ(again.status, SaveStatus::kDeduped);
  EXPECT_EQ(again.id, first.id);
}

TEST_F(ServiceTest, HiddenMemoriesAreNeverRecalledUntilRestored) {
  auto saved = save("Flaky test: retry the websocket suite once");
  ASSERT_TRUE(holds(recalledIds("websocket suite"), saved.id));
  auto hidden = service_->hide(ctx(), StateChangeRequest{saved.id, "obsolete"});
  ASSERT_TRUE(hidden.isOk()) << hidden.status().toString();
  EXPECT_EQ(hidden->state, MemoryState::kHidden);
  EXPECT_FALSE(holds(recalledIds("websocket suite"), saved.id));

  auto resaved = save("Flaky test: retry the websocket suite once");
  EXPECT_EQ(resaved.status, SaveStatus::kExistsHidden);
  EXPECT_EQ(resaved.id, saved.id);
  ASSERT_TRUE(resaved.hint.has_value());
  EXPECT_NE(resaved.hint->find("memory/restore"), std::string::npos);

  auto restored = service_->restore(ctx(), StateChangeRequest{saved.id, std::nullopt});
  ASSERT_TRUE(restored.isOk()) << restored.status().toString();
  EXPECT_EQ(restored->state, MemoryState::kActive);
  EXPECT_TRUE(holds(recalledIds("websocket suite"), saved.id));
}

TEST_F(ServiceTest, ARejectedTextIsRefusedWhenSavedAgainAndNeverRecalled) {
  auto saved = save("Disable the linter to make CI pass");
  // The control: while active the same query recalls it, so its absence below is the rejection, not a query that
  // never matched.
  ASSERT_TRUE(holds(recalledIds("linter CI"), saved.id));
  auto rejected = service_->reject(ctx(), StateChangeRequest{saved.id, "bad advice"});
  ASSERT_TRUE(rejected.isOk()) << rejected.status().toString();
  EXPECT_EQ(rejected->state, MemoryState::kRejected);
  EXPECT_FALSE(holds(recalledIds("linter CI"), saved.id));

  auto resaved = save("Disable the linter to make CI pass");
  EXPECT_EQ(resaved.status, SaveStatus::kRejected);
  EXPECT_EQ(resaved.reason, std::optional<std::string>("bad advice"));
  EXPECT_FALSE(resaved.memory.has_value()) << "nothing was stored";
  ListFilter all;
  all.state = std::nullopt;
  auto listed = service_->list(ctx(), all);
  ASSERT_TRUE(listed.isOk());
  EXPECT_EQ(listed->total, 1) << "the refused save wrote no second memory";

  auto byAgent = service_->unreject(ctx(), MemoryRef{saved.id});
  ASSERT_FALSE(byAgent.isOk()) << "only a user may take a rejection back";
  EXPECT_EQ(byAgent.status().code(), ErrorCode::kForbidden);
  EXPECT_EQ(fieldOf(byAgent.status()), "source");
  CommonParams asUser;
  asUser.source = "user";
  auto unrejected = service_->unreject(ctx(asUser), MemoryRef{saved.id});
  ASSERT_TRUE(unrejected.isOk()) << unrejected.status().toString();
  EXPECT_EQ(unrejected->state, MemoryState::kActive);
  EXPECT_TRUE(holds(recalledIds("linter CI"), saved.id)) << "taken back, it is recalled again";
}

TEST_F(ServiceTest, RejectNeedsAReasonAndNamesTheField) {
  auto saved = save("Some memory to reject");
  auto r = service_->reject(ctx(), StateChangeRequest{saved.id, std::nullopt});
  ASSERT_FALSE(r.isOk());
  EXPECT_EQ(r.status().code(), ErrorCode::kInvalidParams);
  EXPECT_EQ(fieldOf(r.status()), "reason");
}

TEST_F(ServiceTest, SupersededMemoriesAreNeverRecalled) {
  auto oldOne = save("Deploys go through the staging cluster");
  auto newOne = save("Deploys go through the canary cluster first");
  auto r = service_->supersede(ctx(), SupersedeRequest{oldOne.id, newOne.id});
  ASSERT_TRUE(r.isOk()) << r.status().toString();
  EXPECT_EQ(r->old.state, MemoryState::kSuperseded);
  EXPECT_EQ(r->old.supersededBy, std::optional<std::string>(newOne.id));
  EXPECT_EQ(r->replacement.id, newOne.id);
  auto ids = recalledIds("deploys cluster");
  EXPECT_FALSE(holds(ids, oldOne.id));
  EXPECT_TRUE(holds(ids, newOne.id));

  auto resaved = save("Deploys go through the staging cluster");
  EXPECT_EQ(resaved.status, SaveStatus::kExistsSuperseded);
  EXPECT_EQ(resaved.supersededBy, std::optional<std::string>(newOne.id));
}

TEST_F(ServiceTest, SupersedeAcrossScopesIsRefusedNamingBy) {
  auto project = save("A project memory about caching");
  auto global = save("A global memory about caching", inScope(ScopeKind::kGlobal));
  auto r = service_->supersede(ctx(), SupersedeRequest{project.id, global.id});
  ASSERT_FALSE(r.isOk());
  EXPECT_EQ(r.status().code(), ErrorCode::kInvalidParams);
  EXPECT_EQ(fieldOf(r.status()), "by");
}

TEST_F(ServiceTest, SupersedingByAMemoryThatIsNotActiveIsAConflictNamingBy) {
  auto old = save("The cache key includes the compiler version");
  auto hidden = save("The cache key includes the compiler and its flags");
  ASSERT_TRUE(service_->hide(ctx(), StateChangeRequest{hidden.id, std::nullopt}).isOk());
  auto r = service_->supersede(ctx(), SupersedeRequest{old.id, hidden.id});
  ASSERT_FALSE(r.isOk());
  EXPECT_EQ(r.status().code(), ErrorCode::kConflict);
  EXPECT_EQ(fieldOf(r.status()), "by");
  EXPECT_EQ(r.status().data().value("id", ""), hidden.id);
  EXPECT_EQ(r.status().data().value("state", ""), "hidden");
  EXPECT_EQ(service_->get(ctx(), MemoryRef{old.id})->memory.state, MemoryState::kActive) << "refused, it changed nothing";
}

TEST_F(ServiceTest, ARecallThatFailsInOneScopeCountsNoUseInAnother) {
  const std::string inProject = save("the pager wraps its lines at eighty columns").id;
  save("the pager wraps its lines at eighty columns, globally", inScope(ScopeKind::kGlobal));
  auto useCount = [&] {
    auto got = service_->get(ctx(), {inProject});
    EXPECT_TRUE(got.isOk()) << got.status().toString();
    return got.isOk() ? got->memory.useCount : -1;
  };
  RecallParams request;
  request.query.query = "pager wraps lines";
  ASSERT_TRUE(service_->recall(ctx(), request).isOk());
  const int64_t before = useCount();
  ASSERT_EQ(before, 1);  // a recall that answers counts the project's hit

  // Another connection renames a column the hits' rows are read with, and the in-memory indexes are not: the global
  // scope (read after the project) finds its candidate, then fails reading its row, after the project's rows were
  // read.
  {
    SQLite::Database other((dir_ / "data" / "global.db").string(), SQLite::OPEN_READWRITE);
    other.exec("ALTER TABLE memories RENAME COLUMN category TO category_gone");
  }
  auto failed = service_->recall(ctx(), request);
  ASSERT_FALSE(failed.isOk());
  EXPECT_EQ(failed.status().code(), ErrorCode::kStorageError) << failed.status().toString();
  EXPECT_EQ(useCount(), before);
}

TEST_F(ServiceTest, ARecallThatReadsNothingStillRefusesABadFile) {
  SaveInput in;
  in.summary = "The fine module parses anything";
  in.files = {"src/fine.ts"};
  ASSERT_TRUE(service_->save(ctx(), in).isOk());
  CommonParams none;
  none.readScope = ReadScope::kNone;
  RecallParams request;
  request.query.query = "anything";
  request.query.files = {"../../etc/passwd"};
  auto r = service_->recall(ctx(none), request);
  ASSERT_FALSE(r.isOk());
  EXPECT_EQ(r.status().code(), ErrorCode::kForbidden);
  request.query.files = {"src/fine.ts"};
  auto fine = service_->recall(ctx(none), request);
  ASSERT_TRUE(fine.isOk()) << fine.status().toString();
  EXPECT_TRUE(fine->hits.empty()) << "read_scope none reads nothing";
  auto read = service_->recall(ctx(), request);
  ASSERT_TRUE(read.isOk()) << read.status().toString();
  EXPECT_EQ(read->hits.size(), 1u) << "the same recall reading the project finds it";
}

TEST_F(ServiceTest, SearchChecksTheFilesItLeavesOut) {
  const auto saved = save("Search ranks by the text alone");
  SearchRequest request;
  request.query.query = "search ranks text";
  request.query.files = {"../outside.ts"};
  auto refused = service_->search(ctx(), request);
  ASSERT_FALSE(refused.isOk());
  EXPECT_EQ(refused.status().code(), ErrorCode::kForbidden);
  request.query.files = {"src/anything.ts"};
  auto found = service_->search(ctx(), request);
  ASSERT_TRUE(found.isOk()) << found.status().toString();
  ASSERT_FALSE(found->hits.empty());
  EXPECT_EQ(found->hits[0].memory.id, saved.id);
}

TEST_F(ServiceTest, PurgeNeedsConfirmationThenDeletesForGood) {
  auto saved = save("Temporary note to purge");
  auto refused = service_->purge(ctx(), PurgeRequest{saved.id, false});
  ASSERT_FALSE(refused.isOk());
  EXPECT_EQ(refused.status().code(), ErrorCode::kForbidden);
  EXPECT_EQ(fieldOf(refused.status()), "confirm");
  ASSERT_TRUE(service_->get(ctx(), MemoryRef{saved.id}).isOk()) << "an unconfirmed purge changes nothing";

  auto purged = service_->purge(ctx(), PurgeRequest{saved.id.substr(0, 8), true});
  ASSERT_TRUE(purged.isOk()) << purged.status().toString();
  EXPECT_EQ(purged->id, saved.id.substr(0, 8)) << "the reply names the id as the request did";
  auto gone = service_->get(ctx(), MemoryRef{saved.id});
  ASSERT_FALSE(gone.isOk());
  EXPECT_EQ(gone.status().code(), ErrorCode::kNotFound);
  EXPECT_EQ(fieldOf(gone.status()), "id");
}

// A replacement cannot be purged while a memory is superseded by it: that memory's pointer would dangle (its export
// could not be imported, a save of its text would name a replacement no method finds).
TEST_F(ServiceTest, AReplacementCannotBePurgedWhileAMemoryIsSupersededByIt) {
  auto oldOne = save("The staging database is reset every Monday");
  auto replacement = save("The staging database is reset every night at 02:00 UTC");
  ASSERT_TRUE(service_->supersede(ctx(), SupersedeRequest{oldOne.id, replacement.id}).isOk());
  auto refused = service_->purge(ctx(), PurgeRequest{replacement.id, true});
  ASSERT_FALSE(refused.isOk());
  EXPECT_EQ(refused.status().code(), ErrorCode::kConflict);
  EXPECT_EQ(refused.status().data().value("id", ""), oldOne.id);
  EXPECT_EQ(refused.status().data().value("state", ""), "superseded");
  ASSERT_TRUE(service_->get(ctx(), MemoryRef{replacement.id}).isOk()) << "a refused purge deletes nothing";
  // Restored, the old memory stands on its own, and the replacement can go.
  ASSERT_TRUE(service_->restore(ctx(), StateChangeRequest{oldOne.id, std::nullopt}).isOk());
  ASSERT_TRUE(service_->purge(ctx(), PurgeRequest{replacement.id, true}).isOk());
  auto kept = service_->get(ctx(), MemoryRef{oldOne.id});
  ASSERT_TRUE(kept.isOk());
  EXPECT_FALSE(kept->memory.supersededBy.has_value());
}

TEST_F(ServiceTest, ScopesResolveProjectFirstAndGlobalWhenAsked) {
  auto project = save("Project-only fact about the build");
  auto global = save("Global fact about editors", inScope(ScopeKind::kGlobal));
  EXPECT_EQ(project.scope, ScopeKind::kProject);
  EXPECT_EQ(global.scope, ScopeKind::kGlobal);

  auto all = service_->list(ctx(), ListFilter{});
  ASSERT_TRUE(all.isOk());
  EXPECT_EQ(all->total, 2);
  CommonParams projectOnly;
  projectOnly.readScope = ReadScope::kProject;
  auto onlyProject = service_->list(ctx(projectOnly), ListFilter{});
  ASSERT_TRUE(onlyProject.isOk());
  ASSERT_EQ(onlyProject->memories.size(), 1u);
  EXPECT_EQ(onlyProject->memories[0].id, project.id);
  auto onlyGlobal = service_->list(ctx(inScope(ScopeKind::kGlobal)), ListFilter{});
  ASSERT_TRUE(onlyGlobal.isOk());
  ASSERT_EQ(onlyGlobal->memories.size(), 1u);
  EXPECT_EQ(onlyGlobal->memories[0].id, global.id);
  EXPECT_EQ(onlyGlobal->memories[0].scope, "global");

  // An id in the global scope is found without naming the scope; naming the other scope misses it.
  EXPECT_TRUE(service_->get(ctx(), MemoryRef{global.id}).isOk());
  auto missed = service_->get(ctx(inScope(ScopeKind::kProject)), MemoryRef{global.id});
  ASSERT_FALSE(missed.isOk());
  EXPECT_EQ(missed.status().code(), ErrorCode::kNotFound);
}

// A global.db that cannot be opened (damaged, say) does not take every project's reads with it: recall, search and
// list answer the project's memories with a warning that names what was left out, and a full id found in the
// project is that memory; a read of the global scope itself, a prefix, and an id found nowhere fail with the reason.
TEST_F(ServiceTest, AGlobalDatabaseThatCannotBeOpenedIsLeftOutOfAProjectsReadsWithAWarning) {
  const fs::path dataDir = dir_ / "data-damaged-global";
  fs::create_directories(dataDir);
  std::ofstream(dataDir / "global.db", std::ios::binary) << std::string(16384, 'x');  // not a database
  auto service = makeService(SecretsMode::kRedact, dataDir.string());
  ClientState client;
  connect(client, {}, service.get());
  SaveInput in;
  in.summary = "Use pnpm, not npm, in this project";
  auto saved = service->save(ctx(inScope(ScopeKind::kProject), &client, service.get()), in);
  ASSERT_TRUE(saved.isOk()) << saved.status().toString();
  auto leftOut = [](const std::vector<std::string>& warnings) {
    return std::any_of(warnings.begin(), warnings.end(), [](const std::string& w) {
      return w.find("global scope was left out") != std::string::npos && w.find("global.db") != std::string::npos;
    });
  };

  RecallParams recall;
  recall.query.query = "pnpm";
  recall.query.limit = 10;
  auto recalled = service->recall(ctx({}, &client, service.get()), recall);
  ASSERT_TRUE(recalled.isOk()) << recalled.status().toString();
  ASSERT_EQ(recalled->hits.size(), 1u);
  EXPECT_EQ(recalled->hits[0].memory.id, saved->id);
  EXPECT_TRUE(leftOut(recalled->warnings)) << "no warning says the global scope is missing from the answer";
  SearchRequest search;
  search.query.query = "pnpm";
  search.query.limit = 10;
  auto searched = service->search(ctx({}, &client, service.get()), search);
  ASSERT_TRUE(searched.isOk()) << searched.status().toString();
  EXPECT_EQ(searched->hits.size(), 1u);
  EXPECT_TRUE(leftOut(searched->warnings));
  auto listed = service->list(ctx({}, &client, service.get()), ListFilter{});
  ASSERT_TRUE(listed.isOk()) << listed.status().toString();
  EXPECT_EQ(listed->total, 1);
  EXPECT_TRUE(leftOut(listed->warnings));

  auto globalOnly = service->list(ctx(inScope(ScopeKind::kGlobal), &client, service.get()), ListFilter{});
  ASSERT_FALSE(globalOnly.isOk()) << "a read of the damaged scope alone was answered";
  EXPECT_EQ(globalOnly.status().code(), ErrorCode::kStorageError) << globalOnly.status().toString();
  // A full id is unique: found in the project, it is that memory. A prefix, or an id found nowhere, could be the
  // global scope's: the answer is then the global scope's error, not a guess.
  auto byId = service->get(ctx({}, &client, service.get()), MemoryRef{saved->id});
  ASSERT_TRUE(byId.isOk()) << byId.status().toString();
  EXPECT_EQ(byId->memory.id, saved->id);
  auto byPrefix = service->get(ctx({}, &client, service.get()), MemoryRef{saved->id.substr(0, 8)});
  ASSERT_FALSE(byPrefix.isOk()) << "a prefix was resolved without the global scope it may also match";
  EXPECT_EQ(byPrefix.status().code(), ErrorCode::kStorageError) << byPrefix.status().toString();
  auto missing = service->get(ctx({}, &client, service.get()), MemoryRef{"0000000000000000"});
  ASSERT_FALSE(missing.isOk());
  EXPECT_EQ(missing.status().code(), ErrorCode::kStorageError) << "NotFound for an id the global scope may hold";
}

// Pages of a list, one scope or two merged, follow one another: together every memory once, and `total` all of them.
TEST_F(ServiceTest, ListPagesCoverEveryMemoryOnce) {
  for (int i = 0; i < 3; ++i) save("Project note number " + std::to_string(i));
  for (int i = 0; i < 2; ++i) save("Global note number " + std::to_string(i), inScope(ScopeKind::kGlobal));
  CommonParams projectOnly;
  projectOnly.readScope = ReadScope::kProject;
  for (const auto& [params, expected] : {std::pair{CommonParams{}, size_t{5}}, std::pair{projectOnly, size_t{3}}}) {
    std::set<std::string> seen;
    for (int offset = 0; offset < 8; offset += 2) {
      ListFilter page;
      page.limit = 2;
      page.offset = offset;
      auto l = service_->list(ctx(params), page);
      ASSERT_TRUE(l.isOk()) << l.status().toString();
      EXPECT_EQ(l->total, static_cast<int64_t>(expected));
      EXPECT_LE(l->memories.size(), 2u);
      for (const auto& m : l->memories) EXPECT_TRUE(seen.insert(m.id).second) << m.id << " on two pages";
    }
    EXPECT_EQ(seen.size(), expected);
  }
}

// An id is looked up only where the request may read: a connection narrowed to its project neither reads nor
// changes a global memory by id, nor learns of one from an ambiguous prefix.
TEST_F(ServiceTest, IdLookupsStayInsideTheReadScope) {
  auto global = save("Global fact about terminals", inScope(ScopeKind::kGlobal));
  CommonParams projectOnly;
  projectOnly.readScope = ReadScope::kProject;
  auto got = service_->get(ctx(projectOnly), MemoryRef{global.id});
  ASSERT_FALSE(got.isOk());
  EXPECT_EQ(got.status().code(), ErrorCode::kNotFound);
  auto byPrefix = service_->get(ctx(projectOnly), MemoryRef{global.id.substr(0, 4)});
  ASSERT_FALSE(byPrefix.isOk());
  EXPECT_EQ(byPrefix.status().code(), ErrorCode::kNotFound) << "no candidate from an unreadable scope";
  CommonParams namingGlobal = projectOnly;
  namingGlobal.scope = ScopeKind::kGlobal;
  auto named = service_->get(ctx(namingGlobal), MemoryRef{global.id});
  ASSERT_FALSE(named.isOk());
  EXPECT_EQ(named.status().code(), ErrorCode::kScopeUnavailable);
  auto hidden = service_->hide(ctx(projectOnly), StateChangeRequest{global.id, std::nullopt});
  ASSERT_FALSE(hidden.isOk());
  EXPECT_EQ(hidden.status().code(), ErrorCode::kNotFound);
  CommonParams none;
  none.readScope = ReadScope::kNone;
  auto blind = service_->reject(ctx(none), StateChangeRequest{global.id, std::string("wrong")});
  ASSERT_FALSE(blind.isOk());
  EXPECT_EQ(blind.status().code(), ErrorCode::kScopeUnavailable);
  auto still = service_->get(ctx(), MemoryRef{global.id});
  ASSERT_TRUE(still.isOk());
  EXPECT_EQ(still->memory.state, MemoryState::kActive) << "nothing changed";
}

TEST_F(ServiceTest, ARequestMayNarrowItsConnectionsScopesButNeverWidenThem) {
  ClientState narrow;
  connect(narrow, [](InitializeRequest& r) { r.readScope = ReadScope::kProject; });
  CommonParams wider;
  wider.readScope = ReadScope::kAll;
  auto c = service_->context(narrow, wider);
  ASSERT_FALSE(c.isOk());
  EXPECT_EQ(c.status().code(), ErrorCode::kScopeUnavailable);
  EXPECT_EQ(fieldOf(c.status()), "read_scope");

  auto unreadable = service_->list(ctx(inScope(ScopeKind::kGlobal), &narrow), ListFilter{});
  ASSERT_FALSE(unreadable.isOk());
  EXPECT_EQ(unreadable.status().code(), ErrorCode::kScopeUnavailable);
  EXPECT_EQ(fieldOf(unreadable.status()), "scope");

  CommonParams moved;
  moved.writeScope = WriteScope::kGlobal;
  auto w = service_->context(client_, moved);
  ASSERT_FALSE(w.isOk());
  EXPECT_EQ(fieldOf(w.status()), "write_scope");
}

TEST_F(ServiceTest, ProjectMethodsWithoutAProjectNameProjectRoot) {
  ClientState noProject;
  connect(noProject, [](InitializeRequest& r) { r.projectRoot.reset(); });
  auto r = service_->repoCochange(ctx({}, &noProject), CochangeRequest{"src/main.cc", 5});
  ASSERT_FALSE(r.isOk());
  EXPECT_EQ(r.status().code(), ErrorCode::kScopeUnavailable);
  EXPECT_EQ(fieldOf(r.status()), "project_root");
  // Without a project, saves go where the connection writes: its default is the project, so they fail too…
  SaveInput in;
  in.summary = "nowhere to go";
  EXPECT_FALSE(service_->save(ctx({}, &noProject), in).isOk());
  // …and the global scope still works.
  EXPECT_TRUE(service_->save(ctx(inScope(ScopeKind::kGlobal), &noProject), in).isOk());
}

TEST_F(ServiceTest, AProjectRootWithANulIsRefused) {
  CommonParams p;
  p.projectRoot = std::string("/tmp/a\0b", 8);
  auto c = service_->context(client_, p);
  ASSERT_FALSE(c.isOk());
  EXPECT_EQ(c.status().code(), ErrorCode::kInvalidParams);
  EXPECT_EQ(fieldOf(c.status()), "project_root");
}

TEST_F(ServiceTest, WritesDisabledRefusesEveryWriteButNotReads) {
  auto saved = save("A memory written before writes were disabled");
  ClientState readOnly;
  connect(readOnly, [](InitializeRequest& r) { r.writeScope = WriteScope::kNone; });
  const CallContext c = ctx({}, &readOnly);
  SaveInput in;
  in.summary = "must not be stored";
  auto s = service_->save(c, in);
  ASSERT_FALSE(s.isOk());
  EXPECT_EQ(s.status().code(), ErrorCode::kScopeUnavailable);
  EXPECT_EQ(fieldOf(s.status()), "scope");
  auto h = service_->hide(c, StateChangeRequest{saved.id, std::nullopt});
  ASSERT_FALSE(h.isOk());
  EXPECT_EQ(h.status().code(), ErrorCode::kScopeUnavailable);
  EXPECT_EQ(service_->purge(c, PurgeRequest{saved.id, true}).status().code(), ErrorCode::kScopeUnavailable);
  UpdateRequest u;
  u.id = saved.id;
  u.summary = "changed";
  EXPECT_EQ(service_->update(c, u).status().code(), ErrorCode::kScopeUnavailable);
  ImportRequest import;
  import.jsonl = "{\"summary\":\"imported\"}\n";
  EXPECT_EQ(service_->importJsonl(c, import).status().code(), ErrorCode::kScopeUnavailable);

  auto got = service_->get(c, MemoryRef{saved.id});
  ASSERT_TRUE(got.isOk()) << "reads still work";
  EXPECT_EQ(got->memory.state, MemoryState::kActive) << "the refused hide changed nothing";
}

// audit/list by an id prefix resolves it as every other method does: a prefix of two memories is Ambiguous, not a
// silent empty page; a full id no scope holds (a purged memory's) still finds its events.
TEST_F(ServiceTest, AuditByAnAmbiguousPrefixIsAmbiguous) {
  auto imported = service_->importJsonl(
      ctx(), ImportRequest{"{\"id\":\"abcd-0001\",\"summary\":\"first\"}\n{\"id\":\"abcd-0002\",\"summary\":\"second\"}\n"});
  ASSERT_TRUE(imported.isOk()) << imported.status().toString();
  AuditFilter byPrefix;
  byPrefix.memoryId = "abcd";
  auto ambiguous = service_->auditList(ctx(), byPrefix);
  ASSERT_FALSE(ambiguous.isOk());
  EXPECT_EQ(ambiguous.status().code(), ErrorCode::kAmbiguous);
  ASSERT_TRUE(service_->purge(ctx(), PurgeRequest{"abcd-0001", true}).isOk());
  AuditFilter purged;
  purged.memoryId = "abcd-0001";
  auto events = service_->auditList(ctx(), purged);
  ASSERT_TRUE(events.isOk()) << events.status().toString();
  EXPECT_FALSE(events->events.empty()) << "a purged memory's events are found by its full id";
}

// An import that adds only tombstones still changed the scope: subscribers hear of it.
TEST_F(ServiceTest, AnImportOfTombstonesAloneIsAChange) {
  const size_t before = events_.size();
  auto imported = service_->importJsonl(
      ctx(), ImportRequest{"{\"type\":\"tombstone\",\"content_hash\":\"" + std::string(64, 'c') +
                               "\",\"reason\":\"wrong\"}\n"});
  ASSERT_TRUE(imported.isOk()) << imported.status().toString();
  EXPECT_EQ(imported->tombstones, 1);
  ASSERT_EQ(events_.size(), before + 1);
  EXPECT_EQ(events_.back().action, "import");
}

TEST_F(ServiceTest, ExportThenImportIntoAnotherDataDirKeepsEveryMemory) {
  auto a = save("First exported memory");
  auto b = save("Second exported memory");
  auto rejected = save("Rejected exported memory");
  ASSERT_TRUE(service_->reject(ctx(), StateChangeRequest{rejected.id, "wrong"}).isOk());

  ExportRequest request;
  request.allStates = true;
  auto page = service_->exportJsonl(ctx(inScope(ScopeKind::kProject)), request);
  ASSERT_TRUE(page.isOk()) << page.status().toString();
  EXPECT_FALSE(page->nextCursor.has_value());
  EXPECT_NE(page->jsonl.find(a.id), std::string::npos);
  EXPECT_NE(page->jsonl.find(b.id), std::string::npos);
  EXPECT_NE(page->jsonl.find("\"tombstone\""), std::string::npos);

  // Another daemon's data dir, importing into its global scope.
  fs::create_directories(dir_ / "other-data");
  auto other = makeService(SecretsMode::kRedact, (dir_ / "other-data").string());
  ClientState client;
  connect(client, {}, other.get());
  const CallContext into = ctx(inScope(ScopeKind::kGlobal), &client, other.get());
  auto counts = other->importJsonl(into, ImportRequest{page->jsonl, false});
  ASSERT_TRUE(counts.isOk()) << counts.status().toString();
  EXPECT_TRUE(counts->committed);
  EXPECT_EQ(counts->created, 3);
  EXPECT_EQ(counts->tombstones, 1);
  auto got = other->get(into, MemoryRef{a.id});
  ASSERT_TRUE(got.isOk()) << got.status().toString();
  EXPECT_EQ(got->memory.summary, "First exported memory");
  EXPECT_EQ(got->memory.scope, "global");
  // The tombstone came along: the rejected text stays refused there.
  SaveInput in;
  in.summary = "Rejected exported memory";
  auto resaved = other->save(into, in);
  ASSERT_TRUE(resaved.isOk());
  EXPECT_EQ(resaved->status, SaveStatus::kRejected);
}

TEST_F(ServiceTest, AnImportInPartsWritesNothingUntilItsLastPart) {
  auto first = service_->importJsonl(ctx(), ImportRequest{"{\"summary\":\"part one\"}\n\n", true});
  ASSERT_TRUE(first.isOk()) << first.status().toString();
  EXPECT_FALSE(first->committed);
  EXPECT_EQ(first->stagedLines, 2u) << "blank lines are counted";
  auto listed = service_->list(ctx(), ListFilter{});
  ASSERT_TRUE(listed.isOk());
  EXPECT_EQ(listed->total, 0);
  auto last = service_->importJsonl(ctx(), ImportRequest{"{\"summary\":\"part two\"}\n", false});
  ASSERT_TRUE(last.isOk()) << last.status().toString();
  EXPECT_TRUE(last->committed);
  EXPECT_EQ(last->created, 2);
  EXPECT_EQ(last->stagedLines, 3u);
}

TEST_F(ServiceTest, AnImportLineInErrorNamesItsLineAndDropsTheImport) {
  auto r = service_->importJsonl(ctx(), ImportRequest{"{\"summary\":\"fine\"}\n{\"use_count\":-1,\"summary\":\"x\"}\n", false});
  ASSERT_FALSE(r.isOk());
  EXPECT_EQ(r.status().code(), ErrorCode::kInvalidParams);
  EXPECT_EQ(fieldOf(r.status()), "jsonl");
  EXPECT_EQ(r.status().data()["line"], 2);
  auto listed = service_->list(ctx(), ListFilter{});
  ASSERT_TRUE(listed.isOk());
  EXPECT_EQ(listed->total, 0) << "nothing of a refused import is written";
}

// A superseded memory names its replacement, and only a superseded one does. Accepted, {state: active, superseded_by}
// made its replacement unpurgeable ("aaaa1 is superseded by bbbb1; restore it") with nothing to restore, and
// {state: superseded} without one answered a save of its text "superseded by ?". Each is refused naming the line.
TEST_F(ServiceTest, AnImportedSupersededByIsMadeToMatchItsState) {
  // Rows like these exist in databases written before imports checked them, and their exports must restore: a
  // replacement named by any state but superseded is dropped, and a superseded memory naming none comes in hidden.
  // Either way the replacement's purge is not blocked by a memory nothing can restore.
  const std::string replacement = "{\"id\":\"bbbb1\",\"summary\":\"b\"}\n";
  auto expectMadeConsistent = [&](const std::string& first, MemoryState expected) {
    SCOPED_TRACE(first);
    auto r = service_->importJsonl(ctx(), ImportRequest{first + "\n" + replacement, false});
    ASSERT_TRUE(r.isOk()) << r.status().toString();
    EXPECT_EQ(r->created, 2);
    auto a = service_->get(ctx(), MemoryRef{"aaaa1"});
    ASSERT_TRUE(a.isOk()) << a.status().toString();
    EXPECT_EQ(a->memory.state, expected);
    EXPECT_FALSE(a->memory.supersededBy.has_value());
    EXPECT_TRUE(service_->purge(ctx(), PurgeRequest{"bbbb1", true}).isOk()) << "the replacement's purge was blocked";
    ASSERT_TRUE(service_->purge(ctx(), PurgeRequest{"aaaa1", true}).isOk());
  };
  expectMadeConsistent(R"({"id":"aaaa1","summary":"a","state":"active","superseded_by":"bbbb1"})", MemoryState::kActive);
  expectMadeConsistent(R"({"id":"aaaa1","summary":"a","superseded_by":"bbbb1"})", MemoryState::kActive);  // no state
  expectMadeConsistent(R"({"id":"aaaa1","summary":"a","state":"hidden","superseded_by":"bbbb1"})", MemoryState::kHidden);
  expectMadeConsistent(R"({"id":"aaaa1","summary":"a","state":"superseded"})", MemoryState::kHidden);
  expectMadeConsistent(R"({"id":"aaaa1","summary":"a","state":"superseded","superseded_by":null})",
                       MemoryState::kHidden);

  // The one consistent form is written, and the purge it blocks is undone by restoring the superseded memory.
  auto ok = service_->importJsonl(
      ctx(), ImportRequest{R"({"id":"aaaa1","summary":"a","state":"superseded","superseded_by":"bbbb1"})"
                           "\n" + replacement, false});
  ASSERT_TRUE(ok.isOk()) << ok.status().toString();
  EXPECT_EQ(ok->created, 2);
  auto blocked = service_->purge(ctx(), PurgeRequest{"bbbb1", true});
  ASSERT_FALSE(blocked.isOk());
  EXPECT_EQ(blocked.status().code(), ErrorCode::kConflict);
  EXPECT_EQ(blocked.status().data().value("state", ""), "superseded");
  ASSERT_TRUE(service_->restore(ctx(), StateChangeRequest{"aaaa1", std::nullopt}).isOk());
  EXPECT_TRUE(service_->purge(ctx(), PurgeRequest{"bbbb1", true}).isOk());
}

// A save deduplicated into a memory that holds 16 files adds none past them, and says which it left out (memory/attach
// refuses the same refs with InvalidParams); refs with room are added and nothing is said.
TEST_F(ServiceTest, ADedupPastSixteenFilesNamesTheRefsItLeavesOut) {
  SaveInput in;
  in.summary = "The generated sources are rebuilt by make gen";
  for (int i = 0; i < 16; ++i) in.files.push_back("gen/f" + std::to_string(i) + ".cc");
  auto first = service_->save(ctx(), in);
  ASSERT_TRUE(first.isOk()) << first.status().toString();
  ASSERT_EQ(first->status, SaveStatus::kCreated);
  auto leftOutWarning = [](const SaveResult& r) {
    auto it = std::find_if(r.warnings.begin(), r.warnings.end(),
                           [](const std::string& w) { return w.find("left out") != std::string::npos; });
    return it == r.warnings.end() ? std::string() : *it;
  };
  in.files = {"gen/f0.cc", "gen/new1.cc", "gen/new2.cc", "gen/new3.cc"};
  auto again = service_->save(ctx(), in);
  ASSERT_TRUE(again.isOk()) << again.status().toString();
  EXPECT_EQ(again->status, SaveStatus::kDeduped);
  const std::string warning = leftOutWarning(*again);
  ASSERT_FALSE(warning.empty()) << "a dedup dropped refs without a word";
  for (const char* path : {"gen/new1.cc", "gen/new2.cc", "gen/new3.cc"}) {
    EXPECT_NE(warning.find(path), std::string::npos) << warning;
  }
  EXPECT_EQ(warning.find("gen/f0.cc"), std::string::npos) << "a path the memory holds is not left out: " << warning;
  EXPECT_NE(warning.find(first->id), std::string::npos) << warning;
  auto got = service_->get(ctx(), MemoryRef{first->id});
  ASSERT_TRUE(got.isOk()) << got.status().toString();
  EXPECT_EQ(got->memory.files.size(), 16u);

  SaveInput roomy;
  roomy.summary = "The fixtures live next to the tests";
  roomy.files = {"tests/a.cc"};
  ASSERT_TRUE(service_->save(ctx(), roomy).isOk());
  roomy.files = {"tests/b.cc"};
  auto added = service_->save(ctx(), roomy);
  ASSERT_TRUE(added.isOk()) << added.status().toString();
  EXPECT_EQ(added->status, SaveStatus::kDeduped);
  EXPECT_EQ(leftOutWarning(*added), "");
  ASSERT_TRUE(added->memory.has_value());
  EXPECT_EQ(added->memory->files.size(), 2u);
}

// The global scope has no work tree: an import into it refuses a file ref with lines, naming the line and the ref, as
// a global save refuses it (files[i].lines), and writes nothing. The project scope takes the same line.
TEST_F(ServiceTest, AnImportIntoTheGlobalScopeRefusesAnchoredRefs) {
  const nlohmann::json anchored = {
      {"id", "cccc1"},
      {"summary", "Keep the retry loop bounded"},
      {"files", nlohmann::json::array({"README.md", {{"path", "src/retry.c"},
                                                     {"blob_id", nullptr},
                                                     {"lines", {{3, 9}}},
                                                     {"blob", std::string(40, 'a')}}})}};
  const std::string jsonl = "{\"id\":\"dddd1\",\"summary\":\"fine\"}\n" + anchored.dump() + "\n";
  const CallContext global = ctx(inScope(ScopeKind::kGlobal));
  auto refused = service_->importJsonl(global, ImportRequest{jsonl, false});
  ASSERT_FALSE(refused.isOk()) << "an anchored ref was imported into the global scope";
  EXPECT_EQ(refused.status().code(), ErrorCode::kInvalidParams);
  EXPECT_EQ(fieldOf(refused.status()), "jsonl");
  EXPECT_EQ(refused.status().data()["line"], 2);
  EXPECT_EQ(refused.status().message().rfind("jsonl[line 2].files[1].lines: ", 0), 0u) << refused.status().message();
  EXPECT_EQ(service_->get(global, MemoryRef{"dddd1"}).status().code(), ErrorCode::kNotFound);
  EXPECT_EQ(service_->get(global, MemoryRef{"cccc1"}).status().code(), ErrorCode::kNotFound);

  auto project = service_->importJsonl(ctx(inScope(ScopeKind::kProject)), ImportRequest{jsonl, false});
  ASSERT_TRUE(project.isOk()) << project.status().toString();
  EXPECT_EQ(project->created, 2);
  auto got = service_->get(ctx(), MemoryRef{"cccc1"});
  ASSERT_TRUE(got.isOk()) << got.status().toString();
  ASSERT_EQ(got->memory.files.size(), 2u);
  EXPECT_TRUE(got->memory.files[1].anchor.has_value());
}

TEST_F(ServiceTest, AnExportCursorFromNowhereNamesCursor) {
  ExportRequest request;
  request.cursor = "not a cursor";
  auto r = service_->exportJsonl(ctx(), request);
  ASSERT_FALSE(r.isOk());
  EXPECT_EQ(fieldOf(r.status()), "cursor");
}

TEST_F(ServiceTest, AuditSinceTakesDatesAndTimesAndNamesSinceOtherwise) {
  auto saved = save("An audited memory");
  AuditFilter since;
  since.sinceAt = "2000-01-01";
  auto page = service_->auditList(ctx(), since);
  ASSERT_TRUE(page.isOk()) << page.status().toString();
  ASSERT_FALSE(page->events.empty());
  EXPECT_EQ(page->events.front().scope, ScopeKind::kProject);
  EXPECT_EQ(page->events.front().event.memoryId, saved.id);
  since.sinceAt = "2999-01-01T00:00:00+02:00";
  page = service_->auditList(ctx(), since);
  ASSERT_TRUE(page.isOk());
  EXPECT_TRUE(page->events.empty());
  since.sinceAt = "2026-02-31";
  auto bad = service_->auditList(ctx(), since);
  ASSERT_FALSE(bad.isOk());
  EXPECT_EQ(bad.status().code(), ErrorCode::kInvalidParams);
  EXPECT_EQ(fieldOf(bad.status()), "since");
}

TEST_F(ServiceTest, RedactModeRewritesCredentialsAndReportsEachField) {
  SaveInput in;
  in.summary = "Deploy key is AKIAIOSFODNN7EXAMPLE for the bucket";
  in.topics = {"aws"};
  auto r = service_->save(ctx(), in);
  ASSERT_TRUE(r.isOk()) << r.status().toString();
  ASSERT_TRUE(r->memory.has_value());
  EXPECT_EQ(r->memory->summary.find("AKIAIOSFODNN7EXAMPLE"), std::string::npos);
  ASSERT_EQ(r->redactions.size(), 1u);
  EXPECT_EQ(r->redactions[0].field, "summary");
  EXPECT_FALSE(r->redactions[0].kind.empty());
}

TEST_F(ServiceTest, RefuseModeRefusesCredentialsNamingTheField) {
  auto refusing = makeService(SecretsMode::kRefuse);
  ClientState client;
  connect(client, {}, refusing.get());
  SaveInput in;
  in.summary = "harmless";
  in.topics = {"fine", "AKIAIOSFODNN7EXAMPLE"};
  auto r = refusing->save(ctx({}, &client, refusing.get()), in);
  ASSERT_FALSE(r.isOk());
  EXPECT_EQ(r.status().code(), ErrorCode::kInvalidParams);
  EXPECT_EQ(fieldOf(r.status()), "topics[1]");
  EXPECT_EQ(r.status().message().find("AKIAIOSFODNN7EXAMPLE"), std::string::npos) << "the error never quotes it";
}

TEST_F(ServiceTest, MutationsAreReportedToTheChangeListener) {
  auto saved = save("A memory whose changes are heard");
  save("A global one", inScope(ScopeKind::kGlobal));
  // Back to back, most of these fall in one millisecond of updated_at's clock: each change is heard all the same.
  ASSERT_TRUE(service_->pin(ctx(), MemoryRef{saved.id}).isOk());
  ASSERT_TRUE(service_->pin(ctx(), MemoryRef{saved.id}).isOk());  // already pinned: nothing changes
  ASSERT_TRUE(service_->unpin(ctx(), MemoryRef{saved.id}).isOk());
  ASSERT_TRUE(service_->hide(ctx(), StateChangeRequest{saved.id, std::nullopt}).isOk());
  ASSERT_TRUE(service_->hide(ctx(), StateChangeRequest{saved.id, std::nullopt}).isOk());  // hidden already
  auto by = save("The memory that replaces it");
  ASSERT_TRUE(service_->supersede(ctx(), SupersedeRequest{saved.id, by.id}).isOk());
  ASSERT_TRUE(service_->supersede(ctx(), SupersedeRequest{saved.id, by.id}).isOk());  // superseded by it already
  std::string actions;
  for (const auto& e : events_) actions += e.action + " ";
  ASSERT_EQ(events_.size(), 7u) << actions;
  EXPECT_EQ(events_[0].action, "create");
  EXPECT_EQ(events_[0].scope, ScopeKind::kProject);
  EXPECT_EQ(events_[0].projectRoot, root_);
  EXPECT_EQ(events_[1].scope, ScopeKind::kGlobal);
  EXPECT_EQ(events_[2].action, "pin");
  EXPECT_EQ(events_[2].id, saved.id);
  EXPECT_EQ(events_[3].action, "unpin");
  EXPECT_EQ(events_[4].action, "hide");
  EXPECT_EQ(events_[5].action, "create");
  EXPECT_EQ(events_[6].action, "supersede");
  EXPECT_EQ(events_[6].id, saved.id);
}

TEST_F(ServiceTest, HintsNeedAConnectionAndCountTurns) {
  CallContext noConnection = ctx();
  noConnection.client = nullptr;
  SaveInput gotcha;
  gotcha.summary = "Generated files are rebuilt by make gen";
  gotcha.category = "gotcha";
  gotcha.files = {"gen/schema.cc"};
  ASSERT_TRUE(service_->save(ctx(), gotcha).isOk());
  auto without = service_->hintsForTool(noConnection, HintsRequest{"read", {"gen/schema.cc"}, ""});
  ASSERT_TRUE(without.isOk()) << without.status().toString();
  EXPECT_TRUE(without->hints.empty()) << "hint state belongs to a connection: none, no hints";
  EXPECT_EQ(service_->hintsTurn(noConnection, NoParams{})->turn, 0);
  auto turn = service_->hintsTurn(ctx(), NoParams{});
  ASSERT_TRUE(turn.isOk());
  EXPECT_EQ(turn->turn, 1);
  EXPECT_EQ(service_->hintsTurn(ctx(), NoParams{})->turn, 2);
  SaveInput in;
  in.summary = "Never edit generated files by hand";
  in.category = "gotcha";
  in.files = {"gen/api.cc"};
  ASSERT_TRUE(service_->save(ctx(), in).isOk());
  auto hints = service_->hintsForTool(ctx(), HintsRequest{"read", {"gen/api.cc"}, ""});
  ASSERT_TRUE(hints.isOk()) << hints.status().toString();
  ASSERT_EQ(hints->hints.size(), 1u);
  EXPECT_EQ(hints->hints[0].label, "gotcha");
  auto again = service_->hintsForTool(ctx(), HintsRequest{"read", {"gen/api.cc"}, ""});
  ASSERT_TRUE(again.isOk());
  EXPECT_TRUE(again->hints.empty()) << "once per turn";
}

TEST_F(ServiceTest, HintsReadOnlyTheScopesTheRequestReads) {
  SaveInput in;
  in.summary = "Never edit generated files by hand";
  in.category = "gotcha";
  in.files = {"gen/api.cc"};
  ASSERT_TRUE(service_->save(ctx(), in).isOk());
  const HintsRequest read{"read", {"gen/api.cc"}, ""};
  ClientState none;
  connect(none, [](InitializeRequest& r) { r.readScope = ReadScope::kNone; });
  auto unread = service_->hintsForTool(ctx({}, &none), read);
  ASSERT_TRUE(unread.isOk()) << unread.status().toString();
  EXPECT_TRUE(unread->hints.empty()) << "read_scope none reads nothing";
  // Nothing is read, yet the files are checked as in any request.
  auto outside = service_->hintsForTool(ctx({}, &none), HintsRequest{"read", {"../../etc/passwd"}, ""});
  ASSERT_FALSE(outside.isOk());
  EXPECT_EQ(outside.status().code(), ErrorCode::kForbidden);
  ClientState global;
  connect(global, [](InitializeRequest& r) { r.readScope = ReadScope::kGlobal; });
  EXPECT_TRUE(service_->hintsForTool(ctx({}, &global), read)->hints.empty()) << "the project is not read";
  CommonParams narrowed;
  narrowed.readScope = ReadScope::kNone;
  EXPECT_TRUE(service_->hintsForTool(ctx(narrowed), read)->hints.empty()) << "a request's own read_scope";
  // The same request reading the project finds it: the answers above were empty for their scopes alone.
  auto hints = service_->hintsForTool(ctx(), read);
  ASSERT_TRUE(hints.isOk()) << hints.status().toString();
  ASSERT_EQ(hints->hints.size(), 1u);
}

TEST_F(ServiceTest, ARecalledMemoryIsRecalledAgainOnLaterTurns) {
  const auto saved = save("The release script signs tags with the team key");
  for (int turn = 0; turn < 3; ++turn) {
    EXPECT_TRUE(holds(recalledIds("release script tags"), saved.id)) << "turn " << turn;
    ASSERT_TRUE(service_->hintsTurn(ctx(), NoParams{}).isOk());
  }
}

TEST_F(ServiceTest, AMemoryNoTextLaneFindsIsRecalledByItsEmbedding) {
  // Neither "deploying" nor "approved" begins or is part of a word of the text, so neither full-text lane finds it;
  // their stems are its words' stems, so the embeddings are close (cosine 0.22).
  const auto saved = save("Kubernetes deployments need two approvals");
  save("The font cache lives in the home directory");
  RecallParams request;
  request.query.query = "deploying approved";
  request.query.limit = 10;
  auto r = service_->recall(ctx(), request);
  ASSERT_TRUE(r.isOk()) << r.status().toString();
  ASSERT_FALSE(r->hits.empty());
  EXPECT_EQ(r->hits[0].memory.id, saved.id);
  std::vector<std::string> lanes;
  r->hits[0].signals.forEachFiredLane([&](const char* lane) { lanes.push_back(lane); });
  EXPECT_EQ(lanes, std::vector<std::string>{"semantic"});
}

TEST_F(ServiceTest, ConcurrentSavesOfOneTextCreateOneMemory) {
  // With each save committed alone, and with saves batched and applied in the background as memqd runs them (a
  // save of text already handed off must see it).
  // Each on a project of its own: a project's database lives in the project, not in the data directory.
  fs::create_directories(dir_ / "batched" / "data");
  fs::create_directories(dir_ / "batched" / "project");
  auto batched = makeService(SecretsMode::kRedact, (dir_ / "batched" / "data").string(), 256);
  for (Service* service : {service_.get(), batched.get()}) {
    const std::string project = service == batched.get() ? (dir_ / "batched" / "project").string() : root_;
    ClientState client;
    connect(client, [&](InitializeRequest& r) { r.projectRoot = project; }, service);
    constexpr int kSavers = 6;
    std::vector<std::thread> savers;
    std::vector<Result<SaveResult>> results(kSavers, Status::internal("not run"));
    for (int i = 0; i < kSavers; ++i) {
      savers.emplace_back([&, i] {
        SaveInput in;
        in.summary = "Two connections racing to save the same note";
        results[i] = service->save(ctx({}, &client, service), in);
      });
    }
    for (auto& t : savers) t.join();
    int created = 0;
    std::set<std::string> ids;
    for (const auto& r : results) {
      ASSERT_TRUE(r.isOk()) << r.status().toString();
      if (r->status == SaveStatus::kCreated) ++created;
      else EXPECT_EQ(r->status, SaveStatus::kDeduped);
      ids.insert(r->id);
    }
    EXPECT_EQ(created, 1);
    EXPECT_EQ(ids.size(), 1u);
    ListFilter all;
    all.state = std::nullopt;
    EXPECT_EQ(service->list(ctx({}, &client, service), all)->total, 1);
  }
}

TEST_F(ServiceTest, ReviewClustersGroupNearDuplicatesOfOneScope) {
  save("Run the database migrations before starting the server");
  save("Run the database migrations before starting the server locally");
  save("Something unrelated about fonts");
  auto report = service_->reviewClusters(ctx(), ClusterRequest{0.5});
  ASSERT_TRUE(report.isOk()) << report.status().toString();
  ASSERT_EQ(report->clusters.size(), 1u);
  EXPECT_EQ(report->clusters[0].scope, ScopeKind::kProject);
  EXPECT_EQ(report->clusters[0].memories.size(), 2u);
  EXPECT_GE(report->clusters[0].weight, 0.5);
  EXPECT_TRUE(std::is_sorted(report->clusters[0].memories.begin(), report->clusters[0].memories.end(),
                             [](const Memory& a, const Memory& b) { return a.id < b.id; }));
}

TEST_F(ServiceTest, StatsCoverEachReadableScope) {
  save("One memory for the stats");
  auto stats = service_->stats(ctx(), NoParams{});
  ASSERT_TRUE(stats.isOk()) << stats.status().toString();
  ASSERT_EQ(stats->scopes.size(), 2u);
  EXPECT_EQ(stats->scopes[0].scope, ScopeKind::kProject);
  EXPECT_EQ(stats->scopes[1].scope, ScopeKind::kGlobal);
  EXPECT_TRUE(stats->scopes[0].counters.is_object());
  EXPECT_FALSE(stats->scopes[0].cochangeHead.has_value()) << "outside git there is no co-change head";
}

TEST(WireNamesTest, ScopeKindAndSaveStatusRoundTrip) {
  for (ScopeKind k : {ScopeKind::kProject, ScopeKind::kGlobal}) EXPECT_EQ(parseScopeKind(toString(k)), k);
  EXPECT_STREQ(toString(ScopeKind::kGlobal), "global");
  EXPECT_FALSE(parseScopeKind("both").has_value());
  for (SaveStatus s : {SaveStatus::kCreated, SaveStatus::kDeduped, SaveStatus::kExistsHidden,
                       SaveStatus::kExistsSuperseded, SaveStatus::kRejected}) {
    EXPECT_EQ(parseSaveStatus(toString(s)), s);
  }
  EXPECT_STREQ(toString(SaveStatus::kExistsSuperseded), "exists_superseded");
  EXPECT_FALSE(parseSaveStatus("saved").has_value());
  EXPECT_EQ(parseSecretsMode("refuse"), SecretsMode::kRefuse);
  EXPECT_EQ(parseSecretsMode("redact"), SecretsMode::kRedact);
  EXPECT_FALSE(parseSecretsMode("warn").has_value());
}

}  // namespace
}  // namespace memq
