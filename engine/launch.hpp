#pragma once
// Starting a sandbox's init: clone3 into fresh user, mount, pid, net, uts,
// ipc and cgroup namespaces (straight into the sandbox's cgroup), map its ids
// to the sandbox's own host range, and exec the init from its memfd. Between
// clone and exec the child makes raw system calls only: the host process may
// have many threads, and nothing else is safe there.

#include <sys/types.h>

#include <cstdint>
#include <stop_token>
#include <string>

#include "fd.hpp"
#include "protocol.hpp"

namespace mayura {

// The init process, owned: destroying it kills and reaps it.
class InitProcess {
 public:
  InitProcess() = default;
  InitProcess(InitProcess&&) noexcept = default;
  InitProcess& operator=(InitProcess&&) noexcept = default;
  ~InitProcess() { kill_and_reap(); }

  pid_t pid() const { return pid_; }
  int pidfd() const { return pidfd_.get(); }
  int control() const { return control_.get(); }
  bool running() const noexcept;
  void kill_and_reap() noexcept;

 private:
  friend InitProcess launch_init(int, int, std::uint32_t, const protocol::Config&, std::stop_token);
  pid_t pid_ = -1;
  UniqueFd pidfd_;
  UniqueFd control_;
};

// Starts the init, hands it its config, and waits until it reports the
// sandbox ready. Throws SandboxError naming the failed step.
InitProcess launch_init(int init_memfd, int cgroup_fd, std::uint32_t host_id_base, const protocol::Config& config,
                        std::stop_token cancellation);

}  // namespace mayura
