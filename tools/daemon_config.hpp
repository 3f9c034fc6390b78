#pragma once
// mayurad's operator settings: a JSON file (/etc/mayura/mayurad.json by
// default), checked whole at start; an error names the key.

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>

#include "mayura/native.hpp"
#include "mayura/sandboxes.hpp"
#include "mayura/service/server.hpp"

namespace mayura::tools {

struct TlsListener {
  std::string address;
  unsigned short port = 0;
  std::string certificate;
  std::string key;
  std::string tokens_file;
};

struct DaemonConfig {
  std::string socket = "/run/mayura/mayurad.sock";
  mode_t socket_mode = 0660;
  std::string socket_group = "mayura";
  bool socket_group_given = false;
  NativeOptions native;
  SandboxesOptions limits;
  service::ServerOptions server;
  std::optional<TlsListener> tls;
  // Whether the config names the defaults a create gets (else the built-in
  // ones, lowered to the ceilings).
  bool default_cpus_given = false, default_memory_given = false, default_pids_given = false;
};

// What the defaults of the daemon's ceilings are made from.
struct HostShape {
  std::int64_t memory_mib = 0;  // MemTotal
  std::int64_t pid_max = 0;     // kernel.pid_max
  unsigned cpus = 1;
  static HostShape here();
};

// The settings in `input` (a file's contents; `source` names it in errors).
// SandboxError(INVALID_CONFIG) naming the key that is wrong. The ceilings an
// operator leaves unset are a safe share of `host`: the engine's whole at
// most three quarters of its memory and half its pids; one sandbox at most
// that, every cpu and 16 ports; one client's sandboxes together as many of
// the default size as it may have.
DaemonConfig parse_daemon_config(const std::string& input, const std::string& source,
                                 const HostShape& host = HostShape::here());

// A file the operator gives the daemon (its config, tokens, TLS key and
// certificate), read whole through one descriptor: a regular file under 1
// MiB, not a symlink, owned by root (or the daemon's own user), with none of
// the `forbidden` mode bits. SandboxError(INVALID_CONFIG) naming `what`,
// the path and, for a mode, `mode_hint`.
std::string read_operator_file(const std::string& what, const std::string& path, mode_t forbidden,
                               const std::string& mode_hint);

// A tokens file: one client a line, "NAME TOKEN"; blank lines and lines
// starting with '#' are skipped. It must not be readable by group or others.
service::Tokens read_tokens(const std::string& path);

}  // namespace mayura::tools
