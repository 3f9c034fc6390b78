#pragma once
// Starting sandboxes' inits.
//
// The engine runs one zygote per provider at a time: its own helper program,
// started from a sealed memfd (the only clone the host process makes), and
// replaced by a fresh one every so many inits (Zygote::spawn says why).
// Each sandbox's init is a fork of the zygote in fresh user, mount, pid, uts,
// ipc and cgroup namespaces, inside a network namespace the engine made, and
// straight in the sandbox's cgroup. A fork of a small single-threaded
// program of our own costs a fraction of an exec, and the host's threads and
// memory are never copied into a sandbox.

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <mutex>
#include <stop_token>
#include <string>
#include <vector>
#include <utility>

#include "mayura/base/unique_fd.hpp"
#include "protocol.hpp"

namespace mayura {

class Zygote {
 public:
  Zygote() = default;
  ~Zygote();
  // What the zygote runs: `first`, a sealed memfd of the init, and a fresh
  // one from `make` for each zygote after it (each generation's inits map
  // their own copy: spawn()). Set once, before the first spawn.
  void use_program(UniqueFd first, std::function<UniqueFd()> make) {
    program_ = std::move(first);
    make_program_ = std::move(make);
  }
  Zygote(const Zygote&) = delete;
  Zygote& operator=(const Zygote&) = delete;

  struct Spawned {
    pid_t pid = -1;
    UniqueFd pidfd;
  };
  // Clones a sandbox's init (restarting the zygote if it died). Throws
  // SandboxError naming the step.
  Spawned spawn(const std::string& config, int sandbox_socket, int netns, int cgroup);

 private:
  void start();
  void stop() noexcept;
  UniqueFd program_;  // the next zygote's, until it starts
  std::function<UniqueFd()> make_program_;
  std::mutex mutex_;
  UniqueFd socket_;
  UniqueFd pidfd_;
  int spawned_ = 0;  // inits this zygote forked
};

// A sandbox's init, owned: destroying it kills and reaps it.
class InitProcess {
 public:
  InitProcess() = default;
  InitProcess(InitProcess&& o) noexcept
      : pid_(std::exchange(o.pid_, -1)), control_(std::move(o.control_)), pidfd_(std::move(o.pidfd_)) {}
  InitProcess& operator=(InitProcess&& o) noexcept {
    if (this != &o) {
      kill_and_wait();
      pid_ = std::exchange(o.pid_, -1);
      control_ = std::move(o.control_);
      pidfd_ = std::move(o.pidfd_);
    }
    return *this;
  }
  // An init an engine before this one started, taken back (live restore):
  // no child of this process, so it is watched and killed through `pidfd`,
  // which names it whatever becomes of its pid, and reaped by its parent.
  static InitProcess adopt(pid_t pid, UniqueFd pidfd, UniqueFd control) {
    InitProcess init;
    init.pid_ = pid;
    init.pidfd_ = std::move(pidfd);
    init.control_ = std::move(control);
    return init;
  }
  InitProcess(const InitProcess&) = delete;
  InitProcess& operator=(const InitProcess&) = delete;
  ~InitProcess() { kill_and_wait(); }

  pid_t pid() const { return pid_; }
  // Its network namespace (the sandbox's), opened through its pid; none
  // (errno set) once it has ended. An adopted init's pid is another's once
  // its parent reaps it: one that still runs after the open is the one
  // opened.
  UniqueFd open_netns() const;
  // Its root directory (the sandbox's), the same way (O_PATH).
  UniqueFd open_root() const;
  int control() const { return control_.get(); }
  bool running() const noexcept;
  // SIGKILL, without waiting.
  void kill() const noexcept;
  // SIGKILL, then wait until it (and with it its whole pid namespace) is gone.
  void kill_and_wait() noexcept;
  // An init made ahead ran its setup at the lowest priority (nice 19): a
  // create that takes it gives it (and so its commands) nice 0 back.
  void to_foreground() const noexcept;

 private:
  friend InitProcess launch_init(Zygote&, int, int, std::uint32_t, const protocol::Config&, std::vector<UniqueFd>,
                                 const std::function<void(pid_t)>&, bool, const std::stop_token&);
  pid_t pid_ = -1;
  UniqueFd control_;
  UniqueFd pidfd_;  // an adopted init's only
};

// Starts a sandbox's init in `netns` (loopback up already) and `cgroup_fd`,
// maps its ids to the host range at `host_id_base`, calls `place` with its
// host pid (before it runs anything of its own), and waits until it reports
// the sandbox ready. Throws SandboxError naming the failed step. `ahead`: a
// sandbox made before anyone asked, whose setup (building its root) runs as
// nice 19, so that it takes next to no cpu a caller's command or create
// could use (SCHED_IDLE would starve it five times longer on a busy host).
// `disk`: the sandbox's disk (SandboxDisk's mounts), for the plan's handed
// ops in order; none if it has none.
inline constexpr int kAheadNice = 19;
// How long an init may take to set up its sandbox (and to start a first
// command's process ahead).
inline constexpr int kSetupTimeoutMs = 20000;
InitProcess launch_init(Zygote& zygote, int netns, int cgroup_fd, std::uint32_t host_id_base,
                        const protocol::Config& config, std::vector<UniqueFd> disk,
                        const std::function<void(pid_t)>& place, bool ahead, const std::stop_token& cancellation);

// Waits (bounded, cancellable: CANCELLED) until `fd` is readable; false at
// the bound.
bool wait_readable(int fd, int timeout_ms, const std::stop_token& cancellation);

}  // namespace mayura
