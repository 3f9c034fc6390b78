#pragma once
// A sandbox's resource limits, and how each kind of cgroup carries them.
//
// Memory and cpu bound the whole sandbox (its init and file helpers
// included). The process count bounds its commands only: they live in a
// `commands` cgroup below the sandbox's, so a fork bomb that fills it still
// leaves the init room to serve file requests and kill it.

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>

#include "cgroup_host.hpp"
#include "mayura/base/unique_fd.hpp"

namespace mayura::cgroups {

struct Limits {
  std::optional<double> cpus;                 // none: every cpu
  std::optional<std::uint64_t> memory_bytes;  // none: no bound; swap is never allowed
  std::optional<std::uint64_t> pids;          // none: no bound
  bool operator==(const Limits&) const = default;
};

// Bounds on one block device's reads and writes, each per second; 0: none.
struct IoBounds {
  std::uint64_t read_bytes = 0;
  std::uint64_t write_bytes = 0;
  std::uint64_t read_ops = 0;
  std::uint64_t write_ops = 0;
  bool operator==(const IoBounds&) const = default;
};

// Bounds on all of an engine's sandboxes together, set on its cgroup roots
// (cgroup2's and each v1 hierarchy's): none where not given.
struct RootTotals {
  std::optional<std::uint64_t> memory_bytes;
  std::optional<std::uint64_t> pids;
};

constexpr std::uint64_t kCpuPeriodUs = 100000;

// The quota (µs per period) that gives `cpus` cpus.
std::uint64_t cpu_quota_us(double cpus);

// --- cgroup2 ------------------------------------------------------------

// Turns on the controllers the host has on cgroup2 in every cgroup from the
// mount down to `root` (a cgroup can only use what its parent hands down),
// writing only where a controller is not handed down already. Returns the
// host as it is usable from `root`: a controller that could not be turned on
// is not there. `home`, if not empty, is a cgroup the engine empties into a
// leaf of its own (cgroup_placement.hpp), emptied again before it is used.
Host enable_v2_controllers(const Host& host, const std::string& mount, const std::string& root,
                           const std::string& home = "");

// Lets the sandbox's `commands` cgroup have a process limit of its own. Only
// once the init has left the sandbox's own cgroup for its `init` leaf: pids
// is a threaded controller, and a cgroup with a process of its own and a
// threaded controller handed down becomes a thread root, below which no
// process may go into a domain cgroup (clone3 then fails EOPNOTSUPP).
void enable_v2_command_limits(int sandbox_dir, const Host& host);

// Writes `limits` into a sandbox's cgroup2 directories (the commands' pids.max
// only if `commands_limited`, the pids controller handed down to them).
// Throws SandboxError naming the file that could not be written.
void apply_v2(int sandbox_dir, int commands_dir, const Host& host, const Limits& limits, bool commands_limited);

// io.max's line bounding `device` ("MAJ:MIN rbps=... wbps=... riops=...
// wiops=..."; "max" where none, and a line of all "max" lifts the bounds).
std::string io_max_line(dev_t device, const IoBounds& bounds);
// Writes that line into a sandbox's cgroup2 directory. Throws SandboxError
// naming the file.
void apply_v2_io(int sandbox_dir, dev_t device, const IoBounds& bounds);

// How many processes the OOM killer has killed in a sandbox, from its
// counter file kept open: read on every exec, so one read, no open.
// The OOM kills that the memory.events (v2) or memory.oom_control (v1) open
// at `fd` counts; 0 for no file.
std::uint64_t read_oom_kills(int fd);

// Sets `totals` on the engine's cgroup2 root (memory.max, pids.max), where
// those controllers are on cgroup2. Throws SandboxError naming the file.
void bound_v2_root(const Host& host, const std::string& root, const RootTotals& totals);

// Writes only the commands' pids.max (once pids is handed down to them).
void apply_v2_command_limit(int commands_dir, const Limits& limits);

// The OOM kills memory.events of the sandbox's cgroup counts.
std::uint64_t v2_oom_kills(int sandbox_dir);

// --- cgroup v1 ----------------------------------------------------------

// A sandbox's groups on the v1 hierarchies that carry its limits:
// <mount>/<root_name>/<name> for each, and <pids mount>/<root_name>/<name>/commands.
class V1Groups {
 public:
  V1Groups() = default;
  // Makes the groups (none if the host has nothing on v1). Throws on failure.
  // A root it makes (another engine that ended may have removed an unused
  // one) gets `totals`.
  V1Groups(const Host& host, const std::string& root_name, const std::string& name, const RootTotals& totals);
  V1Groups(V1Groups&&) noexcept = default;
  V1Groups& operator=(V1Groups&&) noexcept = default;
  ~V1Groups() { destroy(); }
  // The groups an engine before this one made for the sandbox `name` (live
  // restore); none of a hierarchy where they are missing.
  static V1Groups existing(const Host& host, const std::string& root_name, const std::string& name);

  bool empty() const { return memory_path_.empty() && cpu_path_.empty() && pids_path_.empty(); }
  // Puts a process (the init, before it runs anything) into every group.
  void place(pid_t pid) const;
  void apply(const Limits& limits) const;
  // Writes the cpu group's cpu.shares (at least 2, the kernel's least); 0
  // or the errno, and 0 if the host has no cpu group on v1.
  int set_cpu_shares(std::uint32_t shares) const noexcept;
  // The commands group's cgroup.procs, opened for writing: a command writes
  // "0" to it to join before it runs; none if pids is not on v1.
  UniqueFd commands_procs() const;
  // The OOM kills of the memory group (0 if there is none).
  std::uint64_t oom_kills() const;
  // Removes the groups (their processes must be gone). Bounded.
  void destroy() noexcept;

 private:
  // Paths only: each use opens what it needs.
  std::string memory_path_, cpu_path_, pids_path_;
  bool destroyed_ = false;
};

// Removes what a sandbox named `name` had on v1, for a sandbox a dead engine
// left. Its processes must be gone.
void remove_v1(const Host& host, const std::string& root_name, const std::string& name) noexcept;
// Makes the engine's v1 roots (memory, pids) if missing and sets `totals` on
// them (memory.limit_in_bytes, pids.max). Throws SandboxError naming the file.
void bound_v1_roots(const Host& host, const std::string& root_name, const RootTotals& totals);
// Removes the engine's v1 roots if no sandbox of any engine uses them.
void remove_v1_roots_if_unused(const Host& host, const std::string& root_name) noexcept;

}  // namespace mayura::cgroups
