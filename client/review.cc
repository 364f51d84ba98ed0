// memq review: an interactive queue, like `git add -p`, over similarity clusters, stale memories and dead file refs.
// For each item it shows the memory (for a stale one, its anchored lines then and now) and asks keep / hide / pin /
// reject (asks the reason) / supersede-by / skip / quit, applying each answer at once. Without a terminal it refuses
// and points to the --json listings, whose items carry each reply's memory entry as it came.
#include <unistd.h>

#include <iostream>

#include "client/commands.h"
#include "client/rpc_client.h"

namespace memq::cli {

namespace {

using json = nlohmann::json;

std::string ask(const std::string& prompt) {
  std::cout << prompt << std::flush;
  std::string line;
  if (!std::getline(std::cin, line)) return "q";
  return line;
}

}  // namespace

int runReview(Context& ctx, const std::vector<std::string>& words) {
  std::string kind = words.empty() ? "all" : words[0];
  if (words.size() > 1 || (kind != "all" && kind != "clusters" && kind != "stale" && kind != "dead")) {
    return usageError("usage: memq review [clusters|stale|dead]");
  }
  if (!ctx.options.json && !(::isatty(0) && ::isatty(1))) {
    std::cerr << "memq review is interactive and needs a terminal; for scripts use "
                 "`memq --json review clusters|stale|dead` to list the items\n";
    return kExitUsage;
  }
  auto link = DaemonLink::open(ctx.options, true);
  if (!link) return reportError(ctx, link.status());
  // Gather the queue: each item is a memory and why it is there.
  std::vector<std::pair<json, std::string>> queue;
  auto collect = [&](const std::string& method, const std::string& why) -> int {
    auto r = link->call(method, json::object());
    if (!r) return reportError(ctx, r.status());
    if (method == "review/clusters") {
      for (const auto& c : (*r)["clusters"]) {
        std::string others;
        for (const auto& m : c["memories"]) others += " " + shortId(m);
        for (const auto& m : c["memories"]) queue.emplace_back(m, "similar to" + others);
      }
    } else {
      for (const auto& m : (*r)["memories"]) queue.emplace_back(m, why);
    }
    return kExitOk;
  };
  if (kind == "all" || kind == "clusters") {
    if (int rc = collect("review/clusters", "similar"); rc) return rc;
  }
  if (kind == "all" || kind == "stale") {
    if (int rc = collect("review/stale", "its files changed since it was saved"); rc) return rc;
  }
  if (kind == "all" || kind == "dead") {
    if (int rc = collect("review/dead", "a file it refers to no longer exists"); rc) return rc;
  }
  if (ctx.options.json) {
    json out = json::array();
    for (const auto& [m, why] : queue) out.push_back({{"memory", m}, {"why", why}});
    std::cout << jsonText(out) << "\n";
    return kExitOk;
  }
  if (queue.empty()) {
    std::cout << "nothing to review\n";
    return kExitOk;
  }
  size_t n = 0;
  for (const auto& [m, why] : queue) {
    ++n;
    std::cout << "\n(" << n << "/" << queue.size() << ") " << ctx.style.dim(why) << "\n" << memoryDetail(m, ctx.style);
    // A stale memory's files: the anchored lines then and now, the text a change touched.
    if (m.contains("changed_files")) std::cout << staleFilesText(m, ctx.style);
    for (;;) {
      std::string a = ask("keep, hide, pin, reject, supersede-by, skip, quit [k,h,p,r,s,n,q,?]? ");
      Result<json> r = json::object();
      const std::string id = m.value("id", "");
      if (a == "k" || a == "n" || a.empty()) break;
      if (a == "q") return kExitOk;
      if (a == "h") r = link->call("memory/hide", {{"id", id}, {"reason", "review"}});
      else if (a == "p") r = link->call("memory/pin", {{"id", id}});
      else if (a == "r") {
        std::string reason = ask("reason: ");
        if (reason.empty()) continue;
        r = link->call("memory/reject", {{"id", id}, {"reason", reason}});
      } else if (a == "s") {
        std::string by = ask("superseded by (id): ");
        if (by.empty()) continue;
        r = link->call("memory/supersede", {{"id", id}, {"by", by}});
      } else {
        std::cout << "k keep, h hide, p pin, r reject (asks why), s supersede by another memory, n skip, q quit\n";
        continue;
      }
      if (!r) {
        // memqd gone: every later answer would fail the same way, so the review ends with the error's exit code.
        if (isTransportError(r.status())) return reportError(ctx, r.status());
        reportError(ctx, r.status());
        continue;
      }
      std::cout << ctx.style.green("done") << "\n";
      break;
    }
  }
  return kExitOk;
}

}  // namespace memq::cli
