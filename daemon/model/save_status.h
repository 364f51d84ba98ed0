// SaveStatus: what memory/save did with the text it was given — stored it, found it already stored (deduped), or
// found it blocked by a hidden, superseded or rejected memory. The wire spells them created, deduped, exists_hidden,
// exists_superseded and rejected (docs/protocol.md, memory/save); a team save made while the team server cannot be
// reached is queued (kept in memqd's outbox until the server answers it, docs/team.md).
// Thread-safety: pure functions.
#pragma once

#include <optional>
#include <string_view>

namespace memq {

enum class SaveStatus { kCreated, kDeduped, kExistsHidden, kExistsSuperseded, kRejected, kQueued };

const char* toString(SaveStatus status);
// nullopt for a name that is none of the six.
std::optional<SaveStatus> parseSaveStatus(std::string_view text);

}  // namespace memq
