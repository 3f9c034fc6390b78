// The allowlist's DNS server, for real: its socket inside a network
// namespace the test made (loopback only), asked by a client in that
// namespace with queries built by libresolv, its answers read by libresolv.

#include <arpa/inet.h>
#include <arpa/nameser.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <resolv.h>
#include <sched.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <thread>

#include "mayura/netfilter/allowlist.hpp"
#include "mayura/netfilter/dns_server.hpp"
#include "mayura/netfilter/io_thread.hpp"
#include "mayura/netfilter/netns_pool.hpp"
#include "mayura/netfilter/synthetic_addresses.hpp"
#include "mayura/validate.hpp"

namespace mayura::netfilter {
namespace {

constexpr std::uint32_t kServer = 0x7F000035;  // 127.0.0.53

class DnsServerTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_GE(netns_, 0); }
  void TearDown() override {
    server_.reset();
    if (netns_ >= 0) ::close(netns_);
  }

  void start(const std::vector<std::string>& allow) {
    allowlist_ = Allowlist(allow);
    server_ = std::make_unique<DnsServer>(io_.context(), netns_, kServer, 53, [this](const std::string& name) {
      return allowlist_.allows_name(name) ? addresses_.address_of(normalize_domain(name)) : std::nullopt;
    });
  }

  // One query from a client inside the namespace; the raw answer.
  std::string ask(const std::string& packet) {
    std::string reply;
    std::thread client([&] {
      if (::setns(netns_, CLONE_NEWNET) != 0) return;
      const int fd = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
      timeval bound{10, 0};
      ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &bound, sizeof bound);
      sockaddr_in server{};
      server.sin_family = AF_INET;
      server.sin_port = htons(53);
      server.sin_addr.s_addr = htonl(kServer);
      ::sendto(fd, packet.data(), packet.size(), 0, reinterpret_cast<sockaddr*>(&server), sizeof server);
      char buf[4096];
      const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
      if (n > 0) reply.assign(buf, static_cast<std::size_t>(n));
      ::close(fd);
    });
    client.join();
    return reply;
  }

  static std::string query(const std::string& name, int type) {
    unsigned char buf[512];
    const int n = res_mkquery(ns_o_query, name.c_str(), ns_c_in, type, nullptr, 0, nullptr, buf, sizeof buf);
    EXPECT_GT(n, 0);
    return std::string(reinterpret_cast<char*>(buf), static_cast<std::size_t>(n > 0 ? n : 0));
  }

  struct Parsed {
    int rcode = -1;
    std::vector<std::string> a;  // dotted addresses answered
    int answers = 0;
  };
  static Parsed parse(const std::string& reply) {
    Parsed p;
    ns_msg msg;
    if (ns_initparse(reinterpret_cast<const unsigned char*>(reply.data()), static_cast<int>(reply.size()), &msg) != 0) {
      return p;
    }
    p.rcode = ns_msg_getflag(msg, ns_f_rcode);
    p.answers = ns_msg_count(msg, ns_s_an);
    for (int i = 0; i < p.answers; ++i) {
      ns_rr rr;
      if (ns_parserr(&msg, ns_s_an, i, &rr) == 0 && ns_rr_type(rr) == ns_t_a && ns_rr_rdlen(rr) == 4) {
        char text[INET_ADDRSTRLEN];
        ::inet_ntop(AF_INET, ns_rr_rdata(rr), text, sizeof text);
        p.a.push_back(text);
      }
    }
    return p;
  }

  int netns_ = NetnsPool::make();
  IoThread io_;
  Allowlist allowlist_;
  SyntheticAddresses addresses_;
  std::unique_ptr<DnsServer> server_;
};

TEST_F(DnsServerTest, AllowedNamesGetSyntheticAddressesAndKeepThem) {
  start({"registry.npmjs.org", "*.example.com"});
  const Parsed a = parse(ask(query("registry.npmjs.org", ns_t_a)));
  EXPECT_EQ(a.rcode, ns_r_noerror);
  ASSERT_EQ(a.a.size(), 1u);
  EXPECT_EQ(a.a[0].rfind("198.1", 0), 0u) << a.a[0];
  EXPECT_EQ(parse(ask(query("REGISTRY.npmjs.org.", ns_t_a))).a, a.a);  // the same name, the same address
  const Parsed b = parse(ask(query("deep.down.example.com", ns_t_a)));
  ASSERT_EQ(b.a.size(), 1u);
  EXPECT_NE(b.a[0], a.a[0]);
  EXPECT_EQ(addresses_.name_of(::ntohl(::inet_addr(b.a[0].c_str()))), "deep.down.example.com");
}

TEST_F(DnsServerTest, OtherTypesOfAnAllowedNameGetAnEmptyAnswer) {
  start({"registry.npmjs.org"});
  const Parsed p = parse(ask(query("registry.npmjs.org", ns_t_aaaa)));
  EXPECT_EQ(p.rcode, ns_r_noerror);
  EXPECT_EQ(p.answers, 0);
}

TEST_F(DnsServerTest, EveryOtherNameIsNxdomainAtOnce) {
  start({"allowed.example"});
  for (const char* name :
       {"evil.test", "allowed.example.evil.test", "example", "xallowed.example", "169.254.169.254"}) {
    const Parsed p = parse(ask(query(name, ns_t_a)));
    EXPECT_EQ(p.rcode, ns_r_nxdomain) << name;
    EXPECT_EQ(p.answers, 0) << name;
  }
}

TEST_F(DnsServerTest, MalformedQueriesGetFormerrAndTheServerGoesOn) {
  start({"allowed.example"});
  const std::string garbage = "\x12\x34\x01";
  const std::string reply = ask(garbage);
  ASSERT_EQ(reply.size(), 12u);
  EXPECT_EQ(reply[3] & 0xf, ns_r_formerr);
  EXPECT_EQ(parse(ask(query("allowed.example", ns_t_a))).a.size(), 1u);
  EXPECT_EQ(server_->answered(), 2u);
}

TEST(SyntheticAddresses, OnePerNameFromTheBenchmarkRangeUntilItIsUsedUp) {
  SyntheticAddresses s;
  const auto a = s.address_of("a.example");
  const auto b = s.address_of("b.example");
  ASSERT_TRUE(a && b);
  EXPECT_NE(*a, *b);
  EXPECT_EQ(s.address_of("a.example"), a);
  EXPECT_GE(*a, SyntheticAddresses::kFirst);
  EXPECT_EQ(*a >> 17, SyntheticAddresses::kBase >> 17);  // inside 198.18.0.0/15
  EXPECT_EQ(s.name_of(*b), "b.example");
  EXPECT_FALSE(s.name_of(SyntheticAddresses::kBase));
  EXPECT_FALSE(s.name_of(0x7F000001));
}

}  // namespace
}  // namespace mayura::netfilter
