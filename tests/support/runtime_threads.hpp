#pragma once
// The threads of this process, by name (/proc/self/task/*/comm): what a test
// counts to show that nothing it made left a thread behind.

#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <thread>

namespace mayura::testing {

inline std::map<std::string, int> threads_by_name() {
  std::map<std::string, int> names;
  std::error_code ec;
  for (const auto& task : std::filesystem::directory_iterator("/proc/self/task", ec)) {
    std::ifstream comm(task.path() / "comm");
    std::string name;
    if (std::getline(comm, name)) ++names[name];  // a thread that just ended has none
  }
  return names;
}

// Waits (up to `bound`) until the threads are those of `expected`.
inline bool wait_for_threads(const std::map<std::string, int>& expected, std::chrono::milliseconds bound) {
  const auto give_up = std::chrono::steady_clock::now() + bound;
  for (;;) {
    if (threads_by_name() == expected) return true;
    if (std::chrono::steady_clock::now() > give_up) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

// Waits (up to `bound`) until at least `n` threads are named `name` (a new
// thread names itself once it runs).
inline bool wait_for_named(const std::string& name, int n, std::chrono::milliseconds bound) {
  const auto give_up = std::chrono::steady_clock::now() + bound;
  for (;;) {
    if (threads_by_name()[name] >= n) return true;
    if (std::chrono::steady_clock::now() > give_up) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

}  // namespace mayura::testing
