// Pause and resume of a sandbox running 100 processes, beside the same
// freeze done by hand: a bare cgroup2 directory holding 100 processes,
// cgroup.freeze written and cgroup.events waited on. The aim: each at most
// 5 ms at the median.
//   bench_pause [ITERATIONS]

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

#include "measure.hpp"
#include "mayura/native.hpp"
#include "mayura/sandboxes.hpp"

namespace {

using mayura::bench::Stats;
using Clock = std::chrono::steady_clock;

constexpr int kProcesses = 100;

double ms_since(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

// `op` timed after an untimed `before`, `iterations` times (after one of
// each to warm up).
Stats time_after(int iterations, const std::function<bool()>& before, const std::function<bool()>& op) {
  int failed = mayura::bench::succeeds(before) && mayura::bench::succeeds(op) ? 0 : 1;
  std::vector<double> ms;
  for (int i = 0; i < iterations; ++i) {
    if (!mayura::bench::succeeds(before)) {
      ++failed;
      continue;
    }
    const auto start = Clock::now();
    if (mayura::bench::succeeds(op)) {
      ms.push_back(ms_since(start));
    } else {
      ++failed;
    }
  }
  return mayura::bench::summarise(std::move(ms), failed);
}

void row(const char* name, const Stats& s) {
  std::printf("%-44s %8.3f %8.3f %5d/%d\n", name, s.median_ms, s.p95_ms, s.succeeded, s.succeeded + s.failed);
}

// Where this host's cgroup2 is mounted ("" if none).
std::string cgroup2_mount() {
  std::ifstream in("/proc/self/mountinfo");
  for (std::string line; std::getline(in, line);) {
    const auto dash = line.find(" - cgroup2 ");
    if (dash == std::string::npos) continue;
    std::istringstream fields(line);
    std::string id, parent, dev, root, point;
    fields >> id >> parent >> dev >> root >> point;
    return point;
  }
  return {};
}

bool write_text(const std::string& path, const std::string& text) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) return false;
  const bool ok = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  ::close(fd);
  return ok;
}

// A freeze by hand: the write, then cgroup.events polled until it says so.
bool freeze_by_hand(const std::string& cgroup, bool frozen) {
  if (!write_text(cgroup + "/cgroup.freeze", frozen ? "1" : "0")) return false;
  const int fd = ::open((cgroup + "/cgroup.events").c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  const std::string want = frozen ? "frozen 1" : "frozen 0";
  bool done = false;
  for (int i = 0; i < 1000 && !done; ++i) {
    char buf[256];
    const ssize_t n = ::pread(fd, buf, sizeof buf - 1, 0);
    done = n > 0 && std::string(buf, static_cast<std::size_t>(n)).find(want) != std::string::npos;
    if (!done) {
      pollfd p{fd, POLLPRI, 0};
      ::poll(&p, 1, 10);
    }
  }
  ::close(fd);
  return done;
}

// The anchor: 100 `sleep` processes in a cgroup of their own, frozen and
// thawed by hand.
void anchor(int iterations) {
  const std::string mount = cgroup2_mount();
  const std::string cgroup = mount + "/mayura-bench-freeze";
  if (mount.empty() || (::mkdir(cgroup.c_str(), 0755) != 0 && errno != EEXIST)) {
    std::printf("%-44s (no cgroup2 to make it in)\n", "by hand: a cgroup of 100 processes");
    return;
  }
  std::vector<pid_t> children;
  for (int i = 0; i < kProcesses; ++i) {
    char sleep_arg[] = "1000";
    char name[] = "sleep";
    char* argv[] = {name, sleep_arg, nullptr};
    pid_t pid = -1;
    if (::posix_spawnp(&pid, "sleep", nullptr, nullptr, argv, environ) == 0) {
      children.push_back(pid);
      write_text(cgroup + "/cgroup.procs", std::to_string(pid));
    }
  }
  const auto freeze_to = [&](bool to) { return [&, to] { return freeze_by_hand(cgroup, to); }; };
  const Stats freeze = time_after(iterations, freeze_to(false), freeze_to(true));
  const Stats thaw = time_after(iterations, freeze_to(true), freeze_to(false));
  freeze_by_hand(cgroup, false);
  for (const pid_t pid : children) ::kill(pid, SIGKILL);
  for (const pid_t pid : children) ::waitpid(pid, nullptr, 0);
  ::rmdir(cgroup.c_str());
  row("by hand: freeze a cgroup of 100 processes", freeze);
  row("by hand: thaw it", thaw);
}

}  // namespace

int main(int argc, char** argv) {
  const int iterations = argc > 1 ? std::max(10, std::atoi(argv[1])) : 200;
  std::printf("pause and resume, %d iterations each, ms (median, p95, ok)\n", iterations);
  mayura::SandboxesOptions limits;
  auto sandboxes = mayura::create_sandboxes(mayura::native_sandboxes(), limits);
  mayura::CreateOptions create;
  create.lifetime_ms = 600'000;
  const mayura::Sandbox sandbox = sandboxes.create(create);
  sandbox.exec({"sh", "-c",
                "i=0; while [ $i -lt " + std::to_string(kProcesses - 1) +
                    " ]; do sleep 1000 >/dev/null 2>&1 </dev/null & i=$((i+1)); done; "
                    "exec sleep 1000 >/dev/null 2>&1 </dev/null &"});
  const std::string counted =
      sandbox.exec({"sh", "-c", "ls /proc | grep -c '^[0-9]'"}).stdout;  // the init and this command's own included
  std::printf("processes in the sandbox: %s", counted.c_str());
  const auto to = [&](bool paused) {
    return [&, paused] {
      if (paused) {
        sandbox.pause();
      } else {
        sandbox.resume();
      }
      return sandbox.paused() == paused;
    };
  };
  const Stats pause = time_after(iterations, to(false), to(true));
  const Stats resume = time_after(iterations, to(true), to(false));
  sandbox.release();
  row("mayura: pause a sandbox of 100 processes", pause);
  row("mayura: resume it", resume);
  anchor(iterations);
  std::printf("published (E2B, VM snapshots): about 4 s per GiB to pause, about 1 s to resume\n");
  std::printf("aim: each at most 5 ms at the median\n");
  return 0;
}
