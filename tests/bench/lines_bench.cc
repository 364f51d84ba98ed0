// memq_bench_lines: recall and save with line anchors, in-process through the Service, on a real git repository.
// Builds a repository of F files of L lines (committed), saves N memories one at a time, each anchored to a few
// lines of one file (the work-tree version, which is HEAD's blob), then runs Q recalls naming one file and a few of
// its lines: a first pass, then R warm passes (the carrier's cache holds the diffs). Then HEAD moves: a commit edits
// every file (lines inserted above, some rewritten), and the next pass is the first recall after the move, each
// query carrying its file's anchors to the new version; warm passes follow, within 2 s of the commit (the files
// changed moments ago, read on every recall) and after the files settled. Prints saves/s and each pass's
// p50/p95/p99, and a warm pass of the same queries naming the files without lines beside them. Usage:
//   memq_bench_lines [--n 10000] [--files 200] [--lines 2000] [--queries 200] [--repeat 3] [--seed 1]
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <map>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "daemon/embed/hashbag.h"
#include "daemon/git/git_repo_signals.h"
#include "daemon/service/service.h"
#include "daemon/util/file_stamp.h"
#include "tests/bench/bench_util.h"
#include "tests/unit/git/git_fixture.h"

namespace {

using Clock = std::chrono::steady_clock;
using memq::bench::percentile;

// Words drawn from a vocabulary of 4,096 made-up identifiers with a skewed (Zipf-like) frequency, so the text lanes
// see what real notes give them: a few common words and a long tail, not every note matching every query.
std::string word(uint32_t k) {
  static const char* const kSyllables[] = {"ra", "to", "mi", "ke", "su", "no", "la", "vi", "do", "pe", "zu", "ga",
                                           "fo", "ri", "ta", "mo"};
  std::string w;
  for (int i = 0; i < 3; ++i, k /= 16) w += kSyllables[k % 16];
  return w;
}

std::string words(std::mt19937& rng, int n) {
  std::string out;
  std::uniform_real_distribution<double> u(0.0, 1.0);
  for (int i = 0; i < n; ++i) {
    // Inverse of a power law over 4,096 ranks: rank 1 is the most frequent.
    const auto rank = static_cast<uint32_t>(std::pow(4096.0, u(rng))) - 1;
    out += (i ? " " : "") + word(rank);
  }
  return out;
}

std::string fileName(int f) { return "src/f" + std::to_string(f) + ".c"; }

// Line i of file f; `edit` changes every 50th line and inserts three lines at the top.
std::string fileText(int f, int lines, bool edit) {
  std::string out;
  if (edit) out += "/* moved */\n/* moved */\n/* moved */\n";
  for (int i = 1; i <= lines; ++i) {
    out += "int v" + std::to_string(f) + "_" + std::to_string(i) + " = " + std::to_string(i * 7 % 13);
    out += edit && i % 50 == 0 ? " + 1;\n" : ";\n";
  }
  return out;
}

struct Pass {
  std::vector<double> ms;
};

void print(const char* name, std::vector<double> v) {
  std::printf("%-34s p50 %7.3f ms  p95 %7.3f ms  p99 %7.3f ms\n", name, percentile(v, 0.5), percentile(v, 0.95),
              percentile(v, 0.99));
}

}  // namespace

int main(int argc, char** argv) {
  int n = 10000, files = 200, lines = 2000, queries = 200, repeat = 3;
  unsigned seed = 1;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&]() { return i + 1 < argc ? std::stoi(argv[++i]) : 0; };
    if (a == "--n") n = next();
    else if (a == "--files") files = next();
    else if (a == "--lines") lines = next();
    else if (a == "--queries") queries = next();
    else if (a == "--repeat") repeat = std::max(1, next());
    else if (a == "--seed") seed = static_cast<unsigned>(next());
    else {
      std::cerr << "usage: memq_bench_lines [--n N] [--files F] [--lines L] [--queries Q] [--repeat R] [--seed S]\n";
      return 2;
    }
  }
  std::mt19937 rng(seed);
  memq::testing::TempDir tmp;
  memq::testing::GitRepo repo(tmp.path() + "/project");
  std::map<std::string, std::string> tree;
  for (int f = 0; f < files; ++f) tree[fileName(f)] = fileText(f, lines, false);
  repo.commit(tree, "start");

  memq::HashbagEmbedder embedder;
  memq::ServiceOptions options;
  options.dataDir = tmp.path() + "/data";
  options.embedder = &embedder;
  options.repoFactory = [](const memq::ProjectLocation& loc) -> std::shared_ptr<memq::RepoSignals> {
    return std::make_shared<memq::GitRepoSignals>(loc);
  };
  memq::Service service(options);
  memq::ClientState client;
  memq::InitializeRequest init;
  init.clientName = "bench-lines";
  init.projectRoot = repo.dir();
  if (!service.initialize(client, init).isOk()) {
    std::cerr << "initialize failed\n";
    return 1;
  }
  auto ctx = service.context(client, {});
  if (!ctx.isOk()) return 1;

  auto randomRange = [&](int maxLen) {
    uint32_t len = 1 + rng() % static_cast<uint32_t>(maxLen);
    uint32_t first = 1 + rng() % static_cast<uint32_t>(lines - static_cast<int>(len));
    return memq::LineRange{first, first + len - 1};
  };
  auto t0 = Clock::now();
  int refused = 0;
  for (int i = 0; i < n; ++i) {
    memq::SaveInput in;
    in.summary = words(rng, 6) + " " + std::to_string(i);
    in.details = words(rng, 20);
    in.files = {memq::FileEntry(fileName(static_cast<int>(rng() % files)), memq::LineRanges{randomRange(30)})};
    if (!service.save(*ctx, in).isOk()) ++refused;
  }
  double saveSecs = std::chrono::duration<double>(Clock::now() - t0).count();
  std::printf("memories %d (refused %d), files %d of %d lines\n", n, refused, files, lines);
  std::printf("%-34s %.0f /s\n", "saves with anchors", n / saveSecs);

  struct Query {
    std::string text;
    std::string path;
    memq::LineRanges lines;
  };
  std::vector<Query> qs;
  for (int q = 0; q < queries; ++q) qs.push_back({words(rng, 4), fileName(static_cast<int>(rng() % files)), {randomRange(8)}});
  auto runPass = [&](bool shifted, bool withLines = true) {
    std::vector<double> out;
    for (const Query& q : qs) {
      memq::RecallRequest r;
      r.query = q.text;
      r.files = {q.path};
      memq::LineRanges l = q.lines;
      if (shifted) for (auto& range : l) range = {range.first + 3, range.last + 3};
      if (withLines) r.lines = {{q.path, l}};
      r.limit = 5;
      auto tq = Clock::now();
      auto hits = service.recall(*ctx, memq::RecallParams{r, /*markUsed=*/false});
      out.push_back(std::chrono::duration<double, std::milli>(Clock::now() - tq).count());
      if (!hits.isOk()) {
        std::cerr << hits.status().toString() << "\n";
        std::exit(1);
      }
    }
    return out;
  };
  print("recall with lines, first pass", runPass(false));
  std::vector<double> warm;
  for (int r = 0; r < repeat; ++r) {
    auto p = runPass(false);
    warm.insert(warm.end(), p.begin(), p.end());
  }
  print("recall with lines, warm", warm);
  warm.clear();
  for (int r = 0; r < repeat; ++r) {
    auto p = runPass(false, /*withLines=*/false);
    warm.insert(warm.end(), p.begin(), p.end());
  }
  print("recall of the files only, warm", warm);

  std::map<std::string, std::string> edited;
  for (int f = 0; f < files; ++f) edited[fileName(f)] = fileText(f, lines, true);
  repo.commit(edited, "edit every file");
  print("first recall after HEAD moves", runPass(true));
  warm.clear();
  for (int r = 0; r < repeat; ++r) {
    auto p = runPass(true);
    warm.insert(warm.end(), p.begin(), p.end());
  }
  print("recall with lines after the move, warm", warm);
  // The passes above ran within FileStamp::kSettleNs of the commit that rewrote every file, so each recall read the
  // files it names rather than trusting their stamps (an edit in the same clock tick would not show in them). The
  // same passes once the files have settled:
  std::this_thread::sleep_for(std::chrono::nanoseconds(memq::FileStamp::kSettleNs) + std::chrono::milliseconds(100));
  runPass(true);  // reads each file once more, now settled, so that the passes timed trust their stamps
  warm.clear();
  for (int r = 0; r < repeat; ++r) {
    auto p = runPass(true);
    warm.insert(warm.end(), p.begin(), p.end());
  }
  print("... the files settled, warm", warm);
  return 0;
}
