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

namespace {

// Whether `name` is an executable in one of $PATH's directories.
bool onPath(const std::string& name) {
  const char* path = std::getenv("PATH");
  if (path == nullptr) return false;
  std::string dirs = path;
  for (size_t start = 0; start <= dirs.size();) {
    size_t end = dirs.find(':', start);
    if (end == std::string::npos) end = dirs.size();
    const std::string dir = end > start ? dirs.substr(start, end - start) : ".";
    if (::access((dir + "/" + name).c_str(), X_OK) == 0) return true;
    start = end + 1;
  }
  return false;
}

}  // namespace

Pager::Pager(bool wanted) {
  if (!wanted || !::isatty(1)) return;
  const char* env = std::getenv("MEMQ_PAGER");
  if (!env) env = std::getenv("PAGER");
  std::string pager = env ? env : "less";
  if (pager.empty() || pager == "cat") return;
  if (!env && !onPath("less")) return;  // no pager asked for, and the default is not installed
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
  command_ = pager;
}

bool Pager::finish() {
  if (pid_ < 0) return true;
  std::cout.flush();
  std::fflush(stdout);
  ::close(1);
  // What the pager did with the output is its own business: one the user quit early refused the rest (EPIPE), which
  // is not a failure of the command.
  std::cout.clear();
  int status = 0;
  while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
  }
  pid_ = -1;
  ::sigaction(SIGINT, &interruptBefore_, nullptr);
  ::sigaction(SIGQUIT, &quitBefore_, nullptr);
  // The shell's answer for a command it could not find (127) or run (126): nothing was shown.
  if (WIFEXITED(status) && (WEXITSTATUS(status) == 126 || WEXITSTATUS(status) == 127)) {
    std::cerr << "memq: the pager '" << command_ << "' could not be run (exit " << WEXITSTATUS(status)
              << "); set MEMQ_PAGER=cat or pass --no-pager\n";
    return false;
  }
  return true;
}

Pager::~Pager() { (void)finish(); }

}  // namespace memq::cli
