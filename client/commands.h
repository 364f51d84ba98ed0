// The memq subcommands (docs/man/memq.1). Each takes its own words and returns the process exit code:
// 0 success, 1 the daemon answered with an error, 2 usage error, 3 the daemon cannot be reached or started, 4 a save
// the daemon refused because the text was rejected before (as git exits non-zero when there is nothing to commit).
#pragma once

#include <string>
#include <vector>

#include "client/daemon_link.h"
#include "client/render.h"

namespace memq::cli {

inline constexpr int kExitOk = 0;
inline constexpr int kExitRpcError = 1;
inline constexpr int kExitUsage = 2;
inline constexpr int kExitUnreachable = 3;
inline constexpr int kExitRefused = 4;

struct Context {
  GlobalOptions options;
  Style style;       // for stdout: colour when stdout is a terminal
  Style errorStyle;  // for stderr: colour when stderr is a terminal
  std::string cwd;  // absolute, for resolving file arguments
  bool pager = true;  // false with --no-pager
};

int runCommand(Context& ctx, const std::string& command, const std::vector<std::string>& words);

// Prints an error from the daemon (or the transport) and returns the matching exit code.
int reportError(const Context& ctx, const Status& status);
int usageError(const std::string& message);

// memq mcp, memq hook, memq review, memq import --from-empryo, memq bench live in their own files.
int runMcp(Context& ctx, const std::vector<std::string>& words);
int runHook(Context& ctx, const std::vector<std::string>& words);
int runReview(Context& ctx, const std::vector<std::string>& words);
int runBench(Context& ctx, const std::vector<std::string>& words);
// What an import of a reference memory.db leaves out or changes on the way, for the one line `memq import` prints
// about it.
struct EmpryoRefsLeftOut {
  size_t notInProject = 0;  // absolute, climbing out of the project (`../x`) or naming no file in it: memqd would
                            // refuse them, and with them the whole import
  size_t pastLimit = 0;     // a memory's refs past the 16 memqd keeps
  size_t supersededAsHidden = 0;  // superseded memories whose replacement the database no longer holds: memqd
                                  // refuses a superseded memory that names none, so they come over hidden
};
// Reads a reference (Empryo/SoulForge) memory.db and returns it as memq export JSONL; counts in `leftOut` what it
// leaves out or changes.
Result<std::string> empryoToJsonl(const std::string& path, EmpryoRefsLeftOut& leftOut);

// A file argument as the daemon should see it: absolute when the working directory is inside the project (so
// `cd src && memq recall --file a.ts` means src/a.ts), unchanged (project-relative) otherwise. The project is the
// top of the git work tree holding --project's directory (else that directory), as memqd locates it: `cd lib &&
// memq --project ../docs recall --file a.ts` means lib/a.ts.
std::string fileArgument(const Context& ctx, const std::string& path);

}  // namespace memq::cli
