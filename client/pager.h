// The pager for long human output, as git does it: on a terminal, stdout goes through $MEMQ_PAGER, else $PAGER,
// else `less -FRX` (LESS=FRX when LESS is unset: quit when it fits, keep colours, leave the screen as it was).
// An empty pager or `cat` means none; --no-pager, --json and a stdout that is not a terminal mean none.
#pragma once

#include <sys/types.h>

namespace memq::cli {

class Pager {
 public:
  // Starts the pager when `wanted` and stdout is a terminal; otherwise does nothing.
  explicit Pager(bool wanted);
  // Flushes stdout, closes the pager's input and waits for it to exit.
  ~Pager();
  Pager(const Pager&) = delete;
  Pager& operator=(const Pager&) = delete;

 private:
  pid_t pid_ = -1;
};

}  // namespace memq::cli
