// The JSON Schema subset validator and schema linter (see schema_validator.h).
#include "protocol/schema_validator.h"

#include <algorithm>
#include <cstdint>
#include <optional>
#include <map>
#include <memory>
#include <mutex>
#include <regex>
#include <set>
#include <string_view>
#include <vector>

namespace memq {
namespace {

using nlohmann::json;

// libstdc++'s std::regex matches by recursion proportional to the subject's length, so a long enough string can
// exhaust the stack. Patterns are only meant for short identifiers; longer subjects are refused instead of matched.
constexpr std::size_t kMaxPatternSubjectBytes = 4096;

const std::set<std::string_view>& knownKeywords() {
  static const std::set<std::string_view> kKeywords = {
      "type",      "properties", "required", "additionalProperties", "enum",     "const",
      "minLength", "maxLength",  "minimum",  "maximum",              "exclusiveMinimum", "exclusiveMaximum",
      "items",     "minItems",   "maxItems", "pattern",          "oneOf",
      // annotations: accepted, never checked
      "description", "default", "title", "examples", "$comment", "$schema"};
  return kKeywords;
}

const std::set<std::string_view>& knownTypes() {
  static const std::set<std::string_view> kTypes = {"string", "integer", "number", "boolean",
                                                    "object", "array",   "null"};
  return kTypes;
}

// a < b for two JSON numbers. nlohmann compares unsigned against signed by casting to signed, so 2^64-1 would sort
// below 1; integers are compared exactly here and doubles only when a float is involved.
bool less(const json& a, const json& b) {
  if (a.is_number_float() || b.is_number_float()) return a.get<double>() < b.get<double>();
  bool aNegative = a.is_number_integer() && !a.is_number_unsigned() && a.get<std::int64_t>() < 0;
  bool bNegative = b.is_number_integer() && !b.is_number_unsigned() && b.get<std::int64_t>() < 0;
  if (aNegative != bNegative) return aNegative;
  if (aNegative) return a.get<std::int64_t>() < b.get<std::int64_t>();
  return a.get<std::uint64_t>() < b.get<std::uint64_t>();
}

// A count-like keyword value (minLength, maxItems, ...): schemas parsed from text hold unsigned numbers, schemas built
// in C++ hold signed ones.
std::optional<std::size_t> nonNegative(const json& value) {
  if (value.is_number_unsigned()) return value.get<std::size_t>();
  if (value.is_number_integer() && value.get<std::int64_t>() >= 0) return value.get<std::size_t>();
  return std::nullopt;
}

bool typeMatches(std::string_view type, const json& value) {
  if (type == "string") return value.is_string();
  if (type == "integer") return value.is_number_integer();
  if (type == "number") return value.is_number();
  if (type == "boolean") return value.is_boolean();
  if (type == "object") return value.is_object();
  if (type == "array") return value.is_array();
  if (type == "null") return value.is_null();
  return false;
}

std::string_view withArticle(std::string_view type) {
  if (type == "string") return "a string";
  if (type == "integer") return "an integer";
  if (type == "number") return "a number";
  if (type == "boolean") return "a boolean";
  if (type == "object") return "an object";
  if (type == "array") return "an array";
  if (type == "null") return "null";
  return type;
}

std::string_view describeValue(const json& value) {
  switch (value.type()) {
    case json::value_t::null: return "null";
    case json::value_t::boolean: return "a boolean";
    case json::value_t::string: return "a string";
    case json::value_t::number_integer:
    case json::value_t::number_unsigned: return "an integer";
    case json::value_t::number_float: return "a floating-point number";
    case json::value_t::object: return "an object";
    case json::value_t::array: return "an array";
    default: return "an unsupported value";
  }
}

// "a string", "a string or null", "an integer, a string or null".
std::string joinAlternatives(const std::vector<std::string>& parts) {
  std::string out;
  for (std::size_t i = 0; i < parts.size(); ++i) {
    if (i > 0) out += (i + 1 == parts.size()) ? " or " : ", ";
    out += parts[i];
  }
  return out;
}

std::string formatLiteral(const json& value) {
  return value.is_string() ? value.get<std::string>() : value.dump(-1, ' ', false, json::error_handler_t::replace);
}

std::size_t codePoints(const std::string& s) {
  return static_cast<std::size_t>(
      std::count_if(s.begin(), s.end(), [](char c) { return (static_cast<unsigned char>(c) & 0xC0) != 0x80; }));
}

std::size_t editDistance(std::string_view a, std::string_view b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diagonal = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      std::size_t above = row[j];
      std::size_t substitution = diagonal + (a[i - 1] == b[j - 1] ? 0 : 1);
      row[j] = std::min({above + 1, row[j - 1] + 1, substitution});
      diagonal = above;
    }
  }
  return row[b.size()];
}

std::string lowercase(std::string_view s) {
  std::string out(s);
  for (char& c : out) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return out;
}

// The declared property closest to a misspelt one, when it is close enough to be what was meant.
std::optional<std::string> closestProperty(const std::string& unknown, const json& properties) {
  if (!properties.is_object() || unknown.size() > 64) return std::nullopt;
  std::string needle = lowercase(unknown);
  std::optional<std::string> best;
  std::size_t bestDistance = 0;
  for (const auto& [name, ignored] : properties.items()) {
    std::size_t distance = editDistance(needle, lowercase(name));
    std::size_t allowed = std::min<std::size_t>(2, std::max<std::size_t>(1, name.size() / 4));
    if (distance <= allowed && (!best || distance < bestDistance)) {
      best = name;
      bestDistance = distance;
    }
  }
  return best;
}

Result<std::shared_ptr<const std::regex>> compiledPattern(const std::string& pattern) {
  static std::mutex mutex;
  static std::map<std::string, std::shared_ptr<const std::regex>> cache;
  std::lock_guard<std::mutex> lock(mutex);
  auto it = cache.find(pattern);
  if (it != cache.end()) return it->second;
  try {
    auto regex = std::make_shared<const std::regex>(pattern, std::regex::ECMAScript);
    cache.emplace(pattern, regex);
    return std::shared_ptr<const std::regex>(regex);
  } catch (const std::regex_error& e) {
    return Status::internal("schema pattern '" + pattern + "' does not compile: " + e.what());
  }
}

class Validator {
 public:
  explicit Validator(std::string rootName) : rootName_(std::move(rootName)) {}

  Status check(const json& schema, const json& value, const std::string& path) const {
    std::string label = path.empty() ? rootName_ : path;
    if (schema.is_boolean()) {
      if (schema.get<bool>()) return Status::ok();
      return Status::invalidField(label, label + " is not allowed");
    }
    if (!schema.is_object()) return Status::ok();

    MEMQ_RETURN_IF_ERROR(checkType(schema, value, label));
    if (auto it = schema.find("enum"); it != schema.end() && it->is_array()) {
      if (std::find(it->begin(), it->end(), value) == it->end()) {
        std::vector<std::string> allowed;
        for (const json& option : *it) allowed.push_back(formatLiteral(option));
        std::string list;
        for (const std::string& option : allowed) list += (list.empty() ? "" : ", ") + option;
        return Status::invalidField(label, label + " must be one of: " + list);
      }
    }
    if (auto it = schema.find("const"); it != schema.end() && *it != value) {
      return Status::invalidField(label, label + " must be " + formatLiteral(*it));
    }
    if (value.is_string()) MEMQ_RETURN_IF_ERROR(checkString(schema, value.get_ref<const std::string&>(), label));
    if (value.is_number()) MEMQ_RETURN_IF_ERROR(checkNumber(schema, value, label));
    if (value.is_array()) MEMQ_RETURN_IF_ERROR(checkArray(schema, value, label));
    if (value.is_object()) MEMQ_RETURN_IF_ERROR(checkObject(schema, value, path));
    if (auto it = schema.find("oneOf"); it != schema.end() && it->is_array()) {
      MEMQ_RETURN_IF_ERROR(checkOneOf(*it, value, path, label));
    }
    return Status::ok();
  }

 private:
  // Exactly one alternative must hold. When none does, the error is that of the one alternative whose `type` the
  // value has (a string entry's or an object entry's own error, naming the member at fault), else a list of the
  // types allowed.
  Status checkOneOf(const json& alternatives, const json& value, const std::string& path,
                    const std::string& label) const {
    size_t matched = 0;
    std::optional<Status> typedError;
    size_t typed = 0;
    std::vector<std::string> types;
    for (const json& alternative : alternatives) {
      Status st = check(alternative, value, path);
      if (st.isOk()) {
        ++matched;
        continue;
      }
      auto type = alternative.is_object() ? alternative.find("type") : alternative.end();
      if (alternative.is_object() && type != alternative.end() && type->is_string()) {
        types.emplace_back(withArticle(type->get<std::string>()));
        if (typeMatches(type->get<std::string>(), value)) {
          ++typed;
          typedError = st;
        }
      }
    }
    if (matched == 1) return Status::ok();
    if (matched > 1) return Status::invalidField(label, label + " matches more than one of its allowed forms");
    if (typed == 1) return *typedError;
    if (types.empty()) return Status::invalidField(label, label + " matches none of its allowed forms");
    return Status::invalidField(label, label + " must be " + joinAlternatives(types) + " (got " +
                                           std::string(describeValue(value)) + ")");
  }

  std::string childPath(const std::string& path, const std::string& key) const {
    return path.empty() ? key : path + "." + key;
  }

  Status checkType(const json& schema, const json& value, const std::string& label) const {
    auto it = schema.find("type");
    if (it == schema.end()) return Status::ok();
    std::vector<std::string> names;
    if (it->is_string()) {
      names.push_back(it->get<std::string>());
    } else if (it->is_array()) {
      for (const json& name : *it) {
        if (name.is_string()) names.push_back(name.get<std::string>());
      }
    }
    if (names.empty()) return Status::ok();
    for (const std::string& name : names) {
      if (typeMatches(name, value)) return Status::ok();
    }
    std::vector<std::string> expected;
    for (const std::string& name : names) expected.emplace_back(withArticle(name));
    return Status::invalidField(
        label, label + " must be " + joinAlternatives(expected) + " (got " + std::string(describeValue(value)) + ")");
  }

  Status checkString(const json& schema, const std::string& value, const std::string& label) const {
    std::size_t length = codePoints(value);
    if (auto it = schema.find("minLength"); it != schema.end() && nonNegative(*it)) {
      std::size_t minimum = *nonNegative(*it);
      if (length < minimum) {
        if (minimum == 1) return Status::invalidField(label, label + " must not be empty");
        return Status::invalidField(label,
                                    label + " must be at least " + std::to_string(minimum) + " characters long");
      }
    }
    if (auto it = schema.find("maxLength"); it != schema.end() && nonNegative(*it)) {
      std::size_t maximum = *nonNegative(*it);
      if (length > maximum) {
        return Status::invalidField(label, label + " must be at most " + std::to_string(maximum) +
                                               " characters long (it has " + std::to_string(length) + ")");
      }
    }
    if (auto it = schema.find("pattern"); it != schema.end() && it->is_string()) {
      const std::string& pattern = it->get_ref<const std::string&>();
      if (value.size() > kMaxPatternSubjectBytes) {
        return Status::invalidField(label, label + " is too long to check against the pattern " + pattern);
      }
      Result<std::shared_ptr<const std::regex>> regex = compiledPattern(pattern);
      if (!regex) return regex.status();
      if (!std::regex_search(value, **regex)) {
        return Status::invalidField(label, label + " must match the pattern " + pattern);
      }
    }
    return Status::ok();
  }

  Status checkNumber(const json& schema, const json& value, const std::string& label) const {
    if (auto it = schema.find("minimum"); it != schema.end() && it->is_number() && less(value, *it)) {
      return Status::invalidField(label, label + " must be at least " + formatLiteral(*it));
    }
    if (auto it = schema.find("maximum"); it != schema.end() && it->is_number() && less(*it, value)) {
      return Status::invalidField(label, label + " must be at most " + formatLiteral(*it));
    }
    if (auto it = schema.find("exclusiveMinimum"); it != schema.end() && it->is_number() && !less(*it, value)) {
      return Status::invalidField(label, label + " must be greater than " + formatLiteral(*it));
    }
    if (auto it = schema.find("exclusiveMaximum"); it != schema.end() && it->is_number() && !less(value, *it)) {
      return Status::invalidField(label, label + " must be less than " + formatLiteral(*it));
    }
    return Status::ok();
  }

  Status checkArray(const json& schema, const json& value, const std::string& label) const {
    if (auto it = schema.find("minItems"); it != schema.end() && nonNegative(*it)) {
      std::size_t minimum = *nonNegative(*it);
      if (value.size() < minimum) {
        if (minimum == 1) return Status::invalidField(label, label + " must not be empty");
        return Status::invalidField(label, label + " must have at least " + std::to_string(minimum) + " items");
      }
    }
    if (auto it = schema.find("maxItems"); it != schema.end() && nonNegative(*it)) {
      std::size_t maximum = *nonNegative(*it);
      if (value.size() > maximum) {
        return Status::invalidField(label, label + " must have at most " + std::to_string(maximum) +
                                               " items (it has " + std::to_string(value.size()) + ")");
      }
    }
    if (auto it = schema.find("items"); it != schema.end()) {
      for (std::size_t i = 0; i < value.size(); ++i) {
        MEMQ_RETURN_IF_ERROR(check(*it, value[i], label + "[" + std::to_string(i) + "]"));
      }
    }
    return Status::ok();
  }

  Status checkObject(const json& schema, const json& value, const std::string& path) const {
    static const json kNoProperties = json::object();
    auto propertiesIt = schema.find("properties");
    const json& properties =
        (propertiesIt != schema.end() && propertiesIt->is_object()) ? *propertiesIt : kNoProperties;

    // Unknown fields first: a misspelt required field is better reported as the typo than as "x is required".
    if (auto it = schema.find("additionalProperties"); it != schema.end()) {
      for (const auto& [key, member] : value.items()) {
        if (properties.contains(key)) continue;
        std::string fieldPath = childPath(path, key);
        if (it->is_boolean() && !it->get<bool>()) {
          std::string message = "unknown field '" + key + "'";
          if (std::optional<std::string> guess = closestProperty(key, properties)) {
            message += " (did you mean '" + *guess + "'?)";
          }
          return Status::invalidField(fieldPath, message);
        }
        MEMQ_RETURN_IF_ERROR(check(*it, member, fieldPath));
      }
    }
    if (auto it = schema.find("required"); it != schema.end() && it->is_array()) {
      for (const json& name : *it) {
        if (!name.is_string() || value.contains(name.get_ref<const std::string&>())) continue;
        std::string fieldPath = childPath(path, name.get<std::string>());
        return Status::invalidField(fieldPath, fieldPath + " is required");
      }
    }
    for (const auto& [key, propertySchema] : properties.items()) {
      auto member = value.find(key);
      if (member != value.end()) MEMQ_RETURN_IF_ERROR(check(propertySchema, *member, childPath(path, key)));
    }
    return Status::ok();
  }

  std::string rootName_;
};

Status lintError(const std::string& path, const std::string& message) {
  return Status::internal("schema " + (path.empty() ? std::string("(root)") : path) + ": " + message);
}

bool isNonNegativeInteger(const json& value) { return nonNegative(value).has_value(); }

Status lint(const json& schema, const std::string& path) {
  if (schema.is_boolean()) return Status::ok();
  if (!schema.is_object()) return lintError(path, "a schema must be an object or a boolean");
  for (const auto& [key, value] : schema.items()) {
    if (!knownKeywords().count(key)) return lintError(path, "unsupported keyword '" + key + "'");
  }
  if (auto it = schema.find("type"); it != schema.end()) {
    std::vector<json> names = it->is_array() ? it->get<std::vector<json>>() : std::vector<json>{*it};
    if (names.empty()) return lintError(path, "type must not be empty");
    for (const json& name : names) {
      if (!name.is_string() || !knownTypes().count(name.get_ref<const std::string&>())) {
        return lintError(path, "unknown type " + name.dump());
      }
    }
  }
  for (const char* key : {"minLength", "maxLength", "minItems", "maxItems"}) {
    if (auto it = schema.find(key); it != schema.end() && !isNonNegativeInteger(*it)) {
      return lintError(path, std::string(key) + " must be a non-negative integer");
    }
  }
  for (const char* key : {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"}) {
    if (auto it = schema.find(key); it != schema.end() && !it->is_number()) {
      return lintError(path, std::string(key) + " must be a number");
    }
  }
  if (auto it = schema.find("enum"); it != schema.end() && (!it->is_array() || it->empty())) {
    return lintError(path, "enum must be a non-empty array");
  }
  if (auto it = schema.find("pattern"); it != schema.end()) {
    if (!it->is_string()) return lintError(path, "pattern must be a string");
    Result<std::shared_ptr<const std::regex>> regex = compiledPattern(it->get<std::string>());
    if (!regex) return lintError(path, regex.status().message());
  }
  if (auto it = schema.find("items"); it != schema.end()) {
    MEMQ_RETURN_IF_ERROR(lint(*it, path + "/items"));
  }
  if (auto it = schema.find("additionalProperties"); it != schema.end()) {
    MEMQ_RETURN_IF_ERROR(lint(*it, path + "/additionalProperties"));
  }
  if (auto it = schema.find("oneOf"); it != schema.end()) {
    if (!it->is_array() || it->empty()) return lintError(path, "oneOf must be a non-empty array of schemas");
    for (size_t i = 0; i < it->size(); ++i) {
      MEMQ_RETURN_IF_ERROR(lint((*it)[i], path + "/oneOf/" + std::to_string(i)));
    }
  }
  auto propertiesIt = schema.find("properties");
  if (propertiesIt != schema.end()) {
    if (!propertiesIt->is_object()) return lintError(path, "properties must be an object");
    for (const auto& [key, value] : propertiesIt->items()) {
      MEMQ_RETURN_IF_ERROR(lint(value, path + "/properties/" + key));
    }
  }
  if (auto it = schema.find("required"); it != schema.end()) {
    if (!it->is_array()) return lintError(path, "required must be an array");
    auto additional = schema.find("additionalProperties");
    bool closed = additional != schema.end() && additional->is_boolean() && !additional->get<bool>();
    for (const json& name : *it) {
      if (!name.is_string()) return lintError(path, "required must list strings");
      // A closed object that requires a field it does not declare can never validate.
      if (closed && (propertiesIt == schema.end() || !propertiesIt->contains(name.get_ref<const std::string&>()))) {
        return lintError(path, "required field '" + name.get<std::string>() + "' is not among the properties");
      }
    }
  }
  return Status::ok();
}

}  // namespace

Status validateParams(const nlohmann::json& schema, const nlohmann::json& params) {
  static const json kEmptyObject = json::object();
  return Validator("params").check(schema, params.is_null() ? kEmptyObject : params, "");
}

Status validateValue(const nlohmann::json& schema, const nlohmann::json& value, const std::string& rootName) {
  return Validator(rootName).check(schema, value, "");
}

Status checkSchema(const nlohmann::json& schema) { return lint(schema, ""); }

}  // namespace memq
