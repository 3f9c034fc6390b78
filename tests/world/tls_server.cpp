#include "tls_server.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "mayura/netfilter/io_thread.hpp"

namespace mayura::testing {
namespace {

using namespace std::chrono_literals;

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// Whether something listens on 127.0.0.1:port inside `netns`.
bool accepts(int netns, std::uint16_t port) {
  const int fd = netfilter::socket_in(netns, AF_INET, SOCK_STREAM);
  if (fd < 0) return false;
  sockaddr_in to{};
  to.sin_family = AF_INET;
  to.sin_port = htons(port);
  to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  const bool ok = ::connect(fd, reinterpret_cast<sockaddr*>(&to), sizeof to) == 0;
  ::close(fd);
  return ok;
}

}  // namespace

TlsServer::TlsServer(int netns, const std::string& directory, std::uint16_t port) {
  const std::string key = directory + "/secure.test.key";
  const std::string cert = directory + "/secure.test.pem";
  const std::string log = directory + "/openssl.log";

  ChildProcess req({"openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
                    "-days", "2", "-subj", "/CN=secure.test", "-addext",
                    "subjectAltName=DNS:secure.test,DNS:allowed.test", "-keyout", key, "-out", cert},
                   log);
  const auto made = req.wait_for(20s);
  if (!made || *made != 0) {
    throw std::runtime_error("openssl req (the test certificate) " +
                             (made ? describe_status(*made) : std::string("did not finish in 20 s")) + ": " +
                             read_file(log));
  }
  pem_ = read_file(cert);

  // -4: s_server would otherwise take an IPv6 socket, which the world has no use for.
  server_.emplace(std::vector<std::string>{"openssl", "s_server", "-4", "-accept", std::to_string(port), "-cert", cert,
                                           "-key", key, "-www"},
                  log, netns);
  // 30 s, as for the certificate: under the VMs' emulated cpu, on a loaded
  // two-core host, s_server has been seen to take over 5 s to listen.
  const auto deadline = std::chrono::steady_clock::now() + 30s;
  while (!accepts(netns, port)) {
    if (const auto ended = server_->wait_for(0ms)) {
      throw std::runtime_error("openssl s_server " + describe_status(*ended) + ": " + read_file(log));
    }
    if (std::chrono::steady_clock::now() >= deadline) {
      throw std::runtime_error("openssl s_server did not accept on " + std::to_string(port) +
                               " within 30 s: " + read_file(log));
    }
    std::this_thread::sleep_for(20ms);
  }
}

}  // namespace mayura::testing
