// A sandbox's init: the child the zygote cloned into fresh namespaces takes
// its trees and ids, builds the root, sheds privilege, and becomes pid 1's
// serve loop: reaping orphans and serving the engine's requests until the
// engine's socket closes.

#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>
#include <sys/wait.h>
#include <grp.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <ctime>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "mayura/base/capabilities.hpp"
#include "mayura/base/fdpass.hpp"
#include "init.hpp"
#include "standby.hpp"
#include "mayura/rootfs/mount_tree.hpp"

namespace mayura::init {
namespace {

using Step = protocol::SetupStep;

constexpr rlim_t kMaxOpenFiles = 65536;

void close_fds(const std::vector<int>& fds) {
  for (int fd : fds) {
    if (fd >= 0) ::close(fd);
  }
}

[[noreturn]] void fail(Step step, int error, std::int64_t detail = 0, int control = kControlFd) {
  // detail packs the rootfs op index (high bits) with the errno
  report(control, protocol::Status::setup_failed, static_cast<std::int32_t>(step), (detail << 16) | (error & 0xffff));
  ::_exit(1);
}

// Inherited by everything the sandbox runs, whatever the engine's own limits
// allowed: no core dumps (a dump of a process holding secrets, written where
// the sandbox can read it), no real-time scheduling (a SCHED_FIFO task would
// run outside the cpu bound), and a bound on open files (lowered only:
// raising needs the host's privilege).
int set_rlimits() {
  const rlimit none{0, 0};
  if (::setrlimit(RLIMIT_CORE, &none) != 0 || ::setrlimit(RLIMIT_RTPRIO, &none) != 0) return -1;
  rlimit files{};
  if (::getrlimit(RLIMIT_NOFILE, &files) != 0) return -1;
  const rlim_t bound = files.rlim_max < kMaxOpenFiles ? files.rlim_max : kMaxOpenFiles;
  files = {bound, bound};
  return ::setrlimit(RLIMIT_NOFILE, &files);
}

// The sequence that turns a fresh set of namespaces into a sandbox.
Identity contain(const protocol::Config& config, std::vector<UniqueFd>& trees, std::vector<UniqueFd>& layers,
                 UniqueFd init_leaf) {
  // Nothing inside may ptrace us or read our memory through /proc.
  ::prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
  ::prctl(PR_SET_NAME, "mayura-init", 0, 0, 0);
  // Root the cgroup namespace at the sandbox's own cgroup (clone3 roots it at
  // the engine's), so nothing inside learns the host's cgroup paths, and the
  // commands' cgroups below it are inside the namespace (a host mounting
  // cgroup2 with nsdelegate refuses a clone into a cgroup outside).
  if (::unshare(CLONE_NEWCGROUP) != 0) fail(Step::cgroup_ns, errno);
  // Then leave the sandbox's own cgroup for its `init` leaf, so that the
  // sandbox's cgroup holds no process and may hand the pids controller down
  // to the commands' cgroup.
  if (init_leaf && ::write(init_leaf.get(), "0", 1) != 1) fail(Step::cgroup_ns, errno);
  init_leaf.reset();
  const rootfs::BuildResult built = rootfs::build(config.plan, trees, layers);
  if (!built.ok) fail(Step::rootfs, built.error, built.step);
  if (::sethostname(config.hostname.data(), config.hostname.size()) != 0) fail(Step::hostname, errno);
  if (set_rlimits() != 0) fail(Step::rlimits, errno);
  if (::chdir(config.workdir.c_str()) != 0) fail(Step::rootfs, errno, rootfs::kStepPivot);
  if (caps::drop_bounding_and_inheritable() != 0 || caps::lock_securebits() != 0 || caps::set_no_new_privs() != 0 ||
      caps::keep_only_init_caps() != 0) {
    fail(Step::capabilities, errno);
  }
  return Identity{config.uid, config.gid};
}

class Server {
 public:
  struct Command {
    int status;      // the engine's status pipe
    int error_pipe;  // a failed start's {step, errno}, or nothing once it ran
    // The command's stdout and stderr, held open until its exit is
    // reported: the engine then learns the exit and its output's end in
    // one wake-up, not one for the end of each stream as the command exits
    // and one more for the status (each a cross-cpu wake-up, about 0.04 ms
    // of an exec of /bin/true in all). What a command's own children keep
    // open still holds the streams as before.
    int out;
    int err;
  };

  Server(Identity who, std::vector<std::string> seccomp, int signals)
      : who_(who), seccomp_(std::move(seccomp)), signals_(signals) {}

  // Whether a command's exec worked is read from its error pipe once it
  // has exited, not when the exec happens: one wake-up of this loop and one
  // of the engine fewer per command, and a command's start is no news the
  // engine waits for.
  [[noreturn]] void run() {
    for (;;) {
      // While no engine is connected: its listener and the deadline instead
      // of its socket (poll skips a negative fd).
      pollfd fds[4] = {{connected_ ? kControlFd : -1, POLLIN, 0},
                       {signals_, POLLIN, 0},
                       {connected_ ? -1 : listener_.get(), POLLIN, 0},
                       {connected_ ? -1 : deadline_.get(), POLLIN, 0}};
      const int ready = ::poll(fds, 4, connected_ ? standby_.due_in_ms() : -1);
      if (ready < 0) {
        if (errno == EINTR) continue;
        shutdown();
      }
      if (fds[1].revents & POLLIN) reap();
      if (fds[0].revents & (POLLIN | POLLHUP | POLLERR)) serve_one();
      if (fds[2].revents & POLLIN) take_engine();
      if (fds[3].revents & POLLIN) shutdown();  // its lifetime ended with no engine there
      if (connected_) standby_.start_if_due(who_, seccomp_);
    }
  }

 private:
  // The engine's socket closed. Unless the engine asked the sandbox to
  // outlive it, so does the sandbox; else the init keeps it running, to its
  // deadline, for the next engine to take back.
  void engine_gone() {
    if (!listener_) shutdown();
    ::close(kControlFd);
    connected_ = false;
    // The next engine knows nothing of the process started ahead.
    standby_.cancel();
    if (deadline_ms_ > 0) {
      itimerspec at{};
      at.it_value.tv_sec = deadline_ms_ / 1000;
      at.it_value.tv_nsec = (deadline_ms_ % 1000) * 1000000;
      if (::timerfd_settime(deadline_.get(), TFD_TIMER_ABSTIME, &at, nullptr) != 0) shutdown();
    }
  }

  // The next engine connects: its connection is the control socket from here.
  void take_engine() {
    const int engine = ::accept4(listener_.get(), nullptr, nullptr, SOCK_CLOEXEC);
    if (engine < 0) return;
    // fd 3 is free since the last engine went: it is usually that one.
    if (engine != kControlFd) {
      if (::dup2(engine, kControlFd) < 0) shutdown();
      ::close(engine);
    }
    const itimerspec off{};
    ::timerfd_settime(deadline_.get(), 0, &off, nullptr);
    connected_ = true;
  }

  // The engine asks the sandbox to outlive it (protocol.hpp, keep).
  void keep(const std::string& bytes, std::vector<int>& fds) {
    std::int64_t deadline_ms = 0;
    if (fds.size() != 1 || !protocol::decode_keep(bytes, deadline_ms)) return;
    if (!deadline_) deadline_.reset(::timerfd_create(CLOCK_BOOTTIME, TFD_CLOEXEC | TFD_NONBLOCK));
    if (!deadline_) return;
    listener_.reset(std::exchange(fds[0], -1));
    deadline_ms_ = deadline_ms;
  }

  void serve_one() {
    std::string bytes;
    std::vector<int> fds;
    const int got = fdpass::receive(kControlFd, bytes, fds);
    if (got == 0 || (got < 0 && errno != EMSGSIZE && errno != EAGAIN)) return engine_gone();
    if (got < 0) return;
    switch (protocol::kind_of(bytes)) {
      case protocol::Request::keep: keep(bytes, fds); break;
      case protocol::Request::exec: {
        protocol::Exec exec;
        // 5 fds, 6 with a v1 cgroup.procs, and one more with the program
        if (protocol::decode(bytes, exec) && fds.size() >= 5 + (exec.program_fd ? 1u : 0u) &&
            fds.size() <= 6 + (exec.program_fd ? 1u : 0u)) {
          // A command on a terminal is cloned for it: the process made
          // ahead leads a process group already, and so cannot lead a
          // session. That one, which may wait in the same cgroup, goes (the
          // engine asks for the next one as a command ends).
          Spawned spawned;
          if (exec.terminal) {
            standby_.cancel();
          } else {
            spawned = standby_.take(fds[kExecCgroupFd], bytes,
                                    CommandFds{fds[0], fds[1], fds[2], exec.program_fd ? fds.back() : -1});
          }
          if (spawned.pid <= 0) spawned = spawn_command(exec, fds, who_, seccomp_);
          if (spawned.pid > 0) {
            // kept: the status pipe (the start and the exit go there) and the streams
            if (exec.report_pid) report(fds[3], protocol::Status::started, 0, spawned.pid);
            commands_[spawned.pid] = Command{std::exchange(fds[3], -1), spawned.error_pipe, std::exchange(fds[1], -1),
                                             std::exchange(fds[2], -1)};
          }
        }
        break;
      }
      case protocol::Request::standby: {
        bool now = false;
        if (!protocol::decode_standby(bytes, now) || (now && fds.size() < 2)) break;
        if (!now) {
          standby_.ask(fds, false);
          break;
        }
        // Started here, and said so: the engine then knows that no process
        // of this request is still to come.
        standby_.ask({fds.begin(), fds.end() - 1}, true);
        standby_.start_if_due(who_, seccomp_);
        const char said = standby_.waiting() ? '1' : '0';
        (void)!::write(fds.back(), &said, 1);
        break;
      }
      case protocol::Request::signal: {
        // Only a command of the engine's that has not been reaped: its pid,
        // and so its process group's id, is still its own.
        std::int32_t pid = 0;
        std::int32_t signal = 0;
        if (protocol::decode_signal(bytes, pid, signal) && commands_.contains(pid)) ::kill(-pid, signal);
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
      default: break;
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
      if (standby_.ended(pid)) continue;
      auto it = commands_.find(pid);
      if (it == commands_.end()) continue;
      // Dead, so its error pipe has its answer (or its end: the exec closed it).
      if (!failed_to_start(it->second)) report(it->second.status, protocol::Status::exited, status);
      // The streams' end right behind the status: the engine, woken by the
      // one, finds the other too.
      ::close(it->second.out);
      ::close(it->second.err);
      ::close(it->second.status);
      commands_.erase(it);
    }
  }

  // True (and reported) if the command never ran: then its exit is not news.
  bool failed_to_start(const Command& command) {
    int failure[2] = {0, 0};  // {step, errno}
    const ssize_t n = ::read(command.error_pipe, failure, sizeof failure);
    ::close(command.error_pipe);
    if (n != sizeof failure) return false;
    report(command.status, protocol::Status::spawn_failed, failure[1], failure[0]);
    return true;
  }

  // The engine is gone: so is the sandbox. pid 1 exiting kills every process
  // in the namespace.
  [[noreturn]] void shutdown() {
    ::kill(-1, SIGKILL);
    ::_exit(0);
  }

  Identity who_;
  std::vector<std::string> seccomp_;  // every command's filters
  int signals_;
  std::map<pid_t, Command> commands_;
  Standby standby_;  // the next command's process, if one waits
  // Set by a keep request: where the next engine connects, and the timer
  // armed at the deadline while none is connected.
  UniqueFd listener_;
  UniqueFd deadline_;
  std::int64_t deadline_ms_ = 0;
  bool connected_ = true;
};

// Moves `fd` off fd 3, which the control socket takes.
int move_off_control_fd(UniqueFd& fd) {
  if (fd.get() != kControlFd) return 0;
  const int moved = ::fcntl(kControlFd, F_DUPFD_CLOEXEC, kControlFd + 1);
  if (moved < 0) return -1;
  fd = UniqueFd(moved);
  return 0;
}

}  // namespace

// Closes every descriptor from 3 up but those in `keep`: what the zygote
// had never reaches the sandbox. (No fixed fd number to move them above: the
// engine's open-file limit may be lower than any such number.)
int close_all_but(std::vector<int> keep) {
  std::sort(keep.begin(), keep.end());
  unsigned from = kControlFd;
  for (const int fd : keep) {
    if (fd < 0 || static_cast<unsigned>(fd) < from) continue;
    if (static_cast<unsigned>(fd) > from && ::syscall(SYS_close_range, from, fd - 1, 0) != 0) return -1;
    from = static_cast<unsigned>(fd) + 1;
  }
  return static_cast<int>(::syscall(SYS_close_range, from, ~0U, 0));
}

[[noreturn]] void sandbox_child(const protocol::Config& config, int socket, int init_leaf) {
  timespec started{};
  ::clock_gettime(CLOCK_MONOTONIC, &started);
  // A session of its own: the engine's terminal, if it has one, is never
  // reachable as /dev/tty.
  ::setsid();
  // The host trees the root binds, cloned while this process is still host
  // root to the file system, in this new mount namespace (so the clones
  // carry its locks). They, the cgroup leaf and the sandbox's socket are
  // kept; every other fd the zygote had is closed; the socket becomes fd 3.
  std::vector<UniqueFd> trees;
  const rootfs::BuildResult cloned = rootfs::clone_sources(config.plan, trees);
  if (!cloned.ok) fail(Step::rootfs, cloned.error, cloned.step, socket);
  UniqueFd leaf(init_leaf);
  std::vector<int> keep = {socket, leaf.get()};
  for (const auto& tree : trees) keep.push_back(tree.get());
  if (close_all_but(keep) != 0) fail(Step::fds, errno, 0, socket);
  if (socket != kControlFd) {
    int moved = move_off_control_fd(leaf);
    for (auto& tree : trees) moved |= move_off_control_fd(tree);
    if (moved != 0 || ::dup2(socket, kControlFd) < 0) fail(Step::fds, errno, 0, socket);
    ::close(socket);
  }

  // The engine writes our id maps, then says go, handing over a stored
  // image's layers mounted with those maps.
  std::string go;
  std::vector<int> received;
  if (fdpass::receive(kControlFd, go, received) <= 0 || go != "g") ::_exit(1);
  std::vector<UniqueFd> layers;
  layers.reserve(received.size());
  for (int fd : received) layers.emplace_back(fd);
  // Root of our user namespace, with no host groups left over.
  if (::setgroups(0, nullptr) != 0 || ::setresgid(0, 0, 0) != 0 || ::setresuid(0, 0, 0) != 0) fail(Step::ids, errno);

  const Identity who = contain(config, trees, layers, std::move(leaf));
  sigset_t mask;
  sigemptyset(&mask);
  sigaddset(&mask, SIGCHLD);
  if (::sigprocmask(SIG_BLOCK, &mask, nullptr) != 0) fail(Step::signals, errno);
  const int signals = ::signalfd(-1, &mask, SFD_NONBLOCK | SFD_CLOEXEC);
  if (signals < 0) fail(Step::signals, errno);
  ::signal(SIGPIPE, SIG_IGN);

  timespec now{};
  ::clock_gettime(CLOCK_MONOTONIC, &now);
  protocol::Status ready;
  ready.kind = protocol::Status::ready;
  // the init's own start-to-ready time, for the engine's trace
  ready.extra = (now.tv_sec - started.tv_sec) * 1000000 + (now.tv_nsec - started.tv_nsec) / 1000;
  [[maybe_unused]] ssize_t n = ::write(kControlFd, &ready, sizeof ready);
  Server(who, config.seccomp, signals).run();
}

}  // namespace mayura::init
