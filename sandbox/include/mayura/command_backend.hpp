#pragma once
// The whole SandboxBackend contract over an API that only runs short
// commands and answers with their text (the seed's commandSandboxBackend).
//
// exec starts the command in the background, with MAYURA_TAG=<a random tag>
// in its environment and its output and exit status going to files under
// /tmp/.mayura-cmd-<tag>/, then polls those files until the status is there,
// passing new output on as it grows. A timeout or cancellation kills every
// process carrying the tag (sandbox_scripts::kill). Output and files move as
// base64 in chunks; with a transport that takes no standard input they
// travel inside the command line, each command at most max_command_bytes().
//
// The sandbox needs a POSIX sh and the tools of coreutils or BusyBox.
// Relative paths resolve against the directory the transport's commands
// start in, which should be the sandbox's workdir. url() fails UNSUPPORTED:
// a provider built on this has ports = false in its features, and stdin =
// true.

#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <stop_token>
#include <string>

#include "mayura/provider.hpp"

namespace mayura {

struct TransportOptions {
  std::optional<std::string> stdin;
  std::stop_token cancellation;
};

struct TransportResult {
  int exit_code = 0;
  std::string stdout;
};

class CommandTransport {
 public:
  virtual ~CommandTransport() = default;
  // Runs one short command (sh -c COMMAND) and gives its exit code and
  // stdout. Throws SandboxError on failure (GONE once the sandbox is not
  // there, CANCELLED when `cancellation` stopped it). Called from many
  // threads at once.
  virtual TransportResult run(const std::string& command, const TransportOptions& options) = 0;
  // false: data must travel inside the command line.
  virtual bool takes_stdin() const { return true; }
  virtual std::size_t max_command_bytes() const { return 64 * 1024; }
};

// `release` ends the sandbox; it is called once, by release() or when the
// backend goes, and must not throw. Every call after it fails GONE.
std::unique_ptr<SandboxBackend> command_sandbox_backend(std::string id, std::shared_ptr<CommandTransport> transport,
                                                        std::function<void()> release);

}  // namespace mayura
