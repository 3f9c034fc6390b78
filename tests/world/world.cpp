#include "world.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <optional>
#include <stdexcept>

#include "http_server.hpp"
#include "mayura/netfilter/dns_server.hpp"
#include "mayura/netfilter/io_thread.hpp"
#include "mayura/netfilter/netns_pool.hpp"
#include "tls_server.hpp"
#include "udp_echo.hpp"
#include "veth.hpp"

namespace mayura::testing {
namespace {

namespace fs = std::filesystem;

class Fd {
 public:
  Fd(int fd, const char* what) : fd_(fd) {
    if (fd_ < 0) throw std::runtime_error(std::string(what) + ": " + std::strerror(errno));
  }
  ~Fd() { ::close(fd_); }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }

 private:
  int fd_;
};

class TempDir {
 public:
  TempDir() {
    std::string pattern = (fs::temp_directory_path() / "mayura-world-XXXXXX").string();
    if (::mkdtemp(pattern.data()) == nullptr) {
      throw std::runtime_error("making a private directory: " + std::string(std::strerror(errno)));
    }
    path_ = pattern;
  }
  ~TempDir() {
    std::error_code ignored;
    fs::remove_all(path_, ignored);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

std::uint32_t ipv4(std::string_view text) {
  in_addr a{};
  if (::inet_pton(AF_INET, std::string(text).c_str(), &a) != 1) throw std::logic_error("not an IPv4 address");
  return ntohl(a.s_addr);
}

// Names compare as DNS compares them: case aside, a trailing dot aside.
std::optional<std::uint32_t> lookup(std::string name) {
  if (!name.empty() && name.back() == '.') name.pop_back();
  std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return std::tolower(c); });
  for (const auto& record : World::kDnsRecords) {
    if (record.name == name) return ipv4(record.address);
  }
  return std::nullopt;
}

VethEnd host_end(int netns) { return {netns, World::kHostLink, {std::string(World::kHostAddress) + "/24"}, ""}; }

// Every address the world's servers are reached at, all on one link; the
// default route sends answers to NAT'ed clients back through the host.
VethEnd world_end(int netns) {
  return {netns,
          "eth0",
          {"203.0.113.2/24", "203.0.113.10/32", "203.0.113.11/32", "203.0.113.12/32",
           std::string(World::kDnsAddress) + "/32", std::string(World::kStallingDnsAddress) + "/32"},
          World::kHostAddress};
}

}  // namespace

// Members are made in order and undone in reverse: servers stop before the
// io thread, the link goes before the namespaces, the directory last.
struct World::Impl {
  Impl()
      : host(::open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC), "opening the host's network namespace"),
        world(netfilter::NetnsPool::make(), "making the world's network namespace"),
        link(host_end(host.get()), world_end(world.get())),
        dns(io.context(), world.get(), ipv4(kDnsAddress), 53,
            [this](const std::string& name) {
              {
                std::lock_guard lock(mutex);
                queries.push_back(name);
              }
              return lookup(name);
            }),
        // A server that never answers names under stall.test.
        stalling_dns(io.context(), world.get(), ipv4(kStallingDnsAddress), 53, lookup,
                     [](const std::string& name) {
                       const std::string_view suffix = "stall.test";
                       return name.size() >= suffix.size() &&
                              name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0;
                     }),
        http(io.context(), world.get(), 80),
        odd_port(io.context(), world.get(), 8081),
        udp(io.context(), world.get(), 5353),
        tls(world.get(), directory.path(), 443) {}

  TempDir directory;
  Fd host;
  Fd world;
  VethPair link;
  netfilter::IoThread io;
  mutable std::mutex mutex;
  std::vector<std::string> queries;
  netfilter::DnsServer dns;
  netfilter::DnsServer stalling_dns;
  HttpServer http;
  HttpServer odd_port;
  UdpEcho udp;
  TlsServer tls;
};

World::World() {
  try {
    impl_ = std::make_unique<Impl>();
  } catch (const std::exception& e) {
    throw std::runtime_error(std::string("building the test world: ") + e.what());
  }
}

World::~World() = default;

std::vector<std::string> World::dns_queries() const {
  std::lock_guard lock(impl_->mutex);
  return impl_->queries;
}

std::uint64_t World::connections() const { return impl_->http.connections() + impl_->odd_port.connections(); }
std::uint64_t World::stalled_dns_queries() const { return impl_->stalling_dns.dropped(); }
std::uint64_t World::udp_received() const { return impl_->udp.received(); }
std::string World::certificate_pem() const { return impl_->tls.certificate_pem(); }
int World::netns() const { return impl_->world.get(); }
std::string World::directory() const { return impl_->directory.path(); }

}  // namespace mayura::testing
