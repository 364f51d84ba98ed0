// memq hook claude-code EVENT: reads the hook JSON Claude Code sends on stdin and prints the reply it expects.
//   SessionStart → the session's opening context: the project's pinned memories, then its most used ones, bounded;
//   UserPromptSubmit → recall for the prompt, as additionalContext (with a line "memq: WARNING" for each of the
//   reply's warnings, such as a team scope answered from its local copy);
//   PostToolUse for Read/Edit/Write/MultiEdit (tool_input.file_path), NotebookEdit (tool_input.notebook_path) and
//   Bash git commands (with the files a command names, as in `git diff src/a.ts`) → hints for those files.
// Each run is a new connection, so the hook names the agent session as initialize's `tab`: hint dedup, cooldown and
// budget then span the session's hook runs, and UserPromptSubmit (a real user turn) advances the tab's turn.
// The file tools' hints name the lines the tool touched ({path, lines}), which memqd keeps as the tab's working set
// (docs/agents.md): a Read's offset/limit (a whole-file Read names no lines), where each Edit/MultiEdit new_string
// sits in the file after the edit, a Write's new content; at most kMaxToolLines lines from the first.
// It never blocks the agent: past its budget (500 ms; 3 s for SessionStart, the one event that may start memqd) it
// prints nothing and exits 0. Any failure is silent (exit 0, no output), because a hook error would interrupt the
// agent; an event name Claude Code does not have (a typo, the wrong case) is named on stderr, still with exit 0.
// Every text of a memory (and every warning) reaches the context through contextBlockText (client/render.h): one line,
// no '<', so a memory can neither write lines of its own nor close its block and speak to the agent outside it.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <sstream>

#include "client/commands.h"
#include "daemon/anchors/line_ranges.h"
#include "daemon/model/memory.h"
#include "daemon/model/memory_input.h"

namespace memq::cli {

namespace {

using json = nlohmann::json;
constexpr auto kBudget = std::chrono::milliseconds(500);
// SessionStart runs once per session, before the first prompt, and may have to start memqd (a cold start).
constexpr auto kSessionStartBudget = std::chrono::milliseconds(3000);
// The opening context: at most this many memories and characters (summaries), so it never crowds the window.
constexpr size_t kSessionMemories = 10;
constexpr size_t kSessionChars = 2000;

// Claude Code's hook events. memq answers the first three; the others are accepted and need no answer.
constexpr const char* kAnsweredEvents[] = {"SessionStart", "UserPromptSubmit", "PostToolUse"};
constexpr const char* kQuietEvents[] = {"PreToolUse", "Notification", "Stop", "SubagentStop", "PreCompact", "SessionEnd"};

bool sameIgnoringCase(const std::string& a, const std::string& b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) == std::tolower(static_cast<unsigned char>(y));
         });
}

// The message for an event name that is not one of Claude Code's, or "" when it is one.
std::string unknownEventMessage(const std::string& event) {
  for (const char* e : kAnsweredEvents) if (event == e) return "";
  for (const char* e : kQuietEvents) if (event == e) return "";
  std::string message = "memq: '" + event + "' is not a Claude Code hook event";
  std::string known;
  for (const char* e : kAnsweredEvents) {
    if (sameIgnoringCase(event, e)) return message + " (event names are case-sensitive: " + e + ")";
    known += (known.empty() ? "" : ", ") + std::string(e);
  }
  for (const char* e : kQuietEvents) {
    if (sameIgnoringCase(event, e)) return message + " (event names are case-sensitive: " + e + ")";
  }
  return message + "; memq answers " + known;
}

// A memory's line in a context block: `[category] id8 — summary`, each part through contextBlockText.
std::string blockLine(const json& m) {
  const std::string cat = m.contains("category") && m["category"].is_string() ? m["category"].get<std::string>() : "-";
  return "[" + contextBlockText(cat) + "] " + contextBlockText(m.value("id", "").substr(0, 8)) + " — " +
         contextBlockText(m.value("summary", ""));
}

// The session's opening context from memory/list (pinned first, then most recently used): the pinned ones, then
// the most used, at most kSessionMemories and kSessionChars of summaries.
std::string sessionBlock(const json& memories) {
  std::vector<json> picked(memories.begin(), memories.end());
  std::stable_sort(picked.begin(), picked.end(), [](const json& a, const json& b) {
    const bool pa = a.value("pinned", false), pb = b.value("pinned", false);
    if (pa != pb) return pa;
    return a.value("use_count", 0) > b.value("use_count", 0);
  });
  std::string out;
  size_t chars = 0, count = 0;
  for (const auto& m : picked) {
    if (count == kSessionMemories) break;
    std::string line = blockLine(m);
    if (m.value("pinned", false)) line += " (pinned)";
    if (count > 0 && chars + line.size() > kSessionChars) break;
    chars += line.size();
    ++count;
    out += line + "\n";
  }
  if (out.empty()) return "";
  return "<session_memories>\n" + out + "</session_memories>";
}

std::string recalledBlock(const json& hits) {
  std::string out = "<recalled_memories>\n";
  for (const auto& h : hits) {
    out += blockLine(h);
    if (auto d = h.find("details"); d != h.end() && d->is_string() && !d->get_ref<const std::string&>().empty()) {
      out += " ↳ has details (memory_get " + contextBlockText(h.value("id", "").substr(0, 8)) + ")";
    }
    if (h.value("stale", false)) out += " (files changed since)";
    out += "\n";
  }
  return out + "</recalled_memories>";
}

// What a Bash command means to memq: "git diff --stat" → tool "diff"; anything that is not a git command → tool "".
// Global options before the subcommand are skipped, with the value of those that take one (`git -C dir diff`,
// `git -c key=value commit`). The files: the words after the subcommand that name a file in `cwd` (`git diff
// src/a.ts`, `git log -- a.ts`), so a revision like HEAD~1 is not taken for one; after `-C dir` (each one relative to
// the one before, as git reads them) they are looked for in that directory, and named by their path from `cwd`.
struct GitCommand {
  std::string tool;
  std::vector<std::string> files;
};

GitCommand gitCommand(const std::string& command, const std::string& cwd) {
  std::istringstream in(command);
  std::string word;
  in >> word;
  if (word != "git") return {};
  auto unquoted = [](std::string w) {
    if (w.size() >= 2 && (w.front() == '\'' || w.front() == '"') && w.back() == w.front()) w = w.substr(1, w.size() - 2);
    return w;
  };
  GitCommand g;
  std::filesystem::path base;  // where `-C` points, from cwd (or absolute)
  while (in >> word) {
    if (word == "-C") {
      if (in >> word) base = std::filesystem::path(unquoted(word)).is_absolute() ? std::filesystem::path(unquoted(word))
                                                                                : base / unquoted(word);
      continue;
    }
    if (word == "-c" || word == "--git-dir" || word == "--work-tree" || word == "--namespace") {
      in >> word;
      continue;
    }
    if (word.empty() || word[0] == '-') continue;
    if (word == "diff" || word == "status" || word == "commit" || word == "show" || word == "log") g.tool = word;
    else g.tool = "shell";
    break;
  }
  if (g.tool.empty()) return g;
  while (in >> word && g.files.size() < 16) {
    if (word == "&&" || word == "||" || word == ";" || word == "|") break;  // the next command is not git's
    if (word.empty() || word[0] == '-') continue;
    word = unquoted(word);
    std::error_code ec;
    const std::filesystem::path named =
        std::filesystem::path(word).is_absolute() ? std::filesystem::path(word) : (base / word).lexically_normal();
    const std::filesystem::path p = named.is_absolute() ? named : std::filesystem::path(cwd) / named;
    if (std::filesystem::is_regular_file(p, ec)) g.files.push_back(named.string());
  }
  return g;
}

// A string field of the hook input, or "" when it is absent or not a string (hook input is never trusted).
std::string stringField(const json& object, const char* key) {
  if (!object.is_object()) return "";
  auto it = object.find(key);
  return it != object.end() && it->is_string() ? it->get<std::string>() : "";
}

// A positive integer field of the hook input, or 0.
uint64_t countField(const json& object, const char* key) {
  if (!object.is_object()) return 0;
  auto it = object.find(key);
  return it != object.end() && it->is_number_unsigned() ? it->get<uint64_t>() : 0;
}

// The most lines one tool event names: Read's own default limit. A larger read or write is not where the agent
// works so much as what it looked through.
constexpr uint32_t kMaxToolLines = 2000;
// Files read to place an edit: larger ones are not anchored by memqd either (kMaxAnchoredFileBytes).
constexpr uintmax_t kMaxToolFileBytes = uintmax_t{2} << 20;

// The line the byte at `pos` of `content` is on, 1-based.
uint32_t lineAt(const std::string& content, size_t pos) {
  return 1 + static_cast<uint32_t>(std::count(content.begin(), content.begin() + static_cast<long>(pos), '\n'));
}

uint32_t textLines(const std::string& content) {
  if (content.empty()) return 0;
  return lineAt(content, content.size() - 1);
}

// The file the tool worked on as it is now ("" when unreadable or too large).
std::string toolFile(const std::string& path, const std::string& cwd) {
  std::error_code ec;
  std::filesystem::path p = std::filesystem::path(path).is_absolute() ? std::filesystem::path(path)
                                                                     : std::filesystem::path(cwd) / path;
  if (!std::filesystem::is_regular_file(p, ec) || std::filesystem::file_size(p, ec) > kMaxToolFileBytes || ec) {
    return "";
  }
  std::ifstream in(p, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

// The lines `text` occupies in `content`: every occurrence when `all` (replace_all), else the one occurrence, and
// nothing when it is not there or, without `all`, there more than once (which of them the edit wrote is unknown).
void placeText(const std::string& content, const std::string& text, bool all, LineRanges& out) {
  if (text.empty()) return;  // a deletion leaves no text to find
  std::vector<LineRange> found;
  for (size_t at = content.find(text); at != std::string::npos && found.size() <= kMaxAnchorRanges;
       at = content.find(text, at + text.size())) {
    found.push_back({lineAt(content, at), lineAt(content, at + text.size() - 1)});
  }
  if (found.empty() || (!all && found.size() > 1)) return;
  out.insert(out.end(), found.begin(), found.end());
}

// The lines a file tool touched (see the header); empty when it names none.
LineRanges toolLines(const std::string& tool, const json& input, const std::string& cwd) {
  LineRanges lines;
  if (tool == "Read") {
    const uint64_t offset = countField(input, "offset"), limit = countField(input, "limit");
    if (offset == 0 && limit == 0) return lines;  // the whole file: no lines in particular
    const uint32_t total = textLines(toolFile(stringField(input, "file_path"), cwd));
    const uint64_t first = std::max<uint64_t>(offset, 1);
    const uint64_t count = std::min<uint64_t>(limit ? limit : kMaxToolLines, kMaxToolLines);
    const uint64_t last = std::min<uint64_t>(first + count - 1, total);
    if (first <= last) lines.push_back({static_cast<uint32_t>(first), static_cast<uint32_t>(last)});
  } else if (tool == "Write") {
    const uint32_t total = std::min(textLines(stringField(input, "content")), kMaxToolLines);
    if (total > 0) lines.push_back({1, total});
  } else if (tool == "Edit" || tool == "MultiEdit") {
    const std::string content = toolFile(stringField(input, "file_path"), cwd);
    if (content.empty()) return lines;
    auto place = [&](const json& edit) {
      placeText(content, stringField(edit, "new_string"), edit.is_object() && edit.value("replace_all", false) == true,
                lines);
    };
    if (tool == "Edit") place(input);
    else if (input.contains("edits") && input["edits"].is_array()) for (const auto& e : input["edits"]) place(e);
  }
  lines = normalizeRanges(std::move(lines));
  if (lines.size() > kMaxAnchorRanges) lines.resize(kMaxAnchorRanges);  // what memqd takes of one file
  return lines;
}

int hookReply(Context& ctx, const std::string& event) {
  const bool sessionStart = event == "SessionStart";
  const auto deadline = std::chrono::steady_clock::now() + (sessionStart ? kSessionStartBudget : kBudget);
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
  // SessionStart needs no hint state, and must not touch it: its listing would count as the agent acting on memory
  // this turn, which silences the session's hints until the next prompt (after a compaction, when they matter most).
  if (std::string session = stringField(hook, "session_id"); session.size() <= 256 && !sessionStart) {
    ctx.options.tab = session;
  }

  std::string method;
  json params;
  if (sessionStart) {
    // Pinned first, then the most recently used; sessionBlock keeps the pinned and the most used of those.
    method = "memory/list";
    params = {{"limit", 50}};
  } else if (event == "UserPromptSubmit") {
    std::string prompt = stringField(hook, "prompt");
    if (prompt.empty()) return kExitOk;
    method = "memory/recall";
    // The block holds each memory's summary and only marks its details, so the details must not take recall's
    // character budget (max_chars counts summary and details): a budget no three memories can exceed.
    constexpr int kRecalled = 3;
    params = {{"query", prompt}, {"limit", kRecalled}, {"max_chars", kRecalled * (kMaxSummaryUnits + kMaxDetailsUnits)}};
  } else if (event == "PostToolUse") {
    std::string tool = stringField(hook, "tool_name");
    json input = hook.contains("tool_input") ? hook["tool_input"] : json::object();
    std::vector<std::string> files;
    if (std::string file = stringField(input, "file_path"); !file.empty()) files.push_back(file);
    LineRanges lines = files.empty() ? LineRanges{} : toolLines(tool, input, ctx.cwd);
    method = "hints/for_tool";
    if (tool == "Read") params = {{"tool", "read"}};
    else if (tool == "Edit" || tool == "MultiEdit") params = {{"tool", "edit"}};
    else if (tool == "Write") params = {{"tool", "write"}};
    else if (tool == "NotebookEdit") {
      params = {{"tool", "edit"}};
      files.clear();
      if (std::string nb = stringField(input, "notebook_path"); !nb.empty()) files.push_back(nb);
    } else if (tool == "Bash") {
      GitCommand g = gitCommand(stringField(input, "command"), ctx.cwd);
      if (g.tool.empty()) return kExitOk;
      params = {{"tool", g.tool}};
      files = g.files;
    } else {
      return kExitOk;
    }
    if (!files.empty()) {
      params["files"] = json::array();
      for (const auto& f : files) params["files"].push_back(fileArgument(ctx, f));
      if (!lines.empty()) params["files"][0] = {{"path", params["files"][0]}, {"lines", lineRangesToJson(lines)}};
    }
  } else {
    return kExitOk;  // events memq has nothing to say about
  }
  // Only SessionStart may start memqd: once per session, before the first prompt, with a budget to match.
  auto link = DaemonLink::open(ctx.options, /*autostart=*/sessionStart, left(), deadline);
  if (!link) return kExitOk;
  if (event == "UserPromptSubmit" && !ctx.options.tab.empty()) {
    // A new user turn: per-turn dedup starts over and the hint cooldown counts one more turn. Sent as a
    // notification, so the prompt costs one round trip: memqd handles it before the recall that follows.
    if (!link->notify("hints/turn", json::object())) return kExitOk;
  }
  auto r = link->call(method, params, left());
  if (!r || std::chrono::steady_clock::now() > deadline) return kExitOk;
  std::string context;
  if (sessionStart) {
    context = sessionBlock((*r)["memories"]);
    if (context.empty()) return kExitOk;
  } else if (method == "memory/recall") {
    if ((*r)["memories"].empty()) return kExitOk;
    context = recalledBlock((*r)["memories"]);
    // A recall that may be incomplete (a team scope answered from its local copy) says so, a line each.
    for (const auto& w : r->value("warnings", json::array())) {
      if (w.is_string()) context += "\nmemq: " + contextBlockText(w.get<std::string>());
    }
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
  // A malformed hook command exits 0 too: Claude Code takes exit 2 from a hook as "block" (the prompt erased, the
  // tool refused), so a typo in the settings would stop the agent; stderr is where Claude Code shows why.
  if (words.size() != 2 || words[0] != "claude-code") {
    std::cerr << "memq: usage: memq hook claude-code EVENT\n";
    return kExitOk;
  }
  if (std::string message = unknownEventMessage(words[1]); !message.empty()) {
    // Exit 0 all the same: a hook that fails would interrupt the agent; stderr is where Claude Code shows why.
    std::cerr << message << "\n";
    return kExitOk;
  }
  try {
    return hookReply(ctx, words[1]);
  } catch (const std::exception&) {
    return kExitOk;  // a hook error would interrupt the agent: say nothing instead
  }
}

}  // namespace memq::cli
