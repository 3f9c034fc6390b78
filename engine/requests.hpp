#pragma once
// What the requests to a sandbox's init share on the engine side: the
// errors they end in, their bounds, and waking a poll loop when the caller
// cancels.

#include <algorithm>
#include <chrono>
#include <memory>
#include <stop_token>

#include "io.hpp"
#include "mayura/errors.hpp"

namespace mayura::native {

using Clock = std::chrono::steady_clock;

// A request the init does not take within this long fails.
constexpr int kSendTimeoutMs = 5000;

[[noreturn]] inline void gone() { throw SandboxError(Reason::GONE, "the sandbox has ended"); }
[[noreturn]] inline void cancelled() { throw SandboxError(Reason::CANCELLED, "the operation was cancelled"); }

inline int ms_until(Clock::time_point t) {
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(t - Clock::now()).count();
  return left <= 0 ? 0 : static_cast<int>(std::min<long long>(left, 60000));
}

// Wakes a poll loop when the caller cancels.
struct CancelWatch {
  struct Wake {
    int fd;
    void operator()() const noexcept { io::signal_eventfd(fd); }
  };
  UniqueFd event = io::make_eventfd();
  std::unique_ptr<std::stop_callback<Wake>> callback;
  explicit CancelWatch(const std::stop_token& token) {
    if (token.stop_possible()) callback = std::make_unique<std::stop_callback<Wake>>(token, Wake{event.get()});
  }
};

}  // namespace mayura::native
