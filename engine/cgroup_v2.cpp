// Limits on cgroup2: memory.max and memory.swap.max and cpu.max and io.max
// on the sandbox's cgroup, pids.max on its commands' cgroup.

#include <sys/sysmacros.h>
#include <unistd.h>

#include <cerrno>
#include <sstream>
#include <string>
#include <vector>

#include "cgroup_files.hpp"
#include "cgroup_limits.hpp"
#include "cgroup_placement.hpp"
#include "sys_error.hpp"

namespace mayura::cgroups {
namespace {

std::string or_max(const std::optional<std::uint64_t>& v) { return v ? std::to_string(*v) : "max"; }

}  // namespace

Host enable_v2_controllers(const Host& host, const std::string& mount, const std::string& root,
                           const std::string& home) {
  Host usable = host;
  // Every cgroup from the mount down to the root, each a parent of the next.
  std::vector<std::string> chain;
  for (std::string dir = root; dir.size() >= mount.size() && dir.rfind(mount, 0) == 0;
       dir = dir.substr(0, dir.rfind('/'))) {
    chain.insert(chain.begin(), dir);
    if (dir == mount) break;
  }
  auto offered = [](const std::string& dir, const char* name) {
    std::istringstream words(read_path(dir + "/cgroup.controllers"));
    for (std::string w; words >> w;) {
      if (w == name) return true;
    }
    return false;
  };
  auto has_processes = [](const std::string& dir) { return !read_path(dir + "/cgroup.procs").empty(); };
  auto hand_down = [](const std::string& dir, const std::string& change) {
    const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    const int error = fd < 0 ? errno : write_at(fd, "cgroup.subtree_control", change);
    if (fd >= 0) ::close(fd);
    return error;
  };
  // The one cgroup the engine may empty (its `home`) is emptied right
  // before each try: processes started there meanwhile (engines starting at
  // once, each forked before another moved its parent; a test runner's next
  // test) put it back to holding processes, so it is tried again, a bounded
  // number of times, rather than a limit being silently given up.
  auto hand_down_from_home = [&](const std::string& dir, const std::string& change) {
    int error = EBUSY;
    for (int attempt = 0; attempt < 100; ++attempt) {
      move_into_leaf(dir);
      if (!has_processes(dir)) {
        error = hand_down(dir, change);
        if (error != EBUSY) return error;
      }
      ::usleep(2000);
    }
    return error;
  };
  auto enable = [&](Controller& c, const char* name) {
    if (!c.v2) return;
    const std::string change = std::string("+") + name;
    for (std::size_t i = 0; i < chain.size(); ++i) {
      // Handed down already (by systemd, or an engine before this one):
      // nothing to write in a cgroup that may not be ours.
      if (i + 1 < chain.size() && offered(chain[i + 1], name)) continue;
      // Below the root, a cgroup with processes of its own can hand down no
      // domain controller (EBUSY), and handing down a threaded one (cpu,
      // pids) would make it a thread root, below which no sandbox could be
      // made at all: leave the controller off instead.
      int error = 0;
      if (chain[i] == home) error = hand_down_from_home(chain[i], change);
      else if (chain[i] != mount && has_processes(chain[i])) error = EBUSY;
      else error = hand_down(chain[i], change);
      if (error) {
        c.v2 = false;
        return;
      }
    }
  };
  enable(usable.memory, "memory");
  enable(usable.cpu, "cpu");
  enable(usable.pids, "pids");
  enable(usable.io, "io");
  // Swap can be held at zero only where the kernel accounts it: then every
  // cgroup below the root, the engine's first, has memory.swap.max.
  if (usable.memory.v2) usable.swap_limit = ::access((root + "/memory.swap.max").c_str(), F_OK) == 0;
  else if (host.memory.v2) usable.swap_limit = false;
  return usable;
}

void bound_v2_root(const Host& host, const std::string& root, const RootTotals& totals) {
  const auto bound = [&](bool on_v2, const char* file, const std::optional<std::uint64_t>& value) {
    if (!on_v2 || !value) return;
    const int error = write_at(AT_FDCWD, (root + "/" + file).c_str(), std::to_string(*value));
    if (error) fail_step("setting the engine's " + root + "/" + file, error);
  };
  bound(host.memory.v2, "memory.max", totals.memory_bytes);
  bound(host.pids.v2, "pids.max", totals.pids);
}

void enable_v2_command_limits(int sandbox_dir, const Host& host) {
  if (host.pids.v2) set_file(sandbox_dir, "cgroup.subtree_control", "+pids");
}

void apply_v2(int sandbox_dir, int commands_dir, const Host& host, const Limits& limits, bool commands_limited) {
  if (host.memory.v2) {
    set_file(sandbox_dir, "memory.max", or_max(limits.memory_bytes));
    // No swap: a memory bound that swap could stretch is no bound. A kernel
    // without swap accounting has no such file, and no swap to stretch into.
    const int error = write_at(sandbox_dir, "memory.swap.max", "0");
    if (error && error != ENOENT) fail_step("setting the sandbox's memory.swap.max to 0", error);
  }
  if (host.cpu.v2) {
    const std::string quota = limits.cpus ? std::to_string(cpu_quota_us(*limits.cpus)) : "max";
    set_file(sandbox_dir, "cpu.max", quota + " " + std::to_string(kCpuPeriodUs));
  }
  if (host.pids.v2 && commands_limited) apply_v2_command_limit(commands_dir, limits);
}

void apply_v2_command_limit(int commands_dir, const Limits& limits) {
  set_file(commands_dir, "pids.max", or_max(limits.pids));
}

std::string io_max_line(dev_t device, const IoBounds& bounds) {
  const auto bound = [](std::uint64_t v) { return v ? std::to_string(v) : std::string("max"); };
  return std::to_string(major(device)) + ":" + std::to_string(minor(device)) + " rbps=" + bound(bounds.read_bytes) +
         " wbps=" + bound(bounds.write_bytes) + " riops=" + bound(bounds.read_ops) +
         " wiops=" + bound(bounds.write_ops);
}

void apply_v2_io(int sandbox_dir, dev_t device, const IoBounds& bounds) {
  set_file(sandbox_dir, "io.max", io_max_line(device, bounds));
}

std::uint64_t v2_oom_kills(int sandbox_dir) {
  return read_oom_kills(UniqueFd(::openat(sandbox_dir, "memory.events", O_RDONLY | O_CLOEXEC)).get());
}

}  // namespace mayura::cgroups
