// In-process save and recall benchmark on the reference's load workload (../shared/bench/load): writes the first N
// memories one at a time into a fresh store, then runs the 200 measured queries through recall and prints
// p50/p95/p99. Usage: memq_bench_recall [--n 1000,10000] [--load DIR] [--ranker default|reference] [--no-semantic]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "daemon/embed/hashbag.h"
#include "daemon/recall/recall_engine.h"

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

namespace {

double ms(Clock::duration d) { return std::chrono::duration<double, std::milli>(d).count(); }

double percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  size_t i = std::min(v.size() - 1, static_cast<size_t>(p * (v.size() - 1) + 0.5));
  return v[i];
}

std::vector<nlohmann::json> readJsonl(const std::string& command, size_t limit) {
  std::vector<nlohmann::json> out;
  FILE* f = popen(command.c_str(), "r");
  if (!f) return out;
  std::string line;
  char buf[1 << 16];
  while (out.size() < limit && fgets(buf, sizeof buf, f)) {
    line += buf;
    if (!line.empty() && line.back() == '\n') {
      out.push_back(nlohmann::json::parse(line));
      line.clear();
    }
  }
  pclose(f);
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<size_t> sizes = {1000, 10000};
  std::string loadDir;
  memq::Ranker ranker = memq::Ranker::kDefault;
  bool semantic = true;
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
  std::printf("ranker=%s semantic=%s\n", std::string(memq::rankerName(ranker)).c_str(), semantic ? "on" : "off");
  std::printf("%8s %12s %10s %10s %10s %10s\n", "N", "save/s", "p50 ms", "p95 ms", "p99 ms", "db MiB");
  for (size_t n : sizes) {
    fs::path dir = fs::temp_directory_path() / ("memq-bench-" + std::to_string(::getpid()) + "-" + std::to_string(n));
    fs::remove_all(dir);
    memq::StoreOptions o;
    o.path = (dir / "memory.db").string();
    o.projectRoot = dir.string();
    o.embedder = &embedder;
    auto store = std::move(*memq::MemoryStore::open(o));
    memq::Actor actor{"agent", "bench"};
    auto start = Clock::now();
    size_t written = 0;
    for (size_t i = 0; i < n && i < memories.size(); ++i) {
      const auto& m = memories[i];
      memq::SaveInput in;
      in.summary = m.value("summary", "");
      in.details = m.value("details", "");
      if (m["category"].is_string()) in.category = m["category"].get<std::string>();
      in.topics = m.value("topics", std::vector<std::string>{});
      for (const auto& f : m["files"]) in.files.push_back(f["path"].get<std::string>());
      if (in.files.size() > 16) in.files.resize(16);
      auto norm = memq::normalizeSave(in, dir.string());
      if (!norm) continue;
      std::vector<memq::FileRef> refs;
      for (const auto& f : norm->files) refs.push_back({f, std::nullopt});
      if (store->save(*norm, refs, actor)) ++written;
    }
    double saveSecs = ms(Clock::now() - start) / 1000;
    std::vector<double> lat;
    for (const auto& q : queries) {
      memq::RecallRequest r;
      r.query = q.value("query", "");
      for (const auto& f : q["editedFiles"]) r.files.push_back(f.get<std::string>());
      if (r.files.size() > 64) r.files.resize(64);
      r.limit = 3;
      r.threshold = 0.01;
      r.ranker = ranker;
      r.useSemantic = semantic;
      auto t0 = Clock::now();
      auto prepared = memq::prepareQuery(r, embedder, nullptr);
      auto c = memq::gatherCandidates(*store, r, prepared, nullptr);
      auto hits = memq::rankAndSelect(std::move(*c), r);
      double t = ms(Clock::now() - t0);
      if (!q.value("warmup", false)) lat.push_back(t);
    }
    double dbMiB = static_cast<double>(fs::file_size(o.path)) / (1 << 20);
    std::printf("%8zu %12.0f %10.3f %10.3f %10.3f %10.1f\n", n, written / saveSecs, percentile(lat, 0.5),
                percentile(lat, 0.95), percentile(lat, 0.99), dbMiB);
    store.reset();
    fs::remove_all(dir);
  }
  return 0;
}
