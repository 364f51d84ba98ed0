// The memq subcommands; see commands.h. Each one: parse its words, build the method's params, call the daemon,
// print the result (human or --json), and return the exit code.
#include "client/commands.h"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <limits>
#include <map>
#include <regex>
#include <sstream>
#include <thread>

#include "client/args.h"
#include "client/pager.h"
#include "client/usage.h"
#include "daemon/anchors/line_ranges.h"
#include "daemon/model/memory.h"
#include "daemon/model/memory_input.h"
#include "protocol/envelope.h"
#include "protocol/method_schemas.h"
#include "protocol/socket_path.h"

namespace memq::cli {

namespace {

using json = nlohmann::json;

bool isUnder(const std::string& child, const std::string& parent) {
  return child == parent || (child.size() > parent.size() && child.compare(0, parent.size(), parent) == 0 &&
                             child[parent.size()] == '/');
}

Result<DaemonLink> connect(Context& ctx, bool autostart = true) {
  auto link = DaemonLink::open(ctx.options, autostart);
  return link;
}

// Whether a command's human output goes through the pager (on a terminal, unless --no-pager).
enum class Paging { kNo, kYes };

// A result's `warnings` (an answer that may be incomplete, text a save or an update cut), on stderr: stdout stays
// the answer itself (docs/protocol.md).
void printWarnings(const Context& ctx, const json& r) {
  auto it = r.find("warnings");
  if (it == r.end() || !it->is_array()) return;
  for (const auto& w : *it) {
    std::cerr << ctx.errorStyle.yellow("warning: ") << terminalText(w.is_string() ? w.get<std::string>() : w.dump()) << "\n";
  }
}

// Runs one call and prints it: `human` renders the result for people (through the pager when `paging` says so),
// then the result's warnings go to stderr; --json prints it raw, warnings included.
int callAndPrint(Context& ctx, const std::string& method, json params,
                 const std::function<void(const json&)>& human, Paging paging = Paging::kNo,
                 json* result = nullptr) {
  auto link = connect(ctx);
  if (!link) return reportError(ctx, link.status());
  auto r = link->call(method, std::move(params));
  if (!r) return reportError(ctx, r.status());
  if (result) *result = *r;
  if (ctx.options.json) {
    std::cout << jsonText(*r) << "\n";
  } else {
    {
      Pager pager(paging == Paging::kYes && ctx.pager);
      human(*r);
      if (!pager.finish()) return kExitRpcError;  // the output went nowhere: said on stderr
    }
    // Once the pager has exited: below what it showed on the terminal, not drawn over by it.
    printWarnings(ctx, *r);
  }
  return kExitOk;
}

int parseOrUsage(Args& args, const std::vector<std::string>& words, const OptionSpec& spec) {
  std::string error;
  if (!args.parse(words, spec, error)) return usageError(error);
  return -1;
}

// The range `method`'s params schema gives the integer param `field`: the CLI checks a number against the daemon's
// own bounds, so that `--limit 0` is a usage error (exit 2) like `--limit -1`, not a daemon error (exit 1).
std::pair<int64_t, int64_t> paramRange(std::string_view method, std::string_view field) {
  int64_t low = 0, high = std::numeric_limits<int>::max();
  const MethodSchema* schema = findMethodSchema(method);
  if (schema == nullptr) return {low, high};
  const json& props = schema->params.value("properties", json::object());
  auto it = props.find(std::string(field));
  if (it == props.end() || !it->is_object()) return {low, high};
  if (auto m = it->find("minimum"); m != it->end() && m->is_number_integer()) low = std::max(low, m->get<int64_t>());
  if (auto m = it->find("maximum"); m != it->end() && m->is_number_integer()) high = std::min(high, m->get<int64_t>());
  return {low, high};
}

// `--name VALUE` as the integer param `field` of `method`, within the range its schema gives.
std::optional<int> parseInt(const std::optional<std::string>& v, const char* name, int& out, std::string_view method,
                            std::string_view field) {
  if (!v) return std::nullopt;
  const auto [low, high] = paramRange(method, field);
  char* end = nullptr;
  errno = 0;
  long n = std::strtol(v->c_str(), &end, 10);
  if (v->empty() || *end != '\0' || errno == ERANGE || n < low || n > high) {
    return usageError(std::string("--") + name + " must be a whole number from " + std::to_string(low) + " to " +
                      std::to_string(high));
  }
  out = static_cast<int>(n);
  return std::nullopt;
}

json filesOf(const Context& ctx, const std::vector<std::string>& paths) {
  json out = json::array();
  for (const auto& p : paths) out.push_back(fileArgument(ctx, p));
  return out;
}

// The files of a write (save, update, attach) or a query (recall, hint): `path`, or `path:40-60,72` for lines of
// it, read with the daemon's own rule (parsePathLines). A line list that is not a valid one is a usage error naming the argument, and nothing
// is sent.
std::optional<int> anchoredFilesOf(const Context& ctx, const std::vector<std::string>& texts, json& out) {
  out = json::array();
  for (const auto& text : texts) {
    auto parsed = parsePathLines(text, "--file");
    if (!parsed) {
      std::string why = parsed.status().message();
      if (const size_t colon = why.find(": "); colon != std::string::npos) why.erase(0, colon + 2);
      return usageError("--file " + text + ": " + why);
    }
    if (parsed->lines.empty()) {
      out.push_back(fileArgument(ctx, parsed->path));
      continue;
    }
    out.push_back({{"path", fileArgument(ctx, parsed->path)}, {"lines", lineRangesToJson(parsed->lines)}});
  }
  return std::nullopt;
}

void printMemory(const Context& ctx, const json& m) { std::cout << memoryDetail(m, ctx.style); }

void printList(const Context& ctx, const json& memories) {
  for (const auto& m : memories) std::cout << memoryLine(m, ctx.style) << "\n";
}

void printHits(const Context& ctx, const json& r) {
  const auto& hits = r["memories"];
  if (hits.empty()) {
    std::cout << "no matching memories\n";
    return;
  }
  for (const auto& h : hits) {
    std::cout << hitLine(h, ctx.style) << "\n";
    if (h.contains("explain")) std::cout << "    " << ctx.style.dim(terminalText(h["explain"].dump())) << "\n";
  }
}

int needsId(const Args& args, const char* command, size_t count = 1) {
  if (args.positional().size() != count) {
    return usageError(usageLine(command));
  }
  return -1;
}

// ---- commands -------------------------------------------------------------------------------------------------

int cmdSave(Context& ctx, const std::vector<std::string>& words) {
  Args a;
  const OptionSpec spec{{"merge-topics", "no-anchor"}, {"details", "category", "source"}, {"topic", "file"}};
  if (int rc = parseOrUsage(a, words, spec); rc >= 0) return rc;
  if (a.positional().size() != 1) return usageError(usageLine("save") + " (quote the summary)");
  json p = {{"summary", a.positional()[0]}, {"source", a.value("source").value_or("user")}};
  if (auto d = a.value("details")) p["details"] = *d;
  if (auto c = a.value("category")) p["category"] = *c;
  if (a.has("topic")) p["topics"] = a.values("topic");
  if (a.has("file")) {
    if (auto rc = anchoredFilesOf(ctx, a.values("file"), p["files"])) return *rc;
  }
  if (a.flag("merge-topics")) p["merge_topics"] = true;
  if (a.flag("no-anchor")) p["anchor"] = false;
  json result;
  int rc = callAndPrint(ctx, "memory/save", p, [&](const json& r) {
    // The warnings (text that was cut, lines that could not be anchored) follow on stderr, from callAndPrint.
    const std::string status = terminalText(r.value("status", ""));
    const std::string scope = terminalText(r.value("scope", ""));
    if (status == "rejected") {
      std::cout << ctx.style.red("refused") << ": this text was rejected before";
      if (r.contains("reason") && r["reason"].is_string()) {
        std::cout << " (" << terminalText(r["reason"].get<std::string>()) << ")";
      }
      std::cout << "; nothing was saved\n";
      return;
    }
    if (status == "queued") {
      std::cout << ctx.style.yellow("queued") << " (" << scope << "): the team server cannot be reached; "
                << "the save is kept in memqd's outbox and sent when the server is back\n";
      return;
    }
    std::cout << status << " " << ctx.style.yellow(shortId(r)) << " (" << scope << ")\n";
    if (r.contains("hint") && r["hint"].is_string()) std::cout << terminalText(r["hint"].get<std::string>()) << "\n";
    for (const auto& f : r.value("anchored", json::array())) {
      std::cout << "anchored " << terminalText(fileRefText(f))
                << " (the lines this tab edited; --no-anchor leaves them out)\n";
    }
    for (const auto& s : r.value("similar", json::array())) {
      std::cout << "similar: " << shortId(s) << " (" << static_cast<int>(s.value("weight", 0.0) * 100 + 0.5) << "%) "
                << terminalText(s.value("summary", "")) << "\n";
    }
  }, Paging::kNo, &result);
  // The refusal is seen in the result, which callAndPrint has already printed (human or --json).
  if (rc == kExitOk && result.value("status", "") == "rejected") return kExitRefused;
  return rc;
}

int cmdGet(Context& ctx, const std::vector<std::string>& words) {
  Args a;
  if (int rc = parseOrUsage(a, words, {}); rc >= 0) return rc;
  if (int rc = needsId(a, "get"); rc >= 0) return rc;
  return callAndPrint(ctx, "memory/get", {{"id", a.positional()[0]}}, [&](const json& r) { printMemory(ctx, r); });
}

int cmdUpdate(Context& ctx, const std::vector<std::string>& words) {
  Args a;
  if (int rc = parseOrUsage(a, words, {{}, {"summary", "details", "category"}, {"topic", "file"}}); rc >= 0) return rc;
  if (int rc = needsId(a, "update"); rc >= 0) return rc;
  json p = {{"id", a.positional()[0]}};
  if (auto s = a.value("summary")) p["summary"] = *s;
  if (auto d = a.value("details")) p["details"] = *d;
  if (auto c = a.value("category")) p["category"] = *c;
  if (a.has("topic")) p["topics"] = a.values("topic");
  if (a.has("file")) {
    if (auto rc = anchoredFilesOf(ctx, a.values("file"), p["files"])) return *rc;
  }
  if (p.size() == 1) return usageError("memq update: nothing to change (give --summary, --details, --category, --topic or --file)");
  return callAndPrint(ctx, "memory/update", p, [&](const json& r) { printMemory(ctx, r); });
}

int cmdList(Context& ctx, const std::vector<std::string>& words) {
  Args a;
  if (int rc = parseOrUsage(a, words, {{"pinned"}, {"category", "topic", "state", "file", "limit", "offset"}, {}}); rc >= 0)
    return rc;
  if (!a.positional().empty()) return usageError("memq list takes no positional arguments");
  json p = json::object();
  if (auto c = a.value("category")) p["category"] = *c;
  if (auto t = a.value("topic")) p["topic"] = *t;
  if (a.flag("pinned")) p["pinned"] = true;
  if (auto s = a.value("state")) p["state"] = *s;
  if (auto f = a.value("file")) p["file"] = fileArgument(ctx, *f);
  int limit = 50, offset = 0;
  if (auto rc = parseInt(a.value("limit"), "limit", limit, "memory/list", "limit")) return *rc;
  if (auto rc = parseInt(a.value("offset"), "offset", offset, "memory/list", "offset")) return *rc;
  p["limit"] = limit;
  if (offset) p["offset"] = offset;
  return callAndPrint(ctx, "memory/list", p, [&](const json& r) {
    printList(ctx, r["memories"]);
    std::cout << ctx.style.dim(std::to_string(r["memories"].size()) + " of " + std::to_string(r["total"].get<int64_t>()) +
                               " memories")
              << "\n";
  }, Paging::kYes);
}

int cmdSearch(Context& ctx, const std::vector<std::string>& words) {
  Args a;
  if (int rc = parseOrUsage(a, words, {{"explain"}, {"limit", "ranker"}, {}}); rc >= 0) return rc;
  if (a.positional().empty()) return usageError(usageLine("search"));
  std::string query;
  for (const auto& w : a.positional()) query += (query.empty() ? "" : " ") + w;
  json p = {{"query", query}};
  int limit = 10;
  if (auto rc = parseInt(a.value("limit"), "limit", limit, "memory/search", "limit")) return *rc;
  p["limit"] = limit;
  if (auto r = a.value("ranker")) p["ranker"] = *r;
  if (a.flag("explain")) p["explain"] = true;
  return callAndPrint(ctx, "memory/search", p, [&](const json& r) { printHits(ctx, r); }, Paging::kYes);
}

int cmdRecall(Context& ctx, const std::vector<std::string>& words) {
  Args a;
  if (int rc = parseOrUsage(a, words, {{"explain", "no-mark"}, {"limit", "max-chars", "ranker", "threshold"}, {"file"}});
      rc >= 0)
    return rc;
  std::string query;
  for (const auto& w : a.positional()) query += (query.empty() ? "" : " ") + w;
  if (query.empty() && !a.has("file")) return usageError(usageLine("recall") + " (give a query or a file)");
  json p = json::object();
  if (!query.empty()) p["query"] = query;
  if (a.has("file")) {
    if (auto rc = anchoredFilesOf(ctx, a.values("file"), p["files"])) return *rc;
  }
  int limit = 3, maxChars = 2400;
  if (auto rc = parseInt(a.value("limit"), "limit", limit, "memory/recall", "limit")) return *rc;
  if (auto rc = parseInt(a.value("max-chars"), "max-chars", maxChars, "memory/recall", "max_chars")) return *rc;
  p["limit"] = limit;
  p["max_chars"] = maxChars;
  if (auto r = a.value("ranker")) p["ranker"] = *r;
  if (auto t = a.value("threshold")) {
    char* end = nullptr;
    errno = 0;
    const double threshold = std::strtod(t->c_str(), &end);
    if (t->empty() || *end != '\0' || errno == ERANGE || !std::isfinite(threshold)) {
      return usageError("--threshold must be a number, such as 0.05");
    }
    p["threshold"] = threshold;
  }
  if (a.flag("explain")) p["explain"] = true;
  if (a.flag("no-mark")) p["mark_used"] = false;
  return callAndPrint(ctx, "memory/recall", p, [&](const json& r) { printHits(ctx, r); }, Paging::kYes);
}

int simpleIdCommand(Context& ctx, const std::vector<std::string>& words, const char* name, const char* method,
                    OptionSpec spec = {}, const std::function<Status(const Args&, json&)>& extra = nullptr) {
  Args a;
  if (int rc = parseOrUsage(a, words, spec); rc >= 0) return rc;
  if (int rc = needsId(a, name); rc >= 0) return rc;
  json p = {{"id", a.positional()[0]}};
  if (extra) {
    Status st = extra(a, p);
    if (!st) return usageError(st.message());
  }
  return callAndPrint(ctx, method, p, [&](const json& r) {
    if (r.contains("old")) {
      std::cout << "superseded " << shortId(r["old"]) << " by " << shortId(r["new"]) << "\n";
    } else if (r.contains("purged")) {
      std::cout << "purged " << terminalText(a.positional()[0]) << "\n";
    } else {
      std::cout << memoryLine(r, ctx.style) << "\n";
    }
  });
}

int filesCommand(Context& ctx, const std::vector<std::string>& words, const char* name, const char* method) {
  Args a;
  if (int rc = parseOrUsage(a, words, {}); rc >= 0) return rc;
  if (a.positional().size() < 2) return usageError(usageLine(name));
  std::vector<std::string> paths(a.positional().begin() + 1, a.positional().end());
  json files;
  if (std::string(name) == "attach") {
    if (auto rc = anchoredFilesOf(ctx, paths, files)) return *rc;
  } else {
    files = filesOf(ctx, paths);  // detach names files only
  }
  return callAndPrint(ctx, method, {{"id", a.positional()[0]}, {"files", std::move(files)}},
                      [&](const json& r) { printMemory(ctx, r); });
}

int cmdHint(Context& ctx, const std::vector<std::string>& words) {
  Args a;
  if (int rc = parseOrUsage(a, words, {{}, {"query"}, {"file"}}); rc >= 0) return rc;
  if (a.positional().size() != 1) return usageError(usageLine("hint"));
  json p = {{"tool", a.positional()[0]}};
  if (a.has("file")) {
    if (auto rc = anchoredFilesOf(ctx, a.values("file"), p["files"])) return *rc;
  }
  if (auto q = a.value("query")) p["query"] = *q;
  return callAndPrint(ctx, "hints/for_tool", p, [&](const json& r) {
    for (const auto& l : r["lines"]) std::cout << terminalText(l.get<std::string>()) << "\n";
  });
}

int cmdCochange(Context& ctx, const std::vector<std::string>& words) {
  Args a;
  if (int rc = parseOrUsage(a, words, {{}, {"limit"}, {}}); rc >= 0) return rc;
  if (a.positional().size() != 1) return usageError(usageLine("cochange"));
  int limit = 10;
  if (auto rc = parseInt(a.value("limit"), "limit", limit, "repo/cochange", "limit")) return *rc;
  return callAndPrint(ctx, "repo/cochange", {{"file", fileArgument(ctx, a.positional()[0])}, {"limit", limit}},
                      [&](const json& r) {
                        for (const auto& n : r["neighbors"]) {
                          char s[16];
                          std::snprintf(s, sizeof s, "%.3f", n["strength"].get<double>());
                          std::cout << s << "  " << n["count"] << "x  " << terminalText(n["path"].get<std::string>())
                                    << "\n";
                        }
                        if (r["neighbors"].empty()) std::cout << "no co-change neighbours\n";
                      });
}

int cmdBlast(Context& ctx, const std::vector<std::string>& words) {
  Args a;
  if (int rc = parseOrUsage(a, words, {}); rc >= 0) return rc;
  if (a.positional().size() != 1) return usageError(usageLine("blast"));
  return callAndPrint(ctx, "repo/blast_radius", {{"file", fileArgument(ctx, a.positional()[0])}}, [&](const json& r) {
    std::cout << r["radius"] << " dependent file(s)\n";
    for (const auto& d : r.value("dependents", json::array())) {
      std::cout << "  " << terminalText(d.get<std::string>()) << "\n";
    }
  });
}

int cmdRefresh(Context& ctx, const std::vector<std::string>& words) {
  if (!words.empty()) return usageError("memq refresh takes no arguments");
  return callAndPrint(ctx, "repo/refresh", json::object(), [&](const json& r) {
    std::cout << "walked " << r["walked_commits"] << " commit(s); " << r["pairs"] << " co-change pairs at "
              << terminalText(r["head"].get<std::string>().substr(0, 12)) << "\n";
  });
}

// Whether a conninfo plainly names a password (password=..., or a URI's user:password@): refused before it leaves
// the shell's process, so it never crosses the socket (memqd checks again, with libpq's own parser).
bool namesPassword(const std::string& conninfo) {
  // A keyword=value conninfo's word, or a URI's query parameter (`?password=`, `&sslpassword=`).
  static const std::regex kKeyword(R"((^|[\s?&])(ssl)?password\s*=)", std::regex::icase);
  static const std::regex kUri(R"(^postgres(ql)?://[^/@?]*:[^/@?]*@)", std::regex::icase);
  return std::regex_search(conninfo, kKeyword) || std::regex_search(conninfo, kUri);
}

void printTeamStatus(Context& ctx, const json& r) {
  if (!r.value("configured", false)) {
    std::cout << "no team scope for this project (memq team connect CONNINFO sets one up; it would be kept in "
              << terminalText(r.value("config_path", "")) << ")\n";
    return;
  }
  const bool online = r.value("online", false);
  std::cout << "team scope " << terminalText(r.value("conninfo", "")) << "\n"
            << "  " << (online ? ctx.style.bold("connected") : ctx.style.yellow("offline"));
  if (!r.value("role", "").empty()) std::cout << " as role " << terminalText(r.value("role", ""));
  std::cout << "\n  last seq applied: " << r.value("last_seq", 0) << ", queued saves: " << r.value("queued", 0) << "\n";
  if (r.contains("error")) std::cout << "  " << terminalText(r["error"].get<std::string>()) << "\n";
}

int cmdTeam(Context& ctx, const std::vector<std::string>& words) {
  const std::string sub = words.empty() ? "" : words[0];
  if (sub == "connect") {
    if (words.size() != 2 || words[1].empty()) return usageError(usageLine("team"));
    if (namesPassword(words[1])) {
      return usageError("the conninfo names a password; memq never stores one. Put it in a passfile (~/.pgpass, or "
                        "passfile=PATH / PGPASSFILE) or memqd's PG* environment, and connect without it");
    }
    return callAndPrint(ctx, "team/connect", json{{"conninfo", words[1]}}, [&](const json& r) { printTeamStatus(ctx, r); });
  }
  if ((sub == "status" || sub == "disconnect") && words.size() == 1) {
    return callAndPrint(ctx, "team/" + sub, json::object(), [&](const json& r) { printTeamStatus(ctx, r); });
  }
  return usageError(usageLine("team"));
}

int cmdAudit(Context& ctx, const std::vector<std::string>& words) {
  Args a;
  if (int rc = parseOrUsage(a, words, {{}, {"id", "limit", "since"}, {}}); rc >= 0) return rc;
  json p = json::object();
  if (auto id = a.value("id")) p["id"] = *id;
  if (auto since = a.value("since")) p["since"] = *since;
  int limit = 100;
  if (auto rc = parseInt(a.value("limit"), "limit", limit, "audit/list", "limit")) return *rc;
  p["limit"] = limit;
  return callAndPrint(ctx, "audit/list", p, [&](const json& r) {
    for (const auto& e : r["events"]) {
      std::cout << e["seq"] << "  " << terminalText(e["at"].get<std::string>()) << "  "
                << terminalText(e["memory_id"].get<std::string>().substr(0, 8)) << "  "
                << terminalText(e["action"].get<std::string>()) << "  " << terminalText(e["actor"].get<std::string>())
                << "\n";
    }
  }, Paging::kYes);
}

int cmdExport(Context& ctx, const std::vector<std::string>& words) {
  Args a;
  if (int rc = parseOrUsage(a, words, {{}, {"state"}, {}}); rc >= 0) return rc;
  json p = json::object();
  if (auto s = a.value("state")) p["state"] = *s;
  auto link = connect(ctx);
  if (!link) return reportError(ctx, link.status());
  // Page by page (each a few MiB at most), each written out before the next is asked for, so an export of any size
  // costs the daemon and this process one page of memory.
  p["cursor"] = "";
  bool warned = false;  // every page repeats a scope's warning; it is printed once
  while (true) {
    auto r = link->call("export", p);
    if (!r) return reportError(ctx, r.status());
    std::cout << (*r)["jsonl"].get<std::string>();
    if (!std::cout) break;  // a full disk: main says so; the pages left are not asked for
    if (!warned && r->contains("warnings")) {
      printWarnings(ctx, *r);
      warned = true;
    }
    if (!r->contains("next_cursor")) break;
    p["cursor"] = (*r)["next_cursor"];
  }
  std::cout.flush();
  // What could not be written is said by main, once, for every command.
  return kExitOk;
}

// The JSONL of one import request at most, escaped as it travels inside the request: well under the daemon's limit on
// one message (1 MiB), with room for the rest of the request.
constexpr size_t kImportRequestBytes = size_t{768} << 10;
// How long the daemon may take to write a whole import (its last request) before the CLI gives up waiting.
constexpr std::chrono::minutes kImportCommitTimeout{30};

int cmdImport(Context& ctx, const std::vector<std::string>& words) {
  Args a;
  if (int rc = parseOrUsage(a, words, {{}, {"from-empryo"}, {}}); rc >= 0) return rc;
  std::string jsonl;
  std::string source = "standard input";
  if (auto empryo = a.value("from-empryo")) {
    if (!a.positional().empty()) return usageError("usage: memq import --from-empryo PATH/TO/memory.db");
    EmpryoRefsLeftOut leftOut;
    auto converted = empryoToJsonl(*empryo, leftOut);
    if (!converted) {
      std::cerr << "memq: " << converted.status().message() << "\n";
      return kExitUsage;
    }
    // What the memories lose on the way, said once on stderr (stdout stays the counts, or the --json result).
    if (leftOut.notInProject > 0 || leftOut.pastLimit > 0 || leftOut.supersededAsHidden > 0) {
      std::string lost;
      if (leftOut.notInProject > 0) {
        lost = std::to_string(leftOut.notInProject) + " file ref" + (leftOut.notInProject == 1 ? "" : "s") +
               " skipped (absolute or outside the project)";
      }
      if (leftOut.pastLimit > 0) {
        lost += (lost.empty() ? "" : ", ") + std::to_string(leftOut.pastLimit) + " dropped past " +
                std::to_string(kMaxFiles) + " per memory";
      }
      if (leftOut.supersededAsHidden > 0) {
        const bool one = leftOut.supersededAsHidden == 1;
        lost += (lost.empty() ? "" : ", ") + std::to_string(leftOut.supersededAsHidden) + " superseded " +
                (one ? "memory" : "memories") + " imported as hidden (" + (one ? "its" : "their") +
                " replacement is not in the database)";
      }
      std::cerr << "memq: import: " << lost << "\n";
    }
    jsonl = std::move(*converted);
    source = *empryo;
  } else {
    if (a.positional().size() != 1) return usageError("usage: memq import FILE (or - for standard input)");
    std::string path = a.positional()[0];
    std::stringstream buf;
    if (path == "-") {
      buf << std::cin.rdbuf();
    } else {
      std::ifstream in(path);
      if (!in) return usageError("cannot read " + path);
      buf << in.rdbuf();
      source = path;
    }
    jsonl = buf.str();
  }
  // `memq export` writes every readable scope, each line naming its own. Unless --scope says where everything goes,
  // each line goes back to the scope it came from (global preferences stay global), in one import per scope. A file
  // with a line that is not a JSON object goes over whole, so the daemon names the line and writes nothing. A line
  // naming the team scope (`memq --scope team export`) is sent there too, never to the write scope: memqd refuses
  // it (import never writes the team scope, docs/team.md), and that import goes first, so nothing is written.
  struct Group {
    std::string scope;  // "" = the connection's write scope
    std::vector<std::string> lines;
    std::vector<size_t> fileLines;  // the line of the file each one is
  };
  std::vector<Group> groups;
  {
    std::istringstream in(jsonl);
    std::string line;
    bool malformed = false;
    std::vector<std::pair<std::string, std::string>> scoped;  // scope, line
    while (std::getline(in, line)) {
      std::string scope;
      if (!ctx.options.scope && line.find_first_not_of(" \t\r") != std::string::npos) {
        json j = json::parse(line, nullptr, false);
        if (!j.is_object()) malformed = true;
        else if (j.contains("scope") && j["scope"].is_string()) scope = j["scope"].get<std::string>();
        if (scope != "project" && scope != "global" && scope != "team") scope.clear();
      }
      scoped.emplace_back(std::move(scope), std::move(line));
    }
    for (size_t i = 0; i < scoped.size(); ++i) {
      const std::string scope = malformed ? std::string() : scoped[i].first;
      auto it = std::find_if(groups.begin(), groups.end(), [&](const Group& g) { return g.scope == scope; });
      if (it == groups.end()) it = groups.insert(groups.end(), Group{scope, {}, {}});
      it->lines.push_back(std::move(scoped[i].second));
      it->fileLines.push_back(i + 1);
    }
    // The team's import first: its refusal then comes before any other scope's import is written.
    std::stable_partition(groups.begin(), groups.end(), [](const Group& g) { return g.scope == "team"; });
  }
  auto link = connect(ctx);
  if (!link) return reportError(ctx, link.status());
  // The daemon numbers the lines of one import as it received them; this names the line of the file instead.
  auto withFileLine = [&](const Status& st, const Group& g) {
    const json& data = st.data();
    if (g.scope == "team" && !isTransportError(st) && !isConnectError(st)) {
      // memqd refuses the scope before it reads a line (or has no team scope to open): name the line that asked.
      return Status(st.code(), st.message() + " (line " + std::to_string(g.fileLines.front()) + " of " + source +
                                   " names scope team, which import never writes; nothing was imported)",
                    data);
    }
    if (!data.is_object() || !data.contains("line") || !data["line"].is_number_unsigned()) return st;
    const size_t n = data["line"].get<size_t>();
    if (n == 0 || n > g.fileLines.size()) return st;
    return Status(st.code(), st.message() + " (line " + std::to_string(g.fileLines[n - 1]) + " of " + source + ")",
                  data);
  };
  // Each scope's lines go in requests of at most kImportRequestBytes; the daemon stages them and writes the whole
  // scope's import in one transaction with the last one, so a failure anywhere leaves that scope as it was.
  json total = {{"created", 0}, {"deduped", 0}, {"rejected", 0}, {"tombstones", 0}};
  for (const Group& g : groups) {
    std::string chunk;
    size_t chunkEscaped = 0;
    for (size_t i = 0; i <= g.lines.size(); ++i) {
      size_t escaped = 0;
      if (i < g.lines.size()) {
        try {
          escaped = json(g.lines[i]).dump().size();
        } catch (const json::exception&) {
          std::cerr << "memq: line " << g.fileLines[i] << " of " << source << " is not valid UTF-8; nothing was imported"
                    << (groups.size() > 1 ? " into this scope" : "") << "\n";
          return kExitUsage;
        }
        if (escaped > kImportRequestBytes) {
          std::cerr << "memq: line " << g.fileLines[i] << " of " << source << " is longer than one import request may "
                    << "carry (" << (kImportRequestBytes >> 10) << " KiB); nothing was imported"
                    << (groups.size() > 1 ? " into this scope" : "") << "\n";
          return kExitUsage;
        }
      }
      const bool last = i == g.lines.size();
      if (!last && (chunk.empty() || chunkEscaped + escaped <= kImportRequestBytes)) {
        chunk += g.lines[i] + "\n";
        chunkEscaped += escaped;
        continue;
      }
      json params = {{"jsonl", chunk}};
      if (!g.scope.empty()) params["scope"] = g.scope;
      if (!last) params["more"] = true;
      auto r = link->call("import", params,
                          last ? std::chrono::duration_cast<std::chrono::milliseconds>(kImportCommitTimeout)
                               : RpcClient::kDefaultCallTimeout);
      if (!r) return reportError(ctx, withFileLine(r.status(), g));
      if (last) {
        for (auto& [key, n] : total.items()) n = n.get<int64_t>() + r->value(key, int64_t{0});
        break;
      }
      chunk = g.lines[i] + "\n";
      chunkEscaped = escaped;
    }
  }
  if (ctx.options.json) {
    std::cout << jsonText(total) << "\n";
  } else {
    std::cout << "created " << total["created"] << ", deduped " << total["deduped"] << ", rejected "
              << total["rejected"] << ", tombstones " << total["tombstones"] << "\n";
  }
  return kExitOk;
}

int cmdStats(Context& ctx, const std::vector<std::string>& words) {
  if (!words.empty()) return usageError("memq stats takes no arguments");
  return callAndPrint(ctx, "stats", json::object(), [&](const json& r) {
    for (const auto& [scope, s] : r["scopes"].items()) {
      std::cout << ctx.style.bold(terminalText(scope)) << "  " << terminalText(s["path"].get<std::string>()) << "\n";
      for (const auto& [state, n] : s["states"].items()) std::cout << "  " << state << ": " << n << "\n";
      std::cout << "  tombstones: " << s["tombstones"] << ", events: " << s["events"] << ", size: " << s["db_bytes"]
                << " bytes\n";
    }
  });
}

int cmdStatus(Context& ctx, const std::vector<std::string>& words, bool autostart) {
  if (!words.empty()) return usageError("memq status takes no arguments");
  auto link = DaemonLink::open(ctx.options, autostart);
  if (!link) {
    if (!autostart && isConnectError(link.status()) && !ctx.options.json) {
      std::cerr << "memq: memqd is not running on "
                << (ctx.options.socket.empty() ? defaultSocketPath() : ctx.options.socket) << " ("
                << link.status().message() << ")\n";
      return kExitUnreachable;
    }
    return reportError(ctx, link.status());
  }
  auto r = link->call("daemon/status", json::object());
  if (!r) return reportError(ctx, r.status());
  if (ctx.options.json) {
    std::cout << jsonText(*r) << "\n";
  } else {
    std::cout << "memqd " << terminalText((*r)["version"].get<std::string>()) << " pid " << (*r)["pid"] << " on "
              << terminalText((*r)["socket"].get<std::string>()) << ", up "
              << static_cast<int64_t>((*r)["uptime_s"].get<double>())
              << " s, " << (*r)["connections"] << " connection(s), " << (*r)["requests_served"] << " request(s)";
    if (r->contains("scan_kernel")) {
      std::cout << ", vector scan " << terminalText((*r)["scan_kernel"].get<std::string>());
    }
    std::cout << "\n";
    for (const auto& path : r->value("read_only_scopes", json::array())) {
      std::cout << "read only: " << terminalText(path.get<std::string>())
                << " (another process holds it; writes to it are refused until it lets it go)\n";
    }
  }
  return kExitOk;
}

int cmdDaemon(Context& ctx, const std::vector<std::string>& words) {
  Args a;
  if (int rc = parseOrUsage(a, words, {{"foreground"}, {}, {}}); rc >= 0) return rc;
  if (a.positional().size() != 1) return usageError(usageLine("daemon"));
  const std::string action = a.positional()[0];
  std::string socket = ctx.options.socket.empty() ? defaultSocketPath() : ctx.options.socket;
  // Set by stop() when the daemon it stopped served a socket its service manager passed it (systemd's
  // memqd.socket): that socket outlives memqd and accepts connections, and the next one starts memqd again.
  bool socketOutlivesDaemon = false;
  auto stop = [&]() -> int {
    auto c = RpcClient::connect(socket, std::chrono::seconds(2));
    if (!c && isNobodyListening(c.status())) {
      if (!ctx.options.json) std::cout << "memqd is not running\n";
      return kExitOk;
    }
    // A socket memq may not connect to (another user's, a timeout) may have a memqd behind it: not "not running".
    if (!c) return reportError(ctx, c.status());
    // memqd writes its pid file next to the socket and removes it as it exits, after draining in-flight requests.
    const auto pidFile = std::filesystem::path(socket).parent_path() / "memqd.pid";
    long pid = 0;
    std::ifstream(pidFile) >> pid;
    if (auto status = c->call("daemon/status", json::object())) {
      pid = status->value("pid", pid);
      socketOutlivesDaemon = status->value("socket_activated", false);
    }
    // The shutdown on a connection of its own: the status call's may have been closed after its answer.
    c = RpcClient::connect(socket, std::chrono::seconds(2));
    if (!c) return reportError(ctx, c.status());
    auto r = c->call("daemon/shutdown", json::object());
    if (!r) return reportError(ctx, r.status());
    auto processAlive = [&] {
      return pid > 0 && std::filesystem::exists(pidFile) && ::kill(static_cast<pid_t>(pid), 0) == 0;
    };
    // Wait until the socket stops answering, then until the process is gone (its pid file removed, or no such pid),
    // so that `daemon stop` returning means stopped and `daemon restart` never overlaps two daemons. A socket its
    // service manager owns keeps accepting, and a probe would start memqd again: only the process is waited for.
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (!socketOutlivesDaemon && std::chrono::steady_clock::now() < deadline &&
           RpcClient::connect(socket, std::chrono::milliseconds(100))) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    while (std::chrono::steady_clock::now() < deadline && processAlive()) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    // Still draining (a long import's commit, say): not stopped, and a restart now would start a second daemon.
    const bool answering =
        !socketOutlivesDaemon && static_cast<bool>(RpcClient::connect(socket, std::chrono::milliseconds(100)));
    const bool alive = processAlive();
    if (answering || alive) {
      std::cerr << "memq: memqd" << (pid > 0 ? " (pid " + std::to_string(pid) + ")" : std::string())
                << " was asked to stop but is still " << (answering ? "answering" : "running")
                << " after 10 s (finishing its requests); try again shortly\n";
      return kExitUnreachable;
    }
    if (!ctx.options.json) {
      std::cout << "memqd stopped\n";
      if (socketOutlivesDaemon) {
        std::cout << "its socket " << socket << " stays with the service manager, which starts memqd again at the "
                  << "next connection (systemctl --user stop memqd.socket stops that too)\n";
      }
    }
    return kExitOk;
  };
  auto start = [&]() -> int {
    if (a.flag("foreground")) {
      std::string bin = memqdPath();
      std::vector<std::string> argvS = {bin, "--foreground", "--socket", socket};
      std::vector<char*> argv;
      for (auto& s : argvS) argv.push_back(s.data());
      argv.push_back(nullptr);
      ::execvp(bin.c_str(), argv.data());
      std::cerr << "memq: cannot run " << bin << "\n";
      return kExitUnreachable;
    }
    auto alreadyRunning = [&] {
      // After a stop of a socket-activated memqd, the connection that found it is what started it again.
      if (!ctx.options.json) {
        std::cout << (socketOutlivesDaemon ? "memqd started on " : "memqd is already running on ") << socket
                  << (socketOutlivesDaemon ? " by its service manager\n" : "\n");
      }
      return kExitOk;
    };
    if (RpcClient::connect(socket, std::chrono::milliseconds(500))) return alreadyRunning();
    // As the autostarting clients do (DaemonLink::open): a client that found no daemon at the same moment either
    // starts memqd before this looks again, or waits and finds the one started here; whichever started it, one runs.
    bool startedHere = false;
    auto reached = startOrJoin(socket, [] { return std::chrono::milliseconds(5000); }, &startedHere);
    if (!reached) {
      std::cerr << "memq: " << terminalText(reached.status().message()) << "\n";
      return kExitUnreachable;
    }
    if (!startedHere) return alreadyRunning();
    if (!ctx.options.json) std::cout << "memqd started on " << socket << "\n";
    return kExitOk;
  };
  if (action == "start") return start();
  if (action == "stop") return stop();
  if (action == "restart") {
    if (int rc = stop(); rc != kExitOk) return rc;
    return start();
  }
  if (action == "status") return cmdStatus(ctx, {}, false);
  return usageError(usageLine("daemon"));
}

// memq __complete-ids: for the shell completions, the 8-character prefix and summary of up to 200 memories (any
// state), one "PREFIX<TAB>SUMMARY" a line. Only when a daemon already runs: completion must never start one or
// print an error into the command line being typed, so any failure is an empty answer with exit 0.
int cmdCompleteIds(Context& ctx, const std::vector<std::string>& words) {
  if (!words.empty()) return kExitOk;
  auto link = DaemonLink::open(ctx.options, /*autostart=*/false, std::chrono::milliseconds(500));
  if (!link) return kExitOk;
  auto r = link->call("memory/list", {{"state", "all"}, {"limit", 200}}, std::chrono::milliseconds(1000));
  if (!r) return kExitOk;
  for (const auto& m : (*r)["memories"]) {
    std::string summary = m.value("summary", "");
    std::replace(summary.begin(), summary.end(), '\t', ' ');
    std::replace(summary.begin(), summary.end(), '\n', ' ');
    // The shell shows the summary beside the candidate ids, on the terminal being typed in.
    std::cout << shortId(m) << "\t" << terminalText(summary) << "\n";
  }
  return kExitOk;
}

}  // namespace

// The top of the git work tree holding `dir` (the nearest directory up from it with a `.git`, a directory or a
// worktree's file), else `dir` itself: the project root memqd locates for it (docs/design.md §4).
std::string projectRootOf(const std::string& dir) {
  std::error_code ec;
  for (std::filesystem::path p = dir; !p.empty(); p = p.parent_path()) {
    if (std::filesystem::exists(p / ".git", ec)) return p.string();
    if (p == p.parent_path()) break;
  }
  return dir;
}

std::string fileArgument(const Context& ctx, const std::string& path) {
  if (path.empty() || path.front() == '/') return path;
  if (isUnder(ctx.cwd, ctx.options.project) || isUnder(ctx.cwd, projectRootOf(ctx.options.project))) {
    return (std::filesystem::path(ctx.cwd) / path).lexically_normal().string();
  }
  return path;
}

int usageError(const std::string& message) {
  std::cerr << "memq: " << message << "\n";
  return kExitUsage;
}

int reportError(const Context& ctx, const Status& status) {
  const bool unreachable = isConnectError(status) ||
                           (status.data().is_object() && status.data().value("transport", "") == "connect");
  if (ctx.options.json) {
    json err = {{"code", static_cast<int>(status.code())}, {"message", status.message()}};
    if (!status.data().is_null()) err["data"] = status.data();
    // The message may quote what the user typed (a socket path, which need not be UTF-8) or stored text (a
    // rejection's reason): escaped as the --json output is.
    std::cerr << jsonText(err, -1) << "\n";
  } else {
    // The daemon's messages may quote stored text (a rejection's reason, a path).
    std::cerr << "memq: " << (unreachable ? "" : std::string(errorCodeName(status.code())) + ": ")
              << terminalText(status.message()) << "\n";
    if (status.code() == ErrorCode::kAmbiguous && status.data().contains("candidates")) {
      for (const auto& c : status.data()["candidates"]) {
        std::cerr << "  " << terminalText(c.value("scope", "")) << "  " << terminalText(c.value("id", "")) << "\n";
      }
    }
  }
  if (unreachable || isTransportError(status)) return kExitUnreachable;
  return kExitRpcError;
}

int runCommand(Context& ctx, const std::string& command, const std::vector<std::string>& words) {
  if (command == "save") return cmdSave(ctx, words);
  if (command == "get") return cmdGet(ctx, words);
  if (command == "update") return cmdUpdate(ctx, words);
  if (command == "list") return cmdList(ctx, words);
  if (command == "search") return cmdSearch(ctx, words);
  if (command == "recall") return cmdRecall(ctx, words);
  if (command == "hide") {
    return simpleIdCommand(ctx, words, "hide", "memory/hide", {{}, {"reason"}, {}}, [](const Args& a, json& p) {
      if (auto r = a.value("reason")) p["reason"] = *r;
      return Status::ok();
    });
  }
  if (command == "restore") return simpleIdCommand(ctx, words, "restore", "memory/restore");
  if (command == "pin") return simpleIdCommand(ctx, words, "pin", "memory/pin");
  if (command == "unpin") return simpleIdCommand(ctx, words, "unpin", "memory/unpin");
  if (command == "supersede") {
    return simpleIdCommand(ctx, words, "supersede", "memory/supersede", {{}, {"by"}, {}}, [](const Args& a, json& p) {
      auto by = a.value("by");
      if (!by) return Status::invalidField("by", usageLine("supersede"));
      p["by"] = *by;
      return Status::ok();
    });
  }
  if (command == "reject") {
    return simpleIdCommand(ctx, words, "reject", "memory/reject", {{}, {"reason"}, {}}, [](const Args& a, json& p) {
      auto r = a.value("reason");
      if (!r || r->empty()) return Status::invalidField("reason", usageLine("reject") + " (a reason is required)");
      p["reason"] = *r;
      return Status::ok();
    });
  }
  if (command == "unreject") return simpleIdCommand(ctx, words, "unreject", "memory/unreject");
  if (command == "purge") {
    return simpleIdCommand(ctx, words, "purge", "memory/purge", {{"yes"}, {}, {}}, [](const Args& a, json& p) {
      if (!a.flag("yes")) return Status::invalidField("yes", "memq purge deletes for good; confirm with --yes");
      p["confirm"] = true;
      return Status::ok();
    });
  }
  if (command == "attach") return filesCommand(ctx, words, "attach", "memory/attach");
  if (command == "detach") return filesCommand(ctx, words, "detach", "memory/detach");
  if (command == "hint") return cmdHint(ctx, words);
  if (command == "cochange") return cmdCochange(ctx, words);
  if (command == "blast") return cmdBlast(ctx, words);
  if (command == "refresh") return cmdRefresh(ctx, words);
  if (command == "review") return runReview(ctx, words);
  if (command == "audit") return cmdAudit(ctx, words);
  if (command == "export") return cmdExport(ctx, words);
  if (command == "import") return cmdImport(ctx, words);
  if (command == "stats") return cmdStats(ctx, words);
  if (command == "team") return cmdTeam(ctx, words);
  // `status` reports; it never starts a daemon (that is `daemon start`, or any command that needs one).
  if (command == "status") return cmdStatus(ctx, words, false);
  if (command == "daemon") return cmdDaemon(ctx, words);
  if (command == "mcp") return runMcp(ctx, words);
  if (command == "hook") return runHook(ctx, words);
  if (command == "bench") return runBench(ctx, words);
  if (command == "__complete-ids") return cmdCompleteIds(ctx, words);
  return usageError("unknown command '" + command + "' (see memq --help)");
}

}  // namespace memq::cli
