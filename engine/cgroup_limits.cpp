// What the cgroup2 and v1 limit code share.

#include <cmath>

#include "cgroup_files.hpp"
#include "cgroup_limits.hpp"

namespace mayura::cgroups {

std::uint64_t cpu_quota_us(double cpus) {
  // The kernel takes no quota under 1 ms.
  const double quota = std::ceil(cpus * static_cast<double>(kCpuPeriodUs));
  return quota < 1000 ? 1000 : static_cast<std::uint64_t>(quota);
}

// memory.events (cgroup2) and memory.oom_control (v1) both say "oom_kill N".
std::uint64_t read_oom_kills(int fd) { return fd >= 0 ? keyed_value(read_from(fd), "oom_kill") : 0; }

}  // namespace mayura::cgroups
