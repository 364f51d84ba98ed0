// The reference's trigram overlap for "similar on write" hints: the set of 3-unit UTF-16 substrings
// of a lowercased, whitespace-collapsed, trimmed text, and containment |T(a) ∩ T(b)| / |T(a)|.
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

namespace memq {

// A trigram packed as three UTF-16 code units (first unit in the high bits), so a set is a sorted vector of integers
// rather than a hash set of strings: cheap to build, and intersection is a linear merge.
using Trigram = uint64_t;

// Distinct trigrams of `text`, sorted ascending. Texts shorter than 3 units (after normalisation) give an empty set.
// Like the reference, this works on UTF-16 units, so a trigram may contain half of a surrogate pair.
std::vector<Trigram> trigramSet(std::string_view text);

// |T(a) ∩ T(b)| / |T(a)|: containment relative to the new summary, so it is asymmetric. 0 when T(a) is empty (the
// reference would divide by zero there, but its caller never asks for summaries under 6 units).
double trigramContainment(std::string_view newSummary, std::string_view otherSummary);
double trigramContainment(const std::vector<Trigram>& newSet, const std::vector<Trigram>& otherSet);

}  // namespace memq
