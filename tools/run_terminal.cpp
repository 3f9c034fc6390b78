#include "run_terminal.hpp"

#include <poll.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <utility>

namespace mayura::tools {
namespace {

[[noreturn]] void fail(const char* step, int error) {
  throw std::runtime_error(std::string("the caller's terminal: ") + step + ": " + std::strerror(error));
}

// What a crash puts back: one terminal at a time is raw.
int crash_fd = -1;
termios crash_saved{};
constexpr std::array kCrashSignals = {SIGSEGV, SIGBUS, SIGABRT, SIGFPE, SIGILL};

void restore_on_crash(int signo) {
  // Async-signal-safe: tcsetattr is an ioctl. The handler was reset to the
  // default (SA_RESETHAND), so raising again ends the process as the crash
  // would have.
  if (crash_fd >= 0) ::tcsetattr(crash_fd, TCSANOW, &crash_saved);
  ::raise(signo);
}

}  // namespace

std::optional<TerminalSize> terminal_size(int fd) {
  winsize w{};
  if (::ioctl(fd, TIOCGWINSZ, &w) != 0 || w.ws_row == 0 || w.ws_col == 0) return std::nullopt;
  // The contract's bounds (1 to 1000): a larger window is shown in part.
  return TerminalSize{std::min<int>(w.ws_row, 1000), std::min<int>(w.ws_col, 1000)};
}

RawTerminal::RawTerminal(int fd) {
  if (!::isatty(fd) || ::tcgetattr(fd, &saved_) != 0) return;
  termios raw = saved_;
  ::cfmakeraw(&raw);
  crash_fd = fd;
  crash_saved = saved_;
  struct sigaction on_crash {};
  on_crash.sa_handler = restore_on_crash;
  on_crash.sa_flags = SA_RESETHAND;
  sigemptyset(&on_crash.sa_mask);
  for (int s : kCrashSignals) ::sigaction(s, &on_crash, nullptr);
  if (::tcsetattr(fd, TCSANOW, &raw) != 0) fail("tcsetattr", errno);
  fd_ = fd;
}

RawTerminal::~RawTerminal() {
  if (fd_ < 0) return;
  // TCSADRAIN: what the command printed last reaches the screen first.
  ::tcsetattr(fd_, TCSADRAIN, &saved_);
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  sigemptyset(&dfl.sa_mask);
  for (int s : kCrashSignals) ::sigaction(s, &dfl, nullptr);
  crash_fd = -1;
}

WindowChanges::WindowChanges() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGWINCH);
  if (const int e = pthread_sigmask(SIG_BLOCK, &set, nullptr); e != 0) fail("pthread_sigmask", e);
  signals_.reset(::signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK));
  if (!signals_) fail("signalfd", errno);
}

InputPump::InputPump(int input, const WindowChanges* windows, int size_from) : wake_(::eventfd(0, EFD_CLOEXEC)) {
  if (!wake_) fail("eventfd", errno);
  thread_ = OwnedThread("mayura-run-input", [this, input, windows = windows ? windows->fd() : -1, size_from] {
    run(input, windows, size_from);
  });
}

InputPump::~InputPump() {
  {
    const std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  started_.notify_all();
  const std::uint64_t one = 1;
  (void)!::write(wake_.get(), &one, sizeof one);
  thread_.join();
}

void InputPump::start(std::shared_ptr<CommandControl> control) {
  {
    const std::lock_guard lock(mutex_);
    control_ = std::move(control);
  }
  started_.notify_all();
}

void InputPump::run(int input, int windows, int size_from) {
  std::shared_ptr<CommandControl> control;
  {
    std::unique_lock lock(mutex_);
    started_.wait(lock, [this] { return stopping_ || control_; });
    if (stopping_) return;
    control = control_;
  }
  // A window changed between the command's start and now is seen at once.
  if (windows >= 0) {
    if (const auto size = terminal_size(size_from)) control->resize(*size);
  }
  std::array<char, 16384> buffer{};
  for (;;) {
    pollfd fds[3] = {{wake_.get(), POLLIN, 0}, {input, POLLIN, 0}, {windows, POLLIN, 0}};
    if (::poll(fds, 3, -1) < 0) {
      if (errno == EINTR) continue;
      return;
    }
    if (fds[0].revents != 0) return;
    if (fds[2].revents != 0) {
      signalfd_siginfo info{};
      while (::read(windows, &info, sizeof info) == static_cast<ssize_t>(sizeof info)) {
      }
      if (const auto size = terminal_size(size_from)) control->resize(*size);
    }
    if (fds[1].revents != 0) {
      const ssize_t n = ::read(input, buffer.data(), buffer.size());
      if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
      if (n <= 0) {
        // The input's end (or a failure to read it): the command's input
        // ends too; its window changes still count.
        control->close_input();
        input = -1;
        continue;
      }
      control->write(std::string(buffer.data(), static_cast<std::size_t>(n)));
    }
  }
}

}  // namespace mayura::tools
