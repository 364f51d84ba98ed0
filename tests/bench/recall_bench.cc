// In-process save and recall benchmark on the reference's load workload (--load DIR): writes the first N
// memories one at a time into a fresh store, then runs the 200 measured queries through recall and prints
// p50/p95/p99, with per-phase timings and the time to reopen the filled store (loading its in-memory indexes). A
// recall reads the store in two read passes (its lanes, then its hits' rows), as under memqd's scope lock. Usage:
//   memq_bench_recall [--n 1000,10000] [--load DIR] [--ranker default|reference] [--no-semantic]
//                     [--repeat R] [--db-dir DIR] [--checkpoint-every-ms MS] [--dump FILE] [--saves-only]
//                     [--save-batch B] [--no-background] [--pause-us US [--pause-spin]]
// The first line names the vector scan's kernel (MEMQ_SCAN_KERNEL=scalar|avx2|avx512 forces one; see vector_index.h).
// --repeat R runs the measured queries R times (latencies pooled). --db-dir keeps each size's database in DIR/N and
// reuses it when it already holds N memories (recall-only iterations). The save loop calls
// MemoryStore::checkpoint() every --checkpoint-every-ms of wall time (default 2000, 0 = never), as the daemon's
// housekeeping timer does; that time counts against save throughput. --dump writes every measured query's candidates
// (pk, lane signals and text relevance) and hits of the first pass, to check that a change leaves recall results as they were.
// --saves-only stops after the save loop (no recall queries), for profiling the write path. --save-batch B is the
// store's StoreOptions::saveBatch (default 256, as memqd; 1 = each save commits before it returns); the commit of the
// last batch counts against the saves. --no-background turns off StoreOptions::applySavesInBackground (on, as in
// memqd): every save is then written to SQLite before it returns. --pause-us US sleeps US microseconds before each
// recall (not timed), as memqd sits idle between one client's requests: its caches cool and the helper thread's core
// has to be woken. With --pause-spin the pause is a busy wait instead, as memqd's I/O thread polls between requests
// (memqd --hot-poll-us): only the helper's core idles.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "daemon/embed/hashbag.h"
#include "daemon/embed/vector_index.h"
#include "daemon/recall/recall_engine.h"
#include "daemon/server/process_memory.h"
#include "daemon/store/memory_store.h"
#include "tests/bench/bench_util.h"

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

namespace {

double ms(Clock::duration d) { return std::chrono::duration<double, std::milli>(d).count(); }

using memq::bench::percentile;
using memq::bench::readJsonl;

}  // namespace

double cpuSeconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}

// This thread's CPU time: on a shared, loaded machine wall time per query swings 3x; CPU time much less.
double threadCpuMs() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) * 1e3 + static_cast<double>(ts.tv_nsec) / 1e6;
}

double fileMiB(const fs::path& p) {
  std::error_code ec;
  auto size = fs::file_size(p, ec);
  return ec ? 0.0 : static_cast<double>(size) / (1 << 20);
}

struct Row {
  size_t n = 0;
  bool loaded = false;  // saves ran (not a reused database)
  double savePerSec = 0, saveCpuPerSec = 0, saveP50 = 0, saveP95 = 0, saveP99 = 0;
  double tailPerSec = 0, tailCpuPerSec = 0;  // over the last tenth of the saves: the rate with the store near N
  double checkpointMs = 0;
  int checkpoints = 0;
  double p50 = 0, p95 = 0, p99 = 0, mean = 0;
  double cpuP50 = 0, cpuP95 = 0;
  double prepare = 0, rank = 0;
  memq::RecallTimings phases;
  size_t queries = 0;
  double dbMiB = 0, walMiB = 0;
  double reopenMs = 0;  // opening the filled store again: vectors and the text/file mirror loaded from disk
};

int main(int argc, char** argv) {
  // memqd's allocator settings, so that the in-process figures are the same code under the same heap.
  memq::reexecWithHugePageHeap(argv);
  memq::tuneAllocator();
  std::vector<size_t> sizes = {1000, 10000};
  std::string loadDir;
  std::string dbDir;
  memq::Ranker ranker = memq::Ranker::kDefault;
  bool semantic = true;
  int repeat = 1;
  int checkpointEveryMs = 2000;
  std::string dumpPath;
  bool savesOnly = false;
  int saveBatch = 256;
  bool background = true;
  int pauseUs = 0;
  bool pauseSpin = false;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--n" && i + 1 < argc) {
      sizes.clear();
      std::stringstream ss(argv[++i]);
      std::string item;
      while (std::getline(ss, item, ',')) sizes.push_back(std::stoul(item));
    } else if (a == "--load" && i + 1 < argc) {
      loadDir = argv[++i];
    } else if (a == "--ranker" && i + 1 < argc) {
      memq::parseRanker(argv[++i], ranker);
    } else if (a == "--no-semantic") {
      semantic = false;
    } else if (a == "--repeat" && i + 1 < argc) {
      repeat = std::max(1, std::stoi(argv[++i]));
    } else if (a == "--db-dir" && i + 1 < argc) {
      dbDir = argv[++i];
    } else if (a == "--dump" && i + 1 < argc) {
      dumpPath = argv[++i];
    } else if (a == "--no-background") {
      background = false;
    } else if (a == "--save-batch" && i + 1 < argc) {
      saveBatch = std::max(1, std::stoi(argv[++i]));
    } else if (a == "--saves-only") {
      savesOnly = true;
    } else if (a == "--pause-spin") {
      pauseSpin = true;
    } else if (a == "--pause-us" && i + 1 < argc) {
      pauseUs = std::max(0, std::stoi(argv[++i]));
    } else if (a == "--checkpoint-every-ms" && i + 1 < argc) {
      checkpointEveryMs = std::stoi(argv[++i]);
    }
  }
  if (loadDir.empty()) {
    const char* src = std::getenv("MEMQ_SOURCE_DIR");
    loadDir = (fs::path(src ? src : ".") / ".." / "shared" / "bench" / "load").string();
  }
  if (!fs::exists(fs::path(loadDir) / "memories.jsonl.xz")) {
    std::cerr << "load workload not found in " << loadDir << " (pass --load DIR)\n";
    return 2;
  }
  size_t maxN = *std::max_element(sizes.begin(), sizes.end());
  auto memories = readJsonl("xz -dc '" + loadDir + "/memories.jsonl.xz'", maxN);
  auto queries = readJsonl("cat '" + loadDir + "/queries.jsonl'", 1000);
  memq::HashbagEmbedder embedder;
  std::printf(
      "ranker=%s semantic=%s repeat=%d checkpoint-every-ms=%d save-batch=%d background=%s scan-kernel=%s pause-us=%d%s\n",
      std::string(memq::rankerName(ranker)).c_str(), semantic ? "on" : "off", repeat, checkpointEveryMs, saveBatch,
      background ? "on" : "off", memq::VectorIndex::kernelName(), pauseUs,
      pauseSpin ? " (spin)" : "");
  std::vector<Row> rows;
  std::ofstream dump;
  if (!dumpPath.empty()) dump.open(dumpPath);
  for (size_t n : sizes) {
    Row row;
    row.n = n;
    const bool keep = !dbDir.empty();
    fs::path dir = keep ? fs::path(dbDir) / std::to_string(n)
                        : fs::temp_directory_path() / ("memq-bench-" + std::to_string(::getpid()) + "-" +
                                                       std::to_string(n));
    if (!keep) fs::remove_all(dir);
    memq::StoreOptions o;
    o.path = (dir / "memory.db").string();
    o.projectRoot = dir.string();
    o.embedder = &embedder;
    o.saveBatch = saveBatch;
    o.applySavesInBackground = background;
    auto opened = memq::MemoryStore::open(o);
    if (!opened) {
      std::cerr << "cannot open " << o.path << ": " << opened.status().message() << "\n";
      return 1;
    }
    auto store = std::move(*opened);
    memq::Actor actor{"agent", "bench"};
    const bool reuse = store->activeIndex().size() > 0;  // a kept database from an earlier run
    if (!reuse) {
      std::vector<double> saveLat;
      saveLat.reserve(n);
      auto start = Clock::now();
      double cpu0 = cpuSeconds();
      auto lastCheckpoint = start;
      size_t written = 0;
      const size_t total = std::min(n, memories.size());
      const size_t tailFrom = total - total / 10;
      auto tailStart = start;
      double tailCpu0 = cpu0;
      size_t tailWritten = 0;
      for (size_t i = 0; i < total; ++i) {
        if (i == tailFrom) {
          // The last tenth starts with nothing pending, so that its figure counts the work of exactly its own saves
          // (queued for the background applier, written and committed within it).
          if (memq::Status st = store->commitPendingSaves(); !st) {
            std::cerr << "commit failed: " << st.message() << "\n";
            return 1;
          }
          tailStart = Clock::now();
          tailCpu0 = cpuSeconds();
          tailWritten = written;
        }
        const auto& m = memories[i];
        auto norm = memq::normalizeSave(memq::bench::saveInput(m), dir.string());
        if (!norm) continue;
        std::vector<memq::FileRef> refs;
        for (const auto& f : norm->files) refs.push_back({f, std::nullopt, std::nullopt});
        auto t0 = Clock::now();
        if (store->save(*norm, refs, actor)) ++written;
        auto t1 = Clock::now();
        saveLat.push_back(ms(t1 - t0));
        if (checkpointEveryMs > 0 && t1 - lastCheckpoint >= std::chrono::milliseconds(checkpointEveryMs)) {
          store->checkpoint();
          auto t2 = Clock::now();
          row.checkpointMs += ms(t2 - t1);
          ++row.checkpoints;
          lastCheckpoint = t2;
        }
      }
      if (memq::Status st = store->commitPendingSaves(); !st) {
        std::cerr << "commit of the last saves failed: " << st.message() << "\n";
        return 1;
      }
      double saveSecs = ms(Clock::now() - start) / 1000;
      double cpuSecs = cpuSeconds() - cpu0;
      row.loaded = true;
      row.savePerSec = written / saveSecs;
      row.saveCpuPerSec = cpuSecs > 0 ? written / cpuSecs : 0;
      const double tailSecs = ms(Clock::now() - tailStart) / 1000;
      const double tailCpuSecs = cpuSeconds() - tailCpu0;
      row.tailPerSec = tailSecs > 0 ? (written - tailWritten) / tailSecs : 0;
      row.tailCpuPerSec = tailCpuSecs > 0 ? (written - tailWritten) / tailCpuSecs : 0;
      row.saveP50 = percentile(saveLat, 0.5);
      row.saveP95 = percentile(saveLat, 0.95);
      row.saveP99 = percentile(saveLat, 0.99);
      row.walMiB = fileMiB(o.path + "-wal");
    }
    {
      // Reopen, as a daemon start does, so the figure includes loading every row into the in-memory indexes.
      store.reset();
      auto t0 = Clock::now();
      auto again = memq::MemoryStore::open(o);
      row.reopenMs = ms(Clock::now() - t0);
      if (!again) {
        std::cerr << "cannot reopen " << o.path << ": " << again.status().message() << "\n";
        return 1;
      }
      store = std::move(*again);
    }
    std::vector<double> lat;
    std::vector<double> cpuLat;
    for (int pass = 0; pass < (savesOnly ? 0 : repeat); ++pass) {
      for (const auto& q : queries) {
        const bool warmup = q.value("warmup", false);
        if (warmup && pass > 0) continue;
        memq::RecallRequest r;
        r.query = q.value("query", "");
        for (const auto& f : q["editedFiles"]) r.files.push_back(f.get<std::string>());
        if (r.files.size() > 64) r.files.resize(64);
        r.limit = 3;
        r.threshold = 0.01;
        r.ranker = ranker;
        r.useSemantic = semantic;
        memq::RecallTimings phases;
        if (pauseUs > 0 && pauseSpin) {
          const auto until = Clock::now() + std::chrono::microseconds(pauseUs);
          while (Clock::now() < until) {
          }
        } else if (pauseUs > 0) {
          std::this_thread::sleep_for(std::chrono::microseconds(pauseUs));
        }
        double cpu0 = threadCpuMs();
        auto t0 = Clock::now();
        auto prepared = memq::prepareQuery(r, embedder, nullptr);
        auto t1 = Clock::now();
        // Each of the two visits to the store is one read pass, as memqd's scope lock makes it (CommittedLock).
        store->beginReadPass();
        auto c = memq::gatherCandidates(*store, r, prepared, nullptr, &phases);
        store->endReadPass();
        if (!c) {
          std::cerr << "recall failed: " << c.status().message() << "\n";
          return 1;
        }
        auto t2 = Clock::now();
        std::vector<memq::Candidate> candidates;
        if (dump.is_open() && pass == 0 && !warmup) candidates = *c;
        auto hits = memq::rankAndSelect(std::move(*c), r);
        auto t3 = Clock::now();
        // Only the hits' rows are read, as the service does after ranking.
        store->beginReadPass();
        const memq::Status loaded = memq::loadHitRows(*store, hits);
        store->endReadPass();
        if (!loaded) {
          std::cerr << "loading hits failed: " << loaded.message() << "\n";
          return 1;
        }
        auto t4 = Clock::now();
        phases.loadMs += ms(t4 - t3);
        double cpu1 = threadCpuMs();
        if (warmup) continue;
        cpuLat.push_back(cpu1 - cpu0);
        if (dump.is_open() && pass == 0) {
          std::sort(candidates.begin(), candidates.end(),
                    [](const memq::Candidate& a, const memq::Candidate& b) { return a.pk < b.pk; });
          char buf[384];
          dump << "N " << n << " query " << row.queries << "\n";
          for (const auto& cand : candidates) {
            const auto& sg = cand.signals;
            std::snprintf(buf, sizeof buf, "  cand %lld u=%d/%.12g t=%d/%.12g f=%d/%d sem=%d text=%.12g subj=%.12g co=%d/%.12g\n",
                          static_cast<long long>(cand.pk), sg.ftsUnicode.value_or(0), sg.bm25Unicode.value_or(0),
                          sg.ftsTrigram.value_or(0), sg.bm25Trigram.value_or(0), sg.fileAffinity ? 1 : 0,
                          sg.matchedFiles, sg.semanticRank.value_or(0), sg.textBm25.value_or(0),
                          sg.subjectBm25.value_or(0), sg.cochangeAffinity ? 1 : 0, sg.cochangeStrength);
            dump << buf;
          }
          for (const auto& h : hits) {
            std::snprintf(buf, sizeof buf, "  hit %lld %.12g\n", static_cast<long long>(h.memory.pk), h.score);
            dump << buf;
          }
        }
        lat.push_back(ms(t4 - t0));
        row.prepare += ms(t1 - t0);
        row.rank += ms(t3 - t2);
        row.phases.unicodeMs += phases.unicodeMs;
        row.phases.rescoreMs += phases.rescoreMs;
        row.phases.trigramMs += phases.trigramMs;
        row.phases.filesMs += phases.filesMs;
        row.phases.semanticMs += phases.semanticMs;
        row.phases.loadMs += phases.loadMs;
        row.phases.trigramRuns += phases.trigramRuns;
        ++row.queries;
      }
    }
    row.p50 = percentile(lat, 0.5);
    row.p95 = percentile(lat, 0.95);
    row.p99 = percentile(lat, 0.99);
    row.cpuP50 = percentile(cpuLat, 0.5);
    row.cpuP95 = percentile(cpuLat, 0.95);
    for (double v : lat) row.mean += v;
    if (!lat.empty()) row.mean /= static_cast<double>(lat.size());
    store.reset();
    row.dbMiB = fileMiB(o.path);
    if (!keep) fs::remove_all(dir);
    rows.push_back(row);
  }

  std::printf("\nsaves (one at a time, embedding + similar edges + file refs; checkpoints included; 'last 10%%': the\n"
              "last tenth of the saves, into a store holding 90-100%% of N)\n");
  std::printf("%8s %10s %12s %10s %10s %10s %10s %10s %8s %10s %9s %9s\n", "N", "save/s", "save/cpu-s", "last10% /s",
              "/cpu-s", "p50 ms", "p95 ms", "p99 ms", "ckpts", "ckpt ms", "wal MiB", "db MiB");
  for (const auto& r : rows) {
    if (!r.loaded) {
      std::printf("%8zu %10s %12s %10s %10s %10s %10s %10s %8s %10s %9s %9.1f\n", r.n, "reused", "-", "-", "-", "-",
                  "-", "-", "-", "-", "-", r.dbMiB);
      continue;
    }
    std::printf("%8zu %10.0f %12.0f %10.0f %10.0f %10.3f %10.3f %10.3f %8d %10.1f %9.1f %9.1f\n", r.n, r.savePerSec,
                r.saveCpuPerSec, r.tailPerSec, r.tailCpuPerSec, r.saveP50, r.saveP95, r.saveP99, r.checkpoints,
                r.checkpointMs, r.walMiB, r.dbMiB);
  }
  std::printf("\nrecall (limit 3, threshold 0.01), ms\n");
  std::printf("%8s %8s %9s %9s %9s %9s %9s %9s %10s\n", "N", "queries", "p50", "p95", "p99", "mean", "cpu p50",
              "cpu p95", "open ms");
  for (const auto& r : rows) {
    std::printf("%8zu %8zu %9.3f %9.3f %9.3f %9.3f %9.3f %9.3f %10.1f\n", r.n, r.queries, r.p50, r.p95, r.p99, r.mean,
                r.cpuP50, r.cpuP95, r.reopenMs);
  }
  std::printf("\nrecall phases, mean ms per query (trigram runs = queries that queried the trigram lane)\n");
  std::printf("%8s %9s %9s %9s %9s %9s %9s %9s %9s %9s %12s\n", "N", "prepare", "unicode", "rescore", "trigram",
              "files", "semantic", "load", "rank", "total", "trigram runs");
  for (const auto& r : rows) {
    double q = r.queries ? static_cast<double>(r.queries) : 1;
    const auto& p = r.phases;
    double total =
        (r.prepare + p.unicodeMs + p.rescoreMs + p.trigramMs + p.filesMs + p.semanticMs + p.loadMs + r.rank) / q;
    std::printf("%8zu %9.3f %9.3f %9.3f %9.3f %9.3f %9.3f %9.3f %9.3f %9.3f %12d\n", r.n, r.prepare / q,
                p.unicodeMs / q, p.rescoreMs / q, p.trigramMs / q, p.filesMs / q, p.semanticMs / q, p.loadMs / q,
                r.rank / q, total, p.trigramRuns);
  }
  return 0;
}
