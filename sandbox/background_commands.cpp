#include "background_commands.hpp"

#include <algorithm>
#include <chrono>

#include "mayura/errors.hpp"

namespace mayura::detail {
namespace {

std::int64_t now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace

void OutputRing::append(std::string_view chunk) {
  total_ += chunk.size();
  if (chunk.size() >= capacity_) {
    data_.assign(chunk.substr(chunk.size() - capacity_));
    skip_ = 0;
    return;
  }
  data_.append(chunk);
  if (held() > capacity_) skip_ = data_.size() - capacity_;
  if (2 * skip_ >= capacity_) {
    data_.erase(0, skip_);
    skip_ = 0;
  }
}

OutputSlice OutputRing::slice(std::uint64_t from, std::size_t max) const {
  OutputSlice s;
  const std::uint64_t oldest = total_ - held();
  s.offset = std::min(std::max(from, oldest), total_);
  s.dropped = from < oldest ? oldest - from : 0;
  const std::size_t start = skip_ + static_cast<std::size_t>(s.offset - oldest);
  s.data = data_.substr(start, std::min(max, data_.size() - start));
  s.next = s.offset + s.data.size();
  return s;
}

BackgroundCommand::BackgroundCommand(std::string id_, std::vector<std::string> argv_, bool terminal_,
                                     std::size_t keep_bytes_)
    : id(std::move(id_)),
      argv(std::move(argv_)),
      terminal(terminal_),
      keep_bytes(keep_bytes_),
      started_ms(now_ms()),
      out(keep_bytes),
      err(keep_bytes) {}

void BackgroundCommand::output(OutputStream stream, std::string_view chunk) {
  {
    std::lock_guard lock(mutex);
    (stream == OutputStream::out ? out : err).append(chunk);
    tell_watchers();
  }
  changed.notify_all();
}

void BackgroundCommand::started(std::shared_ptr<CommandControl> control) {
  {
    std::lock_guard lock(mutex);
    if (state == CommandState::running) control_ = std::move(control);
    tell_watchers();
  }
  changed.notify_all();
}

void BackgroundCommand::ended(CommandState state_, std::optional<int> exit_code_, std::string error_) {
  {
    std::lock_guard lock(mutex);
    state = state_;
    exit_code = exit_code_;
    error = std::move(error_);
    ended_ms = now_ms();
    control_.reset();
    tell_watchers();
  }
  changed.notify_all();
}

std::uint64_t BackgroundCommand::watch(std::function<void()> changed_) {
  std::lock_guard lock(mutex);
  const std::uint64_t id_ = next_watcher_++;
  watchers_.emplace(id_, std::move(changed_));
  return id_;
}

void BackgroundCommand::unwatch(std::uint64_t watcher) {
  std::lock_guard lock(mutex);
  watchers_.erase(watcher);
}

void BackgroundCommand::tell_watchers() const {
  for (const auto& [watcher, tell] : watchers_) tell();
}

CommandInfo BackgroundCommand::info() const {
  std::lock_guard lock(mutex);
  CommandInfo i;
  i.id = id;
  i.argv = argv;
  i.state = state;
  i.exit_code = exit_code;
  i.error = error;
  i.started_ms = started_ms;
  i.ended_ms = ended_ms;
  i.terminal = terminal;
  i.stdout_bytes = out.total();
  i.stderr_bytes = err.total();
  return i;
}

CommandInfo BackgroundCommand::await(std::chrono::steady_clock::time_point deadline, bool or_started) {
  {
    std::unique_lock lock(mutex);
    const auto done = [&] { return state != CommandState::running || (or_started && control_); };
    if (deadline == std::chrono::steady_clock::time_point::max()) changed.wait(lock, done);
    else changed.wait_until(lock, deadline, done);
  }
  return info();
}

std::shared_ptr<CommandControl> BackgroundCommand::control() const {
  std::lock_guard lock(mutex);
  return control_;
}

std::shared_ptr<BackgroundCommand> BackgroundCommands::add(const std::vector<std::string>& argv, bool terminal,
                                                           std::size_t keep_bytes) {
  std::lock_guard lock(mutex_);
  const std::size_t kept = 2 * keep_bytes;
  if (kept > kMaxKeptBytes) {
    throw SandboxError(Reason::LIMIT_REACHED, "keep_bytes of " + std::to_string(keep_bytes) +
                                                  " is over what a sandbox keeps of its commands' output (" +
                                                  std::to_string(kMaxKeptBytes) + " bytes for both streams)");
  }
  const auto room = [&] { return held_.size() < kMaxHeld && kept_bytes_ + kept <= kMaxKeptBytes; };
  // The oldest ended ones go first; running ones are never dropped.
  for (auto it = held_.begin(); !room() && it != held_.end();) {
    bool ended = false;
    {
      std::lock_guard command_lock((*it)->mutex);
      ended = (*it)->state != CommandState::running;
    }
    if (!ended) {
      ++it;
      continue;
    }
    kept_bytes_ -= 2 * (*it)->keep_bytes;
    it = held_.erase(it);
  }
  if (held_.size() >= kMaxHeld) {
    throw SandboxError(Reason::LIMIT_REACHED, "the sandbox already runs " + std::to_string(kMaxHeld) +
                                                  " background commands: stop or wait for one first");
  }
  if (!room()) {
    throw SandboxError(Reason::LIMIT_REACHED,
                       "the sandbox's running commands keep " + std::to_string(kept_bytes_) + " bytes of output, and " +
                           std::to_string(kMaxKeptBytes) +
                           " is the most: stop one, or start this one with a smaller keep_bytes");
  }
  auto command = std::make_shared<BackgroundCommand>("c" + std::to_string(next_++), argv, terminal, keep_bytes);
  held_.push_back(command);
  kept_bytes_ += kept;
  return command;
}

std::shared_ptr<BackgroundCommand> BackgroundCommands::find(const std::string& id) const {
  std::lock_guard lock(mutex_);
  for (const auto& c : held_) {
    if (c->id == id) return c;
  }
  throw SandboxError(Reason::NOT_FOUND, "the sandbox has no command " + id);
}

std::vector<CommandInfo> BackgroundCommands::list() const {
  std::lock_guard lock(mutex_);
  std::vector<CommandInfo> all;
  all.reserve(held_.size());
  for (const auto& c : held_) all.push_back(c->info());
  return all;
}

}  // namespace mayura::detail
