// memq mcp: a Model Context Protocol server on stdin/stdout (newline-delimited JSON-RPC) that bridges an agent's
// tool calls to memqd. It speaks the protocol revisions 2025-06-18, 2025-03-26 and 2024-11-05 and answers a client
// in its own revision when it is one of those, else in the newest. It connects to memqd (starting it when none
// answers) at `initialize`, so the first tool call does not pay for the start.
// Tools: memory_save, memory_search, memory_recall, memory_list, memory_get, memory_update, memory_hide,
// memory_restore, memory_supersede, memory_reject, memory_pin, memory_unpin. Each carries a title, annotations
// and, for the structured ones, an outputSchema whose shape the result's structuredContent has. Arguments are
// checked against the tool's inputSchema here, so a wrong type is reported as one, before the daemon is asked. A
// reply's `warnings` (an answer that may be incomplete: a team scope answered from its local copy) reach the agent
// in the text ("warning: …" lines) and in structuredContent. Memory text in a tool result's text is one line per field
// (oneLineText, client/render.h; details keep their lines, each indented), so no summary can pass for another entry.
// A memqd that is down or hung costs bounded time: connecting and its initialize at most kConnectBudget, a tool call
// at most kToolCallTimeout; the MCP `initialize` is answered either way, and the tool calls report the failure.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <iostream>
#include <optional>
#include <string>

#include "client/commands.h"
#include "protocol/envelope.h"

namespace memq::cli {

namespace {

using json = nlohmann::json;

// Newest first: the first is what a client with an unknown revision is answered in.
constexpr const char* kProtocolVersions[] = {"2025-06-18", "2025-03-26", "2024-11-05"};

// ---- schemas ---------------------------------------------------------------------------------------------------
// The limits are memqd's (schema/methods/*.json): summary ≤ 200 and details ≤ 2000 characters, ≤ 16 files per
// memory, ≤ 64 files and limit ≤ 100 per recall or search, limit ≤ 1000 per list.

json stringProp(const char* description) { return {{"type", "string"}, {"description", description}}; }
json idProp() { return {{"type", "string"}, {"minLength", 1}, {"description", "memory id, or a unique prefix of at least 4 characters"}}; }
json categoryProp() {
  return {{"type", "string"},
          {"enum", {"pref", "decision", "gotcha", "context"}},
          {"description", "pref: the user's preference; decision: a choice made and why; gotcha: a trap; context: background"}};
}
// A file of a memory (`withBlob`: a write may name the version) or of a query: a path, or a path with lines of it.
json fileEntrySchema(bool withBlob) {
  json props = {{"path", {{"type", "string"}, {"minLength", 1}}},
                {"lines",
                 {{"type", "array"},
                  {"minItems", 1},
                  {"items",
                   {{"type", "array"},
                    {"minItems", 2},
                    {"maxItems", 2},
                    {"items", {{"type", "integer"}, {"minimum", 1}}}}},
                  {"description", "1-based inclusive [first, last] line ranges"}}}};
  if (withBlob) {
    props["blob"] = {{"type", "string"},
                     {"description", "git blob id of the version the lines are in (default: the file as it is now)"}};
  }
  return {{"oneOf",
           {{{"type", "string"}, {"minLength", 1}},
            {{"type", "object"},
             {"properties", std::move(props)},
             {"required", {"path", "lines"}},
             {"additionalProperties", false}}}}};
}
json filesProp(int maxItems, bool withBlob) {
  return {{"type", "array"},
          {"items", fileEntrySchema(withBlob)},
          {"maxItems", maxItems},
          {"description", withBlob ? "repository-relative file paths, or {path, lines} to name lines of one"
                                   : "repository-relative file paths, or {path, lines} for the lines being worked on"}};
}
json topicsProp() {
  return {{"type", "array"},
          {"items", {{"type", "string"}}},
          {"description", "short keywords; at most 8 are kept (more are dropped with a warning)"}};
}
json limitProp(int maximum, int dflt) {
  return {{"type", "integer"}, {"minimum", 1}, {"maximum", maximum}, {"description", "at most this many (default " + std::to_string(dflt) + ")"}};
}
json objectSchema(json properties, json required = json::array()) {
  json s = {{"type", "object"}, {"properties", std::move(properties)}};
  if (!required.empty()) s["required"] = std::move(required);
  return s;
}

// A memory as memqd returns it (the fields a client relies on; memqd may send more).
json memorySchema() {
  return objectSchema(
      {{"id", {{"type", "string"}}},
       {"scope", {{"type", "string"}, {"enum", {"project", "global", "team"}}}},
       {"category", {{"type", {"string", "null"}}}},
       {"summary", {{"type", "string"}}},
       {"details", {{"type", {"string", "null"}}}},
       {"topics", {{"type", "array"}, {"items", {{"type", "string"}}}}},
       {"files",
        {{"type", "array"},
         {"items",
          {{"oneOf",
            {{{"type", "string"}},
             {{"type", "object"},
              {"properties",
               {{"path", {{"type", "string"}}},
                {"lines", {{"type", "array"}, {"items", {{"type", "array"}, {"items", {{"type", "integer"}}}}}}},
                {"blob", {{"type", "string"}}}}},
              {"required", {"path", "lines", "blob"}}}}}}}}},
       {"pinned", {{"type", "boolean"}}},
       {"state", {{"type", "string"}, {"enum", {"active", "hidden", "superseded", "rejected"}}}},
       {"use_count", {{"type", "integer"}}},
       {"superseded_by", {{"type", {"string", "null"}}}}},
      {"id", "scope", "summary", "state", "pinned"});
}
// Why an answer may be incomplete (a team scope answered from its local copy, a scope read that left saves out);
// present only when there is something to say.
json warningsProp() { return {{"type", "array"}, {"items", {{"type", "string"}}}}; }
json hitsSchema() {
  json hit = memorySchema();
  hit["properties"]["score"] = {{"type", "number"}};
  hit["properties"]["stale"] = {{"type", "boolean"}};
  return objectSchema({{"memories", {{"type", "array"}, {"items", hit}}}, {"warnings", warningsProp()}}, {"memories"});
}
json listSchema() {
  return objectSchema({{"memories", {{"type", "array"}, {"items", memorySchema()}}},
                       {"total", {{"type", "integer"}}},
                       {"warnings", warningsProp()}},
                      {"memories", "total"});
}
// memory_get's and memory_update's result: the memory, and the reply's warnings when it has some.
json memoryResultSchema() {
  json s = memorySchema();
  s["properties"]["warnings"] = warningsProp();
  return s;
}
json saveSchema() {
  return objectSchema(
      {{"id", {{"type", {"string", "null"}}}},
       {"scope", {{"type", "string"}}},
       {"status",
        {{"type", "string"},
         {"enum", {"created", "deduped", "exists_hidden", "exists_superseded", "rejected", "queued"}}}},
       {"similar", {{"type", "array"}, {"items", {{"type", "object"}}}}},
       {"warnings", {{"type", "array"}}},
       {"hint", {{"type", "string"}}}},
      {"id", "status"});
}

json annotations(bool readOnly, bool destructive, bool idempotent) {
  json a = {{"readOnlyHint", readOnly}, {"openWorldHint", false}};
  if (!readOnly) {
    a["destructiveHint"] = destructive;
    a["idempotentHint"] = idempotent;
  }
  return a;
}

json tool(const char* name, const char* title, const char* description, json input, json hints,
          std::optional<json> output = std::nullopt) {
  hints["title"] = title;
  json t = {{"name", name}, {"title", title}, {"description", description}, {"inputSchema", std::move(input)},
            {"annotations", std::move(hints)}};
  if (output) t["outputSchema"] = std::move(*output);
  return t;
}

const json& toolList() {
  static const json tools = json::array({
      tool("memory_save", "Save a memory",
           "Save a short memory about this codebase or the user's preferences (a rule, a decision, a gotcha). "
           "Identical text is deduplicated (status deduped); text the user rejected is refused (status rejected, "
           "isError true).",
           objectSchema({{"summary", {{"type", "string"}, {"minLength", 1}, {"maxLength", 200}, {"description", "one line"}}},
                         {"details", {{"type", "string"}, {"maxLength", 2000}, {"description", "optional longer explanation"}}},
                         {"category", categoryProp()},
                         {"topics", topicsProp()},
                         {"files", filesProp(16, true)}},
                        {"summary"}),
           annotations(false, false, true), saveSchema()),
      tool("memory_search", "Search memories",
           "Search active memories by text (full-text and semantic). Does not count as a use.",
           objectSchema({{"query", {{"type", "string"}, {"minLength", 1}, {"description", "what to look for"}}},
                         {"limit", limitProp(100, 10)}},
                        {"query"}),
           annotations(true, false, true), hitsSchema()),
      tool("memory_recall", "Recall memories for a task",
           "Recall the memories most relevant to a task and/or the files being worked on (give a query, files or "
           "both). The memories returned are recorded as used, which ranks them higher later.",
           objectSchema({{"query", stringProp("the task or question")},
                         {"files", filesProp(64, false)},
                         {"limit", limitProp(100, 3)}}),
           annotations(false, false, false), hitsSchema()),
      tool("memory_list", "List memories",
           "List memories, pinned first, then the most recently used. Active ones unless a state is given.",
           objectSchema({{"category", categoryProp()},
                         {"topic", stringProp("only memories with this topic")},
                         {"pinned", {{"type", "boolean"}, {"description", "only pinned memories"}}},
                         {"state", {{"type", "string"}, {"enum", {"active", "hidden", "superseded", "rejected", "all"}}}},
                         {"file", {{"type", "string"}, {"minLength", 1}, {"description", "only memories about this file"}}},
                         {"limit", limitProp(1000, 50)},
                         {"offset", {{"type", "integer"}, {"minimum", 0}}}}),
           annotations(true, false, true), listSchema()),
      tool("memory_get", "Read a memory", "Read one memory in full (any state).", objectSchema({{"id", idProp()}}, {"id"}),
           annotations(true, false, true), memoryResultSchema()),
      tool("memory_update", "Update a memory",
           "Change a memory's summary, details, category, topics or files; the fields given replace the old ones.",
           objectSchema({{"id", idProp()},
                         {"summary", {{"type", "string"}, {"minLength", 1}, {"maxLength", 200}}},
                         {"details", {{"type", "string"}, {"maxLength", 2000}}},
                         {"category", categoryProp()},
                         {"topics", topicsProp()},
                         {"files", filesProp(16, true)}},
                        {"id"}),
           annotations(false, true, true), memoryResultSchema()),
      tool("memory_hide", "Hide a memory",
           "Hide a memory that is not useful now; memory_restore brings it back.",
           objectSchema({{"id", idProp()}, {"reason", stringProp("why")}}, {"id"}), annotations(false, false, true),
           memorySchema()),
      tool("memory_restore", "Restore a memory",
           "Make a hidden or superseded memory active again.", objectSchema({{"id", idProp()}}, {"id"}),
           annotations(false, false, true), memorySchema()),
      tool("memory_supersede", "Supersede a memory",
           "Mark a memory as replaced by a newer one (save the newer one first); memory_restore undoes it.",
           objectSchema({{"id", idProp()}, {"by", {{"type", "string"}, {"minLength", 1}, {"description", "id of the replacement memory"}}}},
                        {"id", "by"}),
           annotations(false, false, true),
           objectSchema({{"old", memorySchema()}, {"new", memorySchema()}}, {"old", "new"})),
      tool("memory_reject", "Reject a memory",
           "Mark a memory as wrong: it is put away and the same text is refused if anyone saves it again.",
           objectSchema({{"id", idProp()}, {"reason", {{"type", "string"}, {"minLength", 1}, {"description", "why it is wrong"}}}},
                        {"id", "reason"}),
           annotations(false, true, true), memorySchema()),
      tool("memory_pin", "Pin a memory",
           "Pin a memory: it is listed first, ranks a little higher in recall, its file hints are not held back by "
           "the hint budget, and it opens every session where the SessionStart hook is installed.",
           objectSchema({{"id", idProp()}}, {"id"}), annotations(false, false, true), memorySchema()),
      tool("memory_unpin", "Unpin a memory", "Take the pin off a memory.", objectSchema({{"id", idProp()}}, {"id"}),
           annotations(false, false, true), memorySchema()),
  });
  return tools;
}

const json* findTool(const std::string& name) {
  for (const auto& t : toolList()) {
    if (t["name"] == name) return &t;
  }
  return nullptr;
}

// ---- argument checks -----------------------------------------------------------------------------------------

std::string typeName(const json& v) {
  if (v.is_null()) return "null";
  if (v.is_boolean()) return "a boolean";
  if (v.is_number_integer() || v.is_number_unsigned()) return "an integer";
  if (v.is_number()) return "a number";
  if (v.is_string()) return "a string";
  if (v.is_array()) return "an array";
  return "an object";
}

// A JSON number written with a fraction or exponent whose value is a whole number an int64 holds (`5.0`, `1e3`):
// agents write them, and JSON Schema counts them as integers. They are sent to memqd as integers (wholeNumbers).
bool isWholeFloat(const json& v) {
  if (!v.is_number_float()) return false;
  const double d = v.get<double>();
  return std::isfinite(d) && d == std::trunc(d) && d >= -9.0e18 && d <= 9.0e18;
}

// `v` with every whole-number float written as an integer, at any depth: memqd's schemas take only integers
// written without a fraction.
void wholeNumbers(json& v) {
  if (isWholeFloat(v)) {
    v = static_cast<int64_t>(v.get<double>());
  } else if (v.is_array() || v.is_object()) {
    for (auto& e : v) wholeNumbers(e);
  }
}

bool hasType(const json& v, const std::string& type) {
  if (type == "string") return v.is_string();
  if (type == "integer") return v.is_number_integer() || v.is_number_unsigned() || isWholeFloat(v);
  if (type == "boolean") return v.is_boolean();
  if (type == "array") return v.is_array();
  if (type == "object") return v.is_object();
  return true;
}

// The length of UTF-8 `text` in UTF-16 code units, which is how memqd counts its limits (kMaxSummaryUnits,
// daemon/model/memory_input.h: JavaScript's String.length) and so what the schemas' maxLength means: a character
// outside the BMP (an emoji) counts two. Every byte but a continuation byte starts a character; a 4-byte one is a
// surrogate pair. (memqd refuses text that is not UTF-8, so how such bytes count here does not matter.)
size_t utf16Units(const std::string& text) {
  size_t units = 0;
  for (char c : text) {
    const auto byte = static_cast<unsigned char>(c);
    if ((byte & 0xc0) != 0x80) units += byte >= 0xf0 ? 2 : 1;
  }
  return units;
}

// The first way `value` breaks `schema` (the subset the tools use), named by `field`; nullopt when it fits.
std::optional<std::string> violation(const std::string& field, const json& schema, const json& value) {
  if (auto alternatives = schema.find("oneOf"); alternatives != schema.end()) {
    // The alternatives differ by type (a path, or an object): the one of the value's type decides.
    std::string types;
    for (const auto& alternative : *alternatives) {
      const std::string t = alternative.value("type", "");
      if (hasType(value, t)) return violation(field, alternative, value);
      types += (types.empty() ? "" : " or ") + std::string(t == "object" ? "an object" : "a " + t);
    }
    return field + " must be " + types + ", not " + typeName(value);
  }
  const std::string type = schema.value("type", "");
  if (!type.empty() && !hasType(value, type)) {
    std::string want = type == "integer" ? "an integer" : type == "array" ? "an array" : "a " + type;
    return field + " must be " + want + ", not " + typeName(value);
  }
  if (schema.contains("enum") && std::find(schema["enum"].begin(), schema["enum"].end(), value) == schema["enum"].end()) {
    std::string options;
    for (const auto& e : schema["enum"]) options += (options.empty() ? "" : ", ") + e.get<std::string>();
    return field + " must be one of " + options;
  }
  if (value.is_number()) {
    if (schema.contains("minimum") && value.get<double>() < schema["minimum"].get<double>())
      return field + " must be at least " + schema["minimum"].dump();
    if (schema.contains("maximum") && value.get<double>() > schema["maximum"].get<double>())
      return field + " must be at most " + schema["maximum"].dump();
  }
  if (value.is_string() && schema.value("minLength", 0) > 0 && value.get<std::string>().empty()) {
    return field + " must not be empty";
  }
  if (value.is_string() && schema.contains("maxLength")) {
    const size_t units = utf16Units(value.get_ref<const std::string&>());
    if (units > schema["maxLength"].get<size_t>()) {
      return field + " must be at most " + schema["maxLength"].dump() + " characters (it has " +
             std::to_string(units) + ")";
    }
  }
  if (value.is_object() && schema.contains("properties")) {
    for (const auto& r : schema.value("required", json::array())) {
      if (!value.contains(r.get<std::string>())) return field + "." + r.get<std::string>() + " is required";
    }
    for (const auto& [key, member] : value.items()) {
      if (!schema["properties"].contains(key)) {
        if (schema.value("additionalProperties", true) == false) return field + ": unknown field " + key;
        continue;
      }
      if (auto v = violation(field + "." + key, schema["properties"][key], member)) return v;
    }
  }
  if (value.is_array()) {
    if (schema.contains("minItems") && value.size() < schema["minItems"].get<size_t>())
      return field + " takes at least " + schema["minItems"].dump() + " items";
    if (schema.contains("maxItems") && value.size() > schema["maxItems"].get<size_t>())
      return field + " takes at most " + schema["maxItems"].dump() + " items";
    if (schema.contains("items")) {
      for (size_t i = 0; i < value.size(); ++i) {
        if (auto v = violation(field + "[" + std::to_string(i) + "]", schema["items"], value[i])) return v;
      }
    }
  }
  return std::nullopt;
}

std::optional<std::string> checkArguments(const json& inputSchema, const json& args) {
  for (const auto& r : inputSchema.value("required", json::array())) {
    if (!args.contains(r.get<std::string>())) return r.get<std::string>() + " is required";
  }
  const json& props = inputSchema["properties"];
  for (const auto& [key, value] : args.items()) {
    if (!props.contains(key)) return "unknown argument " + key;
    if (auto v = violation(key, props[key], value)) return v;
  }
  return std::nullopt;
}

// ---- results -------------------------------------------------------------------------------------------------

// `[id8] (category) (pinned) summary`, one line whatever the memory holds (oneLineText).
std::string describe(const json& m) {
  std::string line = "[" + oneLineText(m.value("id", "").substr(0, 8)) + "] ";
  if (m.contains("category") && m["category"].is_string()) line += "(" + oneLineText(m["category"].get<std::string>()) + ") ";
  if (m.value("pinned", false)) line += "(pinned) ";
  line += oneLineText(m.value("summary", ""));
  return line;
}

std::string memoriesText(const json& memories, const char* none) {
  if (memories.empty()) return none;
  std::string out;
  for (const auto& h : memories) {
    out += describe(h);
    // Details keep their lines, every one indented under the entry: none can start a line as an entry does.
    if (h.contains("details") && h["details"].is_string() && !h["details"].get<std::string>().empty()) {
      out += "\n  " + indentedLines(h["details"].get<std::string>(), "  ");
    }
    // The lines a memory is about, where it names some: what an agent editing those lines needs to see.
    std::string anchored;
    for (const auto& f : h.value("files", json::array())) {
      if (f.is_object()) anchored += (anchored.empty() ? "" : ", ") + oneLineText(fileRefText(f));
    }
    if (!anchored.empty()) out += "\n  lines: " + anchored;
    out += "\n";
  }
  return out;
}

// A reply's `warnings`, each on a line of its own after `text`.
void appendWarnings(std::string& text, const json& r) {
  auto it = r.find("warnings");
  if (it == r.end() || !it->is_array()) return;
  for (const auto& w : *it) {
    if (!text.empty() && text.back() != '\n') text += "\n";
    text += "warning: " + oneLineText(w.is_string() ? w.get<std::string>() : w.dump());
  }
}

// The reply's warnings, for structuredContent: only when it has some, as memqd sends them.
void copyWarnings(json& out, const json& r) {
  auto it = r.find("warnings");
  if (it != r.end() && it->is_array() && !it->empty()) out["warnings"] = *it;
}

std::string detailText(const json& m) {
  std::string text = describe(m) + "\nstate: " + oneLineText(m.value("state", ""));
  if (m.contains("details") && m["details"].is_string() && !m["details"].get<std::string>().empty()) {
    text += "\ndetails: " + indentedLines(m["details"].get<std::string>(), "  ");
  }
  std::string files;
  for (const auto& f : m.value("files", json::array())) files += (files.empty() ? "" : ", ") + oneLineText(fileRefText(f));
  if (!files.empty()) text += "\nfiles: " + files;
  return text;
}

// Connecting to memqd (starting it when none answers) and its initialize, together: MCP clients wait for the reply to
// their `initialize` (some give up after a few seconds), and a memqd that accepts connections but never answers would
// otherwise hold it for the client's 30 s call timeout, and every tool call after for as long again. A cold start of
// memqd fits, as it does the SessionStart hook's same budget.
constexpr auto kConnectBudget = std::chrono::milliseconds(3000);
// One tool call: far above any reply of a memqd at work (milliseconds), far below what an agent waits on a tool.
constexpr auto kToolCallTimeout = std::chrono::milliseconds(10000);

// A transport failure (client/rpc_client.h) as the agent reads it: memqd is down or not answering, what was tried, and
// that the next tool call tries again. Its code and data are kept, so it is still a transport error.
Status unavailable(const Status& s, const std::string& what) {
  return Status(s.code(), "memqd is unavailable: " + what + " (" + s.message() + "); the next tool call tries again",
                s.data());
}

struct Bridge {
  Context& ctx;
  std::optional<DaemonLink> link;

  Status connect() {
    if (link) return Status::ok();
    const auto deadline = std::chrono::steady_clock::now() + kConnectBudget;
    auto l = DaemonLink::open(ctx.options, /*autostart=*/true, kConnectBudget, deadline);
    if (!l) {
      if (!isTransportError(l.status())) return l.status();
      return unavailable(l.status(), "it could not be reached or did not answer within " +
                                         std::to_string(kConnectBudget.count() / 1000) + " s");
    }
    link.emplace(std::move(*l));
    return Status::ok();
  }
  Result<json> call(const std::string& method, const json& params) {
    if (Status st = connect(); !st) return st;
    auto r = link->call(method, params, kToolCallTimeout);
    if (!r && isTransportError(r.status())) {
      link.reset();  // reconnect next time
      return unavailable(r.status(), method + " got no answer within " +
                                         std::to_string(kToolCallTimeout.count() / 1000) +
                                         " s, so whether it took effect is unknown");
    }
    return r;
  }
};

struct ToolResult {
  std::string text;
  bool isError = false;
  std::optional<json> structured;
};

// The daemon's memory fields a tool result carries (the others are bookkeeping an agent has no use for).
json memoryOut(const json& m) {
  json out = json::object();
  for (const char* k : {"id", "scope", "category", "summary", "details", "topics", "files", "pinned", "state",
                        "use_count", "superseded_by", "score", "stale"}) {
    if (m.contains(k)) out[k] = m[k];
  }
  return out;
}
json memoriesOut(const json& r) {
  json list = json::array();
  for (const auto& m : r.value("memories", json::array())) list.push_back(memoryOut(m));
  json out = {{"memories", list}};
  if (r.contains("total")) out["total"] = r["total"];
  copyWarnings(out, r);
  return out;
}

ToolResult runTool(Bridge& bridge, const std::string& name, const json& args) {
  auto fail = [](const std::string& m) { return ToolResult{m, true, std::nullopt}; };
  auto rpcError = [](const Status& s) {
    // A transport failure's message says all (unavailable); an error memqd answered is named by its code.
    if (isTransportError(s)) return ToolResult{s.message(), true, std::nullopt};
    return ToolResult{std::string(errorCodeName(s.code())) + ": " + s.message(), true, std::nullopt};
  };
  const json* spec = findTool(name);
  if (!spec) return fail("unknown tool: " + name);
  if (auto bad = checkArguments((*spec)["inputSchema"], args)) return fail(*bad);
  // Every argument the schema admits goes to the method of the same name, as it is (whole numbers as integers).
  json p = args;
  wholeNumbers(p);
  if (name == "memory_save") {
    p["source"] = "agent";
    auto r = bridge.call("memory/save", p);
    if (!r) return rpcError(r.status());
    const std::string status = r->value("status", "");
    // A team save queued while the team server is away has no id yet (null).
    const std::string id = (*r)["id"].is_string() ? (*r)["id"].get<std::string>() : std::string();
    std::string text = status == "rejected" ? "Refused: this text was rejected before"
                       : status == "queued"
                           ? "Queued: the team server cannot be reached; memqd keeps the save and sends it when the "
                             "server is back"
                           : "Saved: " + status + " " + id.substr(0, 8);
    if (status == "rejected" && r->contains("reason") && (*r)["reason"].is_string()) {
      text += " (" + oneLineText((*r)["reason"].get<std::string>()) + ")";
    }
    if (r->contains("hint")) text += "\n" + (*r)["hint"].get<std::string>();
    appendWarnings(text, *r);
    for (const auto& s : (*r)["similar"]) {
      text += "\nsimilar existing memory (review for contradiction or supersession): [" +
              oneLineText(s.value("id", "").substr(0, 8)) + "] " + oneLineText(s.value("summary", ""));
    }
    json out = {{"id", (*r)["id"]},
                {"scope", r->value("scope", "")},
                {"status", status},
                {"similar", r->value("similar", json::array())},
                {"warnings", r->value("warnings", json::array())}};
    if (r->contains("hint")) out["hint"] = (*r)["hint"];
    return {text, status == "rejected", out};
  }
  if (name == "memory_search" || name == "memory_recall") {
    if (name == "memory_recall" && !p.contains("query") && !p.contains("files")) return fail("give a query or files");
    auto r = bridge.call(name == "memory_search" ? "memory/search" : "memory/recall", p);
    if (!r) return rpcError(r.status());
    // A team scope answered from its local copy: the agent is told the answer may be incomplete.
    std::string text = memoriesText((*r)["memories"], "No matching memories.");
    appendWarnings(text, *r);
    return {text, false, memoriesOut(*r)};
  }
  if (name == "memory_list") {
    auto r = bridge.call("memory/list", p);
    if (!r) return rpcError(r.status());
    std::string text = memoriesText((*r)["memories"], "No memories.");
    // The count on a line of its own: after the last memory's, or after "No memories.".
    if (!text.empty() && text.back() != '\n') text += "\n";
    text += std::to_string((*r)["memories"].size()) + " of " + (*r)["total"].dump() + " memories";
    appendWarnings(text, *r);
    return {text, false, memoriesOut(*r)};
  }
  if (name == "memory_supersede") {
    auto r = bridge.call("memory/supersede", p);
    if (!r) return rpcError(r.status());
    return {"Superseded " + shortId((*r)["old"]) + " by " + shortId((*r)["new"]), false,
            json{{"old", memoryOut((*r)["old"])}, {"new", memoryOut((*r)["new"])}}};
  }
  // The rest take an id and return the memory: get, update, hide, restore, reject, pin, unpin.
  const std::string verb = name.substr(7);
  auto r = bridge.call("memory/" + verb, p);
  if (!r) return rpcError(r.status());
  if (name == "memory_get" || name == "memory_update") {
    std::string text = detailText(*r);
    // The scope's answers may leave acknowledged saves out (a full disk), an update may cut text: the agent is told.
    appendWarnings(text, *r);
    json out = memoryOut(*r);
    copyWarnings(out, *r);
    return {text, false, out};
  }
  return {verb + ": " + describe(*r) + " (" + oneLineText(r->value("state", "")) + ")", false, memoryOut(*r)};
}

std::string negotiatedVersion(const json& params) {
  if (params.is_object() && params.contains("protocolVersion") && params["protocolVersion"].is_string()) {
    const std::string asked = params["protocolVersion"];
    for (const char* v : kProtocolVersions) {
      if (asked == v) return asked;
    }
  }
  return kProtocolVersions[0];
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
        // The daemon starts now, not at the first tool call. A failure is not the client's: the tool calls report
        // it (and try again).
        (void)bridge.connect();
        result = json{{"protocolVersion", negotiatedVersion(call.params)},
                      {"capabilities", {{"tools", {{"listChanged", false}}}}},
                      {"serverInfo", {{"name", "memq"}, {"title", "memq"}, {"version", "0.1.0"}}},
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
        } else if (call.params.contains("arguments") && !call.params["arguments"].is_object() &&
                   !call.params["arguments"].is_null()) {
          error = Status::invalidField("arguments", "tools/call arguments must be an object");
        } else {
          json args = call.params.value("arguments", json::object());
          if (!args.is_object()) args = json::object();
          const std::string name = call.params["name"].get<std::string>();
          if (!findTool(name)) {
            // A tool the server does not list is a protocol error (MCP's tools, "Error Handling"), not a tool's.
            error = Status(ErrorCode::kInvalidParams, "Unknown tool: " + name, json{{"field", "name"}});
          } else {
            ToolResult t;
            try {
              t = runTool(bridge, name, args);
            } catch (const std::exception& e) {
              // A reply this bridge did not expect costs the call, never the agent's memory tools.
              t = ToolResult{std::string("internal error: ") + e.what(), true, std::nullopt};
            }
            result = json{{"content", json::array({{{"type", "text"}, {"text", t.text}}})}, {"isError", t.isError}};
            if (t.structured) (*result)["structuredContent"] = *t.structured;
          }
        }
      } else if (call.method.rfind("notifications/", 0) == 0 && call.isNotification()) {
        continue;  // notifications/initialized, notifications/cancelled, …: nothing to do, nothing to answer
      } else {
        // A "notifications/…" method sent with an id is a request all the same: it is answered, not left waiting.
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
