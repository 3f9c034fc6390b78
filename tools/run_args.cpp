// mayura-run's options (run_args.hpp): each read, and checked as far as
// the command line can be; the contract checks the rest before anything is
// made.

#include "run_args.hpp"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <string_view>

#include "run_engine.hpp"
#include "mayura/validate.hpp"

namespace mayura::tools {
namespace {

const char* kUsage = R"(usage: mayura-run [OPTIONS] [--] COMMAND [ARG...]
       mayura-run image import|list|inspect|rm ...   (mayura-run image --help)
       mayura-run snapshot list|delete ...   (mayura-run snapshot --help)
       mayura-run volume create|list|delete ...   (mayura-run volume --help)
       mayura-run mcp [--tools LIST] [OPTIONS]   (serves MCP: mayura-run mcp --help)

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
                         (read whole first)
  -i, --interactive      pass the standard input on as it comes, until its end
  -t, --tty              run the command on a terminal of its own, of this
                         terminal's size; with -i (-it) this terminal is raw
                         while it runs, so every key (^C too) reaches it
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

}  // namespace

Args parse_run_args(int argc, char** argv, bool command_needed) {
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
    // -i, -t, and both at once, as docker run takes them.
    if (arg == "-i" || arg == "--interactive" || arg == "-it" || arg == "-ti") a.interactive = true;
    if (arg == "-t" || arg == "--tty" || arg == "-it" || arg == "-ti") a.tty = true;
    if (arg == "-i" || arg == "-t" || arg == "-it" || arg == "-ti") continue;
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
    } else if (arg == "--interactive" || arg == "--tty") {
      // (taken above)
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
  if (command_needed && a.command.empty() && a.image.empty()) usage_error("no command given");
  if (!a.screenshot.empty() && !a.desktop) usage_error("--screenshot needs --desktop");
  if ((a.interactive || a.tty) && a.json) usage_error("-i and -t pass the output on as it comes: not with --json");
  if (a.interactive && a.stdin_on) usage_error("-i streams the input as it comes, --stdin reads it all first: one");
  if (a.snapshot_to && !a.disk_mib && !a.from_snapshot) {
    usage_error("--snapshot-to needs a disk to snapshot: --disk MIB or --from-snapshot NAME");
  }
  if (network_all) {
    if (a.network.kind == mayura::NetworkKind::allowlist) usage_error("--network all and --allow do not go together");
    a.network.kind = mayura::NetworkKind::all;
  }
  return a;
}

}  // namespace mayura::tools
