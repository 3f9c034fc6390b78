#include "stop_signals.hpp"

#include <poll.h>
#include <sys/eventfd.h>
#include <sys/signalfd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <utility>

namespace mayura::tools {
namespace {

[[noreturn]] void fail(const char* step, int error) {
  throw std::runtime_error(std::string("watching the stop signals: ") + step + ": " + std::strerror(error));
}

}  // namespace

StopSignals::StopSignals(std::initializer_list<int> signals) {
  sigemptyset(&set_);
  for (int s : signals) sigaddset(&set_, s);
  if (const int e = pthread_sigmask(SIG_BLOCK, &set_, nullptr); e != 0) fail("pthread_sigmask", e);
  signals_.reset(::signalfd(-1, &set_, SFD_CLOEXEC | SFD_NONBLOCK));
  if (!signals_) fail("signalfd", errno);
}

SignalWatch::SignalWatch(const StopSignals& signals, std::function<void(int)> on_signal)
    : wake_(::eventfd(0, EFD_CLOEXEC)) {
  if (!wake_) fail("eventfd", errno);
  thread_ = OwnedThread("mayura-signals",
                        [fd = signals.signals_.get(), wake = wake_.get(), on_signal = std::move(on_signal)] {
                          bool told = false;
                          for (;;) {
                            pollfd fds[2] = {{fd, POLLIN, 0}, {wake, POLLIN, 0}};
                            if (::poll(fds, 2, -1) < 0 && errno != EINTR) return;  // only with a descriptor gone
                            if (fds[1].revents != 0) return;
                            signalfd_siginfo info{};
                            if (::read(fd, &info, sizeof info) != static_cast<ssize_t>(sizeof info)) continue;
                            if (!std::exchange(told, true)) on_signal(static_cast<int>(info.ssi_signo));
                          }
                        });
}

SignalWatch::~SignalWatch() {
  const std::uint64_t one = 1;
  // An eventfd's counter takes the write unless it would overflow.
  (void)!::write(wake_.get(), &one, sizeof one);
  thread_.join();
}

}  // namespace mayura::tools
