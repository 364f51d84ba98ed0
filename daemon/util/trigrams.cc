// Trigram sets and containment, as the reference system computes them for similar-on-write hints.
#include "daemon/util/trigrams.h"

#include <algorithm>
#include <string>

#include "daemon/util/unicode.h"
#include "daemon/util/utf8.h"

namespace memq {

std::vector<Trigram> trigramSet(std::string_view text) {
  // Lowercasing first and collapsing second matches the reference; the order does not matter anyway, because no
  // whitespace character has a case mapping and whitespace is neither cased nor case-ignorable (Final_Sigma).
  const std::u16string normal = jsCollapseWhitespace(jsToLower(toUtf16(text)));
  std::vector<Trigram> out;
  if (normal.size() < 3) return out;
  out.reserve(normal.size() - 2);
  for (size_t i = 0; i + 3 <= normal.size(); ++i) {
    out.push_back((Trigram(normal[i]) << 32) | (Trigram(normal[i + 1]) << 16) | Trigram(normal[i + 2]));
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

double trigramContainment(const std::vector<Trigram>& newSet, const std::vector<Trigram>& otherSet) {
  if (newSet.empty()) return 0.0;
  size_t shared = 0;
  auto a = newSet.begin();
  auto b = otherSet.begin();
  while (a != newSet.end() && b != otherSet.end()) {
    if (*a < *b) {
      ++a;
    } else if (*b < *a) {
      ++b;
    } else {
      ++shared;
      ++a;
      ++b;
    }
  }
  return static_cast<double>(shared) / static_cast<double>(newSet.size());
}

double trigramContainment(std::string_view newSummary, std::string_view otherSummary) {
  return trigramContainment(trigramSet(newSummary), trigramSet(otherSummary));
}

}  // namespace memq
