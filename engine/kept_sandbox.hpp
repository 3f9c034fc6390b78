#pragma once
// Live restore's pieces of a sandbox: what it keeps in its record (one line
// of JSON) so that a later engine can take it back as it was, and the socket
// where its init waits for that engine.
//
// The record is written by the engine that made the sandbox, in its state
// directory (root's, 0700), and read back by the next engine on the same
// directory; it is trusted no further than that: the init it names must
// still be the same process (its start time) and in the cgroup it names.

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "mayura/base/unique_fd.hpp"
#include "mayura/types.hpp"
#include "protocol.hpp"

namespace mayura::native {

struct KeptSandbox {
  std::string name;              // its cgroup's and its socket's
  pid_t pid = 0;                 // its init
  std::uint64_t start_time = 0;  // the init's, in ticks since boot: a pid used again is not it
  std::uint32_t uid_base = 0;    // its host id range
  std::string hostname;
  std::string workdir;
  std::string image;  // as the create named it (empty: the default)
  bool commands_ahead = true;
  bool desktop = false;
  bool paused = false;               // by its caller (Sandbox::pause)
  std::string disk;                  // its disk's file, if it has one
  std::vector<std::string> volumes;  // its volumes' files
  // The I/O bounds on its disk's and volumes' devices: read and write
  // bytes, read and write operations per second (none: unbounded).
  std::vector<std::uint64_t> io;
  std::map<std::string, std::string> env;  // every command's, before the exec's own
  Network network;
  std::vector<int> ports;
  std::vector<int> host_ports;  // each port's on the host, in the same order
  std::uint32_t ports_owner = 0;
  std::string tenant;
  std::int64_t deadline_ms = 0;  // CLOCK_BOOTTIME
  std::string caller;            // what its caller kept with it (SandboxBackend::keep)
  // What its init understands (protocol::kInitProtocol when it was made; a
  // record without it is an older engine's: 1).
  int init_protocol = protocol::kInitProtocol;
};

// One line, no newline in it.
std::string encode_kept(const KeptSandbox& kept);
// None if `line` is no record this engine can read.
std::optional<KeptSandbox> decode_kept(const std::string& line);

// CLOCK_BOOTTIME now, in ms: it goes on while the host sleeps, and it is the
// same clock for every process until the host restarts.
std::int64_t boot_ms();
// The process's start, in ticks since boot (/proc/PID/stat); 0 if none.
std::uint64_t process_start_time(pid_t pid);

// Where the init of sandbox `name` waits for an engine: in <state_dir>/inits,
// which only root may enter.
std::string init_socket_path(const std::string& state_dir, const std::string& name);
// A listening socket there, for the init to hold. Throws SandboxError
// naming the step.
UniqueFd listen_for_engines(const std::string& state_dir, const std::string& name);
// Connects to the socket an init holds; none (errno set) if it cannot.
UniqueFd connect_to_init(const std::string& path);

}  // namespace mayura::native
