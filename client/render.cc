// Human output; see render.h.
#include "client/render.h"

#include <algorithm>
#include <cstdio>
#include <vector>

#include "protocol/utf8_sequence.h"

namespace memq::cli {

std::string terminalText(std::string_view text, LineBreaks lineBreaks) {
  static constexpr char kHexDigits[] = "0123456789abcdef";
  std::string out;
  out.reserve(text.size());
  auto escape = [&](const char* prefix, unsigned char byte) {
    out += prefix;
    out += kHexDigits[byte >> 4];
    out += kHexDigits[byte & 0xf];
  };
  for (size_t i = 0; i < text.size(); ++i) {
    const auto byte = static_cast<unsigned char>(text[i]);
    if (lineBreaks == LineBreaks::kKeep && byte == '\r' && i + 1 < text.size() && text[i + 1] == '\n') continue;
    if (byte == '\t' || (byte == '\n' && lineBreaks == LineBreaks::kKeep)) {
      out += static_cast<char>(byte);
    } else if (byte == '\n') {
      out += "\\n";
    } else if (byte < 0x20 || byte == 0x7f) {
      escape("\\x", byte);
    } else if (byte < 0x80) {
      out += static_cast<char>(byte);
    } else if (size_t bad = 0, n = wellFormedUtf8Length(text, i, bad); n == 0) {
      // Not UTF-8 (a stray byte, or a lead byte without its continuations): a terminal in an 8-bit mode could take
      // 0x80-0x9f for a C1 control, and one in UTF-8 would swallow the bytes after a lone lead byte.
      escape("\\x", byte);
    } else if (byte == 0xc2 && static_cast<unsigned char>(text[i + 1]) <= 0x9f) {
      escape("\\u00", static_cast<unsigned char>(text[++i]));  // a C1 control, U+0080-U+009F
    } else {
      out.append(text.substr(i, n));
      i += n - 1;
    }
  }
  return out;
}

std::string jsonText(const nlohmann::json& value, int indent) {
  const std::string raw = value.dump(indent, ' ', false, nlohmann::json::error_handler_t::replace);
  std::string out;
  out.reserve(raw.size());
  auto escapeAs = [&](unsigned codePoint) {
    char buf[8];
    std::snprintf(buf, sizeof buf, "\\u%04x", codePoint);
    out += buf;
  };
  for (size_t i = 0; i < raw.size(); ++i) {
    const auto byte = static_cast<unsigned char>(raw[i]);
    const auto next = [&](size_t k) { return i + k < raw.size() ? static_cast<unsigned char>(raw[i + k]) : 0u; };
    if (byte == 0xc2 && next(1) >= 0x80 && next(1) <= 0x9f) {  // U+0080-U+009F
      escapeAs(next(1));
      i += 1;
    } else if (byte == 0xe2 && next(1) == 0x80 && next(2) >= 0xa8 && next(2) <= 0xae) {  // U+2028-U+202E
      escapeAs(0x2000 + (next(2) - 0x80));
      i += 2;
    } else if (byte == 0xe2 && next(1) == 0x81 && next(2) >= 0xa6 && next(2) <= 0xa9) {  // U+2066-U+2069
      escapeAs(0x2040 + (next(2) - 0x80));
      i += 2;
    } else {
      out += raw[i];
    }
  }
  return out;
}

std::string oneLineText(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  // Read as UTF-8 bytes; on well-formed UTF-8 this is exactly the code points hint_engine's oneLine tests, and bytes
  // that are not UTF-8 are copied as they are, as oneLine copies them (the JSON writer replaces them later).
  for (size_t i = 0; i < text.size();) {
    const auto byte = static_cast<unsigned char>(text[i]);
    const auto next = [&](size_t k) { return i + k < text.size() ? static_cast<unsigned char>(text[i + k]) : 0; };
    size_t controlBytes = 0;
    if (byte < 0x20 || byte == 0x7f) controlBytes = 1;
    else if (byte == 0xc2 && next(1) >= 0x80 && next(1) <= 0x9f) controlBytes = 2;  // C1, NEL U+0085 among them
    else if (byte == 0xe2 && next(1) == 0x80 && (next(2) == 0xa8 || next(2) == 0xa9)) controlBytes = 3;  // U+2028/9
    if (controlBytes == 0) {
      out += static_cast<char>(byte);
      ++i;
      continue;
    }
    if (!out.empty() && out.back() != ' ') out += ' ';
    i += controlBytes;
  }
  while (!out.empty() && out.back() == ' ') out.pop_back();
  return out;
}

std::string contextBlockText(std::string_view text) {
  static constexpr std::string_view kLessThanLookAlike = "\xef\xbc\x9c";  // U+FF1C, see render.h
  const std::string line = oneLineText(text);
  std::string out;
  out.reserve(line.size());
  for (char c : line) {
    if (c == '<') out += kLessThanLookAlike;
    else out += c;
  }
  return out;
}

std::string indentedLines(std::string_view text, const std::string& indent) {
  std::string out;
  size_t start = 0;
  for (;;) {
    const size_t end = text.find('\n', start);
    std::string_view line = text.substr(start, end == std::string_view::npos ? std::string_view::npos : end - start);
    if (start > 0) out += "\n" + indent;
    out += oneLineText(line);  // a CR of CR LF is a control: dropped at the line's end
    if (end == std::string_view::npos) break;
    start = end + 1;
  }
  return out;
}

namespace {

// Under the field names of memoryDetail, in line with their values.
constexpr size_t kFieldWidth = 14;

// A string field of a reply as it came ("" when absent or not a string).
std::string rawText(const nlohmann::json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : "";
}

// A string field of a reply, to be printed: through terminalText.
std::string text(const nlohmann::json& j, const char* key) { return terminalText(rawText(j, key)); }

std::string pad(std::string s, size_t width) {
  if (s.size() < width) s.append(width - s.size(), ' ');
  return s;
}

// `40-60,72` for a reply's [first, last] pairs.
std::string rangesText(const nlohmann::json& ranges) {
  std::string lines;
  if (!ranges.is_array()) return lines;
  for (const auto& r : ranges) {
    if (!r.is_array() || r.size() != 2 || !r[0].is_number_unsigned() || !r[1].is_number_unsigned()) continue;
    const auto first = r[0].get<uint64_t>();
    const auto last = r[1].get<uint64_t>();
    lines += (lines.empty() ? "" : ",") + std::to_string(first) + (last != first ? "-" + std::to_string(last) : "");
  }
  return lines;
}

}  // namespace

std::string fileRefText(const nlohmann::json& f) {
  if (f.is_string()) return f.get<std::string>();
  std::string out = rawText(f, "path");
  std::string lines = rangesText(f.value("lines", nlohmann::json::array()));
  return lines.empty() ? out : out + ":" + lines;
}

std::string shortId(const nlohmann::json& memory) { return terminalText(rawText(memory, "id").substr(0, 8)); }

std::string memoryLine(const nlohmann::json& m, const Style& style) {
  std::string category = text(m, "category");
  std::string state = text(m, "state");
  std::string line = style.yellow(shortId(m)) + "  " + pad(text(m, "scope"), 7) + "  " +
                     pad(category.empty() ? "-" : category, 8) + "  ";
  if (m.value("pinned", false)) line += "* ";
  if (!state.empty() && state != "active") line += style.dim("[" + state + "] ");
  line += text(m, "summary");
  // Anchored files are shown with their lines; plain ones are for `memq get`.
  std::string anchored;
  for (const auto& f : m.value("files", nlohmann::json::array())) {
    if (f.is_object()) anchored += (anchored.empty() ? "" : " ") + terminalText(fileRefText(f));
  }
  if (!anchored.empty()) line += "  " + style.dim(anchored);
  return line;
}

std::string memoryDetail(const nlohmann::json& m, const Style& style) {
  std::string out;
  auto field = [&](const std::string& name, const std::string& value) {
    if (!value.empty()) out += style.dim(pad(name + ":", kFieldWidth)) + value + "\n";
  };
  field("id", text(m, "id"));
  field("scope", text(m, "scope"));
  field("state", text(m, "state"));
  field("category", text(m, "category").empty() ? "-" : text(m, "category"));
  field("summary", text(m, "summary"));
  // Details may run over several lines: the ones after the first go under it, in line with the other values.
  std::string details = terminalText(rawText(m, "details"), LineBreaks::kKeep);
  for (size_t at = details.find('\n'); at != std::string::npos; at = details.find('\n', at + 1)) {
    details.insert(at + 1, kFieldWidth, ' ');
  }
  field("details", details);
  std::string topics, files;
  for (const auto& t : m.value("topics", nlohmann::json::array())) {
    if (t.is_string()) topics += (topics.empty() ? "" : ", ") + terminalText(t.get<std::string>());
  }
  for (const auto& f : m.value("files", nlohmann::json::array())) {
    files += (files.empty() ? "" : ", ") + terminalText(fileRefText(f));
  }
  field("topics", topics);
  field("files", files);
  field("source", text(m, "source"));
  field("pinned", m.value("pinned", false) ? "yes" : "");
  field("superseded_by", text(m, "superseded_by"));
  field("reason", text(m, "state_reason"));
  field("created", text(m, "created_at"));
  field("updated", text(m, "updated_at"));
  field("last_used", text(m, "last_used_at") + " (used " + std::to_string(m.value("use_count", 0)) + "x)");
  return out;
}

namespace {

// At most this many files of one stale memory are shown; `memq --json review stale` has them all.
constexpr size_t kStaleFilesShown = 5;

// One side of a rewrite or deletion (review/stale's then/now `text`, `more`), each line behind `mark`.
std::string excerptText(const nlohmann::json& side, const std::string& mark, const Style& style, bool removed) {
  const std::string indent(kFieldWidth + 2, ' ');
  std::string out;
  for (const auto& t : side.value("text", nlohmann::json::array())) {
    if (!t.is_string()) continue;
    const std::string line = mark + " " + terminalText(t.get<std::string>());
    out += indent + (removed ? style.red(line) : style.green(line)) + "\n";
  }
  const auto more = side.value("more", uint64_t{0});
  if (more > 0) out += indent + style.dim("… " + std::to_string(more) + " more") + "\n";
  return out;
}

// `src/a.c:40-60 → 44-64 (moved)` after `lead`, and for rewritten or deleted lines the text then (-) and now (+).
std::string anchoredLinesText(const nlohmann::json& a, const std::string& lead, const Style& style) {
  const nlohmann::json none = nlohmann::json::object();
  const nlohmann::json& then = a.contains("then") && a["then"].is_object() ? a["then"] : none;
  const nlohmann::json& now = a.contains("now") && a["now"].is_object() ? a["now"] : none;
  const std::string state = text(a, "state");
  const std::string linesNow = rangesText(now.value("lines", nlohmann::json::array()));
  const bool stale = state == "rewritten" || state == "deleted";
  std::string out = lead + text(a, "path") + ":" + rangesText(then.value("lines", nlohmann::json::array())) +
                    " → " + (linesNow.empty() ? "gone" : linesNow) + " " +
                    (stale ? style.red("(" + state + ")") : style.dim("(" + state + ")")) + "\n";
  if (stale) out += excerptText(then, "-", style, true) + excerptText(now, "+", style, false);
  return out;
}

}  // namespace

std::string staleFilesText(const nlohmann::json& m, const Style& style) {
  std::string out;
  size_t shown = 0, total = 0;
  // The first file goes under the field name, the others below it.
  auto lead = [&]() { return shown == 0 ? style.dim(pad("changes:", kFieldWidth)) : std::string(kFieldWidth, ' '); };
  std::vector<std::string> anchored;
  for (const auto& a : m.value("anchored_lines", nlohmann::json::array())) {
    if (!a.is_object()) continue;
    anchored.push_back(text(a, "path"));
    if (++total > kStaleFilesShown) continue;
    out += anchoredLinesText(a, lead(), style);
    ++shown;
  }
  // A changed file without anchored lines (a plain ref, or lines that could not be carried) changed as a whole.
  for (const auto& f : m.value("changed_files", nlohmann::json::array())) {
    if (!f.is_string()) continue;
    const std::string path = terminalText(f.get<std::string>());
    if (std::find(anchored.begin(), anchored.end(), path) != anchored.end()) continue;
    if (++total > kStaleFilesShown) continue;
    out += lead() + path + " " + style.red("(changed)") + "\n";
    ++shown;
  }
  if (total > shown) out += std::string(kFieldWidth, ' ') + style.dim("+" + std::to_string(total - shown) + " more files") + "\n";
  return out;
}

std::string hitLine(const nlohmann::json& h, const Style& style) {
  char score[32];
  std::snprintf(score, sizeof score, "%.3f", h.value("score", 0.0));
  std::string signals;
  for (const auto& s : h.value("signals", nlohmann::json::array())) {
    if (s.is_string()) signals += (signals.empty() ? "" : ",") + terminalText(s.get<std::string>());
  }
  std::string line = memoryLine(h, style) + "  " + style.dim("score " + std::string(score) + " via " + signals);
  if (h.value("stale", false)) line += " " + style.red("(stale)");
  return line;
}

}  // namespace memq::cli
