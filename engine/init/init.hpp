#pragma once
// The in-sandbox init: pid 1 of the sandbox's pid namespace. It builds the
// root, sheds privilege, then reaps orphans and serves the engine's requests
// until the engine's socket closes.

#include <sys/types.h>

#include <string>
#include <vector>

#include "protocol.hpp"

namespace mayura::init {

constexpr int kControlFd = 3;

struct Identity {
  uid_t uid = 1000;
  gid_t gid = 1000;
};

// The zygote: serves spawn requests on `engine` until it closes.
int run_zygote(int engine);

// In a child the zygote cloned into fresh namespaces: becomes the sandbox's
// init and never returns. `socket` is the sandbox's own socket to the engine;
// `init_leaf`, if not -1, the cgroup.procs of the sandbox's `init` cgroup, to
// move into once the cgroup namespace is rooted at the sandbox's cgroup.
[[noreturn]] void sandbox_child(const protocol::Config& config, int socket, int init_leaf);

// Writes one status record; errors are ignored (the reader is gone).
void report(int fd, std::uint32_t kind, std::int32_t value, std::int64_t extra = 0);

// Starts a command (clone3 into its cgroup). On success, the pid and the read
// end of a pipe that turns readable when the exec has worked (end of file) or
// failed (an errno); on failure pid -1, the failure reported on `status`.
struct Spawned {
  pid_t pid = -1;
  int error_pipe = -1;
};
// fds: as protocol.hpp lists them for exec. `seccomp`: the filters the
// command runs under (BPF bytes), in order.
constexpr std::size_t kExecCgroupFd = 4;
Spawned spawn_command(const protocol::Exec& exec, const std::vector<int>& fds, const Identity& who,
                      const std::vector<std::string>& seccomp);

// How a command's start failed: {step, errno}, as its error pipe carries it.
struct SpawnFailure {
  int message[2] = {static_cast<int>(protocol::SpawnStep::setup), 0};
  bool set(protocol::SpawnStep step, int error) {
    message[0] = static_cast<int>(step);
    message[1] = error;
    return false;
  }
  void send(int error_pipe) const;
};

// The streams a command gets, and its program (-1: argv[0] names it).
struct CommandFds {
  int in = -1;
  int out = -1;
  int err = -1;
  int program = -1;
  bool terminal = false;  // in, out and err are a terminal's end (protocol::Exec::terminal)
};

// The steps of a command's start, in the process cloned for it. What no
// command decides: its process group and signals, the v1 process limit
// (`v1_procs`, -1 where none) and the filters; false on a failure.
bool prepare_command(int v1_procs, const std::vector<std::string>& seccomp, SpawnFailure& failure);
// The command's streams as 0, 1 and 2, every other fd close-on-exec, and
// on a terminal its session.
bool take_streams(const CommandFds& fds, SpawnFailure& failure);
// The rest: the sandbox user, the directory, the exec (of `program` if the
// request says so). Returns only when one failed, said in `failure`.
void become_command(const protocol::Exec& exec, int program, const Identity& who, SpawnFailure& failure);

// Closes every descriptor from 3 up but those in `keep`.
int close_all_but(std::vector<int> keep);

// Serves one file request in a child that runs as the sandbox user.
void serve_file_request(protocol::Request kind, const protocol::FileRequest& request, const std::vector<int>& fds,
                        const Identity& who);

}  // namespace mayura::init
