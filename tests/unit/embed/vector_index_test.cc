// Tests for daemon/embed/vector_index: topK must equal a brute-force cosine() scan exactly (keys, order and scores),
// on random dense vectors, hashbag vectors, duplicates and odd dimensions, with each scan kernel the machine runs
// (portable, AVX2, AVX-512 VNNI); plus the upsert/remove bookkeeping.
#include "daemon/embed/vector_index.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>

#include "daemon/embed/hashbag.h"
#include "tests/common/random_unit_vector.h"

namespace memq {
namespace {

using Hit = VectorIndex::Hit;
using memq::testing::randomUnitVector;

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

TEST_P(VectorIndexKernels, TwoThreadsFindWhatOneFinds) {
  // An index large enough to be split between two threads: the same hits, in the same order, with the same scores,
  // as one scan and as brute force, including k beyond the rows that reach minScore.
  std::mt19937_64 rng(19);
  const size_t dim = 48;
  VectorIndex index(dim);
  std::map<int64_t, std::vector<float>> rows;
  for (int64_t key = 0; key < static_cast<int64_t>(VectorIndex::kTwoThreadRows) + 5000; ++key) {
    auto v = randomUnitVector(rng, dim);
    index.upsert(key, v);
    rows[key] = std::move(v);
  }
  for (int trial = 0; trial < 6; ++trial) {
    const auto q = randomUnitVector(rng, dim);
    const std::vector<Hit> ranked = rankAll(rows, q);
    for (const size_t k : {size_t{1}, size_t{10}, size_t{200}}) {
      for (const float minScore : {-1.0f, 0.3f, 0.6f}) {
        const auto two = index.topK(q, k, minScore, VectorIndex::Threads::kTwo);
        expectSameHits(two, cut(ranked, k, minScore));
        expectSameHits(two, index.topK(q, k, minScore, VectorIndex::Threads::kOne));
      }
    }
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

}  // namespace
}  // namespace memq
