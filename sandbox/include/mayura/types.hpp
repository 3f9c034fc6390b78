#pragma once
// Options and results of the contract, as plain values.

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <stop_token>
#include <string>
#include <string_view>
#include <vector>

namespace mayura {

enum class NetworkKind { none, all, allowlist };

std::string_view network_kind_name(NetworkKind kind) noexcept;

// What a sandbox may reach. none (the default), all, or a list of domains.
struct Network {
  NetworkKind kind = NetworkKind::none;
  std::vector<std::string> allow;  // only for NetworkKind::allowlist

  static Network none() { return {}; }
  static Network all() { return {NetworkKind::all, {}}; }
  static Network allow_only(std::vector<std::string> domains) { return {NetworkKind::allowlist, std::move(domains)}; }
};

// What a provider supports beyond commands and files.
struct Features {
  bool stdin = false;
  bool ports = false;
  bool desktop = false;
  bool cpus = false;                 // honours CreateOptions::cpus
  bool memory = false;               // honours CreateOptions::memory_mib
  bool pids = false;                 // honours CreateOptions::pids
  bool seccomp = false;              // honours CreateOptions::seccomp_profile
  bool pause = false;                // Sandbox::pause and resume
  bool disk = false;                 // honours CreateOptions::disk_mib and writable_root
  bool snapshot = false;             // Sandbox::snapshot and fork, CreateOptions::snapshot
  bool volumes = false;              // Sandboxes::create_volume, CreateOptions::volumes
  bool disk_io = false;              // honours CreateOptions::disk_io
  bool interactive = false;          // honours ExecOptions::on_start (input streamed, signals)
  bool terminal = false;             // honours ExecOptions::terminal
  std::vector<NetworkKind> network;  // the kinds it can enforce
};

// A desktop's screen, in pixels.
struct DesktopSize {
  int width = 1280;
  int height = 800;
};

// Bounds on a disk's reads and writes, each per second; 0: no bound.
struct DiskIo {
  std::int64_t read_bps = 0;
  std::int64_t write_bps = 0;
  std::int64_t read_iops = 0;
  std::int64_t write_iops = 0;
  bool operator==(const DiskIo&) const = default;
};

// A volume (Sandboxes::create_volume) mounted into a sandbox at `path`.
struct VolumeMount {
  std::string name;
  std::string path;  // absolute; not /, nor under /proc, /dev or /sys
  bool read_only = false;
};

struct CreateOptions {
  std::int64_t lifetime_ms = 0;  // required, > 0
  Network network;
  std::map<std::string, std::string> env;  // every command sees these
  std::vector<int> ports;
  std::optional<double> cpus;              // none: the provider's default
  std::optional<std::int64_t> memory_mib;  // none: the provider's default; never any swap
  // How many processes and threads its commands may have at once; none: the
  // provider's default.
  std::optional<std::int64_t> pids;
  // The working directory on a disk of its own of this many MiB (16 or
  // more) instead of a tmpfs in memory: the disk's size is its quota (past
  // it, writes fail ENOSPC), and it is removed as the sandbox ends. None: a
  // tmpfs. It starts empty, over whatever the image has there. /tmp is on
  // the same disk then (sharing its quota), so a snapshot holds both.
  std::optional<std::int64_t> disk_mib;
  // A snapshot of the caller's (Sandbox::snapshot) to start from: the
  // sandbox's disk is a copy of it, its size the snapshot's (disk_mib, if
  // set, must be the same). Commands start afresh: a snapshot holds files,
  // not processes. None: a new, empty disk if disk_mib is set.
  std::optional<std::string> snapshot;
  // The root writable too, on the same disk (which disk_mib or snapshot
  // must give): an overlay over the image whose upper layer is on the disk,
  // so that the image's root user can install packages into /usr, /etc or
  // /var, within the disk's quota; a snapshot holds it with the rest. New
  // entries at the top of the root itself are still refused (EROFS). Only
  // an image from the image store: the host's and a directory image's
  // files belong to no user of the sandbox. False: the root is read-only.
  bool writable_root = false;
  // Volumes of the caller's (the tenant's) mounted at their paths, after
  // the workdir and /tmp (so one may go under either). A volume is used by
  // one sandbox at a time: one in use fails INVALID_INPUT before anything
  // is made. At most 16.
  std::vector<VolumeMount> volumes;
  // Bounds on the I/O of its disk and of each of its volumes (each device
  // bounded on its own), enforced by the kernel (cgroup2's io.max): needs
  // a disk or a volume. None: as fast as the host's disk.
  std::optional<DiskIo> disk_io;
  // An OCI/Docker JSON seccomp profile (the text); none: the provider's
  // default profile. Unknown syscall names in it are skipped.
  std::optional<std::string> seccomp_profile;
  std::string image;  // empty: the provider's default
  std::map<std::string, std::string> labels;
  // Who commands run as: "UID", "UID:GID", or a name (and ":GROUP") that the
  // image's own /etc/passwd (and /etc/group) knows. Empty: the image's User,
  // else the provider's sandbox user.
  std::string user;
  // The working directory, absolute: writable, over what the image has
  // there. Empty: the image's WorkingDir, else the provider's.
  std::string workdir;
  // An X display of this size in the sandbox (features().desktop), which
  // every command sees as DISPLAY; none: no display. The image must carry
  // the X server (Xvfb).
  std::optional<DesktopSize> desktop;
  // Who, besides root, may connect to its published ports on the host (the
  // kernel refuses everyone else): a uid. None: the creating process's
  // effective uid. A host's own choice, never a remote client's: mayurad
  // sets it to the client's uid (root for a TLS client).
  std::optional<std::uint32_t> ports_owner;
  // Whom the sandbox is for, where the provider shares the host's cpu by
  // tenant (the native engine): when cpus are contended, every tenant gets
  // the same share, split among its sandboxes. Empty: a tenant of its own.
  // Like ports_owner, a host's choice: mayurad sets it to the client's name.
  std::string tenant;
};

// A snapshot of a sandbox's disk (its working directory and /tmp), kept by
// the provider under a name of its owner's (the create's tenant).
struct Snapshot {
  std::string name;
  std::int64_t disk_mib = 0;      // the size of a disk made from it
  std::int64_t stored_bytes = 0;  // what it takes on the host's disk
  std::int64_t created_ms = 0;    // when it was taken, in ms since the Unix epoch
};

// A named disk of its own that outlives sandboxes and the engine, kept by
// the provider for its owner (a create's tenant).
struct Volume {
  std::string name;
  std::int64_t size_mib = 0;
  std::int64_t created_ms = 0;  // ms since the Unix epoch
  bool in_use = false;          // mounted by a sandbox now
};

using OutputCallback = std::function<void(std::string_view chunk)>;
enum class OutputStream { out, err };
using PacedOutputCallback = std::function<void(OutputStream from, std::string_view chunk, std::function<void()> more)>;

// A terminal's size, in characters (1 to 1000 each).
struct TerminalSize {
  int rows = 24;
  int columns = 80;
};

// The other end of a running command (ExecOptions::on_start): its input as
// it comes, the signals it gets, its terminal's size. Safe from any thread;
// each call returns at once, and what it writes goes to the command in the
// order written. Calls once the command has ended do nothing.
class CommandControl {
 public:
  virtual ~CommandControl() = default;
  virtual void write(std::string data) = 0;
  // The end of its input, once what was written before has gone in. On a
  // terminal the command reads on until it ends (the terminal's end-of-file
  // is ^D, the caller's to type).
  virtual void close_input() = 0;
  // `signal` (1 to 64) for the command's process group: the command and
  // what it started and did not move to a group of its own, as a shell's
  // job control signals a job. Only while the command itself runs.
  virtual void signal(int signal) = 0;
  // A terminal's new size; its foreground job gets SIGWINCH. Nothing
  // without a terminal.
  virtual void resize(TerminalSize size) = 0;
};

struct ExecOptions {
  std::string cwd;                              // relative to the workdir, or absolute; empty: the workdir
  std::map<std::string, std::string> env;       // added to the sandbox's env
  std::optional<std::int64_t> timeout_ms;       // none: until the sandbox's lifetime ends
  std::optional<std::string> stdin;             // none: the command reads an empty input
  std::stop_token cancellation;                 // plays the seed's `signal`
  std::optional<std::size_t> max_output_bytes;  // of each stream; more is dropped and `truncated` set
  OutputCallback on_stdout;                     // every chunk as it arrives
  OutputCallback on_stderr;
  // For a consumer that must not block in a callback (an async server):
  // when set, every chunk comes here instead of on_stdout/on_stderr, and
  // the stream it came from is read again only once `more()` is called, so
  // a slow consumer slows the command and never loses its output. (Through
  // async_exec on the native provider it is called on the engine's threads;
  // a provider that cannot pace gets it as plain callbacks.)
  PacedOutputCallback on_output;
  // Whether the result keeps the output too (up to max_output_bytes of each
  // stream). A consumer that takes every chunk as it comes (a server that
  // streams it on) says no, and the output is never held twice: the result's
  // stdout and stderr are then empty, and `truncated` still says whether a
  // stream passed max_output_bytes. (The native provider honours it; others
  // drop their kept output at the end.)
  bool keep_output = true;
  // Runs the command on a pseudo-terminal of its own in the sandbox, of this
  // size: its stdin, stdout and stderr are the terminal, so everything it
  // prints comes as stdout (with the terminal's line endings), and the
  // terminal's line discipline serves it: ^C typed in signals its
  // foreground job, a resize sends SIGWINCH. (Providers say whether they
  // can: Features::terminal.)
  std::optional<TerminalSize> terminal;
  // Called once, as the command starts and before any of its output, with
  // its control (input as it comes, signals, resizes). With it, the
  // command's input stays open after `stdin` (written first, if set) until
  // close_input() or the command's end. (Features::interactive.)
  std::function<void(std::shared_ptr<CommandControl>)> on_start;
};

struct ExecResult {
  std::optional<int> exit_code;  // none when timed out
  std::string stdout;
  std::string stderr;
  bool truncated = false;
  std::int64_t duration_ms = 0;
  bool timed_out = false;
  // The command ended with 137 (SIGKILL, straight or through a shell) while
  // the kernel's OOM killer killed in the sandbox: it ran out of memory. The
  // OOM count is the sandbox's, so a command killed by another SIGKILL while
  // a concurrent command of the same sandbox was OOM-killed says so too.
  bool oom_killed = false;
};

// The desktop's actions (Sandbox::screenshot, click, ...).
struct Point {
  int x = 0;
  int y = 0;
  bool operator==(const Point&) const = default;
};
struct Region {
  int x = 0;
  int y = 0;
  int width = 0;
  int height = 0;
};
enum class MouseButton { left = 1, middle = 2, right = 3 };
enum class ScrollDirection { up, down, left, right };

struct ScreenshotOptions {
  std::optional<Region> region;  // none: the whole screen
  std::stop_token cancellation;
};

// One desktop action, as the limits layer hands it to a provider (already
// checked against the sandbox's screen).
struct DesktopAction {
  enum class Kind { screenshot, cursor, move, click, drag, scroll, type, key };
  Kind kind = Kind::screenshot;
  std::optional<Region> region;  // screenshot
  std::vector<Point> points;     // move, click, scroll: one; drag: the path
  MouseButton button = MouseButton::left;
  int count = 1;  // click
  ScrollDirection direction = ScrollDirection::down;
  int amount = 1;    // scroll
  std::string text;  // type: UTF-8 text; key: xdotool combos, space-separated
};

enum class FileType { file, directory, symlink, other };

struct FileEntry {
  std::string name;
  FileType type = FileType::other;
  std::uint64_t size = 0;
  std::uint32_t mode = 0;  // permission bits
  std::int64_t mtime_ms = 0;
};

struct ReadOptions {
  std::optional<std::size_t> max_bytes;  // a larger file fails LIMIT_REACHED
  std::stop_token cancellation;
};

struct FileOptions {
  std::stop_token cancellation;
};

}  // namespace mayura
