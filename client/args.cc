// Subcommand argument parsing; see args.h.
#include "client/args.h"

namespace memq::cli {

bool Args::parse(const std::vector<std::string>& words, const OptionSpec& spec, std::string& error) {
  bool onlyPositional = false;
  for (size_t i = 0; i < words.size(); ++i) {
    const std::string& w = words[i];
    if (onlyPositional || w.size() < 2 || w.rfind("--", 0) != 0) {
      positional_.push_back(w);
      continue;
    }
    if (w == "--") {
      onlyPositional = true;
      continue;
    }
    std::string name = w.substr(2);
    std::optional<std::string> inlineValue;
    if (auto eq = name.find('='); eq != std::string::npos) {
      inlineValue = name.substr(eq + 1);
      name = name.substr(0, eq);
    }
    if (spec.flags.count(name)) {
      if (inlineValue) {
        error = "--" + name + " takes no value";
        return false;
      }
      flags_.insert(name);
    } else if (spec.values.count(name) || spec.repeatable.count(name)) {
      std::string v;
      if (inlineValue) {
        v = *inlineValue;
      } else if (i + 1 < words.size()) {
        v = words[++i];
      } else {
        error = "--" + name + " needs a value";
        return false;
      }
      if (spec.values.count(name) && values_.count(name)) {
        error = "--" + name + " given twice";
        return false;
      }
      values_[name].push_back(v);
    } else {
      error = "unknown option --" + name;
      return false;
    }
  }
  return true;
}

std::optional<std::string> Args::value(const std::string& name) const {
  auto it = values_.find(name);
  if (it == values_.end() || it->second.empty()) return std::nullopt;
  return it->second.front();
}

std::vector<std::string> Args::values(const std::string& name) const {
  auto it = values_.find(name);
  return it == values_.end() ? std::vector<std::string>{} : it->second;
}

}  // namespace memq::cli
