// The method table (schema/methods/*.json, embedded in memq_protocol): complete against docs/protocol.md, well-formed,
// and accepting the params the protocol documents while refusing what it does not.
#include "protocol/method_schemas.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>

#include "protocol/schema_validator.h"

namespace memq {
namespace {

using nlohmann::json;

// The method table of docs/protocol.md, copied by hand: a method added to one side only fails here.
const std::set<std::string> kProtocolMethods = {
    "initialize",      "memory/save",     "memory/get",        "memory/update",   "memory/list",
    "memory/search",   "memory/recall",   "memory/hide",       "memory/restore",  "memory/pin",
    "memory/unpin",    "memory/supersede", "memory/reject",    "memory/unreject", "memory/purge",
    "memory/attach",   "memory/detach",   "hints/for_tool",    "hints/turn",      "repo/cochange",
    "repo/blast_radius", "repo/refresh",  "review/clusters",   "review/stale",    "review/dead",
    "audit/list",      "export",          "import",            "stats",           "subscribe",
    "daemon/status",   "daemon/shutdown", "team/connect",      "team/status",     "team/disconnect",
};

// The smallest params each method accepts.
const std::map<std::string, json>& minimalParams() {
  static const std::map<std::string, json> kParams = {
      {"initialize", {{"client_name", "test"}}},
      {"memory/save", {{"summary", "use tabs"}}},
      {"memory/get", {{"id", "abcd"}}},
      {"memory/update", {{"id", "abcd"}}},
      {"memory/list", json::object()},
      {"memory/search", {{"query", "tabs"}}},
      {"memory/recall", json::object()},
      {"memory/hide", {{"id", "abcd"}}},
      {"memory/restore", {{"id", "abcd"}}},
      {"memory/pin", {{"id", "abcd"}}},
      {"memory/unpin", {{"id", "abcd"}}},
      {"memory/supersede", {{"id", "abcd"}, {"by", "ef01"}}},
      {"memory/reject", {{"id", "abcd"}, {"reason", "wrong"}}},
      {"memory/unreject", {{"id", "abcd"}}},
      {"memory/purge", {{"id", "abcd"}}},
      {"memory/attach", {{"id", "abcd"}, {"files", {"src/a.cc"}}}},
      {"memory/detach", {{"id", "abcd"}, {"files", {"src/a.cc"}}}},
      {"hints/for_tool", {{"tool", "edit"}}},
      {"hints/turn", json::object()},
      {"repo/cochange", {{"file", "src/a.cc"}}},
      {"repo/blast_radius", {{"file", "src/a.cc"}}},
      {"repo/refresh", json::object()},
      {"review/clusters", json::object()},
      {"review/stale", json::object()},
      {"review/dead", json::object()},
      {"audit/list", json::object()},
      {"export", json::object()},
      {"import", {{"jsonl", ""}}},
      {"stats", json::object()},
      {"subscribe", json::object()},
      {"daemon/status", json::object()},
      {"daemon/shutdown", json::object()},
      {"team/connect", {{"conninfo", "host=db dbname=memq_team user=alice"}}},
      {"team/status", json::object()},
      {"team/disconnect", json::object()},
  };
  return kParams;
}

json sampleMemory() {
  return json::parse(R"({
    "id": "0b5c7a8e-3f0e-4f3e-9a57-3d2f9c1b2a10", "scope": "project", "category": "gotcha",
    "summary": "run ctest with -j1 on CI", "details": null, "topics": ["ci"], "files": ["Makefile"],
    "source": "agent", "session_id": null, "created_at": "2024-05-01T10:00:00.000Z",
    "updated_at": "2024-05-01T10:00:00.000Z", "last_used_at": null, "use_count": 0, "pinned": false,
    "state": "active", "superseded_by": null, "content_hash": "ab12"})");
}

const MethodSchema& schemaOf(const std::string& method) {
  const MethodSchema* schema = findMethodSchema(method);
  EXPECT_NE(schema, nullptr) << method;
  static const MethodSchema kMissing{};
  return schema ? *schema : kMissing;
}

TEST(MethodSchemas, CoverExactlyTheProtocolMethods) {
  std::set<std::string> embedded;
  for (const MethodSchema& schema : methodSchemas()) {
    EXPECT_TRUE(embedded.insert(std::string(schema.method)).second) << "duplicate " << schema.method;
  }
  EXPECT_EQ(embedded, kProtocolMethods);
  EXPECT_EQ(minimalParams().size(), kProtocolMethods.size());
}

TEST(MethodSchemas, FindByName) {
  const MethodSchema* save = findMethodSchema("memory/save");
  ASSERT_NE(save, nullptr);
  EXPECT_EQ(save->method, "memory/save");
  EXPECT_EQ(findMethodSchema("memory/sav"), nullptr);
  EXPECT_EQ(findMethodSchema("memory.save"), nullptr);
  EXPECT_EQ(findMethodSchema(""), nullptr);
  EXPECT_EQ(&methodSchemas(), &methodSchemas());  // parsed once
}

TEST(MethodSchemas, EachIsWellFormed) {
  for (const MethodSchema& schema : methodSchemas()) {
    SCOPED_TRACE(std::string(schema.method));
    EXPECT_FALSE(schema.summary.empty());
    EXPECT_EQ(schema.summary.find('\n'), std::string_view::npos);
    ASSERT_TRUE(schema.params.is_object());
    ASSERT_TRUE(schema.result.is_object());
    EXPECT_TRUE(checkSchema(schema.params).isOk()) << checkSchema(schema.params).toString();
    EXPECT_TRUE(checkSchema(schema.result).isOk()) << checkSchema(schema.result).toString();
    EXPECT_EQ(schema.params.value("type", ""), "object");
    EXPECT_EQ(schema.params.value("additionalProperties", true), false) << "typos must be reported";
    EXPECT_EQ(schema.result.value("type", ""), "object");
    const json& properties = schema.params.at("properties");
    for (const char* common : {"project_root", "scope", "read_scope", "write_scope", "source"}) {
      EXPECT_TRUE(properties.contains(common)) << common;
    }
  }
}

TEST(MethodSchemas, FilesOnDiskMatchTheirMethodAndTheEmbeddedCopy) {
  std::size_t files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(MEMQ_SCHEMA_METHODS_DIR)) {
    if (entry.path().extension() != ".json") continue;
    ++files;
    SCOPED_TRACE(entry.path().string());
    std::ifstream in(entry.path());
    std::stringstream text;
    text << in.rdbuf();
    json file = json::parse(text.str());
    std::string method = file.at("method").get<std::string>();
    std::string expectedName = method;
    std::replace(expectedName.begin(), expectedName.end(), '/', '.');
    EXPECT_EQ(entry.path().filename().string(), expectedName + ".json");
    EXPECT_TRUE(file.at("summary").is_string());
    const MethodSchema& embedded = schemaOf(method);
    EXPECT_EQ(embedded.params, file.at("params")) << "rebuild: the embedded schema is stale";
    EXPECT_EQ(embedded.result, file.at("result"));
    EXPECT_EQ(embedded.summary, file.at("summary").get<std::string>());
  }
  EXPECT_EQ(files, kProtocolMethods.size());
}

TEST(MethodSchemas, MinimalParamsAreAcceptedAndEachRequiredFieldIsNeeded) {
  json common = {{"project_root", "/home/u/src/app"}, {"scope", "project"}, {"read_scope", "all"},
                 {"write_scope", "global"}, {"source", "user"}};
  for (const auto& [method, params] : minimalParams()) {
    SCOPED_TRACE(method);
    const MethodSchema& schema = schemaOf(method);
    Status plain = validateParams(schema.params, params);
    EXPECT_TRUE(plain.isOk()) << plain.toString();
    json withCommon = params;
    withCommon.update(common);
    EXPECT_TRUE(validateParams(schema.params, withCommon).isOk());
    for (const json& required : schema.params.value("required", json::array())) {
      json without = params;
      without.erase(required.get<std::string>());
      Status missing = validateParams(schema.params, without);
      EXPECT_EQ(missing.code(), ErrorCode::kInvalidParams);
      EXPECT_EQ(missing.message(), required.get<std::string>() + " is required");
    }
    json typo = params;
    typo["bogus_field"] = 1;
    Status unknown = validateParams(schema.params, typo);
    EXPECT_EQ(unknown.code(), ErrorCode::kInvalidParams);
    EXPECT_EQ(unknown.data(), json({{"field", "bogus_field"}}));
  }
}

TEST(MethodSchemas, CommonScopeFieldsAreEnums) {
  const json& params = schemaOf("memory/list").params;
  EXPECT_FALSE(validateParams(params, {{"scope", "all"}}).isOk());
  EXPECT_TRUE(validateParams(params, {{"read_scope", "none"}}).isOk());
  EXPECT_FALSE(validateParams(params, {{"read_scope", "everything"}}).isOk());
  EXPECT_FALSE(validateParams(params, {{"write_scope", "all"}}).isOk());
  EXPECT_FALSE(validateParams(params, {{"project_root", 3}}).isOk());
}

TEST(MethodSchemas, SaveFollowsTheFieldLimits) {
  const json& params = schemaOf("memory/save").params;
  json full = {{"summary", std::string(5000, 's')},  // truncated by the service, not refused
               {"details", std::string(50000, 'd')},
               {"category", "gotcha"},
               {"topics", json::array()},
               {"files", json::array()},
               {"source", "user"},
               {"session_id", "s-1"},
               {"merge_topics", true}};
  for (int i = 0; i < 20; ++i) full["topics"].push_back(std::string(100, 't') + std::to_string(i));
  for (int i = 0; i < 16; ++i) full["files"].push_back("src/f" + std::to_string(i) + ".cc");
  EXPECT_TRUE(validateParams(params, full).isOk()) << validateParams(params, full).toString();

  json tooManyFiles = full;
  tooManyFiles["files"].push_back("src/one-too-many.cc");
  Status files = validateParams(params, tooManyFiles);
  EXPECT_EQ(files.data(), json({{"field", "files"}}));
  EXPECT_EQ(files.message(), "files must have at most 16 items (it has 17)");

  Status typo = validateParams(params, {{"sumary", "x"}});
  EXPECT_EQ(typo.message(), "unknown field 'sumary' (did you mean 'summary'?)");
  EXPECT_EQ(validateParams(params, {{"summary", ""}}).message(), "summary must not be empty");
  EXPECT_EQ(validateParams(params, {{"summary", 5}}).message(), "summary must be a string (got an integer)");
  EXPECT_EQ(validateParams(params, {{"summary", "x"}, {"category", "idea"}}).data(), json({{"field", "category"}}));
  EXPECT_TRUE(validateParams(params, {{"summary", "x"}, {"category", nullptr}}).isOk());
  EXPECT_EQ(validateParams(params, {{"summary", "x"}, {"topics", {"a", 1}}}).data(), json({{"field", "topics[1]"}}));
  EXPECT_EQ(validateParams(params, {{"summary", "x"}, {"source", "robot"}}).data(), json({{"field", "source"}}));
}

TEST(MethodSchemas, RecallAndSearchAcceptTheirKnobs) {
  json knobs = {{"threshold", 0.25}, {"ranker", "reference"}, {"explain", true}, {"mark_used", false},
                {"max_chars", 0},    {"limit", 100},          {"files", {"a.cc", "b.cc"}}};
  json recall = knobs;
  recall["query"] = "jwt refresh";
  EXPECT_TRUE(validateParams(schemaOf("memory/recall").params, recall).isOk());
  EXPECT_TRUE(validateParams(schemaOf("memory/recall").params, knobs).isOk());  // query is optional in recall
  EXPECT_TRUE(validateParams(schemaOf("memory/search").params, recall).isOk());
  EXPECT_FALSE(validateParams(schemaOf("memory/search").params, knobs).isOk());  // but required in search

  const json& params = schemaOf("memory/recall").params;
  EXPECT_EQ(validateParams(params, {{"limit", 0}}).message(), "limit must be at least 1");
  EXPECT_EQ(validateParams(params, {{"limit", 101}}).message(), "limit must be at most 100");
  EXPECT_EQ(validateParams(params, {{"max_chars", -1}}).message(), "max_chars must be at least 0");
  EXPECT_EQ(validateParams(params, {{"ranker", "best"}}).message(), "ranker must be one of: default, reference");
  json manyFiles = {{"files", json::array()}};
  for (int i = 0; i < 257; ++i) manyFiles["files"].push_back("f" + std::to_string(i));  // a query names up to 256
  EXPECT_EQ(validateParams(params, manyFiles).data(), json({{"field", "files"}}));
}

TEST(MethodSchemas, ResultSchemasAcceptDocumentedReplies) {
  json memory = sampleMemory();
  EXPECT_TRUE(validateValue(schemaOf("memory/get").result, memory, "result").isOk())
      << validateValue(schemaOf("memory/get").result, memory, "result").toString();
  json incomplete = memory;
  incomplete.erase("content_hash");
  EXPECT_EQ(validateValue(schemaOf("memory/get").result, incomplete, "result").message(), "content_hash is required");

  json save = {{"id", memory["id"]}, {"scope", "project"}, {"status", "created"}, {"similar", json::array()},
               {"warnings", {"summary truncated to 200 characters"}}, {"redactions", json::array()}};
  EXPECT_TRUE(validateValue(schemaOf("memory/save").result, save, "result").isOk());

  json ranked = memory;
  ranked["score"] = 0.82;
  ranked["signals"] = {{"fts", 0.5}, {"file", 1.0}};
  ranked["stale"] = false;
  json recall = {{"memories", {ranked}}};
  EXPECT_TRUE(validateValue(schemaOf("memory/recall").result, recall, "result").isOk());
  EXPECT_FALSE(validateValue(schemaOf("memory/recall").result, json{{"memories", {memory}}}, "result").isOk());

  json list = {{"memories", {memory}}, {"total", 1}, {"next_offset", nullptr}};  // extra fields are fine
  EXPECT_TRUE(validateValue(schemaOf("memory/list").result, list, "result").isOk());

  json hints = {{"lines", {"gotcha: run ctest with -j1 on CI"}},
                {"hints", {{{"id", "0b5c7a8e"}, {"label", "gotcha"}, {"summary", "run ctest with -j1 on CI"}}}},
                {"more", 0}};
  EXPECT_TRUE(validateValue(schemaOf("hints/for_tool").result, hints, "result").isOk());
  EXPECT_TRUE(validateValue(schemaOf("daemon/shutdown").result, json{{"ok", true}}, "result").isOk());

  json stats = json::parse(R"({"scopes": {"project": {"path": "/r/.git/memq/memory.db", "db_bytes": 4096,
                                                      "states": {"active": 2}, "categories": {"pref": 1}},
                                          "global": {"path": "/d/global.db", "db_bytes": 0}}})");
  EXPECT_TRUE(validateValue(schemaOf("stats").result, stats, "result").isOk());
  EXPECT_EQ(validateValue(schemaOf("stats").result, json::parse(R"({"scopes": {"both": {}}})"), "result").data(),
            json({{"field", "scopes.both"}}));

  json status = json::parse(R"({"version": "0.1.0", "pid": 42, "uptime_s": 1.5, "socket": "/tmp/memq-1/memqd.sock",
                                "open_scopes": ["/r/.git/memq/memory.db"], "connections": 1, "requests_served": 9})");
  EXPECT_TRUE(validateValue(schemaOf("daemon/status").result, status, "result").isOk());

  json initialize = json::parse(R"({"server_version": "0.1.0", "protocol_version": 1, "capabilities": {},
                                    "session": "tok", "project": {"root": "/r", "db_path": "/r/.git/memq/memory.db"}})");
  EXPECT_TRUE(validateValue(schemaOf("initialize").result, initialize, "result").isOk());
  initialize["project"] = nullptr;  // read_scope none, or no project root given
  EXPECT_TRUE(validateValue(schemaOf("initialize").result, initialize, "result").isOk());
}

}  // namespace
}  // namespace memq
