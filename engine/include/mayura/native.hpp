#pragma once
// The native provider: sandboxes built straight from Linux namespaces,
// cgroups and a read-only root, with a small init as pid 1 in each.
//
//   auto sandboxes = mayura::create_sandboxes(mayura::native_sandboxes({}), {.max_sandboxes = 4});
//
// Needs root (or CAP_SYS_ADMIN with the other capabilities a runtime needs)
// and a cgroup2 hierarchy.

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "mayura/provider.hpp"

namespace mayura {

struct NativeOptions {
  // Where images are found by name, and where the engine keeps its records of
  // live sandboxes (so that an engine started after a crash can remove what
  // the dead one left).
  std::string image_dir = "/var/lib/mayura/images";
  // The image store: images imported from OCI and docker-save archives
  // (mayura::ImageStore, `mayura-run image import`), used as NAME[:TAG].
  std::string image_store = "/var/lib/mayura/store";
  std::string state_dir = "/run/mayura";
  // Where sandboxes' disks are made (CreateOptions::disk_mib): a directory
  // on the host's disk, made if missing; each disk's file is removed as its
  // sandbox ends.
  std::string disk_dir = "/var/lib/mayura/disks";
  // Where snapshots are kept (Sandbox::snapshot): a directory on the host's
  // disk, made if missing, one directory in it per tenant. They stay until
  // deleted, across the engine's restarts.
  std::string snapshot_dir = "/var/lib/mayura/snapshots";
  // Where volumes are kept (Sandboxes::create_volume): a directory on the
  // host's disk, made if missing, one directory in it per tenant. They stay
  // until deleted, across the engine's restarts.
  std::string volume_dir = "/var/lib/mayura/volumes";
  // The cgroup2 directory the engine makes its sandboxes' cgroups under.
  // Empty: <delegated subtree>/mayura when the engine runs in a delegated
  // cgroup (systemd's Delegate=yes), else <cgroup2 mount>/mayura. A root
  // below the engine's own cgroup makes the engine move into <own>/engine.
  std::string cgroup_root;
  // Host uid/gid ranges: sandbox i maps its 65536 ids onto
  // id_base + i * 65536; never host root, never shared between live sandboxes.
  std::uint32_t id_base = 0x60000000;
  std::uint32_t id_slots = 4095;

  std::string workdir = "/workspace";
  std::uint32_t uid = 1000;  // the sandbox user, inside
  std::uint32_t gid = 1000;
  std::uint64_t workdir_mib = 1024;
  std::uint64_t tmp_mib = 512;
  std::uint64_t shm_mib = 64;
  std::uint64_t tmpfs_inodes = 262144;
  std::int64_t max_lifetime_ms = 24LL * 3600 * 1000;
  // Limits of a sandbox whose create options do not set them. cpus 0: every
  // cpu. Memory is never stretched by swap; pids counts its commands'
  // processes and threads.
  double default_cpus = 0;
  std::int64_t default_memory_mib = 4096;
  std::int64_t default_pids = 4096;
  // Bounds on all the engine's sandboxes together (0: none), on its cgroup
  // root: memory.max and pids.max (memory.limit_in_bytes and pids.max on v1
  // hierarchies). Engines that share a root share these; the last set holds.
  std::int64_t total_memory_mib = 0;
  std::int64_t total_pids = 0;
  // Networks. The servers the engine asks for names on sandboxes' behalf
  // (the allowlist's lookups, network all's DNS), as IPv4 addresses; empty:
  // the host's own resolver (/etc/hosts, /etc/resolv.conf).
  std::vector<std::string> dns_servers;
  // How long a lookup through dns_servers waits for each answer, in seconds
  // (1 to 30). It asks twice for the name's IPv4 addresses, then twice for
  // its IPv6 ones: a name whose servers never answer fails after four times
  // this.
  int dns_wait_s = 2;
  // Whether an allowlist's proxy may connect to private ranges (RFC 1918,
  // CGNAT, IPv6 ULA) that an allowed name resolves to. Never loopback,
  // link-local, multicast, metadata or the host's own addresses.
  bool allow_private_addresses = false;
  // Ranges (CIDR) the proxy takes as the internet although they are private
  // or reserved: an internal registry, a test's world.
  std::vector<std::string> public_ranges;
  // Where the veths of network all get their addresses: a /31 per sandbox.
  std::string all_network_pool = "10.234.0.0/16";
  // Network namespaces kept made ahead (the costliest step of a create).
  // 0 makes each one during its create.
  std::size_t netns_pool = 2;
  // Sandboxes of the host image kept made ahead, so a create only hands one
  // out. 0 builds each one during its create.
  std::size_t prepared = 1;
  // New disks kept made ahead (attached and mounted), of the size and owner
  // the last create with a new disk asked for, up to 4 GiB each: each holds
  // its whole size on the host while it waits. 0 makes each one during its
  // create.
  std::size_t prepared_disks = 1;
  // Each sandbox's next command started ahead: once a command ends, the
  // init clones the next one's process into the cgroup it left, where it
  // joins the process limit and takes the seccomp filter while the sandbox
  // is idle; the next exec pays only the command's own steps. One waiting
  // process per sandbox that has run a command, counted by its pids bound.
  // false starts each command when its exec comes.
  bool commands_ahead = true;
  // Live restore: each sandbox outlives this engine's process (its init
  // keeps it running, and ends it at its deadline if no engine is there),
  // and an engine started on the same state directory with this set takes
  // back every sandbox an engine that ended left (SandboxProvider::restore
  // hands them out), releasing, and saying so on stderr, any it cannot.
  // false: a sandbox ends with its engine's process, and an engine that
  // starts removes what a dead one left, but for sandboxes kept alive for
  // such an engine, which it leaves alone while they run.
  bool live_restore = false;
};

// Two lines on the cgroups of this host: which kind it is (unified, hybrid
// or legacy) and which limits it can enforce; then where an engine with these
// options puts its sandboxes, and why.
std::string describe_native_host(const NativeOptions& options = {});

// Creating the provider removes what a dead engine left behind (processes,
// cgroups, records). Throws SandboxError(UNSUPPORTED) on a host it cannot
// work on (no cgroup2, no permission).
std::shared_ptr<SandboxProvider> native_sandboxes(const NativeOptions& options = {});

}  // namespace mayura
