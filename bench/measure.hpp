#pragma once
// Timing one case of a benchmark: after one warm-up call, the median and
// p95 of a number of calls.

#include <algorithm>
#include <chrono>
#include <functional>
#include <thread>
#include <vector>

namespace mayura::bench {

struct Stats {
  double median_ms = 0;
  double p95_ms = 0;
};

// `pause` before each timed call: what a caller that is not in a loop sees
// (an agent between its commands), where the kernel's caches and modes have
// gone cold.
inline Stats measure(int iterations, const std::function<void()>& fn,
                     std::chrono::milliseconds pause = std::chrono::milliseconds(0)) {
  fn();  // warm up
  std::vector<double> ms;
  ms.reserve(static_cast<std::size_t>(iterations));
  for (int i = 0; i < iterations; ++i) {
    if (pause.count() > 0) std::this_thread::sleep_for(pause);
    const auto start = std::chrono::steady_clock::now();
    fn();
    ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
  }
  std::sort(ms.begin(), ms.end());
  return {ms[ms.size() / 2], ms[std::min(ms.size() - 1, ms.size() * 95 / 100)]};
}

}  // namespace mayura::bench
