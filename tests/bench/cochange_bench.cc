// Benchmark (not a test): the co-change layer on a synthetic repository of 20,000+ commits built with
// `git fast-import`. Times a cold co-change build (window 2,000) against `git log --name-only --no-merges -n 2000`,
// a restart that loads the database cache, an incremental refresh after one commit, neighbour lookups, and the
// blast-radius graph; then, on the checked-out work tree, renames for a path new to HEAD (a file moved on disk): the
// first lookup, lookups while the work tree is unchanged (its deleted files kept, the directories watched, and the
// same with the directories stat'ed instead), and lookups just after a change on disk (the work tree read again).
// First, without git: the dependency graph's import resolution on a synthetic monorepo (benchDependencyResolution).
// Figures feed docs/performance.md.
// Usage: memq_bench_cochange [commits=20000] [--keep]   (--keep leaves the repository in /tmp for inspection)
#include <SQLiteCpp/Database.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "daemon/git/dependency_graph.h"
#include "daemon/git/git_repo_signals.h"
#include "daemon/git/rename_map.h"
#include "daemon/git/repo_location.h"
#include "embedded_migrations.h"

namespace {

using Clock = std::chrono::steady_clock;
namespace fs = std::filesystem;

double msSince(Clock::time_point t) { return std::chrono::duration<double, std::milli>(Clock::now() - t).count(); }

const char* kEnv =
    "env GIT_CONFIG_NOSYSTEM=1 GIT_AUTHOR_NAME=bench GIT_AUTHOR_EMAIL=b@example.com GIT_COMMITTER_NAME=bench "
    "GIT_COMMITTER_EMAIL=b@example.com ";

int sh(const std::string& cmd) { return std::system(cmd.c_str()); }

// A file universe with locality: files live in modules, and a commit mostly touches files of one module, so the
// co-change graph has real structure (and real work) rather than uniform noise.
struct Universe {
  std::vector<std::vector<std::string>> modules;
  std::vector<std::string> headers;
};

Universe makeUniverse(std::mt19937& rng) {
  Universe u;
  for (int m = 0; m < 150; ++m) {
    std::vector<std::string> files;
    const int n = 8 + static_cast<int>(rng() % 25);
    for (int f = 0; f < n; ++f) {
      const bool header = f % 3 == 0;
      files.push_back("src/mod" + std::to_string(m) + "/file" + std::to_string(f) + (header ? ".h" : ".c"));
      if (header) u.headers.push_back(files.back());
    }
    u.modules.push_back(std::move(files));
  }
  return u;
}

std::string content(const std::string& path, int commit, const Universe& u, std::mt19937& rng) {
  std::string c;
  // A few includes per file, so the blast-radius graph has edges; the first header of module 0 is a hub.
  c += "#include \"" + u.headers[0] + "\"\n";
  for (int i = 0; i < 3; ++i) c += "#include \"" + u.headers[rng() % u.headers.size()] + "\"\n";
  c += "// " + path + " revision " + std::to_string(commit) + "\n";
  return c;
}

void appendData(std::string& out, const std::string& data) {
  out += "data " + std::to_string(data.size()) + "\n" + data + "\n";
}

// One fast-import commit on refs/heads/main touching `paths`.
void appendCommit(std::string& out, int n, long time, const std::vector<std::string>& paths, const Universe& u,
                  std::mt19937& rng) {
  out += "commit refs/heads/main\n";
  out += "committer bench <b@example.com> " + std::to_string(time) + " +0000\n";
  appendData(out, "commit " + std::to_string(n));
  for (const std::string& p : paths) {
    out += "M 100644 inline " + p + "\n";
    appendData(out, content(p, n, u, rng));
  }
}

std::vector<std::string> pickFiles(const Universe& u, std::mt19937& rng, int commit) {
  std::vector<std::string> paths;
  if (commit % 500 == 250) {
    // A sweeping change (reformat): over the 30-file cap, must contribute nothing.
    for (int i = 0; i < 45; ++i) paths.push_back(u.modules[rng() % u.modules.size()][0]);
  } else {
    const auto& mod = u.modules[rng() % u.modules.size()];
    const int n = 1 + static_cast<int>(rng() % 6);
    for (int i = 0; i < n; ++i) paths.push_back(mod[rng() % mod.size()]);
    if (rng() % 10 == 0) {
      const auto& other = u.modules[rng() % u.modules.size()];
      paths.push_back(other[rng() % other.size()]);
    }
  }
  if (rng() % 3 == 0) paths.push_back("package-lock.json");
  std::sort(paths.begin(), paths.end());
  paths.erase(std::unique(paths.begin(), paths.end()), paths.end());
  return paths;
}

void fastImport(const std::string& dir, const std::string& stream) {
  // A large malloc top pad: fast-import grows its heap in small steps, and on hosts where brk is slow (some
  // sandboxes) that alone costs seconds per thousand commits.
  const std::string cmd = std::string(kEnv) + "MALLOC_TOP_PAD_=268435456 git -C '" + dir + "' fast-import --quiet";
  FILE* p = popen(cmd.c_str(), "w");
  if (p == nullptr || fwrite(stream.data(), 1, stream.size(), p) != stream.size() || pclose(p) != 0) {
    std::fprintf(stderr, "git fast-import failed\n");
    std::exit(1);
  }
}

struct Lat {
  double p50, p99, mean;
};

Lat latencies(std::vector<double> us) {
  std::sort(us.begin(), us.end());
  double sum = 0;
  for (double v : us) sum += v;
  return {us[us.size() / 2], us[us.size() * 99 / 100], sum / us.size()};
}

}  // namespace

// The import resolution of DependencyGraph::build, which a recall's first blast-radius lookup after a commit waits
// for: a monorepo of 4,000 directories, half Go packages (5 files, each importing 8 packages by their full external
// path, `github.com/acme/mono/...`, which no go.mod claims, so each is resolved by the directories it ends with) and
// half Python packages (an `__init__.py` and 4 modules, each importing 8 modules absolutely, `from svc.pkg import m`,
// resolved by suffix among the repository's files).
void benchDependencyResolution() {
  constexpr int kDirs = 4000, kImports = 8;
  std::mt19937 rng(7);
  std::vector<std::string> tracked;
  std::vector<memq::SourceImports> sources;
  auto dirName = [](int d) { return "svc" + std::to_string(d % 40) + "/pkg" + std::to_string(d); };
  for (int d = 0; d < kDirs; ++d) {
    const bool go = d % 2 == 0;
    if (!go) tracked.push_back(dirName(d) + "/__init__.py");
    for (int f = 0; f < (go ? 5 : 4); ++f) {
      memq::SourceImports s;
      s.path = dirName(d) + "/f" + std::to_string(f) + (go ? ".go" : ".py");
      for (int i = 0; i < kImports; ++i) {
        const int target = static_cast<int>(rng() % kDirs) / 2 * 2 + (go ? 0 : 1);
        memq::ImportRef ref;
        if (go) {
          ref.kind = memq::ImportKind::kGo;
          ref.spec = "github.com/acme/mono/" + dirName(target);
        } else {
          ref.kind = memq::ImportKind::kPython;
          ref.spec = "svc" + std::to_string(target % 40) + ".pkg" + std::to_string(target);
          ref.names = {"f" + std::to_string(rng() % 4)};
        }
        s.imports.push_back(std::move(ref));
      }
      tracked.push_back(s.path);
      sources.push_back(std::move(s));
    }
  }
  double best = 1e300;
  size_t edges = 0;
  for (int round = 0; round < 3; ++round) {
    const auto t0 = Clock::now();
    auto graph = memq::DependencyGraph::build(tracked, sources, "");
    best = std::min(best, msSince(t0));
    edges = graph->edgeCount();
  }
  std::printf("dependency graph: %zu files, %zu imports resolved: %8.1f ms (best of 3; %zu edges)\n", tracked.size(),
              sources.size() * kImports, best, edges);
}

int main(int argc, char** argv) {
  int commits = 20000;
  bool keep = false;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--keep") {
      keep = true;
    } else {
      commits = std::max(1, std::atoi(argv[i]));
    }
  }
  spdlog::set_level(spdlog::level::warn);
  benchDependencyResolution();

  std::string tmpl = (fs::temp_directory_path() / "memq-cochange-bench-XXXXXX").string();
  if (mkdtemp(tmpl.data()) == nullptr) return 1;
  const std::string dir = fs::canonical(tmpl).string();
  sh(std::string(kEnv) + "git -C '" + dir + "' init -q -b main");

  std::mt19937 rng(42);
  const Universe u = makeUniverse(rng);
  auto t0 = Clock::now();
  std::string stream;
  const long baseTime = 1600000000;
  for (int n = 1; n <= commits; ++n) {
    appendCommit(stream, n, baseTime + n * 60L, pickFiles(u, rng, n), u, rng);
  }
  fastImport(dir, stream);
  stream.clear();
  std::printf("repository: %d commits via git fast-import in %.0f ms (%s)\n", commits, msSince(t0), dir.c_str());

  auto loc = memq::locateProject(dir);
  if (!loc.isOk()) {
    std::fprintf(stderr, "%s\n", loc.status().toString().c_str());
    return 1;
  }
  fs::create_directories(fs::path(loc->dbPath).parent_path());
  {
    SQLite::Database db(loc->dbPath, SQLite::OPEN_READWRITE | SQLite::OPEN_CREATE);
    db.exec("PRAGMA journal_mode = WAL");
    for (const auto& m : memq::embeddedMigrations()) db.exec(std::string(m.sql));
  }

  // git log baseline: best of 3, output discarded, page cache warm after the first.
  double gitLog = 1e18;
  for (int i = 0; i < 3; ++i) {
    t0 = Clock::now();
    sh("git -C '" + dir + "' log --name-only --no-merges -n 2000 >/dev/null");
    gitLog = std::min(gitLog, msSince(t0));
  }
  std::printf("git log --name-only --no-merges -n 2000 : %8.1f ms (best of 3)\n", gitLog);

  double cold = 1e18;
  memq::RefreshStats coldStats;
  for (int i = 0; i < 3; ++i) {
    {
      SQLite::Database db(loc->dbPath, SQLite::OPEN_READWRITE);
      db.exec("DELETE FROM cochange_graphs; DELETE FROM cochange_commits; DELETE FROM cochange_files; "
              "DELETE FROM cochange_pairs;");
    }
    memq::GitRepoSignals signals(loc.value());
    t0 = Clock::now();
    coldStats = signals.refreshDetailed();
    cold = std::min(cold, msSince(t0));
  }
  std::printf("cold co-change build (window 2000)       : %8.1f ms (best of 3; walked %d, pairs %d, rebuilt %d)\n",
              cold, coldStats.walkedCommits, coldStats.pairs, coldStats.rebuilt ? 1 : 0);

  memq::GitRepoSignals signals(loc.value());
  t0 = Clock::now();
  memq::RefreshStats warm = signals.refreshDetailed();
  std::printf("restart: load from the database cache    : %8.1f ms (walked %d, window %d)\n", msSince(t0),
              warm.walkedCommits, warm.totalCommits);

  // One new commit on top.
  std::string one;
  one += "commit refs/heads/main\ncommitter bench <b@example.com> " + std::to_string(baseTime + (commits + 1) * 60L) +
         " +0000\n";
  appendData(one, "one more");
  one += "from refs/heads/main^0\n";
  for (const std::string& p : {u.modules[0][1], u.modules[0][2]}) {
    one += "M 100644 inline " + p + "\n";
    appendData(one, content(p, commits + 1, u, rng));
  }
  fastImport(dir, one);
  t0 = Clock::now();
  memq::RefreshStats inc = signals.refreshDetailed();
  std::printf("incremental refresh after one commit     : %8.1f ms (walked %d, evicted %d, rebuilt %d)\n",
              msSince(t0), inc.walkedCommits, inc.evictedCommits, inc.rebuilt ? 1 : 0);

  // Neighbour lookups over every file of the universe, in random order.
  std::vector<std::string> all;
  for (const auto& m : u.modules) all.insert(all.end(), m.begin(), m.end());
  std::shuffle(all.begin(), all.end(), rng);
  std::vector<double> us;
  size_t found = 0;
  for (int round = 0; round < 5; ++round) {
    for (const std::string& p : all) {
      t0 = Clock::now();
      auto n = signals.cochangeNeighbors(p, 10);
      us.push_back(msSince(t0) * 1000);
      found += n.empty() ? 0 : 1;
    }
  }
  Lat l = latencies(us);
  std::printf("cochangeNeighbors(k=10), %zu lookups     : p50 %.2f us, p99 %.2f us, mean %.2f us (%zu with partners)\n",
              us.size(), l.p50, l.p99, l.mean, found / 5);

  t0 = Clock::now();
  const int hub = signals.blastRadius(u.headers[0]);
  std::printf("blast radius: first lookup (builds graph): %8.1f ms (hub radius %d, damped %.2f)\n", msSince(t0), hub,
              signals.blastDamped(hub));
  us.clear();
  for (const std::string& p : all) {
    t0 = Clock::now();
    signals.blastRadius(p);
    us.push_back(msSince(t0) * 1000);
  }
  l = latencies(us);
  std::printf("blastRadius lookups                      : p50 %.2f us, p99 %.2f us\n", l.p50, l.p99);
  us.clear();
  for (size_t i = 0; i < 1000; ++i) {
    t0 = Clock::now();
    signals.blobIdAtHead(all[i % all.size()]);
    us.push_back(msSince(t0) * 1000);
  }
  l = latencies(us);
  std::printf("blobIdAtHead lookups                     : p50 %.2f us, p99 %.2f us\n", l.p50, l.p99);

  // Renames not committed: the work tree checked out, one file moved on disk, and a lookup of its new path, as a
  // recall naming that path makes. The work tree is left alone for longer than RenameOptions::settle first, so
  // its stamps are trusted from the first read on.
  if (sh(std::string(kEnv) + "git -C '" + dir + "' checkout -q -f main") != 0) return 1;
  size_t trackedFiles = 0, directories = 1;  // the top's own
  std::string moved;  // the first file of the tree, in a directory of its own module
  for (auto it = fs::recursive_directory_iterator(dir); it != fs::recursive_directory_iterator(); ++it) {
    if (it->path().filename() == ".git") {
      it.disable_recursion_pending();
      continue;
    }
    if (it->is_directory()) ++directories;
    if (!it->is_regular_file()) continue;
    ++trackedFiles;
    const std::string rel = fs::relative(it->path(), dir).string();
    if (moved.empty() && rel.find('/') != std::string::npos) moved = rel;
  }
  if (moved.empty()) {
    std::fprintf(stderr, "no file in a directory to move\n");
    return 1;
  }
  const std::string movedTo = moved.substr(0, moved.rfind('/')) + "/moved_here.c";
  fs::rename(fs::path(dir) / moved, fs::path(dir) / movedTo);
  std::this_thread::sleep_for(std::chrono::nanoseconds{memq::FileStamp::kSettleNs} + std::chrono::milliseconds(100));
  auto renames = memq::RenameMap::open(loc.value());
  if (!renames) {
    std::fprintf(stderr, "the rename map did not open\n");
    return 1;
  }
  t0 = Clock::now();
  auto firstRenames = renames->renamedFrom({movedTo});
  const double firstMs = msSince(t0);
  const bool foundMove = !firstRenames.empty() && !firstRenames[0].earlier.empty() &&
                         firstRenames[0].earlier[0] == moved;
  std::printf("renamedFrom, a file moved on disk: first : %8.1f ms (the history's renames and the work tree; %s)\n",
              firstMs, foundMove ? "found" : "NOT FOUND");
  us.clear();
  for (int i = 0; i < 1000; ++i) {  // the usual recall: every file it names is one HEAD has
    t0 = Clock::now();
    renames->renamedFrom({all[i % all.size()]});
    us.push_back(msSince(t0) * 1000);
  }
  l = latencies(us);
  std::printf("renamedFrom, a path HEAD has, 1000 lookups: p50 %.1f us, p99 %.1f us\n", l.p50, l.p99);
  us.clear();
  const size_t readsBefore = renames->workTreeReads();
  const size_t searchesBefore = renames->renameSearches();
  for (int i = 0; i < 200; ++i) {
    t0 = Clock::now();
    renames->renamedFrom({movedTo});
    us.push_back(msSince(t0) * 1000);
  }
  l = latencies(us);
  std::printf("  work tree unchanged, 200 lookups       : p50 %.1f us, p99 %.1f us (work tree read %zu times, renames"
              " searched %zu times; %zu directories watched)\n",
              l.p50, l.p99, renames->workTreeReads() - readsBefore, renames->renameSearches() - searchesBefore,
              directories);
  us.clear();
  {
    memq::RenameOptions stamped;
    stamped.watchDirectories = false;
    auto byStamps = memq::RenameMap::open(loc.value(), stamped);
    byStamps->renamedFrom({movedTo});
    for (int i = 0; i < 200; ++i) {
      t0 = Clock::now();
      byStamps->renamedFrom({movedTo});
      us.push_back(msSince(t0) * 1000);
    }
    l = latencies(us);
    std::printf("  the same, directories stat'ed instead   : p50 %.1f us, p99 %.1f us (work tree read %zu times)\n",
                l.p50, l.p99, byStamps->workTreeReads() - 1);
  }
  us.clear();
  const fs::path scratch = fs::path(dir) / movedTo.substr(0, movedTo.rfind('/')) / "scratch.tmp";
  for (int i = 0; i < 50; ++i) {
    // A file created and removed in one directory: its stamp changes, so the lookup reads the work tree again.
    if (std::FILE* f = std::fopen(scratch.c_str(), "w")) std::fclose(f);
    fs::remove(scratch);
    t0 = Clock::now();
    renames->renamedFrom({movedTo});
    us.push_back(msSince(t0) * 1000);
  }
  l = latencies(us);
  std::printf("  just after a change on disk, 50 lookups: p50 %.1f us, p99 %.1f us (%zu tracked files stat'ed each)\n",
              l.p50, l.p99, trackedFiles);

  if (!keep) fs::remove_all(dir);
  return 0;
}
