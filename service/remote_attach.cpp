#include "remote_attach.hpp"

#include <boost/url/url.hpp>

#include "mayura/errors.hpp"
#include "wire.hpp"

namespace mayura::service {
namespace {

constexpr std::size_t kMostFailureMessageBytes = 1024;  // of a failure's message kept

std::string attach_target(const std::string& path, const AttachOptions& options) {
  boost::urls::url u;
  u.set_path(path + "/attach");
  u.params().append({"stdoutFrom", std::to_string(options.stdout_from)});
  u.params().append({"stderrFrom", std::to_string(options.stderr_from)});
  u.params().append({"follow", options.follow ? "true" : "false"});
  return std::string(u.buffer());
}

// One message of the service's, to the options' callbacks or the outcome.
// A failure is kept: it stands only if the session ends without the
// command's info (a refused input does not end an exec).
void take_message(std::string_view data, bool binary, const AttachOptions& options, RemoteAttachment& out,
                  std::optional<SandboxError>& failure) {
  if (binary) {
    if (data.empty()) throw SandboxError(Reason::INTERNAL, "mayurad sent an empty output message");
    const auto tag = static_cast<unsigned char>(data.front());
    data.remove_prefix(1);
    if (tag == kAttachStdout && options.on_stdout) options.on_stdout(data);
    else if (tag == kAttachStderr && options.on_stderr) options.on_stderr(data);
    return;
  }
  const json event = json::parse(data.begin(), data.end(), nullptr, false);
  if (event.is_discarded() || !event.is_object())
    throw SandboxError(Reason::INTERNAL, "mayurad sent a malformed message on an attachment");
  try {
    if (const auto it = event.find("command"); it != event.end()) {
      out.command = command_info_from(*it);
    } else if (const auto d = event.find("dropped"); d != event.end()) {
      const auto stream = output_stream_from(d->at("stream").get<std::string>(), "stream");
      if (options.on_dropped) options.on_dropped(stream, d->at("bytes").get<std::uint64_t>());
    } else if (const auto r = event.find("reason"); r != event.end()) {
      const auto reason = reason_from_name(r->get<std::string>());
      const auto m = event.find("message");
      const std::string message = m != event.end() && m->is_string() ? m->get<std::string>() : "";
      failure.emplace(reason.value_or(Reason::INTERNAL), "mayurad: " + message.substr(0, kMostFailureMessageBytes));
    }
    // (a message a newer service sends and this client does not know is passed over)
  } catch (const SandboxError&) {
    throw;
  } catch (const std::exception&) {
    throw SandboxError(Reason::INTERNAL, "mayurad sent a malformed message on an attachment");
  }
}

}  // namespace

RemoteAttachment attach_remote(const Endpoint& endpoint, const std::string& path, const AttachOptions& options,
                               std::shared_ptr<WsSender> sender) {
  RemoteAttachment out;
  std::optional<SandboxError> failure;
  WsCall call;
  call.target = attach_target(path, options);
  if (options.timeout_ms) {
    call.deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(*options.timeout_ms);
  }
  call.cancellation = options.cancellation;
  call.sender = std::move(sender);
  call.on_message = [&](std::string_view data, bool binary) { take_message(data, binary, options, out, failure); };
  const WsOutcome outcome = ws_call(endpoint, call);
  if (outcome.refused) {
    out.refused = outcome.refused;
    out.body = outcome.body;
    return out;
  }
  if (outcome.cancelled) throw SandboxError(Reason::CANCELLED, "the operation was cancelled");
  if (out.command || outcome.timed_out) return out;
  if (failure) throw SandboxError(*failure);
  throw SandboxError(Reason::INTERNAL, "mayurad closed the attachment without the command's state");
}

}  // namespace mayura::service
