// The pager for long human output; see pager.h.
#include "client/pager.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <string>

namespace memq::cli {

Pager::Pager(bool wanted) {
  if (!wanted || !::isatty(1)) return;
  const char* env = std::getenv("MEMQ_PAGER");
  if (!env) env = std::getenv("PAGER");
  std::string pager = env ? env : "less";
  if (pager.empty() || pager == "cat") return;
  int fds[2];
  if (::pipe(fds) != 0) return;
  std::cout.flush();
  pid_t pid = ::fork();
  if (pid < 0) {
    ::close(fds[0]);
    ::close(fds[1]);
    return;
  }
  if (pid == 0) {
    ::dup2(fds[0], 0);
    ::close(fds[0]);
    ::close(fds[1]);
    ::setenv("LESS", "FRX", 0);
    ::execl("/bin/sh", "sh", "-c", pager.c_str(), static_cast<char*>(nullptr));
    std::_Exit(127);
  }
  ::close(fds[0]);
  ::dup2(fds[1], 1);
  ::close(fds[1]);
  // A pager the user quits early closes the pipe: the rest of the output is dropped, not a crash.
  ::signal(SIGPIPE, SIG_IGN);
  // Ctrl-C and Ctrl-\ are the pager's now (less stops a search with them): ignored here, or memq would die and
  // leave the pager on the terminal with the shell. Set in this process only: the pager started with the defaults.
  struct sigaction ignore {};
  ignore.sa_handler = SIG_IGN;
  ::sigemptyset(&ignore.sa_mask);
  ::sigaction(SIGINT, &ignore, &interruptBefore_);
  ::sigaction(SIGQUIT, &ignore, &quitBefore_);
  pid_ = pid;
}

Pager::~Pager() {
  if (pid_ < 0) return;
  std::cout.flush();
  std::fflush(stdout);
  ::close(1);
  // What the pager did with the output is its own business: one the user quit early refused the rest (EPIPE), which
  // is not a failure of the command.
  std::cout.clear();
  int status = 0;
  while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
  }
  ::sigaction(SIGINT, &interruptBefore_, nullptr);
  ::sigaction(SIGQUIT, &quitBefore_, nullptr);
}

}  // namespace memq::cli
