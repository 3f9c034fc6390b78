// The network kind `all`'s host link, for real, in network namespaces the
// test made: the test's own plays the host (entered first, so nothing
// touches the machine), one namespace per sandbox, and one for "the
// internet" (TEST-NET addresses, 198.51.100.0/24 between it and the host,
// 203.0.113.7 beyond it). What is checked is what packets do.

#include <arpa/inet.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <netinet/ip.h>
#include <netinet/udp.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "harness.hpp"
#include "host_nat.hpp"
#include "mayura/netfilter/host_link.hpp"
#include "mayura/netfilter/io_thread.hpp"
#include "mayura/netfilter/netns_pool.hpp"
#include "mayura/netfilter/nftables.hpp"
#include "netns_thread.hpp"
#include "veth.hpp"

namespace mayura::netfilter {
namespace {

using testing::reason_of;

class Fd {
 public:
  explicit Fd(int fd = -1) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }
  void reset(int fd) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = fd;
  }

 private:
  int fd_;
};

struct Netns : Fd {
  Netns() : Fd(NetnsPool::make()) {}
};

std::uint32_t parse(const std::string& dotted) {
  in_addr a{};
  EXPECT_EQ(::inet_pton(AF_INET, dotted.c_str(), &a), 1) << dotted;
  return ntohl(a.s_addr);
}

sockaddr_in endpoint(const std::string& address, std::uint16_t port) {
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  a.sin_addr.s_addr = htonl(parse(address));
  return a;
}

int socket_of(int netns, int type) {
  const int fd = socket_in(netns, AF_INET, type);
  EXPECT_GE(fd, 0) << std::strerror(errno);
  return fd;
}

// A TCP listener in `netns` on address:0; its port through `port`.
int listen_in(int netns, const std::string& address, std::uint16_t& port) {
  const int fd = socket_of(netns, SOCK_STREAM);
  sockaddr_in a = endpoint(address, 0);
  EXPECT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0) << std::strerror(errno);
  EXPECT_EQ(::listen(fd, 16), 0) << std::strerror(errno);
  socklen_t len = sizeof a;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  port = ntohs(a.sin_port);
  return fd;
}

struct Attempt {
  int error = 0;  // 0: connected; ETIMEDOUT: no answer within the bound
};

// A TCP connect from `netns` to address:port, given up after `bound_ms`.
// The connected socket, if any, through `connected`.
Attempt connect_from(int netns, const std::string& address, std::uint16_t port, int bound_ms, Fd* connected = nullptr) {
  const int fd = socket_of(netns, SOCK_STREAM | SOCK_NONBLOCK);
  Fd owned(connected ? -1 : fd);
  if (connected) connected->reset(fd);
  const sockaddr_in a = endpoint(address, port);
  Attempt result;
  if (::connect(fd, reinterpret_cast<const sockaddr*>(&a), sizeof a) == 0) return result;
  if (errno != EINPROGRESS) {
    result.error = errno;
  } else {
    pollfd p{fd, POLLOUT, 0};
    if (::poll(&p, 1, bound_ms) == 0) {
      result.error = ETIMEDOUT;
    } else {
      socklen_t len = sizeof result.error;
      ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &result.error, &len);
    }
  }
  return result;
}

// Refused at once: the connect fails ECONNREFUSED (a TCP reset). A drop
// gives no answer, and the connect fails ETIMEDOUT once the generous bound,
// there only so that the test cannot hang, has passed.
void expect_refused(int netns, const std::string& address, std::uint16_t port) {
  const Attempt a = connect_from(netns, address, port, 20'000);
  EXPECT_EQ(a.error, ECONNREFUSED) << address << ":" << port << ": " << std::strerror(a.error);
}

// The IPv4 addresses of `link` in `netns`, as "a.b.c.d/len".
std::set<std::string> addresses_of(int netns, const std::string& link) {
  std::set<std::string> found;
  run_in_netns(netns, [&] {
    ifaddrs* all = nullptr;
    ASSERT_EQ(::getifaddrs(&all), 0);
    for (ifaddrs* i = all; i; i = i->ifa_next) {
      if (!i->ifa_addr || i->ifa_addr->sa_family != AF_INET || link != i->ifa_name) continue;
      const auto* addr = reinterpret_cast<const sockaddr_in*>(i->ifa_addr);
      const auto* mask = reinterpret_cast<const sockaddr_in*>(i->ifa_netmask);
      char text[INET_ADDRSTRLEN] = {};
      ::inet_ntop(AF_INET, &addr->sin_addr, text, sizeof text);
      found.insert(std::string(text) + "/" + std::to_string(__builtin_popcount(mask->sin_addr.s_addr)));
    }
    ::freeifaddrs(all);
  });
  return found;
}

// A file of `netns`'s own /proc (the thread-self view: /proc/self/net would
// be the test's main thread's namespace).
std::string read_in(int netns, const std::string& path) {
  std::string text;
  run_in_netns(netns, [&] { text = testing::read_host(path); });
  return text;
}

// Link names of the namespace the test's main thread is in, read from
// /proc (not netlink, which the code under test uses).
std::set<std::string> proc_links() {
  std::set<std::string> names;
  std::istringstream in(testing::read_host("/proc/self/net/dev"));
  std::string line;
  while (std::getline(in, line)) {
    const auto colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::string name = line.substr(0, colon);
    name.erase(0, name.find_first_not_of(' '));
    names.insert(name);
  }
  return names;
}

// The machine's own links named mayura*: /sys stays the mount of the
// namespace the test started in.
std::set<std::string> machine_mayura_links() {
  std::set<std::string> names;
  for (const auto& e : std::filesystem::directory_iterator("/sys/class/net")) {
    const std::string name = e.path().filename();
    if (name.starts_with("mayura")) names.insert(name);
  }
  return names;
}

class HostLinkTest : public ::testing::Test {
 protected:
  void SetUp() override {
    machine_ns_ = ::open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
    ASSERT_GE(machine_ns_, 0);
    machine_forward_ = read_in(machine_ns_, "/proc/sys/net/ipv4/ip_forward");
    machine_links_ = machine_mayura_links();
    testing::enter_own_network_namespace();
    host_ns_ = ::open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
    ASSERT_GE(host_ns_, 0);
    options_.lock_file = "/run/mayura-test-" + std::to_string(::getpid()) + "-network.lock";
  }

  void TearDown() override {
    for (const std::string& name : proc_links()) EXPECT_FALSE(name.starts_with("mayura")) << name << " was left";
    EXPECT_FALSE(has_table()) << "the table ip mayura was left";
    // HostLink turns forwarding on and leaves it on (see host_nat.hpp).
    if (used_) {
      EXPECT_EQ(testing::read_host("/proc/sys/net/ipv4/ip_forward"), "1\n");
    }
    EXPECT_EQ(read_in(machine_ns_, "/proc/sys/net/ipv4/ip_forward"), machine_forward_)
        << "the machine's forwarding changed";
    EXPECT_EQ(machine_mayura_links(), machine_links_) << "the machine's links changed";
    ::unlink(options_.lock_file.c_str());
    if (host_ns_ >= 0) ::close(host_ns_);
    if (machine_ns_ >= 0) ::close(machine_ns_);
  }

  bool has_table() {
    const NftResult r = run_nft(host_ns_, "list tables");
    EXPECT_TRUE(r.ok) << r.error;
    return r.output.find("table ip mayura\n") != std::string::npos;
  }

  std::string table() {
    const NftResult r = run_nft(host_ns_, "list table ip mayura");
    EXPECT_TRUE(r.ok) << r.error;
    return r.output;
  }

  std::unique_ptr<HostLink> link(int sandbox_ns, std::uint32_t slot) {
    used_ = true;
    return std::make_unique<HostLink>(sandbox_ns, slot, options_);
  }

  // "The internet": a namespace behind uplink0 (198.51.100.1/24 here,
  // .2 there), holding 203.0.113.7 on its loopback; the host's default route
  // points at it. It routes the pool back to the host, so only the host's
  // rules keep it out of a sandbox.
  void make_internet() {
    RouteSocket host(host_ns_);
    host.add_veth("uplink0", internet_.get(), "eth0");
    host.add_address("uplink0", parse("198.51.100.1"), 24);
    host.set_up("uplink0");
    RouteSocket out(internet_.get());
    out.add_address("eth0", parse("198.51.100.2"), 24);
    out.set_up("eth0");
    out.add_address("lo", parse("203.0.113.7"), 32);
    out.add_route(parse("10.234.0.0"), 16, parse("198.51.100.1"));
    host.add_route(0, 0, parse("198.51.100.2"));
  }

  int machine_ns_ = -1;
  int host_ns_ = -1;
  std::string machine_forward_;
  std::set<std::string> machine_links_;
  bool used_ = false;
  HostLinkOptions options_;
  Netns internet_;
};

TEST_F(HostLinkTest, TheSandboxGetsAPairOfAddressesAndARouteOut) {
  Netns sandbox;
  ASSERT_GE(sandbox.get(), 0);
  auto l = link(sandbox.get(), 5);
  EXPECT_EQ(l->host_interface(), "mayura5");
  EXPECT_EQ(l->host_address(), "10.234.0.10");
  EXPECT_EQ(l->sandbox_address(), "10.234.0.11");
  EXPECT_EQ(addresses_of(host_ns_, "mayura5"), std::set<std::string>{"10.234.0.10/31"});
  EXPECT_EQ(addresses_of(sandbox.get(), "eth0"), std::set<std::string>{"10.234.0.11/31"});
  EXPECT_TRUE(proc_links().contains("mayura5"));
  // The default route (destination 0) via 10.234.0.10, in /proc's
  // little-endian hex.
  EXPECT_NE(read_in(sandbox.get(), "/proc/thread-self/net/route").find("eth0\t00000000\t0A00EA0A"), std::string::npos)
      << read_in(sandbox.get(), "/proc/thread-self/net/route");
  // IPv4 only: the table is IPv4's. (A kernel booted with ipv6.disable=1
  // has no IPv6 to turn off, and no such files.)
  if (std::filesystem::exists("/proc/sys/net/ipv6")) {
    EXPECT_EQ(testing::read_host("/proc/sys/net/ipv6/conf/mayura5/disable_ipv6"), "1\n");
    EXPECT_EQ(read_in(sandbox.get(), "/proc/sys/net/ipv6/conf/eth0/disable_ipv6"), "1\n");
  }
  EXPECT_EQ(read_in(sandbox.get(), "/proc/thread-self/net/if_inet6").find("eth0"), std::string::npos);
  EXPECT_EQ(testing::read_host("/proc/self/net/if_inet6").find("mayura5"), std::string::npos);
  EXPECT_EQ(testing::read_host("/proc/sys/net/ipv4/ip_forward"), "1\n");
  const std::string rules = table();
  EXPECT_NE(rules.find("ip saddr 10.234.0.0/16 oifname != \"mayura*\" masquerade"), std::string::npos) << rules;
}

TEST_F(HostLinkTest, TheSandboxReachesNoServiceOfTheHost) {
  Netns sandbox;
  ASSERT_GE(sandbox.get(), 0);
  make_internet();
  auto l = link(sandbox.get(), 0);
  std::uint16_t port = 0;
  const Fd listener(listen_in(host_ns_, "0.0.0.0", port));
  // The listener answers the host itself on every one of its addresses...
  EXPECT_EQ(connect_from(host_ns_, l->host_address(), port, 2000).error, 0);
  // ...and a sandbox on none, at once.
  expect_refused(sandbox.get(), l->host_address(), port);
  expect_refused(sandbox.get(), "198.51.100.1", port);
  // Not TCP: the host's answer is an ICMP error, which a connected UDP
  // socket sees, and the host's socket gets nothing.
  const Fd host_udp(socket_of(host_ns_, SOCK_DGRAM));
  sockaddr_in a = endpoint("0.0.0.0", port);
  ASSERT_EQ(::bind(host_udp.get(), reinterpret_cast<sockaddr*>(&a), sizeof a), 0) << std::strerror(errno);
  const Fd udp(socket_of(sandbox.get(), SOCK_DGRAM));
  a = endpoint(l->host_address(), port);
  ASSERT_EQ(::connect(udp.get(), reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  ASSERT_EQ(::send(udp.get(), "x", 1, 0), 1);
  pollfd p{udp.get(), POLLIN, 0};
  ASSERT_EQ(::poll(&p, 1, 2000), 1) << "no ICMP error came back";
  char buf[16];
  EXPECT_LT(::recv(udp.get(), buf, sizeof buf, MSG_DONTWAIT), 0);
  EXPECT_EQ(errno, EHOSTUNREACH) << std::strerror(errno);  // admin-prohibited
  EXPECT_LT(::recv(host_udp.get(), buf, sizeof buf, MSG_DONTWAIT), 0);
}

TEST_F(HostLinkTest, SandboxesCannotReachEachOther) {
  Netns a_ns, b_ns;
  ASSERT_GE(a_ns.get(), 0);
  ASSERT_GE(b_ns.get(), 0);
  auto a = link(a_ns.get(), 0);
  auto b = link(b_ns.get(), 1);
  EXPECT_EQ(b->sandbox_address(), "10.234.0.3");
  std::uint16_t port = 0;
  const Fd listener(listen_in(a_ns.get(), "0.0.0.0", port));
  EXPECT_EQ(connect_from(a_ns.get(), a->sandbox_address(), port, 2000).error, 0);  // it does listen on eth0
  expect_refused(b_ns.get(), a->sandbox_address(), port);
  expect_refused(b_ns.get(), a->host_address(), port);
  expect_refused(a_ns.get(), b->sandbox_address(), port);
}

TEST_F(HostLinkTest, TheSandboxReachesTheInternetMasqueradedAndNothingReachesIt) {
  Netns sandbox;
  ASSERT_GE(sandbox.get(), 0);
  make_internet();
  auto l = link(sandbox.get(), 0);

  std::uint16_t port = 0;
  const Fd server(listen_in(internet_.get(), "0.0.0.0", port));
  Fd client;
  const Attempt out = connect_from(sandbox.get(), "203.0.113.7", port, 5000, &client);
  ASSERT_EQ(out.error, 0) << std::strerror(out.error);
  sockaddr_in peer{};
  socklen_t len = sizeof peer;
  const Fd accepted(::accept4(server.get(), reinterpret_cast<sockaddr*>(&peer), &len, SOCK_CLOEXEC));
  ASSERT_GE(accepted.get(), 0) << std::strerror(errno);
  char seen[INET_ADDRSTRLEN] = {};
  ::inet_ntop(AF_INET, &peer.sin_addr, seen, sizeof seen);
  EXPECT_STREQ(seen, "198.51.100.1");  // masqueraded: the sandbox's address never leaves the host
  ASSERT_EQ(::send(accepted.get(), "pong", 4, MSG_NOSIGNAL), 4);
  pollfd p{client.get(), POLLIN, 0};
  ASSERT_EQ(::poll(&p, 1, 2000), 1);
  char buf[8] = {};
  EXPECT_EQ(::recv(client.get(), buf, sizeof buf, 0), 4);
  EXPECT_STREQ(buf, "pong");

  // The outside routes to the sandbox, and still cannot open a connection.
  std::uint16_t inside_port = 0;
  const Fd inside(listen_in(sandbox.get(), "0.0.0.0", inside_port));
  EXPECT_EQ(connect_from(internet_.get(), l->sandbox_address(), inside_port, 1500).error, ETIMEDOUT);

  // Cloud metadata services, which hand out a host's credentials, are refused.
  for (const char* metadata : {"169.254.169.254", "100.100.100.200", "192.0.0.192"}) {
    expect_refused(sandbox.get(), metadata, 80);
  }
}

// A raw socket (which the test, unlike a sandbox, may make there) sends UDP
// with a source of its choosing: only the sandbox's own gets out.
TEST_F(HostLinkTest, ASandboxCannotForgeItsSource) {
  Netns a_ns, b_ns;
  ASSERT_GE(a_ns.get(), 0);
  ASSERT_GE(b_ns.get(), 0);
  make_internet();
  auto a = link(a_ns.get(), 0);
  auto b = link(b_ns.get(), 1);
  const Fd receiver(socket_of(internet_.get(), SOCK_DGRAM));
  sockaddr_in at = endpoint("0.0.0.0", 0);
  ASSERT_EQ(::bind(receiver.get(), reinterpret_cast<sockaddr*>(&at), sizeof at), 0);
  socklen_t len = sizeof at;
  ::getsockname(receiver.get(), reinterpret_cast<sockaddr*>(&at), &len);

  int raw_fd = -1;
  run_in_netns(a_ns.get(), [&] { raw_fd = ::socket(AF_INET, SOCK_RAW | SOCK_CLOEXEC, IPPROTO_RAW); });
  const Fd raw(raw_fd);
  ASSERT_GE(raw.get(), 0) << std::strerror(errno);
  const auto send_from = [&](const std::string& source, const std::string& payload) {
    std::string packet(sizeof(iphdr) + sizeof(udphdr), '\0');
    auto* ip = reinterpret_cast<iphdr*>(packet.data());
    ip->version = 4;
    ip->ihl = 5;
    ip->ttl = 64;
    ip->protocol = IPPROTO_UDP;
    ip->saddr = htonl(parse(source));
    ip->daddr = htonl(parse("203.0.113.7"));
    auto* udp = reinterpret_cast<udphdr*>(packet.data() + sizeof(iphdr));
    udp->source = htons(40000);
    udp->dest = at.sin_port;
    udp->len = htons(static_cast<std::uint16_t>(sizeof(udphdr) + payload.size()));
    packet += payload;  // no UDP checksum (0): allowed over IPv4
    const sockaddr_in to = endpoint("203.0.113.7", 0);
    EXPECT_EQ(::sendto(raw.get(), packet.data(), packet.size(), 0, reinterpret_cast<const sockaddr*>(&to), sizeof to),
              static_cast<ssize_t>(packet.size()))
        << std::strerror(errno);
  };
  send_from(b->sandbox_address(), "as-b");      // another sandbox's
  send_from("192.0.2.1", "outside-the-pool");   // anyone's
  send_from(a->host_address(), "as-the-host");  // its own link's other end
  send_from(a->sandbox_address(), "its-own");   // the one that passes
  std::set<std::string> got;
  for (;;) {
    pollfd p{receiver.get(), POLLIN, 0};
    if (::poll(&p, 1, 1000) != 1) break;
    char buf[64] = {};
    const ssize_t n = ::recv(receiver.get(), buf, sizeof buf - 1, 0);
    if (n > 0) got.insert(std::string(buf, static_cast<std::size_t>(n)));
  }
  EXPECT_EQ(got, std::set<std::string>{"its-own"});
}

TEST_F(HostLinkTest, TheTableLastsWhileAnyLinkDoes) {
  Netns a_ns, b_ns;
  ASSERT_GE(a_ns.get(), 0);
  ASSERT_GE(b_ns.get(), 0);
  auto a = link(a_ns.get(), 0);
  EXPECT_TRUE(has_table());
  auto b = link(b_ns.get(), 1);
  a.reset();
  // Gone when the destructor returns, not whenever the kernel gets to it.
  EXPECT_FALSE(proc_links().contains("mayura0"));
  EXPECT_TRUE(addresses_of(a_ns.get(), "eth0").empty());
  EXPECT_EQ(read_in(a_ns.get(), "/proc/thread-self/net/dev").find("eth0"), std::string::npos);
  EXPECT_TRUE(proc_links().contains("mayura1"));
  EXPECT_TRUE(has_table());
  // A third takes the first's slot back.
  auto c = link(a_ns.get(), 0);
  EXPECT_EQ(c->sandbox_address(), "10.234.0.1");
  b.reset();
  c.reset();
  EXPECT_FALSE(has_table());
}

TEST_F(HostLinkTest, ABadPoolIsInvalidConfigAndLeavesNothing) {
  for (const char* good : {"10.234.0.0/16", "10.0.0.0/8", "192.168.8.0/31", "100.64.0.0/10"}) {
    EXPECT_NO_THROW(check_pool(good)) << good;
  }
  for (const char* bad : {"", "10.234.0.0", "10.234.0.0/", "10.234.0.0/33", "10.234.0.0/32", "10.0.0.0/7",
                          "10.234.0.1/16", "10.234.0/16", "010.234.0.0/16", "10.234.0.0/+16", "10.234.0.0/16 ",
                          "fd00::/64", "127.0.0.0/8", "169.254.0.0/16", "224.0.0.0/8", "0.0.0.0/8", "banana/16"}) {
    EXPECT_EQ(reason_of([&] { check_pool(bad); }), Reason::INVALID_CONFIG) << bad;
  }
  try {
    check_pool("10.234.0.1/16");
  } catch (const SandboxError& e) {
    EXPECT_NE(std::string(e.what()).find("host bits"), std::string::npos) << e.what();
  }
  Netns sandbox;
  ASSERT_GE(sandbox.get(), 0);
  options_.pool = "10.234.0.0/99";
  EXPECT_EQ(reason_of([&] { link(sandbox.get(), 0); }), Reason::INVALID_CONFIG);
  options_.pool = "10.234.0.0/16";
  options_.lock_file.clear();
  EXPECT_EQ(reason_of([&] { link(sandbox.get(), 0); }), Reason::INVALID_CONFIG);
  used_ = false;  // nothing was made: forwarding stays as it was
}

TEST_F(HostLinkTest, ASlotBeyondThePoolIsLimitReachedAndLeavesNothing) {
  Netns sandbox;
  ASSERT_GE(sandbox.get(), 0);
  options_.pool = "10.234.0.0/30";  // two slots
  EXPECT_EQ(reason_of([&] { link(sandbox.get(), 2); }), Reason::LIMIT_REACHED);
  EXPECT_EQ(reason_of([&] { link(sandbox.get(), 4000000000u); }), Reason::LIMIT_REACHED);
  EXPECT_FALSE(has_table());
  auto last = link(sandbox.get(), 1);
  EXPECT_EQ(last->sandbox_address(), "10.234.0.3");
  EXPECT_NE(table().find("ip saddr != 10.234.0.0/30 drop"), std::string::npos) << table();
}

TEST_F(HostLinkTest, AFailedLinkLeavesNothingAndTheOthersAlone) {
  Netns a_ns, b_ns;
  ASSERT_GE(a_ns.get(), 0);
  ASSERT_GE(b_ns.get(), 0);
  // A namespace that cannot be entered: nothing is made.
  EXPECT_EQ(reason_of([&] { link(-1, 0); }), Reason::INTERNAL);
  EXPECT_FALSE(has_table());

  // The veth pair cannot be made: the sandbox already has an eth0 (the
  // table was defined first, and goes again).
  {
    Netns elsewhere;
    RouteSocket(elsewhere.get()).add_veth("other0", b_ns.get(), "eth0");
    try {
      link(b_ns.get(), 3);
      ADD_FAILURE() << "a second eth0 was made";
    } catch (const SandboxError& e) {
      EXPECT_EQ(e.reason(), Reason::INTERNAL);
      EXPECT_NE(std::string(e.what()).find("making the veth pair mayura3"), std::string::npos) << e.what();
    }
    EXPECT_FALSE(has_table());
    EXPECT_FALSE(proc_links().contains("mayura3"));
  }

  // The pair is made, and a later step fails: the sandbox already has a
  // default route. The pair goes again.
  {
    Netns d_ns, peer;
    RouteSocket(d_ns.get()).add_veth("other1", peer.get(), "other1");
    RouteSocket inside(d_ns.get());
    inside.add_address("other1", parse("192.0.2.1"), 24);
    inside.set_up("other1");
    RouteSocket(peer.get()).set_up("other1");
    inside.add_route(0, 0, parse("192.0.2.2"));
    try {
      link(d_ns.get(), 4);
      ADD_FAILURE() << "a second default route was made";
    } catch (const SandboxError& e) {
      EXPECT_EQ(e.reason(), Reason::INTERNAL);
      EXPECT_NE(std::string(e.what()).find("adding the route 0.0.0.0/0 via 10.234.0.8"), std::string::npos) << e.what();
    }
    EXPECT_FALSE(has_table());
    EXPECT_FALSE(proc_links().contains("mayura4"));
  }

  // A slot in use: the second is refused, the first keeps its link and table.
  auto a = link(a_ns.get(), 0);
  Netns c_ns;
  EXPECT_EQ(reason_of([&] { link(c_ns.get(), 0); }), Reason::INTERNAL);
  EXPECT_TRUE(has_table());
  EXPECT_EQ(addresses_of(a_ns.get(), "eth0"), std::set<std::string>{"10.234.0.1/31"});
  EXPECT_EQ(connect_from(a_ns.get(), a->host_address(), 9, 2000).error, ECONNREFUSED);  // the link still works
}

}  // namespace
}  // namespace mayura::netfilter
