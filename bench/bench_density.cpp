// How each cost grows with the number of sandboxes alive: idle sandboxes of
// the default options are made through the public API and held, and at 1,
// 100, 1,000 and 10,000 alive (up to MAX) it prints create, exec and release
// latency, host memory per sandbox (MemAvailable's fall since the engine
// started, over the sandboxes alive), the engine's descriptors per sandbox
// and its RSS. A create that fails stops the growth with its reason and
// message (a host limit must be named there). Then churn: THREADS threads
// each doing create + exec /bin/true + release, CHURN in all, with the
// engine's RSS growth, the rate and the host's cpu per life; and beside it
// the anchor, bubblewrap's life (bwrap ... /bin/true) over as many threads,
// with its rate and cpu per life.
//
// usage: bench_density [MAX] [CHURN] [THREADS] [HOLD-SECONDS]

#include <dirent.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "mayura/native.hpp"
#include "mayura/sandbox.hpp"
#include "run_quietly.hpp"
#include "mayura/runtime.hpp"

namespace {

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

double percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<std::size_t>(static_cast<double>(v.size()) * p))];
}

// A field of /proc/meminfo or /proc/self/status, in KiB.
long kib(const char* file, const std::string& key) {
  std::ifstream in(file);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(key + ":", 0) == 0) return std::atol(line.c_str() + key.size() + 1);
  }
  return 0;
}

// Where host memory goes, per sandbox: the fields of /proc/meminfo that grow.
// KiB in the slab cache `name` (/proc/slabinfo, root only; 0 if unreadable).
// kmalloc-1k holds the kernel's per-memory-cgroup shrinker tables
// (shrinker_info): one slot per superblock alive in every memory cgroup
// alive, so with a memory cgroup and a few superblocks per sandbox it grows
// as the square of the sandboxes alive.
long slab_kib(const std::string& name) {
  std::ifstream in("/proc/slabinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(name + " ", 0) != 0) continue;
    std::istringstream fields(line.substr(name.size()));
    long active = 0, objects = 0, size = 0;
    fields >> active >> objects >> size;
    return objects * size / 1024;
  }
  return 0;
}

// The whole host's busy cpu time so far (every cpu's, the kernel's workers
// included; not the hypervisor's steal), in ms, from /proc/stat.
double host_busy_ms() {
  std::ifstream in("/proc/stat");
  std::string cpu;
  long user = 0, nice = 0, system = 0, idle = 0, iowait = 0, irq = 0, softirq = 0;
  in >> cpu >> user >> nice >> system >> idle >> iowait >> irq >> softirq;
  return static_cast<double>(user + nice + system + irq + softirq) * 1000.0 /
         static_cast<double>(::sysconf(_SC_CLK_TCK));
}

// Waits, a second at a time (at most a minute), until the host is quiet: a
// second with under 5% of one cpu busy. Returns that second's busy ms, the
// host's own noise.
double settle() {
  double busy = 0;
  for (int i = 0; i < 60; ++i) {
    const double before = host_busy_ms();
    std::this_thread::sleep_for(std::chrono::seconds(1));
    busy = host_busy_ms() - before;
    if (busy < 50) break;
  }
  return busy;
}

// What `lives` lives cost over `threads` threads, each life being `life()`
// (false: it failed): the rate and the host's busy cpu per life that
// succeeded, counted from a quiet host until the kernel's work deferred past
// the last life (namespaces and cgroups freed) is done too, less the host's
// own noise over that time.
struct ChurnCost {
  double per_second = 0;
  double cpu_ms_per_life = 0;
  int failed = 0;
};

template <class Life>
ChurnCost churn_cost(int lives, int threads, const Life& life) {
  const double noise_per_s = settle();
  std::atomic<int> next{0}, failed{0};
  const double busy_start = host_busy_ms();
  const auto start = Clock::now();
  std::vector<mayura::OwnedThread> workers;
  workers.reserve(static_cast<std::size_t>(threads));
  for (int t = 0; t < threads; ++t) {
    workers.emplace_back("bench-churn", [&] {
      while (next.fetch_add(1) < lives) {
        if (!life()) failed.fetch_add(1);
      }
    });
  }
  for (auto& w : workers) w.join();
  const double seconds = ms_since(start) / 1000.0;
  settle();
  const double busy_settled = host_busy_ms();
  const double counted_s = ms_since(start) / 1000.0;
  const int done = std::max(1, lives - failed.load());
  return {done / seconds, (busy_settled - busy_start - noise_per_s * counted_s) / done, failed.load()};
}

// What each level times besides its creates.
constexpr int kExecsPerLevel = 300;
constexpr int kRecreatesPerLevel = 20;

const char* const kParts[] = {"AnonPages",  "Shmem",        "KernelStack", "PageTables",
                              "SUnreclaim", "SReclaimable", "Percpu"};

int open_fds() {
  int n = 0;
  DIR* d = ::opendir("/proc/self/fd");
  if (!d) return 0;
  while (const dirent* e = ::readdir(d)) n += e->d_name[0] != '.';
  ::closedir(d);
  return n - 1;  // the listing's own
}

}  // namespace

int main(int argc, char** argv) {
  const int max_alive = argc > 1 ? std::max(1, std::atoi(argv[1])) : 10000;
  const int churn = argc > 2 ? std::max(0, std::atoi(argv[2])) : 100000;
  const int threads = argc > 3 ? std::max(1, std::atoi(argv[3])) : 4;
  const int hold_s = argc > 4 ? std::max(0, std::atoi(argv[4])) : 0;  // for a look at the host meanwhile

  mayura::NativeOptions native;
  native.id_slots = static_cast<std::uint32_t>(std::max(4095, max_alive + 64));
  mayura::SandboxesOptions limits;
  limits.max_sandboxes = static_cast<std::size_t>(max_alive) + 64;
  auto sandboxes = mayura::create_sandboxes(mayura::native_sandboxes(native), limits);
  mayura::CreateOptions create;
  create.lifetime_ms = 1800000;
  {
    auto warm = sandboxes.create(create);
    warm.exec({"/bin/true"});
    warm.release();
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(500));  // the pools refilled
  const long available_before = kib("/proc/meminfo", "MemAvailable");
  const int fds_before = open_fds();
  const long rss_before = kib("/proc/self/status", "VmRSS");
  std::vector<long> parts_before;
  for (const char* part : kParts) parts_before.push_back(kib("/proc/meminfo", part));
  const long shrinker_tables_before = slab_kib("kmalloc-1k");

  std::printf("idle sandboxes of the default options, held; times in ms\n");
  std::printf("%8s %10s %10s %10s %10s %10s %12s %10s %10s\n", "alive", "create p50", "create p95", "exec p50",
              "exec p99", "release", "MiB/sandbox", "fds/sbx", "RSS MiB");
  std::vector<mayura::Sandbox> alive;
  alive.reserve(static_cast<std::size_t>(max_alive));
  std::vector<double> creates;
  std::mt19937 rng(7);
  bool stopped = false;
  for (int level : {1, 100, 1000, 10000}) {
    if (level > max_alive || stopped) break;
    creates.clear();
    while (static_cast<int>(alive.size()) < level) {
      const auto start = Clock::now();
      try {
        alive.push_back(sandboxes.create(create));
      } catch (const mayura::SandboxError& e) {
        std::printf("create %zu failed: %s: %s\n", alive.size() + 1,
                    std::string(mayura::reason_name(e.reason())).c_str(), e.what());
        stopped = true;
        break;
      }
      creates.push_back(ms_since(start));
    }
    if (alive.empty()) break;
    const int n = static_cast<int>(alive.size());
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    const double mib = static_cast<double>(available_before - kib("/proc/meminfo", "MemAvailable")) / 1024.0 / n;
    const double fds = static_cast<double>(open_fds() - fds_before) / n;
    const double rss = static_cast<double>(kib("/proc/self/status", "VmRSS")) / 1024.0;
    // The last 100 creates at this level (all of them below 100).
    std::vector<double> recent(
        creates.end() - std::min<std::ptrdiff_t>(100, static_cast<std::ptrdiff_t>(creates.size())), creates.end());
    // A call that fails at the host's edge is counted and named, and the
    // measurement goes on: the figures of the level still print.
    int failed = 0;
    std::set<std::string> seen;
    const auto note_failure = [&failed, &seen](const char* what, const mayura::SandboxError& e) {
      ++failed;
      const std::string line =
          std::string(what) + " failed: " + std::string(mayura::reason_name(e.reason())) + ": " + e.what();
      if (seen.insert(line).second) std::printf("%s\n", line.c_str());
    };
    std::vector<double> execs;
    for (int i = 0; i < kExecsPerLevel; ++i) {
      auto& s = alive[std::uniform_int_distribution<std::size_t>(0, alive.size() - 1)(rng)];
      const auto start = Clock::now();
      try {
        s.exec({"/bin/true"});
        execs.push_back(ms_since(start));
      } catch (const mayura::SandboxError& e) {
        note_failure("exec", e);
      }
    }
    // Release one and make it again, 20 times: the level stays.
    std::vector<double> releases;
    for (int i = 0; i < kRecreatesPerLevel && !alive.empty(); ++i) {
      const auto start = Clock::now();
      alive.back().release();
      releases.push_back(ms_since(start));
      alive.pop_back();
      try {
        alive.push_back(sandboxes.create(create));
      } catch (const mayura::SandboxError& e) {
        note_failure("create again", e);
      }
    }
    if (failed > 0) std::printf("%d of the level's %d calls failed\n", failed, kExecsPerLevel + kRecreatesPerLevel);
    std::printf("%8d %10.3f %10.3f %10.3f %10.3f %10.3f %12.3f %10.2f %10.1f\n", n, percentile(recent, 0.5),
                percentile(recent, 0.95), percentile(execs, 0.5), percentile(execs, 0.99), percentile(releases, 0.5),
                mib, fds, rss);
    std::printf("%8s of which (KiB/sandbox):", "");
    for (std::size_t i = 0; i < std::size(kParts); ++i) {
      std::printf(" %s %.0f", kParts[i], static_cast<double>(kib("/proc/meminfo", kParts[i]) - parts_before[i]) / n);
    }
    std::printf(" (slab kmalloc-1k %.0f)\n", static_cast<double>(slab_kib("kmalloc-1k") - shrinker_tables_before) / n);
    std::fflush(stdout);
  }
  std::this_thread::sleep_for(std::chrono::seconds(hold_s));
  const auto release_all = Clock::now();
  for (auto& s : alive) s.release();
  std::printf("released %zu in %.0f ms\n", alive.size(), ms_since(release_all));
  alive.clear();

  if (churn > 0) {
    const long rss_start = kib("/proc/self/status", "VmRSS");
    const ChurnCost ours = churn_cost(churn, threads, [&] {
      try {
        auto s = sandboxes.create(create);
        s.exec({"/bin/true"});
        s.release();
        return true;
      } catch (const mayura::SandboxError&) {
        return false;
      }
    });
    std::printf(
        "churn: %d create + exec + release over %d threads: %.0f a second, host cpu %.1f ms each (of those that "
        "succeeded), %d failed, "
        "engine RSS %+.1f MiB (%.1f MiB at the start of the run)\n",
        churn, threads, ours.per_second, ours.cpu_ms_per_life, ours.failed,
        static_cast<double>(kib("/proc/self/status", "VmRSS") - rss_start) / 1024.0,
        static_cast<double>(rss_before) / 1024.0);
    // The anchor: as many lives as that (at most 2,000), bubblewrap's.
    const int anchor_lives = std::min(churn, 2000);
    if (mayura::bench::run_quietly(
            {"bwrap", "--ro-bind", "/", "/", "--unshare-all", "--die-with-parent", "--cap-drop", "ALL", "/bin/true"})) {
      const ChurnCost bwrap = churn_cost(anchor_lives, threads, [] {
        return mayura::bench::run_quietly(
            {"bwrap", "--ro-bind", "/", "/", "--unshare-all", "--die-with-parent", "--cap-drop", "ALL", "/bin/true"});
      });
      std::printf(
          "anchor: %d bwrap --ro-bind / / --unshare-all --cap-drop ALL /bin/true over %d threads: "
          "%.0f a second, host cpu %.1f ms each (of those that succeeded), %d failed\n",
          anchor_lives, threads, bwrap.per_second, bwrap.cpu_ms_per_life, bwrap.failed);
    } else {
      std::printf("anchor: bwrap does not run here; not measured\n");
    }
  }
  return 0;
}
