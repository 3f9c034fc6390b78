#pragma once
// A provider whose sandboxes live in a mayurad, on this machine or another:
//
//   auto sandboxes = mayura::create_sandboxes(
//       mayura::remote_sandboxes({.url = "unix:///run/mayura/mayurad.sock"}), {.max_sandboxes = 4});
//
// The same contract as the native provider's (the conformance suite passes
// over it); the daemon's operator settings bound what a create may ask for.

#include <chrono>
#include <memory>
#include <string>

#include "mayura/provider.hpp"

namespace mayura {

struct RemoteOptions {
  // unix:///PATH (the default socket: unix:///run/mayura/mayurad.sock) or
  // https://HOST:PORT.
  std::string url = "unix:///run/mayura/mayurad.sock";
  // The bearer token a TLS daemon knows this client by.
  std::string token;
  // The CA that signed a TLS daemon's certificate (PEM); empty: the system's.
  std::string ca_file;
  // The image of a create that names none; empty: the daemon's default.
  std::string image;
  // How long a call other than an exec may take before it fails INTERNAL.
  std::chrono::milliseconds timeout{120'000};
};

// Asks the daemon what it offers (INTERNAL naming the address when nothing
// answers there, INVALID_CONFIG for a malformed address).
std::shared_ptr<SandboxProvider> remote_sandboxes(const RemoteOptions& options = {});

// One command in a sandbox the daemon makes for it and releases when it
// ends (POST /v1/run): one request where create, exec and release take
// three, and the release is off the caller's path. `create.lifetime_ms` 0:
// the daemon's maximum. Output streams to `exec`'s callbacks; a stop of its
// cancellation stops the command and fails CANCELLED. The daemon checks
// what the limits layer would, before it makes anything.
ExecResult remote_run(const RemoteOptions& options, CreateOptions create, const std::vector<std::string>& argv,
                      const ExecOptions& exec);

}  // namespace mayura
