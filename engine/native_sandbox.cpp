// exec and the file calls of a native sandbox: each is one request to the
// init with pipes of its own, and a poll loop here that watches the pipes,
// the deadline and the caller's cancellation.

#include "native_sandbox.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <functional>
#include <memory>
#include <optional>
#include <stop_token>

#include "fdpass.hpp"

#include "io.hpp"
#include "sys_error.hpp"
#include "trace.hpp"

namespace mayura::native {
namespace {

using Clock = std::chrono::steady_clock;

// After the command exits, output still held open by something it left
// running is read for this long before the result is returned.
constexpr auto kDrainAfterExit = std::chrono::milliseconds(250);
// After a kill, the exit is waited for this long before the sandbox is
// declared broken.
constexpr auto kKillGrace = std::chrono::seconds(10);
// A request the init does not take within this long fails.
constexpr int kSendTimeoutMs = 5000;
// A file request whose helper does not finish within this long fails.
constexpr int kFileTimeoutMs = 120000;

[[noreturn]] void gone() { throw SandboxError(Reason::GONE, "the sandbox has ended"); }
[[noreturn]] void cancelled() { throw SandboxError(Reason::CANCELLED, "the operation was cancelled"); }

Reason reason_for(int error) {
  switch (error) {
    case ENOENT: return Reason::NOT_FOUND;
    case EACCES:
    case EPERM:
    case EROFS:
    case EBUSY: return Reason::PERMISSION_DENIED;
    case EFBIG:
    case ENOSPC:
    case EDQUOT:
    case EMFILE:
    case ENFILE: return Reason::LIMIT_REACHED;
    case EISDIR:
    case ENOTDIR:
    case EINVAL:
    case ENAMETOOLONG:
    case ELOOP:
    case ENOTEMPTY:
    case EEXIST: return Reason::INVALID_INPUT;
    default: return Reason::INTERNAL;
  }
}

[[noreturn]] void file_error(const char* what, const std::string& path, int error) {
  std::string message = std::string(what) + " " + path + ": ";
  switch (error) {
    case EFBIG: message += "the file is larger than the limit"; break;
    case EINVAL: message += "not a regular file"; break;
    default: message += std::strerror(error); break;
  }
  throw SandboxError(reason_for(error), message);
}

int ms_until(Clock::time_point t) {
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(t - Clock::now()).count();
  return left <= 0 ? 0 : static_cast<int>(std::min<long long>(left, 60000));
}

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

// Reads one status record; false at end of stream (the init is gone).
bool read_status(int fd, protocol::Status& status) {
  for (;;) {
    const ssize_t n = ::read(fd, &status, sizeof status);
    if (n == sizeof status) return true;
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EAGAIN) {
      pollfd p{fd, POLLIN, 0};
      ::poll(&p, 1, -1);
      continue;
    }
    return false;
  }
}

// Wakes a poll loop when the caller cancels.
struct CancelWatch {
  struct Wake {
    int fd;
    void operator()() const noexcept { io::signal_eventfd(fd); }
  };
  UniqueFd event = io::make_eventfd();
  std::unique_ptr<std::stop_callback<Wake>> callback;
  explicit CancelWatch(const std::stop_token& token) {
    if (token.stop_possible()) callback = std::make_unique<std::stop_callback<Wake>>(token, Wake{event.get()});
  }
};

}  // namespace

void SandboxCore::send(const std::string& bytes, const std::vector<int>& fds) {
  std::lock_guard lock(mutex_);
  if (ended_) gone();
  // Bounded: an init that stops reading must not hold this lock (and with it
  // release) for ever.
  if (fdpass::send(init.control(), bytes, fds, kSendTimeoutMs) != 0) {
    if (errno == EPIPE || errno == ECONNRESET || errno == ENOTCONN) gone();
    if (errno == ETIMEDOUT) throw SandboxError(Reason::INTERNAL, "the sandbox's init does not take requests");
    fail_step("sending a request to the sandbox", errno);
  }
}

void SandboxCore::end() noexcept {
  if (ending_.exchange(true)) {
    wait_ended();  // another end() is under way: return when it is done
    return;
  }
  // Wake a send blocked on the socket before waiting for its lock. Only the
  // first end() gets here, and only end() closes the socket, so it is open.
  if (init.control() >= 0) ::shutdown(init.control(), SHUT_RDWR);
  {
    std::lock_guard lock(mutex_);
    ended_ = true;
    StepTimer timer("release");
    init.kill_and_wait();  // pid 1 dying takes every process of the namespace with it
    timer.step("init reaped");
    cgroup.destroy();
    timer.step("cgroups removed");
    lease.clear();
    timer.step("record cleared");
  }
  finished_.store(true);
  finished_.notify_all();
}

void SandboxCore::wait_ended() const noexcept {
  if (ending_.load()) finished_.wait(false);
}

void SandboxCore::gone_once_ended() {
  end();  // if the init died on its own, this removes the rest; else waits
  gone();
}

bool SandboxCore::alive() const noexcept {
  if (ending_.load()) return false;
  std::lock_guard lock(mutex_);
  return !ended_ && init.running();
}

std::string NativeSandbox::absolute(const std::string& path) const {
  if (!path.empty() && path.front() == '/') return path;
  if (path.empty() || path == ".") return core_->workdir;
  return core_->workdir + "/" + path;
}

ExecResult NativeSandbox::exec(const std::vector<std::string>& argv, const ExecOptions& options) {
  const auto start = Clock::now();
  StepTimer timer("exec");
  const std::string cgroup_name = "cmd-" + std::to_string(next_command_.fetch_add(1));
  UniqueFd cgroup = core_->cgroup.make_command(cgroup_name);
  struct RemoveCgroup {
    const cgroups::SandboxCgroup& cg;
    const std::string& name;
    ~RemoveCgroup() { cg.remove_command(name); }  // stays while a server it started runs
  } remove_cgroup{core_->cgroup, cgroup_name};

  timer.step("command cgroup");
  protocol::Exec request;
  request.argv = argv;
  std::map<std::string, std::string> env = core_->base_env;
  for (const auto& [k, v] : options.env) env[k] = v;
  request.env.reserve(env.size());
  for (const auto& [k, v] : env) request.env.push_back(k + "=" + v);
  request.cwd = options.cwd.empty() ? core_->workdir : absolute(options.cwd);

  io::Pipe out = io::make_pipe(true, false);
  io::Pipe err = io::make_pipe(true, false);
  io::Pipe status = io::make_pipe(true, false);
  io::Pipe in;
  UniqueFd devnull;
  if (options.stdin) {
    in = io::make_pipe(false, true);
  } else {
    devnull.reset(check_sys(::open("/dev/null", O_RDONLY | O_CLOEXEC), "opening /dev/null"));
  }
  const int child_stdin = options.stdin ? in.read.get() : devnull.get();
  // Everything that can fail is made before the command starts: once it
  // runs, only the loop below may end it.
  CancelWatch cancel(options.cancellation);
  core_->send(protocol::encode(request), {child_stdin, out.write.get(), err.write.get(), status.write.get(), cgroup.get()});
  out.write.reset();
  err.write.reset();
  status.write.reset();
  in.read.reset();
  devnull.reset();
  cgroup.reset();
  timer.step("request sent");

  const std::size_t limit = options.max_output_bytes.value_or(std::size_t{16} << 20);
  // (a timeout beyond a year is no timeout, and must not overflow)
  const std::int64_t year_ms = 365LL * 24 * 3600 * 1000;
  const auto deadline = options.timeout_ms && *options.timeout_ms < year_ms
                            ? start + std::chrono::milliseconds(*options.timeout_ms)
                            : Clock::time_point::max();
  ExecResult result;
  std::size_t stdin_written = 0;
  bool out_open = true, err_open = true, status_open = true;
  bool started = false, exited = false, killed = false, was_cancelled = false;
  int wait_status = 0;
  Clock::time_point exit_time{}, kill_time{};

  auto kill_command = [&] {
    if (!killed) {
      core_->cgroup.kill_command(cgroup_name);
      killed = true;
      kill_time = Clock::now();
    }
  };

  try {
    while (out_open || err_open || status_open) {
      if (exited && Clock::now() - exit_time >= kDrainAfterExit) break;
      if (killed && !exited && Clock::now() - kill_time >= kKillGrace) break;
      pollfd fds[5];
      nfds_t n = 0;
      const int i_out = out_open ? static_cast<int>(n) : -1;
      if (out_open) fds[n++] = {out.read.get(), POLLIN, 0};
      const int i_err = err_open ? static_cast<int>(n) : -1;
      if (err_open) fds[n++] = {err.read.get(), POLLIN, 0};
      const int i_status = status_open ? static_cast<int>(n) : -1;
      if (status_open) fds[n++] = {status.read.get(), POLLIN, 0};
      const int i_in = in.write ? static_cast<int>(n) : -1;
      if (in.write) fds[n++] = {in.write.get(), POLLOUT, 0};
      const int i_cancel = static_cast<int>(n);
      fds[n++] = {cancel.event.get(), POLLIN, 0};

      int timeout = -1;
      if (exited) timeout = ms_until(exit_time + kDrainAfterExit);
      else if (killed) timeout = ms_until(kill_time + kKillGrace);
      else if (deadline != Clock::time_point::max()) timeout = ms_until(deadline);
      const int ready = ::poll(fds, n, timeout);
      if (ready < 0 && errno != EINTR) fail_step("waiting for the command", errno);

      if (!killed && !exited && Clock::now() >= deadline) {
        result.timed_out = true;
        kill_command();
      }
      if (ready <= 0) continue;
      if (fds[i_cancel].revents & POLLIN) {
        was_cancelled = true;
        if (!exited) kill_command();
        else break;
      }
      if (i_out >= 0 && fds[i_out].revents) out_open = drain(out.read.get(), result.stdout, limit, result.truncated, options.on_stdout);
      if (i_err >= 0 && fds[i_err].revents) err_open = drain(err.read.get(), result.stderr, limit, result.truncated, options.on_stderr);
      if (i_in >= 0 && fds[i_in].revents) {
        const std::string& data = *options.stdin;
        if (stdin_written < data.size()) {
          const long w = io::write_no_sigpipe(in.write.get(), data.data() + stdin_written,
                                              std::min<std::size_t>(data.size() - stdin_written, 65536));
          if (w > 0) stdin_written += static_cast<std::size_t>(w);
          else if (errno != EAGAIN) in.write.reset();  // the command closed its input
        }
        if (in.write && stdin_written >= data.size()) in.write.reset();
      }
      if (i_status >= 0 && fds[i_status].revents) {
        protocol::Status s;
        while (status_open && !exited) {
          const ssize_t got = ::read(status.read.get(), &s, sizeof s);
          if (got < 0 && errno == EAGAIN) break;
          if (got != sizeof s) {
            status_open = false;
            break;
          }
          if (s.kind == protocol::Status::started) {
            started = true;
            timer.step("started");
          } else if (s.kind == protocol::Status::spawn_failed) {
            // Like a shell: 127 for a command not found, 126 for one that
            // cannot run (or a directory that cannot be entered).
            const int e = s.value;
            const auto step = static_cast<protocol::SpawnStep>(s.extra);
            if (step == protocol::SpawnStep::clone || step == protocol::SpawnStep::setup) {
              fail_step("starting the command", e);
            }
            const bool not_found = step == protocol::SpawnStep::exec && (e == ENOENT || e == ENOTDIR);
            result.exit_code = not_found ? 127 : 126;
            const std::string message = step == protocol::SpawnStep::cwd
                                            ? "mayura: cannot enter " + request.cwd + ": " + std::strerror(e) + "\n"
                                            : "mayura: cannot run " + argv[0] + ": " + std::strerror(e) + "\n";
            result.stderr += message;
            if (options.on_stderr) options.on_stderr(message);
            exited = true;
            exit_time = Clock::now() - kDrainAfterExit;  // nothing else will come
            status_open = false;
          } else if (s.kind == protocol::Status::exited) {
            wait_status = s.value;
            timer.step("exited");
            exited = true;
            exit_time = Clock::now();
            status_open = false;
          }
        }
      }
    }
  } catch (...) {
    kill_command();
    throw;
  }
  (void)started;
  timer.step("output drained");
  result.duration_ms = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start).count();

  if (!exited) {
    // The status pipe closed with no exit: the init, and the sandbox, are
    // gone (and GONE is said only once everything of it is removed).
    if (!core_->alive()) core_->gone_once_ended();
    if (was_cancelled) cancelled();
    if (killed) throw SandboxError(Reason::INTERNAL, "the command could not be stopped");
    core_->gone_once_ended();
  }
  if (was_cancelled) cancelled();
  if (result.timed_out) {
    result.exit_code.reset();
    return result;
  }
  if (!result.exit_code) {
    if (WIFEXITED(wait_status)) result.exit_code = WEXITSTATUS(wait_status);
    else if (WIFSIGNALED(wait_status)) result.exit_code = 128 + WTERMSIG(wait_status);
    else result.exit_code = 255;
  }
  return result;
}

namespace {

// A file request's common shape: send it with its pipes, move the data,
// read the answer.
struct FileCall {
  io::Pipe data;
  io::Pipe status = io::make_pipe(false, false);
};

// Waits for the status record, honouring cancellation; GONE if the init died.
[[noreturn]] void file_timeout() {
  throw SandboxError(Reason::INTERNAL, "the sandbox did not finish a file request in time");
}

protocol::Status wait_done(SandboxCore& core, int status_fd, const std::stop_token& token) {
  CancelWatch cancel(token);
  for (;;) {
    pollfd p[2] = {{status_fd, POLLIN, 0}, {cancel.event.get(), POLLIN, 0}};
    const int r = ::poll(p, 2, kFileTimeoutMs);
    if (r == 0) file_timeout();
    if (r < 0 && errno != EINTR) fail_step("waiting for a file request", errno);
    if (p[1].revents & POLLIN) cancelled();
    if (p[0].revents) {
      protocol::Status s;
      if (!read_status(status_fd, s) || s.kind != protocol::Status::done) {
        if (!core.alive()) core.gone_once_ended();
        throw SandboxError(Reason::INTERNAL, "the sandbox's file helper failed");
      }
      return s;
    }
  }
}

// Reads the data pipe to its end (bounded), honouring cancellation.
std::string read_data(int fd, std::size_t limit, const std::stop_token& token) {
  CancelWatch cancel(token);
  std::string data;
  char buf[65536];
  for (;;) {
    pollfd p[2] = {{fd, POLLIN, 0}, {cancel.event.get(), POLLIN, 0}};
    const int r = ::poll(p, 2, kFileTimeoutMs);
    if (r == 0) file_timeout();
    if (r < 0 && errno != EINTR) fail_step("reading from the sandbox", errno);
    if (p[1].revents & POLLIN) cancelled();
    if (!p[0].revents) continue;
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n == 0) return data;
    if (n < 0) {
      if (errno == EAGAIN || errno == EINTR) continue;
      fail_step("reading from the sandbox", errno);
    }
    if (data.size() + static_cast<std::size_t>(n) > limit) {
      throw SandboxError(Reason::LIMIT_REACHED, "the answer is larger than the limit");
    }
    data.append(buf, static_cast<std::size_t>(n));
  }
}

}  // namespace

std::string NativeSandbox::read_file(const std::string& path, const ReadOptions& options) {
  FileCall call;
  call.data = io::make_pipe(true, false);
  protocol::FileRequest request{absolute(path), options.max_bytes.value_or(std::size_t{64} << 20)};
  core_->send(protocol::encode(protocol::Request::read, request), {call.data.write.get(), call.status.write.get()});
  call.data.write.reset();
  call.status.write.reset();
  std::string data = read_data(call.data.read.get(), request.max_bytes + 1, options.cancellation);
  const protocol::Status s = wait_done(*core_, call.status.read.get(), options.cancellation);
  if (s.value != 0) file_error("cannot read", path, s.value);
  return data;
}

void NativeSandbox::write_file(const std::string& path, std::string_view data, const FileOptions& options) {
  FileCall call;
  call.data = io::make_pipe(false, true);
  protocol::FileRequest request{absolute(path), data.size()};
  core_->send(protocol::encode(protocol::Request::write, request), {call.data.read.get(), call.status.write.get()});
  call.data.read.reset();
  call.status.write.reset();
  {
    CancelWatch cancel(options.cancellation);
    std::size_t written = 0;
    while (written < data.size()) {
      pollfd p[3] = {{call.data.write.get(), POLLOUT, 0}, {cancel.event.get(), POLLIN, 0}, {call.status.read.get(), POLLIN, 0}};
      const int r = ::poll(p, 3, kFileTimeoutMs);
      if (r == 0) file_timeout();
      if (r < 0 && errno != EINTR) fail_step("writing to the sandbox", errno);
      if (p[1].revents & POLLIN) cancelled();  // the helper sees a short write and keeps the old file
      if (p[2].revents) break;                 // the helper answered early: it failed
      if (!p[0].revents) continue;
      const long n = io::write_no_sigpipe(call.data.write.get(), data.data() + written, std::min<std::size_t>(data.size() - written, 1 << 16));
      if (n > 0) written += static_cast<std::size_t>(n);
      else if (errno != EAGAIN) break;
    }
    call.data.write.reset();
  }
  const protocol::Status s = wait_done(*core_, call.status.read.get(), options.cancellation);
  if (s.value != 0) file_error("cannot write", path, s.value);
}

std::vector<FileEntry> NativeSandbox::list(const std::string& path, const FileOptions& options) {
  FileCall call;
  call.data = io::make_pipe(true, false);
  protocol::FileRequest request{absolute(path), 0};
  core_->send(protocol::encode(protocol::Request::list, request), {call.data.write.get(), call.status.write.get()});
  call.data.write.reset();
  call.status.write.reset();
  const std::string bytes = read_data(call.data.read.get(), std::size_t{64} << 20, options.cancellation);
  const protocol::Status s = wait_done(*core_, call.status.read.get(), options.cancellation);
  if (s.value != 0) file_error("cannot list", path, s.value);
  std::vector<protocol::ListEntry> raw;
  if (!protocol::decode_listing(bytes, raw)) throw SandboxError(Reason::INTERNAL, "the sandbox sent a malformed listing");
  std::vector<FileEntry> entries;
  entries.reserve(raw.size());
  for (auto& e : raw) {
    FileEntry f;
    f.name = std::move(e.name);
    f.type = e.type == 0 ? FileType::file : e.type == 1 ? FileType::directory : e.type == 2 ? FileType::symlink : FileType::other;
    f.size = e.size;
    f.mode = e.mode;
    f.mtime_ms = e.mtime_ms;
    entries.push_back(std::move(f));
  }
  return entries;
}

void NativeSandbox::remove(const std::string& path, const FileOptions& options) {
  FileCall call;
  protocol::FileRequest request{absolute(path), 0};
  core_->send(protocol::encode(protocol::Request::remove, request), {call.status.write.get()});
  call.status.write.reset();
  const protocol::Status s = wait_done(*core_, call.status.read.get(), options.cancellation);
  if (s.value != 0) file_error("cannot remove", path, s.value);
}

std::string NativeSandbox::url(int) {
  throw SandboxError(Reason::UNSUPPORTED, "the native provider does not serve ports yet");
}

}  // namespace mayura::native
