#pragma once
// When the engine's callers last did something, so that work made ahead
// (the pool's next sandbox) waits for a quiet spell instead of landing in
// the middle of a caller's sandbox life.
//
// Why it matters: a sandbox's build moves its init (and its first command's
// process) by writes to cgroup.procs. The kernel makes such a write take its
// cgroup_threadgroup_rwsem for writing while it holds cgroup_mutex, and after
// a quiet spell that waits for an RCU grace period (5 to 18 ms measured on
// these machines). Every cgroup write of a caller (a release's cgroup.kill,
// a command's cgroup) waits behind the mutex, and every fork and exit on the
// host behind the rwsem: a build started at a take made the life of a
// sandbox used 50 ms after the last seven times longer.

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <stop_token>

namespace mayura::native {

class Activity {
 public:
  using Clock = std::chrono::steady_clock;

  // A call of a caller began or ended.
  void mark() noexcept { last_call_.store(now(), std::memory_order_relaxed); }
  // A sandbox's build ended (its last cgroup move not long before): a wait
  // for a turn looks again at once.
  void built() noexcept {
    last_build_.store(now(), std::memory_order_relaxed);
    std::lock_guard lock(mutex_);
    ++builds_;
    changed_.notify_all();
  }

  // Returns once no call has begun or ended for `quiet`, or while a build
  // ended less than `warm` ago, or once it has waited `most`, or at the stop
  // (false). A build just after another most likely finds the kernel's lock
  // still in its writers' mode (the kernel keeps it so for a grace period
  // after the last move) and holds nobody up: callers in a loop still have
  // a pool, refilled after their own builds. `most` bounds what callers who
  // never pause cost: without it their every create would build its own.
  bool wait_turn(std::chrono::milliseconds quiet, std::chrono::milliseconds warm, std::chrono::milliseconds most,
                 const std::stop_token& stop) {
    const auto give_up = Clock::now() + most;
    std::unique_lock lock(mutex_);
    while (!stop.stop_requested()) {
      const auto at = Clock::now();
      const auto last_call = at_time(last_call_);
      if (at - last_call >= quiet || at - at_time(last_build_) < warm || at >= give_up) return true;
      const auto seen = builds_;
      changed_.wait_until(lock, stop, std::min(last_call + quiet, give_up), [&] { return builds_ != seen; });
    }
    return false;
  }

 private:
  static Clock::rep now() noexcept { return Clock::now().time_since_epoch().count(); }
  static Clock::time_point at_time(const std::atomic<Clock::rep>& t) noexcept {
    return Clock::time_point(Clock::duration(t.load(std::memory_order_relaxed)));
  }
  std::atomic<Clock::rep> last_call_{0};
  std::atomic<Clock::rep> last_build_{0};
  std::mutex mutex_;
  std::condition_variable_any changed_;
  std::uint64_t builds_ = 0;  // under mutex_
};

// One call, marked as it begins and as it ends, however it ends.
class ActivityMark {
 public:
  explicit ActivityMark(Activity& activity) noexcept : activity_(activity) { activity_.mark(); }
  ~ActivityMark() { activity_.mark(); }
  ActivityMark(const ActivityMark&) = delete;
  ActivityMark& operator=(const ActivityMark&) = delete;

 private:
  Activity& activity_;
};

}  // namespace mayura::native
