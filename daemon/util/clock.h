// Wall-clock timestamps in the one format memq stores and returns: ISO-8601 UTC with milliseconds ("...T...123Z").
#pragma once

#include <chrono>
#include <string>

namespace memq {

std::string formatIsoUtc(std::chrono::system_clock::time_point t);
std::string isoNow();
// Milliseconds since the epoch of an ISO-8601 UTC timestamp written by formatIsoUtc; nullopt-like -1 when unparsable.
int64_t parseIsoUtcMillis(const std::string& iso);

}  // namespace memq
