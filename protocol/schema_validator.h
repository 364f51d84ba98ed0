// Validation of method params against the JSON Schema subset memq's method schemas use (schema/methods/*.json).
// Owns the wording of InvalidParams errors: the field path ("summary", "files[3]", "project.root") goes in data.field,
// and the message is a sentence a person understands ("summary must be a string", "unknown field 'sumary' (did you
// mean 'summary'?)").
//
// Supported keywords: type (one name or an array of names: string, integer, number, boolean, object, array, null),
// properties, required, additionalProperties (boolean or schema), enum, const, minLength/maxLength (counted in Unicode
// code points), minimum/maximum, exclusiveMinimum/exclusiveMaximum (numbers), items (one schema for every element),
// minItems/maxItems, pattern (ECMAScript std::regex, unanchored as in JSON Schema), oneOf (exactly one alternative
// holds; when none does, the error is that of the alternative whose type the value has). Annotations (description,
// default, title, examples, $comment, $schema) are accepted and ignored; any other keyword is a schema bug that
// checkSchema reports.
//
// "integer" means a JSON number written without fraction or exponent (nlohmann's integer types): the typed binders
// downstream read it with get<int64_t>() and must not meet 5.0.
//
// A schema is read into a CompiledSchema before a value is checked: every keyword looked up once, field paths
// written out only for an error. memqd keeps one per method (method_schemas.h) for the params of every request.
//
// Thread-safety: free functions; compiled patterns are cached behind a mutex, so any thread may call them. A
// CompiledSchema is immutable once built: any thread may validate with it.
#pragma once

#include <nlohmann/json.hpp>

#include <memory>
#include <string>

#include "protocol/status.h"

namespace memq {

// A schema ready to check values against; validateParams and validateValue below compile one per call.
class CompiledSchema {
 public:
  explicit CompiledSchema(const nlohmann::json& schema);
  ~CompiledSchema();
  CompiledSchema(CompiledSchema&&) noexcept;
  CompiledSchema& operator=(CompiledSchema&&) noexcept;

  Status validateParams(const nlohmann::json& params) const;  // as validateParams(schema, params)
  Status validateValue(const nlohmann::json& value, const std::string& rootName) const;

  struct Node;

 private:
  std::unique_ptr<Node> root_;
};

// Ok, or Status::invalidField(path, message) for the first violation found. Absent params (null) are validated as an
// empty object, so a method with required fields reports the first missing one. Errors at the top level name the
// field "params".
Status validateParams(const nlohmann::json& schema, const nlohmann::json& params);

// The same check for any value (for example a reply against a method's result schema); rootName names the top level
// in paths and messages.
Status validateValue(const nlohmann::json& schema, const nlohmann::json& value, const std::string& rootName);

// Lints a schema: only supported keywords, well-formed values, compilable patterns. Used by tests so a typo in a
// schema file ("requried") cannot silently disable a check. Returns InternalError naming the schema path.
Status checkSchema(const nlohmann::json& schema);

}  // namespace memq
