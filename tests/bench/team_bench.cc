// memq_bench_team: the team scope on a real local PostgreSQL 15 (a throwaway cluster, durable unless --fast: fsync
// and synchronous commit on, as a real server runs). Figures of docs/performance.md ("The team scope"):
//  1. saves through TeamClient (memq_save: validation, the correction model, one audit row and a notification per
//     save, one writer at a time by the server's write lock) from C clients at once, each its own connection and
//     thread, S saves each, every text distinct: saves/s over all clients and the per-save latency;
//  2. the notification delay: one connection LISTENs while another saves one at a time; for each save, the time
//     from the save's acknowledgement (the commit) to the listener holding its seq, and from the save's call.
//  --recall N runs instead: team recall on a team of N memories, as a teammate who joins it sees it:
//  3. the first N memories of the load workload (memories.jsonl.xz under --load) saved through TeamClient::save
//     (memq_save, as memqd's team saves reach the server) from C clients at once, line i by client i mod C;
//  4. a real memqd (--memqd) told `team/connect` on a project in a git repository, and the time until its replica
//     holds the whole journal (team/status last_seq), with memqd's CPU time and resident memory;
//  5. the workload's queries as memory/recall {query, files, limit 3, threshold 0.01, scope team, mark_used false}
//     over the socket, --passes times: p50/p95/p99 of the measured ones (the warm-up queries are left out);
//  6. memqd stopped, the same queries through the recall engine in this process on the replica's database (the
//     local engine on the same N memories, as memq_bench_recall runs it), for comparison.
// Usage: memq_bench_team [--clients 8] [--saves 500] [--notifications 200] [--fast]
//        memq_bench_team --recall N [--load DIR] [--memqd PATH] [--clients 8] [--passes 1] [--fast]
//   --fast: fsync and synchronous commit off (what the tests run with), to see what durability costs.
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <spdlog/spdlog.h>

#include "client/rpc_client.h"
#include "common/pg_cluster.h"
#include "daemon/embed/hashbag.h"
#include "daemon/recall/recall_engine.h"
#include "daemon/store/memory_store.h"
#include "daemon/team/team_client.h"
#include "tests/bench/bench_daemon.h"
#include "tests/bench/bench_util.h"

namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;
using json = nlohmann::json;
using memq::bench::percentile;

double msSince(Clock::time_point t) { return std::chrono::duration<double, std::milli>(Clock::now() - t).count(); }

void printLatencies(const char* what, const std::vector<double>& ms) {
  std::printf("%-44s p50 %7.3f ms  p95 %7.3f ms  p99 %7.3f ms\n", what, percentile(ms, 0.50), percentile(ms, 0.95),
              percentile(ms, 0.99));
}

memq::SaveInput note(int client, int i) {
  memq::SaveInput in;
  in.summary = "team note " + std::to_string(client) + "-" + std::to_string(i) + ": the staging deploy needs --no-cache";
  in.details = "Seen by client " + std::to_string(client) + " while working on item " + std::to_string(i) + ".";
  return in;
}

std::unique_ptr<memq::TeamClient> connect(const memq::test::PgCluster& cluster, const std::string& role) {
  auto c = memq::TeamClient::connect(cluster.conninfo("team", role));
  if (!c) {
    std::cerr << "connect as " << role << ": " << c.status().toString() << "\n";
    std::exit(1);
  }
  return std::move(*c);
}


// Figures 1 and 2: saves from `clients` connections at once, then the commit -> listener delay.
int serverPath(const memq::test::PgCluster& cluster, int clients, int saves, int notifications) {
  // 1. Saves from `clients` connections at once.
  std::vector<std::unique_ptr<memq::TeamClient>> conns;
  for (int c = 0; c < clients; ++c) conns.push_back(connect(cluster, "writer" + std::to_string(c)));
  std::vector<std::vector<double>> perClient(clients);
  std::atomic<int> failed{0};
  const auto t0 = Clock::now();
  std::vector<std::thread> threads;
  for (int c = 0; c < clients; ++c) {
    threads.emplace_back([&, c] {
      for (int i = 0; i < saves; ++i) {
        const auto t = Clock::now();
        auto r = conns[c]->save(note(c, i), "/");
        perClient[c].push_back(msSince(t));
        if (!r || r->status != memq::SaveStatus::kCreated) ++failed;
      }
    });
  }
  for (auto& t : threads) t.join();
  const double secs = msSince(t0) / 1000.0;
  std::vector<double> all;
  for (const auto& v : perClient) all.insert(all.end(), v.begin(), v.end());
  std::printf("saves from %d clients                        %8.0f /s  (%d saves, %d not created)\n", clients,
              static_cast<double>(all.size()) / secs, static_cast<int>(all.size()), failed.load());
  printLatencies("save latency", all);

  // 2. Commit → listener: the listener thread records when each seq arrives.
  auto listener = connect(cluster, "writer0");
  if (auto st = listener->listen(); !st.isOk()) {
    std::cerr << "listen: " << st.toString() << "\n";
    return 1;
  }
  std::mutex mu;
  std::map<int64_t, Clock::time_point> arrived;
  std::atomic<bool> done{false};
  std::thread listening([&] {
    while (!done) {
      auto n = listener->waitForNotification(std::chrono::milliseconds(100));
      if (!n) {
        std::cerr << "listener: " << n.status().toString() << "\n";
        return;
      }
      if (*n) {
        std::lock_guard<std::mutex> lock(mu);
        arrived.emplace(**n, Clock::now());
      }
    }
  });
  auto& saver = conns[0];
  std::vector<std::pair<int64_t, std::pair<Clock::time_point, Clock::time_point>>> sent;  // seq, (call, ack)
  for (int i = 0; i < notifications; ++i) {
    const auto call = Clock::now();
    auto r = saver->save(note(clients, i), "/");
    const auto ack = Clock::now();
    if (r && r->seq) sent.push_back({*r->seq, {call, ack}});
    // One at a time: wait (bounded) for this one to arrive before the next, so delays do not queue.
    for (int w = 0; w < 2000 && r && r->seq; ++w) {
      {
        std::lock_guard<std::mutex> lock(mu);
        if (arrived.count(*r->seq)) break;
      }
      std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
  }
  done = true;
  listening.join();
  std::vector<double> fromAck, fromCall;
  int missing = 0;
  for (const auto& [seq, times] : sent) {
    auto it = arrived.find(seq);
    if (it == arrived.end()) {
      ++missing;
      continue;
    }
    fromAck.push_back(std::max(0.0, std::chrono::duration<double, std::milli>(it->second - times.second).count()));
    fromCall.push_back(std::chrono::duration<double, std::milli>(it->second - times.first).count());
  }
  std::printf("notifications: %zu saves, %d never arrived\n", sent.size(), missing);
  printLatencies("acknowledged save -> listener has its seq", fromAck);
  printLatencies("save called -> listener has its seq", fromCall);
  return 0;
}

struct RecallOptions {
  size_t n = 0;
  int clients = 8;
  int passes = 1;
  std::string loadDir;
  std::string memqd;
};

// Runs `command` through /bin/sh; exits the benchmark when it fails (the project's git repository is a fixed input).
void runOrExit(const std::string& command) {
  if (std::system(command.c_str()) != 0) {
    std::cerr << "failed: " << command << "\n";
    std::exit(1);
  }
}

// A project inside a git repository (team/connect stores its setting in the repository's git config).
std::string makeProject(const fs::path& dir) {
  fs::create_directories(dir);
  const std::string git = "git -C '" + dir.string() + "' -c user.name=bench -c user.email=bench@memq -c commit.gpgsign=false ";
  runOrExit("git -c init.defaultBranch=main init -q '" + dir.string() + "'");
  runOrExit("echo '# team recall bench' > '" + (dir / "README.md").string() + "'");
  runOrExit(git + "add -A && " + git + "commit -q -m init");
  return fs::canonical(dir).string();
}

// Figure 3: the first N workload lines saved through memq_save, line i by client i mod `clients`.
int fillTeam(const memq::test::PgCluster& cluster, const std::vector<json>& memories, int clients,
             const std::string& projectRoot) {
  std::vector<std::unique_ptr<memq::TeamClient>> conns;
  for (int c = 0; c < clients; ++c) conns.push_back(connect(cluster, "writer" + std::to_string(c)));
  std::vector<std::vector<double>> perClient(clients);
  std::atomic<size_t> created{0}, other{0}, failed{0};
  std::string firstError;
  std::mutex errorMutex;
  const auto t0 = Clock::now();
  std::vector<std::thread> threads;
  for (int c = 0; c < clients; ++c) {
    threads.emplace_back([&, c] {
      for (size_t i = c; i < memories.size(); i += clients) {
        const auto t = Clock::now();
        auto r = conns[c]->save(memq::bench::saveInput(memories[i]), projectRoot);
        perClient[c].push_back(msSince(t));
        if (!r) {
          if (failed++ == 0) {
            std::lock_guard<std::mutex> lock(errorMutex);
            firstError = r.status().toString();
          }
        } else if (r->status == memq::SaveStatus::kCreated) {
          ++created;
        } else {
          ++other;  // deduped: the workload repeats a few texts
        }
      }
    });
  }
  for (auto& t : threads) t.join();
  const double secs = msSince(t0) / 1000.0;
  std::vector<double> all;
  for (const auto& v : perClient) all.insert(all.end(), v.begin(), v.end());
  std::printf("fill: %zu workload lines through memq_save from %d clients in %.1f s: %.0f saves/s; %zu created, %zu "
              "deduped, %zu failed%s%s\n",
              memories.size(), clients, secs, static_cast<double>(all.size()) / secs, created.load(), other.load(),
              failed.load(), failed ? ": " : "", firstError.c_str());
  printLatencies("fill: save latency", all);
  return failed ? 1 : 0;
}

// The server's last journal seq (the replica has caught up when it holds it).
int64_t serverLastSeq(const memq::test::PgCluster& cluster) {
  auto r = memq::test::runSql(cluster.conninfo("team"), "SELECT coalesce(max(seq), 0) FROM memq_team.audit");
  if (!r.ok || r.rows.empty() || !r.rows[0][0]) {
    std::cerr << "reading the journal's last seq: " << r.message << "\n";
    std::exit(1);
  }
  return std::stoll(*r.rows[0][0]);
}

memq::RpcClient connectDaemon(const memq::bench::Daemon& daemon, const std::string& root) {
  auto c = memq::RpcClient::connect(daemon.socket(), std::chrono::seconds(10));
  if (!c) {
    std::cerr << "connect: " << c.status().toString() << "\n";
    std::exit(1);
  }
  auto init = c->call("initialize", {{"client_name", "memq-bench-team"}, {"project_root", root}});
  if (!init) {
    std::cerr << "initialize: " << init.status().toString() << "\n";
    std::exit(1);
  }
  return std::move(*c);
}

// Figure 4: team/connect, then team/status polled until the replica holds `lastSeq`. Returns false on a failure.
bool joinTeam(memq::RpcClient& client, const memq::bench::Daemon& daemon, const std::string& conninfo,
              int64_t lastSeq) {
  const double cpu0 = memq::bench::processCpuSeconds(daemon.pid());
  const auto t0 = Clock::now();
  auto connected = client.call("team/connect", {{"conninfo", conninfo}});
  if (!connected) {
    std::cerr << "team/connect: " << connected.status().toString() << "\n";
    return false;
  }
  std::printf("team/connect answered in %.0f ms: online %s, last_seq %lld of %lld\n", msSince(t0),
              connected->value("online", false) ? "true" : "false",
              static_cast<long long>(connected->value("last_seq", int64_t{0})), static_cast<long long>(lastSeq));
  std::fflush(stdout);
  int64_t seq = 0;
  auto nextReport = Clock::now() + std::chrono::seconds(10);
  while (seq < lastSeq) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    auto st = client.call("team/status", json::object());
    if (!st) {
      std::cerr << "team/status: " << st.status().toString() << "\n";
      return false;
    }
    seq = st->value("last_seq", int64_t{0});
    if (Clock::now() >= nextReport) {
      std::fprintf(stderr, "  catching up: seq %lld of %lld after %.0f s\n", static_cast<long long>(seq),
                   static_cast<long long>(lastSeq), msSince(t0) / 1000);
      nextReport += std::chrono::seconds(10);
    }
  }
  const double secs = msSince(t0) / 1000;
  std::printf("catch-up: the replica holds all %lld journal rows %.1f s after team/connect (%.0f rows/s); memqd used "
              "%.1f CPU-seconds, resident %.0f MiB\n",
              static_cast<long long>(lastSeq), secs, static_cast<double>(lastSeq) / secs,
              memq::bench::processCpuSeconds(daemon.pid()) - cpu0, memq::bench::processRssMiB(daemon.pid()));
  return true;
}

// Figure 5: the workload's queries as team recalls over the socket.
bool recallOverSocket(memq::RpcClient& client, const memq::bench::Daemon& daemon, const std::vector<json>& queries,
                      int passes) {
  std::vector<double> lat;
  size_t withHits = 0, notTeam = 0;
  const double cpu0 = memq::bench::processCpuSeconds(daemon.pid());
  for (int pass = 0; pass < passes; ++pass) {
    for (const auto& q : queries) {
      const bool warmup = q.value("warmup", false);
      if (warmup && pass > 0) continue;
      json params = memq::bench::recallParams(q);
      params["scope"] = "team";
      const auto t = Clock::now();
      auto r = client.call("memory/recall", std::move(params));
      const double ms = msSince(t);
      if (!r) {
        std::cerr << "memory/recall: " << r.status().toString() << "\n";
        return false;
      }
      if (warmup) continue;
      lat.push_back(ms);
      const json& hits = (*r)["memories"];
      if (!hits.empty()) ++withHits;
      for (const auto& h : hits) notTeam += h.value("scope", "") != "team";
    }
  }
  const double cpuMs = (memq::bench::processCpuSeconds(daemon.pid()) - cpu0) * 1000;
  std::printf("team recall over the socket, %zu measured queries (%d passes), %zu with hits%s:\n", lat.size(), passes,
              withHits, notTeam ? " (some hits not of the team scope!)" : "");
  printLatencies("  memory/recall scope team", lat);
  std::printf("  memqd CPU per recall (mean, every thread, warm-up included): %.3f ms\n",
              cpuMs / static_cast<double>(std::max<size_t>(lat.size(), 1)));
  return notTeam == 0;
}

// Figure 6: the same queries through the recall engine in this process, on the replica's database (memqd stopped).
bool recallInProcess(const fs::path& teamDir, const std::vector<json>& queries, int passes) {
  fs::path db;
  for (const auto& e : fs::directory_iterator(teamDir)) {
    if (e.path().extension() == ".db") db = e.path();
  }
  memq::HashbagEmbedder embedder;  // memqd's embedder: the replica's vectors are of its model
  memq::StoreOptions o;
  o.path = db.string();
  o.scope = "team";
  o.embedder = &embedder;
  const auto t0 = Clock::now();
  auto store = memq::MemoryStore::open(o);
  if (!store) {
    std::cerr << "cannot open the replica " << o.path << ": " << store.status().message() << "\n";
    return false;
  }
  const double openMs = msSince(t0);
  std::vector<double> lat;
  for (int pass = 0; pass < passes; ++pass) {
    for (const auto& q : queries) {
      const bool warmup = q.value("warmup", false);
      if (warmup && pass > 0) continue;
      const json params = memq::bench::recallParams(q);
      memq::RecallRequest r;
      r.query = params["query"].get<std::string>();
      r.files = params["files"].get<std::vector<std::string>>();
      r.limit = 3;
      r.threshold = 0.01;
      const auto t = Clock::now();
      auto prepared = memq::prepareQuery(r, embedder, nullptr);
      auto c = memq::gatherCandidates(**store, r, prepared, nullptr);
      if (!c) {
        std::cerr << "in-process recall: " << c.status().message() << "\n";
        return false;
      }
      auto hits = memq::rankAndSelect(std::move(*c), r);
      if (auto loaded = memq::loadHitRows(**store, hits); !loaded) {
        std::cerr << "in-process recall: " << loaded.message() << "\n";
        return false;
      }
      if (!warmup) lat.push_back(msSince(t));
    }
  }
  std::printf("the same queries in process on the replica's database (opened in %.0f ms), the recall engine as "
              "memq_bench_recall runs it:\n", openMs);
  printLatencies("  in-process recall", lat);
  return true;
}

// Figures 3-6 (--recall N).
int teamRecall(memq::test::PgCluster& cluster, const RecallOptions& opt) {
  auto memories = memq::bench::readJsonl("xz -dc '" + opt.loadDir + "/memories.jsonl.xz'", opt.n);
  auto queries = memq::bench::readJsonl("cat '" + opt.loadDir + "/queries.jsonl'", 1000);
  if (memories.size() < opt.n || queries.empty()) {
    std::cerr << "the load workload has fewer than " << opt.n << " memories or no queries\n";
    return 2;
  }
  const fs::path work = fs::path("/tmp") / ("mqbt-" + std::to_string(::getpid()));
  fs::remove_all(work);
  const std::string root = makeProject(work / "project");
  if (int rc = fillTeam(cluster, memories, opt.clients, root); rc != 0) return rc;
  const int64_t lastSeq = serverLastSeq(cluster);
  if (auto err = cluster.createRole("newcomer", {"memq_team_writer"}); !err.empty()) {
    std::cerr << err << "\n";
    return 1;
  }
  int rc = 0;
  {
    memq::bench::Daemon daemon(opt.memqd, work, "info");
    if (!daemon.start()) {
      std::cerr << "memqd did not start (see " << (work / "memqd.log").string() << ")\n";
      return 1;
    }
    memq::RpcClient client = connectDaemon(daemon, root);
    if (!joinTeam(client, daemon, cluster.conninfo("team", "newcomer"), lastSeq) ||
        !recallOverSocket(client, daemon, queries, opt.passes)) {
      rc = 1;
    }
    client.call("daemon/shutdown", json::object());
  }
  if (rc == 0 && !recallInProcess(work / "data" / "team", queries, opt.passes)) rc = 1;
  std::printf("a local store of the same N, in process: build/tests/memq_bench_recall --n %zu --load %s --db-dir DIR\n",
              opt.n, opt.loadDir.c_str());
  if (rc == 0) fs::remove_all(work);
  return rc;
}

// The throwaway team server: the schema migrated, `writers` login roles writer0.. in memq_team_writer.
int setUpTeam(memq::test::PgCluster& cluster, bool durable, int writers) {
  if (auto err = cluster.start(durable); !err.empty()) {
    std::cerr << err << "\n";
    return 1;
  }
  for (const auto& err : {cluster.createRole("memq_owner", {}, "CREATEROLE"), cluster.createDatabase("team", "memq_owner")}) {
    if (!err.empty()) {
      std::cerr << err << "\n";
      return 1;
    }
  }
  if (auto st = connect(cluster, "memq_owner")->migrate(); !st.isOk()) {
    std::cerr << "migrate: " << st.toString() << "\n";
    return 1;
  }
  for (int c = 0; c < writers; ++c) {
    if (auto err = cluster.createRole("writer" + std::to_string(c), {"memq_team_writer"}); !err.empty()) {
      std::cerr << err << "\n";
      return 1;
    }
  }
  std::printf("PostgreSQL 15, local Unix socket, %s\n",
              durable ? "durable (fsync, synchronous_commit on)" : "fast (fsync, synchronous_commit off)");
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  int clients = 8, saves = 500, notifications = 200;
  bool durable = true;
  RecallOptions recall;
  recall.memqd = (fs::path(argv[0]).parent_path() / ".." / "bin" / "memqd").string();
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&] { return i + 1 < argc ? std::atoi(argv[++i]) : 0; };
    auto text = [&] { return i + 1 < argc ? std::string(argv[++i]) : std::string(); };
    if (a == "--clients") clients = std::max(1, next());
    else if (a == "--saves") saves = std::max(1, next());
    else if (a == "--notifications") notifications = std::max(1, next());
    else if (a == "--fast") durable = false;
    else if (a == "--recall") recall.n = static_cast<size_t>(std::max(1, next()));
    else if (a == "--passes") recall.passes = std::max(1, next());
    else if (a == "--load") recall.loadDir = text();
    else if (a == "--memqd") recall.memqd = text();
    else {
      std::cerr << "usage: memq_bench_team [--clients C] [--saves S] [--notifications N] [--fast]\n"
                   "       memq_bench_team --recall N [--load DIR] [--memqd PATH] [--clients C] [--passes P] [--fast]\n";
      return 2;
    }
  }
  recall.clients = clients;
  if (recall.n > 0) {
    if (recall.loadDir.empty()) {
      const char* src = std::getenv("MEMQ_SOURCE_DIR");
      recall.loadDir = (fs::path(src ? src : ".") / ".." / "shared" / "bench" / "load").string();
    }
    if (!fs::exists(fs::path(recall.loadDir) / "memories.jsonl.xz")) {
      std::cerr << "load workload not found in " << recall.loadDir << " (pass --load DIR)\n";
      return 2;
    }
    if (!fs::exists(recall.memqd)) {
      std::cerr << "memqd not found at " << recall.memqd << " (pass --memqd PATH)\n";
      return 2;
    }
  }
  spdlog::set_level(spdlog::level::warn);
  std::setvbuf(stdout, nullptr, _IOLBF, 0);  // each figure as it is measured, also into a file (runs take minutes)
  memq::test::PgCluster cluster;
  if (int rc = setUpTeam(cluster, durable, clients); rc != 0) return rc;
  return recall.n > 0 ? teamRecall(cluster, recall) : serverPath(cluster, clients, saves, notifications);
}
