// A second user for the tests of what memqd does with files and sockets of another uid: created with useradd when
// the tests run as root, removed when it goes out of scope. Its name carries the test process's pid, so tests run
// at once by `ctest -j` (each its own process) never share one, nor remove one another's.
#pragma once

#include <pwd.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <optional>
#include <string>
#include <thread>

namespace memq::testing {

class OtherUser {
 public:
  // Empty when not root or when useradd fails (the caller skips). `tag` tells the suites' users apart.
  static std::optional<OtherUser> create(const std::string& tag) {
    if (::geteuid() != 0) return std::nullopt;
    std::string name = "mq" + tag + std::to_string(::getpid() % 100000);
    // useradd fails while another process holds /etc/passwd's lock (tests run in parallel): try again for a while.
    for (int attempt = 0; attempt < 50; ++attempt) {
      if (::getpwnam(name.c_str()) != nullptr ||
          std::system(("useradd -M -N -s /usr/sbin/nologin " + name + " >/dev/null 2>&1").c_str()) == 0) {
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    const passwd* pw = ::getpwnam(name.c_str());
    if (pw == nullptr) return std::nullopt;
    return OtherUser(std::move(name), pw->pw_uid, pw->pw_gid);
  }

  OtherUser(OtherUser&& other) noexcept : name_(std::move(other.name_)), uid_(other.uid_), gid_(other.gid_) {
    other.name_.clear();
  }
  OtherUser& operator=(OtherUser&&) = delete;
  OtherUser(const OtherUser&) = delete;
  ~OtherUser() {
    // A user left behind only clutters /etc/passwd; the next run's pid names another.
    if (!name_.empty() && std::system(("userdel " + name_ + " >/dev/null 2>&1").c_str()) != 0) return;
  }

  const std::string& name() const { return name_; }
  uid_t uid() const { return uid_; }
  gid_t gid() const { return gid_; }

 private:
  OtherUser(std::string name, uid_t uid, gid_t gid) : name_(std::move(name)), uid_(uid), gid_(gid) {}

  std::string name_;
  uid_t uid_;
  gid_t gid_;
};

}  // namespace memq::testing
