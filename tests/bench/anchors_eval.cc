// memq_bench_anchors: the line-anchor retrieval benchmark. For each query of a dataset (docs/anchors.md), the
// memories that share an edited file are ranked by line signals: each memory's anchors are carried with LineCarrier
// to the version of the file the query is in (one diff from the anchor's version, and, separately, along the chain
// of the file's versions the corpus records in between), then overlap, nearness and newest-wins ownership against
// the query's lines, with BM25 over summary+details to break ties or as a fused lane. Prints R@1/R@3/R@10/MRR@10
// per ranker and the latency of carrying per query.
//
// usage: memq_bench_anchors DATASET_DIR [--repo X.git] [--algorithm myers|minimal|patience] [--no-indent-heuristic]
//                           [--dump FILE]
//   DATASET_DIR holds corpus.jsonl, queries.jsonl and repo.bundle; without --repo the bundle is fetched into a
//   bare repository in a temporary directory, removed at exit.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include <nlohmann/json.hpp>

#include "daemon/anchors/line_carrier.h"
#include "daemon/anchors/line_signals.h"

namespace memq::bench {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

struct Anchor {
  std::string path;
  std::string blob;
  LineRanges lines;
};

struct Memory {
  std::string id;
  std::string text;  // summary + "\n" + details
  std::set<std::string> files;
  int64_t createdAt = 0;
  int split = 0;
  std::vector<Anchor> anchors;
};

struct Query {
  std::string text;
  std::vector<std::string> editedFiles;
  std::set<std::string> relevant;
  int64_t createdAt = 0;
  int split = 0;
  std::vector<Anchor> editedLines;  // the lines the fix changes, in the version it found
};

// Seconds since the epoch of an ISO-8601 time ("2018-06-20T16:32:36Z" or with a ±hh:mm offset).
int64_t parseTime(const std::string& s) {
  std::tm tm{};
  if (sscanf(s.c_str(), "%d-%d-%dT%d:%d:%d", &tm.tm_year, &tm.tm_mon, &tm.tm_mday, &tm.tm_hour, &tm.tm_min,
             &tm.tm_sec) != 6) {
    return 0;
  }
  tm.tm_year -= 1900;
  tm.tm_mon -= 1;
  int64_t t = timegm(&tm);
  if (s.size() > 19 && (s[19] == '+' || s[19] == '-')) {
    int h = 0, m = 0;
    sscanf(s.c_str() + 20, "%d:%d", &h, &m);
    t -= (s[19] == '+' ? 1 : -1) * (h * 3600 + m * 60);
  }
  return t;
}

LineRanges rangesOf(const nlohmann::json& lines) {
  LineRanges out;
  for (const auto& r : lines) out.push_back({r[0].get<uint32_t>(), r[1].get<uint32_t>()});
  return normalizeRanges(std::move(out));
}

std::vector<Anchor> anchorsOf(const nlohmann::json& list) {
  std::vector<Anchor> out;
  for (const auto& a : list) out.push_back({a["path"], a["blob"], rangesOf(a["lines"])});
  return out;
}

std::vector<nlohmann::json> readJsonLines(const std::string& path) {
  std::vector<nlohmann::json> out;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    if (!line.empty()) out.push_back(nlohmann::json::parse(line));
  }
  return out;
}

// ---- BM25 over summary+details (k1 1.2, b 0.75; idf as SQLite FTS5 computes it) ----

std::vector<std::string> tokens(const std::string& text) {
  std::vector<std::string> out;
  std::string cur;
  for (unsigned char c : text) {
    if (std::isalnum(c) || c >= 0x80) {
      cur += static_cast<char>(std::tolower(c));
    } else if (!cur.empty()) {
      out.push_back(std::move(cur));
      cur.clear();
    }
  }
  if (!cur.empty()) out.push_back(std::move(cur));
  return out;
}

class Bm25 {
 public:
  explicit Bm25(const std::vector<Memory>& docs) {
    double total = 0;
    for (const Memory& m : docs) {
      std::unordered_map<std::string, uint32_t> tf;
      const std::vector<std::string> t = tokens(m.text);
      for (const std::string& w : t) ++tf[w];
      for (const auto& [w, n] : tf) ++df_[w];
      lengths_.push_back(static_cast<double>(t.size()));
      total += static_cast<double>(t.size());
      tf_.push_back(std::move(tf));
    }
    avgLength_ = docs.empty() ? 1 : total / static_cast<double>(docs.size());
  }

  double score(const std::vector<std::string>& query, size_t doc) const {
    const double n = static_cast<double>(tf_.size());
    double s = 0;
    for (const std::string& w : query) {
      auto it = tf_[doc].find(w);
      if (it == tf_[doc].end()) continue;
      const double df = df_.at(w);
      const double idf = std::max(1e-6, std::log((n - df + 0.5) / (df + 0.5)));
      const double tf = it->second;
      s += idf * tf * (kK1 + 1) / (tf + kK1 * (1 - kB + kB * lengths_[doc] / avgLength_));
    }
    return s;
  }

 private:
  static constexpr double kK1 = 1.2;
  static constexpr double kB = 0.75;
  std::vector<std::unordered_map<std::string, uint32_t>> tf_;
  std::unordered_map<std::string, double> df_;
  std::vector<double> lengths_;
  double avgLength_ = 1;
};

// ---- ranking ----

// What one candidate memory has for one query.
struct Scored {
  size_t memory = 0;  // index in the corpus (history order: a larger index is newer)
  LineSignals lines;   // ownership: newest unchanged first
  uint32_t ownedNewest = 0;  // ownership by the newest covering anchor alone
  double bm25 = 0;           // of the query's first line (its subject)
  double bm25Text = 0;       // of the whole query text
};

using Ranker = std::function<std::vector<size_t>(const std::vector<Scored>&)>;

// Ranks of the candidates by `key` (higher first, ties newer first), only for those `has` admits; 0 = unranked.
std::vector<size_t> laneRanks(const std::vector<Scored>& c, const std::function<bool(const Scored&)>& has,
                              const std::function<double(const Scored&)>& key) {
  std::vector<size_t> order;
  for (size_t i = 0; i < c.size(); ++i) {
    if (has(c[i])) order.push_back(i);
  }
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    const double ka = key(c[a]), kb = key(c[b]);
    return ka != kb ? ka > kb : c[a].memory > c[b].memory;
  });
  std::vector<size_t> rank(c.size(), 0);
  for (size_t r = 0; r < order.size(); ++r) rank[order[r]] = r + 1;
  return rank;
}

enum Lane { kOwned, kOverlap, kNear, kText };

std::vector<size_t> laneRanks(const std::vector<Scored>& c, Lane lane) {
  switch (lane) {
    case kOwned:
      return laneRanks(c, [](const Scored& s) { return s.lines.owned > 0; },
                       [](const Scored& s) { return s.lines.owned; });
    case kOverlap:
      return laneRanks(c, [](const Scored& s) { return s.lines.overlap > 0; },
                       [](const Scored& s) { return s.lines.overlap; });
    case kNear:
      return laneRanks(c, [](const Scored& s) { return s.lines.distance.has_value(); },
                       [](const Scored& s) { return -static_cast<double>(*s.lines.distance); });
    case kText:
      return laneRanks(c, [](const Scored& s) { return s.bm25 > 0; }, [](const Scored& s) { return s.bm25; });
  }
  return {};
}

// Reciprocal rank fusion of the lanes with weights; ties newer first.
Ranker rrf(std::vector<std::pair<Lane, double>> lanes, double k) {
  return [lanes, k](const std::vector<Scored>& c) {
    std::vector<double> score(c.size(), 0);
    for (const auto& [lane, weight] : lanes) {
      const std::vector<size_t> rank = laneRanks(c, lane);
      for (size_t i = 0; i < c.size(); ++i) {
        if (rank[i] != 0) score[i] += weight / (k + static_cast<double>(rank[i]));
      }
    }
    std::vector<size_t> order(c.size());
    for (size_t i = 0; i < c.size(); ++i) order[i] = i;
    std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
      return score[a] != score[b] ? score[a] > score[b] : c[a].memory > c[b].memory;
    });
    return order;
  };
}

// The shape of memq's default ranker (a sum of bounded terms, bm25 divided by the best candidate's) with the line
// terms added: text + subject + wOwned·owned/best + wOverlap·overlap/best + wNear·1/(1 + distance/10), the last only
// for a candidate that overlaps nothing.
Ranker weightedSum(double wOwned, double wOverlap, double wNear) {
  return [=](const std::vector<Scored>& c) {
    double bestOwned = 0, bestOverlap = 0, bestText = 0, bestSubject = 0;
    for (const Scored& s : c) {
      bestOwned = std::max(bestOwned, static_cast<double>(s.lines.owned));
      bestOverlap = std::max(bestOverlap, static_cast<double>(s.lines.overlap));
      bestText = std::max(bestText, s.bm25Text);
      bestSubject = std::max(bestSubject, s.bm25);
    }
    auto share = [](double v, double best) { return best > 0 ? v / best : 0.0; };
    std::vector<double> score(c.size());
    for (size_t i = 0; i < c.size(); ++i) {
      const Scored& s = c[i];
      score[i] = share(s.bm25Text, bestText) + share(s.bm25, bestSubject) +
                 wOwned * share(s.lines.owned, bestOwned) + wOverlap * share(s.lines.overlap, bestOverlap);
      if (s.lines.overlap == 0 && s.lines.distance) score[i] += wNear / (1 + *s.lines.distance / 10.0);
    }
    std::vector<size_t> order(c.size());
    for (size_t i = 0; i < c.size(); ++i) order[i] = i;
    std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
      return score[a] != score[b] ? score[a] > score[b] : c[a].memory > c[b].memory;
    });
    return order;
  };
}

// Sorted by a tuple of keys (each higher first), then newer first.
Ranker lexicographic(std::function<std::vector<double>(const Scored&)> keys) {
  return [keys](const std::vector<Scored>& c) {
    std::vector<size_t> order(c.size());
    for (size_t i = 0; i < c.size(); ++i) order[i] = i;
    std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
      const std::vector<double> ka = keys(c[a]), kb = keys(c[b]);
      return ka != kb ? ka > kb : c[a].memory > c[b].memory;
    });
    return order;
  };
}

struct Metrics {
  double r1 = 0, r3 = 0, r10 = 0, mrr = 0;
  size_t n = 0;
  void add(const std::vector<std::string>& ranked, const std::set<std::string>& relevant) {
    auto recallAt = [&](size_t k) {
      size_t hit = 0;
      for (size_t i = 0; i < std::min(k, ranked.size()); ++i) hit += relevant.count(ranked[i]);
      return relevant.empty() ? 0.0 : static_cast<double>(hit) / static_cast<double>(relevant.size());
    };
    r1 += recallAt(1);
    r3 += recallAt(3);
    r10 += recallAt(10);
    for (size_t i = 0; i < std::min<size_t>(10, ranked.size()); ++i) {
      if (relevant.count(ranked[i])) {
        mrr += 1.0 / static_cast<double>(i + 1);
        break;
      }
    }
    ++n;
  }
};

double percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(p * static_cast<double>(v.size() - 1) + 0.5))];
}

double msSince(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

int run(int argc, char** argv) {
  if (argc < 2) {
    fprintf(stderr,
            "usage: memq_bench_anchors DATASET_DIR [--repo X.git] [--algorithm myers|minimal|patience] "
            "[--no-indent-heuristic] [--dump FILE]\n");
    return 2;
  }
  const std::string dataset = argv[1];
  std::string repo;
  std::string dumpPath;  // one JSON line per query: every candidate's signals per carry mode
  LineCarrier::Options options;
  options.cacheEntries = 1 << 16;
  for (int i = 2; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--repo" && i + 1 < argc) {
      repo = argv[++i];
    } else if (a == "--algorithm" && i + 1 < argc) {
      const std::string v = argv[++i];
      options.algorithm = v == "minimal"    ? DiffAlgorithm::kMinimal
                          : v == "patience" ? DiffAlgorithm::kPatience
                                            : DiffAlgorithm::kMyers;
    } else if (a == "--dump" && i + 1 < argc) {
      dumpPath = argv[++i];
    } else if (a == "--no-indent-heuristic") {
      options.indentHeuristic = false;
    } else {
      fprintf(stderr, "unknown argument %s\n", a.c_str());
      return 2;
    }
  }

  std::string tempDir;
  if (repo.empty()) {
    std::string tmpl = (fs::temp_directory_path() / "memq-bench-anchors-XXXXXX").string();
    if (mkdtemp(tmpl.data()) == nullptr) return 1;
    tempDir = tmpl;
    repo = tempDir + "/repo.git";
    const std::string cmd = "git init -q --bare '" + repo + "' && git --git-dir='" + repo + "' fetch -q '" +
                            dataset + "/repo.bundle' 'refs/*:refs/*'";
    if (std::system(cmd.c_str()) != 0) {
      fprintf(stderr, "could not fetch %s/repo.bundle\n", dataset.c_str());
      return 1;
    }
  }

  std::vector<Memory> corpus;
  for (const nlohmann::json& j : readJsonLines(dataset + "/corpus.jsonl")) {
    Memory m;
    m.id = j["id"];
    m.text = j.value("summary", "") + "\n" + j.value("details", "");
    for (const auto& f : j["files"]) m.files.insert(f.get<std::string>());
    m.createdAt = parseTime(j.value("created_at", ""));
    m.split = j.value("split", 0);
    m.anchors = anchorsOf(j.value("anchors", nlohmann::json::array()));
    corpus.push_back(std::move(m));
  }
  std::vector<Query> queries;
  for (const nlohmann::json& j : readJsonLines(dataset + "/queries.jsonl")) {
    Query q;
    q.text = j["text"];
    for (const auto& f : j["edited_files"]) q.editedFiles.push_back(f);
    for (const auto& r : j["relevant"]) q.relevant.insert(r.get<std::string>());
    q.createdAt = parseTime(j.value("created_at", ""));
    q.split = j.value("split", 0);
    q.editedLines = anchorsOf(j.value("edited_lines", nlohmann::json::array()));
    queries.push_back(std::move(q));
  }
  const Bm25 bm25(corpus);
  std::unordered_map<std::string, std::vector<size_t>> byFile;  // path -> memories naming it, in history order
  for (size_t i = 0; i < corpus.size(); ++i) {
    std::set<std::string> paths = corpus[i].files;
    for (const Anchor& a : corpus[i].anchors) paths.insert(a.path);
    for (const std::string& p : paths) byFile[p].push_back(i);
  }

  Result<std::unique_ptr<LineCarrier>> opened = LineCarrier::open(repo, options);
  if (!opened) {
    fprintf(stderr, "%s\n", opened.status().toString().c_str());
    return 1;
  }
  LineCarrier& carrier = **opened;
  git_repository* rawHead = nullptr;
  if (git_repository_open_bare(&rawHead, repo.c_str()) != 0) {
    fprintf(stderr, "cannot open %s\n", repo.c_str());
    return 1;
  }
  const RepositoryPtr headRepository(rawHead);

  const std::vector<std::pair<std::string, Ranker>> rankers = {
      {"overlap, then BM25", lexicographic([](const Scored& s) {
         return std::vector<double>{static_cast<double>(s.lines.overlap), s.bm25};
       })},
      {"owned (newest covering), overlap, BM25", lexicographic([](const Scored& s) {
         return std::vector<double>{static_cast<double>(s.ownedNewest), static_cast<double>(s.lines.overlap),
                                    s.bm25};
       })},
      {"owned, overlap, then BM25", lexicographic([](const Scored& s) {
         return std::vector<double>{static_cast<double>(s.lines.owned), static_cast<double>(s.lines.overlap),
                                    s.bm25};
       })},
      {"RRF(owned, overlap, BM25) k=60", rrf({{kOwned, 1}, {kOverlap, 1}, {kText, 1}}, 60)},
      {"RRF(owned, overlap, near, BM25) k=60", rrf({{kOwned, 1}, {kOverlap, 1}, {kNear, 1}, {kText, 1}}, 60)},
      {"RRF(owned, overlap, near, BM25) k=10", rrf({{kOwned, 1}, {kOverlap, 1}, {kNear, 1}, {kText, 1}}, 10)},
      {"RRF(owned x2, overlap, near, BM25) k=10",
       rrf({{kOwned, 2}, {kOverlap, 1}, {kNear, 1}, {kText, 1}}, 10)},
      {"text only (BM25 text + subject)", weightedSum(0, 0, 0)},
      {"text + subject + 4 owned + overlap + .5 near", weightedSum(4, 1, 0.5)},
  };
  // kSingle: one diff, anchor version -> query version. kChain: through every later version the corpus records on
  // the path, in history order. kHead: anchor version -> the file at the split's head -> query version, as a daemon
  // that keeps anchors carried to HEAD would do, diffing only HEAD -> work tree at recall. kHeads: through the head
  // of every split from the memory's own to the query's, as such a daemon would carry its anchors each time HEAD
  // moved (the same as kHead on a set with one split).
  enum Carry { kSingle, kChain, kHead, kHeads, kModes };
  const char* carryName[] = {"one diff", "chain", "via head", "via heads"};
  std::vector<std::vector<Metrics>> metrics(kModes, std::vector<Metrics>(rankers.size()));
  std::vector<double> coldSingleMs, warmSingleMs, chainMs, headMs;
  CarryCounts outcomes[kModes];
  size_t failures[kModes] = {};
  std::string firstFailure;
  std::map<std::pair<int, std::string>, std::string> headBlobs;  // (split, path) -> blob id at the split's head
  auto headBlob = [&](int split, const std::string& path) -> const std::string& {
    auto [it, inserted] = headBlobs.try_emplace({split, path});
    if (inserted) {
      const std::string spec = "refs/heads/split-" + std::to_string(split) + ":" + path;
      git_object* obj = nullptr;
      if (git_revparse_single(&obj, headRepository.get(), spec.c_str()) == 0) {
        if (git_object_type(obj) == GIT_OBJECT_BLOB) it->second = oidHex(*git_object_id(obj));
        git_object_free(obj);
      }
    }
    return it->second;
  };
  std::ofstream dump;
  if (!dumpPath.empty()) dump.open(dumpPath);
  size_t carries = 0, candidatesTotal = 0;

  for (const Query& q : queries) {
    // The pool: memories of this split or before, made before the query; candidates share an edited file.
    std::set<size_t> candidateSet;
    std::set<std::string> paths(q.editedFiles.begin(), q.editedFiles.end());
    for (const Anchor& e : q.editedLines) paths.insert(e.path);
    auto inPool = [&](size_t i) { return corpus[i].split <= q.split && corpus[i].createdAt <= q.createdAt; };
    for (const std::string& p : paths) {
      auto it = byFile.find(p);
      if (it == byFile.end()) continue;
      for (size_t i : it->second) {
        if (inPool(i)) candidateSet.insert(i);
      }
    }
    const std::vector<size_t> candidates(candidateSet.begin(), candidateSet.end());
    candidatesTotal += candidates.size();
    std::vector<QueryLines> queryLines;
    for (const Anchor& e : q.editedLines) queryLines.push_back({e.path, e.lines});
    const std::vector<std::string> queryTokens = tokens(q.text.substr(0, q.text.find('\n')));
    const std::vector<std::string> textTokens = tokens(q.text);

    nlohmann::json dumped{{"relevant", q.relevant}, {"split", q.split}, {"modes", nlohmann::json::array()}};
    for (int mode : {kSingle, kChain, kHead, kHeads}) {
      std::vector<LineCandidate> lineCandidates(candidates.size());
      carrier.clearCache();
      if (mode == kHead) {
        // What the daemon would hold already: each anchor's diff to the head version (not timed).
        for (const Anchor& e : q.editedLines) {
          const std::string& head = headBlob(q.split, e.path);
          if (head.empty()) continue;
          for (size_t i : byFile[e.path]) {
            if (!inPool(i)) continue;
            for (const Anchor& a : corpus[i].anchors) {
              if (a.path == e.path) (void)carrier.diff(FileVersion::blob(a.blob), FileVersion::blob(head));
            }
          }
        }
      }
      for (int pass = 0; pass < (mode == kSingle ? 2 : 1); ++pass) {
        const Clock::time_point start = Clock::now();
        for (const Anchor& e : q.editedLines) {
          // The versions of this file the pool's memories left behind, in history order: the chain's steps.
          std::vector<std::pair<size_t, const Anchor*>> versions;
          for (size_t i : byFile[e.path]) {
            if (!inPool(i)) continue;
            for (const Anchor& a : corpus[i].anchors) {
              if (a.path == e.path) versions.emplace_back(i, &a);
            }
          }
          for (size_t v = 0; v < versions.size(); ++v) {
            const auto [memory, anchor] = versions[v];
            std::vector<FileVersion> chain{FileVersion::blob(anchor->blob)};
            if (mode == kChain) {
              for (size_t w = v + 1; w < versions.size(); ++w) {
                if (versions[w].second->blob != chain.back().id()) {
                  chain.push_back(FileVersion::blob(versions[w].second->blob));
                }
              }
            } else if (mode == kHead || mode == kHeads) {
              for (int split = mode == kHead ? q.split : corpus[memory].split; split <= q.split; ++split) {
                const std::string& head = headBlob(split, e.path);
                if (!head.empty() && head != chain.back().id()) chain.push_back(FileVersion::blob(head));
              }
            }
            if (e.blob != chain.back().id()) chain.push_back(FileVersion::blob(e.blob));
            Result<CarriedLines> carried = carrier.carryAlong(anchor->lines, chain);
            if (pass > 0) continue;
            ++carries;
            if (!carried) {
              if (firstFailure.empty()) firstFailure = carried.status().toString();
              ++failures[mode];
              continue;
            }
            outcomes[mode].shifted += carried->counts.shifted;
            outcomes[mode].rewritten += carried->counts.rewritten;
            outcomes[mode].deleted += carried->counts.deleted;
            const size_t c = static_cast<size_t>(
                std::lower_bound(candidates.begin(), candidates.end(), memory) - candidates.begin());
            lineCandidates[c].anchors.push_back({e.path, std::move(carried->lines), std::move(carried->unchanged)});
          }
        }
        const double ms = msSince(start);
        if (mode == kChain) {
          chainMs.push_back(ms);
        } else if (mode == kHead) {
          headMs.push_back(ms);
        } else if (mode == kHeads) {
          // Not timed: the steps between heads are the daemon's work when HEAD moves, not recall's.
        } else {
          (pass == 0 ? coldSingleMs : warmSingleMs).push_back(ms);
        }
      }
      for (size_t c = 0; c < candidates.size(); ++c) lineCandidates[c].anchoredAt = corpus[candidates[c]].createdAt;
      const std::vector<LineSignals> signals = computeLineSignals(queryLines, lineCandidates);
      const std::vector<LineSignals> newest = computeLineSignals(queryLines, lineCandidates, Ownership::kNewest);
      std::vector<Scored> scored(candidates.size());
      for (size_t c = 0; c < candidates.size(); ++c) {
        scored[c] = {candidates[c], signals[c], newest[c].owned, bm25.score(queryTokens, candidates[c]),
                     bm25.score(textTokens, candidates[c])};
      }
      if (dump.is_open()) {
        nlohmann::json rows = nlohmann::json::array();
        for (const Scored& sc : scored) {
          rows.push_back({corpus[sc.memory].id, sc.memory, corpus[sc.memory].createdAt, sc.lines.overlap,
                          sc.lines.owned, sc.lines.distance ? static_cast<int64_t>(*sc.lines.distance) : -1,
                          sc.bm25, sc.ownedNewest, sc.bm25Text});
        }
        dumped["modes"].push_back(std::move(rows));
      }
      for (size_t r = 0; r < rankers.size(); ++r) {
        std::vector<std::string> ids;
        for (size_t i : rankers[r].second(scored)) {
          ids.push_back(corpus[scored[i].memory].id);
          if (ids.size() == 10) break;
        }
        metrics[mode][r].add(ids, q.relevant);
      }
    }
    if (dump.is_open()) dump << dumped.dump() << "\n";
  }

  const char* algorithm = options.algorithm == DiffAlgorithm::kMinimal    ? "minimal"
                          : options.algorithm == DiffAlgorithm::kPatience ? "patience"
                                                                          : "myers";
  printf("%s: queries %zu, memories %zu, candidates per query %.1f, anchor carries %zu; diff %s%s\n",
         fs::path(dataset).filename().c_str(), queries.size(), corpus.size(),
         queries.empty() ? 0.0 : static_cast<double>(candidatesTotal) / static_cast<double>(queries.size()),
         carries / kModes, algorithm, options.indentHeuristic ? " + indent heuristic" : "");
  printf("%-9s %-46s %6s %6s %6s %7s\n", "carry", "ranker", "R@1", "R@3", "R@10", "MRR@10");
  for (int mode : {kSingle, kChain, kHead, kHeads}) {
    for (size_t r = 0; r < rankers.size(); ++r) {
      const Metrics& m = metrics[mode][r];
      const double n = m.n == 0 ? 1 : static_cast<double>(m.n);
      printf("%-9s %-46s %6.3f %6.3f %6.3f %7.3f\n", carryName[mode], rankers[r].first.c_str(), m.r1 / n,
             m.r3 / n, m.r10 / n, m.mrr / n);
    }
  }
  for (int mode : {kSingle, kChain, kHead, kHeads}) {
    printf("outcomes (%s): lines shifted %llu, rewritten %llu, deleted %llu; carries refused %zu\n",
           carryName[mode], static_cast<unsigned long long>(outcomes[mode].shifted),
           static_cast<unsigned long long>(outcomes[mode].rewritten),
           static_cast<unsigned long long>(outcomes[mode].deleted), failures[mode]);
  }
  printf("carrying per query (ms): one diff, empty cache p50 %.2f p95 %.2f; cached p50 %.3f p95 %.3f; "
         "chain, empty cache p50 %.2f p95 %.2f\n",
         percentile(coldSingleMs, 0.5), percentile(coldSingleMs, 0.95), percentile(warmSingleMs, 0.5),
         percentile(warmSingleMs, 0.95), percentile(chainMs, 0.5), percentile(chainMs, 0.95));
  printf("carrying per query (ms), via head with the anchors' diffs to head held: p50 %.2f p95 %.2f\n",
         percentile(headMs, 0.5), percentile(headMs, 0.95));
  if (!firstFailure.empty()) printf("first refused carry: %s\n", firstFailure.c_str());
  if (!tempDir.empty()) {
    std::error_code ec;
    fs::remove_all(tempDir, ec);
  }
  return 0;
}

}  // namespace
}  // namespace memq::bench

int main(int argc, char** argv) { return memq::bench::run(argc, argv); }
