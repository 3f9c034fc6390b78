#include "launch.hpp"

#include <fcntl.h>
#include <linux/close_range.h>
#include <linux/sched.h>
#include <poll.h>
#include <signal.h>
#include <sys/mount.h>
#include <sched.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <string>
#include <vector>

#include "fdpass.hpp"
#include "mayura/rootfs/mount_tree.hpp"
#include "sys_error.hpp"
#include "trace.hpp"

namespace mayura {
namespace {

constexpr std::uint32_t kIdCount = 65536;
constexpr int kSetupTimeoutMs = 20000;
constexpr std::size_t kMaxSources = 128;

// Everything the child needs, prepared before clone: it may not allocate.
struct ChildArgs {
  int sync;        // its end of the control socket
  int engine_end;  // the engine's end, which the child must not keep open
  int memfd;
  int devnull;
  // The plan's bind sources, cloned here while the child is still host root
  // (to the file system) and handed to the init as fds 4, 5, ...
  const char* const* sources;
  const std::uint64_t* attributes;
  const std::uint32_t* flags;
  const std::uint32_t* op_index;
  int source_count;
};

constexpr int kFirstSourceFd = 4;
constexpr int kParkedFds = 256;  // above every fd the init will get

// Tells the engine which bind failed, in the init's own failure format.
[[noreturn]] void child_source_failed(const ChildArgs& a, int i, int error) {
  protocol::Status s;
  s.kind = protocol::Status::setup_failed;
  s.value = 2;  // building the root
  s.extra = (static_cast<std::int64_t>(a.op_index[i]) << 16) | (error & 0xffff);
  ::syscall(SYS_write, a.sync, &s, sizeof s);
  ::_exit(1);
}

[[noreturn]] void child_main(const void* raw) {
  const ChildArgs& a = *static_cast<const ChildArgs*>(raw);
  // Holding the engine's end would keep our read below from ever seeing the
  // engine die.
  ::syscall(SYS_close, a.engine_end);
  // A session of its own: the host's controlling terminal (if the host has
  // one) must never be reachable as /dev/tty from inside.
  if (::syscall(SYS_setsid) < 0) ::_exit(126);
  // If the engine's thread dies before the init is ready, so does the
  // half-made sandbox (the init clears this once it serves). Set again after
  // the id change below, which clears it.
  if (::syscall(SYS_prctl, PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) != 0) ::_exit(125);
  // Wait until the parent has written our id maps.
  char byte;
  if (::syscall(SYS_read, a.sync, &byte, 1) != 1) ::_exit(120);
  // Clone the host trees the root needs, parked high until the fds are
  // arranged.
  int parked[kMaxSources];
  for (int i = 0; i < a.source_count; ++i) {
    const int tree = static_cast<int>(::syscall(SYS_open_tree, AT_FDCWD, a.sources[i],
                                                OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_RECURSIVE));
    parked[i] = -1;
    if (tree < 0) {
      const int error = errno;
      if (error == ENOENT && (a.flags[i] & rootfs::kOptional)) continue;
      child_source_failed(a, i, error);
    }
    mount_attr attr{};
    attr.attr_set = a.attributes[i];
    if (::syscall(SYS_mount_setattr, tree, "", AT_EMPTY_PATH | AT_RECURSIVE, &attr, sizeof attr) != 0) {
      child_source_failed(a, i, errno);
    }
    parked[i] = static_cast<int>(::syscall(SYS_fcntl, tree, F_DUPFD_CLOEXEC, kParkedFds));
    if (parked[i] < 0) ::_exit(123);
  }
  // Become root of our user namespace, with no host groups left over.
  if (::syscall(SYS_setgroups, 0, nullptr) != 0) ::_exit(121);
  if (::syscall(SYS_setresgid, 0, 0, 0) != 0 || ::syscall(SYS_setresuid, 0, 0, 0) != 0) ::_exit(122);
  if (::syscall(SYS_prctl, PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) != 0) ::_exit(125);
  const int exe = static_cast<int>(::syscall(SYS_fcntl, a.memfd, F_DUPFD_CLOEXEC, kParkedFds));
  const int control = static_cast<int>(::syscall(SYS_fcntl, a.sync, F_DUPFD_CLOEXEC, kParkedFds));
  const int devnull = static_cast<int>(::syscall(SYS_fcntl, a.devnull, F_DUPFD_CLOEXEC, kParkedFds));
  if (exe < 0 || control < 0 || devnull < 0) ::_exit(123);
  for (int fd = 0; fd < 3; ++fd) {
    if (::syscall(SYS_dup2, devnull, fd) < 0) ::_exit(123);
  }
  if (::syscall(SYS_dup2, control, 3) < 0) ::_exit(123);
  for (int i = 0; i < a.source_count; ++i) {
    const int target = kFirstSourceFd + i;
    if (parked[i] >= 0) {
      if (::syscall(SYS_dup2, parked[i], target) < 0) ::_exit(123);
    } else {
      ::syscall(SYS_close, target);  // an optional source that is not there
    }
  }
  // Only 0-3 and the sources survive the exec.
  if (::syscall(SYS_close_range, kFirstSourceFd + a.source_count, ~0u, CLOSE_RANGE_CLOEXEC) != 0) ::_exit(123);
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
      case 125: return "arming the parent-death signal";
      case 126: return "leaving the host's session";
      default: break;
    }
  }
  return "starting the init";
}

}  // namespace

struct CloneThread::Job {
  int netns;
  void* args;
  std::size_t size;
  void (*child)(const void*);
  const void* arg;
  long result = -1;
  int error = 0;
  bool done = false;
};

CloneThread::CloneThread() : thread_([this] { run(); }) {}

CloneThread::~CloneThread() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  changed_.notify_all();
  thread_.join();
}

long CloneThread::clone_in(int netns, void* args, std::size_t size, void (*child)(const void*), const void* arg) {
  Job job{netns, args, size, child, arg};
  std::unique_lock lock(mutex_);
  changed_.wait(lock, [&] { return job_ == nullptr || stopping_; });
  if (stopping_) {
    errno = ESHUTDOWN;
    return -1;
  }
  job_ = &job;
  changed_.notify_all();
  changed_.wait(lock, [&] { return job.done; });
  errno = job.error;
  return job.result;
}

void CloneThread::run() {
  const int home = ::open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
  std::unique_lock lock(mutex_);
  for (;;) {
    changed_.wait(lock, [&] { return job_ != nullptr || stopping_; });
    if (stopping_) break;
    Job& job = *job_;
    if (::setns(job.netns, CLONE_NEWNET) != 0) {
      job.error = errno;
    } else {
      job.result = ::syscall(SYS_clone3, job.args, job.size);
      if (job.result == 0) job.child(job.arg);
      job.error = errno;
      // Back home, so this thread pins no sandbox's namespace.
      if (home >= 0) ::setns(home, CLONE_NEWNET);
    }
    job.done = true;
    job_ = nullptr;
    changed_.notify_all();
  }
  if (home >= 0) ::close(home);
}

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

InitProcess launch_init(CloneThread& cloner, int netns, int init_memfd, int cgroup_fd, std::uint32_t host_id_base,
                        const protocol::Config& config, std::stop_token cancellation) {
  StepTimer timer("launch");
  int pair[2];
  check_sys(::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, pair), "making the control socket");
  UniqueFd engine_end(pair[0]);
  UniqueFd init_end(pair[1]);
  const int big = 4 << 20;
  ::setsockopt(engine_end.get(), SOL_SOCKET, SO_SNDBUFFORCE, &big, sizeof big);
  UniqueFd devnull(check_sys(::open("/dev/null", O_RDWR | O_CLOEXEC), "opening /dev/null"));
  const std::string config_bytes = protocol::encode(config);

  // The bind sources, laid out before clone: the child may not allocate.
  std::vector<const char*> sources;
  std::vector<std::uint64_t> attributes;
  std::vector<std::uint32_t> flags, op_index;
  for (std::size_t i = 0; i < config.plan.size(); ++i) {
    const rootfs::Op& op = config.plan[i];
    if (op.kind != rootfs::OpKind::bind) continue;
    sources.push_back(op.src.c_str());
    attributes.push_back(rootfs::bind_attributes(op.flags));
    flags.push_back(op.flags);
    op_index.push_back(static_cast<std::uint32_t>(i));
  }
  if (sources.size() > kMaxSources) throw SandboxError(Reason::INVALID_CONFIG, "the image binds too many trees");
  ChildArgs args{init_end.get(), engine_end.get(), init_memfd, devnull.get(), sources.data(), attributes.data(),
                 flags.data(), op_index.data(), static_cast<int>(sources.size())};
  int pidfd = -1;
  clone_args ca{};
  // No CLONE_NEWNET: the child is cloned inside the pooled namespace.
  ca.flags = CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWUTS | CLONE_NEWIPC | CLONE_NEWCGROUP |
             CLONE_INTO_CGROUP | CLONE_PIDFD;
  ca.pidfd = reinterpret_cast<std::uint64_t>(&pidfd);
  ca.exit_signal = 0;  // no SIGCHLD: a host's own child handling never sees the init
  ca.cgroup = static_cast<std::uint64_t>(cgroup_fd);
  const long pid = cloner.clone_in(netns, &ca, sizeof ca, child_main, &args);
  if (pid < 0) {
    fail_step("cloning the sandbox's init", errno, errno == EPERM || errno == ENOSPC ? Reason::UNSUPPORTED : Reason::INTERNAL);
  }

  timer.step("clone3");
  InitProcess init;
  init.pid_ = static_cast<pid_t>(pid);
  init.pidfd_.reset(pidfd);
  init_end.reset();
  devnull.reset();

  write_map(init.pid_, "uid_map", host_id_base);
  write_map(init.pid_, "gid_map", host_id_base);
  check_sys(fdpass::send(engine_end.get(), "g", {}), "releasing the init");
  check_sys(fdpass::send(engine_end.get(), config_bytes, {}), "sending the sandbox's config");
  timer.step("id maps and config");


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
    if (n == sizeof status && status.kind == protocol::Status::ready) {
      if (tracing()) std::fprintf(stderr, "mayura-trace init   config to ready (inside)     %8lld us\n", static_cast<long long>(status.extra));
      break;
    }
    if (n == sizeof status && status.kind == protocol::Status::setup_failed) {
      const int err = static_cast<int>(status.extra & 0xffff);
      const Reason reason = (status.value == 2 && (err == ENOENT || err == EACCES)) ? Reason::INVALID_CONFIG : Reason::INTERNAL;
      fail_step(setup_step_name(status.value, status.extra), err, reason);
    }
    // The init died before saying anything (its socket closed): its exit
    // status says where.
    siginfo_t info{};
    int status_code = 0;
    pollfd exited{init.pidfd(), POLLIN, 0};
    if (::poll(&exited, 1, 1000) == 1 &&
        ::waitid(static_cast<idtype_t>(P_PIDFD), static_cast<id_t>(init.pidfd()), &info, WEXITED | __WALL) == 0) {
      status_code = info.si_code == CLD_EXITED ? (info.si_status << 8) : info.si_status;
      init.pidfd_.reset();
    }
    throw SandboxError(Reason::INTERNAL, exit_step_name(status_code) + " failed (status " + std::to_string(status_code) + ")");
  }
  timer.step("init setup");
  init.control_ = std::move(engine_end);
  return init;
}

}  // namespace mayura
