// The allowlist network's policy, as pure functions: which names a rule
// allows, and which addresses the proxy may connect to.

#include <gtest/gtest.h>

#include "mayura/errors.hpp"
#include "mayura/netfilter/address_policy.hpp"
#include "mayura/netfilter/allowlist.hpp"
#include "../support/reason_of.hpp"

namespace mayura::netfilter {
namespace {

using boost::asio::ip::make_address;
using testing::reason_of;

TEST(Allowlist, ExactNamesMatchCaseInsensitivelyWithATrailingDotIgnored) {
  const Allowlist a({"registry.npmjs.org", "PyPI.org."});
  EXPECT_TRUE(a.allows_name("registry.npmjs.org"));
  EXPECT_TRUE(a.allows_name("REGISTRY.NPMJS.ORG."));
  EXPECT_TRUE(a.allows_name("pypi.org"));
  EXPECT_FALSE(a.allows_name("npmjs.org"));
  EXPECT_FALSE(a.allows_name("evil.registry.npmjs.org"));
  // a name that merely contains an allowed one
  EXPECT_FALSE(a.allows_name("registry.npmjs.org.evil.test"));
  EXPECT_FALSE(a.allows_name("xregistry.npmjs.org"));
  EXPECT_TRUE(a.allows("pypi.org", 443));
  EXPECT_TRUE(a.allows("pypi.org", 8080));
}

TEST(Allowlist, WildcardsMatchSubdomainsAtAnyDepthButNotTheDomain) {
  const Allowlist a({"*.example.com"});
  EXPECT_TRUE(a.allows_name("a.example.com"));
  EXPECT_TRUE(a.allows_name("a.b.c.example.com"));
  EXPECT_FALSE(a.allows_name("example.com"));
  EXPECT_FALSE(a.allows_name("badexample.com"));
  EXPECT_FALSE(a.allows_name("a.example.com.evil.test"));
  EXPECT_FALSE(a.allows_name(".example.com"));
}

TEST(Allowlist, APortRestrictsTheRule) {
  const Allowlist a({"api.example.com:443", "*.cdn.example.com:8443"});
  EXPECT_TRUE(a.allows("api.example.com", 443));
  EXPECT_FALSE(a.allows("api.example.com", 80));
  EXPECT_TRUE(a.allows_name("api.example.com"));  // it resolves; only 443 connects
  EXPECT_TRUE(a.allows("x.cdn.example.com", 8443));
  EXPECT_FALSE(a.allows("x.cdn.example.com", 443));
}

TEST(Allowlist, AddressesAndMalformedNamesMatchNothing) {
  const Allowlist a({"example.com"});
  const std::string long_name(300, 'a');
  for (const std::string& name : std::vector<std::string>{"", ".", "127.0.0.1", "2130706433", "0x7f.1", "[::1]", "::1",
                                                          "exa mple.com", "example.com\n", long_name}) {
    EXPECT_FALSE(a.allows_name(name)) << name;
  }
  EXPECT_EQ(normalize_name("Example.COM."), "example.com");
  EXPECT_EQ(normalize_name("10.0.0.1"), "");
}

TEST(Allowlist, PatternsThatAllowTooMuchOrNothingAreInvalidInput) {
  for (const char* bad : {"*", "*.com", "*.", "", "exa mple.com", "example.com:0", "example.com:65536", "10.0.0.1",
                          "*.10.0.0.1", "example..com", "-example.com"}) {
    EXPECT_EQ(reason_of([&] { Allowlist({bad}); }), Reason::INVALID_INPUT) << bad;
  }
}

TEST(AddressPolicy, IPv4Classes) {
  EXPECT_EQ(classify(make_address("93.184.216.34")), AddressClass::global);
  EXPECT_EQ(classify(make_address("127.0.0.1")), AddressClass::loopback);
  EXPECT_EQ(classify(make_address("127.255.0.9")), AddressClass::loopback);
  EXPECT_EQ(classify(make_address("169.254.169.254")), AddressClass::metadata);
  EXPECT_EQ(classify(make_address("169.254.170.2")), AddressClass::metadata);
  EXPECT_EQ(classify(make_address("100.100.100.200")), AddressClass::metadata);
  EXPECT_EQ(classify(make_address("169.254.1.1")), AddressClass::link_local);
  EXPECT_EQ(classify(make_address("10.1.2.3")), AddressClass::private_range);
  EXPECT_EQ(classify(make_address("172.31.255.255")), AddressClass::private_range);
  EXPECT_EQ(classify(make_address("172.32.0.1")), AddressClass::global);
  EXPECT_EQ(classify(make_address("192.168.0.1")), AddressClass::private_range);
  EXPECT_EQ(classify(make_address("100.64.0.1")), AddressClass::private_range);
  EXPECT_EQ(classify(make_address("224.0.0.1")), AddressClass::multicast);
  EXPECT_EQ(classify(make_address("0.0.0.0")), AddressClass::unspecified);
  EXPECT_EQ(classify(make_address("0.1.2.3")), AddressClass::unspecified);
  EXPECT_EQ(classify(make_address("255.255.255.255")), AddressClass::reserved);
  EXPECT_EQ(classify(make_address("192.0.2.1")), AddressClass::reserved);
}

TEST(AddressPolicy, IPv6ClassesAndIPv4InsideIPv6) {
  EXPECT_EQ(classify(make_address("2606:4700::1111")), AddressClass::global);
  EXPECT_EQ(classify(make_address("::1")), AddressClass::loopback);
  EXPECT_EQ(classify(make_address("::")), AddressClass::unspecified);
  EXPECT_EQ(classify(make_address("fe80::1")), AddressClass::link_local);
  EXPECT_EQ(classify(make_address("fd12:3456::1")), AddressClass::private_range);
  EXPECT_EQ(classify(make_address("fec0::1")), AddressClass::private_range);
  EXPECT_EQ(classify(make_address("ff02::1")), AddressClass::multicast);
  EXPECT_EQ(classify(make_address("fd00:ec2::254")), AddressClass::metadata);
  EXPECT_EQ(classify(make_address("2001:db8::1")), AddressClass::reserved);
  // metadata and loopback in every IPv6 spelling of an IPv4 address
  for (const char* spelling : {"::ffff:169.254.169.254", "::ffff:a9fe:a9fe", "::169.254.169.254",
                               "64:ff9b::169.254.169.254", "2002:a9fe:a9fe::1"}) {
    EXPECT_EQ(classify(make_address(spelling)), AddressClass::metadata) << spelling;
  }
  for (const char* spelling : {"::ffff:127.0.0.1", "::127.0.0.1", "64:ff9b::7f00:1", "2002:7f00:1::"}) {
    EXPECT_EQ(classify(make_address(spelling)), AddressClass::loopback) << spelling;
  }
  EXPECT_EQ(classify(make_address("::ffff:10.0.0.1")), AddressClass::private_range);
  EXPECT_EQ(classify(make_address("::ffff:93.184.216.34")), AddressClass::global);
}

TEST(AddressPolicy, OnlyGlobalAddressesThatAreNotTheHostsOwnMayBeReached) {
  EXPECT_TRUE(may_connect(make_address("93.184.216.34"), false));
  EXPECT_FALSE(may_connect(make_address("10.0.0.1"), false));
  EXPECT_TRUE(may_connect(make_address("10.0.0.1"), true));  // private allowed by option
  EXPECT_FALSE(may_connect(make_address("127.0.0.1"), true));  // never loopback
  EXPECT_FALSE(may_connect(make_address("169.254.169.254"), true));
  EXPECT_FALSE(may_connect(make_address("::ffff:169.254.169.254"), true));
  EXPECT_FALSE(may_connect(make_address("0.0.0.0"), true));
  const std::vector<boost::asio::ip::address> host = {make_address("93.184.216.34"), make_address("10.0.0.5")};
  EXPECT_FALSE(may_connect(make_address("93.184.216.34"), false, host));
  EXPECT_FALSE(may_connect(make_address("::ffff:93.184.216.34"), false, host));
  EXPECT_FALSE(may_connect(make_address("10.0.0.5"), true, host));
  EXPECT_TRUE(may_connect(make_address("93.184.216.35"), false, host));
}

}  // namespace
}  // namespace mayura::netfilter
