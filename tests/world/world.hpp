#pragma once
// The test world: a private fake internet for the network tests and
// benchmarks. It lives in one network namespace of its own, wired to the
// caller's namespace ("the host") by a veth pair, and holds a DNS server,
// HTTP servers, an HTTPS server and a UDP echo on TEST-NET-3 addresses.
// Nothing it does leaves namespaces the test process made.

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace mayura::testing {

// One A record of the world's DNS.
struct DnsRecord {
  std::string_view name;
  std::string_view address;
};

class World {
 public:
  // Builds the world, linked to the calling thread's network namespace.
  // Throws std::runtime_error naming the step that failed.
  World();
  // Stops every server and child process, deletes the veth pair, the world's
  // namespace and the private directory: nothing is left.
  ~World();
  World(const World&) = delete;
  World& operator=(const World&) = delete;

  static constexpr const char* kHostAddress = "203.0.113.1";  // the host's end of the link (`world0`)
  static constexpr const char* kDnsAddress = "203.0.113.53";  // the world's DNS server, UDP 53
  // A second DNS server (UDP 53) with the same records, which never answers
  // a name under stall.test (as a server that is down would not).
  static constexpr const char* kStallingDnsAddress = "203.0.113.54";
  static constexpr const char* kHostLink = "world0";

  // The names the world's DNS answers; any other name gets NXDOMAIN.
  static constexpr std::array<DnsRecord, 11> kDnsRecords{{
      {"allowed.test", "203.0.113.10"},
      {"www.allowed.test", "203.0.113.10"},
      {"deep.sub.allowed.test", "203.0.113.10"},
      {"other.test", "203.0.113.11"},
      {"allowed.test.evil.test", "203.0.113.11"},
      {"allowedxtest.evil.test", "203.0.113.11"},
      {"secure.test", "203.0.113.12"},
      {"private.test", "10.11.12.13"},
      {"loopback.test", "127.0.0.1"},
      {"metadata.test", "169.254.169.254"},
      {"host.test", "203.0.113.1"},
  }};

  // Every name the world's DNS was asked, as asked, in order. Thread-safe.
  std::vector<std::string> dns_queries() const;

  // Queries the stalling DNS server left unanswered.
  std::uint64_t stalled_dns_queries() const;

  // Connections accepted by the HTTP servers (TCP 80 and 8081), together.
  std::uint64_t connections() const;
  // Datagrams the UDP echo (5353) received.
  std::uint64_t udp_received() const;
  // The HTTPS server's (TCP 443) self-signed certificate, PEM.
  std::string certificate_pem() const;

  // The world's network namespace (an fd World owns).
  int netns() const;
  // The private directory holding the certificate and the child's log.
  std::string directory() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace mayura::testing
