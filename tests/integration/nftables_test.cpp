// nftables through libnftables, in a network namespace the test made: rules
// go in as one transaction, errors come back as text, and nothing reaches
// the namespace the test runs in.

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include "mayura/netfilter/netns_pool.hpp"
#include "mayura/netfilter/nftables.hpp"

namespace mayura::netfilter {
namespace {

struct PooledNetns {
  int fd = NetnsPool::make();
  ~PooledNetns() {
    if (fd >= 0) ::close(fd);
  }
};

std::string own_tables() {
  const int self = ::open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
  const NftResult r = run_nft(self, "list tables");
  ::close(self);
  EXPECT_TRUE(r.ok) << r.error;
  return r.output;
}

TEST(Nftables, ATableGoesIntoTheNamespaceAndOnlyThere) {
  const std::string before = own_tables();
  PooledNetns ns;
  ASSERT_GE(ns.fd, 0);
  NftResult r = run_nft(ns.fd,
                        "table ip mayura_test {\n"
                        "  chain output {\n"
                        "    type nat hook output priority -100; policy accept;\n"
                        "    ip daddr 198.18.0.0/15 meta l4proto tcp redirect to :15001\n"
                        "  }\n"
                        "}\n");
  ASSERT_TRUE(r.ok) << r.error;
  r = run_nft(ns.fd, "list table ip mayura_test");
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_NE(r.output.find("redirect to :15001"), std::string::npos) << r.output;
  EXPECT_EQ(own_tables(), before);  // the test's own namespace is untouched
  r = run_nft(ns.fd, "delete table ip mayura_test");
  EXPECT_TRUE(r.ok) << r.error;
  r = run_nft(ns.fd, "list tables");
  EXPECT_TRUE(r.ok) << r.error;
  EXPECT_EQ(r.output.find("mayura_test"), std::string::npos) << r.output;
}

TEST(Nftables, ABatchWithAnErrorChangesNothingAndSaysWhy) {
  PooledNetns ns;
  ASSERT_GE(ns.fd, 0);
  const NftResult r = run_nft(ns.fd,
                              "add table ip mayura_test\n"
                              "add chain ip mayura_test c { type filter hook input priority 0; }\n"
                              "add rule ip mayura_test c ip saddr not-an-address drop\n");
  EXPECT_FALSE(r.ok);
  EXPECT_FALSE(r.error.empty());
  const NftResult listed = run_nft(ns.fd, "list tables");
  EXPECT_TRUE(listed.ok) << listed.error;
  EXPECT_EQ(listed.output.find("mayura_test"), std::string::npos) << listed.output;
}

TEST(Nftables, ANamespaceThatCannotBeEnteredIsAnError) {
  const NftResult r = run_nft(-1, "list tables");
  EXPECT_FALSE(r.ok);
  EXPECT_NE(r.error.find("entering the network namespace"), std::string::npos) << r.error;
}

}  // namespace
}  // namespace mayura::netfilter
