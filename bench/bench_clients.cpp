// A sandbox's round trip through mayurad from each kind of client, in one
// run against one warm daemon: create + exec /bin/true + release from C++
// through the remote provider, the same as one POST /v1/run (remote_run),
// and from Node through @mayurajs/sandbox-native.
//   bench_clients MAYURAD NODE_SCRIPT [ITERATIONS]
// NODE_SCRIPT is clients/typescript/bench/roundtrip.mjs (its package built);
// a missing node or script is said, and that row not measured.

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "daemon.hpp"
#include "measure.hpp"
#include "mayura/remote.hpp"
#include "mayura/sandboxes.hpp"

namespace {

using mayura::bench::measure;
using mayura::bench::ratio;
using mayura::bench::Stats;

void row(const char* name, const Stats& s) { mayura::bench::print_row(56, name, s); }

// /bin/true ran: exit 0 and nothing on either stream.
bool ran_true(const mayura::ExecResult& r) { return r.exit_code == 0 && r.stdout.empty() && r.stderr.empty(); }

// The Node client's own figures ("median p95"), or none: the script stops
// at its first round trip whose exec did not exit 0, so figures mean none
// failed.
bool node_round_trips(const std::string& script, const std::string& socket, int n, Stats& out) {
  const std::string command = "node '" + script + "' '" + socket + "' " + std::to_string(n) + " 2>&1";
  std::unique_ptr<FILE, int (*)(FILE*)> pipe(::popen(command.c_str(), "r"), ::pclose);
  if (!pipe) return false;
  char line[256] = {};
  if (!std::fgets(line, sizeof line, pipe.get())) return false;
  if (std::sscanf(line, "%lf %lf", &out.median_ms, &out.p95_ms) != 2) return false;
  out.succeeded = n;
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: bench_clients MAYURAD NODE_SCRIPT [ITERATIONS]\n");
    return 2;
  }
  const int n = argc > 3 ? std::atoi(argv[3]) : 200;
  mayura::bench::Daemon daemon(argv[1]);
  if (!daemon.up()) {
    std::fprintf(stderr, "bench_clients: mayurad (%s) did not start\n", argv[1]);
    return 1;
  }
  std::printf("%d iterations each, one warm mayurad; times in ms\n%-56s %9s %9s %7s\n", n, "", "median", "p95",
              "failed");
  mayura::RemoteOptions remote;
  remote.url = daemon.url();
  mayura::SandboxesOptions limits;
  limits.max_sandboxes = 4;
  auto sandboxes = mayura::create_sandboxes(mayura::remote_sandboxes(remote), limits);
  mayura::CreateOptions create;
  create.lifetime_ms = 60'000;
  const Stats cpp = measure(n, [&] {
    auto s = sandboxes.create(create);
    const bool ran = ran_true(s.exec({"/bin/true"}));
    s.release();
    return ran;
  });
  row("C++ remote provider: create + exec /bin/true + release", cpp);
  const Stats run = measure(n, [&] { return ran_true(mayura::remote_run(remote, {}, {"/bin/true"}, {})); });
  row("C++ remote_run (one POST /v1/run)", run);
  Stats node{};
  if (node_round_trips(argv[2], daemon.socket(), n, node)) {
    row("Node @mayurajs/sandbox-native: create + exec + release", node);
    std::printf("\nratio (median): Node / C++ = %s\n", ratio(node, cpp).c_str());
  } else {
    std::printf("Node: %s did not run (is node there, and the package built?); not measured\n", argv[2]);
  }
  return 0;
}
