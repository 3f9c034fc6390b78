// mayurad: the engine kept warm behind HTTP/1.1 + JSON, on a Unix socket
// (peer credentials name each client) and, when configured, TCP with TLS and
// bearer tokens. SIGTERM or SIGINT release every sandbox and end it.

#include <grp.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <thread>

#include "daemon_config.hpp"
#include "mayura/native.hpp"
#include "mayura/service/server.hpp"

namespace {

const char* kUsage = R"(usage: mayurad [--config FILE] [--socket PATH] [--check-config]

Serves the sandbox contract over HTTP on a Unix socket (default
/run/mayura/mayurad.sock, mode 0660, group mayura), and over TCP with TLS when
the config's "tls" says so. Plain TCP is never served.

  --config FILE    operator settings (default /etc/mayura/mayurad.json; a
                   missing default file means the built-in settings)
  --socket PATH    the Unix socket, instead of the config's
  --check-config   check the settings and exit
  --version, --help
)";

constexpr const char* kDefaultConfig = "/etc/mayura/mayurad.json";

[[noreturn]] void fail(const std::string& message, int status = 2) {
  std::fprintf(stderr, "mayurad: %s\n", message.c_str());
  std::exit(status);
}

std::string read_file(const std::string& path, bool& missing) {
  std::ifstream in(path);
  missing = !in;
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

void make_parent(const std::string& socket) {
  const auto slash = socket.rfind('/');
  if (slash == 0 || slash == std::string::npos) return;
  const std::string dir = socket.substr(0, slash);
  if (::mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) fail("making " + dir + ": " + std::strerror(errno), 1);
}

}  // namespace

int main(int argc, char** argv) {
  std::string config_path = kDefaultConfig;
  bool config_given = false, check_only = false;
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
    else if (arg == "--listen") fail("plain TCP is refused: a TCP listener needs TLS and bearer tokens (the config's \"tls\": listen, certificate, key, tokens)");
    else if (arg == "--version") return std::puts("mayurad " MAYURA_VERSION), 0;
    else if (arg == "--help" || arg == "-h") return std::fputs(kUsage, stdout), 0;
    else fail("unknown option " + arg + "\n" + kUsage);
  }

  mayura::tools::DaemonConfig config;
  try {
    bool missing = false;
    const std::string text = read_file(config_path, missing);
    if (missing && config_given) fail("the config file " + config_path + " cannot be read");
    config = mayura::tools::parse_daemon_config(missing ? "{}" : text, config_path);
    if (!socket_override.empty()) config.socket = socket_override;
  } catch (const mayura::SandboxError& e) {
    fail(e.what());
  }
  std::optional<gid_t> socket_gid;
  if (const struct group* g = ::getgrnam(config.socket_group.c_str())) {
    socket_gid = g->gr_gid;
  } else if (config.socket_group_given) {
    fail("socketGroup " + config.socket_group + " is no group of this host");
  } else {
    std::fprintf(stderr, "mayurad: there is no group %s: only root may use %s\n", config.socket_group.c_str(), config.socket.c_str());
  }
  mayura::service::Tokens tokens;
  try {
    if (config.tls) tokens = mayura::tools::read_tokens(config.tls->tokens_file);
  } catch (const mayura::SandboxError& e) {
    fail(e.what());
  }
  if (check_only) return std::puts("mayurad: the settings are good"), 0;

  // Signals go to one thread, which stops the server.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  for (int s : {SIGINT, SIGTERM}) sigaddset(&stop_signals, s);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  ::signal(SIGPIPE, SIG_IGN);

  try {
    auto provider = mayura::native_sandboxes(config.native);
    mayura::service::Server server(provider, config.limits, config.server);
    provider.reset();
    make_parent(config.socket);
    server.listen_unix(config.socket, config.socket_mode, socket_gid);
    if (config.tls) {
      server.listen_tls(config.tls->address, config.tls->port, config.tls->certificate, config.tls->key, tokens);
      std::fprintf(stderr, "mayurad: serving https on %s:%u\n", config.tls->address.c_str(), server.tls_port());
    }
    std::fprintf(stderr, "mayurad: serving on %s\n", config.socket.c_str());
    std::thread([&server, stop_signals] {
      int sig = 0;
      sigwait(&stop_signals, &sig);
      server.stop();
    }).detach();
    server.run();
    std::fprintf(stderr, "mayurad: stopped; every sandbox released\n");
  } catch (const mayura::SandboxError& e) {
    fail(std::string(mayura::reason_name(e.reason())) + ": " + e.what(), 1);
  } catch (const std::exception& e) {
    fail(std::string("INTERNAL: ") + e.what(), 1);
  }
  return 0;
}
