#pragma once
// The bytes of request bodies the daemon holds at once. A daemon-wide
// budget bounds its memory whatever its clients send, and one client (other
// than root) may hold a share of it and no more, so that one client's large
// calls cannot refuse everyone else's. A Hold gives its bytes back when it
// goes, whichever way its request ends.

#include <cstddef>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>

namespace mayura::service {

class MemoryBudget {
 public:
  class Hold {
   public:
    Hold(Hold&& other) noexcept
        : owner_(std::exchange(other.owner_, nullptr)), who_(std::move(other.who_)), bytes_(other.bytes_) {}
    Hold& operator=(Hold&&) = delete;
    Hold(const Hold&) = delete;
    Hold& operator=(const Hold&) = delete;
    ~Hold() {
      if (owner_) owner_->give_back(who_, bytes_);
    }

   private:
    friend class MemoryBudget;
    Hold(MemoryBudget* owner, std::string who, std::size_t bytes)
        : owner_(owner), who_(std::move(who)), bytes_(bytes) {}
    MemoryBudget* owner_;
    std::string who_;
    std::size_t bytes_;
  };

  // `total` across clients; `share` of it for each client but root.
  MemoryBudget(std::size_t total, std::size_t share) : total_(total), share_(share) {}

  // `bytes` more for `who`, if the daemon and the client have room for it.
  std::optional<Hold> take(const std::string& who, std::size_t bytes, bool exempt_from_share) {
    std::lock_guard lock(mutex_);
    std::size_t& mine = held_[who];
    const bool room = bytes <= total_ - held_total_ && (exempt_from_share || bytes <= share_ - std::min(share_, mine));
    if (!room) {
      if (mine == 0) held_.erase(who);
      return std::nullopt;
    }
    mine += bytes;
    held_total_ += bytes;
    return Hold(this, who, bytes);
  }

  std::size_t held() const {
    std::lock_guard lock(mutex_);
    return held_total_;
  }

 private:
  void give_back(const std::string& who, std::size_t bytes) noexcept {
    std::lock_guard lock(mutex_);
    held_total_ -= bytes;
    const auto it = held_.find(who);
    if (it != held_.end() && (it->second -= bytes) == 0) held_.erase(it);
  }

  const std::size_t total_;
  const std::size_t share_;
  mutable std::mutex mutex_;
  std::size_t held_total_ = 0;
  std::unordered_map<std::string, std::size_t> held_;
};

}  // namespace mayura::service
