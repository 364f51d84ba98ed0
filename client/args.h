// A small command-line parser for memq's subcommands: positional words, `--flag`, `--opt VALUE` (or
// `--opt=VALUE`), and repeatable options. Usage errors are reported as text for exit code 2.
#pragma once

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace memq::cli {

struct OptionSpec {
  std::set<std::string> flags;       // take no value
  std::set<std::string> values;      // take one value
  std::set<std::string> repeatable;  // take one value, may repeat
};

class Args {
 public:
  // Parses argv[begin..end) against spec. Returns false and sets error on an unknown option or a missing value.
  bool parse(const std::vector<std::string>& words, const OptionSpec& spec, std::string& error);

  const std::vector<std::string>& positional() const { return positional_; }
  bool flag(const std::string& name) const { return flags_.count(name) > 0; }
  std::optional<std::string> value(const std::string& name) const;
  std::vector<std::string> values(const std::string& name) const;
  bool has(const std::string& name) const { return flag(name) || values_.count(name) > 0; }

 private:
  std::vector<std::string> positional_;
  std::set<std::string> flags_;
  std::map<std::string, std::vector<std::string>> values_;
};

}  // namespace memq::cli
