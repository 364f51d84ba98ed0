// A hostile file system under a real memqd: a project deleted and cloned again at the same path while memqd holds
// its database open, a disk that stays full across a restart so that the save journal cannot be applied, and
// directories and files planted by another user (a second user created by the test, skipped when not root):
// nothing acknowledged is lost or left out silently, and nothing of the owner's reaches a file another user
// controls.
#include <grp.h>
#include <pwd.h>
#include <sys/mount.h>
#include <sys/stat.h>

#include <optional>
#include <set>

#include "tests/common/other_user.h"
#include "tests/integration/memqd_fixture.h"

namespace memq::testing {
namespace {

using json = nlohmann::json;

bool isRoot() { return ::geteuid() == 0; }

// The second user, made once per test process (each test is one) and removed at its exit.
const std::optional<memq::testing::OtherUser>& otherUser() {
  static const std::optional<memq::testing::OtherUser> user = memq::testing::OtherUser::create("hostile");
  return user;
}

mode_t modeOf(const fs::path& p) {
  struct stat st{};
  if (::lstat(p.c_str(), &st) != 0) return 0;
  return st.st_mode & 07777;
}

bool existsNoFollow(const fs::path& p) {
  struct stat st{};
  return ::lstat(p.c_str(), &st) == 0;
}

// `cat` of a file as the other user: true when it could read it.
bool otherUserCanRead(const fs::path& p) {
  std::string cmd = "runuser -u " + otherUser()->name() + " -- cat " + shellQuote(p.string()) + " >/dev/null 2>&1";
  return std::system(cmd.c_str()) == 0;
}

// Distinct text of about 3,000 characters, so that a small file system fills within a few hundred saves.
std::string bulkyDetails(int i) {
  std::string out;
  std::mt19937 rng(static_cast<uint32_t>(i) * 7919u + 17u);
  static const char* kWords[] = {"journal", "commit", "tmpfs", "replay", "batch", "sqlite", "page", "frame",
                                 "inode", "device", "restart", "space", "acknowledged", "saves", "scope"};
  while (out.size() < 3000) {
    out += kWords[rng() % (sizeof kWords / sizeof *kWords)];
    out += std::to_string(rng() % 1000);
    out += ' ';
  }
  return out;
}

class HostileFilesTest : public MemqdTest {
 protected:
  void TearDown() override {
    daemon_.reset();
    for (const auto& m : mounts_) (void)::umount2(m.c_str(), MNT_DETACH);
    if (savedHome_) ::setenv("HOME", savedHome_->c_str(), 1);
    MemqdTest::TearDown();
  }

  // memory/save in `root` over a new connection, answered or refused.
  Result<json> saveIn(const std::string& root, const std::string& summary) {
    RpcClient c = daemon_->client("");
    return c.call("memory/save", {{"summary", summary}, {"project_root", root}});
  }

  // memqd's HOME, whose .gitconfig lists `safeDirectory` as git's safe.directory (set before startDaemon).
  void allowInGitConfig(const std::string& safeDirectory) {
    fs::path home = dir_ / "home";
    writeTextFile(home / ".gitconfig", "[safe]\n\tdirectory = " + safeDirectory + "\n");
    const char* old = std::getenv("HOME");
    savedHome_ = old ? old : "";
    ::setenv("HOME", home.c_str(), 1);
  }

  // A tmpfs of `size` at dir_/name, unmounted after the test; nullopt when this root may not mount (a container
  // without CAP_SYS_ADMIN).
  std::optional<fs::path> mountTmpfs(const std::string& name, const std::string& size) {
    fs::path m = dir_ / name;
    fs::create_directories(m);
    std::string cmd = "mount -t tmpfs -o size=" + size + ",mode=0755 none " + shellQuote(m.string()) + " 2>/dev/null";
    if (std::system(cmd.c_str()) != 0) return std::nullopt;
    mounts_.push_back(m);
    return m;
  }

  // A file of the other user's, with `text` and `mode`.
  fs::path plantOthersFile(const fs::path& p, const std::string& text, mode_t mode) {
    writeTextFile(p, text);
    EXPECT_EQ(::chown(p.c_str(), otherUser()->uid(), otherUser()->gid()), 0);
    EXPECT_EQ(::chmod(p.c_str(), mode), 0);
    return p;
  }

  void expectRefused(const Result<json>& r, const std::string& mentions) {
    ASSERT_FALSE(r.isOk()) << r->dump();
    EXPECT_EQ(r.status().code(), ErrorCode::kScopeUnavailable) << r.status().toString();
    EXPECT_NE(r.status().message().find(mentions), std::string::npos) << r.status().message();
  }

  std::vector<fs::path> mounts_;
  std::optional<std::string> savedHome_;
};

std::set<std::string> listedIds(const json& listResult) {
  std::set<std::string> ids;
  for (const auto& m : listResult["memories"]) ids.insert(m["id"].get<std::string>());
  return ids;
}

// --- a project deleted and created again at the same path ---

TEST_F(HostileFilesTest, AReclonedProjectKeepsWhatIsSavedAfterTheRecloneAcrossARestart) {
  makeWorkDir("hf-reclone");
  initGitRepo(project_);
  startDaemon();
  auto before = daemon_->memq("save \"before the reclone\"", project_);
  ASSERT_EQ(before.exitCode, 0) << before.err;
  ASSERT_NE(before.out.find("created"), std::string::npos) << before.out;

  // A re-clone: the repository, and the database memqd holds open inside its git dir, are deleted.
  fs::remove_all(project_);
  initGitRepo(project_);
  auto after = daemon_->memq("save \"after the reclone\"", project_);
  ASSERT_EQ(after.exitCode, 0) << after.err;
  ASSERT_NE(after.out.find("created"), std::string::npos) << after.out;
  // The file memqd writes is the one on disk now.
  ASSERT_TRUE(fs::exists(fs::path(project_) / ".git/memq/memory.db"));
  auto listed = daemon_->memq("list", project_);
  ASSERT_EQ(listed.exitCode, 0) << listed.err;
  EXPECT_NE(listed.out.find("after the reclone"), std::string::npos) << listed.out;

  daemon_->stop();
  EXPECT_NE(daemon_->log().find("was removed, replaced or moved on disk"), std::string::npos) << daemon_->log();
  startDaemon();
  listed = daemon_->memq("list", project_);
  ASSERT_EQ(listed.exitCode, 0) << listed.err;
  EXPECT_NE(listed.out.find("after the reclone"), std::string::npos) << listed.out;
  // "before" was in the database deleted with the project: gone with it, as the user asked.
  EXPECT_EQ(listed.out.find("before the reclone"), std::string::npos) << listed.out;
}

TEST_F(HostileFilesTest, ADatabaseReplacedWhileSavesStreamIsNeverWrittenAfterTheReplacement) {
  makeWorkDir("hf-stream");
  fs::create_directories(project_);
  startDaemon();
  RpcClient c = daemon_->client(project_);
  std::vector<std::string> acknowledgedAfter;
  bool replaced = false;
  // Saves stream (one connection, back to back, so that they batch) while the project's .memq is removed.
  for (int i = 0; i < 600; ++i) {
    if (i == 200) {
      fs::remove_all(fs::path(project_) / ".memq");
      replaced = true;
    }
    auto r = c.call("memory/save", {{"summary", "streamed note " + std::to_string(i) + " about the replaced file"}});
    if (!r) {
      // A save refused because its file went away says so; it was not acknowledged.
      EXPECT_EQ(r.status().code(), ErrorCode::kStorageError) << r.status().toString();
      EXPECT_NE(r.status().message().find("was removed, replaced or moved"), std::string::npos)
          << r.status().message();
      continue;
    }
    if (replaced) acknowledgedAfter.push_back((*r)["id"].get<std::string>());
  }
  ASSERT_GT(acknowledgedAfter.size(), 300u);
  daemon_->kill9();  // no clean close: what is on disk is what a crash leaves
  startDaemon();
  RpcClient again = daemon_->client(project_);
  auto listed = again.call("memory/list", {{"limit", 1000}, {"scope", "project"}});
  ASSERT_TRUE(listed.isOk()) << listed.status().toString();
  auto ids = listedIds(*listed);
  for (const auto& id : acknowledgedAfter) EXPECT_EQ(ids.count(id), 1u) << "acknowledged save " << id << " lost";
}

// --- a disk that stays full across a restart ---

TEST_F(HostileFilesTest, AScopeWhoseJournalCouldNotBeAppliedSaysSoUntilSpaceReturns) {
  if (!isRoot()) GTEST_SKIP() << "needs root to mount a tmpfs";
  makeWorkDir("hf-full");
  const std::optional<fs::path> mounted = mountTmpfs("disk", "3m");
  if (!mounted) GTEST_SKIP() << "root here may not mount a tmpfs (no CAP_SYS_ADMIN)";
  const fs::path disk = *mounted;
  project_ = (disk / "proj").string();
  fs::create_directories(project_);
  startDaemon();

  std::vector<std::string> acknowledged;
  {
    // Saves in JSON-RPC batches of 20: handled back to back, so they stream into the save journal (acknowledged)
    // and their transaction commits later, however slow the machine (a sanitizer build too).
    RpcClient c = daemon_->client(project_);
    int failures = 0;
    int next = 0;
    for (int round = 0; round < 150 && failures < 40; ++round) {
      json batch = json::array();
      for (int k = 0; k < 20; ++k, ++next) {
        batch.push_back({{"jsonrpc", "2.0"},
                         {"id", next},
                         {"method", "memory/save"},
                         {"params",
                          {{"summary", "note " + std::to_string(next) + " written while the disk fills"},
                           {"details", bulkyDetails(next)}}}});
      }
      ASSERT_TRUE(c.sendRaw(batch.dump() + "\n").isOk());
      auto line = c.readRawLine(std::chrono::seconds(120));
      ASSERT_TRUE(line.isOk()) << line.status().toString();
      const json replies = json::parse(*line);
      ASSERT_TRUE(replies.is_array()) << *line;
      for (const auto& reply : replies) {
        if (reply.contains("result")) {
          acknowledged.push_back(reply["result"]["id"].get<std::string>());
        } else {
          EXPECT_EQ(reply["error"]["code"].get<int>(), -32006) << reply.dump();  // StorageError
          ++failures;
        }
      }
    }
    ASSERT_GE(failures, 40) << "the disk never filled";
  }
  // Killed, so that nothing is checkpointed or deleted at close: the disk stays as full as the saves left it.
  daemon_->kill9();
  startDaemon();

  RpcClient c = daemon_->client(project_);
  auto listed = c.call("memory/list", {{"limit", 1000}, {"scope", "project"}});
  ASSERT_TRUE(listed.isOk()) << listed.status().toString();
  auto ids = listedIds(*listed);
  std::vector<std::string> missing;
  for (const auto& id : acknowledged) {
    if (ids.count(id) == 0) missing.push_back(id);
  }
  if (missing.empty()) {
#if defined(__SANITIZE_THREAD__) || defined(__SANITIZE_ADDRESS__)
    // Under a sanitizer saves run several times slower and commit in smaller batches; the disk can fill on a
    // journal append rather than on a commit, and then no acknowledged save is left out.
    GTEST_SKIP() << "every acknowledged save was committed before the disk filled on this (sanitizer) run";
#else
    FAIL() << "every acknowledged save was committed before the disk filled: nothing to test";
#endif
  }
  // The answer leaves them out, and says so.
  ASSERT_TRUE(listed->contains("warnings")) << listed->dump().substr(0, 400);
  ASSERT_EQ((*listed)["warnings"].size(), 1u);
  EXPECT_NE((*listed)["warnings"][0].get<std::string>().find("could not be applied"), std::string::npos);

  auto exported = c.call("export", {{"scope", "project"}});
  ASSERT_TRUE(exported.isOk()) << exported.status().toString();
  ASSERT_TRUE(exported->contains("warnings"));
  EXPECT_FALSE((*exported)["warnings"].empty());

  // An acknowledged save that cannot be read is not "not found".
  auto got = c.call("memory/get", {{"id", missing.front()}});
  ASSERT_FALSE(got.isOk());
  EXPECT_EQ(got.status().code(), ErrorCode::kStorageError) << got.status().toString();
  EXPECT_NE(got.status().message().find("could not be applied"), std::string::npos) << got.status().message();
  // A memory that is readable comes with the warning.
  std::string readable;
  for (const auto& id : acknowledged) {
    if (ids.count(id) != 0) readable = id;
  }
  if (!readable.empty()) {
    auto one = c.call("memory/get", {{"id", readable}});
    ASSERT_TRUE(one.isOk()) << one.status().toString();
    EXPECT_TRUE(one->contains("warnings"));
  }

  // The CLI prints it.
  auto cli = daemon_->memq("list --limit 1000", project_);
  ASSERT_EQ(cli.exitCode, 0) << cli.err;
  EXPECT_NE(cli.err.find("warning: "), std::string::npos) << cli.err;
  EXPECT_NE(cli.err.find("could not be applied"), std::string::npos) << cli.err;
  auto cliExport = daemon_->memq("export", project_);
  EXPECT_NE(cliExport.err.find("could not be applied"), std::string::npos) << cliExport.err;
  EXPECT_EQ(cliExport.out.find("warning"), std::string::npos);  // stdout stays JSONL
  // The reopen is logged.
  EXPECT_NE(daemon_->log().find("without every acknowledged save"), std::string::npos) << daemon_->log();

  // Space returns (the file system grows): every acknowledged save is read, and the warning goes.
  std::string grow = "mount -o remount,size=64m " + shellQuote(disk.string());
  ASSERT_EQ(std::system(grow.c_str()), 0) << grow;
  json complete;
  for (int attempt = 0; attempt < 100; ++attempt) {
    auto r = c.call("memory/list", {{"limit", 1000}, {"scope", "project"}});
    ASSERT_TRUE(r.isOk()) << r.status().toString();
    complete = *r;
    if (!complete.contains("warnings")) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_FALSE(complete.contains("warnings")) << complete["warnings"].dump();
  ids = listedIds(complete);
  for (const auto& id : acknowledged) EXPECT_EQ(ids.count(id), 1u) << "acknowledged save " << id << " lost";
}

// --- directories and files of another user ---

TEST_F(HostileFilesTest, AProjectDirectoryOwnedByAnotherUserIsRefusedUntilSafeDirectoryAllowsIt) {
  if (!otherUser()) GTEST_SKIP() << "needs root (to create a second user with useradd)";
  makeWorkDir("hf-owner");
  fs::create_directories(project_);
  ASSERT_EQ(::chown(project_.c_str(), otherUser()->uid(), otherUser()->gid()), 0);
  startDaemon();
  auto r = saveIn(project_, "a note in someone else's directory");
  ASSERT_FALSE(r.isOk());
  EXPECT_EQ(r.status().code(), ErrorCode::kScopeUnavailable) << r.status().toString();
  EXPECT_NE(r.status().message().find("owned by uid " + std::to_string(otherUser()->uid())), std::string::npos)
      << r.status().message();
  EXPECT_NE(r.status().message().find("git config --global --add safe.directory " + project_), std::string::npos)
      << r.status().message();
  EXPECT_FALSE(existsNoFollow(fs::path(project_) / ".memq"));  // nothing created in it

  // Allowed the way git allows such a repository.
  daemon_.reset();
  allowInGitConfig(project_);
  startDaemon();
  r = saveIn(project_, "a note in a directory the owner allowed");
  ASSERT_TRUE(r.isOk()) << r.status().toString();
  EXPECT_EQ(modeOf(fs::path(project_) / ".memq"), 0700u);
  EXPECT_EQ(modeOf(fs::path(project_) / ".memq/memory.db"), 0600u);
}

TEST_F(HostileFilesTest, AGitRepositoryOwnedByAnotherUserIsRefusedSayingHowToAllowIt) {
  if (!otherUser()) GTEST_SKIP() << "needs root (to create a second user with useradd)";
  makeWorkDir("hf-gitowner");
  initGitRepo(project_);
  std::string chown = "chown -R " + otherUser()->name() + " " + shellQuote(project_);
  ASSERT_EQ(std::system(chown.c_str()), 0);
  startDaemon();
  auto r = saveIn(project_, "a note in someone else's repository");
  ASSERT_FALSE(r.isOk());
  EXPECT_EQ(r.status().code(), ErrorCode::kScopeUnavailable) << r.status().toString();
  EXPECT_NE(r.status().message().find("safe.directory"), std::string::npos) << r.status().message();
  EXPECT_FALSE(existsNoFollow(fs::path(project_) / ".git/memq"));
}

TEST_F(HostileFilesTest, APlantedDatabaseOfAnotherUserIsRefusedAndLeftAsItIs) {
  if (!otherUser()) GTEST_SKIP() << "needs root (to create a second user with useradd)";
  makeWorkDir("hf-planted");
  fs::create_directories(project_);
  ASSERT_EQ(::chown(project_.c_str(), otherUser()->uid(), otherUser()->gid()), 0);
  // The owner allowed the directory; its owner planted a world-readable database in it.
  fs::path memqDir = fs::path(project_) / ".memq";
  fs::create_directories(memqDir);
  ASSERT_EQ(::chown(memqDir.c_str(), otherUser()->uid(), otherUser()->gid()), 0);
  ASSERT_EQ(::chmod(memqDir.c_str(), 0755), 0);
  fs::path planted = plantOthersFile(memqDir / "memory.db", "", 0644);
  allowInGitConfig(project_);
  startDaemon();
  expectRefused(saveIn(project_, "a secret the other user must not read"), "refusing " + memqDir.string());
  EXPECT_EQ(readTextFile(planted), "");
  EXPECT_EQ(modeOf(planted), 0644u);
  EXPECT_FALSE(existsNoFollow(memqDir / "memory.db-saves"));
  EXPECT_FALSE(existsNoFollow(memqDir / "memory.db-wal"));

  // Its directory handed to memqd's user, the planted file is still not memqd's.
  ASSERT_EQ(::chown(memqDir.c_str(), 0, 0), 0);
  ASSERT_EQ(::chmod(memqDir.c_str(), 0700), 0);
  expectRefused(saveIn(project_, "a secret the other user must not read"), "refusing " + planted.string());
  EXPECT_EQ(readTextFile(planted), "");
  EXPECT_EQ(modeOf(planted), 0644u);
  EXPECT_TRUE(daemon_->running());
}

TEST_F(HostileFilesTest, ASymlinkedJournalOrDatabaseIsNeverWrittenOrChmoddedThrough) {
  if (!otherUser()) GTEST_SKIP() << "needs root (to create a second user with useradd)";
  makeWorkDir("hf-symlink");
  fs::path memqDir = fs::path(project_) / ".memq";
  fs::create_directories(memqDir);
  ASSERT_EQ(::chmod(memqDir.c_str(), 0700), 0);
  fs::path victim = plantOthersFile(dir_ / "victim" / "notes.txt", "the other user's notes\n", 0644);
  startDaemon();

  // The journal a link to the other user's file: no record lands in it.
  fs::create_symlink(victim, memqDir / "memory.db-saves");
  expectRefused(saveIn(project_, "a note bound for the journal"), "memory.db-saves");
  EXPECT_EQ(readTextFile(victim), "the other user's notes\n");
  EXPECT_EQ(modeOf(victim), 0644u);
  for (const auto& e : fs::directory_iterator(memqDir)) fs::remove(e.path());

  // The database a link to it: neither opened nor chmodded.
  fs::create_symlink(victim, memqDir / "memory.db");
  expectRefused(saveIn(project_, "a note bound for the database"), "symbolic link");
  EXPECT_EQ(readTextFile(victim), "the other user's notes\n");
  EXPECT_EQ(modeOf(victim), 0644u);
  for (const auto& e : fs::directory_iterator(memqDir)) fs::remove(e.path());

  // The WAL a link to it.
  fs::create_symlink(victim, memqDir / "memory.db-wal");
  expectRefused(saveIn(project_, "a note bound for the WAL"), "memory.db-wal");
  EXPECT_EQ(readTextFile(victim), "the other user's notes\n");
  EXPECT_EQ(modeOf(victim), 0644u);
  EXPECT_TRUE(daemon_->running());
}

TEST_F(HostileFilesTest, ADanglingSymlinkNeverCreatesItsTarget) {
  if (!otherUser()) GTEST_SKIP() << "needs root (to create a second user with useradd)";
  makeWorkDir("hf-dangling");
  fs::path memqDir = fs::path(project_) / ".memq";
  fs::create_directories(memqDir);
  ASSERT_EQ(::chmod(memqDir.c_str(), 0700), 0);
  fs::path elsewhere = dir_ / "elsewhere";
  fs::create_directories(elsewhere);
  ASSERT_EQ(::chown(elsewhere.c_str(), otherUser()->uid(), otherUser()->gid()), 0);
  startDaemon();
  for (const char* name : {"memory.db", "memory.db-saves", "memory.db-wal", "memory.db-shm"}) {
    SCOPED_TRACE(name);
    fs::path target = elsewhere / (std::string("planted") + name);
    fs::create_symlink(target, memqDir / name);
    auto r = saveIn(project_, std::string("a note while ") + name + " dangles");
    expectRefused(r, name);
    EXPECT_FALSE(existsNoFollow(target)) << "memqd created the target of a dangling " << name;
    fs::remove(memqDir / name);
    // What memqd created before the refusal is its own; the next case starts from an empty directory.
    for (const auto& e : fs::directory_iterator(memqDir)) fs::remove(e.path());
  }
}

TEST_F(HostileFilesTest, ADatabaseDirectoryThatIsALinkOrOthersMayWriteIsRefused) {
  if (!otherUser()) GTEST_SKIP() << "needs root (to create a second user with useradd)";
  makeWorkDir("hf-dirs");
  fs::create_directories(project_);
  fs::path memqDir = fs::path(project_) / ".memq";
  startDaemon();

  fs::path othersDir = dir_ / "others";
  fs::create_directories(othersDir);
  ASSERT_EQ(::chown(othersDir.c_str(), otherUser()->uid(), otherUser()->gid()), 0);
  fs::create_directory_symlink(othersDir, memqDir);
  expectRefused(saveIn(project_, "a note bound for a linked directory"), "symbolic link");
  EXPECT_TRUE(fs::is_empty(othersDir));
  fs::remove(memqDir);

  fs::create_directories(memqDir);
  ASSERT_EQ(::chown(memqDir.c_str(), otherUser()->uid(), otherUser()->gid()), 0);
  expectRefused(saveIn(project_, "a note bound for someone else's directory"),
                "owned by uid " + std::to_string(otherUser()->uid()));
  EXPECT_TRUE(fs::is_empty(memqDir));

  ASSERT_EQ(::chown(memqDir.c_str(), 0, 0), 0);
  ASSERT_EQ(::chmod(memqDir.c_str(), 0777), 0);
  expectRefused(saveIn(project_, "a note bound for a directory anyone may write"), "group or others may write");
  EXPECT_TRUE(fs::is_empty(memqDir));
  EXPECT_EQ(modeOf(memqDir), 0777u);  // refused, not changed
}

TEST_F(HostileFilesTest, TheOtherUserCannotReadWhatMemqdWrites) {
  if (!otherUser()) GTEST_SKIP() << "needs root (to create a second user with useradd)";
  makeWorkDir("hf-private");
  fs::create_directories(project_);
  ASSERT_EQ(::chmod(dir_.c_str(), 0755), 0);
  startDaemon();
  auto r = saveIn(project_, "a note only its owner may read");
  ASSERT_TRUE(r.isOk()) << r.status().toString();
  fs::path memqDir = fs::path(project_) / ".memq";
  // The other user can read what is not memqd's beside them (runuser works, the project is reachable)...
  writeTextFile(fs::path(project_) / "README", "public\n");
  ASSERT_EQ(::chmod((fs::path(project_) / "README").c_str(), 0644), 0);
  ASSERT_EQ(::chmod(project_.c_str(), 0755), 0);
  ASSERT_TRUE(otherUserCanRead(fs::path(project_) / "README"));
  // ...but none of what memqd wrote.
  ASSERT_TRUE(fs::exists(memqDir / "memory.db"));
  EXPECT_FALSE(otherUserCanRead(memqDir / "memory.db"));
  EXPECT_FALSE(otherUserCanRead(memqDir / "memory.db-saves"));
  EXPECT_FALSE(otherUserCanRead(fs::path(daemon_->dataDir()) / "global.db"));
  for (const auto& e : fs::directory_iterator(memqDir)) {
    EXPECT_EQ(modeOf(e.path()) & 077, 0u) << e.path();
  }
}

}  // namespace
}  // namespace memq::testing
