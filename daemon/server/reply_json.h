// Reply text for the results that carry memory records (memory/recall, memory/search, memory/get), written straight
// from the records with JsonWriter instead of building a nlohmann tree and dumping it. The text is byte for byte
// serializeMessage(memoryToJson(...)) / serializeMessage of the handlers' former tree (recallHitToJson): same keys in
// the same (sorted) order, same values, same escaping. tests/unit/server/reply_json_test.cc holds them to that.
// Thread-safety: pure functions.
#pragma once

#include <string>
#include <vector>

#include "daemon/model/memory.h"
#include "daemon/recall/recall_engine.h"

namespace memq {

// One memory record as a JSON object.
std::string memoryJsonText(const Memory& memory);

// {"memories": [hit, ...]}: each hit is the record plus score, normalized_score, signals, stale, changed_files and
// missing_files when not empty, and explain when asked for.
std::string recallHitsJsonText(const std::vector<RecallHit>& hits, bool explain);

}  // namespace memq
