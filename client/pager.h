// The pager for long human output, as git does it: on a terminal, stdout goes through $MEMQ_PAGER, else $PAGER,
// else `less -FRX` (LESS=FRX when LESS is unset: quit when it fits, keep colours, leave the screen as it was).
// An empty pager or `cat` means none; --no-pager, --json and a stdout that is not a terminal mean none.
// The pager runs in memq's process group, so Ctrl-C on the terminal reaches both: while it runs, memq ignores SIGINT
// and SIGQUIT (as git does) and waits for it, so the pager, which decides what Ctrl-C means, is never left holding
// the terminal after memq has gone.
#pragma once

#include <signal.h>
#include <sys/types.h>

namespace memq::cli {

class Pager {
 public:
  // Starts the pager when `wanted` and stdout is a terminal; otherwise does nothing.
  explicit Pager(bool wanted);
  // Flushes stdout, closes the pager's input, waits for it to exit and restores SIGINT and SIGQUIT.
  ~Pager();
  Pager(const Pager&) = delete;
  Pager& operator=(const Pager&) = delete;

 private:
  pid_t pid_ = -1;
  // SIGINT's and SIGQUIT's dispositions before the pager started, put back once it has exited.
  struct sigaction interruptBefore_ {};
  struct sigaction quitBefore_ {};
};

}  // namespace memq::cli
