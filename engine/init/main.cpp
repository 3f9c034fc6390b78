// pid 1 inside the sandbox: the whole setup sequence, then the serve loop.

#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <ctime>
#include <map>
#include <string>
#include <vector>

#include "../capabilities.hpp"
#include "../fdpass.hpp"
#include "init.hpp"
#include "mayura/rootfs/mount_tree.hpp"

namespace mayura::init {
namespace {

// Setup steps, as reported to the engine (protocol::Status::value).
enum Step : std::int32_t {
  kReadConfig = 1,
  kRootfs = 2,
  kHostname = 3,
  kCapabilities = 4,
  kSignals = 5,
  kCgroupNs = 6,
};

void close_fds(const std::vector<int>& fds) {
  for (int fd : fds) ::close(fd);
}

[[noreturn]] void fail(std::int32_t step, int error, std::int64_t detail = 0) {
  // detail packs the rootfs op index (high bits) with the errno
  report(kControlFd, protocol::Status::setup_failed, step, (detail << 16) | (error & 0xffff));
  ::_exit(1);
}

protocol::Config read_config() {
  std::string bytes;
  std::vector<int> fds;
  protocol::Config config;
  if (fdpass::receive(kControlFd, bytes, fds) != 1) fail(kReadConfig, errno ? errno : EPIPE);
  close_fds(fds);
  if (!protocol::decode(bytes, config)) fail(kReadConfig, EPROTO);
  return config;
}

// The sequence that turns a fresh set of namespaces into a sandbox.
Identity contain(const protocol::Config& config) {
  // Nothing inside may ptrace us or read our memory through /proc.
  ::prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
  ::prctl(PR_SET_NAME, "mayura-init", 0, 0, 0);
  // Root the cgroup namespace at the sandbox's own cgroup (clone3 roots it at
  // the engine's), so nothing inside learns the host's cgroup paths.
  if (::unshare(CLONE_NEWCGROUP) != 0) fail(kCgroupNs, errno);
  const rootfs::BuildResult built = rootfs::build(config.plan, kFirstSourceFd);
  if (!built.ok) fail(kRootfs, built.error, built.step);
  if (::sethostname(config.hostname.data(), config.hostname.size()) != 0) fail(kHostname, errno);
  if (::chdir(config.workdir.c_str()) != 0) fail(kRootfs, errno, rootfs::kStepPivot);
  if (caps::drop_bounding_and_inheritable() != 0 || caps::lock_securebits() != 0 || caps::set_no_new_privs() != 0 ||
      caps::keep_only_init_caps() != 0) {
    fail(kCapabilities, errno);
  }
  return Identity{config.uid, config.gid};
}

class Server {
 public:
  Server(Identity who, int signals) : who_(who), signals_(signals) {}

  [[noreturn]] void run() {
    for (;;) {
      pollfd fds[2] = {{kControlFd, POLLIN, 0}, {signals_, POLLIN, 0}};
      if (::poll(fds, 2, -1) < 0) {
        if (errno == EINTR) continue;
        shutdown();
      }
      if (fds[1].revents & POLLIN) reap();
      if (fds[0].revents & (POLLIN | POLLHUP | POLLERR)) serve_one();
    }
  }

 private:
  void serve_one() {
    std::string bytes;
    std::vector<int> fds;
    const int got = fdpass::receive(kControlFd, bytes, fds);
    if (got == 0 || (got < 0 && errno != EMSGSIZE && errno != EAGAIN)) shutdown();
    if (got < 0) return;
    switch (protocol::kind_of(bytes)) {
      case protocol::Request::exec: {
        protocol::Exec exec;
        if (fds.size() == 5 && protocol::decode(bytes, exec)) {
          const pid_t pid = spawn_command(exec, fds, who_);
          if (pid > 0) {
            // keep only the status pipe: the exit goes there
            commands_[pid] = ::fcntl(fds[3], F_DUPFD_CLOEXEC, 3);
          }
        }
        break;
      }
      case protocol::Request::read:
      case protocol::Request::write:
      case protocol::Request::list:
      case protocol::Request::remove: {
        protocol::FileRequest request;
        if (!fds.empty() && protocol::decode(bytes, request)) {
          serve_file_request(protocol::kind_of(bytes), request, fds, who_);
        }
        break;
      }
      default:
        break;
    }
    close_fds(fds);
  }

  void reap() {
    signalfd_siginfo info;
    while (::read(signals_, &info, sizeof info) == sizeof info) {
    }
    for (;;) {
      int status = 0;
      const pid_t pid = ::waitpid(-1, &status, WNOHANG | __WALL);
      if (pid <= 0) break;
      auto it = commands_.find(pid);
      if (it != commands_.end()) {
        report(it->second, protocol::Status::exited, status);
        ::close(it->second);
        commands_.erase(it);
      }
    }
  }

  // The engine is gone: so is the sandbox. pid 1 exiting kills every process
  // in the namespace.
  [[noreturn]] void shutdown() {
    ::kill(-1, SIGKILL);
    ::_exit(0);
  }

  Identity who_;
  int signals_;
  std::map<pid_t, int> commands_;  // pid -> status pipe
};

}  // namespace
}  // namespace mayura::init

int main() {
  using namespace mayura::init;
  timespec started{};
  ::clock_gettime(CLOCK_MONOTONIC, &started);
  const mayura::protocol::Config config = read_config();
  const Identity who = contain(config);

  sigset_t mask;
  sigemptyset(&mask);
  sigaddset(&mask, SIGCHLD);
  if (::sigprocmask(SIG_BLOCK, &mask, nullptr) != 0) fail(kSignals, errno);
  const int signals = ::signalfd(-1, &mask, SFD_NONBLOCK | SFD_CLOEXEC);
  if (signals < 0) fail(kSignals, errno);
  ::signal(SIGPIPE, SIG_IGN);

  timespec now{};
  ::clock_gettime(CLOCK_MONOTONIC, &now);
  // The init's own start-to-ready time goes back for the engine's trace.
  // From here on the init lives as long as the engine's socket, not as long
  // as the engine thread that started it.
  ::prctl(PR_SET_PDEATHSIG, 0, 0, 0, 0);
  report(kControlFd, mayura::protocol::Status::ready, 0,
         (now.tv_sec - started.tv_sec) * 1000000 + (now.tv_nsec - started.tv_nsec) / 1000);
  Server(who, signals).run();
}
