#pragma once
// The sandbox's cgroups (cgroup2): one per sandbox, holding the init, and one
// per command beneath it, so that a command and everything it ever started
// can be killed in one write. The sandbox's cgroup.procs (and each command's)
// is handed to the sandbox's root uid, so the init can clone straight into a
// command's cgroup; nothing inside can write anywhere else.

#include <sys/types.h>

#include <string>

#include "fd.hpp"

namespace mayura::cgroups {

// The cgroup2 mount point, from /proc/self/mountinfo; empty if none.
std::string find_cgroup2_mount();

// The engine's root directory for sandbox cgroups; made if missing.
// Throws SandboxError(UNSUPPORTED) if it cannot be used.
std::string prepare_root(const std::string& configured);

// Removes the engine's root if no sandbox cgroup is in it (another engine's
// included); an engine that still uses it makes it again as it needs it.
void remove_root_if_unused(const std::string& root) noexcept;

class SandboxCgroup {
 public:
  SandboxCgroup() = default;
  // mkdir <root>/<name>, delegated to `owner`. Throws on failure.
  SandboxCgroup(const std::string& root, const std::string& name, uid_t owner, gid_t group);
  SandboxCgroup(SandboxCgroup&&) noexcept = default;
  SandboxCgroup& operator=(SandboxCgroup&&) noexcept = default;
  ~SandboxCgroup() { destroy(); }

  const std::string& path() const { return path_; }
  int fd() const { return dir_.get(); }

  // A command's cgroup, delegated like the sandbox's; its directory fd.
  UniqueFd make_command(const std::string& name) const;
  // Kills every process of one command (and all it started), and waits
  // (bounded) until none is left.
  void kill_command(const std::string& name) const noexcept;
  // Removes a command's cgroup if nothing of it runs any more.
  void remove_command(const std::string& name) const noexcept;

  // Kills everything in the sandbox, waits until it is gone, removes the tree.
  // The path and fd stay as they were (a call racing with it fails on the
  // removed directory instead of touching a reused fd).
  void destroy() noexcept;

 private:
  std::string path_;
  UniqueFd dir_;
  bool destroyed_ = false;
  uid_t owner_ = 0;
  gid_t group_ = 0;
};

// True if `path` can be a sandbox's cgroup: a cgroup2 directory whose name
// is an engine's sandbox name, with no `..` in the way.
bool looks_like_sandbox_cgroup(const std::string& path, const std::string& engine_root);

// Kills all processes in the cgroup tree at `path`, waits (bounded) until it
// is empty and removes it, deepest first. Used for sandboxes and for what a
// dead engine left. True if the tree is gone.
bool kill_and_remove(const std::string& path) noexcept;

}  // namespace mayura::cgroups
