// Human output; see render.h.
#include "client/render.h"

#include <cstdio>

namespace memq::cli {

namespace {

std::string text(const nlohmann::json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : "";
}

std::string pad(std::string s, size_t width) {
  if (s.size() < width) s.append(width - s.size(), ' ');
  return s;
}

}  // namespace

std::string fileRefText(const nlohmann::json& f) {
  if (f.is_string()) return f.get<std::string>();
  std::string out = text(f, "path");
  std::string lines;
  for (const auto& r : f.value("lines", nlohmann::json::array())) {
    if (!r.is_array() || r.size() != 2 || !r[0].is_number_unsigned() || !r[1].is_number_unsigned()) continue;
    const auto first = r[0].get<uint64_t>();
    const auto last = r[1].get<uint64_t>();
    lines += (lines.empty() ? "" : ",") + std::to_string(first) + (last != first ? "-" + std::to_string(last) : "");
  }
  return lines.empty() ? out : out + ":" + lines;
}

std::string shortId(const nlohmann::json& memory) { return text(memory, "id").substr(0, 8); }

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
    if (f.is_object()) anchored += (anchored.empty() ? "" : " ") + fileRefText(f);
  }
  if (!anchored.empty()) line += "  " + style.dim(anchored);
  return line;
}

std::string memoryDetail(const nlohmann::json& m, const Style& style) {
  std::string out;
  auto field = [&](const std::string& name, const std::string& value) {
    if (!value.empty()) out += style.dim(pad(name + ":", 14)) + value + "\n";
  };
  field("id", text(m, "id"));
  field("scope", text(m, "scope"));
  field("state", text(m, "state"));
  field("category", text(m, "category").empty() ? "-" : text(m, "category"));
  field("summary", text(m, "summary"));
  field("details", text(m, "details"));
  std::string topics, files;
  for (const auto& t : m.value("topics", nlohmann::json::array())) topics += (topics.empty() ? "" : ", ") + t.get<std::string>();
  for (const auto& f : m.value("files", nlohmann::json::array())) {
    files += (files.empty() ? "" : ", ") + fileRefText(f);
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

std::string hitLine(const nlohmann::json& h, const Style& style) {
  char score[32];
  std::snprintf(score, sizeof score, "%.3f", h.value("score", 0.0));
  std::string signals;
  for (const auto& s : h.value("signals", nlohmann::json::array())) signals += (signals.empty() ? "" : ",") + s.get<std::string>();
  std::string line = memoryLine(h, style) + "  " + style.dim("score " + std::string(score) + " via " + signals);
  if (h.value("stale", false)) line += " " + style.red("(stale)");
  return line;
}

}  // namespace memq::cli
