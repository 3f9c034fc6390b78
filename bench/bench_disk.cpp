// A sandbox whose working directory is on a disk of its own, beside one on
// a tmpfs: create + exec `true` + release, each, with nothing made ahead,
// then 50 ms after the last with a disk made ahead; and a sequential write
// inside (512 MiB, then fsync) beside the same write from the host into the
// file system the disks live on. The aims: a disk's create at most 1 ms over
// a tmpfs one's; its write at least 0.9 of the host's.
//   bench_disk [ITERATIONS] [DISK-DIR]

#include <sys/stat.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <vector>
#include <thread>
#include <functional>

#include "measure.hpp"
#include "mayura/native.hpp"
#include "mayura/sandboxes.hpp"
#include "run_quietly.hpp"

namespace {

using Clock = std::chrono::steady_clock;
constexpr int kWriteMiB = 512;
constexpr const char* kWrite = "dd if=/dev/zero of=written bs=1M count=512 conv=fsync status=none && rm written";

double seconds_since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

void row(const char* name, const mayura::bench::Stats& s) {
  std::printf("%-40s %8.2f %8.2f %5d/%d\n", name, s.median_ms, s.p95_ms, s.succeeded, s.succeeded + s.failed);
}

}  // namespace

int main(int argc, char** argv) {
  const int iterations = argc > 1 ? std::max(10, std::atoi(argv[1])) : 200;
  mayura::NativeOptions options;
  if (argc > 2) options.disk_dir = argv[2];
  options.prepared = 0;  // both the same way: each sandbox built on its create
  options.prepared_disks = 0;
  mayura::SandboxesOptions limits;
  auto sandboxes = mayura::create_sandboxes(mayura::native_sandboxes(options), limits);
  mayura::NativeOptions ahead_options = options;
  ahead_options.prepared_disks = 1;
  auto ahead = mayura::create_sandboxes(mayura::native_sandboxes(ahead_options), limits);
  const auto cycle = [](mayura::Sandboxes& on, std::optional<std::int64_t> disk_mib) {
    return [&on, disk_mib] {
      mayura::CreateOptions create;
      create.lifetime_ms = 60'000;
      create.disk_mib = disk_mib;
      const mayura::Sandbox s = on.create(create);
      const bool ok = s.exec({"true"}).exit_code == 0;
      s.release();
      return ok;
    };
  };
  std::printf("create + exec true + release, %d iterations each, ms (median, p95, ok)\n", iterations);
  const auto tmpfs = mayura::bench::measure(iterations, cycle(sandboxes, std::nullopt));
  const auto disk = mayura::bench::measure(iterations, cycle(sandboxes, 1024));
  row("workdir on a tmpfs", tmpfs);
  row("workdir on a disk of 1 GiB", disk);
  std::printf("a disk's cost, nothing made ahead: %+.2f ms\n", disk.median_ms - tmpfs.median_ms);
  // A caller that is not in a loop (an agent's next task): the disk made
  // ahead (prepared_disks, on by default) is ready; no sandbox is made ahead
  // for either.
  const int paced = std::min(iterations, 40);
  const auto pause = std::chrono::milliseconds(50);
  // In turn, so that both see the same host.
  std::vector<double> tmpfs_ms;
  std::vector<double> disk_ms;
  int tmpfs_failed = 0;
  int disk_failed = 0;
  const auto time_one = [&](const std::function<bool()>& fn, std::vector<double>& into, int& failed) {
    std::this_thread::sleep_for(pause);
    const auto start = Clock::now();
    if (mayura::bench::succeeds(fn)) into.push_back(seconds_since(start) * 1000);
    else ++failed;
  };
  for (int i = 0; i <= paced; ++i) {  // the first of each warms up
    time_one(cycle(sandboxes, std::nullopt), tmpfs_ms, tmpfs_failed);
    time_one(cycle(ahead, 1024), disk_ms, disk_failed);
    if (i == 0) {
      tmpfs_ms.clear();
      disk_ms.clear();
    }
  }
  const auto tmpfs_paced = mayura::bench::summarise(std::move(tmpfs_ms), tmpfs_failed);
  const auto disk_paced = mayura::bench::summarise(std::move(disk_ms), disk_failed);
  row("workdir on a tmpfs, 50 ms after the last", tmpfs_paced);
  row("the same on a disk made ahead", disk_paced);
  std::printf("a disk's cost, made ahead: %+.2f ms (aim: at most 1)\n\n", disk_paced.median_ms - tmpfs_paced.median_ms);
  ahead.close();

  // The host's write, into the directory the disks live in.
  const std::string here = options.disk_dir + "/bench-host";
  ::mkdir(options.disk_dir.c_str(), 0700);
  ::mkdir(here.c_str(), 0700);
  auto start = Clock::now();
  const bool host_ok = mayura::bench::run_quietly({"sh", "-c", "cd " + here + " && " + kWrite});
  const double host_s = seconds_since(start);
  mayura::bench::run_quietly({"rm", "-rf", here});
  mayura::CreateOptions create;
  create.lifetime_ms = 600'000;
  create.disk_mib = kWriteMiB + 256;
  const mayura::Sandbox s = sandboxes.create(create);
  start = Clock::now();
  const bool inside_ok = s.exec({"sh", "-c", kWrite}).exit_code == 0;
  const double inside_s = seconds_since(start);
  s.release();
  std::printf("sequential write of %d MiB, then fsync, MB/s\n", kWriteMiB);
  std::printf("  from the host, into %-19s %8.0f%s\n", options.disk_dir.c_str(), kWriteMiB * 1.048576 / host_s,
              host_ok ? "" : " (failed)");
  std::printf("  inside, onto its disk                  %8.0f%s\n", kWriteMiB * 1.048576 / inside_s,
              inside_ok ? "" : " (failed)");
  std::printf("  inside / host: %.2f (aim: at least 0.9)\n", host_s / inside_s);
  return host_ok && inside_ok && tmpfs.failed == 0 && disk.failed == 0 && tmpfs_paced.failed == 0 &&
                 disk_paced.failed == 0
             ? 0
             : 1;
}
