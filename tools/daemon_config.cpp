#include "daemon_config.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <thread>
#include <type_traits>

#include "mayura/resource_limits.hpp"

namespace mayura::tools {
namespace {

using nlohmann::json;

[[noreturn]] void bad(const std::string& source, const std::string& key, const std::string& problem) {
  throw SandboxError(Reason::INVALID_CONFIG, source + ": " + key + " " + problem);
}

class Keys {
 public:
  Keys(const json& object, std::string source, std::string prefix)
      : object_(object), source_(std::move(source)), prefix_(std::move(prefix)) {}
  const json* take(const std::string& key) {
    taken_.insert(key);
    const auto it = object_.find(key);
    return it == object_.end() ? nullptr : &*it;
  }
  std::string name(const std::string& key) const { return prefix_ + key; }
  void done() const {
    for (const auto& [key, _] : object_.items()) {
      if (!taken_.count(key)) bad(source_, name(key), "is no setting mayurad knows");
    }
  }
  const std::string& source() const { return source_; }

 private:
  const json& object_;
  std::string source_, prefix_;
  std::set<std::string> taken_;
};

std::string text(Keys& k, const std::string& key, const json& v) {
  if (!v.is_string()) bad(k.source(), k.name(key), "must be a string");
  return v.get<std::string>();
}

std::int64_t integer(Keys& k, const std::string& key, const json& v, std::int64_t min, std::int64_t max) {
  if (!v.is_number_integer() || (v.is_number_unsigned() && v.get<std::uint64_t>() > static_cast<std::uint64_t>(max)) ||
      v.get<std::int64_t>() < min || v.get<std::int64_t>() > max) {
    bad(k.source(), k.name(key), "must be an integer from " + std::to_string(min) + " to " + std::to_string(max));
  }
  return v.get<std::int64_t>();
}

std::vector<std::string> strings(Keys& k, const std::string& key, const json& v) {
  if (!v.is_array()) bad(k.source(), k.name(key), "must be an array of strings");
  std::vector<std::string> out;
  for (const auto& item : v) out.push_back(text(k, key, item));
  return out;
}

// The operator's ceilings, and the defaults under them: every sandbox the
// daemon makes is bounded, and no default is over a ceiling.
void parse_ceilings(Keys& k, const HostShape& host, DaemonConfig& c) {
  const std::string& source = k.source();
  std::int64_t total_memory = std::max<std::int64_t>(64, host.memory_mib * 3 / 4);
  std::int64_t total_pids = std::max<std::int64_t>(64, host.pid_max / 2);
  if (const json* v = k.take("totalMemoryMiB")) total_memory = integer(k, "totalMemoryMiB", *v, 64, kMaxMemoryMib);
  if (const json* v = k.take("totalPids")) total_pids = integer(k, "totalPids", *v, 64, kMaxPids);
  c.native.total_memory_mib = total_memory;
  c.native.total_pids = total_pids;
  c.limits.max_memory_mib = total_memory;
  c.limits.max_pids = total_pids;
  c.limits.max_cpus = host.cpus;
  c.limits.max_ports = 16;
  if (const json* v = k.take("maxMemoryMiB"))
    c.limits.max_memory_mib = integer(k, "maxMemoryMiB", *v, 1, kMaxMemoryMib);
  if (const json* v = k.take("maxPids")) c.limits.max_pids = integer(k, "maxPids", *v, 1, kMaxPids);
  // Disks are reserved on the host's disk whole: bounded per sandbox and
  // per client by default.
  c.limits.max_disk_mib = 4096;
  c.server.max_disk_mib_per_client = 16384;
  if (const json* v = k.take("maxDiskMiB")) c.limits.max_disk_mib = integer(k, "maxDiskMiB", *v, 16, 1 << 24);
  c.server.max_snapshot_mib_per_client = 16384;
  if (const json* v = k.take("maxSnapshotMiBPerClient"))
    c.server.max_snapshot_mib_per_client = integer(k, "maxSnapshotMiBPerClient", *v, 16, std::int64_t{1} << 30);
  c.server.max_volume_mib_per_client = 16384;
  if (const json* v = k.take("maxVolumeMiBPerClient"))
    c.server.max_volume_mib_per_client = integer(k, "maxVolumeMiBPerClient", *v, 16, std::int64_t{1} << 30);
  if (const json* v = k.take("maxDiskMiBPerClient"))
    c.server.max_disk_mib_per_client = integer(k, "maxDiskMiBPerClient", *v, 16, std::int64_t{1} << 30);
  if (const json* v = k.take("maxPorts"))
    c.limits.max_ports = static_cast<std::size_t>(integer(k, "maxPorts", *v, 1, 1024));
  if (const json* v = k.take("maxCpus")) {
    if (!v->is_number() || !std::isfinite(v->get<double>()) || v->get<double>() <= 0 || v->get<double>() > kMaxCpus)
      bad(source, "maxCpus", "must be a number above 0, at most 1024");
    c.limits.max_cpus = v->get<double>();
  }
  const json* per_client = k.take("maxMemoryMiBPerClient");
  if (per_client)
    c.server.max_memory_mib_per_client = integer(k, "maxMemoryMiBPerClient", *per_client, 1, kMaxMemoryMib);
  // The defaults a create gets, under the ceilings: given over one is an
  // error; the built-in ones are lowered to them.
  auto under = [&](auto& value, auto ceiling, bool given, const char* key, const char* ceiling_key) {
    if (value <= ceiling) return;
    if (given) bad(source, key, std::string("is over ") + ceiling_key);
    value = static_cast<std::remove_reference_t<decltype(value)>>(ceiling);
  };
  under(c.native.default_memory_mib, c.limits.max_memory_mib, c.default_memory_given, "defaultMemoryMiB",
        "maxMemoryMiB");
  under(c.native.default_pids, c.limits.max_pids, c.default_pids_given, "defaultPids", "maxPids");
  // cpus 0 is every cpu: over a ceiling below the host's cpus.
  if (c.native.default_cpus == 0 && c.limits.max_cpus < host.cpus) c.native.default_cpus = c.limits.max_cpus;
  under(c.native.default_cpus, c.limits.max_cpus, c.default_cpus_given, "defaultCpus", "maxCpus");
  // A client's sandboxes together: by default as many sandboxes of the
  // default size as it may have, and at least the engine's total (what one
  // sandbox may ask for); a client that asks more for each has fewer.
  if (!per_client) {
    c.server.max_memory_mib_per_client = std::max(
        total_memory, static_cast<std::int64_t>(c.server.max_sandboxes_per_client) * c.native.default_memory_mib);
  }
  if (c.native.default_memory_mib > c.server.max_memory_mib_per_client)
    bad(source, "maxMemoryMiBPerClient", "is below the memory one sandbox gets by default (defaultMemoryMiB)");
  c.server.default_memory_mib = c.native.default_memory_mib;
}

}  // namespace

HostShape HostShape::here() {
  HostShape h;
  std::ifstream meminfo("/proc/meminfo");
  for (std::string key; meminfo >> key;) {
    std::int64_t kib = 0;
    meminfo >> kib;
    if (key == "MemTotal:") h.memory_mib = kib / 1024;
    meminfo.ignore(1 << 10, '\n');
  }
  std::ifstream("/proc/sys/kernel/pid_max") >> h.pid_max;
  h.cpus = std::max(1u, std::thread::hardware_concurrency());
  return h;
}

DaemonConfig parse_daemon_config(const std::string& input, const std::string& source, const HostShape& host) {
  const json root = json::parse(input, nullptr, false);
  if (root.is_discarded()) throw SandboxError(Reason::INVALID_CONFIG, source + " is not well-formed JSON");
  if (!root.is_object()) throw SandboxError(Reason::INVALID_CONFIG, source + " must hold one JSON object");
  DaemonConfig c;
  c.limits.max_sandboxes = 64;
  c.limits.max_lifetime_ms = 24LL * 3600 * 1000;
  Keys k(root, source, "");
  constexpr std::int64_t kBig = std::int64_t{1} << 40;

  if (const json* v = k.take("socket")) {
    c.socket = text(k, "socket", *v);
    if (c.socket.empty() || c.socket.front() != '/') bad(source, "socket", "must be an absolute path");
  }
  if (const json* v = k.take("socketMode")) {
    const std::string mode = text(k, "socketMode", *v);
    if (mode.empty() || mode.size() > 4 || mode.find_first_not_of("01234567") != std::string::npos) {
      bad(source, "socketMode", "must be an octal mode such as \"0660\"");
    }
    c.socket_mode = static_cast<mode_t>(std::stoul(mode, nullptr, 8));
    if (c.socket_mode & ~mode_t{0777})
      bad(source, "socketMode", "takes permission bits only (no setuid, setgid or sticky bit)");
    if (c.socket_mode & 0007)
      bad(source, "socketMode", "must give others no access (use socketGroup for who may call)");
  }
  if (const json* v = k.take("socketGroup")) {
    c.socket_group = text(k, "socketGroup", *v);
    c.socket_group_given = true;
  }
  if (const json* v = k.take("maxSandboxes"))
    c.limits.max_sandboxes = static_cast<std::size_t>(integer(k, "maxSandboxes", *v, 1, 1'000'000));
  if (const json* v = k.take("maxSandboxesPerClient")) {
    c.server.max_sandboxes_per_client = static_cast<std::size_t>(integer(k, "maxSandboxesPerClient", *v, 1, 1'000'000));
  }
  if (const json* v = k.take("maxLifetimeMs")) c.limits.max_lifetime_ms = integer(k, "maxLifetimeMs", *v, 1000, kBig);
  if (const json* v = k.take("network")) {
    c.limits.network.clear();
    for (const std::string& kind : strings(k, "network", *v)) {
      if (kind == "none") c.limits.network.push_back(NetworkKind::none);
      else if (kind == "all") c.limits.network.push_back(NetworkKind::all);
      else if (kind == "allow") c.limits.network.push_back(NetworkKind::allowlist);
      else bad(source, "network", "holds '" + kind.substr(0, 32) + "'; the kinds are none, all and allow");
    }
  }
  if (const json* v = k.take("maxOutputBytes"))
    c.limits.max_output_bytes = static_cast<std::size_t>(integer(k, "maxOutputBytes", *v, 1, kBig));
  if (const json* v = k.take("maxReadBytes"))
    c.limits.max_read_bytes = static_cast<std::size_t>(integer(k, "maxReadBytes", *v, 1, kBig));
  if (const json* v = k.take("maxWriteBytes"))
    c.limits.max_write_bytes = static_cast<std::size_t>(integer(k, "maxWriteBytes", *v, 1, kBig));
  if (const json* v = k.take("defaultCpus")) {
    if (!v->is_number() || v->get<double>() < 0 || !std::isfinite(v->get<double>()))
      bad(source, "defaultCpus", "must be a number, 0 or more");
    c.native.default_cpus = v->get<double>();
    c.default_cpus_given = true;
  }
  if (const json* v = k.take("defaultMemoryMiB")) {
    c.native.default_memory_mib = integer(k, "defaultMemoryMiB", *v, kMinMemoryMib, kMaxMemoryMib);
    c.default_memory_given = true;
  }
  if (const json* v = k.take("defaultPids")) {
    c.native.default_pids = integer(k, "defaultPids", *v, 1, kMaxPids);
    c.default_pids_given = true;
  }
  if (const json* v = k.take("publicRanges")) c.native.public_ranges = strings(k, "publicRanges", *v);
  if (const json* v = k.take("dnsServers")) c.native.dns_servers = strings(k, "dnsServers", *v);
  if (const json* v = k.take("allowPrivateAddresses")) {
    if (!v->is_boolean()) bad(source, "allowPrivateAddresses", "must be true or false");
    c.native.allow_private_addresses = v->get<bool>();
  }
  if (const json* v = k.take("prepared"))
    c.native.prepared = static_cast<std::size_t>(integer(k, "prepared", *v, 0, 64));
  if (const json* v = k.take("preparedDisks"))
    c.native.prepared_disks = static_cast<std::size_t>(integer(k, "preparedDisks", *v, 0, 64));
  if (const json* v = k.take("netnsPool"))
    c.native.netns_pool = static_cast<std::size_t>(integer(k, "netnsPool", *v, 0, 64));
  if (const json* v = k.take("dnsWaitSeconds"))
    c.native.dns_wait_s = static_cast<int>(integer(k, "dnsWaitSeconds", *v, 1, 30));
  if (const json* v = k.take("commandsAhead")) {
    if (!v->is_boolean()) bad(source, "commandsAhead", "must be true or false");
    c.native.commands_ahead = v->get<bool>();
  }
  // Live restore, on unless the operator says otherwise: a restart, an
  // upgrade or a crash of the daemon keeps every sandbox.
  c.native.live_restore = true;
  if (const json* v = k.take("liveRestore")) {
    if (!v->is_boolean()) bad(source, "liveRestore", "must be true or false");
    c.native.live_restore = v->get<bool>();
  }
  c.server.live_restore = c.native.live_restore;
  if (const json* v = k.take("stateDir")) c.native.state_dir = text(k, "stateDir", *v);
  if (const json* v = k.take("imageStore")) c.native.image_store = text(k, "imageStore", *v);
  if (const json* v = k.take("diskDir")) c.native.disk_dir = text(k, "diskDir", *v);
  if (const json* v = k.take("snapshotDir")) c.native.snapshot_dir = text(k, "snapshotDir", *v);
  if (const json* v = k.take("volumeDir")) c.native.volume_dir = text(k, "volumeDir", *v);
  if (const json* v = k.take("imageDir")) c.native.image_dir = text(k, "imageDir", *v);
  if (const json* v = k.take("cgroupRoot")) c.native.cgroup_root = text(k, "cgroupRoot", *v);
  if (const json* v = k.take("idBase"))
    c.native.id_base = static_cast<std::uint32_t>(integer(k, "idBase", *v, 65536, 0xf0000000LL));
  if (const json* v = k.take("idSlots"))
    c.native.id_slots = static_cast<std::uint32_t>(integer(k, "idSlots", *v, 1, 65535));
  if (const json* v = k.take("maxConnections"))
    c.server.max_connections = static_cast<std::size_t>(integer(k, "maxConnections", *v, 1, 1'000'000));
  if (const json* v = k.take("maxConnectionsPerClient")) {
    c.server.max_connections_per_client =
        static_cast<std::size_t>(integer(k, "maxConnectionsPerClient", *v, 1, 1'000'000));
  }
  parse_ceilings(k, host, c);
  // Request bodies held at once: an eighth of the host's
  // memory, at least 256 MiB (a client but root may hold a quarter of it).
  std::int64_t buffered_mib = std::max<std::int64_t>(256, host.memory_mib / 8);
  if (const json* v = k.take("maxBufferedMiB")) buffered_mib = integer(k, "maxBufferedMiB", *v, 16, 1 << 20);
  c.server.max_buffered_bytes = static_cast<std::size_t>(buffered_mib) << 20;
  if (const json* v = k.take("clientOutputMiBPerSecond")) {
    c.server.client_output_bytes_per_second =
        static_cast<std::size_t>(integer(k, "clientOutputMiBPerSecond", *v, 0, 1 << 20)) << 20;
  }
  if (const json* v = k.take("clientRequestsPerSecond")) {
    c.server.client_requests_per_second =
        static_cast<std::size_t>(integer(k, "clientRequestsPerSecond", *v, 0, 1'000'000));
  }
  if (const json* v = k.take("headerTimeoutMs"))
    c.server.header_timeout = std::chrono::milliseconds(integer(k, "headerTimeoutMs", *v, 100, 3'600'000));
  if (const json* v = k.take("bodyTimeoutMs"))
    c.server.body_timeout = std::chrono::milliseconds(integer(k, "bodyTimeoutMs", *v, 100, 3'600'000));
  if (const json* v = k.take("tls")) {
    if (!v->is_object()) bad(source, "tls", "must be an object");
    Keys t(*v, source, "tls.");
    TlsListener l;
    const json* listen = t.take("listen");
    const json* cert = t.take("certificate");
    const json* key = t.take("key");
    const json* tokens = t.take("tokens");
    t.done();
    if (!listen || !cert || !key || !tokens) bad(source, "tls", "needs listen, certificate, key and tokens");
    const std::string where = text(t, "listen", *listen);
    const auto colon = where.rfind(':');
    if (colon == std::string::npos || colon == 0) bad(source, "tls.listen", "must be ADDRESS:PORT");
    l.address = where.substr(0, colon);
    if (!l.address.empty() && l.address.front() == '[') {
      // [IPv6]:PORT, whole: a lost bracket must never widen the address
      if (l.address.size() < 3 || l.address.back() != ']' || l.address.find(']') != l.address.size() - 1) {
        bad(source, "tls.listen", "must be ADDRESS:PORT or [IPv6]:PORT");
      }
      l.address = l.address.substr(1, l.address.size() - 2);
    } else if (l.address.find_first_of("[]") != std::string::npos) {
      bad(source, "tls.listen", "must be ADDRESS:PORT or [IPv6]:PORT");
    }
    const std::string port = where.substr(colon + 1);
    if (port.empty() || port.size() > 5 || port.find_first_not_of("0123456789") != std::string::npos ||
        std::stoul(port) > 65535) {
      bad(source, "tls.listen", "must end in a port number");
    }
    l.port = static_cast<unsigned short>(std::stoul(port));
    l.certificate = text(t, "certificate", *cert);
    l.key = text(t, "key", *key);
    l.tokens_file = text(t, "tokens", *tokens);
    c.tls = l;
  }
  k.done();
  return c;
}

std::string read_operator_file(const std::string& what, const std::string& path, mode_t forbidden,
                               const std::string& mode_hint) {
  // Checked and read through one descriptor: what is checked is what is read.
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) throw SandboxError(Reason::INVALID_CONFIG, what + " " + path + " cannot be opened");
  struct stat st {};
  const bool ok = ::fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size < (1 << 20);
  std::string content;
  if (ok) {
    content.resize(static_cast<std::size_t>(st.st_size));
    std::size_t got = 0;
    while (got < content.size()) {
      const ssize_t n = ::read(fd, content.data() + got, content.size() - got);
      if (n <= 0) break;
      got += static_cast<std::size_t>(n);
    }
    content.resize(got);
  }
  ::close(fd);
  if (!ok) throw SandboxError(Reason::INVALID_CONFIG, what + " " + path + " is no regular file under 1 MiB");
  // Whoever may write it decides who the daemon's clients are, or what it
  // allows them: root's only (or the daemon's own user's).
  if (st.st_uid != 0 && st.st_uid != ::geteuid())
    throw SandboxError(Reason::INVALID_CONFIG, what + " " + path + " must be owned by root (chown root)");
  if (st.st_mode & forbidden) throw SandboxError(Reason::INVALID_CONFIG, what + " " + path + " " + mode_hint);
  return content;
}

service::Tokens read_tokens(const std::string& path) {
  const std::string content =
      read_operator_file("the tokens file", path, 0077, "must be readable by its owner only (chmod 600)");
  std::istringstream in(content);
  service::Tokens tokens;
  std::string line;
  int number = 0;
  while (std::getline(in, line)) {
    ++number;
    const auto first = line.find_first_not_of(" \t\r");
    if (first == std::string::npos || line[first] == '#') continue;
    std::istringstream words(line);
    std::string name, token, extra;
    words >> name >> token;
    if (name.empty() || token.size() < 16 || (words >> extra)) {
      throw SandboxError(Reason::INVALID_CONFIG, path + ":" + std::to_string(number) +
                                                     ": a line is NAME TOKEN, with a token of 16 characters or more");
    }
    // (its client, token:NAME, is the tenant of its sandboxes: bounded)
    if (name.size() > 256) {
      throw SandboxError(Reason::INVALID_CONFIG,
                         path + ":" + std::to_string(number) + ": a token's name is at most 256 bytes");
    }
    if (!tokens.emplace(token, name).second)
      throw SandboxError(Reason::INVALID_CONFIG, path + ":" + std::to_string(number) + ": a token given twice");
  }
  if (tokens.empty()) throw SandboxError(Reason::INVALID_CONFIG, "the tokens file " + path + " holds no token");
  return tokens;
}

}  // namespace mayura::tools
