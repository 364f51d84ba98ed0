// The one assertion the fuzz targets use: a violated property aborts, so libFuzzer saves the input as a crash.
#pragma once

#include <cstdio>
#include <cstdlib>

#define MEMQ_FUZZ_CHECK(condition, property)                                                             \
  do {                                                                                                   \
    if (!(condition)) {                                                                                  \
      std::fprintf(stderr, "property violated: %s\n  (%s at %s:%d)\n", property, #condition, __FILE__, \
                   __LINE__);                                                                            \
      std::abort();                                                                                      \
    }                                                                                                    \
  } while (0)
