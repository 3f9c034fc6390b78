#pragma once
// A command's output as an event a test can wait for: what it printed proves
// it got that far (its processes started, its setup done), so the test acts
// on that, never after a fixed sleep.

#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <string>
#include <string_view>

namespace mayura::testing {

class OutputEvent {
 public:
  // For ExecOptions::on_stdout (or on_stderr); the event must outlive the
  // exec it is given to.
  std::function<void(std::string_view)> sink() {
    return [this](std::string_view chunk) {
      {
        std::lock_guard lock(mutex_);
        seen_ += chunk;
      }
      changed_.notify_all();
    };
  }

  // Whether what arrived holds `text`, waiting for it up to `bound`: a
  // backstop so that a command that never prints it fails the test rather
  // than hanging it, never a measure of speed.
  bool wait_for(const std::string& text, std::chrono::seconds bound = std::chrono::seconds(60)) {
    std::unique_lock lock(mutex_);
    return changed_.wait_for(lock, bound, [&] { return seen_.find(text) != std::string::npos; });
  }

  std::string seen() const {
    std::lock_guard lock(mutex_);
    return seen_;
  }

 private:
  mutable std::mutex mutex_;
  std::condition_variable changed_;
  std::string seen_;
};

}  // namespace mayura::testing
