// Tests for daemon/embed/vector_index: topK must equal a brute-force cosine() scan exactly (keys, order and scores),
// on random dense vectors, hashbag vectors, duplicates and odd dimensions, with each scan kernel the machine runs
// (portable, AVX2, AVX-512 VNNI); plus the upsert/remove bookkeeping.
#include "daemon/embed/vector_index.h"

#include <gtest/gtest.h>
#include <sched.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <future>
#include <map>
#include <memory>
#include <random>
#include <thread>

#include "daemon/embed/hashbag.h"
#include "daemon/embed/scan_helper.h"
#include "tests/common/random_unit_vector.h"

namespace memq {
namespace {

using Hit = VectorIndex::Hit;
using memq::testing::randomUnitVector;

// Random unit rows under keys [first, first + count), stored in the index and kept beside it for brute force.
void addRandomRows(VectorIndex& index, std::map<int64_t, std::vector<float>>& rows, std::mt19937_64& rng, size_t dim,
                   int64_t first, int64_t count) {
  for (int64_t key = first; key < first + count; ++key) {
    auto v = randomUnitVector(rng, dim);
    index.upsert(key, v);
    rows[key] = std::move(v);
  }
}

// Every stored row scored with cosine(), in topK order.
std::vector<Hit> rankAll(const std::map<int64_t, std::vector<float>>& rows, std::span<const float> q) {
  std::vector<Hit> all;
  for (const auto& [key, v] : rows) all.push_back({key, cosine(q, v)});
  std::sort(all.begin(), all.end(), [](const Hit& a, const Hit& b) {
    return a.score != b.score ? a.score > b.score : a.key < b.key;
  });
  return all;
}

// The specification topK must meet: the ranked rows, filtered by minScore, cut at k.
std::vector<Hit> cut(const std::vector<Hit>& ranked, size_t k, float minScore) {
  std::vector<Hit> out;
  for (const Hit& h : ranked) {
    if (out.size() == k || h.score < minScore) break;
    out.push_back(h);
  }
  return out;
}

std::vector<Hit> bruteForce(const std::map<int64_t, std::vector<float>>& rows, std::span<const float> q, size_t k,
                            float minScore) {
  return cut(rankAll(rows, q), k, minScore);
}

void expectSameHits(const std::vector<Hit>& got, const std::vector<Hit>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_EQ(got[i].key, want[i].key) << "rank " << i;
    EXPECT_EQ(got[i].score, want[i].score) << "rank " << i;  // exact, not approximately equal
  }
}

// Enough rows for the two threads of beginTopK to take many chunks each.
constexpr int64_t kManyChunkRows = 32768;

// For each k and minScore: the two-thread scan finds what brute force (`ranked`, every row by score) and the
// one-thread scan find.
void expectBothScansFindTheBest(const VectorIndex& index, const std::vector<float>& query,
                                const std::vector<Hit>& ranked, std::initializer_list<size_t> ks,
                                std::initializer_list<float> minScores) {
  for (const size_t k : ks) {
    for (const float minScore : minScores) {
      const auto two = index.beginTopK(query, k, minScore)->get();
      expectSameHits(two, cut(ranked, k, minScore));
      expectSameHits(two, index.topK(query, k, minScore));
    }
  }
}

class VectorIndexKernels : public ::testing::TestWithParam<VectorIndex::Kernel> {
 protected:
  void SetUp() override {
    if (!VectorIndex::useKernelForTesting(GetParam())) GTEST_SKIP() << "this CPU cannot run the kernel";
  }
  void TearDown() override { VectorIndex::useKernelForTesting(std::nullopt); }
};

TEST_P(VectorIndexKernels, RandomUnitVectorsMatchBruteForce) {
  std::mt19937_64 rng(42);
  for (const size_t dim : {size_t{384}, size_t{5}, size_t{33}, size_t{64}}) {
    VectorIndex index(dim);
    std::map<int64_t, std::vector<float>> rows;
    for (int64_t key = 0; key < 3000; ++key) {
      auto v = randomUnitVector(rng, dim);
      ASSERT_TRUE(index.upsert(key * 7 + 1, v));
      rows[key * 7 + 1] = std::move(v);
    }
    for (int trial = 0; trial < 20; ++trial) {
      const auto q = randomUnitVector(rng, dim);
      const std::vector<Hit> ranked = rankAll(rows, q);
      for (const size_t k : {size_t{1}, size_t{3}, size_t{10}, size_t{50}, size_t{5000}}) {
        for (const float minScore : {-1.0f, 0.0f, 0.05f, 0.18f, 0.4f}) {
          expectSameHits(index.topK(q, k, minScore), cut(ranked, k, minScore));
        }
      }
    }
  }
}

TEST_P(VectorIndexKernels, NearDuplicatesAndExactTiesOrderByKey) {
  std::mt19937_64 rng(7);
  VectorIndex index(384);
  std::map<int64_t, std::vector<float>> rows;
  const auto base = randomUnitVector(rng, 384);
  std::normal_distribution<float> jitter(0.0f, 1e-4f);
  for (int64_t key = 100; key > 0; --key) {  // inserted in descending key order on purpose
    std::vector<float> v = base;
    if (key % 3 == 0) {
      for (float& x : v) x += jitter(rng);
    }
    index.upsert(key, v);
    rows[key] = v;
  }
  for (int i = 0; i < 500; ++i) {
    const auto v = randomUnitVector(rng, 384);
    index.upsert(1000 + i, v);
    rows[1000 + i] = v;
  }
  for (const size_t k : {size_t{1}, size_t{5}, size_t{40}, size_t{200}}) {
    expectSameHits(index.topK(base, k, 0.0f), bruteForce(rows, base, k, 0.0f));
  }
}

TEST_P(VectorIndexKernels, HashbagVectorsMatchBruteForce) {
  const HashbagEmbedder embedder;
  const char* words[] = {"auth",  "token", "bun",   "npm",     "install", "cache", "sqlite", "socket", "daemon",
                         "recall", "hint", "topic", "vector", "index",   "json",  "rpc",    "schema", "migration"};
  std::mt19937_64 rng(3);
  std::uniform_int_distribution<size_t> pick(0, std::size(words) - 1);
  VectorIndex index(kHashbagDim);
  std::map<int64_t, std::vector<float>> rows;
  auto sentence = [&] {
    std::string s;
    for (int i = 0; i < 5; ++i) s += std::string(words[pick(rng)]) + " ";
    return s;
  };
  for (int64_t key = 1; key <= 2000; ++key) {
    auto v = embedder.embed(memoryEmbedSource(sentence(), sentence(), {}));
    index.upsert(key, v);
    rows[key] = std::move(v);
  }
  index.upsert(5000, std::vector<float>(kHashbagDim, 0.0f));  // a zero vector is stored like any other
  rows[5000] = std::vector<float>(kHashbagDim, 0.0f);
  for (int trial = 0; trial < 30; ++trial) {
    const auto q = embedder.embed(memoryEmbedSource(sentence(), "", {}));
    for (const float minScore : {0.0f, 0.18f, 0.4f, 0.55f}) {
      expectSameHits(index.topK(q, 8, minScore), bruteForce(rows, q, 8, minScore));
      expectSameHits(index.topK(q, 20, minScore), bruteForce(rows, q, 20, minScore));
    }
  }
}

TEST_P(VectorIndexKernels, NonUnitVectors) {
  std::mt19937_64 rng(11);
  VectorIndex index(48);
  std::map<int64_t, std::vector<float>> rows;
  std::uniform_real_distribution<float> scale(0.01f, 50.0f);
  for (int64_t key = 0; key < 500; ++key) {
    auto v = randomUnitVector(rng, 48);
    const float s = scale(rng);
    for (float& x : v) x *= s;
    index.upsert(key, v);
    rows[key] = std::move(v);
  }
  for (int trial = 0; trial < 20; ++trial) {
    auto q = randomUnitVector(rng, 48);
    for (float& x : q) x *= 3.0f;
    expectSameHits(index.topK(q, 10, -1e9f), bruteForce(rows, q, 10, -1e9f));
    expectSameHits(index.topK(q, 10, 2.0f), bruteForce(rows, q, 10, 2.0f));
  }
}

TEST_P(VectorIndexKernels, DotProductsEqualThePlainSumsExactly) {
  // The kernel's integers against a plain sum over each row: random codes, the extremes (every code +-127, and
  // alternating signs), queries with most codes zero, with an odd number of nonzero codes (the kernels take
  // columns two at a time), with one or none; for row counts that leave every kind of part-filled last block of the
  // column layout, and for several strides.
  std::mt19937_64 rng(23);
  std::uniform_int_distribution<int> code(-127, 127);
  for (const size_t stride : {size_t{64}, size_t{128}, size_t{384}, size_t{448}}) {
    for (const size_t rows : {size_t{1}, size_t{2}, size_t{3}, size_t{5}, size_t{63}, size_t{64}, size_t{65}, size_t{257}}) {
      std::vector<int8_t> codes(rows * stride);
      std::vector<int8_t> query(stride);
      for (int pattern = 0; pattern < 9; ++pattern) {
        for (size_t i = 0; i < codes.size(); ++i) {
          switch (pattern) {
            case 0: codes[i] = static_cast<int8_t>(code(rng)); break;
            case 1: codes[i] = 127; break;
            case 2: codes[i] = -127; break;
            case 3: codes[i] = static_cast<int8_t>(i % 2 == 0 ? 127 : -127); break;
            case 4: codes[i] = static_cast<int8_t>(code(rng) > 0 ? 127 : -127); break;
            default: codes[i] = static_cast<int8_t>(i % 3 == 0 ? 0 : code(rng)); break;
          }
        }
        for (size_t i = 0; i < stride; ++i) {
          switch (pattern) {
            case 0: query[i] = static_cast<int8_t>(code(rng)); break;
            case 1: query[i] = 127; break;
            case 2: query[i] = 127; break;
            case 3: query[i] = static_cast<int8_t>(i % 2 == 0 ? -127 : 127); break;
            case 4: query[i] = static_cast<int8_t>(code(rng) > 0 ? 127 : -127); break;
            case 5: query[i] = static_cast<int8_t>(i % 5 == 0 ? 0 : code(rng)); break;
            case 6: query[i] = static_cast<int8_t>(i % 7 == 3 ? code(rng) : 0); break;        // sparse, as hashbag's
            case 7: query[i] = static_cast<int8_t>(i == 1 || i == 5 || i == stride - 1 ? -127 : 0); break;  // three
            default: query[i] = 0; break;
          }
        }
        std::vector<int32_t> want(rows, 0);
        for (size_t r = 0; r < rows; ++r) {
          for (size_t i = 0; i < stride; ++i) want[r] += int32_t{codes[r * stride + i]} * int32_t{query[i]};
        }
        const auto got = VectorIndex::dotsForTesting(GetParam(), codes, query);
        ASSERT_TRUE(got);
        ASSERT_EQ(*got, want) << "stride " << stride << ", rows " << rows << ", pattern " << pattern;
        if (pattern == 1) {
          EXPECT_EQ((*got)[0], static_cast<int32_t>(127 * 127 * stride));
        }
      }
    }
  }
}

TEST_P(VectorIndexKernels, OddDimensionsAndExtremeValuesMatchBruteForce) {
  // Dimensions that leave every kind of tail before the 64-code padding, row counts that are not a multiple of the
  // kernels' blocks, and rows whose codes sit at +-127: one dominant component, all components equal in magnitude,
  // tiny and huge scales.
  std::mt19937_64 rng(29);
  std::uniform_real_distribution<float> unit(-1.0f, 1.0f);
  for (const size_t dim : {size_t{1}, size_t{2}, size_t{31}, size_t{32}, size_t{63}, size_t{65}, size_t{97},
                           size_t{383}, size_t{385}}) {
    VectorIndex index(dim);
    std::map<int64_t, std::vector<float>> rows;
    const int64_t n = 1000 + static_cast<int64_t>(dim % 7);
    for (int64_t key = 0; key < n; ++key) {
      std::vector<float> v(dim);
      switch (key % 5) {
        case 0:  // all +-1: every code is +-127
          for (float& x : v) x = unit(rng) < 0 ? -1.0f : 1.0f;
          break;
        case 1:  // one dominant component
          for (float& x : v) x = unit(rng) * 1e-3f;
          v[static_cast<size_t>(key) % dim] = key % 2 == 0 ? 1e3f : -1e3f;
          break;
        case 2:  // huge
          for (float& x : v) x = unit(rng) * 1e30f;
          break;
        case 3:  // tiny
          for (float& x : v) x = unit(rng) * 1e-30f;
          break;
        default:
          v = randomUnitVector(rng, dim);
          break;
      }
      ASSERT_TRUE(index.upsert(key, v));
      rows[key] = std::move(v);
    }
    for (int trial = 0; trial < 12; ++trial) {
      std::vector<float> q(dim);
      if (trial % 3 == 0) {
        for (float& x : q) x = unit(rng) < 0 ? -1.0f : 1.0f;
      } else {
        q = randomUnitVector(rng, dim);
      }
      const std::vector<Hit> ranked = rankAll(rows, q);
      for (const size_t k : {size_t{1}, size_t{7}, size_t{64}}) {
        for (const float minScore : {-1e30f, 0.0f, 0.3f}) {
          expectSameHits(index.topK(q, k, minScore), cut(ranked, k, minScore));
        }
      }
    }
  }
}

TEST_P(VectorIndexKernels, TwoThreadsFindWhatOneFinds) {
  // An index large enough to be split between two threads: the same hits, in the same order, with the same scores,
  // as one scan and as brute force, including k beyond the rows that reach minScore.
  std::mt19937_64 rng(19);
  const size_t dim = 48;
  VectorIndex index(dim);
  std::map<int64_t, std::vector<float>> rows;
  addRandomRows(index, rows, rng, dim, 0, kManyChunkRows + 5000);
  for (int trial = 0; trial < 6; ++trial) {
    const auto q = randomUnitVector(rng, dim);
    const std::vector<Hit> ranked = rankAll(rows, q);
    expectBothScansFindTheBest(index, q, ranked, {1, 10, 200}, {-1.0f, 0.3f, 0.6f});
  }
}

TEST_P(VectorIndexKernels, TwoThreadsFindWhatOneFindsWhenScoresCrowd) {
  // Rows that share one strong direction, as hashbag vectors of one project do: the scores of a query near it crowd
  // into a narrow band, so many rows reach the gate in every chunk the two threads take; the best rows sit in the
  // first and the last chunk. The same hits as one scan and as brute force, for a row count that is not a multiple
  // of the chunks.
  std::mt19937_64 rng(31);
  const size_t dim = 64;
  const auto common = randomUnitVector(rng, dim);
  const auto lift = randomUnitVector(rng, dim);
  std::normal_distribution<float> noise(0.0f, 0.08f);
  auto around = [&](float towardLift, bool noisy) {
    std::vector<float> v(dim);
    for (size_t i = 0; i < dim; ++i) v[i] = common[i] + towardLift * lift[i] + (noisy ? noise(rng) : 0.0f);
    return v;
  };
  VectorIndex index(dim);
  std::map<int64_t, std::vector<float>> rows;
  const int64_t n = kManyChunkRows + 7001;
  for (int64_t key = 0; key < n; ++key) {
    auto v = around(key < 3 || key >= n - 3 ? 1.0f : 0.0f, true);  // the planted rows: closest to the first query
    index.upsert(key, v);
    rows[key] = std::move(v);
  }
  for (int trial = 0; trial < 4; ++trial) {
    const auto query = trial == 0 ? around(1.0f, false) : around(0.0f, true);
    const std::vector<Hit> ranked = rankAll(rows, query);
    if (trial == 0) {
      std::vector<int64_t> best;
      for (size_t i = 0; i < 6; ++i) best.push_back(ranked[i].key);
      std::sort(best.begin(), best.end());
      EXPECT_EQ(best, (std::vector<int64_t>{0, 1, 2, n - 3, n - 2, n - 1}));
    }
    EXPECT_GT(ranked[ranked.size() * 9 / 10].score, 0.5f) << "the scores do not crowd: the test checks little";
    expectBothScansFindTheBest(index, query, ranked, {1, 6, 20, 300}, {0.18f, 0.7f});
  }
}

TEST_P(VectorIndexKernels, AScanBegunAheadFindsWhatTopKFindsHoweverLateItIsAskedFor) {
  // beginTopK on indexes below one chunk (scanned at get) and of several chunks (a helper scans meanwhile): several
  // scans in flight at once, asked for in reverse order, some only after their helper is surely done, one never
  // asked for (destroyed while its helper may still run); each gives topK's hits, order and scores.
  std::mt19937_64 rng(41);
  const size_t dim = 64;
  for (const int64_t n : {int64_t{900}, int64_t{3 * 4096 + 17}}) {
    VectorIndex index(dim);
    std::map<int64_t, std::vector<float>> rows;
    addRandomRows(index, rows, rng, dim, 0, n);
    std::vector<std::vector<float>> queries;
    std::vector<std::unique_ptr<VectorIndex::PendingTopK>> begun;
    for (int q = 0; q < 5; ++q) {
      queries.push_back(randomUnitVector(rng, dim));
      begun.push_back(index.beginTopK(queries.back(), 20, 0.1f));
    }
    auto unasked = index.beginTopK(randomUnitVector(rng, dim), 20, 0.1f);
    if (n > 1000) std::this_thread::sleep_for(std::chrono::milliseconds(20));  // let the helpers finish first
    for (size_t q = queries.size(); q-- > 0;) {
      const auto hits = begun[q]->get();
      EXPECT_FALSE(hits.empty()) << n;
      expectSameHits(hits, index.topK(queries[q], 20, 0.1f));
      expectSameHits(hits, bruteForce(rows, queries[q], 20, 0.1f));
      EXPECT_TRUE(begun[q]->get().empty()) << "a scan answers once";
    }
    EXPECT_TRUE(index.beginTopK(std::vector<float>(dim + 1, 0.1f), 20, 0.1f)->get().empty()) << "wrong size";
    EXPECT_TRUE(index.beginTopK(queries[0], 0, 0.1f)->get().empty()) << "k = 0";
  }
}

TEST_P(VectorIndexKernels, ABegunScanNeverWaitsForHelpersBusyWithOtherWork) {
  // Every scan helper is held by another job: a scan of several chunks begun now is answered by its caller alone,
  // with topK's hits, and one destroyed unasked returns too; neither waits for a helper to come free.
  std::mt19937_64 rng(53);
  const size_t dim = 64;
  VectorIndex index(dim);
  for (int64_t key = 0; key < 3 * 4096 + 5; ++key) index.upsert(key, randomUnitVector(rng, dim));
  const auto query = randomUnitVector(rng, dim);

  const size_t helpers = ScanHelpers::instance().threads();
  if (helpers == 0) GTEST_SKIP() << "one core allowed: no helper is started";
  auto release = std::make_shared<std::atomic<bool>>(false);
  auto busy = std::make_shared<std::atomic<size_t>>(0);
  std::vector<std::shared_ptr<ScanHelpers::Job>> blockers;
  for (size_t i = 0; i < helpers; ++i) {
    blockers.push_back(std::make_shared<ScanHelpers::Job>([release, busy] {
      ++*busy;
      while (!release->load()) std::this_thread::yield();
    }));
    ASSERT_TRUE(ScanHelpers::instance().submit(blockers.back()));
  }
  struct ReleaseAtEnd {
    std::shared_ptr<std::atomic<bool>> release;
    std::vector<std::shared_ptr<ScanHelpers::Job>>* jobs;
    ~ReleaseAtEnd() {
      *release = true;
      for (auto& j : *jobs) j->takeBackOrWait();
    }
  } releaseAtEnd{release, &blockers};
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (busy->load() < helpers && std::chrono::steady_clock::now() < deadline) std::this_thread::yield();
  ASSERT_EQ(busy->load(), helpers);

  // On a thread of its own, so a scan that waited for a helper fails the test instead of hanging it.
  auto answered = std::async(std::launch::async, [&] {
    auto begun = index.beginTopK(query, 20, 0.1f);
    auto unasked = index.beginTopK(randomUnitVector(rng, dim), 20, 0.1f);
    return begun->get();
  });
  ASSERT_EQ(answered.wait_for(std::chrono::seconds(10)), std::future_status::ready)
      << "a scan waited for a helper that never started its part";
  expectSameHits(answered.get(), index.topK(query, 20, 0.1f));
}

TEST_P(VectorIndexKernels, ManyQueriesFindWhatEachFindsAlone) {
  // topKMany over an index of several of its stretches (and a part one): for every query the hits, order and scores
  // of topK and of brute force, including hashbag-like near duplicates of stored rows and queries topK refuses.
  std::mt19937_64 rng(23);
  const size_t dim = 64;
  VectorIndex index(dim);
  std::map<int64_t, std::vector<float>> rows;
  for (int64_t key = 0; key < 5000; ++key) {
    auto v = randomUnitVector(rng, dim);
    index.upsert(key * 3, v);
    rows[key * 3] = std::move(v);
  }
  std::vector<std::vector<float>> queries;
  for (int i = 0; i < 40; ++i) queries.push_back(randomUnitVector(rng, dim));
  for (int64_t key : {int64_t{0}, int64_t{4500}, int64_t{14997}}) {
    auto near = rows[key];
    near[0] += 1e-4f;  // scores crowd at the top: the gate is carried from stretch to stretch
    queries.push_back(near);
  }
  queries.push_back(std::vector<float>(dim - 1, 0.1f));  // the wrong size: no hits, as topK
  for (const size_t k : {size_t{1}, size_t{9}, size_t{300}}) {
    for (const float minScore : {-1.0f, 0.2f, 0.4f}) {
      const auto many = index.topKMany(queries, k, minScore);
      ASSERT_EQ(many.size(), queries.size());
      for (size_t i = 0; i < queries.size(); ++i) {
        SCOPED_TRACE("query " + std::to_string(i) + " k " + std::to_string(k));
        expectSameHits(many[i], index.topK(queries[i], k, minScore));
        if (queries[i].size() == dim) expectSameHits(many[i], bruteForce(rows, queries[i], k, minScore));
      }
    }
  }
  EXPECT_TRUE(index.topKMany(queries, 0, -1.0f).front().empty());
  EXPECT_TRUE(VectorIndex(dim).topKMany(queries, 3, -1.0f).front().empty());
}

TEST_P(VectorIndexKernels, RemovalsAndInsertsAcrossStorageChunksKeepExactAnswers) {
  // Rows in three storage chunks (RowChunks::kRowsPerChunk each, the last one part full); removals move rows from the
  // last chunk into holes in the first, and new rows then fill the last block again (over codes a removed row left).
  // Every scan, one query or many, still gives brute force's answer, and every row its own vector.
  std::mt19937_64 rng(29);
  const size_t dim = 40;
  const int64_t n = 2 * int64_t{RowChunks<int8_t>::kRowsPerChunk} + 130;
  VectorIndex index(dim);
  std::map<int64_t, std::vector<float>> rows;
  addRandomRows(index, rows, rng, dim, 0, n);
  std::uniform_int_distribution<int64_t> anyKey(0, n - 1);
  for (int i = 0; i < 1500; ++i) {
    const int64_t key = anyKey(rng);
    EXPECT_EQ(index.remove(key), rows.erase(key) == 1);
  }
  addRandomRows(index, rows, rng, dim, n, 300);
  ASSERT_EQ(index.size(), rows.size());
  std::vector<std::vector<float>> queries;
  for (int i = 0; i < 6; ++i) queries.push_back(randomUnitVector(rng, dim));
  queries.push_back(rows.rbegin()->second);  // a row of the last block: its own best hit
  const auto many = index.topKMany(queries, 20, -1.0f);
  for (size_t i = 0; i < queries.size(); ++i) {
    SCOPED_TRACE("query " + std::to_string(i));
    const auto want = bruteForce(rows, queries[i], 20, -1.0f);
    expectSameHits(index.topK(queries[i], 20, -1.0f), want);
    expectSameHits(many[i], want);
  }
  for (const auto& [key, v] : rows) {
    ASSERT_EQ(std::vector<float>(index.vectorOf(key).begin(), index.vectorOf(key).end()), v) << key;
  }
}

INSTANTIATE_TEST_SUITE_P(Kernels, VectorIndexKernels,
                         ::testing::Values(VectorIndex::Kernel::kPortable, VectorIndex::Kernel::kAvx2,
                                           VectorIndex::Kernel::kAvx512Vnni),
                         [](const ::testing::TestParamInfo<VectorIndex::Kernel>& info) {
                           switch (info.param) {
                             case VectorIndex::Kernel::kPortable:
                               return std::string("Portable");
                             case VectorIndex::Kernel::kAvx2:
                               return std::string("Avx2");
                             case VectorIndex::Kernel::kAvx512Vnni:
                               return std::string("Avx512Vnni");
                           }
                           return std::string("Unknown");
                         });

TEST(VectorIndex, KernelNamesAndChoice) {
  using Kernel = VectorIndex::Kernel;
  for (const Kernel k : {Kernel::kPortable, Kernel::kAvx2, Kernel::kAvx512Vnni}) {
    EXPECT_EQ(VectorIndex::parseKernel(VectorIndex::kernelName(k)), k);
  }
  EXPECT_STREQ(VectorIndex::kernelName(Kernel::kPortable), "scalar");
  EXPECT_STREQ(VectorIndex::kernelName(Kernel::kAvx2), "avx2");
  EXPECT_STREQ(VectorIndex::kernelName(Kernel::kAvx512Vnni), "avx512");
  EXPECT_EQ(VectorIndex::parseKernel("portable"), Kernel::kPortable);
  EXPECT_EQ(VectorIndex::parseKernel("avx512vnni"), Kernel::kAvx512Vnni);
  EXPECT_EQ(VectorIndex::parseKernel("sse2"), std::nullopt);
  EXPECT_EQ(VectorIndex::parseKernel(""), std::nullopt);
  EXPECT_TRUE(VectorIndex::supports(Kernel::kPortable));
  // The kernel in use is one the CPU runs; without MEMQ_SCAN_KERNEL, the best of them.
  EXPECT_TRUE(VectorIndex::supports(VectorIndex::kernel()));
  const char* env = std::getenv("MEMQ_SCAN_KERNEL");
  if (env == nullptr || *env == '\0') {
    const Kernel best = VectorIndex::supports(Kernel::kAvx512Vnni) ? Kernel::kAvx512Vnni
                        : VectorIndex::supports(Kernel::kAvx2)     ? Kernel::kAvx2
                                                                   : Kernel::kPortable;
    EXPECT_EQ(VectorIndex::kernel(), best);
  }
  ASSERT_TRUE(VectorIndex::useKernelForTesting(Kernel::kPortable));
  EXPECT_EQ(VectorIndex::kernel(), Kernel::kPortable);
  EXPECT_STREQ(VectorIndex::kernelName(), "scalar");
  ASSERT_TRUE(VectorIndex::useKernelForTesting(std::nullopt));
}

TEST(VectorIndex, UpsertRemoveSemantics) {
  VectorIndex index(4);
  EXPECT_EQ(index.dim(), 4u);
  EXPECT_EQ(index.size(), 0u);
  const std::vector<float> a = {1, 0, 0, 0};
  const std::vector<float> b = {0, 1, 0, 0};
  const std::vector<float> c = {0, 0, 1, 0};
  EXPECT_TRUE(index.upsert(10, a));
  EXPECT_TRUE(index.upsert(20, b));
  EXPECT_TRUE(index.upsert(30, c));
  EXPECT_EQ(index.size(), 3u);
  EXPECT_TRUE(index.contains(20));

  // Replacing keeps the size and changes the score.
  EXPECT_EQ(index.score(20, a), 0.0f);
  EXPECT_TRUE(index.upsert(20, a));
  EXPECT_EQ(index.size(), 3u);
  EXPECT_EQ(index.score(20, a), 1.0f);

  // Removing the first slot moves the last row into it; everything stays addressable by key.
  EXPECT_TRUE(index.remove(10));
  EXPECT_FALSE(index.remove(10));
  EXPECT_FALSE(index.contains(10));
  EXPECT_EQ(index.size(), 2u);
  EXPECT_EQ(index.score(10, a), std::nullopt);
  EXPECT_EQ(index.score(30, c), 1.0f);
  EXPECT_EQ(std::vector<float>(index.vectorOf(30).begin(), index.vectorOf(30).end()), c);
  EXPECT_TRUE(index.vectorOf(10).empty());

  const auto hits = index.topK(c, 5, -1.0f);
  ASSERT_EQ(hits.size(), 2u);
  EXPECT_EQ(hits[0].key, 30);
  EXPECT_EQ(hits[0].score, 1.0f);
  EXPECT_EQ(hits[1].key, 20);
  EXPECT_EQ(hits[1].score, 0.0f);

  // Re-inserting a removed key works, removing everything empties it.
  EXPECT_TRUE(index.upsert(10, b));
  EXPECT_TRUE(index.remove(20));
  EXPECT_TRUE(index.remove(30));
  EXPECT_TRUE(index.remove(10));
  EXPECT_EQ(index.size(), 0u);
  EXPECT_TRUE(index.topK(a, 3, -1.0f).empty());
}

TEST(VectorIndex, RejectsBadInput) {
  VectorIndex index(3);
  EXPECT_FALSE(index.upsert(1, std::vector<float>{1, 0}));
  EXPECT_FALSE(index.upsert(1, std::vector<float>{1, NAN, 0}));
  EXPECT_FALSE(index.upsert(1, std::vector<float>{INFINITY, 0, 0}));
  EXPECT_EQ(index.size(), 0u);
  ASSERT_TRUE(index.upsert(1, std::vector<float>{1, 0, 0}));
  EXPECT_TRUE(index.topK(std::vector<float>{1, 0}, 3, 0.0f).empty());
  EXPECT_TRUE(index.topK(std::vector<float>{NAN, 0, 0}, 3, 0.0f).empty());
  EXPECT_TRUE(index.topK(std::vector<float>{1, 0, 0}, 0, 0.0f).empty());
  EXPECT_EQ(index.score(1, std::vector<float>{1, 0}), std::nullopt);
}

TEST(VectorIndex, RandomisedMutationsKeepTheIndexConsistent) {
  std::mt19937_64 rng(99);
  VectorIndex index(16);
  std::map<int64_t, std::vector<float>> rows;
  std::uniform_int_distribution<int64_t> keyDist(0, 200);
  std::uniform_int_distribution<int> op(0, 2);
  for (int step = 0; step < 5000; ++step) {
    const int64_t key = keyDist(rng);
    if (op(rng) == 0) {
      EXPECT_EQ(index.remove(key), rows.erase(key) == 1);
    } else {
      auto v = randomUnitVector(rng, 16);
      index.upsert(key, v);
      rows[key] = std::move(v);
    }
    ASSERT_EQ(index.size(), rows.size());
    if (step % 250 == 0) {
      const auto q = randomUnitVector(rng, 16);
      expectSameHits(index.topK(q, 7, -1.0f), bruteForce(rows, q, 7, -1.0f));
    }
  }
  for (const auto& [key, v] : rows) {
    ASSERT_TRUE(index.contains(key));
    EXPECT_EQ(std::vector<float>(index.vectorOf(key).begin(), index.vectorOf(key).end()), v);
  }
}

TEST(ScanHelpersTest, OneHelperPerAllowedCoreBeyondTheFirstAndNoneOnOneCore) {
  EXPECT_EQ(ScanHelpers::helpersFor(0), 0u);
  EXPECT_EQ(ScanHelpers::helpersFor(1), 0u);
  EXPECT_EQ(ScanHelpers::helpersFor(2), 1u);
  EXPECT_EQ(ScanHelpers::helpersFor(4), 3u);
  EXPECT_EQ(ScanHelpers::helpersFor(64), 4u);
  // A process allowed one core (taskset, a cgroup's cpuset) starts no helper, whatever the machine has: a child
  // process, so that its helpers are the first this process makes.
  const pid_t child = ::fork();
  if (child == 0) {
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(::sched_getcpu(), &one);
    if (::sched_setaffinity(0, sizeof one, &one) != 0) ::_exit(100);
    ::_exit(static_cast<int>(std::min<size_t>(ScanHelpers::instance().threads(), 99)));
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << "helpers started on a single allowed core (100: the test could not pin it)";
}

}  // namespace
}  // namespace memq
