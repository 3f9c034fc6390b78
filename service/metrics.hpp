#pragma once
// What GET /metrics shows, in Prometheus' text format.

#include <array>
#include <atomic>
#include <cstdint>
#include <string>

#include "mayura/errors.hpp"

namespace mayura::service {

// A latency histogram with fixed buckets, in seconds.
class Histogram {
 public:
  static constexpr std::array<double, 12> kBounds = {0.001, 0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 5, 30};
  void observe(double seconds) noexcept;
  std::string text(const std::string& name, const std::string& help) const;

 private:
  std::array<std::atomic<std::uint64_t>, kBounds.size() + 1> counts_{};
  std::atomic<std::uint64_t> sum_us_{0};
};

struct Metrics {
  std::atomic<std::uint64_t> creates{0};
  std::atomic<std::uint64_t> execs{0};
  std::atomic<std::uint64_t> requests{0};
  std::atomic<std::uint64_t> connections{0};             // open now
  std::atomic<std::uint64_t> connections_accepted{0};    // ever (a client that keeps its connections makes few)
  std::atomic<std::uint64_t> budget_refusals{0};         // requests past the memory budget
  std::atomic<std::uint64_t> share_refusals{0};          // connections past their client's share
  std::atomic<std::uint64_t> paced_requests{0};          // requests that waited past their client's rate
  std::atomic<std::uint64_t> blocking_running{0};        // calls on the blocking threads now
  std::atomic<std::uint64_t> blocking_waiting{0};        // calls waiting for their client's turn
  std::array<std::atomic<std::uint64_t>, 9> failures{};  // by Reason
  Histogram create_seconds;
  Histogram exec_seconds;

  void failed(Reason reason) noexcept { ++failures[static_cast<std::size_t>(reason)]; }
  std::string text(std::size_t sandboxes_alive, std::size_t buffered_bytes) const;
};

}  // namespace mayura::service
