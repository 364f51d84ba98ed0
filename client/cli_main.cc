// memq: the bundled command-line client. Parses the global options of CLI.md and hands the rest to a subcommand.
#include <unistd.h>

#include <climits>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <string>
#include <vector>

#include "client/commands.h"

namespace {

constexpr const char* kUsage = R"(usage: memq [--json] [--socket PATH] [--project DIR] [--scope project|global] COMMAND [ARGS]

memories:
  save SUMMARY [--details TEXT] [--category pref|decision|gotcha|context] [--topic T]... [--file PATH]...
               [--source user|agent] [--merge-topics]
  get ID                     update ID [--summary S] [--details D] [--category C] [--topic T]... [--file PATH]...
  list [--category C] [--topic T] [--pinned] [--state active|hidden|superseded|rejected|all] [--file PATH] [--limit N]
  search QUERY [--limit N]
  recall [QUERY] [--file PATH]... [--limit N] [--max-chars N] [--ranker default|reference] [--explain]
  hide ID [--reason R]       restore ID       pin ID       unpin ID
  supersede OLD_ID --by NEW_ID
  reject ID --reason R       unreject ID      purge ID --yes
  attach ID PATH...          detach ID PATH...
hints and repository:
  hint TOOL [--file PATH]... [--query Q]
  cochange PATH [--limit N]  blast PATH       refresh
review and data:
  review [clusters|stale|dead]     audit [--id ID] [--limit N]
  export [--state all]       import FILE      import --from-empryo PATH/TO/memory.db
  stats                      status
daemon and integrations:
  daemon start|stop|restart|status [--foreground]
  mcp                        hook claude-code EVENT
  bench retrieval --dataset DIR [--ranker R]...    bench load [--n N]...

exit codes: 0 ok, 1 the daemon answered with an error, 2 usage error, 3 the daemon cannot be reached
)";

std::string absolutePath(const std::string& p) {
  std::error_code ec;
  auto abs = std::filesystem::absolute(p, ec);
  auto canon = std::filesystem::weakly_canonical(abs, ec);
  return (ec ? abs : canon).string();
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  memq::cli::Context ctx;
  ctx.cwd = absolutePath(".");
  bool projectGiven = false;
  size_t i = 0;
  for (; i < args.size(); ++i) {
    const std::string& a = args[i];
    auto value = [&](std::string& out) {
      if (i + 1 >= args.size()) return false;
      out = args[++i];
      return true;
    };
    if (a == "--json") {
      ctx.options.json = true;
    } else if (a == "--socket") {
      if (!value(ctx.options.socket)) return memq::cli::usageError("--socket needs a path");
    } else if (a == "--project") {
      if (!value(ctx.options.project)) return memq::cli::usageError("--project needs a directory");
      projectGiven = true;
    } else if (a == "--scope") {
      std::string s;
      if (!value(s) || (s != "project" && s != "global")) return memq::cli::usageError("--scope must be project or global");
      ctx.options.scope = s;
    } else if (a == "--help" || a == "-h" || a == "help") {
      std::cout << kUsage;
      return 0;
    } else if (a == "--version" || a == "version") {
      std::cout << "memq 0.1.0\n";
      return 0;
    } else if (a.rfind("--", 0) == 0) {
      return memq::cli::usageError("unknown option " + a);
    } else {
      break;
    }
  }
  if (i >= args.size()) {
    std::cerr << kUsage;
    return memq::cli::kExitUsage;
  }
  ctx.options.project = absolutePath(projectGiven ? ctx.options.project : ".");
  if (projectGiven && !std::filesystem::is_directory(ctx.options.project)) {
    return memq::cli::usageError("--project " + ctx.options.project + " is not a directory");
  }
  ctx.style.color = !ctx.options.json && ::isatty(1) && std::getenv("NO_COLOR") == nullptr;
  std::string command = args[i];
  std::vector<std::string> words(args.begin() + static_cast<long>(i) + 1, args.end());
  return memq::cli::runCommand(ctx, command, words);
}
