#pragma once
// mayurad's operator settings: a JSON file (/etc/mayura/mayurad.json by
// default), checked whole at start; an error names the key.

#include <sys/types.h>

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
};

// The settings in `input` (a file's contents; `source` names it in errors).
// SandboxError(INVALID_CONFIG) naming the key that is wrong.
DaemonConfig parse_daemon_config(const std::string& input, const std::string& source);

// A tokens file: one client a line, "NAME TOKEN"; blank lines and lines
// starting with '#' are skipped. It must not be readable by group or others.
service::Tokens read_tokens(const std::string& path);

}  // namespace mayura::tools
