#include "lifetimes.hpp"

#include <boost/asio/steady_timer.hpp>
#include <map>
#include <mutex>
#include <vector>

#include "mayura/errors.hpp"
#include "native_sandbox.hpp"

namespace mayura::native {

struct LifetimeReaper::Deadlines : std::enable_shared_from_this<Deadlines> {
  explicit Deadlines(Runtime& r) : runtime(r), timer(r.executor()) {}

  Runtime& runtime;
  // Guards the map and every use of the timer, which the reactor's threads
  // and the callers' share.
  std::mutex mutex;
  std::multimap<Clock::time_point, std::weak_ptr<SandboxCore>> entries;
  boost::asio::steady_timer timer;
  bool stopping = false;

  // Sets the timer for the nearest deadline (a wait already set is
  // cancelled: its handler sees operation_aborted and does nothing).
  void arm_locked() {
    if (entries.empty()) return;
    timer.expires_at(entries.begin()->first);
    timer.async_wait([self = shared_from_this()](const boost::system::error_code& ec) {
      if (ec != boost::asio::error::operation_aborted) self->end_what_is_due();
    });
  }

  void end_what_is_due() {
    std::vector<std::shared_ptr<SandboxCore>> due;
    {
      std::lock_guard lock(mutex);
      if (stopping) return;
      const auto now = Clock::now();
      while (!entries.empty() && entries.begin()->first <= now) {
        if (auto core = entries.begin()->second.lock()) due.push_back(std::move(core));
        entries.erase(entries.begin());
      }
      arm_locked();
    }
    // An end never waits for a turn: the calls holding the threads may be
    // waiting on it.
    for (auto& core : due) {
      try {
        runtime.run_blocking([core] { core->end(); }, Runtime::Turn::now);
      } catch (const SandboxError&) {
        core->end();  // no thread to be had: here, on the reactor
      }
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
    deadlines_->timer.cancel();
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
