#pragma once
// How many of a thing (connections, turns on the blocking pool) each client
// holds, each within a cap: one client (a Unix peer, a TLS address or token)
// can take its share of the daemon and no more, however many others wait. A
// Lease gives its one back when it goes, whichever way its holder ends, and
// wakes whoever of the same client waits for one.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <list>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <variant>

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

  // One more for `who` if it holds fewer than `cap`; else a ticket, and
  // `wake` is called (once, without the lock held, on the thread that gives
  // one back) when one of `who`'s leases goes: the waiter then asks again.
  // Every waiter of that client is woken, so none is passed over by a
  // wake-up that went to a waiter who had stopped waiting.
  using Wake = std::function<void()>;
  std::variant<Lease, std::uint64_t> take_or_wait(const std::string& who, std::size_t cap, Wake wake) {
    std::lock_guard lock(mutex_);
    std::size_t& held = held_[who];
    if (held < cap) {
      ++held;
      return Lease(this, who);
    }
    if (held == 0) held_.erase(who);
    const std::uint64_t ticket = ++tickets_;
    waiting_[who].push_back({ticket, std::move(wake)});
    return ticket;
  }
  // A waiter that gave up: its wake is dropped, if not already called.
  void stop_waiting(const std::string& who, std::uint64_t ticket) {
    std::lock_guard lock(mutex_);
    const auto it = waiting_.find(who);
    if (it == waiting_.end()) return;
    it->second.remove_if([ticket](const Waiter& w) { return w.ticket == ticket; });
    if (it->second.empty()) waiting_.erase(it);
  }

  std::size_t held_by(const std::string& who) const {
    std::lock_guard lock(mutex_);
    const auto it = held_.find(who);
    return it == held_.end() ? 0 : it->second;
  }

 private:
  struct Waiter {
    std::uint64_t ticket;
    Wake wake;
  };

  void give_back(const std::string& who) noexcept {
    std::list<Waiter> woken;
    {
      std::lock_guard lock(mutex_);
      const auto it = held_.find(who);
      if (it != held_.end() && --it->second == 0) held_.erase(it);
      const auto w = waiting_.find(who);
      if (w != waiting_.end()) {
        woken = std::move(w->second);
        waiting_.erase(w);
      }
    }
    for (Waiter& w : woken) w.wake();
  }

  mutable std::mutex mutex_;
  std::unordered_map<std::string, std::size_t> held_;
  std::unordered_map<std::string, std::list<Waiter>> waiting_;
  std::uint64_t tickets_ = 0;
};

}  // namespace mayura::service
