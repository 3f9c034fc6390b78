// Starting a command: clone3 straight into the command's own cgroup (so every
// process it ever starts is tracked and can be killed at once), then become
// the sandbox user and exec.

#include <fcntl.h>
#include <linux/close_range.h>
#include <linux/sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstring>
#include <string>
#include <vector>

#include "mayura/base/capabilities.hpp"
#include "init.hpp"
#include "mayura/seccomp/profile.hpp"

namespace mayura::init {
namespace {

std::vector<char*> pointers(const std::vector<std::string>& strings) {
  std::vector<char*> v;
  v.reserve(strings.size() + 1);
  for (const auto& s : strings) v.push_back(const_cast<char*>(s.c_str()));
  v.push_back(nullptr);
  return v;
}

std::string path_of(const std::vector<std::string>& env) {
  for (const auto& e : env) {
    if (e.rfind("PATH=", 0) == 0) return e.substr(5);
  }
  return "/usr/local/bin:/usr/bin:/bin";
}

// execvpe, with PATH taken from the command's environment (glibc's looks at
// the caller's).
int exec_search(const std::vector<std::string>& argv, const std::vector<std::string>& env) {
  auto args = pointers(argv);
  auto envp = pointers(env);
  const std::string& name = argv[0];
  if (name.find('/') != std::string::npos) {
    ::execve(name.c_str(), args.data(), envp.data());
    return errno;
  }
  const std::string path = path_of(env);
  int result = ENOENT;
  std::size_t start = 0;
  while (start <= path.size()) {
    std::size_t end = path.find(':', start);
    if (end == std::string::npos) end = path.size();
    std::string dir = path.substr(start, end - start);
    if (dir.empty()) dir = ".";
    const std::string candidate = dir + "/" + name;
    ::execve(candidate.c_str(), args.data(), envp.data());
    if (errno == EACCES) result = EACCES;
    else if (errno != ENOENT && errno != ENOTDIR) return errno;
    start = end + 1;
  }
  return result;
}

// The engine's own program, from its memfd (close-on-exec, as every fd
// here is by now: an ELF program needs no path to itself after the exec).
int exec_fd(int program, const std::vector<std::string>& argv, const std::vector<std::string>& env) {
  auto args = pointers(argv);
  auto envp = pointers(env);
  ::syscall(SYS_execveat, program, "", args.data(), envp.data(), AT_EMPTY_PATH);
  return errno;
}

}  // namespace

bool prepare_command(int v1_procs, const std::vector<std::string>& seccomp, SpawnFailure& failure) {
  // A fresh process group (before the filters: a caller's profile need not
  // allow setpgid), default signal handling, nothing blocked. exec resets
  // caught signals; SIGPIPE is the only one the init ignores. (A command on
  // a terminal has led a session of its own since it took its streams, and
  // its group is that session's: this changes nothing of it.)
  ::setpgid(0, 0);
  ::signal(SIGPIPE, SIG_DFL);
  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
  // Into the process limit that is on cgroup v1 (on cgroup2 the clone put it
  // there), before it can fork.
  if (v1_procs >= 0 && ::write(v1_procs, "0", 1) != 1) return failure.set(protocol::SpawnStep::limits, errno);
  // The filters go on before the ids change: changing ids makes the process
  // dumpable if the host's fs.suid_dumpable says so, and a command that
  // ptraced it in that moment must find it filtered already, with no
  // capability left (no_new_privs is set already, in the init).
  for (const auto& filter : seccomp) {
    if (seccomp::install(filter.data(), filter.size()) != 0) return failure.set(protocol::SpawnStep::seccomp, errno);
  }
  return true;
}

bool take_streams(const CommandFds& fds, SpawnFailure& failure) {
  if (::dup2(fds.in, 0) < 0 || ::dup2(fds.out, 1) < 0 || ::dup2(fds.err, 2) < 0) {
    return failure.set(protocol::SpawnStep::setup, errno);
  }
  // On a terminal, a session of its own that the terminal controls, so
  // that its line discipline signals the foreground job (Ctrl-C, a
  // resize). Only a process cloned for it gets here with a terminal (a
  // standby process leads its group already, which setsid refuses), and
  // before the filters.
  if (fds.terminal && (::setsid() < 0 || ::ioctl(0, TIOCSCTTY, 0) != 0)) {
    return failure.set(protocol::SpawnStep::setup, errno);
  }
  // Only 0, 1 and 2 reach the command (and the program, once, to exec it);
  // the error pipe closes at exec.
  if (::syscall(SYS_close_range, 3, ~0u, CLOSE_RANGE_CLOEXEC) != 0) {
    return failure.set(protocol::SpawnStep::setup, errno);
  }
  return true;
}

void become_command(const protocol::Exec& exec, int program, const Identity& who, SpawnFailure& failure) {
  // The directory is entered as the sandbox user: a path root inside could
  // enter and the user could not is refused. A profile that refuses what
  // this takes (setgroups, setresuid, capset, prctl) fails the start.
  if (caps::become_user(who.uid, who.gid) != 0) {
    failure.set(protocol::SpawnStep::user, errno);
    return;
  }
  // Until the exec it is still the engine's program holding the engine's
  // fds, which nothing inside may ptrace or open.
  if (::prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0) {
    failure.set(protocol::SpawnStep::user, errno);
    return;
  }
  if (::chdir(exec.cwd.c_str()) != 0) {
    failure.set(protocol::SpawnStep::cwd, errno);
    return;
  }
  failure.set(protocol::SpawnStep::exec,
              exec.program_fd ? exec_fd(program, exec.argv, exec.env) : exec_search(exec.argv, exec.env));
}

namespace {

[[noreturn]] void child(const protocol::Exec& exec, const std::vector<int>& fds, int error_pipe, const Identity& who,
                        const std::vector<std::string>& seccomp) {
  const std::size_t program = exec.program_fd ? 1 : 0;
  const int v1_procs = fds.size() > kExecCgroupFd + 1 + program ? fds[kExecCgroupFd + 1] : -1;
  SpawnFailure failure;
  // The streams before the filters, as a profile written for a plain
  // fork+exec expects (one without close_range, say).
  if (take_streams(CommandFds{fds[0], fds[1], fds[2], -1, exec.terminal}, failure) &&
      prepare_command(v1_procs, seccomp, failure)) {
    become_command(exec, program ? fds.back() : -1, who, failure);
  }
  failure.send(error_pipe);
  ::_exit(127);
}

}  // namespace

void SpawnFailure::send(int error_pipe) const {
  [[maybe_unused]] ssize_t n = ::write(error_pipe, message, sizeof message);
}

void report(int fd, std::uint32_t kind, std::int32_t value, std::int64_t extra) {
  protocol::Status s;
  s.kind = kind;
  s.value = value;
  s.extra = extra;
  ssize_t n;
  do {
    n = ::write(fd, &s, sizeof s);
  } while (n < 0 && errno == EINTR);
}

Spawned spawn_command(const protocol::Exec& exec, const std::vector<int>& fds, const Identity& who,
                      const std::vector<std::string>& seccomp) {
  const int status = fds[3];
  int error_pipe[2];
  if (::pipe2(error_pipe, O_CLOEXEC | O_NONBLOCK) != 0) {
    report(status, protocol::Status::spawn_failed, errno, static_cast<std::int64_t>(protocol::SpawnStep::clone));
    return {};
  }
  clone_args args{};
  args.flags = CLONE_INTO_CGROUP;
  args.exit_signal = SIGCHLD;
  args.cgroup = static_cast<std::uint64_t>(fds[kExecCgroupFd]);
  const pid_t pid = static_cast<pid_t>(::syscall(SYS_clone3, &args, sizeof args));
  if (pid == 0) {
    ::close(error_pipe[0]);
    child(exec, fds, error_pipe[1], who, seccomp);
  }
  const int clone_error = errno;
  ::close(error_pipe[1]);
  if (pid < 0) {
    ::close(error_pipe[0]);
    report(status, protocol::Status::spawn_failed, clone_error, static_cast<std::int64_t>(protocol::SpawnStep::clone));
    return {};
  }
  // Whether the exec worked is read from the error pipe by the serve loop:
  // waiting here would let a command that stops its own child before exec
  // freeze the init.
  return {pid, error_pipe[0]};
}

}  // namespace mayura::init
