#pragma once
// The world's HTTPS server: a self-signed certificate for secure.test (and
// allowed.test) made by the openssl program, served by `openssl s_server
// -www` inside the world's namespace. A test fixture only: s_server answers
// one client at a time.

#include <cstdint>
#include <optional>
#include <string>

#include "child_process.hpp"

namespace mayura::testing {

class TlsServer {
 public:
  // Writes the key, certificate and log into `directory` (private to the
  // caller), starts the server on 0.0.0.0:port in `netns`, and returns once
  // the port accepts. Throws std::runtime_error with openssl's log.
  TlsServer(int netns, const std::string& directory, std::uint16_t port);
  // Kills and reaps the server.
  ~TlsServer() = default;

  const std::string& certificate_pem() const { return pem_; }

 private:
  std::string pem_;
  std::optional<ChildProcess> server_;
};

}  // namespace mayura::testing
