// Random UUID v4 text ids for memories.
#pragma once

#include <string>

namespace memq {

// A lowercase UUID v4 ("xxxxxxxx-xxxx-4xxx-yxxx-xxxxxxxxxxxx") from the OS random source.
std::string newUuidV4();

}  // namespace memq
