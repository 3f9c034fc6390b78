#include "launch.hpp"

#include <fcntl.h>
#include <linux/close_range.h>
#include <linux/sched.h>
#include <poll.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include "mayura/base/fdpass.hpp"
#include "image_layers.hpp"
#include "mayura/rootfs/mount_tree.hpp"
#include "requests.hpp"
#include "sys_error.hpp"
#include "trace.hpp"

namespace mayura {
namespace {

constexpr std::uint32_t kIdCount = 65536;
constexpr int kZygoteTimeoutMs = 5000;
// How many inits one zygote forks before a fresh one takes over (Zygote::spawn).
constexpr int kInitsPerZygote = 128;

// What the zygote's child needs, laid out before clone: between clone and
// exec it makes raw system calls only (the host may have many threads).
struct ZygoteChild {
  int socket;
  int memfd;
  int devnull;
};

[[noreturn]] void zygote_child(const ZygoteChild& a) {
  // Its own session, no terminal; 0-2 /dev/null, 3 the socket, nothing else;
  // no signal blocked (the zygote resets what the host ignores).
  ::syscall(SYS_setsid);
  const std::uint64_t no_signals = 0;
  ::syscall(SYS_rt_sigprocmask, SIG_SETMASK, &no_signals, nullptr, sizeof no_signals);
  const int exe = static_cast<int>(::syscall(SYS_fcntl, a.memfd, F_DUPFD_CLOEXEC, 10));
  const int socket = static_cast<int>(::syscall(SYS_fcntl, a.socket, F_DUPFD_CLOEXEC, 10));
  if (exe < 0 || socket < 0) ::_exit(120);
  for (int fd = 0; fd < 3; ++fd) {
    if (::syscall(SYS_dup2, a.devnull, fd) < 0) ::_exit(120);
  }
  if (::syscall(SYS_dup2, socket, 3) < 0) ::_exit(120);
  if (::syscall(SYS_close_range, 4, ~0u, CLOSE_RANGE_CLOEXEC) != 0) ::_exit(120);
  if (::syscall(SYS_chdir, "/") != 0) ::_exit(120);
  static const char* const argv[] = {"mayura-zygote", nullptr};
  static const char* const envp[] = {nullptr};
  ::syscall(SYS_execveat, exe, "", argv, envp, AT_EMPTY_PATH);
  ::_exit(121);
}

// /proc/<pid> of the init, which is still alive (its pid cannot be another's
// before the engine reaps it, so this checks it has not died already).
UniqueFd open_proc(pid_t pid, int pidfd) {
  UniqueFd dir(::open(("/proc/" + std::to_string(pid)).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!dir || ::syscall(SYS_pidfd_send_signal, pidfd, 0, nullptr, 0) != 0) {
    throw SandboxError(Reason::INTERNAL, "the sandbox's init ended before it was ready");
  }
  return dir;
}

void write_map(int proc, const char* file, std::uint32_t base) {
  const std::string map = "0 " + std::to_string(base) + " " + std::to_string(kIdCount) + "\n";
  UniqueFd fd(::openat(proc, file, O_WRONLY | O_CLOEXEC));
  if (!fd || ::write(fd.get(), map.data(), map.size()) != static_cast<ssize_t>(map.size())) {
    fail_step(std::string("writing the sandbox's ") + file, errno);
  }
}

std::string setup_step_name(std::int32_t step, std::int64_t detail) {
  using Step = protocol::SetupStep;
  switch (static_cast<Step>(step)) {
    case Step::rootfs: {
      const std::int64_t op = detail >> 16;
      if (op == rootfs::kStepPrivate) return "making the mount namespace private";
      if (op == rootfs::kStepRoot) return "mounting the sandbox's root";
      if (op == rootfs::kStepPivot) return "pivoting into the sandbox's root";
      if (op == rootfs::kStepReadOnly) return "making the root read-only";
      return "building the root (step " + std::to_string(op) + ")";
    }
    case Step::hostname: return "setting the hostname";
    case Step::capabilities: return "dropping capabilities";
    case Step::signals: return "setting up the init's signals";
    case Step::cgroup_ns: return "entering the sandbox's cgroup namespace";
    case Step::fds: return "arranging the init's fds";
    case Step::ids: return "becoming root of the sandbox's user namespace";
    case Step::rlimits: return "setting the sandbox's resource limits";
  }
  return "setting up the sandbox";
}

// A SOCK_SEQPACKET pair: the engine's end (with room for large requests)
// and the other.
std::pair<UniqueFd, UniqueFd> seqpacket_pair(const char* what) {
  int pair[2];
  check_sys(::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, pair), std::string("making ") + what);
  const int big = 4 << 20;
  ::setsockopt(pair[0], SOL_SOCKET, SO_SNDBUFFORCE, &big, sizeof big);
  return {UniqueFd(pair[0]), UniqueFd(pair[1])};
}

// Waits up to `grace_ms` for the process to exit by itself, kills it if it
// has not, and reaps it (bounded: a process stuck in the kernel must not
// hang its caller for ever). If `pidfd` names no child of this process,
// its exit is waited for and its parent reaps it.
void end_child(int pidfd, int grace_ms) noexcept {
  pollfd p{pidfd, POLLIN, 0};
  if (grace_ms <= 0 || ::poll(&p, 1, grace_ms) <= 0) ::syscall(SYS_pidfd_send_signal, pidfd, SIGKILL, nullptr, 0);
  // A pidfd turns readable once the process has exited; for a pid
  // namespace's init that is after every process of the namespace is gone.
  int ready;
  do {
    ready = ::poll(&p, 1, 10000);
  } while (ready < 0 && errno == EINTR);
  siginfo_t info{};
  const int flags = WEXITED | __WALL | (ready == 1 ? 0 : WNOHANG);
  while (::waitid(static_cast<idtype_t>(P_PIDFD), static_cast<id_t>(pidfd), &info, flags) != 0 && errno == EINTR) {
  }
}

}  // namespace

bool wait_readable(int fd, int timeout_ms, const std::stop_token& cancellation) {
  const native::CancelWatch cancel(cancellation);
  const auto deadline = native::Clock::now() + std::chrono::milliseconds(timeout_ms);
  for (;;) {
    pollfd p[2] = {{fd, POLLIN, 0}, {cancel.event.get(), POLLIN, 0}};
    const int r = ::poll(p, 2, native::ms_until(deadline));
    if (r < 0 && errno != EINTR) fail_step("waiting for the sandbox's init", errno);
    if (p[1].revents & POLLIN) throw SandboxError(Reason::CANCELLED, "the create was cancelled");
    if (p[0].revents) return true;
    if (r == 0 && native::Clock::now() >= deadline) return false;
  }
}

namespace {

// A clone of an init that failed: a host limit that was reached is
// LIMIT_REACHED and named; user namespaces turned off are UNSUPPORTED.
[[noreturn]] void fail_clone(int error) {
  const char* step = "cloning the sandbox's init";
  if (error == EAGAIN) {
    throw SandboxError(Reason::LIMIT_REACHED,
                       std::string("the host's process limit (kernel.pid_max, kernel.threads-max "
                                   "or RLIMIT_NPROC) is reached: ") +
                           step + ": " + std::strerror(error));
  }
  if (error == ENOSPC) {
    std::ifstream max("/proc/sys/user/max_user_namespaces");
    long allowed = 0;
    if (max >> allowed && allowed > 0) {
      throw SandboxError(Reason::LIMIT_REACHED, std::string("a host namespace limit (user.max_user_namespaces, "
                                                            "user.max_pid_namespaces, user.max_mnt_namespaces, ...) is "
                                                            "reached: ") +
                                                    step + ": " + std::strerror(error));
    }
  }
  fail_step(step, error, error == EPERM || error == ENOSPC ? Reason::UNSUPPORTED : Reason::INTERNAL);
}

}  // namespace

// --- Zygote ---------------------------------------------------------------

Zygote::~Zygote() { stop(); }

void Zygote::stop() noexcept {
  socket_.reset();  // the zygote exits on end of stream
  if (pidfd_) end_child(pidfd_.get(), 1000);
  pidfd_.reset();
}

void Zygote::start() {
  auto [engine_end, zygote_end] = seqpacket_pair("the zygote's socket");
  UniqueFd devnull(check_sys(::open("/dev/null", O_RDWR | O_CLOEXEC), "opening /dev/null"));
  // The zygote's own copy of the program; the engine keeps none (the
  // zygote and its inits hold it as long as they run).
  const UniqueFd program = program_ ? std::move(program_) : make_program_();
  ZygoteChild child{zygote_end.get(), program.get(), devnull.get()};
  int pidfd = -1;
  clone_args ca{};
  ca.flags = CLONE_PIDFD;
  ca.pidfd = reinterpret_cast<std::uint64_t>(&pidfd);
  ca.exit_signal = 0;  // no SIGCHLD: a host's own child handling never sees it
  const long pid = ::syscall(SYS_clone3, &ca, sizeof ca);
  if (pid == 0) zygote_child(child);
  if (pid < 0) fail_step("starting the zygote", errno, Reason::UNSUPPORTED);
  pidfd_.reset(pidfd);
  socket_ = std::move(engine_end);
  spawned_ = 0;
}

Zygote::Spawned Zygote::spawn(const std::string& config, int sandbox_socket, int netns, int cgroup) {
  std::lock_guard lock(mutex_);
  // A fresh zygote, of a fresh copy of the program, every so many inits.
  // Every fork shares its parent's reverse maps: the anon_vma root of the
  // zygote's memory, and the i_mmap tree of the file it runs from. So every
  // init, and every process it forks until that one execs, took the same
  // two locks for writing at each clone, exec and exit, and each rmap walk
  // of a page of theirs (DAMON's, reclaim's) went through every mapping of
  // it under them. With 10,000 sandboxes of one zygote, execs waited up to
  // 100 ms behind such walks. A zygote's start (a memfd of the program, a
  // clone and an exec) costs about a millisecond, once per that many.
  if (socket_ && spawned_ >= kInitsPerZygote) stop();
  for (int attempt = 0; attempt < 2; ++attempt) {
    if (!socket_) start();
    if (fdpass::send(socket_.get(), config, {sandbox_socket, netns, cgroup}, kZygoteTimeoutMs) != 0) {
      if (errno != EPIPE && errno != ECONNRESET) fail_step("asking the zygote for a sandbox", errno);
      stop();  // it died before it took the request: start another and ask again
      continue;
    }
    // From here the request may have been carried out: never ask twice with
    // the same socket (two inits would share it).
    pollfd p{socket_.get(), POLLIN, 0};
    if (::poll(&p, 1, kZygoteTimeoutMs) <= 0) {
      stop();
      throw SandboxError(Reason::INTERNAL, "the zygote did not answer in time");
    }
    std::string bytes;
    std::vector<int> fds;
    const int got = fdpass::receive(socket_.get(), bytes, fds);
    if (got < 0 && errno == EMSGSIZE && bytes.size() == sizeof(protocol::Status)) {
      // The answer came whole but its pidfd could not be taken: this
      // process is out of descriptors. The init is our child, unreaped, so
      // its pid is still its own: kill and reap it by pid.
      for (int fd : fds) ::close(fd);
      protocol::Status status;
      std::memcpy(&status, bytes.data(), sizeof status);
      if (status.kind == protocol::Status::started && status.extra > 0) {
        const auto pid = static_cast<pid_t>(status.extra);
        ::kill(pid, SIGKILL);
        siginfo_t info{};
        while (::waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | __WALL) != 0 && errno == EINTR) {
        }
      }
      fail_step("taking the new init's pidfd from the zygote", EMFILE);
    }
    if (got <= 0 || bytes.size() != sizeof(protocol::Status)) {
      for (int fd : fds) ::close(fd);
      stop();
      throw SandboxError(Reason::INTERNAL, "the zygote failed while starting a sandbox");
    }
    protocol::Status status;
    std::memcpy(&status, bytes.data(), sizeof status);
    if (status.kind != protocol::Status::started || fds.size() != 1) {
      for (int fd : fds) ::close(fd);
      fail_clone(status.value ? status.value : EPROTO);
    }
    ++spawned_;
    return Spawned{static_cast<pid_t>(status.extra), UniqueFd(fds[0])};
  }
  throw SandboxError(Reason::INTERNAL, "the zygote died twice while starting a sandbox");
}

// --- InitProcess ----------------------------------------------------------

// The init's pid stands for it: its exit signal is 0, so nothing but a wait
// with __WALL for this very pid reaps it (not a host's waitpid(-1), nor a
// SIGCHLD ignored), and until the engine reaps it no other process can have
// its pid. So the engine holds no pidfd for it: one descriptor per sandbox
// (its control socket), and ten thousand sandboxes fit in an open-file limit
// of twenty thousand that root may not raise.
bool InitProcess::running() const noexcept {
  if (pid_ <= 0) return false;
  if (pidfd_) {
    pollfd p{pidfd_.get(), POLLIN, 0};
    return ::poll(&p, 1, 0) == 0;  // readable once it has exited
  }
  siginfo_t info{};
  if (::waitid(P_PID, static_cast<id_t>(pid_), &info, WEXITED | WNOHANG | WNOWAIT | __WALL) != 0) return false;
  return info.si_pid == 0;  // nothing to report: it has not exited
}

void InitProcess::kill_and_wait() noexcept {
  if (pid_ <= 0) return;
  if (pidfd_) {
    end_child(pidfd_.get(), 0);  // its parent reaps it: the wait for its exit is what is left here
    pidfd_.reset();
    control_.reset();
    pid_ = -1;
    return;
  }
  // The init is the engine's child (the zygote clones it with CLONE_PARENT):
  // reaped here, so nothing of it is left when release returns. A pidfd for
  // the bounded wait, if this process can open one; at its open-file limit,
  // the pid.
  if (const UniqueFd pidfd(static_cast<int>(::syscall(SYS_pidfd_open, pid_, 0))); pidfd) {
    end_child(pidfd.get(), 0);
  } else {
    ::kill(pid_, SIGKILL);
    siginfo_t info{};
    while (::waitid(P_PID, static_cast<id_t>(pid_), &info, WEXITED | __WALL) != 0 && errno == EINTR) {
    }
  }
  control_.reset();
  pid_ = -1;
}

namespace {

// /proc/PID/WHAT of the init; none (errno set) once it has ended. An
// adopted init's pid is another's once its parent reaps it: one that still
// runs after the open is the one opened.
UniqueFd open_of_init(const InitProcess& init, bool adopted, const char* what, int flags) {
  UniqueFd fd(::open(("/proc/" + std::to_string(init.pid()) + "/" + what).c_str(), flags | O_CLOEXEC));
  if (fd && adopted && !init.running()) {
    errno = ESRCH;
    return {};
  }
  return fd;
}

}  // namespace

UniqueFd InitProcess::open_netns() const { return open_of_init(*this, static_cast<bool>(pidfd_), "ns/net", O_RDONLY); }

UniqueFd InitProcess::open_root() const {
  return open_of_init(*this, static_cast<bool>(pidfd_), "root", O_PATH | O_DIRECTORY);
}

void InitProcess::kill() const noexcept {
  if (pidfd_) ::syscall(SYS_pidfd_send_signal, pidfd_.get(), SIGKILL, nullptr, 0);
  else if (pid_ > 0) ::kill(pid_, SIGKILL);
}

void InitProcess::to_foreground() const noexcept {
  ::setpriority(PRIO_PROCESS, static_cast<id_t>(pid_), 0);  // ESRCH: it died, which the create finds next
}

InitProcess launch_init(Zygote& zygote, int netns, int cgroup_fd, std::uint32_t host_id_base,
                        const protocol::Config& config, std::vector<UniqueFd> disk,
                        const std::function<void(pid_t)>& place, bool ahead, const std::stop_token& cancellation) {
  StepTimer timer("launch");
  auto [engine_end, init_end] = seqpacket_pair("the control socket");

  Zygote::Spawned spawned = zygote.spawn(protocol::encode(config), init_end.get(), netns, cgroup_fd);
  init_end.reset();
  InitProcess init;
  init.pid_ = spawned.pid;
  UniqueFd pidfd = std::move(spawned.pidfd);
  timer.step("zygote cloned the init");

  std::vector<UniqueFd> layers;
  {
    const UniqueFd proc = open_proc(init.pid_, pidfd.get());
    write_map(proc.get(), "uid_map", host_id_base);
    write_map(proc.get(), "gid_map", host_id_base);
    layers = idmapped_layers(proc.get(), config.plan);
    for (UniqueFd& mount : disk) {
      idmap_disk(proc.get(), mount.get());
      layers.push_back(std::move(mount));  // the plan's handed ops come after the image's
    }
  }
  timer.step("id maps");
  // A move into v1 cgroups; where the kernel makes it wait, the wait shows
  // here (see cgroups::Host::favor_dynmods).
  place(init.pid_);
  timer.step("placed in v1 cgroups");
  if (ahead) {
    // Before it is let go: nothing of its setup runs at the ordinary policy.
    ::setpriority(PRIO_PROCESS, static_cast<id_t>(init.pid_), kAheadNice);  // at worst it builds at the ordinary one
  }
  std::vector<int> layer_fds;
  layer_fds.reserve(layers.size());
  for (const auto& layer : layers) layer_fds.push_back(layer.get());
  check_sys(fdpass::send(engine_end.get(), "g", layer_fds), "releasing the init");
  layers.clear();
  timer.step("init let go");

  for (;;) {
    if (!wait_readable(engine_end.get(), kSetupTimeoutMs, cancellation)) {
      throw SandboxError(Reason::INTERNAL, "the sandbox's init did not report ready in time");
    }
    protocol::Status status;
    const ssize_t n = ::recv(engine_end.get(), &status, sizeof status, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n == sizeof status && status.kind == protocol::Status::ready) {
      if (tracing()) {
        std::fprintf(stderr, "mayura-trace init   root built, ready (inside)   %8lld us\n",
                     static_cast<long long>(status.extra));
      }
      break;
    }
    if (n == sizeof status && status.kind == protocol::Status::setup_failed) {
      const int err = static_cast<int>(status.extra & 0xffff);
      const bool image_unusable = static_cast<protocol::SetupStep>(status.value) == protocol::SetupStep::rootfs &&
                                  (err == ENOENT || err == EACCES);
      const Reason reason = image_unusable ? Reason::INVALID_CONFIG : Reason::INTERNAL;
      // A volume's path the root cannot hold (under the image's read-only
      // directories) is the caller's to change.
      const auto op = static_cast<std::size_t>(status.extra >> 16);
      const bool place_refused = err == EROFS || err == EACCES || err == EPERM || err == ENOTDIR || err == ELOOP;
      if (place_refused && static_cast<protocol::SetupStep>(status.value) == protocol::SetupStep::rootfs &&
          op < config.plan.size() && config.plan[op].kind == rootfs::OpKind::handed &&
          config.plan[op].dst != config.workdir && config.plan[op].dst != "/tmp") {
        fail_step("mounting a volume at " + config.plan[op].dst +
                      " (a volume goes where a directory is or can be made, such as at the top or under the "
                      "workdir, with no symlink on its way; the image's directories are read-only)",
                  err, Reason::INVALID_INPUT);
      }
      fail_step(setup_step_name(status.value, status.extra), err, reason);
    }
    throw SandboxError(Reason::INTERNAL, "the sandbox's init ended before it was ready");
  }
  timer.step("init setup");
  init.control_ = std::move(engine_end);
  pidfd.reset();  // from here its pid stands for it (see InitProcess::running)
  return init;
}

}  // namespace mayura
