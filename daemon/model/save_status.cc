// The wire names of SaveStatus; see save_status.h.
#include "daemon/model/save_status.h"

#include <array>
#include <utility>

namespace memq {

namespace {

constexpr std::array<std::pair<SaveStatus, std::string_view>, 6> kNames{{
    {SaveStatus::kCreated, "created"},
    {SaveStatus::kDeduped, "deduped"},
    {SaveStatus::kExistsHidden, "exists_hidden"},
    {SaveStatus::kExistsSuperseded, "exists_superseded"},
    {SaveStatus::kRejected, "rejected"},
    {SaveStatus::kQueued, "queued"},
}};

}  // namespace

const char* toString(SaveStatus status) {
  for (const auto& [value, name] : kNames) {
    if (value == status) return name.data();
  }
  return "created";
}

std::optional<SaveStatus> parseSaveStatus(std::string_view text) {
  for (const auto& [value, name] : kNames) {
    if (name == text) return value;
  }
  return std::nullopt;
}

}  // namespace memq
