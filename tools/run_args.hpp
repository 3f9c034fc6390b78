#pragma once
// mayura-run's command line: a run's options, read and checked. Bad input
// exits 125 with its reason (usage_error), before anything is made.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "mayura/sandbox.hpp"

namespace mayura::tools {

inline constexpr int kSandboxFailed = 125;
inline constexpr int kTimedOut = 124;

struct Args {
  std::string image;
  std::string user;
  std::string workdir;
  mayura::Network network;
  std::int64_t lifetime_ms = 3600 * 1000;
  std::optional<std::int64_t> timeout_ms;
  std::map<std::string, std::string> env;
  std::string cwd;
  std::vector<std::pair<std::string, std::string>> copy_in;
  std::vector<std::pair<std::string, std::string>> copy_out;  // sandbox path, host file
  bool stdin_on = false;
  bool interactive = false;  // -i: the input streamed to the command as it comes
  bool tty = false;          // -t: the command on a terminal of its own
  bool json = false;
  bool local = false;
  bool lifetime_given = false;
  std::optional<double> cpus;
  std::optional<std::int64_t> memory_mib;
  std::optional<std::int64_t> disk_mib;
  std::optional<mayura::DiskIo> disk_io;
  bool writable_root = false;
  std::optional<std::string> from_snapshot;
  std::optional<std::string> snapshot_to;
  std::vector<mayura::VolumeMount> volumes;
  std::optional<std::int64_t> pids;
  std::optional<std::string> seccomp_file;
  std::vector<int> ports;
  std::optional<mayura::DesktopSize> desktop;
  std::string screenshot;  // a host file; empty: none
  std::vector<std::string> command;
};

// argv's options and command. `doctor`, --help and --version are answered
// here, and exit. Without a command (and an image of the store to run its
// own) the run is bad input, unless `command_needed` is false (a session of
// tools, which runs what it is asked).
Args parse_run_args(int argc, char** argv, bool command_needed = true);

}  // namespace mayura::tools
