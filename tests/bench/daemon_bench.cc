// memqd over its socket: round-trip latency, recall over the socket against the same recall in-process, and
// throughput of many concurrent clients. Starts a real memqd (temp socket, temp data dir, a non-git project root)
// and prints figures; asserts nothing (docs/performance.md records them). Usage:
//   memq_bench_daemon [--memqd PATH] [--load DIR] [--n 1000] [--gets 20000] [--clients 32] [--seconds 10]
//                     [--mix get:90,hints:10]... [--log-level info] [--phases arbc] [--recall-passes 4]
//                     [--memqd-arg ARG]... [--sleeping-client]
// Phases:
//   (a) memory/get round trips on one connection, one request in flight (p50/p95/p99 µs);
//   (r) memory/recall round trips back to back on one connection, as an agent's client or `memq bench load` makes
//       them, --recall-passes times over the queries (the first pass is warm-up). The client's waits for a reply end
//       awake (RpcClient::call); with --sleeping-client every wait sleeps until the reply comes, to compare the two
//       (in phase (b) too);
//   (b) memory/recall over the socket and the same recall through an in-process Service opened on the same database
//       (SQLite WAL lets a second process read), query by query, interleaved so machine load hits both alike, each
//       query --recall-passes times with the side that goes first alternating (from query to query and from pass to
//       pass, so each side goes first equally often); the per-query difference's percentiles are printed. memqd's
//       I/O thread polls for a while after each reply (--hot-poll-us), on the core the in-process side would use:
//       `--memqd-arg --hot-poll-us --memqd-arg 0` compares the two without it;
//       It prints memqd's own time per recall from its request log (with --log-level info), so the socket's share
//       splits into the handler and the transport around it.
//       It also times the same recall in-process through memqd's dispatcher (the request's text to the reply's:
//       envelope, params validated and read, the service, the reply's text) against the service call alone, so the
//       handler's share splits from the service's, and times the dispatcher's steps one by one over the same requests;
//       and it prints what the reply's JSON costs apart, over the same queries' in-process hits: memqd's text writer
//       against the nlohmann tree it replaced, and the client's parse against nlohmann's parser;
//   (c) --clients connections, each a thread with one request in flight, running --mix for --seconds; requests/s and
//       latency percentiles per method. Each --mix runs on its own; by default a get/hints mix (what the server
//       itself costs) and a mix with recall and save (what the store adds).
// The preloaded memories are the first --n lines of the load workload (memories.jsonl.xz under --load).
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <spdlog/spdlog.h>

#include "client/rpc_client.h"
#include "daemon/embed/hashbag.h"
#include "daemon/git/git_repo_signals.h"
#include "daemon/server/dispatcher.h"
#include "daemon/server/process_memory.h"
#include "daemon/server/reply_json.h"
#include "daemon/server/request_params.h"
#include "daemon/service/service.h"
#include "protocol/envelope.h"
#include "protocol/method_schemas.h"
#include "protocol/schema_validator.h"
#include "tests/bench/bench_daemon.h"
#include "tests/bench/bench_util.h"

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;
using json = nlohmann::json;

namespace {

double micros(Clock::duration d) { return std::chrono::duration<double, std::micro>(d).count(); }

using memq::bench::percentile;
using memq::bench::readJsonl;
using memq::bench::Daemon;
using memq::bench::processCpuSeconds;
using memq::bench::recallParams;
using memq::bench::saveParams;

double threadCpuMs() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) * 1e3 + static_cast<double>(ts.tv_nsec) / 1e6;
}

struct Percentiles {
  double p50, p95, p99;
};
Percentiles of(const std::vector<double>& v) { return {percentile(v, 0.5), percentile(v, 0.95), percentile(v, 0.99)}; }

// The handler times (ms) of the last `last` memory/recall calls in memqd's request log (lines "[conn] memory/recall
// id=N 1.23ms ok", written at --log-level info); empty when the log has none (a quieter log level).
std::vector<double> loggedRecallMs(const fs::path& log, size_t last) {
  std::vector<double> out;
  std::ifstream in(log);
  std::string line;
  while (std::getline(in, line)) {
    const size_t method = line.find("] memory/recall id=");
    if (method == std::string::npos || line.size() < 3 || line.compare(line.size() - 3, 3, " ok") != 0) continue;
    const size_t msEnd = line.rfind("ms ok");
    const size_t msBegin = line.rfind(' ', msEnd);
    if (msEnd == std::string::npos || msBegin == std::string::npos || msBegin < method) continue;
    out.push_back(std::strtod(line.c_str() + msBegin + 1, nullptr));
  }
  if (out.size() > last) out.erase(out.begin(), out.end() - static_cast<std::ptrdiff_t>(last));
  return out;
}

// One weighted request mix, e.g. "get:70,recall:10,save:10,hints:10".
struct Mix {
  std::string text;
  std::vector<std::pair<std::string, int>> parts;
  int total = 0;
};

bool parseMix(const std::string& text, Mix& mix, std::string& error) {
  mix.text = text;
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ',')) {
    auto colon = item.find(':');
    std::string name = item.substr(0, colon);
    int weight = colon == std::string::npos ? 1 : std::atoi(item.c_str() + colon + 1);
    if (name != "get" && name != "recall" && name != "save" && name != "hints") {
      error = "--mix: unknown request kind '" + name + "' (get, recall, save, hints)";
      return false;
    }
    if (weight <= 0) continue;
    mix.parts.emplace_back(name, weight);
    mix.total += weight;
  }
  if (mix.total == 0) {
    error = "--mix: no request kind with a positive weight";
    return false;
  }
  return true;
}

struct ThreadResult {
  std::map<std::string, std::vector<double>> latencies;  // µs per kind
  size_t errors = 0;
  std::string firstError;
};

}  // namespace

int main(int argc, char** argv) {
  // memqd's allocator settings, so that the in-process figures are the same code under the same heap.
  memq::reexecWithHugePageHeap(argv);
  memq::tuneAllocator();
  std::string memqd = (fs::path(argv[0]).parent_path() / ".." / "bin" / "memqd").string();
  std::string loadDir;
  size_t n = 1000, gets = 20000;
  int clients = 32;
  double seconds = 10;
  std::vector<std::string> mixes;
  std::string logLevel = "info";
  std::string phases = "arbc";  // which of (a), (r), (b), (c) to run
  bool sleepingClient = false;
  int recallPasses = 4;
  std::vector<std::string> memqdArgs;  // appended to memqd's command line
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::cerr << a << " needs a value\n";
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--memqd") memqd = next();
    else if (a == "--load") loadDir = next();
    else if (a == "--n") n = std::stoul(next());
    else if (a == "--gets") gets = std::stoul(next());
    else if (a == "--clients") clients = std::max(1, std::stoi(next()));
    else if (a == "--seconds") seconds = std::stod(next());
    else if (a == "--mix") mixes.push_back(next());
    else if (a == "--log-level") logLevel = next();
    else if (a == "--phases") phases = next();
    else if (a == "--recall-passes") recallPasses = std::max(1, std::stoi(next()));
    else if (a == "--memqd-arg") memqdArgs.push_back(next());
    else if (a == "--sleeping-client") sleepingClient = true;
    else {
      std::cerr << "unknown option " << a << "\n";
      return 2;
    }
  }
  spdlog::set_level(spdlog::level::warn);  // the in-process Service logs scope openings at info
  if (mixes.empty()) mixes = {"get:90,hints:10", "get:50,recall:20,save:20,hints:10"};
  std::vector<Mix> parsedMixes;
  for (const auto& m : mixes) {
    Mix mix;
    std::string error;
    if (!parseMix(m, mix, error)) {
      std::cerr << error << "\n";
      return 2;
    }
    parsedMixes.push_back(mix);
  }
  if (loadDir.empty()) {
    const char* src = std::getenv("MEMQ_SOURCE_DIR");
    loadDir = (fs::path(src ? src : ".") / ".." / "shared" / "bench" / "load").string();
  }
  if (!fs::exists(fs::path(loadDir) / "memories.jsonl.xz")) {
    std::cerr << "load workload not found in " << loadDir << " (pass --load DIR)\n";
    return 2;
  }
  if (!fs::exists(memqd)) {
    std::cerr << "memqd not found at " << memqd << " (pass --memqd PATH)\n";
    return 2;
  }
  // Enough lines for the preload plus every save the concurrent phases may make.
  auto memories = readJsonl("xz -dc '" + loadDir + "/memories.jsonl.xz'", n + 20000);
  auto queries = readJsonl("cat '" + loadDir + "/queries.jsonl'", 1000);
  if (memories.size() < n || queries.empty()) {
    std::cerr << "the load workload has fewer than " << n << " memories or no queries\n";
    return 2;
  }

  fs::path work = fs::path("/tmp") / ("mqbd-" + std::to_string(::getpid()));
  fs::remove_all(work);
  fs::create_directories(work / "project");
  const std::string root = fs::canonical(work / "project").string();
  int rc = 0;
  {
    Daemon daemon(memqd, work, logLevel, memqdArgs);
    if (!daemon.start()) {
      std::cerr << "memqd did not start (see " << (work / "memqd.log").string() << ")\n";
      return 1;
    }
    auto connect = [&]() {
      auto c = memq::RpcClient::connect(daemon.socket(), std::chrono::seconds(10));
      if (!c) {
        std::cerr << "connect: " << c.status().toString() << "\n";
        std::exit(1);
      }
      auto init = c->call("initialize", {{"client_name", "memq-bench-daemon"}, {"project_root", root}});
      if (!init) {
        std::cerr << "initialize: " << init.status().toString() << "\n";
        std::exit(1);
      }
      c->setAwakeWaits(!sleepingClient);
      return std::move(*c);
    };
    memq::RpcClient client = connect();

    // Preload.
    std::vector<std::string> ids;
    auto t0 = Clock::now();
    for (size_t i = 0; i < n; ++i) {
      auto r = client.call("memory/save", saveParams(memories[i]));
      if (!r) {
        std::cerr << "save " << i << ": " << r.status().toString() << "\n";
        return 1;
      }
      ids.push_back((*r)["id"].get<std::string>());
    }
    double loadSecs = micros(Clock::now() - t0) / 1e6;
    std::sort(ids.begin(), ids.end());
    ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
    std::printf("memqd %s, log level %s; %zu memories preloaded over the socket in %.1f s (%.0f saves/s), %zu distinct\n",
                memqd.c_str(), logLevel.c_str(), n, loadSecs, n / loadSecs, ids.size());

    // memqd's housekeeping checkpoints the WAL every 3 s; let the first checkpoint after the preload (tens of MB)
    // happen before anything is measured, so its CPU is not charged to the requests below.
    std::this_thread::sleep_for(std::chrono::milliseconds(3500));

    auto runs = [&](char phase) { return phases.find(phase) != std::string::npos; };
    // Messages memqd answered on its I/O thread so far (daemon/status), to say how many of a phase's were.
    auto answeredInline = [&]() -> double {
      auto st = client.call("daemon/status", json::object());
      return st ? (*st).value("messages_answered_inline", 0.0) : 0.0;
    };

    // (a) get round trips.
    std::mt19937 rng(42);
    if (runs('a')) {
      for (size_t i = 0; i < 500; ++i) client.call("memory/get", {{"id", ids[rng() % ids.size()]}});  // warm-up
      std::vector<double> getLat;
      getLat.reserve(gets);
      double getCpu0 = processCpuSeconds(daemon.pid());
      const double inline0 = answeredInline();
      for (size_t i = 0; i < gets; ++i) {
        json params = {{"id", ids[rng() % ids.size()]}};
        auto ta = Clock::now();
        auto r = client.call("memory/get", std::move(params));
        getLat.push_back(micros(Clock::now() - ta));
        if (!r) {
          std::cerr << "get: " << r.status().toString() << "\n";
          return 1;
        }
    }
    double getCpuUs = (processCpuSeconds(daemon.pid()) - getCpu0) * 1e6 / static_cast<double>(std::max<size_t>(gets, 1));
    const double getsInline = answeredInline() - inline0 - 1;  // less the status call itself
    auto g = of(getLat);
    std::printf("\n(a) memory/get round trip, one connection, %zu calls: p50 %.0f µs, p95 %.0f µs, p99 %.0f µs;"
                " memqd CPU %.0f µs per get; %.0f%% answered on memqd's I/O thread\n",
                gets, g.p50, g.p95, g.p99, getCpuUs, 100.0 * getsInline / static_cast<double>(std::max<size_t>(gets, 1)));
    }

    // (r) recall round trips back to back.
    if (runs('r')) {
      std::vector<double> recallLat;
      for (int pass = 0; pass < std::max(2, recallPasses); ++pass) {
        for (const json& q : queries) {
          auto ta = Clock::now();
          auto r = client.call("memory/recall", recallParams(q));
          if (!r) {
            std::cerr << "recall: " << r.status().toString() << "\n";
            return 1;
          }
          if (pass > 0) recallLat.push_back(micros(Clock::now() - ta) / 1000);
        }
      }
      auto g = of(recallLat);
      std::printf("\n(r) memory/recall back to back, one connection, %zu calls, the client's waits %s: p50 %.3f ms, "
                  "p95 %.3f ms, p99 %.3f ms\n",
                  recallLat.size(), sleepingClient ? "asleep" : "ending awake", g.p50, g.p95, g.p99);
    }

    // (b) recall over the socket vs in-process on the same database.
    if (runs('b')) {
      memq::HashbagEmbedder embedder;
      memq::ServiceOptions so;
      so.dataDir = (work / "inproc-data").string();
      so.embedder = &embedder;
      // The same repository-signals factory as memqd's, so both sides do the same work for a recall.
      so.repoFactory = [](const memq::ProjectLocation& loc) -> std::shared_ptr<memq::RepoSignals> {
        return std::make_shared<memq::GitRepoSignals>(loc);
      };
      memq::Service service(so);
      memq::ClientState state;
      memq::InitializeRequest initRequest;
      initRequest.clientName = "in-process";
      initRequest.projectRoot = root;
      if (auto init = service.initialize(state, initRequest); !init) {
        std::cerr << "in-process initialize: " << init.status().toString() << "\n";
        return 1;
      }
      auto ctx = service.context(state, memq::CommonParams{});
      // The in-process side's request: the socket request's query and files, limit 3, threshold 0.01.
      auto recallRequestOf = [](const json& params) {
        memq::RecallRequest req;
        req.query = params["query"];
        req.files = params["files"].get<std::vector<std::string>>();
        req.limit = 3;
        req.threshold = 0.01;
        return req;
      };
      std::vector<double> socketLat, inprocLat, diff;
      std::vector<std::vector<memq::RecallHit>> replyHits;  // the first pass's hits, for the reply-JSON figures
      size_t mismatched = 0;
      const double recallInline0 = answeredInline();
      double daemonCpu0 = processCpuSeconds(daemon.pid()), inprocCpuMs = 0;
      for (int pass = 0; pass < recallPasses; ++pass) {
        for (size_t qi = 0; qi < queries.size(); ++qi) {
          const json& q = queries[qi];
          json params = recallParams(q);
          const memq::RecallRequest req = recallRequestOf(params);
          // Alternate which goes first, so neither always finds the pages the other just read.
          memq::Result<json> overSocket = memq::Status::internal("not run");
          memq::Result<memq::RecallHits> inproc = memq::Status::internal("not run");
          double socketMs = 0, inprocMs = 0;
          for (int turn = 0; turn < 2; ++turn) {
            auto ta = Clock::now();
            if ((turn + pass + qi) % 2 == 0) {
              overSocket = client.call("memory/recall", params);
              socketMs = micros(Clock::now() - ta) / 1000;
            } else {
              double cpu0 = threadCpuMs();
              inproc = service.recall(*ctx, memq::RecallParams{req, /*markUsed=*/false});
              inprocMs = micros(Clock::now() - ta) / 1000;
              inprocCpuMs += threadCpuMs() - cpu0;
            }
          }
          if (!overSocket || !inproc) {
            std::cerr << "recall failed: " << (overSocket ? inproc.status() : overSocket.status()).toString() << "\n";
            return 1;
          }
          if ((*overSocket)["memories"].size() != inproc->hits.size()) ++mismatched;
          if (pass == 0) replyHits.push_back(inproc->hits);
          if (q.value("warmup", false)) continue;
          socketLat.push_back(socketMs);
          inprocLat.push_back(inprocMs);
          diff.push_back(socketLat.back() - inprocLat.back());
        }
      }
      double daemonCpuMs = (processCpuSeconds(daemon.pid()) - daemonCpu0) * 1000;
      size_t calls = static_cast<size_t>(recallPasses) * queries.size();
      auto s = of(socketLat), p = of(inprocLat), d = of(diff);
      std::printf("\n(b) memory/recall at %zu memories, %zu measured pairs (%d passes over the queries; limit 3,"
                  " threshold 0.01):\n", n, socketLat.size(), recallPasses);
      std::printf("    over the socket  p50 %.3f ms  p95 %.3f ms  p99 %.3f ms\n", s.p50, s.p95, s.p99);
      std::printf("    in-process       p50 %.3f ms  p95 %.3f ms  p99 %.3f ms\n", p.p50, p.p95, p.p99);
      std::printf("    socket - in-process, per query: p50 %.3f ms  p95 %.3f ms%s\n", d.p50, d.p95,
                  mismatched ? "  (some result counts differed!)" : "");
      std::printf("    CPU per recall (mean): memqd %.3f ms (every thread), in-process %.3f ms\n", daemonCpuMs / calls,
                  inprocCpuMs / calls);
      // memqd's own time for each recall, from its request log (the handler: validation, the service, the reply's
      // text; not reading the request or writing the reply): what the socket adds beyond it is transport and
      // wake-ups.
      if (std::vector<double> handled = loggedRecallMs(work / "memqd.log", calls); !handled.empty()) {
        auto h = of(handled);
        std::printf("    memqd's handler per recall (its request log, the last %zu): p50 %.3f ms  p95 %.3f ms;"
                    " socket - handler p50 %.3f ms\n",
                    handled.size(), h.p50, h.p95, s.p50 - h.p50);
      }
      std::printf("    %.0f%% of the recalls answered on memqd's I/O thread\n",
                  100.0 * (answeredInline() - recallInline0 - 1) /   static_cast<double>(std::max<size_t>(calls, 1)));

      // The reply's JSON apart (one thread, CPU time, mean per reply over 5 rounds of every query's hits).
      double treeMs = 0, textMs = 0, nlohmannParseMs = 0, parseJsonMs = 0, bytes = 0;
      const int rounds = 5;
      for (int round = 0; round < rounds; ++round) {
        for (const auto& hits : replyHits) {
          double t0 = threadCpuMs();
          json tree = json::array();
          for (const auto& h : hits) tree.push_back(memq::recallHitToJson(h, false));
          std::string viaTree = memq::serializeMessage(json{{"memories", std::move(tree)}});
          double t1 = threadCpuMs();
          std::string viaText = memq::recallHitsJsonText(hits, false);
          double t2 = threadCpuMs();
          json parsedSlow = json::parse(viaText);
          double t3 = threadCpuMs();
          auto parsedFast = memq::parseJson(viaText, 256);
          double t4 = threadCpuMs();
          treeMs += t1 - t0;
          textMs += t2 - t1;
          nlohmannParseMs += t3 - t2;
          parseJsonMs += t4 - t3;
          bytes += static_cast<double>(viaText.size());
          if (viaTree != viaText || !parsedFast || *parsedFast != parsedSlow) ++mismatched;
        }
      }
      const double replies = static_cast<double>(rounds) * static_cast<double>(std::max<size_t>(replyHits.size(), 1));

      // memqd's dispatcher apart: the same recall in-process, as the service call alone and as the request's text
      // through the dispatcher memqd runs (envelope parse, params validated and read, the service, the reply's
      // text), paired query by query with the side that goes first alternating. What is left of the socket's
      // share is the transport: the client's request and reply JSON, the kernel, wake-ups.
      {
        memq::Dispatcher dispatcher(service, memq::ServerHooks{});
        std::vector<double> direct, dispatched, share;
        int64_t id = 0;
        for (int pass = 0; pass < recallPasses; ++pass) {
          for (size_t qi = 0; qi < queries.size(); ++qi) {
            json params = recallParams(queries[qi]);
            params["mark_used"] = false;  // as the service call beside it: this side writes nothing
            const std::string text = memq::serializeMessage(memq::makeRequest(++id, "memory/recall", params));
            const memq::RecallRequest req = recallRequestOf(params);
            double directMs = 0, dispatchedMs = 0;
            for (int turn = 0; turn < 2; ++turn) {
              auto ta = Clock::now();
              if ((turn + pass + qi) % 2 == 0) {
                auto reply = dispatcher.handleMessage(state, text);
                dispatchedMs = micros(Clock::now() - ta) / 1000;
                if (!reply || reply->find("\"result\"") == std::string::npos) {
                  std::cerr << "dispatched recall failed: " << reply.value_or("(no reply)") << "\n";
                  return 1;
                }
              } else {
                auto hits = service.recall(*ctx, memq::RecallParams{req, /*markUsed=*/false});
                directMs = micros(Clock::now() - ta) / 1000;
              }
            }
            if (queries[qi].value("warmup", false)) continue;
            direct.push_back(directMs);
            dispatched.push_back(dispatchedMs);
            share.push_back(dispatchedMs - directMs);
          }
        }
        auto dd = of(direct), dp = of(dispatched), ds = of(share);
        std::printf("    in-process through memqd's dispatcher: p50 %.3f ms (the service call alone %.3f ms);"
                    " the dispatcher's share per query p50 %.1f µs, p95 %.1f µs\n",
                    dp.p50, dd.p50, ds.p50 * 1000, ds.p95 * 1000);
      }
      // The dispatcher's steps one by one, over the same requests (the recall itself between them, untimed): what
      // the dispatcher costs a recall apart from the caches a recall run just before or after it warms or cools.
      {
        double envelopeUs = 0, checkUs = 0, contextUs = 0, readUs = 0, replyUs = 0, freeUs = 0;
        int calls = 0;
        const memq::MethodSchema* schema = memq::findMethodSchema("memory/recall");
        if (schema == nullptr) {
          std::cerr << "memory/recall has no params schema\n";
          return 1;
        }
        for (size_t qi = 0; qi < queries.size(); ++qi) {
          json params = recallParams(queries[qi]);
          params["mark_used"] = false;
          const std::string text = memq::serializeMessage(memq::makeRequest(qi + 1, "memory/recall", params));
          auto t0 = Clock::now();
          auto envelope = std::make_unique<memq::Envelope>(memq::parseEnvelope(text));
          auto t1 = Clock::now();
          const json& sent = envelope->items.at(0).call->params;
          const memq::Status checked = schema->compiledParams->validateParams(sent);
          auto t2 = Clock::now();
          auto common = memq::readCommonParams(sent);
          auto callCtx = common ? service.context(state, *common) : memq::Result<memq::CallContext>(common.status());
          auto t3 = Clock::now();
          memq::RecallParams request;
          const memq::Status read = memq::readParams(sent, request);
          auto t4 = Clock::now();
          if (!checked.isOk() || !callCtx || !read.isOk()) {
            std::cerr << "the recall's params were refused\n";
            return 1;
          }
          auto hits = service.recall(*callCtx, request);
          if (!hits) {
            std::cerr << "recall failed: " << hits.status().toString() << "\n";
            return 1;
          }
          auto t5 = Clock::now();
          const std::string reply = memq::replyText(*hits);
          auto t6 = Clock::now();
          envelope.reset();
          auto t7 = Clock::now();
          envelopeUs += micros(t1 - t0);
          checkUs += micros(t2 - t1);
          contextUs += micros(t3 - t2);
          readUs += micros(t4 - t3);
          replyUs += micros(t6 - t5);
          freeUs += micros(t7 - t6);
          ++calls;
        }
        const double n = std::max(calls, 1);
        std::printf("    the dispatcher's steps, mean per recall: the request's JSON %.1f µs, the params checked %.1f,"
                    " the request's context %.1f, the params read %.1f, the reply's text %.1f, the request freed"
                    " %.1f: %.1f µs together\n",
                    envelopeUs / n, checkUs / n, contextUs / n, readUs / n, replyUs / n, freeUs / n,
                    (envelopeUs + checkUs + contextUs + readUs + replyUs + freeUs) / n);
      }
      std::printf("    reply JSON (mean %.0f bytes): memqd writes it in %.1f µs (nlohmann tree + dump: %.1f µs);"
                  " the client parses it in %.1f µs (nlohmann::json::parse: %.1f µs)%s\n",
                  bytes / replies, textMs * 1000 / replies, treeMs * 1000 / replies, parseJsonMs * 1000 / replies,
                  nlohmannParseMs * 1000 / replies, mismatched ? "  (some replies differed!)" : "");
    }

    // (c) concurrent clients.
    for (const Mix& mix : runs('c') ? parsedMixes : std::vector<Mix>{}) {
      std::vector<memq::RpcClient> conns;
      for (int c = 0; c < clients; ++c) conns.push_back(connect());
      std::vector<ThreadResult> results(clients);
      std::atomic<size_t> nextSave{n};
      std::atomic<bool> go{false};
      std::vector<std::thread> threads;
      auto deadline = Clock::now() + std::chrono::hours(1);
      std::atomic<int64_t> deadlineNs{0};
      for (int c = 0; c < clients; ++c) {
        threads.emplace_back([&, c] {
          std::mt19937 local(1000 + c);
          auto& conn = conns[c];
          auto& out = results[c];
          while (!go.load()) std::this_thread::yield();
          auto end = Clock::time_point(Clock::duration(deadlineNs.load()));
          while (Clock::now() < end) {
            int pick = static_cast<int>(local() % mix.total);
            std::string kind;
            for (const auto& [name, w] : mix.parts) {
              if (pick < w) {
                kind = name;
                break;
              }
              pick -= w;
            }
            std::string method;
            json params;
            if (kind == "get") {
              method = "memory/get";
              params = {{"id", ids[local() % ids.size()]}};
            } else if (kind == "recall") {
              method = "memory/recall";
              params = recallParams(queries[local() % queries.size()]);
            } else if (kind == "save") {
              method = "memory/save";
              size_t i = nextSave.fetch_add(1);
              params = saveParams(memories[i % memories.size()]);
              if (i >= memories.size()) params["summary"] = params["summary"].get<std::string>() + " #" + std::to_string(i);
            } else {
              method = "hints/for_tool";
              const auto& m = memories[local() % n];
              json files = json::array();
              for (const auto& f : m.value("files", json::array())) {
                files.push_back(f.value("path", ""));
                break;
              }
              params = {{"tool", "read"}, {"files", files}};
            }
            auto ta = Clock::now();
            auto r = conn.call(method, std::move(params));
            out.latencies[kind].push_back(micros(Clock::now() - ta));
            if (!r) {
              if (out.errors++ == 0) out.firstError = method + ": " + r.status().toString();
            }
          }
        });
      }
      deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
      deadlineNs = deadline.time_since_epoch().count();
      auto start = Clock::now();
      double cpu0 = processCpuSeconds(daemon.pid());
      go = true;
      for (auto& t : threads) t.join();
      double elapsed = micros(Clock::now() - start) / 1e6;
      double daemonCpu = processCpuSeconds(daemon.pid()) - cpu0;
      std::map<std::string, std::vector<double>> byKind;
      std::vector<double> all;
      size_t errors = 0;
      std::string firstError;
      for (auto& r : results) {
        for (auto& [k, v] : r.latencies) {
          byKind[k].insert(byKind[k].end(), v.begin(), v.end());
          all.insert(all.end(), v.begin(), v.end());
        }
        errors += r.errors;
        if (firstError.empty()) firstError = r.firstError;
      }
      auto a = of(all);
      std::printf("\n(c) %d clients, mix %s, %.1f s: %zu requests, %.0f requests/s, %zu errors%s%s\n", clients,
                  mix.text.c_str(), elapsed, all.size(), all.size() / elapsed, errors, errors ? ": " : "",
                  firstError.c_str());
      std::printf("    memqd used %.1f CPU-seconds (%.0f µs per request; %.0f%% of one core)\n", daemonCpu,
                  all.empty() ? 0.0 : daemonCpu * 1e6 / static_cast<double>(all.size()), 100 * daemonCpu / elapsed);
      std::printf("    %-8s %9s %10s %10s %10s\n", "kind", "requests", "p50 ms", "p95 ms", "p99 ms");
      std::printf("    %-8s %9zu %10.3f %10.3f %10.3f\n", "all", all.size(), a.p50 / 1000, a.p95 / 1000, a.p99 / 1000);
      for (auto& [k, v] : byKind) {
        auto pk = of(v);
        std::printf("    %-8s %9zu %10.3f %10.3f %10.3f\n", k.c_str(), v.size(), pk.p50 / 1000, pk.p95 / 1000,
                    pk.p99 / 1000);
      }
      if (errors) rc = 1;
    }
    client.call("daemon/shutdown", json::object());
  }
  fs::remove_all(work);
  return rc;
}
