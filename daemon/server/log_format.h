// Log hygiene for memqd: the formatter that escapes control characters in every log message (so no value a client
// sent — a project_root, a client_name, a method name, an id — can start a forged line, reorder how a line displays
// or drive the reader's terminal), and the rate limit that keeps a repeated failure (accept at the descriptor limit,
// refused connections) to one line a second with a count of what it left out.
// Thread-safety: EscapingFormatter is used under the sink's lock, as any spdlog formatter; LogRateLimit is
// thread-safe.
#pragma once

#include <spdlog/formatter.h>
#include <spdlog/pattern_formatter.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>

#include "daemon/util/thread_annotations.h"

namespace memq {

// `text` with each C0 control character (newline, CR, tab, ESC, ...), DEL and C1 control (U+0080..U+009F, as UTF-8)
// written as a visible escape: \n, \r, \t, else \xNN (\u00NN for C1). So are the invisible characters that change how
// a line displays: the line and paragraph separators U+2028 and U+2029, and the bidirectional controls U+061C,
// U+200E, U+200F, U+202A..U+202E and U+2066..U+2069 (\u2028, \u202e, ...): a client's text could otherwise break a
// line in a viewer, or reorder it to read as another. Every other byte is kept as it is.
std::string escapeControlCharacters(std::string_view text);
// True when escapeControlCharacters would change `text`.
bool needsEscaping(std::string_view text);

// spdlog's default pattern, with the message escaped first. Installed on memqd's logger, so it covers every log
// call of every layer, whoever wrote it.
class EscapingFormatter final : public spdlog::formatter {
 public:
  EscapingFormatter();
  void format(const spdlog::details::log_msg& msg, spdlog::memory_buf_t& dest) override;
  std::unique_ptr<spdlog::formatter> clone() const override;

 private:
  std::unique_ptr<spdlog::pattern_formatter> pattern_;
};

// At most one logged occurrence per interval; the ones in between are counted, and the next logged line reports
// how many were left out.
class LogRateLimit {
 public:
  explicit LogRateLimit(std::chrono::milliseconds interval = std::chrono::seconds(1)) : interval_(interval) {}
  // True when this occurrence is to be logged; then *suppressed is how many were not logged since the last one.
  bool admit(uint64_t* suppressed);

 private:
  Mutex mutex_;
  std::chrono::milliseconds interval_;
  std::chrono::steady_clock::time_point last_ GUARDED_BY(mutex_){};
  bool any_ GUARDED_BY(mutex_) = false;
  uint64_t suppressed_ GUARDED_BY(mutex_) = 0;
};

// " (N similar lines left out)" when n > 0, else "": the tail of a rate-limited log line.
std::string suppressedNote(uint64_t n);

}  // namespace memq
