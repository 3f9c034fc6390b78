// A run's sandbox options and its sandboxes, from the command line.

#include "run_create.hpp"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <iterator>

namespace mayura::tools {

CreateOptions create_options(const Args& args, std::optional<std::string> seccomp_profile) {
  CreateOptions create;
  create.lifetime_ms = args.lifetime_ms;
  create.network = args.network;
  create.image = args.image;
  create.user = args.user;
  create.workdir = args.workdir;
  create.cpus = args.cpus;
  create.memory_mib = args.memory_mib;
  create.disk_mib = args.disk_mib;
  create.disk_io = args.disk_io;
  create.writable_root = args.writable_root;
  create.snapshot = args.from_snapshot;
  create.volumes = args.volumes;
  create.pids = args.pids;
  create.seccomp_profile = std::move(seccomp_profile);
  create.ports = args.ports;
  create.desktop = args.desktop;
  return create;
}

std::string read_host_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw SandboxError(Reason::INVALID_INPUT, "cannot read " + path + ": " + std::strerror(errno));
  return std::string(std::istreambuf_iterator<char>(in), {});
}

bool write_out(int fd, std::string_view chunk) {
  while (!chunk.empty()) {
    const ssize_t n = ::write(fd, chunk.data(), chunk.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    chunk.remove_prefix(static_cast<std::size_t>(n));
  }
  return true;
}

std::string engine_name(const std::string& daemon) { return daemon.empty() ? std::string("this engine") : daemon; }

Sandboxes run_sandboxes(const std::shared_ptr<SandboxProvider>& provider, const std::string& daemon, const Args& args,
                        CreateOptions& create) {
  SandboxesOptions limits;
  limits.max_sandboxes = 1;
  limits.max_write_bytes = std::size_t{1} << 30;
  limits.network = {NetworkKind::none, NetworkKind::allowlist, NetworkKind::all};
  const std::int64_t daemon_max = provider->max_lifetime_ms();
  if (!daemon.empty() && !args.lifetime_given && daemon_max > 0 && daemon_max < args.lifetime_ms) {
    create.lifetime_ms = daemon_max;
  }
  limits.max_lifetime_ms = std::max<std::int64_t>(create.lifetime_ms, 1);
  auto sandboxes = create_sandboxes(provider, limits);
  if (args.snapshot_to && !sandboxes.features().snapshot) {
    throw SandboxError(Reason::INVALID_INPUT, "--snapshot-to: " + engine_name(daemon) + " cannot snapshot a sandbox");
  }
  if (!args.volumes.empty() && !sandboxes.features().volumes) {
    throw SandboxError(Reason::INVALID_INPUT, "--volume: " + engine_name(daemon) + " keeps no volumes");
  }
  return sandboxes;
}

}  // namespace mayura::tools
