// A command's run: a cgroup of its own, pipes of its own, one request to the
// init, then a poll loop over the output, the input, the status pipe, the
// deadline and the caller's cancellation.

#include "exec.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <chrono>
#include <cstring>
#include <map>

#include "protocol.hpp"
#include "requests.hpp"
#include "sys_error.hpp"
#include "trace.hpp"

namespace mayura::native {
namespace {

// After the command exits, output still held open by something it left
// running is read for this long before the result is returned.
constexpr auto kDrainAfterExit = std::chrono::milliseconds(250);
// After a kill, the exit is waited for this long before the sandbox is
// declared broken.
constexpr auto kKillGrace = std::chrono::seconds(10);
// A timeout beyond a year is no timeout (and must not overflow).
constexpr std::int64_t kYearMs = 365LL * 24 * 3600 * 1000;

// Reads what is there; false at end of stream.
bool drain(int fd, std::string& sink, std::size_t limit, bool& truncated, const OutputCallback& callback) {
  char buf[65536];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n == 0) return false;
    if (n < 0) return errno == EAGAIN || errno == EINTR;
    const std::string_view chunk(buf, static_cast<std::size_t>(n));
    if (callback) callback(chunk);
    const std::size_t room = sink.size() < limit ? limit - sink.size() : 0;
    if (chunk.size() > room) truncated = true;
    sink.append(chunk.substr(0, std::min(room, chunk.size())));
  }
}

class CommandRun {
 public:
  CommandRun(SandboxCore& core, const std::string& cgroup_name, const std::string& cwd,
             const std::vector<std::string>& argv, const ExecOptions& options)
      : core_(core), cgroup_name_(cgroup_name), cwd_(cwd), argv_(argv), options_(options) {}

  ~CommandRun() { core_.cgroup.remove_command(cgroup_name_); }  // stays while a server it started runs

  ExecResult run() {
    start();
    try {
      supervise();
    } catch (...) {
      kill();
      throw;
    }
    return finish();
  }

 private:
  // The cgroup, the pipes and the request: everything that can fail is made
  // before the command starts; once it runs, only supervise() may end it.
  void start() {
    UniqueFd cgroup = core_.cgroup.make_command(cgroup_name_);
    timer_.step("command cgroup");
    std::map<std::string, std::string> env = core_.command_env();
    for (const auto& [k, v] : options_.env) env[k] = v;
    protocol::Exec request;
    request.argv = argv_;
    request.env.reserve(env.size());
    for (const auto& [k, v] : env) request.env.push_back(k + "=" + v);
    request.cwd = cwd_;

    out_ = io::make_pipe(true, false);
    err_ = io::make_pipe(true, false);
    status_ = io::make_pipe(true, false);
    UniqueFd devnull;
    if (options_.stdin) {
      in_ = io::make_pipe(false, true);
    } else {
      devnull.reset(check_sys(::open("/dev/null", O_RDONLY | O_CLOEXEC), "opening /dev/null"));
    }
    const int child_stdin = options_.stdin ? in_.read.get() : devnull.get();
    limit_ = options_.max_output_bytes.value_or(std::size_t{16} << 20);
    deadline_ = options_.timeout_ms && *options_.timeout_ms < kYearMs
                    ? start_ + std::chrono::milliseconds(*options_.timeout_ms)
                    : Clock::time_point::max();
    std::vector<int> fds = {child_stdin, out_.write.get(), err_.write.get(), status_.write.get(), cgroup.get()};
    if (core_.cgroup.commands_procs() >= 0) fds.push_back(core_.cgroup.commands_procs());
    oom_kills_before_ = core_.cgroup.oom_kills();
    core_.send(protocol::encode(request), fds);
    // The child's ends live on in the init and the command only.
    out_.write.reset();
    err_.write.reset();
    status_.write.reset();
    in_.read.reset();
    timer_.step("request sent");
  }

  void supervise() {
    while (out_open_ || err_open_ || status_open_) {
      if (exited_ && Clock::now() - exit_time_ >= kDrainAfterExit) break;
      if (killed_ && !exited_ && Clock::now() - kill_time_ >= kKillGrace) break;
      pollfd fds[5];
      nfds_t n = 0;
      const int i_out = out_open_ ? static_cast<int>(n) : -1;
      if (out_open_) fds[n++] = {out_.read.get(), POLLIN, 0};
      const int i_err = err_open_ ? static_cast<int>(n) : -1;
      if (err_open_) fds[n++] = {err_.read.get(), POLLIN, 0};
      const int i_status = status_open_ ? static_cast<int>(n) : -1;
      if (status_open_) fds[n++] = {status_.read.get(), POLLIN, 0};
      const int i_in = in_.write ? static_cast<int>(n) : -1;
      if (in_.write) fds[n++] = {in_.write.get(), POLLOUT, 0};
      const int i_cancel = static_cast<int>(n);
      fds[n++] = {cancel_.event.get(), POLLIN, 0};

      const int ready = ::poll(fds, n, poll_timeout());
      if (ready < 0 && errno != EINTR) fail_step("waiting for the command", errno);
      if (!killed_ && !exited_ && Clock::now() >= deadline_) {
        result_.timed_out = true;
        kill();
      }
      if (ready <= 0) continue;
      if (fds[i_cancel].revents & POLLIN) {
        cancelled_ = true;
        if (exited_) break;
        kill();
      }
      if (i_out >= 0 && fds[i_out].revents) {
        out_open_ = drain(out_.read.get(), result_.stdout, limit_, result_.truncated, options_.on_stdout);
      }
      if (i_err >= 0 && fds[i_err].revents) {
        err_open_ = drain(err_.read.get(), result_.stderr, limit_, result_.truncated, options_.on_stderr);
      }
      if (i_in >= 0 && fds[i_in].revents) feed_stdin();
      if (i_status >= 0 && fds[i_status].revents) read_statuses();
    }
    timer_.step("output drained");
  }

  int poll_timeout() const {
    if (exited_) return ms_until(exit_time_ + kDrainAfterExit);
    if (killed_) return ms_until(kill_time_ + kKillGrace);
    if (deadline_ != Clock::time_point::max()) return ms_until(deadline_);
    return -1;
  }

  void feed_stdin() {
    const std::string& data = *options_.stdin;
    if (stdin_written_ < data.size()) {
      const long w = io::write_no_sigpipe(in_.write.get(), data.data() + stdin_written_,
                                          std::min<std::size_t>(data.size() - stdin_written_, 65536));
      if (w > 0) stdin_written_ += static_cast<std::size_t>(w);
      else if (errno != EAGAIN) in_.write.reset();  // the command closed its input
    }
    if (in_.write && stdin_written_ >= data.size()) in_.write.reset();
  }

  void read_statuses() {
    protocol::Status s;
    while (status_open_ && !exited_) {
      const ssize_t got = ::read(status_.read.get(), &s, sizeof s);
      if (got < 0 && errno == EAGAIN) return;
      if (got != sizeof s) {
        status_open_ = false;  // the init is gone
        return;
      }
      if (s.kind == protocol::Status::started) {
        timer_.step("started");
      } else if (s.kind == protocol::Status::spawn_failed) {
        not_started(s);
      } else if (s.kind == protocol::Status::exited) {
        timer_.step("exited");
        wait_status_ = s.value;
        exited_ = true;
        exit_time_ = Clock::now();
        status_open_ = false;
      }
    }
  }

  // Like a shell: 127 for a command not found, 126 for one that cannot run
  // (or a directory that cannot be entered), with a line on stderr.
  void not_started(const protocol::Status& s) {
    const int e = s.value;
    const auto step = static_cast<protocol::SpawnStep>(s.extra);
    if (step == protocol::SpawnStep::limits) fail_step("putting the command under the sandbox's process limit", e);
    if (step == protocol::SpawnStep::seccomp) fail_step("installing the command's seccomp filter", e);
    if (step == protocol::SpawnStep::user) {
      // Only a caller's profile can refuse these: the built-in one allows them.
      throw SandboxError(Reason::INVALID_CONFIG,
                         std::string("becoming the sandbox user under the sandbox's seccomp profile failed (it must "
                                     "allow setgroups, setresuid, setresgid, capset, prctl, chdir and execve): ") +
                             std::strerror(e));
    }
    if (step == protocol::SpawnStep::clone || step == protocol::SpawnStep::setup) fail_step("starting the command", e);
    const bool not_found = step == protocol::SpawnStep::exec && (e == ENOENT || e == ENOTDIR);
    result_.exit_code = not_found ? 127 : 126;
    const std::string message = step == protocol::SpawnStep::cwd
                                    ? "mayura: cannot enter " + cwd_ + ": " + std::strerror(e) + "\n"
                                    : "mayura: cannot run " + argv_[0] + ": " + std::strerror(e) + "\n";
    result_.stderr += message;
    if (options_.on_stderr) options_.on_stderr(message);
    exited_ = true;
    exit_time_ = Clock::now() - kDrainAfterExit;  // nothing else will come
    status_open_ = false;
  }

  // Every process of the command, at once, once.
  void kill() noexcept {
    if (killed_) return;
    core_.cgroup.kill_command(cgroup_name_);
    killed_ = true;
    kill_time_ = Clock::now();
  }

  ExecResult finish() {
    result_.duration_ms = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start_).count();
    if (!exited_) {
      // The status pipe closed with no exit: the init, and the sandbox, are
      // gone (and GONE is said only once everything of it is removed).
      if (!core_.alive()) core_.gone_once_ended();
      if (cancelled_) cancelled();
      if (killed_) throw SandboxError(Reason::INTERNAL, "the command could not be stopped");
      core_.gone_once_ended();
    }
    if (cancelled_) cancelled();
    if (result_.timed_out) {
      result_.exit_code.reset();
      return result_;
    }
    if (!result_.exit_code) {
      if (WIFEXITED(wait_status_)) result_.exit_code = WEXITSTATUS(wait_status_);
      else if (WIFSIGNALED(wait_status_)) result_.exit_code = 128 + WTERMSIG(wait_status_);
      else result_.exit_code = 255;
    }
    // 137 is SIGKILL, straight or passed on by a shell; the OOM killer's if
    // it killed in the sandbox while the command ran.
    result_.oom_killed = result_.exit_code == 137 && core_.cgroup.oom_kills() > oom_kills_before_;
    return result_;
  }

  SandboxCore& core_;
  const std::string& cgroup_name_;
  const std::string& cwd_;
  const std::vector<std::string>& argv_;
  const ExecOptions& options_;

  const Clock::time_point start_ = Clock::now();
  StepTimer timer_{"exec"};
  CancelWatch cancel_{options_.cancellation};
  io::Pipe out_, err_, status_, in_;
  std::size_t limit_ = 0;
  Clock::time_point deadline_ = Clock::time_point::max();

  ExecResult result_;
  std::size_t stdin_written_ = 0;
  bool out_open_ = true, err_open_ = true, status_open_ = true;
  bool exited_ = false, killed_ = false, cancelled_ = false;
  int wait_status_ = 0;
  std::uint64_t oom_kills_before_ = 0;
  Clock::time_point exit_time_{}, kill_time_{};
};

}  // namespace

ExecResult run_command(SandboxCore& core, const std::string& cgroup_name, const std::string& cwd,
                       const std::vector<std::string>& argv, const ExecOptions& options) {
  return CommandRun(core, cgroup_name, cwd, argv, options).run();
}

}  // namespace mayura::native
