#include "io.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <ctime>

#include "sys_error.hpp"

namespace mayura::io {

Pipe make_pipe(bool nonblocking_read, bool nonblocking_write) {
  int p[2];
  check_sys(::pipe2(p, O_CLOEXEC), "making a pipe");
  Pipe out{UniqueFd(p[0]), UniqueFd(p[1])};
  if (nonblocking_read) ::fcntl(p[0], F_SETFL, O_NONBLOCK);
  if (nonblocking_write) ::fcntl(p[1], F_SETFL, O_NONBLOCK);
  return out;
}

long write_no_sigpipe(int fd, const char* data, std::size_t size) noexcept {
  sigset_t pipe_only, old;
  sigemptyset(&pipe_only);
  sigaddset(&pipe_only, SIGPIPE);
  sigset_t pending;
  sigpending(&pending);
  const bool was_pending = sigismember(&pending, SIGPIPE);
  pthread_sigmask(SIG_BLOCK, &pipe_only, &old);
  ssize_t n;
  do {
    n = ::write(fd, data, size);
  } while (n < 0 && errno == EINTR);
  const int saved = errno;
  if (n < 0 && saved == EPIPE && !was_pending) {
    // Take the SIGPIPE this write raised, so it is never delivered.
    const timespec zero{0, 0};
    while (sigtimedwait(&pipe_only, nullptr, &zero) < 0 && errno == EINTR) {
    }
  }
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  errno = saved;
  return n;
}

UniqueFd make_eventfd() { return UniqueFd(check_sys(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK), "making an eventfd")); }

void signal_eventfd(int fd) noexcept {
  const std::uint64_t one = 1;
  [[maybe_unused]] ssize_t n = ::write(fd, &one, sizeof one);
}

}  // namespace mayura::io
