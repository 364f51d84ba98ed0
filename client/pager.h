// The pager for long human output, as git does it: on a terminal, stdout goes through $MEMQ_PAGER, else $PAGER,
// else `less -FRX` (LESS=FRX when LESS is unset: quit when it fits, keep colours, leave the screen as it was).
// An empty pager or `cat` means none; --no-pager, --json and a stdout that is not a terminal mean none.
// The pager runs in memq's process group, so Ctrl-C on the terminal reaches both: while it runs, memq ignores SIGINT
// and SIGQUIT (as git does) and waits for it, so the pager, which decides what Ctrl-C means, is never left holding
// the terminal after memq has gone.
#pragma once

#include <signal.h>
#include <sys/types.h>

#include <string>

namespace memq::cli {

class Pager {
 public:
  // Starts the pager when `wanted` and stdout is a terminal; otherwise does nothing. The default pager, `less`, is
  // used only when it is installed (a minimal system may lack it): without it the output goes to the terminal.
  explicit Pager(bool wanted);
  // Flushes stdout, closes the pager's input, waits for it to exit and restores SIGINT and SIGQUIT. Returns false,
  // having said so on stderr, when the pager could not be run (its shell answered 126 or 127: not found, not
  // executable), so the output was lost. Once; the destructor calls it when nobody did.
  bool finish();
  ~Pager();
  Pager(const Pager&) = delete;
  Pager& operator=(const Pager&) = delete;

 private:
  pid_t pid_ = -1;
  std::string command_;  // the pager's command line, for the message when it could not be run
  // SIGINT's and SIGQUIT's dispositions before the pager started, put back once it has exited.
  struct sigaction interruptBefore_ {};
  struct sigaction quitBefore_ {};
};

}  // namespace memq::cli
