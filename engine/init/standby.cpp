// The next command's process, made ahead: cloned into the spare command
// cgroup the engine names, moved into the v1 process limit and filtered while
// nothing waits, so that an exec that takes that cgroup pays only a message
// and the command's own steps (its streams, the user, its directory, the
// exec). Until it has its command it keeps the init's ids, so the sandbox
// user's commands can neither signal it nor ptrace it.

#include "standby.hpp"

#include <fcntl.h>
#include <linux/close_range.h>
#include <linux/sched.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <ctime>

#include "mayura/base/fdpass.hpp"

namespace mayura::init {
namespace {

// How long an exec waits for a standby that is not ready yet (one preempted
// on a loaded host, or one stopped by a root command) before starting its
// command the usual way.
constexpr int kReadyWaitMs = 200;
constexpr char kReady = 'r';
// How long the sandbox stays quiet before the next command's process is
// started: commands back to back never wait for one.
constexpr std::int64_t kQuietMs = 5;

bool same(const struct stat& a, const struct stat& b) { return a.st_dev == b.st_dev && a.st_ino == b.st_ino; }

std::int64_t now_ms() {
  timespec t{};
  ::clock_gettime(CLOCK_MONOTONIC, &t);
  return static_cast<std::int64_t>(t.tv_sec) * 1000 + t.tv_nsec / 1000000;
}

// True if the filters let the process do what it does after them and a
// plain start does before them: read its command (as fdpass::receive does,
// with its flags) and take its streams. A profile that refuses one leaves
// the process unused (never ready), not the command failed, so commands
// start as they would without it.
bool can_take_command(int socket) {
  char byte = 0;
  if (::recv(socket, &byte, 1, MSG_PEEK | MSG_TRUNC | MSG_DONTWAIT) >= 0 || errno != EAGAIN) return false;
  iovec v{&byte, 1};
  msghdr m{};
  m.msg_iov = &v;
  m.msg_iovlen = 1;
  if (::recvmsg(socket, &m, MSG_CMSG_CLOEXEC | MSG_DONTWAIT) >= 0 || errno != EAGAIN) return false;
  // the same fd onto itself, and a range past every fd: no change either way
  return ::dup2(socket, socket) == socket && ::syscall(SYS_close_range, ~0u - 1, ~0u, CLOSE_RANGE_CLOEXEC) == 0;
}

[[noreturn]] void standby_child(int socket, int error_pipe, int v1_procs, const Identity& who,
                                const std::vector<std::string>& seccomp) {
  ::prctl(PR_SET_NAME, "mayura-next", 0, 0, 0);
  if (close_all_but({socket, error_pipe, v1_procs}) != 0) ::_exit(127);
  SpawnFailure failure;
  // A failure before ready is never a command's: the init only hands a
  // command to a standby that said ready.
  if (!prepare_command(v1_procs, seccomp, failure)) ::_exit(127);
  if (v1_procs >= 0) ::close(v1_procs);
  if (!can_take_command(socket) || ::write(socket, &kReady, 1) != 1) ::_exit(127);
  std::string bytes;
  std::vector<int> fds;
  protocol::Exec exec;
  const int got = fdpass::receive(socket, bytes, fds);
  // Nothing (0): dropped, or the init is gone; no command was handed over,
  // and the failure written goes unread. Else a command's start failed.
  if (got <= 0) {
    failure.set(protocol::SpawnStep::setup, got == 0 ? ECONNRESET : errno);
  } else if (!protocol::decode(bytes, exec) || fds.size() != (exec.program_fd ? 4u : 3u)) {
    failure.set(protocol::SpawnStep::setup, EPROTO);
  } else if (exec.terminal) {
    failure.set(protocol::SpawnStep::setup, EINVAL);  // never handed one (sandbox_init.cpp)
  } else if (take_streams(CommandFds{fds[0], fds[1], fds[2]}, failure)) {
    become_command(exec, exec.program_fd ? fds[3] : -1, who, failure);
  }
  failure.send(error_pipe);
  ::_exit(127);
}

}  // namespace

Standby::~Standby() { drop(); }

void Standby::ask(const std::vector<int>& fds, bool now) {
  if (pid_ > 0 || fds.empty() || fds.size() > 2) return;
  asked_cgroup_ = UniqueFd(::fcntl(fds[0], F_DUPFD_CLOEXEC, 3));
  asked_v1_procs_ = fds.size() > 1 ? UniqueFd(::fcntl(fds[1], F_DUPFD_CLOEXEC, 3)) : UniqueFd();
  if (!asked_cgroup_ || (fds.size() > 1 && !asked_v1_procs_)) {
    asked_cgroup_.reset();
    asked_v1_procs_.reset();
    return;
  }
  due_ms_ = now_ms() + (now ? 0 : kQuietMs);
}

int Standby::due_in_ms() const {
  if (!asked_cgroup_) return -1;
  const std::int64_t left = due_ms_ - now_ms();
  return left > 0 ? static_cast<int>(left) : 0;
}

void Standby::start_if_due(const Identity& who, const std::vector<std::string>& seccomp) {
  if (!asked_cgroup_ || due_in_ms() > 0) return;
  const UniqueFd cgroup_dir = std::move(asked_cgroup_);
  const UniqueFd v1_procs = std::move(asked_v1_procs_);
  if (pid_ > 0) return;
  struct stat cgroup {};
  if (::fstat(cgroup_dir.get(), &cgroup) != 0) return;
  int pair[2];
  if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, pair) != 0) return;
  UniqueFd mine(pair[0]);
  UniqueFd theirs(pair[1]);
  int error_pipe[2];
  if (::pipe2(error_pipe, O_CLOEXEC | O_NONBLOCK) != 0) return;
  UniqueFd error_read(error_pipe[0]);
  UniqueFd error_write(error_pipe[1]);
  clone_args args{};
  args.flags = CLONE_INTO_CGROUP;
  args.exit_signal = SIGCHLD;
  args.cgroup = static_cast<std::uint64_t>(cgroup_dir.get());
  const pid_t pid = static_cast<pid_t>(::syscall(SYS_clone3, &args, sizeof args));
  if (pid == 0) standby_child(theirs.get(), error_write.get(), v1_procs.get(), who, seccomp);
  if (pid < 0) return;  // the commands' process bound, say: the exec will tell
  pid_ = pid;
  socket_ = std::move(mine);
  error_pipe_ = std::move(error_read);
  cgroup_dev_ = cgroup.st_dev;
  cgroup_ino_ = cgroup.st_ino;
}

Spawned Standby::take(int cgroup, const std::string& request, const CommandFds& fds) {
  if (!asked_cgroup_ && pid_ <= 0) return {};  // nothing made or asked for ahead
  struct stat named {};
  if (::fstat(cgroup, &named) != 0) return {};
  // One asked for in this cgroup and not started yet is not needed now.
  struct stat asked {};
  if (asked_cgroup_ && ::fstat(asked_cgroup_.get(), &asked) == 0 && same(asked, named)) {
    asked_cgroup_.reset();
    asked_v1_procs_.reset();
  }
  if (pid_ <= 0 || named.st_dev != cgroup_dev_ || named.st_ino != cgroup_ino_) return {};
  pollfd ready{socket_.get(), POLLIN, 0};
  char said = 0;
  if (::poll(&ready, 1, kReadyWaitMs) != 1 || ::read(socket_.get(), &said, 1) != 1 || said != kReady) {
    drop();
    return {};
  }
  std::vector<int> pass = {fds.in, fds.out, fds.err};
  if (fds.program >= 0) pass.push_back(fds.program);
  // A request larger than the pair's send buffer (about 200 KiB of argv and
  // environment, which the init may not raise) fails EMSGSIZE: that command
  // starts the usual way, and its cgroup must not hold this process then.
  if (fdpass::send(socket_.get(), request, pass, kReadyWaitMs) != 0) {
    drop();
    return {};
  }
  const Spawned taken{pid_, error_pipe_.release()};
  pid_ = -1;
  socket_.reset();
  return taken;
}

bool Standby::ended(pid_t pid) {
  if (pid_ <= 0 || pid != pid_) return false;
  pid_ = -1;
  socket_.reset();
  error_pipe_.reset();
  return true;
}

void Standby::drop() noexcept {
  if (pid_ <= 0) return;
  ::kill(pid_, SIGKILL);  // reaped by the serve loop, as any orphan
  pid_ = -1;
  socket_.reset();
  error_pipe_.reset();
}

}  // namespace mayura::init
