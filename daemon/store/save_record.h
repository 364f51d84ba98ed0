// SaveRecord: one save as the save pipeline applies and journals it — the input with the id and time it was given,
// so a replay writes exactly the rows (and answers with exactly the record) the first application did — and its
// JSON form, the bytes of one save journal record (save_journal.h).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "daemon/model/memory.h"
#include "daemon/model/memory_input.h"

namespace memq {

struct SaveRecord {
  NormalizedSave input;
  std::vector<FileRef> files;
  Actor actor;
  std::string id;    // the id a created memory gets
  std::string at;    // every timestamp the save writes
  uint64_t seq = 0;  // its number in the journal (0: not journalled)

  // Keys in byte order, invalid UTF-8 replaced, as nlohmann's dump writes them.
  std::string toJson() const;
  // Throws on a malformed record (one without a sequence number included).
  static SaveRecord fromJson(const std::string& text);
};

// The journal record that voids save `seq` ({"void":N}: the save failed after it was journalled and its record could
// not be cut from the file; a replay skips it), and the seq a record voids (nullopt for a save's record).
std::string voidRecordText(uint64_t seq);
std::optional<uint64_t> voidedSeq(const std::string& text);

}  // namespace memq
