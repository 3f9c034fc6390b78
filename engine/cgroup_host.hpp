#pragma once
// What kind of cgroup host this is, found the way the runtimes do it (statfs
// of /sys/fs/cgroup, then of /sys/fs/cgroup/unified, then the mount table),
// and where each limit can be enforced on it.
//
//   unified: cgroup2 only, at /sys/fs/cgroup. Processes are tracked and
//            killed there, and limits set there.
//   hybrid:  cgroup2 (usually /sys/fs/cgroup/unified) with few or no
//            controllers; memory, cpu and pids on cgroup v1 hierarchies.
//            Processes are tracked and killed on cgroup2, limited on v1.
//   legacy:  v1 only. The engine mounts a cgroup2 hierarchy of its own (with
//            no controllers) to track and kill processes; limits are on v1.

#include <cstdint>
#include <functional>
#include <string>

namespace mayura::cgroups {

enum class Layout { unified, hybrid, legacy };

// Where an engine on a legacy host mounts the cgroup2 hierarchy it tracks and
// kills with, and leaves it for the next engine (every cgroup2 mount shows
// the same one hierarchy, so there is nothing to gain from more).
constexpr const char* kEngineCgroup2 = "/run/mayura-cgroup2";

// Where one kind of limit is enforced: on cgroup2, on a v1 hierarchy (its
// mount point), or nowhere.
struct Controller {
  bool v2 = false;
  std::string v1;
  bool available() const { return v2 || !v1.empty(); }
};

struct Host {
  Layout layout = Layout::legacy;
  std::string v2;  // the cgroup2 mount point; empty on a legacy host the engine has not mounted one on yet
  // The cgroup2 mount, or where an engine mounts its own on a legacy host.
  std::string v2_or_engines() const { return v2.empty() ? std::string(kEngineCgroup2) : v2; }
  Controller memory, cpu, pids;
  // A disk's I/O bounds (io.max): on cgroup2 only. v1's blkio cannot bound
  // buffered writes (their writeback is charged to no cgroup of v1's), so
  // it would be no bound on a sandbox.
  Controller io;
  bool swap_limit = false;  // swap can be held at zero (memsw on v1; swap.max on v2)
  // Some hierarchy is mounted with favordynmods. Without it, a move by a
  // write to cgroup.procs after a quiet spell waits for an RCU grace period
  // (the kernel takes its global cgroup_threadgroup_rwsem for writing), 9-18
  // ms measured on these machines, and forks in every sandbox wait behind
  // it. Each create makes such a move when a limit's controller is there:
  // into each v1 hierarchy with a limit, and on cgroup2 into the init's leaf
  // (the init is cloned into the sandbox's cgroup, which roots its cgroup
  // namespace, then leaves it to its commands' cgroups).
  bool favor_dynmods = false;
  bool moves_on_create() const { return memory.available() || cpu.available() || pids.available(); }
  // The same move on every exec: a command joins the commands' pids group on
  // v1 by a write (CLONE_INTO_CGROUP reaches cgroup2 only).
  bool moves_on_exec() const { return !pids.v1.empty(); }

  // One line: which kind of host, and what it can enforce.
  std::string describe() const;
};

// What detection looks at, so that every kind of host can be tested from a
// description of it.
struct Probe {
  std::string mountinfo;                                    // /proc/self/mountinfo
  std::function<std::int64_t(const std::string&)> fs_type;  // statfs f_type; 0 if none
  std::function<bool(const std::string&)> exists;           // a file exists
  std::function<std::string(const std::string&)> read;      // a small file's contents
};

Host detect(const Probe& probe);
// This machine.
Host detect_host();

std::string_view layout_name(Layout layout);

}  // namespace mayura::cgroups
