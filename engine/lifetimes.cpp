#include "lifetimes.hpp"

#include <boost/asio/steady_timer.hpp>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <vector>

#include "native_sandbox.hpp"

namespace mayura::native {

struct LifetimeReaper::Deadlines : std::enable_shared_from_this<Deadlines> {
  explicit Deadlines(Runtime& r) : runtime(r) {}

  Runtime& runtime;
  // Guards everything below, the timer's every use included (the reactor's
  // threads and the callers' share it).
  std::mutex mutex;
  std::multimap<Clock::time_point, std::weak_ptr<SandboxCore>> entries;
  // Sandboxes whose end a blocking thread has been given and not finished:
  // the reaper's own end waits for them.
  std::set<std::shared_ptr<SandboxCore>> ending;
  // Made at the first watch, so that a provider that never gives a sandbox
  // a lifetime starts no reactor thread for it.
  std::optional<boost::asio::steady_timer> timer;
  bool stopping = false;

  // Sets the timer for the nearest deadline (a wait already set is
  // cancelled: its handler sees operation_aborted and does nothing).
  void arm_locked() {
    if (entries.empty()) return;
    if (!timer) timer.emplace(runtime.executor());
    timer->expires_at(entries.begin()->first);
    timer->async_wait([self = shared_from_this()](const boost::system::error_code& ec) {
      if (ec != boost::asio::error::operation_aborted) self->end_what_is_due();
    });
  }

  void end_what_is_due() {
    std::vector<std::shared_ptr<SandboxCore>> here;
    {
      std::lock_guard lock(mutex);
      if (stopping) return;
      const auto now = Clock::now();
      while (!entries.empty() && entries.begin()->first <= now) {
        auto core = entries.begin()->second.lock();
        entries.erase(entries.begin());
        if (core) hand_over_locked(std::move(core), here);
      }
      try {
        arm_locked();
      } catch (...) {
        // Out of memory for the wait: the next watch sets it again.
      }
    }
    for (auto& core : here) core->end();
  }

  // Gives the end to a blocking thread (ends never wait for a turn: the
  // calls holding the threads may be waiting on one), under the lock so
  // that the reaper's end knows of it; or, with no thread to be had, to
  // `here`, the reactor's thread.
  void hand_over_locked(std::shared_ptr<SandboxCore> core, std::vector<std::shared_ptr<SandboxCore>>& here) {
    try {
      ending.insert(core);
      runtime.run_blocking(
          [self = shared_from_this(), core] {
            core->end();
            std::lock_guard lock(self->mutex);
            self->ending.erase(core);
          },
          Runtime::Turn::now);
    } catch (...) {
      ending.erase(core);
      here.push_back(std::move(core));
    }
  }
};

LifetimeReaper::LifetimeReaper(Runtime& runtime) : deadlines_(std::make_shared<Deadlines>(runtime)) {}

LifetimeReaper::~LifetimeReaper() {
  std::vector<std::shared_ptr<SandboxCore>> left;
  {
    std::lock_guard lock(deadlines_->mutex);
    deadlines_->stopping = true;
    for (auto& [when, weak] : deadlines_->entries) {
      if (auto core = weak.lock()) left.push_back(std::move(core));
    }
    deadlines_->entries.clear();
    // An end a blocking thread has under way: end() returns once it is done.
    left.insert(left.end(), deadlines_->ending.begin(), deadlines_->ending.end());
    if (deadlines_->timer) deadlines_->timer->cancel();
  }
  for (auto& core : left) core->end();
}

void LifetimeReaper::watch(Clock::time_point deadline, const std::shared_ptr<SandboxCore>& core) {
  Deadlines& d = *deadlines_;
  std::lock_guard lock(d.mutex);
  // Drop entries of sandboxes already gone, so the map stays small.
  std::erase_if(d.entries, [](const auto& entry) { return entry.second.expired(); });
  const bool nearest = d.entries.empty() || deadline < d.entries.begin()->first;
  d.entries.emplace(deadline, core);
  if (nearest) d.arm_locked();
}

}  // namespace mayura::native
