// A native sandbox's core (sending requests, ending) and the thin backend
// over it; a command's run is in exec.cpp, file requests in file_requests.cpp.

#include "native_sandbox.hpp"

#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <utility>

#include "desktop.hpp"
#include "exec.hpp"
#include "mayura/base/fdpass.hpp"
#include "file_requests.hpp"
#include "reactor.hpp"
#include "requests.hpp"
#include "sys_error.hpp"
#include "trace.hpp"

namespace mayura::native {

void SandboxCore::send(const std::string& bytes, const std::vector<int>& fds) {
  // Ended: GONE without waiting for the lock, which the removal holds.
  if (ending_.load()) gone();
  std::lock_guard lock(mutex_);
  if (ending_.load()) gone();
  // Bounded: an init that stops reading must not hold this lock (and with it
  // release) for ever.
  if (fdpass::send(init.control(), bytes, fds, kSendTimeoutMs) != 0) {
    if (errno == EPIPE || errno == ECONNRESET || errno == ENOTCONN) gone();
    if (errno == ETIMEDOUT) throw SandboxError(Reason::INTERNAL, "the sandbox's init does not take requests");
    fail_step("sending a request to the sandbox", errno);
  }
}

// A standby request's fds: the cgroup, and the v1 cgroup.procs it joins (-1: none).
std::vector<int> SandboxCore::standby_fds(int dir, int v1_procs) {
  std::vector<int> fds = {dir};
  if (v1_procs >= 0) fds.push_back(v1_procs);
  return fds;
}

bool SandboxCore::try_send(const std::string& bytes, const std::vector<int>& fds) noexcept {
  if (ending_.load()) return false;
  std::unique_lock lock(mutex_, std::try_to_lock);
  if (!lock.owns_lock() || ending_.load()) return false;
  return fdpass::send(init.control(), bytes, fds, 0) == 0;
}

void SandboxCore::ask_standby(int dir) noexcept {
  if (dir < 0 || !commands_ahead) return;
  try {
    const UniqueFd v1_procs = cgroup.commands_procs();
    try_send(protocol::encode_standby(false), standby_fds(dir, v1_procs.get()));
  } catch (...) {
    // the next command starts the usual way
  }
}

bool SandboxCore::start_standby_now(int dir, int timeout_ms, const std::stop_token& cancellation) {
  int pipe[2];
  check_sys(::pipe2(pipe, O_CLOEXEC), "making the standby's answer pipe");
  const UniqueFd answer(pipe[0]);
  UniqueFd said(pipe[1]);
  const UniqueFd v1_procs = cgroup.commands_procs();
  std::vector<int> fds = standby_fds(dir, v1_procs.get());
  fds.push_back(said.get());
  send(protocol::encode_standby(true), fds);
  said.reset();  // the init's copy is the only one: its end reads as an answer
  if (!wait_readable(answer.get(), timeout_ms, cancellation)) {
    throw SandboxError(Reason::INTERNAL, "the sandbox's init did not start its first command's process in time");
  }
  char got = '0';
  return ::read(answer.get(), &got, 1) == 1 && got == '1';
}

void SandboxCore::outlive_engine(const std::string& dir, std::int64_t deadline_ms) {
  const UniqueFd listener = listen_for_engines(dir, kept.name);
  state_dir = dir;
  kept.deadline_ms = deadline_ms;
  kept.pid = init.pid();
  kept.start_time = process_start_time(init.pid());
  if (kept.start_time == 0) gone();
  send(protocol::encode_keep(deadline_ms), {listener.get()});
  std::lock_guard lock(mutex_);
  if (ending_.load()) gone();
  lease.keep(encode_kept(kept));
}

void SandboxCore::keep(const std::string& caller) {
  if (state_dir.empty())
    throw SandboxError(Reason::INVALID_INPUT,
                       "this engine's sandboxes do not outlive it (NativeOptions::live_restore)");
  std::lock_guard lock(mutex_);
  if (ending_.load()) gone();
  kept.caller = caller;
  lease.keep(encode_kept(kept));
}

void SandboxCore::end() noexcept {
  if (stop()) finish();
  else wait_ended();  // another end() is under way: return when it is done
}

bool SandboxCore::stop() noexcept {
  if (ending_.exchange(true)) return false;
  // Wake a send blocked on the socket before waiting for its lock. Only the
  // first stop() gets here, and only finish() closes the socket, so it is open.
  if (init.control() >= 0) ::shutdown(init.control(), SHUT_RDWR);
  std::lock_guard lock(mutex_);  // a send under way has given up
  StepTimer timer("release");
  ports.clear();  // nothing reaches in any more
  // Every process, in one write, forks under way included; the init's
  // death would take the rest only once it is scheduled.
  if (!cgroup.kill_all()) init.kill();
  // Nothing runs on its image any more: the store may remove it now.
  image_hold.reset();
  // A create waiting for one of its volumes may wait for its removal now.
  for (HeldVolume& v : volumes) v.ends();
  timer.step("stopped");
  return true;
}

void SandboxCore::finish() noexcept {
  {
    std::lock_guard lock(mutex_);
    StepTimer timer("removal");
    tenancy.leave();  // the tenant's other sandboxes have its share from now
    {
      std::lock_guard network_lock(network_mutex_);
      network.reset();  // its veth goes now, not when the kernel gets round to the namespace
    }
    try {
      bound_io(false);  // what it left unwritten goes out at the host's pace
    } catch (const SandboxError&) {
      // Its cgroup is gone already: nothing is bounded any more.
    }
    init.kill_and_wait();  // pid 1 dying takes every process of the namespace with it
    timer.step("init reaped");
    {
      // A snapshot under way stops at its next range, and thaws first.
      std::lock_guard freeze_lock(freeze_mutex_);
      cgroup.destroy();
    }
    timer.step("cgroups removed");
    {
      std::lock_guard disk_lock(disk_mutex_);  // after a snapshot reading it
      disk = {};                               // the file goes now; the host frees it once its loop device lets go
    }
    timer.step("disk removed");
    for (HeldVolume& v : volumes) v.let_go();
    volumes.clear();
    timer.step("volumes let go");
    lease.clear();
    if (!state_dir.empty()) ::unlink(init_socket_path(state_dir, kept.name).c_str());
    timer.step("record cleared");
  }
  finished_.store(true);
  finished_.notify_all();
}

void SandboxCore::wait_ended() const noexcept {
  if (ending_.load()) finished_.wait(false);
}

void SandboxCore::gone_once_ended() {
  // The init died on its own: the removal is ours, here. Ended by a release
  // or its lifetime: GONE at once, whether or not its removal, off the
  // caller's path, has finished (a reactor thread must not wait on it).
  if (stop()) finish();
  gone();
}

std::string SandboxCore::url(int port) {
  if (ending_.load()) gone();  // as send()
  std::uint16_t host_port = 0;
  {
    std::lock_guard lock(mutex_);  // end() clears the ports under it
    if (!ending_.load()) {
      const auto it = ports.find(port);
      if (it == ports.end())
        throw SandboxError(Reason::INVALID_INPUT, "port " + std::to_string(port) + " is not published");
      host_port = it->second->host_port();
    }
  }
  if (host_port == 0) gone_once_ended();
  return "http://127.0.0.1:" + std::to_string(host_port);
}

std::map<std::string, std::string> SandboxCore::command_env() const {
  std::map<std::string, std::string> env;
  {
    std::lock_guard lock(network_mutex_);
    if (network) env = network->env();
  }
  for (const auto& [k, v] : base_env) env[k] = v;
  return env;
}

namespace {
// A freeze waits for every process to stop: one in an uninterruptible wait
// (a slow disk) may hold it, never for long.
constexpr std::chrono::seconds kFreezeBound{5};
}  // namespace

void SandboxCore::freeze(bool frozen) {
  if (!alive()) gone_once_ended();
  {
    std::lock_guard lock(freeze_mutex_);
    cgroup.freeze(frozen, kFreezeBound);
    frozen_ = frozen;
  }
  // A later engine tells a pause from a stop of the engine's own (a
  // snapshot's, cut short) by the record. (mutex_ after freeze_mutex_ is
  // let go: finish() takes them the other way round.)
  if (state_dir.empty()) return;
  std::lock_guard lock(mutex_);
  if (ending_.load()) return;
  kept.paused = frozen;
  lease.keep(encode_kept(kept));
}

void SandboxCore::found_frozen(bool frozen) {
  std::lock_guard lock(freeze_mutex_);
  frozen_ = frozen;
}

bool SandboxCore::frozen() {
  std::lock_guard lock(freeze_mutex_);
  return frozen_;
}

Snapshot SandboxCore::snapshot(const std::string& owner, const std::string& name) {
  if (!alive()) gone_once_ended();
  std::lock_guard disk_lock(disk_mutex_);
  if (!disk) {
    if (ending_.load()) gone();
    throw SandboxError(Reason::INVALID_INPUT, "the sandbox has no disk to snapshot (create it with a disk size)");
  }
  // Most of what it wrote goes out while it still runs, so that the
  // write-out while it is stopped is only what it wrote since; before
  // freeze_mutex_, so that a release need not wait for it. (Not under an
  // I/O bound: its writeback is charged to it, and would be paced by it;
  // stopped, the bound is lifted for the engine's write-out.)
  if (io_devices.empty()) disk.sync();
  // Under freeze_mutex_, which finish() takes before it removes the cgroup:
  // a release waits for the copy's next range at most (the copy stops once
  // the end has begun), never for the whole copy.
  std::lock_guard lock(freeze_mutex_);
  if (ending_.load()) gone();
  return snapshots->write(owner, name, [&](int file) {
    StepTimer timer("snapshot");
    const UniqueFd from(::open(disk.path().c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
    if (!from) fail_step("opening the sandbox's disk", errno);
    // Stopped, so that nothing writes while the file is read; thawed on
    // every way out, unless it was paused before.
    struct Frozen {
      const cgroups::SandboxCgroup& cgroup;
      bool thaw;
      void let_go() {
        if (std::exchange(thaw, false)) cgroup.freeze(false, kFreezeBound);
      }
      ~Frozen() {
        try {
          let_go();
        } catch (...) {
          // Failing already: that failure is the one to report.
        }
      }
    } frozen{cgroup, !frozen_};
    if (frozen.thaw) cgroup.freeze(true, kFreezeBound);
    timer.step("frozen");
    // Its dirty pages' writeback is charged to it: the engine writes them
    // out at the host's pace, not the sandbox's bound.
    struct Unbounded {
      const SandboxCore& core;
      bool lifted = false;
      explicit Unbounded(const SandboxCore& c) : core(c) {
        core.bound_io(false);
        lifted = true;
      }
      void restore() {
        if (std::exchange(lifted, false)) core.bound_io(true);
      }
      ~Unbounded() {
        try {
          restore();
        } catch (...) {
          // Failing already, or ending: no cgroup left to bound.
        }
      }
    } unbounded{*this};
    const auto ended = [this] { return ending_.load(); };
    // Where the host clones files the copy is of one moment: the journal
    // emptied first, so that a sandbox made from the copy has nothing to
    // replay, and the file system never stopped (stopping it waits for
    // three RCU grace periods, 25 to 50 ms here). Elsewhere the copy takes
    // a while, and nothing may write meanwhile: the file system is stopped,
    // its journal written into place, a clean ext4.
    struct Thaw {
      const SandboxDisk* disk = nullptr;
      void now() noexcept {
        if (const SandboxDisk* d = std::exchange(disk, nullptr)) d->thaw();
      }
      ~Thaw() { now(); }
    } thaw;
    if (disk.checkpoint() && clone_disk_file(from.get(), file)) {
      timer.step("journal emptied and cloned");
    } else {
      disk.freeze();
      thaw.disk = &disk;
      timer.step("written out");
      copy_disk_file(from.get(), file, disk.bytes(), ended);
      timer.step("copied");
    }
    // Its processes killed during the copy may have written as they died:
    // such a copy is no snapshot.
    if (ended()) gone();
    thaw.now();
    unbounded.restore();  // before it runs again
    frozen.let_go();
  });
}

void SandboxCore::bound_io(bool bounded) const {
  if (io_devices.empty()) return;
  cgroup.bound_io(io_devices, bounded ? io_bounds : cgroups::IoBounds{});
}

void SandboxCore::set_network(const Network& next) {
  if (ending_.load()) gone();  // as send()
  {
    // Both locks: the namespace may have to be opened from the init, which
    // finish() reaps under mutex_ (so its pid cannot be another's here).
    std::scoped_lock lock(mutex_, network_mutex_);
    if (!ending_.load()) {
      if (!network) {
        if (next.kind == NetworkKind::none) return;
        if (!netns) {
          netns = init.open_netns();
          if (!netns) {
            if (errno != ENOENT && errno != ESRCH && errno != EINVAL)
              fail_step("opening the sandbox's network namespace", errno);
            // the init has died: the sandbox is over
          }
        }
        if (netns) network = std::make_unique<netfilter::SandboxNetwork>(*network_context, netns.get(), lease.slot());
      }
      if (network) {
        try {
          network->set(next);
        } catch (...) {
          // Left with none (SandboxNetwork::set): so is the record.
          if (!state_dir.empty()) {
            kept.network = Network::none();
            lease.keep(encode_kept(kept));
          }
          throw;
        }
        // A later engine makes the network it has now.
        if (!state_dir.empty()) {
          kept.network = next;
          lease.keep(encode_kept(kept));
        }
        return;
      }
    }
  }
  gone_once_ended();  // outside the locks: end() takes them
}

bool SandboxCore::alive() const noexcept {
  if (ending_.load()) return false;
  std::lock_guard lock(mutex_);
  return init.running();
}

std::string NativeSandbox::absolute(const std::string& path) const {
  if (!path.empty() && path.front() == '/') return path;
  if (path.empty() || path == ".") return core_->workdir;
  return core_->workdir + "/" + path;
}

ExecResult NativeSandbox::exec(const std::vector<std::string>& argv, const ExecOptions& options) {
  const ActivityMark call(*core_->activity);
  const std::string cgroup_name = "cmd-" + std::to_string(next_command_.fetch_add(1));
  const std::string cwd = options.cwd.empty() ? core_->workdir : absolute(options.cwd);
  return run_command(core_, cgroup_name, cwd, argv, options);
}

void NativeSandbox::async_exec(const std::vector<std::string>& argv, const ExecOptions& options, ExecCompletion done) {
  core_->activity->mark();
  const std::string cgroup_name = "cmd-" + std::to_string(next_command_.fetch_add(1));
  const std::string cwd = options.cwd.empty() ? core_->workdir : absolute(options.cwd);
  // The completion holds the runtime: a command in flight keeps its reactor
  // running, whatever goes meanwhile (this sandbox, its provider).
  auto on = runtime();
  start_command(core_, cgroup_name, cwd, argv, options, on->executor(),
                [on, activity = core_->activity, done = std::move(done)](std::exception_ptr error, ExecResult result) {
                  activity->mark();
                  done(std::move(error), std::move(result));
                });
}

std::string NativeSandbox::read_file(const std::string& path, const ReadOptions& options) {
  const ActivityMark call(*core_->activity);
  return files::run_file_call(core_, files::read_op(absolute(path), path, options), options.cancellation);
}

void NativeSandbox::write_file(const std::string& path, std::string_view data, const FileOptions& options) {
  const ActivityMark call(*core_->activity);
  files::run_file_call(core_, files::write_op(absolute(path), path, std::string(data)), options.cancellation);
}

std::vector<FileEntry> NativeSandbox::list(const std::string& path, const FileOptions& options) {
  const ActivityMark call(*core_->activity);
  return files::decode_list(files::run_file_call(core_, files::list_op(absolute(path), path), options.cancellation));
}

void NativeSandbox::remove(const std::string& path, const FileOptions& options) {
  const ActivityMark call(*core_->activity);
  files::run_file_call(core_, files::remove_op(absolute(path), path), options.cancellation);
}

// The asynchronous file calls mark their start only: they are short, and a
// build that starts under one costs it little (it makes no cgroup).
void NativeSandbox::async_read_file(const std::string& path, const ReadOptions& options, ReadCompletion done) {
  core_->activity->mark();
  auto on = runtime();  // held by the completion, as an exec's is
  files::start_file_call(
      core_, files::read_op(absolute(path), path, options), options.cancellation, on->executor(),
      [on, done = std::move(done)](std::exception_ptr e, std::string data) { done(std::move(e), std::move(data)); });
}

void NativeSandbox::async_write_file(const std::string& path, std::string data, const FileOptions& options,
                                     DoneCompletion done) {
  core_->activity->mark();
  auto on = runtime();
  files::start_file_call(
      core_, files::write_op(absolute(path), path, std::move(data)), options.cancellation, on->executor(),
      [on, done = std::move(done)](std::exception_ptr e, const std::string&) { done(std::move(e)); });
}

void NativeSandbox::async_list(const std::string& path, const FileOptions& options, ListCompletion done) {
  core_->activity->mark();
  auto on = runtime();
  files::start_file_call(core_, files::list_op(absolute(path), path), options.cancellation, on->executor(),
                         [on, done = std::move(done)](std::exception_ptr e, const std::string& bytes) {
                           std::vector<FileEntry> entries;
                           if (!e) {
                             try {
                               entries = files::decode_list(bytes);
                             } catch (...) {
                               e = std::current_exception();
                             }
                           }
                           done(e, std::move(entries));
                         });
}

void NativeSandbox::async_remove(const std::string& path, const FileOptions& options, DoneCompletion done) {
  core_->activity->mark();
  auto on = runtime();
  files::start_file_call(
      core_, files::remove_op(absolute(path), path), options.cancellation, on->executor(),
      [on, done = std::move(done)](std::exception_ptr e, const std::string&) { done(std::move(e)); });
}

void NativeSandbox::release() noexcept {
  const ActivityMark call(*core_->activity);
  if (const auto cleaner = cleaner_.lock()) cleaner->release(core_);
  else core_->end();
}

std::string NativeSandbox::url(int port) { return core_->url(port); }

std::string NativeSandbox::desktop(const DesktopAction& action, std::stop_token cancellation) {
  const ActivityMark call(*core_->activity);
  return run_desktop_action(core_, "cmd-" + std::to_string(next_command_.fetch_add(1)), action, cancellation);
}

}  // namespace mayura::native
