#pragma once
// The transport as the command backend uses it: closed for good once the
// sandbox is released, scripts packed into as few commands as the transport
// takes, and data sent in chunks that fit.

#include <atomic>
#include <cstddef>
#include <memory>
#include <optional>
#include <stop_token>
#include <string>
#include <string_view>
#include <vector>

#include "mayura/command_backend.hpp"

namespace mayura::detail {

// Bytes of data one command carries at most, either way: a transport's
// standard input or answer holds 4/3 as much, as base64.
inline constexpr std::size_t kChunkBytes = 1 << 20;

// A piece of a script, and what it reads on standard input (if anything).
struct Fragment {
  std::string text;
  std::optional<std::string> stdin;
};

class CommandChannel {
 public:
  explicit CommandChannel(std::shared_ptr<CommandTransport> transport);

  // Every later run fails GONE. True the first time only.
  bool close() noexcept;
  // Neither closed nor answered GONE.
  bool usable() const noexcept;

  TransportResult run(const std::string& script, const std::optional<std::string>& stdin, std::stop_token cancellation);
  // Runs the fragments in order, as few commands as fit, and stops at the
  // first command that fails; its result (or the last one's) is returned.
  TransportResult run_all(const std::vector<Fragment>& fragments, std::stop_token cancellation);

  // Fragments that write `data` into `path` (made or emptied first), base64
  // on standard input or inside the command lines.
  std::vector<Fragment> upload(std::string_view path, std::string_view data) const;

  // Throws INTERNAL if a script will not fit one command.
  void check_fits(const std::string& script) const;
  bool fits(const std::string& script) const { return script.size() <= max_command_bytes_; }

 private:
  std::shared_ptr<CommandTransport> transport_;
  bool takes_stdin_;
  std::size_t max_command_bytes_;
  std::atomic<bool> closed_{false};
  std::atomic<bool> gone_{false};
};

// Base64 text from a sandbox, decoded; INTERNAL if it is not base64.
std::string decode_base64(std::string_view text);

}  // namespace mayura::detail
