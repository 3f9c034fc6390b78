#include "launch.hpp"

#include <fcntl.h>
#include <linux/close_range.h>
#include <linux/sched.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <string>

#include "fdpass.hpp"
#include "mayura/netfilter/loopback.hpp"
#include "mayura/rootfs/mount_tree.hpp"
#include "sys_error.hpp"

namespace mayura {
namespace {

constexpr std::uint32_t kIdCount = 65536;
constexpr int kSetupTimeoutMs = 20000;

// Everything the child needs, prepared before clone: it may not allocate.
struct ChildArgs {
  int sync;     // its end of the control socket
  int memfd;
  int devnull;
};

[[noreturn]] void child_main(const ChildArgs& a) {
  // Wait until the parent has written our id maps.
  char byte;
  if (::syscall(SYS_read, a.sync, &byte, 1) != 1) ::_exit(120);
  // Become root of our user namespace, with no host groups left over.
  if (::syscall(SYS_setgroups, 0, nullptr) != 0) ::_exit(121);
  if (::syscall(SYS_setresgid, 0, 0, 0) != 0 || ::syscall(SYS_setresuid, 0, 0, 0) != 0) ::_exit(122);
  const int exe = static_cast<int>(::syscall(SYS_fcntl, a.memfd, F_DUPFD_CLOEXEC, 10));
  const int control = static_cast<int>(::syscall(SYS_fcntl, a.sync, F_DUPFD, 10));
  if (exe < 0 || control < 0) ::_exit(123);
  for (int fd = 0; fd < 3; ++fd) {
    if (::syscall(SYS_dup2, a.devnull, fd) < 0) ::_exit(123);
  }
  if (::syscall(SYS_dup2, control, 3) < 0) ::_exit(123);
  // Only 0-3 survive the exec.
  if (::syscall(SYS_close_range, 4, ~0u, CLOSE_RANGE_CLOEXEC) != 0) ::_exit(123);
  static const char* const argv[] = {"mayura-init", nullptr};
  static const char* const envp[] = {nullptr};
  ::syscall(SYS_execveat, exe, "", argv, envp, AT_EMPTY_PATH);
  ::_exit(124);
}

void write_map(pid_t pid, const char* file, std::uint32_t base) {
  const std::string path = "/proc/" + std::to_string(pid) + "/" + file;
  const std::string map = "0 " + std::to_string(base) + " " + std::to_string(kIdCount) + "\n";
  UniqueFd fd(::open(path.c_str(), O_WRONLY | O_CLOEXEC));
  if (!fd || ::write(fd.get(), map.data(), map.size()) != static_cast<ssize_t>(map.size())) {
    fail_step(std::string("writing the sandbox's ") + file, errno);
  }
}

std::string setup_step_name(std::int32_t step, std::int64_t detail) {
  switch (step) {
    case 1: return "the init reading its config";
    case 2: {
      const std::int64_t op = detail >> 16;
      if (op == rootfs::kStepPrivate) return "making the mount namespace private";
      if (op == rootfs::kStepRoot) return "mounting the sandbox's root";
      if (op == rootfs::kStepPivot) return "pivoting into the sandbox's root";
      if (op == rootfs::kStepReadOnly) return "making the root read-only";
      return "building the root (step " + std::to_string(op) + ")";
    }
    case 3: return "setting the hostname";
    case 4: return "dropping capabilities";
    case 5: return "setting up the init's signals";
    case 6: return "entering the sandbox's cgroup namespace";
    default: return "setting up the sandbox";
  }
}

std::string exit_step_name(int status) {
  if (WIFEXITED(status)) {
    switch (WEXITSTATUS(status)) {
      case 120: return "waiting for the id maps";
      case 121: return "dropping host groups";
      case 122: return "becoming root of the user namespace";
      case 123: return "arranging the init's fds";
      case 124: return "executing the init";
      default: break;
    }
  }
  return "starting the init";
}

}  // namespace

bool InitProcess::running() const noexcept {
  if (!pidfd_) return false;
  pollfd p{pidfd_.get(), POLLIN, 0};
  return ::poll(&p, 1, 0) == 0;
}

void InitProcess::kill_and_reap() noexcept {
  if (!pidfd_) return;
  ::syscall(SYS_pidfd_send_signal, pidfd_.get(), SIGKILL, nullptr, 0);
  siginfo_t info{};
  while (::waitid(static_cast<idtype_t>(P_PIDFD), static_cast<id_t>(pidfd_.get()), &info, WEXITED | __WALL) != 0 &&
         errno == EINTR) {
  }
  pidfd_.reset();
  control_.reset();
  pid_ = -1;
}

InitProcess launch_init(int init_memfd, int cgroup_fd, std::uint32_t host_id_base, const protocol::Config& config,
                        std::stop_token cancellation) {
  int pair[2];
  check_sys(::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, pair), "making the control socket");
  UniqueFd engine_end(pair[0]);
  UniqueFd init_end(pair[1]);
  const int big = 4 << 20;
  ::setsockopt(engine_end.get(), SOL_SOCKET, SO_SNDBUFFORCE, &big, sizeof big);
  UniqueFd devnull(check_sys(::open("/dev/null", O_RDWR | O_CLOEXEC), "opening /dev/null"));
  const std::string config_bytes = protocol::encode(config);

  ChildArgs args{init_end.get(), init_memfd, devnull.get()};
  int pidfd = -1;
  clone_args ca{};
  ca.flags = CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWNET | CLONE_NEWUTS | CLONE_NEWIPC |
             CLONE_NEWCGROUP | CLONE_INTO_CGROUP | CLONE_PIDFD;
  ca.pidfd = reinterpret_cast<std::uint64_t>(&pidfd);
  ca.exit_signal = 0;  // no SIGCHLD: a host's own child handling never sees the init
  ca.cgroup = static_cast<std::uint64_t>(cgroup_fd);
  const long pid = ::syscall(SYS_clone3, &ca, sizeof ca);
  if (pid == 0) child_main(args);
  if (pid < 0) {
    fail_step("cloning the sandbox's init", errno, errno == EPERM || errno == ENOSPC ? Reason::UNSUPPORTED : Reason::INTERNAL);
  }

  InitProcess init;
  init.pid_ = static_cast<pid_t>(pid);
  init.pidfd_.reset(pidfd);
  init_end.reset();
  devnull.reset();

  write_map(init.pid_, "uid_map", host_id_base);
  write_map(init.pid_, "gid_map", host_id_base);
  check_sys(fdpass::send(engine_end.get(), "g", {}), "releasing the init");
  check_sys(fdpass::send(engine_end.get(), config_bytes, {}), "sending the sandbox's config");

  // Loopback up while the init builds the root.
  {
    const std::string ns = "/proc/" + std::to_string(init.pid_) + "/ns/net";
    UniqueFd netns(::open(ns.c_str(), O_RDONLY | O_CLOEXEC));
    if (!netns) fail_step("opening the sandbox's network namespace", errno);
    const int err = netfilter::bring_up_loopback(netns.get());
    if (err != 0) fail_step("bringing up the sandbox's loopback", err);
  }

  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(kSetupTimeoutMs);
  for (;;) {
    if (cancellation.stop_requested()) throw SandboxError(Reason::CANCELLED, "the create was cancelled");
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now()).count();
    if (left <= 0) throw SandboxError(Reason::INTERNAL, "the sandbox's init did not report ready in time");
    pollfd p{engine_end.get(), POLLIN, 0};
    const int r = ::poll(&p, 1, static_cast<int>(std::min<long long>(left, 50)));
    if (r < 0 && errno != EINTR) fail_step("waiting for the init", errno);
    if (r <= 0) continue;
    protocol::Status status;
    const ssize_t n = ::recv(engine_end.get(), &status, sizeof status, 0);
    if (n == sizeof status && status.kind == protocol::Status::ready) break;
    if (n == sizeof status && status.kind == protocol::Status::setup_failed) {
      const int err = static_cast<int>(status.extra & 0xffff);
      const Reason reason = (status.value == 2 && (err == ENOENT || err == EACCES)) ? Reason::INVALID_CONFIG : Reason::INTERNAL;
      fail_step(setup_step_name(status.value, status.extra), err, reason);
    }
    // The init died before saying anything: its exit status says where.
    siginfo_t info{};
    int status_code = 0;
    if (::waitid(static_cast<idtype_t>(P_PIDFD), static_cast<id_t>(init.pidfd()), &info, WEXITED | WNOHANG | __WALL) == 0 &&
        info.si_pid != 0) {
      status_code = info.si_code == CLD_EXITED ? (info.si_status << 8) : info.si_status;
      init.pidfd_.reset();
    }
    throw SandboxError(Reason::INTERNAL, exit_step_name(status_code) + " failed");
  }
  init.control_ = std::move(engine_end);
  return init;
}

}  // namespace mayura
