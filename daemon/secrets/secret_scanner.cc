// The secret scanner; see secret_scanner.h. Every detector is a hand-written linear scan.
#include "daemon/secrets/secret_scanner.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <iterator>
#include <map>

namespace memq {

namespace {

bool isDigit(char c) { return c >= '0' && c <= '9'; }
bool isUpper(char c) { return c >= 'A' && c <= 'Z'; }
bool isLower(char c) { return c >= 'a' && c <= 'z'; }
bool isAlpha(char c) { return isUpper(c) || isLower(c); }
bool isAlnum(char c) { return isAlpha(c) || isDigit(c); }
bool isB64url(char c) { return isAlnum(c) || c == '-' || c == '_'; }
bool isIdent(char c) { return isAlnum(c) || c == '_' || c == '-' || c == '.'; }
bool isSpace(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }
char lower(char c) { return isUpper(c) ? static_cast<char>(c - 'A' + 'a') : c; }

std::string toLower(std::string_view s) {
  std::string out(s);
  for (auto& c : out) c = lower(c);
  return out;
}

bool startsWith(std::string_view s, std::string_view p) { return s.size() >= p.size() && s.substr(0, p.size()) == p; }
bool endsWith(std::string_view s, std::string_view p) {
  return s.size() >= p.size() && s.substr(s.size() - p.size()) == p;
}

// Length of the run starting at i whose bytes satisfy pred.
template <typename Pred>
std::size_t runLength(std::string_view text, std::size_t i, Pred pred) {
  std::size_t j = i;
  while (j < text.size() && pred(text[j])) ++j;
  return j - i;
}

void add(std::vector<SecretFinding>& out, const char* kind, std::size_t begin, std::size_t end) {
  out.push_back(SecretFinding{kind, begin, end});
}

// --- detectors -----------------------------------------------------------------------------------------------------

void findPrivateKeys(std::string_view text, std::vector<SecretFinding>& out) {
  std::size_t pos = 0;
  while ((pos = text.find("-----BEGIN ", pos)) != std::string_view::npos) {
    std::size_t labelStart = pos + 11;
    std::size_t labelEnd = text.find("-----", labelStart);
    if (labelEnd == std::string_view::npos || labelEnd - labelStart > 64) {
      pos = labelStart;
      continue;
    }
    std::string_view label = text.substr(labelStart, labelEnd - labelStart);
    if (label.find("PRIVATE KEY") == std::string_view::npos) {
      pos = labelEnd;
      continue;
    }
    std::size_t end = text.size();  // a block cut off before its END line is redacted to the end of the text
    std::size_t endLine = text.find("-----END ", labelEnd + 5);
    if (endLine != std::string_view::npos) {
      std::size_t close = text.find("-----", endLine + 9);
      if (close != std::string_view::npos && close - endLine < 9 + 64) end = close + 5;
    }
    add(out, "private_key", pos, end);
    pos = end;
  }
}

void findAwsKeys(std::string_view text, std::vector<SecretFinding>& out) {
  for (std::string_view prefix : {std::string_view("AKIA"), std::string_view("ASIA")}) {
    std::size_t pos = 0;
    while ((pos = text.find(prefix, pos)) != std::string_view::npos) {
      std::size_t start = pos;
      pos += prefix.size();
      if (start > 0 && isAlnum(text[start - 1])) continue;
      std::size_t n = runLength(text, pos, [](char c) { return isUpper(c) || isDigit(c); });
      if (n != 16) continue;
      if (pos + n < text.size() && isAlnum(text[pos + n])) continue;
      add(out, "aws_access_key", start, pos + n);
      pos += n;
    }
  }
}

// prefix + a run of `body` bytes of at least minBody, not glued to a preceding word.
template <typename Body, typename Extra>
void findPrefixed(std::string_view text, std::string_view prefix, std::size_t minBody, const char* kind, Body body,
                  Extra extraCheck, std::vector<SecretFinding>& out) {
  std::size_t pos = 0;
  while ((pos = text.find(prefix, pos)) != std::string_view::npos) {
    std::size_t start = pos;
    pos += prefix.size();
    if (start > 0 && (isAlnum(text[start - 1]) || text[start - 1] == '_')) continue;
    std::size_t n = runLength(text, pos, body);
    const bool found = n >= minBody && extraCheck(text.substr(pos, n));
    if (found) add(out, kind, start, pos + n);
    pos += n;  // a refused run is not scanned again from each prefix inside it (linear on "AIza-AIza-…")
  }
}

bool anyDigit(std::string_view s) { return std::any_of(s.begin(), s.end(), isDigit); }
bool anyAlpha(std::string_view s) { return std::any_of(s.begin(), s.end(), isAlpha); }

void findVendorTokens(std::string_view text, std::vector<SecretFinding>& out) {
  auto always = [](std::string_view) { return true; };
  for (const char* p : {"ghp_", "gho_", "ghu_", "ghs_", "ghr_"}) {
    findPrefixed(text, p, 30, "github_token", isAlnum, always, out);
  }
  findPrefixed(text, "github_pat_", 22, "github_token", [](char c) { return isAlnum(c) || c == '_'; }, always, out);
  findPrefixed(text, "glpat-", 20, "gitlab_token", isB64url, always, out);
  for (const char* p : {"xoxa-", "xoxb-", "xoxp-", "xoxr-", "xoxs-"}) {
    findPrefixed(text, p, 10, "slack_token", [](char c) { return isAlnum(c) || c == '-'; }, anyDigit, out);
  }
  // sk-…, sk-proj-…, sk-ant-…: somewhere in the body a long stretch mixing letters and digits, so that prose such as
  // "sk-learn-compatible" never matches.
  findPrefixed(text, "sk-", 20, "openai_key", isB64url,
               [](std::string_view body) {
                 std::size_t i = 0;
                 while (i < body.size()) {
                   std::size_t n = runLength(body, i, [](char c) { return c != '-'; });
                   std::string_view seg = body.substr(i, n);
                   if (seg.size() >= 16 && anyDigit(seg) && anyAlpha(seg)) return true;
                   i += n + 1;
                 }
                 return false;
               },
               out);
}

// Vendor keys with an unambiguous prefix and no separator in their body.
void findPrefixedKeys(std::string_view text, std::vector<SecretFinding>& out) {
  auto mixed = [](std::string_view body) { return anyDigit(body) && anyAlpha(body); };
  // Stripe: secret and restricted live keys (sk_live_…, rk_live_…); publishable keys (pk_) are public by design.
  for (const char* p : {"sk_live_", "rk_live_"}) findPrefixed(text, p, 20, "stripe_key", isAlnum, mixed, out);
  // Google API keys are 39 characters: AIza and 35 more.
  findPrefixed(text, "AIza", 35, "google_api_key", isB64url, mixed, out);
  // npm access tokens: npm_ and 36 letters and digits. Env names such as npm_config_registry stop at their first _.
  findPrefixed(text, "npm_", 36, "npm_token", isAlnum, mixed, out);
}

// https://hooks.slack.com/services/T…/B…/… (and /workflows/…): whoever holds the URL may post; the path is the secret.
void findSlackWebhooks(std::string_view text, std::vector<SecretFinding>& out) {
  for (std::string_view prefix : {std::string_view("hooks.slack.com/services/"),
                                  std::string_view("hooks.slack.com/workflows/")}) {
    std::size_t pos = 0;
    while ((pos = text.find(prefix, pos)) != std::string_view::npos) {
      std::size_t begin = pos + prefix.size();
      std::size_t n = runLength(text, begin, [](char c) { return isB64url(c) || c == '/'; });
      pos = begin + n;
      std::string_view path = text.substr(begin, n);
      if (path.size() >= 20 && std::count(path.begin(), path.end(), '/') >= 1 && anyDigit(path)) {
        add(out, "slack_webhook", begin, begin + n);
      }
    }
  }
}

// Azure storage and service-bus connection strings: …;AccountKey=<base64>;… — only the key is reported.
void findAzureKeys(std::string_view text, std::vector<SecretFinding>& out) {
  const std::string folded = toLower(text);
  for (std::string_view name : {std::string_view("accountkey="), std::string_view("sharedaccesskey=")}) {
    std::size_t pos = 0;
    while ((pos = folded.find(name, pos)) != std::string::npos) {
      std::size_t start = pos;
      pos += name.size();
      if (start > 0 && isAlnum(text[start - 1])) continue;
      std::size_t n = runLength(text, pos, [](char c) { return isAlnum(c) || c == '+' || c == '/' || c == '='; });
      std::string_view value = text.substr(pos, n);
      if (n >= 20 && !isPlaceholderSecret(value) && anyDigit(value)) add(out, "azure_key", pos, pos + n);
      pos += n;  // as in findPrefixed: "AccountKey=AccountKey=…" stays linear
    }
  }
}

void findJwts(std::string_view text, std::vector<SecretFinding>& out) {
  std::size_t pos = 0;
  while ((pos = text.find("eyJ", pos)) != std::string_view::npos) {
    std::size_t start = pos;
    pos += 3;
    if (start > 0 && isB64url(text[start - 1])) continue;
    std::size_t n1 = runLength(text, start, isB64url);
    std::size_t i = start + n1;
    if (n1 < 10 || i >= text.size() || text[i] != '.') continue;
    std::size_t n2 = runLength(text, i + 1, isB64url);
    i += 1 + n2;
    if (n2 < 4 || i >= text.size() || text[i] != '.') continue;
    std::size_t n3 = runLength(text, i + 1, isB64url);
    i += 1 + n3;
    add(out, "jwt", start, i);
    pos = i;
  }
}

// scheme://user:password@host — only the password is reported.
void findConnectionStrings(std::string_view text, std::vector<SecretFinding>& out) {
  std::size_t pos = 0;
  while ((pos = text.find("://", pos)) != std::string_view::npos) {
    std::size_t sep = pos;
    pos += 3;
    std::size_t s = sep;
    while (s > 0 && (isAlnum(text[s - 1]) || text[s - 1] == '+' || text[s - 1] == '.' || text[s - 1] == '-')) --s;
    if (s == sep || !isAlpha(text[s])) continue;
    std::size_t authStart = sep + 3;
    std::size_t authEnd = authStart;
    while (authEnd < text.size()) {
      char c = text[authEnd];
      if (isSpace(c) || c == '/' || c == '?' || c == '#' || c == '"' || c == '\'' || c == '`' || c == '<' || c == '>')
        break;
      ++authEnd;
    }
    std::string_view authority = text.substr(authStart, authEnd - authStart);
    std::size_t at = authority.rfind('@');
    if (at == std::string_view::npos) continue;
    std::size_t colon = authority.find(':');
    if (colon == std::string_view::npos || colon > at) continue;
    std::string_view password = authority.substr(colon + 1, at - colon - 1);
    if (password.empty() || isPlaceholderSecret(password)) continue;
    add(out, "connection_string", authStart + colon + 1, authStart + at);
    pos = authEnd;
  }
}

// The generic kind a setting's name announces, or nullptr.
const char* assignmentKind(std::string_view name) {
  std::string n = toLower(name);
  for (const char* suffix : {"password", "passwd", "passphrase", "pwd"}) {
    if (endsWith(n, suffix)) return "password";
  }
  if (endsWith(n, "secret") || (n.find("secret") != std::string::npos && endsWith(n, "key"))) return "secret";
  for (const char* suffix : {"api_key", "apikey", "api-key", "access_key", "private_key", "auth_key"}) {
    if (endsWith(n, suffix)) return "api_key";
  }
  if (endsWith(n, "token") || endsWith(n, "authorization")) return "token";
  return nullptr;
}

bool looksSecret(std::string_view value) {
  if (value.size() < 8 || isPlaceholderSecret(value)) return false;
  bool symbolOrDigit = std::any_of(value.begin(), value.end(), [](char c) { return !isAlpha(c); });
  if (!symbolOrDigit) return false;  // a plain word ("required", "configuration") is prose, not a credential
  double threshold = std::min(3.0, 0.85 * std::log2(static_cast<double>(value.size())));
  return shannonEntropy(value) >= threshold;
}

// `--password X`, `--password=X`, `--api-key "X"`: an option that announces a credential takes the next word as its
// value. The option name says what follows, so the value need not look random; it must only not be prose: at least
// 6 bytes, not a placeholder, not the next option, and not a plain word ("the --password flag is required").
// A value is read for at most kMaxOptionValue bytes, so that text full of unclosed quotes stays linear.
constexpr std::size_t kMaxOptionValue = 512;

void findOptionValues(std::string_view text, std::vector<SecretFinding>& out) {
  std::size_t pos = 0;
  while ((pos = text.find("--", pos)) != std::string_view::npos) {
    std::size_t start = pos;
    pos += 2;
    if (start > 0 && !isSpace(text[start - 1]) && text[start - 1] != '"' && text[start - 1] != '\'' &&
        text[start - 1] != '`' && text[start - 1] != '(') {
      continue;
    }
    std::size_t nameLen = runLength(text, pos, [](char c) { return isAlnum(c) || c == '_' || c == '-'; });
    std::string_view name = text.substr(pos, nameLen);
    std::size_t j = pos + nameLen;
    pos = j;
    if (name.empty() || startsWith(name, "no-")) continue;
    const char* kind = toLower(name) == "pass" ? "password" : assignmentKind(name);
    if (!kind) continue;
    if (j < text.size() && text[j] == '=') {
      ++j;
    } else {
      std::size_t gap = runLength(text, j, [](char c) { return c == ' ' || c == '\t'; });
      if (gap == 0) continue;
      j += gap;
    }
    if (j >= text.size()) break;
    std::size_t vBegin = j, vEnd = j;
    const char q = text[j];
    if (q == '"' || q == '\'' || q == '`') {
      vBegin = j + 1;
      vEnd = vBegin;
      while (vEnd < text.size() && vEnd - vBegin < kMaxOptionValue && text[vEnd] != q && text[vEnd] != '\n') ++vEnd;
      if (vEnd - vBegin >= kMaxOptionValue) continue;  // no closing quote in reach: not a value
    } else {
      vEnd = vBegin + runLength(text.substr(0, std::min(text.size(), vBegin + kMaxOptionValue)), vBegin,
                                [](char c) { return !isSpace(c) && c != '"' && c != '\'' && c != '`'; });
      while (vEnd > vBegin && (text[vEnd - 1] == '.' || text[vEnd - 1] == ',' || text[vEnd - 1] == ';' ||
                               text[vEnd - 1] == ')')) {
        --vEnd;  // the end of a sentence or a list, not the value
      }
    }
    std::string_view value = text.substr(vBegin, vEnd - vBegin);
    if (value.size() < 6 || value.front() == '-' || isPlaceholderSecret(value)) continue;
    if (std::all_of(value.begin(), value.end(), isAlpha)) continue;
    // `--secret id=npmrc,src=.npmrc` (docker build): a list of settings, not a credential.
    std::size_t key = runLength(value, 0, isIdent);
    if (key > 0 && key < value.size() && value[key] == '=') continue;
    add(out, kind, vBegin, vEnd);
    pos = vEnd;
  }
}

void findAssignments(std::string_view text, std::vector<SecretFinding>& out) {
  std::size_t i = 0;
  while (i < text.size()) {
    if (!(isAlpha(text[i]) || text[i] == '_') || (i > 0 && isIdent(text[i - 1]))) {
      ++i;
      continue;
    }
    std::size_t nameLen = runLength(text, i, isIdent);
    std::string_view name = text.substr(i, nameLen);
    std::size_t j = i + nameLen;
    i = j;
    const char* kind = assignmentKind(name);
    if (!kind) continue;
    if (j < text.size() && (text[j] == '"' || text[j] == '\'')) ++j;  // "password": …
    while (j < text.size() && (text[j] == ' ' || text[j] == '\t')) ++j;
    if (j >= text.size()) break;
    if (text[j] == '=') {
      if (j + 1 < text.size() && text[j + 1] == '=') continue;  // a comparison
      ++j;
      if (j < text.size() && text[j] == '>') ++j;
    } else if (text[j] == ':') {
      if (j + 1 < text.size() && text[j + 1] == ':') continue;  // Token::new
      ++j;
      if (j < text.size() && text[j] == '=') ++j;
    } else {
      continue;
    }
    while (j < text.size() && (text[j] == ' ' || text[j] == '\t')) ++j;
    if (std::string_view(kind) == "token") {
      // Authorization: Bearer <token>
      std::string rest = toLower(text.substr(j, 7));
      for (const char* scheme : {"bearer ", "basic ", "token "}) {
        if (startsWith(rest, scheme)) {
          j += std::string_view(scheme).size();
          while (j < text.size() && text[j] == ' ') ++j;
          break;
        }
      }
    }
    if (j >= text.size()) break;
    std::size_t vBegin = j, vEnd = j;
    char q = text[j];
    if (q == '"' || q == '\'' || q == '`') {
      vBegin = j + 1;
      vEnd = vBegin;
      while (vEnd < text.size() && text[vEnd] != q && text[vEnd] != '\n') ++vEnd;
    } else {
      while (vEnd < text.size()) {
        char c = text[vEnd];
        if (isSpace(c) || c == ',' || c == ';' || c == ')' || c == ']' || c == '}' || c == '"' || c == '\'' ||
            c == '`' || c == '<' || c == '>')
          break;
        if (c == '&') {  // ?api_key=…&page=2 ends the value; a bare & belongs to it (Tr0ub4dor&3)
          std::size_t n = runLength(text, vEnd + 1, isIdent);
          if (n > 0 && vEnd + 1 + n < text.size() && text[vEnd + 1 + n] == '=') break;
        }
        ++vEnd;
      }
      while (vEnd > vBegin && (text[vEnd - 1] == '.' || text[vEnd - 1] == ':')) --vEnd;  // end of a sentence
      // Code, not a literal: a call, an index, a reference to something else.
      std::string_view v = text.substr(vBegin, vEnd - vBegin);
      if (v.find('(') != std::string_view::npos || v.find('[') != std::string_view::npos) {
        if (!startsWith(v, "[REDACTED")) {
          i = vEnd;
          continue;
        }
      }
    }
    if (looksSecret(text.substr(vBegin, vEnd - vBegin))) {
      add(out, kind, vBegin, vEnd);
      i = vEnd;
    }
  }
}

}  // namespace

double shannonEntropy(std::string_view s) {
  if (s.empty()) return 0;
  std::array<std::size_t, 256> counts{};
  for (unsigned char c : s) ++counts[c];
  double h = 0;
  const double n = static_cast<double>(s.size());
  for (std::size_t c : counts) {
    if (c == 0) continue;
    double p = static_cast<double>(c) / n;
    h -= p * std::log2(p);
  }
  return h;
}

bool isPlaceholderSecret(std::string_view value) {
  if (value.empty()) return true;
  std::string v = toLower(value);
  if (v.front() == '<' || (v.front() == '[' && startsWith(v, "[redacted"))) return true;
  if (startsWith(v, "${") || startsWith(v, "{{") || startsWith(v, "%(") || startsWith(v, "$(") ||
      startsWith(v, "%{") || startsWith(v, "#{"))
    return true;
  if (v.front() == '$' && v.size() > 1 && (isAlpha(v[1]) || v[1] == '_')) return true;  // $DB_PASSWORD
  if (v.find_first_not_of(v.front()) == std::string::npos) return true;                  // xxxxxxxx, ********
  for (const char* marker : {"xxxx", "****", "....", "changeme", "change_me", "change-me", "placeholder", "example",
                             "dummy", "redacted", "your_", "your-", "yourpassword", "<", "..."}) {
    if (v.find(marker) != std::string::npos) return true;
  }
  for (const char* prefix : {"process.env", "os.environ", "os.getenv", "getenv", "env.", "secrets.", "vault:"}) {
    if (startsWith(v, prefix)) return true;
  }
  for (const char* word : {"password", "passwd", "pass", "secret", "token", "null", "none", "nil", "undefined",
                           "true", "false", "empty", "test", "string", "required", "optional", "hidden"}) {
    if (v == word) return true;
  }
  return false;
}

std::vector<SecretFinding> findSecrets(std::string_view text) {
  // Specific kinds first, so that they win over the generic assignment kinds where both match.
  std::vector<SecretFinding> candidates;
  findPrivateKeys(text, candidates);
  findVendorTokens(text, candidates);
  findPrefixedKeys(text, candidates);
  findAwsKeys(text, candidates);
  findJwts(text, candidates);
  findSlackWebhooks(text, candidates);
  findConnectionStrings(text, candidates);
  findAzureKeys(text, candidates);
  findOptionValues(text, candidates);
  findAssignments(text, candidates);
  std::map<std::size_t, SecretFinding> accepted;  // by begin; never overlapping
  for (auto& c : candidates) {
    if (c.end <= c.begin) continue;
    auto next = accepted.lower_bound(c.begin);
    if (next != accepted.end() && next->second.begin < c.end) continue;
    if (next != accepted.begin() && std::prev(next)->second.end > c.begin) continue;
    accepted.emplace(c.begin, std::move(c));
  }
  std::vector<SecretFinding> out;
  out.reserve(accepted.size());
  for (auto& [begin, f] : accepted) out.push_back(std::move(f));
  return out;
}

std::string redactSecrets(std::string_view text, std::vector<std::string>* kinds) {
  auto findings = findSecrets(text);
  if (findings.empty()) return std::string(text);
  std::string out;
  out.reserve(text.size());
  std::size_t at = 0;
  for (const auto& f : findings) {
    out.append(text.substr(at, f.begin - at));
    out += "[REDACTED:" + f.kind + "]";
    at = f.end;
    if (kinds) kinds->push_back(f.kind);
  }
  out.append(text.substr(at));
  return out;
}

}  // namespace memq
