// Human output for the memq CLI: aligned columns, 8-character ids, colour only on a terminal.
#pragma once

#include <nlohmann/json.hpp>

#include <string>

namespace memq::cli {

struct Style {
  bool color = false;
  std::string dim(const std::string& s) const { return color ? "\033[2m" + s + "\033[0m" : s; }
  std::string bold(const std::string& s) const { return color ? "\033[1m" + s + "\033[0m" : s; }
  std::string yellow(const std::string& s) const { return color ? "\033[33m" + s + "\033[0m" : s; }
  std::string red(const std::string& s) const { return color ? "\033[31m" + s + "\033[0m" : s; }
  std::string green(const std::string& s) const { return color ? "\033[32m" + s + "\033[0m" : s; }
};

std::string shortId(const nlohmann::json& memory);
// A file ref of a reply: its path, or `path:40-60,72` for an anchored one.
std::string fileRefText(const nlohmann::json& file);
// One line per memory: id8, scope, category, state (when not active), pin, summary, and its anchored files.
std::string memoryLine(const nlohmann::json& memory, const Style& style);
// The full record, one field per line (memq get).
std::string memoryDetail(const nlohmann::json& memory, const Style& style);
// What became of a stale memory's files (a review/stale entry): per anchored file `src/a.c:40-60 → 44-64 (moved)`,
// for lines rewritten or deleted the text then (-) and now (+), a few lines at most, and each other changed file;
// at most five files, then "+N more files".
std::string staleFilesText(const nlohmann::json& staleMemory, const Style& style);
// A recall/search hit: the memory line plus score and signals.
std::string hitLine(const nlohmann::json& hit, const Style& style);

}  // namespace memq::cli
