// Building FTS5 MATCH expressions from free text (docs/design.md §6).
// Every token ends up inside double quotes, so FTS5 operators in the input are literal; inputs are bounded so a
// pasted log can never build a huge MATCH. Pure functions.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace memq {

inline constexpr size_t kMaxQueryTokens = 64;
// The reference ranker keeps the reference's rules (no stop words, 1-character tokens kept), with a looser cap.
inline constexpr size_t kMaxReferenceQueryTokens = 256;
// Inputs longer than this are cut (at a UTF-8 boundary) before tokenising.
inline constexpr size_t kMaxQueryBytes = 16 * 1024;
// Tokens longer than this many bytes are cut to it.
inline constexpr size_t kMaxTokenBytes = 64;

struct FtsQueryOptions {
  bool dropStopWords = true;     // docs/design.md §6: the unicode lane drops stop words ...
  bool dropSingleChars = true;   // ... and 1-character tokens
  bool dedupe = true;            // repeated tokens add nothing to an OR query
  bool trimToWord = true;        // the two filters above read a token without the punctuation around its word
  size_t maxTokens = kMaxQueryTokens;
};

// Whitespace-split tokens after replacing the FTS5 specials `" ( ) * :` by spaces.
std::vector<std::string> ftsTokens(std::string_view query, size_t maxTokens);

// Unicode lane: `"t1"* OR "t2"* ...`; "" when nothing is left.
std::string unicodeMatch(std::string_view query, const FtsQueryOptions& options = {});
// Trigram lane: tokens of ≥ 3 code points as `"t"` OR-ed, else the whole string when ≥ 3 code points; "" otherwise.
std::string trigramMatch(std::string_view query, size_t maxTokens = kMaxQueryTokens);
// Trigram+bigram fallback: 2-code-point tokens become `" t"` and `"t "`.
std::string trigramBigramMatch(std::string_view query, size_t maxTokens = kMaxQueryTokens);

bool isQueryStopWord(std::string_view lowercaseToken);

}  // namespace memq
