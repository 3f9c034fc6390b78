#include "prepared_disks.hpp"

#include <condition_variable>
#include <deque>
#include <mutex>
#include <optional>
#include <stop_token>
#include <utility>
#include <vector>

#include "prepared.hpp"

namespace mayura::native {

struct PreparedDisks::State {
  State(std::size_t s, Make m, std::shared_ptr<Activity> a) : size(s), make(std::move(m)), activity(std::move(a)) {}
  const std::size_t size;
  const Make make;
  const std::shared_ptr<Activity> activity;
  std::mutex mutex;
  std::condition_variable idle;
  std::deque<std::pair<Kind, SandboxDisk>> ready;
  std::optional<Kind> wanted;
  bool filling = false;  // a refill is queued or under way
  bool making = false;   // make() runs: the pool's owner is in use
  bool stopping = false;
  std::stop_source stop;

  // Makes disks of the wanted kind until there are `size`; ends at the
  // first failure (the next take starts it again) or once the pool goes.
  void refill() {
    std::unique_lock lock(mutex);
    // On every way out, a throw included: the next take may start another.
    struct Done {
      State& state;
      std::unique_lock<std::mutex>& lock;
      ~Done() {
        if (!lock.owns_lock()) lock.lock();
        state.filling = false;
        state.making = false;
        state.idle.notify_all();
      }
    } done{*this, lock};
    while (!stopping && wanted && ready.size() < size) {
      lock.unlock();
      const bool turn =
          activity->wait_turn(PreparedPool::kQuiet, PreparedPool::kWarm, PreparedPool::kMostWait, stop.get_token());
      lock.lock();
      if (!turn || stopping || !wanted) break;
      const Kind kind = *wanted;  // as asked after the wait
      making = true;
      lock.unlock();
      std::optional<SandboxDisk> made;
      try {
        made = make(kind);
      } catch (...) {
        // The host refuses for now (room, loop devices): creates still
        // make their own.
      }
      lock.lock();
      making = false;
      idle.notify_all();
      if (!made) break;
      if (!stopping && wanted == kind) {
        ready.emplace_back(kind, std::move(*made));
      } else {
        lock.unlock();
        made.reset();  // of a kind no longer asked for: removed outside the lock
        lock.lock();
      }
    }
  }
};

PreparedDisks::PreparedDisks(std::size_t size, Make make, std::shared_ptr<Activity> activity, Runtime& runtime)
    : size_(size), runtime_(runtime), state_(std::make_shared<State>(size, std::move(make), std::move(activity))) {}

PreparedDisks::~PreparedDisks() {
  std::deque<std::pair<Kind, SandboxDisk>> left;  // removed outside the lock
  std::unique_lock lock(state_->mutex);
  state_->stopping = true;
  state_->stop.request_stop();
  state_->idle.wait(lock, [&] { return !state_->making; });
  left.swap(state_->ready);
  lock.unlock();
}

SandboxDisk PreparedDisks::take(const Kind& kind) {
  if (size_ == 0 || kind.mib > kMostMiB) return {};
  std::vector<SandboxDisk> stale;  // removed outside the lock
  SandboxDisk taken;
  std::unique_lock lock(state_->mutex);
  State& s = *state_;
  s.wanted = kind;
  while (!s.ready.empty()) {
    auto [made, disk] = std::move(s.ready.front());
    s.ready.pop_front();
    if (made == kind) {
      taken = std::move(disk);
      break;
    }
    stale.push_back(std::move(disk));
  }
  if (!s.filling && !s.stopping && s.ready.size() < size_) {
    s.filling = true;
    try {
      runtime_.run_blocking([state = state_] { state->refill(); });
    } catch (...) {
      s.filling = false;  // no thread now: the next take asks again
    }
  }
  lock.unlock();
  return taken;
}

}  // namespace mayura::native
