#pragma once
// Commands left running in a sandbox (Sandbox::start): an agent starts a
// server, a watcher or a REPL, and in a later step reads what it printed
// meanwhile, types into it, signals it, or stops it with everything it
// started. What a command prints is held by the sandbox's handle, the newest
// bytes of each stream up to a bound, counted from the command's start: an
// offset names a byte for as long as it is held, and a reader that comes back
// later learns how many it missed.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <stop_token>
#include <string>
#include <utility>
#include <vector>

#include "mayura/types.hpp"

namespace mayura {

struct StartOptions {
  std::string cwd;                         // as ExecOptions::cwd
  std::map<std::string, std::string> env;  // added to the sandbox's env
  std::optional<std::int64_t> timeout_ms;  // none: until the sandbox ends
  std::optional<std::string> stdin;        // written first; the input stays open
  std::optional<TerminalSize> terminal;    // on a terminal of its own (ExecOptions::terminal)
  // The newest bytes held of each stream: 1 KiB up to the sandboxes'
  // max_output_bytes. Older ones are dropped, and counted.
  std::size_t keep_bytes = std::size_t{1} << 20;
};

enum class CommandState {
  running,
  exited,     // by itself: exit_code says how
  timed_out,  // its timeout_ms passed, and it was stopped with all it started
  stopped,    // by Sandbox::stop, with all it started
  failed,     // it could not run on, or its sandbox ended: `error` says which
};

struct CommandInfo {
  std::string id;  // the sandbox's own: c1, c2, ...
  std::vector<std::string> argv;
  CommandState state = CommandState::running;
  std::optional<int> exit_code;  // once exited (128 + a signal's number for one that killed it)
  std::string error;             // a failed one's reason
  std::int64_t started_ms = 0;   // since the epoch
  std::optional<std::int64_t> ended_ms;
  bool terminal = false;  // its output is one stream: stdout
  // All it printed so far on each stream: the offset its next byte will have.
  std::uint64_t stdout_bytes = 0;
  std::uint64_t stderr_bytes = 0;
};

// What is held of one stream from an offset on.
struct OutputSlice {
  std::uint64_t offset = 0;   // where `data` starts: the one asked for, or the oldest still held
  std::uint64_t dropped = 0;  // bytes from the asked offset on that are no longer held
  std::string data;
  std::uint64_t next = 0;  // offset + data.size(): where to read on from
};

struct AttachOptions {
  // Where to start in each stream (0: the oldest byte held; an offset past
  // what was printed: only what comes from that byte on).
  std::uint64_t stdout_from = 0;
  std::uint64_t stderr_from = 0;
  // What is held from there first, then each chunk as the command prints it,
  // on the attaching thread. A gap (bytes dropped before they were read)
  // comes as on_dropped(stream, count) where it is.
  OutputCallback on_stdout;
  OutputCallback on_stderr;
  std::function<void(OutputStream, std::uint64_t)> on_dropped;
  bool follow = true;                      // false: only what is held now
  std::optional<std::int64_t> timeout_ms;  // of the attachment, not the command
  std::stop_token cancellation;            // ends the attachment, not the command
};

// A watch on one command (Sandbox::watch), until it is destroyed or reset:
// from then on its callback is never called again.
class CommandWatch {
 public:
  CommandWatch() = default;
  explicit CommandWatch(std::function<void()> end) : end_(std::move(end)) {}
  CommandWatch(CommandWatch&& other) noexcept : end_(std::exchange(other.end_, nullptr)) {}
  CommandWatch& operator=(CommandWatch&& other) noexcept {
    if (this != &other) {
      reset();
      end_ = std::exchange(other.end_, nullptr);
    }
    return *this;
  }
  CommandWatch(const CommandWatch&) = delete;
  CommandWatch& operator=(const CommandWatch&) = delete;
  ~CommandWatch() { reset(); }
  void reset() noexcept {
    if (auto end = std::exchange(end_, nullptr)) end();
  }

 private:
  std::function<void()> end_;
};

}  // namespace mayura
