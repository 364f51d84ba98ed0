// Socket activation (LISTEN_FDS/LISTEN_PID) as systemd does it: the test binds and listens on the socket itself,
// then starts memqd with that socket on fd 3. memqd must serve it, exit when idle (--idle-exit), leave the socket
// file alone, and refuse clearly when fd 3 is not a listening socket. A real memqd, real sockets.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <optional>
#include <thread>

#include "daemon/server/listener.h"
#include "memqd_fixture.h"

namespace memq::testing {
namespace {

using json = nlohmann::json;
using namespace std::chrono_literals;

// A listening Unix socket at `path`, as systemd's memqd.socket creates it (0600). -1 on failure.
int bindAndListen(const std::string& path) {
  int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
  if (fd < 0) return -1;
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strncpy(addr.sun_path, path.c_str(), sizeof addr.sun_path - 1);
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 || ::chmod(path.c_str(), 0600) != 0 ||
      ::listen(fd, 16) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

// Connects once memqd answers (it may still be starting), or gives the last error after `timeout`.
Result<RpcClient> connectWhenUp(const std::string& path, std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (true) {
    auto c = RpcClient::connect(path, 500ms);
    if (c.isOk() || std::chrono::steady_clock::now() > deadline) return c;
    std::this_thread::sleep_for(20ms);
  }
}

ino_t inodeOf(const std::string& path) {
  struct stat st{};
  return ::stat(path.c_str(), &st) == 0 && S_ISSOCK(st.st_mode) ? st.st_ino : 0;
}

// A memqd started the way systemd starts a socket-activated service: `passed` becomes fd 3, LISTEN_FDS=1 and
// LISTEN_PID=<the child's own pid> (known only after fork, so set in the child before exec).
class ActivatedMemqd : public Memqd {
 public:
  ActivatedMemqd(const fs::path& dir, int passed, std::vector<std::string> extra, std::string listenPid = "",
                 bool foreground = true)
      : Memqd(dir, MemqdLaunch{"", std::move(extra),
                               [passed, listenPid] {
                                 if (passed != 3) ::dup2(passed, 3);
                                 ::fcntl(3, F_SETFD, 0);  // survives exec, as systemd's descriptors do
                                 ::setenv("LISTEN_FDS", "1", 1);
                                 ::setenv("LISTEN_PID",
                                          listenPid.empty() ? std::to_string(::getpid()).c_str() : listenPid.c_str(),
                                          1);
                               },
                               foreground, /*captureStderr=*/true}) {
    spawn();
  }
};

class ActivationTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = makeTempDir("act");
    project_ = (dir_ / "proj").string();
    fs::create_directories(project_);
  }
  void TearDown() override {
    if (listenFd_ >= 0) ::close(listenFd_);
    fs::remove_all(dir_);
  }

  fs::path dir_;
  std::string project_;
  int listenFd_ = -1;
};

TEST_F(ActivationTest, ServesThePassedSocketExitsWhenIdleAndLeavesTheSocketToItsOwner) {
  const std::string path = (dir_ / "memqd.sock").string();
  listenFd_ = bindAndListen(path);
  ASSERT_GE(listenFd_, 0) << std::strerror(errno);
  const ino_t inode = inodeOf(path);
  ASSERT_NE(inode, 0u);

  ActivatedMemqd daemon(dir_, listenFd_, {"--idle-exit", "1"});
  // Had memqd ignored LISTEN_FDS it would have found a live socket at its path and exited "already serving".
  auto connected = RpcClient::connect(path, 5s);
  ASSERT_TRUE(connected.isOk()) << connected.status().toString() << daemon.stderrText();
  std::optional<RpcClient> c(std::move(*connected));
  ASSERT_TRUE(c->call("initialize", {{"client_name", "activation"}, {"project_root", project_}}).isOk());
  auto saved = c->call("memory/save", {{"summary", "Socket activation hands memqd its socket on fd 3"}});
  ASSERT_TRUE(saved.isOk()) << saved.status().toString();
  auto got = c->call("memory/get", {{"id", (*saved)["id"]}});
  ASSERT_TRUE(got.isOk()) << got.status().toString();
  EXPECT_EQ((*got)["summary"], "Socket activation hands memqd its socket on fd 3");
  EXPECT_NE(daemon.log().find("(systemd)"), std::string::npos) << daemon.log();

  // An open connection keeps it alive past the idle period; once the last one closes it exits 0 on its own.
  std::this_thread::sleep_for(2500ms);
  EXPECT_TRUE(daemon.running());
  EXPECT_TRUE(c->call("daemon/status", json::object()).isOk());
  c.reset();
  EXPECT_EQ(daemon.waitExit(15s), 0) << daemon.log();
  EXPECT_NE(daemon.log().find("idle"), std::string::npos) << daemon.log();

  // The socket file is the one the test made: not unlinked, not replaced; and it still accepts, as systemd's does.
  EXPECT_EQ(inodeOf(path), inode);
  EXPECT_TRUE(socketIsLive(path));

  // The next activation (same socket, same data) answers the connection that waited in the backlog.
  auto waiting = RpcClient::connect(path, 1s);
  ASSERT_TRUE(waiting.isOk());
  ActivatedMemqd again(dir_, listenFd_, {"--idle-exit", "1"});
  auto list = waiting->call("memory/list", {{"project_root", project_}});
  ASSERT_TRUE(list.isOk()) << list.status().toString() << again.stderrText();
  EXPECT_EQ((*list)["total"], 1);
}

TEST_F(ActivationTest, ADetachingMemqdHandsThePassedSocketToItsChild) {
  // Without --foreground memqd forks and the parent exits; LISTEN_PID named the parent, and the child must still
  // serve the passed socket rather than find it "already served" and give up.
  const std::string path = (dir_ / "memqd.sock").string();
  listenFd_ = bindAndListen(path);
  ASSERT_GE(listenFd_, 0) << std::strerror(errno);
  const ino_t inode = inodeOf(path);
  // The detached child is no Memqd's to stop: should an ASSERT end the test before its daemon/shutdown, the reaper
  // stops it by its pid file.
  const fs::path pidFile = dir_ / "memqd.pid";
  AutostartedMemqdReaper reaper{pidFile};
  ActivatedMemqd launcher(dir_, listenFd_, {}, "", /*foreground=*/false);
  ASSERT_EQ(launcher.waitExit(15s), 0) << launcher.stderrText() << launcher.log();
  auto c = RpcClient::connect(path, 5s);
  ASSERT_TRUE(c.isOk()) << c.status().toString();
  auto status = c->call("daemon/status", json::object());
  ASSERT_TRUE(status.isOk()) << status.status().toString();
  EXPECT_NE(launcher.log().find("(systemd)"), std::string::npos) << launcher.log();
  ASSERT_TRUE(c->call("daemon/shutdown", json::object()).isOk());
  auto deadline = std::chrono::steady_clock::now() + 15s;
  while (fs::exists(pidFile) && std::chrono::steady_clock::now() < deadline) std::this_thread::sleep_for(20ms);
  EXPECT_FALSE(fs::exists(pidFile)) << "the detached memqd did not exit";
  EXPECT_EQ(inodeOf(path), inode);
}

// `memq daemon stop` of a socket-activated memqd: the socket keeps accepting after memqd exits (systemd holds it, and
// would start memqd again at a connection), so stop waits for the process, not for the socket to go quiet.
TEST_F(ActivationTest, DaemonStopStopsAnActivatedMemqdAndSaysTheSocketStays) {
  const std::string path = (dir_ / "memqd.sock").string();
  listenFd_ = bindAndListen(path);
  ASSERT_GE(listenFd_, 0) << std::strerror(errno);
  ActivatedMemqd daemon(dir_, listenFd_, {});
  {
    auto c = connectWhenUp(path, 5s);
    ASSERT_TRUE(c.isOk()) << c.status().toString() << daemon.stderrText();
    auto status = c->call("daemon/status", json::object());
    ASSERT_TRUE(status.isOk()) << status.status().toString();
    EXPECT_EQ((*status)["socket_activated"], true);
  }

  CommandResult stop = daemon.memq("daemon stop");
  EXPECT_EQ(stop.exitCode, 0) << stop.out << stop.err;
  EXPECT_NE(stop.out.find("memqd stopped"), std::string::npos) << stop.out;
  EXPECT_NE(stop.out.find("stays with the service manager"), std::string::npos) << stop.out;
  EXPECT_EQ(daemon.waitExit(1s), 0) << daemon.log();
  EXPECT_TRUE(socketIsLive(path));  // still the owner's, still accepting
}

TEST_F(ActivationTest, ListenFdsWithoutASocketOnFd3IsAClearErrorAndBindsNothing) {
  const std::string notASocket = (dir_ / "plain.txt").string();
  writeTextFile(notASocket, "not a socket\n");
  int fileFd = ::open(notASocket.c_str(), O_RDONLY);
  ASSERT_GE(fileFd, 0);
  ActivatedMemqd daemon(dir_, fileFd, {});
  EXPECT_EQ(daemon.waitExit(10s), 1);
  ::close(fileFd);
  const std::string err = daemon.stderrText();
  EXPECT_NE(err.find("LISTEN_FDS"), std::string::npos) << err;
  EXPECT_NE(err.find("not a socket"), std::string::npos) << err;
  EXPECT_FALSE(fs::exists(daemon.socket())) << "fell back to binding its own socket";

  // A socket that is not listening (one end of a connected pair) is refused the same way.
  int pair[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM, 0, pair), 0);
  ActivatedMemqd connected(dir_, pair[0], {});
  EXPECT_EQ(connected.waitExit(10s), 1);
  ::close(pair[0]);
  ::close(pair[1]);
  EXPECT_NE(connected.stderrText().find("not listening"), std::string::npos) << connected.stderrText();
  EXPECT_FALSE(fs::exists(connected.socket()));
}

TEST_F(ActivationTest, ListenPidOfAnotherProcessIsIgnored) {
  // The variables were inherited, not meant for memqd: it binds its own socket as usual.
  int fileFd = ::open("/dev/null", O_RDONLY);
  ASSERT_GE(fileFd, 0);
  ActivatedMemqd daemon(dir_, fileFd, {}, "1");
  ::close(fileFd);
  auto c = connectWhenUp(daemon.socket(), 5s);
  ASSERT_TRUE(c.isOk()) << c.status().toString() << daemon.stderrText();
  EXPECT_TRUE(c->call("daemon/status", json::object()).isOk());
  EXPECT_NE(inodeOf(daemon.socket()), 0u);
}

}  // namespace
}  // namespace memq::testing
