// Helpers shared by the benchmark programs that read the load workload: percentiles of latency samples, JSON-lines
// input read from a shell command (so `xz -dc` can stream the compressed memories file), and one workload line as a
// save (SaveInput in process, memory/save params over the socket) or a query as memory/recall params.
#pragma once

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "daemon/model/memory_input.h"

namespace memq::bench {

// The p-th quantile (0..1) by nearest rank; 0 for no samples.
inline double percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(p * (v.size() - 1) + 0.5))];
}

// Up to `limit` JSON values, one per line of `command`'s output. A malformed line throws: the workload files are
// fixed inputs, and a benchmark over half-read data would print misleading figures.
inline std::vector<nlohmann::json> readJsonl(const std::string& command, size_t limit) {
  std::vector<nlohmann::json> out;
  FILE* f = popen(command.c_str(), "r");
  if (!f) return out;
  std::string line;
  char buf[1 << 16];
  while (out.size() < limit && fgets(buf, sizeof buf, f)) {
    line += buf;
    if (!line.empty() && line.back() == '\n') {
      out.push_back(nlohmann::json::parse(line));
      line.clear();
    }
  }
  pclose(f);
  return out;
}

// The protocol's bounds on a save's files and a recall's files: a workload line with more is cut to them.
inline constexpr size_t kMaxSaveFiles = 16;
inline constexpr size_t kMaxRecallFiles = 64;

// A line of memories.jsonl as memory/save's params (summary, details, files by path, topics, category).
inline nlohmann::json saveParams(const nlohmann::json& m) {
  nlohmann::json files = nlohmann::json::array();
  for (const auto& f : m.value("files", nlohmann::json::array())) {
    if (files.size() >= kMaxSaveFiles) break;
    files.push_back(f.is_object() ? f.value("path", "") : f.get<std::string>());
  }
  nlohmann::json p = {{"summary", m.value("summary", "")}, {"details", m.value("details", "")}, {"files", files},
                      {"topics", m.value("topics", nlohmann::json::array())}};
  if (m.contains("category") && m["category"].is_string()) p["category"] = m["category"];
  return p;
}

// The same line as a SaveInput, for the programs that save in process (the store, or the team server's memq_save).
inline SaveInput saveInput(const nlohmann::json& m) {
  const nlohmann::json p = saveParams(m);
  SaveInput in;
  in.summary = p["summary"].get<std::string>();
  in.details = p["details"].get<std::string>();
  if (p.contains("category")) in.category = p["category"].get<std::string>();
  in.topics = p["topics"].get<std::vector<std::string>>();
  for (const auto& f : p["files"]) in.files.push_back(f.get<std::string>());
  return in;
}

// A line of queries.jsonl as memory/recall's params: the query, its edited files, limit 3, threshold 0.01, and no
// usage feedback (so the store is the same for every query, as in the in-process benchmark).
inline nlohmann::json recallParams(const nlohmann::json& q) {
  nlohmann::json files = nlohmann::json::array();
  for (const auto& f : q.value("editedFiles", nlohmann::json::array())) {
    if (files.size() < kMaxRecallFiles) files.push_back(f);
  }
  return {{"query", q.value("query", "")}, {"files", files}, {"limit", 3}, {"threshold", 0.01}, {"mark_used", false}};
}

}  // namespace memq::bench
