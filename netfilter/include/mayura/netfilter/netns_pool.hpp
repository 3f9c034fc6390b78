#pragma once
// Network namespaces made ahead of time. Making one costs far more than any
// other step of a sandbox (the kernel's per-namespace set-up), so a thread
// keeps a few ready, loopback up, and a create takes one.
//
// The namespaces belong to the host's user namespace, not the sandbox's: the
// sandbox (even root inside it) can never change its own links, addresses or
// firewall; only the engine can.

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <mutex>

#include "mayura/base/unique_fd.hpp"

#include "mayura/runtime.hpp"

namespace mayura::netfilter {

class NetnsPool {
 public:
  // Keeps `ready` namespaces made; 0 makes each one when it is taken.
  explicit NetnsPool(std::size_t ready);
  ~NetnsPool();
  NetnsPool(const NetnsPool&) = delete;
  NetnsPool& operator=(const NetnsPool&) = delete;

  // A new network namespace with loopback up, as an fd the caller owns; -1
  // with errno set if one cannot be made.
  int take();

  // Makes one on a short-lived thread (never on the caller's).
  static int make();

 private:
  void run();
  std::size_t target_;
  std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<UniqueFd> ready_;
  bool stopping_ = false;
  OwnedThread thread_;
};

}  // namespace mayura::netfilter
