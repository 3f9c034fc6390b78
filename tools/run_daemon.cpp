// mayura-run's choice of a daemon, the same in the client and in
// mayura-run-local. The default socket is probed with a plain connect: a
// daemon that is there answers that at once, and one that died left a socket
// file nobody listens on (ECONNREFUSED).

#include "run_engine.hpp"

#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>

#include "mayura/errors.hpp"
#include "mayura/remote.hpp"

namespace mayura::tools {
namespace {

enum class Probe { nobody, answers, denied };

Probe probe(const char* path, int& error) {
  struct stat st {};
  if (::stat(path, &st) != 0) {
    // A directory this user may not search hides whether a daemon is there.
    error = errno;
    return error == EACCES ? Probe::denied : Probe::nobody;
  }
  if (!S_ISSOCK(st.st_mode)) return Probe::nobody;
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return Probe::nobody;
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strncpy(addr.sun_path, path, sizeof addr.sun_path - 1);
  const int rc = ::connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr);
  error = rc == 0 ? 0 : errno;
  ::close(fd);
  if (rc == 0) return Probe::answers;
  return error == EACCES || error == EPERM ? Probe::denied : Probe::nobody;
}

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

std::string token_from_env() {
  if (std::string t = env("MAYURA_TOKEN"); !t.empty()) return t;
  const std::string file = env("MAYURA_TOKEN_FILE");
  if (file.empty()) return {};
  std::ifstream in(file);
  if (!in)
    throw SandboxError(Reason::INVALID_INPUT, "MAYURA_TOKEN_FILE " + file + " cannot be read: " + std::strerror(errno));
  std::string t(std::istreambuf_iterator<char>(in), {});
  while (!t.empty() && (t.back() == '\n' || t.back() == '\r' || t.back() == ' ')) t.pop_back();
  return t;
}

}  // namespace

RunEngine remote_engine(const std::string& address) {
  RemoteOptions o;
  o.url = address;
  o.token = token_from_env();
  o.ca_file = env("MAYURA_CA_FILE");
  RunEngine engine;
  engine.provider = [o] { return remote_sandboxes(o); };
  engine.daemon = address;
  engine.run = [o](const CreateOptions& create, const std::vector<std::string>& argv, const ExecOptions& exec) {
    return remote_run(o, create, argv, exec);
  };
  return engine;
}

std::optional<std::string> daemon_address(bool local) {
  if (local) return std::nullopt;
  if (std::string host = env("MAYURA_HOST"); !host.empty()) return host;
  int error = 0;
  switch (probe(kDefaultDaemonSocket, error)) {
    case Probe::answers: return std::string("unix://") + kDefaultDaemonSocket;
    case Probe::denied:
      // Falling back would only fail later, further from the cause.
      if (::geteuid() != 0) {
        throw SandboxError(Reason::PERMISSION_DENIED, std::string("mayurad's socket ") + kDefaultDaemonSocket +
                                                          " refuses this user (" + std::strerror(error) +
                                                          "): add it to the group mayura, or run with --local as root");
      }
      break;
    case Probe::nobody: break;
  }
  return std::nullopt;
}

std::string describe_engine_choice(bool local) {
  if (local) return "runs: an engine in this process (--local)";
  if (const std::string host = env("MAYURA_HOST"); !host.empty())
    return "runs: through mayurad at " + host + " (MAYURA_HOST)";
  int error = 0;
  switch (probe(kDefaultDaemonSocket, error)) {
    case Probe::answers: return std::string("runs: through mayurad at unix://") + kDefaultDaemonSocket;
    case Probe::denied:
      return std::string("runs: mayurad's socket ") + kDefaultDaemonSocket +
             " refuses this user: " + std::strerror(error);
    case Probe::nobody: break;
  }
  return std::string("runs: an engine in this process (no mayurad answers at ") + kDefaultDaemonSocket + ")";
}

}  // namespace mayura::tools
