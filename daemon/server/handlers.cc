// Thin handlers: bind already-validated params to a Service call, and the call's result to JSON.
// No logic lives here beyond that translation; see daemon/service for what each method does.
#include <optional>

#include "daemon/recall/recall_engine.h"
#include "daemon/server/dispatcher.h"
#include "daemon/server/reply_json.h"

namespace memq {

namespace {

using json = nlohmann::json;

std::string str(const json& p, const char* key, const std::string& fallback = "") {
  auto it = p.find(key);
  return it != p.end() && it->is_string() ? it->get<std::string>() : fallback;
}

std::optional<std::string> optStr(const json& p, const char* key) {
  auto it = p.find(key);
  if (it == p.end() || !it->is_string()) return std::nullopt;
  return it->get<std::string>();
}

std::optional<int64_t> optInt(const json& p, const char* key) {
  auto it = p.find(key);
  if (it == p.end() || !it->is_number_integer()) return std::nullopt;
  return it->get<int64_t>();
}

std::optional<bool> optBool(const json& p, const char* key) {
  auto it = p.find(key);
  if (it == p.end() || !it->is_boolean()) return std::nullopt;
  return it->get<bool>();
}

std::vector<std::string> strings(const json& p, const char* key) {
  std::vector<std::string> out;
  auto it = p.find(key);
  if (it == p.end() || !it->is_array()) return out;
  for (const auto& v : *it) {
    if (v.is_string()) out.push_back(v.get<std::string>());
  }
  return out;
}

Result<json> memoryResult(Result<Memory> r) {
  if (!r) return r.status();
  return memoryToJson(*r);
}

// Recall and search results are the largest replies memqd sends; they are written as text (reply_json.h).
Result<std::string> hitsResult(Result<std::vector<RecallHit>> r, bool explain) {
  if (!r) return r.status();
  return recallHitsJsonText(*r, explain);
}

Result<RecallRequest> recallRequest(const json& p, bool isSearch) {
  RecallRequest r;
  r.query = str(p, "query");
  r.files = strings(p, "files");
  r.limit = static_cast<size_t>(optInt(p, "limit").value_or(isSearch ? 10 : 3));
  r.maxChars = static_cast<size_t>(optInt(p, "max_chars").value_or(2400));
  if (auto it = p.find("threshold"); it != p.end() && it->is_number()) r.threshold = it->get<double>();
  if (auto name = optStr(p, "ranker")) {
    if (!parseRanker(*name, r.ranker)) return Status::invalidField("ranker", "ranker must be default or reference");
  }
  r.explain = optBool(p, "explain").value_or(false);
  if (auto sem = optBool(p, "semantic")) r.useSemantic = *sem;
  return r;
}

json hintResultJson(const HintResult& h) {
  json hints = json::array();
  for (const auto& line : h.hints) {
    hints.push_back({{"id", line.id}, {"label", line.label}, {"summary", line.summary}, {"text", line.text}});
  }
  return json{{"lines", h.lines}, {"hints", hints}, {"more", h.more}};
}

MethodTable buildTable() {
  MethodTable t;
  t["initialize"] = {[](HandlerEnv& env, const CallContext&, const json& p) {
    return env.service.initialize(env.client, p);
  }};
  t["memory/save"] = {[](HandlerEnv& env, const CallContext& ctx, const json& p) -> Result<json> {
                        SaveInput in;
                        in.summary = str(p, "summary");
                        in.details = str(p, "details");
                        in.category = optStr(p, "category");
                        in.topics = strings(p, "topics");
                        in.files = strings(p, "files");
                        in.source = str(p, "source", ctx.actor.source);
                        in.sessionId = optStr(p, "session_id");
                        in.mergeTopics = optBool(p, "merge_topics").value_or(false);
                        return env.service.save(ctx, in);
                      },
                      false, true};
  t["memory/get"] = MethodEntry::writingText(
      [](HandlerEnv& env, const CallContext& ctx, const json& p) -> Result<std::string> {
        std::vector<std::string> warnings;
        auto r = env.service.get(ctx, str(p, "id"), &warnings);
        if (!r) return r.status();
        if (warnings.empty()) return memoryJsonText(*r);
        json out = memoryToJson(*r);
        out["warnings"] = warnings;  // the answer may be incomplete (Service::get)
        return out.dump(-1, ' ', false, json::error_handler_t::replace);
      });
  t["memory/update"] = {[](HandlerEnv& env, const CallContext& ctx, const json& p) -> Result<json> {
                          UpdateRequest u;
                          u.summary = optStr(p, "summary");
                          u.details = optStr(p, "details");
                          if (p.contains("category")) u.category = optStr(p, "category");
                          if (p.contains("topics")) u.topics = strings(p, "topics");
                          if (p.contains("files")) u.files = strings(p, "files");
                          u.pinned = optBool(p, "pinned");
                          auto r = env.service.update(ctx, str(p, "id"), u);
                          if (!r) return r.status();
                          json out = memoryToJson(r->memory);
                          out["redactions"] = r->redactions;
                          return out;
                        },
                        false, true};
  t["memory/list"] = {[](HandlerEnv& env, const CallContext& ctx, const json& p) -> Result<json> {
    ListFilter f;
    if (p.contains("category")) f.category = optStr(p, "category");
    f.topic = optStr(p, "topic");
    f.pinned = optBool(p, "pinned");
    std::string state = str(p, "state", "active");
    if (state == "all") {
      f.state = std::nullopt;
    } else if (auto s = parseState(state)) {
      f.state = *s;
    } else {
      return Status::invalidField("state", "state must be active, hidden, superseded, rejected or all");
    }
    f.source = optStr(p, "source");  // a filter here: list is a read, so `source` names no actor
    f.file = optStr(p, "file");
    f.limit = static_cast<int>(optInt(p, "limit").value_or(50));
    f.offset = static_cast<int>(optInt(p, "offset").value_or(0));
    auto r = env.service.list(ctx, f);
    if (!r) return r.status();
    json out = json::array();
    for (const auto& m : r->memories) out.push_back(memoryToJson(m));
    json result{{"memories", std::move(out)}, {"total", r->total}};
    if (!r->warnings.empty()) result["warnings"] = r->warnings;  // the answer may be incomplete
    return result;
  }};
  t["memory/search"] = MethodEntry::writingText(
      [](HandlerEnv& env, const CallContext& ctx, const json& p) -> Result<std::string> {
        auto r = recallRequest(p, true);
        if (!r) return r.status();
        bool explain = r->explain;
        return hitsResult(env.service.search(ctx, std::move(*r)), explain);
      });
  t["memory/recall"] = MethodEntry::writingText(
      [](HandlerEnv& env, const CallContext& ctx, const json& p) -> Result<std::string> {
        auto r = recallRequest(p, false);
        if (!r) return r.status();
        bool explain = r->explain;
        return hitsResult(env.service.recall(ctx, std::move(*r), optBool(p, "mark_used").value_or(true)), explain);
      });
  t["memory/hide"] = {[](HandlerEnv& env, const CallContext& ctx, const json& p) {
                        return memoryResult(env.service.hide(ctx, str(p, "id"), optStr(p, "reason")));
                      },
                      false, true};
  t["memory/restore"] = {[](HandlerEnv& env, const CallContext& ctx, const json& p) {
                           return memoryResult(env.service.restore(ctx, str(p, "id"), optStr(p, "reason")));
                         },
                         false, true};
  t["memory/pin"] = {[](HandlerEnv& env, const CallContext& ctx, const json& p) {
                       return memoryResult(env.service.pin(ctx, str(p, "id"), true));
                     },
                     false, true};
  t["memory/unpin"] = {[](HandlerEnv& env, const CallContext& ctx, const json& p) {
                         return memoryResult(env.service.pin(ctx, str(p, "id"), false));
                       },
                       false, true};
  t["memory/supersede"] = {[](HandlerEnv& env, const CallContext& ctx, const json& p) -> Result<json> {
                             auto r = env.service.supersede(ctx, str(p, "id"), str(p, "by"));
                             if (!r) return r.status();
                             return json{{"old", memoryToJson(r->first)}, {"new", memoryToJson(r->second)}};
                           },
                           false, true};
  t["memory/reject"] = {[](HandlerEnv& env, const CallContext& ctx, const json& p) {
                          return memoryResult(env.service.reject(ctx, str(p, "id"), str(p, "reason")));
                        },
                        false, true};
  t["memory/unreject"] = {[](HandlerEnv& env, const CallContext& ctx, const json& p) {
                            return memoryResult(env.service.unreject(ctx, str(p, "id")));
                          },
                          false, true};
  t["memory/purge"] = {[](HandlerEnv& env, const CallContext& ctx, const json& p) -> Result<json> {
                         auto st = env.service.purge(ctx, str(p, "id"), optBool(p, "confirm").value_or(false));
                         if (!st) return st;
                         return json{{"purged", true}, {"id", str(p, "id")}};
                       },
                       false, true};
  t["memory/attach"] = {[](HandlerEnv& env, const CallContext& ctx, const json& p) {
                          return memoryResult(env.service.attach(ctx, str(p, "id"), strings(p, "files")));
                        },
                        false, true};
  t["memory/detach"] = {[](HandlerEnv& env, const CallContext& ctx, const json& p) {
                          return memoryResult(env.service.detach(ctx, str(p, "id"), strings(p, "files")));
                        },
                        false, true};
  t["hints/for_tool"] = {[](HandlerEnv& env, const CallContext& ctx, const json& p) -> Result<json> {
                           auto r = env.service.hintsForTool(ctx, str(p, "tool"), strings(p, "files"), str(p, "query"));
                           if (!r) return r.status();
                           return hintResultJson(*r);
                         },
                         true};
  t["hints/turn"] = {[](HandlerEnv& env, const CallContext& ctx, const json&) -> Result<json> {
                       auto r = env.service.hintsTurn(ctx);
                       if (!r) return r.status();
                       return json{{"turn", *r}};
                     },
                     true};
  t["repo/cochange"] = {[](HandlerEnv& env, const CallContext& ctx, const json& p) {
    return env.service.repoCochange(ctx, str(p, "file"), static_cast<size_t>(optInt(p, "limit").value_or(10)));
  }};
  t["repo/blast_radius"] = {[](HandlerEnv& env, const CallContext& ctx, const json& p) {
    return env.service.repoBlastRadius(ctx, str(p, "file"));
  }};
  t["repo/refresh"] = {[](HandlerEnv& env, const CallContext& ctx, const json&) { return env.service.repoRefresh(ctx); }};
  t["review/clusters"] = {[](HandlerEnv& env, const CallContext& ctx, const json& p) {
    double w = p.contains("min_weight") && p["min_weight"].is_number() ? p["min_weight"].get<double>() : 0.7;
    return env.service.reviewClusters(ctx, w);
  }};
  t["review/stale"] = {[](HandlerEnv& env, const CallContext& ctx, const json& p) {
    return env.service.reviewStale(ctx, static_cast<size_t>(optInt(p, "limit").value_or(50)));
  }};
  t["review/dead"] = {[](HandlerEnv& env, const CallContext& ctx, const json& p) {
    return env.service.reviewDead(ctx, static_cast<size_t>(optInt(p, "limit").value_or(50)));
  }};
  t["audit/list"] = {[](HandlerEnv& env, const CallContext& ctx, const json& p) {
    AuditFilter f;
    f.memoryId = optStr(p, "id");
    f.sinceSeq = optInt(p, "since_seq").value_or(0);
    f.sinceAt = optStr(p, "since");
    f.limit = static_cast<int>(optInt(p, "limit").value_or(100));
    return env.service.auditList(ctx, f);
  }};
  t["export"] = {[](HandlerEnv& env, const CallContext& ctx, const json& p) -> Result<json> {
    std::string state = str(p, "state", "active");
    bool all = state == "all";
    auto parsed = parseState(state);
    if (!all && !parsed) return Status::invalidField("state", "state must be active, hidden, superseded, rejected or all");
    auto r = env.service.exportJsonl(ctx, parsed, all, optStr(p, "cursor"));
    if (!r) return r.status();
    json out = {{"jsonl", std::move(r->jsonl)}};
    if (r->nextCursor) out["next_cursor"] = *r->nextCursor;
    if (!r->warnings.empty()) out["warnings"] = std::move(r->warnings);  // the export may be incomplete
    return out;
  }};
  t["import"] = {[](HandlerEnv& env, const CallContext& ctx, const json& p) -> Result<json> {
                   auto r = env.service.importJsonl(ctx, str(p, "jsonl"), optBool(p, "more").value_or(false));
                   if (!r) return r.status();
                   if (!r->committed) return json{{"staged_lines", r->stagedLines}};
                   return json{{"created", r->created}, {"deduped", r->deduped}, {"rejected", r->rejected},
                               {"tombstones", r->tombstones}, {"staged_lines", r->stagedLines}};
                 },
                 false, true};
  t["stats"] = {[](HandlerEnv& env, const CallContext& ctx, const json&) { return env.service.stats(ctx); }};
  t["subscribe"] = {[](HandlerEnv& env, const CallContext&, const json& p) -> Result<json> {
    MutexLock lock(env.client.mutex);
    env.client.subscribed = true;
    env.client.subscribedScopes.clear();
    for (const auto& s : strings(p, "scopes")) env.client.subscribedScopes.insert(s);
    return json{{"subscribed", true}};
  }};
  t["daemon/status"] = {[](HandlerEnv& env, const CallContext&, const json&) -> Result<json> {
    return env.hooks.status ? env.hooks.status() : json::object();
  }};
  t["daemon/shutdown"] = {[](HandlerEnv& env, const CallContext&, const json&) -> Result<json> {
    if (env.hooks.shutdown) env.hooks.shutdown();
    return json{{"ok", true}};
  }};
  return t;
}

}  // namespace

const MethodTable& methodTable() {
  static const MethodTable kTable = buildTable();
  return kTable;
}

}  // namespace memq
