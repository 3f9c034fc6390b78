#pragma once
// Ends each sandbox when its lifetime is over: one thread per provider,
// sleeping until the nearest deadline.

#include <chrono>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>

#include "mayura/runtime.hpp"

namespace mayura::native {

class SandboxCore;

class LifetimeReaper {
 public:
  using Clock = std::chrono::steady_clock;
  LifetimeReaper();
  ~LifetimeReaper();  // ends every sandbox still watched
  LifetimeReaper(const LifetimeReaper&) = delete;
  LifetimeReaper& operator=(const LifetimeReaper&) = delete;

  void watch(Clock::time_point deadline, const std::shared_ptr<SandboxCore>& core);

 private:
  void run();
  std::mutex mutex_;
  std::condition_variable wake_;
  std::multimap<Clock::time_point, std::weak_ptr<SandboxCore>> deadlines_;
  bool stopping_ = false;
  OwnedThread thread_;
};

}  // namespace mayura::native
