#include "prepared.hpp"

#include <chrono>

#include "native_sandbox.hpp"

namespace mayura::native {

PreparedPool::PreparedPool(std::size_t size, Make make, Activity& activity)
    : size_(size), make_(std::move(make)), activity_(activity) {}

void PreparedPool::start() {
  if (size_ > 0 && !thread_.joinable()) thread_ = OwnedThread("mayura-prepare", [this] { run(); });
}

PreparedPool::~PreparedPool() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  stop_.request_stop();
  changed_.notify_all();
  if (thread_.joinable()) thread_.join();
  for (auto& core : ready_) core->end();
}

std::shared_ptr<SandboxCore> PreparedPool::take() {
  std::unique_lock lock(mutex_);
  while (!ready_.empty()) {
    auto core = std::move(ready_.front());
    ready_.pop_front();
    changed_.notify_all();
    if (core->alive()) return core;
    lock.unlock();
    core->end();  // killed while it waited (an OOM, an admin): not handed out
    lock.lock();
  }
  return nullptr;
}

void PreparedPool::run() {
  std::unique_lock lock(mutex_);
  auto backoff = std::chrono::milliseconds(10);
  while (!stopping_) {
    if (ready_.size() >= size_) {
      changed_.wait(lock);
      continue;
    }
    lock.unlock();
    if (!activity_.wait_turn(kQuiet, kWarm, kMostWait, stop_.get_token())) {
      lock.lock();
      continue;
    }
    std::shared_ptr<SandboxCore> core;
    try {
      core = make_(stop_.get_token());
    } catch (...) {
      // The host refuses for now (slots, memory): creates still work without
      // the pool, and this tries again later.
    }
    lock.lock();
    if (core) {
      ready_.push_back(std::move(core));
      backoff = std::chrono::milliseconds(10);
    } else {
      changed_.wait_for(lock, backoff, [&] { return stopping_; });
      backoff = std::min(backoff * 2, std::chrono::milliseconds(5000));
    }
  }
}

}  // namespace mayura::native
