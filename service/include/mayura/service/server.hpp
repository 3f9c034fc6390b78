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
#include <utility>
#include <vector>

#include "mayura/sandboxes.hpp"

namespace mayura::service {

struct ServerOptions {
  // Sandboxes one client may have alive at once.
  std::size_t max_sandboxes_per_client = 16;
  // The sum of one client's sandboxes' memory bounds (0: none). Counted from
  // each create's memory_mib, or default_memory_mib for a create that names
  // none, which the server then gives it: no sandbox it makes is unbounded.
  std::int64_t max_memory_mib_per_client = 0;
  // The sum of a client's sandboxes' disks (disk_mib); 0: none.
  std::int64_t max_disk_mib_per_client = 0;
  // The sum of a client's snapshots' sizes on the host; 0: none. A snapshot
  // that could take it past this is refused before it is taken.
  std::int64_t max_snapshot_mib_per_client = 0;
  // The sum of a client's volumes' sizes; 0: none. A volume that would take
  // it past this is refused before it is made.
  std::int64_t max_volume_mib_per_client = 0;
  std::int64_t default_memory_mib = 0;  // 0: the provider's, and not counted
  // Connections open at once on each listener (the Unix socket's and TLS's
  // budgets are apart, so tokenless TLS clients cannot lock local ones out);
  // one more is answered 503 and closed.
  std::size_t max_connections = 256;
  // Connections one client holds at once: a Unix peer (by uid; root, the
  // admin, is not bounded), and over TLS each address and each token. 0: a
  // quarter of max_connections.
  std::size_t max_connections_per_client = 0;
  // TLS handshakes under way at once (each within header_timeout); a
  // connection past them is closed at once.
  std::size_t max_tls_handshakes = 64;
  // A request's JSON body, and a file's body (PUT), at most.
  std::size_t max_json_bytes = std::size_t{2} << 20;
  std::size_t max_file_bytes = std::size_t{64} << 20;
  // Request bodies the daemon holds at once, across its clients (a client
  // but root may hold a quarter of it); a request past it is answered 503
  // (LIMIT_REACHED) before its body is read.
  std::size_t max_buffered_bytes = std::size_t{512} << 20;
  // The output a client's streamed execs send, at most, per second (over
  // a second's burst; root is not paced; 0: no pacing). Past it the stream
  // waits, and so does the command, on its full pipe.
  std::size_t client_output_bytes_per_second = std::size_t{32} << 20;
  // The requests a client makes, at most, per second (over a second's
  // burst; root is not paced; 0: no pacing). Past it a request waits before
  // it is served: a client asking in a loop costs the daemon a bounded share
  // of its cpu, whatever it asks.
  std::size_t client_requests_per_second = 1000;
  // A client that takes longer to send a request's head, or its body, or to
  // take what it is sent, is disconnected (an exec it runs is cancelled).
  std::chrono::milliseconds header_timeout{10'000};
  std::chrono::milliseconds body_timeout{60'000};
  std::chrono::milliseconds write_timeout{60'000};
  // Threads that serve connections (0: two per core).
  std::size_t io_threads = 0;
  // Threads that run the provider's blocking calls other than exec.
  std::size_t blocking_threads = 8;
  // Live restore: sandboxes outlive the server's process. Each sandbox made
  // keeps what a later server needs to serve it again (its id, owner and
  // options: Sandbox::keep), the server takes back, as it starts, every
  // sandbox the provider restored (SandboxProvider::restore), and run()
  // leaves every sandbox running when it returns. The provider must keep
  // its sandboxes alive past its process (NativeOptions::live_restore).
  bool live_restore = false;
  // Host paths no client is told (the image directory and store, the state
  // directory): a failure's message says each one's name instead.
  std::vector<std::pair<std::string, std::string>> hidden_paths;
};

// Who may call over TLS: bearer token -> client name. The client is named
// "token:NAME", never the same as a Unix peer ("uid:N").
using Tokens = std::map<std::string, std::string>;

// A TLS listener's certificate chain and private key, in PEM.
struct TlsCredentials {
  std::string certificate_chain;
  std::string private_key;
};

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
  // Listens on TCP with TLS only (1.2 with forward-secret AEAD ciphers, or
  // 1.3; no renegotiation), each request naming its client by a bearer token
  // of `tokens`, checked once the request's head is read: a request without
  // one is answered 401 and its connection closed, before any body is read.
  // The credentials are PEM text, read (and checked) by the caller.
  void listen_tls(const std::string& address, unsigned short port, const TlsCredentials& credentials, Tokens tokens);
  // The TCP port listen_tls bound (useful with port 0).
  unsigned short tls_port() const;

  // Serves until stop(); then every sandbox is released (with
  // live_restore: left running, for the next server, and the caller ends
  // the process without releasing them: mayurad's _exit).
  void run();
  // How many sandboxes the server took back as it started (live_restore).
  std::size_t taken_back() const;
  // How many of its sandboxes are alive.
  std::size_t sandboxes_alive() const;
  // Removes the socket files listen_unix made: for a caller that ends its
  // process at once after run(), leaving its sandboxes running.
  void remove_socket_files() noexcept;
  // Stops serving; safe from any thread (a signal handler thread).
  void stop();

  struct State;  // the server's insides (server.cpp)

 private:
  void close_streams();
  std::unique_ptr<State> state_;
};

}  // namespace mayura::service
