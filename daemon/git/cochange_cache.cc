// SQLite persistence of the co-change graph; see cochange_cache.h.
#include "daemon/git/cochange_cache.h"

#include <SQLiteCpp/Statement.h>
#include <SQLiteCpp/Transaction.h>
#include <spdlog/spdlog.h>

#include <cstdint>
#include <exception>
#include <filesystem>
#include <string>
#include <vector>

#include "daemon/util/clock.h"

namespace memq {

CoChangeCache::CoChangeCache(std::string dbPath, std::string worktree)
    : dbPath_(std::move(dbPath)), worktree_(std::move(worktree)) {}

CoChangeCache::~CoChangeCache() = default;

template <typename F>
Status CoChangeCache::guarded(const char* what, F&& body, bool quiet) {
  try {
    body();
    return Status::ok();
  } catch (const std::exception& e) {
    if (!quiet) spdlog::warn("memq: co-change cache ({}) {} failed: {}", dbPath_, what, e.what());
    return Status::storage(std::string("co-change cache ") + what + ": " + e.what());
  }
}

SQLite::Database* CoChangeCache::db() {
  if (db_) return db_.get();
  // Not remembered as a failure: the store creates and migrates the file when the scope opens, which may be
  // after this object exists; each refresh looks again (a stat), and only the first miss is logged.
  std::error_code ec;
  if (dbPath_.empty() || !std::filesystem::exists(dbPath_, ec)) {
    if (!reportedUnavailable_) {
      spdlog::info("memq: no project database at {} yet; co-change runs without its cache", dbPath_);
      reportedUnavailable_ = true;
    }
    return nullptr;
  }
  std::unique_ptr<SQLite::Database> opened;
  Status s = guarded("open", [&] {
    auto db = std::make_unique<SQLite::Database>(dbPath_, SQLite::OPEN_READWRITE);
    db->exec("PRAGMA busy_timeout = 5000");
    db->exec("PRAGMA journal_mode = WAL");
    db->exec("PRAGMA foreign_keys = ON");
    SQLite::Statement probe(*db, "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name IN "
                                 "('cochange_graphs', 'cochange_commits', 'cochange_files', 'cochange_pairs')");
    probe.executeStep();
    if (probe.getColumn(0).getInt() != 4) throw std::runtime_error("migration 0002 (repo signals) not applied");
    opened = std::move(db);
  }, /*quiet=*/reportedUnavailable_);
  if (!s.isOk()) {
    reportedUnavailable_ = true;
    return nullptr;
  }
  db_ = std::move(opened);
  return db_.get();
}

bool CoChangeCache::load(const std::string& settings, CoChangeCounts& counts) {
  counts.clear();
  SQLite::Database* d = db();
  if (d == nullptr) return false;
  bool found = false;
  // A pair row naming a file id that has no file row (a damaged or hand-edited cache: the writes here never leave
  // one) would index past the files later (CoChangeSnapshot::build, by id), and a file id outside 32 bits would wrap
  // when stored: such a cache is not used at all, and the refresh rebuilds it from history.
  std::string damage;
  Status s = guarded("load", [&] {
    SQLite::Statement g(*d, "SELECT id, head, settings FROM cochange_graphs WHERE worktree = ?");
    g.bind(1, worktree_);
    if (!g.executeStep()) return;
    const int64_t id = g.getColumn(0).getInt64();
    const std::string head = g.getColumn(1).getString();
    if (g.getColumn(2).getString() != settings) return;  // built under other options: rebuild
    std::vector<bool> isFile;  // by file id: whether a file row was loaded for it
    SQLite::Statement files(*d, "SELECT id, path, changes FROM cochange_files WHERE graph_id = ?");
    files.bind(1, id);
    while (files.executeStep()) {
      const int64_t fileId = files.getColumn(0).getInt64();
      if (fileId < 0 || fileId >= int64_t{UINT32_MAX}) {
        damage = "file id " + std::to_string(fileId) + " out of range";
        return;
      }
      counts.setFile(static_cast<uint32_t>(fileId), files.getColumn(1).getString(), files.getColumn(2).getInt());
      if (isFile.size() <= static_cast<size_t>(fileId)) isFile.resize(static_cast<size_t>(fileId) + 1, false);
      isFile[static_cast<size_t>(fileId)] = true;
    }
    const auto loaded = [&isFile](int64_t fileId) {
      return fileId >= 0 && static_cast<uint64_t>(fileId) < isFile.size() && isFile[static_cast<size_t>(fileId)];
    };
    SQLite::Statement pairs(*d, "SELECT a, b, count FROM cochange_pairs WHERE graph_id = ?");
    pairs.bind(1, id);
    while (pairs.executeStep()) {
      const int64_t a = pairs.getColumn(0).getInt64();
      const int64_t b = pairs.getColumn(1).getInt64();
      if (!loaded(a) || !loaded(b) || a == b) {
        damage = "pair (" + std::to_string(a) + ", " + std::to_string(b) + ") names no loaded file";
        return;
      }
      counts.setPair(static_cast<uint32_t>(a), static_cast<uint32_t>(b), pairs.getColumn(2).getInt());
    }
    SQLite::Statement window(*d, "SELECT seq, commit_id, counted FROM cochange_commits WHERE graph_id = ? "
                                 "ORDER BY seq");
    window.bind(1, id);
    while (window.executeStep()) {
      counts.window.push_back(
          {window.getColumn(0).getInt64(), window.getColumn(1).getString(), window.getColumn(2).getInt() != 0});
    }
    counts.head = head;
    found = true;
  });
  // One line per load, not per row: the first damaged row ends the read.
  if (!damage.empty()) {
    spdlog::warn("memq: co-change cache ({}) is damaged ({}); rebuilding it from history", dbPath_, damage);
  }
  if (!s.isOk() || !found) {
    counts.clear();
    return false;
  }
  counts.clearDirty();
  synced_ = true;
  return true;
}

int64_t CoChangeCache::graphId(const std::string& settings, const std::string& head) {
  SQLite::Statement up(*db_,
                       "INSERT INTO cochange_graphs (worktree, head, settings, updated_at) VALUES (?, ?, ?, ?) "
                       "ON CONFLICT (worktree) DO UPDATE SET head = excluded.head, settings = excluded.settings, "
                       "updated_at = excluded.updated_at");
  up.bind(1, worktree_);
  up.bind(2, head);
  up.bind(3, settings);
  up.bind(4, isoNow());
  up.exec();
  SQLite::Statement q(*db_, "SELECT id FROM cochange_graphs WHERE worktree = ?");
  q.bind(1, worktree_);
  q.executeStep();
  return q.getColumn(0).getInt64();
}

void CoChangeCache::insertWindow(int64_t graph, const std::vector<WindowCommit>& entries) {
  SQLite::Statement ins(*db_, "INSERT OR REPLACE INTO cochange_commits (graph_id, seq, commit_id, counted) "
                              "VALUES (?, ?, ?, ?)");
  for (const WindowCommit& w : entries) {
    ins.bind(1, graph);
    ins.bind(2, w.seq);
    ins.bind(3, w.commit);
    ins.bind(4, w.counted ? 1 : 0);
    ins.exec();
    ins.reset();
  }
}

Status CoChangeCache::saveFull(const std::string& settings, const CoChangeCounts& counts) {
  synced_ = false;
  if (db() == nullptr) return Status::ok();
  Status s = guarded("save", [&] {
    SQLite::Transaction tx(*db_, SQLite::TransactionBehavior::IMMEDIATE);
    const int64_t graph = graphId(settings, counts.head);
    for (const char* table : {"cochange_commits", "cochange_files", "cochange_pairs"}) {
      SQLite::Statement del(*db_, std::string("DELETE FROM ") + table + " WHERE graph_id = ?");
      del.bind(1, graph);
      del.exec();
    }
    SQLite::Statement file(*db_, "INSERT INTO cochange_files (graph_id, id, path, changes) VALUES (?, ?, ?, ?)");
    for (uint32_t id = 0; id < counts.idCount(); ++id) {
      if (counts.changes(id) <= 0) continue;
      file.bind(1, graph);
      file.bind(2, static_cast<int64_t>(id));
      file.bind(3, counts.path(id));
      file.bind(4, counts.changes(id));
      file.exec();
      file.reset();
    }
    SQLite::Statement pair(*db_, "INSERT INTO cochange_pairs (graph_id, a, b, count) VALUES (?, ?, ?, ?)");
    for (const auto& [key, count] : counts.pairs()) {
      pair.bind(1, graph);
      pair.bind(2, static_cast<int64_t>(CoChangeCounts::pairFirst(key)));
      pair.bind(3, static_cast<int64_t>(CoChangeCounts::pairSecond(key)));
      pair.bind(4, count);
      pair.exec();
      pair.reset();
    }
    insertWindow(graph, std::vector<WindowCommit>(counts.window.begin(), counts.window.end()));
    tx.commit();
  });
  synced_ = s.isOk();
  return s;
}

Status CoChangeCache::saveDelta(const std::string& settings, const std::string& fromHead,
                                const CoChangeCounts& counts, const std::vector<WindowCommit>& added,
                                const std::vector<int64_t>& removedSeqs) {
  if (db() == nullptr) return Status::ok();
  // A delta only makes sense on top of the rows it was computed from.
  if (!synced_) return saveFull(settings, counts);
  bool stale = false;
  Status s = guarded("save", [&] {
    SQLite::Transaction tx(*db_, SQLite::TransactionBehavior::IMMEDIATE);
    {
      // Another GitRepoSignals of the same worktree (another daemon, another root) may have written since.
      SQLite::Statement q(*db_, "SELECT head, settings FROM cochange_graphs WHERE worktree = ?");
      q.bind(1, worktree_);
      stale = !q.executeStep() || q.getColumn(0).getString() != fromHead || q.getColumn(1).getString() != settings;
    }
    if (stale) return;
    const int64_t graph = graphId(settings, counts.head);
    SQLite::Statement putFile(*db_, "INSERT OR REPLACE INTO cochange_files (graph_id, id, path, changes) "
                                    "VALUES (?, ?, ?, ?)");
    SQLite::Statement delFile(*db_, "DELETE FROM cochange_files WHERE graph_id = ? AND id = ?");
    for (uint32_t id : counts.dirtyFiles()) {
      if (counts.changes(id) > 0) {
        putFile.bind(1, graph);
        putFile.bind(2, static_cast<int64_t>(id));
        putFile.bind(3, counts.path(id));
        putFile.bind(4, counts.changes(id));
        putFile.exec();
        putFile.reset();
      } else {
        delFile.bind(1, graph);
        delFile.bind(2, static_cast<int64_t>(id));
        delFile.exec();
        delFile.reset();
      }
    }
    SQLite::Statement putPair(*db_, "INSERT OR REPLACE INTO cochange_pairs (graph_id, a, b, count) "
                                    "VALUES (?, ?, ?, ?)");
    SQLite::Statement delPair(*db_, "DELETE FROM cochange_pairs WHERE graph_id = ? AND a = ? AND b = ?");
    for (uint64_t key : counts.dirtyPairs()) {
      auto it = counts.pairs().find(key);
      SQLite::Statement& st = it != counts.pairs().end() ? putPair : delPair;
      st.bind(1, graph);
      st.bind(2, static_cast<int64_t>(CoChangeCounts::pairFirst(key)));
      st.bind(3, static_cast<int64_t>(CoChangeCounts::pairSecond(key)));
      if (it != counts.pairs().end()) st.bind(4, it->second);
      st.exec();
      st.reset();
    }
    SQLite::Statement delCommit(*db_, "DELETE FROM cochange_commits WHERE graph_id = ? AND seq = ?");
    for (int64_t seq : removedSeqs) {
      delCommit.bind(1, graph);
      delCommit.bind(2, seq);
      delCommit.exec();
      delCommit.reset();
    }
    insertWindow(graph, added);
    tx.commit();
  });
  if (s.isOk() && stale) return saveFull(settings, counts);
  synced_ = s.isOk();
  return s;
}

}  // namespace memq
