#pragma once
// What the engine and the in-sandbox init say to each other.
//
// Requests travel engine -> init as SOCK_SEQPACKET messages, each with the fds
// it needs (SCM_RIGHTS). Answers never come back on that socket: every request
// carries a status pipe of its own, so many threads can have requests in
// flight without sharing a reader, and a status pipe that closes without an
// answer means the init (and with it the sandbox) is gone.

#include <cstdint>
#include <string>
#include <vector>

#include "mayura/rootfs/plan.hpp"

namespace mayura::protocol {

// What an init of this engine understands. 1: before terminals, the pid
// report and signal (an init older than that refuses an exec with those
// flags, and a sandbox taken back from an older engine has one).
constexpr int kInitProtocol = 2;

enum class Request : std::uint32_t {
  config = 1,
  exec = 2,
  read = 3,
  write = 4,
  list = 5,
  remove = 6,
  standby = 7,
  keep = 8,
  signal = 9,
};

// fds that come with each request, in this order
//   config: none
//   exec:   stdin, stdout, stderr, status, cgroup directory, and on a host
//           with the process limit on cgroup v1 the commands' v1
//           cgroup.procs (the command joins it before it runs); last, with
//           Exec::program_fd, the program
//   read:   data (write end), status
//   write:  data (read end), status
//   list:   data (write end), status
//   remove: status
//   standby: a spare command cgroup directory, and the v1 cgroup.procs as
//           for exec: the init starts the next command's process there
//           ahead, and the exec that names that cgroup takes it. Its one
//           field, `now`: started at once, not after a quiet moment (the
//           first command's, in a sandbox made ahead, where no command runs),
//           and then one more fd last: a pipe's write end, where the init
//           writes '1' once that process is cloned ('0': none will be)
//   keep:   a listening SOCK_SEQPACKET socket, bound at a path only the
//           host's root reaches: from then on the engine's socket closing
//           is no end of the sandbox. The init waits there for the next
//           engine (whose connection becomes its control socket) and, while
//           none is connected, ends the sandbox itself at the request's
//           deadline (CLOCK_BOOTTIME, in ms; 0: none). The standby process
//           is dropped as the engine goes: the next engine knows nothing of it.
//   signal: none, and no answer: a signal for the process group of a
//           command the init started (its pid, as `started` said it) and
//           has not reaped yet; any other pid is ignored.

struct Config {
  rootfs::Plan plan;
  std::string hostname;
  std::string workdir;
  std::uint32_t uid = 1000;  // the sandbox user, inside
  std::uint32_t gid = 1000;
  // The seccomp filters every command runs under, installed in this order:
  // classic BPF programs (the bytes of their struct sock_filter arrays).
  std::vector<std::string> seccomp;
};

struct Exec {
  std::vector<std::string> argv;
  std::vector<std::string> env;  // NAME=VALUE
  std::string cwd;               // absolute
  // The program is the request's last fd (a sealed memfd of the engine's:
  // the desktop helper), run as it is, with no path in the sandbox; argv[0]
  // only names it.
  bool program_fd = false;
  // stdin, stdout and stderr are one terminal's end, and the command leads
  // a session of its own with it as its controlling terminal (else it leads
  // a process group of its own, in the init's session).
  bool terminal = false;
  // The init says `started` on the status pipe with the command's pid (in
  // the sandbox's pid namespace), as soon as it runs: for a later signal.
  bool report_pid = false;
};

struct FileRequest {
  std::string path;             // absolute
  std::uint64_t max_bytes = 0;  // read: a larger file fails EFBIG
};

// Which step of making a sandbox failed (Status::value of setup_failed;
// Status::extra packs the rootfs op index above the errno's 16 bits).
enum class SetupStep : std::int32_t {
  rootfs = 2,
  hostname = 3,
  capabilities = 4,
  signals = 5,
  cgroup_ns = 6,
  fds = 7,
  ids = 8,
  rlimits = 9,
};

// Which step of starting a command failed (Status::extra of spawn_failed).
enum class SpawnStep : std::int64_t { exec = 0, clone = 1, cwd = 2, setup = 3, limits = 4, seccomp = 5, user = 6 };

// One record on a status pipe; 24 bytes, so each write is atomic.
struct Status {
  enum Kind : std::uint32_t { setup_failed = 1, ready = 2, started = 3, spawn_failed = 4, exited = 5, done = 6 };
  std::uint32_t kind = 0;
  std::int32_t value = 0;  // errno, wait status, or the setup step
  std::int64_t extra = 0;  // errno of a failed step, a pid, a byte count
  std::int64_t pad = 0;
};
static_assert(sizeof(Status) == 24);
static_assert(sizeof(Status) <= 512, "a status write must be atomic (PIPE_BUF)");

std::string encode(const Config& c);
std::string encode(const Exec& e);
std::string encode(Request kind, const FileRequest& f);
std::string encode_standby(bool now);
bool decode(const std::string& bytes, Config& out);
bool decode(const std::string& bytes, Exec& out);
bool decode(const std::string& bytes, FileRequest& out);
// A standby request's `now`; false if `bytes` is not one.
bool decode_standby(const std::string& bytes, bool& now);
std::string encode_keep(std::int64_t deadline_ms);
// A keep request's deadline; false if `bytes` is not one.
bool decode_keep(const std::string& bytes, std::int64_t& deadline_ms);
std::string encode_signal(std::int32_t pid, std::int32_t signal);
// A signal request's pid and signal; false if `bytes` is not one.
bool decode_signal(const std::string& bytes, std::int32_t& pid, std::int32_t& signal);
Request kind_of(const std::string& bytes);

// list entries on the data pipe: type u32, mode u32, size u64, mtime_ms u64, name str
struct ListEntry {
  enum Type : std::uint32_t { kFile = 0, kDirectory = 1, kSymlink = 2, kOther = 3 };
  std::uint32_t type = kOther;
  std::uint32_t mode = 0;
  std::uint64_t size = 0;
  std::int64_t mtime_ms = 0;
  std::string name;
};
std::string encode(const ListEntry& e);
// Parses a whole listing; false on a malformed one.
bool decode_listing(const std::string& bytes, std::vector<ListEntry>& out);

}  // namespace mayura::protocol
