#pragma once
// The limits layer: create_sandboxes(provider, options) holds every sandbox of
// a provider to the same limits, and Sandbox is the handle a caller works with.
// Every operation has a blocking form (safe from many threads at once) and an
// async_ form taking an Asio completion token.

#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <boost/asio/any_io_executor.hpp>

#include "mayura/async.hpp"
#include "mayura/background.hpp"
#include "mayura/errors.hpp"
#include "mayura/provider.hpp"
#include "mayura/types.hpp"

namespace mayura {

struct SandboxesOptions {
  std::size_t max_sandboxes = 1;
  std::int64_t max_lifetime_ms = 30 * 60 * 1000;
  // The network kinds a create may ask for. A kind not listed fails
  // PERMISSION_DENIED: permission to reach the network is given here, once.
  std::vector<NetworkKind> network = {NetworkKind::none};
  // The operator's ceilings on what one create may ask for (0: none). A
  // create over one fails INVALID_INPUT naming it, before anything is made;
  // one that asks for none gets the provider's default, which the operator
  // keeps under them (mayurad does).
  double max_cpus = 0;
  std::int64_t max_memory_mib = 0;
  std::int64_t max_pids = 0;
  std::size_t max_ports = 0;
  std::int64_t max_disk_mib = 0;
  std::size_t max_output_bytes = 16u << 20;  // of each stream of one exec
  std::size_t max_read_bytes = 64u << 20;
  std::size_t max_write_bytes = 64u << 20;
  // Where async_ completions run when the token names no executor of its own.
  // Empty: inline on the thread that did the work.
  boost::asio::any_io_executor executor;
};

namespace detail {
struct SandboxesState;
struct SandboxState;
// The desktop's input actions, as the blocking and async forms send them.
DesktopAction move_action(Point to);
DesktopAction click_action(Point at, MouseButton button, int count);
DesktopAction drag_action(std::vector<Point> path);
DesktopAction scroll_action(Point at, ScrollDirection direction, int amount);
DesktopAction text_action(DesktopAction::Kind kind, std::string text);  // type or key
}  // namespace detail

class Sandbox {
 public:
  // An empty handle; every call on it fails INVALID_INPUT.
  Sandbox() = default;
  std::string id() const;
  const std::map<std::string, std::string>& labels() const;
  // The options it was created with (a fork's: its original's, with its
  // own lifetime).
  const CreateOptions& created() const;
  Features features() const;
  std::string workdir() const;

  ExecResult exec(const std::vector<std::string>& argv, const ExecOptions& options = {}) const;
  std::string read_file(std::string_view path, const ReadOptions& options = {}) const;
  void write_file(std::string_view path, std::string_view data, const FileOptions& options = {}) const;
  std::vector<FileEntry> list(std::string_view path = ".", const FileOptions& options = {}) const;
  void remove(std::string_view path, const FileOptions& options = {}) const;
  std::string url(int port) const;
  // Changes what the running sandbox may reach, under the same checks as a
  // create's network (a kind not listed in create_sandboxes' network fails
  // PERMISSION_DENIED). Connections the new network does not allow are cut.
  void set_network(const Network& network) const;
  // Stops every process of the sandbox at once, where it is (its memory,
  // open files, sockets and timers kept as they are), and lets them go on
  // as they were. A paused sandbox still holds its memory, and its lifetime
  // runs on. exec, the file calls and the desktop's resume it first; a call
  // under way as it is paused waits for the resume (its timeout running).
  // Pausing a paused sandbox, or resuming a running one, does nothing.
  // INVALID_INPUT where the provider cannot (Features::pause).
  void pause() const;
  void resume() const;
  bool paused() const;
  // Copies the sandbox's disk (CreateOptions::disk_mib: its working
  // directory and /tmp, and a writable root's upper layer) into the snapshot `name` of its tenant, replacing
  // one of that name: a failure or a crash leaves the old one or the new.
  // Its processes are stopped only while the copy is taken (a paused
  // sandbox stays paused). INVALID_INPUT for a bad name (1 to 64 of
  // A-Z a-z 0-9 . _ -, not starting with . _ or -), a sandbox without a
  // disk, or a provider that cannot (Features::snapshot).
  Snapshot snapshot(const std::string& name) const;
  // `count` (1 to 64) new sandboxes, each starting with a copy of this
  // one's disk as it is now, and otherwise as this one was created (image,
  // network, limits, env, labels): each with its own id, hostname, network
  // namespace and lifetime (`lifetime_ms`, none: this one's). Processes are
  // not copied: each starts with none running; nor are volumes, which stay
  // this one's. All or none are made.
  std::vector<Sandbox> fork(int count, std::optional<std::int64_t> lifetime_ms = {}) const;
  // Ends the sandbox (a paused one too). Safe to call again; every other
  // call then fails GONE.
  void release() const;
  bool released() const;
  // Keeps `record` with the sandbox for a later process's provider to hand
  // back with it, should this process end while the sandbox lives (live
  // restore: SandboxProvider::restore, Sandboxes::take_back). INVALID_INPUT
  // where the provider's sandboxes end with its process; GONE once released.
  void keep(const std::string& record) const;

  // Background commands (mayura/background.hpp). start() runs `argv` as
  // exec would (the same checks, INVALID_INPUT or LIMIT_REACHED before
  // anything runs) and returns at once, its id in the info; its output is
  // held, the newest keep_bytes of each stream, for any caller to read with
  // output() or attach() while this handle's sandbox lives; it ends by
  // itself, at its timeout, by stop(), or with the sandbox. At most 32 are
  // held per sandbox: a start past that many running fails LIMIT_REACHED,
  // and otherwise the oldest ended one is dropped. An id the sandbox does
  // not hold fails NOT_FOUND.
  CommandInfo start(const std::vector<std::string>& argv, const StartOptions& options = {}) const;
  // Every command held, in the order they started.
  std::vector<CommandInfo> commands() const;
  CommandInfo command(const std::string& id) const;
  // What is held of one stream from `from` on (at most `max_bytes`, and at
  // most max_output_bytes), at once.
  OutputSlice output(const std::string& id, OutputStream stream, std::uint64_t from = 0,
                     std::size_t max_bytes = std::size_t{1} << 20) const;
  // What is held from the options' offsets, then the output as it comes,
  // until the command has ended and all of it was given (or, without
  // follow, once what is held now was given; or at the attachment's
  // timeout): the command's info then. A cancellation fails CANCELLED and
  // leaves the command running. Calls back on this thread.
  CommandInfo attach(const std::string& id, const AttachOptions& options) const;
  // Its input, signals and terminal (CommandControl's, checked the same
  // way). INVALID_INPUT once it has ended, or where the provider cannot
  // (Features::interactive); resize, for one with no terminal.
  void write_input(const std::string& id, std::string data) const;
  void close_input(const std::string& id) const;
  void signal(const std::string& id, int signal) const;
  void resize(const std::string& id, TerminalSize size) const;
  // Stops it with everything it started (its processes ended at once, as
  // a timeout does) and returns once it has ended.
  CommandInfo stop(const std::string& id) const;
  // Its info once it has ended, or at the timeout (still running then).
  CommandInfo wait(const std::string& id, std::optional<std::int64_t> timeout_ms = {}) const;
  // For an asynchronous server, which reads output() and command() itself
  // rather than wait in attach() or wait(): calls `changed` each time the
  // command prints, gets its control or ends, until the watch is dropped.
  // It runs on whichever thread made the change, under the command's lock:
  // it must return at once (post the work elsewhere) and call nothing of
  // this sandbox's. UNSUPPORTED where the backend holds the commands
  // (mayura/command_host.hpp: attach() streams them from there).
  [[nodiscard]] CommandWatch watch(const std::string& id, std::function<void()> changed) const;

  // The desktop of a sandbox created with CreateOptions::desktop: the screen
  // as PNG bytes (or a region of it), where the pointer is, and input that
  // the programs on the screen get as from a real mouse and keyboard. Each
  // has happened when the call returns. Points off the screen, unknown keys
  // and empty input fail INVALID_INPUT, as does a sandbox with no desktop.
  std::string screenshot(const ScreenshotOptions& options = {}) const;
  // The screen's size; none for a sandbox created without a desktop.
  std::optional<DesktopSize> desktop_size() const;
  Point cursor_position() const;
  void move(Point to) const;
  // `count` 2 is a double click.
  void click(Point at, MouseButton button = MouseButton::left, int count = 1) const;
  // The left button pressed at the first point, held through the rest,
  // released at the last.
  void drag(const std::vector<Point>& path) const;
  void scroll(Point at, ScrollDirection direction, int amount = 1) const;
  // UTF-8 text, characters no key on the keymap carries included; a newline
  // is Return.
  void type(std::string_view text) const;
  // xdotool's syntax: "ctrl+s", "Return", "alt+Tab"; several combos one
  // after the other when separated by spaces ("ctrl+a Delete").
  void key(std::string_view combo) const;

  // The provider's threads, where every call runs (mayura/runtime.hpp).
  const std::shared_ptr<Runtime>& runtime() const;

  // The native provider waits for the command on its runtime's reactor, not
  // a thread of its own; other providers run exec() on a blocking thread.
  template <class Token>
  auto async_exec(std::vector<std::string> argv, ExecOptions options, Token&& token) const {
    return detail::async_start<ExecResult>(
        default_executor(), std::forward<Token>(token),
        [self = *this, argv = std::move(argv), options = std::move(options)](
            std::stop_token stop, std::function<void(std::exception_ptr, ExecResult)> done) mutable {
          // Either the caller's own token or the operation's cancellation stops it.
          auto joined = std::make_shared<detail::JoinedStop>(std::move(stop), options.cancellation);
          options.cancellation = joined->token();
          self.start_exec(std::move(argv), std::move(options),
                          [joined, done = std::move(done)](std::exception_ptr e, ExecResult r) mutable {
                            done(std::move(e), std::move(r));
                          });
        });
  }
  template <class Token>
  auto async_read_file(std::string path, Token&& token) const {
    return async_read_file(std::move(path), ReadOptions{}, std::forward<Token>(token));
  }
  // (options.cancellation stops it too, as the operation's cancellation does)
  template <class Token>
  auto async_read_file(std::string path, ReadOptions options, Token&& token) const {
    return detail::async_start<std::string>(
        default_executor(), std::forward<Token>(token),
        [self = *this, path = std::move(path), options = std::move(options)](std::stop_token stop,
                                                                             ReadCompletion done) mutable {
          auto joined = std::make_shared<detail::JoinedStop>(std::move(stop), options.cancellation);
          options.cancellation = joined->token();
          self.start_read_file(std::move(path), std::move(options),
                               [joined, done = std::move(done)](std::exception_ptr e, std::string data) {
                                 done(std::move(e), std::move(data));
                               });
        });
  }
  template <class Token>
  auto async_write_file(std::string path, std::string data, Token&& token) const {
    return detail::async_start<void>(default_executor(), std::forward<Token>(token),
                                     [self = *this, path = std::move(path), data = std::move(data)](
                                         std::stop_token stop, DoneCompletion done) mutable {
                                       FileOptions o;
                                       o.cancellation = std::move(stop);
                                       self.start_write_file(std::move(path), std::move(data), o, std::move(done));
                                     });
  }
  template <class Token>
  auto async_list(std::string path, Token&& token) const {
    return detail::async_start<std::vector<FileEntry>>(
        default_executor(), std::forward<Token>(token),
        [self = *this, path = std::move(path)](std::stop_token stop, ListCompletion done) mutable {
          FileOptions o;
          o.cancellation = std::move(stop);
          self.start_list(std::move(path), o, std::move(done));
        });
  }
  template <class Token>
  auto async_remove(std::string path, Token&& token) const {
    return detail::async_start<void>(
        default_executor(), std::forward<Token>(token),
        [self = *this, path = std::move(path)](std::stop_token stop, DoneCompletion done) mutable {
          FileOptions o;
          o.cancellation = std::move(stop);
          self.start_remove(std::move(path), o, std::move(done));
        });
  }
  template <class Token>
  auto async_url(int port, Token&& token) const {
    return detail::async_run(runtime(), default_executor(), std::forward<Token>(token),
                             [self = *this, port](const std::stop_token&) { return self.url(port); });
  }
  template <class Token>
  auto async_set_network(Network network, Token&& token) const {
    return detail::async_run(
        runtime(), default_executor(), std::forward<Token>(token),
        [self = *this, network = std::move(network)](const std::stop_token&) { self.set_network(network); });
  }
  template <class Token>
  auto async_pause(Token&& token) const {
    return detail::async_run(runtime(), default_executor(), std::forward<Token>(token),
                             [self = *this](const std::stop_token&) { self.pause(); });
  }
  template <class Token>
  auto async_resume(Token&& token) const {
    return detail::async_run(runtime(), default_executor(), std::forward<Token>(token),
                             [self = *this](const std::stop_token&) { self.resume(); });
  }
  // The desktop's actions; the operation's cancellation stops the one
  // under way.
  template <class Token>
  auto async_screenshot(ScreenshotOptions options, Token&& token) const {
    return detail::async_run(runtime(), default_executor(), std::forward<Token>(token),
                             [self = *this, options = std::move(options)](std::stop_token stop) {
                               return self.desktop_screenshot(options.region, std::move(stop), options.cancellation);
                             });
  }
  template <class Token>
  auto async_cursor_position(Token&& token) const {
    return detail::async_run(runtime(), default_executor(), std::forward<Token>(token),
                             [self = *this](std::stop_token stop) { return self.desktop_cursor(std::move(stop)); });
  }
  template <class Token>
  auto async_move(Point to, Token&& token) const {
    return async_desktop(detail::move_action(to), std::forward<Token>(token));
  }
  template <class Token>
  auto async_click(Point at, MouseButton button, int count, Token&& token) const {
    return async_desktop(detail::click_action(at, button, count), std::forward<Token>(token));
  }
  template <class Token>
  auto async_drag(std::vector<Point> path, Token&& token) const {
    return async_desktop(detail::drag_action(std::move(path)), std::forward<Token>(token));
  }
  template <class Token>
  auto async_scroll(Point at, ScrollDirection direction, int amount, Token&& token) const {
    return async_desktop(detail::scroll_action(at, direction, amount), std::forward<Token>(token));
  }
  template <class Token>
  auto async_type(std::string text, Token&& token) const {
    return async_desktop(detail::text_action(DesktopAction::Kind::type, std::move(text)), std::forward<Token>(token));
  }
  template <class Token>
  auto async_key(std::string combo, Token&& token) const {
    return async_desktop(detail::text_action(DesktopAction::Kind::key, std::move(combo)), std::forward<Token>(token));
  }
  template <class Token>
  auto async_snapshot(std::string name, Token&& token) const {
    return detail::async_run(
        runtime(), default_executor(), std::forward<Token>(token),
        [self = *this, name = std::move(name)](const std::stop_token&) { return self.snapshot(name); });
  }
  template <class Token>
  auto async_fork(int count, std::optional<std::int64_t> lifetime_ms, Token&& token) const {
    return detail::async_run(
        runtime(), default_executor(), std::forward<Token>(token),
        [self = *this, count, lifetime_ms](const std::stop_token&) { return self.fork(count, lifetime_ms); });
  }
  template <class Token>
  auto async_release(Token&& token) const {
    // Never waits for a turn behind calls that may wait on this end.
    return detail::async_run(
        runtime(), default_executor(), std::forward<Token>(token),
        [self = *this](const std::stop_token&) { self.release(); }, Runtime::Turn::now);
  }

 private:
  friend class Sandboxes;
  explicit Sandbox(std::shared_ptr<detail::SandboxState> state) : state_(std::move(state)) {}
  using ExecCompletion = std::function<void(std::exception_ptr, ExecResult)>;
  using ReadCompletion = std::function<void(std::exception_ptr, std::string)>;
  using ListCompletion = std::function<void(std::exception_ptr, std::vector<FileEntry>)>;
  using DoneCompletion = std::function<void(std::exception_ptr)>;
  // Each checks the call and starts it on the provider's async form; `done`
  // gets its end (or its refusal), once.
  void start_exec(std::vector<std::string> argv, ExecOptions options, ExecCompletion done) const;
  void start_read_file(std::string path, ReadOptions options, ReadCompletion done) const;
  void start_write_file(std::string path, std::string data, const FileOptions& options, DoneCompletion done) const;
  void start_list(std::string path, const FileOptions& options, ListCompletion done) const;
  void start_remove(std::string path, const FileOptions& options, DoneCompletion done) const;
  // An input action (no answer), for the async forms.
  template <class Token>
  auto async_desktop(DesktopAction action, Token&& token) const {
    return detail::async_run(
        runtime(), default_executor(), std::forward<Token>(token),
        [self = *this, action = std::move(action)](std::stop_token stop) { self.desktop(action, std::move(stop)); });
  }
  // A desktop action checked against the sandbox's screen and run; what the
  // provider answered, checked.
  std::string desktop(const DesktopAction& action, std::stop_token cancellation) const;
  std::string desktop_screenshot(const std::optional<Region>& region, std::stop_token stop,
                                 const std::stop_token& caller) const;
  Point desktop_cursor(std::stop_token cancellation) const;
  // The checks of each call, then the backend to run it on.
  std::shared_ptr<SandboxBackend> exec_backend(const std::vector<std::string>& argv, const ExecOptions& options,
                                               std::size_t& limit) const;
  std::shared_ptr<SandboxBackend> read_backend(std::string_view path, const ReadOptions& options,
                                               std::size_t& limit) const;
  std::shared_ptr<SandboxBackend> write_backend(std::string_view path, std::string_view data,
                                                const FileOptions& options) const;
  std::shared_ptr<SandboxBackend> path_backend(std::string_view path, const FileOptions& options) const;
  boost::asio::any_io_executor default_executor() const;
  detail::SandboxState& state() const;
  std::shared_ptr<detail::SandboxState> state_;
};

class Sandboxes {
 public:
  Sandbox create(const CreateOptions& options, std::stop_token cancellation = {}) const;

  template <class Token>
  auto async_create(CreateOptions options, Token&& token) const {
    return detail::async_run(runtime(), default_executor(), std::forward<Token>(token),
                             [self = *this, options = std::move(options)](std::stop_token stop) {
                               return self.create(options, std::move(stop));
                             });
  }

  // Releases every sandbox still alive and refuses new ones (GONE), then
  // waits (at most 10 s, for a provider that never completes a call) until
  // every call under way on them has completed; a completion that closes its
  // own Sandboxes does not wait for itself. False if the bound passed first.
  bool close() const;
  // A sandbox the provider took back as it started (SandboxProvider::restore),
  // handed out again under its `id`, as it was created (`options`), for the
  // `remaining_ms` of its lifetime, `paused` as it was found. It counts
  // among the sandboxes alive.
  Sandbox take_back(std::shared_ptr<SandboxBackend> backend, const CreateOptions& options, const std::string& id,
                    std::int64_t remaining_ms, bool paused = false) const;
  bool closed() const;
  // The snapshots `tenant` (a create's tenant: each has its own names) has,
  // by name; and the removal of one (NOT_FOUND if there is none). A create
  // copying it meanwhile goes on.
  std::vector<Snapshot> snapshots(const std::string& tenant = {}) const;
  void delete_snapshot(const std::string& name, const std::string& tenant = {}) const;
  // `tenant`'s volumes (Features::volumes): a new one, empty, of `size_mib`
  // (16 to 2^24; over max_disk_mib fails INVALID_INPUT; a name taken,
  // INVALID_INPUT), listed by name, and deleted (NOT_FOUND if none;
  // INVALID_INPUT while a sandbox uses it). Names as snapshots'.
  Volume create_volume(const std::string& name, std::int64_t size_mib, const std::string& tenant = {}) const;
  std::vector<Volume> volumes(const std::string& tenant = {}) const;
  void delete_volume(const std::string& name, const std::string& tenant = {}) const;
  // Sandboxes alive now.
  std::size_t size() const;
  Features features() const;
  std::string workdir() const;
  boost::asio::any_io_executor executor() const { return default_executor(); }
  // The provider's threads, where every call runs (mayura/runtime.hpp).
  const std::shared_ptr<Runtime>& runtime() const;
  // The checks an exec makes of its input before it reaches a sandbox, for
  // a caller that makes a sandbox only for this command (SandboxError, as
  // the exec would throw).
  void check_exec(const std::vector<std::string>& argv, const ExecOptions& options) const;

 private:
  friend Sandboxes create_sandboxes(std::shared_ptr<SandboxProvider>, SandboxesOptions);
  friend class Sandbox;  // its fork creates
  // create(), its options checked already.
  Sandbox create_from(const CreateOptions& options, std::stop_token cancellation = {}) const;
  // `count` sandboxes as `options` says, a few at once on the runtime's
  // threads beside the caller's: all, or none (those made are released and
  // the first failure thrown).
  std::vector<Sandbox> create_each(const CreateOptions& options, int count) const;
  // A sandbox the provider made (at `start`), handed out as `options` says.
  // `id`: its own (a sandbox taken back, `paused` as found); empty: a new one.
  Sandbox adopt(std::shared_ptr<SandboxBackend> backend, const CreateOptions& options,
                std::chrono::steady_clock::time_point start, const std::string& id = {}, bool paused = false) const;
  class Places;
  Snapshot snapshot_named(const std::string& name, const std::string& tenant) const;
  explicit Sandboxes(std::shared_ptr<detail::SandboxesState> state) : state_(std::move(state)) {}
  boost::asio::any_io_executor default_executor() const;
  std::shared_ptr<detail::SandboxesState> state_;
};

// Checks the options (INVALID_INPUT on nonsense) and returns the limits layer
// over `provider`. The provider is shared: it lives as long as any Sandboxes
// or Sandbox handle that uses it.
Sandboxes create_sandboxes(std::shared_ptr<SandboxProvider> provider, SandboxesOptions options);

}  // namespace mayura
