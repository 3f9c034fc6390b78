// The limits layer: every argument is checked here before the provider sees
// it (a create's in create_checks.cpp, the desktop's in sandbox_desktop.cpp),
// and every result before the caller does.

#include "mayura/sandboxes.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <exception>
#include <functional>
#include <mutex>
#include <optional>

#include <boost/asio/system_executor.hpp>
#include <utility>

#include "create_checks.hpp"
#include "pacing.hpp"
#include "sandboxes_state.hpp"

#include "mayura/random_id.hpp"
#include "mayura/validate.hpp"

namespace mayura {
namespace detail {

std::size_t SandboxesState::count_live_locked() {
  std::erase_if(live, [](const std::weak_ptr<SandboxState>& weak) {
    auto s = weak.lock();
    if (!s || Clock::now() >= s->deadline) return true;
    auto backend = s->current();
    return !backend || !backend->alive();
  });
  return live.size();
}

// The backend, if the sandbox may still be used; GONE otherwise.
std::shared_ptr<SandboxBackend> SandboxState::use() {
  auto b = current();
  if (!b) throw SandboxError(Reason::GONE, "sandbox " + id + " was released");
  if (Clock::now() >= deadline || !b->alive()) {
    end();
    throw SandboxError(Reason::GONE, "sandbox " + id + " reached the end of its lifetime");
  }
  return b;
}

std::shared_ptr<SandboxBackend> SandboxState::use_running() {
  auto b = use();
  if (paused) set_paused(false);
  return b;
}

void SandboxState::set_paused(bool pause) {
  auto b = use();
  std::lock_guard lock(pause_mutex);
  if (paused == pause) return;
  guarded(pause ? "pause" : "resume", [&] {
    if (pause) {
      b->pause();
    } else {
      b->resume();
    }
  });
  paused = pause;
}

void SandboxState::end() noexcept {
  std::shared_ptr<SandboxBackend> b;
  {
    std::lock_guard lock(mutex);
    b = std::move(backend);
  }
  if (b) b->release();
}

}  // namespace detail

namespace {

using detail::check_create;
using detail::check_network;
using detail::Clock;
using detail::guarded;
using detail::supports;
using detail::throw_if_cancelled;

// 64 bits from the kernel's generator for each: no id tells anything of
// another.
std::string new_id() { return random_hex(16); }

// The provider's result, held to the caller's bounds (and without output
// when the caller keeps none).
ExecResult checked_result(ExecResult r, std::size_t max_output, bool keep_output) {
  if (r.timed_out) {
    r.exit_code.reset();
  } else if (!r.exit_code || *r.exit_code < 0 || *r.exit_code > 255) {
    throw SandboxError(Reason::INTERNAL, "the provider returned an exec result without a valid exit code");
  }
  if (r.stdout.size() > max_output) {
    r.stdout.resize(max_output);
    r.truncated = true;
  }
  if (r.stderr.size() > max_output) {
    r.stderr.resize(max_output);
    r.truncated = true;
  }
  if (!keep_output) {
    r.stdout.clear();
    r.stderr.clear();
  }
  if (r.duration_ms < 0) r.duration_ms = 0;
  return r;
}

}  // namespace

// --- Sandbox -------------------------------------------------------------

detail::SandboxState& Sandbox::state() const {
  if (!state_) throw SandboxError(Reason::INVALID_INPUT, "the sandbox handle is empty");
  return *state_;
}

std::string Sandbox::id() const { return state().id; }
const std::map<std::string, std::string>& Sandbox::labels() const { return state().labels; }
const CreateOptions& Sandbox::created() const { return state().created; }
Features Sandbox::features() const { return state().owner->features; }
std::string Sandbox::workdir() const { return state().workdir; }
bool Sandbox::released() const { return !state().current(); }

boost::asio::any_io_executor Sandbox::default_executor() const { return state().owner->executor; }
const std::shared_ptr<Runtime>& Sandbox::runtime() const { return state().owner->provider->runtime(); }

namespace detail {
namespace {
void check_exec(const SandboxesState& owner, const std::vector<std::string>& argv, const ExecOptions& options) {
  check_argv(argv);
  if (!options.cwd.empty()) check_path(options.cwd, "cwd");
  check_env(options.env);
  if (options.timeout_ms && *options.timeout_ms <= 0)
    throw SandboxError(Reason::INVALID_INPUT, "timeout_ms must be positive");
  if (options.stdin && !owner.features.stdin)
    throw SandboxError(Reason::INVALID_INPUT, "the provider does not take stdin");
  if (options.stdin && options.stdin->size() > owner.options.max_write_bytes) {
    throw SandboxError(Reason::LIMIT_REACHED, "stdin is larger than max_write_bytes");
  }
  if (options.terminal) {
    if (!owner.features.terminal)
      throw SandboxError(Reason::INVALID_INPUT, "the provider does not run commands on a terminal");
    check_terminal_size(*options.terminal);
  }
  if (options.on_start && !owner.features.interactive)
    throw SandboxError(Reason::INVALID_INPUT, "the provider does not stream a command's input (on_start)");
}

// The caller's control, its input checked before the provider sees it.
class CheckedControl final : public CommandControl {
 public:
  CheckedControl(std::shared_ptr<CommandControl> inner, std::size_t max_write)
      : inner_(std::move(inner)), max_write_(max_write) {}
  void write(std::string data) override {
    if (data.size() > max_write_)
      throw SandboxError(Reason::LIMIT_REACHED, "the input is larger than max_write_bytes at once");
    inner_->write(std::move(data));
  }
  void close_input() override { inner_->close_input(); }
  void signal(int signal) override {
    check_signal(signal);
    inner_->signal(signal);
  }
  void resize(TerminalSize size) override {
    check_terminal_size(size);
    inner_->resize(size);
  }

 private:
  std::shared_ptr<CommandControl> inner_;
  std::size_t max_write_;
};

void check_control(const SandboxesState& owner, ExecOptions& options) {
  if (!options.on_start) return;
  options.on_start = [start = std::move(options.on_start),
                      max = owner.options.max_write_bytes](std::shared_ptr<CommandControl> control) {
    start(std::make_shared<CheckedControl>(std::move(control), max));
  };
}
}  // namespace
}  // namespace detail

ExecResult Sandbox::exec(const std::vector<std::string>& argv, const ExecOptions& options) const {
  std::size_t limit = 0;
  auto backend = exec_backend(argv, options, limit);
  ExecOptions o = detail::without_pacing(options);  // the caller's thread is the consumer
  o.max_output_bytes = limit;
  detail::check_control(*state().owner, o);
  return checked_result(guarded("exec", [&] { return backend->exec(argv, o); }), limit, o.keep_output);
}

std::shared_ptr<SandboxBackend> Sandbox::exec_backend(const std::vector<std::string>& argv, const ExecOptions& options,
                                                      std::size_t& limit) const {
  detail::check_exec(*state().owner, argv, options);
  limit = std::min(options.max_output_bytes.value_or(state().owner->options.max_output_bytes),
                   state().owner->options.max_output_bytes);
  throw_if_cancelled(options.cancellation);
  return state().use_running();
}

std::shared_ptr<SandboxBackend> Sandbox::read_backend(std::string_view path, const ReadOptions& options,
                                                      std::size_t& limit) const {
  check_path(path);
  limit = std::min(options.max_bytes.value_or(state().owner->options.max_read_bytes),
                   state().owner->options.max_read_bytes);
  throw_if_cancelled(options.cancellation);
  return state().use_running();
}

std::shared_ptr<SandboxBackend> Sandbox::write_backend(std::string_view path, std::string_view data,
                                                       const FileOptions& options) const {
  check_path(path);
  if (data.size() > state().owner->options.max_write_bytes) {
    throw SandboxError(Reason::LIMIT_REACHED, "the data is larger than max_write_bytes");
  }
  throw_if_cancelled(options.cancellation);
  return state().use_running();
}

std::shared_ptr<SandboxBackend> Sandbox::path_backend(std::string_view path, const FileOptions& options) const {
  check_path(path);
  throw_if_cancelled(options.cancellation);
  return state().use_running();
}

namespace {

void check_read(const std::string& data, std::size_t limit) {
  if (data.size() > limit) throw SandboxError(Reason::LIMIT_REACHED, "the file is larger than the read limit");
}

void check_listing(std::vector<FileEntry>& entries) {
  for (const auto& e : entries) {
    if (e.name.empty() || e.name.find('/') != std::string::npos || e.name.find('\0') != std::string::npos ||
        e.name == "." || e.name == "..") {
      throw SandboxError(Reason::INTERNAL, "the provider returned a malformed listing");
    }
  }
  std::sort(entries.begin(), entries.end(), [](const FileEntry& a, const FileEntry& b) { return a.name < b.name; });
}

// A provider's failure in the caller's terms, as guarded() gives it.
std::exception_ptr provider_failure(const char* what, std::exception_ptr error) {
  try {
    guarded(what, [&] { std::rethrow_exception(error); });
  } catch (...) {
    return std::current_exception();
  }
  return error;
}

// The completions this thread is running now: a completion that closes its
// Sandboxes must not wait for itself.
thread_local std::size_t completing_here = 0;
// How long close() waits for the calls under way to complete.
constexpr auto kCloseWaitsForCalls = std::chrono::seconds(10);

// One call started on a provider, counted in its Sandboxes until it has
// completed (or the provider dropped it without completing it).
class CallUnderWay {
 public:
  explicit CallUnderWay(std::shared_ptr<detail::SandboxesState::Calls> calls) : calls_(std::move(calls)) {
    std::lock_guard lock(calls_->mutex);
    ++calls_->under_way;
  }
  CallUnderWay(const CallUnderWay&) = delete;
  CallUnderWay& operator=(const CallUnderWay&) = delete;
  ~CallUnderWay() { ended(); }
  void ended() noexcept {
    if (ended_.exchange(true)) return;
    std::lock_guard lock(calls_->mutex);
    --calls_->under_way;
    calls_->ended.notify_all();
  }

 private:
  std::shared_ptr<detail::SandboxesState::Calls> calls_;
  std::atomic<bool> ended_{false};
};

// An exec's output callbacks, which may hold what the caller's executor owns
// (a server's channel). The provider gets shims into this cell, which the
// exec's completion empties: a provider that keeps its exec's options a
// moment after completing it keeps none of the caller's callbacks. (The
// lock is recursive: a paced callback may be handed more output at once.)
struct OutputCallbacks {
  std::recursive_mutex mutex;
  OutputCallback out, err;
  PacedOutputCallback paced;
  void clear() {
    std::lock_guard lock(mutex);
    out = nullptr;
    err = nullptr;
    paced = nullptr;
  }
};

std::shared_ptr<OutputCallbacks> shim_output(ExecOptions& options) {
  auto cell = std::make_shared<OutputCallbacks>();
  auto shim = [&cell](OutputCallback& callback, OutputCallback OutputCallbacks::*slot) {
    if (!callback) return;
    (*cell).*slot = std::move(callback);
    callback = [cell, slot](std::string_view chunk) {
      std::lock_guard lock(cell->mutex);
      if ((*cell).*slot) ((*cell).*slot)(chunk);
    };
  };
  shim(options.on_stdout, &OutputCallbacks::out);
  shim(options.on_stderr, &OutputCallbacks::err);
  if (options.on_output) {
    cell->paced = std::move(options.on_output);
    options.on_output = [cell](OutputStream from, std::string_view chunk, std::function<void()> more) {
      std::lock_guard lock(cell->mutex);
      if (cell->paced) cell->paced(from, chunk, std::move(more));
      else more();
    };
  }
  return cell;
}

// Starts `start(backend, finish)` with the backend held until the call ends
// (the caller hears of the end only once it is let go: a caller that then
// closes its Sandboxes must find the provider gone), its failures as
// guarded() gives them, and `check(result)` on what succeeded. The caller's
// completion is in a cell that its call empties: no copy the provider keeps
// of `finish` holds the caller's handler (and its work on the caller's
// executor) after the call has completed.
template <class... R, class Start, class Check>
void start_on(const std::shared_ptr<detail::SandboxesState>& owner, const std::shared_ptr<SandboxBackend>& backend,
              const char* what, Start start, Check check, std::function<void(std::exception_ptr, R...)> done) {
  auto holder = std::make_shared<std::shared_ptr<SandboxBackend>>(backend);
  auto completion = std::make_shared<std::function<void(std::exception_ptr, R...)>>(std::move(done));
  auto call = std::make_shared<CallUnderWay>(owner->calls);
  auto finish = [holder, what, check, completion, call](std::exception_ptr error, R... result) mutable {
    if (error) {
      error = provider_failure(what, error);
    } else {
      try {
        check(result...);
      } catch (...) {
        error = std::current_exception();
      }
    }
    if (error) ((result = R{}), ...);
    holder->reset();
    {
      auto caller = std::move(*completion);
      *completion = nullptr;
      ++completing_here;
      caller(error, std::move(result)...);
      --completing_here;
    }  // the caller's handler goes here, before the call counts as ended
    call->ended();
  };
  try {
    start(*backend, std::function<void(std::exception_ptr, R...)>(finish));
  } catch (...) {
    finish(std::current_exception(), R{}...);
  }
}

}  // namespace

std::string Sandbox::read_file(std::string_view path, const ReadOptions& options) const {
  std::size_t limit = 0;
  auto backend = read_backend(path, options, limit);
  ReadOptions o = options;
  o.max_bytes = limit;
  std::string data = guarded("read_file", [&] { return backend->read_file(std::string(path), o); });
  check_read(data, limit);
  return data;
}

void Sandbox::start_read_file(std::string path, ReadOptions options, ReadCompletion done) const {
  std::size_t limit = 0;
  std::shared_ptr<SandboxBackend> backend;
  try {
    backend = read_backend(path, options, limit);
  } catch (...) {
    return done(std::current_exception(), {});
  }
  options.max_bytes = limit;
  start_on<std::string>(
      state().owner, backend, "read_file",
      [path = std::move(path), options](SandboxBackend& b, ReadCompletion finish) {
        b.async_read_file(path, options, std::move(finish));
      },
      [limit](const std::string& data) { check_read(data, limit); }, std::move(done));
}

void Sandbox::write_file(std::string_view path, std::string_view data, const FileOptions& options) const {
  auto backend = write_backend(path, data, options);
  guarded("write_file", [&] { backend->write_file(std::string(path), data, options); });
}

void Sandbox::start_write_file(std::string path, std::string data, const FileOptions& options,
                               DoneCompletion done) const {
  std::shared_ptr<SandboxBackend> backend;
  try {
    backend = write_backend(path, data, options);
  } catch (...) {
    return done(std::current_exception());
  }
  start_on<>(
      state().owner, backend, "write_file",
      [path = std::move(path), data = std::move(data), options](SandboxBackend& b, DoneCompletion finish) mutable {
        b.async_write_file(path, std::move(data), options, std::move(finish));
      },
      [] {}, std::move(done));
}

std::vector<FileEntry> Sandbox::list(std::string_view path, const FileOptions& options) const {
  auto backend = path_backend(path, options);
  auto entries = guarded("list", [&] { return backend->list(std::string(path), options); });
  check_listing(entries);
  return entries;
}

void Sandbox::start_list(std::string path, const FileOptions& options, ListCompletion done) const {
  std::shared_ptr<SandboxBackend> backend;
  try {
    backend = path_backend(path, options);
  } catch (...) {
    return done(std::current_exception(), {});
  }
  start_on<std::vector<FileEntry>>(
      state().owner, backend, "list",
      [path = std::move(path), options](SandboxBackend& b, ListCompletion finish) {
        b.async_list(path, options, std::move(finish));
      },
      [](std::vector<FileEntry>& entries) { check_listing(entries); }, std::move(done));
}

void Sandbox::remove(std::string_view path, const FileOptions& options) const {
  auto backend = path_backend(path, options);
  guarded("remove", [&] { backend->remove(std::string(path), options); });
}

void Sandbox::start_remove(std::string path, const FileOptions& options, DoneCompletion done) const {
  std::shared_ptr<SandboxBackend> backend;
  try {
    backend = path_backend(path, options);
  } catch (...) {
    return done(std::current_exception());
  }
  start_on<>(
      state().owner, backend, "remove",
      [path = std::move(path), options](SandboxBackend& b, DoneCompletion finish) {
        b.async_remove(path, options, std::move(finish));
      },
      [] {}, std::move(done));
}

void Sandbox::start_exec(std::vector<std::string> argv, ExecOptions options, ExecCompletion done) const {
  std::shared_ptr<SandboxBackend> backend;
  std::size_t limit = 0;
  try {
    backend = exec_backend(argv, options, limit);
  } catch (...) {
    return done(std::current_exception(), {});
  }
  options.max_output_bytes = limit;
  detail::check_control(*state().owner, options);
  auto output = shim_output(options);
  start_on<ExecResult>(
      state().owner, backend, "exec",
      [argv = std::move(argv), options](SandboxBackend& b, ExecCompletion finish) {
        b.async_exec(argv, options, std::move(finish));
      },
      [limit, keep = options.keep_output](ExecResult& result) {
        result = checked_result(std::move(result), limit, keep);
      },
      ExecCompletion([output, done = std::move(done)](std::exception_ptr error, ExecResult result) {
        output->clear();
        done(std::move(error), std::move(result));
      }));
}

std::string Sandbox::url(int port) const {
  check_port(port);
  if (!state().owner->features.ports) throw SandboxError(Reason::INVALID_INPUT, "the provider does not serve ports");
  if (std::find(state().ports.begin(), state().ports.end(), port) == state().ports.end()) {
    throw SandboxError(Reason::INVALID_INPUT, "port " + std::to_string(port) + " was not asked for at create");
  }
  auto backend = state().use();
  std::string u = guarded("url", [&] { return backend->url(port); });
  if (u.rfind("http://", 0) != 0 && u.rfind("https://", 0) != 0) {
    throw SandboxError(Reason::INTERNAL, "the provider returned a malformed url");
  }
  return u;
}

void Sandbox::set_network(const Network& network) const {
  check_network(state().owner->options, state().owner->features, network);
  auto backend = state().use();
  guarded("set_network", [&] { backend->set_network(network); });
}

void Sandbox::pause() const {
  if (!state().owner->features.pause) throw SandboxError(Reason::INVALID_INPUT, "the provider cannot pause a sandbox");
  state().set_paused(true);
}

void Sandbox::resume() const {
  if (!state().owner->features.pause) throw SandboxError(Reason::INVALID_INPUT, "the provider cannot pause a sandbox");
  state().set_paused(false);
}

bool Sandbox::paused() const { return state().paused; }

// Holds `count` places among max_sandboxes while they are made.
class Sandboxes::Places {
 public:
  Places(detail::SandboxesState& s, std::size_t count) : s_(s), count_(count) {
    std::lock_guard lock(s.mutex);
    if (s.closed) throw SandboxError(Reason::GONE, "the sandboxes were closed");
    // The list holds every live sandbox and maybe some ended ones: below
    // the limit with them all, it is below it without them.
    if (s.live.size() + s.reserved + count > s.options.max_sandboxes || s.live.size() >= s.prune_at) {
      const std::size_t live = s.count_live_locked();
      s.prune_at = 2 * live + 64;
      if (live + s.reserved + count > s.options.max_sandboxes) {
        throw SandboxError(Reason::LIMIT_REACHED,
                           "max_sandboxes (" + std::to_string(s.options.max_sandboxes) + ") are alive already");
      }
    }
    s.reserved += count;
  }
  Places(const Places&) = delete;
  Places& operator=(const Places&) = delete;
  ~Places() {
    std::lock_guard lock(s_.mutex);
    s_.reserved -= count_;
  }

 private:
  detail::SandboxesState& s_;
  std::size_t count_;
};

Snapshot Sandbox::snapshot(const std::string& name) const {
  if (!state().owner->features.snapshot)
    throw SandboxError(Reason::INVALID_INPUT, "the provider cannot snapshot a sandbox");
  check_snapshot_name(name);
  auto backend = state().use();
  Snapshot taken = guarded("snapshot", [&] { return backend->snapshot(state().created.tenant, name); });
  if (taken.name != name) throw SandboxError(Reason::INTERNAL, "the provider answered for another snapshot");
  return taken;
}

std::vector<Sandbox> Sandbox::fork(int count, std::optional<std::int64_t> lifetime_ms) const {
  if (!state().owner->features.snapshot)
    throw SandboxError(Reason::INVALID_INPUT, "the provider cannot fork a sandbox");
  if (count < 1 || count > 64) throw SandboxError(Reason::INVALID_INPUT, "a fork makes 1 to 64 sandboxes");
  CreateOptions options = state().created;
  options.volumes.clear();  // each is one sandbox's at a time: the original keeps its own
  // What it started from is not what its forks do (a fork's own snapshot,
  // once a fork's fork, is gone by now): its disk's size says it has one.
  options.snapshot.reset();
  if (!options.disk_mib)
    throw SandboxError(Reason::INVALID_INPUT, "the sandbox has no disk to fork (create it with a disk size)");
  if (lifetime_ms) options.lifetime_ms = *lifetime_ms;
  const Sandboxes sandboxes(state().owner);
  // Checked before anything is copied.
  detail::check_create(sandboxes.state_->options, sandboxes.state_->features,
                       sandboxes.state_->provider->max_lifetime_ms(), options);
  auto backend = state().use();
  {
    // A provider that forks on its own (mayurad's, where the sandbox lives).
    const Sandboxes::Places places(*sandboxes.state_, static_cast<std::size_t>(count));
    const auto start = Clock::now();
    auto own = guarded("fork", [&] { return backend->fork(count, options); });
    if (!own.empty()) {
      std::vector<Sandbox> made;
      std::vector<std::shared_ptr<SandboxBackend>> held(std::make_move_iterator(own.begin()),
                                                        std::make_move_iterator(own.end()));
      try {
        if (held.size() != static_cast<std::size_t>(count))
          throw SandboxError(Reason::INTERNAL, "the provider forked another number of sandboxes");
        for (auto& b : held) made.push_back(sandboxes.adopt(std::exchange(b, nullptr), options, start));
      } catch (...) {
        for (const Sandbox& m : made) m.release();
        for (const auto& b : held) {
          if (b) b->release();
        }
        throw;
      }
      return made;
    }
  }
  // A name no caller can give (check_snapshot_name): the fork's own, gone
  // once its sandboxes are made.
  const std::string name = "~fork-" + random_hex(16);
  const Snapshot copy = guarded("fork", [&] { return backend->snapshot(options.tenant, name); });
  struct Delete {
    SandboxProvider& provider;
    const std::string& tenant;
    const std::string& name;
    ~Delete() {
      try {
        provider.delete_snapshot(tenant, name);
      } catch (...) {
        // The provider removes what a fork left at its next start.
      }
    }
  } remove{*sandboxes.state_->provider, options.tenant, name};
  options.snapshot = name;
  options.disk_mib = copy.disk_mib;
  return sandboxes.create_each(options, count);
}

void Sandbox::release() const { state().end(); }

void Sandbox::keep(const std::string& record) const {
  const auto backend = state().use();
  guarded("keep", [&] { backend->keep(record); });
}

// --- Sandboxes -----------------------------------------------------------

boost::asio::any_io_executor Sandboxes::default_executor() const { return state_->executor; }
const std::shared_ptr<Runtime>& Sandboxes::runtime() const { return state_->provider->runtime(); }
Features Sandboxes::features() const { return state_->features; }
void Sandboxes::check_exec(const std::vector<std::string>& argv, const ExecOptions& options) const {
  detail::check_exec(*state_, argv, options);
}
std::string Sandboxes::workdir() const { return state_->workdir; }

bool Sandboxes::closed() const {
  std::lock_guard lock(state_->mutex);
  return state_->closed;
}

std::size_t Sandboxes::size() const {
  std::lock_guard lock(state_->mutex);
  return state_->count_live_locked();
}

std::vector<Snapshot> Sandboxes::snapshots(const std::string& tenant) const {
  auto& s = *state_;
  if (!s.features.snapshot) return {};
  return guarded("snapshots", [&] { return s.provider->snapshots(tenant); });
}

void Sandboxes::delete_snapshot(const std::string& name, const std::string& tenant) const {
  check_snapshot_name(name);
  guarded("delete_snapshot", [&] { state_->provider->delete_snapshot(tenant, name); });
}

Volume Sandboxes::create_volume(const std::string& name, std::int64_t size_mib, const std::string& tenant) const {
  auto& s = *state_;
  if (!s.features.volumes) throw SandboxError(Reason::INVALID_INPUT, "the provider has no volumes");
  check_volume_name(name);
  if (size_mib < 16 || size_mib > (std::int64_t{1} << 24))
    throw SandboxError(Reason::INVALID_INPUT, "a volume's size must be from 16 to 2^24 MiB");
  if (s.options.max_disk_mib > 0 && size_mib > s.options.max_disk_mib) {
    throw SandboxError(Reason::INVALID_INPUT, "a volume of " + std::to_string(size_mib) +
                                                  " MiB is over the operator's ceiling of " +
                                                  std::to_string(s.options.max_disk_mib) + " (max_disk_mib)");
  }
  if (tenant.find('\0') != std::string::npos || tenant.size() > kMaxTenantBytes)
    throw SandboxError(Reason::INVALID_INPUT, "tenant is malformed");
  return guarded("create_volume", [&] { return s.provider->create_volume(tenant, name, size_mib); });
}

std::vector<Volume> Sandboxes::volumes(const std::string& tenant) const {
  auto& s = *state_;
  if (!s.features.volumes) return {};
  return guarded("volumes", [&] { return s.provider->volumes(tenant); });
}

void Sandboxes::delete_volume(const std::string& name, const std::string& tenant) const {
  check_volume_name(name);
  guarded("delete_volume", [&] { state_->provider->delete_volume(tenant, name); });
}

Sandbox Sandboxes::create(const CreateOptions& options, std::stop_token cancellation) const {
  auto& s = *state_;
  check_create(s.options, s.features, s.provider->max_lifetime_ms(), options);
  if (options.snapshot && !options.disk_mib) {
    // The disk's size is the snapshot's: it is held to the same ceilings as
    // a disk asked for.
    CreateOptions sized = options;
    sized.disk_mib = snapshot_named(*options.snapshot, options.tenant).disk_mib;
    check_create(s.options, s.features, s.provider->max_lifetime_ms(), sized);
    return create_from(sized, std::move(cancellation));
  }
  return create_from(options, std::move(cancellation));
}

namespace {

// The creates of a fork, shared by the caller and its helpers: each takes
// the next one left until none is. A helper that starts only once the
// caller has taken the last finds nothing to do.
struct CreateEach {
  CreateEach(const CreateOptions& o, int count) : options(o), made(static_cast<std::size_t>(count)) {}
  const CreateOptions options;
  std::vector<std::optional<Sandbox>> made;
  std::mutex mutex;
  std::condition_variable idle;
  std::size_t next = 0;
  int working = 0;
  std::exception_ptr failure;

  void work(const std::function<Sandbox(const CreateOptions&)>& create) {
    std::unique_lock lock(mutex);
    ++working;
    while (next < made.size() && !failure) {
      const std::size_t i = next++;
      lock.unlock();
      std::optional<Sandbox> one;
      std::exception_ptr failed;
      try {
        one = create(options);
      } catch (...) {
        failed = std::current_exception();
      }
      lock.lock();
      made[i] = std::move(one);
      if (failed && !failure) failure = failed;
    }
    if (--working == 0) idle.notify_all();
  }
};

// Creates at once beside the caller's: a create waits on the disk and the
// kernel as much as it runs, so a few overlap well even on two cores.
constexpr int kForkHelpers = 3;

}  // namespace

std::vector<Sandbox> Sandboxes::create_each(const CreateOptions& options, int count) const {
  auto shared = std::make_shared<CreateEach>(options, count);
  const auto create = [self = *this](const CreateOptions& o) { return self.create_from(o); };
  for (int i = 0; i < std::min(kForkHelpers, count - 1); ++i) {
    try {
      runtime()->run_blocking([shared, create] { shared->work(create); });
    } catch (...) {
      break;  // no thread for a helper: the caller makes the rest itself
    }
  }
  shared->work(create);
  std::unique_lock lock(shared->mutex);
  shared->idle.wait(lock, [&] { return shared->working == 0; });
  std::vector<Sandbox> made;
  for (auto& one : shared->made) {
    if (one) made.push_back(std::move(*one));
  }
  if (shared->failure) {
    for (const Sandbox& s : made) s.release();
    std::rethrow_exception(shared->failure);
  }
  return made;
}

Snapshot Sandboxes::snapshot_named(const std::string& name, const std::string& tenant) const {
  for (Snapshot& found : snapshots(tenant)) {
    if (found.name == name) return found;
  }
  throw SandboxError(Reason::NOT_FOUND, "there is no snapshot named " + name);
}

Sandbox Sandboxes::create_from(const CreateOptions& options, std::stop_token cancellation) const {
  auto& s = *state_;
  throw_if_cancelled(cancellation);
  const Places places(s, 1);
  const auto start = Clock::now();
  std::shared_ptr<SandboxBackend> backend =
      guarded("create", [&] { return std::shared_ptr<SandboxBackend>(s.provider->create(options, cancellation)); });
  return adopt(std::move(backend), options, start);
}

Sandbox Sandboxes::take_back(std::shared_ptr<SandboxBackend> backend, const CreateOptions& options,
                             const std::string& id, std::int64_t remaining_ms, bool paused) const {
  if (id.empty()) throw SandboxError(Reason::INVALID_INPUT, "a sandbox taken back needs its id");
  const auto start =
      Clock::now() + std::chrono::milliseconds(remaining_ms) - std::chrono::milliseconds(options.lifetime_ms);
  return adopt(std::move(backend), options, start, id, paused);
}

Sandbox Sandboxes::adopt(std::shared_ptr<SandboxBackend> backend, const CreateOptions& options,
                         std::chrono::steady_clock::time_point start, const std::string& id, bool paused) const {
  auto& s = *state_;
  if (!backend) throw SandboxError(Reason::INTERNAL, "the provider returned no sandbox");
  backend->use_runtime(s.provider->runtime());

  auto state = std::make_shared<detail::SandboxState>();
  state->owner = state_;
  state->id = id.empty() ? new_id() : id;
  state->labels = options.labels;
  state->created = options;
  state->ports = options.ports;
  state->desktop = options.desktop;
  try {
    state->workdir = backend->workdir();
  } catch (...) {
    // a provider's failure here must not leak the sandbox: the provider's workdir stands
  }
  if (state->workdir.empty()) state->workdir = s.workdir;
  state->deadline = start + std::chrono::milliseconds(options.lifetime_ms);
  state->paused = paused;
  state->backend = std::move(backend);
  {
    std::lock_guard lock(s.mutex);
    // close() may have run while the provider worked: this sandbox must not outlive it.
    if (s.closed) {
      state->end();
      throw SandboxError(Reason::GONE, "the sandboxes were closed");
    }
    s.live.push_back(state);
  }
  return Sandbox(std::move(state));
}

bool Sandboxes::close() const {
  std::vector<std::shared_ptr<detail::SandboxState>> alive;
  {
    std::lock_guard lock(state_->mutex);
    state_->closed = true;
    for (auto& weak : state_->live) {
      if (auto s = weak.lock()) alive.push_back(std::move(s));
    }
    state_->live.clear();
  }
  for (auto& s : alive) s->end();
  // The calls under way on the sandboxes just ended now end too (GONE):
  // wait for their completions to be handed to the caller's executor and let
  // go. Bounded, for a provider that never completes a call.
  auto& calls = *state_->calls;
  std::unique_lock lock(calls.mutex);
  return calls.ended.wait_for(lock, kCloseWaitsForCalls, [&] { return calls.under_way <= completing_here; });
}

Sandboxes create_sandboxes(std::shared_ptr<SandboxProvider> provider, SandboxesOptions options) {
  if (!provider) throw SandboxError(Reason::INVALID_INPUT, "provider is null");
  if (options.max_sandboxes == 0) throw SandboxError(Reason::INVALID_INPUT, "max_sandboxes must be at least 1");
  if (options.max_lifetime_ms <= 0) throw SandboxError(Reason::INVALID_INPUT, "max_lifetime_ms must be positive");
  if (options.max_output_bytes == 0 || options.max_read_bytes == 0 || options.max_write_bytes == 0) {
    throw SandboxError(Reason::INVALID_INPUT, "size limits must be positive");
  }
  if (!std::isfinite(options.max_cpus) || options.max_cpus < 0 || options.max_memory_mib < 0 || options.max_pids < 0 ||
      options.max_disk_mib < 0) {
    throw SandboxError(Reason::INVALID_INPUT, "ceilings must be 0 (none) or positive");
  }
  auto state = std::make_shared<detail::SandboxesState>();
  state->features = guarded("features", [&] { return provider->features(); });
  state->workdir = guarded("workdir", [&] { return provider->workdir(); });
  for (NetworkKind kind : options.network) {
    if (!supports(state->features, kind)) {
      throw SandboxError(Reason::INVALID_INPUT, "network '" + std::string(network_kind_name(kind)) +
                                                    "' is listed but the provider cannot enforce it");
    }
  }
  state->executor = options.executor ? options.executor : boost::asio::any_io_executor(boost::asio::system_executor());
  state->provider = std::move(provider);
  state->options = std::move(options);
  return Sandboxes(std::move(state));
}

}  // namespace mayura
