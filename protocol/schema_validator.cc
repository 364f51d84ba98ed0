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
template <typename Properties>
std::optional<std::string> closestProperty(const std::string& unknown, const Properties& properties) {
  if (unknown.size() > 64) return std::nullopt;
  std::string needle = lowercase(unknown);
  std::optional<std::string> best;
  std::size_t bestDistance = 0;
  for (const auto& [name, ignored] : properties) {
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

// Where a value sits, as a chain through the caller's stack: the field's name is written out only for an error, so
// a valid request builds no strings.
struct FieldPath {
  const FieldPath* parent = nullptr;
  std::string_view key;  // a member's name, or empty for an element (then `index`) or the root
  std::size_t index = 0;
  bool element = false;

  FieldPath member(std::string_view name) const { return FieldPath{this, name, 0, false}; }
  FieldPath at(std::size_t i) const { return FieldPath{this, {}, i, true}; }

  // "files[3].path"; "" at the root. An element's parent is its label, so a top-level array's items are
  // "params[0]"; a member's is its path, so a top-level member is "summary".
  std::string text(const std::string& rootName) const {
    if (!parent) return std::string();
    if (element) return parent->label(rootName) + "[" + std::to_string(index) + "]";
    std::string base = parent->text(rootName);
    return base.empty() ? std::string(key) : base + "." + std::string(key);
  }
  std::string label(const std::string& rootName) const {
    std::string path = text(rootName);
    return path.empty() ? rootName : path;
  }
};

}  // namespace

// One schema node with every keyword read out of its JSON once: checking a value looks nothing up by name.
struct CompiledSchema::Node {
  enum class Kind { kAny, kNever, kChecked };  // `true` or not a schema object; `false`; an object of keywords
  Kind kind = Kind::kAny;

  std::vector<std::string> types;  // the names declared under "type", in order (none: any type)
  std::optional<json> enumValues;  // an array
  std::optional<json> constValue;
  std::optional<std::size_t> minLength, maxLength, minItems, maxItems;
  std::optional<json> minimum, maximum, exclusiveMinimum, exclusiveMaximum;  // numbers
  std::optional<std::string> pattern;
  Result<std::shared_ptr<const std::regex>> regex = std::shared_ptr<const std::regex>();
  std::unique_ptr<Node> items;

  // Objects. properties is in the order of the schema's own map (sorted by name), as a value's members are.
  std::vector<std::pair<std::string, Node>> properties;
  enum class Additional { kUnchecked, kClosed, kSchema } additional = Additional::kUnchecked;
  std::unique_ptr<Node> additionalSchema;
  std::vector<std::string> required;

  struct Alternative {
    std::unique_ptr<Node> schema;
    std::optional<std::string> type;  // the alternative's "type" when it is one name: it decides without checking
  };
  std::optional<std::vector<Alternative>> oneOf;

  explicit Node(const json& schema) {
    if (schema.is_boolean()) {
      kind = schema.get<bool>() ? Kind::kAny : Kind::kNever;
      return;
    }
    if (!schema.is_object()) return;
    kind = Kind::kChecked;
    if (auto it = schema.find("type"); it != schema.end()) {
      if (it->is_string()) {
        types.push_back(it->get<std::string>());
      } else if (it->is_array()) {
        for (const json& name : *it) {
          if (name.is_string()) types.push_back(name.get<std::string>());
        }
      }
    }
    if (auto it = schema.find("enum"); it != schema.end() && it->is_array()) enumValues = *it;
    if (auto it = schema.find("const"); it != schema.end()) constValue = *it;
    auto count = [&](const char* keyword, std::optional<std::size_t>& out) {
      if (auto it = schema.find(keyword); it != schema.end()) out = nonNegative(*it);
    };
    count("minLength", minLength);
    count("maxLength", maxLength);
    count("minItems", minItems);
    count("maxItems", maxItems);
    auto bound = [&](const char* keyword, std::optional<json>& out) {
      if (auto it = schema.find(keyword); it != schema.end() && it->is_number()) out = *it;
    };
    bound("minimum", minimum);
    bound("maximum", maximum);
    bound("exclusiveMinimum", exclusiveMinimum);
    bound("exclusiveMaximum", exclusiveMaximum);
    if (auto it = schema.find("pattern"); it != schema.end() && it->is_string()) {
      pattern = it->get<std::string>();
      regex = compiledPattern(*pattern);
    }
    if (auto it = schema.find("items"); it != schema.end()) items = std::make_unique<Node>(*it);
    if (auto it = schema.find("properties"); it != schema.end() && it->is_object()) {
      properties.reserve(it->size());
      for (const auto& [name, property] : it->items()) properties.emplace_back(name, Node(property));
    }
    if (auto it = schema.find("additionalProperties"); it != schema.end()) {
      if (it->is_boolean() && !it->get<bool>()) {
        additional = Additional::kClosed;
      } else {
        additional = Additional::kSchema;
        additionalSchema = std::make_unique<Node>(*it);
      }
    }
    if (auto it = schema.find("required"); it != schema.end() && it->is_array()) {
      for (const json& name : *it) {
        if (name.is_string()) required.push_back(name.get<std::string>());
      }
    }
    if (auto it = schema.find("oneOf"); it != schema.end() && it->is_array()) {
      oneOf.emplace();
      for (const json& alternative : *it) {
        std::optional<std::string> type;
        if (alternative.is_object()) {
          if (auto t = alternative.find("type"); t != alternative.end() && t->is_string()) type = t->get<std::string>();
        }
        oneOf->push_back(Alternative{std::make_unique<Node>(alternative), std::move(type)});
      }
    }
  }
};

namespace {

using Node = CompiledSchema::Node;

class Validator {
 public:
  explicit Validator(const std::string& rootName) : rootName_(rootName) {}

  Status check(const Node& node, const json& value, const FieldPath& path) const {
    if (node.kind == Node::Kind::kAny) return Status::ok();
    if (node.kind == Node::Kind::kNever) return invalid(path, " is not allowed");

    MEMQ_RETURN_IF_ERROR(checkType(node, value, path));
    if (node.enumValues && std::find(node.enumValues->begin(), node.enumValues->end(), value) == node.enumValues->end()) {
      std::string list;
      for (const json& option : *node.enumValues) list += (list.empty() ? "" : ", ") + formatLiteral(option);
      return invalid(path, " must be one of: " + list);
    }
    if (node.constValue && *node.constValue != value) return invalid(path, " must be " + formatLiteral(*node.constValue));
    if (value.is_string()) MEMQ_RETURN_IF_ERROR(checkString(node, value.get_ref<const std::string&>(), path));
    if (value.is_number()) MEMQ_RETURN_IF_ERROR(checkNumber(node, value, path));
    if (value.is_array()) MEMQ_RETURN_IF_ERROR(checkArray(node, value, path));
    if (value.is_object()) MEMQ_RETURN_IF_ERROR(checkObject(node, value, path));
    if (node.oneOf) MEMQ_RETURN_IF_ERROR(checkOneOf(*node.oneOf, value, path));
    return Status::ok();
  }

 private:
  // InvalidParams for the value at `path`: its label, then `rest` ("summary must be a string").
  Status invalid(const FieldPath& path, const std::string& rest) const {
    std::string label = path.label(rootName_);
    return Status::invalidField(label, label + rest);
  }

  // Exactly one alternative must hold. When none does, the error is that of the one alternative whose `type` the
  // value has (a string entry's or an object entry's own error, naming the member at fault), else a list of the
  // types allowed. An alternative of one type the value does not have fails without being checked.
  Status checkOneOf(const std::vector<Node::Alternative>& alternatives, const json& value,
                    const FieldPath& path) const {
    size_t matched = 0;
    std::optional<Status> typedError;
    size_t typed = 0;
    std::vector<std::string> types;
    for (const Node::Alternative& alternative : alternatives) {
      const bool typeHolds = alternative.type && typeMatches(*alternative.type, value);
      if (alternative.type && !typeHolds) {
        types.emplace_back(withArticle(*alternative.type));
        continue;
      }
      Status st = check(*alternative.schema, value, path);
      if (st.isOk()) {
        ++matched;
        continue;
      }
      if (alternative.type) {
        types.emplace_back(withArticle(*alternative.type));
        ++typed;
        typedError = std::move(st);
      }
    }
    if (matched == 1) return Status::ok();
    if (matched > 1) return invalid(path, " matches more than one of its allowed forms");
    if (typed == 1) return *typedError;
    if (types.empty()) return invalid(path, " matches none of its allowed forms");
    return invalid(path, " must be " + joinAlternatives(types) + " (got " + std::string(describeValue(value)) + ")");
  }

  Status checkType(const Node& node, const json& value, const FieldPath& path) const {
    if (node.types.empty()) return Status::ok();
    for (const std::string& name : node.types) {
      if (typeMatches(name, value)) return Status::ok();
    }
    std::vector<std::string> expected;
    for (const std::string& name : node.types) expected.emplace_back(withArticle(name));
    return invalid(path, " must be " + joinAlternatives(expected) + " (got " + std::string(describeValue(value)) + ")");
  }

  Status checkString(const Node& node, const std::string& value, const FieldPath& path) const {
    if (!node.minLength && !node.maxLength && !node.pattern) return Status::ok();
    std::size_t length = codePoints(value);
    if (node.minLength && length < *node.minLength) {
      if (*node.minLength == 1) return invalid(path, " must not be empty");
      return invalid(path, " must be at least " + std::to_string(*node.minLength) + " characters long");
    }
    if (node.maxLength && length > *node.maxLength) {
      return invalid(path, " must be at most " + std::to_string(*node.maxLength) + " characters long (it has " +
                               std::to_string(length) + ")");
    }
    if (node.pattern) {
      if (value.size() > kMaxPatternSubjectBytes) {
        return invalid(path, " is too long to check against the pattern " + *node.pattern);
      }
      if (!node.regex) return node.regex.status();
      if (!std::regex_search(value, **node.regex)) return invalid(path, " must match the pattern " + *node.pattern);
    }
    return Status::ok();
  }

  Status checkNumber(const Node& node, const json& value, const FieldPath& path) const {
    if (node.minimum && less(value, *node.minimum)) return invalid(path, " must be at least " + formatLiteral(*node.minimum));
    if (node.maximum && less(*node.maximum, value)) return invalid(path, " must be at most " + formatLiteral(*node.maximum));
    if (node.exclusiveMinimum && !less(*node.exclusiveMinimum, value)) {
      return invalid(path, " must be greater than " + formatLiteral(*node.exclusiveMinimum));
    }
    if (node.exclusiveMaximum && !less(value, *node.exclusiveMaximum)) {
      return invalid(path, " must be less than " + formatLiteral(*node.exclusiveMaximum));
    }
    return Status::ok();
  }

  Status checkArray(const Node& node, const json& value, const FieldPath& path) const {
    if (node.minItems && value.size() < *node.minItems) {
      if (*node.minItems == 1) return invalid(path, " must not be empty");
      return invalid(path, " must have at least " + std::to_string(*node.minItems) + " items");
    }
    if (node.maxItems && value.size() > *node.maxItems) {
      return invalid(path, " must have at most " + std::to_string(*node.maxItems) + " items (it has " +
                               std::to_string(value.size()) + ")");
    }
    if (node.items) {
      for (std::size_t i = 0; i < value.size(); ++i) MEMQ_RETURN_IF_ERROR(check(*node.items, value[i], path.at(i)));
    }
    return Status::ok();
  }

  // The schema's properties and the value's members are both sorted by name, so one pass pairs them.
  Status checkObject(const Node& node, const json& value, const FieldPath& path) const {
    const auto& members = value.get_ref<const json::object_t&>();
    // Unknown fields first: a misspelt required field is better reported as the typo than as "x is required".
    if (node.additional != Node::Additional::kUnchecked) {
      auto property = node.properties.begin();
      for (const auto& [key, member] : members) {
        while (property != node.properties.end() && property->first < key) ++property;
        if (property != node.properties.end() && property->first == key) continue;
        const FieldPath field = path.member(key);
        if (node.additional == Node::Additional::kClosed) {
          std::string message = "unknown field '" + key + "'";
          if (std::optional<std::string> guess = closestProperty(key, node.properties)) {
            message += " (did you mean '" + *guess + "'?)";
          }
          return Status::invalidField(field.text(rootName_), message);
        }
        MEMQ_RETURN_IF_ERROR(check(*node.additionalSchema, member, field));
      }
    }
    for (const std::string& name : node.required) {
      if (members.find(name) != members.end()) continue;
      std::string field = path.member(name).text(rootName_);
      return Status::invalidField(field, field + " is required");
    }
    auto member = members.begin();
    for (const auto& [name, propertySchema] : node.properties) {
      while (member != members.end() && member->first < name) ++member;
      if (member == members.end()) break;
      if (member->first == name) MEMQ_RETURN_IF_ERROR(check(propertySchema, member->second, path.member(name)));
    }
    return Status::ok();
  }

  const std::string& rootName_;
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

CompiledSchema::CompiledSchema(const nlohmann::json& schema) : root_(std::make_unique<Node>(schema)) {}
CompiledSchema::~CompiledSchema() = default;
CompiledSchema::CompiledSchema(CompiledSchema&&) noexcept = default;
CompiledSchema& CompiledSchema::operator=(CompiledSchema&&) noexcept = default;

Status CompiledSchema::validateParams(const nlohmann::json& params) const {
  static const json kEmptyObject = json::object();
  static const std::string kParams = "params";
  return Validator(kParams).check(*root_, params.is_null() ? kEmptyObject : params, FieldPath{});
}

Status CompiledSchema::validateValue(const nlohmann::json& value, const std::string& rootName) const {
  return Validator(rootName).check(*root_, value, FieldPath{});
}

Status validateParams(const nlohmann::json& schema, const nlohmann::json& params) {
  return CompiledSchema(schema).validateParams(params);
}

Status validateValue(const nlohmann::json& schema, const nlohmann::json& value, const std::string& rootName) {
  return CompiledSchema(schema).validateValue(value, rootName);
}

Status checkSchema(const nlohmann::json& schema) { return lint(schema, ""); }

}  // namespace memq
