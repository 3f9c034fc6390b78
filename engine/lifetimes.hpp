#pragma once
// Ends each sandbox when its lifetime is over: one timer on the provider's
// reactor, set for the nearest deadline. The ending itself (it waits for the
// sandbox's processes to go and removes its cgroups) runs on one of the
// runtime's blocking threads, never on the reactor.

#include <chrono>
#include <memory>

#include "mayura/runtime.hpp"

namespace mayura::native {

class SandboxCore;

class LifetimeReaper {
 public:
  using Clock = std::chrono::steady_clock;
  // `runtime` outlives the reaper (the provider holds both).
  explicit LifetimeReaper(Runtime& runtime);
  ~LifetimeReaper();  // ends every sandbox still watched
  LifetimeReaper(const LifetimeReaper&) = delete;
  LifetimeReaper& operator=(const LifetimeReaper&) = delete;

  void watch(Clock::time_point deadline, const std::shared_ptr<SandboxCore>& core);

 private:
  struct Deadlines;
  // Shared with the timer's pending wait, which may outlast the reaper.
  std::shared_ptr<Deadlines> deadlines_;
};

}  // namespace mayura::native
