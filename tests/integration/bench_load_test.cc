// `memq bench load` end to end: a tiny generated workload (xz-compressed, as the load workload is) run through the
// real memq binary, which starts its own memqd. Checks the report's shape and that every save landed in the store.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <sstream>

#include "integration/memqd_fixture.h"

namespace memq::testing {
namespace {

using json = nlohmann::json;

constexpr int kMemories = 40;

class BenchLoadTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = makeTempDir("bl");
    // Distinct memories (no two collapse by content hash), with the workload's fields: files as {path, file_id},
    // a category, topics.
    const char* categories[] = {"context", "decision", "gotcha", "pref"};
    std::string lines;
    for (int i = 0; i < kMemories; ++i) {
      json m = {{"i", i},
                {"category", categories[i % 4]},
                {"summary", "Change " + std::to_string(i) + ": tune the parser for module " + std::to_string(i % 7)},
                {"details", "Details of change " + std::to_string(i) + " touching the tokenizer and the cache."},
                {"topics", json::array({"topic" + std::to_string(i % 3)})},
                {"source", "agent"},
                {"files", json::array({{{"path", "src/mod" + std::to_string(i % 7) + ".ts"}, {"file_id", i % 7}}})},
                {"real", false}};
      lines += m.dump() + "\n";
    }
    writeTextFile(dir_ / "memories.jsonl", lines);
    ASSERT_EQ(runCommand("xz -z " + shellQuote((dir_ / "memories.jsonl").string())).exitCode, 0) << "xz is needed";
    std::string queries;
    for (int i = 0; i < 12; ++i) {
      json q = {{"i", i},
                {"warmup", i < 2},
                {"query", "tune the parser for module " + std::to_string(i % 7)},
                {"editedFiles", json::array({"src/mod" + std::to_string(i % 7) + ".ts"})}};
      queries += q.dump() + "\n";
    }
    writeTextFile(dir_ / "queries.jsonl", queries);
  }
  void TearDown() override { fs::remove_all(dir_); }

  CommandResult benchLoad(const std::string& args) {
    return runCommand(shellQuote(binDir() + "/memq") + " bench load --dataset " + shellQuote(dir_.string()) + " " +
                      args);
  }

  fs::path dir_;
};

TEST_F(BenchLoadTest, JsonReportCountsEverySaveAndTheMeasuredQueries) {
  auto r = benchLoad("--n " + std::to_string(kMemories) + " --json");
  ASSERT_EQ(r.exitCode, 0) << r.err << r.out;
  json report = json::parse(r.out);
  EXPECT_EQ(report["clients"], 1);
  ASSERT_EQ(report["sizes"].size(), 1u);
  const json& row = report["sizes"][0];
  EXPECT_EQ(row["n"], kMemories);
  EXPECT_EQ(row["saved"], kMemories);
  EXPECT_EQ(row["errors"], 0) << row.value("first_error", "");
  // Every save landed as its own active memory, as the daemon itself counts them.
  EXPECT_EQ(row["active_memories"], kMemories);
  EXPECT_EQ(row["recall_queries"], 10);  // 12 queries, the first 2 are warm-up
  EXPECT_GT(row["saves_per_s"].get<double>(), 0);
  EXPECT_GT(row["save_p50_ms"].get<double>(), 0);
  // The save latencies are ordered: p50 ≤ p95 ≤ p99 ≤ the slowest save.
  EXPECT_LE(row["save_p50_ms"].get<double>(), row["save_p95_ms"].get<double>());
  EXPECT_LE(row["save_p95_ms"].get<double>(), row["save_p99_ms"].get<double>());
  EXPECT_LE(row["save_p99_ms"].get<double>(), row["save_max_ms"].get<double>());
  EXPECT_GT(row["recall_p50_ms"].get<double>(), 0);
  EXPECT_LE(row["recall_p50_ms"].get<double>(), row["recall_p95_ms"].get<double>());
  EXPECT_LE(row["recall_p95_ms"].get<double>(), row["recall_p99_ms"].get<double>());
  EXPECT_GT(row["peak_rss_bytes"].get<int64_t>(), 1 << 20);
  EXPECT_GT(row["db_bytes"].get<int64_t>() + row["wal_bytes"].get<int64_t>(), 0);
  EXPECT_GT(row["closed_db_bytes"].get<int64_t>(), 0);
  // The vector scan memqd ran, so that figures from different CPUs say what they measured.
  const std::string kernel = row.value("scan_kernel", "");
  EXPECT_TRUE(kernel == "scalar" || kernel == "avx2" || kernel == "avx512") << row.dump();
}

TEST_F(BenchLoadTest, SeveralSizesOverSeveralConnectionsPrintOneRowEach) {
  auto r = benchLoad("--n 15," + std::to_string(kMemories) + " --clients 4");
  ASSERT_EQ(r.exitCode, 0) << r.err << r.out;
  std::istringstream in(r.out);
  std::string line;
  std::vector<std::vector<std::string>> rows;
  while (std::getline(in, line)) {
    std::istringstream words(line);
    std::vector<std::string> w;
    for (std::string x; words >> x;) w.push_back(x);
    if (!w.empty() && std::isdigit(static_cast<unsigned char>(w[0][0]))) rows.push_back(w);
  }
  ASSERT_EQ(rows.size(), 2u) << r.out;
  EXPECT_EQ(rows[0][0], "15");
  EXPECT_EQ(rows[0][1], "15");  // saved
  EXPECT_EQ(rows[0][2], "0");   // errors
  EXPECT_EQ(rows[1][0], std::to_string(kMemories));
  EXPECT_EQ(rows[1][1], std::to_string(kMemories));
  EXPECT_EQ(rows[1][2], "0");
  EXPECT_NE(r.out.find("saves/s"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("peak RSS"), std::string::npos) << r.out;
}

TEST_F(BenchLoadTest, MoreMemoriesThanTheDatasetHoldsIsAUsageError) {
  auto r = benchLoad("--n 100");
  EXPECT_EQ(r.exitCode, 2) << r.out;
  EXPECT_NE(r.err.find("fewer than 100"), std::string::npos) << r.err;
}

TEST_F(BenchLoadTest, BadOptionsAreUsageErrors) {
  EXPECT_EQ(benchLoad("--n 0").exitCode, 2);
  EXPECT_EQ(benchLoad("--n 10,x").exitCode, 2);
  EXPECT_EQ(benchLoad("--n 10 --clients 0").exitCode, 2);
  auto missing = runCommand(shellQuote(binDir() + "/memq") + " bench load --n 10 --dataset " +
                            shellQuote((dir_ / "nowhere").string()));
  EXPECT_EQ(missing.exitCode, 2);
  EXPECT_NE(missing.err.find("memories.jsonl.xz"), std::string::npos) << missing.err;
  // No --dataset and no MEMQ_BENCH_DIR: no path is guessed; the usage error says what to give.
  auto unnamed = runCommand("env -u MEMQ_BENCH_DIR " + shellQuote(binDir() + "/memq") + " bench load --n 10");
  EXPECT_EQ(unnamed.exitCode, 2);
  EXPECT_NE(unnamed.err.find("--dataset"), std::string::npos) << unnamed.err;
  // MEMQ_BENCH_DIR names the benchmark's folder; its load/ is the dataset.
  auto fromEnv = runCommand("MEMQ_BENCH_DIR=" + shellQuote((dir_ / "nowhere").string()) + " " +
                            shellQuote(binDir() + "/memq") + " bench load --n 10");
  EXPECT_EQ(fromEnv.exitCode, 2);
  EXPECT_NE(fromEnv.err.find("nowhere/load"), std::string::npos) << fromEnv.err;
}

}  // namespace
}  // namespace memq::testing
