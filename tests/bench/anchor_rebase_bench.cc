// The first recall after HEAD moves, with and without the anchors re-based to HEAD (docs/anchors.md, "Re-basing to
// HEAD"): a real repository with one long file edited over many commits, memories anchored in each version, then
// HEAD moved by one more commit. Prints, per round, the milliseconds of the re-base itself (done by housekeeping
// in the daemon, off the request path), of the first recall after the move, of the next one (the carrier's cache
// warm), and of the first recall after an uncommitted edit. Not a test: it prints figures.
//
//   memq_bench_anchor_rebase [--lines N] [--memories N] [--versions N] [--rounds N]
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "daemon/embed/hashbag.h"
#include "daemon/git/git_repo_signals.h"
#include "daemon/service/anchor_rebase.h"
#include "daemon/service/service.h"
#include "unit/git/git_fixture.h"

namespace memq {
namespace {

using Clock = std::chrono::steady_clock;

double msSince(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

struct Options {
  int lines = 20000;
  int memories = 200;
  int versions = 40;
  int rounds = 3;
};

// The file as a list of lines that edits change in place; written out whole.
struct File {
  std::vector<std::string> lines;
  int edits = 0;
  std::string text() const {
    std::string out;
    for (const auto& l : lines) out += l + "\n";
    return out;
  }
  // A few lines inserted at one place and a couple rewritten at others, as a commit of a busy file does.
  void edit(std::mt19937& rng) {
    ++edits;
    std::uniform_int_distribution<size_t> at(0, lines.size() - 1);
    const size_t insertAt = at(rng);
    for (int i = 0; i < 3; ++i) {
      lines.insert(lines.begin() + static_cast<long>(insertAt),
                   "inserted by edit " + std::to_string(edits) + " line " + std::to_string(i));
    }
    for (int i = 0; i < 2; ++i) lines[at(rng)] = "rewritten by edit " + std::to_string(edits) + " " + std::to_string(i);
  }
};

class Bench {
 public:
  explicit Bench(Options options) : options_(options), repo_(tmp_.path() + "/project"), rng_(7) {}

  int run() {
    for (int i = 1; i <= options_.lines; ++i) file_.lines.push_back("original line " + std::to_string(i));
    repo_.commit({{"src/big.c", file_.text()}}, "start");
    ServiceOptions so;
    so.dataDir = tmp_.path() + "/data";
    so.embedder = &embedder_;
    so.repoFactory = [](const ProjectLocation& loc) -> std::shared_ptr<RepoSignals> {
      return std::make_shared<GitRepoSignals>(loc);
    };
    service_ = std::make_unique<Service>(so);
    InitializeRequest init;
    init.clientName = "anchor-rebase-bench";
    init.projectRoot = repo_.dir();
    if (!service_->initialize(client_, init).isOk()) return fail("initialize");
    if (!seed()) return 1;
    auto scope = service_->scopes().project(repo_.dir());
    if (!scope.isOk()) return fail("scope");
    std::printf("%d lines, %d memories anchored in %d versions; ms per step\n", options_.lines, options_.memories,
                options_.versions);
    std::printf("%-10s %5s %10s %14s %12s %16s\n", "re-based", "round", "re-base", "first recall", "next recall",
                "after an edit");
    for (int round = 1; round <= options_.rounds; ++round) {
      for (bool rebased : {false, true}) {
        moveHead();
        double rebaseMs = 0;
        if (rebased) {
          AnchorRebase r = rebaseAnchorsToHead(**scope);
          rebaseMs = r.elapsedMs;
        }
        const double first = timedRecall();
        const double next = timedRecall();
        file_.edit(rng_);  // uncommitted
        repo_.write("src/big.c", file_.text());
        const double afterEdit = timedRecall();
        std::printf("%-10s %5d %10.1f %14.1f %12.1f %16.1f\n", rebased ? "yes" : "no", round, rebaseMs, first, next,
                    afterEdit);
      }
    }
    return 0;
  }

 private:
  int fail(const std::string& what) {
    std::fprintf(stderr, "anchor rebase bench: %s failed\n", what.c_str());
    return 1;
  }

  CallContext ctx() { return *service_->context(client_, {}); }

  // Memories anchored across `versions` committed versions of the file.
  bool seed() {
    const int perVersion = std::max(1, options_.memories / options_.versions);
    int saved = 0;
    for (int v = 0; v < options_.versions && saved < options_.memories; ++v) {
      file_.edit(rng_);
      repo_.commit({{"src/big.c", file_.text()}}, "edit " + std::to_string(v));
      for (int m = 0; m < perVersion && saved < options_.memories; ++m, ++saved) {
        std::uniform_int_distribution<uint32_t> at(1, static_cast<uint32_t>(file_.lines.size()) - 20);
        const uint32_t first = at(rng_);
        SaveInput in;
        in.summary = "memory " + std::to_string(saved) + " about the big file";
        in.files = {FileEntry("src/big.c", LineRanges{{first, first + 15}})};
        if (!service_->save(ctx(), in).isOk()) return fail("save") == 0;
      }
    }
    return true;
  }

  void moveHead() {
    file_.edit(rng_);
    repo_.commit({{"src/big.c", file_.text()}}, "head moves");
  }

  double timedRecall() {
    RecallRequest request;
    request.files = {"src/big.c"};
    request.lines = {{"src/big.c", LineRanges{{100, 140}}}};
    request.limit = 10;
    request.threshold = 0;
    const auto start = Clock::now();
    auto hits = service_->recall(ctx(), RecallParams{request, /*markUsed=*/false});
    const double ms = msSince(start);
    if (!hits.isOk()) std::fprintf(stderr, "recall failed: %s\n", hits.status().message().c_str());
    return ms;
  }

  Options options_;
  testing::TempDir tmp_;
  testing::GitRepo repo_;
  std::mt19937 rng_;
  File file_;
  HashbagEmbedder embedder_;
  std::unique_ptr<Service> service_;
  ClientState client_;
};

}  // namespace
}  // namespace memq

int main(int argc, char** argv) {
  memq::Options options;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    const int value = std::atoi(argv[i + 1]);
    if (flag == "--lines") options.lines = value;
    else if (flag == "--memories") options.memories = value;
    else if (flag == "--versions") options.versions = value;
    else if (flag == "--rounds") options.rounds = value;
    else {
      std::fprintf(stderr, "usage: %s [--lines N] [--memories N] [--versions N] [--rounds N]\n", argv[0]);
      return 2;
    }
  }
  if (options.lines < 100 || options.memories < 1 || options.versions < 1 || options.rounds < 1) {
    std::fprintf(stderr, "--lines must be at least 100, the others at least 1\n");
    return 2;
  }
  return memq::Bench(options).run();
}
