#pragma once
// Starting a sandbox's init: clone3 into fresh user, mount, pid, net, uts,
// ipc and cgroup namespaces (straight into the sandbox's cgroup), map its ids
// to the sandbox's own host range, and exec the init from its memfd. Between
// clone and exec the child makes raw system calls only: the host process may
// have many threads, and nothing else is safe there.

#include <sys/types.h>

#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <thread>
#include <stop_token>
#include <string>

#include "fd.hpp"
#include "protocol.hpp"

namespace mayura {

// The one thread that clones inits. It enters each sandbox's (pooled)
// network namespace for the clone, since setns changes only the calling
// thread, so no thread of the host process ever changes namespace.
class CloneThread {
 public:
  CloneThread();
  ~CloneThread();
  CloneThread(const CloneThread&) = delete;
  CloneThread& operator=(const CloneThread&) = delete;

  // clone3(args) from inside `netns`; the child runs child(arg) and never
  // returns. The pid, or -1 with errno.
  long clone_in(int netns, void* args, std::size_t size, void (*child)(const void*), const void* arg);

 private:
  struct Job;
  void run();
  std::mutex mutex_;
  std::condition_variable changed_;
  Job* job_ = nullptr;
  bool stopping_ = false;
  std::thread thread_;
};

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
  friend InitProcess launch_init(CloneThread&, int, int, int, std::uint32_t, const protocol::Config&, std::stop_token);
  pid_t pid_ = -1;
  UniqueFd pidfd_;
  UniqueFd control_;
};

// Starts the init in `netns` (loopback up already), hands it its config,
// and waits until it reports the sandbox ready. Throws SandboxError naming
// the failed step.
InitProcess launch_init(CloneThread& cloner, int netns, int init_memfd, int cgroup_fd, std::uint32_t host_id_base,
                        const protocol::Config& config, std::stop_token cancellation);

}  // namespace mayura
