// Per-language import extraction; see import_scanner.h.
#include "daemon/git/import_scanner.h"

#include <algorithm>
#include <cctype>

namespace memq {
namespace {

bool isIdentStart(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_' || c == '$'; }
bool isIdentChar(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '$'; }

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

// ---- C family: preprocessor lines only. ----

std::vector<ImportRef> scanC(std::string_view text) {
  std::vector<ImportRef> out;
  size_t pos = 0;
  bool inBlockComment = false;
  while (pos < text.size()) {
    size_t eol = text.find('\n', pos);
    if (eol == std::string_view::npos) eol = text.size();
    std::string_view line = text.substr(pos, eol - pos);
    pos = eol + 1;
    if (inBlockComment) {
      size_t end = line.find("*/");
      if (end == std::string_view::npos) continue;
      line.remove_prefix(end + 2);
      inBlockComment = false;
    }
    std::string_view t = trim(line);
    // A block comment opened on a non-directive line hides the directives until it closes.
    if (t.empty() || t[0] != '#') {
      size_t open = line.rfind("/*");
      if (open != std::string_view::npos && line.find("*/", open) == std::string_view::npos) inBlockComment = true;
      continue;
    }
    t = trim(t.substr(1));
    std::string_view directive;
    for (std::string_view d : {"include_next", "include", "import"}) {
      if (t.substr(0, d.size()) == d) {
        directive = d;
        break;
      }
    }
    if (directive.empty()) continue;
    t = trim(t.substr(directive.size()));
    if (t.empty()) continue;
    const char open = t[0];
    const char close = open == '"' ? '"' : open == '<' ? '>' : 0;
    if (close == 0) continue;
    size_t end = t.find(close, 1);
    if (end == std::string_view::npos || end == 1) continue;
    out.push_back({open == '"' ? ImportKind::kIncludeQuoted : ImportKind::kIncludeAngle, std::string(t.substr(1, end - 1)),
                   {}});
  }
  return out;
}

// ---- Python: logical lines (parentheses and backslashes joined), strings and comments skipped. ----

void addPythonStatement(std::string_view stmt, std::vector<ImportRef>& out) {
  stmt = trim(stmt);
  auto splitCommas = [](std::string_view s) {
    std::vector<std::string> parts;
    size_t start = 0;
    while (start <= s.size()) {
      size_t comma = s.find(',', start);
      if (comma == std::string_view::npos) comma = s.size();
      std::string_view part = trim(s.substr(start, comma - start));
      size_t as = part.find(" as ");
      if (as != std::string_view::npos) part = trim(part.substr(0, as));
      if (!part.empty()) parts.emplace_back(part);
      start = comma + 1;
    }
    return parts;
  };
  auto stripParens = [](std::string s) {
    std::string out;
    for (char c : s) {
      if (c != '(' && c != ')' && c != '\\') out += c;
    }
    return out;
  };
  if (stmt.substr(0, 7) == "import " || stmt.substr(0, 7) == "import\t") {
    for (std::string& m : splitCommas(stripParens(std::string(stmt.substr(7))))) {
      out.push_back({ImportKind::kPython, std::move(m), {}});
    }
  } else if (stmt.substr(0, 5) == "from " || stmt.substr(0, 5) == "from\t") {
    std::string_view rest = stmt.substr(5);
    size_t imp = rest.find(" import");
    if (imp == std::string_view::npos) return;
    std::string module(trim(rest.substr(0, imp)));
    std::string names = stripParens(std::string(rest.substr(imp + 7)));
    if (module.empty()) return;
    for (char c : module) {
      if (!(isIdentChar(c) || c == '.')) return;  // not an import statement after all
    }
    ImportRef ref{ImportKind::kPython, std::move(module), {}};
    for (std::string& n : splitCommas(names)) {
      if (n != "*") ref.names.push_back(std::move(n));
    }
    out.push_back(std::move(ref));
  }
}

// The length of the line break at `i` ("\n" or "\r\n"), or 0 when there is none.
size_t lineBreakAt(std::string_view s, size_t i) {
  if (i < s.size() && s[i] == '\n') return 1;
  return i + 1 < s.size() && s[i] == '\r' && s[i + 1] == '\n' ? 2 : 0;
}

// Whether `word`, right before a quote, makes it a string literal's prefix (r, b, f, u and their pairs, any case).
bool isPythonStringPrefix(std::string_view word) {
  if (word.empty() || word.size() > 2) return false;
  std::string lower;
  for (char c : word) lower += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  for (std::string_view p : {"r", "u", "b", "f", "br", "rb", "fr", "rf"}) {
    if (lower == p) return true;
  }
  return false;
}

// The position just past the string literal whose opening quote is at `i` ('...', "...", or triple-quoted). A
// backslash always takes the next character with it, raw strings included: r"\"" does not end at its second quote
// (a raw string keeps the backslash, but the quote still does not close it), and a backslash before a newline
// continues a one-line string. A one-line string still open at the line's end stops there (unterminated: the
// newline is the caller's), so a stray quote cannot swallow the rest of the file.
size_t skipPythonString(std::string_view s, size_t i) {
  const size_t n = s.size();
  const char q = s[i];
  const bool triple = i + 2 < n && s[i + 1] == q && s[i + 2] == q;
  size_t j = i + (triple ? 3 : 1);
  while (j < n) {
    const char c = s[j];
    if (c == '\\') {
      j += 1 + std::max<size_t>(lineBreakAt(s, j + 1), 1);
    } else if (c == q && (!triple || (j + 2 < n && s[j + 1] == q && s[j + 2] == q))) {
      return j + (triple ? 3 : 1);
    } else if (c == '\n' && !triple) {
      return j;
    } else {
      ++j;
    }
  }
  return n;
}

// Logical lines as Python joins them (inside parentheses, after a backslash at a line's end), each split at its
// semicolons into statements. String literals (their contents become "") and comments are left out first, so a
// parenthesis, '#' or ';' inside one counts for nothing: `re.compile(r"\(")` must not hold the parentheses open
// over every later line, hiding its imports.
std::vector<ImportRef> scanPython(std::string_view text) {
  std::vector<ImportRef> out;
  std::string logical;
  int depth = 0;
  auto flush = [&] {
    size_t start = 0;
    while (start < logical.size()) {
      size_t semi = logical.find(';', start);
      if (semi == std::string::npos) semi = logical.size();
      addPythonStatement(std::string_view(logical).substr(start, semi - start), out);
      start = semi + 1;
    }
    logical.clear();
    depth = 0;
  };
  const size_t n = text.size();
  size_t i = 0;
  while (i < n) {
    const char c = text[i];
    if (c == '\n') {
      ++i;
      if (depth == 0) {
        flush();
      } else {
        logical += ' ';
      }
    } else if (c == '#') {
      while (i < n && text[i] != '\n') ++i;
    } else if (c == '\\' && lineBreakAt(text, i + 1) > 0) {
      i += 1 + lineBreakAt(text, i + 1);  // an explicit line join
      logical += ' ';
    } else if (c == '"' || c == '\'') {
      i = skipPythonString(text, i);
      logical += "\"\"";
    } else if (isIdentStart(c)) {
      size_t j = i + 1;
      while (j < n && isIdentChar(text[j])) ++j;
      const std::string_view word = text.substr(i, j - i);
      if (j < n && (text[j] == '"' || text[j] == '\'') && isPythonStringPrefix(word)) {
        i = skipPythonString(text, j);
        logical += "\"\"";
      } else {
        logical += word;
        i = j;
      }
    } else {
      if (c == '(') ++depth;
      if (c == ')' && depth > 0) --depth;
      logical += c;
      ++i;
    }
  }
  flush();
  return out;
}

// ---- C-like token stream for JS/TS, Go, Rust, Java/Kotlin. ----

struct Token {
  enum Type { kIdent, kString, kPunct } type;
  std::string text;
};

struct LexOptions {
  bool backtickStrings = false;  // JS template literals, Go raw strings
  bool quoteIsString = false;    // JS: '...' is a string; elsewhere it is a char literal (or a Rust lifetime)
};

std::vector<Token> lex(std::string_view s, const LexOptions& opts) {
  std::vector<Token> out;
  size_t i = 0;
  const size_t n = s.size();
  while (i < n) {
    const char c = s[i];
    if (std::isspace(static_cast<unsigned char>(c))) {
      ++i;
    } else if (c == '/' && i + 1 < n && s[i + 1] == '/') {
      while (i < n && s[i] != '\n') ++i;
    } else if (c == '/' && i + 1 < n && s[i + 1] == '*') {
      size_t end = s.find("*/", i + 2);
      i = end == std::string_view::npos ? n : end + 2;
    } else if (c == '"' || (c == '\'' && opts.quoteIsString) || (c == '`' && opts.backtickStrings)) {
      std::string value;
      size_t j = i + 1;
      while (j < n && s[j] != c) {
        if (c != '`' && s[j] == '\n') break;  // unterminated: give up on this literal at the line end
        if (s[j] == '\\' && c != '`' && j + 1 < n) {
          value += s[j + 1];
          j += 2;
          continue;
        }
        value += s[j++];
      }
      out.push_back({Token::kString, std::move(value)});
      i = j < n ? j + 1 : n;
    } else if (c == '\'') {
      // A char literal ('x', '\n', '\u{1F600}') is skipped; otherwise (a Rust lifetime 'a) only the quote is.
      size_t j = i + 1;
      if (j < n && s[j] == '\\') j += 2;
      while (j < n && j < i + 12 && s[j] != '\'' && s[j] != '\n') ++j;
      const bool charLiteral = j < n && s[j] == '\'' && (s[i + 1] == '\\' || j - i <= 5);
      i = charLiteral ? j + 1 : i + 1;
    } else if (isIdentStart(c)) {
      size_t j = i + 1;
      while (j < n && isIdentChar(s[j])) ++j;
      out.push_back({Token::kIdent, std::string(s.substr(i, j - i))});
      i = j;
    } else if (c == ':' && i + 1 < n && s[i + 1] == ':') {
      out.push_back({Token::kPunct, "::"});
      i += 2;
    } else {
      out.push_back({Token::kPunct, std::string(1, c)});
      ++i;
    }
  }
  return out;
}

bool is(const std::vector<Token>& t, size_t i, Token::Type type, std::string_view text = {}) {
  return i < t.size() && t[i].type == type && (text.empty() || t[i].text == text);
}

std::vector<ImportRef> scanJs(std::string_view text) {
  std::vector<ImportRef> out;
  const auto t = lex(text, {.backtickStrings = true, .quoteIsString = true});
  for (size_t i = 0; i < t.size(); ++i) {
    if (t[i].type != Token::kIdent) continue;
    if (i > 0 && is(t, i - 1, Token::kPunct, ".")) continue;  // obj.from(...), x.require(...)
    const std::string& w = t[i].text;
    if (w == "from" && is(t, i + 1, Token::kString)) {
      out.push_back({ImportKind::kJs, t[i + 1].text, {}});
    } else if (w == "import" && is(t, i + 1, Token::kString)) {
      out.push_back({ImportKind::kJs, t[i + 1].text, {}});
    } else if ((w == "import" || w == "require") && is(t, i + 1, Token::kPunct, "(") && is(t, i + 2, Token::kString) &&
               is(t, i + 3, Token::kPunct, ")")) {
      out.push_back({ImportKind::kJs, t[i + 2].text, {}});
    }
  }
  return out;
}

std::vector<ImportRef> scanGo(std::string_view text) {
  std::vector<ImportRef> out;
  const auto t = lex(text, {.backtickStrings = true, .quoteIsString = false});
  // One import spec: an optional name (identifier, '.' or '_') then the path string.
  auto spec = [&](size_t& i) {
    if (is(t, i, Token::kIdent) || is(t, i, Token::kPunct, ".") || is(t, i, Token::kPunct, "_")) {
      if (is(t, i + 1, Token::kString)) ++i;
    }
    if (is(t, i, Token::kString)) {
      out.push_back({ImportKind::kGo, t[i].text, {}});
      ++i;
      return true;
    }
    return false;
  };
  for (size_t i = 0; i < t.size(); ++i) {
    if (!is(t, i, Token::kIdent, "import")) continue;
    size_t j = i + 1;
    if (is(t, j, Token::kPunct, "(")) {
      ++j;
      while (j < t.size() && !is(t, j, Token::kPunct, ")")) {
        if (!spec(j)) ++j;  // ';' or anything unexpected
      }
    } else {
      spec(j);
    }
    i = j - 1;  // the loop's ++i lands on the first token after the import
  }
  return out;
}

std::vector<ImportRef> scanGoMod(std::string_view text) {
  size_t pos = 0;
  while (pos < text.size()) {
    size_t eol = text.find('\n', pos);
    if (eol == std::string_view::npos) eol = text.size();
    std::string_view line = trim(text.substr(pos, eol - pos));
    pos = eol + 1;
    if (line.substr(0, 7) == "module " || line.substr(0, 7) == "module\t") {
      std::string_view m = trim(line.substr(7));
      size_t comment = m.find("//");
      if (comment != std::string_view::npos) m = trim(m.substr(0, comment));
      if (m.size() >= 2 && (m.front() == '"' || m.front() == '`')) m = m.substr(1, m.size() - 2);
      if (!m.empty()) return {{ImportKind::kGoModule, std::string(m), {}}};
    }
  }
  return {};
}

// Expands a Rust use tree starting at t[i] into full paths; stops after the tree (at ';' or the closing brace).
// Nesting deeper than this in one `use` is not Rust anyone writes; a file of a million `{` must not recurse a million
// frames deep (a stack overflow would end memqd). Past it the rest of the tree is skipped, token by token.
constexpr int kMaxUseTreeDepth = 32;

void rustUseTree(const std::vector<Token>& t, size_t& i, std::string prefix, std::vector<ImportRef>& out,
                 int depth = 0) {
  if (depth > kMaxUseTreeDepth) return;
  std::string path = std::move(prefix);
  if (is(t, i, Token::kPunct, "::")) ++i;  // leading :: (absolute path)
  while (i < t.size()) {
    if (is(t, i, Token::kIdent)) {
      if (!path.empty()) path += "::";
      path += t[i].text;
      ++i;
      if (is(t, i, Token::kIdent, "as")) i += 2;  // alias: the path is what matters
      if (is(t, i, Token::kPunct, "::")) {
        ++i;
        continue;
      }
      out.push_back({ImportKind::kRustUse, path, {}});
      return;
    }
    if (is(t, i, Token::kPunct, "*")) {
      ++i;  // a glob imports from the module named by the prefix
      if (!path.empty()) out.push_back({ImportKind::kRustUse, path, {}});
      return;
    }
    if (is(t, i, Token::kPunct, "{")) {
      ++i;
      while (i < t.size() && !is(t, i, Token::kPunct, "}")) {
        if (is(t, i, Token::kPunct, ",")) {
          ++i;
          continue;
        }
        const size_t before = i;
        rustUseTree(t, i, path, out, depth + 1);
        if (i == before) ++i;
      }
      if (i < t.size()) ++i;  // '}'
      return;
    }
    return;  // unexpected token: end of this tree
  }
}

std::vector<ImportRef> scanRust(std::string_view text) {
  std::vector<ImportRef> out;
  const auto t = lex(text, {.backtickStrings = false, .quoteIsString = false});
  for (size_t i = 0; i < t.size(); ++i) {
    if (is(t, i, Token::kIdent, "mod") && is(t, i + 1, Token::kIdent) && is(t, i + 2, Token::kPunct, ";")) {
      out.push_back({ImportKind::kRustMod, t[i + 1].text, {}});
      i += 2;
    } else if (is(t, i, Token::kIdent, "use") && (i == 0 || !is(t, i - 1, Token::kPunct, "::"))) {
      size_t j = i + 1;
      rustUseTree(t, j, "", out);
      i = j > i ? j - 1 : i;
    }
  }
  return out;
}

std::vector<ImportRef> scanJava(std::string_view text) {
  std::vector<ImportRef> out;
  const auto t = lex(text, {.backtickStrings = false, .quoteIsString = false});
  for (size_t i = 0; i < t.size(); ++i) {
    if (!is(t, i, Token::kIdent, "import")) continue;
    size_t j = i + 1;
    if (is(t, j, Token::kIdent, "static")) ++j;
    std::string spec;
    while (is(t, j, Token::kIdent)) {
      spec += t[j].text;
      ++j;
      if (!is(t, j, Token::kPunct, ".")) break;
      ++j;
      spec += '.';
      if (is(t, j, Token::kPunct, "*")) {
        spec += '*';
        ++j;
        break;
      }
    }
    if (!spec.empty() && spec.back() != '.') out.push_back({ImportKind::kJava, spec, {}});
    i = j > i ? j - 1 : i;
  }
  return out;
}

}  // namespace

SourceLanguage languageOf(std::string_view path) {
  const size_t slash = path.rfind('/');
  const std::string_view base = slash == std::string_view::npos ? path : path.substr(slash + 1);
  if (base == "go.mod") return SourceLanguage::kGoMod;
  const size_t dot = base.rfind('.');
  if (dot == std::string_view::npos || dot == 0) return SourceLanguage::kNone;
  std::string ext(base.substr(dot + 1));
  for (char& c : ext) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  static const std::pair<std::string_view, SourceLanguage> kTable[] = {
      {"c", SourceLanguage::kC},      {"h", SourceLanguage::kC},      {"cc", SourceLanguage::kC},
      {"cpp", SourceLanguage::kC},    {"cxx", SourceLanguage::kC},    {"c++", SourceLanguage::kC},
      {"hh", SourceLanguage::kC},     {"hpp", SourceLanguage::kC},    {"hxx", SourceLanguage::kC},
      {"h++", SourceLanguage::kC},    {"ipp", SourceLanguage::kC},    {"inl", SourceLanguage::kC},
      {"tcc", SourceLanguage::kC},    {"m", SourceLanguage::kC},      {"mm", SourceLanguage::kC},
      {"cu", SourceLanguage::kC},     {"cuh", SourceLanguage::kC},    {"py", SourceLanguage::kPython},
      {"pyi", SourceLanguage::kPython}, {"js", SourceLanguage::kJs},  {"jsx", SourceLanguage::kJs},
      {"ts", SourceLanguage::kJs},    {"tsx", SourceLanguage::kJs},   {"mjs", SourceLanguage::kJs},
      {"cjs", SourceLanguage::kJs},   {"mts", SourceLanguage::kJs},   {"cts", SourceLanguage::kJs},
      {"go", SourceLanguage::kGo},    {"rs", SourceLanguage::kRust},  {"java", SourceLanguage::kJava},
      {"kt", SourceLanguage::kJava},
  };
  for (const auto& [e, lang] : kTable) {
    if (ext == e) return lang;
  }
  return SourceLanguage::kNone;
}

std::vector<ImportRef> scanImports(SourceLanguage language, std::string_view text) {
  switch (language) {
    case SourceLanguage::kC: return scanC(text);
    case SourceLanguage::kPython: return scanPython(text);
    case SourceLanguage::kJs: return scanJs(text);
    case SourceLanguage::kGo: return scanGo(text);
    case SourceLanguage::kGoMod: return scanGoMod(text);
    case SourceLanguage::kRust: return scanRust(text);
    case SourceLanguage::kJava: return scanJava(text);
    case SourceLanguage::kNone: break;
  }
  return {};
}

}  // namespace memq
