// memq_bench_team: the team scope's server path on a real local PostgreSQL 15 (a throwaway cluster, durable: fsync
// and synchronous commit on, as a real server runs). Two figures of docs/performance.md ("Team scope"):
//  1. saves through TeamClient (memq_save: validation, the correction model, one audit row and a notification per
//     save, one writer at a time by the server's write lock) from C clients at once, each its own connection and
//     thread, S saves each, every text distinct: saves/s over all clients and the per-save latency;
//  2. the notification delay: one connection LISTENs while another saves one at a time; for each save, the time
//     from the save's acknowledgement (the commit) to the listener holding its seq, and from the save's call.
// Usage: memq_bench_team [--clients 8] [--saves 500] [--notifications 200] [--fast]
//   --fast: fsync and synchronous commit off (what the tests run with), to see what durability costs.
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <spdlog/spdlog.h>

#include "common/pg_cluster.h"
#include "daemon/team/team_client.h"
#include "tests/bench/bench_util.h"

namespace {

using Clock = std::chrono::steady_clock;
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

}  // namespace

int main(int argc, char** argv) {
  int clients = 8, saves = 500, notifications = 200;
  bool durable = true;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&] { return i + 1 < argc ? std::atoi(argv[++i]) : 0; };
    if (a == "--clients") clients = std::max(1, next());
    else if (a == "--saves") saves = std::max(1, next());
    else if (a == "--notifications") notifications = std::max(1, next());
    else if (a == "--fast") durable = false;
    else {
      std::cerr << "usage: memq_bench_team [--clients C] [--saves S] [--notifications N] [--fast]\n";
      return 2;
    }
  }
  spdlog::set_level(spdlog::level::warn);
  memq::test::PgCluster cluster;
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
  for (int c = 0; c < clients; ++c) {
    if (auto err = cluster.createRole("writer" + std::to_string(c), {"memq_team_writer"}); !err.empty()) {
      std::cerr << err << "\n";
      return 1;
    }
  }
  std::printf("PostgreSQL 15, local Unix socket, %s\n",
              durable ? "durable (fsync, synchronous_commit on)" : "fast (fsync, synchronous_commit off)");

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
