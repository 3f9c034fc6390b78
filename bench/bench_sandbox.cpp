// Side-by-side timings of the native engine and its anchors, in one run:
//   (a) library: create + exec /bin/true + release, with the default options
//       (one sandbox of the host image and two network namespaces made
//       ahead by background threads), (a2) the same 50 ms after the last
//       (a caller not in a loop: what is made ahead is ready), and (a0)
//       with nothing made ahead
//   (b) mayura-run --local /bin/true (an engine of its own each run), and
//   (b1) mayura-run /bin/true through a warm mayurad (started here, beside
//       mayura-run, on a scratch socket), and (b12) 50 ms after the last
//   (c) bwrap --ro-bind / / --unshare-all --die-with-parent --cap-drop ALL /bin/true,
//       and (c2) 50 ms after the last
//   (d) exec /bin/true in a live sandbox, against (e) a host fork+exec of /bin/true,
//   and (d2) the same exec 50 ms after the last (an agent between commands:
//   a cgroup move then waits for the kernel, see the README's host tuning),
//   against (e2) the host's fork+exec 50 ms after the last,
//   and (d0), (d02) the two with no command started ahead
//   (NativeOptions::commands_ahead false)
//   (g) (a) with no resource limit at all, against (h) (a) with cpus 1,
//       memory 512 MiB and 256 processes set by each create
// and, when crun is installed and runs on this host, (f) crun run of /bin/true
// on a prepared bundle.
// Prints median and p95 of each and the ratios the issue sets as aims.
//
// usage: bench_sandbox [ITERATIONS] [PATH-TO-mayura-run]

#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include "mayura/native.hpp"
#include "daemon.hpp"
#include "measure.hpp"
#include "run_quietly.hpp"
#include "mayura/sandbox.hpp"

namespace {

using mayura::bench::measure;
using mayura::bench::Stats;

bool run(const std::vector<std::string>& argv) { return mayura::bench::run_quietly(argv); }

bool have(const char* program) { return run({"sh", "-c", std::string("command -v ") + program + " >/dev/null"}); }

void row(const char* name, const Stats& s) { std::printf("%-58s %9.3f %9.3f\n", name, s.median_ms, s.p95_ms); }

// A crun bundle whose root is the host's /, read-only, with /bin/true as its process.
std::string make_crun_bundle() {
  char dir[] = "/tmp/mayura-bench-crun-XXXXXX";
  if (!mkdtemp(dir)) return {};
  std::string bundle = dir;
  std::ofstream(bundle + "/config.json") << R"({
  "ociVersion": "1.0.2",
  "process": {"user": {"uid": 0, "gid": 0}, "args": ["/bin/true"], "cwd": "/", "env": ["PATH=/usr/bin:/bin"],
              "capabilities": {}, "noNewPrivileges": true},
  "root": {"path": "/", "readonly": true},
  "hostname": "bench",
  "mounts": [{"destination": "/proc", "type": "proc", "source": "proc"},
             {"destination": "/dev", "type": "tmpfs", "source": "tmpfs", "options": ["nosuid", "mode=755"]}],
  "linux": {"namespaces": [{"type": "pid"}, {"type": "network"}, {"type": "ipc"}, {"type": "uts"}, {"type": "mount"}]}
})";
  return bundle;
}

}  // namespace

// One create + exec /bin/true + release; `pause` before each.
Stats cycle(int n, mayura::Sandboxes& sandboxes, const mayura::CreateOptions& create,
            std::chrono::milliseconds pause = std::chrono::milliseconds(0)) {
  return measure(
      n,
      [&] {
        auto s = sandboxes.create(create);
        s.exec({"/bin/true"});
        s.release();
      },
      pause);
}

int main(int argc, char** argv) {
  const int n = argc > 1 ? std::max(5, std::atoi(argv[1])) : 100;
  const std::string runner = argc > 2 ? argv[2] : "mayura-run";

  mayura::SandboxesOptions limits;
  limits.max_sandboxes = 2;
  auto sandboxes = mayura::create_sandboxes(mayura::native_sandboxes(), limits);
  mayura::CreateOptions create;
  create.lifetime_ms = 600000;

  std::printf("%d iterations each; times in ms\n%-58s %9s %9s\n", n, "", "median", "p95");
  const Stats a = cycle(n, sandboxes, create);
  row("(a) library create + exec /bin/true + release", a);
  // A caller that is not in a loop (an agent's next task): what the engine
  // made ahead is ready, and what the last release left is removed.
  const int paced = std::min(n, 40);
  const auto pause = std::chrono::milliseconds(50);
  const Stats a2 = cycle(paced, sandboxes, create, pause);
  row("(a2) the same, 50 ms after the last", a2);

  mayura::NativeOptions cold_options;
  cold_options.prepared = 0;
  cold_options.netns_pool = 0;
  auto cold = mayura::create_sandboxes(mayura::native_sandboxes(cold_options), limits);
  const Stats a0 = cycle(n, cold, create);
  row("(a0) the same with nothing made ahead", a0);
  cold.close();

  const Stats b = measure(n, [&] { run({runner, "--local", "/bin/true"}); });
  row("(b) mayura-run --local /bin/true", b);
  Stats b1{};
  Stats b12{};
  {
    const std::string dir = runner.find('/') == std::string::npos ? "" : runner.substr(0, runner.rfind('/') + 1);
    mayura::bench::Daemon daemon(dir + "mayurad");
    if (daemon.up()) {
      ::setenv("MAYURA_HOST", daemon.url().c_str(), 1);
      b1 = measure(n, [&] { run({runner, "/bin/true"}); });
      row("(b1) mayura-run /bin/true through a warm mayurad", b1);
      b12 = measure(
          paced,
          [&] {
            run({runner, "/bin/true"});
          },
          pause);
      ::unsetenv("MAYURA_HOST");
      row("(b12) the same, 50 ms after the last", b12);
    } else {
      std::printf("(b1) mayurad (%smayurad) did not start; not measured\n", dir.c_str());
    }
  }

  Stats c{};
  Stats c2{};
  auto bwrap_once = [] {
    return run(
        {"bwrap", "--ro-bind", "/", "/", "--unshare-all", "--die-with-parent", "--cap-drop", "ALL", "/bin/true"});
  };
  if (have("bwrap") && bwrap_once()) {
    c = measure(n, bwrap_once);
    row("(c) bwrap --ro-bind / / --unshare-all --cap-drop ALL /bin/true", c);
    c2 = measure(paced, bwrap_once, pause);
    row("(c2) the same, 50 ms after the last", c2);
  } else {
    std::printf("(c) bwrap is not installed or does not run here; not measured\n");
  }

  Stats f{};
  if (have("crun")) {
    const std::string bundle = make_crun_bundle();
    int i = 0;
    auto crun_once = [&] { return run({"crun", "run", "--bundle", bundle, "mayura-bench-" + std::to_string(i++)}); };
    // crun refuses hosts whose cgroup2 has controllers while v1 holds the
    // rest (this project's CI machines): a failing run is no timing.
    if (crun_once()) {
      f = measure(n, crun_once);
      row("(f) crun run /bin/true (host root, read-only)", f);
    } else {
      std::printf("(f) crun refuses this host (hybrid cgroups); not measured\n");
    }
    run({"rm", "-rf", bundle});
  }

  mayura::NativeOptions unlimited_options;
  unlimited_options.default_cpus = 0;
  unlimited_options.default_memory_mib = 0;
  unlimited_options.default_pids = 0;
  auto unlimited = mayura::create_sandboxes(mayura::native_sandboxes(unlimited_options), limits);
  const Stats g = cycle(n, unlimited, create);
  row("(g) (a) with no resource limit", g);
  mayura::CreateOptions limited = create;
  limited.cpus = 1;
  limited.memory_mib = 512;
  limited.pids = 256;
  const Stats h = cycle(n, unlimited, limited);
  row("(h) (a) with cpus 1, memory 512 MiB, pids 256 per create", h);
  unlimited.close();

  auto live = sandboxes.create(create);
  const Stats d = measure(n, [&] { live.exec({"/bin/true"}); });
  row("(d) exec /bin/true in a live sandbox", d);
  const Stats d2 = measure(
      std::min(n, 40), [&] { live.exec({"/bin/true"}); }, std::chrono::milliseconds(50));
  row("(d2) the same, 50 ms after the last", d2);
  live.release();
  // The same two with each command started when its exec comes.
  mayura::NativeOptions behind_options;
  behind_options.commands_ahead = false;
  auto behind = mayura::create_sandboxes(mayura::native_sandboxes(behind_options), limits);
  auto live_behind = behind.create(create);
  const Stats d0 = measure(n, [&] { live_behind.exec({"/bin/true"}); });
  row("(d0) (d) with no command started ahead", d0);
  const Stats d02 = measure(
      std::min(n, 40), [&] { live_behind.exec({"/bin/true"}); }, std::chrono::milliseconds(50));
  row("(d02) (d2) with no command started ahead", d02);
  live_behind.release();
  behind.close();
  const Stats e = measure(n, [&] { run({"/bin/true"}); });
  row("(e) host fork+exec /bin/true", e);
  const Stats e2 = measure(
      std::min(n, 40), [&] { run({"/bin/true"}); }, std::chrono::milliseconds(50));
  row("(e2) the same, 50 ms after the last", e2);

  std::printf("\nratios (median): a/c = %.2f (aim <= 0.50)   a0/c = %.2f   d/e = %.2f (aim <= 1.30)",
              c.median_ms > 0 ? a.median_ms / c.median_ms : 0.0, c.median_ms > 0 ? a0.median_ms / c.median_ms : 0.0,
              d.median_ms / e.median_ms);
  if (c.median_ms > 0) {
    std::printf("\n                 b/c = %.2f   b1/c = %.2f (aim <= 0.50)", b.median_ms / c.median_ms,
                b1.median_ms / c.median_ms);
    std::printf("\n  50 ms apart:   a2/c2 = %.2f   b12/c2 = %.2f   d2/e2 = %.2f", a2.median_ms / c2.median_ms,
                b12.median_ms / c2.median_ms, d2.median_ms / e2.median_ms);
  }
  if (f.median_ms > 0) std::printf("   a/f = %.2f", a.median_ms / f.median_ms);
  std::printf("\nlimits: h - g = %+.3f ms per create (h/g = %.2f)", h.median_ms - g.median_ms,
              g.median_ms > 0 ? h.median_ms / g.median_ms : 0.0);
  std::printf("\n");
  return 0;
}
