// mayura-run: runs one command in a fresh sandbox and releases it. The main
// of both mayura-run (the light client of mayurad) and mayura-run-local (an
// engine in this process): run_engine.hpp says which does what.

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <functional>
#include <initializer_list>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <iostream>
#include <iterator>
#include <mutex>
#include <nlohmann/json.hpp>
#include <sstream>
#include <stop_token>
#include <string>
#include <thread>
#include <vector>

#include "run_engine.hpp"
#include "stop_signals.hpp"
#include "mayura/sandbox.hpp"
#include "mayura/runtime.hpp"

namespace mayura::tools {

void usage_error(const std::string& message) {
  std::fprintf(stderr, "mayura-run: INVALID_INPUT: %s\n(see mayura-run --help)\n", message.c_str());
  std::exit(125);
}

}  // namespace mayura::tools

namespace {

using mayura::tools::usage_error;

constexpr int kSandboxFailed = 125;
constexpr int kTimedOut = 124;
// What --json keeps of each stream of a command stopped at its timeout.
constexpr std::size_t kKept = std::size_t{16} << 20;

const char* kUsage = R"(usage: mayura-run [OPTIONS] [--] COMMAND [ARG...]
       mayura-run image import|list|inspect|rm ...   (mayura-run image --help)
       mayura-run snapshot list|delete ...   (mayura-run snapshot --help)
       mayura-run volume create|list|delete ...   (mayura-run volume --help)

Runs COMMAND in a fresh sandbox, streams its output, and releases the sandbox.
With --image NAME[:TAG] of the store and no COMMAND, the image's Entrypoint
and Cmd run. The sandbox comes from mayurad when MAYURA_HOST names one, or
when its default socket (/run/mayura/mayurad.sock) answers; else from an
engine in this process (which needs root).

Options:
  --image IMAGE          the sandbox's image (default: host): NAME[:TAG] of the
                         image store (its Env, WorkingDir and User apply), or a
                         directory holding a root file system
  --user USER            run as UID, UID:GID, or NAME[:GROUP] of the image's
                         passwd (default: the image's User, else 1000:1000)
  --workdir PATH         the sandbox's writable working directory (default:
                         the image's WorkingDir, else /workspace)
  --network none|all     the sandbox's network: none (the default: loopback
                         only) or all (the internet, but not this host's
                         services, other sandboxes or metadata addresses)
  --allow DOMAIN[:PORT]  let the sandbox reach DOMAIN (or *.DOMAIN, its
                         subdomains) on ports 80 and 443, or on PORT only,
                         through the engine's DNS and proxy, and nothing else
                         (repeatable)
  --lifetime SECONDS     the sandbox's lifetime (default: 3600; through a
                         daemon, its maximum, when nothing is copied in or out or
                         published, since the sandbox ends with the command)
  --timeout SECONDS      stop the command after this long (exit status 124)
  --env NAME=VALUE       set a variable for the command (repeatable)
  --env NAME             pass NAME from this environment (repeatable)
  --cwd PATH             the command's directory (default: the workdir)
  --copy-in HOST:PATH    copy a host file into the sandbox first (repeatable)
  --copy-out PATH:HOST   copy a sandbox file to the host once the command has
                         ended, before the sandbox goes (repeatable; one that
                         fails is said, and the exit status is 125)
  --stdin                pass this process's standard input to the command
  --cpus N               bound the sandbox to N cpus (may be fractional)
  --memory MIB           bound its memory to MIB mebibytes, no swap; a command
                         the kernel kills for it exits 137
  --pids N               bound its commands to N processes and threads
  --disk MIB             put the working directory and /tmp on a disk of its
                         own of MIB mebibytes (16 or more) instead of memory;
                         past it a write fails "No space left on device"
  --writable-root        make the root writable too, on the disk (needs --disk
                         or --from-snapshot, and an image from the store):
                         what the image's root installs stays, in its quota
  --disk-io BOUNDS       bound the I/O of the disk and of each volume, per
                         second: a comma-separated list of rbps=, wbps= (bytes;
                         with K, M or G for KiB, MiB, GiB), riops=, wiops=
                         (operations), e.g. wbps=10M,riops=500; where the
                         host has cgroup2's io controller
  --from-snapshot NAME   start from the snapshot NAME: the working directory
                         and /tmp on a copy of its disk (of its size)
  --snapshot-to NAME     once the command has ended, whatever its exit status
                         (a timeout too), snapshot the sandbox's disk as NAME,
                         replacing one of that name; needs --disk or
                         --from-snapshot. The exit status stays the command's;
                         a snapshot that fails is said, and it is 125
  --volume NAME:PATH[:ro]
                         mount the volume NAME at PATH (absolute), read-only
                         with :ro; one sandbox at a time uses a volume (the
                         next run may take it at once; repeatable, at most 16)
  --port N               publish the sandbox's port N (a server on its
                         127.0.0.1) on this host's 127.0.0.1; the URL is
                         printed on stderr (repeatable)
  --seccomp FILE         an OCI/Docker JSON seccomp profile instead of the
                         built-in one (unknown syscall names are skipped)
  --desktop [WxH]        give the sandbox an X display (Xvfb from the image) of
                         WxH pixels (default 1280x800); commands see DISPLAY
  --screenshot FILE      with --desktop: write a PNG of the screen to FILE when
                         the command ends, or at --timeout before it is stopped
  --json                 print one JSON object: exitCode, stdout, stderr,
                         truncated, durationMs, timedOut, oomKilled (and, with
                         --snapshot-to, snapshot: the one taken, or null)
  --local                an engine in this process, never a daemon
  --help                 this text
  --version              the version, and what this host's cgroups enforce
  doctor                 (as the only argument) the same report as --version

Environment, for a daemon:
  MAYURA_HOST            unix:///PATH or https://HOST:PORT of a mayurad
  MAYURA_TOKEN           the bearer token an https daemon knows you by (or
  MAYURA_TOKEN_FILE        a file holding it)
  MAYURA_CA_FILE         the CA (PEM) an https daemon's certificate is signed
                         by (default: the system's)
A daemon keeps its own settings (its config file): the variables below are
for an engine in this process only, and a daemon takes images by name only.

Environment (where an engine in this process keeps its state; defaults suit
most hosts):
  MAYURA_IMAGE_STORE     the image store (/var/lib/mayura/store)
  MAYURA_IMAGE_DIR       where directory images are found by name
                         (/var/lib/mayura/images)
  MAYURA_STATE_DIR       the engine's records (/run/mayura)
  MAYURA_DISK_DIR        where sandboxes' disks are made (/var/lib/mayura/disks)
  MAYURA_SNAPSHOT_DIR    where snapshots are kept (/var/lib/mayura/snapshots)
  MAYURA_VOLUME_DIR      where volumes are kept (/var/lib/mayura/volumes)
  MAYURA_CGROUP_ROOT     the cgroup2 directory for sandboxes (see doctor)
  MAYURA_ID_BASE, MAYURA_ID_SLOTS   the host id ranges sandboxes map to
  MAYURA_DNS_SERVERS     IPv4 servers (comma-separated) that resolve names for
                         sandboxes (default: this host's resolver)
  MAYURA_PUBLIC_RANGES   ranges (comma-separated CIDR) --allow may reach
                         although they are private or reserved
  MAYURA_ALLOW_PRIVATE=1 let --allow reach private addresses

Exit status: the command's; 124 if it timed out; 125 if the sandbox could not
be made, the input was bad, the sandbox's lifetime ended under the command, or
a --copy-out or --snapshot-to failed.
)";

double parse_number(const std::string& flag, const std::string& value, double max, const char* what) {
  char* end = nullptr;
  errno = 0;
  const double v = std::strtod(value.c_str(), &end);
  if (errno != 0 || end == value.c_str() || *end != '\0' || !(v > 0) || v > max) {
    usage_error(flag + " takes " + what + ", not '" + value + "'");
  }
  return v;
}

std::int64_t parse_count(const std::string& flag, const std::string& value, std::int64_t max, const char* what) {
  const double v = parse_number(flag, value, static_cast<double>(max), what);
  if (v != static_cast<double>(static_cast<std::int64_t>(v)))
    usage_error(flag + " takes " + what + ", not '" + value + "'");
  return static_cast<std::int64_t>(v);
}

void print_version(bool local) { std::fputs(mayura::tools::describe_host(local).c_str(), stdout); }

double parse_seconds(const std::string& flag, const std::string& value) {
  char* end = nullptr;
  errno = 0;
  const double v = std::strtod(value.c_str(), &end);
  if (errno != 0 || end == value.c_str() || *end != '\0' || !(v > 0) || v > 1e7) {
    usage_error(flag + " takes a positive number of seconds, not '" + value + "'");
  }
  return v;
}

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

// A snapshot's name as the contract takes it; else bad input naming `flag`.
std::string snapshot_name(const std::string& flag, const std::string& name) {
  try {
    mayura::check_snapshot_name(name);
  } catch (const mayura::SandboxError& e) {
    usage_error(flag + ": " + e.what());
  }
  return name;
}

// rbps=N,wbps=N,riops=N,wiops=N (any of them, in any order), as --disk-io
// takes: bytes with an optional K, M or G (binary); the contract checks the
// ranges, before anything is made.
mayura::DiskIo disk_io(const std::string& spec) {
  const std::string form = "--disk-io takes KEY=N[,KEY=N...] with rbps, wbps, riops or wiops, not '" + spec + "'";
  mayura::DiskIo io;
  std::size_t at = 0;
  while (at <= spec.size()) {
    const std::size_t comma = std::min(spec.find(',', at), spec.size());
    const std::string item = spec.substr(at, comma - at);
    const std::size_t eq = item.find('=');
    if (eq == std::string::npos) usage_error(form);
    const std::string key = item.substr(0, eq);
    std::string number = item.substr(eq + 1);
    std::int64_t scale = 1;
    const bool bytes = key == "rbps" || key == "wbps";
    if (bytes && !number.empty()) {
      const char unit = number.back();
      if (unit == 'K' || unit == 'k') scale = std::int64_t{1} << 10;
      if (unit == 'M' || unit == 'm') scale = std::int64_t{1} << 20;
      if (unit == 'G' || unit == 'g') scale = std::int64_t{1} << 30;
      if (scale != 1) number.pop_back();
    }
    const std::int64_t v =
        parse_count("--disk-io " + key, number, (std::int64_t{1} << 50) / scale, "a whole number") * scale;
    if (key == "rbps") io.read_bps = v;
    else if (key == "wbps") io.write_bps = v;
    else if (key == "riops") io.read_iops = v;
    else if (key == "wiops") io.write_iops = v;
    else usage_error(form);
    at = comma + 1;
  }
  return io;
}

// NAME:PATH or NAME:PATH:ro, as --volume takes: a volume's name as the
// contract takes it, and an absolute path (which the contract checks
// further, before anything is made); else bad input.
mayura::VolumeMount volume_mount(const std::string& spec) {
  const std::string form = "--volume takes NAME:PATH or NAME:PATH:ro, not '" + spec + "'";
  const auto first = spec.find(':');
  if (first == std::string::npos) usage_error(form);
  mayura::VolumeMount mount;
  mount.name = spec.substr(0, first);
  mount.path = spec.substr(first + 1);
  if (const auto second = mount.path.find(':'); second != std::string::npos) {
    if (mount.path.substr(second + 1) != "ro") usage_error(form);
    mount.read_only = true;
    mount.path.resize(second);
  }
  if (mount.name.empty() || mount.path.empty()) usage_error(form);
  try {
    mayura::check_volume_name(mount.name);
  } catch (const mayura::SandboxError& e) {
    usage_error("--volume " + spec + ": " + e.what());
  }
  if (mount.path.front() != '/') usage_error("--volume " + spec + ": the path in the sandbox must be absolute");
  return mount;
}

// "A:B", both sides non-empty (the first colon splits them), as
// --copy-in and --copy-out take; else `form` is said.
std::pair<std::string, std::string> colon_pair(const std::string& spec, const char* form) {
  const auto colon = spec.find(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == spec.size()) usage_error(form);
  return {spec.substr(0, colon), spec.substr(colon + 1)};
}

// "WxH", two whole numbers; the limits layer checks the bounds.
std::optional<mayura::DesktopSize> parse_size(const std::string& text) {
  const auto x = text.find('x');
  const auto digits = [](std::string_view d) {
    return !d.empty() && d.size() <= 5 && d.find_first_not_of("0123456789") == std::string_view::npos;
  };
  if (x == std::string::npos || !digits(std::string_view(text).substr(0, x)) ||
      !digits(std::string_view(text).substr(x + 1))) {
    return std::nullopt;
  }
  return mayura::DesktopSize{std::stoi(text.substr(0, x)), std::stoi(text.substr(x + 1))};
}

Args parse(int argc, char** argv) {
  Args a;
  if (argc == 2 && std::string(argv[1]) == "doctor") {
    print_version(false);
    std::exit(0);
  }
  int i = 1;
  bool network_all = false;
  auto value = [&](const std::string& flag) -> std::string {
    if (i + 1 >= argc) usage_error(flag + " needs a value");
    return argv[++i];
  };
  for (; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--") {
      ++i;
      break;
    }
    if (arg.rfind("--", 0) != 0) break;
    if (arg == "--help" || arg == "-h") {
      std::fputs(kUsage, stdout);
      std::exit(0);
    } else if (arg == "--version") {
      print_version(a.local);
      std::exit(0);
    } else if (arg == "--cpus") {
      a.cpus = parse_number(arg, value(arg), 1024, "a positive number of cpus");
    } else if (arg == "--memory") {
      a.memory_mib = parse_count(arg, value(arg), std::int64_t{1} << 30, "a whole number of MiB");
    } else if (arg == "--disk") {
      a.disk_mib = parse_count(arg, value(arg), std::int64_t{1} << 24, "a whole number of MiB");
    } else if (arg == "--writable-root") {
      a.writable_root = true;
    } else if (arg == "--disk-io") {
      a.disk_io = disk_io(value(arg));
    } else if (arg == "--from-snapshot") {
      a.from_snapshot = snapshot_name(arg, value(arg));
    } else if (arg == "--snapshot-to") {
      a.snapshot_to = snapshot_name(arg, value(arg));
    } else if (arg == "--volume") {
      a.volumes.push_back(volume_mount(value(arg)));
    } else if (arg == "--pids") {
      a.pids = parse_count(arg, value(arg), std::int64_t{1} << 22, "a whole number of processes");
    } else if (arg == "--port") {
      a.ports.push_back(static_cast<int>(parse_count(arg, value(arg), 65535, "a port number")));
    } else if (arg == "--seccomp") {
      a.seccomp_file = value(arg);
    } else if (arg == "--desktop") {
      // The size is optional: a next argument that is no size is not ours.
      a.desktop = mayura::DesktopSize{};
      if (i + 1 < argc) {
        if (const auto size = parse_size(argv[i + 1])) {
          a.desktop = size;
          ++i;
        }
      }
    } else if (arg == "--screenshot") {
      a.screenshot = value(arg);
      if (a.screenshot.empty()) usage_error("--screenshot takes a file");
    } else if (arg == "--image") {
      a.image = value(arg);
    } else if (arg == "--user") {
      a.user = value(arg);
    } else if (arg == "--workdir") {
      a.workdir = value(arg);
    } else if (arg == "--network") {
      const std::string kind = value(arg);
      if (kind == "all") {
        network_all = true;
      } else if (kind != "none") {
        usage_error("--network takes none or all, not '" + kind + "'");
      }
    } else if (arg == "--allow") {
      a.network.kind = mayura::NetworkKind::allowlist;
      a.network.allow.push_back(value(arg));
    } else if (arg == "--lifetime") {
      a.lifetime_ms = static_cast<std::int64_t>(parse_seconds(arg, value(arg)) * 1000);
      a.lifetime_given = true;
    } else if (arg == "--timeout") {
      a.timeout_ms = static_cast<std::int64_t>(parse_seconds(arg, value(arg)) * 1000);
    } else if (arg == "--env") {
      const std::string spec = value(arg);
      const auto eq = spec.find('=');
      if (eq == std::string::npos) {
        // The value comes from our own environment, so it is on no command line.
        const char* v = std::getenv(spec.c_str());
        if (!v) usage_error("--env " + spec + ": no such variable in this environment");
        a.env[spec] = v;
      } else {
        a.env[spec.substr(0, eq)] = spec.substr(eq + 1);
      }
    } else if (arg == "--cwd") {
      a.cwd = value(arg);
    } else if (arg == "--copy-in") {
      a.copy_in.push_back(colon_pair(value(arg), "--copy-in takes HOSTFILE:PATH"));
    } else if (arg == "--copy-out") {
      a.copy_out.push_back(colon_pair(value(arg), "--copy-out takes PATH:HOSTFILE"));
    } else if (arg == "--stdin") {
      a.stdin_on = true;
    } else if (arg == "--json") {
      a.json = true;
    } else if (arg == "--local") {
      a.local = true;
    } else {
      usage_error("unknown option " + arg);
    }
  }
  for (; i < argc; ++i) a.command.emplace_back(argv[i]);
  // Without a command, an image from the store runs its own (Entrypoint and Cmd).
  if (a.command.empty() && a.image.empty()) usage_error("no command given");
  if (!a.screenshot.empty() && !a.desktop) usage_error("--screenshot needs --desktop");
  if (a.snapshot_to && !a.disk_mib && !a.from_snapshot) {
    usage_error("--snapshot-to needs a disk to snapshot: --disk MIB or --from-snapshot NAME");
  }
  if (network_all) {
    if (a.network.kind == mayura::NetworkKind::allowlist) usage_error("--network all and --allow do not go together");
    a.network.kind = mayura::NetworkKind::all;
  }
  return a;
}

std::string read_host_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  // (thrown, not exited on: an engine in this process is up by now, and must
  // be shut down on the way out)
  if (!in)
    throw mayura::SandboxError(mayura::Reason::INVALID_INPUT, "cannot read " + path + ": " + std::strerror(errno));
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// A sandbox file written to a host file; false, said on stderr, when either
// side fails (the run goes on to release the sandbox).
bool copy_out(const mayura::Sandbox& sandbox, const std::string& path, const std::string& host) {
  std::string data;
  try {
    data = sandbox.read_file(path);
  } catch (const mayura::SandboxError& e) {
    std::fprintf(stderr, "mayura-run: --copy-out %s: %s: %s\n", path.c_str(),
                 std::string(mayura::reason_name(e.reason())).c_str(), e.what());
    return false;
  }
  std::ofstream out(host, std::ios::binary | std::ios::trunc);
  out.write(data.data(), static_cast<std::streamsize>(data.size()));
  out.close();
  if (!out) {
    std::fprintf(stderr, "mayura-run: --copy-out %s: cannot write %s\n", path.c_str(), host.c_str());
    return false;
  }
  return true;
}

// The sandbox's disk as the snapshot `name`; none, said on stderr, when it
// fails (the run goes on to release the sandbox).
std::optional<mayura::Snapshot> snapshot_to(const mayura::Sandbox& sandbox, const std::string& name) {
  try {
    return sandbox.snapshot(name);
  } catch (const mayura::SandboxError& e) {
    std::fprintf(stderr, "mayura-run: --snapshot-to %s: %s: %s\n", name.c_str(),
                 std::string(mayura::reason_name(e.reason())).c_str(), e.what());
    return std::nullopt;
  }
}

// A snapshot as mayurad's API writes one.
nlohmann::json snapshot_json(const mayura::Snapshot& s) {
  return {{"name", s.name}, {"diskMiB", s.disk_mib}, {"storedBytes", s.stored_bytes}, {"createdAt", s.created_ms}};
}

// A volume as mayurad's API writes one.
nlohmann::json volume_json(const mayura::Volume& v) {
  return {{"name", v.name}, {"sizeMiB", v.size_mib}, {"createdAt", v.created_ms}, {"inUse", v.in_use}};
}

// False when the reader is gone (EPIPE, or another failure to write).
bool write_out(int fd, std::string_view chunk) {
  while (!chunk.empty()) {
    const ssize_t n = ::write(fd, chunk.data(), chunk.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    chunk.remove_prefix(static_cast<std::size_t>(n));
  }
  return true;
}

void write_screenshot(const mayura::Sandbox& sandbox, const std::string& file, const std::stop_token& stop) {
  mayura::ScreenshotOptions o;
  o.cancellation = stop;
  const std::string png = sandbox.screenshot(o);
  std::ofstream out(file, std::ios::binary | std::ios::trunc);
  out.write(png.data(), static_cast<std::streamsize>(png.size()));
  out.close();
  if (!out) throw mayura::SandboxError(mayura::Reason::INVALID_INPUT, "cannot write the screenshot to " + file);
}

// The command, and the screenshot --screenshot asks for: when the command
// ends, or at --timeout while it still runs (a GUI program's window is gone
// once it is stopped), and then it is stopped as a timeout stops it.
mayura::ExecResult exec_with_screenshot(const mayura::Sandbox& sandbox, const Args& args, mayura::ExecOptions exec,
                                        const std::stop_source& stop) {
  if (args.screenshot.empty()) return sandbox.exec(args.command, exec);
  if (!args.timeout_ms) {
    mayura::ExecResult r = sandbox.exec(args.command, exec);
    write_screenshot(sandbox, args.screenshot, stop.get_token());
    return r;
  }
  // The command is stopped by cancelling it, which gives no result: what
  // --json prints of its output is kept here as it comes.
  std::string kept_out, kept_err;
  bool clipped = false;
  if (args.json) {
    const auto keep = [&clipped](std::string& into, std::string_view chunk) {
      const std::size_t room = kKept - std::min(kKept, into.size());
      if (chunk.size() > room) clipped = true;
      into.append(chunk.substr(0, room));
    };
    exec.on_stdout = [&keep, &kept_out](std::string_view c) { keep(kept_out, c); };
    exec.on_stderr = [&keep, &kept_err](std::string_view c) { keep(kept_err, c); };
  }
  const auto started = std::chrono::steady_clock::now();
  std::stop_source command_stop;
  const std::stop_callback forward(stop.get_token(), [&command_stop] { command_stop.request_stop(); });
  exec.timeout_ms.reset();
  exec.cancellation = command_stop.get_token();
  std::mutex mutex;
  std::condition_variable ended;
  bool done = false;
  std::atomic<bool> shot{false};
  std::exception_ptr shot_failed;
  mayura::OwnedThread timer("mayura-run-time", [&] {
    std::unique_lock lock(mutex);
    if (ended.wait_for(lock, std::chrono::milliseconds(*args.timeout_ms), [&] { return done; })) return;
    lock.unlock();
    try {
      write_screenshot(sandbox, args.screenshot, stop.get_token());
    } catch (...) {
      shot_failed = std::current_exception();
    }
    shot = true;
    command_stop.request_stop();
  });
  const auto finish = [&] {
    {
      const std::lock_guard lock(mutex);
      done = true;
    }
    ended.notify_all();
    timer.join();
  };
  mayura::ExecResult r;
  try {
    r = sandbox.exec(args.command, exec);
  } catch (const mayura::SandboxError& e) {
    finish();
    if (!shot || e.reason() != mayura::Reason::CANCELLED || stop.stop_requested()) throw;
    if (shot_failed) std::rethrow_exception(shot_failed);
    mayura::ExecResult timed_out;
    timed_out.timed_out = true;
    timed_out.duration_ms =
        std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - started).count();
    timed_out.stdout = std::move(kept_out);
    timed_out.stderr = std::move(kept_err);
    timed_out.truncated = clipped;
    return timed_out;
  } catch (...) {
    finish();
    throw;
  }
  finish();
  if (shot_failed) std::rethrow_exception(shot_failed);
  if (!shot) write_screenshot(sandbox, args.screenshot, stop.get_token());
  return r;
}

// A file --screenshot or --copy-out cannot write is bad input before
// anything is made (checked without making it: a run that fails leaves no
// empty file).
void check_writable(const std::string& option, const std::string& file) {
  const auto slash = file.rfind('/');
  const std::string dir = slash == std::string::npos ? "." : slash == 0 ? "/" : file.substr(0, slash);
  const bool ok =
      ::access(file.c_str(), F_OK) == 0 ? ::access(file.c_str(), W_OK) == 0 : ::access(dir.c_str(), W_OK | X_OK) == 0;
  if (!ok) usage_error(option + " " + file + ": " + std::strerror(errno));
}

const char* kSnapshotUsage = R"(usage: mayura-run snapshot [--local] COMMAND

  list [--json]     the snapshots: each one's name, the size of a disk made
                    from it, what it takes on the host, and when it was taken
                    (--json: an array of {name, diskMiB, storedBytes,
                    createdAt}, createdAt in ms since the Unix epoch)
  delete NAME...    delete snapshots (rm is the same); one that is not there
                    is said, and the exit status is 125
  --local           the snapshots of an engine in this process, never a
                    daemon's

Take one with `mayura-run --disk MIB --snapshot-to NAME -- COMMAND`, start
from it with `mayura-run --from-snapshot NAME -- COMMAND`. They are the
daemon's when runs go through one (each of its clients has its own), else
those of MAYURA_SNAPSHOT_DIR (default /var/lib/mayura/snapshots): the two are
not the same snapshots.
)";

// "2026-12-06 13:44:28" (UTC), from ms since the Unix epoch.
std::string utc_time(std::int64_t ms) {
  const std::time_t t = static_cast<std::time_t>(ms / 1000);
  std::tm tm{};
  char buf[32] = "?";
  if (::gmtime_r(&t, &tm)) std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S", &tm);
  return buf;
}

std::string mebibytes(std::int64_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f MiB", static_cast<double>(bytes) / (1 << 20));
  return buf;
}

// The words of `mayura-run snapshot|volume ...`: --local and --json, then
// the command and its names. For --help, or no command, the usage is
// printed and `exit` is the status to end with (else -1).
struct StoreCommand {
  int exit = -1;
  bool local = false;
  bool json = false;
  std::string command;
  std::vector<std::string> words;
};

template <class Bad>
StoreCommand parse_store_command(int argc, char** argv, const char* usage, const Bad& bad) {
  StoreCommand parsed;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      std::fputs(usage, stdout);
      parsed.exit = 0;
      return parsed;
    }
    if (arg == "--local") {
      parsed.local = true;
    } else if (arg == "--json") {
      parsed.json = true;
    } else if (arg.rfind('-', 0) == 0) {
      bad("unknown option " + arg);
    } else {
      parsed.words.push_back(arg);
    }
  }
  if (parsed.words.empty()) {
    std::fputs(usage, stderr);
    parsed.exit = kSandboxFailed;
    return parsed;
  }
  parsed.command = parsed.words.front();
  parsed.words.erase(parsed.words.begin());
  return parsed;
}

// Runs `body` on the sandboxes of the engine a run would use (a daemon's if
// one is on its unix socket, unless `local`), refusing an engine without
// `feature` ("keeps no WHAT"). A failure is said; the status is then 125.
int with_store_engine(bool local, bool mayura::Features::*feature, const char* what,
                      const std::function<int(const mayura::Sandboxes&)>& body) {
  try {
    const auto engine = mayura::tools::choose_engine(local);
    const auto sandboxes = mayura::create_sandboxes(engine.provider(), mayura::SandboxesOptions{});
    if (!(sandboxes.features().*feature)) {
      throw mayura::SandboxError(
          mayura::Reason::INVALID_INPUT,
          (engine.daemon.empty() ? std::string("this engine") : engine.daemon) + " keeps no " + what);
    }
    return body(sandboxes);
  } catch (const mayura::SandboxError& e) {
    std::fprintf(stderr, "mayura-run: %s: %s\n", std::string(mayura::reason_name(e.reason())).c_str(), e.what());
    return kSandboxFailed;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "mayura-run: INTERNAL: %s\n", e.what());
    return kSandboxFailed;
  }
}

// Deletes each name on its own: one refused for a reason in `said` (not
// there, in use) is said and makes the status 125, and the rest still go.
int delete_each(const std::vector<std::string>& names, const std::function<void(const std::string&)>& remove,
                std::initializer_list<mayura::Reason> said) {
  int status = 0;
  for (const auto& name : names) {
    try {
      remove(name);
      std::printf("deleted %s\n", name.c_str());
    } catch (const mayura::SandboxError& e) {
      if (std::find(said.begin(), said.end(), e.reason()) == said.end()) throw;
      std::fprintf(stderr, "mayura-run: %s: %s\n", std::string(mayura::reason_name(e.reason())).c_str(), e.what());
      status = kSandboxFailed;
    }
  }
  return status;
}

// mayura-run snapshot list|delete; argv[0] is "snapshot". The snapshots of
// the engine a run would use: a daemon's (through the light client when it
// is on a unix socket), or one in this process.
int run_snapshot_command(int argc, char** argv) {
  const auto bad = [](const std::string& message) {
    std::fprintf(stderr, "mayura-run: INVALID_INPUT: %s\n(see mayura-run snapshot --help)\n", message.c_str());
    std::exit(kSandboxFailed);
  };
  StoreCommand parsed = parse_store_command(argc, argv, kSnapshotUsage, bad);
  if (parsed.exit >= 0) return parsed.exit;
  const bool local = parsed.local;
  const bool json = parsed.json;
  const std::string& command = parsed.command;
  std::vector<std::string>& words = parsed.words;
  const bool list = command == "list" || command == "ls";
  const bool remove = command == "delete" || command == "rm";
  if (!list && !remove) bad("mayura-run snapshot has no command " + command + " (list or delete)");
  if (list && !words.empty()) bad("snapshot list takes no names");
  if (remove && words.empty()) bad("snapshot delete needs the name of a snapshot");
  if (json && !list) bad("--json is for snapshot list");
  for (const auto& name : words) {
    try {
      mayura::check_snapshot_name(name);
    } catch (const mayura::SandboxError& e) {
      bad(e.what());
    }
  }
  return with_store_engine(local, &mayura::Features::snapshot, "snapshots", [&](const mayura::Sandboxes& sandboxes) {
    if (list) {
      const auto snapshots = sandboxes.snapshots();
      if (json) {
        nlohmann::json out = nlohmann::json::array();
        for (const auto& s : snapshots) out.push_back(snapshot_json(s));
        std::printf("%s\n", out.dump(2).c_str());
        return 0;
      }
      std::printf("%-40s %10s %12s  %s\n", "NAME", "DISK", "STORED", "CREATED (UTC)");
      for (const auto& s : snapshots) {
        std::printf("%-40s %6lld MiB %12s  %s\n", s.name.c_str(), static_cast<long long>(s.disk_mib),
                    mebibytes(s.stored_bytes).c_str(), utc_time(s.created_ms).c_str());
      }
      return 0;
    }
    return delete_each(words, [&](const std::string& name) { sandboxes.delete_snapshot(name); },
                       {mayura::Reason::NOT_FOUND});
  });
}

const char* kVolumeUsage = R"(usage: mayura-run volume [--local] COMMAND

  create NAME SIZE_MIB  a new, empty volume of SIZE_MIB mebibytes (16 to
                        16777216), its size its quota; a name taken is
                        refused
  list [--json]         the volumes: each one's name, its size, whether a
                        sandbox uses it now, and when it was made (--json:
                        an array of {name, sizeMiB, createdAt, inUse},
                        createdAt in ms since the Unix epoch)
  delete NAME...        delete volumes, and their files with them (rm is the
                        same); one that is not there, or in use, is said, and
                        the exit status is 125
  --local               the volumes of an engine in this process, never a
                        daemon's

Mount one with `mayura-run --volume NAME:PATH[:ro] -- COMMAND`; one sandbox at
a time uses it. They are the daemon's when runs go through one (each of its
clients has its own), else those of MAYURA_VOLUME_DIR (default
/var/lib/mayura/volumes): the two are not the same volumes.
)";

// mayura-run volume create|list|delete; argv[0] is "volume". The volumes of
// the engine a run would use, as for run_snapshot_command.
int run_volume_command(int argc, char** argv) {
  const auto bad = [](const std::string& message) {
    std::fprintf(stderr, "mayura-run: INVALID_INPUT: %s\n(see mayura-run volume --help)\n", message.c_str());
    std::exit(kSandboxFailed);
  };
  StoreCommand parsed = parse_store_command(argc, argv, kVolumeUsage, bad);
  if (parsed.exit >= 0) return parsed.exit;
  const bool local = parsed.local;
  const bool json = parsed.json;
  const std::string& command = parsed.command;
  std::vector<std::string>& words = parsed.words;
  const bool make = command == "create";
  const bool list = command == "list" || command == "ls";
  const bool remove = command == "delete" || command == "rm";
  if (!make && !list && !remove) bad("mayura-run volume has no command " + command + " (create, list or delete)");
  if (make && words.size() != 2) bad("volume create takes a name and a size in MiB");
  if (list && !words.empty()) bad("volume list takes no names");
  if (remove && words.empty()) bad("volume delete needs the name of a volume");
  if (json && !list) bad("--json is for volume list");
  std::int64_t size_mib = 0;
  if (make) {
    const std::string& size = words.back();
    const bool digits = !size.empty() && size.size() <= 9 && size.find_first_not_of("0123456789") == std::string::npos;
    if (digits) size_mib = std::stoll(size);
    if (!digits || size_mib < 16 || size_mib > (std::int64_t{1} << 24)) {
      bad("volume create takes a size of 16 to 16777216 MiB, not '" + size + "'");
    }
    words.pop_back();
  }
  for (const auto& name : words) {
    try {
      mayura::check_volume_name(name);
    } catch (const mayura::SandboxError& e) {
      bad(e.what());
    }
  }
  return with_store_engine(local, &mayura::Features::volumes, "volumes", [&](const mayura::Sandboxes& sandboxes) {
    if (make) {
      const mayura::Volume made = sandboxes.create_volume(words.front(), size_mib);
      std::printf("created %s\n", made.name.c_str());
      return 0;
    }
    if (list) {
      const auto volumes = sandboxes.volumes();
      if (json) {
        nlohmann::json out = nlohmann::json::array();
        for (const auto& v : volumes) out.push_back(volume_json(v));
        std::printf("%s\n", out.dump(2).c_str());
        return 0;
      }
      std::printf("%-40s %12s  %-6s  %s\n", "NAME", "SIZE", "IN USE", "CREATED (UTC)");
      for (const auto& v : volumes) {
        std::printf("%-40s %8lld MiB  %-6s  %s\n", v.name.c_str(), static_cast<long long>(v.size_mib),
                    v.in_use ? "yes" : "no", utc_time(v.created_ms).c_str());
      }
      return 0;
    }
    return delete_each(words, [&](const std::string& name) { sandboxes.delete_volume(name); },
                       {mayura::Reason::NOT_FOUND, mayura::Reason::INVALID_INPUT});
  });
}

}  // namespace

int main(int argc, char** argv) {
  mayura::tools::keep_command_line(argv);
  if (argc >= 2 && std::string(argv[1]) == "image") return mayura::tools::run_image_command(argc - 1, argv + 1);
  if (argc >= 2 && std::string(argv[1]) == "snapshot") return run_snapshot_command(argc - 1, argv + 1);
  if (argc >= 2 && std::string(argv[1]) == "volume") return run_volume_command(argc - 1, argv + 1);
  Args args = parse(argc, argv);
  if (!args.screenshot.empty()) check_writable("--screenshot", args.screenshot);
  for (const auto& [path, host] : args.copy_out) check_writable("--copy-out", host);

  // SIGINT, SIGTERM and SIGHUP cancel the command and release the sandbox.
  const mayura::tools::StopSignals stop_signals({SIGINT, SIGTERM, SIGHUP});
  std::stop_source stop;
  const mayura::tools::SignalWatch on_stop(stop_signals, [&stop](int) { stop.request_stop(); });

  std::optional<mayura::Sandbox> sandbox;
  std::string daemon;  // the daemon the run goes through; empty: none
  // Output to a closed pipe fails with EPIPE instead of killing mayura-run
  // before it released the sandbox.
  ::signal(SIGPIPE, SIG_IGN);
  std::atomic<bool> reader_gone{false};
  try {
    // First, before any input is read, since the client may hand the whole
    // run over to mayura-run-local in either: before anything is made, an
    // image with no command of its own is bad input; then the engine.
    if (args.command.empty()) args.command = mayura::tools::image_default_command(args.image);
    const auto engine = mayura::tools::choose_engine(args.local);
    daemon = engine.daemon;

    std::string input;
    if (args.stdin_on) input.assign(std::istreambuf_iterator<char>(std::cin), {});
    std::vector<std::pair<std::string, std::string>> files;
    for (const auto& [host, path] : args.copy_in) files.emplace_back(path, read_host_file(host));
    std::optional<std::string> profile;
    if (args.seccomp_file) profile = read_host_file(*args.seccomp_file);

    mayura::CreateOptions create;
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
    create.seccomp_profile = profile;
    create.ports = args.ports;
    create.desktop = args.desktop;

    mayura::ExecOptions exec;
    exec.cwd = args.cwd;
    exec.env = args.env;
    exec.timeout_ms = args.timeout_ms;
    exec.cancellation = stop.get_token();
    if (args.stdin_on) exec.stdin = std::move(input);
    if (!args.json) {
      // A reader that went away (`mayura-run -- yes | head -1`) ends the
      // command, as SIGPIPE would a pipeline's writer; the sandbox is then
      // released as after any cancellation.
      exec.on_stdout = [&stop, &reader_gone](std::string_view c) {
        if (!reader_gone && !write_out(1, c)) {
          reader_gone = true;
          stop.request_stop();
        }
      };
      exec.on_stderr = [](std::string_view c) { write_out(2, c); };
      exec.max_output_bytes = 1;  // streamed already; keep nothing
    }

    mayura::ExecResult result;
    bool copied_out = true;
    std::optional<mayura::Snapshot> taken;  // --snapshot-to's
    if (engine.run && files.empty() && args.copy_out.empty() && args.ports.empty() && !args.desktop &&
        !args.snapshot_to) {
      // Nothing to do between the create and the command, nor after it: one
      // request, checked by the daemon as the limits layer here would.
      // Without --lifetime, the daemon's maximum bounds the command (its
      // sandbox ends with it).
      if (!args.lifetime_given) create.lifetime_ms = 0;
      result = engine.run(create, args.command, exec);
    } else {
      const auto provider = engine.provider();
      mayura::SandboxesOptions limits;
      limits.max_sandboxes = 1;
      limits.max_write_bytes = std::size_t{1} << 30;
      // Whoever runs mayura-run decides the network on its command line.
      limits.network = {mayura::NetworkKind::none, mayura::NetworkKind::allowlist, mayura::NetworkKind::all};
      // Without --lifetime, a daemon's maximum (when lower) is the run's.
      const std::int64_t daemon_max = provider->max_lifetime_ms();
      if (!daemon.empty() && !args.lifetime_given && daemon_max > 0 && daemon_max < args.lifetime_ms) {
        create.lifetime_ms = daemon_max;
      }
      limits.max_lifetime_ms = std::max<std::int64_t>(create.lifetime_ms, 1);
      auto sandboxes = mayura::create_sandboxes(provider, limits);
      // Known before anything is made: the snapshot comes after the command.
      if (args.snapshot_to && !sandboxes.features().snapshot) {
        throw mayura::SandboxError(
            mayura::Reason::INVALID_INPUT,
            "--snapshot-to: " + (daemon.empty() ? std::string("this engine") : daemon) + " cannot snapshot a sandbox");
      }
      if (!args.volumes.empty() && !sandboxes.features().volumes) {
        throw mayura::SandboxError(
            mayura::Reason::INVALID_INPUT,
            "--volume: " + (daemon.empty() ? std::string("this engine") : daemon) + " keeps no volumes");
      }
      sandbox = sandboxes.create(create, stop.get_token());
      for (const auto& [path, data] : files) sandbox->write_file(path, data);
      for (int port : args.ports) {
        std::fprintf(stderr, "mayura-run: port %d is at %s\n", port, sandbox->url(port).c_str());
      }
      result = exec_with_screenshot(*sandbox, args, exec, stop);
      for (const auto& [path, host] : args.copy_out) copied_out = copy_out(*sandbox, path, host) && copied_out;
      if (args.snapshot_to) taken = snapshot_to(*sandbox, *args.snapshot_to);
      sandbox->release();
    }

    if (args.json) {
      nlohmann::json j;
      j["exitCode"] = result.exit_code ? nlohmann::json(*result.exit_code) : nlohmann::json(nullptr);
      j["stdout"] = result.stdout;
      j["stderr"] = result.stderr;
      j["truncated"] = result.truncated;
      j["durationMs"] = result.duration_ms;
      j["timedOut"] = result.timed_out;
      j["oomKilled"] = result.oom_killed;
      if (args.snapshot_to) j["snapshot"] = taken ? snapshot_json(*taken) : nlohmann::json(nullptr);
      std::cout << j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << std::endl;
    }
    if (!copied_out || (args.snapshot_to && !taken)) return kSandboxFailed;
    if (result.timed_out) return kTimedOut;
    return *result.exit_code;
  } catch (const mayura::SandboxError& e) {
    if (sandbox) sandbox->release();
    // The shell's answer for a writer whose reader went away: 128 + SIGPIPE.
    if (reader_gone && e.reason() == mayura::Reason::CANCELLED) return 128 + SIGPIPE;
    std::string hint;
    if (!daemon.empty() && e.reason() == mayura::Reason::PERMISSION_DENIED &&
        args.image.find('/') != std::string::npos) {
      hint = " (a daemon takes images by name only; --local runs a directory image)";
    } else if (e.reason() == mayura::Reason::NOT_FOUND &&
               std::string_view(e.what()).find("no snapshot") != std::string_view::npos) {
      hint = " (mayura-run snapshot list shows the snapshots there are)";
    } else if (e.reason() == mayura::Reason::NOT_FOUND &&
               std::string_view(e.what()).find("no volume") != std::string_view::npos) {
      hint = " (mayura-run volume list shows the volumes there are; volume create makes one)";
    }
    std::fprintf(stderr, "mayura-run: %s: %s%s\n", std::string(mayura::reason_name(e.reason())).c_str(), e.what(),
                 hint.c_str());
    return kSandboxFailed;
  } catch (const std::exception& e) {
    if (sandbox) sandbox->release();
    std::fprintf(stderr, "mayura-run: INTERNAL: %s\n", e.what());
    return kSandboxFailed;
  }
}
