// Helpers shared by the benchmark programs that read the load workload: percentiles of latency samples and
// JSON-lines input read from a shell command (so `xz -dc` can stream the compressed memories file).
#pragma once

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

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

}  // namespace memq::bench
