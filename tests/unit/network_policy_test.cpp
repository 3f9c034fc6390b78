// The allowlist network's policy and messages, as pure functions: which
// names a rule allows, which addresses the proxy may connect to, and the DNS
// server's answers (read back with the C library's own parser).

#include <arpa/nameser.h>
#include <gtest/gtest.h>
#include <resolv.h>

#include "mayura/errors.hpp"
#include "mayura/netfilter/address_policy.hpp"
#include "mayura/netfilter/allowlist.hpp"
#include "mayura/netfilter/dns_message.hpp"
#include "mayura/validate.hpp"
#include "tests/support/reason_of.hpp"

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
  EXPECT_TRUE(a.allows("pypi.org", 80));
}

TEST(Allowlist, AnEntryWithoutAPortAllowsTheWebsPortsOnly) {
  const Allowlist a({"example.com", "*.example.com", "git.example.com:22"});
  for (const std::uint16_t port : std::initializer_list<std::uint16_t>{80, 443}) {
    EXPECT_TRUE(a.allows("example.com", port)) << port;
    EXPECT_TRUE(a.allows("a.example.com", port)) << port;
  }
  for (const std::uint16_t port : std::initializer_list<std::uint16_t>{25, 22, 8080, 5432, 1}) {
    EXPECT_FALSE(a.allows("example.com", port)) << port;
    EXPECT_FALSE(a.allows("a.example.com", port)) << port;
  }
  EXPECT_TRUE(a.allows("git.example.com", 22));   // named, as any other port must be
  EXPECT_TRUE(a.allows("git.example.com", 443));  // and *.example.com gives it the web's
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
  EXPECT_EQ(normalize_domain("Example.COM."), "example.com");
  EXPECT_EQ(normalize_domain("10.0.0.1"), "");
  EXPECT_EQ(normalize_domain("-bad.example"), "");
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
  EXPECT_TRUE(may_connect(make_address("10.0.0.1"), true));    // private allowed by option
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

// --- the DNS server's messages ------------------------------------------

namespace mayura::netfilter {
namespace {

std::string query_bytes(const std::string& name, std::uint16_t type, std::uint16_t id = 0x1234,
                        std::uint16_t flags = 0x0100) {
  std::string q;
  auto put16 = [&](std::uint16_t v) {
    q.push_back(static_cast<char>(v >> 8));
    q.push_back(static_cast<char>(v & 0xff));
  };
  put16(id);
  put16(flags);
  put16(1);
  put16(0);
  put16(0);
  put16(0);
  std::size_t start = 0;
  while (start <= name.size()) {
    std::size_t end = name.find('.', start);
    if (end == std::string::npos) end = name.size();
    q.push_back(static_cast<char>(end - start));
    q.append(name, start, end - start);
    start = end + 1;
  }
  q.push_back('\0');
  put16(type);
  put16(dns::kClassIN);
  return q;
}

TEST(DnsMessage, AQueryIsParsed) {
  const std::string p = query_bytes("Registry.npmjs.org", dns::kTypeA);
  const auto q = dns::parse_query(p);
  ASSERT_TRUE(q);
  EXPECT_EQ(q->id, 0x1234);
  EXPECT_TRUE(q->recursion_desired);
  EXPECT_EQ(q->name, "Registry.npmjs.org");
  EXPECT_EQ(q->type, dns::kTypeA);
  EXPECT_EQ(q->klass, dns::kClassIN);
  EXPECT_EQ(q->question_end, p.size());
}

// Found by the dns_query fuzzer: a label holding a dot ("a.b" as one label)
// read as text is the name a.b, which is not what was asked.
TEST(DnsMessage, ALabelHoldingADotIsNoQuery) {
  std::string p = query_bytes("example.com", dns::kTypeA);
  p[12 + 1 + 3] = '.';  // "exa.ple" as one label
  EXPECT_FALSE(dns::parse_query(p));
}

TEST(DnsMessage, AnAnswerIsWhatAResolverReads) {
  const std::string p = query_bytes("registry.npmjs.org", dns::kTypeA);
  const auto q = dns::parse_query(p);
  ASSERT_TRUE(q);
  const std::string a = dns::answer(p, *q, 0xC6120005 /* 198.18.0.5 */, 60);
  ns_msg msg;
  ASSERT_EQ(ns_initparse(reinterpret_cast<const unsigned char*>(a.data()), static_cast<int>(a.size()), &msg), 0);
  EXPECT_EQ(ns_msg_id(msg), 0x1234);
  EXPECT_EQ(ns_msg_getflag(msg, ns_f_qr), 1);
  EXPECT_EQ(ns_msg_getflag(msg, ns_f_rcode), ns_r_noerror);
  EXPECT_EQ(ns_msg_count(msg, ns_s_qd), 1);
  ASSERT_EQ(ns_msg_count(msg, ns_s_an), 1);
  ns_rr rr;
  ASSERT_EQ(ns_parserr(&msg, ns_s_an, 0, &rr), 0);
  EXPECT_STREQ(ns_rr_name(rr), "registry.npmjs.org");
  EXPECT_EQ(ns_rr_type(rr), ns_t_a);
  EXPECT_EQ(ns_rr_ttl(rr), 60u);
  ASSERT_EQ(ns_rr_rdlen(rr), 4);
  const unsigned char* ip = ns_rr_rdata(rr);
  EXPECT_EQ(ip[0], 198);
  EXPECT_EQ(ip[1], 18);
  EXPECT_EQ(ip[2], 0);
  EXPECT_EQ(ip[3], 5);
  // no address (an AAAA question, say): the question and no record
  const std::string none = dns::answer(p, *q, std::nullopt, 60);
  ASSERT_EQ(ns_initparse(reinterpret_cast<const unsigned char*>(none.data()), static_cast<int>(none.size()), &msg), 0);
  EXPECT_EQ(ns_msg_count(msg, ns_s_an), 0);
  EXPECT_EQ(ns_msg_getflag(msg, ns_f_rcode), ns_r_noerror);
}

TEST(DnsMessage, ARefusedNameIsNxdomainAtOnce) {
  const std::string p = query_bytes("evil.test", dns::kTypeA, 0x7777);
  const auto q = dns::parse_query(p);
  ASSERT_TRUE(q);
  const std::string e = dns::error(p, q, dns::Rcode::name_error);
  ns_msg msg;
  ASSERT_EQ(ns_initparse(reinterpret_cast<const unsigned char*>(e.data()), static_cast<int>(e.size()), &msg), 0);
  EXPECT_EQ(ns_msg_id(msg), 0x7777);
  EXPECT_EQ(ns_msg_getflag(msg, ns_f_rcode), ns_r_nxdomain);
  EXPECT_EQ(ns_msg_count(msg, ns_s_qd), 1);
  EXPECT_EQ(ns_msg_count(msg, ns_s_an), 0);
}

TEST(DnsMessage, WhatIsNotASimpleQueryIsNotParsed) {
  const std::string good = query_bytes("a.example.com", dns::kTypeA);
  EXPECT_FALSE(dns::parse_query(""));
  EXPECT_FALSE(dns::parse_query(good.substr(0, 11)));                          // shorter than a header
  EXPECT_FALSE(dns::parse_query(good.substr(0, good.size() - 1)));             // truncated type and class
  EXPECT_FALSE(dns::parse_query(good.substr(0, 15)));                          // truncated name
  EXPECT_FALSE(dns::parse_query(query_bytes("a.example.com", 1, 1, 0x8100)));  // a response
  EXPECT_FALSE(dns::parse_query(query_bytes("a.example.com", 1, 1, 0x2100)));  // opcode 4 (notify)
  std::string two = good;
  two[5] = 2;  // two questions
  EXPECT_FALSE(dns::parse_query(two));
  std::string pointer = good;
  pointer[12] = static_cast<char>(0xc0);  // a compression pointer in the question
  EXPECT_FALSE(dns::parse_query(pointer));
  EXPECT_FALSE(dns::parse_query(query_bytes(std::string(64, 'a') + ".com", 1)));  // a label over 63
  std::string long_name;
  for (int i = 0; i < 5; ++i) long_name += std::string(60, 'b') + ".";
  EXPECT_FALSE(dns::parse_query(query_bytes(long_name + "com", 1)));  // a name over 255
  // an unparsable packet still gets an answer with its id
  const std::string e = dns::error("\x12\x34garbage", std::nullopt, dns::Rcode::format_error);
  ASSERT_EQ(e.size(), 12u);
  EXPECT_EQ(e[0], '\x12');
  EXPECT_EQ(e[1], '\x34');
  EXPECT_EQ(e[3] & 0xf, 1);
}

}  // namespace
}  // namespace mayura::netfilter
