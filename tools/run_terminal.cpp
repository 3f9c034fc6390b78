#include "run_terminal.hpp"

#include <poll.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstdio>
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

// What a crash puts back: one terminal at a time is raw. Written before
// the handlers are installed, read in them.
volatile sig_atomic_t crash_fd = -1;
termios crash_saved{};
constexpr std::array kCrashSignals = {SIGSEGV, SIGBUS, SIGABRT, SIGFPE, SIGILL, SIGQUIT};
// The handlers there were before (a sanitizer's, the default), put back
// after the terminal, so a crash is reported and ends the process as it
// would have.
std::array<struct sigaction, kCrashSignals.size()> crash_before{};

void restore_on_crash(int signo) {
  // Async-signal-safe: tcsetattr is an ioctl, sigaction and raise are safe.
  if (crash_fd >= 0) ::tcsetattr(crash_fd, TCSANOW, &crash_saved);
  for (std::size_t i = 0; i < kCrashSignals.size(); ++i) {
    if (kCrashSignals[i] == signo) ::sigaction(signo, &crash_before[i], nullptr);
  }
  ::raise(signo);
}

void put_back_crash_handlers() {
  for (std::size_t i = 0; i < kCrashSignals.size(); ++i) ::sigaction(kCrashSignals[i], &crash_before[i], nullptr);
  crash_fd = -1;
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
  crash_saved = saved_;
  crash_fd = fd;
  // In place before the terminal is raw: a crash from then on puts it back.
  struct sigaction on_crash {};
  on_crash.sa_handler = restore_on_crash;
  sigemptyset(&on_crash.sa_mask);
  for (std::size_t i = 0; i < kCrashSignals.size(); ++i) {
    ::sigaction(kCrashSignals[i], &on_crash, &crash_before[i]);
  }
  if (::tcsetattr(fd, TCSANOW, &raw) != 0) {
    const int error = errno;
    put_back_crash_handlers();
    fail("tcsetattr", error);
  }
  fd_ = fd;
}

RawTerminal::~RawTerminal() {
  if (fd_ < 0) return;
  // TCSADRAIN: what the command printed last reaches the screen first.
  ::tcsetattr(fd_, TCSADRAIN, &saved_);
  put_back_crash_handlers();
}

WindowChanges::WindowChanges() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGWINCH);
  if (const int e = pthread_sigmask(SIG_BLOCK, &set, nullptr); e != 0) fail("pthread_sigmask", e);
  signals_.reset(::signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK));
  if (!signals_) fail("signalfd", errno);
}

InputPump::InputPump(int input, const WindowChanges* windows, int size_from, int raw)
    : wake_(::eventfd(0, EFD_CLOEXEC)) {
  if (!wake_) fail("eventfd", errno);
  thread_ = OwnedThread("mayura-run-input", [this, input, windows = windows ? windows->fd() : -1, size_from, raw] {
    run(input, windows, size_from, raw);
  });
}

bool InputPump::write_paced(CommandControl& control, const std::string& data) {
  // The engine holds at most 16 MiB of input the command has not read yet
  // (LIMIT_REACHED past it): a reader slower than the input is waited for,
  // a moment at a time, as a pipe's writer waits.
  for (;;) {
    try {
      control.write(data);
      return true;
    } catch (const SandboxError& e) {
      if (e.reason() != Reason::LIMIT_REACHED) throw;
    }
    pollfd wake{wake_.get(), POLLIN, 0};
    if (::poll(&wake, 1, 20) != 0) return false;  // this is being destroyed
  }
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

void InputPump::run(int input, int windows, int size_from, int raw) {
  try {
    pump(input, windows, size_from, raw);
  } catch (const std::exception& e) {
    // The input cannot go on (the command's control refused it): the
    // command runs on, its input closed, and mayura-run says why.
    std::fprintf(stderr, "mayura-run: the input stopped: %s\r\n", e.what());
  }
}

void InputPump::pump(int input, int windows, int size_from, int raw) {
  std::shared_ptr<CommandControl> control;
  {
    std::unique_lock lock(mutex_);
    started_.wait(lock, [this] { return stopping_ || control_; });
    if (stopping_) return;
    control = control_;
  }
  // Raw from the command's start until this ends (after the command has).
  std::optional<RawTerminal> raw_terminal;
  if (raw >= 0) raw_terminal.emplace(raw);
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
      if (!write_paced(*control, std::string(buffer.data(), static_cast<std::size_t>(n)))) return;
    }
  }
}

}  // namespace mayura::tools
