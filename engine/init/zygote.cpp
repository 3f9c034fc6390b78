// The zygote: clones each sandbox's init on the engine's request, inside the
// sandbox's network namespace and straight into its cgroup, as a child of
// the engine's process, and hands the engine a pidfd of it. It exits when
// the engine's socket closes (the sandboxes live on their own sockets, not
// on this one).

#include <fcntl.h>
#include <linux/sched.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <string>
#include <vector>

#include "mayura/base/fdpass.hpp"
#include "init.hpp"

namespace mayura::init {
namespace {

void answer(int engine, std::uint32_t kind, int error, pid_t pid, int pidfd) {
  protocol::Status s;
  s.kind = kind;
  s.value = error;
  s.extra = pid;
  std::vector<int> fds;
  if (pidfd >= 0) fds.push_back(pidfd);
  fdpass::send(engine, std::string(reinterpret_cast<const char*>(&s), sizeof s), fds);
}

// fds: the sandbox's socket, its network namespace, its cgroup directory.
void spawn(int engine, int home_netns, const protocol::Config& config, const std::vector<int>& fds) {
  if (::setns(fds[1], CLONE_NEWNET) != 0) {
    answer(engine, protocol::Status::spawn_failed, errno, 0, -1);
    return;
  }
  int pidfd = -1;
  clone_args args{};
  // CLONE_PARENT: the init is the engine's child, not ours, so the engine
  // reaps it itself the moment it releases the sandbox (and, like the
  // zygote, it sends the engine no SIGCHLD).
  args.flags = CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWUTS | CLONE_NEWIPC | CLONE_NEWCGROUP |
               CLONE_INTO_CGROUP | CLONE_PIDFD | CLONE_PARENT;
  args.pidfd = reinterpret_cast<std::uint64_t>(&pidfd);
  args.exit_signal = 0;
  args.cgroup = static_cast<std::uint64_t>(fds[2]);
  // Where the init moves once its cgroup namespace is rooted at the
  // sandbox's cgroup (absent where no controller needs the move). Opened
  // here, by host root: the kernel checks a move against the opener.
  const int init_leaf = ::openat(fds[2], "init/cgroup.procs", O_WRONLY | O_CLOEXEC);
  const pid_t pid = static_cast<pid_t>(::syscall(SYS_clone3, &args, sizeof args));
  if (pid == 0) sandbox_child(config, fds[0], init_leaf);
  const int error = errno;
  if (init_leaf >= 0) ::close(init_leaf);
  ::setns(home_netns, CLONE_NEWNET);
  if (pid < 0) {
    answer(engine, protocol::Status::spawn_failed, error, 0, -1);
    return;
  }
  answer(engine, protocol::Status::started, 0, pid, pidfd);
  ::close(pidfd);
}

}  // namespace

int run_zygote(int engine) {
  ::prctl(PR_SET_NAME, "mayura-zygote", 0, 0, 0);
  ::prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
  // Whatever the host ignored (SIGCHLD would break reaping) is reset; only
  // SIGPIPE is ignored, by choice.
  for (int sig = 1; sig < NSIG; ++sig) {
    if (sig != SIGKILL && sig != SIGSTOP) ::signal(sig, SIG_DFL);
  }
  ::signal(SIGPIPE, SIG_IGN);
  // Every sandbox comes from here and inherits this: under memory pressure
  // on the host the kernel's OOM killer takes a sandbox's process before the
  // engine's (which a daemon may hold low) or anything else of the host's.
  // Written by host root, it is also the floor: nothing inside can lower it.
  if (const int adj = ::open("/proc/self/oom_score_adj", O_WRONLY | O_CLOEXEC); adj >= 0) {
    [[maybe_unused]] const ssize_t n = ::write(adj, "500", 3);
    ::close(adj);
  }
  const int home_netns = ::open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
  if (home_netns < 0) return 1;

  // It has no children to reap: what it clones is the engine's (CLONE_PARENT).
  for (;;) {
    std::string bytes;
    std::vector<int> fds;
    const int got = fdpass::receive(engine, bytes, fds);
    // The engine is gone: a sandbox still running ends by itself when its own
    // socket closes.
    if (got == 0 || (got < 0 && errno != EMSGSIZE)) return 0;
    if (got < 0) continue;
    protocol::Config config;
    if (fds.size() == 3 && protocol::decode(bytes, config)) {
      spawn(engine, home_netns, config, fds);
    } else {
      answer(engine, protocol::Status::spawn_failed, EPROTO, 0, -1);
    }
    for (int fd : fds) ::close(fd);
  }
}

}  // namespace mayura::init
