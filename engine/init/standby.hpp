#pragma once
// The next command's process, started ahead in the spare command cgroup.

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

#include "mayura/base/unique_fd.hpp"
#include "init.hpp"

namespace mayura::init {

class Standby {
 public:
  Standby() = default;
  Standby(const Standby&) = delete;
  Standby& operator=(const Standby&) = delete;
  ~Standby();

  // Asks for one in the cgroup fds[0] (fds[1]: the v1 cgroup.procs it
  // joins), unless one waits already. It is started once the sandbox has
  // been quiet for a moment (start_if_due): a caller running commands back
  // to back would have its next one wait for it, on a core that the start
  // took from the caller. `now`: at once (no command runs or comes yet).
  void ask(const std::vector<int>& fds, bool now);
  // Milliseconds until one asked for is due; -1 if none is.
  int due_in_ms() const;
  // Starts the one asked for if it is due. A failure leaves none: commands
  // then start the usual way.
  void start_if_due(const Identity& who, const std::vector<std::string>& seccomp);

  // If one waits in `cgroup` and says ready: hands it the exec request (its
  // bytes) with the command's fds, and it is the command from here. Else
  // pid -1, and one that was not ready is dropped.
  Spawned take(int cgroup, const std::string& request, const CommandFds& fds);

  // True if `pid` was the standby, ended before it had a command.
  bool ended(pid_t pid);
  // True while one is started and waits for its command.
  bool waiting() const { return pid_ > 0; }
  // Kills the one that waits, if any (reaped by the serve loop).
  void drop() noexcept;
  // Drops it, and forgets one asked for: its engine has gone.
  void cancel() noexcept {
    drop();
    asked_cgroup_.reset();
    asked_v1_procs_.reset();
  }

 private:
  UniqueFd asked_cgroup_;  // asked for, not started yet
  UniqueFd asked_v1_procs_;
  std::int64_t due_ms_ = 0;  // CLOCK_MONOTONIC
  pid_t pid_ = -1;
  UniqueFd socket_;      // requests to it; its "ready" back
  UniqueFd error_pipe_;  // as a command's: its failed start, or nothing once it ran
  dev_t cgroup_dev_ = 0;
  ino_t cgroup_ino_ = 0;
};

}  // namespace mayura::init
