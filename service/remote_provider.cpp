// The remote provider: each call of the contract is one request to a
// mayurad; its statuses come back as the same reasons (sandbox_http_failure),
// with the daemon's message, which is the engine's own words.

#include <algorithm>
#include <atomic>
#include <boost/url/url.hpp>

#include "http_client.hpp"
#include "remote_attach.hpp"
#include "mayura/command_host.hpp"
#include "mayura/remote.hpp"
#include "wire.hpp"

namespace mayura {
namespace {

using service::HttpAnswer;
using service::HttpCall;
using service::json;
using http_verb = boost::beast::http::verb;

constexpr std::size_t kMaxMessageBytes = 1024;

std::string target(const std::string& path, std::initializer_list<std::pair<std::string, std::string>> params = {}) {
  boost::urls::url u;
  u.set_path(path);
  for (const auto& [k, v] : params) u.params().append({k, v});
  return std::string(u.buffer());
}

// The failure an answer stands for, in the daemon's words when it gave a
// body of its own shape with the reason its status means.
SandboxError failure_of(const HttpAnswer& answer) {
  SandboxError generic = sandbox_http_failure(static_cast<int>(answer.status));
  try {
    const json body = json::parse(answer.body);
    if (body.is_object() && body.contains("reason") && body.contains("message") && body["message"].is_string() &&
        body["reason"].is_string() &&
        service::reason_from_name(body["reason"].get<std::string>()) == generic.reason()) {
      return SandboxError(generic.reason(),
                          "mayurad: " + body["message"].get<std::string>().substr(0, kMaxMessageBytes));
    }
  } catch (const std::exception&) {
  }
  return generic;
}

json parse_answer(const HttpAnswer& answer, const char* what) {
  json value = json::parse(answer.body, nullptr, false);
  if (value.is_discarded() || !value.is_object()) {
    throw SandboxError(Reason::INTERNAL, std::string("mayurad answered ") + what + " with malformed JSON");
  }
  return value;
}

// A daemon's answer broken in a way the shapes refuse is the daemon's fault,
// not the caller's input.
template <class Fn>
auto decoded(const char* what, Fn&& fn) -> decltype(fn()) {
  try {
    return fn();
  } catch (const SandboxError& e) {
    throw SandboxError(Reason::INTERNAL, std::string("mayurad's ") + what + " is malformed: " + e.what());
  } catch (const std::exception& e) {
    throw SandboxError(Reason::INTERNAL, std::string("mayurad's ") + what + " is malformed");
  }
}

struct Link {
  service::Endpoint endpoint;
  std::chrono::milliseconds timeout;

  static Link to(const RemoteOptions& options) {
    Link link{service::parse_endpoint(options.url), options.timeout};
    link.endpoint.token = options.token;
    link.endpoint.ca_file = options.ca_file;
    return link;
  }

  HttpAnswer call(http_verb method, std::string path, std::string body = {}, std::stop_token stop = {},
                  const char* content_type = "application/json", std::uint64_t max_answer = 0) const {
    HttpCall c;
    if (max_answer) c.max_answer_bytes = max_answer;
    c.method = method;
    c.target = std::move(path);
    c.body = std::move(body);
    if (!c.body.empty()) c.content_type = content_type;
    c.timeout = timeout;
    c.cancellation = std::move(stop);
    HttpAnswer a = service::http_call(endpoint, c);
    if (a.cancelled) throw SandboxError(Reason::CANCELLED, "the operation was cancelled");
    return a;
  }
};

// A line holds one chunk of output (at most 64 KiB, six times that as JSON
// escapes) or the result, which carries no output.
constexpr std::size_t kMaxStreamLine = std::size_t{4} << 20;

// A request whose answer is an exec's stream (an exec, a run): its output
// to the options' callbacks as it comes, then the result or the failure.
ExecResult streamed_exec(const Link& link, std::string target, std::string body, const ExecOptions& options) {
  HttpCall c;
  c.method = http_verb::post;
  c.target = std::move(target);
  c.body = std::move(body);
  c.content_type = "application/json";
  c.cancellation = options.cancellation;
  std::string pending;
  std::optional<ExecResult> result;
  std::optional<SandboxError> failed;
  // The result's output is what the stream carried (the daemon keeps none
  // of it), up to the caller's bound of each stream.
  const std::size_t limit = options.max_output_bytes.value_or(std::size_t{16} << 20);
  std::string kept_out, kept_err;
  bool clipped = false;
  auto keep = [&](std::string& kept, const std::string& data) {
    if (!options.keep_output) return;
    const std::size_t room = kept.size() < limit ? limit - kept.size() : 0;
    clipped = clipped || data.size() > room;
    kept.append(data, 0, std::min(room, data.size()));
  };
  auto line = [&](std::string_view text) {
    const json event = json::parse(text.begin(), text.end(), nullptr, false);
    if (event.is_discarded() || !event.is_object())
      throw SandboxError(Reason::INTERNAL, "a line of mayurad's exec stream is malformed");
    if (event.contains("stream")) {
      const std::string data = decoded("exec output", [&] { return service::bytes_from(event.at("data"), "data"); });
      const auto& stream = event["stream"];
      if (stream == "stdout") {
        keep(kept_out, data);
        if (options.on_stdout) options.on_stdout(data);
      } else if (stream == "stderr") {
        keep(kept_err, data);
        if (options.on_stderr) options.on_stderr(data);
      }
    } else if (event.contains("reason")) {
      const auto reason =
          event["reason"].is_string() ? service::reason_from_name(event["reason"].get<std::string>()) : std::nullopt;
      const std::string message =
          event.contains("message") && event["message"].is_string() ? event["message"].get<std::string>() : "";
      failed.emplace(reason.value_or(Reason::INTERNAL), "mayurad: " + message.substr(0, kMaxMessageBytes));
    } else {
      result = decoded("exec result", [&] { return service::exec_result_from(event); });
      // (a last line that carries output itself is taken as it is)
      if (!event.contains("stdout")) result->stdout = std::move(kept_out);
      if (!event.contains("stderr")) result->stderr = std::move(kept_err);
      result->truncated = result->truncated || clipped;
    }
  };
  c.on_chunk = [&](std::string_view piece) {
    if (pending.size() + piece.size() > kMaxStreamLine)
      throw SandboxError(Reason::INTERNAL, "a line of mayurad's exec stream is over 4 MiB");
    pending.append(piece);
    std::size_t start = 0;
    for (auto nl = pending.find('\n'); nl != std::string::npos; nl = pending.find('\n', start)) {
      line(std::string_view(pending).substr(start, nl - start));
      start = nl + 1;
    }
    pending.erase(0, start);
  };
  const HttpAnswer a = service::http_call(link.endpoint, c);
  if (a.cancelled) throw SandboxError(Reason::CANCELLED, "the operation was cancelled");
  if (a.status != 200) throw failure_of(a);
  if (failed) throw SandboxError(*failed);
  if (!result)
    throw SandboxError(Reason::INTERNAL,
                       "mayurad's exec stream ended before the command's result (mayurad stopped or restarted); the "
                       "command's end is unknown");
  return *result;
}

// The daemon holds a sandbox's background commands (mayura/command_host.hpp):
// each call is one request to its commands' routes, so a command outlives
// this client and any client of the sandbox comes back to it.
class RemoteSandbox final : public SandboxBackend, public CommandHost {
 public:
  RemoteSandbox(std::shared_ptr<const Link> link, std::string id, std::string workdir)
      : link_(std::move(link)), id_(std::move(id)), base_("/v1/sandboxes/" + id_), workdir_(std::move(workdir)) {}

  ExecResult exec(const std::vector<std::string>& argv, const ExecOptions& options) override {
    try {
      if (options.terminal || options.on_start) return attached_exec(argv, options);
      return streamed_exec(*link_, base_ + "/exec", service::dump(service::exec_request_json(argv, options)), options);
    } catch (const SandboxError& e) {
      if (e.reason() == Reason::GONE) ended_ = true;
      throw;
    }
  }

  std::string read_file(const std::string& path, const ReadOptions& options) override {
    std::string t = options.max_bytes
                        ? target(base_ + "/files", {{"path", path}, {"maxBytes", std::to_string(*options.max_bytes)}})
                        : target(base_ + "/files", {{"path", path}});
    // A read may be as large as the caller allows (its error body aside).
    const std::uint64_t most = options.max_bytes ? std::max<std::uint64_t>(*options.max_bytes, 1 << 20) : 0;
    HttpAnswer a = checked(link_->call(http_verb::get, t, {}, options.cancellation, "application/json", most));
    return std::move(a.body);
  }

  void write_file(const std::string& path, std::string_view data, const FileOptions& options) override {
    checked(link_->call(http_verb::put, target(base_ + "/files", {{"path", path}}), std::string(data),
                        options.cancellation, "application/octet-stream"));
  }

  std::vector<FileEntry> list(const std::string& path, const FileOptions& options) override {
    const HttpAnswer a =
        checked(link_->call(http_verb::get, target(base_ + "/list", {{"path", path}}), {}, options.cancellation));
    const json body = parse_answer(a, "a listing");
    return decoded("listing", [&] {
      std::vector<FileEntry> out;
      for (const auto& e : body.at("entries")) out.push_back(service::file_entry_from(e));
      return out;
    });
  }

  void remove(const std::string& path, const FileOptions& options) override {
    checked(link_->call(http_verb::delete_, target(base_ + "/files", {{"path", path}}), {}, options.cancellation));
  }

  CommandInfo start(const std::vector<std::string>& argv, const StartOptions& options) override {
    const HttpAnswer a = checked(
        link_->call(http_verb::post, base_ + "/commands", service::dump(service::start_request_json(argv, options))));
    return command_from(a);
  }
  std::vector<CommandInfo> commands() override {
    const json body = parse_answer(checked(link_->call(http_verb::get, base_ + "/commands")), "the commands");
    return decoded("command list", [&] {
      std::vector<CommandInfo> list;
      for (const json& c : body.at("commands")) list.push_back(service::command_info_from(c));
      return list;
    });
  }
  CommandInfo command(const std::string& id) override {
    return command_from(checked(link_->call(http_verb::get, command_path(id))));
  }
  OutputSlice output(const std::string& id, OutputStream stream, std::uint64_t from, std::size_t max_bytes) override {
    const std::string t =
        target(command_path(id) + "/output", {{"stream", stream == OutputStream::out ? "stdout" : "stderr"},
                                              {"from", std::to_string(from)},
                                              {"maxBytes", std::to_string(max_bytes)}});
    const json body = parse_answer(checked(link_->call(http_verb::get, t)), "the output");
    return decoded("output", [&] { return service::output_slice_from(body); });
  }
  CommandInfo attach(const std::string& id, const AttachOptions& options) override {
    const service::RemoteAttachment a = service::attach_remote(link_->endpoint, command_path(id), options);
    if (a.refused) checked(HttpAnswer{a.refused, a.body, false});
    return a.command ? *a.command : command(id);  // at the timeout: as it is now
  }
  void write_input(const std::string& id, std::string data) override {
    service::CommandInput input;
    input.data = std::move(data);
    checked(
        link_->call(http_verb::post, command_path(id) + "/input", service::dump(service::command_input_json(input))));
  }
  void close_input(const std::string& id) override {
    service::CommandInput input;
    input.close = true;
    checked(
        link_->call(http_verb::post, command_path(id) + "/input", service::dump(service::command_input_json(input))));
  }
  void signal(const std::string& id, int signal) override {
    checked(link_->call(http_verb::post, command_path(id) + "/signal", service::dump(json{{"signal", signal}})));
  }
  void resize(const std::string& id, TerminalSize size) override {
    checked(
        link_->call(http_verb::post, command_path(id) + "/resize", service::dump(service::terminal_size_json(size))));
  }
  CommandInfo stop(const std::string& id) override {
    return command_from(checked(link_->call(http_verb::post, command_path(id) + "/stop", "")));
  }
  CommandInfo wait(const std::string& id, std::int64_t timeout_ms) override {
    // Well within the link's own bound on a request.
    const std::int64_t most = std::max<std::int64_t>(1, link_->timeout.count() / 2);
    const std::string t =
        target(command_path(id) + "/wait", {{"timeoutMs", std::to_string(std::min(timeout_ms, most))}});
    return command_from(checked(link_->call(http_verb::get, t)));
  }

  std::string url(int port) override {
    const HttpAnswer a = checked(link_->call(http_verb::get, target(base_ + "/url", {{"port", std::to_string(port)}})));
    const json body = parse_answer(a, "a url");
    return decoded("url", [&] { return body.at("url").get<std::string>(); });
  }

  std::string workdir() const override { return workdir_; }

  void set_network(const Network& network) override {
    checked(link_->call(http_verb::put, base_ + "/network",
                        service::dump(json{{"network", service::network_json(network)}})));
  }

  void pause() override { checked(link_->call(http_verb::post, base_ + "/pause", "")); }
  void resume() override { checked(link_->call(http_verb::post, base_ + "/resume", "")); }

  // The daemon's own names: its client's, whatever the owner here.
  Snapshot snapshot(const std::string&, const std::string& name) override {
    const HttpAnswer a =
        checked(link_->call(http_verb::post, base_ + "/snapshot", service::dump(json{{"name", name}})));
    const json body = parse_answer(a, "a snapshot");
    return decoded("snapshot", [&] { return service::snapshot_from(body); });
  }

  std::vector<std::unique_ptr<SandboxBackend>> fork(int count, const CreateOptions& options) override {
    const HttpAnswer a = checked(link_->call(
        http_verb::post, base_ + "/fork", service::dump(json{{"count", count}, {"lifetimeMs", options.lifetime_ms}})));
    const json body = parse_answer(a, "a fork");
    std::vector<std::unique_ptr<SandboxBackend>> made;
    try {
      decoded("forked sandboxes", [&] {
        for (const json& s : body.at("sandboxes")) {
          made.push_back(std::make_unique<RemoteSandbox>(link_, s.at("id").get<std::string>(),
                                                         service::bytes_from(s.at("workdir"), "workdir")));
        }
        return 0;
      });
    } catch (...) {
      for (auto& m : made) m->release();
      throw;
    }
    return made;
  }

  void release() noexcept override {
    if (ended_.exchange(true)) return;
    try {
      link_->call(http_verb::delete_, base_);
    } catch (...) {
      // the daemon ends it at its lifetime, or is gone and took it along
    }
  }

  bool alive() const noexcept override { return !ended_; }

  // What the engine's backend answers: a screenshot's PNG, the cursor as
  // "X Y", nothing for input. The limits layer here checks the PNG and the
  // point against the screen, as it does an engine's.
  std::string desktop(const DesktopAction& action, std::stop_token cancellation) override {
    const std::string base = base_ + "/desktop/";
    switch (action.kind) {
      case DesktopAction::Kind::screenshot: {
        std::string t = target(base + "screenshot");
        if (const auto& r = action.region) {
          t = target(base + "screenshot", {{"x", std::to_string(r->x)},
                                           {"y", std::to_string(r->y)},
                                           {"width", std::to_string(r->width)},
                                           {"height", std::to_string(r->height)}});
        }
        HttpAnswer a = checked(link_->call(http_verb::get, t, {}, std::move(cancellation)));
        return std::move(a.body);
      }
      case DesktopAction::Kind::cursor: {
        const HttpAnswer a = checked(link_->call(http_verb::get, base + "cursor", {}, std::move(cancellation)));
        const json body = parse_answer(a, "the cursor");
        // Whole numbers only, as they came: the limits layer checks them
        // against the screen, and must not see a value narrowed to fit.
        const auto coordinate = [&](const char* key) {
          const json& v = body.at(key);
          if (!v.is_number_integer()) throw SandboxError(Reason::INTERNAL, "not a whole number");
          return std::to_string(v.get<std::int64_t>());
        };
        return decoded("cursor", [&] { return coordinate("x") + " " + coordinate("y") + "\n"; });
      }
      default:
        checked(link_->call(http_verb::post, base + "input", service::dump(service::desktop_input_json(action)),
                            std::move(cancellation)));
        return {};
    }
  }

 private:
  // An exec with a terminal or its input streamed: a command of the
  // daemon's, attached to until it ends, the caller's input and controls
  // going to it over the attachment. It is stopped if the exec fails or is
  // cancelled before its end.
  ExecResult attached_exec(const std::vector<std::string>& argv, const ExecOptions& options) {
    StartOptions start_options;
    start_options.cwd = options.cwd;
    start_options.env = options.env;
    start_options.timeout_ms = options.timeout_ms;
    start_options.stdin = options.stdin;
    start_options.terminal = options.terminal;
    // What the daemon holds for a client that falls behind.
    start_options.keep_bytes = kAttachedKeepBytes;
    const auto began = std::chrono::steady_clock::now();
    const CommandInfo started = start(argv, start_options);
    auto sender = std::make_shared<service::WsSender>();
    // Without on_start, the input ends after `stdin`, as an exec's does.
    if (!options.on_start) sender->send(service::dump(service::attach_control_json({})), false);
    const std::size_t limit = options.max_output_bytes.value_or(std::size_t{16} << 20);
    std::string kept[2];
    bool clipped = false;
    auto keep = [&](int stream, std::string_view data) {
      if (!options.keep_output) return;
      const std::size_t room = kept[stream].size() < limit ? limit - kept[stream].size() : 0;
      clipped = clipped || data.size() > room;
      kept[stream].append(data.substr(0, std::min(room, data.size())));
    };
    AttachOptions attach;
    attach.cancellation = options.cancellation;
    attach.on_stdout = [&](std::string_view c) {
      keep(0, c);
      if (options.on_stdout) options.on_stdout(c);
    };
    attach.on_stderr = [&](std::string_view c) {
      keep(1, c);
      if (options.on_stderr) options.on_stderr(c);
    };
    attach.on_dropped = [&](OutputStream, std::uint64_t) { clipped = true; };
    service::RemoteAttachment a;
    try {
      if (options.on_start) options.on_start(std::make_shared<AttachedControl>(sender));
      a = service::attach_remote(link_->endpoint, command_path(started.id), attach, sender);
      if (a.refused) checked(HttpAnswer{a.refused, a.body, false});
      if (!a.command) throw SandboxError(Reason::INTERNAL, "mayurad ended the exec's attachment before its end");
    } catch (...) {
      stop_quietly(started.id);
      throw;
    }
    const CommandInfo& info = *a.command;
    ExecResult r;
    r.stdout = std::move(kept[0]);
    r.stderr = std::move(kept[1]);
    r.truncated = clipped;
    r.duration_ms =
        std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - began).count();
    switch (info.state) {
      case CommandState::exited: r.exit_code = info.exit_code; break;
      case CommandState::timed_out: r.timed_out = true; break;
      case CommandState::stopped: throw SandboxError(Reason::CANCELLED, "the command was stopped");
      case CommandState::failed: throw SandboxError(Reason::INTERNAL, "mayurad: " + info.error);
      case CommandState::running: throw SandboxError(Reason::INTERNAL, "mayurad ended the exec's attachment early");
    }
    return r;
  }

  void stop_quietly(const std::string& id) noexcept {
    try {
      link_->call(http_verb::post, command_path(id) + "/stop", "");
    } catch (...) {
      // the daemon is gone, or the sandbox: the command went with it
    }
  }

  // An attached exec's control: each call a message on its attachment.
  class AttachedControl final : public CommandControl {
   public:
    explicit AttachedControl(std::shared_ptr<service::WsSender> sender) : sender_(std::move(sender)) {}
    void write(std::string data) override {
      if (!data.empty() && !sender_->send(std::move(data), true)) {
        throw SandboxError(Reason::LIMIT_REACHED, "the command has not read " +
                                                      std::to_string(service::WsSender::kMaxQueuedBytes) +
                                                      " bytes of its input yet");
      }
    }
    void close_input() override { send({}); }
    void signal(int signal) override {
      service::AttachControl c;
      c.kind = service::AttachControl::Kind::signal;
      c.signal = signal;
      send(c);
    }
    void resize(TerminalSize size) override {
      service::AttachControl c;
      c.kind = service::AttachControl::Kind::resize;
      c.size = size;
      send(c);
    }

   private:
    void send(const service::AttachControl& c) { sender_->send(service::dump(service::attach_control_json(c)), false); }
    std::shared_ptr<service::WsSender> sender_;
  };

  static constexpr std::size_t kAttachedKeepBytes = std::size_t{1} << 20;  // any daemon takes it

  // (The id was checked by the Sandbox handle: a-z and 0-9.)
  std::string command_path(const std::string& id) const { return base_ + "/commands/" + id; }
  static CommandInfo command_from(const HttpAnswer& a) {
    const json body = parse_answer(a, "the command");
    return decoded("command", [&] { return service::command_info_from(body); });
  }
  void ended_if_gone(unsigned status) {
    if (status == 404 || status == 410) ended_ = true;
  }
  HttpAnswer checked(HttpAnswer a) {
    if (a.status >= 200 && a.status < 300) return a;
    ended_if_gone(a.status);
    throw failure_of(a);
  }

  std::shared_ptr<const Link> link_;
  std::string id_;
  std::string base_;
  std::string workdir_;
  std::atomic<bool> ended_{false};
};

class RemoteProvider final : public SandboxProvider {
 public:
  explicit RemoteProvider(const RemoteOptions& options) : image_(options.image) {
    link_ = std::make_shared<const Link>(Link::to(options));
    const HttpAnswer a = link_->call(http_verb::get, "/v1/features");
    if (a.status != 200) throw failure_of(a);
    const json body = parse_answer(a, "its features");
    decoded("features", [&] {
      id_ = "remote:" + body.at("id").get<std::string>();
      features_ = service::features_from(body.at("features"));
      workdir_ = body.at("workdir").get<std::string>();
      max_lifetime_ms_ = body.at("maxLifetimeMs").get<std::int64_t>();
      return 0;
    });
  }

  std::string id() const override { return id_; }
  Features features() const override { return features_; }
  std::string workdir() const override { return workdir_; }
  std::int64_t max_lifetime_ms() const override { return max_lifetime_ms_; }

  std::vector<Snapshot> snapshots(const std::string&) override {
    return listed<Snapshot>("snapshots", "the snapshots", service::snapshot_from);
  }

  void delete_snapshot(const std::string&, const std::string& name) override { deleted("snapshot", name); }

  // The daemon's client's volumes, whatever the owner here (as snapshots).
  Volume create_volume(const std::string&, const std::string& name, std::int64_t size_mib) override {
    const HttpAnswer a =
        link_->call(http_verb::post, "/v1/volumes", service::dump(json{{"name", name}, {"sizeMiB", size_mib}}));
    if (a.status != 201) throw failure_of(a);
    const json body = parse_answer(a, "a volume");
    return decoded("volume", [&] { return service::volume_from(body); });
  }

  std::vector<Volume> volumes(const std::string&) override {
    return listed<Volume>("volumes", "the volumes", service::volume_from);
  }

  void delete_volume(const std::string&, const std::string& name) override { deleted("volume", name); }

  std::unique_ptr<SandboxBackend> create(const CreateOptions& options, std::stop_token cancellation) override {
    CreateOptions o = options;
    if (o.image.empty()) o.image = image_;
    if (cancellation.stop_requested()) throw SandboxError(Reason::CANCELLED, "the operation was cancelled");
    // A cancellation that comes while the daemon creates does not cut the
    // call short: the daemon would go on and make the sandbox, and only its
    // answer has the id to release it by. The sandbox is released then.
    const HttpAnswer a = link_->call(http_verb::post, "/v1/sandboxes", service::dump(service::create_json(o)));
    if (a.status != 201) throw failure_of(a);
    const json body = parse_answer(a, "a create");
    auto sandbox = decoded("created sandbox", [&] {
      return std::make_unique<RemoteSandbox>(link_, body.at("id").get<std::string>(),
                                             service::bytes_from(body.at("workdir"), "workdir"));
    });
    if (cancellation.stop_requested()) {
      sandbox->release();
      throw SandboxError(Reason::CANCELLED, "the operation was cancelled");
    }
    return sandbox;
  }

 private:
  // The daemon's client's snapshots or volumes (GET /v1/KIND: {KIND: [...]}).
  template <typename T>
  std::vector<T> listed(const char* kind, const char* what, T (*from)(const json&)) {
    const HttpAnswer a = link_->call(http_verb::get, std::string("/v1/") + kind);
    if (a.status != 200) throw failure_of(a);
    const json body = parse_answer(a, what);
    return decoded(kind, [&] {
      std::vector<T> out;
      for (const json& item : body.at(kind)) out.push_back(from(item));
      return out;
    });
  }

  // DELETE /v1/KINDs/NAME: 404 is a name the daemon's client has none of
  // (not a sandbox gone).
  void deleted(const std::string& kind, const std::string& name) {
    const HttpAnswer a = link_->call(http_verb::delete_, target("/v1/" + kind + "s/" + name));
    if (a.status == 404) throw SandboxError(Reason::NOT_FOUND, "there is no " + kind + " named " + name);
    if (a.status != 204) throw failure_of(a);
  }
  std::shared_ptr<const Link> link_;
  std::string image_;
  std::string id_;
  Features features_;
  std::string workdir_;
  std::int64_t max_lifetime_ms_ = 0;
};

}  // namespace

std::shared_ptr<SandboxProvider> remote_sandboxes(const RemoteOptions& options) {
  return std::make_shared<RemoteProvider>(options);
}

ExecResult remote_run(const RemoteOptions& options, CreateOptions create, const std::vector<std::string>& argv,
                      const ExecOptions& exec) {
  const Link link = Link::to(options);
  if (create.image.empty()) create.image = options.image;
  json sandbox = service::create_json(create);
  if (create.lifetime_ms == 0) sandbox.erase("lifetimeMs");  // the daemon's maximum
  const json request = {{"sandbox", std::move(sandbox)}, {"exec", service::exec_request_json(argv, exec)}};
  return streamed_exec(link, "/v1/run", service::dump(request), exec);
}

}  // namespace mayura
