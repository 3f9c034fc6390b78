// Snapshots and forks of a sandbox's disk, side by side in one run: a
// snapshot of a workspace holding 1 GiB in 10,000 files of random bytes, its
// time and how long the sandbox stood still in it, beside `cp -a` and
// `tar -cf` of the same tree on the host and a `cp` of the disk's file; a
// create from that snapshot to its first command's exit, beside a create
// with a new disk; a fork of a workspace of 100 MiB into 20, each running
// `true`, beside 20 creates. The aims: a snapshot within 1 s, the sandbox
// frozen for at most 50 ms of it; a create from a snapshot at most twice a
// new one; a fork into 20 within 20 creates' time.
//   bench_snapshot [ITERATIONS] [DISK-DIR]

#include <sys/statvfs.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <fstream>
#include <functional>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "measure.hpp"
#include "mayura/native.hpp"
#include "mayura/sandboxes.hpp"
#include "run_quietly.hpp"

namespace {

using Clock = std::chrono::steady_clock;
using mayura::bench::Stats;

constexpr std::int64_t kDiskMiB = 2048;
constexpr int kForks = 20;
// A fork copies its disk's data once for itself and once for each sandbox,
// where the host cannot clone a file: 1 GiB 21 times over would take minutes
// here, and the create from the snapshot already shows one such copy. The
// fork's workspace is a tenth of it.
constexpr std::int64_t kForkDiskMiB = 256;
constexpr int kForkDirectories = 10;
// Forks and their 20 creates, in turn.
constexpr int kForkRuns = 3;
// Each copies the whole GiB: a few are enough for a median.
constexpr int kFromSnapshotRuns = 3;
constexpr std::uint64_t kHeadroom = 4ull << 30;  // left for the host's other writers
constexpr const char* kSnapshot = "bench-snapshot";

// `directories` of 100 files of 107,374 random bytes each: 100 of them are
// 1 GiB (less 1,824 bytes) in 10,000 files, none of it compressible or zero.
std::string tree(int directories) {
  return "set -e; for d in $(seq " + std::to_string(directories) +
         "); do mkdir d$d; head -c 10737400 /dev/urandom | split -b 107374 -a 2 -d - d$d/f; done";
}

// The wall clock in ns, about every ms, into /dev/shm rather than onto the
// disk being copied; its pid printed. A frozen sandbox does not tick.
constexpr const char* kTicker =
    "python3 -c 'import time\n"
    "f = open(\"/dev/shm/ticks\", \"w\", buffering=1)\n"
    "while True: f.write(\"%d\\n\" % time.time_ns()); time.sleep(0.001)\n"
    "' </dev/null >/dev/null 2>&1 & echo $!";

double seconds_since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

std::int64_t wall_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

const char* verdict(bool met) { return met ? "met" : "not met"; }

void row(const std::string& name, const Stats& s) {
  std::printf("  %-42s %8.2f %8.2f %5d/%d\n", name.c_str(), s.median_ms, s.p95_ms, s.succeeded, s.succeeded + s.failed);
}

void timing(const std::string& name, double seconds, bool ok = true) {
  std::printf("  %-52s %7.2f%s\n", name.c_str(), seconds, ok ? "" : " (failed)");
}

double gib(std::uint64_t bytes) { return static_cast<double>(bytes) / (1 << 30); }

std::uint64_t free_bytes(const std::string& dir) {
  struct statvfs st {};
  if (::statvfs(dir.c_str(), &st) != 0) return 0;
  return static_cast<std::uint64_t>(st.f_bavail) * st.f_frsize;
}

std::size_t disks_in(const std::string& dir) {
  std::size_t n = 0;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(dir, ec)) n += e.path().extension() == ".ext4" ? 1 : 0;
  return n;
}

// A released sandbox's disk is removed in the background, a second or more
// for a GiB where the host discards what it frees: awaited, so that the next
// case is not timed beside that I/O.
void await_removals(const std::string& dir, std::size_t disks) {
  const auto give_up = Clock::now() + std::chrono::seconds(60);
  while (disks_in(dir) > disks && Clock::now() < give_up) std::this_thread::sleep_for(std::chrono::milliseconds(20));
}

// Every copy below starts cold, as the engine's does: a disk's file is never
// in the host's cache (its loop device uses direct I/O).
void drop_caches() {
  ::sync();
  std::ofstream("/proc/sys/vm/drop_caches") << "3\n";
}

void run_inside(const mayura::Sandbox& s, const std::string& script) {
  const mayura::ExecResult r = s.exec({"sh", "-c", script});
  if (r.exit_code != 0) throw std::runtime_error("`" + script + "` failed in the sandbox: " + r.stderr);
}

// A shell script on the host, timed; `ok` false if it failed.
double host_seconds(const std::string& script, bool& ok) {
  const auto start = Clock::now();
  ok = mayura::bench::run_quietly({"sh", "-c", script});
  return seconds_since(start);
}

// create + exec `true`, timed to the command's exit; the release and
// `after` untimed. A warm-up first where asked.
Stats first_command(int runs, bool warm_up, const std::function<mayura::Sandbox()>& create,
                    const std::function<void()>& after) {
  int failed = 0;
  std::vector<double> ms;
  for (int i = warm_up ? -1 : 0; i < runs; ++i) {
    std::optional<mayura::Sandbox> s;
    const auto start = Clock::now();
    const bool ok = mayura::bench::succeeds([&] {
      s = create();
      return s->exec({"true"}).exit_code == 0;
    });
    const double took = seconds_since(start) * 1000;
    if (s) s->release();
    after();
    if (ok && i >= 0) ms.push_back(took);
    if (!ok) ++failed;
  }
  return mayura::bench::summarise(std::move(ms), failed);
}

// The longest the ticker went without a tick over [from, to] (wall clock,
// ns), and its usual tick, in ms; none unless it ticked on both sides.
struct Gap {
  double longest_ms = -1;
  double tick_ms = 0;
};

Gap longest_gap(const std::string& ticks, std::int64_t from, std::int64_t to) {
  std::vector<std::int64_t> t;
  std::istringstream in(ticks);
  for (std::int64_t ns = 0; in >> ns;) t.push_back(ns);
  Gap gap;
  if (t.size() < 3 || t.front() >= from || t.back() <= to) return gap;
  std::vector<std::int64_t> gaps;
  std::int64_t longest = 0;
  for (std::size_t i = 1; i < t.size(); ++i) {
    gaps.push_back(t[i] - t[i - 1]);
    if (t[i] > from && t[i - 1] < to) longest = std::max(longest, t[i] - t[i - 1]);
  }
  std::sort(gaps.begin(), gaps.end());
  gap.longest_ms = static_cast<double>(longest) / 1e6;
  gap.tick_ms = static_cast<double>(gaps[gaps.size() / 2]) / 1e6;
  return gap;
}

// What the run leaves behind, removed on every way out: the snapshot, the
// host's trees, and (by closing) every sandbox, whose disks go with them.
struct Leftovers {
  const mayura::Sandboxes& sandboxes;
  std::string host_dir;
  bool snapshot = false;
  ~Leftovers() {
    sandboxes.close();
    if (snapshot) {
      try {
        sandboxes.delete_snapshot(kSnapshot);
      } catch (const std::exception& e) {
        std::fprintf(stderr, "bench_snapshot: the snapshot stays: %s\n", e.what());
      }
    }
    std::error_code ec;
    std::filesystem::remove_all(host_dir, ec);
  }
};

int run(int iterations, const mayura::NativeOptions& options, const std::string& host_dir) {
  mayura::SandboxesOptions limits;
  limits.max_sandboxes = 2 * kForks + 2;
  const auto sandboxes = mayura::create_sandboxes(mayura::native_sandboxes(options), limits);
  Leftovers leftovers{sandboxes, host_dir};
  const std::string& disks = options.disk_dir;
  std::printf("free in %s: %.1f GiB\n", disks.c_str(), gib(free_bytes(disks)));

  mayura::CreateOptions with_disk;
  with_disk.lifetime_ms = 600'000;
  with_disk.disk_mib = kDiskMiB;
  const mayura::Sandbox workspace = sandboxes.create(with_disk);
  std::printf("a workspace: 1 GiB in 10,000 files of random bytes, on a disk of %lld MiB, s\n",
              static_cast<long long>(kDiskMiB));
  auto start = Clock::now();
  // Written out, as a workspace written a while ago is: the snapshot's time
  // is its copy, not the writeback of a GiB just made.
  run_inside(workspace, tree(100) + " && sync -f .");
  timing("made inside the sandbox", seconds_since(start));
  const std::string host_tree = host_dir + "/tree";
  std::filesystem::create_directories(host_tree);
  bool ok = false;
  const double host_made = host_seconds("cd " + host_tree + " && " + tree(100) + " && sync -f .", ok);
  timing("made on the host, beside the disks", host_made, ok);
  if (!ok) throw std::runtime_error("the host's tree could not be made in " + host_tree);

  // How long the sandbox stood still: a process in it ticks about every ms,
  // and the longest it went without a tick while snapshot() ran is the
  // freeze as its processes meet it (the freeze and thaw themselves, and
  // its next turn on a cpu, included), to within a tick.
  drop_caches();
  const std::string ticker = std::to_string(std::stol(workspace.exec({"sh", "-c", kTicker}).stdout));
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  const std::int64_t from = wall_ns();
  start = Clock::now();
  const mayura::Snapshot snapshot = workspace.snapshot(kSnapshot);
  const double snapshot_s = seconds_since(start);
  const std::int64_t to = wall_ns();
  leftovers.snapshot = true;
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  const Gap gap = longest_gap(workspace.read_file("/dev/shm/ticks"), from, to);
  run_inside(workspace, "kill " + ticker + " && rm /dev/shm/ticks");

  std::printf("\nits snapshot, and the same tree copied on the host, caches dropped before each, s\n");
  char name[96];
  std::snprintf(name, sizeof name, "mayura: snapshot() (%.2f GiB stored)", gib(snapshot.stored_bytes));
  timing(name, snapshot_s);
  if (gap.longest_ms >= 0) {
    std::snprintf(name, sizeof name, "  of which frozen (no tick; else one every %.1f ms)", gap.tick_ms);
    timing(name, gap.longest_ms / 1000);
  } else {
    std::printf("  %-52s %7s\n", "  of which frozen: the ticker did not tick both sides", "-");
  }
  drop_caches();
  const double cp_s = host_seconds("cp -a " + host_tree + " " + host_dir + "/copy && sync -f " + host_dir, ok);
  timing("cp -a of the tree, then sync", cp_s, ok);
  std::filesystem::remove_all(host_dir + "/copy");
  drop_caches();
  const double tar_s = host_seconds("cd " + host_tree + " && tar -cf - . > ../tree.tar && sync ../tree.tar", ok);
  timing("tar -cf - . > file, then sync", tar_s, ok);
  std::filesystem::remove(host_dir + "/tree.tar");
  // The snapshot's own file: the disk's data at the same offsets, the rest
  // a hole.
  drop_caches();
  const std::string stored = options.snapshot_dir + "/local/" + kSnapshot + ".ext4";
  const double disk_cp_s =
      host_seconds("cp --sparse=always " + stored + " " + host_dir + "/disk && sync " + host_dir + "/disk", ok);
  timing("cp --sparse=always of the disk's file, then sync", disk_cp_s, ok);
  std::filesystem::remove(host_dir + "/disk");
  std::printf("  snapshot: %.2f s (aim: at most 1) %s\n", snapshot_s, verdict(snapshot_s <= 1));
  if (gap.longest_ms >= 0)
    std::printf("  frozen: %.1f ms (aim: at most 50) %s\n", gap.longest_ms, verdict(gap.longest_ms <= 50));

  std::printf("\ncreate + exec true, to the command's exit, ms (median, p95, ok)\n");
  const std::size_t alive = disks_in(disks);
  const auto settle = [&] { await_removals(disks, alive); };
  const Stats plain = first_command(
      iterations, true, [&] { return sandboxes.create(with_disk); }, settle);
  mayura::CreateOptions from_snapshot;
  from_snapshot.lifetime_ms = 600'000;
  from_snapshot.snapshot = kSnapshot;
  const Stats restored = first_command(
      kFromSnapshotRuns, false, [&] { return sandboxes.create(from_snapshot); }, settle);
  row("a new disk of " + std::to_string(kDiskMiB) + " MiB", plain);
  row("from the snapshot (1 GiB in 10,000 files)", restored);
  std::printf("  from the snapshot / new: %s (aim: at most 2) %s\n", mayura::bench::ratio(restored, plain).c_str(),
              verdict(plain.failed + restored.failed == 0 && restored.median_ms <= 2 * plain.median_ms));

  // Every disk of the fork is reserved whole on the host, as a new one is.
  mayura::CreateOptions fork_disk = with_disk;
  fork_disk.disk_mib = kForkDiskMiB;
  const std::uint64_t free_now = free_bytes(disks);
  const std::uint64_t need = 2 * kForks * (static_cast<std::uint64_t>(kForkDiskMiB) << 20) + kHeadroom;
  std::printf("\n%d sandboxes on disks of %lld MiB, each running true, s (%.1f GiB free in %s; %.1f GiB needed)\n",
              kForks, static_cast<long long>(kForkDiskMiB), gib(free_now), disks.c_str(), gib(need));
  if (free_now < need) {
    std::printf("  not measured: too little space\n");
    return 1;
  }
  const mayura::Sandbox parent = sandboxes.create(fork_disk);
  run_inside(parent, tree(kForkDirectories) + " && sync -f .");
  const auto settle_beside_parent = [&] { await_removals(disks, alive + 1); };
  // In turn, a few times each: one run of either is at the mercy of the
  // host's moment.
  std::vector<double> fork_runs;
  std::vector<double> create_runs;
  bool forked = true;
  bool made = true;
  for (int run = 0; run < kForkRuns; ++run) {
    std::vector<mayura::Sandbox> forks;
    start = Clock::now();
    forked = mayura::bench::succeeds([&] {
               forks = parent.fork(kForks);
               return std::all_of(forks.begin(), forks.end(),
                                  [](const mayura::Sandbox& s) { return s.exec({"true"}).exit_code == 0; });
             }) &&
             forked;
    fork_runs.push_back(seconds_since(start));
    for (const mayura::Sandbox& s : forks) s.release();
    settle_beside_parent();
    std::vector<mayura::Sandbox> created;
    start = Clock::now();
    made = mayura::bench::succeeds([&] {
             for (int i = 0; i < kForks; ++i) {
               created.push_back(sandboxes.create(fork_disk));
               if (created.back().exec({"true"}).exit_code != 0) return false;
             }
             return true;
           }) &&
           made;
    create_runs.push_back(seconds_since(start));
    for (const mayura::Sandbox& s : created) s.release();
    settle_beside_parent();
  }
  parent.release();
  const double fork_s = median(fork_runs);
  const double created_s = median(create_runs);
  timing("fork of a workspace of 100 MiB in 1,000 files", fork_s, forked);
  timing("20 creates with a new disk, one after the other", created_s, made);
  std::printf("  fork: %.2f s (aim: at most the 20 creates' %.2f s; medians of %d in turn) %s\n", fork_s, created_s,
              kForkRuns, verdict(forked && made && fork_s <= created_s));
  return forked && made && plain.failed == 0 && restored.failed == 0 && gap.longest_ms >= 0 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  const int iterations = argc > 1 ? std::max(10, std::atoi(argv[1])) : 200;
  mayura::NativeOptions options;
  if (argc > 2) {
    options.disk_dir = std::string(argv[2]) + "/disks";
    options.snapshot_dir = std::string(argv[2]) + "/snapshots";
  }
  options.prepared = 0;        // every create here has a disk, which no sandbox made ahead has
  options.prepared_disks = 0;  // nor a disk made ahead: the creates compared make theirs, as a fork's do
  try {
    std::filesystem::create_directories(options.disk_dir);
    std::filesystem::create_directories(options.snapshot_dir);
    return run(iterations, options, options.disk_dir + "/bench-host");
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_snapshot: %s\n", e.what());
    return 1;
  }
}
