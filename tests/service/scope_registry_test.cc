// ScopeRegistry while a database opens (daemon/service/scope_registry.h): requests for other scopes are served
// meanwhile, two first requests for one project share one open and one Scope, a failed open reaches every request
// that waited for it and is tried again by the next; and Service::scopesOpenFor, which tells the server whether a
// request would open a scope. Real temp SQLite files, a real git repository; an open is held in progress through
// ScopeRegistryOptions::beforeOpen.
#include "daemon/service/scope_registry.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "daemon/embed/hashbag.h"
#include "daemon/git/git_repo_signals.h"
#include "daemon/service/service.h"
#include "tests/service/git_service.h"

namespace memq::testing {
namespace {

// How long a test waits for something the registry must do (a call to return, an open to start): a bound on
// liveness, not a measure of speed, generous enough for a loaded `ctest -j` under a sanitizer.
constexpr auto kLiveness = std::chrono::seconds(20);
// How long a held open stays held at most: a test that failed before releasing it still ends.
constexpr auto kHoldAtMost = std::chrono::seconds(120);

// Holds every open of one database path in ScopeRegistryOptions::beforeOpen until released, and counts the opens
// (beforeOpen) and the waits for another request's open (waitingForOpen) of each path.
class OpenGate {
 public:
  void hold(const std::string& path) {
    std::lock_guard lock(mutex_);
    held_ = path;
    released_ = false;
  }
  void release() {
    {
      std::lock_guard lock(mutex_);
      released_ = true;
    }
    changed_.notify_all();
  }
  void beforeOpen(const std::string& path) {
    std::unique_lock lock(mutex_);
    ++opens_[path];
    changed_.notify_all();
    changed_.wait_for(lock, kHoldAtMost, [&] { return released_ || path != held_; });
  }
  void waitingForOpen(const std::string& path) {
    {
      std::lock_guard lock(mutex_);
      ++waits_[path];
    }
    changed_.notify_all();
  }
  // Whether `n` opens of `path` started (or `n` requests began waiting for one) within kLiveness.
  bool awaitOpens(const std::string& path, int n) { return await(opens_, path, n); }
  bool awaitWaits(const std::string& path, int n) { return await(waits_, path, n); }
  int opens(const std::string& path) {
    std::lock_guard lock(mutex_);
    return opens_[path];
  }

 private:
  bool await(std::map<std::string, int>& counts, const std::string& path, int n) {
    std::unique_lock lock(mutex_);
    return changed_.wait_for(lock, kLiveness, [&] { return counts[path] >= n; });
  }

  std::mutex mutex_;
  std::condition_variable changed_;
  std::string held_;
  bool released_ = false;
  std::map<std::string, int> opens_;
  std::map<std::string, int> waits_;
};

// Releases the gate when the test leaves its scope, early (a failed ASSERT) or not. Declared after the futures of
// the calls it holds, so that it is destroyed first and their destructors, which wait for the calls, do not wait
// for ever.
struct ReleaseOnExit {
  OpenGate& gate;
  ~ReleaseOnExit() { gate.release(); }
};

bool contains(const std::vector<std::string>& paths, const std::string& path) {
  return std::find(paths.begin(), paths.end(), path) != paths.end();
}

class ScopeRegistryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    repo_ = std::make_unique<GitRepo>(tmp_.path() + "/repo");
    repo_->commit({{"README.md", "the repository's first file\n"}});
    plain_ = tmp_.path() + "/plain";
    other_ = tmp_.path() + "/other";
    fs::create_directories(plain_);
    fs::create_directories(other_);
    fs::create_directories(tmp_.path() + "/data");
  }

  void makeRegistry() {
    ScopeRegistryOptions options;
    options.dataDir = tmp_.path() + "/data";
    options.embedder = &embedder_;
    options.saveBatch = 1;
    options.repoFactory = [](const ProjectLocation& loc) -> std::shared_ptr<RepoSignals> {
      return std::make_shared<GitRepoSignals>(loc);
    };
    options.beforeOpen = [this](const std::string& path) { gate_.beforeOpen(path); };
    options.waitingForOpen = [this](const std::string& path) { gate_.waitingForOpen(path); };
    registry_ = std::make_unique<ScopeRegistry>(options);
  }

  // The database path of the project `dir` is in (locating it opens nothing).
  std::string dbPathOf(const std::string& dir) {
    auto loc = registry_->locate(dir);
    EXPECT_TRUE(loc.isOk()) << loc.status().toString();
    return loc.isOk() ? loc->dbPath : std::string();
  }

  // `call`'s result when it returns within kLiveness while an open is held; nullopt when it does not: then the gate
  // is released (the call waited for the held open), so that the call, and the test, end.
  template <typename Call>
  auto servedWhileHeld(Call call) -> std::optional<decltype(call())> {
    auto future = std::async(std::launch::async, std::move(call));
    if (future.wait_for(kLiveness) == std::future_status::ready) return future.get();
    gate_.release();
    return std::nullopt;
  }

  TempDir tmp_;  // declared first: removed after the registry has closed its files
  HashbagEmbedder embedder_;
  OpenGate gate_;
  std::unique_ptr<ScopeRegistry> registry_;  // destroyed before the gate its hooks call
  std::unique_ptr<GitRepo> repo_;
  std::string plain_;  // a project outside git
  std::string other_;  // another one
};

TEST_F(ScopeRegistryTest, OtherScopesAreServedWhileADatabaseOpens) {
  makeRegistry();
  ASSERT_TRUE(registry_->project(other_).isOk());  // open before the held open starts
  const std::string held = dbPathOf(repo_->dir());
  gate_.hold(held);
  auto slow = std::async(std::launch::async, [&] { return registry_->project(repo_->dir()); });
  ReleaseOnExit release{gate_};
  ASSERT_TRUE(gate_.awaitOpens(held, 1)) << "the open of the repository's database never started";

  auto global = servedWhileHeld([&] { return registry_->global(); });
  ASSERT_TRUE(global.has_value()) << "global() waited for another scope's database to open";
  EXPECT_TRUE(global->isOk()) << global->status().toString();
  auto other = servedWhileHeld([&] { return registry_->project(other_); });
  ASSERT_TRUE(other.has_value()) << "an open project waited for another project's database to open";
  EXPECT_TRUE(other->isOk()) << other->status().toString();
  auto plain = servedWhileHeld([&] { return registry_->project(plain_); });
  ASSERT_TRUE(plain.has_value()) << "the first open of a project waited for another project's open";
  EXPECT_TRUE(plain->isOk()) << plain->status().toString();

  // The registry's other calls go on too; none counts or closes the database being opened.
  auto paths = servedWhileHeld([&] { return registry_->openScopePaths(); });
  ASSERT_TRUE(paths.has_value()) << "openScopePaths waited for a database to open";
  EXPECT_FALSE(contains(*paths, held));
  EXPECT_TRUE(contains(*paths, dbPathOf(other_)));
  auto heldIsOpen = servedWhileHeld([&] { return registry_->projectIsOpen(repo_->dir()); });
  ASSERT_TRUE(heldIsOpen.has_value()) << "projectIsOpen waited for a database to open";
  EXPECT_FALSE(*heldIsOpen);
  EXPECT_TRUE(registry_->projectIsOpen(other_));
  auto closed = servedWhileHeld([&] { return registry_->closeIdle(std::chrono::seconds(0)); });
  ASSERT_TRUE(closed.has_value()) << "closeIdle waited for a database to open";
  auto checkpointed = servedWhileHeld([&] {
    registry_->checkpointAll();
    return registry_->commitPendingSaves(std::chrono::milliseconds(0));
  });
  ASSERT_TRUE(checkpointed.has_value()) << "checkpointAll or commitPendingSaves waited for a database to open";

  gate_.release();
  auto opened = slow.get();
  ASSERT_TRUE(opened.isOk()) << opened.status().toString();
  EXPECT_TRUE(registry_->projectIsOpen(repo_->dir()));
  EXPECT_TRUE(contains(registry_->openScopePaths(), held)) << "the database opened is not among the open ones";
  EXPECT_EQ(gate_.opens(held), 1);
}

TEST_F(ScopeRegistryTest, TwoFirstRequestsForOneProjectShareOneOpenAndOneScope) {
  makeRegistry();
  const std::string db = dbPathOf(repo_->dir());
  gate_.hold(db);
  auto first = std::async(std::launch::async, [&] { return registry_->project(repo_->dir()); });
  std::future<Result<std::shared_ptr<Scope>>> second;
  ReleaseOnExit release{gate_};
  ASSERT_TRUE(gate_.awaitOpens(db, 1)) << "the first request's open never started";
  second = std::async(std::launch::async, [&] { return registry_->project(repo_->dir()); });
  ASSERT_TRUE(gate_.awaitWaits(db, 1)) << "the second request did not wait for the first one's open";
  gate_.release();

  auto a = first.get();
  auto b = second.get();
  ASSERT_TRUE(a.isOk()) << a.status().toString();
  ASSERT_TRUE(b.isOk()) << b.status().toString();
  EXPECT_EQ(a->get(), b->get()) << "two Scopes for one root";
  EXPECT_EQ((*a)->db.get(), (*b)->db.get()) << "two stores on one database file";
  EXPECT_EQ(gate_.opens(db), 1) << "the database was opened twice";
  auto again = registry_->project(repo_->dir());
  ASSERT_TRUE(again.isOk()) << again.status().toString();
  EXPECT_EQ(again->get(), a->get());
  EXPECT_EQ(registry_->openScopePaths(), std::vector<std::string>{db});
}

TEST_F(ScopeRegistryTest, AFailedOpenIsReportedToItsWaitersAndTriedAgainByTheNextRequest) {
  // A directory where the database file belongs: the store refuses to open it.
  const fs::path memqDir = fs::path(plain_) / ".memq";
  fs::create_directories(memqDir / "memory.db");
  fs::permissions(memqDir, fs::perms::owner_all, fs::perm_options::replace);
  makeRegistry();
  const std::string db = dbPathOf(plain_);
  ASSERT_EQ(db, (memqDir / "memory.db").string());
  gate_.hold(db);
  auto first = std::async(std::launch::async, [&] { return registry_->project(plain_); });
  std::future<Result<std::shared_ptr<Scope>>> second;
  ReleaseOnExit release{gate_};
  ASSERT_TRUE(gate_.awaitOpens(db, 1)) << "the first request's open never started";
  second = std::async(std::launch::async, [&] { return registry_->project(plain_); });
  ASSERT_TRUE(gate_.awaitWaits(db, 1)) << "the second request did not wait for the first one's open";
  gate_.release();

  auto a = first.get();
  auto b = second.get();
  ASSERT_FALSE(a.isOk()) << "a directory was opened as a database";
  ASSERT_FALSE(b.isOk()) << "the request that waited did not get the open's failure";
  EXPECT_EQ(a.status().code(), b.status().code());
  EXPECT_EQ(a.status().message(), b.status().message());
  EXPECT_EQ(gate_.opens(db), 1) << "the request that waited opened the file itself";
  EXPECT_FALSE(registry_->projectIsOpen(plain_));
  EXPECT_FALSE(contains(registry_->openScopePaths(), db));

  // The failure is not remembered: once the file can be opened, the next request opens it.
  fs::remove(memqDir / "memory.db");
  auto again = registry_->project(plain_);
  ASSERT_TRUE(again.isOk()) << again.status().toString();
  EXPECT_EQ(gate_.opens(db), 2);
  EXPECT_TRUE(registry_->projectIsOpen(plain_));
}

// A database removed on disk while a long request is inside it (an import holds it for a minute) is retired once
// that request is done, without the registry's lock: meanwhile the other scopes and the registry's checks (the I/O
// thread's among them) go on, and a request for the removed one waits for the retirement, then opens the file now
// at the path as its writer (the old store had let the save journal's lock go).
TEST_F(ScopeRegistryTest, ADatabaseRemovedWhileARequestIsInsideItIsRetiredWithoutHoldingTheRegistry) {
  makeRegistry();
  auto before = registry_->project(plain_);
  ASSERT_TRUE(before.isOk()) << before.status().toString();
  ASSERT_TRUE(registry_->project(other_).isOk());
  const std::string db = dbPathOf(plain_);
  std::shared_ptr<ScopeDatabase> old = (*before)->db;

  std::promise<void> holding;
  std::promise<void> letGo;
  std::thread request([&, done = letGo.get_future()] {
    MutexLock lock(old->mutex);  // a request inside the store
    holding.set_value();
    done.wait_for(kHoldAtMost);
  });
  struct LetGoOnExit {
    std::promise<void>& letGo;
    std::thread& request;
    ~LetGoOnExit() {
      try {
        letGo.set_value();
      } catch (const std::future_error&) {  // let go already
      }
      request.join();
    }
  } letGoOnExit{letGo, request};
  holding.get_future().wait();
  for (const char* suffix : {"", "-wal", "-shm"}) fs::remove(db + suffix);

  auto reopened = std::async(std::launch::async, [&] { return registry_->project(plain_); });
  // Lets the held request go when a call does not return within kLiveness, so that the test ends.
  auto returns = [&](auto call) {
    auto future = std::async(std::launch::async, std::move(call));
    if (future.wait_for(kLiveness) == std::future_status::ready) return true;
    letGo.set_value();
    return false;
  };
  ASSERT_TRUE(returns([&] {
    while (registry_->projectIsOpen(plain_)) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  })) << "the registry's lock was held while the removed database waited for the request inside it";
  auto global = registry_->global();
  EXPECT_TRUE(global.isOk()) << global.status().toString();
  EXPECT_TRUE(registry_->projectIsOpen(other_));
  EXPECT_FALSE(contains(registry_->openScopePaths(), db));
  EXPECT_EQ(reopened.wait_for(std::chrono::milliseconds(50)), std::future_status::timeout)
      << "the file at the path was opened before the removed store was retired";

  letGo.set_value();
  auto after = reopened.get();
  ASSERT_TRUE(after.isOk()) << after.status().toString();
  EXPECT_NE((*after)->db, old) << "the removed database came back";
  EXPECT_TRUE(fs::exists(db)) << "no new database at the path";
  EXPECT_FALSE(contains(registry_->readOnlyScopePaths(), db))
      << "the new store only follows: the old one still held the save journal when it opened";
}

TEST_F(ScopeRegistryTest, ScopesOpenForTellsWhetherARequestWouldLocateOrOpenAScope) {
  ServiceOptions options;
  options.dataDir = tmp_.path() + "/data";
  options.embedder = &embedder_;
  options.saveBatch = 1;
  ClientState client;  // declared first: outlives the Service that registers it at initialize
  Service service(options);
  using Use = Service::ScopeUse;
  const CommonParams none{};
  EXPECT_TRUE(service.scopesOpenFor(client, none, Use::kNone));
  CommonParams naming;
  naming.projectRoot = plain_;
  EXPECT_FALSE(service.scopesOpenFor(client, naming, Use::kLocation)) << "initialize would locate the project";

  InitializeRequest init;
  init.clientName = "scope-registry-test";
  init.projectRoot = plain_;
  ASSERT_TRUE(service.initialize(client, init).isOk());
  EXPECT_TRUE(service.scopesOpenFor(client, none, Use::kLocation));
  EXPECT_TRUE(service.scopesOpenFor(client, naming, Use::kLocation));
  EXPECT_FALSE(service.scopesOpenFor(client, none, Use::kRead)) << "no scope is open yet";
  EXPECT_FALSE(service.scopesOpenFor(client, none, Use::kWrite)) << "no scope is open yet";

  ASSERT_TRUE(service.scopes().project(plain_).isOk());
  EXPECT_TRUE(service.scopesOpenFor(client, none, Use::kWrite)) << "a save writes the project, open now";
  EXPECT_FALSE(service.scopesOpenFor(client, none, Use::kRead)) << "a read of all scopes reads the global one too";
  CommonParams projectOnly;
  projectOnly.readScope = ReadScope::kProject;
  EXPECT_TRUE(service.scopesOpenFor(client, projectOnly, Use::kRead));
  CommonParams global;
  global.scope = ScopeKind::kGlobal;
  EXPECT_FALSE(service.scopesOpenFor(client, global, Use::kWrite)) << "the global scope is not open yet";

  ASSERT_TRUE(service.scopes().global().isOk());
  EXPECT_FALSE(service.scopesOpenFor(client, none, Use::kRead))
      << "an all read also reads the project's team scope, whose setting no request has read yet";
  {
    // A read of all scopes reads the project's team setting (none here) on the way.
    auto ctx = service.context(client, none);
    ASSERT_TRUE(ctx.isOk()) << ctx.status().toString();
    EXPECT_EQ(service.get(*ctx, MemoryRef{"zzzz"}).status().code(), ErrorCode::kNotFound);
  }
  EXPECT_TRUE(service.scopesOpenFor(client, none, Use::kRead));
  EXPECT_TRUE(service.scopesOpenFor(client, global, Use::kWrite));
  CommonParams elsewhere;
  elsewhere.projectRoot = other_;  // never located
  EXPECT_FALSE(service.scopesOpenFor(client, elsewhere, Use::kRead));
  EXPECT_FALSE(service.scopesOpenFor(client, elsewhere, Use::kWrite));
  CommonParams team;
  team.scope = ScopeKind::kTeam;
  EXPECT_FALSE(service.scopesOpenFor(client, team, Use::kRead)) << "team scopes open apart from the registry";
}

}  // namespace
}  // namespace memq::testing
