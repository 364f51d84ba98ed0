// hashbag-v2 tokenizer, stemmer, feature projection and normalisation; see hashbag.h for the bit-exactness rules.
#include "daemon/embed/hashbag.h"

#include <algorithm>
#include <array>
#include <cmath>

#include "daemon/util/unicode.h"
#include "daemon/util/utf8.h"

namespace memq {

namespace {

constexpr uint32_t kFnvOffset = 0x811C9DC5u;
constexpr uint32_t kFnvPrime = 0x01000193u;

constexpr double kUnigramWeight = 1.0;
constexpr double kBigramWeight = 0.7;
constexpr double kCharGramWeight = 0.4;
constexpr size_t kCharGramLength = 4;
constexpr size_t kMinTokenUnits = 2;

// The reference lists 56 entries with "do" twice; 55 distinct, kept sorted for binary search.
constexpr std::array<std::u16string_view, 55> kStopWords = {
    u"a",     u"actually", u"am",    u"an",    u"and",   u"are",   u"as",     u"at",    u"basically", u"be",
    u"but",   u"by",       u"can",   u"could", u"did",   u"do",    u"does",   u"done",  u"for",       u"from",
    u"had",   u"has",      u"have",  u"i",     u"if",    u"in",    u"is",     u"it",    u"its",       u"just",
    u"may",   u"might",    u"no",    u"not",   u"of",    u"on",    u"or",     u"really", u"should",    u"so",
    u"that",  u"the",      u"then",  u"these", u"this",  u"those", u"to",     u"was",   u"we",        u"were",
    u"will",  u"with",     u"would", u"you",   u"your",
};

static_assert(std::is_sorted(kStopWords.begin(), kStopWords.end()));

// Tried in this exact order and the first that fits wins, so the order is part of the model. Kept verbatim, oddities
// included: "ings" is listed twice (the second can never fire) and "ization" comes before "izations".
constexpr std::array<std::u16string_view, 23> kSuffixes = {
    u"ization", u"izations", u"ations", u"ation", u"ings", u"tion", u"ness", u"ment", u"able", u"ible", u"ings", u"ies",
    u"ied",     u"ier",      u"est",    u"ing",   u"ers",  u"ed",   u"es",   u"ly",   u"ic",   u"al",   u"s",
};

inline uint32_t fnvStep(uint32_t h, char16_t unit) { return (h ^ unit) * kFnvPrime; }

inline uint32_t fnvFeed(uint32_t h, std::u16string_view units) {
  for (const char16_t u : units) h = fnvStep(h, u);
  return h;
}

// A feature's two hashes are fed in lockstep: H(f) picks the bin and H("s:" + f) the sign, so starting the second
// from the state after "s:" hashes both without ever building the strings.
struct FeatureHasher {
  uint32_t bin;
  uint32_t sign;

  FeatureHasher(std::u16string_view prefix)  // NOLINT(google-explicit-constructor)
      : bin(fnvFeed(kFnvOffset, prefix)), sign(fnvFeed(fnvFeed(kFnvOffset, u"s:"), prefix)) {}

  void feed(char16_t u) {
    bin = fnvStep(bin, u);
    sign = fnvStep(sign, u);
  }
  void feed(std::u16string_view units) {
    for (const char16_t u : units) feed(u);
  }
};

// vec[bin] += sign * weight with JavaScript Float32Array semantics: the sum is formed in double, then stored as float.
inline void project(float* vec, const FeatureHasher& f, double weight) {
  float& slot = vec[f.bin % kHashbagDim];
  const double signedWeight = (f.sign & 1u) == 0 ? weight : -weight;
  slot = static_cast<float>(static_cast<double>(slot) + signedWeight);
}

bool isHighSurrogate(char16_t u) { return u >= 0xD800 && u <= 0xDBFF; }
bool isLowSurrogate(char16_t u) { return u >= 0xDC00 && u <= 0xDFFF; }

// Whether the code point starting at `i` is a letter or number; `len` receives its length in units. JavaScript's
// /u regexes see code points, so a surrogate pair is classified as one character (a lone surrogate as itself).
bool letterOrNumberAt(std::u16string_view s, size_t i, size_t& len) {
  const char16_t u = s[i];
  if (isHighSurrogate(u) && i + 1 < s.size() && isLowSurrogate(s[i + 1])) {
    len = 2;
    return isLetterOrNumber(0x10000 + ((char32_t(u) - 0xD800) << 10) + (char32_t(s[i + 1]) - 0xDC00));
  }
  len = 1;
  return isLetterOrNumber(u);
}

struct Span {
  uint32_t begin;
  uint32_t length;
};

// Word tokens of the lowercased text, as spans into it: maximal runs of L/N code points, then the length filter,
// the stop-word filter and the stemmer (which only ever shortens, so a stem is still a span).
void tokenize(std::u16string_view lower, std::vector<Span>& out) {
  out.clear();
  const size_t n = lower.size();
  size_t i = 0;
  while (i < n) {
    size_t len = 0;
    if (!letterOrNumberAt(lower, i, len)) {
      i += len;
      continue;
    }
    const size_t start = i;
    i += len;
    while (i < n && letterOrNumberAt(lower, i, len)) i += len;
    const std::u16string_view word = lower.substr(start, i - start);
    if (word.size() < kMinTokenUnits || isHashbagStopWord(word)) continue;
    out.push_back({static_cast<uint32_t>(start), static_cast<uint32_t>(hashbagStem(word).size())});
  }
}

}  // namespace

uint32_t fnv1a16(std::u16string_view units) { return fnvFeed(kFnvOffset, units); }

bool isHashbagStopWord(std::u16string_view word) {
  if (word.size() > 9) return false;  // "basically" is the longest
  return std::binary_search(kStopWords.begin(), kStopWords.end(), word);
}

size_t hashbagStopWordCount() { return kStopWords.size(); }

std::u16string_view hashbagStem(std::u16string_view word) {
  if (word.size() <= 4) return word;
  for (const std::u16string_view suffix : kSuffixes) {
    if (word.size() > suffix.size() + 3 && word.ends_with(suffix)) return word.substr(0, word.size() - suffix.size());
  }
  return word;
}

std::vector<std::string> hashbagTokens(std::string_view text) {
  const std::u16string lower = jsToLower(toUtf16(text));
  std::vector<Span> spans;
  tokenize(lower, spans);
  std::vector<std::string> out;
  out.reserve(spans.size());
  for (const Span& s : spans) out.push_back(toUtf8(std::u16string_view(lower).substr(s.begin, s.length)));
  return out;
}

std::vector<float> HashbagEmbedder::embed(std::string_view text) const {
  std::vector<float> vec(kHashbagDim, 0.0f);
  if (text.empty()) return vec;

  const std::u16string lower = jsToLower(toUtf16(text));
  const std::u16string_view lowerView = lower;
  // Reused across calls on the same thread so a save does not pay for a fresh token buffer.
  thread_local std::vector<Span> words;
  tokenize(lowerView, words);
  // Gate on real words: punctuation- or emoji-only text embeds to zeros even though it has character grams.
  if (words.empty()) return vec;

  float* v = vec.data();
  for (const Span& w : words) {
    FeatureHasher f(u"w:");
    f.feed(lowerView.substr(w.begin, w.length));
    project(v, f, kUnigramWeight);
  }
  for (size_t i = 0; i + 1 < words.size(); ++i) {
    FeatureHasher f(u"b:");
    f.feed(lowerView.substr(words[i].begin, words[i].length));
    f.feed(u'_');
    f.feed(lowerView.substr(words[i + 1].begin, words[i + 1].length));
    project(v, f, kBigramWeight);
  }
  // Grams come from the whitespace-collapsed text, spaces included, at UTF-16 granularity (pairs may be split).
  const std::u16string compact = jsCollapseWhitespace(lowerView);
  if (compact.size() >= kCharGramLength) {
    const FeatureHasher gramPrefix(u"c:");
    for (size_t i = 0; i + kCharGramLength <= compact.size(); ++i) {
      FeatureHasher f = gramPrefix;
      f.feed(std::u16string_view(compact).substr(i, kCharGramLength));
      project(v, f, kCharGramWeight);
    }
  }

  double sumSquares = 0.0;
  for (const float x : vec) sumSquares += static_cast<double>(x) * static_cast<double>(x);
  const double norm = std::sqrt(sumSquares);
  if (norm > 0.0) {
    for (float& x : vec) x = static_cast<float>(static_cast<double>(x) / norm);
  }
  return vec;
}

std::string memoryEmbedSource(std::string_view summary, std::string_view details,
                              const std::vector<std::string>& topics) {
  const std::string_view s = jsTrim(summary);
  const std::string_view d = jsTrim(details);
  std::string joined;
  for (size_t i = 0; i < topics.size(); ++i) {
    if (i > 0) joined.push_back(' ');
    joined += topics[i];
  }
  const std::string_view t = jsTrim(joined);
  if (s.empty() && d.empty() && t.empty()) return {};
  std::string out;
  out.reserve(3 * s.size() + d.size() + t.size() + 4);
  out.append(s).append(" ").append(s).append(" ").append(s);
  out.append("\n").append(d).append("\n").append(t);
  return std::string(jsTrim(out));
}

double cosineDouble(std::span<const float> a, std::span<const float> b) {
  if (a.size() != b.size()) return 0.0;
  double dot = 0.0;
  // Sequential on purpose: reassociating (or vectorising) the sum would change the last bits relative to the
  // reference and to VectorIndex's exact scores.
  for (size_t i = 0; i < a.size(); ++i) dot += static_cast<double>(a[i]) * static_cast<double>(b[i]);
  return dot;
}

float cosine(std::span<const float> a, std::span<const float> b) { return static_cast<float>(cosineDouble(a, b)); }

}  // namespace memq
