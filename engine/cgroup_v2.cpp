// Limits on cgroup2: memory.max and memory.swap.max and cpu.max on the
// sandbox's cgroup, pids.max on its commands' cgroup.

#include <string>

#include "cgroup_files.hpp"
#include "cgroup_limits.hpp"
#include "sys_error.hpp"

namespace mayura::cgroups {
namespace {

void set(int dir, const char* file, const std::string& value) {
  const int error = write_at(dir, file, value);
  if (error) fail_step(std::string("setting the sandbox's ") + file + " to " + value, error);
}

std::string or_max(const std::optional<std::uint64_t>& v) { return v ? std::to_string(*v) : "max"; }

}  // namespace

Host enable_v2_controllers(const Host& host, const std::string& parent, const std::string& root) {
  Host usable = host;
  auto enable = [&](Controller& c, const char* name) {
    if (!c.v2) return;
    const std::string change = std::string("+") + name;
    for (const std::string& dir : {parent, root}) {
      const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
      const int error = fd < 0 ? errno : write_at(fd, "cgroup.subtree_control", change);
      if (fd >= 0) ::close(fd);
      // EBUSY: the parent has processes of its own and a domain controller
      // cannot be handed past them (the no internal processes rule).
      if (error) {
        c.v2 = false;
        return;
      }
    }
  };
  enable(usable.memory, "memory");
  enable(usable.cpu, "cpu");
  enable(usable.pids, "pids");
  // Swap can be held at zero only where the kernel accounts it: then every
  // cgroup below the root, the engine's first, has memory.swap.max.
  if (usable.memory.v2) usable.swap_limit = ::access((root + "/memory.swap.max").c_str(), F_OK) == 0;
  else if (host.memory.v2) usable.swap_limit = false;
  return usable;
}

void enable_v2_command_limits(int sandbox_dir, const Host& host) {
  if (host.pids.v2) set(sandbox_dir, "cgroup.subtree_control", "+pids");
}

void apply_v2(int sandbox_dir, int commands_dir, const Host& host, const Limits& limits) {
  if (host.memory.v2) {
    set(sandbox_dir, "memory.max", or_max(limits.memory_bytes));
    // No swap: a memory bound that swap could stretch is no bound. A kernel
    // without swap accounting has no such file, and no swap to stretch into.
    const int error = write_at(sandbox_dir, "memory.swap.max", "0");
    if (error && error != ENOENT) fail_step("setting the sandbox's memory.swap.max to 0", error);
  }
  if (host.cpu.v2) {
    const std::string quota = limits.cpus ? std::to_string(cpu_quota_us(*limits.cpus)) : "max";
    set(sandbox_dir, "cpu.max", quota + " " + std::to_string(kCpuPeriodUs));
  }
  if (host.pids.v2) set(commands_dir, "pids.max", or_max(limits.pids));
}

OomCounter v2_oom_counter(int sandbox_dir) {
  return OomCounter(UniqueFd(::openat(sandbox_dir, "memory.events", O_RDONLY | O_CLOEXEC)));
}

}  // namespace mayura::cgroups
