#pragma once
// Finishes released sandboxes off the caller's path. A release stops the
// sandbox where the caller stands (every process of it killed, every later
// call GONE) and leaves the rest here: reaping the init, removing the
// cgroups, the network and the record. One thread per provider; when it
// falls behind, a release does the removal itself, so a churning caller
// can never pile up more than a bounded backlog of dead sandboxes.

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>

#include "mayura/runtime.hpp"

namespace mayura::native {

class SandboxCore;

class Cleaner {
 public:
  Cleaner();
  // Finishes everything still queued: nothing of a released sandbox is left.
  ~Cleaner();
  Cleaner(const Cleaner&) = delete;
  Cleaner& operator=(const Cleaner&) = delete;

  // Stops the sandbox now and removes it later (or now, when the backlog is
  // full). Returns once nothing of the sandbox can run. Idempotent.
  void release(const std::shared_ptr<SandboxCore>& core) noexcept;

  // Waits, up to `bound`, until one more removal has finished: for a create
  // that found every id slot taken while some were being given back. False
  // at once if none is queued.
  bool wait_for_one(std::chrono::steady_clock::duration bound) const;

 private:
  // Past this many waiting, the releasing thread removes its own.
  static constexpr std::size_t kMaxBacklog = 32;
  void run();
  mutable std::mutex mutex_;
  std::condition_variable wake_;
  mutable std::condition_variable finished_one_;
  std::uint64_t finished_ = 0;  // removals done by the thread
  std::deque<std::shared_ptr<SandboxCore>> queue_;
  bool stopping_ = false;
  OwnedThread thread_;
};

}  // namespace mayura::native
