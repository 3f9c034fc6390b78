#pragma once
// Step timings of the engine's hot paths, printed to stderr when the
// environment has MAYURA_TRACE=1. Read once; costs one branch otherwise.

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace mayura {

inline bool tracing() {
  static const bool on = [] {
    const char* v = std::getenv("MAYURA_TRACE");
    return v != nullptr && std::strcmp(v, "1") == 0;
  }();
  return on;
}

class StepTimer {
 public:
  explicit StepTimer(const char* what) : what_(what), last_(Clock::now()) {}
  void step(const char* name) {
    if (!tracing()) return;
    const auto now = Clock::now();
    std::fprintf(stderr, "mayura-trace %s %-28s %8.1f us\n", what_, name,
                 std::chrono::duration<double, std::micro>(now - last_).count());
    last_ = now;
  }

 private:
  using Clock = std::chrono::steady_clock;
  const char* what_;
  Clock::time_point last_;
};

}  // namespace mayura
