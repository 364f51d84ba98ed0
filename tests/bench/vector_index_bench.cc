// Benchmark (not a test): p50/p95 VectorIndex::topK latency over 10k and 100k random unit vectors of 384 floats, one
// thread (topK) and two (beginTopK and at once get(), which splits an index of a chunk of rows or more), and
// hashbag-v2 embed throughput on a ~300-character memory. With --load DIR, also over the load workload's memories
// embedded as recall embeds them and its queries (hashbag vectors: about a fifth of a query's codes are nonzero,
// where a random vector has all 384). Figures feed docs/performance.md.
// Usage: memq_bench_vector_index [queries-per-size] [--kernel scalar|avx2|avx512] [--load DIR]   (kernel default: the
// best the CPU runs)
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "daemon/embed/hashbag.h"
#include "daemon/embed/vector_index.h"
#include "tests/bench/bench_util.h"
#include "tests/common/random_unit_vector.h"

namespace {

using Clock = std::chrono::steady_clock;
using memq::testing::randomUnitVector;

using memq::bench::percentile;

void benchTopK(size_t rows, int queries, bool twoThreads) {
  std::mt19937_64 rng(rows);
  memq::VectorIndex index(memq::kHashbagDim);
  index.reserve(rows);
  for (size_t i = 0; i < rows; ++i) index.upsert(static_cast<int64_t>(i), randomUnitVector(rng, memq::kHashbagDim));
  for (const float minScore : {0.0f, 0.18f}) {
    std::vector<double> micros;
    size_t returned = 0;
    for (int q = 0; q < queries; ++q) {
      const auto query = randomUnitVector(rng, memq::kHashbagDim);
      const auto t0 = Clock::now();
      const auto hits = twoThreads ? index.beginTopK(query, 10, minScore)->get() : index.topK(query, 10, minScore);
      micros.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count());
      returned += hits.size();
    }
    std::printf("topK k=10 minScore=%.2f rows=%zu threads=%d: p50 %.0f us, p95 %.0f us (avg hits %.1f)\n", minScore,
                rows, twoThreads ? 2 : 1, percentile(micros, 0.5),
                percentile(micros, 0.95), double(returned) / queries);
  }
}

// topK over the first `rows` memories of the load workload under `dir`, embedded as a save embeds them, against its
// queries embedded as recall embeds them (each query once per pass, `passes` passes), with recall's k and minScore.
void benchLoad(const std::string& dir, size_t rows, int passes, bool twoThreads) {
  const memq::HashbagEmbedder embedder;
  memq::VectorIndex index(memq::kHashbagDim);
  index.reserve(rows);
  size_t i = 0;
  for (const auto& m : memq::bench::readJsonl("xz -dc '" + dir + "/memories.jsonl.xz'", rows)) {
    std::vector<std::string> topics;
    for (const auto& t : m.value("topics", nlohmann::json::array())) topics.push_back(t.get<std::string>());
    index.upsert(static_cast<int64_t>(i++),
                 embedder.embed(memq::memoryEmbedSource(m.value("summary", ""), m.value("details", ""), topics)));
  }
  std::vector<std::vector<float>> queries;
  for (const auto& q : memq::bench::readJsonl("cat '" + dir + "/queries.jsonl'", 100000)) {
    queries.push_back(embedder.embed(memq::memoryEmbedSource(q.value("query", ""), "", {})));
  }
  if (index.size() < rows || queries.empty()) {
    std::fprintf(stderr, "%s: fewer than %zu memories, or no queries\n", dir.c_str(), rows);
    std::exit(1);
  }
  std::vector<double> micros;
  size_t returned = 0;
  for (int pass = 0; pass < passes; ++pass) {
    for (const auto& query : queries) {
      const auto t0 = Clock::now();
      const auto hits = twoThreads ? index.beginTopK(query, 30, 0.1f)->get() : index.topK(query, 30, 0.1f);
      micros.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count());
      returned += hits.size();
    }
  }
  std::printf("load workload topK k=30 minScore=0.10 rows=%zu threads=%d: p50 %.0f us, p95 %.0f us (avg hits %.1f)\n",
              rows, twoThreads ? 2 : 1, percentile(micros, 0.5), percentile(micros, 0.95),
              double(returned) / static_cast<double>(micros.size()));
}

void benchEmbed() {
  const std::string memory =
      "Recall must never return hidden, superseded or rejected memories; the store filters them in SQL and the "
      "vector index drops them on every state change. Keep the int8 scan and the exact re-score in one place so "
      "the two cannot drift apart when someone tunes the quantisation later.";
  const std::string source = memq::memoryEmbedSource(memory.substr(0, 120), memory, {"recall", "index"});
  const memq::HashbagEmbedder embedder;
  float sink = 0;
  const int iterations = 20000;
  const auto t0 = Clock::now();
  for (int i = 0; i < iterations; ++i) sink += embedder.embed(memory)[static_cast<size_t>(i) % memq::kHashbagDim];
  const double rawMicros = std::chrono::duration<double, std::micro>(Clock::now() - t0).count() / iterations;
  const auto t1 = Clock::now();
  for (int i = 0; i < iterations; ++i) sink += embedder.embed(source)[static_cast<size_t>(i) % memq::kHashbagDim];
  const double sourceMicros = std::chrono::duration<double, std::micro>(Clock::now() - t1).count() / iterations;
  std::printf("hashbag embed: %zu-char text %.1f us (%.0f/s); %zu-char memory source %.1f us (%.0f/s) [%g]\n",
              memory.size(), rawMicros, 1e6 / rawMicros, source.size(), sourceMicros, 1e6 / sourceMicros,
              double(sink != 0));
}

}  // namespace

int main(int argc, char** argv) {
  const int queries = argc > 1 ? std::max(1, std::atoi(argv[1])) : 200;
  std::string load;
  for (int a = 2; a + 1 < argc; a += 2) {
    const std::string flag = argv[a];
    if (flag == "--kernel") {
      const std::string name = argv[a + 1];
      const auto kernel = memq::VectorIndex::parseKernel(name);
      if (!kernel || !memq::VectorIndex::useKernelForTesting(*kernel)) {
        std::fprintf(stderr, "kernel %s: unknown, or this CPU cannot run it\n", name.c_str());
        return 2;
      }
    } else if (flag == "--load") {
      load = argv[a + 1];
    } else {
      std::fprintf(stderr, "unknown option %s\n", flag.c_str());
      return 2;
    }
  }
  std::printf("scan kernel: %s\n", memq::VectorIndex::kernelName());
  for (const bool twoThreads : {false, true}) {
    benchTopK(10000, queries, twoThreads);
    benchTopK(100000, queries, twoThreads);
  }
  if (!load.empty()) {
    for (const bool twoThreads : {false, true}) {
      benchLoad(load, 10000, 3, twoThreads);
      benchLoad(load, 100000, 3, twoThreads);
    }
  }
  benchEmbed();
  return 0;
}
