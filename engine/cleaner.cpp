#include "cleaner.hpp"

#include <sys/resource.h>
#include <unistd.h>

#include "native_sandbox.hpp"

namespace mayura::native {

Cleaner::Cleaner() : thread_("mayura-cleaner", [this] { run(); }) {}

Cleaner::~Cleaner() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  thread_.join();  // the thread empties the queue before it returns
}

void Cleaner::release(const std::shared_ptr<SandboxCore>& core) noexcept {
  if (!core->stop()) return;  // stopped already: its removal is owed elsewhere
  {
    std::lock_guard lock(mutex_);
    if (!stopping_ && queue_.size() < kMaxBacklog) {
      try {
        queue_.push_back(core);
      } catch (...) {
        // out of memory for the queue: removed here, below
      }
    }
    if (!queue_.empty() && queue_.back() == core) {
      wake_.notify_one();
      return;
    }
  }
  core->finish();
}

bool Cleaner::wait_for_one(std::chrono::steady_clock::duration bound) const {
  std::unique_lock lock(mutex_);
  if (queue_.empty()) return false;
  const std::uint64_t seen = finished_;
  return finished_one_.wait_for(lock, bound, [&] { return finished_ != seen; });
}

void Cleaner::run() {
  // At the lowest priority, like the sandboxes made ahead: a busy caller
  // keeps its core, and a backlog that grows past the bound is removed by
  // the releasing threads themselves.
  ::setpriority(PRIO_PROCESS, static_cast<id_t>(::gettid()), 19);
  std::unique_lock lock(mutex_);
  for (;;) {
    if (queue_.empty()) {
      if (stopping_) return;
      wake_.wait(lock);
      continue;
    }
    std::shared_ptr<SandboxCore> core = queue_.front();
    lock.unlock();
    core->finish();
    lock.lock();
    // Popped only once finished: a release finding the queue full counts it until it is gone.
    queue_.pop_front();
    ++finished_;
    finished_one_.notify_all();
  }
}

}  // namespace mayura::native
