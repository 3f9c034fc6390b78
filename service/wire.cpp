#include "wire.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <set>

#include "mayura/base/base64.hpp"
#include "mayura/resource_limits.hpp"

namespace mayura::service {
namespace {

constexpr int kMaxDepth = 32;

[[noreturn]] void bad(std::string_view key, std::string_view problem) {
  throw SandboxError(Reason::INVALID_INPUT, std::string(key) + ": " + std::string(problem));
}

// The keys of one object, each taken at most once; what is left over when
// done() is asked is a key nobody knows.
class Fields {
 public:
  Fields(const json& value, std::string_view what) : value_(value), what_(what) {
    if (!value.is_object()) bad(what, "must be a JSON object");
  }
  const json* take(const char* key) {
    taken_.insert(key);
    const auto it = value_.find(key);
    return it == value_.end() || it->is_null() ? nullptr : &*it;
  }
  void done() const {
    for (const auto& [key, _] : value_.items()) {
      if (!taken_.count(key)) bad(what_, "unknown field '" + key.substr(0, 64) + "'");
    }
  }

 private:
  const json& value_;
  std::string what_;
  std::set<std::string> taken_;
};

std::string text(const json& v, std::string_view key) {
  if (!v.is_string()) bad(key, "must be a string");
  return v.get<std::string>();
}

bool boolean(const json& v, std::string_view key) {
  if (!v.is_boolean()) bad(key, "must be true or false");
  return v.get<bool>();
}

std::int64_t integer(const json& v, std::string_view key, std::int64_t min, std::int64_t max) {
  if (!v.is_number_integer()) bad(key, "must be an integer");
  if (v.is_number_unsigned() && v.get<std::uint64_t>() > static_cast<std::uint64_t>(max)) bad(key, "is too large");
  const auto n = v.get<std::int64_t>();
  if (n < min || n > max) bad(key, "must be between " + std::to_string(min) + " and " + std::to_string(max));
  return n;
}

std::vector<std::string> byte_list(const json& v, std::string_view key) {
  if (!v.is_array()) bad(key, "must be an array");
  std::vector<std::string> out;
  out.reserve(v.size());
  for (const auto& item : v) out.push_back(bytes_from(item, key));
  return out;
}

std::map<std::string, std::string> byte_map(const json& v, std::string_view key) {
  if (!v.is_object()) bad(key, "must be an object");
  std::map<std::string, std::string> out;
  for (const auto& [k, item] : v.items()) out[k] = bytes_from(item, key);
  return out;
}

json byte_map_json(const std::map<std::string, std::string>& map) {
  json out = json::object();
  for (const auto& [k, v] : map) out[k] = bytes_json(v);
  return out;
}

std::string_view file_type_name(FileType type) {
  switch (type) {
    case FileType::file: return "file";
    case FileType::directory: return "directory";
    case FileType::symlink: return "symlink";
    case FileType::other: return "other";
  }
  return "other";
}

}  // namespace

bool valid_utf8(std::string_view s) noexcept {
  std::size_t i = 0;
  while (i < s.size()) {
    const auto c = static_cast<unsigned char>(s[i]);
    std::size_t n = 0;
    std::uint32_t cp = 0;
    if (c < 0x80) {
      ++i;
      continue;
    } else if ((c & 0xe0) == 0xc0) {
      n = 1, cp = c & 0x1f;
    } else if ((c & 0xf0) == 0xe0) {
      n = 2, cp = c & 0x0f;
    } else if ((c & 0xf8) == 0xf0) {
      n = 3, cp = c & 0x07;
    } else {
      return false;
    }
    if (i + n >= s.size()) return false;
    for (std::size_t k = 1; k <= n; ++k) {
      const auto d = static_cast<unsigned char>(s[i + k]);
      if ((d & 0xc0) != 0x80) return false;
      cp = (cp << 6) | (d & 0x3f);
    }
    // overlong forms, surrogates and what lies past Unicode are no UTF-8
    if ((n == 1 && cp < 0x80) || (n == 2 && cp < 0x800) || (n == 3 && cp < 0x10000)) return false;
    if ((cp >= 0xd800 && cp <= 0xdfff) || cp > 0x10ffff) return false;
    i += n + 1;
  }
  return true;
}

namespace {

// Whether JSON's escapes would more than double the bytes: a control
// character other than the common whitespace escapes as six bytes (\u0000),
// so mostly-binary output (a stream of zeros) is sent as base64 (4/3)
// instead, six times fewer bytes for the daemon to make and send.
bool escapes_past_double(std::string_view bytes) {
  std::size_t escaped = 0;
  for (const char c : bytes) {
    const auto u = static_cast<unsigned char>(c);
    escaped += u >= 0x20 ? (c == '"' || c == '\\' ? 2 : 1) : (c == '\n' || c == '\t' || c == '\r' ? 2 : 6);
  }
  return escaped > 2 * bytes.size();
}

}  // namespace

json bytes_json(std::string_view bytes) {
  if (valid_utf8(bytes) && !escapes_past_double(bytes)) return std::string(bytes);
  return json{{"base64", detail::base64_encode(bytes)}};
}

std::string bytes_from(const json& value, std::string_view key) {
  if (value.is_string()) return value.get<std::string>();
  if (value.is_object() && value.size() == 1 && value.contains("base64") && value["base64"].is_string()) {
    const auto decoded = detail::base64_decode(value["base64"].get<std::string>());
    if (!decoded) bad(key, "holds malformed base64");
    return *decoded;
  }
  bad(key, "must be a string or {\"base64\": \"...\"}");
}

json parse_body(std::string_view body, std::string_view what) {
  int depth = 0;
  bool too_deep = false;
  json::parser_callback_t limit = [&](int d, json::parse_event_t event, json&) {
    if (event == json::parse_event_t::object_start || event == json::parse_event_t::array_start) {
      depth = d + 1;
      if (depth > kMaxDepth) too_deep = true;
    }
    return !too_deep;
  };
  json value = json::parse(body.begin(), body.end(), limit, /*allow_exceptions=*/false);
  if (too_deep) bad(what, "is nested more than " + std::to_string(kMaxDepth) + " levels deep");
  if (value.is_discarded()) bad(what, "is not well-formed JSON");
  if (!value.is_object()) bad(what, "must be a JSON object");
  return value;
}

std::string dump(const json& value) { return value.dump(-1, ' ', false, json::error_handler_t::replace); }

json network_json(const Network& network) {
  if (network.kind == NetworkKind::allowlist) return json{{"allow", network.allow}};
  return std::string(network_kind_name(network.kind));
}

Network network_from(const json& value) {
  if (value.is_string()) {
    const auto kind = value.get<std::string>();
    if (kind == "none") return Network::none();
    if (kind == "all") return Network::all();
    bad("network", "must be 'none', 'all' or {\"allow\": [...]}");
  }
  Fields f(value, "network");
  const json* allow = f.take("allow");
  f.done();
  if (!allow || !allow->is_array()) bad("network", "must be 'none', 'all' or {\"allow\": [...]}");
  std::vector<std::string> domains;
  for (const auto& d : *allow) domains.push_back(text(d, "network.allow"));
  return Network::allow_only(std::move(domains));
}

json features_json(const Features& f) {
  json kinds = json::array();
  for (NetworkKind k : f.network) kinds.push_back(std::string(network_kind_name(k)));
  return {{"stdin", f.stdin},
          {"ports", f.ports},
          {"desktop", f.desktop},
          {"cpus", f.cpus},
          {"memory", f.memory},
          {"pids", f.pids},
          {"seccomp", f.seccomp},
          {"pause", f.pause},
          {"disk", f.disk},
          {"snapshot", f.snapshot},
          {"volumes", f.volumes},
          {"diskIo", f.disk_io},
          {"interactive", f.interactive},
          {"terminal", f.terminal},
          {"network", kinds}};
}

Features features_from(const json& value) {
  Fields f(value, "features");
  Features out;
  auto flag = [&](const char* key, bool& into) {
    if (const json* v = f.take(key)) into = boolean(*v, key);
  };
  flag("stdin", out.stdin);
  flag("ports", out.ports);
  flag("desktop", out.desktop);
  flag("cpus", out.cpus);
  flag("memory", out.memory);
  flag("pids", out.pids);
  flag("seccomp", out.seccomp);
  flag("pause", out.pause);
  flag("disk", out.disk);
  flag("snapshot", out.snapshot);
  flag("volumes", out.volumes);
  flag("diskIo", out.disk_io);
  flag("interactive", out.interactive);
  flag("terminal", out.terminal);
  if (const json* kinds = f.take("network")) {
    if (!kinds->is_array()) bad("features.network", "must be an array");
    for (const auto& k : *kinds) {
      const std::string name = text(k, "features.network");
      if (name == "none") out.network.push_back(NetworkKind::none);
      else if (name == "all") out.network.push_back(NetworkKind::all);
      else if (name == "allow") out.network.push_back(NetworkKind::allowlist);
      // a kind a newer daemon knows and this client does not is not offered
    }
  }
  // a newer daemon may say more than this client knows: features are not refused for it
  return out;
}

json create_json(const CreateOptions& o) {
  json j = {{"lifetimeMs", o.lifetime_ms}, {"network", network_json(o.network)}};
  if (!o.env.empty()) j["env"] = byte_map_json(o.env);
  if (!o.ports.empty()) j["ports"] = o.ports;
  if (o.cpus) j["cpus"] = *o.cpus;
  if (o.memory_mib) j["memoryMiB"] = *o.memory_mib;
  if (o.disk_mib) j["diskMiB"] = *o.disk_mib;
  if (o.snapshot) j["snapshot"] = *o.snapshot;
  if (o.writable_root) j["writableRoot"] = true;
  if (o.pids) j["pids"] = *o.pids;
  if (o.seccomp_profile) j["seccompProfile"] = bytes_json(*o.seccomp_profile);
  if (!o.image.empty()) j["image"] = o.image;
  if (!o.labels.empty()) j["labels"] = byte_map_json(o.labels);
  if (!o.user.empty()) j["user"] = o.user;
  if (!o.workdir.empty()) j["workdir"] = bytes_json(o.workdir);
  if (o.desktop) j["desktop"] = desktop_size_json(*o.desktop);
  if (!o.volumes.empty()) {
    json mounts = json::array();
    for (const VolumeMount& v : o.volumes) {
      mounts.push_back({{"name", v.name}, {"path", bytes_json(v.path)}, {"readOnly", v.read_only}});
    }
    j["volumes"] = std::move(mounts);
  }
  if (o.disk_io) {
    j["diskIo"] = {{"readBps", o.disk_io->read_bps},
                   {"writeBps", o.disk_io->write_bps},
                   {"readIops", o.disk_io->read_iops},
                   {"writeIops", o.disk_io->write_iops}};
  }
  return j;
}

json desktop_size_json(const DesktopSize& size) { return {{"width", size.width}, {"height", size.height}}; }

namespace {

// The limits layer checks the size against the screen's bounds; here only
// that the numbers are numbers.
constexpr std::int64_t kMaxCoordinate = 1 << 20;

DesktopSize desktop_size_from(const json& value) {
  if (value.is_boolean()) {
    if (!value.get<bool>()) bad("desktop", "is a size {\"width\", \"height\"}, or true for the default size");
    return {};
  }
  Fields f(value, "desktop");
  DesktopSize size;
  if (const json* v = f.take("width")) size.width = static_cast<int>(integer(*v, "desktop.width", 0, kMaxCoordinate));
  if (const json* v = f.take("height")) {
    size.height = static_cast<int>(integer(*v, "desktop.height", 0, kMaxCoordinate));
  }
  f.done();
  return size;
}

// The contract takes at most 16; more are refused before they are read.
constexpr std::size_t kMaxVolumeMounts = 16;

DiskIo disk_io_from(const json& value) {
  Fields f(value, "diskIo");
  DiskIo io;
  const auto take = [&](const char* key, std::int64_t& into) {
    if (const json* v = f.take(key)) into = integer(*v, key, 0, std::int64_t{1} << 50);
  };
  take("readBps", io.read_bps);
  take("writeBps", io.write_bps);
  take("readIops", io.read_iops);
  take("writeIops", io.write_iops);
  f.done();
  return io;
}

VolumeMount volume_mount_from(const json& value) {
  Fields f(value, "a volume of the create");
  VolumeMount v;
  const json* name = f.take("name");
  const json* path = f.take("path");
  if (!name || !path) bad("volumes", "each needs a name and a path");
  v.name = text(*name, "volumes.name");
  v.path = bytes_from(*path, "volumes.path");
  if (const json* ro = f.take("readOnly")) v.read_only = boolean(*ro, "volumes.readOnly");
  f.done();
  return v;
}

Point point_from(const json& value, std::string_view what) {
  Fields f(value, what);
  const json* x = f.take("x");
  const json* y = f.take("y");
  f.done();
  if (!x || !y) bad(what, "needs x and y");
  return {static_cast<int>(integer(*x, "x", -kMaxCoordinate, kMaxCoordinate)),
          static_cast<int>(integer(*y, "y", -kMaxCoordinate, kMaxCoordinate))};
}

constexpr std::array<std::pair<DesktopAction::Kind, const char*>, 6> kInputKinds = {{
    {DesktopAction::Kind::move, "move"},
    {DesktopAction::Kind::click, "click"},
    {DesktopAction::Kind::drag, "drag"},
    {DesktopAction::Kind::scroll, "scroll"},
    {DesktopAction::Kind::type, "type"},
    {DesktopAction::Kind::key, "key"},
}};
constexpr std::array<const char*, 3> kButtons = {"left", "middle", "right"};
constexpr std::array<const char*, 4> kDirections = {"up", "down", "left", "right"};

template <std::size_t N>
std::size_t index_of(const std::array<const char*, N>& names, const std::string& name, std::string_view key) {
  for (std::size_t i = 0; i < N; ++i) {
    if (name == names[i]) return i;
  }
  bad(key, "is not one of its names");
}

}  // namespace

json desktop_input_json(const DesktopAction& a) {
  json j;
  for (const auto& [kind, name] : kInputKinds) {
    if (kind == a.kind) j["action"] = name;
  }
  if (!j.contains("action")) throw SandboxError(Reason::INVALID_INPUT, "a screenshot or the cursor is no input");
  const auto point = [](const Point& p) { return json{{"x", p.x}, {"y", p.y}}; };
  switch (a.kind) {
    case DesktopAction::Kind::drag: {
      json path = json::array();
      for (const Point& p : a.points) path.push_back(point(p));
      j["path"] = std::move(path);
      break;
    }
    case DesktopAction::Kind::type:
    case DesktopAction::Kind::key: j["text"] = bytes_json(a.text); break;
    default:
      if (!a.points.empty()) j["at"] = point(a.points.front());
      break;
  }
  if (a.kind == DesktopAction::Kind::click) {
    j["button"] = kButtons.at(static_cast<std::size_t>(a.button) - 1);
    j["count"] = a.count;
  }
  if (a.kind == DesktopAction::Kind::scroll) {
    j["direction"] = kDirections.at(static_cast<std::size_t>(a.direction));
    j["amount"] = a.amount;
  }
  return j;
}

DesktopAction desktop_input_from(const json& value) {
  Fields f(value, "the desktop input");
  DesktopAction a;
  const json* action = f.take("action");
  if (!action) bad("action", "is required");
  const std::string name = text(*action, "action");
  bool known = false;
  for (const auto& [kind, kind_name] : kInputKinds) {
    if (name == kind_name) a.kind = kind, known = true;
  }
  if (!known) bad("action", "is move, click, drag, scroll, type or key");
  using Kind = DesktopAction::Kind;
  const bool at_a_point = a.kind == Kind::move || a.kind == Kind::click || a.kind == Kind::scroll;
  if (at_a_point) {
    const json* at = f.take("at");
    if (!at) bad("at", "is required");
    a.points.push_back(point_from(*at, "at"));
  }
  if (a.kind == Kind::drag) {
    const json* path = f.take("path");
    if (!path || !path->is_array()) bad("path", "must be an array of {\"x\", \"y\"}");
    for (const json& p : *path) a.points.push_back(point_from(p, "path"));
  }
  if (a.kind == Kind::type || a.kind == Kind::key) {
    const json* t = f.take("text");
    if (!t) bad("text", "is required");
    a.text = bytes_from(*t, "text");
  }
  if (a.kind == Kind::click) {
    if (const json* v = f.take("button")) {
      a.button = static_cast<MouseButton>(index_of(kButtons, text(*v, "button"), "button") + 1);
    }
    if (const json* v = f.take("count")) a.count = static_cast<int>(integer(*v, "count", 0, 1000));
  }
  if (a.kind == Kind::scroll) {
    const json* d = f.take("direction");
    if (!d) bad("direction", "is required");
    a.direction = static_cast<ScrollDirection>(index_of(kDirections, text(*d, "direction"), "direction"));
    if (const json* v = f.take("amount")) a.amount = static_cast<int>(integer(*v, "amount", 0, 1000));
  }
  f.done();
  return a;
}

CreateOptions create_from(const json& value) {
  Fields f(value, "the create request");
  CreateOptions o;
  const json* lifetime = f.take("lifetimeMs");
  if (!lifetime) bad("lifetimeMs", "is required");
  o.lifetime_ms = integer(*lifetime, "lifetimeMs", 1, std::numeric_limits<std::int64_t>::max());
  if (const json* v = f.take("network")) o.network = network_from(*v);
  if (const json* v = f.take("env")) o.env = byte_map(*v, "env");
  if (const json* v = f.take("ports")) {
    if (!v->is_array()) bad("ports", "must be an array");
    for (const auto& p : *v) o.ports.push_back(static_cast<int>(integer(p, "ports", 1, 65535)));
  }
  if (const json* v = f.take("cpus")) {
    if (!v->is_number()) bad("cpus", "must be a number");
    o.cpus = v->get<double>();
  }
  if (const json* v = f.take("memoryMiB")) o.memory_mib = integer(*v, "memoryMiB", kMinMemoryMib, kMaxMemoryMib);
  if (const json* v = f.take("diskMiB")) o.disk_mib = integer(*v, "diskMiB", 16, std::int64_t{1} << 24);
  if (const json* v = f.take("snapshot")) o.snapshot = text(*v, "snapshot");
  if (const json* v = f.take("writableRoot")) o.writable_root = boolean(*v, "writableRoot");
  if (const json* v = f.take("pids")) o.pids = integer(*v, "pids", 1, kMaxPids);
  if (const json* v = f.take("seccompProfile")) o.seccomp_profile = bytes_from(*v, "seccompProfile");
  if (const json* v = f.take("image")) o.image = text(*v, "image");
  if (const json* v = f.take("labels")) o.labels = byte_map(*v, "labels");
  if (const json* v = f.take("user")) o.user = text(*v, "user");
  if (const json* v = f.take("workdir")) o.workdir = bytes_from(*v, "workdir");
  if (const json* v = f.take("desktop")) o.desktop = desktop_size_from(*v);
  if (const json* v = f.take("volumes")) {
    if (!v->is_array()) bad("volumes", "must be an array of {\"name\", \"path\", \"readOnly\"}");
    if (v->size() > kMaxVolumeMounts) bad("volumes", "must be at most 16");
    for (const json& m : *v) o.volumes.push_back(volume_mount_from(m));
  }
  if (const json* v = f.take("diskIo")) o.disk_io = disk_io_from(*v);
  f.done();
  return o;
}

json snapshot_json(const Snapshot& s) {
  return {{"name", s.name}, {"diskMiB", s.disk_mib}, {"storedBytes", s.stored_bytes}, {"createdAt", s.created_ms}};
}

Snapshot snapshot_from(const json& value) {
  Fields f(value, "snapshot");
  Snapshot s;
  const json* name = f.take("name");
  if (!name) bad("snapshot.name", "is required");
  s.name = text(*name, "snapshot.name");
  if (const json* v = f.take("diskMiB")) s.disk_mib = integer(*v, "snapshot.diskMiB", 0, std::int64_t{1} << 24);
  if (const json* v = f.take("storedBytes"))
    s.stored_bytes = integer(*v, "snapshot.storedBytes", 0, std::numeric_limits<std::int64_t>::max());
  if (const json* v = f.take("createdAt"))
    s.created_ms = integer(*v, "snapshot.createdAt", 0, std::numeric_limits<std::int64_t>::max());
  return s;  // a newer daemon may say more
}

json volume_json(const Volume& v) {
  return {{"name", v.name}, {"sizeMiB", v.size_mib}, {"createdAt", v.created_ms}, {"inUse", v.in_use}};
}

Volume volume_from(const json& value) {
  Fields f(value, "volume");
  Volume v;
  const json* name = f.take("name");
  if (!name) bad("volume.name", "is required");
  v.name = text(*name, "volume.name");
  if (const json* s = f.take("sizeMiB")) v.size_mib = integer(*s, "volume.sizeMiB", 0, std::int64_t{1} << 24);
  if (const json* s = f.take("createdAt"))
    v.created_ms = integer(*s, "volume.createdAt", 0, std::numeric_limits<std::int64_t>::max());
  if (const json* s = f.take("inUse")) v.in_use = boolean(*s, "volume.inUse");
  return v;  // a newer daemon may say more
}

namespace {

// What an exec and a background command's start both carry: the argv, and
// the options ExecOptions and StartOptions have alike.
template <class Options>
json command_json(const std::vector<std::string>& argv, const Options& o) {
  json args = json::array();
  for (const auto& a : argv) args.push_back(bytes_json(a));
  json j = {{"argv", args}};
  if (!o.cwd.empty()) j["cwd"] = bytes_json(o.cwd);
  if (!o.env.empty()) j["env"] = byte_map_json(o.env);
  if (o.timeout_ms) j["timeoutMs"] = *o.timeout_ms;
  if (o.stdin) j["stdin"] = bytes_json(*o.stdin);
  return j;
}

template <class Options>
std::vector<std::string> take_command(Fields& f, Options& o) {
  const json* argv = f.take("argv");
  if (!argv) bad("argv", "is required");
  if (const json* v = f.take("cwd")) o.cwd = bytes_from(*v, "cwd");
  if (const json* v = f.take("env")) o.env = byte_map(*v, "env");
  // The limits layer says which timeouts make sense; here only the type.
  if (const json* v = f.take("timeoutMs")) {
    o.timeout_ms =
        integer(*v, "timeoutMs", std::numeric_limits<std::int64_t>::min(), std::numeric_limits<std::int64_t>::max());
  }
  if (const json* v = f.take("stdin")) o.stdin = bytes_from(*v, "stdin");
  return byte_list(*argv, "argv");
}

}  // namespace

json exec_request_json(const std::vector<std::string>& argv, const ExecOptions& o) {
  json j = command_json(argv, o);
  if (o.max_output_bytes) j["maxOutputBytes"] = *o.max_output_bytes;
  return j;
}

ExecRequest exec_request_from(const json& value) {
  Fields f(value, "the exec request");
  ExecRequest r;
  r.argv = take_command(f, r.options);
  if (const json* v = f.take("maxOutputBytes")) {
    r.options.max_output_bytes = static_cast<std::size_t>(integer(*v, "maxOutputBytes", 0, std::int64_t{1} << 40));
  }
  f.done();
  return r;
}

json exec_result_json(const ExecResult& r) {
  return {{"exitCode", r.exit_code ? json(*r.exit_code) : json(nullptr)},
          {"stdout", bytes_json(r.stdout)},
          {"stderr", bytes_json(r.stderr)},
          {"truncated", r.truncated},
          {"durationMs", r.duration_ms},
          {"timedOut", r.timed_out},
          {"oomKilled", r.oom_killed}};
}

ExecResult exec_result_from(const json& value) {
  Fields f(value, "the exec result");
  ExecResult r;
  if (const json* v = f.take("exitCode")) r.exit_code = static_cast<int>(integer(*v, "exitCode", -1, 1 << 16));
  if (const json* v = f.take("stdout")) r.stdout = bytes_from(*v, "stdout");
  if (const json* v = f.take("stderr")) r.stderr = bytes_from(*v, "stderr");
  if (const json* v = f.take("truncated")) r.truncated = boolean(*v, "truncated");
  if (const json* v = f.take("durationMs")) {
    r.duration_ms = integer(*v, "durationMs", 0, std::numeric_limits<std::int64_t>::max());
  }
  if (const json* v = f.take("timedOut")) r.timed_out = boolean(*v, "timedOut");
  if (const json* v = f.take("oomKilled")) r.oom_killed = boolean(*v, "oomKilled");
  f.done();
  if (!r.timed_out && !r.exit_code) bad("exitCode", "is missing from a command that did not time out");
  return r;
}

json file_entry_json(const FileEntry& e) {
  return {{"name", bytes_json(e.name)},
          {"type", std::string(file_type_name(e.type))},
          {"size", e.size},
          {"mode", e.mode},
          {"mtimeMs", e.mtime_ms}};
}

FileEntry file_entry_from(const json& value) {
  Fields f(value, "a listed entry");
  FileEntry e;
  if (const json* v = f.take("name")) e.name = bytes_from(*v, "name");
  if (const json* v = f.take("type")) {
    const std::string t = text(*v, "type");
    e.type = t == "file"        ? FileType::file
             : t == "directory" ? FileType::directory
             : t == "symlink"   ? FileType::symlink
                                : FileType::other;
  }
  if (const json* v = f.take("size"))
    e.size = static_cast<std::uint64_t>(integer(*v, "size", 0, std::numeric_limits<std::int64_t>::max()));
  if (const json* v = f.take("mode")) e.mode = static_cast<std::uint32_t>(integer(*v, "mode", 0, 07777));
  if (const json* v = f.take("mtimeMs")) {
    e.mtime_ms =
        integer(*v, "mtimeMs", std::numeric_limits<std::int64_t>::min(), std::numeric_limits<std::int64_t>::max());
  }
  f.done();
  return e;
}

namespace {

constexpr std::string_view kCommandStates[] = {"running", "exited", "timedOut", "stopped", "failed"};

std::uint64_t offset(const json& v, std::string_view key) {
  return static_cast<std::uint64_t>(integer(v, key, 0, std::numeric_limits<std::int64_t>::max()));
}

}  // namespace

json start_request_json(const std::vector<std::string>& argv, const StartOptions& options) {
  json j = command_json(argv, options);
  j["keepBytes"] = options.keep_bytes;
  if (options.terminal) j["terminal"] = terminal_size_json(*options.terminal);
  return j;
}

StartRequest start_request_from(const json& value) {
  Fields f(value, "the start request");
  StartRequest r;
  r.argv = take_command(f, r.options);
  // The limits layer checks the size and the bound; here only the types.
  if (const json* v = f.take("terminal")) r.options.terminal = terminal_size_from(*v);
  if (const json* v = f.take("keepBytes")) {
    r.options.keep_bytes = static_cast<std::size_t>(integer(*v, "keepBytes", 0, std::int64_t{1} << 40));
  }
  f.done();
  return r;
}

json command_info_json(const CommandInfo& info) {
  json args = json::array();
  for (const std::string& a : info.argv) args.push_back(bytes_json(a));
  json j = {{"id", info.id},
            {"argv", args},
            {"state", std::string(kCommandStates[static_cast<std::size_t>(info.state)])},
            {"exitCode", info.exit_code ? json(*info.exit_code) : json(nullptr)},
            {"startedAt", info.started_ms},
            {"endedAt", info.ended_ms ? json(*info.ended_ms) : json(nullptr)},
            {"terminal", info.terminal},
            {"stdoutBytes", info.stdout_bytes},
            {"stderrBytes", info.stderr_bytes}};
  if (!info.error.empty()) j["error"] = bytes_json(info.error);
  return j;
}

CommandInfo command_info_from(const json& value) {
  Fields f(value, "a command");
  CommandInfo c;
  if (const json* v = f.take("id")) c.id = text(*v, "id");
  if (const json* v = f.take("argv")) c.argv = byte_list(*v, "argv");
  if (const json* v = f.take("state")) {
    const std::string name = text(*v, "state");
    const auto* it = std::find(std::begin(kCommandStates), std::end(kCommandStates), name);
    if (it == std::end(kCommandStates)) bad("state", "must be running, exited, timedOut, stopped or failed");
    c.state = static_cast<CommandState>(it - std::begin(kCommandStates));
  }
  if (const json* v = f.take("exitCode")) c.exit_code = static_cast<int>(integer(*v, "exitCode", -1, 1 << 16));
  if (const json* v = f.take("error")) c.error = bytes_from(*v, "error");
  if (const json* v = f.take("startedAt")) {
    c.started_ms = integer(*v, "startedAt", 0, std::numeric_limits<std::int64_t>::max());
  }
  if (const json* v = f.take("endedAt"))
    c.ended_ms = integer(*v, "endedAt", 0, std::numeric_limits<std::int64_t>::max());
  if (const json* v = f.take("terminal")) c.terminal = boolean(*v, "terminal");
  if (const json* v = f.take("stdoutBytes")) c.stdout_bytes = offset(*v, "stdoutBytes");
  if (const json* v = f.take("stderrBytes")) c.stderr_bytes = offset(*v, "stderrBytes");
  f.done();
  return c;
}

json output_slice_json(const OutputSlice& slice) {
  return {{"offset", slice.offset}, {"dropped", slice.dropped}, {"data", bytes_json(slice.data)}, {"next", slice.next}};
}

OutputSlice output_slice_from(const json& value) {
  Fields f(value, "an output slice");
  OutputSlice s;
  if (const json* v = f.take("offset")) s.offset = offset(*v, "offset");
  if (const json* v = f.take("dropped")) s.dropped = offset(*v, "dropped");
  if (const json* v = f.take("data")) s.data = bytes_from(*v, "data");
  if (const json* v = f.take("next")) s.next = offset(*v, "next");
  f.done();
  if (s.next != s.offset + s.data.size()) bad("next", "must be offset plus the data's size");
  return s;
}

json terminal_size_json(const TerminalSize& size) { return {{"rows", size.rows}, {"columns", size.columns}}; }

TerminalSize terminal_size_from(const json& value) {
  Fields f(value, "the terminal's size");
  TerminalSize size;
  // The limits layer checks the bounds (1 to 1000); here only the types.
  const json* rows = f.take("rows");
  const json* columns = f.take("columns");
  if (!rows || !columns) bad("terminal", "needs rows and columns");
  size.rows = static_cast<int>(integer(*rows, "rows", -(1 << 20), 1 << 20));
  size.columns = static_cast<int>(integer(*columns, "columns", -(1 << 20), 1 << 20));
  f.done();
  return size;
}

json command_input_json(const CommandInput& input) {
  json j = json::object();
  if (input.data) j["data"] = bytes_json(*input.data);
  if (input.close) j["close"] = true;
  return j;
}

CommandInput command_input_from(const json& value) {
  Fields f(value, "the input request");
  CommandInput input;
  if (const json* v = f.take("data")) input.data = bytes_from(*v, "data");
  if (const json* v = f.take("close")) input.close = boolean(*v, "close");
  f.done();
  return input;
}

OutputStream output_stream_from(std::string_view name, std::string_view key) {
  if (name == "stdout") return OutputStream::out;
  if (name == "stderr") return OutputStream::err;
  bad(key, "must be stdout or stderr");
}

json attach_control_json(const AttachControl& control) {
  switch (control.kind) {
    case AttachControl::Kind::close_input: return {{"closeInput", true}};
    case AttachControl::Kind::signal: return {{"signal", control.signal}};
    case AttachControl::Kind::resize: return {{"resize", terminal_size_json(control.size)}};
    case AttachControl::Kind::stop: break;
  }
  return {{"stop", true}};
}

AttachControl attach_control_from(const json& value) {
  if (!value.is_object() || value.size() != 1) {
    bad("the attachment's message",
        "must be one of {\"closeInput\": true}, {\"signal\": N}, {\"resize\": {...}}, "
        "{\"stop\": true}");
  }
  Fields f(value, "the attachment's message");
  AttachControl c;
  if (const json* close = f.take("closeInput")) {
    if (!boolean(*close, "closeInput")) bad("closeInput", "must be true");
    c.kind = AttachControl::Kind::close_input;
  } else if (const json* signal = f.take("signal")) {
    c.kind = AttachControl::Kind::signal;
    c.signal = static_cast<int>(integer(*signal, "signal", 1, 64));
  } else if (const json* size = f.take("resize")) {
    c.kind = AttachControl::Kind::resize;
    c.size = terminal_size_from(*size);
  } else if (const json* stop = f.take("stop")) {
    if (!boolean(*stop, "stop")) bad("stop", "must be true");
    c.kind = AttachControl::Kind::stop;
  }
  f.done();
  return c;
}

json dropped_event_json(OutputStream stream, std::uint64_t bytes) {
  return {{"dropped", {{"stream", stream == OutputStream::out ? "stdout" : "stderr"}, {"bytes", bytes}}}};
}

json error_json(Reason reason, std::string_view message) {
  return {{"reason", std::string(reason_name(reason))}, {"message", std::string(message)}};
}

std::optional<Reason> reason_from_name(std::string_view name) noexcept {
  for (Reason r :
       {Reason::INVALID_INPUT, Reason::INVALID_CONFIG, Reason::PERMISSION_DENIED, Reason::GONE, Reason::CANCELLED,
        Reason::LIMIT_REACHED, Reason::NOT_FOUND, Reason::UNSUPPORTED, Reason::INTERNAL}) {
    if (reason_name(r) == name) return r;
  }
  return std::nullopt;
}

}  // namespace mayura::service
