// The docs drift check; see docs_drift.h.
#include "unit/docs/docs_drift.h"

#include <algorithm>
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

}  // namespace memq::docs
