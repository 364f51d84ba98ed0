// Benchmark (not a test): p50/p95 VectorIndex::topK latency over 10k and 100k random unit vectors of 384 floats, one
// thread (topK) and two (beginTopK and at once get(), which splits an index of a chunk of rows or more), and
// hashbag-v2 embed throughput on a ~300-character memory. Figures feed docs/performance.md.
// Usage: memq_bench_vector_index [queries-per-size] [--kernel scalar|avx2|avx512]   (default: the best the CPU
// runs)
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "daemon/embed/hashbag.h"
#include "daemon/embed/vector_index.h"
#include "tests/common/random_unit_vector.h"

namespace {

using Clock = std::chrono::steady_clock;
using memq::testing::randomUnitVector;

double percentile(std::vector<double> samples, double p) {
  std::sort(samples.begin(), samples.end());
  return samples[static_cast<size_t>(p * static_cast<double>(samples.size() - 1))];
}

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
  if (argc > 3 && std::string(argv[2]) == "--kernel") {
    const std::string name = argv[3];
    const auto kernel = memq::VectorIndex::parseKernel(name);
    if (!kernel || !memq::VectorIndex::useKernelForTesting(*kernel)) {
      std::fprintf(stderr, "kernel %s: unknown, or this CPU cannot run it\n", name.c_str());
      return 2;
    }
  }
  std::printf("scan kernel: %s\n", memq::VectorIndex::kernelName());
  for (const bool twoThreads : {false, true}) {
    benchTopK(10000, queries, twoThreads);
    benchTopK(100000, queries, twoThreads);
  }
  benchEmbed();
  return 0;
}
