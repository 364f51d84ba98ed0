// Each memq command's usage text: `memq COMMAND --help`, `memq help COMMAND` and the usage errors print it, so the
// three always agree. Every argument and option the command's parser takes is named here.
#include "client/usage.h"

#include <map>

namespace memq::cli {

namespace {

const std::map<std::string, std::string>& table() {
  static const std::map<std::string, std::string> usages = {
      {"save",
       "memq save SUMMARY [--details TEXT] [--category pref|decision|gotcha|context] [--topic T]... [--file PATH]...\n"
       "          [--source user|agent] [--merge-topics] [--no-anchor]\n"
       "  Save a memory. Exits 4 when the text was rejected before (the save is refused; --json prints the result).\n"
       "  --file PATH:40-60,72 names lines of the file as it is now. With --tab, a file named without lines (or, with\n"
       "  no --file, the file the tab edited last) is anchored to the lines the tab edited; --no-anchor keeps them out."},
      {"get", "memq get ID\n  One memory in full."},
      {"update",
       "memq update ID [--summary S] [--details D] [--category C] [--topic T]... [--file PATH]...\n"
       "  Replace the fields given."},
      {"list",
       "memq list [--category C] [--topic T] [--pinned] [--state active|hidden|superseded|rejected|all] [--file PATH]\n"
       "          [--limit N] [--offset N]\n"
       "  Pinned first, then the most recently used (50 unless --limit)."},
      {"search", "memq search QUERY... [--limit N] [--ranker default|reference] [--explain]\n  Rank memories by text."},
      {"recall",
       "memq recall [QUERY...] [--file PATH]... [--limit N] [--max-chars N] [--ranker default|reference]\n"
       "            [--threshold X] [--explain] [--no-mark]\n"
       "  The memories that matter for a task and/or files (give a query, a file or both)."},
      {"hide", "memq hide ID [--reason R]\n  Put a memory away for now (memq restore brings it back)."},
      {"restore", "memq restore ID\n  Make a hidden or superseded memory active again."},
      {"pin", "memq pin ID\n  Pin a memory: listed first, opens each session (SessionStart hook)."},
      {"unpin", "memq unpin ID\n  Take the pin off."},
      {"supersede", "memq supersede OLD_ID --by NEW_ID\n  Mark OLD_ID replaced by NEW_ID."},
      {"reject", "memq reject ID --reason R\n  Mark a memory wrong: its text is refused from then on."},
      {"unreject", "memq unreject ID\n  Undo a reject."},
      {"purge", "memq purge ID --yes\n  Delete a memory for good."},
      {"attach", "memq attach ID PATH[:LINES]...\n  Tie a memory to files, or to lines of them (PATH:40-60,72)."},
      {"detach", "memq detach ID PATH...\n  Untie a memory from files."},
      {"hint", "memq hint TOOL [--file PATH]... [--query Q]\n  The hints an agent would get for TOOL on those files."},
      {"cochange", "memq cochange PATH [--limit N]\n  Files that change together with PATH."},
      {"blast", "memq blast PATH\n  Files that depend on PATH."},
      {"refresh", "memq refresh\n  Walk new commits for co-change."},
      {"review", "memq review [clusters|stale|dead]\n  Review memories interactively (a terminal), or --json."},
      {"audit", "memq audit [--id ID] [--limit N] [--since TIME]\n  The audit log."},
      {"export",
       "memq export [--state active|hidden|superseded|rejected|all]\n"
       "  Every readable scope as JSONL on stdout (active memories unless --state)."},
      {"import",
       "memq import FILE|-\n"
       "memq import --from-empryo PATH/TO/memory.db\n"
       "  Import JSONL (from memq export), or a reference memory.db."},
      {"stats", "memq stats\n  Counts and sizes per scope."},
      {"team", "memq team connect CONNINFO | memq team status | memq team disconnect\n  Set up, show or remove the "
               "project's team scope (a PostgreSQL server; CONNINFO without a password)."},
      {"status", "memq status\n  The daemon's state; exits 3 when none runs (it does not start one)."},
      {"daemon", "memq daemon start|stop|restart|status [--foreground]\n  Control memqd."},
      {"mcp", "memq mcp\n  A Model Context Protocol server on stdin/stdout."},
      {"hook", "memq hook claude-code EVENT\n  A Claude Code hook: SessionStart, UserPromptSubmit or PostToolUse."},
      {"bench",
       "memq bench retrieval --dataset DIR [--ranker default|reference]... [--lines] [--limit K] [--max-splits N]\n"
       "                     [--no-semantic] [--keep] [--dump FILE] [--json]\n"
       "memq bench load [--n 1000,10000,100000]... [--clients N] [--dataset DIR] [--json]\n"
       "  Measure retrieval quality or load."},
      {"help", "memq help [COMMAND]\n  This help, or one command's."},
      {"version", "memq version\n  The version."},
  };
  return usages;
}

}  // namespace

std::optional<std::string> commandUsage(const std::string& command) {
  auto it = table().find(command);
  if (it == table().end()) return std::nullopt;
  return "usage: " + it->second + "\n";
}

std::string usageLine(const std::string& command) {
  auto it = table().find(command);
  if (it == table().end()) return "usage: memq " + command;
  return "usage: " + it->second.substr(0, it->second.find('\n'));
}

}  // namespace memq::cli
