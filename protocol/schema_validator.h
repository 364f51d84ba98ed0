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
// Thread-safety: free functions; compiled patterns are cached behind a mutex, so any thread may call them.
#pragma once

#include <nlohmann/json.hpp>

#include "protocol/status.h"

namespace memq {

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
