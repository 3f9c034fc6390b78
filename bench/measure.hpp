#pragma once
// Timing one case of a benchmark: after one warm-up call, the median and
// p95 of a number of calls, and how many calls failed.

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <exception>
#include <functional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace mayura::bench {

struct Stats {
  // Of the calls that succeeded only: a failed call often ends early, and its
  // time would pass for a fast run.
  double median_ms = 0;
  double p95_ms = 0;
  int succeeded = 0;  // timed calls
  int failed = 0;     // the warm-up's among them: it fails for the same reasons
  bool measured() const { return succeeded + failed > 0; }
};

// A case's call says whether it did what the case measures; the engine says
// so by throwing (a SandboxError), an anchor by its exit status.
inline bool succeeds(const std::function<bool()>& fn) {
  try {
    return fn();
  } catch (const std::exception&) {
    return false;
  }
}

// The median and p95 of the times of the calls that succeeded.
inline Stats summarise(std::vector<double> ms, int failed) {
  Stats stats;
  stats.failed = failed;
  stats.succeeded = static_cast<int>(ms.size());
  if (ms.empty()) return stats;
  std::sort(ms.begin(), ms.end());
  stats.median_ms = ms[ms.size() / 2];
  stats.p95_ms = ms[std::min(ms.size() - 1, ms.size() * 95 / 100)];
  return stats;
}

// `pause` before each timed call: what a caller that is not in a loop sees
// (an agent between its commands), where the kernel's caches and modes have
// gone cold.
inline Stats measure(int iterations, const std::function<bool()>& fn,
                     std::chrono::milliseconds pause = std::chrono::milliseconds(0)) {
  int failed = succeeds(fn) ? 0 : 1;  // warm up
  std::vector<double> ms;
  ms.reserve(static_cast<std::size_t>(iterations));
  for (int i = 0; i < iterations; ++i) {
    if (pause.count() > 0) std::this_thread::sleep_for(pause);
    const auto start = std::chrono::steady_clock::now();
    const bool ok = succeeds(fn);
    const double took = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    if (ok) ms.push_back(took);
    else ++failed;
  }
  return summarise(std::move(ms), failed);
}

// A row: its name in `width` columns, median, p95 and failed calls; no times
// when no call succeeded.
inline void print_row(int width, const char* name, const Stats& s) {
  if (s.succeeded > 0) {
    std::printf("%-*s %9.3f %9.3f %7d\n", width, name, s.median_ms, s.p95_ms, s.failed);
  } else {
    std::printf("%-*s %9s %9s %7d\n", width, name, "-", "-", s.failed);
  }
}

// The ratio of two rows' medians, or none when either row had a failed call:
// what succeeded beside a failure is not the case the ratio is about. Nor
// over a row not measured (an anchor that is not installed or did not run).
inline std::string ratio(const Stats& x, const Stats& y) {
  const int failed = x.failed + y.failed;
  if (failed > 0) return "n/a (" + std::to_string(failed) + " failed runs)";
  if (!x.measured() || !y.measured() || y.median_ms <= 0) return "n/a (not measured)";
  char text[32];
  std::snprintf(text, sizeof text, "%.2f", x.median_ms / y.median_ms);
  return text;
}

}  // namespace mayura::bench
