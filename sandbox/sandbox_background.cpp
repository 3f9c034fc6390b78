// Sandbox's background commands (mayura/background.hpp): each one is an exec
// through the limits layer's async path, whose output goes to its entry's
// rings and whose end to its state; the calls here read and steer them. A
// backend that holds its commands itself (mayura/command_host.hpp) takes
// each call instead, once this layer has checked its input.

#include <algorithm>
#include <chrono>
#include <exception>

#include "background_commands.hpp"
#include "mayura/command_host.hpp"
#include "sandboxes_state.hpp"

namespace mayura {
namespace {

using detail::BackgroundCommand;

// The most one call hands over of each stream at once.
constexpr std::size_t kSliceBytes = std::size_t{1} << 20;
// How long start() waits for its command's control, and stop() for a
// stopped command's end: bounds that a provider's own (a kill's grace is
// 10 s) come well within.
constexpr auto kWaitBound = std::chrono::seconds(60);

// A wait of `ms` from now, a year at most (no overflow of the clock).
std::chrono::steady_clock::time_point deadline_in(std::optional<std::int64_t> ms) {
  constexpr std::int64_t kYearMs = 365LL * 24 * 3600 * 1000;
  if (!ms) return std::chrono::steady_clock::time_point::max();
  return std::chrono::steady_clock::now() + std::chrono::milliseconds(std::min(*ms, kYearMs));
}

void check_command_id(const std::string& id) {
  const bool ok = !id.empty() && id.size() <= 16 && std::all_of(id.begin(), id.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
  });
  if (!ok) throw SandboxError(Reason::INVALID_INPUT, "a command id is 1 to 16 of a-z and 0-9 (as start gave it)");
}

CommandState state_of(std::exception_ptr error, const BackgroundCommand& command, std::string& message) {
  try {
    std::rethrow_exception(std::move(error));
  } catch (const SandboxError& e) {
    if (e.reason() == Reason::CANCELLED && command.stop.stop_requested()) return CommandState::stopped;
    message = e.what();
  } catch (...) {
    message = "the command failed in the provider";
  }
  return CommandState::failed;
}

// The sandbox's backend when it holds its commands itself; null when this
// handle holds them (or the sandbox was released: its commands are looked up
// here, and not found).
struct Hosted {
  std::shared_ptr<SandboxBackend> backend;
  CommandHost* host = nullptr;
  explicit operator bool() const { return host != nullptr; }
  CommandHost* operator->() const { return host; }
};
Hosted hosted(const detail::SandboxState& state) {
  Hosted h;
  h.backend = state.current();
  h.host = dynamic_cast<CommandHost*>(h.backend.get());
  return h;
}

// A command this handle holds; NOT_FOUND for one it does not, or GONE once
// the sandbox was released (a host's commands went with it).
std::shared_ptr<BackgroundCommand> held(const detail::SandboxState& state, const std::string& id) {
  try {
    return state.background.find(id);
  } catch (const SandboxError& e) {
    if (e.reason() == Reason::NOT_FOUND && !state.current())
      throw SandboxError(Reason::GONE, "the sandbox was released, and its commands with it");
    throw;
  }
}

// The longest one wait asks a host for.
constexpr std::int64_t kMostHostedWaitMs = 30'000;

}  // namespace

CommandInfo Sandbox::start(const std::vector<std::string>& argv, const StartOptions& options) const {
  const detail::SandboxesState& owner = *state().owner;
  if (options.keep_bytes < 1024 || options.keep_bytes > owner.options.max_output_bytes) {
    throw SandboxError(Reason::INVALID_INPUT, "keep_bytes must be 1 KiB to max_output_bytes (" +
                                                  std::to_string(owner.options.max_output_bytes) + ")");
  }
  ExecOptions o;
  o.cwd = options.cwd;
  o.env = options.env;
  o.timeout_ms = options.timeout_ms;
  o.stdin = options.stdin;
  o.terminal = options.terminal;
  o.keep_output = false;  // the rings hold it
  std::size_t limit = 0;
  if (const auto host = hosted(state())) {
    // Every check of an exec but the terminal's, which the host makes (its
    // commands have terminals where its execs through this provider do not).
    ExecOptions checked = o;
    checked.terminal.reset();
    exec_backend(argv, checked, limit);
    return detail::guarded("start", [&] { return host->start(argv, options); });
  }
  exec_backend(argv, o, limit);  // every check, before the entry is made
  std::shared_ptr<BackgroundCommand> command =
      state().background.add(argv, options.terminal.has_value(), options.keep_bytes);
  o.on_stdout = [command](std::string_view chunk) { command->output(OutputStream::out, chunk); };
  o.on_stderr = [command](std::string_view chunk) { command->output(OutputStream::err, chunk); };
  if (owner.features.interactive) {
    o.on_start = [command](std::shared_ptr<CommandControl> control) { command->started(std::move(control)); };
  }
  o.cancellation = command->stop.get_token();
  start_exec(argv, std::move(o), [command](std::exception_ptr error, const ExecResult& result) {
    if (!error) {
      if (result.timed_out) command->ended(CommandState::timed_out, {}, {});
      else command->ended(CommandState::exited, result.exit_code, {});
      return;
    }
    std::string message;
    const CommandState state = state_of(std::move(error), *command, message);
    command->ended(state, {}, std::move(message));
  });
  // Its control comes as it starts, a moment later on the provider's
  // threads: a caller that writes to it right after start() finds it.
  if (owner.features.interactive) return command->await(std::chrono::steady_clock::now() + kWaitBound, true);
  return command->info();
}

std::vector<CommandInfo> Sandbox::commands() const {
  if (const auto host = hosted(state())) return detail::guarded("commands", [&] { return host->commands(); });
  return state().background.list();
}

CommandInfo Sandbox::command(const std::string& id) const {
  check_command_id(id);
  if (const auto host = hosted(state())) return detail::guarded("command", [&] { return host->command(id); });
  return held(state(), id)->info();
}

OutputSlice Sandbox::output(const std::string& id, OutputStream stream, std::uint64_t from,
                            std::size_t max_bytes) const {
  check_command_id(id);
  if (max_bytes == 0) throw SandboxError(Reason::INVALID_INPUT, "max_bytes must be positive");
  const std::size_t most = std::min(max_bytes, state().owner->options.max_output_bytes);
  if (const auto host = hosted(state())) {
    return detail::guarded("output", [&] { return host->output(id, stream, from, most); });
  }
  const auto command = held(state(), id);
  std::lock_guard lock(command->mutex);
  return (stream == OutputStream::out ? command->out : command->err).slice(from, most);
}

CommandInfo Sandbox::attach(const std::string& id, const AttachOptions& options) const {
  check_command_id(id);
  if (options.timeout_ms && *options.timeout_ms <= 0)
    throw SandboxError(Reason::INVALID_INPUT, "timeout_ms must be positive");
  const auto deadline = deadline_in(options.timeout_ms);
  if (const auto host = hosted(state())) return detail::guarded("attach", [&] { return host->attach(id, options); });
  const auto command = held(state(), id);
  // A cancellation wakes the wait below (under the mutex: no wake-up lost).
  std::stop_callback wake(options.cancellation, [&command] {
    std::lock_guard lock(command->mutex);
    command->changed.notify_all();
  });
  std::uint64_t at[2] = {options.stdout_from, options.stderr_from};
  // Without follow: up to what was printed when it was called, however
  // fast the command prints on.
  std::uint64_t until[2] = {0, 0};
  bool first = true;
  for (;;) {
    OutputSlice got[2];
    bool ended = false;
    {
      std::unique_lock lock(command->mutex);
      const auto news = [&] {
        return command->out.total() > at[0] || command->err.total() > at[1] ||
               command->state != CommandState::running || options.cancellation.stop_requested();
      };
      if (!first && options.follow) {
        if (deadline == std::chrono::steady_clock::time_point::max()) command->changed.wait(lock, news);
        else command->changed.wait_until(lock, deadline, news);
      }
      if (first) {
        until[0] = command->out.total();
        until[1] = command->err.total();
      }
      got[0] = command->out.slice(at[0], kSliceBytes);
      got[1] = command->err.slice(at[1], kSliceBytes);
      ended = command->state != CommandState::running && got[0].next == command->out.total() &&
              got[1].next == command->err.total();
    }
    first = false;
    for (int i = 0; i < 2; ++i) {
      const auto stream = i == 0 ? OutputStream::out : OutputStream::err;
      if (got[i].dropped > 0 && options.on_dropped) options.on_dropped(stream, got[i].dropped);
      const OutputCallback& to = i == 0 ? options.on_stdout : options.on_stderr;
      if (!got[i].data.empty() && to) to(got[i].data);
      at[i] = std::max(at[i], got[i].next);  // an offset past the end waits for its byte
    }
    const bool caught_up = got[0].data.empty() && got[1].data.empty();
    const bool as_called = at[0] >= until[0] && at[1] >= until[1];
    if (ended || (!options.follow && (caught_up || as_called))) return command->info();
    detail::throw_if_cancelled(options.cancellation);
    if (std::chrono::steady_clock::now() >= deadline) return command->info();
  }
}

namespace {

std::shared_ptr<CommandControl> control_of(const BackgroundCommand& command) {
  auto control = command.control();
  if (control) return control;
  if (command.info().state != CommandState::running)
    throw SandboxError(Reason::INVALID_INPUT, "the command " + command.id + " has ended");
  throw SandboxError(Reason::INVALID_INPUT, "the command " + command.id +
                                                " takes no input or signals (not started yet, or a provider "
                                                "that cannot: Features::interactive)");
}

}  // namespace

void Sandbox::write_input(const std::string& id, std::string data) const {
  check_command_id(id);
  if (const auto host = hosted(state()))
    return detail::guarded("input", [&] { host->write_input(id, std::move(data)); });
  control_of(*held(state(), id))->write(std::move(data));
}

void Sandbox::close_input(const std::string& id) const {
  check_command_id(id);
  if (const auto host = hosted(state())) return detail::guarded("input", [&] { host->close_input(id); });
  control_of(*held(state(), id))->close_input();
}

// (The control checks the signal and the size: it is the limits layer's,
// mayura/sandboxes.cpp.)
void Sandbox::signal(const std::string& id, int signal) const {
  check_command_id(id);
  if (const auto host = hosted(state())) return detail::guarded("signal", [&] { host->signal(id, signal); });
  control_of(*held(state(), id))->signal(signal);
}

void Sandbox::resize(const std::string& id, TerminalSize size) const {
  check_command_id(id);
  if (const auto host = hosted(state())) return detail::guarded("resize", [&] { host->resize(id, size); });
  const auto command = held(state(), id);
  if (!command->terminal) throw SandboxError(Reason::INVALID_INPUT, "the command " + id + " has no terminal");
  control_of(*command)->resize(size);
}

CommandInfo Sandbox::stop(const std::string& id) const {
  check_command_id(id);
  if (const auto host = hosted(state())) return detail::guarded("stop", [&] { return host->stop(id); });
  const auto command = held(state(), id);
  command->stop.request_stop();
  return command->await(std::chrono::steady_clock::now() + kWaitBound);
}

CommandInfo Sandbox::wait(const std::string& id, std::optional<std::int64_t> timeout_ms) const {
  check_command_id(id);
  if (timeout_ms && *timeout_ms <= 0) throw SandboxError(Reason::INVALID_INPUT, "timeout_ms must be positive");
  if (const auto host = hosted(state())) {
    const auto deadline = deadline_in(timeout_ms);
    // In the host's own bounds (a daemon's request waits a minute at
    // most): asked again until the end or the deadline.
    for (;;) {
      const auto left =
          std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now()).count();
      const std::int64_t now = std::clamp<std::int64_t>(left, 1, kMostHostedWaitMs);
      CommandInfo info = detail::guarded("wait", [&] { return host->wait(id, now); });
      // (A host may answer sooner than asked: its own bound is shorter.)
      if (info.state != CommandState::running || std::chrono::steady_clock::now() >= deadline) return info;
    }
  }
  return held(state(), id)->await(deadline_in(timeout_ms));
}

CommandWatch Sandbox::watch(const std::string& id, std::function<void()> changed) const {
  check_command_id(id);
  if (!changed) throw SandboxError(Reason::INVALID_INPUT, "watch needs a callback");
  if (hosted(state())) {
    throw SandboxError(Reason::UNSUPPORTED,
                       "the commands of this sandbox are held by its provider's host: attach to them instead");
  }
  const std::shared_ptr<BackgroundCommand> command = held(state(), id);
  const std::uint64_t watcher = command->watch(std::move(changed));
  return CommandWatch([weak = std::weak_ptr<BackgroundCommand>(command), watcher] {
    if (const auto c = weak.lock()) c->unwatch(watcher);
  });
}

}  // namespace mayura
