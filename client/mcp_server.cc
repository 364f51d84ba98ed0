// memq mcp: a Model Context Protocol server on stdin/stdout (newline-delimited JSON-RPC, protocol revision
// 2025-06-18) that bridges an agent's tool calls to memqd. Tools: memory_save, memory_search, memory_recall,
// memory_get, memory_hide, memory_supersede, memory_reject, memory_pin.
#include <iostream>
#include <optional>
#include <string>

#include "client/commands.h"
#include "protocol/envelope.h"

namespace memq::cli {

namespace {

using json = nlohmann::json;

constexpr const char* kProtocolVersion = "2025-06-18";

json stringProp(const char* description) { return {{"type", "string"}, {"description", description}}; }
json idProp() { return stringProp("memory id, or a unique prefix of at least 4 characters"); }

json toolList() {
  json fileList = {{"type", "array"}, {"items", {{"type", "string"}}}, {"description", "repository-relative file paths"}};
  return json::array({
      {{"name", "memory_save"},
       {"description",
        "Save a short memory about this codebase or the user's preferences (a rule, a decision, a gotcha). Identical "
        "text is deduplicated; text the user rejected is refused."},
       {"inputSchema",
        {{"type", "object"},
         {"properties",
          {{"summary", stringProp("one line, at most 200 characters")},
           {"details", stringProp("optional longer explanation")},
           {"category", {{"type", "string"}, {"enum", {"pref", "decision", "gotcha", "context"}}}},
           {"topics", {{"type", "array"}, {"items", {{"type", "string"}}}}},
           {"files", fileList}}},
         {"required", {"summary"}}}}},
      {{"name", "memory_search"},
       {"description", "Search memories by text (full-text and semantic)."},
       {"inputSchema",
        {{"type", "object"},
         {"properties", {{"query", stringProp("what to look for")}, {"limit", {{"type", "integer"}, {"minimum", 1}, {"maximum", 50}}}}},
         {"required", {"query"}}}}},
      {{"name", "memory_recall"},
       {"description", "Recall the memories most relevant to a task and/or the files being worked on."},
       {"inputSchema",
        {{"type", "object"},
         {"properties",
          {{"query", stringProp("the task or question")}, {"files", fileList},
           {"limit", {{"type", "integer"}, {"minimum", 1}, {"maximum", 20}}}}}}}},
      {{"name", "memory_get"},
       {"description", "Read one memory in full."},
       {"inputSchema", {{"type", "object"}, {"properties", {{"id", idProp()}}}, {"required", {"id"}}}}},
      {{"name", "memory_hide"},
       {"description", "Hide a memory that is not useful now (reversible)."},
       {"inputSchema",
        {{"type", "object"}, {"properties", {{"id", idProp()}, {"reason", stringProp("why")}}}, {"required", {"id"}}}}},
      {{"name", "memory_supersede"},
       {"description", "Mark a memory as replaced by a newer one."},
       {"inputSchema",
        {{"type", "object"},
         {"properties", {{"id", idProp()}, {"by", stringProp("id of the replacement memory")}}},
         {"required", {"id", "by"}}}}},
      {{"name", "memory_reject"},
       {"description", "Mark a memory as wrong: it is put away and the same text will never be stored again."},
       {"inputSchema",
        {{"type", "object"},
         {"properties", {{"id", idProp()}, {"reason", stringProp("why it is wrong")}}},
         {"required", {"id", "reason"}}}}},
      {{"name", "memory_pin"},
       {"description", "Pin a memory so it ranks first and always surfaces."},
       {"inputSchema", {{"type", "object"}, {"properties", {{"id", idProp()}}}, {"required", {"id"}}}}},
  });
}

std::string describe(const json& m) {
  std::string line = "[" + m.value("id", "").substr(0, 8) + "] ";
  if (m.contains("category") && m["category"].is_string()) line += "(" + m["category"].get<std::string>() + ") ";
  line += m.value("summary", "");
  return line;
}

std::string hitsText(const json& r) {
  const auto& hits = r["memories"];
  if (hits.empty()) return "No matching memories.";
  std::string out;
  for (const auto& h : hits) {
    out += describe(h);
    if (!h.value("details", "").empty()) out += "\n  " + h["details"].get<std::string>();
    out += "\n";
  }
  return out;
}

struct Bridge {
  Context& ctx;
  std::optional<DaemonLink> link;

  Result<json> call(const std::string& method, const json& params) {
    if (!link) {
      auto l = DaemonLink::open(ctx.options, true);
      if (!l) return l.status();
      link.emplace(std::move(*l));
    }
    auto r = link->call(method, params);
    if (!r && isTransportError(r.status())) link.reset();  // reconnect next time
    return r;
  }
};

// Runs one tool: returns {text, isError}.
std::pair<std::string, bool> runTool(Bridge& bridge, const std::string& name, const json& args) {
  auto need = [&](const char* key) -> std::optional<std::string> {
    if (!args.contains(key) || !args[key].is_string() || args[key].get<std::string>().empty()) return std::nullopt;
    return args[key].get<std::string>();
  };
  auto fail = [](const std::string& m) { return std::pair<std::string, bool>{m, true}; };
  auto rpcError = [](const Status& s) {
    return std::pair<std::string, bool>{std::string(errorCodeName(s.code())) + ": " + s.message(), true};
  };
  if (name == "memory_save") {
    if (!need("summary")) return fail("summary is required");
    json p = {{"summary", args["summary"]}, {"source", "agent"}};
    for (const char* k : {"details", "category", "topics", "files"}) {
      if (args.contains(k)) p[k] = args[k];
    }
    auto r = bridge.call("memory/save", p);
    if (!r) return rpcError(r.status());
    std::string text = "Saved: " + (*r)["status"].get<std::string>() + " " + (*r)["id"].get<std::string>().substr(0, 8);
    if (r->contains("hint")) text += "\n" + (*r)["hint"].get<std::string>();
    for (const auto& w : (*r)["warnings"]) text += "\nwarning: " + w.get<std::string>();
    for (const auto& s : (*r)["similar"]) {
      text += "\nsimilar existing memory (review for contradiction or supersession): [" +
              s["id"].get<std::string>().substr(0, 8) + "] " + s["summary"].get<std::string>();
    }
    return {text, (*r)["status"] == "rejected"};
  }
  if (name == "memory_search" || name == "memory_recall") {
    json p = json::object();
    if (name == "memory_search" && !need("query")) return fail("query is required");
    if (args.contains("query")) p["query"] = args["query"];
    if (args.contains("files")) p["files"] = args["files"];
    if (args.contains("limit")) p["limit"] = args["limit"];
    if (name == "memory_recall" && !p.contains("query") && !p.contains("files")) return fail("give a query or files");
    auto r = bridge.call(name == "memory_search" ? "memory/search" : "memory/recall", p);
    if (!r) return rpcError(r.status());
    return {hitsText(*r), false};
  }
  if (name == "memory_get") {
    auto id = need("id");
    if (!id) return fail("id is required");
    auto r = bridge.call("memory/get", {{"id", *id}});
    if (!r) return rpcError(r.status());
    std::string text = describe(*r) + "\nstate: " + (*r)["state"].get<std::string>();
    if (!(*r)["details"].get<std::string>().empty()) text += "\ndetails: " + (*r)["details"].get<std::string>();
    std::string files;
    for (const auto& f : (*r)["files"]) files += (files.empty() ? "" : ", ") + f.get<std::string>();
    if (!files.empty()) text += "\nfiles: " + files;
    // The scope's answers may leave acknowledged saves out (a full disk): the agent is told.
    if (auto w = r->find("warnings"); w != r->end()) {
      for (const auto& line : *w) text += "\nwarning: " + line.get<std::string>();
    }
    return {text, false};
  }
  if (name == "memory_hide" || name == "memory_pin" || name == "memory_reject" || name == "memory_supersede") {
    auto id = need("id");
    if (!id) return fail("id is required");
    json p = {{"id", *id}};
    std::string method = "memory/" + name.substr(7);
    if (name == "memory_hide" && args.contains("reason")) p["reason"] = args["reason"];
    if (name == "memory_reject") {
      auto reason = need("reason");
      if (!reason) return fail("reason is required");
      p["reason"] = *reason;
    }
    if (name == "memory_supersede") {
      auto by = need("by");
      if (!by) return fail("by is required");
      p["by"] = *by;
    }
    auto r = bridge.call(method, p);
    if (!r) return rpcError(r.status());
    if (name == "memory_supersede") {
      return {"Superseded " + (*r)["old"]["id"].get<std::string>().substr(0, 8) + " by " +
                  (*r)["new"]["id"].get<std::string>().substr(0, 8),
              false};
    }
    return {name.substr(7) + ": " + describe(*r) + " (" + (*r)["state"].get<std::string>() + ")", false};
  }
  return fail("unknown tool: " + name);
}

}  // namespace

int runMcp(Context& ctx, const std::vector<std::string>& words) {
  if (!words.empty()) return usageError("memq mcp takes no arguments");
  ctx.options.clientName = "memq-mcp";
  ctx.options.source = "agent";
  Bridge bridge{ctx, std::nullopt};
  std::string line;
  while (std::getline(std::cin, line)) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    Envelope env = parseEnvelope(line);
    json replies = json::array();
    for (const auto& item : env.items) {
      if (!item.call) {
        replies.push_back(makeErrorReply(item.errorId, item.error));
        continue;
      }
      const Call& call = *item.call;
      std::optional<json> result;
      Status error;
      if (call.method == "initialize") {
        std::string version = call.params.is_object() ? call.params.value("protocolVersion", kProtocolVersion)
                                                      : kProtocolVersion;
        // Answer with the client's revision when it is one we speak, else ours.
        if (version != "2025-06-18" && version != "2025-03-26") version = kProtocolVersion;
        result = json{{"protocolVersion", version},
                      {"capabilities", {{"tools", {{"listChanged", false}}}}},
                      {"serverInfo", {{"name", "memq"}, {"version", "0.1.0"}}},
                      {"instructions",
                       "memq keeps short, curated memories about this codebase. Recall before starting a task; save "
                       "rules, decisions and gotchas you learn; reject memories that are wrong."}};
      } else if (call.method == "ping") {
        result = json::object();
      } else if (call.method == "tools/list") {
        result = json{{"tools", toolList()}};
      } else if (call.method == "tools/call") {
        if (!call.params.is_object() || !call.params.contains("name") || !call.params["name"].is_string()) {
          error = Status::invalidField("name", "tools/call needs a tool name");
        } else {
          json args = call.params.value("arguments", json::object());
          if (!args.is_object()) args = json::object();
          auto [text, isError] = runTool(bridge, call.params["name"].get<std::string>(), args);
          result = json{{"content", json::array({{{"type", "text"}, {"text", text}}})}, {"isError", isError}};
        }
      } else if (call.method.rfind("notifications/", 0) == 0) {
        continue;
      } else {
        error = Status(ErrorCode::kMethodNotFound, "method '" + call.method + "' is not supported");
      }
      if (call.isNotification()) continue;
      replies.push_back(result ? makeResultReply(call.id, *result) : makeErrorReply(call.id, error));
    }
    if (replies.empty()) continue;
    std::cout << serializeMessage(env.batch ? replies : replies[0]) << "\n" << std::flush;
  }
  return kExitOk;
}

}  // namespace memq::cli
