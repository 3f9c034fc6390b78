#pragma once
// The contract over HTTP/1.1: a server over any provider's Sandboxes
// (Boost.Beast on Asio). mayurad is this server over the native provider.
//
//   mayura::service::Server server(sandboxes, {});
//   server.listen_unix("/run/mayura/mayurad.sock", 0660, group);
//   // or, under socket activation: server.adopt_unix(SD_LISTEN_FDS_START);
//   server.run();  // until stop()
//
// The routes, shapes and statuses are the README's "The HTTP API".

#include <sys/types.h>

#include <chrono>
#include <cstddef>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "mayura/sandboxes.hpp"

namespace mayura::service {

struct ServerOptions {
  // Sandboxes one client may have alive at once.
  std::size_t max_sandboxes_per_client = 16;
  // Connections open at once; one more is answered 503 and closed.
  std::size_t max_connections = 256;
  // A request's JSON body, and a file's body (PUT), at most.
  std::size_t max_json_bytes = std::size_t{2} << 20;
  std::size_t max_file_bytes = std::size_t{64} << 20;
  // A client that takes longer to send a request's head, or its body, or to
  // take what it is sent, is disconnected (an exec it runs is cancelled).
  std::chrono::milliseconds header_timeout{10'000};
  std::chrono::milliseconds body_timeout{60'000};
  std::chrono::milliseconds write_timeout{60'000};
  // Threads that serve connections (0: two per core).
  std::size_t io_threads = 0;
  // Threads that run the provider's blocking calls other than exec.
  std::size_t blocking_threads = 8;
};

// Who may call over TLS: bearer token -> client name.
using Tokens = std::map<std::string, std::string>;

class Server {
 public:
  // Serves the provider's sandboxes under `limits` (the operator's: nothing a
  // client sends widens them).
  Server(std::shared_ptr<SandboxProvider> provider, SandboxesOptions limits, ServerOptions options);
  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  // Listens on a Unix socket at `path` (an old socket file there is
  // replaced), with `mode` and, when given, the group `group`. Peer
  // credentials name each client ("uid:N"); uid 0 is an admin, who sees
  // every client's sandboxes.
  void listen_unix(const std::string& path, mode_t mode, std::optional<gid_t> group = std::nullopt);
  // Serves a Unix stream socket that is already bound and listening (one
  // systemd passed by socket activation): the server owns `fd` from then on
  // and closes it when it goes, but never removes or changes its file, whose
  // mode and group are the socket unit's. Clients are named by their peer
  // credentials, as on listen_unix. INVALID_CONFIG if `fd` is no listening
  // Unix stream socket (the fd stays the caller's then).
  void adopt_unix(int fd);
  // Listens on TCP with TLS only (a PEM certificate chain and key), each
  // request naming its client by a bearer token of `tokens`.
  void listen_tls(const std::string& address, unsigned short port, const std::string& certificate_file,
                  const std::string& key_file, Tokens tokens);
  // The TCP port listen_tls bound (useful with port 0).
  unsigned short tls_port() const;

  // Serves until stop(); then every sandbox is released.
  void run();
  // Stops serving; safe from any thread (a signal handler thread).
  void stop();

  struct State;  // the server's insides (server.cpp)

 private:
  void close_streams();
  std::unique_ptr<State> state_;
};

}  // namespace mayura::service
