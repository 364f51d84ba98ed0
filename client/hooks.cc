// memq hook claude-code EVENT: reads the hook JSON Claude Code sends on stdin and prints the reply it expects.
//   UserPromptSubmit → recall for the prompt, as additionalContext;
//   PostToolUse for Read/Edit/Write/MultiEdit (tool_input.file_path) and Bash git commands → hints for those files.
// Each run is a new connection, so the hook names the agent session as initialize's `tab`: hint dedup, cooldown and
// budget then span the session's hook runs, and UserPromptSubmit (a real user turn) advances the tab's turn.
// It never blocks the agent: the daemon is not started from here, and past a 500 ms budget it prints nothing and
// exits 0. Any failure is silent (exit 0, no output), because a hook error would interrupt the agent.
#include <iostream>
#include <iterator>
#include <sstream>

#include "client/commands.h"

namespace memq::cli {

namespace {

using json = nlohmann::json;
constexpr auto kBudget = std::chrono::milliseconds(500);

std::string recalledBlock(const json& hits) {
  std::string out = "<recalled_memories>\n";
  for (const auto& h : hits) {
    std::string cat = h.contains("category") && h["category"].is_string() ? h["category"].get<std::string>() : "-";
    out += "[" + cat + "] " + h.value("id", "").substr(0, 8) + " — " + h.value("summary", "");
    if (!h.value("details", "").empty()) out += " ↳ has details (memory_get " + h.value("id", "").substr(0, 8) + ")";
    if (h.value("stale", false)) out += " (files changed since)";
    out += "\n";
  }
  return out + "</recalled_memories>";
}

// "git diff --stat" → "diff"; anything that is not a git command → "". Global options before the subcommand are
// skipped, with the value of those that take one (`git -C dir diff`, `git -c key=value commit`).
std::string gitTool(const std::string& command) {
  std::istringstream in(command);
  std::string word;
  in >> word;
  if (word != "git") return "";
  while (in >> word) {
    if (word == "-C" || word == "-c" || word == "--git-dir" || word == "--work-tree" || word == "--namespace") {
      in >> word;
      continue;
    }
    if (word.empty() || word[0] == '-') continue;
    if (word == "diff" || word == "status" || word == "commit" || word == "show" || word == "log") return word;
    return "shell";
  }
  return "";
}

// A string field of the hook input, or "" when it is absent or not a string (hook input is never trusted).
std::string stringField(const json& object, const char* key) {
  if (!object.is_object()) return "";
  auto it = object.find(key);
  return it != object.end() && it->is_string() ? it->get<std::string>() : "";
}

int hookReply(Context& ctx, const std::string& event) {
  const auto deadline = std::chrono::steady_clock::now() + kBudget;
  auto left = [&] {
    auto d = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    return std::max(d, std::chrono::milliseconds(1));
  };
  std::string input((std::istreambuf_iterator<char>(std::cin)), std::istreambuf_iterator<char>());
  json hook = json::parse(input, nullptr, false);
  if (!hook.is_object()) return kExitOk;
  if (std::string cwd = stringField(hook, "cwd"); !cwd.empty()) {
    ctx.options.project = cwd;
    ctx.cwd = ctx.options.project;
  }
  ctx.options.clientName = "claude-code-hook";
  ctx.options.source = "agent";
  // Claude Code's session id; an over-long one is not a session id memqd would accept, so it is not passed.
  if (std::string session = stringField(hook, "session_id"); session.size() <= 256) ctx.options.tab = session;

  std::string method;
  json params;
  if (event == "UserPromptSubmit") {
    std::string prompt = stringField(hook, "prompt");
    if (prompt.empty()) return kExitOk;
    method = "memory/recall";
    params = {{"query", prompt}, {"limit", 3}};
  } else if (event == "PostToolUse") {
    std::string tool = stringField(hook, "tool_name");
    json input = hook.contains("tool_input") ? hook["tool_input"] : json::object();
    std::string file = stringField(input, "file_path");
    method = "hints/for_tool";
    if (tool == "Read") params = {{"tool", "read"}};
    else if (tool == "Edit" || tool == "MultiEdit") params = {{"tool", "edit"}};
    else if (tool == "Write") params = {{"tool", "write"}};
    else if (tool == "Bash") {
      std::string g = gitTool(stringField(input, "command"));
      if (g.empty()) return kExitOk;
      params = {{"tool", g}};
    } else {
      return kExitOk;
    }
    if (!file.empty()) params["files"] = json::array({fileArgument(ctx, file)});
  } else {
    return kExitOk;  // events memq has nothing to say about
  }
  auto link = DaemonLink::open(ctx.options, /*autostart=*/false, left(), deadline);
  if (!link) return kExitOk;
  if (event == "UserPromptSubmit" && !ctx.options.tab.empty()) {
    // A new user turn: per-turn dedup starts over and the hint cooldown counts one more turn. Sent as a
    // notification, so the prompt costs one round trip: memqd handles it before the recall that follows.
    if (!link->notify("hints/turn", json::object())) return kExitOk;
  }
  auto r = link->call(method, params, left());
  if (!r || std::chrono::steady_clock::now() > deadline) return kExitOk;
  std::string context;
  if (method == "memory/recall") {
    if ((*r)["memories"].empty()) return kExitOk;
    context = recalledBlock((*r)["memories"]);
  } else {
    for (const auto& l : (*r)["lines"]) context += (context.empty() ? "" : "\n") + l.get<std::string>();
    if (context.empty()) return kExitOk;
    context = "memq: " + context;
  }
  json reply = {{"hookSpecificOutput", {{"hookEventName", event}, {"additionalContext", context}}}};
  std::cout << reply.dump(-1, ' ', false, json::error_handler_t::replace) << "\n";
  return kExitOk;
}

}  // namespace

int runHook(Context& ctx, const std::vector<std::string>& words) {
  if (words.size() != 2 || words[0] != "claude-code") return usageError("usage: memq hook claude-code EVENT");
  try {
    return hookReply(ctx, words[1]);
  } catch (const std::exception&) {
    return kExitOk;  // a hook error would interrupt the agent: say nothing instead
  }
}

}  // namespace memq::cli
