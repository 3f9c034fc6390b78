#pragma once
// Each client's streamed output, paced to a rate: the daemon's cpu goes to
// every client's work, not to whichever client prints fastest. A client's
// execs share its rate (in virtual time: each chunk moves its client's clock
// on by the chunk's size over the rate), with a second's worth sent at once
// before any wait. The wait holds the stream, so the command's pipe fills and
// the command itself waits: nothing piles up in the daemon.

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <mutex>
#include <string>
#include <unordered_map>

namespace mayura::service {

class OutputPace {
 public:
  using Clock = std::chrono::steady_clock;

  // `bytes_per_second` 0: no pacing.
  explicit OutputPace(std::size_t bytes_per_second) : rate_(bytes_per_second) {}

  // `bytes` more sent for `who` at `now`: how long the stream waits before it
  // sends more (zero while within the burst).
  Clock::duration sent(const std::string& who, std::size_t bytes, Clock::time_point now = Clock::now()) {
    if (rate_ == 0) return Clock::duration::zero();
    const auto cost = std::chrono::duration_cast<Clock::duration>(
        std::chrono::duration<double>(static_cast<double>(bytes) / static_cast<double>(rate_)));
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
