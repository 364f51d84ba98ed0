// ISO-8601 UTC timestamps (daemon/util/clock.h): formatIsoUtc and parseIsoUtcMillis round-trip, the fast path for
// the stored shape agrees with the C library's timegm on every day of four centuries (viaTimegm below is the
// general path written out again on purpose: the oracle must not share the code it checks), other spellings still
// parse, isoUtcDigits orders as the strings do, and isoUtcDigitsToMillis reads those digits as parseIsoUtcMillis reads
// the string.
#include "daemon/util/clock.h"

#include <gtest/gtest.h>

#include <chrono>
#include <ctime>
#include <random>
#include <string>

namespace memq {
namespace {

// What parseIsoUtcMillis computed before it had a fast path: timegm over the fields.
int64_t viaTimegm(int year, int mon, int day, int hour, int min, int sec, int milli) {
  std::tm tm{};
  tm.tm_year = year - 1900;
  tm.tm_mon = mon - 1;
  tm.tm_mday = day;
  tm.tm_hour = hour;
  tm.tm_min = min;
  tm.tm_sec = sec;
  return static_cast<int64_t>(timegm(&tm)) * 1000 + milli;
}

std::string iso(int year, int mon, int day, int hour, int min, int sec, int milli) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", year, mon, day, hour, min, sec, milli);
  return buf;
}

TEST(Clock, FormatThenParseIsTheIdentityToTheMillisecond) {
  std::mt19937_64 rng(7);
  for (int i = 0; i < 20000; ++i) {
    const int64_t ms = static_cast<int64_t>(rng() % 8'000'000'000'000ULL);  // 1970 .. 2223
    const std::string text = formatIsoUtc(std::chrono::system_clock::time_point(std::chrono::milliseconds(ms)));
    ASSERT_EQ(parseIsoUtcMillis(text), ms) << text;
  }
}

TEST(Clock, TheStoredShapeParsesAsTimegmDoesOnEveryDayIncludingLeapDaysAndOverflows) {
  for (int year = 1900; year < 2300; ++year) {
    for (int mon = 1; mon <= 12; ++mon) {
      for (int day = 1; day <= 31; ++day) {  // Feb 30 and Apr 31 roll over exactly as timegm rolls them
        ASSERT_EQ(parseIsoUtcMillis(iso(year, mon, day, 23, 59, 60, 999)), viaTimegm(year, mon, day, 23, 59, 60, 999))
            << iso(year, mon, day, 23, 59, 60, 999);
        ASSERT_EQ(parseIsoUtcMillis(iso(year, mon, day, 0, 0, 0, 0)), viaTimegm(year, mon, day, 0, 0, 0, 0));
      }
    }
  }
}

TEST(Clock, StoredTimestampDigitsOrderAsTheStringsDo) {
  EXPECT_EQ(isoUtcDigits("2026-11-29T18:50:51.007Z"), 20261129185051007);
  std::mt19937_64 rng(11);
  for (int i = 0; i < 5000; ++i) {
    auto at = [&] {
      return formatIsoUtc(std::chrono::system_clock::time_point(
          std::chrono::milliseconds(static_cast<int64_t>(rng() % 8'000'000'000'000ULL))));
    };
    const std::string a = at(), b = at();
    ASSERT_EQ(a < b, isoUtcDigits(a) < isoUtcDigits(b)) << a << " " << b;
  }
  for (const char* other : {"", "2026-11-29T18:50:51Z", "2026-11-29 18:50:51.007Z", "2026-11-29T18:50:51.007+00"}) {
    EXPECT_EQ(isoUtcDigits(other), -1) << other;
  }
}

TEST(Clock, StoredTimestampDigitsGiveTheMillisecondsTheStringDoes) {
  EXPECT_EQ(isoUtcDigitsToMillis(isoUtcDigits("1970-01-01T00:00:00.000Z")), 0);
  EXPECT_EQ(isoUtcDigitsToMillis(20261129185051007), parseIsoUtcMillis("2026-11-29T18:50:51.007Z"));
  std::mt19937_64 rng(13);
  for (int i = 0; i < 20000; ++i) {
    const int64_t ms = static_cast<int64_t>(rng() % 8'000'000'000'000ULL);
    const std::string text = formatIsoUtc(std::chrono::system_clock::time_point(std::chrono::milliseconds(ms)));
    ASSERT_EQ(isoUtcDigitsToMillis(isoUtcDigits(text)), ms) << text;
  }
  // Not digits of a timestamp: no shape (-1), a month, day, hour or minute out of range.
  for (int64_t bad : {int64_t{-1}, int64_t{20261329185051007}, int64_t{20261100185051007}, int64_t{20261129245051007},
                      int64_t{20261129186051007}}) {
    EXPECT_EQ(isoUtcDigitsToMillis(bad), -1) << bad;
  }
}

TEST(Clock, OtherSpellingsTakeTheGeneralPathAndGarbageIsMinusOne) {
  EXPECT_EQ(parseIsoUtcMillis("2026-11-29T18:50:51Z"), viaTimegm(2026, 11, 29, 18, 50, 51, 0));
  EXPECT_EQ(parseIsoUtcMillis("2026-1-2T3:4:5.6Z"), viaTimegm(2026, 1, 2, 3, 4, 5, 6));
  EXPECT_EQ(parseIsoUtcMillis("2026-13-01T00:00:00.000Z"), viaTimegm(2026, 13, 1, 0, 0, 0, 0));
  EXPECT_EQ(parseIsoUtcMillis(""), -1);
  EXPECT_EQ(parseIsoUtcMillis("yesterday"), -1);
  EXPECT_EQ(parseIsoUtcMillis("2026-11-29"), -1);
}

// parseIsoInstant then formatIsoInstant, or "refused".
std::string instant(const std::string& text, IsoTimeForm form) {
  auto parsed = parseIsoInstant(text, form);
  if (!parsed) return "refused";
  return formatIsoInstant(*parsed).value_or("unformattable");
}

TEST(Clock, TheExportFormIsOneExactShapeOfARealDateAndTime) {
  constexpr auto kForm = IsoTimeForm::kTimestamp;
  EXPECT_EQ(instant("2026-11-29T14:33:25.605Z", kForm), "2026-11-29T14:33:25.605Z");
  EXPECT_EQ(instant("2026-11-29T14:33:25Z", kForm), "2026-11-29T14:33:25.000Z");
  EXPECT_EQ(instant("2026-11-29T14:33:25.6059999Z", kForm), "2026-11-29T14:33:25.605Z") << "the fraction is cut";
  EXPECT_EQ(instant("2026-11-29T14:33:25+01:30", kForm), "2026-11-29T13:03:25.000Z");
  EXPECT_EQ(instant("2024-02-29T00:00:00-00:30", kForm), "2024-02-29T00:30:00.000Z");
  for (const char* bad : {"2026-11-29", "2026-11-29T14:33Z", "2026-11-29 14:33:25Z", "2026-11-29T14:33:25",
                          "2026-11-29T14:33:25+0130", "2026-02-29T00:00:00Z", "2026-04-31T00:00:00Z",
                          "2026-11-29T24:00:00Z", "2026-11-29T14:33:25+24:00", "2026-11-29T14:33:25+01:60",
                          "2026-11-29T14:33:25.Z", " 2026-11-29T14:33:25Z"}) {
    EXPECT_EQ(instant(bad, kForm), "refused") << bad;
  }
}

TEST(Clock, TheDateOrDateTimeFormAlsoTakesWhatAPersonTypes) {
  constexpr auto kForm = IsoTimeForm::kDateOrDateTime;
  EXPECT_EQ(instant("2026-11-29", kForm), "2026-11-29T00:00:00.000Z");
  EXPECT_EQ(instant("2026-11-29 14:30", kForm), "2026-11-29T14:30:00.000Z");
  EXPECT_EQ(instant("2026-11-29T14:30:00Z", kForm), "2026-11-29T14:30:00.000Z");
  EXPECT_EQ(instant("2026-11-29T00:30+0100", kForm), "2026-11-28T23:30:00.000Z");
  EXPECT_EQ(instant("2026-11-29T14:33:25.605Z", kForm), "2026-11-29T14:33:25.605Z");
  for (const char* bad : {"2026-11-31", "2026-13-01", "2026-11-29T14", "yesterday", "", "2026-11-29T14:30+25:00"}) {
    EXPECT_EQ(instant(bad, kForm), "refused") << bad;
  }
}

}  // namespace
}  // namespace memq
