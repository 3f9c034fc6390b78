#pragma once
// The remote provider's side of a command's attachment (GET .../attach, a
// WebSocket: wire.hpp says what crosses it): the output to the options'
// callbacks as it comes, and the caller's input and controls the other way.

#include <memory>
#include <optional>
#include <string>

#include "mayura/background.hpp"
#include "ws_call.hpp"

namespace mayura::service {

struct RemoteAttachment {
  std::optional<CommandInfo> command;  // the service's last word: none at the options' timeout
  unsigned refused = 0;                // the upgrade's refusal: its status, and its body
  std::string body;
};

// Attaches to the command at `path` (/v1/sandboxes/ID/commands/CID) from the
// options' offsets. What `sender` sends goes to the command (input as
// binary messages, attach_control_json as text). CANCELLED at the options'
// cancellation; a failure the service ended the session with as its own
// reason; INTERNAL when the session broke first.
RemoteAttachment attach_remote(const Endpoint& endpoint, const std::string& path, const AttachOptions& options,
                               std::shared_ptr<WsSender> sender = nullptr);

}  // namespace mayura::service
