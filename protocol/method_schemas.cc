// methodSchemas / findMethodSchema: lazily parses the embedded schema files (see method_schemas.h).
#include "protocol/method_schemas.h"

#include <algorithm>

#include "protocol/embedded_method_schemas.h"

namespace memq {

const std::vector<MethodSchema>& methodSchemas() {
  // The build already checked every file is valid JSON with params and result, so parse failures cannot happen
  // here; parsing without exceptions still keeps a corrupted build from throwing out of a static initialiser.
  static const std::vector<MethodSchema> kSchemas = [] {
    std::vector<MethodSchema> schemas;
    schemas.reserve(detail::kEmbeddedMethodSchemaCount);
    for (std::size_t i = 0; i < detail::kEmbeddedMethodSchemaCount; ++i) {
      const detail::EmbeddedMethodSchema& embedded = detail::kEmbeddedMethodSchemas[i];
      nlohmann::json file = nlohmann::json::parse(embedded.text, nullptr, /*allow_exceptions=*/false);
      if (!file.is_object()) continue;
      nlohmann::json params = file.value("params", nlohmann::json::object());
      auto compiled = std::make_shared<const CompiledSchema>(params);
      schemas.push_back(MethodSchema{embedded.method, std::move(params), file.value("result", nlohmann::json::object()),
                                     embedded.summary, std::move(compiled)});
    }
    return schemas;
  }();
  return kSchemas;
}

const MethodSchema* findMethodSchema(std::string_view method) {
  const std::vector<MethodSchema>& schemas = methodSchemas();
  auto it = std::find_if(schemas.begin(), schemas.end(), [&](const MethodSchema& s) { return s.method == method; });
  return it == schemas.end() ? nullptr : &*it;
}

}  // namespace memq
