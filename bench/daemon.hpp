#pragma once
// A mayurad for a benchmark: started with its default settings (and any
// extra ones) on a scratch socket, stopped with SIGTERM when it goes.

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "run_quietly.hpp"

namespace mayura::bench {

inline bool answers(const std::string& socket) {
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::snprintf(addr.sun_path, sizeof addr.sun_path, "%s", socket.c_str());
  const bool ok = ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
  ::close(fd);
  return ok;
}

// A mayurad with its default settings on a scratch socket, until it goes.
class Daemon {
 public:
  // `extra`: more settings, as JSON members ("\"maxSandboxes\": 8").
  explicit Daemon(const std::string& program, const std::string& extra = "") {
    char dir[] = "/tmp/mayura-bench-daemon-XXXXXX";
    if (!mkdtemp(dir)) return;
    ::chmod(dir, 0755);  // a benchmark's clients of other uids reach the socket (its own mode holds)
    dir_ = dir;
    socket_ = dir_ + "/mayurad.sock";
    std::ofstream(dir_ + "/mayurad.json") << R"({"socket": ")" << socket_ << R"(", "maxLifetimeMs": 3600000)"
                                          << (extra.empty() ? "" : ", " + extra) << "}";
    const std::string config = dir_ + "/mayurad.json";
    std::vector<char*> args = {const_cast<char*>(program.c_str()), const_cast<char*>("--config"),
                               const_cast<char*>(config.c_str()), nullptr};
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0);
    if (posix_spawn(&pid_, program.c_str(), &actions, nullptr, args.data(), environ) != 0) pid_ = -1;
    posix_spawn_file_actions_destroy(&actions);
    for (int i = 0; pid_ > 0 && i < 400 && !answers(socket_); ++i) ::usleep(25000);
  }
  ~Daemon() {
    if (pid_ > 0) {
      ::kill(pid_, SIGTERM);
      ::waitpid(pid_, nullptr, 0);
    }
    if (!dir_.empty()) run_quietly({"rm", "-rf", dir_});
  }
  bool up() const { return pid_ > 0 && answers(socket_); }
  std::string url() const { return "unix://" + socket_; }
  pid_t pid() const { return pid_; }
  std::string socket() const { return socket_; }

 private:
  std::string dir_, socket_;
  pid_t pid_ = -1;
};

}  // namespace mayura::bench
