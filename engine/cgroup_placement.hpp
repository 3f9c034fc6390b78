#pragma once
// Where the engine's sandbox cgroups go on the host's cgroup2 hierarchy, by
// the layout the host really has, and what the engine must do with its own
// processes so that the kernel's no-internal-processes rule holds there.
//
//   - The engine in a delegated subtree (a systemd service or scope with
//     Delegate=yes, which systemd marks with the trusted.delegate xattr): its
//     sandboxes under <subtree>/mayura, and every process of the subtree's top
//     cgroup moved into <subtree>/engine first, so that the top can hand its
//     controllers down.
//   - Anywhere else (the root cgroup of a container or of a host without
//     systemd, a login session, a service without delegation): the cgroupfs
//     way of runc's, crun's and Docker's cgroupfs drivers, <mount>/mayura at
//     the top of the hierarchy, which root may always write.
//   - A root the caller names (NativeOptions::cgroup_root, MAYURA_CGROUP_ROOT)
//     is used as it is. If it lies below the engine's own cgroup, the engine
//     moves into <own>/engine first, as in a delegated subtree.

#include <functional>
#include <string>

namespace mayura::cgroups {

struct Placement {
  std::string root;  // the engine's root for sandbox cgroups
  std::string base;  // where a default root goes: the delegated subtree, or the mount
  // A cgroup that must hold no process of its own once the engine is placed
  // (its processes go to <home>/engine); empty if there is none.
  std::string home;
  std::string how;  // one line for `mayura-run doctor`
};

// Decides the placement from what the host shows. `mount`: the cgroup2 mount
// point; `own`: the engine's cgroup as a path below it ("" for the root
// cgroup); `configured`: an absolute root, or empty; `delegated`: whether a
// cgroup directory is marked as delegated.
Placement plan_placement(const std::string& mount, const std::string& own, const std::string& configured,
                         const std::function<bool(const std::string&)>& delegated);

// The engine's own cgroup2 path from the text of /proc/self/cgroup (its
// "0::" line), "" for the root cgroup.
std::string own_cgroup(const std::string& proc_self_cgroup);

// This process's placement on the cgroup2 hierarchy mounted at `mount`.
Placement plan_placement_here(const std::string& mount, const std::string& configured);

// Moves every process of `home` into <home>/engine (made if missing), so that
// `home` may hand domain controllers down. Returns how many processes are
// still in `home` (0 once it is empty). Processes that end meanwhile are no
// failure.
std::size_t move_into_leaf(const std::string& home);

}  // namespace mayura::cgroups
