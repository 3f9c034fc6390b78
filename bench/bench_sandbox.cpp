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
// Prints median and p95 of each, with its failed calls, and the ratios the
// issue sets as aims; a ratio over a row with failed calls is none (n/a).
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
using mayura::bench::ratio;
using mayura::bench::Stats;

bool run(const std::vector<std::string>& argv) { return mayura::bench::run_quietly(argv); }

bool have(const char* program) { return run({"sh", "-c", std::string("command -v ") + program + " >/dev/null"}); }

void row(const char* name, const Stats& s) { mayura::bench::print_row(58, name, s); }

// /bin/true ran: exit 0 and nothing on either stream (a command that could
// not start says so on stderr, with an exit code of its own).
bool ran_true(const mayura::ExecResult& r) { return r.exit_code == 0 && r.stdout.empty() && r.stderr.empty(); }

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
        const bool ran = ran_true(s.exec({"/bin/true"}));
        s.release();
        return ran;
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

  std::printf("%d iterations each; times in ms\n%-58s %9s %9s %7s\n", n, "", "median", "p95", "failed");
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

  const Stats b = measure(n, [&] { return run({runner, "--local", "/bin/true"}); });
  row("(b) mayura-run --local /bin/true", b);
  Stats b1{};
  Stats b12{};
  {
    const std::string dir = runner.find('/') == std::string::npos ? "" : runner.substr(0, runner.rfind('/') + 1);
    mayura::bench::Daemon daemon(dir + "mayurad");
    if (daemon.up()) {
      ::setenv("MAYURA_HOST", daemon.url().c_str(), 1);
      b1 = measure(n, [&] { return run({runner, "/bin/true"}); });
      row("(b1) mayura-run /bin/true through a warm mayurad", b1);
      b12 = measure(
          paced,
          [&] {
            return run({runner, "/bin/true"});
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
  const Stats d = measure(n, [&] { return ran_true(live.exec({"/bin/true"})); });
  row("(d) exec /bin/true in a live sandbox", d);
  const Stats d2 = measure(
      std::min(n, 40), [&] { return ran_true(live.exec({"/bin/true"})); }, std::chrono::milliseconds(50));
  row("(d2) the same, 50 ms after the last", d2);
  live.release();
  // The same two with each command started when its exec comes.
  mayura::NativeOptions behind_options;
  behind_options.commands_ahead = false;
  auto behind = mayura::create_sandboxes(mayura::native_sandboxes(behind_options), limits);
  auto live_behind = behind.create(create);
  const Stats d0 = measure(n, [&] { return ran_true(live_behind.exec({"/bin/true"})); });
  row("(d0) (d) with no command started ahead", d0);
  const Stats d02 = measure(
      std::min(n, 40), [&] { return ran_true(live_behind.exec({"/bin/true"})); }, std::chrono::milliseconds(50));
  row("(d02) (d2) with no command started ahead", d02);
  live_behind.release();
  behind.close();
  const Stats e = measure(n, [&] { return run({"/bin/true"}); });
  row("(e) host fork+exec /bin/true", e);
  const Stats e2 = measure(
      std::min(n, 40), [&] { return run({"/bin/true"}); }, std::chrono::milliseconds(50));
  row("(e2) the same, 50 ms after the last", e2);

  // (a)'s create takes a sandbox the pool made ahead (when one is ready),
  // while bwrap makes its own in the call: (a0), with no pool, is the
  // like-for-like row.
  std::printf(
      "\nratios (median): a/c = %s (aim <= 0.50; (a) takes a sandbox made ahead, from the pool)"
      "   d/e = %s (aim <= 1.30)",
      ratio(a, c).c_str(), ratio(d, e).c_str());
  std::printf("\n                 a0/c = %s (like for like: (a0) and bwrap each make their sandbox in the call)",
              ratio(a0, c).c_str());
  if (c.measured()) {
    std::printf("\n                 b/c = %s   b1/c = %s (aim <= 0.50)", ratio(b, c).c_str(), ratio(b1, c).c_str());
    std::printf("\n  50 ms apart:   a2/c2 = %s   b12/c2 = %s   d2/e2 = %s", ratio(a2, c2).c_str(),
                ratio(b12, c2).c_str(), ratio(d2, e2).c_str());
  }
  if (f.measured()) std::printf("   a/f = %s", ratio(a, f).c_str());
  if (g.failed + h.failed > 0) {
    std::printf("\nlimits: h - g = n/a (%d failed runs)", g.failed + h.failed);
  } else {
    std::printf("\nlimits: h - g = %+.3f ms per create (h/g = %s)", h.median_ms - g.median_ms, ratio(h, g).c_str());
  }
  std::printf("\n");
  return 0;
}
