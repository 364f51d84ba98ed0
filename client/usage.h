// Each memq command's usage text (see usage.cc).
#pragma once

#include <optional>
#include <string>

namespace memq::cli {

// The command's full usage (its synopsis lines and a sentence on what it does), or nullopt for an unknown command.
std::optional<std::string> commandUsage(const std::string& command);
// The first synopsis line, "usage: memq COMMAND ...", for usage errors.
std::string usageLine(const std::string& command);

}  // namespace memq::cli
