// The method table as data: one JSON file per method (schema/methods/<method with '/' → '.'>.json) holding its
// one-line summary, its params schema and its result schema, embedded into memq_protocol at build time. The daemon
// validates params against these before binding them, the CLI and docs read the summaries, and tests validate real
// replies against the result schemas, so the wire contract lives in exactly one place.
//
// Thread-safety: parsed once on first use (a function-local static); afterwards read-only, safe from any thread.
#pragma once

#include <nlohmann/json.hpp>

#include <memory>
#include <string_view>
#include <vector>

#include "protocol/schema_validator.h"

namespace memq {

struct MethodSchema {
  std::string_view method;   // "memory/save"
  nlohmann::json params;     // JSON Schema for the params object (schema_validator.h subset)
  nlohmann::json result;     // JSON Schema for the result
  std::string_view summary;  // one line, for help texts and docs
  std::shared_ptr<const CompiledSchema> compiledParams;  // params, compiled once: what every request is checked by
};

// Every method, sorted by schema file name (so "daemon/shutdown" comes before "export").
const std::vector<MethodSchema>& methodSchemas();

// The schema of one method, or nullptr when memq has no such method (MethodNotFound).
const MethodSchema* findMethodSchema(std::string_view method);

}  // namespace memq
