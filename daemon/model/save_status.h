// SaveStatus: what memory/save did with the text it was given — stored it, found it already stored (deduped), or
// found it blocked by a hidden, superseded or rejected memory. The wire spells them created, deduped, exists_hidden,
// exists_superseded and rejected (docs/protocol.md, memory/save).
// Thread-safety: pure functions.
#pragma once

#include <optional>
#include <string_view>

namespace memq {

enum class SaveStatus { kCreated, kDeduped, kExistsHidden, kExistsSuperseded, kRejected };

const char* toString(SaveStatus status);
// nullopt for a name that is none of the five.
std::optional<SaveStatus> parseSaveStatus(std::string_view text);

}  // namespace memq
