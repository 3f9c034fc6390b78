// The allowlist proxy's reading of a request head, and the operator's
// ranges that open addresses to it: every odd input, without a socket.

#include <gtest/gtest.h>

#include "mayura/errors.hpp"
#include "mayura/netfilter/address_policy.hpp"
#include "mayura/netfilter/proxy_request.hpp"
#include "tests/support/reason_of.hpp"

namespace mayura::netfilter {
namespace {

using boost::asio::ip::make_address;
using testing::reason_of;
using namespace std::string_view_literals;

ProxyRequest parsed(std::string_view head) {
  const ProxyParse p = parse_proxy_request(head);
  EXPECT_TRUE(p.request) << p.status << " " << p.why;
  return p.request.value_or(ProxyRequest{});
}

int status_of(std::string_view head) {
  const ProxyParse p = parse_proxy_request(head);
  EXPECT_FALSE(p.request) << "taken: " << head;
  return p.status;
}

TEST(ProxyRequest, ConnectNamesHostAndPort) {
  const auto r = parsed("CONNECT Registry.NPMJS.org.:443 HTTP/1.1\r\nHost: registry.npmjs.org:443\r\n\r\n");
  EXPECT_TRUE(r.tunnel);
  EXPECT_EQ(r.host, "registry.npmjs.org");
  EXPECT_EQ(r.port, 443);
  EXPECT_FALSE(r.ip_literal);
  EXPECT_EQ(status_of("CONNECT example.com HTTP/1.1\r\n\r\n"), 400);  // no port
  EXPECT_EQ(status_of("CONNECT example.com:0 HTTP/1.1\r\n\r\n"), 400);
  EXPECT_EQ(status_of("CONNECT example.com:65536 HTTP/1.1\r\n\r\n"), 400);
  EXPECT_EQ(status_of("CONNECT user@example.com:443 HTTP/1.1\r\n\r\n"), 400);
}

TEST(ProxyRequest, AddressesInAnySpellingAreLiterals) {
  for (const char* target :
       {"1.2.3.4:443", "[::1]:443", "[::ffff:169.254.169.254]:80", "2130706433:80", "0x7f.1:80", "017700000001:80"}) {
    EXPECT_TRUE(parsed(std::string("CONNECT ") + target + " HTTP/1.1\r\n\r\n").ip_literal) << target;
  }
  EXPECT_TRUE(parsed("GET http://169.254.169.254/latest/meta-data HTTP/1.1\r\n\r\n").ip_literal);
  for (const char* name : {"1password.com:443", "3d.ca:443", "0xdead.beef:443", "1.2.3.4.5:80"}) {
    EXPECT_FALSE(parsed(std::string("CONNECT ") + name + " HTTP/1.1\r\n\r\n").ip_literal) << name;
  }
}

TEST(ProxyRequest, AnAbsoluteRequestGoesUpstreamInOriginFormWithTheCheckedHost) {
  const auto r = parsed(
      "GET http://allowed.test:8081/a/b?c=d#frag HTTP/1.1\r\nHost: evil.test\r\nUser-Agent: t\r\n"
      "Proxy-Connection: keep-alive\r\nProxy-Authorization: Basic eA==\r\nConnection: keep-alive\r\n\r\n");
  EXPECT_FALSE(r.tunnel);
  EXPECT_EQ(r.host, "allowed.test");
  EXPECT_EQ(r.port, 8081);
  EXPECT_EQ(r.upstream_head,
            "GET /a/b?c=d HTTP/1.1\r\nHost: allowed.test:8081\r\nUser-Agent: t\r\nConnection: close\r\n\r\n");
  EXPECT_EQ(parsed("GET http://allowed.test HTTP/1.0\n\n").upstream_head,
            "GET / HTTP/1.0\r\nHost: allowed.test\r\nConnection: close\r\n\r\n");
  EXPECT_EQ(parsed("GET http://allowed.test?q HTTP/1.1\r\n\r\n").upstream_head.substr(0, 19), "GET /?q HTTP/1.1\r\nH");
}

TEST(ProxyRequest, WhatIsNoProxyRequestGetsAStatus) {
  EXPECT_EQ(status_of("GET / HTTP/1.1\r\nHost: allowed.test\r\n\r\n"), 400);  // origin form: not for a proxy
  EXPECT_EQ(status_of("GET https://allowed.test/ HTTP/1.1\r\n\r\n"), 400);
  EXPECT_EQ(status_of("GET http://user:pw@allowed.test/ HTTP/1.1\r\n\r\n"), 400);
  EXPECT_EQ(status_of("GET http:///x HTTP/1.1\r\n\r\n"), 400);
  EXPECT_EQ(status_of("GET http://a.test/ HTTP/2\r\n\r\n"), 505);
  EXPECT_EQ(status_of("GET http://a.test/ HTTP/1.1\r\nX: y\r\n folded\r\n\r\n"), 400);
  EXPECT_EQ(status_of("GET http://a.test/ HTTP/1.1\r\nno colon\r\n\r\n"), 400);
  EXPECT_EQ(status_of("\r\n\r\n"), 400);
  EXPECT_EQ(status_of("GET http://a\x01.test/ HTTP/1.1\r\n\r\n"), 400);
  EXPECT_EQ(status_of(std::string(kMaxProxyHead + 1, 'a')), 431);
}

// Found by the proxy_request fuzzer: names and bytes that a server behind
// the proxy may read otherwise than the proxy did, refused rather than sent.
TEST(ProxyRequest, WhatAServerCouldReadOtherwiseIsRefused) {
  EXPECT_EQ(status_of("GET http://example.com/ HTTP/1.1\r\nHost : evil.test\r\n\r\n"), 400);
  EXPECT_EQ(status_of("GET http://example.com/ HTTP/1.1\r\nContent-L]ngth: 0\r\n\r\n"), 400);
  EXPECT_EQ(status_of("GET http://example.com/ HTTP/1.1\r\nX: a\rHost: evil.test\r\n\r\n"), 400);
  EXPECT_EQ(status_of("GET http://example.com/ HTTP/1.1\r\nX: a\0b\r\n\r\n"sv), 400);
  EXPECT_EQ(status_of("G\rET http://example.com/ HTTP/1.1\r\n\r\n"), 400);
  EXPECT_EQ(status_of("GET http://example.com/a\rb HTTP/1.1\r\n\r\n"), 400);
  // brackets hold an IPv6 address; a host of dots is none
  EXPECT_EQ(status_of("CONNECT [..]:443 HTTP/1.1\r\n\r\n"), 400);
  EXPECT_EQ(status_of("CONNECT [example.com]:443 HTTP/1.1\r\n\r\n"), 400);
  EXPECT_EQ(status_of("CONNECT [10.0.0.1]:443 HTTP/1.1\r\n\r\n"), 400);
  EXPECT_EQ(status_of("GET http://../ HTTP/1.1\r\n\r\n"), 400);
  EXPECT_EQ(parsed("CONNECT [2001:DB8::1]:443 HTTP/1.1\r\n\r\n").host, "2001:db8::1");
  // a tab in a value is text
  EXPECT_NE(parsed("GET http://example.com/ HTTP/1.1\r\nX: a\tb\r\n\r\n").upstream_head.find("X: a\tb\r\n"),
            std::string::npos);
}

TEST(ProxyRequest, TheHeadEndsAtTheFirstBlankLine) {
  EXPECT_FALSE(proxy_head_end("CONNECT a:1 HTTP/1.1\r\nHost: a\r\n"));
  EXPECT_EQ(proxy_head_end("CONNECT a:1 HTTP/1.1\r\n\r\nrest"), 24u);
  EXPECT_EQ(proxy_head_end("CONNECT a:1 HTTP/1.1\n\nrest"), 22u);
}

TEST(EgressRules, OperatorRangesOpenPrivateOrReservedAddressesOnly) {
  EgressRules rules;
  rules.also_public = {parse_prefix("203.0.113.0/24"), parse_prefix("10.1.0.0/16"), parse_prefix("127.0.0.0/8"),
                       parse_prefix("169.254.0.0/16"), parse_prefix("2001:db8::/32")};
  EXPECT_TRUE(may_connect(make_address("203.0.113.7"), rules));
  EXPECT_TRUE(may_connect(make_address("::ffff:203.0.113.7"), rules));
  EXPECT_TRUE(may_connect(make_address("10.1.2.3"), rules));
  EXPECT_TRUE(may_connect(make_address("2001:db8::1"), rules));
  EXPECT_FALSE(may_connect(make_address("10.2.0.1"), rules));
  EXPECT_FALSE(may_connect(make_address("198.51.100.1"), rules));
  // ranges never open loopback or metadata addresses
  EXPECT_FALSE(may_connect(make_address("127.0.0.1"), rules));
  EXPECT_FALSE(may_connect(make_address("169.254.169.254"), rules));
  // nor the host's own
  EXPECT_FALSE(may_connect(make_address("203.0.113.1"), rules, {make_address("203.0.113.1")}));
}

TEST(EgressRules, ARangeIsParsedOrRefusedAsConfig) {
  const Prefix p = parse_prefix("198.51.100.0/24");
  EXPECT_TRUE(p.contains(make_address("198.51.100.255")));
  EXPECT_FALSE(p.contains(make_address("198.51.101.0")));
  EXPECT_TRUE(parse_prefix("0.0.0.0/0").contains(make_address("8.8.8.8")));
  EXPECT_FALSE(parse_prefix("0.0.0.0/0").contains(make_address("2001:db8::1")));
  for (const char* bad : {"", "10.0.0.0", "10.0.0.0/33", "10.0.0/8", "x/8", "10.0.0.0/-1", "10.0.0.0/", "::/129"}) {
    EXPECT_EQ(reason_of([&] { parse_prefix(bad); }), Reason::INVALID_CONFIG) << bad;
  }
}

TEST(EgressRules, NeverRangesWinOverEverything) {
  EgressRules rules;
  rules.allow_private = true;
  rules.also_public = {parse_prefix("10.0.0.0/8")};
  rules.never = {parse_prefix("10.234.0.0/16")};
  EXPECT_TRUE(may_connect(make_address("10.1.0.1"), rules));
  EXPECT_FALSE(may_connect(make_address("10.234.0.5"), rules));
  EXPECT_FALSE(may_connect(make_address("::ffff:10.234.0.5"), rules));
}

TEST(AddressPolicy, MoreMetadataAndTunnelForms) {
  EXPECT_EQ(classify(make_address("168.63.129.16")), AddressClass::metadata);         // Azure's WireServer
  EXPECT_EQ(classify(make_address("fd20:ce::254")), AddressClass::metadata);          // GCP, IPv6
  EXPECT_EQ(classify(make_address("64:ff9b:1::a9fe:a9fe")), AddressClass::reserved);  // local NAT64
  EXPECT_EQ(classify(make_address("2001:0:4136:e378:8000:63bf:3fff:fdd2")), AddressClass::reserved);  // Teredo
  EXPECT_FALSE(may_connect(make_address("168.63.129.16"), true));
}

}  // namespace
}  // namespace mayura::netfilter
