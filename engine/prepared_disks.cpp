#include "prepared_disks.hpp"

#include <utility>
#include <vector>

#include "prepared.hpp"

namespace mayura::native {

PreparedDisks::PreparedDisks(std::size_t size, Make make, Activity& activity, Runtime& runtime)
    : size_(size), make_(std::move(make)), activity_(activity), runtime_(runtime) {}

PreparedDisks::~PreparedDisks() {
  std::unique_lock lock(mutex_);
  stopping_ = true;
  stop_.request_stop();
  idle_.wait(lock, [&] { return !filling_; });
  ready_.clear();
}

SandboxDisk PreparedDisks::take(const Kind& kind) {
  if (size_ == 0 || kind.mib > kMostMiB) return {};
  std::vector<SandboxDisk> stale;  // removed outside the lock
  SandboxDisk taken;
  std::unique_lock lock(mutex_);
  wanted_ = kind;
  while (!ready_.empty()) {
    auto [made, disk] = std::move(ready_.front());
    ready_.pop_front();
    if (made == kind) {
      taken = std::move(disk);
      break;
    }
    stale.push_back(std::move(disk));
  }
  if (!filling_ && !stopping_ && ready_.size() < size_) {
    filling_ = true;
    try {
      runtime_.run_blocking([this] { refill(); });
    } catch (...) {
      filling_ = false;  // no thread now: the next take asks again
    }
  }
  lock.unlock();
  return taken;
}

void PreparedDisks::refill() {
  std::unique_lock lock(mutex_);
  while (!stopping_ && wanted_ && ready_.size() < size_) {
    const Kind kind = *wanted_;
    lock.unlock();
    std::optional<SandboxDisk> made;
    if (activity_.wait_turn(PreparedPool::kQuiet, PreparedPool::kWarm, PreparedPool::kMostWait, stop_.get_token())) {
      try {
        made = make_(kind);
      } catch (...) {
        // The host refuses for now (room, loop devices): creates still
        // make their own.
      }
    }
    lock.lock();
    if (!made) break;
    if (!stopping_ && wanted_ == kind) ready_.emplace_back(kind, std::move(*made));
    // else: of a kind no longer asked for, removed as `made` goes
  }
  filling_ = false;
  idle_.notify_all();
}

}  // namespace mayura::native
