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

// scheme://user:password@host — only the password is reported. The authority runs to the first `/` after `://`, and
// its last `@` ends the user information: a password may hold `#`, `?` or `@` unescaped
// (`mysql://root:Xk9#mQ2@db/app`), so none of them ends it. What a `?` or `#` really starts (a query, a fragment) is
// told apart by where it stands: in the user name (`host?to=a:b@c`), or right after a port
// (`localhost:8080?to=bob@example.com`), it is not a login.
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
      if (isSpace(c) || c == '/' || c == '"' || c == '\'' || c == '`' || c == '<' || c == '>') break;
      ++authEnd;
    }
    std::string_view authority = text.substr(authStart, authEnd - authStart);
    std::size_t at = authority.rfind('@');
    if (at == std::string_view::npos) continue;
    std::size_t colon = authority.find(':');
    if (colon == std::string_view::npos || colon > at) continue;
    if (authority.substr(0, colon).find_first_of("?#") != std::string_view::npos) continue;
    std::string_view password = authority.substr(colon + 1, at - colon - 1);
    std::size_t mark = password.find_first_of("?#");
    if (mark != std::string_view::npos && mark > 0 && std::all_of(password.begin(), password.begin() + mark, isDigit))
      continue;
    if (password.empty() || isPlaceholderSecret(password)) continue;
    add(out, "connection_string", authStart + colon + 1, authStart + at);
    pos = authEnd;
  }
}

// The generic kind a setting's name announces, or nullptr.
const char* assignmentKind(std::string_view name) {
  std::string n = toLower(name);
  if (n == "oldpwd") return nullptr;  // the shell's previous working directory (PWD: see findAssignments)
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

// A file-system path: `/`, `./`, `../` or `~/` followed by nothing but path segments — letters, digits and `._-`
// separated by `/` (`/etc/passwd`, `./certs/server.key`). It says where a credential is kept, not what it is. A value
// with any other byte (`/x9#Lq!vR7`) is judged like any other, however it starts.
// Base64 may start with `/` too (`/k9Xq2Lm7Tb0Vw3…`): a run of 12 or more letters and digits that mixes upper case,
// lower case and digits is a random string, not a file name. File names join their words with `._-`
// (`~/My-Docs_2024/notes.txt`), so that each run stays short or lacks one of the three.
bool isPathValue(std::string_view value) {
  std::size_t root = 0;
  for (std::string_view prefix : {std::string_view("/"), std::string_view("./"), std::string_view("../"),
                                  std::string_view("~/")}) {
    if (startsWith(value, prefix)) root = prefix.size();
  }
  if (root == 0) return false;
  std::size_t i = root;
  while (i < value.size()) {
    const char c = value[i];
    if (c == '.' || c == '_' || c == '-' || c == '/') {
      ++i;
      continue;
    }
    if (!isAlnum(c)) return false;
    const std::size_t n = runLength(value, i, isAlnum);
    const std::string_view run = value.substr(i, n);
    if (n >= 12 && anyDigit(run) && std::any_of(run.begin(), run.end(), isUpper) &&
        std::any_of(run.begin(), run.end(), isLower)) {
      return false;
    }
    i += n;
  }
  return true;
}

bool looksSecret(std::string_view value) {
  if (value.size() < 8 || isPlaceholderSecret(value) || isPathValue(value)) return false;
  bool symbolOrDigit = std::any_of(value.begin(), value.end(), [](char c) { return !isAlpha(c); });
  if (!symbolOrDigit) return false;  // a plain word ("required", "configuration") is prose, not a credential
  double threshold = std::min(3.0, 0.85 * std::log2(static_cast<double>(value.size())));
  return shannonEntropy(value) >= threshold;
}

// `--password X`, `--password=X`, `--api-key "X"`: an option that announces a credential takes the next word as its
// value. The option name says what follows, so the value need not look random; it must only not be prose: at least
// 6 bytes, not a placeholder, not a path, not the next option, and not a plain word ("the --password flag is
// required").
// A quoted value is read for at most kMaxOptionValue bytes, so that text full of unclosed quotes stays linear and an
// unclosed quote does not take the rest of the text with it. An unquoted value is read to the end of its word, however
// long: a cut would leave the rest of the credential in clear text, and could split a UTF-8 character.
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
      // The next option, not a value. Decided before the word is read: in "(--password=-(--password=-…" the word runs
      // to the end of the text, and reading it from every option would be quadratic.
      if (q == '-') continue;
      vEnd = vBegin + runLength(text, vBegin, [](char c) { return !isSpace(c) && c != '"' && c != '\'' && c != '`'; });
      while (vEnd > vBegin && (text[vEnd - 1] == '.' || text[vEnd - 1] == ',' || text[vEnd - 1] == ';' ||
                               text[vEnd - 1] == ')')) {
        --vEnd;  // the end of a sentence or a list, not the value
      }
      pos = vEnd;  // a word read once is not read again from an option inside it, whatever is decided about it
    }
    std::string_view value = text.substr(vBegin, vEnd - vBegin);
    if (value.size() < 6 || value.front() == '-' || isPlaceholderSecret(value) || isPathValue(value)) continue;
    if (std::all_of(value.begin(), value.end(), isAlpha)) continue;
    // `--secret id=npmrc,src=.npmrc` (docker build): a list of settings, not a credential.
    std::size_t key = runLength(value, 0, isIdent);
    if (key > 0 && key < value.size() && value[key] == '=') continue;
    add(out, kind, vBegin, vEnd);
    pos = vEnd;
  }
}

// True where text[at…] starts the next setting of a list, `name=` or `name:` (`Password=…;Database=prod`,
// `{password:!0,image:!0}`, `(key:THandle;flags:dword)`, `A := 1,B := 2`).
bool startsNextSetting(std::string_view text, std::size_t at) {
  std::size_t n = runLength(text, at, isIdent);
  if (n == 0) return false;
  std::size_t k = at + n;
  while (k < text.size() && (text[k] == ' ' || text[k] == '\t')) ++k;
  return k < text.size() && (text[k] == '=' || text[k] == ':');
}

// True where text[at…] starts a setting findAssignments reads: a name that announces a credential, at the start of a
// word, directly followed by `=` or `:` (not `==` or `::`).
bool startsCredentialSetting(std::string_view text, std::size_t at) {
  if (!(isAlpha(text[at]) || text[at] == '_') || (at > 0 && isIdent(text[at - 1]))) return false;
  const std::size_t k = at + runLength(text, at, isIdent);
  if (k + 1 >= text.size() || (text[k] != '=' && text[k] != ':') || text[k + 1] == text[k]) return false;
  return assignmentKind(text.substr(at, k - at)) != nullptr;
}

bool isArgumentByte(char c) {
  return isAlnum(c) || c == '_' || c == '.' || c == ',' || c == '=' || c == '+' || c == '-' || c == '*' || c == ':' ||
         c == '(' || c == '[';
}

// Code or prose, not a literal:
//  - a parenthesised expression or a list: `(SEC_ERROR_BASE + 65)`, `(optional)`, `[x, y]`;
//  - a call or an index: names joined by `+-*/`, the last directly followed by `(` or `[` (`getpass()`,
//    `cfg["password"]`, `Token+Expr[I]`, `hash(salt+pw)`, `b16encode(raw[8:])`), then either simple arguments
//    (names, numbers, `,=+-*:` and further calls) or a closing bracket right where the value ends; when the name is
//    qualified (`token.replace(/^\s+/`, `std::string(`) its arguments may be anything.
// A bracket after symbols no expression holds there, or one followed by symbols no argument list holds, is part of a
// literal (`Xk9(f#2Lq!vR7`).
bool looksLikeCode(std::string_view text, std::size_t vBegin, std::size_t vEnd) {
  std::string_view value = text.substr(vBegin, vEnd - vBegin);
  if (value.empty()) return false;
  if (value[0] == '(' || value[0] == '[') return true;
  if (!(isAlpha(value[0]) || value[0] == '_')) return false;
  auto isNameByte = [](char c) { return isAlnum(c) || c == '_' || c == '.' || c == ':'; };
  std::size_t n =
      runLength(value, 0, [&](char c) { return isNameByte(c) || c == '+' || c == '-' || c == '*' || c == '/'; });
  if (n == value.size() || (value[n] != '(' && value[n] != '[') || !isNameByte(value[n - 1])) return false;
  if (vEnd < text.size() && (text[vEnd] == ')' || text[vEnd] == ']')) return true;
  if (value.substr(0, n).find_first_of(".:") != std::string_view::npos) return true;
  std::string_view arguments = value.substr(n + 1);
  return std::all_of(arguments.begin(), arguments.end(), isArgumentByte);
}

// Where a value read up to rawEnd really ends: a `.` `:` `,` `;` at its end closes a sentence or a list.
std::size_t trimValueEnd(std::string_view text, std::size_t vBegin, std::size_t rawEnd) {
  while (rawEnd > vBegin && (text[rawEnd - 1] == '.' || text[rawEnd - 1] == ':' || text[rawEnd - 1] == ',' ||
                             text[rawEnd - 1] == ';')) {
    --rawEnd;
  }
  return rawEnd;
}

// Start of the last word of text[vBegin, rawEnd), with the `=`, `:`, `=>` or `:=` that may follow it.
std::size_t lastWordStart(std::string_view text, std::size_t vBegin, std::size_t rawEnd) {
  std::size_t k = rawEnd;
  for (int separator = 0; separator < 2 && k > vBegin; ++separator) {
    if (text[k - 1] != '=' && text[k - 1] != ':' && text[k - 1] != '>') break;
    --k;
  }
  while (k > vBegin && isIdent(text[k - 1])) --k;
  return k;
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
    const char q = text[j];
    const bool quoted = q == '"' || q == '\'' || q == '`';
    const std::size_t vBegin = quoted ? j + 1 : j;
    // PWD is an ODBC connection string's password (`UID=sa;PWD=…`) and the shell's working directory, which is
    // always absolute (`PWD=/home/alice/My Projects`, spaces and all).
    const bool shellDirectory = toLower(name) == "pwd" && vBegin < text.size() && text[vBegin] == '/';
    std::size_t vEnd = vBegin;
    if (quoted) {
      // A refused quoted value is scanned again for settings inside it ("password": "<none>; token=…"). That stays
      // linear: values opened by the same quote byte end at the next one, so they never overlap.
      while (vEnd < text.size() && text[vEnd] != q && text[vEnd] != '\n') ++vEnd;
      if (!shellDirectory && looksSecret(text.substr(vBegin, vEnd - vBegin))) {
        add(out, kind, vBegin, vEnd);
        i = vEnd;
      }
      continue;
    }
    std::size_t rawEnd = vBegin;
    std::size_t innerSetting = std::string_view::npos;  // the rightmost credential setting inside the value
    while (rawEnd < text.size()) {
      char c = text[rawEnd];
      if (isSpace(c) || c == ')' || c == ']' || c == '}' || c == '"' || c == '\'' || c == '`' || c == '<' || c == '>')
        break;
      if (startsCredentialSetting(text, rawEnd)) innerSetting = rawEnd;
      // `&`, `;` and `,` end the value only before the next setting; elsewhere they belong to it (Tr0ub4dor&3,
      // hT7;kQ2!xZ9pW4), and before white space or the end of the text they are trimmed below.
      if (c == '&') {  // ?api_key=…&page=2
        std::size_t n = runLength(text, rawEnd + 1, isIdent);
        if (n > 0 && rawEnd + 1 + n < text.size() && text[rawEnd + 1 + n] == '=') break;
      }
      if ((c == ';' || c == ',') && startsNextSetting(text, rawEnd + 1)) break;
      ++rawEnd;
    }
    vEnd = trimValueEnd(text, vBegin, rawEnd);
    if (looksLikeCode(text, vBegin, vEnd)) {
      i = vEnd;
      continue;
    }
    const std::string_view value = text.substr(vBegin, vEnd - vBegin);
    // Plain words listed (`TJWTIDToken;override`, `tsqlUser,TSQLUserGrantee`) are code or prose, as one plain word is.
    const bool wordList =
        std::all_of(value.begin(), value.end(), [](char c) { return isAlpha(c) || c == ',' || c == ';'; });
    if (!shellDirectory && !wordList && looksSecret(value)) {
      add(out, kind, vBegin, vEnd);
      i = vEnd;
      continue;
    }
    // Refused whole. Its first item may still be a credential on its own (`Xk9#mQ2vL7w;changeme`): that is how far
    // a value ran when `;` and `,` always ended it.
    std::size_t listEnd = value.find_first_of(",;");
    if (!shellDirectory && listEnd != std::string_view::npos) {
      std::size_t itemEnd = trimValueEnd(text, vBegin, vBegin + listEnd);
      if (!looksLikeCode(text, vBegin, itemEnd) && looksSecret(text.substr(vBegin, itemEnd - vBegin))) {
        add(out, kind, vBegin, itemEnd);
      }
    }
    // Every setting inside the value ("pwd=pwd=pwd=…") would have a value ending where this one ends, and reading
    // each of them to that end would be quadratic. So the scan goes on from the rightmost credential setting inside
    // the value (`password=$DB_PASS|api_token=…`, `password=token="…"`): its own value holds no further one, so when
    // that is refused too the scan goes on past it, and every byte is read a bounded number of times. Without one, it
    // goes on from the value's last word, the one name in it whose own value may lie beyond it
    // (`password=$DB_PASS|token = …`).
    i = std::max(i, innerSetting != std::string_view::npos ? innerSetting : lastWordStart(text, vBegin, rawEnd));
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
  // `&lt;` and its numeric forms: a `<password>` in HTML-escaped text.
  for (const char* marker : {"xxxx", "****", "....", "changeme", "change_me", "change-me", "placeholder", "example",
                             "dummy", "redacted", "your_", "your-", "yourpassword", "<", "...", "&lt;", "&#60;",
                             "&#x3c;"}) {
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
  const std::size_t firstGeneric = candidates.size();
  findOptionValues(text, candidates);
  findAssignments(text, candidates);
  std::map<std::size_t, SecretFinding> accepted;  // by begin; never overlapping
  for (std::size_t k = 0; k < candidates.size(); ++k) {
    auto& c = candidates[k];
    if (c.end <= c.begin) continue;
    auto next = accepted.lower_bound(c.begin);
    if (next != accepted.begin() && std::prev(next)->second.end > c.begin) continue;
    if (next != accepted.end() && next->second.begin < c.end) {
      // A generic value that runs on into a specific finding (`password=Xk9#mQ2vL7w,AKIA…`) is a list whose later
      // item the specific kind reports; the items before that one are kept when they still look like a credential on
      // their own, or they would stay in clear text. The cut falls on a `,` `;` or `&`, so that the value is never
      // cut inside an item (`password=postgres://app:Zx9…@db`: `postgres://app:` is no credential).
      if (k < firstGeneric) continue;
      std::string_view before = text.substr(c.begin, next->second.begin - c.begin);
      std::size_t cut = before.find_last_of(",;&");
      if (cut == std::string_view::npos) continue;
      cut = before.find_last_not_of(",;&", cut);
      if (cut == std::string_view::npos || !looksSecret(before.substr(0, cut + 1))) continue;
      c.end = c.begin + cut + 1;
    }
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
