#pragma once
// The sandbox's cgroups (cgroup2): one per sandbox, holding the init, and one
// per command beneath it, so that a command and everything it ever started
// can be killed in one write. The sandbox's cgroup.procs (and each command's)
// is handed to the sandbox's root uid, so the init can clone straight into a
// command's cgroup; nothing inside can write anywhere else.

#include <sys/types.h>

#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "cgroup_host.hpp"
#include "cgroup_limits.hpp"
#include "cgroup_placement.hpp"
#include "mayura/base/unique_fd.hpp"

namespace mayura::cgroups {

// The engine's place for sandbox cgroups (cgroup2), made ready: on a legacy
// host, where no cgroup2 is mounted, a hierarchy of its own mounted first (at
// kEngineCgroup2, where the next engine finds it; `host` then names it); the
// root made if missing. (Its `home` is emptied by enable_v2_controllers,
// where the emptying is needed.) Throws SandboxError(UNSUPPORTED) if it cannot be used.
Placement prepare_root(const std::string& configured, Host& host);

// Where a root named `name` goes on this host by default (the engine's
// delegated subtree or the top of the hierarchy), without changing anything.
std::string default_root_for(const Host& host, const std::string& name);

// The engine's places: its cgroup2 root, and its roots on the v1 hierarchies.
struct Places {
  Host host;  // as usable from the root
  std::string root;
  RootTotals totals;  // what all the engine's sandboxes together may use
  std::string root_name() const { return root.substr(root.rfind('/') + 1); }
};

// Sets the engine's totals on its roots (cgroup2's, and each v1 hierarchy's
// with a limit). Throws SandboxError naming the file it could not write.
void bound_roots(const Places& places);

// Removes the engine's roots if no sandbox cgroup is in them (another
// engine's included); an engine that still uses them makes them again.
void remove_root_if_unused(const Places& places) noexcept;

// A sandbox's cgroup2 tree, which keeps the no-internal-processes rule:
//   <root>/<name>                 memory.max, cpu.max; no process of its own
//   <root>/<name>/init            the init (where pids is on cgroup2)
//   <root>/<name>/commands        pids.max
//   <root>/<name>/commands/cmd-N  one command and all it started
// The init is cloned into <name> itself, roots its cgroup namespace there,
// then moves into `init`; where pids is not on cgroup2 it stays in <name>.
class SandboxCgroup {
 public:
  SandboxCgroup() = default;
  // mkdir <root>/<name> and its init and commands cgroups, delegated to
  // `owner`, and the sandbox's groups on v1. Throws on failure.
  SandboxCgroup(const Places& places, const std::string& name, uid_t owner, gid_t group);
  SandboxCgroup(SandboxCgroup&&) noexcept = default;
  SandboxCgroup& operator=(SandboxCgroup&&) noexcept = default;
  ~SandboxCgroup() { destroy(); }
  // The tree an engine before this one made for the sandbox `name`, with
  // its init in it (live restore): settled, its limits as they were set.
  // The commands' cgroups left empty are removed (a process started ahead
  // in one is gone with that engine); `next_command` gets a number above
  // every command's cgroup still there. GONE if the tree is not there.
  static SandboxCgroup existing(const Places& places, const std::string& name, uid_t owner, gid_t group,
                                std::uint64_t& next_command);

  const std::string& path() const { return path_; }
  // The directory, open until settle(): what the init is cloned into.
  int fd() const { return dir_.get(); }

  // Puts the init into the sandbox's v1 groups, before it runs anything.
  void place_init(pid_t pid) const { v1_.place(pid); }
  // Sets (or changes) the sandbox's limits; writes nothing if they are the
  // ones it has. The commands' process bound on cgroup2 waits for settle().
  void apply(const Limits& limits);
  // Bounds the I/O of each of `devices` (io.max; the host has the io
  // controller on cgroup2): all zero lifts the bounds. Throws SandboxError
  // naming the file.
  void bound_io(const std::vector<dev_t>& devices, const IoBounds& bounds) const;
  // Sets the sandbox's weight when cpus are contended, relative to the
  // engine's other sandboxes (cpu.weight, 1 to 10000; cpu.shares on v1).
  // 0 or the errno (ENOENT once the sandbox is removed); 0 where the host
  // has no cpu controller.
  int set_cpu_weight(std::uint32_t weight) const noexcept;
  // Once the init is ready (and so has left the sandbox's own cgroup for its
  // leaf): hands the pids controller down to the commands' cgroup and sets
  // their bound.
  void settle();
  // How many of the sandbox's processes the OOM killer has killed so far.
  std::uint64_t oom_kills() const;
  // For a command to join the v1 process limit before it runs; -1 if none.
  UniqueFd commands_procs() const { return v1_.commands_procs(); }

  // A command's cgroup, delegated like the sandbox's; its directory fd.
  UniqueFd make_command(const std::string& name) const;
  // A cgroup for the next command: the one an ended command left empty (a
  // cgroup with no process and no controller holds no state), and `name`
  // becomes its name; else a new one named `name`.
  UniqueFd take_command(std::string& name) const;
  // A command has ended: its cgroup, if empty and `reusable` (nothing can
  // join it any more: the init said the command ended or never started), is
  // kept for the next one (one at most); else it is removed if it can be (it
  // stays while a server the command started runs). `on_kept`, if given,
  // gets the kept cgroup's directory before any take_command can take it
  // (the init starts the next command's process there); what it throws is
  // dropped, and the cgroup kept all the same.
  void retire_command(const std::string& name, bool reusable,
                      const std::function<void(int dir)>& on_kept = {}) const noexcept;
  // A cgroup take_command gave for a command that was never asked of the
  // init (its start failed before): kept for the next command as it is (a
  // process started ahead for it may wait there), or, if another is kept
  // already, emptied and removed.
  void give_back_command(const std::string& name) const noexcept;
  // Sets every process in command cgroup `name` to nice `nice`.
  void renice_command(const std::string& name, int nice) const noexcept;
  // Kills every process of one command (and all it started), and waits
  // (bounded) until none is left.
  void kill_command(const std::string& name) const noexcept;
  // The same kill, without the wait: for what joined the command's cgroup
  // after the first one.
  void kill_command_again(const std::string& name) const noexcept;

  // Stops every process of the sandbox at once (`frozen`), or lets them all
  // go on, with the cgroup2 freezer (cgroup.freeze, on every layout: a
  // legacy host's sandboxes are on the engine's own cgroup2 too), and waits
  // until the kernel says it is done (cgroup.events). A freeze not done
  // within `bound` (a process in an uninterruptible wait) is undone and
  // fails TIMEOUT; GONE if the sandbox has ended.
  void freeze(bool frozen, std::chrono::milliseconds bound) const;

  // Kills everything in the sandbox and returns without waiting: every
  // process of the tree has SIGKILL pending (cgroup.kill). False where the
  // kernel has no cgroup.kill (before 5.14).
  bool kill_all() const noexcept;
  // Kills everything in the sandbox, waits until it is gone, removes the tree.
  // The path and fd stay as they were (a call racing with it fails on the
  // removed directory instead of touching a reused fd).
  void destroy() noexcept;

 private:
  UniqueFd make_delegated(int parent, const std::string& name, const char* step) const;
  // path_ + below, opened for one use (an idle sandbox holds no descriptor
  // of its cgroups); GONE if it was removed.
  UniqueFd open_dir(const std::string& below) const;

  Host host_;
  std::string path_;
  UniqueFd dir_;  // until settle()
  struct Spare {
    std::mutex mutex;
    std::string name;  // an empty command cgroup, for the next command
  };
  std::unique_ptr<Spare> spare_ = std::make_unique<Spare>();  // movable, unlike a mutex
  V1Groups v1_;
  // What the files hold; none until written once: a new cgroup's defaults
  // are not "no limit" (its memory.swap.max lets it swap).
  std::optional<Limits> applied_;
  bool destroyed_ = false;
  bool commands_limited_ = false;  // pids handed down to the commands' cgroup (cgroup2)
  uid_t owner_ = 0;
  gid_t group_ = 0;
};

// True if `path` can be a sandbox's cgroup: a cgroup2 directory whose name
// is an engine's sandbox name, with no `..` in the way.
bool looks_like_sandbox_cgroup(const std::string& path, const std::string& engine_root);

// Kills all processes in the cgroup tree at `path`, waits (bounded) until it
// is empty and removes it, deepest first. True if the tree is gone.
bool kill_and_remove(const std::string& path) noexcept;

// Removes a sandbox a dead engine left: its cgroup2 tree at `path` (with
// every process in it), then its v1 groups. False if it could not (then the
// record stays, to be tried again).
bool remove_orphan(const Places& places, const std::string& path) noexcept;

// True if the cgroup2 freezer stops the cgroup at `path` (cgroup.freeze).
bool is_frozen(const std::string& path);
// True while a process is in the cgroup2 tree at `path`.
bool has_processes(const std::string& path) noexcept;
// True if process `pid` is in the cgroup2 tree at `path` (an absolute path
// under the cgroup2 mount), as /proc/PID/cgroup shows it.
bool process_in(pid_t pid, const std::string& path);

}  // namespace mayura::cgroups
