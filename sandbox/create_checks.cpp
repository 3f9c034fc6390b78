#include "create_checks.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "mayura/resource_limits.hpp"
#include "mayura/validate.hpp"

namespace mayura::detail {

bool supports(const Features& f, NetworkKind kind) {
  return std::find(f.network.begin(), f.network.end(), kind) != f.network.end();
}

void check_network(const SandboxesOptions& limits, const Features& features, const Network& network) {
  const NetworkKind kind = network.kind;
  if (kind == NetworkKind::allowlist) {
    if (network.allow.empty())
      throw SandboxError(Reason::INVALID_INPUT, "an allowlist network needs at least one domain");
    if (network.allow.size() > kMaxAllowedDomains) {
      throw SandboxError(Reason::INVALID_INPUT,
                         "an allowlist network takes at most " + std::to_string(kMaxAllowedDomains) + " domains");
    }
    for (const auto& d : network.allow) check_domain_pattern(d);
  } else if (!network.allow.empty()) {
    throw SandboxError(Reason::INVALID_INPUT, "allowed domains are only for an allowlist network");
  }
  // Feature checks come before the permission check: asking for something
  // the provider cannot do at all is the caller's input error.
  if (!supports(features, kind)) {
    throw SandboxError(Reason::INVALID_INPUT,
                       "the provider cannot enforce network '" + std::string(network_kind_name(kind)) + "'");
  }
  if (std::find(limits.network.begin(), limits.network.end(), kind) == limits.network.end()) {
    // Said for whoever can change it: the library's caller or mayurad's operator.
    const std::string name(network_kind_name(kind));
    throw SandboxError(Reason::PERMISSION_DENIED,
                       "network '" + name + "' is not allowed here: the operator lists the networks sandboxes may " +
                           "have (create_sandboxes' network option; mayurad's \"network\" setting, e.g. " +
                           "\"network\": [\"none\", \"" + name + "\"] in mayurad.json)");
  }
}

namespace {

// The form of a user and a working directory; whether the image knows them
// is the provider's to say.
void check_identity(const std::string& user, const std::string& workdir) {
  if (!user.empty()) {
    const bool chars_ok =
        user.size() <= 256 && std::all_of(user.begin(), user.end(), [](char c) {
          return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.' || c == ':';
        });
    const auto colon = user.find(':');
    const bool shape_ok = colon != 0 && colon != user.size() - 1 &&
                          (colon == std::string::npos || user.find(':', colon + 1) == std::string::npos);
    if (!chars_ok || !shape_ok) {
      throw SandboxError(Reason::INVALID_INPUT, "user must be UID, UID:GID, NAME or NAME:GROUP");
    }
  }
  if (!workdir.empty()) {
    bool ok = workdir.size() <= 1024 && workdir.front() == '/' && workdir.size() > 1 && workdir.back() != '/' &&
              workdir.find('\0') == std::string::npos && workdir.find("//") == std::string::npos;
    for (const char* bad : {"/./", "/../"}) ok = ok && (workdir + "/").find(bad) == std::string::npos;
    if (!ok) throw SandboxError(Reason::INVALID_INPUT, "workdir must be an absolute path without '.' or '..'");
  }
}

std::string format_number(double v) {
  std::ostringstream out;
  out << v;
  return out.str();
}

// What the operator allows one sandbox, each ceiling named as the operator
// set it (the library's option, and mayurad's setting).
void check_ceilings(const SandboxesOptions& limits, const CreateOptions& o) {
  const auto over = [](const std::string& what, const std::string& asked, const std::string& ceiling,
                       const char* option, const char* setting) {
    throw SandboxError(Reason::INVALID_INPUT, what + " " + asked + " is over the operator's ceiling of " + ceiling +
                                                  " (" + option + "; mayurad's " + setting + ")");
  };
  if (limits.max_cpus > 0 && o.cpus && *o.cpus > limits.max_cpus) {
    over("cpus", format_number(*o.cpus), format_number(limits.max_cpus), "max_cpus", "maxCpus");
  }
  if (limits.max_memory_mib > 0 && o.memory_mib && *o.memory_mib > limits.max_memory_mib) {
    over("memory_mib", std::to_string(*o.memory_mib), std::to_string(limits.max_memory_mib), "max_memory_mib",
         "maxMemoryMiB");
  }
  if (limits.max_pids > 0 && o.pids && *o.pids > limits.max_pids) {
    over("pids", std::to_string(*o.pids), std::to_string(limits.max_pids), "max_pids", "maxPids");
  }
  if (limits.max_disk_mib > 0 && o.disk_mib && *o.disk_mib > limits.max_disk_mib) {
    over("disk_mib", std::to_string(*o.disk_mib), std::to_string(limits.max_disk_mib), "max_disk_mib", "maxDiskMiB");
  }
  if (limits.max_ports > 0 && o.ports.size() > limits.max_ports) {
    over("the number of ports", std::to_string(o.ports.size()), std::to_string(limits.max_ports), "max_ports",
         "maxPorts");
  }
}

// Each volume once, at a path of its own that hides nothing the sandbox
// needs: not /, nor the kernel's places, nor the workdir or /tmp whole.
void check_volume_mounts(const Features& features, const CreateOptions& o) {
  if (o.volumes.empty()) return;
  if (!features.volumes) throw SandboxError(Reason::INVALID_INPUT, "the provider has no volumes");
  if (o.volumes.size() > 16) throw SandboxError(Reason::INVALID_INPUT, "more than 16 volumes");
  std::set<std::string> names;
  std::set<std::string> paths;
  for (const VolumeMount& v : o.volumes) {
    check_volume_name(v.name);
    if (!names.insert(v.name).second)
      throw SandboxError(Reason::INVALID_INPUT, "the volume " + v.name + " is mounted twice");
    check_path(v.path, "a volume's path");
    const std::string& p = v.path;
    const bool plain = p.size() > 1 && p.front() == '/' && p.back() != '/' && p.find("//") == std::string::npos &&
                       p.find("/./") == std::string::npos && p.find("/../") == std::string::npos &&
                       !p.ends_with("/.") && !p.ends_with("/..");
    if (!plain)
      throw SandboxError(Reason::INVALID_INPUT, "a volume's path must be absolute and plain, and not /: " + p);
    for (const char* kernel : {"/proc", "/dev", "/sys"}) {
      const std::string k = kernel;
      if (p == k || p.starts_with(k + "/"))
        throw SandboxError(Reason::INVALID_INPUT, "a volume cannot go at " + p + ", under " + k);
    }
    // (The provider checks its own workdir, or the image's.)
    if (p == "/tmp" || (!o.workdir.empty() && p == o.workdir))
      throw SandboxError(Reason::INVALID_INPUT, "a volume cannot hide " + p + " whole (put it under it)");
    if (!paths.insert(p).second) throw SandboxError(Reason::INVALID_INPUT, "two volumes go at " + p);
  }
}

// Bounds the kernel can keep without stalling the sandbox's own end: a
// disk slower than 1 MiB or 16 operations a second would hold its last
// flush for minutes.
void check_disk_io(const Features& features, const CreateOptions& o) {
  if (!features.disk_io) throw SandboxError(Reason::INVALID_INPUT, "the provider cannot bound a disk's I/O");
  if (!o.disk_mib && !o.snapshot && o.volumes.empty())
    throw SandboxError(Reason::INVALID_INPUT, "disk_io bounds a disk or a volume, and the create asks for neither");
  const auto bytes = [](std::int64_t v, const char* name) {
    if (v != 0 && (v < (std::int64_t{1} << 20) || v > (std::int64_t{1} << 50)))
      throw SandboxError(Reason::INVALID_INPUT, std::string("disk_io.") + name + " must be 0 or from 2^20 to 2^50");
  };
  const auto ops = [](std::int64_t v, const char* name) {
    if (v != 0 && (v < 16 || v > (std::int64_t{1} << 40)))
      throw SandboxError(Reason::INVALID_INPUT, std::string("disk_io.") + name + " must be 0 or from 16 to 2^40");
  };
  bytes(o.disk_io->read_bps, "read_bps");
  bytes(o.disk_io->write_bps, "write_bps");
  ops(o.disk_io->read_iops, "read_iops");
  ops(o.disk_io->write_iops, "write_iops");
}

}  // namespace

void check_create(const SandboxesOptions& limits, const Features& features, std::int64_t provider_max,
                  const CreateOptions& o) {
  if (o.lifetime_ms <= 0) throw SandboxError(Reason::INVALID_INPUT, "lifetime_ms is required and must be positive");
  if (o.lifetime_ms > limits.max_lifetime_ms) {
    throw SandboxError(Reason::INVALID_INPUT, "lifetime_ms " + std::to_string(o.lifetime_ms) +
                                                  " is over the maximum of " + std::to_string(limits.max_lifetime_ms));
  }
  if (provider_max > 0 && o.lifetime_ms > provider_max) {
    throw SandboxError(Reason::INVALID_INPUT,
                       "lifetime_ms is over the provider's maximum of " + std::to_string(provider_max));
  }
  check_network(limits, features, o.network);
  check_identity(o.user, o.workdir);
  check_ceilings(limits, o);
  if (!o.ports.empty()) {
    if (!features.ports) throw SandboxError(Reason::INVALID_INPUT, "the provider does not serve ports");
    std::vector<int> sorted = o.ports;
    std::sort(sorted.begin(), sorted.end());
    for (int p : sorted) check_port(p);
    if (std::adjacent_find(sorted.begin(), sorted.end()) != sorted.end()) {
      throw SandboxError(Reason::INVALID_INPUT, "a port is listed twice");
    }
  }
  // (uid_t)-1 is no uid: the kernel's "unchanged".
  if (o.ports_owner && *o.ports_owner == 0xFFFFFFFFu)
    throw SandboxError(Reason::INVALID_INPUT, "ports_owner must be a uid, not 4294967295");
  if (o.cpus && !features.cpus) throw SandboxError(Reason::INVALID_INPUT, "the provider cannot bound cpus");
  if (o.memory_mib && !features.memory) throw SandboxError(Reason::INVALID_INPUT, "the provider cannot bound memory");
  if (o.pids && !features.pids) throw SandboxError(Reason::INVALID_INPUT, "the provider cannot bound processes");
  check_resources(o.cpus, o.memory_mib, o.pids);
  if (o.disk_mib) {
    if (!features.disk) throw SandboxError(Reason::INVALID_INPUT, "the provider cannot give a sandbox a disk");
    // A ext4 smaller than 16 MiB holds little but its journal; 2^24 MiB is 16 TiB.
    if (*o.disk_mib < 16 || *o.disk_mib > (std::int64_t{1} << 24)) {
      throw SandboxError(Reason::INVALID_INPUT, "disk_mib must be from 16 to 2^24");
    }
  }
  check_volume_mounts(features, o);
  if (o.disk_io) check_disk_io(features, o);
  if (o.writable_root && !o.disk_mib && !o.snapshot)
    throw SandboxError(Reason::INVALID_INPUT,
                       "a writable root lives on the sandbox's disk: give disk_mib or a snapshot");
  if (o.snapshot) {
    if (!features.snapshot) throw SandboxError(Reason::INVALID_INPUT, "the provider cannot start from a snapshot");
    check_snapshot_name(*o.snapshot);
  }
  if (o.seccomp_profile) {
    if (!features.seccomp) throw SandboxError(Reason::INVALID_INPUT, "the provider does not take seccomp profiles");
    if (o.seccomp_profile->size() > kMaxSeccompProfileBytes) {
      throw SandboxError(Reason::INVALID_INPUT, "the seccomp profile is larger than 1 MiB");
    }
  }
  if (o.desktop) {
    if (!features.desktop) throw SandboxError(Reason::INVALID_INPUT, "the provider has no desktop");
    check_desktop_size(*o.desktop);
  }
  check_env(o.env);
  check_labels(o.labels);
  if (o.image.find('\0') != std::string::npos || o.image.size() > kMaxPathBytes) {
    throw SandboxError(Reason::INVALID_INPUT, "image name is malformed");
  }
  if (o.tenant.find('\0') != std::string::npos || o.tenant.size() > kMaxTenantBytes) {
    throw SandboxError(Reason::INVALID_INPUT,
                       "tenant must be at most " + std::to_string(kMaxTenantBytes) + " bytes, without NUL");
  }
}

}  // namespace mayura::detail
