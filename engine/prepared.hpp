#pragma once
// Sandboxes made ahead of time for the default image: a create that can use
// one only gives it its env and its lifetime. A thread keeps the pool full
// and ends whatever is left when the pool goes away.

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <stop_token>
#include <thread>

namespace mayura::native {

class SandboxCore;

class PreparedPool {
 public:
  // Makes one; the stop comes when the pool goes (a sandbox made ahead builds
  // at the lowest priority, and on a busy host may take long).
  using Make = std::function<std::shared_ptr<SandboxCore>(std::stop_token)>;
  // `make` builds one sandbox (it may throw); `size` 0 keeps none. Nothing
  // is made before start().
  PreparedPool(std::size_t size, Make make);
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
  std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<std::shared_ptr<SandboxCore>> ready_;
  bool stopping_ = false;
  std::stop_source stop_;
  std::thread thread_;
};

}  // namespace mayura::native
