// The docs drift check; see docs_drift.h.
#include "unit/docs/docs_drift.h"

#include <algorithm>
#include <utility>
#include <set>
#include <cctype>
#include <fstream>
#include <sstream>

namespace memq::docs {

std::string docPageName(const std::string& method) {
  std::string name = method;
  std::replace(name.begin(), name.end(), '/', '.');
  return name + ".md";
}

std::vector<std::string> checkDocsDrift(const std::set<std::string>& tableMethods,
                                        const std::map<std::string, std::set<std::string>>& schemaParams,
                                        const std::filesystem::path& docsMethodsDir) {
  std::vector<std::string> problems;
  std::set<std::string> all = tableMethods;
  for (const auto& [method, params] : schemaParams) {
    all.insert(method);
    if (!tableMethods.count(method)) {
      problems.push_back("method " + method + " has a schema but no handler in the daemon's method table");
    }
  }
  std::set<std::string> expectedPages;
  for (const auto& method : all) {
    const std::string page = docPageName(method);
    expectedPages.insert(page);
    auto schema = schemaParams.find(method);
    if (schema == schemaParams.end()) {
      problems.push_back("method " + method + " is in the daemon's method table but has no schema (schema/methods/" +
                         page.substr(0, page.size() - 3) + ".json)");
    }
    const std::filesystem::path path = docsMethodsDir / page;
    std::ifstream in(path);
    if (!in) {
      problems.push_back("method " + method + " has no doc page (docs/methods/" + page + ")");
      continue;
    }
    if (schema == schemaParams.end()) continue;
    std::stringstream text;
    text << in.rdbuf();
    const std::string body = text.str();
    for (const auto& param : schema->second) {
      if (body.find("`" + param + "`") == std::string::npos) {
        problems.push_back("docs/methods/" + page + " does not mention param `" + param + "` of " + method);
      }
    }
  }
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(docsMethodsDir, ec)) {
    const std::string name = entry.path().filename().string();
    if (entry.path().extension() == ".md" && !expectedPages.count(name)) {
      problems.push_back("docs/methods/" + name + " documents no method of the table or the schemas");
    }
  }
  return problems;
}

namespace {

std::string readAll(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

bool isIdentifierByte(char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_'; }

// Every `Suite.Name` in backticks in `text`: both parts identifiers, the suite starting with an upper-case letter.
std::vector<std::pair<std::string, std::string>> namedTests(const std::string& text) {
  std::vector<std::pair<std::string, std::string>> out;
  size_t open = 0;
  while ((open = text.find('`', open)) != std::string::npos) {
    const size_t close = text.find('`', open + 1);
    if (close == std::string::npos) break;
    const std::string quoted = text.substr(open + 1, close - open - 1);
    open = close + 1;
    const size_t dot = quoted.find('.');
    if (dot == std::string::npos || dot == 0 || dot + 1 == quoted.size()) continue;
    const std::string suite = quoted.substr(0, dot);
    const std::string name = quoted.substr(dot + 1);
    if (!std::isupper(static_cast<unsigned char>(suite[0])) || !std::isupper(static_cast<unsigned char>(name[0]))) {
      continue;
    }
    if (!std::all_of(suite.begin(), suite.end(), isIdentifierByte) ||
        !std::all_of(name.begin(), name.end(), isIdentifierByte)) {
      continue;
    }
    out.emplace_back(suite, name);
  }
  return out;
}

}  // namespace

std::vector<std::string> checkNamedTests(const std::filesystem::path& docsDir, const std::filesystem::path& testsDir) {
  // The definitions, as "Suite.Name", from every TEST(Suite, Name) / TEST_F / TEST_P.
  std::set<std::string> defined;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(testsDir)) {
    const std::string ext = entry.path().extension().string();
    if (!entry.is_regular_file() || (ext != ".cc" && ext != ".h")) continue;
    const std::string text = readAll(entry.path());
    for (const char* macro : {"TEST(", "TEST_F(", "TEST_P("}) {
      for (size_t at = text.find(macro); at != std::string::npos; at = text.find(macro, at + 1)) {
        if (at > 0 && isIdentifierByte(text[at - 1])) continue;  // TYPED_TEST(, MY_TEST(
        const size_t open = text.find('(', at);
        const size_t comma = text.find(',', open);
        const size_t close = text.find(')', comma == std::string::npos ? open : comma);
        if (comma == std::string::npos || close == std::string::npos) continue;
        auto trimmed = [](std::string s) {
          s.erase(0, s.find_first_not_of(" \t\n"));
          s.erase(s.find_last_not_of(" \t\n") + 1);
          return s;
        };
        defined.insert(trimmed(text.substr(open + 1, comma - open - 1)) + "." +
                       trimmed(text.substr(comma + 1, close - comma - 1)));
      }
    }
  }
  std::vector<std::string> problems;
  std::vector<std::filesystem::path> docs;
  for (const auto& entry : std::filesystem::directory_iterator(docsDir)) {
    if (entry.is_regular_file() && entry.path().extension() == ".md") docs.push_back(entry.path());
  }
  std::sort(docs.begin(), docs.end());
  for (const auto& doc : docs) {
    std::set<std::string> reported;
    for (const auto& [suite, name] : namedTests(readAll(doc))) {
      const std::string test = suite + "." + name;
      if (defined.count(test) > 0 || !reported.insert(test).second) continue;
      problems.push_back(doc.filename().string() + " names test " + test + ", which no test defines");
    }
  }
  return problems;
}

}  // namespace memq::docs
