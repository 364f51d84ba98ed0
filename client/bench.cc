// memq bench: the measurements that are part of the product (docs/design.md §10).
//
// `memq bench retrieval --dataset DIR`: the retrieval benchmark (a dataset of
// memories and queries from real git history, see docs/ranking.md). It builds a real
// git repository from corpus.jsonl with `git fast-import` (one commit per memory, a branch split-<k> at the end of
// each split), starts an isolated memqd (temp socket, temp data dir), and for each split k: checks out split-<k> as
// the project root, saves that split's memories through the socket (JSON-RPC batches), refreshes the repository
// signals, and runs the split's queries as memory/recall {query, files} for every requested ranker. A query scores a
// hit when the memory its relevant commit's text landed on (after content-hash dedup) is returned.
//
// `memq bench load [--n 1000,10000,100000] [--clients N] [--dataset DIR] [--json]`: the load workload
// (--dataset DIR, default $MEMQ_BENCH_DIR/load; docs/performance.md has the reference's figures beside memq's). For each N: an isolated memqd (temp socket, temp
// data dir, a project root outside git), lines 0..N-1 of memories.jsonl.xz saved one at a time in file order through
// the socket (spread over N connections with --clients), then the 210 queries of queries.jsonl (the first 10 are
// warm-up) as memory/recall {query, files, limit 3, threshold 0.01}. Prints save throughput, per-save latency, recall
// p50/p95/p99, memqd's peak RSS (VmHWM) and the database size (db + wal).
#include <cstdlib>
#include <optional>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <sstream>
#include <thread>

#include "client/args.h"
#include "client/commands.h"
#include "protocol/envelope.h"

namespace memq::cli {

namespace {

using json = nlohmann::json;
namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

// The files a memory/recall may name (maxItems of schema/methods/memory.recall.json); a query's edited files are
// passed through up to this bound, so recalls see the whole change rather than its first few files.
constexpr size_t kMaxRecallFiles = 256;

struct Corpus {
  std::vector<json> memories;
  std::vector<json> queries;
  int splits = 1;
};

Result<std::vector<json>> readJsonl(const fs::path& path) {
  std::ifstream in(path);
  if (!in) return Status::invalidField("dataset", "cannot read " + path.string());
  std::vector<json> out;
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    auto j = json::parse(line, nullptr, false);
    if (j.is_discarded()) return Status::invalidField("dataset", "bad JSON line in " + path.string());
    out.push_back(std::move(j));
  }
  return out;
}

int64_t epochOf(const std::string& iso) {
  std::tm tm{};
  if (std::sscanf(iso.c_str(), "%d-%d-%dT%d:%d:%d", &tm.tm_year, &tm.tm_mon, &tm.tm_mday, &tm.tm_hour, &tm.tm_min,
                  &tm.tm_sec) < 6) {
    return 0;
  }
  tm.tm_year -= 1900;
  tm.tm_mon -= 1;
  return static_cast<int64_t>(timegm(&tm));
}

// Paths fast-import cannot take inline without quoting are left out (none in the shipped sets).
bool plainPath(const std::string& p) {
  return !p.empty() && p.find('\n') == std::string::npos && p.find('"') == std::string::npos && p[0] != ' ';
}

// The dataset's real history (repo.bundle: every branch split-<k>, and refs/bench/query-files holding the blobs
// queries name) as a repository with a work tree at `repo`.
Status cloneBundle(const fs::path& repo, const fs::path& bundle) {
  fs::create_directories(repo);
  const std::string git = "git -C '" + repo.string() + "' ";
  if (std::system(("git -c init.defaultBranch=main init -q '" + repo.string() + "'").c_str()) != 0 ||
      std::system((git + "fetch -q --update-head-ok '" + bundle.string() + "' 'refs/*:refs/*'").c_str()) != 0) {
    return Status(ErrorCode::kGitError, "cannot fetch " + bundle.string() + " into a repository (is git installed?)");
  }
  return Status::ok();
}

// Puts the version `blob` of `path` in the work tree, as the agent working on a query has it.
bool writeBlobToWorkTree(const fs::path& repo, const std::string& path, const std::string& blob) {
  fs::create_directories((repo / path).parent_path());
  const std::string cmd = "git -C '" + repo.string() + "' cat-file blob " + blob + " > '" + (repo / path).string() + "'";
  return std::system(cmd.c_str()) == 0;
}

// Puts `path` back as the checked-out commit has it (or removes it when that commit has no such file).
void restoreWorkTreeFile(const fs::path& repo, const std::string& path) {
  const std::string cmd = "git -C '" + repo.string() + "' checkout -q HEAD -- '" + path + "' 2>/dev/null";
  if (std::system(cmd.c_str()) != 0) fs::remove(repo / path);
}

Status buildRepository(const fs::path& repo, const Corpus& corpus) {
  fs::create_directories(repo);
  std::string init = "git -c init.defaultBranch=main init -q '" + repo.string() + "'";
  if (std::system(init.c_str()) != 0) return Status(ErrorCode::kGitError, "git init failed (is git installed?)");
  std::string cmd = "git -C '" + repo.string() + "' fast-import --quiet --done";
  FILE* p = popen(cmd.c_str(), "w");
  if (!p) return Status(ErrorCode::kGitError, "cannot run git fast-import");
  std::map<int, size_t> lastOfSplit;
  for (size_t i = 0; i < corpus.memories.size(); ++i) lastOfSplit[corpus.memories[i].value("split", 0)] = i + 1;
  for (size_t i = 0; i < corpus.memories.size(); ++i) {
    const json& m = corpus.memories[i];
    std::string message = m.value("summary", "") + "\n";
    std::string out = "commit refs/heads/main\nmark :" + std::to_string(i + 1) + "\ncommitter bench <bench@memq> " +
                      std::to_string(epochOf(m.value("created_at", ""))) + " +0000\ndata " +
                      std::to_string(message.size()) + "\n" + message;
    if (i > 0) out += "from :" + std::to_string(i) + "\n";
    const std::string content = m.value("id", "") + "\n";
    for (const auto& f : m.value("files", json::array())) {
      std::string path = f.get<std::string>();
      if (!plainPath(path)) continue;
      out += "M 100644 inline " + path + "\ndata " + std::to_string(content.size()) + "\n" + content;
    }
    out += "\n";
    std::fwrite(out.data(), 1, out.size(), p);
  }
  for (const auto& [split, last] : lastOfSplit) {
    std::string out = "reset refs/heads/split-" + std::to_string(split) + "\nfrom :" + std::to_string(last) + "\n\n";
    std::fwrite(out.data(), 1, out.size(), p);
  }
  std::fputs("done\n", p);
  int rc = pclose(p);
  if (rc != 0) return Status(ErrorCode::kGitError, "git fast-import failed");
  return Status::ok();
}

struct RankerRun {
  std::string ranker;
  bool semantic = true;
  bool lines = false;  // recall gets the query's edited lines (--lines), not only its files
  double r1 = 0, r3 = 0, r10 = 0, mrr = 0;
  std::vector<double> latencies;
  int queries = 0;
};

double percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(p * (v.size() - 1) + 0.5))];
}

class Daemon {
 public:
  Status start(const fs::path& dir) {
    socket_ = (dir / "memqd.sock").string();
    std::string bin = memqdPath();
    pid_ = ::fork();
    if (pid_ == 0) {
      std::string data = (dir / "data").string(), log = (dir / "memqd.log").string();
      std::string level = "warn";
      char* argv[] = {bin.data(), const_cast<char*>("--foreground"), const_cast<char*>("--socket"), socket_.data(),
                      const_cast<char*>("--data-dir"), data.data(), const_cast<char*>("--log-file"), log.data(),
                      const_cast<char*>("--log-level"), level.data(), nullptr};
      ::execvp(bin.c_str(), argv);
      std::_Exit(127);
    }
    for (int i = 0; i < 250; ++i) {
      if (RpcClient::connect(socket_, std::chrono::milliseconds(100))) return Status::ok();
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return Status(ErrorCode::kInternalError, "the benchmark's memqd did not start");
  }
  ~Daemon() { stop(); }
  // SIGTERM (a no-op for a daemon that already exited after daemon/shutdown) and reap it.
  void stop() {
    if (pid_ > 0) {
      ::kill(pid_, SIGTERM);
      int status;
      ::waitpid(pid_, &status, 0);
      pid_ = -1;
    }
  }
  const std::string& socket() const { return socket_; }
  pid_t pid() const { return pid_; }

 private:
  std::string socket_;
  pid_t pid_ = -1;
};


// --- memq bench load ---

// Lines of the workload, read from `xz -dc` (or cat, for an uncompressed file).
class LineReader {
 public:
  explicit LineReader(const fs::path& path) {
    std::string cmd = (path.extension() == ".xz" ? "xz -dc '" : "cat '") + path.string() + "' 2>/dev/null";
    pipe_ = popen(cmd.c_str(), "r");
  }
  ~LineReader() {
    if (pipe_) pclose(pipe_);
  }
  bool next(std::string& line) {
    line.clear();
    if (!pipe_) return false;
    char buf[1 << 16];
    while (std::fgets(buf, sizeof buf, pipe_)) {
      line += buf;
      if (!line.empty() && line.back() == '\n') {
        line.pop_back();
        return true;
      }
    }
    return !line.empty();
  }

 private:
  FILE* pipe_ = nullptr;
};

// The files a retrieval memory names, at most 16 (the protocol's bound): a change that touched more keeps the files
// it wrote the most lines in (its `anchors`), as an author naming what the change is about would, then the other
// paths it touched in the dataset's order. With `anchored`, each file that has an anchor carries its lines and blob.
json retrievalFiles(const json& m, bool anchored) {
  std::vector<const json*> anchors;
  const json none = json::array();
  const json& listed = m.contains("anchors") && m["anchors"].is_array() ? m["anchors"] : none;
  for (const auto& an : listed) {
    if (an.is_object() && an.contains("path") && an["path"].is_string()) anchors.push_back(&an);
  }
  auto written = [](const json& an) {
    uint64_t n = 0;
    if (!an.contains("lines") || !an["lines"].is_array()) return n;
    for (const auto& r : an["lines"]) {
      if (r.is_array() && r.size() == 2 && r[0].is_number_unsigned() && r[1].is_number_unsigned()) {
        n += r[1].get<uint64_t>() >= r[0].get<uint64_t>() ? r[1].get<uint64_t>() - r[0].get<uint64_t>() + 1 : 0;
      }
    }
    return n;
  };
  std::stable_sort(anchors.begin(), anchors.end(),
                   [&](const json* a, const json* b) { return written(*a) > written(*b); });
  json files = json::array();
  std::set<std::string> named;
  for (const json* an : anchors) {
    const std::string path = (*an)["path"].get<std::string>();
    if (files.size() >= 16) break;
    if (!plainPath(path) || !named.insert(path).second) continue;
    if (anchored) {
      files.push_back({{"path", path}, {"lines", an->value("lines", json::array())}, {"blob", an->value("blob", "")}});
    } else {
      files.push_back(path);
    }
  }
  for (const auto& f : m.value("files", json::array())) {
    if (files.size() >= 16) break;
    if (f.is_string() && plainPath(f.get<std::string>()) && named.insert(f.get<std::string>()).second) {
      files.push_back(f);
    }
  }
  return files;
}

// memory/save params from one workload line: summary, details, topics, category and file paths as the line has them
// (at most 16 files, the protocol's bound).
json loadSaveParams(const json& m) {
  json files = json::array();
  for (const auto& f : m.value("files", json::array())) {
    if (files.size() >= 16) break;
    if (f.is_object() && f.contains("path") && f["path"].is_string()) files.push_back(f["path"]);
    if (f.is_string()) files.push_back(f);
  }
  json p = {{"summary", m.value("summary", "")}, {"details", m.value("details", "")}, {"files", files},
            {"topics", m.value("topics", json::array())}};
  if (m.contains("category") && m["category"].is_string()) p["category"] = m["category"];
  return p;
}

// VmHWM (peak resident set) of a process, in bytes; 0 when unreadable.
int64_t peakRssBytes(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("VmHWM:", 0) == 0) return std::atoll(line.c_str() + 6) * 1024;
  }
  return 0;
}

int64_t fileBytes(const fs::path& p) {
  std::error_code ec;
  auto size = fs::file_size(p, ec);
  return ec ? 0 : static_cast<int64_t>(size);
}

Result<std::vector<size_t>> parseSizes(const std::vector<std::string>& values) {
  std::vector<size_t> out;
  for (const auto& v : values) {
    std::stringstream ss(v);
    std::string item;
    while (std::getline(ss, item, ',')) {
      char* end = nullptr;
      long long n = std::strtoll(item.c_str(), &end, 10);
      if (item.empty() || *end != '\0' || n < 1) {
        return Status::invalidField("n", "--n takes positive counts separated by commas (got '" + item + "')");
      }
      out.push_back(static_cast<size_t>(n));
    }
  }
  return out;
}

struct LoadRow {
  size_t n = 0;
  size_t saved = 0, errors = 0, active = 0;
  std::string firstError;
  double saveSecs = 0;
  std::vector<double> saveMs, recallMs;
  int64_t peakRss = 0, dbBytes = 0, walBytes = 0;  // db and wal while memqd runs, after the recalls
  int64_t closedDbBytes = 0;                         // the database alone once memqd has exited
  std::string scanKernel;                            // daemon/status's scan_kernel
  std::optional<bool> heapHugePages;                 // daemon/status's heap_huge_pages
};

// One size: a fresh memqd, N saves, the queries. Status errors are the harness's (daemon did not start, the dataset
// ran short); per-request errors are counted in the row.
Status runLoadSize(const fs::path& dataset, const std::vector<json>& queries, size_t n, int clients, LoadRow& row) {
  row.n = n;
  fs::path work = fs::path("/tmp") / ("mqbl-" + std::to_string(::getpid()) + "-" + std::to_string(n));
  fs::remove_all(work);
  // The N lines are unpacked and turned into memory/save params first (80 MB of text at 100k), before memqd starts
  // and the clock with it: xz decompressing, or parsing a workload line, beside the save stream would take a share of
  // the cores from memqd (and time from the stream) that no agent's save costs. A dataset too short fails here,
  // without starting a daemon.
  std::vector<json> saveParams;
  {
    LineReader reader(dataset / "memories.jsonl.xz");
    saveParams.reserve(n);
    std::string line;
    while (saveParams.size() < n && reader.next(line)) {
      const json m = json::parse(line, nullptr, false);
      saveParams.push_back(loadSaveParams(m.is_object() ? m : json::object()));
    }
  }
  if (saveParams.size() < n) {
    return Status::invalidField("dataset", "memories.jsonl.xz has fewer than " + std::to_string(n) + " lines");
  }
  fs::create_directories(work / "project");
  struct Cleanup {
    fs::path dir;
    ~Cleanup() {
      std::error_code ec;
      fs::remove_all(dir, ec);
    }
  } cleanup{work};
  const std::string root = fs::canonical(work / "project").string();
  Daemon daemon;
  MEMQ_RETURN_IF_ERROR(daemon.start(work));
  auto open = [&]() -> Result<RpcClient> {
    auto c = RpcClient::connect(daemon.socket(), std::chrono::seconds(10));
    if (!c) return c.status();
    auto init = c->call("initialize", {{"client_name", "memq-bench-load"}, {"project_root", root}});
    if (!init) return init.status();
    return std::move(*c);
  };
  std::vector<RpcClient> conns;
  for (int c = 0; c < clients; ++c) {
    auto conn = open();
    if (!conn) return conn.status();
    conns.push_back(std::move(*conn));
  }
  // Which vector scan memqd runs (figures from hosts with and without AVX-512 differ by it), and whether its heap grows
  // in huge pages (page faults cost 13 µs in some virtual machines).
  if (auto status = conns[0].call("daemon/status", json::object()); status && status->is_object()) {
    row.scanKernel = status->value("scan_kernel", "");
    if (auto huge = status->find("heap_huge_pages"); huge != status->end() && huge->is_boolean()) {
      row.heapHugePages = huge->get<bool>();
    }
  }

  // Saves: each connection takes the next line under the lock, so requests leave in file order.
  std::mutex nextLineMutex;
  size_t issued = 0;
  std::vector<std::vector<double>> latencies(clients);
  std::vector<size_t> saved(clients, 0), errors(clients, 0);
  std::vector<std::string> firstErrors(clients);
  auto t0 = Clock::now();
  auto writer = [&](int c) {
    while (true) {
      json params;
      {
        std::lock_guard lock(nextLineMutex);
        if (issued >= n) return;
        params = std::move(saveParams[issued++]);
      }
      auto ta = Clock::now();
      auto r = conns[c].call("memory/save", std::move(params), std::chrono::minutes(5));
      latencies[c].push_back(std::chrono::duration<double, std::milli>(Clock::now() - ta).count());
      if (r) {
        ++saved[c];
      } else if (errors[c]++ == 0) {
        firstErrors[c] = r.status().toString();
      }
    }
  };
  std::vector<std::thread> threads;
  for (int c = 1; c < clients; ++c) threads.emplace_back(writer, c);
  writer(0);
  for (auto& t : threads) t.join();
  row.saveSecs = std::chrono::duration<double>(Clock::now() - t0).count();
  for (int c = 0; c < clients; ++c) {
    row.saved += saved[c];
    row.errors += errors[c];
    if (row.firstError.empty()) row.firstError = firstErrors[c];
    row.saveMs.insert(row.saveMs.end(), latencies[c].begin(), latencies[c].end());
  }

  // Recalls, on the first connection.
  for (const auto& q : queries) {
    json files = json::array();
    for (const auto& f : q.value("editedFiles", json::array())) {
      if (files.size() < kMaxRecallFiles) files.push_back(f);
    }
    json params = {{"query", q.value("query", "")}, {"files", files}, {"limit", 3}, {"threshold", 0.01}};
    auto ta = Clock::now();
    auto r = conns[0].call("memory/recall", std::move(params), std::chrono::minutes(5));
    double ms = std::chrono::duration<double, std::milli>(Clock::now() - ta).count();
    if (!r) {
      if (row.errors++ == 0) row.firstError = r.status().toString();
      continue;
    }
    if (!q.value("warmup", false)) row.recallMs.push_back(ms);
  }

  auto stats = conns[0].call("stats", {{"read_scope", "project"}});
  if (!stats) return stats.status();
  const json& project = (*stats)["scopes"].value("project", json::object());
  row.active = project.value("states", json::object()).value("active", 0);
  fs::path db = project.value("path", "");
  row.dbBytes = fileBytes(db);
  row.walBytes = fileBytes(db.string() + "-wal");
  row.peakRss = peakRssBytes(daemon.pid());
  conns[0].call("daemon/shutdown", json::object());
  daemon.stop();
  row.closedDbBytes = fileBytes(db);  // closing the last connection checkpoints the WAL into the database
  return Status::ok();
}

int runLoadBench(Context& ctx, const std::vector<std::string>& words) {
  Args a;
  std::string error;
  if (!a.parse(words, {{"json"}, {"clients", "dataset"}, {"n"}}, error)) return usageError(error);
  constexpr const char* kUsage =
      "usage: memq bench load [--n 1000,10000,100000]... [--clients N] [--dataset DIR] [--json]";
  if (!a.positional().empty()) return usageError(kUsage);
  std::vector<std::string> nValues = a.values("n");
  if (nValues.empty()) nValues = {"1000,10000,100000"};
  auto sizes = parseSizes(nValues);
  if (!sizes) return usageError(sizes.status().message());
  int clients = 1;
  if (auto c = a.value("clients")) {
    char* end = nullptr;
    long v = std::strtol(c->c_str(), &end, 10);
    if (c->empty() || *end != '\0' || v < 1 || v > 256) return usageError("--clients takes a count from 1 to 256");
    clients = static_cast<int>(v);
  }
  std::optional<std::string> datasetArg = a.value("dataset");
  if (!datasetArg) {
    const char* benchDir = std::getenv("MEMQ_BENCH_DIR");
    if (!benchDir || !*benchDir) return usageError("memq bench load needs --dataset DIR (or MEMQ_BENCH_DIR set)");
    datasetArg = std::string(benchDir) + "/load";
  }
  const fs::path dataset = *datasetArg;
  if (!fs::exists(dataset / "memories.jsonl.xz") || !fs::exists(dataset / "queries.jsonl")) {
    return usageError("--dataset " + dataset.string() + " must hold memories.jsonl.xz and queries.jsonl");
  }
  auto queries = readJsonl(dataset / "queries.jsonl");
  if (!queries) return usageError(queries.status().message());
  const bool asJson = a.flag("json") || ctx.options.json;

  json out = {{"dataset", dataset.string()}, {"clients", clients}, {"sizes", json::array()}};
  if (!asJson) {
    std::printf("%s, %d client(s); recall: %zu queries (limit 3, threshold 0.01), warm-up excluded\n",
                dataset.string().c_str(), clients, queries->size());
    std::printf("%8s %8s %7s %9s %10s %10s %10s %9s %9s %9s %10s %10s %10s\n", "N", "saved", "errors", "saves/s",
                "save p50", "save p99", "save max", "recall50", "recall95", "recall99", "peak RSS", "db+wal",
                "db closed");
    std::fflush(stdout);
  }
  bool anyErrors = false;
  for (size_t n : *sizes) {
    LoadRow row;
    if (Status st = runLoadSize(dataset, *queries, n, clients, row); !st) {
      if (st.code() == ErrorCode::kInvalidParams) return usageError(st.message());
      if (isTransportError(st)) {
        std::cerr << "memq: " << st.message() << "\n";
        return kExitUnreachable;
      }
      return reportError(ctx, st);
    }
    anyErrors = anyErrors || row.errors > 0;
    json r = {{"n", row.n},
              {"saved", row.saved},
              {"errors", row.errors},
              {"active_memories", row.active},
              {"save_s", row.saveSecs},
              {"saves_per_s", row.saveSecs > 0 ? row.saved / row.saveSecs : 0},
              {"save_p50_ms", percentile(row.saveMs, 0.5)},
              {"save_p95_ms", percentile(row.saveMs, 0.95)},
              {"save_p99_ms", percentile(row.saveMs, 0.99)},
              {"save_max_ms", row.saveMs.empty() ? 0.0 : *std::max_element(row.saveMs.begin(), row.saveMs.end())},
              {"recall_queries", row.recallMs.size()},
              {"recall_p50_ms", percentile(row.recallMs, 0.5)},
              {"recall_p95_ms", percentile(row.recallMs, 0.95)},
              {"recall_p99_ms", percentile(row.recallMs, 0.99)},
              {"peak_rss_bytes", row.peakRss},
              {"db_bytes", row.dbBytes},
              {"wal_bytes", row.walBytes},
              {"closed_db_bytes", row.closedDbBytes},
              {"scan_kernel", row.scanKernel}};
    if (row.heapHugePages) r["heap_huge_pages"] = *row.heapHugePages;
    if (!row.firstError.empty()) r["first_error"] = row.firstError;
    out["sizes"].push_back(r);
    if (!asJson) {
      // Recall to the microsecond: its targets are fractions of a millisecond (docs/performance.md).
      std::printf("%8zu %8zu %7zu %9.0f %8.2fms %8.2fms %8.2fms %7.3fms %7.3fms %7.3fms %7.1fMiB %7.1fMiB %7.1fMiB\n",
                  row.n, row.saved, row.errors, r["saves_per_s"].get<double>(), r["save_p50_ms"].get<double>(),
                  r["save_p99_ms"].get<double>(), r["save_max_ms"].get<double>(), r["recall_p50_ms"].get<double>(),
                  r["recall_p95_ms"].get<double>(), r["recall_p99_ms"].get<double>(), row.peakRss / 1048576.0,
                  (row.dbBytes + row.walBytes) / 1048576.0, row.closedDbBytes / 1048576.0);
      if (!row.firstError.empty()) std::printf("         first error: %s\n", row.firstError.c_str());
      if (!row.scanKernel.empty()) std::printf("         memqd's vector scan: %s\n", row.scanKernel.c_str());
      if (row.heapHugePages) {
        std::printf("         memqd's heap in huge pages: %s\n", *row.heapHugePages ? "yes" : "no");
      }
      std::fflush(stdout);
    }
  }
  if (asJson) std::cout << out.dump(2) << "\n";
  return anyErrors ? kExitRpcError : kExitOk;
}

}  // namespace

int runRetrievalBench(Context& ctx, const std::vector<std::string>& words) {
  Args a;
  std::string error;
  if (!a.parse(words, {{"json", "no-semantic", "keep", "lines"}, {"dataset", "limit", "max-splits", "dump"}, {"ranker"}},
               error)) {
    return usageError(error);
  }
  auto datasetArg = a.value("dataset");
  if (!datasetArg) {
    return usageError(
        "usage: memq bench retrieval --dataset DIR [--ranker default|reference]... [--lines] [--limit K] "
        "[--max-splits N] [--no-semantic] [--keep] [--dump FILE] [--json]");
  }
  fs::path dataset = *datasetArg;
  int limit = 10;
  if (auto l = a.value("limit")) limit = std::max(1, std::atoi(l->c_str()));
  std::vector<std::string> rankers = a.values("ranker");
  if (rankers.empty()) rankers = {"default", "reference"};
  for (const auto& r : rankers) {
    if (r != "default" && r != "reference") return usageError("--ranker must be default or reference");
  }
  const bool asJson = a.flag("json") || ctx.options.json;
  // --dump FILE: one JSON line per (query, ranker) with every candidate's raw signals (explain), for offline tuning
  // (docs/ranking.md). Recall then returns up to 100 memories (the protocol's maximum) with explain, so latency
  // figures are not comparable with a run without --dump.
  std::unique_ptr<std::ofstream> dump;
  if (auto d = a.value("dump")) {
    dump = std::make_unique<std::ofstream>(*d);
    if (!*dump) return usageError("cannot write " + *d);
  }
  Corpus corpus;
  auto mem = readJsonl(dataset / "corpus.jsonl");
  if (!mem) return usageError(mem.status().message());
  auto qs = readJsonl(dataset / "queries.jsonl");
  if (!qs) return usageError(qs.status().message());
  corpus.memories = std::move(*mem);
  corpus.queries = std::move(*qs);
  for (const auto& m : corpus.memories) corpus.splits = std::max(corpus.splits, m.value("split", 0) + 1);
  int maxSplits = corpus.splits;
  if (auto s = a.value("max-splits")) maxSplits = std::min(maxSplits, std::max(1, std::atoi(s->c_str())));

  fs::path work = fs::temp_directory_path() / ("memq-bench-" + std::to_string(::getpid()));
  fs::remove_all(work);
  fs::create_directories(work);
  auto cleanup = [&] {
    if (!a.flag("keep")) fs::remove_all(work);
  };
  auto t0 = Clock::now();
  fs::path repo = work / "repo";
  // --lines: the dataset's real history, memories saved with their anchors, and each ranker run twice: files only,
  // then with the query's edited lines (the file versions they are in written to the work tree for the query).
  const bool withLines = a.flag("lines");
  if (withLines && !fs::exists(dataset / "repo.bundle")) {
    cleanup();
    return usageError("--lines needs the dataset's repo.bundle (" + (dataset / "repo.bundle").string() + ")");
  }
  if (Status st = withLines ? cloneBundle(repo, fs::absolute(dataset / "repo.bundle")) : buildRepository(repo, corpus);
      !st) {
    cleanup();
    std::cerr << "memq: " << st.message() << "\n";
    return kExitRpcError;
  }
  double buildSecs = std::chrono::duration<double>(Clock::now() - t0).count();
  int collapsed = 0;
  std::vector<RankerRun> runs;
  for (const auto& r : rankers) {
    for (const bool lines : {false, true}) {
      if (lines && !withLines) continue;
      RankerRun run;
      run.ranker = r;
      run.semantic = !a.flag("no-semantic");
      run.lines = lines;
      runs.push_back(std::move(run));
    }
  }
  int anchorsRefused = 0;  // memories whose anchors memqd refused, saved with plain files instead
  std::map<std::string, std::string> memoryOfCommit;  // commit id → memory id its text landed on
  double ingestSecs = 0;
  {
    Daemon daemon;
    if (Status st = daemon.start(work); !st) {
      cleanup();
      std::cerr << "memq: " << st.message() << "\n";
      return kExitUnreachable;
    }
    auto client = RpcClient::connect(daemon.socket(), std::chrono::seconds(5));
    if (!client) {
      cleanup();
      return reportError(ctx, client.status());
    }
    const std::string root = fs::canonical(repo).string();
    auto init = client->call("initialize", {{"client_name", "memq-bench"}, {"project_root", root}});
    if (!init) {
      cleanup();
      return reportError(ctx, init.status());
    }
    size_t next = 0;
    for (int split = 0; split < maxSplits; ++split) {
      std::string checkout = "git -C '" + repo.string() + "' checkout -q -f split-" + std::to_string(split);
      if (std::system(checkout.c_str()) != 0) {
        cleanup();
        std::cerr << "memq: cannot check out split-" << split << "\n";
        return kExitRpcError;
      }
      auto ti = Clock::now();
      // Ingest this split's memories in batches of 200 saves per JSON-RPC batch.
      while (next < corpus.memories.size() && corpus.memories[next].value("split", 0) <= split) {
        json batch = json::array();
        std::vector<std::string> ids;
        for (; next < corpus.memories.size() && corpus.memories[next].value("split", 0) <= split && batch.size() < 200;
             ++next) {
          const json& m = corpus.memories[next];
          json files = retrievalFiles(m, withLines);
          std::string summary = m.value("summary", "");
          if (summary.find_first_not_of(" \t") == std::string::npos) summary = "(no subject)";
          json params = {{"summary", summary}, {"details", m.value("details", "")}, {"files", files},
                         {"topics", m.value("topics", json::array())}};
          batch.push_back(makeRequest(static_cast<int64_t>(batch.size()), "memory/save", params));
          ids.push_back(m.value("id", ""));
        }
        if (Status st = client->sendRaw(serializeMessage(batch) + "\n"); !st) return reportError(ctx, st);
        auto line = client->readRawLine(std::chrono::minutes(5));
        if (!line) return reportError(ctx, line.status());
        json replies = json::parse(*line, nullptr, false);
        if (!replies.is_array()) {
          std::cerr << "memq: unexpected reply to a save batch\n";
          return kExitRpcError;
        }
        for (const auto& reply : replies) {
          if (!reply.contains("result") && withLines) {
            // Anchors memqd refused (a line past the end of a version, a binary file): saved with plain files.
            size_t i = reply["id"].get<size_t>();
            json params = batch[i]["params"];
            json plain = json::array();
            for (const auto& f : params["files"]) plain.push_back(f.is_object() ? f["path"] : f);
            params["files"] = plain;
            auto again = client->call("memory/save", params);
            if (!again) continue;
            ++anchorsRefused;
            memoryOfCommit[ids[i]] = (*again)["id"].get<std::string>();
            if ((*again)["status"] == "deduped") ++collapsed;
            continue;
          }
          if (!reply.contains("result")) continue;
          size_t i = reply["id"].get<size_t>();
          memoryOfCommit[ids[i]] = reply["result"]["id"].get<std::string>();
          if (reply["result"]["status"] == "deduped") ++collapsed;
        }
      }
      client->call("repo/refresh", json::object(), std::chrono::minutes(5));
      ingestSecs += std::chrono::duration<double>(Clock::now() - ti).count();
      for (auto& run : runs) {
        for (const auto& q : corpus.queries) {
          if (q.value("split", 0) != split) continue;
          json params = {{"query", q.value("text", "")}, {"files", json::array()}, {"limit", limit},
                         {"threshold", 0}, {"ranker", run.ranker}, {"mark_used", false}, {"max_chars", 1000000},
                         {"semantic", run.semantic}};
          if (dump) {
            params["limit"] = 100;  // the protocol's maximum
            params["explain"] = true;
          }
          for (const auto& f : q.value("edited_files", json::array())) {
            if (params["files"].size() < kMaxRecallFiles && plainPath(f.get<std::string>())) {
              params["files"].push_back(f);
            }
          }
          // With the real history, the work tree holds the versions the fixer had, in both modes.
          std::vector<std::string> written;
          if (withLines) {
            for (const auto& el : q.value("edited_lines", json::array())) {
              const std::string path = el.value("path", "");
              if (!plainPath(path) || !writeBlobToWorkTree(repo, path, el.value("blob", ""))) continue;
              written.push_back(path);
              if (!run.lines) continue;
              for (auto& f : params["files"]) {
                if (f.is_string() && f.get<std::string>() == path) f = {{"path", path}, {"lines", el["lines"]}};
              }
            }
          }
          auto tq = Clock::now();
          auto r = client->call("memory/recall", params);
          run.latencies.push_back(std::chrono::duration<double, std::milli>(Clock::now() - tq).count());
          for (const auto& path : written) restoreWorkTreeFile(repo, path);
          if (!r) return reportError(ctx, r.status());
          std::set<std::string> relevant;
          for (const auto& sha : q.value("relevant", json::array())) {
            auto it = memoryOfCommit.find(sha.get<std::string>());
            if (it != memoryOfCommit.end()) relevant.insert(it->second);
          }
          size_t total = q.value("relevant", json::array()).size();
          if (dump) {
            json line = {{"qid", q.value("qid", json())}, {"split", split}, {"ranker", run.ranker},
                         {"mode", run.lines ? "lines" : "files"},
                         {"relevant", json(std::vector<std::string>(relevant.begin(), relevant.end()))},
                         {"relevant_total", total}, {"query", q.value("text", "")},
                         {"files", params["files"]}, {"candidates", json::array()}};
            for (const auto& m : (*r)["memories"]) {
              line["candidates"].push_back({{"id", m["id"]}, {"created_at", m.value("created_at", "")},
                                            {"score", m["score"]}, {"summary", m.value("summary", "")},
                                            {"explain", m.value("explain", json::object())}});
            }
            *dump << line.dump() << "\n";
          }
          if (total == 0) continue;
          int rank = 0, firstHit = 0, hits1 = 0, hits3 = 0, hits10 = 0;
          std::set<std::string> seen;
          for (const auto& m : (*r)["memories"]) {
            ++rank;
            std::string id = m["id"];
            if (!relevant.count(id) || !seen.insert(id).second) continue;
            if (!firstHit) firstHit = rank;
            if (rank <= 1) ++hits1;
            if (rank <= 3) ++hits3;
            if (rank <= 10) ++hits10;
          }
          run.r1 += static_cast<double>(hits1) / total;
          run.r3 += static_cast<double>(hits3) / total;
          run.r10 += static_cast<double>(hits10) / total;
          run.mrr += firstHit > 0 && firstHit <= 10 ? 1.0 / firstHit : 0;
          ++run.queries;
        }
      }
    }
    client->call("daemon/shutdown", json::object());
  }
  cleanup();
  json out = {{"dataset", dataset.string()},
              {"memories", corpus.memories.size()},
              {"collapsed_by_content_hash", collapsed},
              {"splits", maxSplits},
              {"repo_build_s", buildSecs},
              {"ingest_s", ingestSecs},
              {"anchors_refused", anchorsRefused},
              {"rankers", json::array()}};
  for (auto& run : runs) {
    double n = std::max(1, run.queries);
    out["rankers"].push_back({{"ranker", run.ranker},
                              {"semantic", run.semantic},
                              {"mode", run.lines ? "lines" : "files"},
                              {"queries", run.queries},
                              {"r_at_1", run.r1 / n},
                              {"r_at_3", run.r3 / n},
                              {"r_at_10", run.r10 / n},
                              {"mrr_at_10", run.mrr / n},
                              {"latency_p50_ms", percentile(run.latencies, 0.5)},
                              {"latency_p95_ms", percentile(run.latencies, 0.95)}});
  }
  if (asJson) {
    std::cout << out.dump(2) << "\n";
  } else {
    std::printf("%s: %zu memories (%d collapsed by content hash), %d split(s)\n", dataset.string().c_str(),
                corpus.memories.size(), collapsed, maxSplits);
    std::printf("%-10s %-6s %8s %6s %6s %6s %7s %9s %9s\n", "ranker", "mode", "queries", "R@1", "R@3", "R@10",
                "MRR@10", "p50 ms", "p95 ms");
    for (const auto& r : out["rankers"]) {
      std::printf("%-10s %-6s %8d %6.3f %6.3f %6.3f %7.3f %9.2f %9.2f\n", r["ranker"].get<std::string>().c_str(),
                  r["mode"].get<std::string>().c_str(),
                  r["queries"].get<int>(), r["r_at_1"].get<double>(), r["r_at_3"].get<double>(),
                  r["r_at_10"].get<double>(), r["mrr_at_10"].get<double>(), r["latency_p50_ms"].get<double>(),
                  r["latency_p95_ms"].get<double>());
    }
  }
  return kExitOk;
}

int runBench(Context& ctx, const std::vector<std::string>& words) {
  if (!words.empty() && words[0] == "retrieval") {
    return runRetrievalBench(ctx, std::vector<std::string>(words.begin() + 1, words.end()));
  }
  if (!words.empty() && words[0] == "load") {
    return runLoadBench(ctx, std::vector<std::string>(words.begin() + 1, words.end()));
  }
  return usageError("usage: memq bench retrieval --dataset DIR [--ranker R]... | memq bench load [--n N]... [--clients N]");
}

}  // namespace memq::cli
