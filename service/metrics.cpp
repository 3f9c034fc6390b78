#include "metrics.hpp"

#include <cstdio>

namespace mayura::service {

void Histogram::observe(double seconds) noexcept {
  std::size_t i = 0;
  while (i < kBounds.size() && seconds > kBounds[i]) ++i;
  ++counts_[i];
  sum_us_ += static_cast<std::uint64_t>(seconds * 1e6);
}

std::string Histogram::text(const std::string& name, const std::string& help) const {
  std::string out = "# HELP " + name + " " + help + "\n# TYPE " + name + " histogram\n";
  std::uint64_t cumulative = 0;
  char line[160];
  for (std::size_t i = 0; i < kBounds.size(); ++i) {
    cumulative += counts_[i];
    std::snprintf(line, sizeof line, "%s_bucket{le=\"%g\"} %llu\n", name.c_str(), kBounds[i],
                  static_cast<unsigned long long>(cumulative));
    out += line;
  }
  cumulative += counts_[kBounds.size()];
  std::snprintf(line, sizeof line, "%s_bucket{le=\"+Inf\"} %llu\n%s_sum %.6f\n%s_count %llu\n", name.c_str(),
                static_cast<unsigned long long>(cumulative), name.c_str(), static_cast<double>(sum_us_) / 1e6,
                name.c_str(), static_cast<unsigned long long>(cumulative));
  return out + line;
}

std::string Metrics::text(std::size_t alive, std::size_t buffered_bytes) const {
  auto counter = [](const char* name, const char* help, std::uint64_t value, const char* type = "counter") {
    return std::string("# HELP ") + name + " " + help + "\n# TYPE " + name + " " + type + "\n" + name + " " +
           std::to_string(value) + "\n";
  };
  std::string out;
  out += counter("mayura_sandboxes_alive", "Sandboxes alive now.", alive, "gauge");
  out += counter("mayura_connections_open", "Client connections open now.", connections, "gauge");
  out += counter("mayura_connections_total", "Client connections accepted.", connections_accepted);
  out += counter("mayura_creates_total", "Sandboxes created.", creates);
  out += counter("mayura_execs_total", "Commands run.", execs);
  out += counter("mayura_requests_total", "HTTP requests served.", requests);
  out += counter("mayura_blocking_calls_running", "Calls on the daemon's blocking threads now.", blocking_running,
                 "gauge");
  out += counter("mayura_blocking_calls_waiting",
                 "Calls waiting for a turn on the blocking threads, their client's share being in use.",
                 blocking_waiting, "gauge");
  out +=
      counter("mayura_buffered_bytes", "Request bytes the daemon's memory budget holds now.", buffered_bytes, "gauge");
  out += counter("mayura_budget_refusals_total", "Requests refused past the daemon's memory budget.", budget_refusals);
  out += counter("mayura_share_refusals_total", "Connections refused past their client's share of connections.",
                 share_refusals);
  out += counter("mayura_paced_requests_total", "Requests that waited, past their client's rate of requests.",
                 paced_requests);
  out += "# HELP mayura_failures_total Failed requests, by reason.\n# TYPE mayura_failures_total counter\n";
  for (std::size_t i = 0; i < failures.size(); ++i) {
    out += "mayura_failures_total{reason=\"" + std::string(reason_name(static_cast<Reason>(i))) + "\"} " +
           std::to_string(failures[i]) + "\n";
  }
  out += create_seconds.text("mayura_create_seconds", "Time to create a sandbox.");
  out += exec_seconds.text("mayura_exec_seconds", "Time a command ran, from request to result.");
  return out;
}

}  // namespace mayura::service
