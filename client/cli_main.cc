// memq: the bundled command-line client. Parses the global options (before the command, and --json, --no-pager and
// --color after it too), answers help, decides on colour, and hands the rest to a subcommand.
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <filesystem>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include "client/commands.h"
#include "client/render.h"
#include "client/usage.h"
#include "daemon/util/utf8.h"
#include "protocol/error_code.h"

namespace {

constexpr const char* kUsage = R"(usage: memq [--json] [--socket PATH] [--project DIR] [--scope project|global|team] [--tab NAME]
            [--no-pager] [--color [auto|always|never]] COMMAND [ARGS]
       memq help COMMAND | memq COMMAND --help

memories:
  save SUMMARY [--details TEXT] [--category pref|decision|gotcha|context] [--topic T]... [--file PATH]...
               [--source user|agent] [--merge-topics] [--no-anchor]
  get ID                     update ID [--summary S] [--details D] [--category C] [--topic T]... [--file PATH]...
  list [--category C] [--topic T] [--pinned] [--state active|hidden|superseded|rejected|all] [--file PATH]
       [--limit N] [--offset N]
  search QUERY [--limit N] [--ranker R] [--explain]
  recall [QUERY] [--file PATH]... [--limit N] [--max-chars N] [--ranker default|reference] [--threshold X]
         [--explain] [--no-mark]
  hide ID [--reason R]       restore ID       pin ID       unpin ID
  supersede OLD_ID --by NEW_ID
  reject ID --reason R       unreject ID      purge ID --yes
  attach ID PATH...          detach ID PATH...
hints and repository:
  hint TOOL [--file PATH]... [--query Q]
  cochange PATH [--limit N]  blast PATH       refresh
review and data:
  review [clusters|stale|dead]     audit [--id ID] [--limit N] [--since TIME]
  export [--state active|hidden|superseded|rejected|all]
  import FILE (- for stdin)  import --from-empryo PATH/TO/memory.db
  stats                      status
team scope (docs/team.md):
  team connect CONNINFO      team status      team disconnect
daemon and integrations:
  daemon start|stop|restart|status [--foreground]
  mcp                        hook claude-code EVENT
  bench retrieval --dataset DIR [--ranker R]...    bench load [--n N]...

options take --opt VALUE or --opt=VALUE; --json, --no-pager and --color may also follow the command.
exit codes: 0 ok, 1 the daemon answered with an error (or the output could not be written), 2 usage error,
            3 the daemon cannot be reached, 4 a save refused (the text was rejected before)
)";

std::string absolutePath(const std::string& p) {
  std::error_code ec;
  auto abs = std::filesystem::absolute(p, ec);
  auto canon = std::filesystem::weakly_canonical(abs, ec);
  return (ec ? abs : canon).string();
}

// The global options that take a value (`--opt VALUE` or `--opt=VALUE`), with what the value is. The option loop in
// main and runsHook both read this table, so a new option is known to both.
struct ValueOption {
  const char* name;
  const char* value;
};
constexpr ValueOption kValueOptions[] = {
    {"--socket", "a path"}, {"--project", "a directory"}, {"--tab", "a name"}, {"--scope", "project, global or team"}};

const ValueOption* valueOption(const std::string& a) {
  for (const auto& option : kValueOptions) {
    if (a == option.name) return &option;
  }
  return nullptr;
}

// `--color WHEN`: the word after a bare --color is its value only when it is a WHEN (`--color` alone is `always`).
bool isColorWhen(const std::string& word) { return word == "auto" || word == "always" || word == "never"; }

// The options every command takes, wherever they stand: before the command or after it (before a `--`).
// Returns false with a usage error for a bad --color value.
bool takeCommonOption(const std::string& a, const std::vector<std::string>& args, size_t& i,
                      memq::cli::Context& ctx, std::string& colorMode, std::string& error) {
  if (a == "--json") {
    ctx.options.json = true;
  } else if (a == "--no-pager") {
    ctx.pager = false;
  } else if (a == "--color" || a.rfind("--color=", 0) == 0) {
    if (a == "--color") {
      // `--color` alone is `always`, as in git; `--color WHEN` takes the next word when it is a WHEN.
      colorMode = "always";
      if (i + 1 < args.size() && isColorWhen(args[i + 1])) colorMode = args[++i];
    } else {
      colorMode = a.substr(8);
    }
    if (!isColorWhen(colorMode)) {
      error = "--color must be auto, always or never";
      return false;
    }
  } else {
    error.clear();
    return false;
  }
  return true;
}

// Whether the command line runs `memq hook`: its first word that is neither a global option nor an option's value.
// A hook's usage errors must not block the agent (runHook), the global options' included.
bool runsHook(const std::vector<std::string>& args) {
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a.rfind("--", 0) != 0) return a == "hook";
    const bool colorWhen = a == "--color" && i + 1 < args.size() && isColorWhen(args[i + 1]);
    if (valueOption(a) != nullptr || colorWhen) ++i;
  }
  return false;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  memq::cli::Context ctx;
  ctx.cwd = absolutePath(".");
  bool projectGiven = false;
  std::string colorMode = "auto";
  // Claude Code takes exit 2 from a hook as "block": a hook's usage error is said on stderr and exits 0.
  const bool hook = runsHook(args);
  auto usageError = [hook](const std::string& message) {
    const int exitCode = memq::cli::usageError(message);
    return hook ? memq::cli::kExitOk : exitCode;
  };
  // An argument memq sends to memqd must be UTF-8; a path memq only opens itself (the socket, a file to import, a
  // benchmark's dataset) may be any bytes, as file names are.
  auto notUtf8 = [&](size_t k) {
    return usageError("argument " + std::to_string(k + 1) + " (" + memq::cli::terminalText(args[k]) +
                      ") is not UTF-8; memq sends text to memqd as JSON, which holds nothing else");
  };
  std::vector<std::string> globalsGiven;
  size_t i = 0;
  for (; i < args.size(); ++i) {
    std::string a = args[i];
    // `--opt=value` and `--opt value` are the same for every option that takes a value.
    std::optional<std::string> inlineValue;
    if (a.rfind("--", 0) == 0 && a.rfind("--color", 0) != 0) {
      if (auto eq = a.find('='); eq != std::string::npos) {
        inlineValue = a.substr(eq + 1);
        a = a.substr(0, eq);
      }
    }
    auto value = [&](std::string& out) {
      if (inlineValue) {
        out = *inlineValue;
        return true;
      }
      if (i + 1 >= args.size()) return false;
      out = args[++i];
      return true;
    };
    std::string error;
    if (const ValueOption* option = valueOption(a)) {
      std::string v;
      if (!value(v)) return usageError(a + " needs " + option->value);
      if (a != "--socket" && !memq::isValidUtf8(v)) return notUtf8(i);
      // Given twice, one would be dropped without a word: refused, as a command's own options are.
      if (std::find(globalsGiven.begin(), globalsGiven.end(), a) != globalsGiven.end()) {
        return usageError(a + " given twice");
      }
      globalsGiven.push_back(a);
      if (a == "--socket") {
        if (v.empty()) return usageError("--socket needs a path");
        ctx.options.socket = v;
      } else if (a == "--project") {
        if (v.empty()) return usageError("--project needs a directory");
        ctx.options.project = v;
        projectGiven = true;
      } else if (a == "--tab") {
        // The agent session this command acts for (the hooks name it with Claude Code's session id): its hint state
        // and working set, so that a save is anchored to the lines that session edited.
        if (v.empty()) return usageError("--tab needs a name");
        ctx.options.tab = v;
      } else if (a == "--scope") {
        if (v != "project" && v != "global" && v != "team") {
          return usageError("--scope must be project, global or team");
        }
        ctx.options.scope = v;
      }
    } else if (inlineValue && (a == "--json" || a == "--no-pager" || a == "--help" || a == "--version")) {
      return usageError(a + " takes no value");
    } else if (takeCommonOption(a, args, i, ctx, colorMode, error)) {
    } else if (!error.empty()) {
      return usageError(error);
    } else if (a == "--help" || a == "-h" || a == "help") {
      // `memq help COMMAND` is that command's usage.
      if (a == "help" && i + 1 < args.size()) {
        auto usage = memq::cli::commandUsage(args[i + 1]);
        if (!usage) return usageError("unknown command '" + args[i + 1] + "' (see memq --help)");
        std::cout << *usage;
        return 0;
      }
      std::cout << kUsage;
      return 0;
    } else if (a == "--version" || a == "version") {
      std::cout << "memq 0.1.0\n";
      return 0;
    } else if (a.rfind("--", 0) == 0) {
      return usageError("unknown option " + a);
    } else {
      break;
    }
  }
  if (i >= args.size()) {
    std::cerr << kUsage;
    return memq::cli::kExitUsage;
  }
  std::string command = args[i];
  std::vector<std::string> words;
  bool afterDashes = false;
  for (size_t j = i + 1; j < args.size(); ++j) {
    const std::string& w = args[j];
    if (!afterDashes && w == "--") afterDashes = true;
    if (!afterDashes && (w == "--help" || w == "-h")) {
      auto usage = memq::cli::commandUsage(command);
      if (!usage) return usageError("unknown command '" + command + "' (see memq --help)");
      std::cout << *usage;
      return 0;
    }
    const bool sentAsJson = command != "import" && command != "bench" && command != "hook";
    if (afterDashes || command == "hook") {
      if (sentAsJson && !memq::isValidUtf8(w)) return notUtf8(j);
      words.push_back(w);
      continue;
    }
    std::string error;
    if (takeCommonOption(w, args, j, ctx, colorMode, error)) continue;
    if (!error.empty()) return usageError(error);
    if (sentAsJson && !memq::isValidUtf8(w)) return notUtf8(j);
    words.push_back(w);
  }
  ctx.options.project = absolutePath(projectGiven ? ctx.options.project : ".");
  if (projectGiven && !std::filesystem::is_directory(ctx.options.project)) {
    return usageError("--project " + ctx.options.project + " is not a directory");
  }
  // auto: colour on a terminal, unless NO_COLOR is set or the terminal is dumb.
  const char* term = std::getenv("TERM");
  const bool dumb = term && std::string(term) == "dumb";
  auto colorOn = [&](int fd) {
    return !ctx.options.json &&
           (colorMode == "always" || (colorMode == "auto" && ::isatty(fd) && std::getenv("NO_COLOR") == nullptr && !dumb));
  };
  ctx.style.color = colorOn(1);
  ctx.errorStyle.color = colorOn(2);
  int exitCode = memq::cli::kExitOk;
  try {
    exitCode = memq::cli::runCommand(ctx, command, words);
  } catch (const std::exception& e) {
    // A reply this memq cannot read (a field missing or of another type: a memqd of another version) ends the
    // command with its reason, not with an abort; with --json as an error object, as the daemon's errors are.
    const std::string message = std::string("cannot show memqd's answer: ") + e.what();
    if (ctx.options.json) {
      std::cerr << memq::cli::jsonText({{"code", static_cast<int>(memq::ErrorCode::kInternalError)}, {"message", message}},
                                       -1)
                << "\n";
    } else {
      std::cerr << "memq: " << memq::cli::terminalText(message) << "\n";
    }
    return hook ? memq::cli::kExitOk : memq::cli::kExitRpcError;
  }
  // Output that did not reach its file (a full disk, a closed pipe) is a failure, not a success with half a list.
  errno = 0;
  std::cout.flush();
  if (!std::cout && exitCode == memq::cli::kExitOk && !hook) {
    std::cerr << "memq: cannot write the output" << (errno != 0 ? std::string(": ") + std::strerror(errno) : "")
              << "\n";
    return memq::cli::kExitRpcError;
  }
  return exitCode;
}
