// memqd: parses the command line (docs/man/memqd.8), sets up logging and the pid file, detaches unless --foreground, and runs
// the server until SIGTERM/SIGINT or daemon/shutdown.
#include <spdlog/sinks/basic_file_sink.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fcntl.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <string>

#include "daemon/embed/hashbag.h"
#include "daemon/git/git_repo_signals.h"
#include "daemon/server/listener.h"
#include "daemon/server/log_format.h"
#include "daemon/server/process_memory.h"
#include "daemon/server/server.h"
#include "daemon/server/version.h"
#include "daemon/store/database.h"
#include "protocol/socket_path.h"

namespace {

constexpr const char* kUsage =
    "usage: memqd [--socket PATH] [--data-dir DIR] [--foreground] [--log-file PATH] [--log-level LEVEL]\n"
    "             [--max-message-bytes N] [--idle-exit SECONDS] [--secrets redact|refuse] [--version]\n"
    "             [--partial-timeout-ms N] [--silent-timeout-ms N] [--max-connections N]\n"
    "             [--max-queued-reply-bytes N] [--max-staged-import-bytes N] [--hot-poll-us N]\n";

std::string defaultDataDir() {
  if (const char* d = std::getenv("MEMQ_DATA_DIR"); d && *d) return d;
  if (const char* x = std::getenv("XDG_DATA_HOME"); x && *x) return std::string(x) + "/memq";
  const char* home = std::getenv("HOME");
  return std::string(home && *home ? home : "/tmp") + "/.local/share/memq";
}

struct Flags {
  std::string socket;
  std::string dataDir;
  bool foreground = false;
  std::string logFile;
  std::string logLevel = "info";
  size_t maxMessageBytes = 1u << 20;
  int idleExit = 0;
  memq::SecretsMode secrets = memq::SecretsMode::kRedact;
  long partialTimeoutMs = 10000;  // a stalled partial message is closed after this
  long silentTimeoutMs = 60000;   // a connection that sends nothing is closed after this
  size_t maxConnections = memq::kDefaultMaxConnections;
  size_t maxQueuedReplyBytes = memq::kDefaultMaxQueuedReplyBytes;
  size_t maxStagedImportBytes = memq::ServiceOptions{}.maxStagedImportBytes;
  size_t hotPollUs = memq::kDefaultHotPoll.count();
};

// A decimal number of at least `minimum`, the whole of `text`.
bool parseCount(const char* text, long long minimum, size_t& out) {
  char* end = nullptr;
  errno = 0;
  long long n = std::strtoll(text, &end, 10);
  if (end == text || *end != '\0' || errno != 0 || n < minimum) return false;
  out = static_cast<size_t>(n);
  return true;
}

bool parseFlags(int argc, char** argv, Flags& f, std::string& error) {
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&](const char* name) -> const char* {
      if (i + 1 >= argc) {
        error = std::string(name) + " needs a value";
        return nullptr;
      }
      return argv[++i];
    };
    const char* v = nullptr;
    if (a == "--socket") {
      if (!(v = value("--socket"))) return false;
      f.socket = v;
    } else if (a == "--data-dir") {
      if (!(v = value("--data-dir"))) return false;
      f.dataDir = v;
    } else if (a == "--foreground") {
      f.foreground = true;
    } else if (a == "--log-file") {
      if (!(v = value("--log-file"))) return false;
      f.logFile = v;
    } else if (a == "--log-level") {
      if (!(v = value("--log-level"))) return false;
      f.logLevel = v;
      // spdlog maps any name it does not know to "off"; a typo must not silently disable the log.
      if (spdlog::level::from_str(f.logLevel) == spdlog::level::off && f.logLevel != "off") {
        error = "--log-level must be trace, debug, info, warn, error, critical or off (got '" + f.logLevel + "')";
        return false;
      }
    } else if (a == "--max-message-bytes") {
      if (!(v = value("--max-message-bytes"))) return false;
      char* end = nullptr;
      long long n = std::strtoll(v, &end, 10);
      if (*end != '\0' || n < 1024) {
        error = "--max-message-bytes must be a number of at least 1024";
        return false;
      }
      f.maxMessageBytes = static_cast<size_t>(n);
    } else if (a == "--idle-exit") {
      if (!(v = value("--idle-exit"))) return false;
      char* end = nullptr;
      long n = std::strtol(v, &end, 10);
      if (*end != '\0' || n < 0) {
        error = "--idle-exit must be a number of seconds";
        return false;
      }
      f.idleExit = static_cast<int>(n);
    } else if (a == "--partial-timeout-ms" || a == "--silent-timeout-ms") {
      if (!(v = value(a.c_str()))) return false;
      char* end = nullptr;
      long n = std::strtol(v, &end, 10);
      if (*end != '\0' || n < 50) {
        error = a + " must be a number of milliseconds, at least 50";
        return false;
      }
      (a == "--partial-timeout-ms" ? f.partialTimeoutMs : f.silentTimeoutMs) = n;
    } else if (a == "--max-connections") {
      if (!(v = value("--max-connections"))) return false;
      if (!parseCount(v, 1, f.maxConnections)) {
        error = "--max-connections must be a number of at least 1";
        return false;
      }
    } else if (a == "--max-queued-reply-bytes") {
      if (!(v = value("--max-queued-reply-bytes"))) return false;
      if (!parseCount(v, 1 << 20, f.maxQueuedReplyBytes)) {
        error = "--max-queued-reply-bytes must be a number of at least 1048576";
        return false;
      }
    } else if (a == "--hot-poll-us") {
      if (!(v = value("--hot-poll-us"))) return false;
      if (!parseCount(v, 0, f.hotPollUs) || f.hotPollUs > 100000) {
        error = "--hot-poll-us must be a number of microseconds from 0 to 100000";
        return false;
      }
    } else if (a == "--max-staged-import-bytes") {
      if (!(v = value("--max-staged-import-bytes"))) return false;
      if (!parseCount(v, 1 << 20, f.maxStagedImportBytes)) {
        error = "--max-staged-import-bytes must be a number of at least 1048576";
        return false;
      }
    } else if (a == "--secrets" || a.rfind("--secrets=", 0) == 0) {
      std::string mode;
      if (a == "--secrets") {
        if (!(v = value("--secrets"))) return false;
        mode = v;
      } else {
        mode = a.substr(10);
      }
      auto parsed = memq::parseSecretsMode(mode);
      if (!parsed) {
        error = "--secrets must be redact or refuse";
        return false;
      }
      f.secrets = *parsed;
    } else {
      error = "unknown option: " + a;
      return false;
    }
  }
  return true;
}

// Detaches from the terminal; the parent exits once the child reports that it is listening (or why it failed).
int daemonize(int& readyFd) {
  int pipeFds[2];
  if (::pipe(pipeFds) != 0) return -1;
  const long parentPid = static_cast<long>(::getpid());
  pid_t pid = ::fork();
  if (pid < 0) return -1;
  if (pid > 0) {
    ::close(pipeFds[1]);
    char buf[512];
    ssize_t n = ::read(pipeFds[0], buf, sizeof buf - 1);
    if (n > 0 && buf[0] == 'O') std::_Exit(0);
    if (n > 1) {
      buf[n] = '\0';
      std::cerr << "memqd: " << (buf + 1) << "\n";
    }
    std::_Exit(1);
  }
  ::close(pipeFds[0]);
  ::setsid();
  // Socket activation names the process systemd started; the descriptors now belong to this child instead.
  const char* listenPid = std::getenv("LISTEN_PID");
  if (listenPid != nullptr && std::atol(listenPid) == parentPid) {
    ::setenv("LISTEN_PID", std::to_string(::getpid()).c_str(), 1);
  }
  readyFd = pipeFds[1];
  return 0;
}

// Raises the soft limit on open files to the hard limit: every connection is a descriptor, and so is each database
// file, its WAL and journal. Returns the soft limit in force afterwards (0 when it cannot be read).
rlim_t raiseOpenFileLimit() {
  struct rlimit lim{};
  if (::getrlimit(RLIMIT_NOFILE, &lim) != 0) return 0;
  if (lim.rlim_cur < lim.rlim_max) {
    struct rlimit raised = lim;
    raised.rlim_cur = lim.rlim_max;
    if (::setrlimit(RLIMIT_NOFILE, &raised) == 0) lim = raised;
  }
  return lim.rlim_cur;
}

// How many connections fit under an open-file limit, leaving room for the databases, the log and the runtime's own
// descriptors (half the limit when it is small).
size_t connectionsThatFit(rlim_t openFiles) {
  if (openFiles == 0 || openFiles == RLIM_INFINITY) return SIZE_MAX;
  const rlim_t reserve = std::min<rlim_t>(128, openFiles / 2);
  return static_cast<size_t>(std::max<rlim_t>(1, openFiles - reserve));
}

// Writes the pid file without following a symbolic link and only into a regular file memqd's user owns: the
// socket's directory may be a shared one such as /tmp, where another user could have planted either.
memq::Status writePidFile(const std::string& path) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) {
    return memq::Status(memq::ErrorCode::kForbidden,
                        "cannot write the pid file " + path + ": " + std::strerror(errno) +
                            (errno == ELOOP ? " (it is a symbolic link; memqd does not follow it)" : ""));
  }
  struct stat st{};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != ::geteuid()) {
    ::close(fd);
    return memq::Status(memq::ErrorCode::kForbidden,
                        "the pid file " + path + " is not a regular file of memqd's user; memqd leaves it alone");
  }
  const std::string text = std::to_string(::getpid()) + "\n";
  const bool written = ::ftruncate(fd, 0) == 0 && ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  ::close(fd);
  if (!written) return memq::Status(memq::ErrorCode::kInternalError, "cannot write the pid file " + path);
  return memq::Status::ok();
}

// Removes the pid file only while it still names this process: the socket went when draining began, so a memqd
// started since (by any client) may have written its own pid there, and `memq daemon stop` trusts that file.
void removePidFileIfOurs(const std::string& path) {
  std::ifstream in(path);
  long pid = 0;
  if (in >> pid && pid == static_cast<long>(::getpid())) ::unlink(path.c_str());
}

void report(int readyFd, bool ok, const std::string& message) {
  if (readyFd < 0) return;
  std::string text = (ok ? "O" : "E") + message;
  (void)!::write(readyFd, text.data(), text.size());
  ::close(readyFd);
}

}  // namespace

int main(int argc, char** argv) {
  // Both before anything else: glibc reads its tunables as the process starts, and an arena limit binds only threads
  // that have no arena yet.
  memq::reexecWithHugePageHeap(argv);
  memq::tuneAllocator();
  // A write to a pipe or socket whose reader is gone must be an error (EPIPE), not the end of memqd: the log on a
  // --foreground stderr piped to a reader that exited, the start report to a parent killed while memqd started.
  std::signal(SIGPIPE, SIG_IGN);
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--help") == 0 || std::strcmp(argv[i], "-h") == 0) {
      std::cout << kUsage;
      return 0;
    }
    if (std::strcmp(argv[i], "--version") == 0) {
      std::cout << "memqd " << memq::kMemqdVersion << "\n";
      return 0;
    }
  }
  Flags flags;
  std::string error;
  if (!parseFlags(argc, argv, flags, error)) {
    std::cerr << "memqd: " << error << "\n" << kUsage;
    return 2;
  }
  if (flags.dataDir.empty()) flags.dataDir = defaultDataDir();
  if (flags.socket.empty()) flags.socket = memq::defaultSocketPath();
  ::umask(0077);

  if (auto st = memq::makePrivateDirectories(flags.dataDir); !st) {
    std::cerr << "memqd: " << st.message() << "\n";
    return 1;
  }
  int readyFd = -1;
  if (!flags.foreground) {
    if (daemonize(readyFd) != 0) {
      std::cerr << "memqd: cannot detach: " << std::strerror(errno) << "\n";
      return 1;
    }
    if (flags.logFile.empty()) flags.logFile = flags.dataDir + "/memqd.log";
  }
  try {
    std::shared_ptr<spdlog::logger> logger;
    if (!flags.logFile.empty()) {
      logger = spdlog::basic_logger_mt("memqd", flags.logFile);
    } else {
      logger = spdlog::stderr_color_mt("memqd");
    }
    // Every message goes through the escaping formatter: values from clients cannot forge lines.
    logger->set_formatter(std::make_unique<memq::EscapingFormatter>());
    logger->set_level(spdlog::level::from_str(flags.logLevel));
    logger->flush_on(spdlog::level::info);
    spdlog::set_default_logger(logger);
  } catch (const std::exception& e) {
    std::string m = std::string("cannot open log: ") + e.what();
    report(readyFd, false, m);
    std::cerr << "memqd: " << m << "\n";
    return 1;
  }
  if (!flags.foreground) {
    // stdin/stdout/stderr go nowhere once detached; the log file is the record.
    int devnull = ::open("/dev/null", O_RDWR);
    if (devnull >= 0) {
      ::dup2(devnull, 0);
      ::dup2(devnull, 1);
      ::dup2(devnull, 2);
      if (devnull > 2) ::close(devnull);
    }
  }

  const rlim_t openFiles = raiseOpenFileLimit();
  size_t maxConnections = flags.maxConnections;
  if (maxConnections > connectionsThatFit(openFiles)) {
    maxConnections = connectionsThatFit(openFiles);
    spdlog::warn("at most {} connections: the open-file limit is {} (asked for {})", maxConnections,
                 static_cast<unsigned long long>(openFiles), flags.maxConnections);
  }

  memq::HashbagEmbedder embedder;
  memq::ServiceOptions so;
  so.dataDir = flags.dataDir;
  so.embedder = &embedder;
  so.secretsMode = flags.secrets;
  so.maxStagedImportBytes = flags.maxStagedImportBytes;
  so.repoFactory = [](const memq::ProjectLocation& loc) -> std::shared_ptr<memq::RepoSignals> {
    return std::make_shared<memq::GitRepoSignals>(loc);
  };
  const std::string pidFile = memq::pidFilePathFor(flags.socket);
  {
    memq::Service service(so);
    memq::ServerOptions opts;
    opts.socketPath = flags.socket;
    opts.maxMessageBytes = flags.maxMessageBytes;
    opts.idleExitSeconds = flags.idleExit;
    opts.partialMessageTimeout = std::chrono::milliseconds(flags.partialTimeoutMs);
    opts.silentConnectionTimeout = std::chrono::milliseconds(flags.silentTimeoutMs);
    opts.maxConnections = maxConnections;
    opts.maxQueuedReplyBytes = flags.maxQueuedReplyBytes;
    opts.hotPoll = std::chrono::microseconds(flags.hotPollUs);
    memq::Server server(opts, service);
    if (auto st = server.listen(); !st) {
      spdlog::error("{}", st.message());
      report(readyFd, false, st.message());
      if (flags.foreground) std::cerr << "memqd: " << st.message() << "\n";
      return 1;
    }
    if (auto st = writePidFile(pidFile); !st) {
      if (!server.fromSystemd()) ::unlink(flags.socket.c_str());
      spdlog::error("{}", st.message());
      report(readyFd, false, st.message());
      if (flags.foreground) std::cerr << "memqd: " << st.message() << "\n";
      return 1;
    }
    report(readyFd, true, "");
    server.run();
  }  // the server, then the service: every database is committed and closed before the pid file goes
  // `memq daemon stop` returns once the pid file is gone: a memqd started right after must find the files closed.
  removePidFileIfOurs(pidFile);
  return 0;
}
