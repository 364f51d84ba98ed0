// Human output for the memq CLI: aligned columns, 8-character ids, colour only on a terminal, and terminalText, which
// every piece of text memqd (or a repository, or another client) supplied goes through before it reaches a terminal.
// Also the agent-side counterparts of terminalText: oneLineText and contextBlockText, which memory text goes through
// before it reaches an agent in an MCP tool result or a hook's context block.
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <string_view>

namespace memq::cli {

struct Style {
  bool color = false;
  std::string dim(const std::string& s) const { return color ? "\033[2m" + s + "\033[0m" : s; }
  std::string bold(const std::string& s) const { return color ? "\033[1m" + s + "\033[0m" : s; }
  std::string yellow(const std::string& s) const { return color ? "\033[33m" + s + "\033[0m" : s; }
  std::string red(const std::string& s) const { return color ? "\033[31m" + s + "\033[0m" : s; }
  std::string green(const std::string& s) const { return color ? "\033[32m" + s + "\033[0m" : s; }
};

// What terminalText does with a line break in the text.
enum class LineBreaks {
  kShow,  // shown as `\n`: the text is printed on one line (a summary in a list)
  kKeep,  // kept (CR LF as LF): the text is printed over several lines (a memory's details in `memq get`)
};

// `text` made safe to print on a terminal. memqd stores whatever valid UTF-8 it is given, escape sequences included,
// so a memory saved as `Use pnpm\e]0;pwned\a\e[2J` would retitle the window and clear the screen of whoever lists it.
// The C0 controls (but tab, and line breaks with kKeep), DEL, the C1 controls U+0080-U+009F (U+009B is a CSI of its
// own on some terminals) and bytes that are not UTF-8 are shown as escapes instead: `\x1b`, `\x7f`, `\u009b`, and a
// line break as `\n`.
// Human output only: --json is JSON-escaped, and the MCP and hook replies are JSON for a program.
std::string terminalText(std::string_view text, LineBreaks lineBreaks = LineBreaks::kShow);

// `value` as the --json output prints it: JSON, with the characters a terminal may act on even inside
// a string escaped as \uXXXX although JSON would allow them raw: the C1 controls U+0080-U+009F (U+009B is a CSI of
// its own on some terminals), LINE and PARAGRAPH SEPARATOR, and the bidirectional embeddings, overrides and isolates
// (U+202A-U+202E, U+2066-U+2069), which reorder what is shown. A program reading it gets the same strings.
// `indent` as nlohmann's dump takes it: -1 for one line (an error object on stderr).
std::string jsonText(const nlohmann::json& value, int indent = 2);

// `text` as one line for an agent: memqd's hint rule (daemon/hints/hint_engine.cc, oneLine). Control characters
// (C0, DEL, the C1 controls U+0080-U+009F with NEL U+0085) and LINE and PARAGRAPH SEPARATOR U+2028/U+2029 become a
// space, a run of them one, none at either end. A memory's summary is one line, but memqd stores whatever it is
// given: "x\n[1234abcd] (pinned) Always …" would otherwise show the agent a memory, or a line of its own, that nobody
// saved. Unicode's line breaks count because a renderer (or a model) that honours them sees a second line.
std::string oneLineText(std::string_view text);

// oneLineText for text inside the hooks' `<session_memories>` / `<recalled_memories>` blocks, with every '<' as
// U+FF1C FULLWIDTH LESS-THAN SIGN '＜', so that no memory can close the block (or open another) and speak outside it.
// A look-alike rather than "&lt;": the context is plain text for a model, nothing decodes entities, so "&lt;" would
// reach it as four characters ("a &lt; b") and would need '&' escaped too to stay unambiguous; '＜' still reads as
// "less than", and '>' alone cannot form a tag.
std::string contextBlockText(std::string_view text);

// `text` keeping its lines (CR LF and LF), each through oneLineText, every line after the first behind `indent`: a
// memory's details, which may run over lines, under its entry, where no line of them can pass for an entry.
std::string indentedLines(std::string_view text, const std::string& indent);

// The first 8 characters of a memory's id, through terminalText.
std::string shortId(const nlohmann::json& memory);
// A file ref of a reply: its path, or `path:40-60,72` for an anchored one; as it came (terminalText it to print it).
std::string fileRefText(const nlohmann::json& file);

// The renderers below pass every text of the reply through terminalText.

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
