#pragma once
// A sandbox's background commands (Sandbox::start): each one's state, the
// newest bytes of its streams, and its control; the table of them that the
// sandbox's handle holds.

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <stop_token>
#include <string>
#include <string_view>
#include <vector>

#include "mayura/background.hpp"

namespace mayura::detail {

// The newest `capacity` bytes of a stream, and how many came in all.
class OutputRing {
 public:
  explicit OutputRing(std::size_t capacity) : capacity_(capacity) {}
  void append(std::string_view chunk);
  std::uint64_t total() const { return total_; }
  // What is held from `from` on, at most `max` bytes.
  OutputSlice slice(std::uint64_t from, std::size_t max) const;

 private:
  std::size_t held() const { return data_.size() - skip_; }
  std::size_t capacity_;
  // The held bytes are data_[skip_..]; the dead prefix is cut once it is
  // half as long as the capacity, so an append costs amortized O(its size)
  // (each byte moved at most twice) and the memory stays under one and a
  // half times the capacity.
  std::string data_;
  std::size_t skip_ = 0;
  std::uint64_t total_ = 0;
};

struct BackgroundCommand {
  BackgroundCommand(std::string id, std::vector<std::string> argv, bool terminal, std::size_t keep_bytes);

  // Each change (output, the start's control, the end) under the mutex, and
  // said on `changed`.
  void output(OutputStream stream, std::string_view chunk);
  void started(std::shared_ptr<CommandControl> control);
  void ended(CommandState state, std::optional<int> exit_code, std::string error);

  CommandInfo info() const;
  // The control, once it started and while it runs; none otherwise.
  std::shared_ptr<CommandControl> control() const;
  // Its info once it has ended (with `or_started`: or once its control
  // came), or at `deadline` (time_point::max(): none).
  CommandInfo await(std::chrono::steady_clock::time_point deadline, bool or_started = false);
  // Calls `changed` at each change from now on, under the mutex (so that
  // once unwatch() returns it is never called again): it must return at
  // once and call nothing of the command's. The id is unwatch()'s.
  std::uint64_t watch(std::function<void()> changed);
  void unwatch(std::uint64_t watcher);

  const std::string id;
  const std::vector<std::string> argv;
  const bool terminal;
  const std::size_t keep_bytes;
  const std::int64_t started_ms;
  std::stop_source stop;  // its exec's cancellation: Sandbox::stop

  mutable std::mutex mutex;
  std::condition_variable changed;
  OutputRing out;
  OutputRing err;
  CommandState state = CommandState::running;
  std::optional<int> exit_code;
  std::string error;
  std::optional<std::int64_t> ended_ms;
  std::shared_ptr<CommandControl> control_;

 private:
  void tell_watchers() const;  // under the mutex
  std::map<std::uint64_t, std::function<void()>> watchers_;
  std::uint64_t next_watcher_ = 1;
};

class BackgroundCommands {
 public:
  // At most this many held (running, or ended and not yet dropped for a
  // newer one), each holding up to twice its keep_bytes of each stream.
  static constexpr std::size_t kMaxHeld = 32;
  // And at most this many bytes kept, counting each command's keep_bytes
  // once for each of its two streams: what a sandbox's commands can make
  // its handle (a daemon, for every client) hold is bounded, however many
  // start with a large keep_bytes and flood. The default keep (1 MiB)
  // fits kMaxHeld commands exactly.
  static constexpr std::size_t kMaxKeptBytes = kMaxHeld * 2 * (std::size_t{1} << 20);

  // A new command's entry: the oldest ended ones make room, in number and
  // in bytes kept; LIMIT_REACHED when the running ones leave none.
  std::shared_ptr<BackgroundCommand> add(const std::vector<std::string>& argv, bool terminal, std::size_t keep_bytes);
  // NOT_FOUND for an id it does not hold.
  std::shared_ptr<BackgroundCommand> find(const std::string& id) const;
  // In the order they were started.
  std::vector<CommandInfo> list() const;

 private:
  mutable std::mutex mutex_;
  std::vector<std::shared_ptr<BackgroundCommand>> held_;
  std::size_t kept_bytes_ = 0;  // the held commands' keep_bytes, twice
  std::uint64_t next_ = 1;
};

}  // namespace mayura::detail
