// SaveRecord: one save as the save pipeline applies and journals it — the input with the id and time it was given,
// so a replay writes exactly the rows (and answers with exactly the record) the first application did — and its
// JSON form, the bytes of one save journal record (save_journal.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "daemon/model/memory.h"
#include "daemon/model/memory_input.h"

namespace memq {

// The bytes base64 gives for `n` bytes (padded): how a kept version travels in a record.
constexpr size_t base64Length(size_t n) { return (n + 2) / 3 * 4; }
// Room in a record for all but the kept versions: its text, topics, paths, anchors, the session and the client's
// name, each as JSON escapes it. All of it came in requests, which memqd bounds at 1 MiB each by default; 4 MiB
// leaves room to spare.
inline constexpr size_t kMaxSaveRecordRestBytes = size_t{4} << 20;
// The largest record a valid save gives: every one of its files (kMaxFiles) anchored in a version memq keeps, of
// at most kMaxAnchoredFileBytes. The
// journal refuses anything longer (SaveJournal::kMaxRecordBytes), so a bound that fell below this would refuse such
// a save every time.
inline constexpr size_t kMaxSaveRecordBytes = kMaxFiles * base64Length(kMaxAnchoredFileBytes) + kMaxSaveRecordRestBytes;

struct SaveRecord {
  NormalizedSave input;
  std::vector<FileRef> files;
  Actor actor;
  std::string id;    // the id a created memory gets
  std::string at;    // every timestamp the save writes
  uint64_t seq = 0;  // its number in the journal (0: not journalled)

  // Keys in byte order, invalid UTF-8 replaced, as nlohmann's dump writes them.
  std::string toJson() const;
  // Throws on a malformed record; on one without a sequence number (an older memq's journal, which counted
  // batches instead) with a message that says to move the journal aside.
  static SaveRecord fromJson(const std::string& text);
};

// The journal record that voids save `seq` ({"void":N}: the save failed after it was journalled and its record could
// not be cut from the file; a replay skips it), and the seq a record voids (nullopt for a save's record).
std::string voidRecordText(uint64_t seq);
std::optional<uint64_t> voidedSeq(const std::string& text);

}  // namespace memq
