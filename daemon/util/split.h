// splitOn: a string cut at every occurrence of a separator, empty fields kept ("a::::b" on "::" is a, "", b), so
// that callers see exactly the fields a path or a qualified name is made of.
#pragma once

#include <string_view>
#include <vector>

namespace memq {

inline std::vector<std::string_view> splitOn(std::string_view text, std::string_view separator) {
  std::vector<std::string_view> fields;
  size_t start = 0;
  for (;;) {
    size_t at = separator.empty() ? std::string_view::npos : text.find(separator, start);
    if (at == std::string_view::npos) {
      fields.push_back(text.substr(start));
      return fields;
    }
    fields.push_back(text.substr(start, at - start));
    start = at + separator.size();
  }
}

}  // namespace memq
