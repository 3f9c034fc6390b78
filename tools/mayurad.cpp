// mayurad: the engine kept warm behind HTTP/1.1 + JSON, on a Unix socket
// (peer credentials name each client) and, when configured, TCP with TLS and
// bearer tokens. SIGTERM or SIGINT release every sandbox and end it.
// Under systemd (mayurad.socket) it serves the socket systemd passed
// (sd_listen_fds) and says when it is ready and when it stops (sd_notify).

#include <grp.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <systemd/sd-daemon.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <optional>
#include <string>
#include <thread>

#include "daemon_config.hpp"
#include "mayura/native.hpp"
#include "mayura/service/server.hpp"
#include "stop_signals.hpp"

namespace {

const char* kUsage = R"(usage: mayurad [--config FILE] [--socket PATH] [--check-config | --release-all]

Serves the sandbox contract over HTTP on a Unix socket (default
/run/mayura/mayurad.sock, mode 0660, group mayura), and over TCP with TLS when
the config's "tls" says so. Plain TCP is never served. Started by systemd's
socket activation (mayurad.socket), it serves the socket systemd passed
instead, and leaves its file to systemd.

  --config FILE    operator settings (default /etc/mayura/mayurad.json; a
                   missing default file means the built-in settings)
  --socket PATH    the Unix socket, instead of the config's
  --check-config   check the settings and exit
  --release-all    release every sandbox a stopped mayurad left running
                   (liveRestore keeps them across a stop), then exit
  --version, --help
)";

constexpr const char* kDefaultConfig = "/etc/mayura/mayurad.json";

[[noreturn]] void fail(const std::string& message, int status = 2) {
  std::fprintf(stderr, "mayurad: %s\n", message.c_str());
  std::exit(status);
}

// The directory of the socket, made traversable (0755) before the engine
// makes it its state directory (0700) when they are one, as by default, so
// that the socket's group can reach the socket.
void make_parent(const std::string& socket) {
  const auto slash = socket.rfind('/');
  if (slash == 0 || slash == std::string::npos) return;
  const std::string dir = socket.substr(0, slash);
  if (::mkdir(dir.c_str(), 0755) == 0) return;
  if (errno != EEXIST) fail("making " + dir + ": " + std::strerror(errno), 1);
  // Made before by an engine of ours (mayura-run --local, a library user)
  // as its state directory, 0700: traversable again, and no more.
  struct stat st {};
  if (::stat(dir.c_str(), &st) == 0 && S_ISDIR(st.st_mode) && st.st_uid == ::geteuid() &&
      (st.st_mode & (S_IXGRP | S_IXOTH)) != (S_IXGRP | S_IXOTH)) {
    if (::chmod(dir.c_str(), (st.st_mode & 07777) | S_IXGRP | S_IXOTH) != 0) {
      fail("making " + dir + " traversable: " + std::strerror(errno), 1);
    }
  }
}

// The one socket systemd passed (LISTEN_FDS), if it passed any; the
// variables are removed, so that nothing the engine starts sees them.
std::optional<int> activation_socket() {
  const int n = sd_listen_fds(1);
  if (n < 0) fail(std::string("reading the sockets systemd passed (LISTEN_FDS): ") + std::strerror(-n), 1);
  if (n == 0) return std::nullopt;
  if (n > 1)
    fail("systemd passed " + std::to_string(n) + " sockets; mayurad takes one (the socket unit's one ListenStream)", 1);
  const int fd = SD_LISTEN_FDS_START;
  const int unix_stream = sd_is_socket_unix(fd, SOCK_STREAM, 1, nullptr, 0);
  if (unix_stream < 0) fail(std::string("asking what the socket systemd passed is: ") + std::strerror(-unix_stream), 1);
  if (unix_stream == 0) fail("the socket systemd passed is no listening Unix stream socket (ListenStream=/PATH)", 1);
  return fd;
}

// Where a passed socket is bound, for the log.
std::string bound_path(int fd) {
  sockaddr_un addr{};
  socklen_t len = sizeof addr;
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0 || len <= offsetof(sockaddr_un, sun_path))
    return "?";
  return std::string(addr.sun_path, ::strnlen(addr.sun_path, len - offsetof(sockaddr_un, sun_path)));
}

// Every sandbox a daemon that ended left running: taken back by an engine
// on the same state directory, and released. Those of a daemon that still
// runs are its own, and stay. Returns how many went.
std::size_t release_all(mayura::NativeOptions options) {
  options.live_restore = true;
  options.prepared = 0;
  options.prepared_disks = 0;
  options.netns_pool = 0;
  const auto provider = mayura::native_sandboxes(options);
  std::size_t released = 0;
  for (auto& restored : provider->restore()) {
    restored.backend->release();
    ++released;
  }
  return released;
}

// Tells systemd (Type=notify) how the service is; nothing without systemd.
void notify(const char* state) {
  const int r = sd_notify(0, state);
  if (r < 0) std::fprintf(stderr, "mayurad: telling systemd %s: %s\n", state, std::strerror(-r));
}

}  // namespace

int main(int argc, char** argv) {
  std::string config_path = kDefaultConfig;
  bool config_given = false, check_only = false, release_only = false;
  std::string socket_override;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) fail(arg + " needs a value");
      return argv[++i];
    };
    if (arg == "--config") config_path = value(), config_given = true;
    else if (arg == "--socket") socket_override = value();
    else if (arg == "--check-config") check_only = true;
    else if (arg == "--release-all") release_only = true;
    else if (arg == "--listen")
      fail(
          "plain TCP is refused: a TCP listener needs TLS and bearer tokens (the config's \"tls\": listen, "
          "certificate, key, tokens)");
    else if (arg == "--version") return std::puts("mayurad " MAYURA_VERSION), 0;
    else if (arg == "--help" || arg == "-h") return std::fputs(kUsage, stdout), 0;
    else fail("unknown option " + arg + "\n" + kUsage);
  }

  mayura::tools::DaemonConfig config;
  try {
    // A missing default file means the built-in settings; any other is read
    // only if none but root can have written it.
    struct stat st {};
    const bool missing = !config_given && ::lstat(config_path.c_str(), &st) != 0 && errno == ENOENT;
    const std::string text =
        missing ? "{}"
                : mayura::tools::read_operator_file("the config file", config_path, 0022,
                                                    "must not be writable by group or others (chmod 644)");
    config = mayura::tools::parse_daemon_config(text, config_path);
    if (!socket_override.empty()) config.socket = socket_override;
  } catch (const mayura::SandboxError& e) {
    fail(e.what());
  }
  std::optional<gid_t> socket_gid;
  if (const struct group* g = ::getgrnam(config.socket_group.c_str())) {
    socket_gid = g->gr_gid;
  } else if (config.socket_group_given) {
    fail("socketGroup " + config.socket_group + " is no group of this host");
  }
  const auto warn_if_no_group = [&] {
    if (!socket_gid)
      std::fprintf(stderr, "mayurad: there is no group %s: only root may use %s\n", config.socket_group.c_str(),
                   config.socket.c_str());
  };
  mayura::service::Tokens tokens;
  mayura::service::TlsCredentials tls_credentials;
  try {
    if (config.tls) {
      tokens = mayura::tools::read_tokens(config.tls->tokens_file);
      tls_credentials.certificate_chain = mayura::tools::read_operator_file(
          "the TLS certificate", config.tls->certificate, 0022, "must not be writable by group or others");
      tls_credentials.private_key =
          mayura::tools::read_operator_file("the TLS key", config.tls->key, 0027,
                                            "must be readable by its owner and group only, writable by its owner "
                                            "only (chmod 600 or 640)");
    }
  } catch (const mayura::SandboxError& e) {
    fail(e.what());
  }
  if (check_only) {
    warn_if_no_group();
    return std::puts("mayurad: the settings are good"), 0;
  }
  if (release_only) {
    try {
      const std::size_t released = release_all(config.native);
      std::fprintf(stderr, "mayurad: released %zu sandbox%s left running\n", released, released == 1 ? "" : "es");
      return 0;
    } catch (const mayura::SandboxError& e) {
      fail(std::string(mayura::reason_name(e.reason())) + ": " + e.what(), 1);
    }
  }
  const std::optional<int> activated = activation_socket();
  // The daemon holds every tenant's sandboxes: under memory pressure the
  // OOM killer should take a sandbox's process (the engine gives them 500),
  // not it. (systemd's OOMScoreAdjust= says the same for the unit.)
  if (std::FILE* adj = std::fopen("/proc/self/oom_score_adj", "we")) {
    std::fputs("-900", adj);
    std::fclose(adj);
  }

  ::signal(SIGPIPE, SIG_IGN);

  try {
    // Signals go to one thread, which stops the server.
    const mayura::tools::StopSignals stop_signals({SIGINT, SIGTERM});
    if (!activated) make_parent(config.socket);
    // The host's own paths are no client's business: failures name them.
    config.server.hidden_paths = {{config.native.image_store, "[image store]"},
                                  {config.native.image_dir, "[image directory]"},
                                  {config.native.state_dir, "[state directory]"}};
    if (!config.native.cgroup_root.empty())
      config.server.hidden_paths.emplace_back(config.native.cgroup_root, "[cgroup root]");
    std::sort(config.server.hidden_paths.begin(), config.server.hidden_paths.end(),
              [](const auto& a, const auto& b) { return a.first.size() > b.first.size(); });
    // Without live restore no sandbox outlives a daemon: what an earlier one
    // kept running (with the setting on) goes before this one serves.
    if (!config.native.live_restore) {
      if (const std::size_t released = release_all(config.native))
        std::fprintf(stderr, "mayurad: released %zu sandbox%s an earlier daemon left running (liveRestore is off)\n",
                     released, released == 1 ? "" : "es");
    }
    auto provider = mayura::native_sandboxes(config.native);
    mayura::service::Server server(provider, config.limits, config.server);
    provider.reset();
    if (config.server.live_restore)
      std::fprintf(stderr, "mayurad: took back %zu sandbox%s an earlier daemon left running\n", server.taken_back(),
                   server.taken_back() == 1 ? "" : "es");
    std::string serving;
    try {
      // TLS first: once the Unix socket answers, every listener does.
      if (config.tls) {
        server.listen_tls(config.tls->address, config.tls->port, tls_credentials, tokens);
        std::fprintf(stderr, "mayurad: serving https on %s:%u\n", config.tls->address.c_str(), server.tls_port());
      }
      if (activated) {
        // systemd made the socket (its mode and group are the socket unit's)
        // and keeps it across restarts: it is served as it is, never replaced.
        server.adopt_unix(*activated);
        serving = bound_path(*activated) + " (the socket systemd passed)";
      } else {
        warn_if_no_group();
        server.listen_unix(config.socket, config.socket_mode, socket_gid);
        serving = config.socket;
      }
    } catch (const mayura::SandboxError& e) {
      // A start that fails (a port taken, a bad certificate) must not end
      // the sandboxes it took back: they wait for the next start.
      if (!config.server.live_restore || server.sandboxes_alive() == 0) throw;
      std::fprintf(stderr, "mayurad: %s: %s; every sandbox is left running for the next start\n",
                   std::string(mayura::reason_name(e.reason())).c_str(), e.what());
      server.remove_socket_files();
      std::fflush(nullptr);
      ::_exit(1);
    }
    std::fprintf(stderr, "mayurad: serving on %s\n", serving.c_str());
    const mayura::tools::SignalWatch on_stop(stop_signals, [&server](int) {
      notify("STOPPING=1");
      server.stop();
    });
    notify("READY=1");
    server.run();
    if (config.server.live_restore && server.sandboxes_alive() > 0) {
      // Every sandbox runs on, for the next daemon: nothing of the engine
      // is torn down (its sandboxes' inits wait for that daemon, and end
      // them at their deadlines if none comes). What no sandbox holds (a
      // sandbox or disk made ahead) the next start removes.
      server.remove_socket_files();
      std::fprintf(stderr, "mayurad: stopped; %zu sandbox%s left running (liveRestore)\n", server.sandboxes_alive(),
                   server.sandboxes_alive() == 1 ? "" : "es");
      std::fflush(nullptr);
      ::_exit(0);
    }
    if (!config.server.live_restore) std::fprintf(stderr, "mayurad: stopped; every sandbox released\n");
  } catch (const mayura::SandboxError& e) {
    fail(std::string(mayura::reason_name(e.reason())) + ": " + e.what(), 1);
  } catch (const std::exception& e) {
    fail(std::string("INTERNAL: ") + e.what(), 1);
  }
  return 0;
}
