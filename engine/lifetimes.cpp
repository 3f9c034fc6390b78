#include "lifetimes.hpp"

#include <vector>

#include "native_sandbox.hpp"

namespace mayura::native {

LifetimeReaper::LifetimeReaper() : thread_("mayura-lifetime", [this] { run(); }) {}

LifetimeReaper::~LifetimeReaper() {
  std::vector<std::shared_ptr<SandboxCore>> left;
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
    for (auto& [when, weak] : deadlines_) {
      if (auto core = weak.lock()) left.push_back(std::move(core));
    }
    deadlines_.clear();
  }
  wake_.notify_all();
  thread_.join();
  for (auto& core : left) core->end();
}

void LifetimeReaper::watch(Clock::time_point deadline, const std::shared_ptr<SandboxCore>& core) {
  {
    std::lock_guard lock(mutex_);
    // Drop entries of sandboxes already gone, so the map stays small.
    std::erase_if(deadlines_, [](const auto& entry) { return entry.second.expired(); });
    deadlines_.emplace(deadline, core);
  }
  wake_.notify_all();
}

void LifetimeReaper::run() {
  std::unique_lock lock(mutex_);
  while (!stopping_) {
    if (deadlines_.empty()) {
      wake_.wait(lock);
      continue;
    }
    const auto next = deadlines_.begin()->first;
    if (Clock::now() < next) {
      wake_.wait_until(lock, next);
      continue;
    }
    auto weak = deadlines_.begin()->second;
    deadlines_.erase(deadlines_.begin());
    lock.unlock();
    if (auto core = weak.lock()) core->end();
    lock.lock();
  }
}

}  // namespace mayura::native
