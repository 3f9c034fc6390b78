#pragma once
// A provider whose sandboxes hold their background commands themselves
// (mayura/background.hpp). By default a Sandbox handle holds each command it
// starts, so its output and its end live as long as that handle's process.
// A backend that is also a CommandHost (the remote provider: mayurad holds
// them for every client) takes every background call instead, so a command
// outlives the client that started it and any client of the sandbox can
// come back to it. The Sandbox handle checks each call's input first, as for
// its own commands, then hands it over.

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "mayura/background.hpp"

namespace mayura {

class CommandHost {
 public:
  virtual ~CommandHost() = default;
  virtual CommandInfo start(const std::vector<std::string>& argv, const StartOptions& options) = 0;
  virtual std::vector<CommandInfo> commands() = 0;
  virtual CommandInfo command(const std::string& id) = 0;
  virtual OutputSlice output(const std::string& id, OutputStream stream, std::uint64_t from, std::size_t max_bytes) = 0;
  // As Sandbox::attach, streamed from the host as the command prints.
  virtual CommandInfo attach(const std::string& id, const AttachOptions& options) = 0;
  virtual void write_input(const std::string& id, std::string data) = 0;
  virtual void close_input(const std::string& id) = 0;
  virtual void signal(const std::string& id, int signal) = 0;
  virtual void resize(const std::string& id, TerminalSize size) = 0;
  virtual CommandInfo stop(const std::string& id) = 0;
  // At most `timeout_ms` (positive); the command's info then, ended or not.
  virtual CommandInfo wait(const std::string& id, std::int64_t timeout_ms) = 0;
};

}  // namespace mayura
