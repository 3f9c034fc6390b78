// A command's run: a cgroup of its own, pipes of its own, one request to the
// init, then a state machine on Asio over the output, the input, the status
// pipe, the deadline and the caller's cancellation. The same machine runs on
// the engine's reactor (async_exec) or on a caller's own thread (exec).

#include "exec.hpp"

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <boost/asio/bind_executor.hpp>
#include <boost/asio/dispatch.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <cerrno>
#include <csignal>
#include <chrono>
#include <cstring>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

#include "protocol.hpp"
#include "reactor.hpp"
#include "requests.hpp"
#include "sys_error.hpp"
#include "terminal.hpp"
#include "trace.hpp"

namespace mayura::native {
namespace {

namespace asio = boost::asio;

// After the command exits, output still held open by something it left
// running is read for this long before the result is returned.
constexpr auto kDrainAfterExit = std::chrono::milliseconds(250);
// After a kill, the exit is waited for this long before the sandbox is
// declared broken.
constexpr auto kKillGrace = std::chrono::seconds(10);
// Until then the kill is repeated this often: a command whose timeout passed
// before the init had cloned it (a loaded host) lands in its cgroup after
// the first kill, and would run, or stay stopped, unbounded.
constexpr auto kKillAgainEvery = std::chrono::milliseconds(50);
// A timeout beyond a year is no timeout (and must not overflow).
constexpr std::int64_t kYearMs = 365LL * 24 * 3600 * 1000;
constexpr std::size_t kChunk = 65536;
// Input written through a control and not yet taken by the command: a
// writer that outpaces a command that does not read is refused beyond this.
constexpr std::size_t kMaxQueuedInput = std::size_t{16} << 20;

// Where a control's calls go: the run's strand while the run lives. Closed
// as the run finishes, under its mutex, and the strand let go then: a
// control the caller keeps must not post to, nor hold a strand of, a
// context that has ended (a blocking exec's ends with it).
struct ControlGate {
  std::mutex mutex;
  std::optional<boost::asio::strand<boost::asio::any_io_executor>> strand;  // none once closed
  std::size_t queued = 0;                                                   // input bytes written and not yet taken
};

class CommandRun : public std::enable_shared_from_this<CommandRun> {
 public:
  CommandRun(std::shared_ptr<SandboxCore> core, std::string cgroup_name, std::string cwd, std::vector<std::string> argv,
             ExecOptions options, const asio::any_io_executor& executor, ExecDone done, int program)
      : core_(std::move(core)),
        cgroup_name_(std::move(cgroup_name)),
        cwd_(std::move(cwd)),
        argv_(std::move(argv)),
        program_(program),
        options_(std::move(options)),
        strand_(asio::make_strand(executor)),
        out_(strand_),
        err_(strand_),
        status_(strand_),
        in_(strand_),
        timer_(strand_),
        done_(std::move(done)) {}

  // A start that failed: a cgroup the init never heard of goes back as it
  // is; one it did is removed (it stays while something of the command
  // runs).
  ~CommandRun() {
    close_gate();
    if (finished_ || !cgroup_made_) return;
    if (sent_) core_->cgroup.retire_command(cgroup_name_, false);
    else core_->cgroup.give_back_command(cgroup_name_);
  }

  // The cgroup, the pipes and the request: everything that can fail is made
  // here, on the caller's thread, before the command starts; once it runs,
  // only the machine may end it.
  void start() {
    if ((options_.terminal || interactive()) && core_->kept.init_protocol < 2) {
      throw SandboxError(Reason::INVALID_INPUT,
                         "this sandbox was made by an older engine, whose init runs no command on a terminal and "
                         "streams no input: a sandbox made now does");
    }
    UniqueFd cgroup = core_->cgroup.take_command(cgroup_name_);
    cgroup_made_ = true;
    trace_.step("command cgroup");
    std::map<std::string, std::string> env = core_->command_env();
    for (const auto& [k, v] : options_.env) env[k] = v;
    protocol::Exec request;
    request.argv = argv_;
    request.env.reserve(env.size());
    for (const auto& [k, v] : env) request.env.push_back(k + "=" + v);
    request.cwd = cwd_;
    request.program_fd = program_ >= 0;
    request.terminal = options_.terminal.has_value();
    request.report_pid = interactive();
    if (options_.stdin) input_ = *options_.stdin;
    if (interactive()) {
      gate_ = std::make_shared<ControlGate>();
      gate_->queued = input_.size();
    }
    input_ended_ = !interactive();

    io::Pipe out;
    io::Pipe err;
    io::Pipe in;
    Terminal terminal;
    io::Pipe status = io::make_pipe(true, false);
    std::vector<int> fds;
    if (options_.terminal) {
      // One terminal is its three streams; the engine reads and writes its
      // master, and has no stderr of its own to watch.
      const UniqueFd root = core_->init.open_root();
      if (!root) throw SandboxError(Reason::GONE, "the sandbox has ended");
      terminal = open_terminal(root.get(), *options_.terminal);
      const int slave = terminal.slave.get();
      fds = {slave, slave, slave, status.write.get(), cgroup.get()};
    } else {
      out = io::make_pipe(true, false);
      err = io::make_pipe(true, false);
      if (options_.stdin || interactive()) in = io::make_pipe(false, true);
      const int child_stdin = in.read ? in.read.get() : dev_null();
      fds = {child_stdin, out.write.get(), err.write.get(), status.write.get(), cgroup.get()};
    }
    limit_ = options_.max_output_bytes.value_or(std::size_t{16} << 20);
    deadline_ = options_.timeout_ms && *options_.timeout_ms < kYearMs
                    ? start_ + std::chrono::milliseconds(*options_.timeout_ms)
                    : Clock::time_point::max();
    const UniqueFd v1_procs = core_->cgroup.commands_procs();
    if (v1_procs) fds.push_back(v1_procs.get());
    if (program_ >= 0) fds.push_back(program_);
    // The engine's ends go to the reactor before the command exists: a
    // reactor that cannot take them (its memory, the epoll watch limit) fails
    // the exec with nothing started, rather than leaving a command whose
    // output nobody reads.
    if (terminal.master) {
      UniqueFd input(::fcntl(terminal.master.get(), F_DUPFD_CLOEXEC, 3));
      check_sys(input.get(), "opening the terminal's input");
      watch_fd(out_, terminal.master, "watching the command's terminal");
      watch_fd(in_, input, "watching the command's terminal input");
      err_open_ = false;
      in_open_ = true;
    } else {
      watch_fd(out_, out.read, "watching the command's output");
      watch_fd(err_, err.read, "watching the command's errors");
      in_open_ = static_cast<bool>(in.write);
      if (in_open_) watch_fd(in_, in.write, "watching the command's input");
    }
    watch_fd(status_, status.read, "watching the command's status");
    oom_kills_before_ = core_->cgroup.oom_kills();
    core_->send(protocol::encode(request), fds);
    sent_ = true;
    trace_.step("request sent");
    // From here the machine runs on its strand.
    asio::dispatch(strand_, [self = shared_from_this()] { self->begin(); });
  }

  // What the caller's control (ExecOptions::on_start) asks, on the strand.
  void more_input(std::string_view data) {
    if (finished_ || !in_open_ || input_ended_) return taken(data.size());
    input_.append(data);
    if (!waiting_to_write_) feed_stdin();
  }
  void end_input() {
    if (finished_ || input_ended_) return;
    input_ended_ = true;
    if (!waiting_to_write_) feed_stdin();
  }
  void send_signal(int signal) {
    if (finished_ || exited_) return;
    if (pid_ <= 0) return signals_waiting_.push_back(signal);  // said once it runs
    try {
      core_->send(protocol::encode_signal(pid_, signal), {});
    } catch (const std::exception&) {
      // the sandbox is gone: the run ends with that
    }
  }
  void resize(TerminalSize size) {
    if (!finished_ && options_.terminal && out_.is_open()) resize_terminal(out_.native_handle(), size);
  }

 private:
  bool interactive() const { return static_cast<bool>(options_.on_start); }

  void begin() {
    if (options_.cancellation.stop_possible()) {
      cancel_watch_.emplace(options_.cancellation, Wake{weak_from_this(), strand_});
    }
    watch_output(OutputStream::out);
    if (err_open_) watch_output(OutputStream::err);
    watch_status();
    if (in_open_) feed_stdin();
    arm_timer();
    // Last, on the strand all the same: nothing of the run reaches the
    // caller before this. A caller's on_start that throws fails the run.
    if (interactive()) {
      try {
        give_control();
      } catch (...) {
        failure_ = std::current_exception();
        kill();
      }
    }
  }

  class Control;
  void give_control();
  // Input the command took (or that was dropped) leaves the queue's count.
  void taken(std::size_t bytes) {
    if (bytes == 0 || !gate_) return;
    std::lock_guard lock(gate_->mutex);
    gate_->queued -= std::min(bytes, gate_->queued);
  }
  void close_gate() noexcept {
    if (!gate_) return;
    std::lock_guard lock(gate_->mutex);
    gate_->strand.reset();
  }

  asio::posix::stream_descriptor& stream(OutputStream from) { return from == OutputStream::out ? out_ : err_; }
  bool& open(OutputStream from) { return from == OutputStream::out ? out_open_ : err_open_; }

  void watch_output(OutputStream from) {
    stream(from).async_wait(asio::posix::descriptor_base::wait_read,
                            [self = shared_from_this(), from](const boost::system::error_code& ec) {
                              if (!ec) self->on_output(from);
                            });
  }

  void on_output(OutputStream from) {
    if (finished_) return;
    char buf[kChunk];
    const ssize_t n = ::read(stream(from).native_handle(), buf, sizeof buf);
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) return watch_output(from);
    if (n <= 0) {
      open(from) = false;
      return end_if_drained();
    }
    const std::string_view chunk(buf, static_cast<std::size_t>(n));
    keep(from, chunk);
    if (options_.on_output) {
      // Read on once the consumer asks for more.
      options_.on_output(from, chunk, [run = weak_from_this(), strand = strand_, from] {
        asio::post(strand, [run, from] {
          if (auto self = run.lock(); self && !self->finished_) self->watch_output(from);
        });
      });
      return;
    }
    const OutputCallback& callback = from == OutputStream::out ? options_.on_stdout : options_.on_stderr;
    if (callback) callback(chunk);
    watch_output(from);
  }

  // Up to the limit of each stream, into the result when it keeps output;
  // counted either way, for `truncated`.
  void keep(OutputStream from, std::string_view chunk) {
    std::size_t& seen = from == OutputStream::out ? out_bytes_ : err_bytes_;
    const std::size_t room = seen < limit_ ? limit_ - seen : 0;
    if (chunk.size() > room) result_.truncated = true;
    seen += std::min(room, chunk.size());
    if (options_.keep_output)
      (from == OutputStream::out ? result_.stdout : result_.stderr)
          .append(chunk.substr(0, std::min(room, chunk.size())));
  }

  void watch_stdin() {
    waiting_to_write_ = true;
    in_.async_wait(asio::posix::descriptor_base::wait_write,
                   [self = shared_from_this()](const boost::system::error_code& ec) {
                     self->waiting_to_write_ = false;
                     if (!ec) self->feed_stdin();
                   });
  }

  // What is queued for the input, as the command takes it; its end once the
  // queue is empty and no more will come. A command that closed its input
  // (or a terminal gone) drops the rest.
  void feed_stdin() {
    if (finished_ || !in_open_) return;
    const std::size_t before = written_;
    while (written_ < input_.size()) {
      const long w = io::write_no_sigpipe(in_.native_handle(), input_.data() + written_,
                                          std::min<std::size_t>(input_.size() - written_, kChunk));
      if (w > 0) {
        written_ += static_cast<std::size_t>(w);
        continue;
      }
      if (w < 0 && errno == EINTR) continue;
      if (w < 0 && errno == EAGAIN) {
        taken(written_ - before);
        // what was taken leaves the queue's memory once it is a chunk or more
        if (written_ >= kChunk) {
          input_.erase(0, written_);
          written_ = 0;
        }
        return watch_stdin();
      }
      input_ended_ = true;
      written_ = input_.size();
    }
    taken(written_ - before);
    input_.clear();
    written_ = 0;
    // A terminal's input is its master, which its output still reads.
    if (input_ended_ && !options_.terminal) {
      boost::system::error_code ignored;
      in_.close(ignored);  // the end of its input
      in_open_ = false;
    }
  }

  void watch_status() {
    status_.async_wait(asio::posix::descriptor_base::wait_read,
                       [self = shared_from_this()](const boost::system::error_code& ec) {
                         if (!ec) self->read_statuses();
                       });
  }

  void read_statuses() {
    if (finished_) return;
    protocol::Status s;
    while (status_open_ && !exited_) {
      const ssize_t got = ::read(status_.native_handle(), &s, sizeof s);
      if (got < 0 && (errno == EAGAIN || errno == EINTR)) return watch_status();
      if (got != sizeof s) {
        status_open_ = false;  // the init is gone
        return end_if_drained();
      }
      if (s.kind == protocol::Status::started) {
        trace_.step("started");
        pid_ = static_cast<int>(s.extra);
        for (const int signal : std::exchange(signals_waiting_, {})) send_signal(signal);
      } else if (s.kind == protocol::Status::spawn_failed) {
        init_answered_ = true;
        if (!not_started(s)) return;
      } else if (s.kind == protocol::Status::exited) {
        init_answered_ = true;
        trace_.step("exited");
        wait_status_ = s.value;
        exited(Clock::now());
      }
    }
  }

  void exited(Clock::time_point at) {
    exited_ = true;
    exit_time_ = at;
    status_open_ = false;
    boost::system::error_code ignored;
    status_.close(ignored);
    arm_timer();
    end_if_drained();
  }

  // Like a shell: 127 for a command not found, 126 for one that cannot run
  // (or a directory that cannot be entered), with a line on stderr. False
  // when the run has ended in a failure.
  bool not_started(const protocol::Status& s) {
    const int e = s.value;
    const auto step = static_cast<protocol::SpawnStep>(s.extra);
    try {
      if (step == protocol::SpawnStep::limits) fail_step("putting the command under the sandbox's process limit", e);
      if (step == protocol::SpawnStep::seccomp) fail_step("installing the command's seccomp filter", e);
      if (step == protocol::SpawnStep::user) {
        // Only a caller's profile can refuse these: the built-in one allows them.
        throw SandboxError(Reason::INVALID_CONFIG,
                           std::string("becoming the sandbox user under the sandbox's seccomp profile failed (it must "
                                       "allow setgroups, setresuid, setresgid, capset, prctl, chdir and execve): ") +
                               std::strerror(e));
      }
      if (step == protocol::SpawnStep::clone || step == protocol::SpawnStep::setup)
        fail_step("starting the command", e);
    } catch (...) {
      failure_ = std::current_exception();
      finish();
      return false;
    }
    const bool not_found = step == protocol::SpawnStep::exec && (e == ENOENT || e == ENOTDIR);
    result_.exit_code = not_found ? 127 : 126;
    const std::string message = step == protocol::SpawnStep::cwd
                                    ? "mayura: cannot enter " + cwd_ + ": " + std::strerror(e) + "\n"
                                    : "mayura: cannot run " + argv_[0] + ": " + std::strerror(e) + "\n";
    keep(OutputStream::err, message);
    if (options_.on_output) {
      options_.on_output(OutputStream::err, message, [] {});
    } else if (options_.on_stderr) {
      options_.on_stderr(message);
    }
    exited(Clock::now() - kDrainAfterExit);  // nothing else will come
    return true;
  }

  void on_cancel() {
    if (finished_) return;
    cancelled_ = true;
    if (exited_) return finish();
    kill();
  }

  // The next moment something is due: the end of the drain, of the kill's
  // grace, or the timeout.
  void arm_timer() {
    if (finished_) return;
    Clock::time_point due = Clock::time_point::max();
    if (exited_) due = exit_time_ + kDrainAfterExit;
    else if (killed_) due = std::min(kill_time_ + kKillGrace, Clock::now() + kKillAgainEvery);
    else due = deadline_;
    if (due == Clock::time_point::max()) return;
    timer_.expires_at(due);
    timer_.async_wait([self = shared_from_this(), due](const boost::system::error_code& ec) {
      if (!ec) self->on_timer(due);
    });
  }

  void on_timer(Clock::time_point due) {
    if (finished_ || timer_.expiry() != due) return;  // a later arm replaced this one
    const auto now = Clock::now();
    if (exited_) {
      if (now - exit_time_ >= kDrainAfterExit) return finish();
    } else if (killed_) {
      if (now - kill_time_ >= kKillGrace) return finish();
      core_->cgroup.kill_command_again(cgroup_name_);
    } else if (now >= deadline_) {
      result_.timed_out = true;
      return kill();
    }
    arm_timer();
  }

  // Every process of the command, at once, once.
  void kill() noexcept {
    if (killed_) return;
    core_->cgroup.kill_command(cgroup_name_);
    killed_ = true;
    kill_time_ = Clock::now();
    arm_timer();
  }

  void end_if_drained() {
    if (!out_open_ && !err_open_ && !status_open_) finish();
  }

  // Once: the pipes closed, the result made, the cgroup removed, then done.
  void finish() {
    if (finished_) return;
    finished_ = true;
    close_gate();
    trace_.step("output drained");
    cancel_watch_.reset();
    boost::system::error_code ignored;
    for (auto* d : {&out_, &err_, &status_, &in_}) d->close(ignored);
    timer_.cancel();
    ExecResult result;
    std::exception_ptr error = failure_;
    if (!error) {
      try {
        result = make_result();
      } catch (...) {
        error = std::current_exception();
      }
    }
    core_->cgroup.retire_command(cgroup_name_, init_answered_ && !killed_, [this](int dir) {
      // on the reactor: never a wait (see ask_standby)
      core_->ask_standby(dir);
    });
    ExecDone done = std::move(done_);
    done(error, std::move(result));
  }

  ExecResult make_result() {
    result_.duration_ms = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start_).count();
    if (!exited_) {
      // The status pipe closed with no exit: the init, and the sandbox, are
      // gone (and GONE is said only once everything of it is removed).
      if (!core_->alive()) core_->gone_once_ended();
      if (cancelled_) cancelled();
      if (killed_) throw SandboxError(Reason::INTERNAL, "the command could not be stopped");
      core_->gone_once_ended();
    }
    if (cancelled_) cancelled();
    if (result_.timed_out) {
      result_.exit_code.reset();
      return std::move(result_);
    }
    // Killed by the sandbox's end (the release's cgroup.kill reaches the
    // command while the init can still say so): GONE, as for a command whose
    // init went first, not a result of 137.
    if (WIFSIGNALED(wait_status_) && WTERMSIG(wait_status_) == SIGKILL && !core_->alive()) core_->gone_once_ended();
    if (!result_.exit_code) {
      if (WIFEXITED(wait_status_)) result_.exit_code = WEXITSTATUS(wait_status_);
      else if (WIFSIGNALED(wait_status_)) result_.exit_code = 128 + WTERMSIG(wait_status_);
      else result_.exit_code = 255;
    }
    // 137 is SIGKILL, straight or passed on by a shell; the OOM killer's if
    // it killed in the sandbox while the command ran.
    result_.oom_killed = result_.exit_code == 137 && core_->cgroup.oom_kills() > oom_kills_before_;
    return std::move(result_);
  }

  std::shared_ptr<SandboxCore> core_;
  std::string cgroup_name_;  // the one asked for, until start() takes a cgroup
  const std::string cwd_;
  const std::vector<std::string> argv_;
  const int program_;  // the program's memfd (the provider's), or -1: argv[0] from the sandbox's PATH
  const ExecOptions options_;

  const Clock::time_point start_ = Clock::now();
  StepTimer trace_{"exec"};
  asio::strand<asio::any_io_executor> strand_;
  asio::posix::stream_descriptor out_, err_, status_, in_;
  asio::steady_timer timer_;
  using Wake = StopOnStrand<CommandRun, &CommandRun::on_cancel>;  // a stop, from any thread, to the strand
  std::optional<std::stop_callback<Wake>> cancel_watch_;
  ExecDone done_;
  std::size_t limit_ = 0;
  std::size_t out_bytes_ = 0, err_bytes_ = 0;  // kept (or that would be) of each stream
  Clock::time_point deadline_ = Clock::time_point::max();

  ExecResult result_;
  std::exception_ptr failure_;
  // The input queued and not yet taken (from written_ on), and whether more
  // may come (ExecOptions::on_start) or its end is due once it is taken.
  std::string input_;
  std::size_t written_ = 0;
  bool input_ended_ = true, in_open_ = false, waiting_to_write_ = false;
  int pid_ = 0;                        // in the sandbox's pid namespace, once the init said (interactive runs only)
  std::shared_ptr<ControlGate> gate_;  // an interactive run's only
  std::vector<int> signals_waiting_;
  bool out_open_ = true, err_open_ = true, status_open_ = true;
  bool exited_ = false, killed_ = false, cancelled_ = false, finished_ = false, cgroup_made_ = false;
  bool sent_ = false;  // the request reached the init
  // The init said the command ended or never started: it will put nothing
  // more in the cgroup (a run that timed out before the init read the
  // request has no such answer, and its command may still start there).
  // A cgroup written cgroup.kill is never the next one's either: Linux 6.18
  // kills every process cloned into it afterwards (seen: each later command
  // ended 137 at once).
  bool init_answered_ = false;
  int wait_status_ = 0;
  std::uint64_t oom_kills_before_ = 0;
  Clock::time_point exit_time_{}, kill_time_{};
};

// The caller's side of an interactive run: each call goes to the run's
// strand through its gate, and does nothing once the run has ended.
class CommandRun::Control final : public CommandControl {
 public:
  Control(std::weak_ptr<CommandRun> run, std::shared_ptr<ControlGate> gate)
      : run_(std::move(run)), gate_(std::move(gate)) {}
  void write(std::string data) override {
    {
      std::lock_guard lock(gate_->mutex);
      if (!gate_->strand) return;
      if (gate_->queued + data.size() > kMaxQueuedInput) {
        throw SandboxError(Reason::LIMIT_REACHED, "the command has not taken the last " +
                                                      std::to_string(gate_->queued) + " bytes of its input yet");
      }
      gate_->queued += data.size();
    }
    on_run([data = std::move(data)](CommandRun& run) { run.more_input(data); });
  }
  void close_input() override {
    on_run([](CommandRun& run) { run.end_input(); });
  }
  void signal(int signal) override {
    on_run([signal](CommandRun& run) { run.send_signal(signal); });
  }
  void resize(TerminalSize size) override {
    on_run([size](CommandRun& run) { run.resize(size); });
  }

 private:
  template <class F>
  void on_run(F f) {
    std::lock_guard lock(gate_->mutex);
    if (!gate_->strand) return;
    asio::post(*gate_->strand, [run = run_, f = std::move(f)]() mutable {
      if (auto self = run.lock()) f(*self);
    });
  }
  std::weak_ptr<CommandRun> run_;
  std::shared_ptr<ControlGate> gate_;
};

void CommandRun::give_control() {
  {
    std::lock_guard lock(gate_->mutex);
    gate_->strand = strand_;
  }
  options_.on_start(std::make_shared<Control>(weak_from_this(), gate_));
}

}  // namespace

int dev_null() {
  static const int fd = check_sys(::open("/dev/null", O_RDONLY | O_CLOEXEC), "opening /dev/null");
  return fd;
}

void start_command(std::shared_ptr<SandboxCore> core, std::string cgroup_name, std::string cwd,
                   std::vector<std::string> argv, ExecOptions options, const asio::any_io_executor& executor,
                   ExecDone done, int program) {
  std::make_shared<CommandRun>(std::move(core), std::move(cgroup_name), std::move(cwd), std::move(argv),
                               std::move(options), executor, std::move(done), program)
      ->start();
}

ExecResult run_command(std::shared_ptr<SandboxCore> core, std::string cgroup_name, std::string cwd,
                       std::vector<std::string> argv, ExecOptions options, int program) {
  // The caller's thread is the consumer here: a paced callback has had all
  // it needs once it returns.
  if (options.on_output) {
    options.on_output = [paced = std::move(options.on_output)](OutputStream from, std::string_view chunk,
                                                               const std::function<void()>& more) {
      paced(from, chunk, [] {});
      more();
    };
  }
  asio::io_context context(1);
  std::exception_ptr error;
  ExecResult result;
  start_command(
      std::move(core), std::move(cgroup_name), std::move(cwd), std::move(argv), std::move(options),
      context.get_executor(),
      [&](std::exception_ptr e, ExecResult r) {
        error = std::move(e);
        result = std::move(r);
      },
      program);
  context.run();
  if (error) std::rethrow_exception(error);
  return result;
}

}  // namespace mayura::native
