// Wall-clock timestamps in the one format memq stores and returns: ISO-8601 UTC with milliseconds ("...T...123Z"),
// and the one reader of the ISO-8601 that clients send (import lines, audit/list's `since`).
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace memq {

std::string formatIsoUtc(std::chrono::system_clock::time_point t);
std::string isoNow();
// Milliseconds since the epoch of an ISO-8601 UTC timestamp written by formatIsoUtc; nullopt-like -1 when unparsable.
int64_t parseIsoUtcMillis(const std::string& iso);
// The 17 digits of a timestamp in formatIsoUtc's exact shape (YYYY-MM-DDTHH:MM:SS.mmmZ) read as one number, so that
// such numbers order as the strings do bytewise; -1 for any other shape.
int64_t isoUtcDigits(std::string_view iso);
// parseIsoUtcMillis of the timestamp whose isoUtcDigits are `digits`, without reading the string again; -1 when
// `digits` is negative or a field is out of range.
int64_t isoUtcDigitsToMillis(int64_t digits);

// How much of ISO-8601 parseIsoInstant accepts.
enum class IsoTimeForm {
  // A point in time as export writes it: YYYY-MM-DDTHH:MM:SS, an optional fraction, then Z or ±HH:MM.
  kTimestamp,
  // A date alone, or a date and a time ('T' or ' ' between, seconds and fraction optional), then optionally Z or an
  // offset (±HH:MM or ±HHMM); without one, UTC.
  kDateOrDateTime,
};

// A UTC instant: seconds since the epoch, and the milliseconds of the fraction (further digits cut off).
struct IsoInstant {
  int64_t seconds = 0;
  int millis = 0;
};

// The instant `text` names; nullopt when it is not in `form` or names no real date and time (31 February, hour 24,
// an offset past 23:59).
std::optional<IsoInstant> parseIsoInstant(std::string_view text, IsoTimeForm form);
// An instant in formatIsoUtc's shape, for any year (no system_clock range: its nanoseconds end in 2262); nullopt when
// the system cannot break the seconds down.
std::optional<std::string> formatIsoInstant(const IsoInstant& instant);

}  // namespace memq
