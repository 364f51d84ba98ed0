// Crash consistency: writers save continuously while memqd is killed with SIGKILL at a random moment, over and over.
// Every save the daemon acknowledged must be there after a restart on the same data dir, and every database file
// must pass PRAGMA integrity_check while the daemon is down.
#include <SQLiteCpp/SQLiteCpp.h>
#include <gtest/gtest.h>

#include <atomic>
#include <fstream>
#include <mutex>
#include <random>
#include <set>
#include <thread>

#include "memqd_fixture.h"

namespace memq::testing {
namespace {

using json = nlohmann::json;

// A temp dir removed when it leaves scope, so a failed ASSERT (which returns early) leaves no /tmp/mq-* behind.
struct ScopedTempDir {
  fs::path path;
  ~ScopedTempDir() {
    std::error_code ignored;
    fs::remove_all(path, ignored);
  }
};

// Every *.db under the given directories (the global scope in the data dir, the project scope in <root>/.memq),
// checked read-only.
std::vector<std::string> integrityProblems(const std::vector<fs::path>& dirs) {
  std::vector<std::string> problems;
  size_t checked = 0;
  std::vector<fs::path> files;
  for (const auto& dir : dirs) {
    for (const auto& entry : fs::recursive_directory_iterator(dir)) {
      if (entry.is_regular_file() && entry.path().extension() == ".db") files.push_back(entry.path());
    }
  }
  for (const auto& path : files) {
    ++checked;
    try {
      SQLite::Database db(path.string(), SQLite::OPEN_READONLY);
      SQLite::Statement q(db, "PRAGMA integrity_check");
      std::string verdict;
      while (q.executeStep()) verdict += q.getColumn(0).getString() + ";";
      if (verdict != "ok;") problems.push_back(path.string() + ": " + verdict);
    } catch (const std::exception& e) {
      problems.push_back(path.string() + ": " + e.what());
    }
  }
  if (checked == 0) problems.push_back("no database file found");
  return problems;
}

TEST(CrashTest, EveryAcknowledgedSaveSurvivesSigkillAndTheDatabasesStayIntact) {
  constexpr int kCycles = 22;
  constexpr int kWriters = 3;
  // Declared before the daemon, so the dir is removed only after the daemon has stopped.
  const ScopedTempDir scoped{makeTempDir("crash")};
  const fs::path& dir = scoped.path;
  std::string project = (dir / "proj").string();
  fs::create_directories(project + "/src");
  std::ofstream(project + "/src/a.cc") << "int a;\n";
  Memqd daemon(dir);
  std::mt19937 rng(std::random_device{}());
  std::set<std::string> acknowledged;  // every id the daemon answered a save with, across all cycles
  std::string dbPath;
  size_t unacknowledged = 0;  // saves sent whose reply never came (the kill cut them off)
  const auto testStart = std::chrono::steady_clock::now();

  for (int cycle = 0; cycle < kCycles; ++cycle) {
    ASSERT_TRUE(daemon.start()) << "cycle " << cycle << "\n" << daemon.log();
    {
      // The previous cycle's acknowledged saves (and all before) are present after the restart.
      RpcClient c = daemon.connect();
      auto init = c.call("initialize", {{"client_name", "crash-check"}, {"project_root", project}});
      ASSERT_TRUE(init.isOk()) << init.status().toString();
      dbPath = (*init)["project"]["db_path"].get<std::string>();
      for (const auto& id : acknowledged) {
        auto m = c.call("memory/get", {{"id", id}});
        ASSERT_TRUE(m.isOk()) << "cycle " << cycle << ": acknowledged save " << id
                              << " is missing after SIGKILL + restart: " << m.status().toString();
        ASSERT_EQ((*m)["id"], id);
      }
    }
    std::mutex mu;
    std::vector<std::string> acked;
    std::atomic<size_t> lost{0};
    std::atomic<bool> stop{false};
    std::vector<std::thread> writers;
    for (int w = 0; w < kWriters; ++w) {
      writers.emplace_back([&, w, seed = rng()] {
        std::mt19937 local(seed);
        auto conn = RpcClient::connect(daemon.socket(), std::chrono::seconds(5));
        if (!conn) return;
        RpcClient c = std::move(*conn);
        if (!c.call("initialize", {{"client_name", "writer"}, {"project_root", project}})) return;
        for (int n = 0; !stop; ++n) {
          json p = {{"summary", "cycle " + std::to_string(cycle) + " writer " + std::to_string(w) + " save " +
                                    std::to_string(n) + " nonce " + std::to_string(local())},
                    {"details", std::string(200 + (n % 7) * 100, 'd')},
                    {"topics", {"crash", "w" + std::to_string(w)}}};
          if (n % 3 == 0) p["files"] = {"src/a.cc"};
          auto r = c.call("memory/save", p, std::chrono::seconds(10));
          if (!r) {
            // The daemon died under us: this save may or may not have committed, and was never acknowledged.
            if (isTransportError(r.status())) ++lost;
            return;
          }
          std::lock_guard lock(mu);
          acked.push_back((*r)["id"].get<std::string>());
        }
      });
    }
    // Kill at a random moment once writes are flowing (a loaded machine may take a while to get the first one in).
    auto firstAckDeadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (std::chrono::steady_clock::now() < firstAckDeadline) {
      {
        std::lock_guard lock(mu);
        if (!acked.empty()) break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100 + rng() % 201));
    daemon.kill9();
    stop = true;
    for (auto& t : writers) t.join();
    unacknowledged += lost;
    EXPECT_GT(acked.size(), 0u) << "cycle " << cycle << " acknowledged nothing";
    acknowledged.insert(acked.begin(), acked.end());
    // While the daemon is down: the files as SIGKILL left them (WAL and all) are consistent.
    ASSERT_TRUE(fs::exists(dbPath)) << dbPath;
    for (const auto& p : integrityProblems({daemon.dataDir(), fs::path(dbPath).parent_path()})) {
      ADD_FAILURE() << "cycle " << cycle << ": " << p;
    }
  }

  // Final check on a clean restart: every acknowledged id is listed, then a clean stop and one more integrity check.
  ASSERT_TRUE(daemon.start()) << daemon.log();
  {
    RpcClient c = daemon.client(project, "crash-final");
    ASSERT_FALSE(dbPath.empty());
    std::set<std::string> listed;
    for (int offset = 0;; offset += 1000) {
      auto l = c.call("memory/list", {{"state", "all"}, {"scope", "project"}, {"limit", 1000}, {"offset", offset}});
      ASSERT_TRUE(l.isOk()) << l.status().toString();
      for (const auto& m : (*l)["memories"]) listed.insert(m["id"].get<std::string>());
      if ((*l)["memories"].size() < 1000) break;
    }
    for (const auto& id : acknowledged) EXPECT_TRUE(listed.count(id)) << id;
    EXPECT_GE(listed.size(), acknowledged.size());
    EXPECT_LE(listed.size(), acknowledged.size() + unacknowledged) << "saves appeared that nobody sent";
  }
  EXPECT_EQ(daemon.stop(), 0);
  for (const auto& p : integrityProblems({daemon.dataDir(), fs::path(dbPath).parent_path()})) {
    ADD_FAILURE() << "after a clean stop: " << p;
  }
  // Saves that follow each other are batched and acknowledged from the save journal, so most kills cut a batch
  // short: its saves came back above only because a restart applied them from the journal.
  size_t replays = 0;
  const std::string log = daemon.log();
  for (size_t at = log.find("from the save journal"); at != std::string::npos;
       at = log.find("from the save journal", at + 1)) {
    ++replays;
  }
  EXPECT_GT(replays, 0u) << "no restart applied saves from a journal: the test did not cover batched saves";
  std::cout << "[ crash    ] " << kCycles << " SIGKILLs, " << acknowledged.size() << " acknowledged saves, "
            << unacknowledged << " cut off, " << replays << " restarts applied saves from the journal, "
            << std::chrono::duration<double>(std::chrono::steady_clock::now() - testStart).count() << " s\n";
}

}  // namespace
}  // namespace memq::testing
