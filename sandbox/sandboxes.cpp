// The limits layer: every argument is checked here before the provider sees
// it, and every result before the caller does.

#include "mayura/sandboxes.hpp"

#include <algorithm>
#include <charconv>
#include <atomic>
#include <chrono>
#include <cctype>
#include <cmath>
#include <sstream>
#include <condition_variable>
#include <mutex>

#include <boost/asio/system_executor.hpp>
#include <utility>

#include "pacing.hpp"

#include "mayura/random_id.hpp"
#include "mayura/validate.hpp"

namespace mayura {
namespace detail {

using Clock = std::chrono::steady_clock;

struct SandboxesState {
  std::shared_ptr<SandboxProvider> provider;
  SandboxesOptions options;
  Features features;
  std::string workdir;
  boost::asio::any_io_executor executor;

  std::mutex mutex;
  bool closed = false;
  std::size_t reserved = 0;  // creates under way
  std::vector<std::weak_ptr<SandboxState>> live;
  // Asking every sandbox whether it is alive costs a call each: a create
  // does it only near the limit, or once the list has doubled since.
  std::size_t prune_at = 64;
  // Calls started on a provider (start_on) that have not yet completed: the
  // provider holds their completions, and with them the caller's work on its
  // executor. close() waits for them, so that a caller may destroy that
  // executor's context once close() has returned. Apart from this state: a
  // provider may keep what a call left behind a while after it completed,
  // and that must not keep this state, and with it the provider, alive.
  struct Calls {
    std::mutex mutex;
    std::condition_variable ended;
    std::size_t under_way = 0;
  };
  std::shared_ptr<Calls> calls = std::make_shared<Calls>();

  std::size_t count_live_locked();
};

struct SandboxState {
  std::shared_ptr<SandboxesState> owner;
  std::string id;
  std::map<std::string, std::string> labels;
  std::vector<int> ports;
  std::string workdir;
  std::optional<DesktopSize> desktop;
  Clock::time_point deadline;

  mutable std::mutex mutex;                 // guards backend against release while a call starts
  std::shared_ptr<SandboxBackend> backend;  // null once released

  std::shared_ptr<SandboxBackend> current() const {
    std::lock_guard lock(mutex);
    return backend;
  }
  std::shared_ptr<SandboxBackend> use();
  void end() noexcept;
  ~SandboxState() { end(); }
};

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

using detail::Clock;

// A provider may throw anything; the caller sees only SandboxError, and only
// our words.
template <class Fn>
auto guarded(const char* what, Fn&& fn) -> decltype(fn()) {
  try {
    return fn();
  } catch (const SandboxError&) {
    throw;
  } catch (const std::bad_alloc&) {
    throw SandboxError(Reason::INTERNAL, std::string(what) + " failed: out of memory");
  } catch (...) {
    throw SandboxError(Reason::INTERNAL, std::string(what) + " failed in the provider");
  }
}

void throw_if_cancelled(const std::stop_token& token) {
  if (token.stop_requested()) throw SandboxError(Reason::CANCELLED, "the operation was cancelled");
}

// 64 bits from the kernel's generator for each: no id tells anything of
// another.
std::string new_id() { return random_hex(16); }

bool supports(const Features& f, NetworkKind kind) {
  return std::find(f.network.begin(), f.network.end(), kind) != f.network.end();
}

// A network a create or set_network asks for: well formed, enforceable by
// the provider, and permitted where the sandboxes were set up.
void check_network(const SandboxesOptions& limits, const Features& features, const Network& network) {
  const NetworkKind kind = network.kind;
  if (kind == NetworkKind::allowlist) {
    if (network.allow.empty())
      throw SandboxError(Reason::INVALID_INPUT, "an allowlist network needs at least one domain");
    if (network.allow.size() > kMaxAllowedDomains) {
      throw SandboxError(Reason::INVALID_INPUT,
                         "an allowlist network takes at most " + std::to_string(kMaxAllowedDomains) + " domains");
    }
    for (const auto& d : network.allow) check_domain_pattern(d);
  } else if (!network.allow.empty()) {
    throw SandboxError(Reason::INVALID_INPUT, "allowed domains are only for an allowlist network");
  }
  // Feature checks come before the permission check: asking for something
  // the provider cannot do at all is the caller's input error.
  if (!supports(features, kind)) {
    throw SandboxError(Reason::INVALID_INPUT,
                       "the provider cannot enforce network '" + std::string(network_kind_name(kind)) + "'");
  }
  if (std::find(limits.network.begin(), limits.network.end(), kind) == limits.network.end()) {
    // Said for whoever can change it: the library's caller or mayurad's operator.
    const std::string name(network_kind_name(kind));
    throw SandboxError(Reason::PERMISSION_DENIED,
                       "network '" + name + "' is not allowed here: the operator lists the networks sandboxes may " +
                           "have (create_sandboxes' network option; mayurad's \"network\" setting, e.g. " +
                           "\"network\": [\"none\", \"" + name + "\"] in mayurad.json)");
  }
}

// The form of a user and a working directory; whether the image knows them
// is the provider's to say.
void check_identity(const std::string& user, const std::string& workdir) {
  if (!user.empty()) {
    const bool chars_ok =
        user.size() <= 256 && std::all_of(user.begin(), user.end(), [](char c) {
          return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.' || c == ':';
        });
    const auto colon = user.find(':');
    const bool shape_ok = colon != 0 && colon != user.size() - 1 &&
                          (colon == std::string::npos || user.find(':', colon + 1) == std::string::npos);
    if (!chars_ok || !shape_ok) {
      throw SandboxError(Reason::INVALID_INPUT, "user must be UID, UID:GID, NAME or NAME:GROUP");
    }
  }
  if (!workdir.empty()) {
    bool ok = workdir.size() <= 1024 && workdir.front() == '/' && workdir.size() > 1 && workdir.back() != '/' &&
              workdir.find('\0') == std::string::npos && workdir.find("//") == std::string::npos;
    for (const char* bad : {"/./", "/../"}) ok = ok && (workdir + "/").find(bad) == std::string::npos;
    if (!ok) throw SandboxError(Reason::INVALID_INPUT, "workdir must be an absolute path without '.' or '..'");
  }
}

std::string format_number(double v) {
  std::ostringstream out;
  out << v;
  return out.str();
}

// What the operator allows one sandbox, each ceiling named as the operator
// set it (the library's option, and mayurad's setting).
void check_ceilings(const SandboxesOptions& limits, const CreateOptions& o) {
  const auto over = [](const std::string& what, const std::string& asked, const std::string& ceiling,
                       const char* option, const char* setting) {
    throw SandboxError(Reason::INVALID_INPUT, what + " " + asked + " is over the operator's ceiling of " + ceiling +
                                                  " (" + option + "; mayurad's " + setting + ")");
  };
  if (limits.max_cpus > 0 && o.cpus && *o.cpus > limits.max_cpus) {
    over("cpus", format_number(*o.cpus), format_number(limits.max_cpus), "max_cpus", "maxCpus");
  }
  if (limits.max_memory_mib > 0 && o.memory_mib && *o.memory_mib > limits.max_memory_mib) {
    over("memory_mib", std::to_string(*o.memory_mib), std::to_string(limits.max_memory_mib), "max_memory_mib",
         "maxMemoryMiB");
  }
  if (limits.max_pids > 0 && o.pids && *o.pids > limits.max_pids) {
    over("pids", std::to_string(*o.pids), std::to_string(limits.max_pids), "max_pids", "maxPids");
  }
  if (limits.max_ports > 0 && o.ports.size() > limits.max_ports) {
    over("the number of ports", std::to_string(o.ports.size()), std::to_string(limits.max_ports), "max_ports",
         "maxPorts");
  }
}

void check_create(const SandboxesOptions& limits, const Features& features, std::int64_t provider_max,
                  const CreateOptions& o) {
  if (o.lifetime_ms <= 0) throw SandboxError(Reason::INVALID_INPUT, "lifetime_ms is required and must be positive");
  if (o.lifetime_ms > limits.max_lifetime_ms) {
    throw SandboxError(Reason::INVALID_INPUT, "lifetime_ms " + std::to_string(o.lifetime_ms) +
                                                  " is over the maximum of " + std::to_string(limits.max_lifetime_ms));
  }
  if (provider_max > 0 && o.lifetime_ms > provider_max) {
    throw SandboxError(Reason::INVALID_INPUT,
                       "lifetime_ms is over the provider's maximum of " + std::to_string(provider_max));
  }
  check_network(limits, features, o.network);
  check_identity(o.user, o.workdir);
  check_ceilings(limits, o);
  if (!o.ports.empty()) {
    if (!features.ports) throw SandboxError(Reason::INVALID_INPUT, "the provider does not serve ports");
    std::vector<int> sorted = o.ports;
    std::sort(sorted.begin(), sorted.end());
    for (int p : sorted) check_port(p);
    if (std::adjacent_find(sorted.begin(), sorted.end()) != sorted.end()) {
      throw SandboxError(Reason::INVALID_INPUT, "a port is listed twice");
    }
  }
  // (uid_t)-1 is no uid: the kernel's "unchanged".
  if (o.ports_owner && *o.ports_owner == 0xFFFFFFFFu)
    throw SandboxError(Reason::INVALID_INPUT, "ports_owner must be a uid, not 4294967295");
  if (o.cpus) {
    if (!features.cpus) throw SandboxError(Reason::INVALID_INPUT, "the provider cannot bound cpus");
    if (!std::isfinite(*o.cpus) || *o.cpus <= 0 || *o.cpus > 1024)
      throw SandboxError(Reason::INVALID_INPUT, "cpus must be positive");
  }
  if (o.memory_mib) {
    if (!features.memory) throw SandboxError(Reason::INVALID_INPUT, "the provider cannot bound memory");
    if (*o.memory_mib <= 0 || *o.memory_mib > (std::int64_t{1} << 30)) {
      throw SandboxError(Reason::INVALID_INPUT, "memory_mib must be positive and at most 2^30");
    }
  }
  if (o.pids) {
    if (!features.pids) throw SandboxError(Reason::INVALID_INPUT, "the provider cannot bound processes");
    if (*o.pids <= 0 || *o.pids > (std::int64_t{1} << 22)) {
      throw SandboxError(Reason::INVALID_INPUT, "pids must be positive and at most 2^22");
    }
  }
  if (o.seccomp_profile) {
    if (!features.seccomp) throw SandboxError(Reason::INVALID_INPUT, "the provider does not take seccomp profiles");
    if (o.seccomp_profile->size() > kMaxSeccompProfileBytes) {
      throw SandboxError(Reason::INVALID_INPUT, "the seccomp profile is larger than 1 MiB");
    }
  }
  if (o.desktop) {
    if (!features.desktop) throw SandboxError(Reason::INVALID_INPUT, "the provider has no desktop");
    check_desktop_size(*o.desktop);
  }
  check_env(o.env);
  check_labels(o.labels);
  if (o.image.find('\0') != std::string::npos || o.image.size() > kMaxPathBytes) {
    throw SandboxError(Reason::INVALID_INPUT, "image name is malformed");
  }
}

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
Features Sandbox::features() const { return state().owner->features; }
std::string Sandbox::workdir() const { return state().workdir; }
bool Sandbox::released() const { return !state().current(); }

boost::asio::any_io_executor Sandbox::default_executor() const { return state().owner->executor; }

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
}
}  // namespace
}  // namespace detail

ExecResult Sandbox::exec(const std::vector<std::string>& argv, const ExecOptions& options) const {
  std::size_t limit = 0;
  auto backend = exec_backend(argv, options, limit);
  ExecOptions o = detail::without_pacing(options);  // the caller's thread is the consumer
  o.max_output_bytes = limit;
  return checked_result(guarded("exec", [&] { return backend->exec(argv, o); }), limit, o.keep_output);
}

std::shared_ptr<SandboxBackend> Sandbox::exec_backend(const std::vector<std::string>& argv, const ExecOptions& options,
                                                      std::size_t& limit) const {
  detail::check_exec(*state().owner, argv, options);
  limit = std::min(options.max_output_bytes.value_or(state().owner->options.max_output_bytes),
                   state().owner->options.max_output_bytes);
  throw_if_cancelled(options.cancellation);
  return state().use();
}

std::shared_ptr<SandboxBackend> Sandbox::read_backend(std::string_view path, const ReadOptions& options,
                                                      std::size_t& limit) const {
  check_path(path);
  limit = std::min(options.max_bytes.value_or(state().owner->options.max_read_bytes),
                   state().owner->options.max_read_bytes);
  throw_if_cancelled(options.cancellation);
  return state().use();
}

std::shared_ptr<SandboxBackend> Sandbox::write_backend(std::string_view path, std::string_view data,
                                                       const FileOptions& options) const {
  check_path(path);
  if (data.size() > state().owner->options.max_write_bytes) {
    throw SandboxError(Reason::LIMIT_REACHED, "the data is larger than max_write_bytes");
  }
  throw_if_cancelled(options.cancellation);
  return state().use();
}

std::shared_ptr<SandboxBackend> Sandbox::path_backend(std::string_view path, const FileOptions& options) const {
  check_path(path);
  throw_if_cancelled(options.cancellation);
  return state().use();
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

void Sandbox::release() const { state().end(); }

// --- The desktop ---------------------------------------------------------

std::string Sandbox::desktop(const DesktopAction& action, std::stop_token cancellation) const {
  if (!state().owner->features.desktop) throw SandboxError(Reason::INVALID_INPUT, "the provider has no desktop");
  if (!state().desktop) throw SandboxError(Reason::INVALID_INPUT, "the sandbox was created without a desktop");
  check_desktop_action(action, *state().desktop);
  throw_if_cancelled(cancellation);
  auto backend = state().use();
  return guarded("desktop", [&] { return backend->desktop(action, cancellation); });
}

std::string Sandbox::desktop_screenshot(const std::optional<Region>& region, std::stop_token stop,
                                        const std::stop_token& caller) const {
  DesktopAction a;
  a.kind = DesktopAction::Kind::screenshot;
  a.region = region;
  const detail::JoinedStop joined(std::move(stop), caller);
  std::string png = desktop(a, joined.token());
  // What comes back went through the sandbox: it is handed on as bytes, and
  // only its kind is checked.
  constexpr std::string_view kSignature("\x89PNG\r\n\x1a\n", 8);
  if (std::string_view(png).substr(0, kSignature.size()) != kSignature) {
    throw SandboxError(Reason::INTERNAL, "the desktop's screenshot is not a PNG");
  }
  return png;
}

Point Sandbox::desktop_cursor(std::stop_token cancellation) const {
  DesktopAction a;
  a.kind = DesktopAction::Kind::cursor;
  const std::string answer = desktop(a, std::move(cancellation));
  // "X Y\n", both on the screen
  Point p;
  const char* at = answer.data();
  const char* end = answer.data() + answer.size();
  auto [after_x, ex] = std::from_chars(at, end, p.x);
  bool ok = ex == std::errc{} && after_x < end && *after_x == ' ';
  if (ok) {
    auto [after_y, ey] = std::from_chars(after_x + 1, end, p.y);
    ok = ey == std::errc{} && after_y + 1 == end && *after_y == '\n';
  }
  const DesktopSize& screen = *state().desktop;
  if (!ok || p.x < 0 || p.y < 0 || p.x >= screen.width || p.y >= screen.height) {
    throw SandboxError(Reason::INTERNAL, "the desktop gave no cursor position");
  }
  return p;
}

std::string Sandbox::screenshot(const ScreenshotOptions& options) const {
  return desktop_screenshot(options.region, {}, options.cancellation);
}

Point Sandbox::cursor_position() const { return desktop_cursor({}); }

std::optional<DesktopSize> Sandbox::desktop_size() const { return state().desktop; }

void Sandbox::move(Point to) const { desktop(detail::move_action(to), {}); }

void Sandbox::click(Point at, MouseButton button, int count) const {
  desktop(detail::click_action(at, button, count), {});
}

void Sandbox::drag(const std::vector<Point>& path) const { desktop(detail::drag_action(path), {}); }

void Sandbox::scroll(Point at, ScrollDirection direction, int amount) const {
  desktop(detail::scroll_action(at, direction, amount), {});
}

void Sandbox::type(std::string_view text) const {
  desktop(detail::text_action(DesktopAction::Kind::type, std::string(text)), {});
}

void Sandbox::key(std::string_view combo) const {
  desktop(detail::text_action(DesktopAction::Kind::key, std::string(combo)), {});
}

namespace detail {

DesktopAction move_action(Point to) {
  DesktopAction a;
  a.kind = DesktopAction::Kind::move;
  a.points = {to};
  return a;
}

DesktopAction click_action(Point at, MouseButton button, int count) {
  DesktopAction a = move_action(at);
  a.kind = DesktopAction::Kind::click;
  a.button = button;
  a.count = count;
  return a;
}

DesktopAction drag_action(std::vector<Point> path) {
  DesktopAction a;
  a.kind = DesktopAction::Kind::drag;
  a.points = std::move(path);
  return a;
}

DesktopAction scroll_action(Point at, ScrollDirection direction, int amount) {
  DesktopAction a = move_action(at);
  a.kind = DesktopAction::Kind::scroll;
  a.direction = direction;
  a.amount = amount;
  return a;
}

DesktopAction text_action(DesktopAction::Kind kind, std::string text) {
  DesktopAction a;
  a.kind = kind;
  a.text = std::move(text);
  return a;
}

}  // namespace detail

// --- Sandboxes -----------------------------------------------------------

boost::asio::any_io_executor Sandboxes::default_executor() const { return state_->executor; }
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

Sandbox Sandboxes::create(const CreateOptions& options, std::stop_token cancellation) const {
  auto& s = *state_;
  check_create(s.options, s.features, s.provider->max_lifetime_ms(), options);
  throw_if_cancelled(cancellation);
  {
    std::lock_guard lock(s.mutex);
    if (s.closed) throw SandboxError(Reason::GONE, "the sandboxes were closed");
    // The list holds every live sandbox and maybe some ended ones: below
    // the limit with them all, it is below it without them.
    if (s.live.size() + s.reserved >= s.options.max_sandboxes || s.live.size() >= s.prune_at) {
      const std::size_t live = s.count_live_locked();
      s.prune_at = 2 * live + 64;
      if (live + s.reserved >= s.options.max_sandboxes) {
        throw SandboxError(Reason::LIMIT_REACHED,
                           "max_sandboxes (" + std::to_string(s.options.max_sandboxes) + ") are alive already");
      }
    }
    ++s.reserved;
  }
  struct Unreserve {
    detail::SandboxesState& s;
    ~Unreserve() {
      std::lock_guard lock(s.mutex);
      --s.reserved;
    }
  } unreserve{s};

  const auto start = Clock::now();
  std::shared_ptr<SandboxBackend> backend =
      guarded("create", [&] { return std::shared_ptr<SandboxBackend>(s.provider->create(options, cancellation)); });
  if (!backend) throw SandboxError(Reason::INTERNAL, "the provider returned no sandbox");

  auto state = std::make_shared<detail::SandboxState>();
  state->owner = state_;
  state->id = new_id();
  state->labels = options.labels;
  state->ports = options.ports;
  state->desktop = options.desktop;
  try {
    state->workdir = backend->workdir();
  } catch (...) {
    // a provider's failure here must not leak the sandbox: the provider's workdir stands
  }
  if (state->workdir.empty()) state->workdir = s.workdir;
  state->deadline = start + std::chrono::milliseconds(options.lifetime_ms);
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
  if (!std::isfinite(options.max_cpus) || options.max_cpus < 0 || options.max_memory_mib < 0 || options.max_pids < 0) {
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
