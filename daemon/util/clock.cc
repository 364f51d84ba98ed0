// ISO-8601 UTC timestamps; see clock.h.
#include "daemon/util/clock.h"

#include <cstdio>
#include <ctime>

namespace memq {

std::string formatIsoUtc(std::chrono::system_clock::time_point t) {
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(t.time_since_epoch()).count();
  std::time_t secs = static_cast<std::time_t>(ms / 1000);
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char buf[40];
  std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
                tm.tm_hour, tm.tm_min, tm.tm_sec, static_cast<int>(ms % 1000));
  return buf;
}

std::string isoNow() { return formatIsoUtc(std::chrono::system_clock::now()); }

int64_t parseIsoUtcMillis(const std::string& iso) {
  std::tm tm{};
  int year, mon, day, hour, min, sec, milli = 0;
  int n = std::sscanf(iso.c_str(), "%d-%d-%dT%d:%d:%d.%dZ", &year, &mon, &day, &hour, &min, &sec, &milli);
  if (n < 6) return -1;
  tm.tm_year = year - 1900;
  tm.tm_mon = mon - 1;
  tm.tm_mday = day;
  tm.tm_hour = hour;
  tm.tm_min = min;
  tm.tm_sec = sec;
  return static_cast<int64_t>(timegm(&tm)) * 1000 + milli;
}

}  // namespace memq
