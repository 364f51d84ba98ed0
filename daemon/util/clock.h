// Wall-clock timestamps in the one format memq stores and returns: ISO-8601 UTC with milliseconds ("...T...123Z").
#pragma once

#include <chrono>
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

}  // namespace memq
