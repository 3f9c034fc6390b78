// The sandbox's ptmx is opened beneath the init's root with openat2: no
// symbolic or magic link is followed (the sandbox owns /dev's entries, and
// /dev/ptmx itself is one), and nothing above that root is reached.

#include "terminal.hpp"

#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <termios.h>
#include <unistd.h>

#include <cerrno>

#include "sys_error.hpp"

namespace mayura::native {

Terminal open_terminal(int root, TerminalSize size) {
  open_how how{};
  how.flags = O_RDWR | O_NOCTTY | O_CLOEXEC | O_NONBLOCK;
  how.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS;
  Terminal t;
  t.master = UniqueFd(static_cast<int>(::syscall(SYS_openat2, root, "dev/pts/ptmx", &how, sizeof how)));
  check_sys(t.master.get(), "opening the sandbox's /dev/pts/ptmx for a terminal");
  int unlock = 0;
  check_sys(::ioctl(t.master.get(), TIOCSPTLCK, &unlock), "unlocking the terminal");
  resize_terminal(t.master.get(), size);
  // The peer through the master itself: no path in the sandbox is looked up.
  t.slave = UniqueFd(::ioctl(t.master.get(), TIOCGPTPEER, O_RDWR | O_NOCTTY | O_CLOEXEC));
  check_sys(t.slave.get(), "opening the terminal's command end");
  return t;
}

bool resize_terminal(int master, TerminalSize size) noexcept {
  winsize w{};
  w.ws_row = static_cast<unsigned short>(size.rows);
  w.ws_col = static_cast<unsigned short>(size.columns);
  return ::ioctl(master, TIOCSWINSZ, &w) == 0;
}

}  // namespace mayura::native
