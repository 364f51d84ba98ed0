// cpuRelax: the pause a thread takes in each turn of a busy wait, so that the core (and a hypervisor watching for
// spins) knows it waits. A no-op where the CPU has no such hint.
#pragma once

namespace memq {

inline void cpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

}  // namespace memq
