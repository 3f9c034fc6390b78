#include "kept_sandbox.hpp"

#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <ctime>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "mayura/base/base64.hpp"
#include "sys_error.hpp"

namespace mayura::native {
namespace {

using detail::base64_decode;
using detail::base64_encode;
using nlohmann::json;

constexpr int kVersion = 1;

// Values may be any bytes (an environment variable's): base64.
json byte_map(const std::map<std::string, std::string>& map) {
  json out = json::object();
  for (const auto& [k, v] : map) out[base64_encode(k)] = base64_encode(v);
  return out;
}

std::optional<std::map<std::string, std::string>> byte_map_from(const json& value) {
  std::map<std::string, std::string> out;
  for (const auto& [k, v] : value.items()) {
    auto key = base64_decode(k);
    auto text = base64_decode(v.get<std::string>());
    if (!key || !text) return std::nullopt;
    out[*key] = *text;
  }
  return out;
}

NetworkKind kind_from(const std::string& name) {
  if (name == "all") return NetworkKind::all;
  if (name == "allow") return NetworkKind::allowlist;
  return NetworkKind::none;
}

sockaddr_un address_of(const std::string& path) {
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  if (path.size() >= sizeof address.sun_path)
    throw SandboxError(Reason::INVALID_CONFIG, "the state directory's path is too long for a socket");
  std::memcpy(address.sun_path, path.c_str(), path.size() + 1);
  return address;
}

}  // namespace

std::string encode_kept(const KeptSandbox& k) {
  json allow = json::array();
  for (const std::string& a : k.network.allow) allow.push_back(a);
  const json j = {{"version", kVersion},
                  {"name", k.name},
                  {"pid", k.pid},
                  {"startTime", k.start_time},
                  {"uidBase", k.uid_base},
                  {"hostname", k.hostname},
                  {"workdir", base64_encode(k.workdir)},
                  {"image", k.image},
                  {"commandsAhead", k.commands_ahead},
                  {"desktop", k.desktop},
                  {"paused", k.paused},
                  {"disk", base64_encode(k.disk)},
                  {"volumes", k.volumes},
                  {"io", k.io},
                  {"env", byte_map(k.env)},
                  {"network", {{"kind", std::string(network_kind_name(k.network.kind))}, {"allow", allow}}},
                  {"ports", k.ports},
                  {"hostPorts", k.host_ports},
                  {"portsOwner", k.ports_owner},
                  {"tenant", base64_encode(k.tenant)},
                  {"deadlineMs", k.deadline_ms},
                  {"caller", base64_encode(k.caller)},
                  {"initProtocol", k.init_protocol}};
  return j.dump();  // no newline: every string in it is escaped
}

std::optional<KeptSandbox> decode_kept(const std::string& line) {
  try {
    const json j = json::parse(line);
    if (j.at("version").get<int>() != kVersion) return std::nullopt;
    KeptSandbox k;
    k.name = j.at("name").get<std::string>();
    k.pid = j.at("pid").get<pid_t>();
    k.start_time = j.at("startTime").get<std::uint64_t>();
    k.uid_base = j.at("uidBase").get<std::uint32_t>();
    k.hostname = j.at("hostname").get<std::string>();
    const auto workdir = base64_decode(j.at("workdir").get<std::string>());
    const auto tenant = base64_decode(j.at("tenant").get<std::string>());
    const auto caller = base64_decode(j.at("caller").get<std::string>());
    const auto env = byte_map_from(j.at("env"));
    if (!workdir || !tenant || !caller || !env) return std::nullopt;
    k.workdir = *workdir;
    k.tenant = *tenant;
    k.caller = *caller;
    k.env = *env;
    k.image = j.at("image").get<std::string>();
    k.commands_ahead = j.at("commandsAhead").get<bool>();
    k.desktop = j.at("desktop").get<bool>();
    k.paused = j.at("paused").get<bool>();
    const auto disk = base64_decode(j.at("disk").get<std::string>());
    if (!disk) return std::nullopt;
    k.disk = *disk;
    k.volumes = j.at("volumes").get<std::vector<std::string>>();
    k.io = j.at("io").get<std::vector<std::uint64_t>>();
    if (!k.io.empty() && k.io.size() != 4) return std::nullopt;
    k.network.kind = kind_from(j.at("network").at("kind").get<std::string>());
    k.network.allow = j.at("network").at("allow").get<std::vector<std::string>>();
    k.ports = j.at("ports").get<std::vector<int>>();
    k.host_ports = j.at("hostPorts").get<std::vector<int>>();
    if (k.host_ports.size() != k.ports.size()) return std::nullopt;
    k.ports_owner = j.at("portsOwner").get<std::uint32_t>();
    k.deadline_ms = j.at("deadlineMs").get<std::int64_t>();
    k.init_protocol = j.contains("initProtocol") ? j.at("initProtocol").get<int>() : 1;
    if (k.init_protocol < 1) return std::nullopt;
    if (k.pid <= 0 || k.name.size() != 16 || k.name.find_first_not_of("0123456789abcdef") != std::string::npos)
      return std::nullopt;
    return k;
  } catch (const json::exception&) {
    return std::nullopt;
  }
}

std::int64_t boot_ms() {
  timespec now{};
  ::clock_gettime(CLOCK_BOOTTIME, &now);
  return static_cast<std::int64_t>(now.tv_sec) * 1000 + now.tv_nsec / 1000000;
}

std::uint64_t process_start_time(pid_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
  // The name, in parentheses, may hold spaces and parentheses: the fields
  // are counted from the last ')'.
  const std::size_t end = text.rfind(')');
  if (end == std::string::npos) return 0;
  std::istringstream fields(text.substr(end + 2));
  std::string field;
  // fields from the 3rd on; the start time is the 22nd
  for (int i = 3; i < 22 && fields >> field; ++i) {
  }
  std::uint64_t start = 0;
  return fields >> start ? start : 0;
}

std::string init_socket_path(const std::string& state_dir, const std::string& name) {
  return state_dir + "/inits/" + name;
}

UniqueFd listen_for_engines(const std::string& state_dir, const std::string& name) {
  const std::string dir = state_dir + "/inits";
  if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) fail_step("making " + dir, errno);
  const std::string path = init_socket_path(state_dir, name);
  const sockaddr_un address = address_of(path);
  UniqueFd fd(check_sys(::socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0), "making the init's socket"));
  ::unlink(path.c_str());  // one a dead sandbox of this name left
  check_sys(::bind(fd.get(), reinterpret_cast<const sockaddr*>(&address), sizeof address), "binding the init's socket");
  check_sys(::listen(fd.get(), 1), "listening on the init's socket");
  return fd;
}

UniqueFd connect_to_init(const std::string& path) {
  const sockaddr_un address = address_of(path);
  // Never waits: a backlog someone filled (root alone can reach it) fails
  // EAGAIN, and that sandbox is released, instead of the engine's start
  // hanging there.
  UniqueFd fd(::socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  if (!fd) return fd;
  if (::connect(fd.get(), reinterpret_cast<const sockaddr*>(&address), sizeof address) != 0 ||
      ::fcntl(fd.get(), F_SETFL, 0) != 0)
    return UniqueFd();
  // As large as a control socket the engine makes (launch.cpp): an exec's
  // argv and environment go in one message.
  const int big = 4 << 20;
  ::setsockopt(fd.get(), SOL_SOCKET, SO_SNDBUFFORCE, &big, sizeof big);
  return fd;
}

}  // namespace mayura::native
