// FTS5 MATCH building; see fts_query.h.
#include "daemon/recall/fts_query.h"

#include <algorithm>
#include <unordered_set>

#include "daemon/util/unicode.h"
#include "daemon/util/utf8.h"

namespace memq {

namespace {

// English function words that carry no topic. A query is free text (a prompt, a commit message), so these
// would otherwise OR-match nearly every memory.
const std::unordered_set<std::string_view>& stopWords() {
  static const std::unordered_set<std::string_view> kWords = {
      "a",      "about", "above", "after",   "again",  "all",    "also",   "am",     "an",    "and",   "any",
      "are",    "as",    "at",    "be",      "been",   "before", "being",  "both",   "but",   "by",    "can",
      "could",  "did",   "do",    "does",    "doing",  "done",   "down",   "during", "each",  "few",   "for",
      "from",   "further", "had", "has",     "have",   "having", "he",     "her",    "here",  "hers",  "him",
      "his",    "how",   "i",     "if",      "in",     "into",   "is",     "it",     "its",   "itself", "just",
      "me",     "might", "more",  "most",    "must",   "my",     "no",     "nor",    "not",   "now",   "of",
      "off",    "on",    "once",  "only",    "or",     "other",  "our",    "ours",   "out",   "over",  "own",
      "same",   "she",   "should", "so",     "some",   "such",   "than",   "that",   "the",   "their", "theirs",
      "them",   "then",  "there", "these",   "they",   "this",   "those",  "through", "to",   "too",   "under",
      "until",  "up",    "very",  "was",     "we",     "were",   "what",   "when",   "where", "which", "while",
      "who",    "whom",  "why",   "will",    "with",   "would",  "you",    "your",   "yours", "may",   "really",
      "actually", "basically", "let", "lets", "use",  "using",  "used",   "make",   "makes", "made",  "get",
      "gets",   "got",   "like",  "want",    "need",   "please", "thanks", "ok",     "yes"};
  return kWords;
}

std::string lowerAscii(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

std::string_view boundedQuery(std::string_view query) {
  if (query.size() <= kMaxQueryBytes) return query;
  size_t cut = kMaxQueryBytes;
  while (cut > 0 && (static_cast<unsigned char>(query[cut]) & 0xC0) == 0x80) --cut;
  return query.substr(0, cut);
}

std::string sanitize(std::string_view query) {
  std::string s(boundedQuery(query));
  for (char& c : s) {
    if (c == '"' || c == '(' || c == ')' || c == '*' || c == ':' || c == '\0') c = ' ';
  }
  if (!isValidUtf8(s)) {
    // Replace every byte that is not plain ASCII by a space rather than hand SQLite broken UTF-8.
    for (char& c : s) {
      if (static_cast<unsigned char>(c) >= 0x80) c = ' ';
    }
  }
  return s;
}

bool isSpace(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }

std::string trimmed(const std::string& s) {
  size_t b = 0, e = s.size();
  while (b < e && isSpace(s[b])) ++b;
  while (e > b && isSpace(s[e - 1])) --e;
  return s.substr(b, e - b);
}

// Tokens made only of punctuation become empty phrases in FTS5: harmless, but useless, so they are dropped.
bool hasWordCharacter(std::string_view t) {
  for (char c : t) {
    unsigned char u = static_cast<unsigned char>(c);
    if (u >= 0x80 || std::isalnum(u)) return true;
  }
  return false;
}

// `t` without the code points before its first letter or number and after its last: "do?" is the stop word "do",
// "`i`" the single character "i". FTS5's tokenizer drops them anyway, so "do?"* would be the prefix query do*.
std::string_view wordPart(std::string_view t) {
  size_t begin = t.size(), end = 0;
  for (size_t pos = 0; pos < t.size();) {
    const size_t start = pos;
    if (isLetterOrNumber(decodeUtf8At(t, pos))) {
      begin = std::min(begin, start);
      end = pos;
    }
  }
  return begin < end ? t.substr(begin, end - begin) : std::string_view();
}

std::string quote(std::string_view t) { return "\"" + std::string(t) + "\""; }

}  // namespace

bool isQueryStopWord(std::string_view lowercaseToken) { return stopWords().count(lowercaseToken) > 0; }

std::vector<std::string> ftsTokens(std::string_view query, size_t maxTokens) {
  std::string s = sanitize(query);
  std::vector<std::string> out;
  size_t i = 0;
  while (i < s.size() && out.size() < maxTokens) {
    while (i < s.size() && isSpace(s[i])) ++i;
    size_t j = i;
    while (j < s.size() && !isSpace(s[j])) ++j;
    if (j > i) {
      // A token longer than any real word (a hash, a base64 blob) is cut: its prefix still matches.
      size_t len = std::min(j - i, kMaxTokenBytes);
      while (len < j - i && len > 0 && (static_cast<unsigned char>(s[i + len]) & 0xC0) == 0x80) --len;
      out.push_back(s.substr(i, len));
    }
    i = j;
  }
  return out;
}

std::string unicodeMatch(std::string_view query, const FtsQueryOptions& options) {
  // Tokenise with a generous bound, filter, then cap: stop words must not eat the budget.
  auto tokens = ftsTokens(query, options.maxTokens * 4);
  std::string out;
  std::unordered_set<std::string> seen;
  size_t kept = 0;
  for (const auto& token : tokens) {
    if (kept >= options.maxTokens) break;
    if (!hasWordCharacter(token)) continue;
    // The filters read the word inside the punctuation; the phrase sent is the token as written (FTS5 reads the same
    // word from it, and "jwt" and "jwt." stay two phrases, as a word the query repeats weighs more).
    const std::string_view word = options.trimToWord ? wordPart(token) : std::string_view(token);
    if (word.empty()) continue;
    if (options.dropSingleChars && codePointCount(word) < 2) continue;
    if (options.dropStopWords && isQueryStopWord(lowerAscii(word))) continue;
    if (options.dedupe && !seen.insert(lowerAscii(token)).second) continue;
    if (!out.empty()) out += " OR ";
    out += quote(token) + "*";
    ++kept;
  }
  return out;
}

std::string trigramMatch(std::string_view query, size_t maxTokens) {
  std::string s = trimmed(sanitize(query));
  if (s.empty()) return "";
  std::string out;
  std::unordered_set<std::string> seen;
  size_t kept = 0;
  for (const auto& t : ftsTokens(s, maxTokens * 4)) {
    if (kept >= maxTokens) break;
    if (codePointCount(t) < 3 || !seen.insert(lowerAscii(t)).second) continue;
    if (!out.empty()) out += " OR ";
    out += quote(t);
    ++kept;
  }
  if (out.empty() && codePointCount(s) >= 3 && s.size() <= kMaxTokenBytes) out = quote(s);
  return out;
}

std::string trigramBigramMatch(std::string_view query, size_t maxTokens) {
  std::string s = trimmed(sanitize(query));
  if (s.empty()) return "";
  std::string out;
  size_t kept = 0;
  for (const auto& t : ftsTokens(s, maxTokens * 4)) {
    if (kept >= maxTokens) break;
    size_t n = codePointCount(t);
    if (n >= 3) {
      out += (out.empty() ? "" : " OR ") + quote(t);
      ++kept;
    } else if (n == 2) {
      out += (out.empty() ? "" : " OR ") + quote(" " + t) + " OR " + quote(t + " ");
      ++kept;
    }
  }
  if (out.empty() && codePointCount(s) >= 3 && s.size() <= kMaxTokenBytes) out = quote(s);
  return out;
}

}  // namespace memq
