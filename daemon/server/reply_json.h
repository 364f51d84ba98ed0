// Every method's result as its reply (docs/protocol.md): the one place Service's result types become JSON.
// replyJson builds a nlohmann tree (serializeMessage dumps it with its keys sorted). replyText writes the largest
// results (those that carry memory records: memory/recall, memory/search, memory/get, memory/save) straight from the
// records with JsonWriter instead of building a tree and dumping it. That text is byte for byte the serializeMessage
// of the tree it replaced (memoryToJson, a hit's tree, the save result's): same keys in the same (sorted) order, same
// values, same escaping. tests/unit/server/reply_json_test.cc holds them to that.
// Thread-safety: pure functions.
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

#include "daemon/model/memory.h"
#include "daemon/recall/recall_engine.h"
#include "daemon/service/service_types.h"

namespace memq {

nlohmann::json replyJson(const InitializeResult& result);
nlohmann::json replyJson(const Memory& memory);
nlohmann::json replyJson(const UpdateOutcome& result);
nlohmann::json replyJson(const ListResult& result);
nlohmann::json replyJson(const SupersedeResult& result);
nlohmann::json replyJson(const PurgeResult& result);
nlohmann::json replyJson(const HintResult& result);
nlohmann::json replyJson(const HintTurn& result);
nlohmann::json replyJson(const CochangeResult& result);
nlohmann::json replyJson(const BlastRadius& result);
nlohmann::json replyJson(const RepoRefreshResult& result);
nlohmann::json replyJson(const ClusterReport& result);
nlohmann::json replyJson(const StaleReport& result);
nlohmann::json replyJson(const DeadReport& result);
nlohmann::json replyJson(const AuditPage& result);
nlohmann::json replyJson(const ExportPage& result);
nlohmann::json replyJson(const ImportCounts& result);
nlohmann::json replyJson(const StatsReport& result);
nlohmann::json replyJson(const TeamStatusResult& result);

// memory/get: the record, with `warnings` when the answer may be incomplete.
std::string replyText(const GetResult& result);
// memory/recall and memory/search.
std::string replyText(const RecallHits& result);
// memory/save.
std::string replyText(const SaveResult& result);

// One memory record as a JSON object.
std::string memoryJsonText(const Memory& memory);

// {"memories": [hit, ...]}: each hit is the record plus score, normalized_score, signals, stale, changed_files and
// missing_files when not empty, and explain when asked for.
std::string recallHitsJsonText(const std::vector<RecallHit>& hits, bool explain,
                               const std::vector<std::string>& warnings = {});

}  // namespace memq
