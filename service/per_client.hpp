#pragma once
// How many of a thing (connections) each client holds, each within a cap:
// one client (a Unix peer, a TLS address or token) can take its share of the
// daemon and no more, however many others wait. A Lease gives its one back
// when it goes, whichever way its holder ends.

#include <cstddef>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>

namespace mayura::service {

class PerClient {
 public:
  class Lease {
   public:
    Lease(Lease&& other) noexcept : owner_(std::exchange(other.owner_, nullptr)), who_(std::move(other.who_)) {}
    Lease& operator=(Lease&& other) noexcept {
      if (this != &other) {
        give_back();
        owner_ = std::exchange(other.owner_, nullptr);
        who_ = std::move(other.who_);
      }
      return *this;
    }
    Lease(const Lease&) = delete;
    Lease& operator=(const Lease&) = delete;
    ~Lease() { give_back(); }

   private:
    friend class PerClient;
    Lease(PerClient* owner, std::string who) : owner_(owner), who_(std::move(who)) {}
    void give_back() noexcept {
      if (owner_) owner_->give_back(who_);
      owner_ = nullptr;
    }
    PerClient* owner_;
    std::string who_;
  };

  // One more for `who`, if it holds fewer than `cap`.
  std::optional<Lease> take(const std::string& who, std::size_t cap) {
    std::lock_guard lock(mutex_);
    std::size_t& held = held_[who];
    if (held >= cap) {
      if (held == 0) held_.erase(who);
      return std::nullopt;
    }
    ++held;
    return Lease(this, who);
  }

  std::size_t held_by(const std::string& who) const {
    std::lock_guard lock(mutex_);
    const auto it = held_.find(who);
    return it == held_.end() ? 0 : it->second;
  }

 private:
  void give_back(const std::string& who) noexcept {
    std::lock_guard lock(mutex_);
    const auto it = held_.find(who);
    if (it != held_.end() && --it->second == 0) held_.erase(it);
  }

  mutable std::mutex mutex_;
  std::unordered_map<std::string, std::size_t> held_;
};

}  // namespace mayura::service
