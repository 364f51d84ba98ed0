// memq bench: the measurements that are part of the product (MEMQ.md §10).
#include <iostream>

#include "client/commands.h"

namespace memq::cli {

int runBench(Context& ctx, const std::vector<std::string>& words) {
  (void)ctx;
  if (words.empty() || (words[0] != "retrieval" && words[0] != "load")) {
    return usageError("usage: memq bench retrieval --dataset DIR [--ranker R]... | memq bench load [--n N]...");
  }
  std::cerr << "memq: bench " << words[0] << " is not available in this build\n";
  return kExitUsage;
}

}  // namespace memq::cli
