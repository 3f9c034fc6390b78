// mayurad under many clients: threads, memory and latency with 1, 100 and
// 500 execs at once, each on a connection of its own, over 5 sandboxes.
// Each exec is `sleep S`; its latency is its whole time less S (what the
// daemon and the engine add), as p50, p99 and the worst.
//
// usage: bench_service [SLEEP-SECONDS] [PATH-TO-mayurad]

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "tests/support/exec_load.hpp"
#include "daemon.hpp"

namespace load = mayura::testing::load;

int main(int argc, char** argv) {
  const double sleep_s = argc > 1 ? std::max(0.1, std::atof(argv[1])) : 2.0;
  const std::string program = argc > 2 ? argv[2] : "mayurad";
  mayura::bench::Daemon daemon(program, R"("maxSandboxes": 5, "maxSandboxesPerClient": 5, "maxConnections": 1024)");
  if (!daemon.up()) {
    std::fprintf(stderr, "bench_service: %s did not start\n", program.c_str());
    return 1;
  }
  std::vector<std::string> ids;
  ids.reserve(5);
  for (int i = 0; i < 5; ++i) ids.push_back(load::create(daemon.socket(), 3'600'000));
  if (std::count(ids.begin(), ids.end(), std::string()) > 0) {
    std::fprintf(stderr, "bench_service: the daemon made no sandbox\n");
    return 1;
  }
  load::run_execs(daemon.socket(), daemon.pid(), ids, 10, R"(["true"])");  // warm
  std::printf("%u cores; daemon idle: %zu threads, %zu KiB RSS; each exec sleeps %.1f s\n",
              std::thread::hardware_concurrency(), load::threads_of(daemon.pid()), load::rss_kib_of(daemon.pid()),
              sleep_s);
  std::printf("%-12s %8s %10s %14s %14s %14s %8s\n", "execs", "threads", "RSS KiB", "added p50 ms", "added p99 ms",
              "added max ms", "ok");
  char sleep_arg[32];
  std::snprintf(sleep_arg, sizeof sleep_arg, "%g", sleep_s);
  for (int n : {1, 100, 500}) {
    const auto out =
        load::run_execs(daemon.socket(), daemon.pid(), ids, n, std::string(R"(["sleep", ")") + sleep_arg + "\"]");
    std::vector<double> added = out.seconds;
    for (double& s : added) s = (s - sleep_s) * 1000;
    std::sort(added.begin(), added.end());
    const auto at = [&](double q) {
      return added.empty()
                 ? 0.0
                 : added[std::min(added.size() - 1, static_cast<std::size_t>(q * static_cast<double>(added.size())))];
    };
    std::printf("%-12d %8zu %10zu %14.1f %14.1f %14.1f %5d/%d\n", n, out.peak_threads, out.peak_rss_kib, at(0.5),
                at(0.99), added.empty() ? 0.0 : added.back(), out.succeeded, n);
  }
  return 0;
}
