#pragma once
// The JSON shapes of the service's requests and answers, shared by the
// server and the remote provider so that the two can never disagree. Keys
// are the seed's (camelCase). Every parser refuses a key it does not know,
// a value of the wrong type or range, with SandboxError(INVALID_INPUT)
// naming the key.
//
// Bytes: a string the contract treats as bytes (argv, env values, stdin,
// output, file names) is a JSON string when it is valid UTF-8, else
// {"base64": "..."}; both forms are accepted wherever bytes are.

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "mayura/background.hpp"
#include "mayura/errors.hpp"
#include "mayura/types.hpp"

namespace mayura::service {

using nlohmann::json;

bool valid_utf8(std::string_view s) noexcept;
// Bytes as JSON: a string when they are UTF-8 that escapes to at most
// twice their size, else {"base64": ...}.
json bytes_json(std::string_view bytes);
std::string bytes_from(const json& value, std::string_view key);

// Parses a request body: at most `max_depth` levels, an object. Malformed
// JSON is INVALID_INPUT.
json parse_body(std::string_view body, std::string_view what);
// Serialises without ever throwing (invalid UTF-8 cannot reach it: bytes go
// through bytes_json).
std::string dump(const json& value);

json network_json(const Network& network);
Network network_from(const json& value);

json features_json(const Features& features);
Features features_from(const json& value);
// A snapshot: {"name", "diskMiB", "storedBytes", "createdAt"}.
json snapshot_json(const Snapshot& snapshot);
Snapshot snapshot_from(const json& value);
// A volume: {"name", "sizeMiB", "createdAt", "inUse"}.
json volume_json(const Volume& volume);
Volume volume_from(const json& value);

// A create; its volumes are [{"name", "path", "readOnly"}].
json create_json(const CreateOptions& options);
CreateOptions create_from(const json& value);

// The exec request: argv and the options that cross the wire (no callbacks,
// no stop token).
struct ExecRequest {
  std::vector<std::string> argv;
  ExecOptions options;
};
json exec_request_json(const std::vector<std::string>& argv, const ExecOptions& options);
ExecRequest exec_request_from(const json& value);

json exec_result_json(const ExecResult& result);
ExecResult exec_result_from(const json& value);

json file_entry_json(const FileEntry& entry);
FileEntry file_entry_from(const json& value);

// A desktop's size, as a create and a sandbox's description carry it.
json desktop_size_json(const DesktopSize& size);
// A desktop input action (move, click, drag, scroll, type, key) as the body
// of POST /v1/sandboxes/{id}/desktop/input; a screenshot or the cursor is a
// GET of its own.
json desktop_input_json(const DesktopAction& action);
DesktopAction desktop_input_from(const json& value);

// Background commands (/v1/sandboxes/{id}/commands). A start: argv and
// the options that cross the wire; a command's description; what is held of
// one stream from an offset; a terminal's size ({"rows", "columns"}); what
// an input request carries ({"data"?, "close"?}).
struct StartRequest {
  std::vector<std::string> argv;
  StartOptions options;
};
json start_request_json(const std::vector<std::string>& argv, const StartOptions& options);
StartRequest start_request_from(const json& value);
json command_info_json(const CommandInfo& info);
CommandInfo command_info_from(const json& value);
json output_slice_json(const OutputSlice& slice);
OutputSlice output_slice_from(const json& value);
json terminal_size_json(const TerminalSize& size);
TerminalSize terminal_size_from(const json& value);
struct CommandInput {
  std::optional<std::string> data;
  bool close = false;
};
json command_input_json(const CommandInput& input);
CommandInput command_input_from(const json& value);
// "stdout" or "stderr"; else INVALID_INPUT naming `key`.
OutputStream output_stream_from(std::string_view name, std::string_view key);

// A command's attachment (GET .../commands/{command}/attach, a WebSocket).
// The service sends each piece of output as a binary message, its first
// byte the stream (kAttachStdout, kAttachStderr), and events as text: a gap
// ({"dropped": {"stream", "bytes"}}), a failure ({"reason", "message"}),
// and last, before it closes, the command ({"command": its info}: ended,
// or as it is when an attachment without follow has caught up). A client
// sends input as binary messages and steers the command with text ones,
// each one of AttachControl's.
constexpr unsigned char kAttachStdout = 1;
constexpr unsigned char kAttachStderr = 2;
struct AttachControl {
  enum class Kind { close_input, signal, resize, stop } kind = Kind::close_input;
  int signal = 0;  // 1 to 64
  TerminalSize size;
};
// {"closeInput": true}, {"signal": 1 to 64}, {"resize": {"rows", "columns"}}
// or {"stop": true}: one key each.
json attach_control_json(const AttachControl& control);
AttachControl attach_control_from(const json& value);
json dropped_event_json(OutputStream stream, std::uint64_t bytes);

json error_json(Reason reason, std::string_view message);
// The reason named in an error body, if it is one.
std::optional<Reason> reason_from_name(std::string_view name) noexcept;

}  // namespace mayura::service
