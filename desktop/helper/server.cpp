#include "server.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <string>
#include <vector>

#include "display.hpp"

namespace mayura::desktop {
namespace {

constexpr int kExecFailed = 127;
constexpr auto kStartBound = std::chrono::seconds(20);

[[noreturn]] void run_xvfb(long width, long height, int ready) {
  ::setsid();
  const int null = ::open("/dev/null", O_RDWR);
  if (null >= 0) {
    ::dup2(null, 0);
    ::dup2(null, 1);
    ::dup2(null, 2);
  }
  const std::string screen = std::to_string(width) + "x" + std::to_string(height) + "x24";
  const std::string fd = std::to_string(ready);
  // -noreset: an X server resets itself whenever its last client leaves,
  // which costs some 50 ms (the keymap compiled again) and lands on the next
  // action, since each action is a client that comes and goes.
  std::vector<std::string> args{"Xvfb", ":0", "-screen", "0", screen, "-nolisten", "tcp", "-noreset", "-displayfd", fd};
  std::vector<char*> argv;
  argv.reserve(args.size() + 1);
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  ::execvp("Xvfb", argv.data());
  ::_exit(errno == ENOENT || errno == EACCES ? kExecFailed : kExecFailed - 1);
}

}  // namespace

void start_server(long width, long height) {
  // Where X puts its socket: the sandbox's own /tmp. Xvfb, not being root,
  // would not make it (and listen on the abstract socket only).
  if (::mkdir("/tmp/.X11-unix", 01777) == 0 || errno == EEXIST) ::chmod("/tmp/.X11-unix", 01777);
  int pipe_fds[2];
  if (::pipe2(pipe_fds, O_CLOEXEC) != 0) throw Failure{kFailed, "no pipe for the X server's start"};
  const pid_t pid = ::fork();
  if (pid < 0) throw Failure{kFailed, "cannot fork the X server"};
  if (pid == 0) {
    // Xvfb writes its display number here once it takes connections.
    const int ready = ::fcntl(pipe_fds[1], F_DUPFD, 3);
    run_xvfb(width, height, ready);
  }
  ::close(pipe_fds[1]);
  std::string number;
  const auto until = std::chrono::steady_clock::now() + kStartBound;
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(until - std::chrono::steady_clock::now());
    pollfd p{pipe_fds[0], POLLIN, 0};
    if (left.count() <= 0 || ::poll(&p, 1, static_cast<int>(left.count())) == 0) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, nullptr, 0);
      throw Failure{kFailed, "the X server did not start within 20 s"};
    }
    char c = 0;
    const ssize_t n = ::read(pipe_fds[0], &c, 1);
    if (n < 0 && errno == EINTR) continue;
    if (n == 1 && c != '\n') {
      number += c;
      continue;
    }
    break;
  }
  ::close(pipe_fds[0]);
  if (!number.empty()) return;  // it runs on, the sandbox's init its parent once we are gone
  int status = 0;
  ::waitpid(pid, &status, 0);
  if (WIFEXITED(status) && WEXITSTATUS(status) == kExecFailed) throw Failure{kNoServer, "the image has no Xvfb"};
  throw Failure{kFailed, "the X server ended as it started (status " + std::to_string(status) + ")"};
}

}  // namespace mayura::desktop
