#include "routes.hpp"

#include <chrono>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "route_table.hpp"
#include "mayura/validate.hpp"
#include "status.hpp"

namespace mayura::service {
namespace {

namespace http = boost::beast::http;

// An id this client has no sandbox of: 404, as if it never was.
struct UnknownSandbox {
  std::string id;
};

const std::string& param(const Target& t, const std::string& name) {
  const auto it = t.params.find(name);
  if (it == t.params.end()) throw SandboxError(Reason::INVALID_INPUT, "the query needs " + name + "=...");
  return it->second;
}

std::int64_t number_param(const Target& t, const std::string& name, std::int64_t min, std::int64_t max) {
  const std::string& text = param(t, name);
  std::int64_t n = 0;
  if (text.empty() || text.size() > 18 || text.find_first_not_of("0123456789") != std::string::npos) {
    throw SandboxError(Reason::INVALID_INPUT, name + " must be a number");
  }
  n = std::stoll(text);
  if (n < min || n > max) throw SandboxError(Reason::INVALID_INPUT, name + " is out of range");
  return n;
}

// The longest a command's wait holds a request (GET .../wait).
constexpr std::int64_t kMostWaitMs = 60'000;

Reply wrong_method() { return error_reply(405, Reason::INVALID_INPUT, "the resource does not take that method"); }

Reply json_reply(unsigned status, const json& body) { return {status, "application/json", dump(body)}; }
Reply no_content() { return {204, "", ""}; }

json labels_json(const std::map<std::string, std::string>& labels) {
  json out = json::object();
  for (const auto& [k, v] : labels) out[k] = bytes_json(v);
  return out;
}

json sandbox_json(const Owned& o) {
  json j = {{"id", o.sandbox.id()},
            {"labels", labels_json(o.sandbox.labels())},
            {"features", features_json(o.sandbox.features())},
            {"workdir", bytes_json(o.sandbox.workdir())},
            {"owner", o.owner},
            {"createdAt", o.created_at_ms},
            {"expiresAt", o.expires_at_ms},
            {"paused", o.sandbox.paused()}};
  if (const auto size = o.sandbox.desktop_size()) j["desktop"] = desktop_size_json(*size);
  return j;
}

// The desktop: a screenshot (a PNG; a region with x, y, width and height),
// the cursor, one input action.
Reply desktop_reply(Resource resource, const Target& t, const std::string& body, const Sandbox& s) {
  if (resource == Resource::desktop_input) {
    const DesktopAction a = desktop_input_from(parse_body(body, "the desktop input"));
    using Kind = DesktopAction::Kind;
    const Point at = a.points.empty() ? Point{} : a.points.front();
    switch (a.kind) {
      case Kind::move: s.move(at); break;
      case Kind::click: s.click(at, a.button, a.count); break;
      case Kind::drag: s.drag(a.points); break;
      case Kind::scroll: s.scroll(at, a.direction, a.amount); break;
      case Kind::type: s.type(a.text); break;
      case Kind::key: s.key(a.text); break;
      default: throw SandboxError(Reason::INVALID_INPUT, "the desktop input: not an input action");
    }
    return no_content();
  }
  if (resource == Resource::cursor) {
    const Point p = s.cursor_position();
    return json_reply(200, {{"x", p.x}, {"y", p.y}});
  }
  ScreenshotOptions o;
  if (!t.params.empty()) {
    constexpr std::int64_t kMax = 1 << 20;
    o.region = Region{static_cast<int>(number_param(t, "x", 0, kMax)), static_cast<int>(number_param(t, "y", 0, kMax)),
                      static_cast<int>(number_param(t, "width", 0, kMax)),
                      static_cast<int>(number_param(t, "height", 0, kMax))};
  }
  return {200, "image/png", s.screenshot(o)};
}

// A background command of the client's sandbox, on the handle the service
// holds: the command, its output and its end live in mayurad, whichever
// connection asks (and after the one that started it has gone).
Reply command_reply(const RouteMatch& m, const std::string& body, const Sandbox& s) {
  const Target& t = m.target;
  const auto optional_number = [&t](const std::string& name, std::int64_t max, std::int64_t otherwise) {
    return t.params.count(name) ? number_param(t, name, 0, max) : otherwise;
  };
  switch (m.route->resource) {
    case Resource::commands: {
      json list = json::array();
      for (const CommandInfo& c : s.commands()) list.push_back(command_info_json(c));
      return json_reply(200, {{"commands", list}});
    }
    case Resource::start_command: {
      const StartRequest r = start_request_from(parse_body(body, "the start request"));
      return json_reply(201, command_info_json(s.start(r.argv, r.options)));
    }
    case Resource::command_output: {
      const auto stream =
          t.params.count("stream") ? output_stream_from(t.params.at("stream"), "stream") : OutputStream::out;
      const auto from = optional_number("from", std::numeric_limits<std::int64_t>::max(), 0);
      const auto most = optional_number("maxBytes", std::int64_t{1} << 40, std::int64_t{1} << 20);
      return json_reply(200, output_slice_json(s.output(m.command, stream, static_cast<std::uint64_t>(from),
                                                        static_cast<std::size_t>(most))));
    }
    case Resource::command_input: {
      CommandInput input = command_input_from(parse_body(body, "the input request"));
      if (input.data) s.write_input(m.command, std::move(*input.data));
      if (input.close) s.close_input(m.command);
      return no_content();
    }
    case Resource::command_signal: {
      const json request = parse_body(body, "the signal request");
      if (!request.is_object() || request.size() != 1 || !request.contains("signal") ||
          !request["signal"].is_number_integer()) {
        throw SandboxError(Reason::INVALID_INPUT, "the signal request: must be {\"signal\": 1 to 64}");
      }
      const auto n = request["signal"].get<std::int64_t>();
      s.signal(m.command, n < 0 || n > 1024 ? 0 : static_cast<int>(n));  // the contract names the range
      return no_content();
    }
    case Resource::command_resize:
      s.resize(m.command, terminal_size_from(parse_body(body, "the resize request")));
      return no_content();
    case Resource::command_stop: return json_reply(200, command_info_json(s.stop(m.command)));
    default: return json_reply(200, command_info_json(s.command(m.command)));
  }
}

// {"name": "..."}: the name of the snapshot to take.
std::string snapshot_name(const json& request) {
  if (!request.is_object() || request.size() != 1 || !request.contains("name") || !request["name"].is_string()) {
    throw SandboxError(Reason::INVALID_INPUT, "the snapshot request: must be {\"name\": \"...\"}");
  }
  return request["name"].get<std::string>();
}

// {"count": N, "lifetimeMs": ms}: how many, and for how long (none: as
// long as the original was made for).
std::pair<int, std::int64_t> fork_request(const json& request, const Owned& original) {
  if (!request.is_object()) throw SandboxError(Reason::INVALID_INPUT, "the fork request: must be an object");
  int count = 0;
  std::int64_t lifetime = original.expires_at_ms - original.created_at_ms;
  for (const auto& [key, value] : request.items()) {
    if (key == "count" && value.is_number_integer() && value.get<std::int64_t>() >= 1 &&
        value.get<std::int64_t>() <= 64) {
      count = value.get<int>();
    } else if (key == "lifetimeMs" && value.is_number_integer() && value.get<std::int64_t>() >= 1) {
      lifetime = value.get<std::int64_t>();
    } else {
      throw SandboxError(Reason::INVALID_INPUT, "the fork request: \"" + key.substr(0, 64) +
                                                    "\" must be count (1 to 64) or lifetimeMs (a positive integer)");
    }
  }
  if (count == 0) throw SandboxError(Reason::INVALID_INPUT, "the fork request: count (1 to 64) is required");
  return {count, lifetime};
}

// {"name": "...", "sizeMiB": n}: the volume to make, checked as the
// contract would before anything is counted.
std::pair<std::string, std::int64_t> volume_request(const json& request) {
  const auto size_fits = [](const json& v) {
    return v.is_number_integer() && v.get<std::int64_t>() >= 16 && v.get<std::int64_t>() <= (std::int64_t{1} << 24);
  };
  if (!request.is_object() || request.size() != 2 || !request.contains("name") || !request["name"].is_string() ||
      !request.contains("sizeMiB") || !size_fits(request["sizeMiB"])) {
    throw SandboxError(Reason::INVALID_INPUT,
                       "the volume request: must be {\"name\": \"...\", \"sizeMiB\": 16 to 2^24}");
  }
  std::string name = request["name"].get<std::string>();
  check_volume_name(name);
  return {std::move(name), request["sizeMiB"].get<std::int64_t>()};
}

}  // namespace

Reply error_reply(unsigned status, Reason reason, std::string_view message) {
  return json_reply(status, error_json(reason, message));
}

Reply error_reply(Reason reason, std::string_view message) {
  return error_reply(static_cast<unsigned>(status_for(reason)), reason, message);
}

namespace {

// DELETE of a snapshot or a volume of the client's: a name it has none of
// is 404, as an id is, as if it never was.
Reply deleted(std::string_view kind, const std::string& name, const std::function<void()>& remove) {
  try {
    remove();
  } catch (const SandboxError& e) {
    if (e.reason() != Reason::NOT_FOUND) throw;
    return error_reply(404, Reason::NOT_FOUND, "there is no " + std::string(kind) + " " + name.substr(0, 64));
  }
  return no_content();
}

}  // namespace

std::size_t Routes::body_limit(const RouteMatch& match) const {
  return match.route && match.route->file_body ? max_file_bytes_ : max_json_bytes_;
}

Sandbox Routes::owned(const std::string& id, const Client& client) {
  auto o = registry_.find(id, client);
  if (!o) throw UnknownSandbox{id};
  return o->sandbox;
}

std::pair<Sandbox, ExecRequest> Routes::exec_target(const std::string& id, const std::string& body,
                                                    const Client& client) {
  auto o = registry_.find(id, client);
  if (!o) throw SandboxError(Reason::GONE, "there is no sandbox " + id.substr(0, 64));
  return {o->sandbox, exec_request_from(parse_body(body, "the exec request"))};
}

Owned Routes::create_counting_runs(const CreateOptions& options, const Client& client) {
  // Bounded: a release that hangs must not hold a create for ever.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  for (;;) {
    std::uint64_t ended = 0;
    {
      std::lock_guard lock(runs_mutex_);
      ended = runs_ended_;
    }
    try {
      return registry_.create(sandboxes_, options, client, {});
    } catch (const SandboxError& e) {
      if (e.reason() != Reason::LIMIT_REACHED) throw;
      std::unique_lock lock(runs_mutex_);
      if (runs_ending_ == 0 && runs_ended_ == ended) throw;
      if (!runs_changed_.wait_until(lock, deadline, [&] { return runs_ended_ != ended; })) throw;
    }
  }
}

class Routes::MakingLease {
 public:
  // `held`: what `owner` has, not counting what is being made.
  MakingLease(Making& making, const std::string& owner, std::int64_t mib, std::int64_t held, std::int64_t most,
              const std::function<std::string(std::int64_t)>& refusal)
      : making_(making), owner_(owner), mib_(mib) {
    std::lock_guard lock(making_.mutex);
    const auto it = making_.mib.find(owner);
    const std::int64_t all = held + (it == making_.mib.end() ? 0 : it->second);
    if (all + mib > most) throw SandboxError(Reason::LIMIT_REACHED, refusal(all));
    making_.mib[owner] += mib;
  }
  MakingLease(const MakingLease&) = delete;
  MakingLease& operator=(const MakingLease&) = delete;
  ~MakingLease() {
    std::lock_guard lock(making_.mutex);
    if ((making_.mib[owner_] -= mib_) == 0) making_.mib.erase(owner_);
  }

 private:
  Making& making_;
  std::string owner_;
  std::int64_t mib_;
};

Snapshot Routes::take_snapshot(const Owned& o, const std::string& name) {
  const std::int64_t most = registry_.quota().snapshot_mib;
  if (most <= 0) return o.sandbox.snapshot(name);
  // The sandbox owner's: the snapshot is its, whoever asks (root may). What
  // its snapshots take now (one of the same name goes), and at worst the
  // whole disk for the new one.
  std::int64_t held = 0;
  for (const Snapshot& s : sandboxes_.snapshots(o.owner)) {
    if (s.name != name) held += (s.stored_bytes + (1 << 20) - 1) >> 20;
  }
  const MakingLease lease(snapshots_making_, o.owner, o.disk_mib, held, most, [&](std::int64_t all) {
    return "a snapshot of this sandbox's " + std::to_string(o.disk_mib) + " MiB disk with its owner's snapshots' " +
           std::to_string(all) + " MiB could pass the operator's ceiling of " + std::to_string(most) +
           " (mayurad's maxSnapshotMiBPerClient)";
  });
  return o.sandbox.snapshot(name);
}

Volume Routes::create_volume(const std::string& name, std::int64_t size_mib, const Client& client) {
  const std::int64_t most = registry_.quota().volume_mib;
  if (most <= 0) return sandboxes_.create_volume(name, size_mib, client.name);
  // What the client's volumes take (one of the same name is refused as
  // taken, not counted twice), with those being made.
  std::int64_t held = 0;
  for (const Volume& v : sandboxes_.volumes(client.name)) {
    if (v.name != name) held += v.size_mib;
  }
  const MakingLease lease(volumes_making_, client.name, size_mib, held, most, [&](std::int64_t all) {
    return "a volume of " + std::to_string(size_mib) + " MiB with this client's volumes' " + std::to_string(all) +
           " MiB is over the operator's ceiling of " + std::to_string(most) + " (mayurad's maxVolumeMiBPerClient)";
  });
  return sandboxes_.create_volume(name, size_mib, client.name);
}

Owned Routes::create(const json& request, const Client& client) {
  CreateOptions options = create_from(request);
  if (options.snapshot && !options.disk_mib) {
    // Counted as the disk it makes, against the client's disks.
    check_snapshot_name(*options.snapshot);
    for (const Snapshot& s : sandboxes_.snapshots(client.name)) {
      if (s.name == *options.snapshot) options.disk_mib = s.disk_mib;
    }
    if (!options.disk_mib) throw SandboxError(Reason::NOT_FOUND, "there is no snapshot named " + *options.snapshot);
  }
  if (!options.memory_mib && default_memory_mib_ > 0) options.memory_mib = default_memory_mib_;
  options.ports_owner = client.uid.value_or(0);
  options.tenant = client.name;  // every client the same share of a contended cpu
  // The service's own host is no client's: images by name only (the image
  // store, the image directory), never a host path.
  if (!options.image.empty() && (options.image.front() == '/' || options.image.find("..") != std::string::npos)) {
    throw SandboxError(Reason::PERMISSION_DENIED, "mayurad takes images by name, never by a host path");
  }
  const auto started = std::chrono::steady_clock::now();
  Owned o = create_counting_runs(options, client);
  metrics_.create_seconds.observe(std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count());
  ++metrics_.creates;
  return o;
}

std::variant<Routes::Run, Reply> Routes::start_run(const std::string& body, const Client& client) noexcept {
  ++metrics_.requests;
  try {
    json request = parse_body(body, "the run request");
    if (!request.is_object() || request.size() != 2 || !request.contains("sandbox") || !request.contains("exec")) {
      throw SandboxError(Reason::INVALID_INPUT, "the run request: must be {\"sandbox\": {...}, \"exec\": {...}}");
    }
    json& sandbox = request["sandbox"];
    // A run's sandbox ends with its command; the lifetime, when not given,
    // is the longest the operator allows.
    if (sandbox.is_object() && !sandbox.contains("lifetimeMs")) sandbox["lifetimeMs"] = info_.max_lifetime_ms;
    // The command is checked before anything is made.
    ExecRequest exec = exec_request_from(request["exec"]);
    sandboxes_.check_exec(exec.argv, exec.options);
    Owned o = create(sandbox, client);
    return Run{o.sandbox, o.sandbox.id(), std::move(exec)};
  } catch (...) {
    return failure_reply();
  }
}

void Routes::run_ending() noexcept {
  std::lock_guard lock(runs_mutex_);
  ++runs_ending_;
}

void Routes::end_run(const Run& run) noexcept {
  Sandbox s = run.sandbox;
  s.release();
  registry_.forget(run.id);
  std::lock_guard lock(runs_mutex_);
  --runs_ending_;
  ++runs_ended_;
  runs_changed_.notify_all();
}

Reply Routes::handle(const RouteMatch& match, const std::string& body, const Client& client) noexcept {
  ++metrics_.requests;
  try {
    return dispatch(match, body, client);
  } catch (...) {
    return failure_reply();
  }
}

std::string Routes::told(std::string message) const {
  for (const auto& [path, name] : hidden_paths_) {
    if (path.empty()) continue;
    for (auto at = message.find(path); at != std::string::npos; at = message.find(path, at + name.size())) {
      message.replace(at, path.size(), name);
    }
  }
  return message;
}

Reply Routes::failure_reply() noexcept {
  try {
    throw;
  } catch (const UnknownSandbox& u) {
    metrics_.failed(Reason::GONE);
    return error_reply(404, Reason::GONE, "there is no sandbox " + u.id.substr(0, 64));
  } catch (const SandboxError& e) {
    metrics_.failed(e.reason());
    return error_reply(e.reason(), told(e.what()));
  } catch (const std::bad_alloc&) {
    metrics_.failed(Reason::INTERNAL);
    return error_reply(Reason::INTERNAL, "out of memory");
  } catch (const std::exception& e) {
    metrics_.failed(Reason::INTERNAL);
    return error_reply(Reason::INTERNAL, "the service failed: " + told(e.what()));
  } catch (...) {
    metrics_.failed(Reason::INTERNAL);
    return error_reply(Reason::INTERNAL, "the service failed");
  }
}

std::variant<FileCall, Reply> Routes::file_call(const RouteMatch& m, const Client& client) noexcept {
  const Target& t = m.target;
  FileCall call;
  switch (m.route->resource) {
    case Resource::write: call.kind = FileCall::Kind::write; break;
    case Resource::remove: call.kind = FileCall::Kind::remove; break;
    case Resource::list: call.kind = FileCall::Kind::list; break;
    default: call.kind = FileCall::Kind::read; break;
  }
  ++metrics_.requests;
  try {
    call.sandbox = owned(m.id, client);
    if (call.kind == FileCall::Kind::list) {
      const auto it = t.params.find("path");
      call.path = it == t.params.end() ? std::string(".") : it->second;
    } else {
      call.path = param(t, "path");
    }
    if (call.kind == FileCall::Kind::read && t.params.count("maxBytes")) {
      call.read.max_bytes = static_cast<std::size_t>(number_param(t, "maxBytes", 0, std::int64_t{1} << 40));
    }
    return call;
  } catch (...) {
    return failure_reply();
  }
}

std::variant<CommandWait, Reply> Routes::command_wait(const RouteMatch& m, const Client& client) noexcept {
  ++metrics_.requests;
  try {
    CommandWait wait;
    wait.sandbox = owned(m.id, client);
    wait.command = m.command;
    // Bounded, as a client waits longer by asking again: a request's life
    // stays within what every proxy and client allows one.
    const Target& t = m.target;
    wait.timeout = std::chrono::milliseconds(t.params.count("timeoutMs") ? number_param(t, "timeoutMs", 0, kMostWaitMs)
                                                                         : kMostWaitMs);
    (void)wait.sandbox.command(wait.command);  // NOT_FOUND, or a malformed id, at once
    return wait;
  } catch (...) {
    return failure_reply();
  }
}

std::variant<CommandAttach, Reply> Routes::command_attach(const RouteMatch& m, const Client& client,
                                                          bool upgrade) noexcept {
  ++metrics_.requests;
  try {
    CommandAttach a;
    a.sandbox = owned(m.id, client);
    a.command = m.command;
    const Target& t = m.target;
    const auto from = [&t](const std::string& name) {
      return t.params.count(name)
                 ? static_cast<std::uint64_t>(number_param(t, name, 0, std::numeric_limits<std::int64_t>::max()))
                 : 0;
    };
    a.stdout_from = from("stdoutFrom");
    a.stderr_from = from("stderrFrom");
    if (t.params.count("follow")) {
      const std::string& follow = t.params.at("follow");
      if (follow != "true" && follow != "false")
        throw SandboxError(Reason::INVALID_INPUT, "follow: must be true or false");
      a.follow = follow == "true";
    }
    (void)a.sandbox.command(a.command);  // NOT_FOUND, or a malformed id, at once
    if (!upgrade) {
      Reply r =
          error_reply(426, Reason::INVALID_INPUT, "an attachment is a WebSocket: the request must upgrade to one");
      return r;
    }
    return a;
  } catch (...) {
    return failure_reply();
  }
}

bool Routes::command_ended(const CommandWait& wait) noexcept {
  try {
    return wait.sandbox.command(wait.command).state != CommandState::running;
  } catch (...) {
    return true;
  }
}

Reply Routes::command_wait_reply(const CommandWait& wait) noexcept {
  try {
    return json_reply(200, command_info_json(wait.sandbox.command(wait.command)));
  } catch (...) {
    return failure_reply();
  }
}

Reply Routes::file_reply(const FileCall& call, const std::exception_ptr& error, std::string data,
                         const std::vector<FileEntry>& entries) noexcept {
  try {
    if (error) std::rethrow_exception(error);
    switch (call.kind) {
      case FileCall::Kind::read: return {200, "application/octet-stream", std::move(data)};
      case FileCall::Kind::list: {
        json list = json::array();
        for (const FileEntry& e : entries) list.push_back(file_entry_json(e));
        return json_reply(200, {{"entries", list}});
      }
      default: return no_content();
    }
  } catch (...) {
    return failure_reply();
  }
}

Reply Routes::dispatch(const RouteMatch& m, const std::string& body, const Client& client) {
  switch (m.kind) {
    case RouteMatch::Kind::malformed:
      return error_reply(400, Reason::INVALID_INPUT, "the request's target is malformed");
    case RouteMatch::Kind::unknown_path: return error_reply(404, Reason::INVALID_INPUT, "there is no such resource");
    case RouteMatch::Kind::wrong_method:
      if (!m.id.empty()) owned(m.id, client);  // an unknown id is 404 whatever the method
      return wrong_method();
    case RouteMatch::Kind::route: break;
  }
  const Target& t = m.target;
  const std::string& id = m.id;
  switch (m.route->resource) {
    case Resource::health: return json_reply(200, {{"status", "ok"}});
    case Resource::features: {
      json kinds = json::array();
      for (NetworkKind k : info_.network) kinds.push_back(std::string(network_kind_name(k)));
      return json_reply(200, {{"id", info_.provider_id},
                              {"features", features_json(sandboxes_.features())},
                              {"workdir", sandboxes_.workdir()},
                              {"maxLifetimeMs", info_.max_lifetime_ms},
                              {"network", kinds}});
    }
    case Resource::sandboxes: {
      json list = json::array();
      for (const Owned& o : registry_.list(client)) list.push_back(sandbox_json(o));
      return json_reply(200, {{"sandboxes", list}});
    }
    case Resource::create: return json_reply(201, sandbox_json(create(parse_body(body, "the create request"), client)));
    case Resource::details: {
      auto o = registry_.find(id, client);
      if (!o) throw UnknownSandbox{id};
      if (o->sandbox.released() || now_ms() >= o->expires_at_ms) {
        throw SandboxError(Reason::GONE, "sandbox " + id + " has ended");
      }
      return json_reply(200, sandbox_json(*o));
    }
    case Resource::release: {
      Sandbox s = owned(id, client);
      s.release();
      registry_.forget(id);
      return no_content();
    }
    case Resource::pause:
    case Resource::resume: {
      Sandbox s = owned(id, client);
      if (m.route->resource == Resource::pause) {
        s.pause();
      } else {
        s.resume();
      }
      return no_content();
    }
    case Resource::snapshot: {
      auto o = registry_.find(id, client);
      if (!o) throw UnknownSandbox{id};
      const std::string name = snapshot_name(parse_body(body, "the snapshot request"));
      return json_reply(201, snapshot_json(take_snapshot(*o, name)));
    }
    case Resource::fork: {
      auto o = registry_.find(id, client);
      if (!o) throw UnknownSandbox{id};
      const auto [count, lifetime] = fork_request(parse_body(body, "the fork request"), *o);
      json list = json::array();
      for (const Owned& made : registry_.fork(*o, count, lifetime)) list.push_back(sandbox_json(made));
      ++metrics_.creates;
      return json_reply(201, {{"sandboxes", list}});
    }
    case Resource::snapshots: {
      json list = json::array();
      for (const Snapshot& s : sandboxes_.snapshots(client.name)) list.push_back(snapshot_json(s));
      return json_reply(200, {{"snapshots", list}});
    }
    case Resource::delete_snapshot:
      return deleted("snapshot", id, [&] { sandboxes_.delete_snapshot(id, client.name); });
    case Resource::volumes: {
      json list = json::array();
      for (const Volume& v : sandboxes_.volumes(client.name)) list.push_back(volume_json(v));
      return json_reply(200, {{"volumes", list}});
    }
    case Resource::create_volume: {
      const auto [name, size_mib] = volume_request(parse_body(body, "the volume request"));
      return json_reply(201, volume_json(create_volume(name, size_mib, client)));
    }
    case Resource::delete_volume: return deleted("volume", id, [&] { sandboxes_.delete_volume(id, client.name); });
    case Resource::url: {
      Sandbox s = owned(id, client);
      return json_reply(200, {{"url", s.url(static_cast<int>(number_param(t, "port", 0, 1 << 20)))}});
    }
    case Resource::network: {
      Sandbox s = owned(id, client);
      const json request = parse_body(body, "the network request");
      if (!request.contains("network") || request.size() != 1) {
        throw SandboxError(Reason::INVALID_INPUT, "the network request: must be {\"network\": ...}");
      }
      s.set_network(network_from(request["network"]));
      return no_content();
    }
    case Resource::screenshot:
    case Resource::cursor:
    case Resource::desktop_input: return desktop_reply(m.route->resource, t, body, owned(id, client));
    case Resource::commands:
    case Resource::start_command:
    case Resource::command:
    case Resource::command_output:
    case Resource::command_input:
    case Resource::command_signal:
    case Resource::command_resize:
    case Resource::command_stop: return command_reply(m, body, owned(id, client));
    case Resource::command_wait:
    case Resource::command_attach:
    case Resource::metrics:
    case Resource::run:
    case Resource::exec:
    case Resource::read:
    case Resource::write:
    case Resource::remove:
    case Resource::list: break;
  }
  // Streamed, or made on the async forms: the server serves these before
  // the blocking calls (route_table.hpp's Serving), and a caller of handle()
  // alone is told it cannot have them here.
  if (!id.empty()) owned(id, client);
  return wrong_method();
}

}  // namespace mayura::service
