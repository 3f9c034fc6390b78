#pragma once
// Something each client does, paced to a rate (its streamed output in bytes,
// its requests): the daemon's cpu goes to every client's work, not to
// whichever client prints or asks fastest. A client's streams or connections
// share its rate (in virtual time: each unit moves its client's clock on by
// one over the rate), with a second's worth at once before any wait. For
// output, the wait holds the stream, so the command's pipe fills and the
// command itself waits: nothing piles up in the daemon. For requests, the
// wait holds the request before it is served: a client asking in a loop
// asks at the rate, however many connections it loops on.

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <mutex>
#include <string>
#include <unordered_map>

namespace mayura::service {

class ClientPace {
 public:
  using Clock = std::chrono::steady_clock;

  // `per_second` 0: no pacing.
  explicit ClientPace(std::size_t per_second) : rate_(per_second) {}

  // `units` more done by `who` at `now`: how long it waits before it does
  // more (zero while within the burst).
  Clock::duration sent(const std::string& who, std::size_t units, Clock::time_point now = Clock::now()) {
    if (rate_ == 0) return Clock::duration::zero();
    const auto cost = std::chrono::duration_cast<Clock::duration>(
        std::chrono::duration<double>(static_cast<double>(units) / static_cast<double>(rate_)));
    std::lock_guard lock(mutex_);
    if (clocks_.size() > kForgetPast) forget_idle(now);
    Clock::time_point& clock = clocks_[who];
    clock = std::max(clock, now - kBurst) + cost;
    return std::max(Clock::duration::zero(), clock - now);
  }

 private:
  static constexpr std::chrono::seconds kBurst{1};
  static constexpr std::size_t kForgetPast = 1024;

  // Clients whose clock is behind the burst's start owe nothing: forgotten.
  void forget_idle(Clock::time_point now) {
    std::erase_if(clocks_, [now](const auto& entry) { return entry.second <= now - kBurst; });
  }

  const std::size_t rate_;
  std::mutex mutex_;
  std::unordered_map<std::string, Clock::time_point> clocks_;
};

}  // namespace mayura::service
