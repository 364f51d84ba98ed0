// memqd's version and the protocol version it speaks, as `memqd --version`, initialize and daemon/status report them.
#pragma once

namespace memq {

inline constexpr const char* kMemqdVersion = "0.1.0";
inline constexpr int kProtocolVersion = 1;

}  // namespace memq
