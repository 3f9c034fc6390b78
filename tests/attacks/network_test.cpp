// Network none: only loopback exists, nothing leaves (no route), and the
// sockets that are not network-namespaced are refused. Only TEST-NET-1
// (192.0.2.0/24, documentation) is ever addressed, and with no route no
// packet is sent.

#include <sstream>

#include "attack.hpp"

namespace mayura::testing {
namespace {

using NetworkTest = AttackTest;

TEST_F(NetworkTest, OnlyLoopbackExists) {
  auto s = create();
  std::istringstream in(sh(s, "cat /proc/net/dev"));
  std::string line;
  std::vector<std::string> links;
  while (std::getline(in, line)) {
    const auto colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::string name = line.substr(0, colon);
    name.erase(0, name.find_first_not_of(' '));
    links.push_back(name);
  }
  EXPECT_EQ(links, std::vector<std::string>{"lo"});
}

TEST_F(NetworkTest, NothingLeavesAndOnlyLoopbackWorks) {
  auto s = create();
  install_probe(s);
  auto r = probe(s, {"net"});
  EXPECT_EQ(r["tcp_connect"], "ENETUNREACH");
  EXPECT_EQ(r["udp_sendto"], "ENETUNREACH");
  EXPECT_EQ(r["vsock"], "EPERM");
  EXPECT_EQ(r["vsock_high"], "EPERM");
  EXPECT_EQ(r["loopback"], "ok");
  EXPECT_EQ(r["netlink"], "ok");
  EXPECT_EQ(r["newlink"], "EPERM");
  EXPECT_EQ(sh(s, "cat /sys/class/net/lo/operstate 2>/dev/null; grep -c lo /proc/net/dev"), "1\n");
}

}  // namespace
}  // namespace mayura::testing
