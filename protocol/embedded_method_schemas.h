// Internal to memq_protocol: the raw method schema files as compiled in by embed_method_schemas.cmake. Use
// method_schemas.h instead; this only connects the generated source to the parser.
#pragma once

#include <cstddef>
#include <string_view>

namespace memq::detail {

struct EmbeddedMethodSchema {
  std::string_view file;     // "memory.save.json"
  std::string_view method;   // "memory/save" (checked against the file name at build time)
  std::string_view summary;  // the file's "summary"
  std::string_view text;     // the whole file
};

extern const EmbeddedMethodSchema kEmbeddedMethodSchemas[];
extern const std::size_t kEmbeddedMethodSchemaCount;

}  // namespace memq::detail
