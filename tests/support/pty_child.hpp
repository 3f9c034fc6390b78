#pragma once
// A program on a pseudo-terminal of its own, as a terminal emulator (or
// script, or tmux) runs a shell: the caller holds the master, and the
// program leads a session whose controlling terminal is the slave. For the
// tests and the benchmarks that drive mayura-run -it as a person would.

#include <fcntl.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <unistd.h>

#include <string>
#include <vector>

namespace mayura::testing {

struct PtyChild {
  int master = -1;   // close-on-exec; the caller's to close
  pid_t pid = -1;    // the caller's to reap
  termios before{};  // the terminal's settings before the program could change them
};

// `argv` (a path, or a name looked up in PATH) on a new pty of `rows` by
// `columns`; a master of -1 if the pty could not be made, a pid of -1 if
// the fork failed.
inline PtyChild start_on_pty(std::vector<std::string> argv, int rows, int columns) {
  PtyChild child;
  child.master = ::posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
  if (child.master < 0 || ::grantpt(child.master) != 0 || ::unlockpt(child.master) != 0) return child;
  char name[64];
  if (::ptsname_r(child.master, name, sizeof name) != 0) return child;
  const std::string slave = name;
  winsize w{};
  w.ws_row = static_cast<unsigned short>(rows);
  w.ws_col = static_cast<unsigned short>(columns);
  ::ioctl(child.master, TIOCSWINSZ, &w);
  ::tcgetattr(child.master, &child.before);
  // Made before the fork: the child only calls what is safe after one.
  std::vector<char*> args;
  args.reserve(argv.size() + 1);
  for (std::string& a : argv) args.push_back(a.data());
  args.push_back(nullptr);
  child.pid = ::fork();
  if (child.pid == 0) {
    ::setsid();
    const int fd = ::open(slave.c_str(), O_RDWR);
    if (fd < 0 || ::ioctl(fd, TIOCSCTTY, 0) != 0) ::_exit(126);
    ::dup2(fd, 0);
    ::dup2(fd, 1);
    ::dup2(fd, 2);
    if (fd > 2) ::close(fd);
    ::execvp(args[0], args.data());
    ::_exit(127);
  }
  return child;
}

}  // namespace mayura::testing
