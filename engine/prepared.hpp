#pragma once
// Sandboxes made ahead of time for the default image: a create that can use
// one only gives it its env and its lifetime. A thread keeps the pool full,
// building only once the engine's callers have been quiet for a while (see
// activity.hpp), and ends whatever is left when the pool goes away.

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <stop_token>

#include "activity.hpp"

#include "mayura/runtime.hpp"

namespace mayura::native {

class SandboxCore;

class PreparedPool {
 public:
  // Makes one; the stop comes when the pool goes (a sandbox made ahead builds
  // at the lowest priority, and on a busy host may take long).
  using Make = std::function<std::shared_ptr<SandboxCore>(std::stop_token)>;
  // How long the callers must have been quiet before a build starts: longer
  // than the gaps inside one sandbox's life (create, exec, release), shorter
  // than an agent's pause between tasks.
  static constexpr std::chrono::milliseconds kQuiet{5};
  // A build may start at once if the last ended less than this ago. Its own
  // first move comes about a millisecond and a half in; both together stay
  // under the shortest grace period measured here (5 ms).
  static constexpr std::chrono::milliseconds kWarm{3};
  // The longest a build waits for a quiet spell: callers who never pause
  // get a sandbox made ahead at least this often.
  static constexpr std::chrono::milliseconds kMostWait{250};
  // `make` builds one sandbox (it may throw); `size` 0 keeps none; `activity`
  // (which outlives the pool) says when the callers were last busy. Nothing
  // is made before start().
  PreparedPool(std::size_t size, Make make, Activity& activity);
  void start();
  ~PreparedPool();
  PreparedPool(const PreparedPool&) = delete;
  PreparedPool& operator=(const PreparedPool&) = delete;

  // A prepared sandbox that is still alive, or null.
  std::shared_ptr<SandboxCore> take();

 private:
  void run();
  std::size_t size_;
  Make make_;
  Activity& activity_;
  std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<std::shared_ptr<SandboxCore>> ready_;
  bool stopping_ = false;
  std::stop_source stop_;
  OwnedThread thread_;
};

}  // namespace mayura::native
